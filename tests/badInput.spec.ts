// Bad input, as a new user would give it (issue 15): mutations of the real stack files' config, of the stack files
// themselves, and of every command's flags. Each must be refused with a line that names the key, file or flag and
// says what is allowed; none may crash (a stack trace), hang (mocha's timeout) or be accepted. The capacity section
// is the one exception by design: its problems never refuse the config, and `npm run capacity` names them.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { execFileSync, spawnSync } from "child_process";
import { parseDocument } from "yaml";
import { PassThrough } from "stream";
import type { CommandResult } from "../cli/args.ts";
import { PLAN_RECORD } from "../plan/planRun.ts";
import { goResolve, parseStackFile } from "../stacks/stackFile.ts";
import { docsConfig } from "../scripts/config-reference.ts";
import { CRD_FILES } from "../components/karpenter/generate.ts";
import { generateKarpenter } from "../scripts/generate-karpenter-schema.ts";
import { WARNINGS, warningLine } from "../stacks/warnings.ts";
import { configErrorOf } from "./helpers.ts";
import { capacity } from "../ops/capacityCli.ts";
import { scaleTest } from "../ops/scaleTest.ts";
import { drill } from "../ops/drill.ts";
import { readToEnd } from "../ops/verifyPlacementRun.ts";
import { verifyPlacement } from "../ops/verifyPlacement.ts";
import { preflight } from "../ops/preflight.ts";
import { plan } from "../plan/cli.ts";
import { PROJECT, PROJECT_DIR } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { ConfigError, configSections } from "../stacks/config.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions } from "./fakeKubeApi.ts";
import { FakeAwsApi, type FakeAwsState, type Fault } from "./fakeAwsApi.ts";
import { tempDir } from "./opsHelpers.ts";
import { KubeConfig } from "@kubernetes/client-node";
import type { Deadlines } from "../ops/deadlines.ts";
import { drillNames } from "../components/models/fis.ts";
import { STACK_TAG } from "../stacks/stackNames.ts";

const STACK = "production";
/** Maps whose keys are free (tags, labels, prices): an extra key is allowed there. */
const FREE_MAPS = /^(tags|cluster\.stableNodeSelector|nodePool\.(tags|kubeReserved|systemReserved|evictionHard)|capacity\.prices\.onDemandHourly)$/;
/** A stack trace line, which no user error may print. */
const STACK_TRACE = /^\s+at .+\(?.+:\d+:\d+\)?$/m;
/** Words that say what is allowed. */
const ALLOWED = /must|is not a known key|is required|repeats|needs|known stacks|the flags are|takes no value|needs a value|is given twice|is a file|belongs to the kernel|no permission|must be a YAML map/;

const tally = { config: 0, semantic: 0, capacity: 0, stackFile: 0, commandLine: 0, reader: 0, inputFile: 0, warning: 0, dataLoss: 0, vague: 0, shape: 0, meaning: 0, diff: 0, json: 0, deadline: 0, answer: 0, errorCode: 0, identity: 0 };

/** `key` is the path as errors name it (nodePool.budgets[1].schedule); `at`, its parts (keys may hold dots). */
type Mutation = { key: string; at: (string | number)[]; value: unknown; what: string };

/** Every leaf, list and object of the config, each given values of the wrong kind. */
function mutations(value: unknown, key: string, at: (string | number)[] = [key]): Mutation[] {
    if (Array.isArray(value)) {
        return [{ key, at, value: "not a list", what: "a string for a list" }, ...value.flatMap((v, i) => mutations(v, `${key}[${i}]`, [...at, i]))];
    }
    if (value && typeof value === "object") {
        const own = Object.entries(value).flatMap(([k, v]) => mutations(v, `${key}.${k}`, [...at, k]));
        const free = FREE_MAPS.test(key);
        return [
            { key, at, value: ["a list"], what: "a list for a map" },
            ...(free ? [] : [{ key: `${key}.replicaz`, at: [...at, "replicaz"], value: 1, what: "an unknown key" }]),
            ...own,
        ];
    }
    const second: Record<string, unknown> = { string: true, number: 1e12, boolean: "true" };
    return [
        { key, at, value: { wrong: "kind" }, what: "a map for a value" },
        { key, at, value: second[typeof value], what: typeof value === "number" ? "a number above every range" : `a ${typeof second[typeof value]} for a ${typeof value}` },
    ];
}

/** The path parts of a key such as nodePool.budgets[1].schedule (for keys without dots of their own). */
const partsOf = (key: string) => key.match(/[^.[\]]+/g)!.map((p) => (/^\d+$/.test(p) ? Number(p) : p));

/** The stack's config sections with the value at `parts` replaced. */
function mutate(raw: Record<string, unknown>, key: string | (string | number)[], value: unknown): Record<string, unknown> {
    const copy = structuredClone(raw);
    const parts = typeof key === "string" ? partsOf(key) : key;
    let at: any = copy;
    for (const p of parts.slice(0, -1)) at = at[p];
    at[parts[parts.length - 1]] = value;
    return copy;
}

/** The ConfigError's lines for this config, or "" when it is accepted. */
function refusal(raw: Record<string, unknown>): string {
    try {
        parseStackConfig(STACK, raw);
        return "";
    } catch (e) {
        expect(e, (e as Error).stack).to.be.instanceOf(ConfigError);
        return (e as Error).message;
    }
}

/** The key must be named on a line of the refusal, with what is allowed. */
function expectRefusal(message: string, key: string) {
    expect(message, "wrongly accepted").to.not.equal("");
    expect(message).to.not.match(STACK_TRACE);
    const line = message.split("\n").find((l) => l.startsWith(`${STACK}: ${PROJECT}:${key} `) || l.startsWith(`${STACK}: ${PROJECT}:${key}[`) || l.startsWith(`${STACK}: ${PROJECT}:${key}.`));
    expect(line, `no line names ${key}:\n${message}`).to.not.equal(undefined);
    expect(line).to.match(ALLOWED);
}

const raw = configSections(readStackConfig(STACK), PROJECT);

describe("bad input: every config key, given a value of the wrong kind", () => {
    for (const [section, value] of Object.entries(raw)) {
        for (const m of mutations(value, section)) {
            if (section === "capacity") {
                tally.capacity++;
                it(`capacity: ${m.key} as ${m.what} is reported for npm run capacity, never refusing the config`, () => {
                    const cfg = parseStackConfig(STACK, mutate(raw, m.at, m.value));
                    const named = cfg.capacityProblems.map((i) => `${i.path} ${i.message}`).find((l) => l.startsWith(m.key.replace(/\.replicaz$/, "")));
                    expect(named, JSON.stringify(cfg.capacityProblems)).to.match(ALLOWED);
                });
                continue;
            }
            tally.config++;
            it(`${m.key} as ${m.what} is refused, naming the key`, () => {
                expectRefusal(refusal(mutate(raw, m.at, m.value)), m.key);
            });
        }
    }
});

