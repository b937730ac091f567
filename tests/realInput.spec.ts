// Issue 15's findings, each with the input that failed and what the tools say now: instance types and zones checked
// against AWS's facts, the capacity section that never blocks, stack files that are not YAML, --out paths nobody can
// write, a stale plan after a refused config.
import * as pulumi from "@pulumi/pulumi";
import { expect } from "chai";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { parse, stringify } from "yaml";
import { instanceShape } from "../components/models/nodePool.ts";
import { INSTANCE_TYPE_SOURCE, instanceTypeFacts } from "../components/models/instanceTypes.ts";
import { capacity } from "../ops/capacityCli.ts";
import { outDirProblem } from "../cli/outDir.ts";
import { PLAN_FILES, PLAN_RECORD } from "../plan/planRun.ts";
import { plan } from "../plan/cli.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { ConfigError } from "../stacks/config.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import type { ResourceValidationPolicy } from "@pulumi/policy";
import { errorOf, rawConfig, section } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";

/** A project directory holding the stack file `stack` with `edit` applied to its parsed config. */
function projectWith(stack: string, edit: (config: Record<string, any>) => void): string {
    const dir = tempDir("real-input-");
    const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, `Pulumi.${stack}.yaml`), "utf8"));
    edit(doc.config);
    // YAML 1.1 output quotes what go-yaml v3, the Pulumi CLI's reader, would read otherwise (a date such as asOf).
    fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stringify(doc, { version: "1.1" }));
    fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    return dir;
}

describe("instance types, from EC2's facts kept as data", () => {
    it("knows each type's architecture, vCPUs, memory and GPUs, from Karpenter v1.14.1's generated reference", () => {
        expect(INSTANCE_TYPE_SOURCE).to.match(/^aws\/karpenter-provider-aws v1\.14\.1 .*DescribeInstanceTypes/);
        expect(instanceTypeFacts("m7i.xlarge")).to.deep.equal({ architecture: "amd64", vcpu: 4, memoryMiB: 16384, gpus: 0, accelerators: 0 });
        expect(instanceTypeFacts("m6g.xlarge")).to.include({ architecture: "arm64" });
        expect(instanceTypeFacts("g5.xlarge")).to.include({ gpus: 1 });
        expect(instanceTypeFacts("m7z.xlarge")).to.equal(undefined);
        // The capacity model's shapes come from the same facts, so t3 and flex types are modelled too.
        expect(instanceShape("t3.large")).to.deep.equal({ vcpu: 2, memoryGiB: 8 });
        expect(instanceShape("m7i-flex.xlarge")).to.deep.equal({ vcpu: 4, memoryGiB: 16 });
    });

    it("refuses an arm64 type in the amd64 pool, naming the key (was accepted)", () => {
        const message = errorOf(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { instanceFamilies: undefined, instanceSizes: undefined, instanceTypes: ["m7i.xlarge", "m6g.xlarge"] })));
        expect(message).to.equal(
            "staging: notify-karpenter:nodePool.instanceTypes[1] must be an amd64 EC2 instance type without GPUs: m6g.xlarge is arm64, but these nodes are amd64 only (kubernetes.io/arch In [amd64], an amd64 AMI): Karpenter would never launch it",
        );
    });

    it("refuses an unknown family without a capacity section, naming the key (was accepted, or named capacity.prices)", () => {
        const raw = rawConfig("staging", "nodePool", { instanceFamilies: ["m7i", "m7z"] });
        delete raw.capacity;
        expect(errorOf(() => parseStackConfig("staging", raw))).to.equal(
            'staging: notify-karpenter:nodePool.instanceFamilies[1] must be an amd64 EC2 instance family without GPUs: there is no family "m7z" (families such as m7a, m7g, m7gd, m7i, m7i-flex)',
        );
    });

    it("refuses a GPU family, naming the key (was named capacity.prices...)", () => {
        expect(errorOf(() => parseStackConfig("production", rawConfig("production", "nodePool", { instanceFamilies: ["m7i", "g5"] })))).to.equal(
            "production: notify-karpenter:nodePool.instanceFamilies[1] must be an amd64 EC2 instance family without GPUs: g5 has GPUs (1 on its smallest size): accelerated types cost several times a CPU type of the same size and are not for Celery workers",
        );
    });

    it("accepts the real sizes of a family, metal ones included", () => {
        const raw = rawConfig("staging", "nodePool", { instanceFamilies: ["m7i"], instanceSizes: ["large", "metal-24xl"] });
        delete raw.capacity;
        expect(parseStackConfig("staging", raw).nodePool.instanceSizes).to.deep.equal(["large", "metal-24xl"]);
    });

    it("refuses a size that a family lacks", () => {
        expect(errorOf(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { instanceFamilies: ["m7i"], instanceSizes: ["xlarge", "3xlarge"] })))).to.equal(
            "staging: notify-karpenter:nodePool.instanceSizes[1] must be a size of every family in nodePool.instanceFamilies: there is no m7i.3xlarge (m7i comes in large, xlarge, 2xlarge, 4xlarge, 8xlarge, 12xlarge, 16xlarge, 24xlarge, metal-24xl, 48xlarge, metal-48xl)",
        );
    });
});

