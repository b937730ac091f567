import { createRequire } from "node:module";
import { evaluate } from "@marcbachmann/cel-js";
import { expect } from "chai";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { SPAN_FROM, windowMinutes } from "../components/models/disruptionBudgets.ts";
import { NODEPOOL_LABEL, NodeRecycler, ownPoolOnlyPolicySpec, recyclerUser } from "../components/nodeRecycler.ts";
import { runOffline } from "../plan/offlineRuntime.ts";
import { nodeRecyclerArgs } from "../stacks/componentArgs.ts";
import { recycleWindow } from "../components/models/recycleWindow.ts";
import { FakeKubeApi, type FakeKubeApiOptions, FakeClock, iso } from "./fakeKubeApi.ts";
import { STACKS, buildStack, rawConfig, stackConfig } from "./helpers.ts";
import { tempDir, expectScriptConfigMap } from "./opsHelpers.ts";
import { CutMidAnswer } from "./loopbackServer.ts";
const require = createRequire(import.meta.url);

// The script runs in the cluster as plain JavaScript; its functions are tested here as they are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const recycler = require("../components/inCluster/recycleNodeClaims.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { stopper } = require("../components/inCluster/inClusterApi.js");
const SCRIPT = path.join(import.meta.dirname, "..", "components", "inCluster", "recycleNodeClaims.js");

const POOL = "notify-karpenter";
const NAME = "node-recycler";
const USER = `system:serviceaccount:karpenter:${NAME}`;
const MIN = 60_000;
const HASH = "karpenter.sh/nodepool-hash";
/** What Karpenter v1.14.1 writes on every NodeClaim it makes (pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go:76-77). */
const HASHES = { [HASH]: "6043009744046391834", "karpenter.sh/nodepool-hash-version": "v3" };
const SENDING = { name: "sendingHours", start: "08:00", end: "18:00", timeZone: "America/Toronto" };
const NIGHTLY = { name: "nightlyBatch", start: "05:00", end: "10:30", timeZone: "Etc/UTC" };
const SETTINGS = { nodePool: POOL, maxAgeDays: 7, stuckMinutes: 30, drainSeconds: 3600, markSeconds: 900, commandSeconds: 600, pollSeconds: 10, windows: [SENDING, NIGHTLY] };

/** A NodeClaim of the pool, `ageMinutes` old at `now`, Initialized unless told, with Karpenter's hash annotations and its node's name. */
function nodeClaim(name: string, ageMinutes: number, o: { initialized?: boolean; pool?: string; annotations?: Record<string, string>; now?: number } = {}) {
    return {
        apiVersion: "karpenter.sh/v1",
        kind: "NodeClaim",
        metadata: {
            name,
            uid: `uid-${name}`,
            creationTimestamp: iso((o.now ?? Date.now()) - ageMinutes * MIN),
            labels: { [NODEPOOL_LABEL]: o.pool ?? POOL },
            annotations: o.annotations ?? HASHES,
            finalizers: ["karpenter.sh/termination"],
        },
        spec: { nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: POOL }, requirements: [{ key: "karpenter.sh/capacity-type", operator: "In", values: ["spot"] }], terminationGracePeriod: "1h" },
        status: { nodeName: `ip-${name}`, conditions: [{ type: "Initialized", status: o.initialized === false ? "Unknown" : "True" }] },
    };
}

/** The node of NodeClaim `claim`, Ready (or not) since `sinceMinutes` before `now`. */
function node(claim: string, o: { ready?: "True" | "False" | "Unknown"; sinceMinutes?: number; pool?: string; annotations?: Record<string, string>; now?: number } = {}) {
    return {
        metadata: { name: `ip-${claim}`, labels: { [NODEPOOL_LABEL]: o.pool ?? POOL }, ...(o.annotations ? { annotations: o.annotations } : {}) },
        status: { conditions: [{ type: "Ready", status: o.ready ?? "True", lastTransitionTime: iso((o.now ?? Date.now()) - (o.sinceMinutes ?? 60) * MIN) }] },
    };
}