/** Values of the right kind that AWS or Karpenter would refuse, or that would do harm: [key, value, message]. */
const semantic: [string, unknown, RegExp][] = [
    ["nodePool.instanceFamilies[0]", "m6g", /must be an amd64 EC2 instance family without GPUs: m6g is arm64, but these nodes are amd64 only/],
    ["nodePool.instanceFamilies[0]", "m7g", /m7g is arm64/],
    ["nodePool.instanceFamilies[0]", "m7z", /there is no family "m7z" \(families such as m7a, m7g, m7gd, m7i, m7i-flex\)/],
    ["nodePool.instanceFamilies[0]", "g5", /g5 has GPUs \(1 on its smallest size\): accelerated types cost several times/],
    ["nodePool.instanceFamilies[0]", "p5", /there is no family|p5 has GPUs/],
    ["nodePool.instanceFamilies[0]", "inf2", /inf2 has ML accelerators/],
    ["nodePool.instanceFamilies[0]", "c7i.xlarge", /must be an EC2 instance family such as c7i/],
    ["nodePool.instanceFamilies[1]", "m7i", /repeats "m7i" \(already at nodePool\.instanceFamilies\[0\]\)/],
    ["nodePool.instanceSizes[1]", "3xlarge", /must be a size of every family in nodePool\.instanceFamilies: there is no m7i\.3xlarge/],
    ["nodePool.instanceSizes[1]", "xlarge", /repeats "xlarge"/],
    ["nodePool.instanceSizes[1]", "huge", /must be an EC2 instance size such as xlarge \(got "huge"\)/],
    ["nodePool.instanceSizes[1]", "xlargeish", /must be an EC2 instance size such as xlarge \(got "xlargeish"\)/],
    ["nodePool.instanceSizes[1]", "metal-96xl", /there is no m7i\.metal-96xl/],
    ["nodePool.zones[0]", "us-east-1a", /must be one of ca-central-1a, ca-central-1b, ca-central-1d: us-east-1a is not in the cluster's region ca-central-1/],
    ["nodePool.zones[0]", "ca-central-1z", /ca-central-1 has no zone ca-central-1z/],
    ["nodePool.zones[0]", "ca-central-1c", /ca-central-1 has no zone ca-central-1c/],
    ["nodePool.zones[1]", "ca-central-1a", /repeats "ca-central-1a"/],
    ["nodePool.zones[0]", "cac1-az1", /must be an availability zone such as ca-central-1a/],
    ["cluster.region", "ca-central-2", /must be an AWS region \(got "ca-central-2"\): the ca regions are ca-central-1, ca-west-1/],
    ["cluster.region", "us-east-7", /must be an AWS region/],
    ["nodePool.budgets[1].schedule", "0 25 * * mon-fri", /the hour field "25" has 25: it must be 0-23/],
    ["nodePool.budgets[1].schedule", "60 13 * * mon-fri", /the minute field "60" has 60: it must be 0-59/],
    ["nodePool.budgets[1].schedule", "0 13 32 * *", /the day of month field "32" has 32: it must be 1-31/],
    ["nodePool.budgets[1].schedule", "0 13 * 13 *", /the month field "13" has 13: it must be 1-12 or jan-dec/],
    ["nodePool.budgets[1].schedule", "0 13 * * 7", /the day of week field "7" has 7: it must be 0-6 or sun-sat/],
    ["nodePool.budgets[1].schedule", "0 13 * * mon-funday", /the day of week field "mon-funday" has funday/],
    ["nodePool.budgets[1].schedule", "0 13 * * fri-mon", /runs backwards: fri is after mon/],
    ["nodePool.budgets[1].schedule", "*/0 13 * * *", /a step must be a whole number above 0/],
    ["nodePool.budgets[1].schedule", "0 13 * *", /it has 4 fields/],
    ["nodePool.budgets[1].schedule", "0 13 * * mon-fri *", /it has 6 fields/],
    ["nodePool.budgets[1].schedule", "@fortnightly", /or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly/],
    ["nodePool.budgets[1].schedule", "TZ=America/Toronto 0 13 * * *", /it has 6 fields/],
    ["nodePool.budgets[1].duration", "0m", /must be at least 1m: a shorter window is never active/],
    ["nodePool.budgets[1].duration", "10s", /must be a duration of at least 1m such as 30m, 10h or 1h30m/],
    ["nodePool.budgets[1].duration", "1d", /must be a duration of at least 1m/],
    ["nodePool.budgets[1].nodes", "110%", /must be a node count or a percentage from 0% to 100%/],
    ["nodePool.budgets[1].nodes", "-1", /must be a node count or a percentage/],
    ["nodePool.budgets[1].reasons[0]", "Expired", /must be one of "Underutilized", "Empty", "Drifted"/],
    ["nodePool.budgets[1]", { nodes: "10%" }, /repeats \{"nodes":"10%"\} \(already at nodePool\.budgets\[0\]\)/],
    ["nodePool.budgets[1]", { nodes: "0", schedule: "0 13 * * *" }, /must set schedule and duration together/],
    ["nodePool.expireAfter", "0h", /must be at least 1h: a node must outlive its launch and a Celery drain/],
    ["nodePool.expireAfter", "30m", /must be at least 1h/],
    ["nodePool.expireAfter", "never", /must be a duration of at least 1h such as 90s, 30m or 24h, or Never/],
    ["nodePool.consolidateAfter", "0s", /must be at least 1m: the HPAs add pods every 45 s or so/],
    ["nodePool.terminationGracePeriod", "30s", /must be at least 3010s, the grace period of notify-celery-core-tasks-burst \(placement\.burst: prefetchMultiplier 4 \+ 1 tasks in a row of its longest, 600 s/],
    ["nodePool.terminationGracePeriod", "Never", /must be a duration such as 30s, 15m or 24h/],
    ["controller.batchIdleDuration", "0s", /must be at least 1s/],
    ["controller.batchIdleDuration", "20s", /must be at most batchMaxDuration \(10s\)/],
    ["controller.batchMaxDuration", "0s", /must be at least 1s/],
    ["placement.nodeDaemonSets[1]", { namespace: "kube-system", name: "secrets-store-csi-driver" }, /repeats secrets-store-csi-driver \(already at placement\.nodeDaemonSets\[0\]\)/],
    ["placement.burst.deployments[1]", { name: "notify-celery-core-tasks-burst", minAvailable: 1 }, /repeats notify-celery-core-tasks-burst \(already at placement\.burst\.deployments\[0\]\)/],
    ["placement.stableDeployments[1]", "notify-api", /repeats "notify-api"/],
    ["placement.stableDeployments[0]", "notify-celery-sms-send-burst", /must not repeat the burst Deployment/],
    ["alarms.topicNames.warning", "alert warning", /must be an SNS topic name \(letters, digits, _ and -, at most 256 characters\)/],
    ["controller.nodeRolePolicyArns", ["arn:aws:iam::aws:policy/A", "arn:aws:iam::aws:policy/A"], /must be empty when existingNodeRoleName is set|repeats/],
    ["nodePool.limits.cpu", "a lot", /must be a Kubernetes quantity/],
    ["controller.replicas", 0, /must be an integer from 1 to 10/],
    ["controller.cpu", "0", /must be at least 100m: the controller's request and limit; a throttled controller is slow .* \(got "0"\)/],
    ["controller.memory", "0Mi", /must be at least 256Mi: the controller's request and limit; Karpenter keeps/],
    ["nodePool.limits.cpu", "0", /must be above 0: a NodePool limited to 0 launches no node \(got "0"\)/],
    ["nodePool.limits.memory", "0Gi", /must be above 0: a NodePool limited to 0 launches no node/],
    ["nodePool.capacityCheck.celeryPodCpu", "0m", /must be above 0: the size of one burst Celery pod/],
    ["nodePool.capacityCheck.celeryPodMemory", "0", /must be above 0: the size of one burst Celery pod/],
    ["nodePool.kubeReserved.cpu", "-100m", /must be a quantity such as 100m, 500Mi or 10%/],
    ["nodePool.rootVolumeSize", "99999Gi", /volumeSize: must match/],
    ["placement.namespace", "kube-system", /the admission policy would reject the node daemonsets in namespace kube-system/],
    ["nodePool.ami.alias", "al2023@latest", /alias "al2023@latest" follows every new AMI|must be absent|exactly one/],
];

/**
 * Values of the right kind that Kubernetes and Karpenter accept and that break the cluster (issue 23): each refused in
 * exactly this one line. [key, value, the line].
 */
const breaking: [string, unknown, string][] = [
    [
        "nodePool.limits.cpu",
        "2",
        'production: notify-karpenter:nodePool.limits.cpu must allow one node of an approved type: the smallest, m7i.xlarge, has 4 vCPUs, and Karpenter launches no node whose capacity exceeds the limit (v1.14.1 scheduler.go:716), so the pool would launch nothing (got "2")',
    ],
    [
        "nodePool.limits.memory",
        "4Gi",
        'production: notify-karpenter:nodePool.limits.memory must allow one node of an approved type: the smallest, c7i.xlarge, has 7.4Gi of memory (less Karpenter\'s 7.5 % VM overhead), and Karpenter launches no node whose capacity exceeds the limit (v1.14.1 scheduler.go:716), so the pool would launch nothing (got "4Gi")',
    ],
    [
        "nodePool.rootVolumeSize",
        "10Gi",
        'production: notify-karpenter:nodePool.rootVolumeSize must be at least 20Gi, the root snapshot of the EKS-optimized AL2023 AMI: EC2 refuses to launch a volume smaller than its snapshot, so no node would start (got "10Gi")',
    ],
    [
        "nodePool.ami",
        { alias: "al2023@v20251117@x" },
        'production: notify-karpenter:nodePool.ami.alias must be <family>@<version> with a single @: Karpenter v1.14.1 stops with a fatal error on any other alias (pkg/apis/v1/ec2nodeclass.go:703-708), and the controller would restart without end (got "al2023@v20251117@x")',
    ],
    [
        "nodePool.ami",
        { alias: "al2023@20251117" },
        'production: notify-karpenter:nodePool.ami.alias must have a version Karpenter can look up: v and an AMI release date such as v20251117, or latest; Karpenter resolves al2023@<version> through an SSM parameter that exists for no other form, and would launch no node ("failed to discover any AMIs for alias") (got "al2023@20251117")',
    ],
    [
        "nodePool.ami",
        { alias: "al2023@v20251399" },
        'production: notify-karpenter:nodePool.ami.alias must have a version Karpenter can look up: v and an AMI release date such as v20251117, or latest; Karpenter resolves al2023@<version> through an SSM parameter that exists for no other form, and would launch no node ("failed to discover any AMIs for alias") (got "al2023@v20251399")',
    ],
    ["nodePool.ami", { alias: "windows2022@latest" }, 'production: notify-karpenter:nodePool.ami.alias must name the family al2023, al2 or bottlerocket: these nodes run Linux on amd64 (got "windows2022@latest")'],
    [
        "nodePool.ami",
        { alias: "bottlerocket@1.46" },
        'production: notify-karpenter:nodePool.ami.alias must have a version Karpenter can look up: a Bottlerocket release such as v1.46.0, or latest; Karpenter resolves bottlerocket@<version> through an SSM parameter that exists for no other form, and would launch no node ("failed to discover any AMIs for alias") (got "bottlerocket@1.46")',
    ],
    [
        "nodePool.capacityCheck.celeryPodCpu",
        "8",
        "production: notify-karpenter:nodePool.capacityCheck must describe a Celery pod that fits on an approved type: one pod (8 cpu, 1250Mi) fits on none next to the daemonsets (600m cpu, 800Mi); the roomiest, r7i.2xlarge, has 7.2 cpu and 57.15Gi left after the kubelet reservations, so every burst pod would stay pending: approve larger types or correct the sizes",
    ],
    [
        "acknowledged[0].warning",
        "spot-to-spot-single",
        'production: notify-karpenter:acknowledged[0].warning must be one of "spot-to-spot-inert", "spot-to-spot-single-node", "celery-pod-too-big", "limits-below-peak", "capacity-section", "admission-warn-mode", "burst-task-outlasts-spot-notice", "latest-ami" (got "spot-to-spot-single")',
    ],
    ["acknowledged[0].reason", "because", 'production: notify-karpenter:acknowledged[0].reason must be a reason of 20 to 500 characters: why the warning is accepted for this stack (got "because")'],
    [
        "acknowledged[1]",
        { warning: "spot-to-spot-single-node", reason: "the same warning acknowledged twice over" },
        "production: notify-karpenter:acknowledged[1] repeats spot-to-spot-single-node (already at acknowledged[0]); items must be distinct",
    ],
];

describe("bad input: values that look valid but break the cluster, each refused in one line", () => {
    for (const [key, value, line] of breaking) {
        tally.semantic++;
        it(`${key}: ${JSON.stringify(value)}`, () => {
            expect(refusal(mutate(raw, key, value))).to.equal(line);
        });
    }
});

describe("bad input: values AWS or Karpenter would refuse, each with its message", () => {
    for (const [key, value, message] of semantic) {
        tally.semantic++;
        it(`${key}: ${JSON.stringify(value)}`, () => {
            const text = refusal(mutate(raw, key, value));
            expect(text, "wrongly accepted").to.not.equal("");
            expect(text).to.not.match(STACK_TRACE);
            expect(text).to.match(message);
            // The line with the message names the key (or, for rules on the rendered objects, the section).
            const line = text.split("\n").find((l) => message.test(l))!;
            expect(line.startsWith(`${STACK}: ${PROJECT}:${key.split(/[.[]/)[0]}`), line).to.equal(true);
        });
    }
});

/** Stack files that are not config: [what, text, message]. */
const stackFiles: [string, string, RegExp][] = [
    ["an unclosed flow list", "config:\n  notify-karpenter:nodePool:\n    zones: [ca-central-1a\n", /^Pulumi\.production\.yaml:\d+:\d+: /],
    ["a tab for indentation", "config:\n\tnotify-karpenter:cluster: {}\n", /^Pulumi\.production\.yaml:2:1: /],
    ["a duplicate key", "config:\n  notify-karpenter:cluster: {}\n  notify-karpenter:cluster: {}\n", /^Pulumi\.production\.yaml:3:3: Map keys must be unique/],
    ["mixed indentation", "config:\n  a: 1\n   b: 2\n", /^Pulumi\.production\.yaml:\d+:\d+: /],
    ["an unterminated string", 'config:\n  notify-karpenter:cluster: "abc\n', /^Pulumi\.production\.yaml:\d+:\d+: /],
    ["a list at the top", "- config\n", /^Pulumi\.production\.yaml: must be a YAML map with a "config" map/],
    ["config as a string", "config: yes\n", /^Pulumi\.production\.yaml: must be a YAML map with a "config" map/],
    ["config as a list", "config: [1, 2]\n", /^Pulumi\.production\.yaml: must be a YAML map with a "config" map/],
    ["a bare word", "hello\n", /^Pulumi\.production\.yaml: must be a YAML map/],
    ["an empty file", "", /notify-karpenter:cluster is required/],
];

describe("bad input: stack files that are not YAML config name the file, line and column", () => {
    for (const [what, text, message] of stackFiles) {
        tally.stackFile++;
        it(`${what}: plan and capacity refuse it in one line, with no stack trace`, async () => {
            const dir = tempDir("bad-stack-");
            fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
            fs.writeFileSync(path.join(dir, `Pulumi.${STACK}.yaml`), text);
            const cwd = process.cwd();
            process.chdir(dir);
            try {
                for (const r of [await plan(["--stack", STACK, "--out", path.join(dir, "out")], dir), await capacity(["--stack", STACK, "--out", path.join(dir, "out")], dir)]) {
                    expect(r.exitCode, r.output).to.equal(1);
                    expect(r.output).to.not.match(STACK_TRACE);
                    expect(r.output.split("\n")[1]).to.match(message);
                }
            } finally {
                process.chdir(cwd);
            }
        });
    }
});

/** A project directory whose stack file is `text` (or made by `make`), with the real Pulumi.yaml. */
function stackDir(text?: string, make?: (file: string) => void): string {
    const dir = tempDir("bad-stack-");
    fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    const file = path.join(dir, `Pulumi.${STACK}.yaml`);
    if (make) make(file);
    else fs.writeFileSync(file, text!);
    return dir;
}

/** What plan and capacity print for the stack files in `dir`, run from there (so the file is named relative). */
async function planAndCapacity(dir: string): Promise<CommandResult[]> {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
        return [await plan(["--stack", STACK, "--out", path.join(dir, "out")], dir), await capacity(["--stack", STACK, "--out", path.join(dir, "out")], dir)];
    } finally {
        process.chdir(cwd);
    }
}

/**
 * Stack files the Pulumi CLI (go-yaml v3.0.1, pulumi/pulumi v3.259.0) reads otherwise than YAML 1.2, refuses, or
 * whose sections nothing here would read: [what, text, the one line after "invalid config, nothing was planned:"].
 */
const F = `Pulumi.${STACK}.yaml`;
const readerFiles: [string, string, string][] = [
    ["a misspelt namespace (the section was lost without a word)", "config:\n  notifykarpenter:lifecycle: {protect: true}\n", `${F}:2:3: notifykarpenter:lifecycle: is in the namespace "notifykarpenter", which nothing here reads (namespaces are aws, notify-karpenter, pulumi): did you mean "notify-karpenter:lifecycle"?`],
    ["a key with no namespace", "config:\n  lifecycle: {protect: true}\n", `${F}:2:3: lifecycle: a config key needs a namespace: write notify-karpenter:lifecycle (the Pulumi CLI reads a key without one as the project's, which no command here would see)`],
    ["another provider's namespace", "config:\n  kubernetes:context: staging\n", `${F}:2:3: kubernetes:context: is in the namespace "kubernetes", which nothing here reads (namespaces are aws, notify-karpenter, pulumi)`],
    ["a pulumi: key nothing reads", "config:\n  pulumi:disable-default-provider: [\"*\"]\n", `${F}:2:3: pulumi:disable-default-provider: is not a key the Pulumi CLI reads (did you mean "pulumi:disable-default-providers"?); pulumi: keys are pulumi:autonaming, pulumi:disable-default-providers, pulumi:tags`],
    ["a key the CLI cannot parse", "config:\n  notify-karpenter:node:pool: {}\n", `${F}:2:3: notify-karpenter:node:pool: the Pulumi CLI refuses this key: configuration keys should be of the form <namespace>:<name>`],
    ["the old config: form", "config:\n  notify-karpenter:config:lifecycle: {}\n", `${F}:2:3: notify-karpenter:config:lifecycle: write notify-karpenter:lifecycle (the Pulumi CLI reads the old <namespace>:config:<name> form as that key)`],
    ["a misspelt top-level key", "confg:\n  notify-karpenter:cluster: {}\n", `${F}:1:1: confg: is not a key of a stack file (did you mean "config"?); the Pulumi CLI ignores it (keys are config, encryptedkey, encryptionsalt, environment, secretsprovider)`],
    ["a section with no value", "config:\n  notify-karpenter:lifecycle:\n", `${F}:2:3: notify-karpenter:lifecycle: has no value, so every key of the section would take its default (the Pulumi CLI only warns of an empty config value); give the section, or remove the line`],
    ["an octal 0755 (YAML 1.1)", "config:\n  notify-karpenter:controller: {replicas: 010}\n", `${F}:2:43: notify-karpenter:controller.replicas: 010 reads as 8 to the Pulumi CLI (go-yaml v3, which keeps YAML 1.1's octal 0755, 0b binary and _ separators) but as 10 here; quote a string ("010") or write a plain decimal number`],
    ["digits with _ separators", "config:\n  notify-karpenter:capacity: {baselineCeleryPods: 1_000}\n", `${F}:2:51: notify-karpenter:capacity.baselineCeleryPods: 1_000 reads as 1000 to the Pulumi CLI (go-yaml v3, which keeps YAML 1.1's octal 0755, 0b binary and _ separators) but as the string "1_000" here; quote a string ("1_000") or write a plain decimal number`],
    ["a 0b binary number", "config:\n  notify-karpenter:controller: {replicas: 0b10}\n", `${F}:2:43: notify-karpenter:controller.replicas: 0b10 reads as 2 to the Pulumi CLI (go-yaml v3, which keeps YAML 1.1's octal 0755, 0b binary and _ separators) but as the string "0b10" here; quote a string ("0b10") or write a plain decimal number`],
    ["an unquoted date", "config:\n  notify-karpenter:capacity:\n    prices: {asOf: 2026-11-01}\n", `${F}:3:20: notify-karpenter:capacity.prices.asOf: 2026-11-01 is a timestamp to the Pulumi CLI (go-yaml v3), which hands the program "2026-11-01 00:00:00 +0000 UTC"; quote it ("2026-11-01")`],
    [".inf (was read as the default)", "config:\n  notify-karpenter:capacity: {burstHoursPerDay: .inf}\n", `${F}:2:49: notify-karpenter:capacity.burstHoursPerDay: .inf is not a number JSON can hold: the Pulumi CLI refuses the stack file ("json: unsupported value"); write a number such as 100`],
    [".nan", "config:\n  notify-karpenter:capacity: {spotDiscount: .nan}\n", `${F}:2:45: notify-karpenter:capacity.spotDiscount: .nan is not a number JSON can hold: the Pulumi CLI refuses the stack file ("json: unsupported value"); write a number such as 100`],
    ["a merge key <<", "x: &base {replicas: 2}\nconfig:\n  notify-karpenter:controller:\n    <<: *base\n", `${F}:1:1: x: is not a key of a stack file; the Pulumi CLI ignores it (keys are config, encryptedkey, encryptionsalt, environment, secretsprovider)`],
    ["a merge key << in a section", "config:\n  notify-karpenter:controller:\n    <<: {replicas: 2}\n", `${F}:3:5: notify-karpenter:controller: the merge key << is refused: the Pulumi CLI (go-yaml v3) merges the aliased map, and this reader would read a key named "<<"; write the keys out`],
    ["a number as a map key", "config:\n  notify-karpenter:tags: {1: one}\n", `${F}:2:27: notify-karpenter:tags.1: the key 1 is a number to the Pulumi CLI (go-yaml v3), which refuses a map whose keys are not all strings ("expected only string keys"); quote it ("1")`],
    ["a YAML tag", "config:\n  notify-karpenter:controller: {replicas: !!int \"2\"}\n", `${F}:2:49: notify-karpenter:controller.replicas: the YAML tag !!int may be read otherwise by the Pulumi CLI (go-yaml v3); remove it and write the value plainly`],
    ["a %YAML 1.1 directive", "%YAML 1.1\n---\nconfig:\n  notify-karpenter:controller: {createSpotServiceLinkedRole: yes}\n", `${F}:1:1: the %YAML 1.1 directive is refused: the Pulumi CLI reads every stack file with go-yaml v3; remove it`],
    [
        "an alias bomb (was a stack trace)",
        ["config:", '  a: &a ["x","x","x","x","x","x","x","x","x"]', ...[..."bcdefgh"].map((n, i) => `  ${n}: &${n} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(",")}]`)].join("\n") + "\n",
        `${F}:1:1: its YAML aliases expand past 100 copies (an alias bomb?): write the values out`,
    ],
];

describe("bad input: stack files the Pulumi CLI would read otherwise, or whose sections nothing reads", () => {
    for (const [what, text, line] of readerFiles) {
        tally.reader++;
        it(`${what}: plan and capacity refuse it in this one line`, async () => {
            for (const r of await planAndCapacity(stackDir(text))) {
                expect(r.exitCode, r.output).to.equal(1);
                expect(r.output).to.not.match(STACK_TRACE);
                expect(r.output.split("\n")[1]).to.equal(line);
            }
        });
    }

    it("pulumi preview and up (config alone, no file) refuse a key in a foreign namespace too", async () => {
        const message = await configErrorOf(STACK, { "notifykarpenter:lifecycle": { protect: true } });
        expect(message).to.equal(
            "production: notifykarpenter:lifecycle is read by nothing here (namespaces aws, notify-karpenter, pulumi; pulumi: keys pulumi:autonaming, pulumi:disable-default-providers, pulumi:tags): a misspelt namespace loses its section without a word",
        );
    });

    it("reads as the CLI does what both read alike: quoted dates, 0o17, 0x1F, yes as a string, true", () => {
        const parsed = parseStackFile('config:\n  notify-karpenter:x: {a: "2026-11-01", b: 0o17, c: 0x1F, d: yes, e: true, f: 1e3, g: ~}\n', PROJECT);
        expect(parsed.problems).to.deep.equal([]);
        expect(JSON.parse(parsed.config!["notify-karpenter:x"])).to.deep.equal({ a: "2026-11-01", b: 15, c: 31, d: "yes", e: true, f: 1000, g: null });
        expect(goResolve("0755")).to.deep.equal({ tag: "int", value: 493n });
        expect(goResolve("09")).to.deep.equal({ tag: "float", value: 9 });
        expect(goResolve("on")).to.deep.equal({ tag: "str", value: "on" });
    });
});

/** Files a command reads that would hang it or crash it: [command, what, set up, the line]. */
describe("bad input: files that are not regular files, or too big, are refused before they are read", () => {
    const fifo = (p: string) => execFileSync("mkfifo", [p]);

    // Counted as the cases are declared, so that the count is the same however the file is run.
    tally.inputFile += 3;
    it("a stack file that is a FIFO, a directory or over 1 MB (a FIFO hung the plan)", async () => {
        const cases: [string, (file: string) => void, string][] = [
            ["a FIFO", fifo, `${F}: is a FIFO (named pipe); it must be a regular file (a stack file)`],
            ["a directory", (f) => fs.mkdirSync(f), `${F}: is a directory; it must be a regular file (a stack file)`],
            ["1.1 MB", (f) => fs.writeFileSync(f, `# ${"x".repeat(1_100_000)}\n`), `${F}: is 1.1 MB; a stack file may be at most 1.0 MB`],
        ];
        for (const [what, make, line] of cases) {
            const started = Date.now();
            for (const r of await planAndCapacity(stackDir(undefined, make))) {
                expect(r.exitCode, what).to.equal(1);
                expect(r.output.split("\n")[1], what).to.equal(line);
            }
            expect(Date.now() - started, what).to.be.below(5000);
        }
    });

    tally.inputFile += 4;
    it("--manifests /dev/zero, a FIFO, a FIFO in a directory, 21 MB: exit 3 in one line, at once (they hung or took gigabytes)", async () => {
        const dir = tempDir("manifests-");
        const pipe = path.join(dir, "pipe.yaml");
        fifo(pipe);
        const big = path.join(tempDir("big-"), "big.yaml");
        fs.writeFileSync(big, `# ${"x".repeat(21_000_000)}\n`);
        const cases: [string, string][] = [
            ["/dev/zero", "Could not check: --manifests /dev/zero: is a character device; it must be a regular file (rendered manifests)"],
            [pipe, `Could not check: --manifests ${pipe}: is a FIFO (named pipe); it must be a regular file (rendered manifests)`],
            [dir, `Could not check: --manifests ${pipe}: is a FIFO (named pipe); it must be a regular file (rendered manifests)`],
            [big, `Could not check: --manifests ${big}: is 21.0 MB; rendered manifests may be at most 20.0 MB`],
        ];
        for (const [target, line] of cases) {
            const started = Date.now();
            const r = await verifyPlacement(["--stack", "staging", "--manifests", target]);
            expect(r.exitCode, target).to.equal(3);
            expect(r.output, target).to.equal(line);
            expect(Date.now() - started, target).to.be.below(3000);
        }
    });

    tally.inputFile += 2;
    it("--manifests -: standard input that never ends, or sends too much, is given up (tail -f held it for ever)", async () => {
        const silent = new PassThrough();
        silent.write("kind: Pod\n");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(silent, 1_000_000, 50) });
        expect(r).to.deep.equal({ exitCode: 3, output: "Could not check: --manifests -: standard input sent nothing for 0.05 s and did not end: pipe the whole output of a command that ends (helm template ... |)" });
        const flood = new PassThrough();
        flood.write("x".repeat(2000));
        const big = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(flood, 1000, 1000) });
        expect(big).to.deep.equal({ exitCode: 3, output: "Could not check: --manifests -: standard input is more than 1 KB; it may be at most 1 KB" });
    });

    tally.inputFile += 5;
    it("generate:karpenter: --out a directory, under /proc or under a file; --crds a file; a CRD file that is a FIFO", async () => {
        const dir = tempDir("gen-");
        const file = path.join(dir, "a-file");
        fs.writeFileSync(file, "");
        const crds = tempDir("crds-");
        fifo(path.join(crds, "karpenter.sh_nodepools.yaml"));
        const example = "components/karpenter/generated/crds.ts";
        const cases: [string[], number, string][] = [
            [["--crds", crds, "--out", dir], 2, `--out ${dir}: is a directory; give a file path such as ${example}`],
            [["--crds", crds, "--out", "/proc/self/crds.ts"], 2, `--out /proc/self/crds.ts: /proc belongs to the kernel and holds no files of ours; choose a file such as ${example}`],
            [["--crds", crds, "--out", path.join(file, "crds.ts")], 2, `--out ${path.join(file, "crds.ts")}: ${file} is a file, so no file can be made under it`],
            [["--crds", file, "--out", path.join(dir, "crds.ts")], 2, `--crds ${file}: is not a directory; it must be the directory holding karpenter.sh_nodepools.yaml and karpenter.k8s.aws_ec2nodeclasses.yaml`],
            [["--crds", crds, "--out", path.join(dir, "crds.ts")], 3, `${path.join(crds, "karpenter.sh_nodepools.yaml")}: is a FIFO (named pipe); it must be a regular file (a CRD file)`],
        ];
        for (const [argv, exitCode, line] of cases) {
            const r = await generateKarpenter(argv, {});
            expect(r.exitCode, argv.join(" ")).to.equal(exitCode);
            expect(r.output.split("\n")[0]).to.equal(line);
        }
        expect(fs.readdirSync(dir)).to.deep.equal(["a-file"]);
    });

    tally.inputFile += 2;
    it("docs:config: a directory in place of docs/configuration.md is named, not written into (was EISDIR with a stack trace)", async () => {
        const dir = path.join(tempDir("docs-"), "configuration.md");
        fs.mkdirSync(dir);
        expect(await docsConfig([], dir)).to.deep.equal({ exitCode: 3, output: `${dir}: is a directory, not the reference: remove it, then run npm run docs:config; nothing was written` });
        expect(await docsConfig(["--check"], dir)).to.deep.equal({ exitCode: 1, output: `${dir}: is a directory; it must be a regular file (the configuration reference): remove it and run npm run docs:config` });
    });
});

