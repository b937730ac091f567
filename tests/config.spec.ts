import { expect } from "chai";
import { expiresInSendingHours, expiryInSendingHours } from "../components/models/disruptionBudgets.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { STACKS, configErrorOf, errorOf, patchSections, rawConfig, section } from "./helpers.ts";

describe("stack config", () => {
    for (const stack of STACKS) {
        it(`${stack}: the stack file is valid and complete`, () => {
            const cfg = parseStackConfig(stack, rawConfig(stack));
            expect(cfg.stack).to.equal(stack);
            expect(cfg.cluster.name).to.equal(`notification-canada-ca-${stack}-eks-cluster`);
            expect(cfg.cluster.region).to.equal("ca-central-1");
            expect(cfg.controller.version).to.equal("1.14.1");
        });
    }

    it("staging and production set the same keys; only values differ", () => {
        const shape = (v: unknown): unknown =>
            v && typeof v === "object" && !Array.isArray(v)
                ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]).sort())
                : typeof v;
        const keysOf = (stack: string) => {
            const flat = readStackConfig(stack);
            return Object.fromEntries(Object.keys(flat).sort().map((k) => [k, shape(JSON.parse(flat[k].startsWith("[") || flat[k].startsWith("{") ? flat[k] : JSON.stringify(flat[k])))]));
        };
        expect(keysOf("production")).to.deep.equal(keysOf("staging"));
    });

    it("both stack files disable default providers", () => {
        for (const stack of STACKS) expect(readStackConfig(stack)["pulumi:disable-default-providers"]).to.equal('["*"]');
    });

    it("uses documented defaults for optional keys", () => {
        const raw = rawConfig("staging");
        raw.controller = { version: "1.14.1" };
        const cfg = parseStackConfig("staging", raw);
        expect(cfg.controller).to.include({ namespace: "karpenter", serviceAccount: "karpenter", identity: "pod-identity", replicas: 2, cpu: "1", memory: "1Gi" });
        expect(cfg.controller.spotToSpotConsolidation).to.equal(false);
        expect(cfg.controller.nodeRolePolicyArns).to.deep.equal([]);
    });

    // Each bad value must be reported with the stack, the full key path and what is allowed.
    const badCases: [string, string, Record<string, unknown>, RegExp][] = [
        ["replicas as a word", "controller", { replicas: "two" }, /^staging: notify-karpenter:controller\.replicas must be an integer from 1 to 10 \(got "two"\)$/m],
        ["replicas out of range", "controller", { replicas: 11 }, /notify-karpenter:controller\.replicas must be an integer from 1 to 10 \(got 11\)/],
        ["an unknown version", "controller", { version: "1.3.2" }, /notify-karpenter:controller\.version must be "1\.14\.1" \(got "1\.3\.2"\)/],
        ["a misspelled key", "controller", { replica: 2 }, /notify-karpenter:controller\.replica is not a known key \(did you mean "replicas"\?\)/],
        ["an unknown identity", "controller", { identity: "kiam" }, /notify-karpenter:controller\.identity must be one of "pod-identity", "irsa" \(got "kiam"\)/],
        ["a bad namespace", "controller", { namespace: "Karpenter" }, /notify-karpenter:controller\.namespace must be a Kubernetes name/],
        ["a bad cpu quantity", "controller", { cpu: "one" }, /notify-karpenter:controller\.cpu must be a Kubernetes quantity/],
        ["a bad duration", "controller", { batchMaxDuration: "10 seconds" }, /notify-karpenter:controller\.batchMaxDuration must be a duration of at least 1s such as 90s, 30m or 24h \(got "10 seconds"\)/],
        ["a feature gate as a string", "controller", { spotToSpotConsolidation: "yes" }, /notify-karpenter:controller\.spotToSpotConsolidation must be true or false \(got "yes"\)/],
        ["node role policies with an existing role", "controller", { nodeRolePolicyArns: ["arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"] }, /notify-karpenter:controller\.nodeRolePolicyArns must be empty when existingNodeRoleName is set/],
        ["a bad policy ARN", "controller", { existingNodeRoleName: undefined, nodeRolePolicyArns: ["CloudWatchAgentServerPolicy"] }, /notify-karpenter:controller\.nodeRolePolicyArns\[0\] must be an IAM policy ARN/],
        ["a bad region", "cluster", { region: "canada" }, /notify-karpenter:cluster\.region must be an AWS region such as ca-central-1 \(got "canada"\)/],
        ["a missing cluster name", "cluster", { name: undefined }, /notify-karpenter:cluster\.name is required: it must be an EKS cluster name/],
        ["an empty stable node selector", "cluster", { stableNodeSelector: {} }, /notify-karpenter:cluster\.stableNodeSelector must name at least one label of the stable nodes/],
        ["a bad stable node label", "cluster", { stableNodeSelector: { "bad key!": "x" } }, /notify-karpenter:cluster\.stableNodeSelector\.bad key! is not a valid key/],
        ["a name prefix too long for AWS names", "controller", { namePrefix: "notification-canada-ca-staging-eks-cluster1" }, /notify-karpenter:controller\.namePrefix must be a name prefix \(letters, digits and -, at most 40 characters\)/],
    ];
    for (const [what, key, patch, expected] of badCases) {
        it(`rejects ${what}, naming the key`, () => {
            const raw = rawConfig("staging", key, patch);
            expect(errorOf(() => parseStackConfig("staging", raw))).to.match(expected);
        });
    }

    it("rejects a cluster name that makes an AWS name too long, and says which key fixes it", () => {
        const raw = rawConfig("production", "cluster", { name: "notification-canada-ca-production-eks-cluster-with-a-suffix" });
        const msg = errorOf(() => parseStackConfig("production", raw));
        expect(msg).to.match(/^production: notify-karpenter:cluster\.name gives the IAM role name "notification-canada-ca-production-eks-cluster-with-a-suffix-karpenter" 69 characters; AWS allows at most 64; set notify-karpenter:controller\.namePrefix/m);
    });

    it("rejects an unknown top-level key in the project namespace", () => {
        const raw = { ...rawConfig("staging"), controler: {} };
        expect(errorOf(() => parseStackConfig("staging", raw))).to.match(/notify-karpenter:controler is not a known key \(did you mean "controller"\?\)/);
    });

    it("reports every problem at once, one per line", () => {
        const raw = rawConfig("staging", "controller", { replicas: 0, logLevel: "verbose" });
        const lines = errorOf(() => parseStackConfig("staging", raw)).split("\n");
        expect(lines).to.have.length(2);
        expect(lines[0]).to.match(/controller\.replicas/);
        expect(lines[1]).to.match(/controller\.logLevel must be one of "debug", "info", "error"/);
    });

    it("loadConfig reads the real stack file through Pulumi config and fails before any resource exists", async () => {
        const msg = await configErrorOf("staging", patchSections("staging", { controller: { replicas: "two" } }));
        expect(msg).to.equal('staging: notify-karpenter:controller.replicas must be an integer from 1 to 10 (got "two")');
        expect(section("production", "cluster").name).to.equal("notification-canada-ca-production-eks-cluster");
    });
});