describe("node recycler: what it does (components/inCluster/recycleNodeClaims.js)", () => {
    const NOW = Date.UTC(2026, 6, 1, 23, 30);
    const DAYS = ["2026-01-15", "2026-03-07", "2026-03-08", "2026-03-09", "2026-07-01", "2026-10-31", "2026-11-01", "2026-11-02"];

    it("reads each protected window as components/models/disruptionBudgets.ts does, at every minute of the days clocks change and of a winter and a summer day", () => {
        // The nightly batch in UTC, and one given in Eastern time (01:00-05:30: 05:00-09:30 UTC in EDT, 06:00-10:30 in EST).
        const torontoNight = { name: "nightlyBatch", start: "01:00", end: "05:30", timeZone: "America/Toronto" };
        for (const w of [SENDING, NIGHTLY, torontoNight]) {
            const minutes = windowMinutes(w);
            for (const day of DAYS) {
                const midnight = Date.parse(`${day}T00:00:00Z`);
                for (let m = 0; m < 1440; m++) {
                    const at = midnight + m * MIN;
                    expect(recycler.inWindow(at, w), `${w.name} ${w.timeZone} ${new Date(at).toISOString()}`).to.equal(minutes[(at - SPAN_FROM.getTime()) / MIN] === 1);
                }
            }
        }
        // 12:30 UTC is 08:30 EDT in July, 07:30 EST in January; 05:30 UTC is in the nightly batch all year.
        expect(recycler.inWindow(Date.UTC(2026, 6, 1, 12, 30), SENDING)).to.equal(true);
        expect(recycler.inWindow(Date.UTC(2026, 0, 15, 12, 30), SENDING)).to.equal(false);
        expect([Date.UTC(2026, 0, 15, 5, 30), Date.UTC(2026, 6, 15, 5, 30)].map((t) => recycler.inWindow(t, NIGHTLY))).to.deep.equal([true, true]);
        expect(recycler.inWindow(Date.UTC(2026, 6, 15, 10, 30), NIGHTLY)).to.equal(false);
        // The Eastern nightly batch follows the clock: 09:45 UTC is 05:45 EDT (after it) but 04:45 EST (inside).
        expect([Date.UTC(2026, 6, 15, 9, 45), Date.UTC(2026, 0, 15, 9, 45)].map((t) => recycler.inWindow(t, torontoNight))).to.deep.equal([false, true]);
        // Windows across midnight.
        expect(recycler.inWindow(Date.UTC(2026, 0, 15, 2, 0), { name: "x", start: "22:00", end: "06:00", timeZone: "UTC" })).to.equal(true);
    });

    it("starts nothing whose drain could reach a protected window, in EDT and EST, and names the window", () => {
        const windows = SETTINGS.windows;
        // EDT: sending hours begin at 12:00 UTC; a 1 h drain may start until 11:00 UTC (after the nightly batch).
        expect(recycler.protectedWithin(Date.UTC(2026, 6, 1, 11, 0), 3600, windows)).to.deep.equal({ at: Date.UTC(2026, 6, 1, 12, 0), name: "sendingHours" });
        expect(recycler.protectedWithin(Date.UTC(2026, 6, 1, 10, 59, 59), 60, windows)).to.equal(undefined);
        // EST: an hour later.
        expect(recycler.protectedWithin(Date.UTC(2026, 0, 15, 11, 30), 1800, windows)).to.equal(undefined);
        expect(recycler.protectedWithin(Date.UTC(2026, 0, 15, 12, 30), 3600, windows)).to.deep.equal({ at: Date.UTC(2026, 0, 15, 13, 0), name: "sendingHours" });
        // A mark needs 900 + 600 + 3600 s: 85 minutes before the nightly batch's 05:00 UTC is 03:35, in both seasons.
        for (const day of [Date.UTC(2026, 0, 15), Date.UTC(2026, 6, 15)]) {
            expect(recycler.protectedWithin(day + (3 * 60 + 35) * MIN - 1000, 5100, windows)).to.equal(undefined);
            expect(recycler.protectedWithin(day + (3 * 60 + 35) * MIN, 5100, windows)).to.deep.equal({ at: day + 5 * 60 * MIN, name: "nightlyBatch" });
        }
        // Inside one: now.
        expect(recycler.protectedWithin(Date.UTC(2026, 0, 15, 6, 0), 0, windows)).to.deep.equal({ at: Date.UTC(2026, 0, 15, 6, 0), name: "nightlyBatch" });
    });

    it("deletes the stuck and NotReady, marks the old (oldest first), and keeps young, healthy, do-not-disrupt and unmarkable nodes from the age rule", () => {
        const o = { now: NOW };
        const claims = [
            nodeClaim("old-8d", 8 * 1440, o),
            nodeClaim("old-9d", 9 * 1440, o),
            nodeClaim("young", 60, o),
            nodeClaim("not-ready", 120, o),
            nodeClaim("stuck", 31, { ...o, initialized: false }),
            nodeClaim("old-kept", 10 * 1440, { ...o, annotations: { ...HASHES, "karpenter.sh/do-not-disrupt": "true" } }),
            nodeClaim("old-node-kept", 10 * 1440, o),
            // Without Karpenter's hash annotations a mark would not be drift (drift.go:160-162), and the admission policy refuses adding one.
            nodeClaim("old-unhashed", 10 * 1440, { ...o, annotations: {} }),
            nodeClaim("stuck-kept-anyway", 40, { ...o, initialized: false, annotations: { "karpenter.sh/do-not-disrupt": "true" } }),
            nodeClaim("not-ready-briefly", 120, o),
        ];
        const nodes = [
            node("old-8d", o),
            node("old-9d", o),
            node("young", o),
            node("not-ready", { ...o, ready: "Unknown", sinceMinutes: 30 }),
            node("old-node-kept", { ...o, annotations: { "karpenter.sh/do-not-disrupt": "true" } }),
            node("not-ready-briefly", { ...o, ready: "False", sinceMinutes: 29 }),
        ];
        const plan = recycler.planFor(claims, nodes, SETTINGS, NOW);
        expect(plan.busy).to.equal(undefined);
        expect(plan.candidates.map((c: any) => [c.name, c.action, c.reason])).to.deep.equal([
            ["stuck-kept-anyway", "delete", "not initialized 40 minutes after its creation"],
            ["stuck", "delete", "not initialized 31 minutes after its creation"],
            ["not-ready", "delete", "node ip-not-ready Ready=Unknown for 30 minutes"],
            ["old-9d", "mark", "older than 7 days (created 2026-06-22T23:30:00.000Z)"],
            ["old-8d", "mark", "older than 7 days (created 2026-06-23T23:30:00.000Z)"],
        ]);
        // What the delete's preconditions and the mark need.
        expect(plan.candidates[0]).to.deep.include({ uid: "uid-stuck-kept-anyway", node: "ip-stuck-kept-anyway" });
        expect(plan.candidates[3]).to.deep.include({ uid: "uid-old-9d", hash: "6043009744046391834" });
    });

    it("marks with a value of its own that keeps the hash, so that the mark can be withdrawn", () => {
        expect(recycler.markFor("6043009744046391834", NOW)).to.equal("recycle-2026-07-01-6043009744046391834");
        // A mark an earlier run left (killed before it could withdraw it) keeps the original hash.
        expect(recycler.markFor("recycle-2026-06-30-6043009744046391834", NOW)).to.equal("recycle-2026-07-01-6043009744046391834");
    });

    it("waits while a NodeClaim of the pool is being deleted or still launching: one at a time", () => {
        const o = { now: NOW };
        const deleting = { ...nodeClaim("draining", 9 * 1440, o), metadata: { ...nodeClaim("draining", 9 * 1440, o).metadata, deletionTimestamp: iso(NOW) } };
        expect(recycler.planFor([deleting, nodeClaim("old", 8 * 1440, o)], [], SETTINGS, NOW)).to.deep.include({ busy: "nodeclaim draining is being deleted" });
        expect(recycler.planFor([nodeClaim("new", 2, { ...o, initialized: false }), nodeClaim("old", 8 * 1440, o)], [], SETTINGS, NOW)).to.deep.include({ busy: "nodeclaim new is launching" });
        // A NodeClaim being deleted is never a candidate.
        expect(recycler.planFor([deleting], [], SETTINGS, NOW).candidates).to.deep.equal([]);
    });

    it("names every missing or bad setting", () => {
        expect(recycler.settingsFrom({}).problems).to.deep.equal([
            "NODE_POOL must be set",
            "MAX_AGE_DAYS must be a whole number, at least 1 (got undefined)",
            "STUCK_MINUTES must be a whole number, at least 1 (got undefined)",
            "PROTECTED_WINDOWS must be set",
            "DRAIN_SECONDS must be a whole number, at least 0 (got undefined)",
            "MARK_SECONDS must be a whole number, at least 1 (got undefined)",
            "COMMAND_SECONDS must be a whole number, at least 0 (got undefined)",
        ]);
        const env = { NODE_POOL: POOL, MAX_AGE_DAYS: "7", STUCK_MINUTES: "30", DRAIN_SECONDS: "3600", MARK_SECONDS: "900", COMMAND_SECONDS: "600", POLL_SECONDS: "0" };
        const windows = (w: unknown) => recycler.settingsFrom({ ...env, POLL_SECONDS: "10", PROTECTED_WINDOWS: JSON.stringify(w) }).problems;
        expect(recycler.settingsFrom({ ...env, PROTECTED_WINDOWS: JSON.stringify([SENDING]) }).problems).to.deep.equal(['POLL_SECONDS must be a number of seconds above 0, at most 300 (got "0")']);
        expect(windows([{ ...SENDING, start: "8:00" }, { ...NIGHTLY, timeZone: "Eastern" }, { start: "05:00" }])).to.deep.equal([
            'PROTECTED_WINDOWS[0] needs start and end as local times such as 08:00 (got {"name":"sendingHours","start":"8:00","end":"18:00","timeZone":"America/Toronto"})',
            'PROTECTED_WINDOWS[1] needs an IANA time zone such as America/Toronto (got {"name":"nightlyBatch","start":"05:00","end":"10:30","timeZone":"Eastern"})',
            'PROTECTED_WINDOWS[2] needs a name (got {"start":"05:00"})',
        ]);
        expect(windows([])).to.deep.equal(['PROTECTED_WINDOWS must be a JSON list of { name, start, end, timeZone } (got "[]")']);
    });
});

/** "HH:MM" of UTC minutes after `from` (wrapped to the day). */
const utcClockIn = (minutes: number, from: number) => {
    const d = new Date(from + minutes * MIN);
    return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
};

/** A protected window in UTC from `from` to `to` minutes after `at` (now unless told). */
const windowIn = (name: string, from: number, to: number, at = Date.now()) => ({ name, start: utcClockIn(from, at), end: utcClockIn(to, at), timeZone: "UTC" });

const logged = (output: string[]) => output.map((l) => JSON.parse(l));
const messages = (output: string[]) => logged(output).map((l) => l.msg);
const isMark = (nc: any) => String(nc?.metadata.annotations?.[HASH]).startsWith("recycle-");
/** The settings the CronJob gives the script, with the API server's address: a fake's, and the token the fake wants in `dir`. */
function recyclerEnv(api: FakeKubeApi, windows: object[]): Record<string, string> {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "token"), "s3cret\n");
    return {
        KUBE_API_URL: api.url,
        KUBE_TOKEN_FILE: path.join(dir, "token"),
        NODE_POOL: POOL,
        MAX_AGE_DAYS: "7",
        STUCK_MINUTES: "30",
        PROTECTED_WINDOWS: JSON.stringify(windows),
        DRAIN_SECONDS: "3600",
        MARK_SECONDS: "900",
        COMMAND_SECONDS: "600",
        POLL_SECONDS: "10",
    };
}

describe("stopping an in-cluster script (components/inCluster/inClusterApi.js stopper)", () => {
    it("a stop ends the sleep under way, and a sleep after it does not wait: a SIGTERM that lands during a request leaves the 20 s before the process exits to the withdrawal", async () => {
        const waits: number[] = [];
        let end = () => {};
        const stop = stopper((seconds: number, done: () => void) => (waits.push(seconds), (end = done), () => undefined));
        const first = stop.sleep(300);
        stop.request();
        await first;
        await stop.sleep(300);
        expect(waits).to.deep.equal([300]);
        end();
    });
});