describe("bad input: a refused plan removes only files it wrote (it deleted the user's manifests.yaml and summary.txt)", () => {
    tally.dataLoss += 1;
    it("leaves a directory's own manifests.yaml and summary.txt, and says why", async () => {
        const dir = stackDir("config:\n  notifykarpenter:lifecycle: {protect: true}\n");
        const out = path.join(dir, "out");
        fs.mkdirSync(out);
        fs.writeFileSync(path.join(out, "manifests.yaml"), "mine\n");
        fs.writeFileSync(path.join(out, "summary.txt"), "mine\n");
        const r = await plan(["--stack", STACK, "--out", out], dir);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n").at(-1)).to.equal(`Left manifests.yaml, summary.txt in ${out} alone: no ${PLAN_RECORD} says npm run plan wrote them, and they are NOT this config's plan.`);
        expect(fs.readdirSync(out).sort()).to.deep.equal(["manifests.yaml", "summary.txt"]);
    });
});

describe("bad input: warnings say what they cost and what to do, once per run, and an acknowledgment quiets one", () => {
    tally.warning += 1;
    it("every warning the config raises has a known id, a cost and an action; none repeats", () => {
        for (const stack of ["staging", "production", "scratch"]) {
            const cfg = parseStackConfig(stack, configSections(readStackConfig(stack), PROJECT));
            expect(cfg.warnings, stack).to.deep.equal([]);
            expect(cfg.quietedWarnings.map((w) => w.id), stack).to.deep.equal(stack === "scratch" ? ["spot-to-spot-single-node"] : ["spot-to-spot-single-node", "burst-task-outlasts-spot-notice"]);
        }
        const loud = mutate(raw, "acknowledged", []);
        const cfg = parseStackConfig(STACK, mutate(loud, "placement.admission", { mode: "warn" }));
        expect(cfg.warnings.map((w) => w.id)).to.deep.equal(["spot-to-spot-single-node", "admission-warn-mode", "burst-task-outlasts-spot-notice"]);
        for (const w of cfg.warnings) {
            expect(Object.keys(WARNINGS)).to.include(w.id);
            expect(w.message, w.id).to.match(/To act: /);
        }
    });

    tally.warning += 1;
    it("npm run plan prints each unacknowledged warning once, in its summary, and none to the console (it printed 46 times in npm test)", async () => {
        const dir = tempDir("warn-");
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
        const text = fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8");
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), text.replace(/  notify-karpenter:acknowledged:\n(    .*\n)+/, ""));
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.production.yaml"), path.join(dir, "Pulumi.production.yaml"));
        const printed: string[] = [];
        const warn = console.warn;
        console.warn = (...a: unknown[]) => void printed.push(a.join(" "));
        try {
            const r = await plan(["--stack", "staging", "--out", path.join(dir, "out")], dir);
            expect(r.output.split("\n").filter((l) => l.includes("[spot-to-spot-single-node]"))).to.have.length(1);
            const summary = fs.readFileSync(path.join(dir, "out", "summary.txt"), "utf8");
            expect(summary.split("\n").filter((l) => l.includes("[spot-to-spot-single-node]"))).to.deep.equal([
                'warning: [spot-to-spot-single-node] NodePool "notify-karpenter": a lone spot node of the smallest approved size is never replaced by a cheaper one: Karpenter needs at least 15 cheaper approved types to replace one node (v1.14.1 consolidation.go:311), and the pool approves 12 types (4 vCPUs). Cost: such a node, underused, runs until it empties or is consolidated with others. To act: approve at least 16 types of that size, or acknowledge it',
            ]);
            const acknowledged = await plan(["--stack", "production", "--out", path.join(dir, "out-production")], dir);
            expect(acknowledged.output).to.not.include("[spot-to-spot-single-node]");
            expect(fs.readFileSync(path.join(dir, "out-production", "summary.txt"), "utf8")).to.match(/^acknowledged: \[spot-to-spot-single-node\] .* \(reason: A lone xlarge node .*\)$/m);
            const diff = await plan(["--diff", "staging", "production"], dir);
            expect(diff.output).to.not.include("spot-to-spot");
        } finally {
            console.warn = warn;
        }
        expect(printed).to.deep.equal([]);
    });

    tally.warning += 1;
    it("an acknowledgment of a warning the config does not raise is itself a warning: remove it", () => {
        const cfg = parseStackConfig(STACK, mutate(raw, "acknowledged[0]", { warning: "latest-ami", reason: "pinned AMIs are rolled by hand each month" }));
        // The warning it stood in for is loud again, and the stale entry is named.
        expect(cfg.warnings.map((w) => w.id)).to.deep.equal(["spot-to-spot-single-node", "acknowledged-unused"]);
        expect(warningLine(cfg.warnings[1])).to.equal(
            "[acknowledged-unused] notify-karpenter:acknowledged[0] acknowledges latest-ami, which this config does not raise: remove the entry, so that the warning is heard if it comes back",
        );
    });
});

describe("bad input: command lines", () => {
    let api: FakeKubeApi;
    before(async () => {
        api = await new FakeKubeApi(new FakeClock()).start();
    });
    after(async () => api && (await api.stop()));

    const file = path.join(PROJECT_DIR, "package.json");
    const badOut: [string, RegExp][] = [
        ["/proc/x", /^--out \/proc\/x: \/proc belongs to the kernel/],
        ["/proc/self/x", /^--out \/proc\/self\/x: \/proc belongs to the kernel/],
        ["/sys/x", /^--out \/sys\/x: \/sys belongs to the kernel/],
        ["/dev/x", /^--out \/dev\/x: \/dev belongs to the kernel/],
        [file, /: is a file, not a directory$/m],
        [path.join(file, "x"), /package\.json is a file, so no directory can be made under it$/m],
        [path.join(file, "x", "y"), /package\.json is a file, so no directory can be made under it$/m],
        ["", /^--out must be a directory path \(got ""\)|--out needs a value/],
    ];
    const run = {
        plan: (argv: string[]) => plan(argv),
        capacity: (argv: string[]) => capacity(argv),
        "verify-placement": (argv: string[]) => verifyPlacement(argv),
        "scale-test": (argv: string[]) => scaleTest(argv, { kubeConfig: () => api.kubeConfig() }),
        // Every preflight line below is refused before any kubeconfig or AWS read.
        preflight: (argv: string[]) => preflight(argv, { kubeConfig: () => api.kubeConfig() }),
        // No NOTIFY_* variables: the end-to-end inputs come from the flags alone here.
        drill: (argv: string[]) => drill(argv, { kubeConfig: () => api.kubeConfig(), env: {} }),
    };
    const drilling = ["--stack", "scratch", "--context", "scratch"];
    const lines: [keyof typeof run, string[], RegExp][] = [
        ...(["plan", "capacity", "scale-test"] as const).flatMap((cmd) =>
            badOut.map(([out, message]): [keyof typeof run, string[], RegExp] => [cmd, ["--stack", "staging", ...(cmd === "scale-test" ? ["--context", "staging"] : []), "--out", out], message]),
        ),
        ...(Object.keys(run) as (keyof typeof run)[]).flatMap((cmd): [keyof typeof run, string[], RegExp][] => [
            [cmd, ["--stack", "prod"], /--stack: unknown stack "prod": known stacks are production, scratch, staging|--context is required|give exactly one of --context/],
            [cmd, ["--stack"], /--stack needs a value: <name>/],
            [cmd, ["--stack", "staging", "--stack", "production"], /--stack is given twice/],
            [cmd, ["--stak", "staging"], /unknown flag --stak: the flags are/],
            [cmd, ["--stack", "staging", "extra"], /unexpected argument "extra": the flags are/],
            [cmd, ["--stack=", "x"], /unknown stack ""|--stack needs a value|--stack is required|unexpected argument/],
            [cmd, ["--stack", "--out", "x"], /--stack needs a value: <name>/],
            [cmd, ["--stack", "../Pulumi"], /unknown stack "\.\.\/Pulumi"|--context is required|give exactly one of --context/],
        ]),
        // Stack names: the Pulumi CLI's rules (sdk/go/common/tokens/stack_name.go), and the nearest known stack.
        ...(["plan", "capacity"] as const).flatMap((cmd): [keyof typeof run, string[], RegExp][] => [
            [cmd, ["--stack", "prod"], /^--stack: unknown stack "prod": known stacks are production, scratch, staging; did you mean "production"\?$/],
            [cmd, ["--stack", "Staging"], /^--stack: unknown stack "Staging": known stacks are production, scratch, staging; did you mean "staging"\?$/],
            [cmd, ["--stack", "org/notify-karpenter/staging"], /^--stack: unknown stack "org\/notify-karpenter\/staging": known stacks are production, scratch, staging; did you mean "staging"\?$/],
            [
                cmd,
                ["--stack", "my staging"],
                /^--stack: the Pulumi CLI refuses the stack name "my staging": a stack name may only contain alphanumeric, hyphens, underscores, or periods: invalid character " " at position 2; did you mean "staging"\? \(known stacks are production, scratch, staging\)$/,
            ],
            [cmd, ["--stack", "s".repeat(101)], /^--stack: the Pulumi CLI refuses the stack name "s{101}": a stack name cannot exceed 100 characters \(got 101\) \(known stacks are production, scratch, staging\)$/],
        ]),
        ["plan", ["--diff", "staging"], /--diff needs two stack names/],
        ["plan", ["--diff", "staging", "prod"], /--diff: unknown stack "prod"/],
        ["plan", ["--diff", "staging", "production", "--verbose"], /--diff takes no --stack, --out/],
        ["plan", ["--stack", "staging", "--verbose=yes"], /--verbose takes no value/],
        ["plan", [], /--stack or --diff is required/],
        ["capacity", [], /--stack is required: one of production, scratch, staging/],
        ["scale-test", ["--stack", "staging", "--context", "staging", "--pods", "0"], /--pods must be an integer from 1 to 1000 \(got "0"\)/],
        ["scale-test", ["--stack", "staging", "--context", "staging", "--pods", "many"], /--pods must be an integer from 1 to 1000 \(got "many"\)/],
        ["scale-test", ["--stack", "staging", "--context", "production"], /context|cluster/],
        ["scale-test", ["--stack", "staging"], /--context is required/],
        ["preflight", ["--stack", "staging", "--task-window", "0"], /^--task-window must be an integer from 1 to 168 \(got "0"\)$/],
        ["preflight", ["--stack", "staging", "--task-window", "169"], /^--task-window must be an integer from 1 to 168 \(got "169"\)$/],
        ["preflight", ["--stack", "staging", "--task-window", "a week"], /^--task-window must be an integer from 1 to 168 \(got "a week"\)$/],
        ["preflight", ["--stack", "staging", "--only", "ami", "--task-window", "24"], /^--task-window only applies to the task-durations check, which --only leaves out$/],
        ["preflight", ["--stack", "staging", "--only", "task-duration"], /^--only: unknown check "task-duration" \(did you mean task-durations\?\)/],
        ["verify-placement", ["--stack", "staging"], /--context or --manifests|one of --context/],
        ["verify-placement", ["--stack", "staging", "--manifests", file, "--namespace", "Bad_Name"], /^--namespace must be a Kubernetes namespace name \(lowercase letters, digits and -, at most 63 characters\) \(got "Bad_Name"\)$/],
        ["verify-placement", ["--stack", "staging", "--manifests", file, "--namespace", "x".repeat(64)], /^--namespace must be a Kubernetes namespace name/],
        ["verify-placement", ["--stack", "staging", "--context", "staging", "--namespace", "default"], /^--namespace only applies to --manifests/],
        ["verify-placement", ["--stack", "staging", "--manifests", "/nonexistent/manifests.yaml"], /--manifests: no such file or directory/],
        ["verify-placement", ["--stack", "staging", "--context", "staging", "--manifests", "-"], /not both|either|one of/],
        ["drill", [...drilling, "--hook", "never"], /^--hook must be notify-karpenter or gc-notify \(got "never"\)$/],
        ["drill", [...drilling, "--profile", "early-ack"], /^--profile must be gc-notify or late-ack \(got "early-ack"\)$/],
        ["drill", [...drilling, "--nodes", "6"], /^--nodes must be an integer from 1 to 5 \(got "6"\)$/],
        ["drill", [...drilling, "--notifications", "0"], /^--notifications must be an integer from 1 to 100 \(got "0"\)$/],
        ["drill", [...drilling, "--notifications", "2"], /^NOTIFY_API_KEY must hold a GC Notify test API key/],
        ["drill", [...drilling, "--notifications", "2", "--notify-api", "ftp://x", "--notify-template", "t", "--notify-to", "a@b.c"], /^NOTIFY_API_KEY must hold .*; --notify-api must be an http\(s\) URL \(got "ftp:\/\/x"\); --notify-template must be a template id \(a UUID\) \(got "t"\)$/],
        ["drill", [...drilling, "--notify-api", "https://x"], /^--notify-api goes with --notifications <N>$/],
    ];
    for (const [cmd, argv, message] of lines) {
        tally.commandLine++;
        it(`npm run ${cmd} -- ${argv.map((a) => (a === "" ? '""' : a)).join(" ")}`, async () => {
            const r: CommandResult = await run[cmd](argv);
            expect(r.exitCode, r.output).to.be.oneOf([1, 2, 3]);
            expect(r.output).to.not.match(STACK_TRACE);
            expect(r.output.split("\n")[0], r.output).to.match(message);
        });
    }
});

// ---- Issue 29: the program tried again as a new operator would. Cases of our own for each class the trial named;
// each class is a row of docs/configuration-notes.md ("How this is tested"), held by the last test of this file.