describe("nodePool.recycle: the node recycler's config (components/nodeRecycler.ts)", () => {
    const recycle = (patch: Record<string, unknown>, nodePool: Record<string, unknown> = {}) =>
        errorOf(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { recycle: { ...section("staging", "nodePool").recycle, ...patch }, ...nodePool })));

    it("is on in staging and production, and takes its defaults: 01:00 UTC, 7 days, 30 minutes", () => {
        for (const stack of STACKS) expect(parseStackConfig(stack, rawConfig(stack)).nodePool.recycle).to.deep.equal({ image: "public.ecr.aws/docker/library/node:24.18.0-alpine3.23", schedule: "0 1 * * *", maxAgeDays: 7, stuckMinutes: 30 });
        const cfg = parseStackConfig("staging", rawConfig("staging", "nodePool", { recycle: { image: "public.ecr.aws/docker/library/node:24-alpine" } }));
        expect(cfg.nodePool.recycle).to.deep.equal({ image: "public.ecr.aws/docker/library/node:24-alpine", schedule: "0 1 * * *", maxAgeDays: 7, stuckMinutes: 30 });
        // Absent: off.
        expect(parseStackConfig("staging", rawConfig("staging", "nodePool", { recycle: undefined })).nodePool.recycle).to.equal(undefined);
    });

    it("reads GC Notify's nightly batch in both stack files, and takes it by default: 05:00-10:30 UTC", () => {
        for (const stack of STACKS) expect(parseStackConfig(stack, rawConfig(stack)).nodePool.nightlyBatch).to.deep.equal({ start: "05:00", end: "10:30", timeZone: "Etc/UTC" });
        const cfg = parseStackConfig("staging", rawConfig("staging", "nodePool", { nightlyBatch: undefined }));
        expect(cfg.nodePool.nightlyBatch).to.deep.equal({ start: "05:00", end: "10:30", timeZone: "Etc/UTC" });
    });

    // One line per bad value, naming the key and what is allowed.
    const bad: [string, Record<string, unknown>, Record<string, unknown>, string][] = [
        ["an image without a tag", { image: "node" }, {}, 'staging: notify-karpenter:nodePool.recycle.image must be a container image with a tag or digest, such as public.ecr.aws/docker/library/node:24-alpine (got "node")'],
        ["no image", { image: undefined }, {}, "staging: notify-karpenter:nodePool.recycle.image is required: it must be a container image with a tag or digest, such as public.ecr.aws/docker/library/node:24-alpine"],
        ["an age of 0 days", { maxAgeDays: 0 }, {}, "staging: notify-karpenter:nodePool.recycle.maxAgeDays must be an integer from 1 to 90 (got 0)"],
        ["stuck after 10 minutes, before Karpenter's own 15-minute registration timeout", { stuckMinutes: 10 }, {}, "staging: notify-karpenter:nodePool.recycle.stuckMinutes must be an integer from 15 to 1440 (got 10)"],
        ["a schedule cron cannot read", { schedule: "30 25 * * *" }, {}, 'staging: notify-karpenter:nodePool.recycle.schedule must be a cron schedule in UTC: the hour field "25" has 25: it must be 0-23 (got "30 25 * * *")'],
        [
            "runs inside sending hours (14:00 UTC is 09:00 EST)",
            { schedule: "0 14 * * *" },
            {},
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs outside sendingHours (08:00-18:00 America/Toronto): a run starts on 2026-01-01 14:00 UTC (09:00 local) (got "0 14 * * *")',
        ],
        [
            "runs inside sending hours in EST only (22:30 UTC is 18:30 EDT but 17:30 EST)",
            { schedule: "30 22 * * *" },
            {},
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs outside sendingHours (08:00-18:00 America/Toronto): a run starts on 2026-01-01 22:30 UTC (17:30 local) (got "30 22 * * *")',
        ],
        [
            "runs inside the nightly batch (04:30 UTC was the old default; 05:30 UTC is inside)",
            { schedule: "30 5 * * *" },
            {},
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs outside nightlyBatch (05:00-10:30 Etc/UTC): a run starts on 2026-01-01 05:30 UTC (05:30 local) (got "30 5 * * *")',
        ],
        [
            "runs while the budgets forbid replacements (12:00 UTC, before 09:00 sending hours)",
            { schedule: "0 12 * * *" },
            { sendingHours: { start: "09:00", end: "18:00", timeZone: "America/Toronto" } },
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs when the budgets allow Drifted and Underutilized disruption, as Karpenter replaces nodes only then: a run starts on 2026-01-01 12:00 UTC (07:00 local), when a budget allows no Drifted or Underutilized disruption (nodes "0") (got "0 12 * * *")',
        ],
        [
            "runs too close to sending hours to mark and drain (11:00 UTC is 07:00 EDT)",
            { schedule: "0 11 * * *" },
            {},
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs at least 85 minutes before sendingHours (08:00-18:00 America/Toronto) begin (nodePool.terminationGracePeriod, and 25 minutes for Karpenter to replace a node marked drifted), so that a node marked or deleted at the start drains before them: a run starts on 2026-03-08 11:00 UTC (07:00 local), 60 minutes before (got "0 11 * * *")',
        ],
        [
            "runs too close to the nightly batch to mark and drain (04:30 UTC, the old default)",
            { schedule: "30 4 * * *" },
            {},
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs at least 85 minutes before nightlyBatch (05:00-10:30 Etc/UTC) begin (nodePool.terminationGracePeriod, and 25 minutes for Karpenter to replace a node marked drifted), so that a node marked or deleted at the start drains before them: a run starts on 2026-01-01 04:30 UTC (04:30 local), 30 minutes before (got "30 4 * * *")',
        ],
        ["never runs (30 February)", { schedule: "0 4 30 2 *" }, {}, 'staging: notify-karpenter:nodePool.recycle.schedule never starts a run in 2026 (got "0 4 30 2 *")'],
        ["a misspelled key", { maxAgeDay: 7 }, {}, 'staging: notify-karpenter:nodePool.recycle.maxAgeDay is not a known key (did you mean "maxAgeDays"?); known keys are image, schedule, maxAgeDays, stuckMinutes'],
    ];
    for (const [what, patch, nodePool, expected] of bad) it(`refuses ${what}, in one line naming the key`, () => expect(recycle(patch, nodePool)).to.equal(expected));

    it("follows the drain: a longer terminationGracePeriod needs an earlier run", () => {
        // 01:00 UTC leaves 4 h before the nightly batch: enough for 25 minutes and a 3.5 h drain, not for 4 h.
        expect(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { terminationGracePeriod: "3h30m" }))).to.not.throw();
        expect(recycle({}, { terminationGracePeriod: "4h" })).to.match(/recycle\.schedule must start runs at least 265 minutes before nightlyBatch .* 2026-01-01 01:00 UTC \(01:00 local\), 240 minutes before/);
    });

    it("keeps out of GC Notify's quarterly tasks: the stacks' budget forbids drift from 23:00 to 01:00 UTC on their days, so a 23:30 run is refused", () => {
        expect(recycle({ schedule: "30 23 * * *" })).to.equal(
            'staging: notify-karpenter:nodePool.recycle.schedule must start runs when the budgets allow Drifted and Underutilized disruption, as Karpenter replaces nodes only then: a run starts on 2026-01-01 23:30 UTC (18:30 local), when a budget allows no Drifted or Underutilized disruption (nodes "0") (got "30 23 * * *")',
        );
        // Without the quarterly budget the budgets themselves are refused, whatever the recycler's hour.
        const nodePool = section("staging", "nodePool");
        const budgets = nodePool.budgets.filter((b: { schedule?: string }) => !b.schedule?.startsWith("0 23 "));
        expect(budgets).to.have.length(nodePool.budgets.length - 1);
        expect(errorOf(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { budgets, recycle: { ...nodePool.recycle, schedule: "30 23 * * *" } })))).to.match(
            /^staging: notify-karpenter:nodePool\.budgets must allow no Underutilized or Drifted disruption \(nodes "0"\) for 2 h from 23:00 UTC on the days GC Notify's quarterly tasks start/,
        );
        // A stack that leaves budgets out gets the same protection, and the default recycler starts after it.
        const defaults = parseStackConfig("staging", rawConfig("staging", "nodePool", { budgets: undefined })).nodePool;
        expect(defaults.budgets).to.deep.include({ nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 23 1-3 1,4,7,10 *", duration: "2h" });
        expect(defaults.recycle?.schedule).to.equal("0 1 * * *");
    });
});