describe("zones, cron schedules, durations and duplicates", () => {
    const refusal = (section: string, patch: Record<string, unknown>) => errorOf(() => parseStackConfig("staging", rawConfig("staging", section, patch)));

    it("refuses zones of another region, or that do not exist (were accepted)", () => {
        expect(refusal("nodePool", { zones: ["ca-central-1a", "us-east-1a", "ca-central-1z"] }).split("\n")).to.deep.equal([
            "staging: notify-karpenter:nodePool.zones[1] must be one of ca-central-1a, ca-central-1b, ca-central-1d: us-east-1a is not in the cluster's region ca-central-1 (table of 2026-11 in stacks/awsRegions.ts; preflight checks live)",
            "staging: notify-karpenter:nodePool.zones[2] must be one of ca-central-1a, ca-central-1b, ca-central-1d: ca-central-1 has no zone ca-central-1z (table of 2026-11 in stacks/awsRegions.ts; preflight checks live)",
        ]);
    });

    it("refuses a region that does not exist", () => {
        expect(refusal("cluster", { region: "ca-east-1" })).to.equal(
            'staging: notify-karpenter:cluster.region must be an AWS region (got "ca-east-1"): the ca regions are ca-central-1, ca-west-1 (table of 2026-11 in stacks/awsRegions.ts)',
        );
    });

    it("refuses a budget schedule with hour 25 (was accepted)", () => {
        expect(refusal("nodePool", { budgets: [{ nodes: "10%" }, { nodes: "0", reasons: ["Drifted"], schedule: "0 25 * * mon-fri", duration: "10h" }] })).to.equal(
            'staging: notify-karpenter:nodePool.budgets[1].schedule must be a cron schedule in UTC: the hour field "25" has 25: it must be 0-23 (got "0 25 * * mon-fri")',
        );
    });

    it("refuses expireAfter 0h (was accepted)", () => {
        expect(refusal("nodePool", { expireAfter: "0h" })).to.equal(
            'staging: notify-karpenter:nodePool.expireAfter must be at least 1h: a node must outlive its launch and a Celery drain, or Karpenter replaces nodes without end (got "0h")',
        );
    });

    it("refuses a node DaemonSet listed twice, also by name in two namespaces (was accepted; the engine refuses two resources with one URN)", () => {
        const nodeDaemonSets = [
            { namespace: "kube-system", name: "ebs-csi-node" },
            { namespace: "kube-system", name: "ebs-csi-node", tolerateAll: false },
        ];
        expect(refusal("placement", { nodeDaemonSets })).to.equal(
            "staging: notify-karpenter:placement.nodeDaemonSets[1] repeats ebs-csi-node (already at placement.nodeDaemonSets[0]); items must be distinct",
        );
        const twoNamespaces = [
            { namespace: "falco", name: "falco" },
            { namespace: "monitoring", name: "falco" },
        ];
        expect(refusal("placement", { nodeDaemonSets: twoNamespaces })).to.equal(
            "staging: notify-karpenter:placement.nodeDaemonSets[1] repeats falco (already at placement.nodeDaemonSets[0]); items must be distinct",
        );
    });
});