/** Values of the right form whose meaning is wrong, of the kinds the trial named: [key, value, message]. */
const namedBefore: [string, unknown, RegExp, string?][] = [
    ["controller.memory", "1", /controller\.memory must be at least 256Mi: the controller's request and limit; Karpenter keeps .* \(got "1"\)$/m],
    ["controller.memory", "64Mi", /controller\.memory must be at least 256Mi/],
    ["controller.memory", "1Ti", /controller\.memory must be at most 64Gi: .* leaves it pending \(got "1Ti"\)/],
    ["controller.cpu", "1m", /controller\.cpu must be at least 100m: .*throttled/],
    ["controller.cpu", "0.05", /controller\.cpu must be at least 100m/],
    ["controller.cpu", "128", /controller\.cpu must be at most 16/],
    ["placement.nodeDaemonSets[3].guaranteed.cpu", "0", /guaranteed\.cpu must be above 0: Kubernetes counts only requests and limits above 0 toward the Guaranteed QoS class .*Burstable/],
    ["placement.nodeDaemonSets[3].guaranteed.cpu", "0m", /guaranteed\.cpu must be above 0/],
    ["placement.nodeDaemonSets[3].guaranteed.memory", "0Gi", /guaranteed\.memory must be above 0/],
    ["placement.nodeDaemonSets[3].guaranteed.cpu", "16", /guaranteed\.cpu must fit on every approved instance type: the smallest, \S+, has [0-9.]+ cpu allocatable, so aws-cloudwatch-agent would never start on its nodes and they would keep their startup taint/],
    ["placement.nodeDaemonSets[3].guaranteed.memory", "64Gi", /guaranteed\.memory must fit on every approved instance type/],
    ["placement.nodeDaemonSets[3].guaranteed.cpu", "700m", /nodePool\.capacityCheck\.daemonsetCpu must count at least the node agents' guaranteed cpu \(aws-cloudwatch-agent 700m\)/, "nodePool"],
    ["alarms.logGroupName", "/aws/containerinsights/notification-canada-ca-staging-eks-cluster/application", /alarms\.logGroupName must be this cluster's Container Insights log group \/aws\/containerinsights\/notification-canada-ca-production-eks-cluster\/application: it names the cluster "notification-canada-ca-staging-eks-cluster"/],
    ["alarms.logGroupName", "/aws/containerinsights/notify-karpenter-scratch/application", /it names the cluster "notify-karpenter-scratch"/],
    ["alarms.logGroupName", "/aws/containerinsights/notification-canada-ca-production-eks-cluster/performance", /must be the application log group .*the performance group holds none of its lines/],
    ["alarms.logGroupName", "/aws/containerinsights/notification-canada-ca-production-eks-cluster/dataplane", /the dataplane group holds none/],
    ...(
        [
            ["the same e-mail twice", { warning: [{ protocol: "email", endpoint: "oncall@example.org" }, { protocol: "email", endpoint: "oncall@example.org" }], critical: [{ protocol: "email", endpoint: "oncall@example.org" }] }, /alarms\.subscriptions\.warning\[1\] repeats email oncall@example\.org \(already at alarms\.subscriptions\.warning\[0\]\)/],
            ["one e-mail in two cases", { warning: [{ protocol: "email", endpoint: "oncall@example.org" }], critical: [{ protocol: "email", endpoint: "Oncall@Example.org" }, { protocol: "email", endpoint: "oncall@example.org" }] }, /alarms\.subscriptions\.critical\[1\] repeats email oncall@example\.org/],
            ["the same URL twice", { warning: [{ protocol: "https", endpoint: "https://hooks.example.org/a" }, { protocol: "https", endpoint: "https://hooks.example.org/a" }], critical: [{ protocol: "email", endpoint: "o@example.org" }] }, /alarms\.subscriptions\.warning\[1\] repeats https https:\/\/hooks\.example\.org\/a/],
        ] as const
    ).map(([, subscriptions, message]): [string, unknown, RegExp] => ["alarms", { ...raw.alarms as object, topicNames: undefined, subscriptions }, message]),
];

/** Dates that match YYYY-MM-DD and are no date (capacity.prices.asOf): named for npm run capacity. */
const noDates = ["2026-13-01", "2026-00-10", "2026-02-30", "2025-02-29", "2026-04-31"];

/** Form right, meaning wrong: [key, value, message]. */
const meaningless: [string, unknown, RegExp][] = [
    ["acknowledged[0].reason", " ".repeat(20), /acknowledged\[0\]\.reason must say why the warning is accepted, as a sentence of at least four distinct words \(got " {20}", no word at all\)/],
    ["acknowledged[0].reason", "TODO TODO TODO TODO TODO", /must say why the warning is accepted, as a sentence: "todo" is a placeholder, not a reason/],
    ["acknowledged[0].reason", "TBD: will fill this in later", /"tbd" is a placeholder/],
    ["acknowledged[0].reason", "n/a n/a n/a n/a n/a n/a n/a", /"n\/a" is a placeholder/],
    ["acknowledged[0].reason", "placeholder reason for the warning", /"placeholder" is a placeholder/],
    ["acknowledged[0].reason", "x".repeat(30), /at least four distinct words \(got "x{30}", 1 distinct word\)/],
    ["acknowledged[0].reason", ".".repeat(25), /no word at all/],
    ["acknowledged[0].reason", "see above, see above, see above", /2 distinct words/],
    ["nodePool.limits.cpu", "100000", /nodePool\.limits\.cpu must be at most 5000: the limit is the one cap on what a runaway scale-up launches/],
    ["nodePool.limits.cpu", "5001", /must be at most 5000/],
    ["nodePool.limits.memory", "50000Gi", /nodePool\.limits\.memory must be at most 40000Gi/],
    ["nodePool.limits.memory", "100Ti", /must be at most 40000Gi/],
    ["nodePool.budgets[0].nodes", "99999", /nodePool\.budgets\[0\]\.nodes must be at most 5000 nodes, or a percentage: .*write "100%"/],
    ["nodePool.expireAfter", "9999999h", /nodePool\.expireAfter must be at most 2562047h: Kubernetes and Karpenter read durations as Go's time\.Duration/],
    ["nodePool.consolidateAfter", "999999999999m", /nodePool\.consolidateAfter must be at most 2562047h/],
    ["nodePool.terminationGracePeriod", "3000000h", /nodePool\.terminationGracePeriod must be at most 2562047h/],
    ["controller.batchMaxDuration", "2562048h", /controller\.batchMaxDuration must be at most 2562047h/],
];

/** Scheduling fields the API server refuses (pkg/apis/core/validation): [what, pod spec fields, the refusal's words]. */
const refusedByApiServer: [string, string, RegExp][] = [
    ["Exists with a value", "tolerations: [{key: a, operator: Exists, value: b}]", /tolerations\[0\]\.operator: Invalid value: "b": value must be empty when `operator` is 'Exists'/],
    ["an unknown operator", "tolerations: [{key: a, operator: Exist}]", /tolerations\[0\]\.operator: Unsupported value: "Exist": supported values: "Equal", "Exists"/],
    ["an unknown effect", "tolerations: [{key: a, operator: Exists, effect: NoScheduled}]", /tolerations\[0\]\.effect: Unsupported value: "NoScheduled": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"/],
    ["no key, operator Equal", "tolerations: [{operator: Equal, value: x}]", /operator must be Exists when `key` is empty/],
    ["tolerationSeconds without NoExecute", "tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 30}]", /tolerations\[0\]\.effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when `tolerationSeconds` is set/],
    ["a key that is no label key", "tolerations: [{key: '-a', operator: Exists}]", /tolerations\[0\]\.key: Invalid value: "-a"/],
    ["a value that is no label value", "tolerations: [{key: a, operator: Equal, value: 'b c'}]", /tolerations\[0\]\.operator: Invalid value: "b c": a valid label must be/],
    ["In without values", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In}]}]}}}", /matchExpressions\[0\]\.values: Required value: must be specified when `operator` is 'In' or 'NotIn'/],
    ["Exists with values", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Exists, values: [b]}]}]}}}", /values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'/],
    ["Gt with two values", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Gt, values: ['1', '2']}]}]}}}", /must be specified single value when `operator` is 'Lt' or 'Gt'/],
    ["an unknown selector operator", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Equals, values: [b]}]}]}}}", /operator: Invalid value: "Equals": not a valid selector operator/],
    ["no node selector term", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}", /nodeSelectorTerms: Required value: must have at least one node selector term/],
    ["a preference of weight 0", "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}", /preferredDuringSchedulingIgnoredDuringExecution\[0\]\.weight: Invalid value: 0: must be in the range 1-100/],
    ["a preference of weight 101", "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}", /weight: Invalid value: 101: must be in the range 1-100/],
    ["matchFields on a label", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.labels, operator: In, values: [a]}]}]}}}", /matchFields\[0\]\.key: Invalid value: "metadata\.labels": not a valid field selector key/],
    ["a nodeSelector key with a space", "nodeSelector: {'node type': spot}", /nodeSelector: Invalid value: "node type"/],
];

/** A stack name whose CI roles IAM refuses (plan/ciAccess.ts): lengths from the limit's first step past it. */
const longStackNames = [40, 51, 64, 100].map((n) => "s".repeat(n));

/** Encrypted values where plain config belongs: [key, value]. */
const secure = { secure: "v1:AAAAAQzGH8x6e4ZQ9QyJ2w==" };
const secureKeys = ["cluster.name", "controller", "nodePool.zones[0]", "nodePool.limits.cpu", "acknowledged[0].reason"];

/** Stack files in other encodings: [what, bytes of the production file, the line's words]. */
const productionText = fs.readFileSync(path.join(PROJECT_DIR, `Pulumi.${STACK}.yaml`), "utf8");
const encodings: [string, Buffer, RegExp][] = [
    ["UTF-16 LE with a byte-order mark (Windows PowerShell's >)", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(productionText, "utf16le")]), /: is UTF-16 text \(it starts with the byte-order mark 0xFF 0xFE, as Windows PowerShell's > and Out-File write; .*\); a stack file must be UTF-8 text: save it as UTF-8$/],
    ["UTF-16 BE with a byte-order mark", Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(productionText, "utf16le").swap16()]), /: is UTF-16 text \(it starts with the byte-order mark 0xFE 0xFF/],
    ["UTF-16 without a byte-order mark", Buffer.from(productionText, "utf16le"), /: is UTF-16 text without a byte-order mark \(every other byte is 0\); a stack file must be UTF-8 text/],
    ["UTF-32", Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from(productionText.slice(0, 100), "utf8")]), /: is UTF-32 text/],
    ["Windows-1252 in a value", Buffer.from(productionText.replace("name: notification-canada-ca-production-eks-cluster", "name: notification-canada-ca-producti\u00f3n"), "latin1"), /: is not UTF-8: the byte 0xF3 at line \d+, column \d+ starts no UTF-8 character \(in Windows-1252 or Latin-1 it is "ó"\); a stack file must be UTF-8 text/],
    ["Windows-1252 curly quotes in a comment", Buffer.concat([Buffer.from("# \x93quoted\x94\n", "latin1"), Buffer.from(productionText)]), /: is not UTF-8: the byte 0x93 at line 1, column 3 starts no UTF-8 character \(in Windows-1252 or Latin-1 it is "\u201c"\)/],
    ["a NUL byte (binary)", Buffer.concat([Buffer.from(productionText), Buffer.from([0x00, 0x01, 0x02])]), /: is binary, not text: it holds a NUL byte at line \d+; a stack file must be UTF-8 text/],
];

/** Characters that look like ASCII and are not: [key, value or undefined for a key case, message]. */
const lookalikes: [string, unknown, RegExp][] = [
    ["cluster.region", "ca-\u0441entral-1", /cluster\.region must be an AWS region .*\(got "ca-сentral-1", whose "с" at position 4 is U\+0441, a Cyrillic letter, not ASCII\)/],
    ["nodePool.zones[0]", "ca-central-1a\u00a0", /nodePool\.zones\[0\] must be an availability zone .*whose at position 14 is U\+00A0, a space other than the ASCII one, not ASCII/],
    ["nodePool.instanceFamilies[0]", "m7i\u200b", /nodePool\.instanceFamilies\[0\] must be an EC2 instance family .*U\+200B, an invisible zero-width character/],
    ["placement.namespace", "notification-canada-\u0441\u0430", /placement\.namespace must be a Kubernetes name .*"с" at position 21 is U\+0441, a Cyrillic letter/],
    ["nodePool.ephemeralKey", "notification-canada-ca/ephem\u0435ral", /U\+0435, a Cyrillic letter/],
    ["alarms.topicNames.warning", "alert\u2013warning", /U\+2013, a dash other than the ASCII hyphen/],
    ["cluster.region", "\uff43a-central-1", /U\+FF43, a full-width character/],
    ["controller.logLevel", "\u201cinfo\u201d", /U\+201C, a curly quote/],
];
/** Keys with such a character: [section, key as written, the message]. */
const lookalikeKeys: [string, string, RegExp][] = [
    ["cluster", "n\u0430me", /cluster\.nаme is not a known key: its "а" at position 2 is U\+0430, a Cyrillic letter, not ASCII \(did you mean "name"\?\)/],
    ["controller", "replic\u0430s", /controller\.replicаs is not a known key: its "а" at position 7 is U\+0430, a Cyrillic letter, not ASCII \(did you mean "replicas"\?\)/],
    ["nodePool", "z\u03bfnes", /nodePool\.zοnes is not a known key: its "ο" at position 2 is U\+03BF, a Greek letter, not ASCII/],
];

/** Kubeconfig files that are not one: [what, make it at this path, the line]. */
const kubeconfigs: [string, (file: string) => void, RegExp][] = [
    ["a directory", (f) => fs.mkdirSync(f), /kubeconfig \S+ \(from \$KUBECONFIG\): is a directory; it must be a regular file \(a kubeconfig\)$/],
    ["a binary file", (f) => fs.writeFileSync(f, Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x4b, 0x4c])), /kubeconfig \S+ \(from \$KUBECONFIG\): is binary, not text: it holds a NUL byte at line 1; a kubeconfig must be UTF-8 text/],
    ["UTF-16", (f) => fs.writeFileSync(f, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("apiVersion: v1\nkind: Config\n", "utf16le")])), /is UTF-16 text .*; a kubeconfig must be UTF-8 text/],
    ["a YAML list", (f) => fs.writeFileSync(f, "- clusters\n- contexts\n"), /: is a YAML list; a kubeconfig is a YAML map of clusters, contexts and users, as aws eks update-kubeconfig writes it$/],
    ["not YAML", (f) => fs.writeFileSync(f, "clusters: [\n"), /: is not valid YAML \(.*\); a kubeconfig is the YAML that aws eks update-kubeconfig writes$/],
];

/** Typed lists and pod templates in the places Kubernetes and common CRDs keep them: [what, YAML, a line of the report]. */
const tolerateAll = "spec: { tolerations: [{ operator: Exists }], containers: [{ name: c, image: i }] }";
const shapes: [string, string, number, RegExp][] = [
    ["a DeploymentList whose items name no kind", `apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- metadata: { name: d, namespace: other }\n  spec: { template: { ${tolerateAll} } }\n`, 1, /^ {2}FAIL {2}Deployment other\/d: could run on ephemeral nodes: it tolerates every taint/m],
    ["a PodList", `apiVersion: v1\nkind: PodList\nitems:\n- metadata: { name: p, namespace: other }\n  ${tolerateAll}\n`, 1, /^ {2}FAIL {2}Pod other\/p: could run on ephemeral nodes/m],
    ["a DaemonSetList", `apiVersion: apps/v1\nkind: DaemonSetList\nitems:\n- metadata: { name: agent, namespace: other }\n  spec: { template: { ${tolerateAll} } }\n`, 1, /FAIL {2}DaemonSet other\/agent: could run on ephemeral nodes/],
    ["a CronJobList", `apiVersion: batch/v1\nkind: CronJobList\nitems:\n- metadata: { name: c, namespace: other }\n  spec: { jobTemplate: { spec: { template: { ${tolerateAll} } } } }\n`, 1, /FAIL {2}CronJob other\/c: could run on ephemeral nodes/],
    ["a List of several kinds", `apiVersion: v1\nkind: List\nitems:\n- { apiVersion: apps/v1, kind: StatefulSet, metadata: { name: s, namespace: other }, spec: { template: { ${tolerateAll} } } }\n- { apiVersion: v1, kind: ConfigMap, metadata: { name: c } }\n`, 1, /FAIL {2}StatefulSet other\/s: could run on ephemeral nodes/],
    ["an empty List (kubectl get with nothing found)", "apiVersion: v1\nkind: List\nitems: []\n", 3, /^Could not check: no Kubernetes objects in standard input/],
    ["a KEDA ScaledJob (spec.jobTargetRef.template)", `apiVersion: keda.sh/v1alpha1\nkind: ScaledJob\nmetadata: { name: sj, namespace: other }\nspec:\n  jobTargetRef:\n    template: { ${tolerateAll} }\n`, 1, /FAIL {2}ScaledJob other\/sj: could run on ephemeral nodes/],
    ["an Argo Rollout", `apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: { name: r, namespace: other }\nspec: { template: { ${tolerateAll} } }\n`, 1, /FAIL {2}Rollout other\/r: could run on ephemeral nodes/],
    ["an OpenKruise CloneSet", `apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: { name: cs, namespace: other }\nspec: { template: { ${tolerateAll} } }\n`, 1, /FAIL {2}CloneSet other\/cs: could run on ephemeral nodes/],
    ["a v1 PodTemplate", `apiVersion: v1\nkind: PodTemplate\nmetadata: { name: pt, namespace: other }\ntemplate: { ${tolerateAll} }\n`, 1, /FAIL {2}PodTemplate other\/pt: could run on ephemeral nodes/],
    ["a ScaledJob kept off", `apiVersion: keda.sh/v1alpha1\nkind: ScaledJob\nmetadata: { name: sj, namespace: other }\nspec:\n  jobTargetRef:\n    template: { spec: { containers: [{ name: c, image: i }] } }\n`, 0, /OK {4}ScaledJob other\/sj: kept off/],
    ["a Ray cluster's worker groups (a kind not known)", `apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: { name: rc, namespace: other }\nspec:\n  headGroupSpec: { rayStartParams: {} }\n  workerGroupSpecs:\n  - template: { ${tolerateAll} }\n`, 3, /NOT CHECKED {2}RayCluster other\/rc: not checked: ray\.io\/v1 RayCluster is not a kind this check knows, yet it holds a pod spec at spec\.workerGroupSpecs\[0\]\.template\.spec/],
    ["an operator's kind with spec.template", `apiVersion: example.com/v1\nkind: Widget\nmetadata: { name: w, namespace: other }\nspec: { template: { ${tolerateAll} } }\n`, 3, /NOT CHECKED {2}Widget other\/w: not checked: example\.com\/v1 Widget is not a kind this check knows, yet it holds a pod spec at spec\.template\.spec/],
    ["a pod spec deep in an unknown kind", `apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: { name: sa, namespace: other }\nspec:\n  driver: { podTemplate: { ${tolerateAll} } }\n`, 3, /NOT CHECKED {2}SparkApplication other\/sa: not checked: .*at spec\.driver\.podTemplate\.spec/],
];