describe("nodePool.expireAfter, by every launch minute of the day (components/models/disruptionBudgets.ts)", () => {
    const h = { start: "08:00", end: "18:00", timeZone: "America/Toronto" };
    const pool = (expireAfter: string) => {
        try {
            parseStackConfig("staging", rawConfig("staging", "nodePool", { expireAfter }));
            return "";
        } catch (e) {
            return (e as Error).message;
        }
    };

    it("refuses 36h, which spares a burst's nodes but not a node launched at midnight (it was accepted)", () => {
        expect(pool("36h")).to.equal(
            "staging: notify-karpenter:nodePool.expireAfter must not expire inside sendingHours (08:00-18:00 America/Toronto) a node launched at any minute of the day, since expiry ignores budgets and nodes launch at every hour (bursts, spot replacements, consolidation and recycling at night): with 36h, a node launched 2026-01-01 at 00:00 local expires 2026-01-02 at 12:00 local; use Never, with drift kept out of sending hours by a budget, and bound node age with nodePool.recycle.maxAgeDays, which replaces nodes one at a time outside sending hours and the nightly batch",
        );
    });

    it("refuses every finite length: each hour from 1h to 48h, a week, 30 days, a year, and minutes and seconds too", () => {
        for (let hours = 1; hours <= 48; hours++) expect(expiryInSendingHours(hours * 60, h), `${hours}h`).to.match(/^a node launched 2026-01-01 at \d\d:\d\d local expires /);
        for (const length of ["168h", "720h", "8760h", "1h30m", "25h59m59s"]) expect(pool(length), length).to.match(new RegExp(`nodePool\\.expireAfter must not expire .* with ${length}, a node launched `));
        expect(pool("Never")).to.equal("");
    });

    it("decides each launch minute in its own season: 24 h across the changes of clock", () => {
        // 07:30 EST on 7 March, 24 h later, is 08:30 EDT on the 8th (clocks went forward): inside. A day earlier, outside.
        expect(expiresInSendingHours(new Date("2026-03-07T12:30:00Z"), 24 * 60, h)).to.equal(true);
        expect(expiresInSendingHours(new Date("2026-03-06T12:30:00Z"), 24 * 60, h)).to.equal(false);
        // 08:30 EDT on 31 October, 24 h later, is 07:30 EST on 1 November (clocks went back): outside.
        expect(expiresInSendingHours(new Date("2026-10-31T12:30:00Z"), 24 * 60, h)).to.equal(false);
        // 09:30 EDT that day is 08:30 EST a day later: inside.
        expect(expiresInSendingHours(new Date("2026-10-31T13:30:00Z"), 24 * 60, h)).to.equal(true);
    });

    it("tries every minute of every day, in EST and EDT: it agrees with the local clock at every launch minute of a winter and a summer day", () => {
        const local = new Intl.DateTimeFormat("en-US", { timeZone: "America/Toronto", hourCycle: "h23", hour: "2-digit", minute: "2-digit" });
        const inHours = (ms: number) => {
            const [hh, mm] = local.format(new Date(ms)).split(":").map(Number);
            return hh * 60 + mm >= 8 * 60 && hh * 60 + mm < 18 * 60;
        };
        for (const day of ["2026-01-15", "2026-07-15"]) {
            for (let m = 0; m < 1440; m++) {
                const launch = Date.parse(`${day}T00:00:00Z`) + m * 60_000;
                for (const after of [36 * 60, 37 * 60 + 13]) expect(expiresInSendingHours(new Date(launch), after, h), `${new Date(launch).toISOString()} + ${after} min`).to.equal(inHours(launch + after * 60_000));
            }
        }
        // And the first clash it names is a real one.
        expect(expiryInSendingHours(36 * 60, h)).to.equal("a node launched 2026-01-01 at 00:00 local expires 2026-01-02 at 12:00 local");
    });
});