describe("node recycler: a run against a fake Kubernetes API (the script's run, in-process)", () => {
    /** The run starts at 23:30 UTC, 5.5 hours before the nightly batch (the stacks' CronJob starts at 01:00, 4 hours before), and its clock moves only as it sleeps. */
    const T0 = Date.UTC(2026, 6, 1, 23, 30);
    let api: FakeKubeApi | undefined;
    let clock: FakeClock;
    beforeEach(() => (clock = new FakeClock(T0)));
    afterEach(async () => {
        await api?.stop();
        api = undefined;
    });

    /** A NodeClaim of the pool `ageMinutes` old on the run's clock now, as `nodeClaim` makes it. */
    const claim = (name: string, ageMinutes: number, o: Parameters<typeof nodeClaim>[2] = {}) => nodeClaim(name, ageMinutes, { now: clock.now(), ...o });
    const nodeOf = (name: string, o: Parameters<typeof node>[1] = {}) => node(name, { now: clock.now(), ...o });

    /** What stops the run (a test may request it): a sleep moves the clock on, and lets the fake cluster do what falls due meanwhile. */
    const clockStop = () =>
        stopper((seconds: number, done: () => void) => {
            void clock.sleep(seconds * 1000).then(done);
            return () => {};
        });
    /** Runs the script's run to its end against a fake API holding `opts`, with the CronJob's settings unless `env` says otherwise: its exit code and log lines. */
    async function run(opts: FakeKubeApiOptions, env: Record<string, string> = {}, stop = clockStop()) {
        // The options themselves (not a copy), so that a test's getters answer at each request.
        const fake = await new FakeKubeApi(clock, Object.assign(opts, { token: "s3cret" })).start();
        api = fake;
        const output: string[] = [];
        const code: number = await recycler.run({
            env: { ...recyclerEnv(fake, [SENDING, NIGHTLY]), ...env },
            write: (line: string) => output.push(line),
            now: () => clock.now(),
            stop,
        });
        return { code, output, api: fake };
    }
    const deletes = () => api!.requests.filter((r) => r.startsWith("DELETE"));
    const marks = () => api!.patches.map((p) => [p.name, p.annotations[HASH]]);
    const mark = (hash = HASHES[HASH]) => `recycle-2026-07-01-${hash}`;
    /** Calls `what` once the run's clock has moved `seconds` on from now: what the cluster does meanwhile. */
    function after(seconds: number, what: () => void) {
        const due = clock.now() + seconds * 1000;
        let done = false;
        clock.onAdvance(async (t) => {
            if (done || t < due) return;
            done = true;
            what();
        });
    }
    /** Karpenter taking a NodeClaim marked drifted: the replacement, Initialized, then the old one deleted and gone. */
    const karpenterReplaces = (o: { initializedAfterSeconds?: number; goneAfterSeconds?: number } = {}) => (nc: any) => {
        if (!isMark(nc)) return;
        api!.put("nodeclaims", claim(`for-${nc.metadata.name}`, 0, { initialized: false }));
        after(o.initializedAfterSeconds ?? 20, () => {
            api!.put("nodeclaims", claim(`for-${nc.metadata.name}`, 1));
            api!.karpenterDeletes(nc.metadata.name, o.goneAfterSeconds ?? 20);
        });
    };

    it("deletes the pool's stuck and NotReady NodeClaims, marks its old ones drifted for Karpenter, one at a time, each once gone, and nothing else", async () => {
        let overlapping = 0;
        const old = claim("old", 8 * 1440);
        const busy = () => ["healthy", "old", "not-ready", "stuck"].filter((n) => api!.nodeClaim(n)?.metadata.deletionTimestamp || isMark(api!.nodeClaim(n))).length;
        const replaces = karpenterReplaces();
        const { code, output } = await run({
            nodeclaims: [
                claim("healthy", 60),
                old,
                claim("not-ready", 120),
                claim("stuck", 45, { initialized: false }),
                // Another pool's: not even listed (the label selector), and the admission policy would refuse it.
                claim("other-old", 30 * 1440, { pool: "other" }),
            ],
            nodes: [nodeOf("healthy"), nodeOf("old"), nodeOf("not-ready", { ready: "False", sinceMinutes: 40 }), nodeOf("other-old", { pool: "other" })],
            // Karpenter drains it, then the NodeClaim and its node go; nothing else may start meanwhile.
            onNodeClaimDelete: () => {
                if (busy() > 1) overlapping++;
                return { goneAfterSeconds: 30 };
            },
            onNodeClaimPatch: (nc) => {
                if (busy() > 1) overlapping++;
                replaces(nc);
            },
        });
        expect(code).to.equal(0);
        // The stuck ones deleted; the old one never: marked, and replaced by Karpenter.
        expect(deletes()).to.deep.equal(["stuck", "not-ready"].map((n) => `DELETE /apis/karpenter.sh/v1/nodeclaims/${n}`));
        expect(marks()).to.deep.equal([["old", mark()]]);
        expect(overlapping).to.equal(0);
        for (const n of ["stuck", "not-ready", "old"]) expect(api!.nodeClaim(n), n).to.equal(undefined);
        expect(api!.nodeClaim("for-old")).to.not.equal(undefined);
        expect(api!.nodeClaim("healthy")).to.not.equal(undefined);
        expect(api!.nodeClaim("other-old")).to.not.equal(undefined);
        // Every list asks for the pool's label only.
        expect(api!.requests.filter((r) => r.startsWith("GET")).every((r) => r === "GET /apis/karpenter.sh/v1/nodeclaims" || r === "GET /api/v1/nodes")).to.equal(true);
        const lines = logged(output);
        expect(lines.filter((l) => ["deleted nodeclaim", "marked nodeclaim drifted"].includes(l.msg)).map((l) => [l.msg, l.nodeClaim, l.node, l.reason])).to.deep.equal([
            ["deleted nodeclaim", "stuck", "ip-stuck", "not initialized 45 minutes after its creation"],
            ["deleted nodeclaim", "not-ready", "ip-not-ready", "node ip-not-ready Ready=False for 40 minutes"],
            ["marked nodeclaim drifted", "old", "ip-old", `older than 7 days (created ${old.metadata.creationTimestamp})`],
        ]);
        expect(messages(output)).to.include.members(["karpenter is deleting it", "nodeclaim replaced"]);
        expect(lines[lines.length - 1]).to.deep.include({
            level: "info",
            msg: "done",
            done: [
                { name: "stuck", uid: "uid-stuck", action: "deleted" },
                { name: "not-ready", uid: "uid-not-ready", action: "deleted" },
                { name: "old", uid: "uid-old", action: "marked" },
            ],
            notReplaced: [],
        });
    });

    it("marks the next old NodeClaim only once Karpenter's replacement for the last is Initialized and the old one gone", async () => {
        /** What the cluster held when each replacement initialized, two minutes after its mark; and old-1 when old-2 was marked. */
        const whileLaunching: any[] = [];
        let oldOneAtNextMark: any = "not marked";
        const { code, output } = await run({
            nodeclaims: [claim("old-1", 9 * 1440), claim("old-2", 8 * 1440)],
            nodes: [nodeOf("old-1"), nodeOf("old-2")],
            // Karpenter launches the replacement, which initializes two minutes later.
            onNodeClaimPatch: (nc) => {
                if (!isMark(nc)) return;
                const name = nc.metadata.name;
                if (name === "old-2") oldOneAtNextMark = api!.nodeClaim("old-1");
                api!.put("nodeclaims", claim(`for-${name}`, 0, { initialized: false }));
                const requests = api!.requests.length;
                after(120, () => {
                    whileLaunching.push({ lists: api!.requests.length - requests, marks: marks(), deletes: deletes(), deleting: api!.nodeClaim(name).metadata.deletionTimestamp });
                    // Initialized: Karpenter deletes the old one (queue.go:217-237), which goes; then, and only then, the next.
                    api!.put("nodeclaims", claim(`for-${name}`, 1));
                    api!.karpenterDeletes(name, 40);
                });
            },
        });
        // The old node stays while its replacement launches: the recycler, looking at the pool every 10 s, deletes nothing and marks nothing more.
        expect(whileLaunching).to.have.length(2);
        expect(whileLaunching[0].lists).to.be.at.least(20);
        expect(whileLaunching[0]).to.deep.include({ marks: [["old-1", mark()]], deletes: [], deleting: undefined });
        expect(oldOneAtNextMark).to.equal(undefined);
        expect(code).to.equal(0);
        expect(marks()).to.deep.equal(["old-1", "old-2"].map((n) => [n, mark()]));
        expect(deletes()).to.deep.equal([]);
        expect(messages(output).slice(-1)).to.deep.equal(["done"]);
    });

    it("withdraws a mark Karpenter has not acted on in MARK_SECONDS (the hash back as it was), and goes on to the next", async () => {
        // Karpenter never takes them (a budget, a replacement it cannot launch).
        const { code, output } = await run({ nodeclaims: [claim("old-1", 9 * 1440), claim("old-2", 8 * 1440, { annotations: { ...HASHES, [HASH]: "42" } })], nodes: [] }, { MARK_SECONDS: "60" });
        expect(code).to.equal(0);
        expect(marks()).to.deep.equal([
            ["old-1", mark()],
            ["old-1", HASHES[HASH]],
            ["old-2", mark("42")],
            ["old-2", "42"],
        ]);
        expect(api!.nodeClaim("old-1").metadata.annotations).to.deep.equal(HASHES);
        expect(deletes()).to.deep.equal([]);
        const lines = logged(output);
        expect(lines.filter((l) => l.msg === "not replaced in time: mark withdrawn").map((l) => [l.level, l.nodeClaim])).to.deep.equal([
            ["error", "old-1"],
            ["error", "old-2"],
        ]);
        // Not before MARK_SECONDS.
        const at = (msg: string, name: string) => Date.parse(lines.find((l) => l.msg === msg && l.nodeClaim === name).time);
        for (const n of ["old-1", "old-2"]) expect(at("not replaced in time: mark withdrawn", n) - at("marked nodeclaim drifted", n), n).to.be.at.least(60_000);
        expect(lines[lines.length - 1]).to.deep.include({ level: "error", msg: "done", notReplaced: [{ name: "old-1", uid: "uid-old-1" }, { name: "old-2", uid: "uid-old-2" }] });
    });

    it("leaves a mark Karpenter acted on: once the old NodeClaim is deleting, it waits for it instead of withdrawing", async () => {
        // Karpenter begins deleting it 20 s after the mark; it goes 120 s later, past MARK_SECONDS.
        const { code, output } = await run({ nodeclaims: [claim("old", 9 * 1440)], nodes: [], onNodeClaimPatch: karpenterReplaces({ initializedAfterSeconds: 20, goneAfterSeconds: 120 }) }, { MARK_SECONDS: "60" });
        expect(code).to.equal(0);
        expect(marks()).to.deep.equal([["old", mark()]]);
        expect(messages(output)).to.deep.equal(["started", "marked nodeclaim drifted", "karpenter is deleting it", "nodeclaim replaced", "done"]);
    });

    it("looks again after pollSeconds when a NodeClaim changed since the list (409 on the mark's or the delete's precondition), never at once", async () => {
        const touched = new Set<string>();
        // Karpenter updates each once between the recycler's list and its request: a new resourceVersion.
        const touch = (name: string) => {
            if (touched.has(name)) return;
            touched.add(name);
            api!.put("nodeclaims", { ...api!.nodeClaim(name), metadata: { ...api!.nodeClaim(name).metadata, labels: { ...api!.nodeClaim(name).metadata.labels, touched: "yes" } } });
        };
        const { code, output } = await run({
            nodeclaims: [claim("old", 8 * 1440), claim("stuck", 45, { initialized: false })],
            nodes: [],
            beforeNodeClaimDelete: touch,
            beforeNodeClaimPatch: (name) => touch(name),
            onNodeClaimDelete: () => ({ goneAfterSeconds: 5 }),
            // Gone only after a look or two at the deleting NodeClaim.
            onNodeClaimPatch: karpenterReplaces({ goneAfterSeconds: 25 }),
        });
        expect(code).to.equal(0);
        expect(deletes()).to.deep.equal(["stuck", "stuck"].map((n) => `DELETE /apis/karpenter.sh/v1/nodeclaims/${n}`));
        expect(api!.requests.filter((r) => r.startsWith("PATCH"))).to.deep.equal(["old", "old"].map((n) => `PATCH /apis/karpenter.sh/v1/nodeclaims/${n}`));
        const lines = logged(output);
        expect(lines.map((l) => l.msg)).to.deep.equal(["started", "changed since listed: looking again", "deleted nodeclaim", "nodeclaim gone", "changed since listed: looking again", "marked nodeclaim drifted", "karpenter is deleting it", "nodeclaim replaced", "done"]);
        // DR-F16: a pause of pollSeconds before the next list and request.
        for (const [conflict, next] of [
            [1, 2],
            [4, 5],
        ]) {
            expect(Date.parse(lines[next].time) - Date.parse(lines[conflict].time), lines[next].msg).to.be.at.least(10_000);
        }
    });

    for (const [busy, because, gives] of [
        ["being deleted", "nodeclaim draining is being deleted", "its node drained, it goes"],
        ["launching", "nodeclaim launching is launching", "it initializes"],
    ] as const) {
        it(`acts on nothing while another NodeClaim of the pool is ${busy}: it waits, looking every pollSeconds, until ${gives} (one at a time, docs/capacity.md)`, async () => {
            const draining = claim("draining", 60);
            const pool = busy === "being deleted" ? [{ ...draining, metadata: { ...draining.metadata, deletionTimestamp: iso(clock.now()) } }] : [claim("launching", 2, { initialized: false })];
            after(1, () =>
                busy === "being deleted"
                    ? // Karpenter's drain of it ends 60 s after the run starts: it goes.
                      api!.schedule([{ at: 50, resource: "nodeclaims", type: "DELETED", object: api!.nodeClaim("draining") }])
                    : // It initializes 60 s after the run starts.
                      api!.schedule([{ at: 50, resource: "nodeclaims", type: "MODIFIED", object: { ...api!.nodeClaim("launching"), status: { nodeName: "ip-launching", conditions: [{ type: "Initialized", status: "True" }] } } }]),
            );
            /** The busy NodeClaim as the stuck one's DELETE arrives: gone, or Initialized. */
            let busyAtDelete: any = "not deleted";
            const { code, output } = await run({
                nodeclaims: [...pool, claim("stuck", 45, { initialized: false }), claim("old", 8 * 1440)],
                nodes: [],
                onNodeClaimDelete: () => {
                    busyAtDelete = busy === "being deleted" ? api!.nodeClaim("draining") : api!.nodeClaim("launching").status.conditions[0].status;
                    return { goneAfterSeconds: 5 };
                },
                onNodeClaimPatch: karpenterReplaces(),
            });
            expect(code).to.equal(0);
            expect(busyAtDelete).to.equal(busy === "being deleted" ? undefined : "True");
            const lines = logged(output);
            const waits = lines.filter((l) => l.msg === "waiting");
            expect(waits.map((l) => l.because)).to.deep.equal(Array(6).fill(because));
            const at = (msg: string) => Date.parse(lines.find((l) => l.msg === msg).time) - T0;
            // Nothing deleted or marked before the busy one is done, 60 s after the start; then the stuck one, then the old one.
            expect(at("deleted nodeclaim")).to.equal(60_000);
            expect(at("marked nodeclaim drifted")).to.be.greaterThan(60_000);
            expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
            expect(marks()).to.deep.equal([["old", mark()]]);
        });
    }

    it("exits 1 when a NodeClaim it deleted is still there DRAIN_SECONDS + 300 s later (a finalizer that never ends), acting on nothing more", async () => {
        const { code, output } = await run(
            { nodeclaims: [claim("stuck", 45, { initialized: false }), claim("stuck-2", 40, { initialized: false })], nodes: [], onNodeClaimDelete: () => ({}) },
            { DRAIN_SECONDS: "600" },
        );
        expect(code).to.equal(1);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
        const lines = logged(output);
        const last = lines[lines.length - 1];
        expect(last).to.deep.include({ level: "error", msg: "stopping: the deleted nodeclaim is still there", nodeClaim: "stuck", waitedSeconds: 900 });
        // The first look past 900 s, with POLL_SECONDS 10.
        expect(Date.parse(last.time) - Date.parse(lines.find((l) => l.msg === "deleted nodeclaim").time)).to.equal(910_000);
    });

    it("exits 1 when a NodeClaim Karpenter began deleting after the mark is still there DRAIN_SECONDS + 300 s later, and leaves the mark", async () => {
        const { code, output } = await run(
            {
                nodeclaims: [claim("old", 9 * 1440), claim("old-2", 8 * 1440)],
                nodes: [],
                // Karpenter takes it at once, and its deletion never ends.
                onNodeClaimPatch: (nc) => {
                    if (isMark(nc)) api!.karpenterDeletes(nc.metadata.name);
                },
            },
            { DRAIN_SECONDS: "600" },
        );
        expect(code).to.equal(1);
        expect(marks()).to.deep.equal([["old", mark()]]);
        const lines = logged(output);
        const last = lines[lines.length - 1];
        expect(last).to.deep.include({ level: "error", msg: "stopping: the nodeclaim Karpenter deletes is still there", nodeClaim: "old", waitedSeconds: 900 });
        expect(Date.parse(last.time) - Date.parse(lines.find((l) => l.msg === "karpenter is deleting it").time)).to.equal(910_000);
    });

    it("tries the withdrawal again after pollSeconds when the NodeClaim changed since the list (409), and withdraws the mark", async () => {
        /** The clock at each withdrawal's request. */
        const withdrawals: number[] = [];
        const { code, output } = await run(
            {
                nodeclaims: [claim("old", 9 * 1440)],
                nodes: [],
                // Karpenter updates it (its status, say) between the recycler's list and its first withdrawal: a new resourceVersion.
                beforeNodeClaimPatch: (name, body) => {
                    if (body.metadata.annotations[HASH] !== HASHES[HASH] || withdrawals.push(clock.now()) > 1) return;
                    const nc = api!.nodeClaim(name);
                    api!.put("nodeclaims", { ...nc, status: { ...nc.status, touched: true } });
                },
            },
            { MARK_SECONDS: "60" },
        );
        expect(code).to.equal(0);
        expect(withdrawals.map((t) => t - withdrawals[0])).to.deep.equal([0, 10_000]);
        expect(api!.requests.filter((r) => r.startsWith("PATCH"))).to.have.length(3);
        expect(marks()).to.deep.equal([
            ["old", mark()],
            ["old", HASHES[HASH]],
        ]);
        expect(api!.nodeClaim("old").metadata.annotations).to.deep.equal(HASHES);
        expect(messages(output)).to.deep.equal(["started", "marked nodeclaim drifted", "not replaced in time: mark withdrawn", "done"]);
    });

    /**
     * A run stopped (the Job's deadline) as its mark lands, Karpenter updating the NodeClaim before each of the first
     * `conflicts` withdrawals (a new resourceVersion each time): the clock at each withdrawal, and how the run ended.
     */
    async function stoppedWithConflicts(conflicts: number) {
        const withdrawals: number[] = [];
        const stop = clockStop();
        const ended = await run(
            {
                nodeclaims: [claim("old", 9 * 1440)],
                nodes: [],
                onNodeClaimPatch: (nc) => {
                    if (isMark(nc)) stop.request();
                },
                beforeNodeClaimPatch: (name, body) => {
                    if (body.metadata.annotations[HASH] !== HASHES[HASH] || withdrawals.push(clock.now()) > conflicts) return;
                    const nc = api!.nodeClaim(name);
                    api!.put("nodeclaims", { ...nc, status: { ...nc.status, touched: withdrawals.length } });
                },
            },
            {},
            stop,
        );
        return { ...ended, withdrawals: withdrawals.map((t) => t - withdrawals[0]) };
    }

    it("once stopped (SIGTERM), tries a withdrawal refused for a change since the list (409) again a second later, not at once, and withdraws the mark", async () => {
        const { code, output, withdrawals } = await stoppedWithConflicts(3);
        expect(code).to.equal(0);
        expect(withdrawals).to.deep.equal([0, 1000, 2000, 3000]);
        expect(api!.nodeClaim("old").metadata.annotations).to.deep.equal(HASHES);
        expect(messages(output)).to.deep.equal(["started", "marked nodeclaim drifted", "mark withdrawn", "stopped"]);
    });

    it("once stopped (SIGTERM), gives up a withdrawal refused for a change at every look after 10 s, says the mark is still there and exits 1, before the forced exit", async () => {
        const { code, output, withdrawals } = await stoppedWithConflicts(Infinity);
        expect(code).to.equal(1);
        expect(withdrawals).to.deep.equal(Array.from({ length: 11 }, (_, i) => i * 1000));
        expect(api!.nodeClaim("old").metadata.annotations[HASH]).to.equal(mark());
        const lines = logged(output);
        expect(lines[lines.length - 1]).to.deep.include({ level: "error", msg: "stopping: the mark could not be withdrawn", nodeClaim: "old", status: 409 });
    });

    it("once stopped (SIGTERM) while Karpenter deletes the NodeClaim it marked, exits at once and leaves the mark Karpenter acts on", async () => {
        const stop = clockStop();
        let lists = 0;
        const { code, output } = await run(
            {
                nodeclaims: [claim("old", 9 * 1440), claim("old-2", 8 * 1440)],
                nodes: [],
                // Karpenter takes the mark, and its deletion never ends; the Job's deadline comes meanwhile.
                onNodeClaimPatch: (nc) => {
                    if (!isMark(nc)) return;
                    api!.karpenterDeletes(nc.metadata.name);
                    stop.request();
                },
                // A run that went on looking would meet a broken answer at its fifth list and fail, rather than list
                // until the test's timeout.
                fault: (method, path) => (method === "GET" && path === "/apis/karpenter.sh/v1/nodeclaims" && ++lists > 4 ? { kind: "garbage" } : undefined),
            },
            {},
            stop,
        );
        expect(code).to.equal(0);
        expect(marks()).to.deep.equal([["old", mark()]]);
        expect(messages(output).slice(-2)).to.deep.equal(["karpenter is deleting it", "stopped"]);
        // One look after the stop, not a list as fast as the API answers until the process exits.
        expect(api!.requests.filter((r) => r === "GET /apis/karpenter.sh/v1/nodeclaims")).to.have.length(2);
    });

    it("never acts on a NodeClaim launched during the run, even one whose node goes NotReady", async () => {
        const { code, output } = await run({
            nodeclaims: [claim("stuck", 45, { initialized: false })],
            nodes: [],
            // Its replacement initializes, and its node is NotReady past STUCK_MINUTES by the next look.
            onNodeClaimDelete: () => {
                api!.put("nodes", nodeOf("replacement", { ready: "False", sinceMinutes: 40 }));
                return { goneAfterSeconds: 5, add: [claim("replacement", 5)] };
            },
        });
        expect(code).to.equal(0);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
        expect(api!.nodeClaim("replacement")).to.not.equal(undefined);
        expect(logged(output).at(-1)).to.deep.include({ msg: "done", done: [{ name: "stuck", uid: "uid-stuck", action: "deleted" }] });
    });

    it("stops, acting on nothing more, when a node launched during the run does not initialize", async () => {
        const { code, output } = await run({
            nodeclaims: [claim("stuck-1", 45, { initialized: false }), claim("stuck-2", 40, { initialized: false })],
            nodes: [],
            // A replacement that is already STUCK_MINUTES old and not initialized (nidhogg down, say).
            onNodeClaimDelete: () => ({ goneAfterSeconds: 5, add: [claim("replacement", 31, { initialized: false })] }),
        });
        expect(code).to.equal(1);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck-1"]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ level: "error", msg: "stopping: a nodeclaim launched during this run is not initialized", nodeClaim: "replacement" });
    });

    for (const [inside, windows] of [
        ["sendingHours", [windowIn("sendingHours", -60, 60, T0), windowIn("nightlyBatch", 240, 300, T0)]],
        ["nightlyBatch", [windowIn("sendingHours", 180, 240, T0), windowIn("nightlyBatch", -60, 60, T0)]],
    ] as const) {
        it(`refuses to act inside ${inside}: no list, no mark, no delete`, async () => {
            const { code, output } = await run({ nodeclaims: [claim("old", 8 * 1440)], nodes: [nodeOf("old")] }, { PROTECTED_WINDOWS: JSON.stringify(windows) });
            expect(code).to.equal(0);
            expect(api!.requests).to.deep.equal([]);
            expect(JSON.parse(output[1])).to.deep.include({ msg: `inside ${inside}: doing nothing`, done: [] });
        });
    }

    it("marks nothing when the mark, a command in flight and the drain could reach a protected window, but deletes a stuck node whose drain fits", async () => {
        // The nightly batch in 30 minutes: a 600 s drain fits, 900 + 600 + 600 s do not.
        const { code, output } = await run(
            { nodeclaims: [claim("old", 8 * 1440), claim("stuck", 45, { initialized: false })], nodes: [], onNodeClaimDelete: () => ({ goneAfterSeconds: 5 }) },
            { DRAIN_SECONDS: "600", PROTECTED_WINDOWS: JSON.stringify([windowIn("sendingHours", 180, 240, T0), windowIn("nightlyBatch", 30, 90, T0)]) },
        );
        expect(code).to.equal(0);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
        expect(marks()).to.deep.equal([]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "stopping: a node marked now could still drain when nightlyBatch begins", clearanceSeconds: 2100 });
    });

    it("starts no deletion when a drain of DRAIN_SECONDS could reach a protected window", async () => {
        const { code, output } = await run(
            { nodeclaims: [claim("stuck", 45, { initialized: false })], nodes: [] },
            { PROTECTED_WINDOWS: JSON.stringify([windowIn("sendingHours", 30, 90, T0), windowIn("nightlyBatch", 240, 300, T0)]) },
        );
        expect(code).to.equal(0);
        expect(deletes()).to.deep.equal([]);
        expect(JSON.parse(output[1])).to.deep.include({ msg: "stopping: a node deleted now could still drain when sendingHours begins", clearanceSeconds: 3600 });
    });

    it("logs a refused mark (RBAC, the admission policy) with the API's message and exits 1", async () => {
        const { code, output } = await run({ nodeclaims: [claim("old", 8 * 1440)], nodes: [], nodeClaimPatchStatus: 403 });
        expect(code).to.equal(1);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ level: "error", msg: "mark refused", nodeClaim: "old", status: 403, error: 'nodeclaims.karpenter.sh "old" is forbidden' });
    });

    it("reads every page of a long list", async () => {
        const claims = ["a", "b", "c", "d", "e"].map((n) => claim(n, 60));
        const { code, output } = await run({ nodeclaims: [...claims, claim("stuck", 45, { initialized: false })], nodes: [], pageSize: 2, onNodeClaimDelete: () => ({ goneAfterSeconds: 5 }) });
        expect(code).to.equal(0);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "done", nodeClaims: 5 });
    });

    /** A NodeClaim due for recycling, and a run whose first list after the mark fails (the API answers 500 once). */
    function failingAfterMark(more: Partial<FakeKubeApiOptions> = {}): FakeKubeApiOptions {
        let failures = 0;
        return {
            nodeclaims: [claim("old", 8 * 1440)],
            nodes: [],
            onNodeClaimPatch: (nc) => {
                if (isMark(nc)) failures = 1;
            },
            get listStatus() {
                return failures-- > 0 ? 500 : undefined;
            },
            ...more,
        };
    }

    it("withdraws its mark when the run fails while it waits (the API answers 500 once), then exits 1", async () => {
        const { code, output } = await run(failingAfterMark());
        expect(code).to.equal(1);
        expect(marks()).to.deep.equal([
            ["old", mark()],
            ["old", HASHES[HASH]],
        ]);
        expect(messages(output).slice(-2)).to.deep.equal(["mark withdrawn", "run failed"]);
    });

    it("withdraws its mark after a failed run even when the NodeClaim changed since the look (409 on the first withdrawal)", async () => {
        let conflicts = 1;
        const { code, output } = await run(
            failingAfterMark({
                beforeNodeClaimPatch: (name, body) => {
                    if (body.metadata.annotations[HASH] !== HASHES[HASH] || conflicts-- <= 0) return;
                    const nc = api!.nodeClaim(name);
                    api!.put("nodeclaims", { ...nc, status: { ...nc.status, touched: true } });
                },
            }),
        );
        expect(code).to.equal(1);
        expect(api!.nodeClaim("old").metadata.annotations).to.deep.equal(HASHES);
        expect(messages(output).slice(-2)).to.deep.equal(["mark withdrawn", "run failed"]);
    });

    it("fails the run, without hanging, when the connection is cut mid-answer", async () => {
        const cut = await new CutMidAnswer("NodeClaimList").start();
        try {
            const { code, output } = await run({}, { KUBE_API_URL: cut.url });
            expect(code).to.equal(1);
            expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "run failed", error: "GET /apis/karpenter.sh/v1/nodeclaims: the connection closed mid-answer" });
        } finally {
            await cut.stop();
        }
    });
});