/**
 * The stack's config refused, with `message` on a line naming `key`'s section (or `at`, for a rule that names the
 * other key it spans); never accepted, never a stack trace.
 */
function expectNamedRefusal(key: string, value: unknown, message: RegExp, at = key) {
    const text = refusal(mutate(raw, key, value));
    expect(text, "wrongly accepted").to.not.equal("");
    expect(text).to.not.match(STACK_TRACE);
    expect(text).to.match(message);
    const line = text.split("\n").find((l) => message.test(l))!;
    expect(line.startsWith(`${STACK}: ${PROJECT}:${at.split(/[.[]/)[0]}`), line).to.equal(true);
}

describe("bad input (issue 29): wrong answers of kinds named before, now refused", () => {
    for (const [key, value, message, at] of namedBefore) {
        tally.semantic++;
        it(`${key}: ${JSON.stringify(value).slice(0, 100)}`, () => expectNamedRefusal(key, value, message, at));
    }
    for (const date of noDates) {
        tally.capacity++;
        it(`capacity.prices.asOf: ${date} is no date, named for npm run capacity`, () => {
            const cfg = parseStackConfig(STACK, mutate(raw, "capacity.prices.asOf", date));
            expect(cfg.capacityProblems.map((i) => `${i.path} ${i.message}`)).to.deep.equal([`capacity.prices.asOf must be a real date (YYYY-MM-DD): ${/-(13|00)-/.test(date) ? `there is no month ${Number(date.slice(5, 7))}` : `${date.slice(0, 7)} has no day ${Number(date.slice(8))}`} (got "${date}")`]);
        });
    }
    it("the real stacks' values pass, and so does a short reason that says why", () => {
        for (const stack of ["staging", "production", "scratch"]) expect(() => parseStackConfig(stack, configSections(readStackConfig(stack), PROJECT)), stack).to.not.throw();
        expect(refusal(mutate(raw, "acknowledged[0].reason", "Staging runs one spot node overnight on purpose"))).to.equal("");
        expect(refusal(mutate(raw, "controller.memory", "256Mi"))).to.equal("");
        expect(refusal(mutate(raw, "nodePool.limits.cpu", "5000"))).to.equal("");
    });
});

describe("bad input (issue 29): form checked, meaning not", () => {
    for (const [key, value, message] of meaningless) {
        tally.meaning++;
        it(`${key}: ${JSON.stringify(value)}`, () => expectNamedRefusal(key, value, message));
    }
    for (const [what, fields, message] of refusedByApiServer) {
        tally.meaning++;
        it(`verify-placement: a toleration or affinity the API server refuses (${what}) is a finding, never "kept off"`, async () => {
            const yaml = `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d, namespace: other }\nspec:\n  template:\n    spec: { ${fields}, containers: [{ name: c, image: i }] }\n`;
            const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: async () => yaml });
            expect(r.exitCode, r.output).to.equal(1);
            const line = r.output.split("\n").find((l) => l.includes("Deployment other/d"))!;
            expect(line).to.match(/^ {2}FAIL {2}Deployment other\/d: refused by the API server, so it never runs and its release fails: spec\.template\.spec\./);
            expect(line).to.match(message);
            expect(line).to.not.include("kept off");
        });
    }
    for (const name of longStackNames) {
        tally.meaning++;
        it(`plan: a stack name of ${name.length} characters, whose CI role names IAM refuses, is refused with the limit named`, async () => {
            const dir = tempDir("long-stack-");
            fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
            fs.copyFileSync(path.join(PROJECT_DIR, `Pulumi.${STACK}.yaml`), path.join(dir, `Pulumi.${name}.yaml`));
            const out = path.join(dir, "out");
            const r = await plan(["--stack", name, "--out", out], dir);
            expect(r.exitCode, r.output).to.equal(1);
            const role = `notify-karpenter-${name}-preview`;
            expect(r.output.split("\n")[1]).to.equal(
                `Pulumi.${name}.yaml: the stack name "${name}" (${name.length} characters) makes CI's role ${role} ${role.length} characters long, and IAM role names are at most 64 (CreateRole, RoleName), so GC Notify's Terraform could not create it: a stack on an existing cluster may have a name of at most 39 characters`,
            );
            expect(fs.existsSync(out)).to.equal(false);
        });
    }
});

describe("bad input (issue 29): refusals say which file, key or flag, what was found, and what is allowed", () => {
    for (const key of secureKeys) {
        tally.vague++;
        it(`an encrypted (secure:) value at ${key} says so, not "got {"secure":...}"`, () =>
            expectNamedRefusal(key, secure, /is an encrypted value \(secure:\), set with pulumi config set --secret: nothing in this config is a secret, .*; it must be /));
    }
    for (const [what, bytes, line] of encodings) {
        tally.vague++;
        it(`a stack file in ${what}: plan and capacity name the file and the encoding`, async () => {
            for (const r of await planAndCapacity(stackDir(undefined, (f) => fs.writeFileSync(f, bytes)))) {
                expect(r.exitCode, r.output).to.equal(1);
                expect(r.output.split("\n")[1]).to.match(new RegExp(`^${F.replace(".", "\\.")}${line.source}`));
            }
        });
    }
    for (const [what, bytes] of [
        ["UTF-16", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("apiVersion: v1\nkind: Pod\n", "utf16le")])],
        ["Windows-1252", Buffer.from("apiVersion: v1\nkind: Pod\nmetadata: { name: caf\u00e9 }\n", "latin1")],
        ["gzip (binary)", Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3])],
    ] as const) {
        tally.vague++;
        it(`--manifests in ${what}: could not check, naming the file and what it is`, async () => {
            const file = path.join(tempDir("enc-"), "rendered.yaml");
            fs.writeFileSync(file, bytes);
            const r = await verifyPlacement(["--stack", "staging", "--manifests", file]);
            expect(r.exitCode).to.equal(3);
            expect(r.output).to.match(new RegExp(`^Could not check: --manifests ${file.replace(/[.\/]/g, "\\$&")}: is (UTF-16 text|not UTF-8|binary).*; rendered manifests must be UTF-8 text: save it as UTF-8$`));
        });
    }
    tally.vague++;
    it("--manifests - in UTF-16 (a PowerShell pipe): could not check, naming standard input and what it is", async () => {
        const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("apiVersion: v1\nkind: Pod\n", "utf16le")]);
        const stream = new PassThrough();
        stream.end(utf16);
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(stream) });
        expect(r.exitCode).to.equal(3);
        expect(r.output).to.match(/^Could not check: --manifests -: standard input is UTF-16 text \(it starts with the byte-order mark 0xFF 0xFE.*\); it must be UTF-8 text$/);
    });
    for (const [key, value, message] of lookalikes) {
        tally.vague++;
        it(`${key}: ${JSON.stringify(value)} names the character that only looks like ASCII`, () => expectNamedRefusal(key, value, message));
    }
    for (const [section, key, message] of lookalikeKeys) {
        tally.vague++;
        it(`${section}.${key}: a key with a look-alike letter names it`, () => {
            const copy = structuredClone(raw) as Record<string, Record<string, unknown>>;
            const real = key.normalize("NFKD").replace(/\u0430/g, "a").replace(/\u03bf/g, "o");
            copy[section][key] = copy[section][real] ?? 1;
            delete copy[section][real];
            expect(refusal(copy)).to.match(message);
        });
    }
    tally.vague++;
    it("a stack file namespace with a Cyrillic letter names it (notify-kar\u0440enter:cluster)", async () => {
        for (const r of await planAndCapacity(stackDir(productionText.replace("notify-karpenter:cluster:", "notify-kar\u0440enter:cluster:")))) {
            expect(r.exitCode).to.equal(1);
            expect(r.output.split("\n")[1]).to.match(/: notify-karрenter:cluster: is in the namespace "notify-karрenter", whose "р" at position 11 is U\+0440, a Cyrillic letter, not ASCII, which nothing here reads .*: did you mean "notify-karpenter:cluster"\?$/);
        }
    });
    for (const [what, make, line] of kubeconfigs) {
        tally.vague++;
        it(`verify-placement --context with a kubeconfig that is ${what}: could not check, naming the file`, async () => {
            const file = path.join(tempDir("kubeconfig-"), "config");
            make(file);
            const saved = process.env.KUBECONFIG;
            process.env.KUBECONFIG = file;
            try {
                const r = await verifyPlacement(["--stack", "staging", "--context", "staging"]);
                expect(r.exitCode, r.output).to.equal(3);
                expect(r.output).to.match(/^Could not check: could not load the kubeconfig: /);
                expect(r.output).to.match(line);
            } finally {
                if (saved === undefined) delete process.env.KUBECONFIG;
                else process.env.KUBECONFIG = saved;
            }
        });
    }
    tally.vague++;
    it("scale-test and the drill with a kubeconfig that is a directory: could not run, naming it, before anything is created", async () => {
        const dir = path.join(tempDir("kubeconfig-"), "config");
        fs.mkdirSync(dir);
        const saved = process.env.KUBECONFIG;
        process.env.KUBECONFIG = dir;
        try {
            for (const command of [scaleTest, drill]) {
                const r = await command(["--stack", "staging", "--context", "staging"]);
                expect(r).to.deep.equal({ exitCode: 3, output: `Could not run: could not load the kubeconfig: kubeconfig ${dir} (from $KUBECONFIG): is a directory; it must be a regular file (a kubeconfig)` });
            }
        } finally {
            if (saved === undefined) delete process.env.KUBECONFIG;
            else process.env.KUBECONFIG = saved;
        }
    });
    const chart = (root: string) => {
        fs.mkdirSync(path.join(root, "templates"), { recursive: true });
        fs.writeFileSync(path.join(root, "Chart.yaml"), "apiVersion: v2\nname: notify-celery\nversion: 1.0.0\n");
        fs.writeFileSync(path.join(root, "templates", "deployment.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.burst }}\nspec: {}\n{{- end }}\n");
        return root;
    };
    tally.vague += 4;
    it("a chart folder, a folder of charts, a template file, a template on standard input where helm template output belongs: each named, with the command to render it", async () => {
        const one = chart(path.join(tempDir("chart-"), "notify-celery"));
        const r = await verifyPlacement(["--stack", "staging", "--manifests", one]);
        expect(r).to.deep.equal({ exitCode: 3, output: `Could not check: --manifests ${one}: is a Helm chart (${path.join(one, "Chart.yaml")}), not rendered manifests: its templates hold {{ }} directives only helm resolves; give the output of helm template (helm template <release> ${one} | npm run verify-placement -- --stack staging --manifests -)` });
        const charts = tempDir("charts-");
        chart(path.join(charts, "charts", "notify-celery"));
        expect((await verifyPlacement(["--stack", "staging", "--manifests", charts])).output).to.match(/: is a Helm chart \(.*charts\/notify-celery\/Chart\.yaml\), not rendered manifests/);
        const template = path.join(one, "templates", "deployment.yaml");
        const file = await verifyPlacement(["--stack", "staging", "--manifests", template]);
        expect(file).to.deep.equal({ exitCode: 3, output: `Could not check: ${template}:4 holds a Helm template directive (name: {{ .Release.Name }}), not rendered YAML: it is a chart's template; give the output of helm template (helm template <release> <chart> | npm run verify-placement -- --stack <stack> --manifests -)` });
        const stdin = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: async () => "kind: Deployment\nmetadata: { name: x }\nspec:\n  replicas: {{ .Values.replicas }}\n  {{- with .Values.tolerations }}\n" });
        expect(stdin.exitCode).to.equal(3);
        expect(stdin.output).to.match(/^Could not check: standard input:4 holds a Helm template directive \(replicas: \{\{ \.Values\.replicas \}\}\)/);
    });
});

/** A git repository in `dir` (Pulumi.yaml and the stack files there), committed once. */
function gitRepo(dir: string): (...args: string[]) => string {
    const git = (...args: string[]) => {
        const r = spawnSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", ...args], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
        return r.stdout;
    };
    git("init", "-q");
    git("add", ".");
    git("commit", "-q", "-m", "as it is");
    return git;
}

describe("bad input (issue 29): one shape per input no more", () => {
    for (const [what, yaml, exitCode, line] of shapes) {
        tally.shape++;
        it(`verify-placement reads ${what}`, async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: async () => yaml });
            expect(r.exitCode, r.output).to.equal(exitCode);
            expect(r.output).to.match(line);
        });
    }
    const pod = "apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: other }\nspec: { containers: [{ name: c, image: i }] }\n";
    const trees: [string, (dir: string) => void][] = [
        ["a link to the folder itself (a loop)", (d) => fs.symlinkSync(".", path.join(d, "self"))],
        ["a link to the folder above (a loop through the parent)", (d) => (fs.mkdirSync(path.join(d, "sub")), fs.symlinkSync("..", path.join(d, "sub", "up")))],
        ["two links to one file", (d) => (fs.symlinkSync("a.yaml", path.join(d, "b.yaml")), fs.symlinkSync("a.yaml", path.join(d, "c.yml")))],
        ["a dangling link and a link loop between two names", (d) => (fs.symlinkSync("missing.yaml", path.join(d, "gone.yaml")), fs.symlinkSync("y.yaml", path.join(d, "x.yaml")), fs.symlinkSync("x.yaml", path.join(d, "y.yaml")))],
    ];
    for (const [what, make] of trees) {
        tally.shape++;
        it(`verify-placement walks each real folder once and reads each real file once: ${what} (printed one verdict 41 times)`, async () => {
            const dir = tempDir("tree-");
            fs.writeFileSync(path.join(dir, "a.yaml"), pod);
            make(dir);
            const r = await verifyPlacement(["--stack", "staging", "--manifests", dir]);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output.split("\n")[0]).to.match(/\(1 file, 1 object, 1 pod template\)/);
            expect(r.output.split("\n").filter((l) => l.includes("Pod other/p"))).to.have.length(1);
        });
    }
    tally.shape += 6;
    it("plan --diff-against: a stack file committed as a link is followed as a checkout would; outside the repository, dangling, or a name that is both a plan and a ref is refused", async function () {
        this.timeout(120_000);
        const dir = tempDir("linked-");
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
        fs.mkdirSync(path.join(dir, "stacks"));
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), path.join(dir, "stacks", "staging.yaml"));
        fs.symlinkSync("stacks/staging.yaml", path.join(dir, "Pulumi.staging.yaml"));
        fs.symlinkSync("/etc/hostname", path.join(dir, "Pulumi.production.yaml"));
        fs.symlinkSync("stacks/none.yaml", path.join(dir, "Pulumi.scratch.yaml"));
        const git = gitRepo(dir);
        const linked = await plan(["--stack", "staging", "--diff-against", "HEAD"], dir);
        expect(linked.exitCode, linked.output).to.equal(0);
        expect(linked.output.split("\n")[0]).to.match(/^Changes to stack staging: HEAD → the working tree \(offline plans; Pulumi\.staging\.yaml as it is at HEAD \([0-9a-f]{12}\) \(a link there to stacks\/staging\.yaml\), both planned/);
        expect(linked.output.split("\n").at(-1)).to.equal("No change: the working tree plans the same resources with the same inputs and resource options as HEAD");
        const outside = await plan(["--stack", "production", "--diff-against", "HEAD"], dir);
        expect(outside.output.split("\n")[0]).to.match(/^--diff-against HEAD: Pulumi\.production\.yaml at HEAD \([0-9a-f]{12}\) is a link to the absolute path \/etc\/hostname, outside the repository: commit the stack file itself$/);
        fs.writeFileSync(path.join(dir, "stacks", "none.yaml"), "config: {}\n");
        const dangling = await plan(["--stack", "scratch", "--diff-against", "HEAD"], dir);
        expect(dangling.output.split("\n")[0]).to.match(/^--diff-against HEAD: Pulumi\.scratch\.yaml at HEAD \([0-9a-f]{12}\) is a link to stacks\/none\.yaml, which does not exist there$/);
        // A directory named like a branch, and a branch named last: neither wins silently.
        git("branch", "main-plan");
        fs.mkdirSync(path.join(dir, "main-plan"));
        const cwd = process.cwd();
        process.chdir(dir);
        try {
            const both = await plan(["--stack", "staging", "--diff-against", "main-plan"], dir);
            expect(both.exitCode).to.equal(2);
            expect(both.output.split("\n")[0]).to.match(/^--diff-against main-plan: is both the directory \S+\/main-plan and a git ref \([0-9a-f]{12}\); say which: \.\/main-plan\/ for the directory, or main-plan\^\{commit\} for the ref$/);
            git("branch", "last");
            const last = await plan(["--stack", "staging", "--diff-against", "last", "--out", path.join(dir, "out")], dir);
            expect(last.output.split("\n")[0]).to.match(/^--diff-against last: is both last \(the plan in \S+\) and a git ref \([0-9a-f]{12}\); say which: --diff-against \S+ for the plan in --out, or last\^\{commit\} for the ref$/);
            fs.writeFileSync(path.join(dir, "preview.json"), "{}");
            const file = await plan(["--stack", "staging", "--diff-against", "preview.json"], dir);
            expect(file.output.split("\n")[0]).to.equal("--diff-against preview.json: is a file, not a plan directory: give the directory that holds a plan's preview.json, a git ref or last");
        } finally {
            process.chdir(cwd);
        }
    });
});