describe("values that pass alone but break together (found in review)", () => {
    const refusal = (section: string, patch: Record<string, unknown>) => errorOf(() => parseStackConfig("staging", rawConfig("staging", section, patch)));

    it("refuses an alarm period under a minute: every metric the alarms read has one-minute resolution", () => {
        expect(refusal("alarms", { heartbeat: { period: 30, evaluationPeriods: 2, datapointsToAlarm: 2, threshold: 1, notify: "warning" } })).to.equal(
            "staging: notify-karpenter:alarms.heartbeat.period must be a period in seconds: a multiple of 60 up to 86400 (the metrics have one-minute resolution) (got 30)",
        );
    });

    it("refuses a rollout timeout too short for any rollout (a 0s wait would fail every up)", () => {
        expect(refusal("lifecycle", { stablePatchTimeout: "0s" })).to.match(/^staging: notify-karpenter:lifecycle\.stablePatchTimeout must be at least 1m: a rollout needs time to pull images and start its pods/);
    });

    it("refuses logLevel error, at which a healthy Karpenter writes nothing and the log heartbeat alarm fires after every quiet week", () => {
        expect(refusal("controller", { logLevel: "error" })).to.equal(
            'staging: notify-karpenter:controller.logLevel must be "debug" or "info": at "error" a healthy Karpenter writes no line, so the log heartbeat alarm (alarms.logHeartbeat) fires after every quiet week',
        );
    });

    it("refuses a stable node selector that names a label of Karpenter's own nodes", () => {
        expect(refusal("cluster", { stableNodeSelector: { "notification-canada-ca/ephemeral": "false" } })).to.equal(
            "staging: notify-karpenter:cluster.stableNodeSelector.notification-canada-ca/ephemeral must not be a label of Karpenter's nodes (notification-canada-ca/ephemeral, karpenter.sh/*, karpenter.k8s.aws/*): select the on-demand node group, such as eks.amazonaws.com/capacityType: ON_DEMAND",
        );
    });

    it("refuses a burst Deployment whose replicas alarm would overwrite the controller's (both <cluster>-karpenter-replicas-unavailable)", () => {
        const burst = { ...section("staging", "placement").burst, deployments: [{ name: "karpenter", minAvailable: 1 }] };
        expect(refusal("placement", { burst }).split("\n")[0]).to.equal(
            'staging: notify-karpenter:placement.burst.deployments[0].name must not be "karpenter": its alarm "notification-canada-ca-staging-eks-cluster-karpenter-replicas-unavailable" would overwrite the Karpenter alarm of that name',
        );
    });
});

describe("the capacity section never blocks plan, preview or up", () => {
    it("adding an instance size to production needs no invented prices: the plan passes, npm run capacity names what is missing", async () => {
        const dir = projectWith("production", (c) => (c["notify-karpenter:nodePool"].instanceSizes = ["xlarge", "2xlarge", "4xlarge"]));
        const planned = await plan(["--stack", "production", "--out", path.join(dir, "plan")], dir);
        expect(planned.exitCode, planned.output).to.equal(0);
        // A warning, cut to the summary's width; summary.txt has it whole.
        expect(planned.output).to.match(/^warning: \[capacity-section\] notify-karpenter:capacity\.prices\.onDemandHourly has no price for m7i\.4xlarge, .*\.\.\.$/m);
        expect(fs.readFileSync(path.join(dir, "plan", "summary.txt"), "utf8")).to.match(
            /^warning: \[capacity-section\] notify-karpenter:capacity\.prices\.onDemandHourly has no price .*c6a\.4xlarge: .*\(only npm run capacity reads this section; nothing deployed depends on it, and npm run capacity refuses to model until it is fixed\)$/m,
        );
        const modelled = await capacity(["--stack", "production", "--out", path.join(dir, "capacity")], dir);
        expect(modelled.exitCode).to.equal(1);
        expect(modelled.output.split("\n")).to.deep.equal([
            "production: the capacity section cannot be modelled:",
            "  notify-karpenter:capacity.prices.onDemandHourly has no price for m7i.4xlarge, m7a.4xlarge, r7i.4xlarge, r7a.4xlarge, c7i.4xlarge, c7a.4xlarge, m6i.4xlarge, m6a.4xlarge, r6i.4xlarge, r6a.4xlarge, c6i.4xlarge, c6a.4xlarge: every approved instance type of nodePool needs its hourly on-demand price",
        ]);
    });

    it("a malformed capacity section is a warning for the plan and a refusal naming the key for npm run capacity", async () => {
        const dir = projectWith("staging", (c) => (c["notify-karpenter:capacity"].spotDiscount = "60%"));
        const planned = await plan(["--stack", "staging", "--out", path.join(dir, "plan")], dir);
        expect(planned.exitCode, planned.output).to.equal(0);
        expect(fs.readFileSync(path.join(dir, "plan", "summary.txt"), "utf8")).to.include('warning: [capacity-section] notify-karpenter:capacity.spotDiscount must be a number from 0 to 0.95 (got "60%")');
        expect((await capacity(["--stack", "staging"], dir)).output).to.include('  notify-karpenter:capacity.spotDiscount must be a number from 0 to 0.95 (got "60%")');
    });
});