describe("node recycler: the script as a process (node recycleNodeClaims.js, as the CronJob runs it)", () => {
    let api: FakeKubeApi;
    let child: ChildProcess | undefined;

    /** Starts the script with its windows (UTC) 3 to 5 hours from now unless `env` says otherwise; its log lines. */
    async function start(opts: FakeKubeApiOptions, env: Record<string, string> = {}) {
        api = await new FakeKubeApi(new FakeClock(), { ...opts, token: "s3cret" }).start();
        const output: string[] = [];
        child = spawn(process.execPath, [SCRIPT], {
            env: { PATH: process.env.PATH, ...recyclerEnv(api, [windowIn("sendingHours", 180, 240), windowIn("nightlyBatch", 240, 300)]), POLL_SECONDS: "0.02", ...env },
        });
        child.stdout!.on("data", (d) => output.push(...String(d).trim().split("\n")));
        return output;
    }
    const exit = () => new Promise<number | null>((resolve) => (child!.exitCode !== null ? resolve(child!.exitCode) : child!.on("exit", resolve)));
    const until = async (what: () => boolean) => {
        for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 25));
        expect(what(), "timed out").to.equal(true);
    };
    const deletes = () => api.requests.filter((r) => r.startsWith("DELETE"));
    const marks = () => api.patches.map((p) => [p.name, p.annotations[HASH]]);
    /** The marks a run between `from` and `to` may make: each names its UTC day, and a run may cross midnight. */
    const marksBetween = (from: number, to: number, hash = HASHES[HASH]) => [from, to].map((t) => `recycle-${new Date(t).toISOString().slice(0, 10)}-${hash}`);

    afterEach(async () => {
        if (child && child.exitCode === null) child.kill("SIGKILL");
        child = undefined;
        await api?.stop();
    });

    it("logs a refused delete (RBAC, the admission policy) with the API's message and exits 1", async () => {
        const output = await start({ nodeclaims: [nodeClaim("stuck", 45, { initialized: false })], nodes: [], deleteStatus: 403 });
        expect(await exit()).to.equal(1);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ level: "error", msg: "delete refused", nodeClaim: "stuck", status: 403, error: 'nodeclaims.karpenter.sh "stuck" is forbidden' });
    });

    it("stops on SIGTERM while a deleted node drains, and acts on nothing more", async () => {
        // Karpenter never finishes this one.
        const output = await start({ nodeclaims: [nodeClaim("stuck", 45, { initialized: false }), nodeClaim("old", 8 * 1440)], nodes: [], onNodeClaimDelete: () => ({}) });
        await until(() => output.some((l) => l.includes("deleted nodeclaim")));
        const t = Date.now();
        child!.kill("SIGTERM");
        expect(await exit()).to.equal(0);
        expect(Date.now() - t).to.be.below(2000);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/stuck"]);
        expect(marks()).to.deep.equal([]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "stopped", done: [{ name: "stuck", uid: "uid-stuck", action: "deleted" }] });
    });

    it("withdraws its mark on SIGTERM (the Job's deadline) while Karpenter has not begun replacing the node", async () => {
        const from = Date.now();
        const output = await start({ nodeclaims: [nodeClaim("old", 8 * 1440)], nodes: [] });
        await until(() => output.some((l) => l.includes("marked nodeclaim drifted")));
        child!.kill("SIGTERM");
        expect(await exit()).to.equal(0);
        const made = marks()[0]?.[1];
        expect(marksBetween(from, Date.now())).to.include(made);
        expect(marks()).to.deep.equal([
            ["old", made],
            ["old", HASHES[HASH]],
        ]);
        expect(messages(output).slice(-2)).to.deep.equal(["mark withdrawn", "stopped"]);
    });

    it("refuses missing settings in one line and exits 2", async () => {
        const output = await start({}, { PROTECTED_WINDOWS: "" });
        expect(await exit()).to.equal(2);
        expect(output.map((l) => JSON.parse(l))).to.deep.equal([{ time: JSON.parse(output[0]).time, level: "error", msg: "bad settings", problems: ["PROTECTED_WINDOWS must be set"] }]);
    });
});