describe("bad input (issue 29): the diffs compare resource options, not inputs alone (they said No change)", () => {
    const edits: [string, (c: Record<string, any>) => void, RegExp][] = [
        ["lifecycle.protect flips", (c) => (c["notify-karpenter:lifecycle"].protect = true), /^ {4}\[option\] protect: \(absent\) → true$/m],
        ["lifecycle.retainOnDelete flips", (c) => (c["notify-karpenter:lifecycle"].retainOnDelete = false), /^ {4}\[option\] retainOnDelete: true → \(absent\)$/m],
        ["a custom timeout changes", (c) => (c["notify-karpenter:lifecycle"].burstPatchTimeout = "45m"), /^ {4}\[option\] customTimeouts\.(create|update): 1200 → 2700$/m],
        ["the batches of stable patches change (what waits for what)", (c) => (c["notify-karpenter:lifecycle"].stableBatchSize = 1), /^ {4}\[option\] dependsOn: .*DeploymentPatch/m],
    ];
    tally.diff += edits.length;
    it("--diff-against last shows each: protect, retainOnDelete, a custom timeout, dependsOn", async function () {
        this.timeout(120_000);
        const dir = tempDir("options-");
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
        const file = path.join(dir, "Pulumi.staging.yaml");
        const original = fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8");
        fs.writeFileSync(file, original);
        const out = path.join(dir, "out");
        expect((await plan(["--stack", "staging", "--out", out], dir)).exitCode).to.equal(0);
        for (const [what, edit, line] of edits) {
            const doc = parseDocument(original);
            const config = doc.toJS().config;
            edit(config);
            doc.setIn(["config", "notify-karpenter:lifecycle"], doc.createNode(config["notify-karpenter:lifecycle"]));
            fs.writeFileSync(file, String(doc));
            const r = await plan(["--stack", "staging", "--out", out, "--diff-against", "last"], dir);
            expect(r.exitCode, `${what}: ${r.output}`).to.equal(0);
            expect(r.output, what).to.match(line);
            expect(r.output.split("\n").at(-1), what).to.match(/option/);
        }
    });
    tally.diff++;
    it("--diff between stacks counts options apart from inputs (production protects what staging does not)", async () => {
        const r = await plan(["--diff", "staging", "production"]);
        expect(r.output.split("\n").at(-1)).to.match(/^8 resources only in one stack; \d+ inputs and 4 options differ in \d+ resources$/);
    });
});

describe("bad input (issue 29): --json stays JSON on every path, errors included", () => {
    let api: FakeKubeApi;
    before(async () => {
        api = await new FakeKubeApi(new FakeClock()).start();
    });
    after(async () => api && (await api.stop()));
    const refusedDir = () => stackDir("config:\n  notify-karpenter:controller: {replicas: 0}\n");
    const cases: [string, (argv: string[]) => Promise<CommandResult>, string[], number, RegExp][] = [
        ["plan", (a) => plan(a), ["--stak", "staging"], 2, /^unknown flag --stak: the flags are/],
        ["plan", (a) => plan(a), ["--stack", "prod"], 2, /^--stack: unknown stack "prod"/],
        ["plan", (a) => plan(a), ["--stack", "staging", "--out", "/proc/x"], 2, /^--out \/proc\/x: \/proc belongs to the kernel/],
        ["plan", (a) => plan(a), ["--diff", "staging", "production"], 2, /^--json and --findings apply to the plan of one stack, not to --diff/],
        ["plan", (a) => plan(a, refusedDir()), ["--stack", STACK, "--out", path.join(tempDir("j-"), "out")], 1, /^invalid config, nothing was planned:\n[^]*production: notify-karpenter:controller\.replicas must be/],
        ["capacity", (a) => capacity(a), ["--stack"], 2, /^--stack needs a value: <name>/],
        ["capacity", (a) => capacity(a), ["--stack", "staging", "extra"], 2, /^unexpected argument "extra"/],
        ["capacity", (a) => capacity(a, refusedDir()), ["--stack", STACK], 1, /^invalid config:\n[^]*production: notify-karpenter:controller\.replicas must be/],
        ["capacity", (a) => capacity(a), ["--stack", "staging", "--out", "/sys/x"], 2, /^--out \/sys\/x: \/sys belongs to the kernel/],
        ["verify-placement", (a) => verifyPlacement(a), ["--stack", "staging"], 2, /^give exactly one of --context/],
        ["verify-placement", (a) => verifyPlacement(a), ["--stack", "staging", "--manifests", "/nonexistent.yaml"], 2, /^--manifests: no such file or directory/],
        ["verify-placement", (a) => verifyPlacement(a, { stdin: async () => "" }), ["--stack", "staging", "--manifests", "-"], 3, /^Could not check: no Kubernetes objects in standard input/],
        ["verify-placement", (a) => verifyPlacement(a, { stdin: async () => "a: [\n" }), ["--stack", "staging", "--manifests", "-"], 3, /^Could not check: standard input:\d+ is not valid YAML/],
        ["scale-test", (a) => scaleTest(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging"], 2, /^--context is required/],
        ["scale-test", (a) => scaleTest(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging", "--context", "staging", "--pods", "0"], 2, /^--pods must be an integer from 1 to 1000/],
        ["scale-test", (a) => scaleTest(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging", "--context", "other"], 2, /^--context other is cluster "kind-scratch"/],
        // Preflight's usage errors stayed text (issue 29, part B).
        ["preflight", (a) => preflight(a, { kubeConfig: () => api.kubeConfig() }), ["--stak", "staging"], 2, /^unknown flag --stak: the flags are/],
        ["preflight", (a) => preflight(a, { kubeConfig: () => api.kubeConfig() }), ["--stack"], 2, /^--stack needs a value: <name>/],
        ["preflight", (a) => preflight(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging", "--only", "nope"], 2, /^--only: unknown check "nope"/],
        ["preflight", (a) => preflight(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging", "--region", "us-east-1"], 2, /^--region us-east-1: stack staging's cluster is in ca-central-1/],
        ["preflight", (a) => preflight(a, { kubeConfig: () => api.kubeConfig() }), ["--stack", "staging", "--context", "other"], 2, /^--context other is cluster "kind-scratch"/],
        // The drill had no --json.
        ["drill", (a) => drill(a, { kubeConfig: () => api.kubeConfig(), env: {} }), ["--stack", "scratch"], 2, /^--context is required/],
        ["drill", (a) => drill(a, { kubeConfig: () => api.kubeConfig(), env: {} }), ["--stack", "scratch", "--context", "scratch", "--nodes", "9"], 2, /^--nodes must be an integer from 1 to 5 \(got "9"\)/],
    ];
    for (const [command, run, argv, exitCode, error] of cases) {
        tally.json++;
        it(`npm run ${command} -- ${argv.join(" ")} --json: one JSON object, exit ${exitCode}`, async () => {
            const r = await run([...argv, "--json"]);
            expect(r.exitCode, r.output).to.equal(exitCode);
            expect(r.format).to.equal("json");
            const body = JSON.parse(r.output);
            expect(body).to.deep.include({ schemaVersion: 1, command, exitCode });
            expect(body.error).to.match(error);
            expect(body.error).to.not.match(STACK_TRACE);
        });
    }
});

describe("bad input (issue 29): no command writes into a file it did not make, or into a FIFO (capacity overwrote ramp.csv)", () => {
    const fifo = (p: string) => execFileSync("mkfifo", [p]);
    /** An --out directory holding `make`'s files, and what it held before. */
    const outWith = (make: (out: string) => void) => {
        const out = path.join(tempDir("out-"), "out");
        fs.mkdirSync(out);
        make(out);
        return out;
    };
    const listing = (out: string) => fs.readdirSync(out, { recursive: true, encoding: "utf8" }).sort();
    const capacityCases: [string, (out: string) => void, RegExp][] = [
        ["the user's own ramp.csv", (o) => fs.writeFileSync(path.join(o, "ramp.csv"), "my,own\n"), /^--out \S+: ramp\.csv is there and npm run capacity did not write it \(no \.notify-karpenter-capacity\.json says it did\); npm run capacity writes only files it made, so nothing was written and it is as it was: move it, or choose another --out$/],
        ["a FIFO where ramp.svg goes (it hung)", (o) => fifo(path.join(o, "ramp.svg")), /^--out \S+: ramp\.svg is a FIFO \(named pipe\), where npm run capacity writes a file/],
        ["a link where ramp.csv goes", (o) => (fs.writeFileSync(path.join(o, "..", "mine.csv"), "mine\n"), fs.symlinkSync("../mine.csv", path.join(o, "ramp.csv"))), /^--out \S+: ramp\.csv is a symbolic link \(to \.\.\/mine\.csv\), which npm run capacity writes through for no one/],
        ["a directory where ramp.csv goes", (o) => fs.mkdirSync(path.join(o, "ramp.csv")), /^--out \S+: ramp\.csv is a directory, where npm run capacity writes a file/],
        ["plan's record standing in for capacity's", (o) => fs.writeFileSync(path.join(o, ".notify-karpenter-capacity.json"), JSON.stringify({ writtenBy: "npm run plan", files: {} })), /^--out \S+: \.notify-karpenter-capacity\.json is there and is not a record npm run capacity wrote/],
    ];
    for (const [what, make, line] of capacityCases) {
        tally.dataLoss++;
        it(`capacity --out with ${what}: refused at once, nothing written`, async () => {
            const out = outWith(make);
            const before = listing(out);
            const started = Date.now();
            const r = await capacity(["--stack", "production", "--out", out]);
            expect(r.exitCode, r.output).to.equal(2);
            expect(r.output.split("\n")[0]).to.match(line);
            expect(listing(out)).to.deep.equal(before);
            expect(Date.now() - started).to.be.below(5000);
        });
    }
    tally.dataLoss++;
    it("capacity writes over its own files, and refuses them once the user changed one", async () => {
        const out = path.join(tempDir("out-"), "out");
        expect((await capacity(["--stack", "production", "--out", out])).exitCode).to.be.oneOf([0, 1]);
        expect((await capacity(["--stack", "production", "--out", out])).exitCode).to.be.oneOf([0, 1]);
        expect(listing(out)).to.deep.equal([".notify-karpenter-capacity.json", "ramp.csv", "ramp.svg"]);
        fs.appendFileSync(path.join(out, "ramp.csv"), "my note\n");
        const r = await capacity(["--stack", "production", "--out", out]);
        expect(r.exitCode).to.equal(2);
        expect(r.output.split("\n")[0]).to.match(/: ramp\.csv was changed since npm run capacity wrote it; npm run capacity writes only files it made/);
        expect(fs.readFileSync(path.join(out, "ramp.csv"), "utf8")).to.match(/my note\n$/);
    });
    const planCases: [string, (out: string) => void, RegExp][] = [
        ["the user's own summary.txt (a valid config overwrote it)", (o) => fs.writeFileSync(path.join(o, "summary.txt"), "my notes\n"), /^--out \S+: summary\.txt is there and npm run plan did not write it/],
        ["a FIFO where manifests.yaml goes (it hung)", (o) => fifo(path.join(o, "manifests.yaml")), /^--out \S+: manifests\.yaml is a FIFO \(named pipe\), where npm run plan writes a file/],
        ["a file where the values folder goes", (o) => fs.writeFileSync(path.join(o, "gc-notify-values"), "x"), /^--out \S+: gc-notify-values is a file, where npm run plan puts a folder/],
        ["a link where the handover folder goes", (o) => fs.symlinkSync(tempDir("elsewhere-"), path.join(o, "gc-notify-handover")), /^--out \S+: gc-notify-handover is a symbolic link \(to \S+\), which npm run plan writes through for no one/],
    ];
    for (const [what, make, line] of planCases) {
        tally.dataLoss++;
        it(`plan --out with ${what}: refused, nothing written`, async () => {
            const out = outWith(make);
            const before = listing(out);
            const r = await plan(["--stack", "staging", "--out", out]);
            expect(r.exitCode, r.output).to.equal(2);
            expect(r.output.split("\n")[0]).to.match(line);
            expect(listing(out)).to.deep.equal(before);
        });
    }
    tally.dataLoss++;
    it("drill --out with the user's own summary.txt: refused before any call, named as the drill's (it wrote as 'this command', after the run)", async () => {
        const api = await new FakeKubeApi(new FakeClock()).start();
        try {
            const out = outWith((o) => fs.writeFileSync(path.join(o, "summary.txt"), "mine\n"));
            const kc = () => {
                const k = api.kubeConfig();
                k.clusters = [{ name: "arn:aws:eks:ca-central-1:123456789012:cluster/notify-karpenter-scratch", server: api.url, skipTLSVerify: true }];
                k.contexts = [{ name: "scratch", cluster: "arn:aws:eks:ca-central-1:123456789012:cluster/notify-karpenter-scratch", user: "tester" }];
                return k;
            };
            const r = await drill(["--stack", "scratch", "--context", "scratch", "--out", out], { kubeConfig: kc, env: {}, aws: { endpoint: "http://127.0.0.1:9", credentials: { accessKeyId: "A", secretAccessKey: "s" }, maxAttempts: 1 } });
            expect(r.exitCode, r.output).to.equal(2);
            expect(r.output.split("\n")[0]).to.match(/^--out \S+: summary\.txt is there and npm run drill did not write it/);
            expect(listing(out)).to.deep.equal(["summary.txt"]);
            expect(api.requests).to.deep.equal([]);
        } finally {
            await api.stop();
        }
    });
    tally.dataLoss++;
    it("scale-test --out with the user's own summary.txt: refused before the test runs", async () => {
        const api = await new FakeKubeApi(new FakeClock()).start();
        try {
            const out = outWith((o) => fs.writeFileSync(path.join(o, "summary.txt"), "mine\n"));
            const r = await scaleTest(["--stack", "staging", "--context", "staging", "--out", out], { kubeConfig: () => api.kubeConfig() });
            expect(r.exitCode).to.equal(2);
            expect(r.output.split("\n")[0]).to.match(/^--out \S+: summary\.txt is there and npm run scale-test did not write it/);
            expect(listing(out)).to.deep.equal(["summary.txt"]);
        } finally {
            await api.stop();
        }
    });
    /** CRD files that are not Karpenter's: [what, NodePool file text, the words]. */
    const tiny = (kind: string, group: string, extra = "") =>
        `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: { name: ${kind.toLowerCase()}s.${group} }\nspec:\n  group: ${group}\n  names: { kind: ${kind} }\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: { openAPIV3Schema: { type: object, properties: { spec: { type: object${extra} } } } }\n`;
    const realNodePool = process.env.KARPENTER_REFERENCE_DIR ? path.join(process.env.KARPENTER_REFERENCE_DIR, CRD_FILES.NodePool) : undefined;
    const crdCases: [string, string, RegExp][] = [
        ["two tiny CRDs of the right kind and group (they overwrote the module)", tiny("NodePool", "karpenter.sh").replace("nodepools.karpenter.sh", "nodepools.karpenter.sh"), /karpenter\.sh_nodepools\.yaml: does not declare spec\.template\.metadata\.labels, spec\.template\.spec\.nodeClassRef\.group, spec\.template\.spec\.nodeClassRef\.kind and \d+ more, which the program sets/],
        ["another group's NodePool", tiny("NodePool", "example.com"), /is the NodePool of the group "example\.com" \(metadata\.name "nodepools\.example\.com"\), not Karpenter's karpenter\.sh \(nodepools\.karpenter\.sh\)/],
        ["a v1beta1 CRD (Karpenter before 1.0)", tiny("NodePool", "karpenter.sh").replace("name: v1\n", "name: v1beta1\n"), /stores version "v1beta1"; this program writes karpenter\.sh\/v1/],
        ["a namespaced CRD", tiny("NodePool", "karpenter.sh").replace("scope: Cluster", "scope: Namespaced"), /has scope "Namespaced"; Karpenter's NodePool is cluster-scoped/],
        ["a Deployment in the CRD's place", "apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: x }\n", /is a "apps\/v1" Deployment, not a CustomResourceDefinition \(apiextensions\.k8s\.io\/v1\)/],
        ["the EC2NodeClass CRD in the NodePool's file", tiny("EC2NodeClass", "karpenter.k8s.aws"), /defines the kind "EC2NodeClass", not NodePool/],
    ];
    for (const [what, text, words] of crdCases) {
        tally.dataLoss++;
        it(`generate:karpenter --crds with ${what}: refused, the module as it was`, async () => {
            const crds = tempDir("crds-");
            fs.writeFileSync(path.join(crds, CRD_FILES.NodePool), text);
            fs.writeFileSync(path.join(crds, CRD_FILES.EC2NodeClass), tiny("EC2NodeClass", "karpenter.k8s.aws"));
            const out = path.join(tempDir("gen-"), "crds.ts");
            fs.writeFileSync(out, "// GENERATED by `npm run generate:karpenter` (an earlier run)\nexport const CRDS = {};\n");
            const before = fs.readFileSync(out, "utf8");
            const r = await generateKarpenter(["--crds", crds, "--out", out], {});
            expect(r.exitCode, r.output).to.equal(3);
            expect(r.output).to.match(words);
            expect(r.output).to.match(/; --crds must hold Karpenter v1\.14\.1's own CRD files \(aws\/karpenter-provider-aws, tag v1\.14\.1, pkg\/apis\/crds\/\); nothing was written$/);
            expect(fs.readFileSync(out, "utf8")).to.equal(before);
        });
    }
    tally.dataLoss++;
    it("generate:karpenter --out a file it did not write: refused, the file as it was", async function () {
        if (!realNodePool) this.skip();
        const out = path.join(tempDir("gen-"), "mine.ts");
        fs.writeFileSync(out, "export const mine = 1;\n");
        const r = await generateKarpenter(["--crds", process.env.KARPENTER_REFERENCE_DIR!, "--out", out], {});
        expect(r).to.deep.equal({ exitCode: 3, output: `--out ${out}: is there and npm run generate:karpenter did not write it (its first lines lack "// GENERATED by \`npm run generate:karpenter\`"): nothing was written, so it is as it was; move it, or choose another --out` });
        expect(fs.readFileSync(out, "utf8")).to.equal("export const mine = 1;\n");
    });
});

// ---- Issue 29, part B: the live commands against networks and answers. In-process loopback servers (tests/fakeAwsApi.ts,
// tests/fakeKubeApi.ts) that accept and never answer, answer /version and then nothing, answer slowly, answer garbage,
// empty or huge answers, errors by their own codes, throttling; credential plugins that hang, fail or print nothing of
// use; contexts of a cluster of the stack's name in another region or account. Deadlines are milliseconds here.

const ACCOUNT = "123456789012";
const STAGING_CLUSTER = "notification-canada-ca-staging-eks-cluster";
const SCRATCH_CLUSTER = "notify-karpenter-scratch";
const arnOf = (cluster: string, region = "ca-central-1", account = ACCOUNT) => `arn:aws:eks:${region}:${account}:cluster/${cluster}`;
/**
 * What takes seconds live fails here within one: short enough for no case to wait long, long enough for the calls
 * that are answered (a preflight makes some 25 at once, on two busy cores) never to miss it.
 */
const FAST: Partial<Deadlines> = { awsConnectMs: 1000, awsRequestMs: 800, awsCallMs: 1200, kubeRequestMs: 800, execMs: 700, watchIdleMs: 300, maxAnswerBytes: 1_000_000, throttleFirstDelayMs: 1 };
/** For the cases where nothing is planted on the way: the real deadlines (nothing waits on them), throttling quick. */
const RELAXED: Partial<Deadlines> = { maxAnswerBytes: 1_000_000, throttleFirstDelayMs: 1 };

/** An account holding the stack's cluster and nothing else: every read answers, and the checks find what they find. */
function emptyAccount(): FakeAwsState {
    return { account: ACCOUNT, clusters: { [STAGING_CLUSTER]: { version: "1.31", status: "ACTIVE" } }, addons: {}, logGroups: {}, images: [], subnets: [], securityGroups: [], offerings: [], instanceTypes: [], roles: {}, policies: {}, queues: {}, rules: {}, topics: {}, keys: {}, faults: {} };
}

/** A kubeconfig of one context `c`: cluster entry `entry` at `server`, its user a token or a credential plugin. */
function kubeconfig(entry: string, server: string, exec?: { command: string; args: string[] }): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: entry, server, skipTLSVerify: true }],
        users: [exec ? { name: "operator", exec: { apiVersion: "client.authentication.k8s.io/v1beta1", ...exec } } : { name: "operator", token: "t" }],
        contexts: [{ name: "c", cluster: entry, user: "operator" }],
        currentContext: "c",
    });
    return kc;
}

/** A credential plugin named aws (so messages name it as the kubeconfig does: aws eks get-token) running `body`. */
function plugin(body: string): string {
    const file = path.join(tempDir("plugin-"), "aws");
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return file;
}
/** aws eks update-kubeconfig's exec arguments. */
const getToken = (cluster: string, region = "ca-central-1") => ["--region", region, "eks", "get-token", "--cluster-name", cluster, "--output", "json"];
const TOKEN = `echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"k8s-aws-v1.x","expirationTimestamp":"2099-01-01T00:00:00Z"}}'`;

interface LiveWorld {
    aws?: (s: FakeAwsState) => void;
    kube?: FakeKubeApiOptions;
    /** The kubeconfig, from the fake API's URL; the fake's own (context staging) by default. */
    kubeconfig?: (url: string) => KubeConfig;
}

/** Runs `command` against fresh fakes set up as `world` says; stops them however it ends. */
async function live(world: LiveWorld, command: (deps: { aws: FakeAwsApi; kube: FakeKubeApi; kubeConfig: () => KubeConfig }) => Promise<CommandResult>): Promise<CommandResult & { awsRequests: string[]; kubeRequests: string[] }> {
    const state = emptyAccount();
    world.aws?.(state);
    const aws = await new FakeAwsApi(state).start();
    const kube = await new FakeKubeApi(new FakeClock(), { emptyLists: true, ...world.kube }).start();
    try {
        const kubeConfig = () => (world.kubeconfig ? world.kubeconfig(kube.url) : kube.kubeConfig());
        const r = await command({ aws, kube, kubeConfig });
        return { ...r, awsRequests: [...aws.requests], kubeRequests: [...kube.requests] };
    } finally {
        await aws.stop();
        await kube.stop();
    }
}

const NOW = Date.UTC(2026, 11, 1);
type Live = Parameters<typeof live>[1];
const preflightLive = (argv: string[], deadlines = FAST): Live => (x) =>
    preflight(["--stack", "staging", "--context", "staging", ...argv], { aws: x.aws.clientConfig(), kubeConfig: x.kubeConfig, deadlines, reachTimeoutMs: deadlines.kubeRequestMs ?? 15_000, now: () => NOW, taskQuery: { pollMs: 1, deadlineMs: 1000 } });
const verifyLive = (context = "staging", deadlines = FAST): Live => (x) => verifyPlacement(["--stack", "staging", "--context", context], { kubeConfig: x.kubeConfig, deadlines });
const scaleLive = (context = "staging"): Live => (x) => scaleTest(["--stack", "staging", "--context", context, "--out", path.join(tempDir("scale-"), "out")], { kubeConfig: x.kubeConfig, deadlines: FAST, progress: () => undefined });
const drillLive = (context = "scratch", out = path.join(tempDir("drill-"), "out"), deadlines = FAST): Live => (x) =>
    drill(["--stack", "scratch", "--context", context, "--out", out], { aws: x.aws.clientConfig(), kubeConfig: x.kubeConfig, deadlines, env: {}, progress: () => undefined });
/** The drill's kubeconfig: context scratch, the scratch cluster by its ARN. */
const scratchConfig = (region = "ca-central-1", account = ACCOUNT) => (url: string) => {
    const kc = kubeconfig(arnOf(SCRATCH_CLUSTER, region, account), url);
    kc.contexts = [{ name: "scratch", cluster: arnOf(SCRATCH_CLUSTER, region, account), user: "operator" }];
    kc.setCurrentContext("scratch");
    return kc;
};
/** Context staging, its cluster entry and server as given. */
const stagingConfig = (entry: string, server?: string, exec?: { command: string; args: string[] }) => (url: string) => {
    const kc = kubeconfig(entry, server ?? url, exec);
    kc.contexts = [{ name: "staging", cluster: entry, user: "operator" }];
    kc.setCurrentContext("staging");
    return kc;
};
const fault = (...faults: Fault[]) => faults;
const times = (n: number, f: Fault) => Array.from({ length: n }, () => f);
/** Only /version is answered: the cluster answers its first request and then nothing. */
const versionThenNothing: FakeKubeApiOptions["fault"] = (_m, p) => (p === "/version" ? undefined : { kind: "hang" });

/** A case: what is planted, the command, and what it must answer (exit code, and a line of its output). */
type LiveCase = [string, LiveWorld, Live, number, RegExp, ((r: CommandResult & { awsRequests: string[]; kubeRequests: string[] }) => void)?];

function liveCases(klass: "deadline" | "answer" | "errorCode" | "identity", cases: LiveCase[]): void {
    for (const [what, world, command, exitCode, line, more] of cases) {
        tally[klass]++;
        it(what, async function () {
            this.timeout(30_000);
            const started = Date.now();
            const r = await live(world, command);
            expect(r.exitCode, r.output).to.equal(exitCode);
            expect(r.output, r.output).to.match(line);
            expect(r.output).to.not.match(STACK_TRACE);
            expect(r.output).to.not.match(/Cannot read properties|is not a function|undefined is not/);
            // Nothing waits for the real deadlines: each case ends within a few of the test's own.
            expect(Date.now() - started).to.be.below(8000);
            more?.(r);
        });
    }
}

const noVpnAdvice = (r: CommandResult) => expect(r.output).to.not.include("Client VPN");

describe("bad input (issue 29): every network call has a deadline, and its message names the call", () => {
    liveCases("deadline", [
        ["preflight: STS accepts the connection and never answers: exit 3 at the deadline, naming the call", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault({ kind: "hang" })) }, preflightLive(["--only", "ami"]), 3, /^Could not check: sts:GetCallerIdentity: no answer in time \(.*800 ms.*\): AWS, or the way to it, stopped answering$/m],
        ["preflight: IAM answers a byte at a time for ever: the whole call's deadline ends it", { aws: (s) => (s.faults!["iam:GetRole"] = fault({ kind: "trickle" })) }, preflightLive(["--only", "ami"]), 3, /^Could not check: iam:GetRole \S+: no answer within 1\.2 s, the SDK's retries included/m],
        ["preflight: a slow answer within the deadline is read, not refused", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault({ kind: "slow", ms: 100 })) }, preflightLive(["--only", "ami"], { ...RELAXED, awsRequestMs: 800 }), 1, /^Preflight of stack staging: .*\(account 123456789012\)/, (r) => expect(r.output).to.not.include("Could not check")],
        ["preflight: SQS never answers GetQueueUrl: queue-visibility alone NOT RUN, naming the call", { aws: (s) => (s.faults!["sqs:GetQueueUrl"] = fault({ kind: "hang" })) }, preflightLive(["--only", "queue-visibility"]), 3, /^Could not check: sqs:GetQueueUrl \S+: no answer/m],
        ["preflight: the cluster answers /version, then nothing: the list is named at its deadline, no VPN advice", { kube: { fault: versionThenNothing } }, preflightLive(["--only", "patch-targets"]), 3, /^Could not check: cluster \S+ \(context staging\): list \S+.*: no answer within 0\.8 s$/m, noVpnAdvice],
        ["preflight: the cluster's lists trickle for ever: the request deadline ends them", { kube: { fault: (_m, p) => (p === "/version" ? undefined : { kind: "trickle" }) } }, preflightLive(["--only", "patch-targets"]), 3, /: list \S+.*: no answer within 0\.8 s$/m, noVpnAdvice],
        ["preflight: a credential plugin that hangs is killed at its own deadline and named; no VPN advice", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin("exec sleep 60"), args: getToken(STAGING_CLUSTER) }) }, preflightLive(["--only", "patch-targets"]), 3, /^Could not check: cluster \S+ \(context staging\): aws eks get-token did not answer in 0\.7 s \(the kubeconfig's credential plugin for user operator\)/m, noVpnAdvice],
        ["verify-placement --context: the pods list never answers: exit 3 naming it", { kube: { fault: (_m, p) => (p === "/api/v1/pods" ? { kind: "hang" } : undefined) } }, verifyLive(), 3, /^Could not check: could not list the nodes and pods of \S+ \(context staging\): list pods: no answer within 0\.8 s$/],
        ["verify-placement --context: a credential plugin that hangs", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin("exec sleep 60"), args: getToken(STAGING_CLUSTER) }) }, verifyLive(), 3, /aws eks get-token did not answer in 0\.7 s/],
        ["scale-test: a cluster that accepts and never answers: could not run, nothing created or written", { kube: { unresponsive: true } }, scaleLive(), 3, /^Could not run: the cluster of context staging did not answer: read namespace \S+: no answer within 0\.8 s$/],
        ["scale-test: a credential plugin that hangs: could not run, naming it", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin("exec sleep 60"), args: getToken(STAGING_CLUSTER) }) }, scaleLive(), 3, /aws eks get-token did not answer in 0\.7 s/],
        ["drill: STS answers a byte at a time: exit 3 before anything starts", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault({ kind: "trickle" })) }, drillLive(), 3, /^Could not run: sts:GetCallerIdentity: no answer within 1\.2 s/, (r) => expect(r.awsRequests.filter((q) => q.startsWith("fis:"))).to.deep.equal([])],
        ["drill: FIS never answers: exit 3 naming the call, nothing started", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["fis:ListExperimentTemplates"] = fault({ kind: "hang" })) }, drillLive(), 3, /^Could not run: fis:ListExperimentTemplates: no answer/, (r) => expect(r.awsRequests).to.not.include("fis:StartExperiment")],
    ]);
});