describe("no crashes: stack files and --out", () => {
    it("pulumi preview and up print a refused config's message without a stack trace: ConfigError is a Pulumi RunError", () => {
        expect(pulumi.RunError.isInstance(new ConfigError("staging", [{ path: "nodePool.expireAfter", message: "must be at least 1h" }], "notify-karpenter"))).to.equal(true);
    });

    it("a YAML syntax error names the stack file, line and column, without a parser stack trace (was a stack trace)", async () => {
        const dir = tempDir("yaml-");
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
        const text = fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8").replace("    region: ca-central-1\n", "    region: ca-central-1\n   oops: [\n");
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), text);
        const r = await plan(["--stack", "staging", "--out", path.join(dir, "out")], dir);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal(["invalid config, nothing was planned:", `${path.join(dir, "Pulumi.staging.yaml")}:7:1: All mapping items must start at the same column`]);
    });

    it("odd --out paths fail at once with one line naming --out (were EPERM/ENOTDIR stack traces, and a hang on /proc)", async () => {
        const file = path.join(tempDir("out-"), "a-file");
        fs.writeFileSync(file, "");
        const cases: [string, string][] = [
            ["/proc/x", "--out /proc/x: /proc belongs to the kernel and holds no files of ours; choose a directory such as plan-out/<stack>"],
            ["/sys/x", "--out /sys/x: /sys belongs to the kernel and holds no files of ours; choose a directory such as plan-out/<stack>"],
            [file, `--out ${file}: is a file, not a directory`],
            [path.join(file, "x"), `--out ${path.join(file, "x")}: ${file} is a file, so no directory can be made under it`],
        ];
        for (const [out, message] of cases) {
            const started = Date.now();
            const r = await plan(["--stack", "staging", "--out", out]);
            expect(Date.now() - started, out).to.be.below(1000);
            expect(r.exitCode).to.equal(2);
            expect(r.output.split("\n")[0]).to.equal(message);
        }
    });

    it("a directory without write permission is refused before anything runs", function () {
        if (process.getuid?.() === 0) this.skip(); // root may write anywhere
        const dir = tempDir("read-only-");
        fs.chmodSync(dir, 0o555);
        expect(outDirProblem(path.join(dir, "out"))).to.equal(`--out ${path.join(dir, "out")}: no permission to write in ${dir}`);
        fs.chmodSync(dir, 0o755);
    });

    it("a refused config removes the earlier plan's files and says so (they were left in place without a word)", async () => {
        const dir = projectWith("staging", () => undefined);
        const out = path.join(dir, "plan");
        expect((await plan(["--stack", "staging", "--out", out], dir)).exitCode).to.equal(0);
        expect(JSON.parse(fs.readFileSync(path.join(out, PLAN_RECORD), "utf8")).files).to.have.property("summary.txt").that.matches(/^[0-9a-f]{64}$/);
        fs.writeFileSync(path.join(out, "notes.txt"), "mine");
        const file = path.join(dir, "Pulumi.staging.yaml");
        fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("expireAfter: Never", "expireAfter: 0h"));
        const r = await plan(["--stack", "staging", "--out", out], dir);
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include(`Removed the earlier plan's files from ${out}: they showed a config that is no longer there.`);
        // Only the plan's own files go, and its record; anything else in the directory stays.
        expect(fs.readdirSync(out)).to.deep.equal(["notes.txt"]);
        expect(PLAN_FILES).to.include("preview.json");
    });

    it("a refused plan never removes files it did not write: the user's manifests.yaml and summary.txt stay (they were deleted)", async () => {
        const dir = projectWith("staging", (c) => (c["notify-karpenter:nodePool"].expireAfter = "0h"));
        const out = path.join(dir, "mine");
        fs.mkdirSync(out);
        fs.writeFileSync(path.join(out, "manifests.yaml"), "kind: MyOwn\n");
        fs.writeFileSync(path.join(out, "summary.txt"), "my notes\n");
        const r = await plan(["--stack", "staging", "--out", out], dir);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n").at(-1)).to.equal(`Left manifests.yaml, summary.txt in ${out} alone: no ${PLAN_RECORD} says npm run plan wrote them, and they are NOT this config's plan.`);
        expect(fs.readdirSync(out).sort()).to.deep.equal(["manifests.yaml", "summary.txt"]);
        expect(fs.readFileSync(path.join(out, "summary.txt"), "utf8")).to.equal("my notes\n");
    });

    it("a file of the plan's that the user changed since is left, and named; a forged record cannot reach outside the plan's files", async () => {
        const dir = projectWith("staging", () => undefined);
        const out = path.join(dir, "plan");
        expect((await plan(["--stack", "staging", "--out", out], dir)).exitCode).to.equal(0);
        fs.appendFileSync(path.join(out, "summary.txt"), "my note\n");
        fs.writeFileSync(path.join(dir, "precious.txt"), "keep");
        const record = JSON.parse(fs.readFileSync(path.join(out, PLAN_RECORD), "utf8"));
        record.files["../precious.txt"] = crypto.createHash("sha256").update("keep").digest("hex");
        fs.writeFileSync(path.join(out, PLAN_RECORD), JSON.stringify(record));
        const file = path.join(dir, "Pulumi.staging.yaml");
        fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("expireAfter: Never", "expireAfter: 0h"));
        const r = await plan(["--stack", "staging", "--out", out], dir);
        expect(r.output.split("\n").slice(-2)).to.deep.equal([
            `Removed the earlier plan's files from ${out}: they showed a config that is no longer there.`,
            `Left summary.txt in ${out}: changed since npm run plan wrote them, and NOT this config's plan.`,
        ]);
        expect(fs.readdirSync(out)).to.deep.equal(["summary.txt"]);
        expect(fs.readFileSync(path.join(dir, "precious.txt"), "utf8")).to.equal("keep");
    });
});

describe("npm run plan's summary (it printed 122 lines, 51 wider than 120 columns)", () => {
    it("stays within 40 lines of 120 columns even when every resource violates a policy, and says where the rest is", async () => {
        const out = tempDir("plan-");
        const everything: ResourceValidationPolicy = { name: "flag-everything", description: "test", enforcementLevel: "advisory", validateResource: (_args, report) => report("x".repeat(200)) };
        const r = await plan(["--stack", "production", "--out", out], undefined, [everything]);
        const lines = r.output.split("\n");
        expect(lines.length, r.output).to.be.at.most(40);
        expect(lines.filter((l) => l.length > 120 && !l.includes(out))).to.deep.equal([]);
        expect(r.output).to.match(new RegExp(`^  \\.\\.\\. \\d+ more lines of violations in ${path.join(out, "summary.txt")}$`, "m"));
        const verbose = await plan(["--stack", "production", "--out", out, "--verbose"], undefined, [everything]);
        expect(verbose.output.split("\n").length).to.be.above(100);
        expect(verbose.output).to.include("x".repeat(200));
    });
});