describe("node recycler: what the stacks deploy (components/nodeRecycler.ts)", () => {
    it("refuses arguments config never gives, naming each, before it creates anything (the component's own check)", async () => {
        const args = nodeRecyclerArgs(stackConfig("staging"))!;
        const bad = { ...args, maxAgeDays: 0, stuckMinutes: 1.5, activeDeadlineSeconds: 59, windows: [] };
        const refused = await runOffline("staging", () => new NodeRecycler(NAME, bad)).then(
            () => "",
            (e: Error) => e.message,
        );
        expect(refused).to.equal(
            [
                `NodeRecycler ${NAME}:`,
                "maxAgeDays must be a whole number of days, at least 1 (got 0)",
                "stuckMinutes must be a whole number of minutes, at least 1 (got 1.5)",
                "activeDeadlineSeconds must be at least 60 (got 59)",
                "windows must name at least one protected window",
            ].join("\n"),
        );
    });

    for (const stack of STACKS) {
        it(`${stack}: a nightly CronJob on a stable node, in UTC after sending hours, allowed to list, patch and delete NodeClaims and list nodes, guarded to its pool and the one annotation`, async () => {
            const r = await buildStack(stack);
            const cronJob = r.get("kubernetes:batch/v1:CronJob", `${NAME}-cronjob`).inputs;
            expect(cronJob.metadata).to.deep.equal({ name: NAME, namespace: "karpenter" });
            const { jobTemplate, ...schedule } = cronJob.spec;
            // 01:00 UTC: after sending hours and GC Notify's quarterly tasks (their budget ends then, Pulumi.<stack>.yaml).
            expect(schedule).to.deep.equal({ schedule: "0 1 * * *", timeZone: "Etc/UTC", concurrencyPolicy: "Forbid", startingDeadlineSeconds: 3600, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 });
            // 01:00 UTC to 05:00 UTC, the nightly batch, the nearest protected window: the run is killed by then at the latest.
            expect([jobTemplate.spec.backoffLimit, jobTemplate.spec.activeDeadlineSeconds]).to.deep.equal([2, 240 * 60]);
            const pod = jobTemplate.spec.template.spec;
            expect(pod.nodeSelector).to.deep.equal({ "eks.amazonaws.com/capacityType": "ON_DEMAND" });
            expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).to.deep.equal([{ matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] }]);
            expect([pod.serviceAccountName, pod.restartPolicy]).to.deep.equal([NAME, "Never"]);
            expect(pod.securityContext).to.deep.equal({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
            // The script exits STOP_SECONDS after SIGTERM, withdrawal included: the kubelet must wait longer.
            expect(pod.terminationGracePeriodSeconds).to.equal(30).and.to.be.above(recycler.STOP_SECONDS);
            const container = pod.containers[0];
            expect(container.image).to.equal("public.ecr.aws/docker/library/node:24.18.0-alpine3.23");
            expect(container.command).to.deep.equal(["node", "/app/recycleNodeClaims.js"]);
            expect(container.env).to.deep.equal([
                { name: "NODE_POOL", value: POOL },
                { name: "MAX_AGE_DAYS", value: "7" },
                { name: "STUCK_MINUTES", value: "30" },
                { name: "PROTECTED_WINDOWS", value: JSON.stringify([SENDING, NIGHTLY]) },
                // The NodePool's terminationGracePeriod (1h).
                { name: "DRAIN_SECONDS", value: "3600" },
                { name: "MARK_SECONDS", value: "900" },
                // A drift command's retry duration (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/disruption/queue.go:65, 87-93).
                { name: "COMMAND_SECONDS", value: "600" },
                { name: "POLL_SECONDS", value: "10" },
            ]);
            // What the script reads from it is what config validation checked.
            expect(recycler.settingsFrom(Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]))).problems).to.deep.equal([]);
            expect(container.securityContext).to.deep.equal({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
            expect(container.resources).to.deep.equal({ requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } });
            expectScriptConfigMap(r.get("kubernetes:core/v1:ConfigMap", `${NAME}-script`).inputs.data, "recycleNodeClaims.js");

            // patch for the mark; no get, watch, update, nor the status subresource.
            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", `${NAME}-role`).inputs.rules).to.deep.equal([
                { apiGroups: ["karpenter.sh"], resources: ["nodeclaims"], verbs: ["list", "patch", "delete"] },
                { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
            ]);
            const { apiVersion, kind, ...binding } = r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`).inputs;
            expect(binding).to.deep.equal({ metadata: { name: NAME }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: NAME }, subjects: [{ kind: "ServiceAccount", name: NAME, namespace: "karpenter" }] });
            expect(r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", `${NAME}-admission-policy`).inputs.spec).to.deep.equal(ownPoolOnlyPolicySpec(USER, POOL));
            expect(r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`).inputs.spec).to.deep.equal({ policyName: `${NAME}-own-pool-only`, validationActions: ["Deny"] });
            // The account never holds `patch` or `delete nodeclaims` before the policy that limits it is bound, nor runs before.
            const urn = (type: string, name: string) => r.get(type, name).urn;
            const guard = urn("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`);
            const grant = urn("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`);
            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`).dependencies).to.include(guard);
            expect(r.get("kubernetes:batch/v1:CronJob", `${NAME}-cronjob`).dependencies).to.include.members([guard, grant]);
        });
    }

    it("is left out without nodePool.recycle", async () => {
        const r = await buildStack("staging", { nodePool: { ...(rawConfig("staging").nodePool as object), recycle: undefined } });
        expect(r.byType("kubernetes:batch/v1:CronJob")).to.deep.equal([]);
        expect(r.byType("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy").map((p) => p.inputs.metadata.name)).to.not.include(`${NAME}-own-pool-only`);
    });

    describe("the schedule (recycleWindow): outside both windows, where the budgets allow drift, with time to mark and drain, in EST and EDT", () => {
        const windows = [SENDING, NIGHTLY];
        const budgets = [
            { nodes: "10%" },
            { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" },
            { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" },
        ];
        // 15 minutes' mark, 10 of a command in flight, a 1 h drain.
        const clearance = 85;

        it("takes the run's deadline from the schedule: the shortest time from a run's start to the next window", () => {
            // 23:30 UTC is 18:30 EST and 19:30 EDT; the nightly batch begins 5.5 h later, every day.
            expect(recycleWindow("30 23 * * *", windows, budgets, clearance)).to.deep.equal({ shortestMinutes: 330, longestGapMinutes: 1440 });
            // 23:00 UTC: the minute sending hours (EST) and the budget's window end.
            expect(recycleWindow("0 23 * * *", windows, budgets, clearance)).to.deep.equal({ shortestMinutes: 360, longestGapMinutes: 1440 });
            // 03:35 UTC leaves exactly 85 minutes before 05:00.
            expect(recycleWindow("35 3 * * *", windows, budgets, clearance)).to.deep.equal({ shortestMinutes: 85, longestGapMinutes: 1440 });
            // Weekends only: a node stuck on Monday waits until Saturday.
            expect(recycleWindow("30 23 * * sat,sun", windows, budgets, clearance)).to.deep.include({ longestGapMinutes: 6 * 1440 });
            // With the stacks' budget for GC Notify's quarterly tasks (23:00-01:00 UTC on days 1-3 of their months): the
            // stacks' 01:00 run, the minute it ends (Karpenter's window excludes its end), leaves 4 h; 00:59 is inside it.
            const quarterly = [...budgets, { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 23 1-3 1,4,7,10 *", duration: "2h" }];
            expect(recycleWindow("0 1 * * *", windows, quarterly, clearance)).to.deep.equal({ shortestMinutes: 240, longestGapMinutes: 1440 });
            expect(recycleWindow("59 0 * * *", windows, quarterly, clearance).problem).to.match(/a run starts on 2026-01-02 00:59 UTC .*when a budget allows no Drifted or Underutilized disruption/);
            expect(recycleWindow("30 23 * * *", windows, quarterly, clearance).problem).to.match(/a run starts on 2026-01-01 23:30 UTC .*when a budget allows no Drifted or Underutilized disruption/);
        });

        it("refuses a run inside sending hours in EST only (22:30 UTC is 18:30 EDT but 17:30 EST), naming the window", () => {
            expect(recycleWindow("30 22 * * *", windows, budgets, clearance).problem).to.equal("must start runs outside sendingHours (08:00-18:00 America/Toronto): a run starts on 2026-01-01 22:30 UTC (17:30 local)");
        });

        it("refuses a run inside the nightly batch, in winter and summer alike", () => {
            expect(recycleWindow("0 6 * * *", windows, budgets, clearance).problem).to.equal("must start runs outside nightlyBatch (05:00-10:30 Etc/UTC): a run starts on 2026-01-01 06:00 UTC (06:00 local)");
            expect(recycleWindow("0 6 * 7 *", windows, budgets, clearance).problem).to.equal("must start runs outside nightlyBatch (05:00-10:30 Etc/UTC): a run starts on 2026-07-01 06:00 UTC (06:00 local)");
        });

        it("refuses a run with too little time before the next window: before the nightly batch, and between it and sending hours in EDT", () => {
            expect(recycleWindow("0 4 * * *", windows, budgets, clearance).problem).to.match(
                /^must start runs at least 85 minutes before nightlyBatch \(05:00-10:30 Etc\/UTC\) begin \(nodePool\.terminationGracePeriod, and 25 minutes for Karpenter to replace a node marked drifted\), so that a node marked or deleted at the start drains before them: a run starts on 2026-01-01 04:00 UTC \(04:00 local\), 60 minutes before$/,
            );
            // 10:45 UTC: after the nightly batch; 75 minutes before 08:00 EDT (12:00 UTC), 135 before 08:00 EST.
            expect(recycleWindow("45 10 * * *", windows, budgets, clearance).problem).to.match(/before sendingHours \(08:00-18:00 America\/Toronto\) begin .* a run starts on 2026-03-08 10:45 UTC \(06:45 local\), 75 minutes before$/);
        });

        it("follows a nightly batch given in Eastern time across the changes of clock", () => {
            // 01:00-05:30 Eastern is 05:00-09:30 UTC in EDT, 06:00-10:30 UTC in EST; the budgets must cover both.
            const eastern = [SENDING, { name: "nightlyBatch", start: "01:00", end: "05:30", timeZone: "America/Toronto" }];
            const wide = [...budgets.slice(0, 2), { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" }];
            // 03:30 UTC is 90 minutes before 01:00 EDT (05:00 UTC), 150 before 01:00 EST.
            expect(recycleWindow("30 3 * * *", eastern, wide, clearance)).to.deep.equal({ shortestMinutes: 90, longestGapMinutes: 1440 });
            // 04:00 UTC is enough in winter, and on 8 March, whose 01:00 is still EST (clocks go forward at 02:00), not from the 9th.
            expect(recycleWindow("0 4 * * *", eastern, wide, clearance).problem).to.match(/nightlyBatch \(01:00-05:30 America\/Toronto\) .* a run starts on 2026-03-09 04:00 UTC \(00:00 local\), 60 minutes before$/);
            // 05:30 UTC is before it in EST (00:30), on 8 March too, and inside it in EDT (01:30); with no budget in the way.
            const tenPercent = [{ nodes: "10%" }];
            expect(recycleWindow("30 5 8 3 *", eastern, tenPercent, 30)).to.deep.equal({ shortestMinutes: 30, longestGapMinutes: 365 * 1440 });
            expect(recycleWindow("30 5 9 3 *", eastern, tenPercent, 30).problem).to.equal("must start runs outside nightlyBatch (01:00-05:30 America/Toronto): a run starts on 2026-03-09 05:30 UTC (01:30 local)");
            // 1 November: 01:00-02:00 comes twice (EDT, then EST), and both are inside; 05:00 UTC is 01:00 EDT.
            expect(recycleWindow("30 5 1 11 *", eastern, tenPercent, 30).problem).to.equal("must start runs outside nightlyBatch (01:00-05:30 America/Toronto): a run starts on 2026-11-01 05:30 UTC (01:30 local)");
        });
    });
});

describe("node recycler: the admission policy's CEL", () => {
    const spec = ownPoolOnlyPolicySpec(recyclerUser("karpenter", NAME), POOL);
    /** The policy's verdict on the recycler's `operation` from `old` to `object`: the failed messages (none: admitted). */
    function admit(operation: "DELETE" | "UPDATE", old: any, object: any = null, username = USER): string[] {
        const request = { operation, userInfo: { username } };
        if (!spec.matchConstraints.resourceRules[0].operations.includes(operation)) return [];
        if (!spec.matchConditions.every((c) => evaluate(c.expression, { request }) === true)) return [];
        return spec.validations.filter((v) => evaluate(v.expression, { request, object, oldObject: old }) !== true).map((v) => v.message);
    }
    const notThePool = `${USER} may delete or mark only NodeClaims of the NodePool ${POOL} (label karpenter.sh/nodepool=${POOL})`;
    const notTheMark = `${USER} may change only the annotation karpenter.sh/nodepool-hash of a NodeClaim: its spec, labels, other annotations, finalizers and owner references stay as they are`;
    /** A NodeClaim of the pool with an owner, and a copy of it changed by `change`. */
    const owned = () => ({ ...nodeClaim("a", 1), metadata: { ...nodeClaim("a", 1).metadata, ownerReferences: [{ apiVersion: "karpenter.sh/v1", kind: "NodePool", name: POOL, uid: "np-uid" }] } });
    const changed = (change: (nc: any) => void, from: any = owned()) => {
        const copy = structuredClone(from);
        change(copy);
        return copy;
    };
    const marked = (nc: any) => (nc.metadata.annotations[HASH] = "recycle-2026-07-01-6043009744046391834");

    it("admits deleting a NodeClaim of the pool", () => expect(admit("DELETE", owned())).to.deep.equal([]));
    it("refuses deleting a NodeClaim of another pool, or without the pool's label", () => {
        expect(admit("DELETE", nodeClaim("a", 1, { pool: "gpu" }))).to.deep.equal([notThePool]);
        expect(admit("DELETE", { metadata: { name: "a" } })).to.deep.equal([notThePool]);
        expect(admit("DELETE", { metadata: { name: "a", labels: { app: "x" } } })).to.deep.equal([notThePool]);
    });

    it("admits the mark and its withdrawal: the hash annotation changed, nothing else", () => {
        const mark = changed(marked);
        expect(admit("UPDATE", owned(), mark)).to.deep.equal([]);
        expect(admit("UPDATE", mark, owned())).to.deep.equal([]);
        // Without owners or finalizers on either side, too.
        const bare = changed((nc) => delete nc.metadata.finalizers, nodeClaim("a", 1));
        expect(admit("UPDATE", bare, changed(marked, bare))).to.deep.equal([]);
    });

    const refusals: [string, (nc: any) => void][] = [
        ["its spec", (nc) => (nc.spec.requirements[0].values = ["on-demand"])],
        ["its terminationGracePeriod", (nc) => (nc.spec.terminationGracePeriod = "1s")],
        ["its labels (moving it to another pool)", (nc) => (nc.metadata.labels[NODEPOOL_LABEL] = "gpu")],
        ["a label added", (nc) => (nc.metadata.labels.extra = "x")],
        ["the labels removed", (nc) => delete nc.metadata.labels],
        ["another annotation added (do-not-disrupt)", (nc) => (nc.metadata.annotations["karpenter.sh/do-not-disrupt"] = "true")],
        ["the hash version changed", (nc) => (nc.metadata.annotations["karpenter.sh/nodepool-hash-version"] = "v4")],
        ["the hash annotation removed (no drift then)", (nc) => delete nc.metadata.annotations[HASH]],
        ["every annotation removed", (nc) => delete nc.metadata.annotations],
        ["its finalizers removed", (nc) => delete nc.metadata.finalizers],
        ["its finalizers changed", (nc) => (nc.metadata.finalizers = ["other"])],
        ["its owner changed (the garbage collector would delete it)", (nc) => (nc.metadata.ownerReferences[0].uid = "missing")],
        ["its owner removed", (nc) => delete nc.metadata.ownerReferences],
    ];
    for (const [what, change] of refusals) {
        it(`refuses an update that changes ${what}, with the mark or without`, () => {
            expect(admit("UPDATE", owned(), changed(change))).to.deep.equal([notTheMark]);
            expect(admit("UPDATE", owned(), changed((nc) => (marked(nc), change(nc))))).to.deep.equal([notTheMark]);
        });
    }

    it("refuses the hash annotation added to a NodeClaim without one", () => {
        const unhashed = changed((nc) => delete nc.metadata.annotations[HASH]);
        expect(admit("UPDATE", unhashed, changed(marked, unhashed))).to.deep.equal([notTheMark]);
    });

    it("refuses marking a NodeClaim of another pool", () => {
        const other = nodeClaim("a", 1, { pool: "gpu" });
        expect(admit("UPDATE", other, changed(marked, other))).to.deep.equal([notThePool]);
    });

    it("does not apply to anyone else (Karpenter, kubectl)", () => {
        expect(admit("DELETE", nodeClaim("a", 1, { pool: "gpu" }), null, "system:serviceaccount:karpenter:karpenter")).to.deep.equal([]);
        expect(admit("UPDATE", owned(), changed((nc) => (nc.spec.requirements = [])), "system:serviceaccount:karpenter:karpenter")).to.deep.equal([]);
    });

    it("matches DELETE and UPDATE (a patch arrives as UPDATE) of nodeclaims.karpenter.sh only, and fails closed", () => {
        expect(spec.matchConstraints).to.deep.equal({ resourceRules: [{ apiGroups: ["karpenter.sh"], apiVersions: ["v1"], operations: ["DELETE", "UPDATE"], resources: ["nodeclaims"] }] });
        expect(spec.failurePolicy).to.equal("Fail");
    });
});