describe("bad input (issue 29): every answer is checked before it is read; a malformed one is a cannot-check, never a finding", () => {
    const noFinding = (r: CommandResult) => expect(r.output).to.not.match(/^(FAIL|WARN) /m);
    const taskGroup = "/aws/containerinsights/notification-canada-ca-staging-eks-cluster/application";
    liveCases("answer", [
        ["preflight: IAM GetRole answers an empty 200: cannot check, not 'the role does not exist'", { aws: (s) => (s.faults!["iam:GetRole"] = fault({ kind: "empty" })) }, preflightLive(["--only", "spot-service-linked-role"]), 3, /^Could not check: iam:GetRole \S+ answered without a Role: cannot check/m, noFinding],
        ["preflight: STS answers a proxy's HTML page", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault({ kind: "garbage" })) }, preflightLive(["--only", "ami"]), 3, /^Could not check: sts:GetCallerIdentity answered without an Arn: cannot check/m],
        ["preflight: STS answers 2 MB: refused as it streams in", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault({ kind: "huge", bytes: 2_000_000 })) }, preflightLive(["--only", "ami"]), 3, /^Could not check: sts:GetCallerIdentity: the answer passed 1 MB, far more than any answer of this call: refused unread$/m],
        ["preflight: SNS GetTopicAttributes answers an empty 200: cannot check, not 'the topic does not exist'", { aws: (s) => (s.faults!["sns:GetTopicAttributes"] = fault({ kind: "empty" }, { kind: "empty" })) }, preflightLive(["--only", "alarm-topics"]), 3, /^Could not check: sns:GetTopicAttributes \S+ answered without Attributes: cannot check/m, noFinding],
        ["preflight: EKS answers HTML where its JSON belongs", { aws: (s) => (s.faults!["eks:DescribeCluster"] = fault({ kind: "garbage" })) }, preflightLive(["--only", "cluster-version"]), 3, /^Could not check: eks:DescribeCluster \S+: the answer \(HTTP 200\) is not eks's: SyntaxError: .*; a proxy or another server may be answering$/m],
        ["preflight: EKS DescribeCluster answers {}: cannot check, not 'no such cluster'", { aws: (s) => (s.faults!["eks:DescribeCluster"] = fault({ kind: "empty" })) }, preflightLive(["--only", "cluster-version"]), 3, /eks:DescribeCluster \S+ answered without a cluster: cannot check/, noFinding],
        ["preflight: EC2 DescribeSubnets answers without its list: cannot check, not 'no subnet'", { aws: (s) => (s.faults!["ec2:DescribeSubnets"] = fault({ kind: "empty" })) }, preflightLive(["--only", "subnets"]), 3, /^Could not check: ec2:DescribeSubnets answered without Subnets: cannot check/m, noFinding],
        ["preflight: SQS GetQueueUrl answers {}: queue-visibility NOT RUN, not 'no such queue'", { aws: (s) => (s.faults!["sqs:GetQueueUrl"] = fault({ kind: "empty" })) }, preflightLive(["--only", "queue-visibility"]), 3, /^Could not check: sqs:GetQueueUrl \S+ answered without a QueueUrl: cannot check/m, noFinding],
        ["preflight: Logs Insights answers a query's results without a status", { aws: (s) => { s.logGroups[taskGroup] = []; s.faults!["logs:GetQueryResults"] = fault({ kind: "empty" }); } }, preflightLive(["--only", "task-durations"]), 3, /^Could not check: logs:GetQueryResults \S+ answered without a status: cannot check/m, noFinding],
        ["preflight: a cluster list without its items: cannot check, not 'nothing there'", { kube: { fault: (_m, p) => (p.endsWith("/deployments") ? { kind: "no-items" } : undefined) } }, preflightLive(["--only", "patch-targets"]), 3, /: list deployments in \S+: the answer has no items list: cannot check/, noFinding],
        ["preflight: a cluster list holding an object without a name", { kube: { fault: (_m, p) => (p.endsWith("/deployments") ? { kind: "nameless" } : undefined) } }, preflightLive(["--only", "patch-targets"]), 3, /: list deployments in \S+: the answer holds an object without metadata\.name/, noFinding],
        ["preflight: /version answered with a proxy's page: named, no VPN advice", { kube: { fault: (_m, p) => (p === "/version" ? { kind: "garbage" } : undefined) } }, preflightLive(["--only", "patch-targets"]), 3, /^Could not check: cluster \S+ \(context staging\): GET \/version: the answer has no gitVersion, so it is not the API server's/m, noVpnAdvice],
        ["verify-placement --context: a 2 MB pods list is refused as it streams in", { kube: { fault: (_m, p) => (p === "/api/v1/pods" ? { kind: "huge", bytes: 2_000_000 } : undefined) } }, verifyLive(), 3, /: list pods: the answer passed 1 MB, far more than any answer of this request: refused unread$/],
        ["verify-placement --context: a nodes list of HTML", { kube: { fault: (_m, p) => (p === "/api/v1/nodes" ? { kind: "garbage" } : undefined) } }, verifyLive(), 3, /: list nodes: the answer (has no items list|is not the API server's)/],
        ["verify-placement --context: a pods list without items is no 'nothing on ephemeral nodes'", { kube: { fault: (_m, p) => (p === "/api/v1/pods" ? { kind: "no-items" } : undefined) } }, verifyLive(), 3, /: list pods: the answer has no items list: cannot check/, (r) => expect(r.output).to.not.include("OK:")],
        ["a credential plugin that prints no JSON", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin("echo 'Enter MFA code:'"), args: getToken(STAGING_CLUSTER) }) }, verifyLive(), 3, /aws eks get-token printed no ExecCredential JSON \(the kubeconfig's credential plugin for user operator\): "Enter MFA code:"/],
        ["a credential plugin whose ExecCredential has no token", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin(`echo '{"kind":"ExecCredential","status":{}}'`), args: getToken(STAGING_CLUSTER) }) }, verifyLive(), 3, /aws eks get-token answered no token and no client certificate/],
        ["drill: ListExperimentTemplates answers {}: cannot check, not 'no template, run pulumi up'", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["fis:ListExperimentTemplates"] = fault({ kind: "empty" })) }, drillLive(), 3, /^Could not run: fis:ListExperimentTemplates answered without experimentTemplates: cannot check/],
        [
            "drill: GetExperimentTemplate answers {}: cannot check (it was a TypeError)",
            {
                kubeconfig: scratchConfig(),
                aws: (s) => {
                    s.fis = { templates: [{ id: "EXT1", tags: { Name: drillNames(SCRATCH_CLUSTER).template, [STACK_TAG]: "scratch" }, template: {} }], timeline: { running: 1, actionStart: 2 }, instances: [] };
                    s.faults!["fis:GetExperimentTemplate"] = fault({ kind: "empty" });
                },
            },
            drillLive(),
            3,
            /^Could not run: fis:GetExperimentTemplate EXT1 answered without an experimentTemplate: cannot check/,
        ],
    ]);
});

describe("bad input (issue 29): errors are told apart by their own code, throttling is retried, git's reasons are git's", () => {
    const error = (status: number, code: string, message: string): Fault => ({ kind: "error", status, code, message });
    const expired = error(403, "ExpiredToken", "The security token included in the request is expired");
    liveCases("errorCode", [
        ["preflight: STS ExpiredToken (HTTP 403) is expired credentials, not a missing permission", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault(expired)) }, preflightLive(["--only", "ami"]), 3, /^Could not check: sts:GetCallerIdentity: HTTP 403 ExpiredToken: The security token included in the request is expired: the credentials expired: log in again/m, (r) => expect(r.output).to.not.include("lack")],
        ["preflight: SQS ExpiredTokenException (JSON, HTTP 400)", { aws: (s) => (s.faults!["sqs:GetQueueUrl"] = fault(error(400, "ExpiredTokenException", "The security token included in the request is expired"))) }, preflightLive(["--only", "queue-visibility"]), 3, /sqs:GetQueueUrl \S+: HTTP 400 ExpiredTokenException: .*: the credentials expired: log in again/],
        ["preflight: IAM SignatureDoesNotMatch (HTTP 403) is wrong credentials", { aws: (s) => (s.faults!["iam:GetRole"] = times(2, error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."))) }, preflightLive(["--only", "ami"]), 3, /iam:GetRole \S+: HTTP 403 SignatureDoesNotMatch: .*: the credentials are wrong/, (r) => expect(r.output).to.not.include("lack")],
        ["preflight: STS InvalidClientTokenId is wrong credentials", { aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault(error(403, "InvalidClientTokenId", "The security token included in the request is invalid."))) }, preflightLive(["--only", "ami"]), 3, /HTTP 403 InvalidClientTokenId: .*: the credentials are wrong/],
        ["preflight: EC2 AuthFailure is wrong credentials", { aws: (s) => (s.faults!["ec2:DescribeSubnets"] = fault(error(401, "AuthFailure", "AWS was not able to validate the provided access credentials"))) }, preflightLive(["--only", "subnets"]), 3, /ec2:DescribeSubnets: HTTP 401 AuthFailure: .*: the credentials are wrong/],
        ["preflight: IAM AccessDenied names the action the credentials lack", { aws: (s) => (s.faults!["iam:GetRole"] = times(3, error(403, "AccessDenied", "User is not authorized to perform: iam:GetRole"))) }, preflightLive(["--only", "ami"]), 3, /iam:GetRole \S+: HTTP 403 AccessDenied: .* \(the credentials lack iam:GetRole; docs\/preflight\.md lists the read permissions\)/],
        [
            "preflight: IAM Throttling twice, then answered: retried with backoff, checked as if nothing happened",
            { aws: (s) => (s.faults!["iam:GetRole"] = times(2, error(400, "Throttling", "Rate exceeded"))) },
            preflightLive(["--only", "spot-service-linked-role"], RELAXED),
            1,
            /^FAIL  spot-service-linked-role +AWSServiceRoleForEC2Spot does not exist/m,
            (r) => expect(r.output).to.not.include("Could not check"),
        ],
        ["preflight: EKS TooManyRequestsException (HTTP 429) four times, then answered", { aws: (s) => (s.faults!["eks:DescribeCluster"] = times(4, error(429, "TooManyRequestsException", "Too Many Requests"))) }, preflightLive(["--only", "cluster-version"], RELAXED), 0, /^OK +cluster-version/m, (r) => expect(r.awsRequests.filter((q) => q === "eks:DescribeCluster")).to.have.length(5)],
        ["preflight: EC2 RequestLimitExceeded past the retries: said, with how often", { aws: (s) => (s.faults!["ec2:DescribeSubnets"] = times(5, error(503, "RequestLimitExceeded", "Request limit exceeded."))) }, preflightLive(["--only", "subnets"]), 3, /^Could not check: ec2:DescribeSubnets: HTTP 503 RequestLimitExceeded: Request limit exceeded\.: throttled 5 times, over 0\.015 s of waiting: AWS limits the rate of these calls/m],
        ["preflight: a credential plugin's own failure (aws: ExpiredToken) is shown as it said it, not as the VPN", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin("echo 'An error occurred (ExpiredToken) when calling the AssumeRole operation: The security token included in the request is expired' >&2; exit 255"), args: getToken(STAGING_CLUSTER) }) }, preflightLive(["--only", "patch-targets"]), 3, /aws eks get-token failed \(the kubeconfig's credential plugin for user operator, exit 255\): An error occurred \(ExpiredToken\) when calling the AssumeRole operation/, noVpnAdvice],
        ["drill: FIS ThrottlingException (HTTP 429) twice: retried, and the drill goes on (it crashed)", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["fis:ListExperimentTemplates"] = times(2, error(429, "ThrottlingException", "Rate exceeded"))) }, drillLive("scratch", undefined, RELAXED), 1, /^Refused: no FIS experiment template tagged/, (r) => expect(r.awsRequests.filter((q) => q === "fis:ListExperimentTemplates")).to.have.length(3)],
        ["drill: FIS throttled past the retries: could not run, said", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["fis:ListExperimentTemplates"] = times(5, error(429, "ThrottlingException", "Rate exceeded"))) }, drillLive(), 3, /^Could not run: fis:ListExperimentTemplates: HTTP 429 ThrottlingException: Rate exceeded: throttled 5 times/],
        ["drill: FIS HTTP 500 before the start: could not run, not a stack trace", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["fis:ListExperimentTemplates"] = fault(error(500, "InternalServerException", "Internal error"))) }, drillLive(), 3, /^Could not run: fis:ListExperimentTemplates: HTTP 500 InternalServerException: Internal error$/],
        ["drill: STS ExpiredToken: expired credentials", { kubeconfig: scratchConfig(), aws: (s) => (s.faults!["sts:GetCallerIdentity"] = fault(expired)) }, drillLive(), 3, /^Could not run: sts:GetCallerIdentity: HTTP 403 ExpiredToken: .*: the credentials expired: log in again/],
    ]);

    const committed = () => {
        const dir = tempDir("git-reasons-");
        for (const f of ["Pulumi.yaml", "Pulumi.staging.yaml"]) fs.copyFileSync(path.join(PROJECT_DIR, f), path.join(dir, f));
        return { dir, git: gitRepo(dir) };
    };
    tally.errorCode++;
    it("plan --diff-against in a repository git refuses (dubious ownership): git's reason, as git said it (it said 'in no git repository')", async function () {
        this.timeout(60_000);
        const { dir } = committed();
        const before = process.env.GIT_TEST_ASSUME_DIFFERENT_OWNER;
        process.env.GIT_TEST_ASSUME_DIFFERENT_OWNER = "1";
        try {
            const r = await plan(["--stack", "staging", "--diff-against", "HEAD"], dir);
            expect(r.exitCode, r.output).to.equal(3);
            expect(r.output).to.match(new RegExp(`^Could not check: --diff-against HEAD: git cannot read the repository at ${dir}: fatal: detected dubious ownership in repository at '${dir}' .*safe\\.directory`));
        } finally {
            if (before === undefined) delete process.env.GIT_TEST_ASSUME_DIFFERENT_OWNER;
            else process.env.GIT_TEST_ASSUME_DIFFERENT_OWNER = before;
        }
    });
    tally.errorCode++;
    it("plan --diff-against HEAD~1 in a shallow clone (CI's checkout): says the clone is shallow (it said 'not a commit of this repository')", async function () {
        this.timeout(60_000);
        const { dir, git } = committed();
        fs.appendFileSync(path.join(dir, "Pulumi.staging.yaml"), "# a second commit\n");
        git("commit", "-q", "-am", "second");
        const shallow = path.join(tempDir("shallow-"), "clone");
        const cloned = spawnSync("git", ["clone", "-q", "--depth", "1", `file://${dir}`, shallow], { encoding: "utf8" });
        expect(cloned.status, cloned.stderr).to.equal(0);
        const r = await plan(["--stack", "staging", "--diff-against", "HEAD~1"], shallow);
        expect(r.exitCode, r.output).to.equal(2);
        expect(r.output.split("\n")[0]).to.equal(
            '--diff-against: "HEAD~1" is not a commit of this repository (git rev-parse: fatal: Needed a single revision); this clone is shallow (git rev-parse --is-shallow-repository), so older commits are not in it: git fetch --unshallow, or check out with fetch-depth: 0, a plan directory (with preview.json) or last',
        );
    });
});

describe("bad input (issue 29): a cluster is matched by region and account as well as name", () => {
    const refusedBefore = (r: { awsRequests: string[]; kubeRequests: string[] }) => {
        expect(r.kubeRequests, "no cluster request").to.deep.equal([]);
        expect(r.awsRequests.filter((q) => !q.startsWith("sts:")), "no AWS read but the caller's identity").to.deep.equal([]);
    };
    const otherRegion = stagingConfig(arnOf(STAGING_CLUSTER, "us-east-1"));
    liveCases("identity", [
        ["preflight: a context for the stack's cluster name in us-east-1 (its ARN): refused, naming both regions", { kubeconfig: otherRegion }, preflightLive([]), 2, /^--context staging is cluster "arn:aws:eks:us-east-1:123456789012:cluster\/notification-canada-ca-staging-eks-cluster" \(\S+\), in us-east-1 \(the context's cluster ARN\), not the stack's cluster notification-canada-ca-staging-eks-cluster in ca-central-1 \(notify-karpenter:cluster\.region\): a cluster of the same name in another region; refusing to touch it$/m, refusedBefore],
        ["preflight: a context for the stack's cluster name in account 999999999999 (its ARN), the credentials account 123456789012: refused, naming both", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER, "ca-central-1", "999999999999")) }, preflightLive([]), 2, /, of account 999999999999 \(the context's cluster ARN\), but the AWS credentials are account 123456789012 \(sts:GetCallerIdentity\): a cluster of the same name in another account, or the wrong credentials; refusing to touch it$/m, refusedBefore],
        ["preflight: a context named as the cluster, whose server is an EKS endpoint in eu-west-1", { kubeconfig: stagingConfig(STAGING_CLUSTER, "https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com") }, preflightLive([]), 2, /, in eu-west-1 \(its server ABCDEF0123456789\.gr7\.eu-west-1\.eks\.amazonaws\.com\), not the stack's cluster/, refusedBefore],
        ["preflight: a context whose credential plugin asks for a token of us-west-2", { kubeconfig: stagingConfig(STAGING_CLUSTER, undefined, { command: plugin(TOKEN), args: getToken(STAGING_CLUSTER, "us-west-2") }) }, preflightLive([]), 2, /, in us-west-2 \(its credential plugin \(aws eks get-token\)\), not the stack's cluster/, refusedBefore],
        ["preflight: a context whose credential plugin names another cluster", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin(TOKEN), args: getToken("notification-canada-ca-production-eks-cluster") }) }, preflightLive([]), 2, /, but its credential plugin \(aws eks get-token\) names cluster notification-canada-ca-production-eks-cluster, not the stack's cluster notification-canada-ca-staging-eks-cluster/, refusedBefore],
        ["preflight: the context of the stack's cluster, its plugin's token, region and account agreeing: read", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin(TOKEN), args: getToken(STAGING_CLUSTER) }) }, preflightLive(["--only", "patch-targets,ami"], RELAXED), 1, /^Preflight of stack staging: cluster \S+ in ca-central-1 \(account 123456789012\), context staging/, (r) => expect(r.output).to.not.include("Could not check")],
        ["drill: the scratch cluster's name in us-east-1: refused before any call, nothing started", { kubeconfig: scratchConfig("us-east-1") }, drillLive(), 2, /^--context scratch is cluster "arn:aws:eks:us-east-1:\d+:cluster\/notify-karpenter-scratch" .*in us-east-1 .*not the stack's cluster notify-karpenter-scratch in ca-central-1/, (r) => expect(r.awsRequests).to.deep.equal([])],
        ["drill: the scratch cluster's name in another account: refused after STS, before FIS", { kubeconfig: scratchConfig("ca-central-1", "999999999999") }, drillLive(), 2, /of account 999999999999 \(the context's cluster ARN\), but the AWS credentials are account 123456789012/, (r) => expect(r.awsRequests).to.deep.equal(["sts:GetCallerIdentity"])],
        ["scale-test: the stack's cluster name in us-east-1: refused before any request", { kubeconfig: otherRegion }, scaleLive(), 2, /in us-east-1 \(the context's cluster ARN\), not the stack's cluster .* in ca-central-1/, refusedBefore],
        ["scale-test: a plugin assuming a role of another account than the context's ARN", { kubeconfig: stagingConfig(arnOf(STAGING_CLUSTER), undefined, { command: plugin(TOKEN), args: [...getToken(STAGING_CLUSTER), "--role-arn", "arn:aws:iam::999999999999:role/notify-admin"] }) }, scaleLive(), 2, /: the context's cluster ARN says account 123456789012, its credential plugin \(aws eks get-token\)'s role says account 999999999999; refusing to touch it$/m, refusedBefore],
        ["verify-placement: eksctl's name for the stack's cluster in us-west-2", { kubeconfig: stagingConfig(`${STAGING_CLUSTER}.us-west-2.eksctl.io`) }, verifyLive(), 2, /in us-west-2 \(the context's eksctl cluster name\), not the stack's cluster/, refusedBefore],
        ["verify-placement: the stack's cluster name in us-east-1 (its ARN)", { kubeconfig: otherRegion }, verifyLive(), 2, /in us-east-1 \(the context's cluster ARN\)/, refusedBefore],
        ["verify-placement: eksctl's name in the stack's region, its plugin agreeing: read", { kubeconfig: stagingConfig(`${STAGING_CLUSTER}.ca-central-1.eksctl.io`, undefined, { command: plugin(TOKEN), args: getToken(STAGING_CLUSTER) }) }, verifyLive("staging", RELAXED), 0, /^Pods on the ephemeral nodes of notification-canada-ca-staging-eks-cluster \(context staging\): 0 nodes/],
    ]);
});

describe("bad input: the count", () => {
    it("is at least 200, across config keys, stack files and every command's flags", () => {
        const total = Object.values(tally).reduce((a, b) => a + b, 0);
        // Printed so that the figures can be quoted; each case above is a test of its own.
        console.log(`      bad inputs: ${total} (${Object.entries(tally).map(([k, n]) => `${k} ${n}`).join(", ")}); every one refused naming the key, file or flag`);
        expect(total).to.be.at.least(200);
    });

    it("docs/configuration-notes.md has a row for each class of refusal, with its count, and no row without cases", () => {
        const text = fs.readFileSync(path.join(PROJECT_DIR, "docs", "configuration-notes.md"), "utf8");
        const section = text.slice(text.indexOf("## How this is tested"));
        const rows = Object.fromEntries([...section.matchAll(/^\| `(\w+)` \| (\d+) \|/gm)].map((m) => [m[1], Number(m[2])]));
        expect(rows, "docs/configuration-notes.md, How this is tested: one row per class, `class` | cases").to.deep.equal(tally);
        for (const [name, n] of Object.entries(tally)) expect(n, `class ${name} has no case`).to.be.above(0);
    });
});
