// Bad input, as a new user would give it (issue 15): mutations of the real stack files' config, of the stack files
// themselves, and of every command's flags. Each must be refused with a line that names the key, file or flag and
// says what is allowed; none may crash (a stack trace), hang (mocha's timeout) or be accepted. The capacity section
// is the one exception by design: its problems never refuse the config, and `npm run capacity` names them.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { execFileSync } from "child_process";
import { PassThrough } from "stream";
import { type CommandResult } from "../ops/args.ts";
import { PLAN_RECORD } from "../plan/cli.ts";
import { goResolve, parseStackFile } from "../plan/stackFile.ts";
import { docsConfig } from "../scripts/config-reference.ts";
import { generateKarpenter } from "../scripts/generate-karpenter-schema.ts";
import { WARNINGS, warningLine } from "../stacks/warnings.ts";
import { configErrorOf } from "./helpers.ts";
import { capacity } from "../ops/capacityCli.ts";
import { scaleTest } from "../ops/scaleTest.ts";
import { readToEnd, verifyPlacement } from "../ops/verifyPlacement.ts";
import { plan } from "../plan/cli.ts";
import { PROJECT, PROJECT_DIR, readStackConfig } from "../plan/offlineRuntime.ts";
import { ConfigError, configSections } from "../stacks/config.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { FakeClock, FakeKubeApi } from "./fakeKubeApi.ts";
import { tempDir } from "./opsHelpers.ts";

const STACK = "production";
/** Maps whose keys are free (tags, labels, prices): an extra key is allowed there. */
const FREE_MAPS = /^(tags|cluster\.stableNodeSelector|nodePool\.(tags|kubeReserved|systemReserved|evictionHard)|capacity\.prices\.onDemandHourly)$/;
/** A stack trace line, which no user error may print. */
const STACK_TRACE = /^\s+at .+\(?.+:\d+:\d+\)?$/m;
/** Words that say what is allowed. */
const ALLOWED = /must|is not a known key|is required|repeats|needs|known stacks|the flags are|takes no value|needs a value|is given twice|is a file|belongs to the kernel|no permission|must be a YAML map/;

const tally = { config: 0, semantic: 0, capacity: 0, stackFile: 0, commandLine: 0, reader: 0, inputFile: 0, warning: 0, dataLoss: 0 };

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
    ["nodePool.terminationGracePeriod", "30s", /must be at least 2410s, the grace period of notify-celery-core-tasks-burst \(placement\.burst: prefetchMultiplier 4 × its longest task 600 s/],
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
    ["controller.cpu", "0", /must be at least 100m: the controller's request and limit; with less it is throttled .* \(got "0"\)/],
    ["controller.memory", "0Mi", /must be at least 256Mi: the controller's request and limit; Karpenter holds/],
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

    it("a stack file that is a FIFO, a directory or over 1 MB (a FIFO hung the plan)", async () => {
        const cases: [string, (file: string) => void, string][] = [
            ["a FIFO", fifo, `${F}: is a FIFO (named pipe); it must be a regular file (a stack file)`],
            ["a directory", (f) => fs.mkdirSync(f), `${F}: is a directory; it must be a regular file (a stack file)`],
            ["1.1 MB", (f) => fs.writeFileSync(f, `# ${"x".repeat(1_100_000)}\n`), `${F}: is 1.1 MB; a stack file may be at most 1.0 MB`],
        ];
        for (const [what, make, line] of cases) {
            tally.inputFile++;
            const started = Date.now();
            for (const r of await planAndCapacity(stackDir(undefined, make))) {
                expect(r.exitCode, what).to.equal(1);
                expect(r.output.split("\n")[1], what).to.equal(line);
            }
            expect(Date.now() - started, what).to.be.below(5000);
        }
    });

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
            tally.inputFile++;
            const started = Date.now();
            const r = await verifyPlacement(["--stack", "staging", "--manifests", target]);
            expect(r.exitCode, target).to.equal(3);
            expect(r.output, target).to.equal(line);
            expect(Date.now() - started, target).to.be.below(3000);
        }
    });

    it("--manifests -: standard input that never ends, or sends too much, is given up (tail -f held it for ever)", async () => {
        tally.inputFile += 2;
        const silent = new PassThrough();
        silent.write("kind: Pod\n");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(silent, 1_000_000, 50) });
        expect(r).to.deep.equal({ exitCode: 3, output: "Could not check: --manifests -: standard input sent nothing for 0.05 s and did not end: pipe the whole output of a command that ends (helm template ... |)" });
        const flood = new PassThrough();
        flood.write("x".repeat(2000));
        const big = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(flood, 1000, 1000) });
        expect(big).to.deep.equal({ exitCode: 3, output: "Could not check: --manifests -: standard input is more than 1 KB; it may be at most 1 KB" });
    });

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
            tally.inputFile++;
            const r = await generateKarpenter(argv, {});
            expect(r.exitCode, argv.join(" ")).to.equal(exitCode);
            expect(r.output.split("\n")[0]).to.equal(line);
        }
        expect(fs.readdirSync(dir)).to.deep.equal(["a-file"]);
    });

    it("docs:config: a directory in place of docs/configuration.md is named, not written into (was EISDIR with a stack trace)", async () => {
        tally.inputFile += 2;
        const dir = path.join(tempDir("docs-"), "configuration.md");
        fs.mkdirSync(dir);
        expect(await docsConfig([], dir)).to.deep.equal({ exitCode: 3, output: `${dir}: is a directory, not the reference: remove it, then run npm run docs:config; nothing was written` });
        expect(await docsConfig(["--check"], dir)).to.deep.equal({ exitCode: 1, output: `${dir}: is a directory; it must be a regular file (the configuration reference): remove it and run npm run docs:config` });
    });
});

describe("bad input: a refused plan removes only files it wrote (it deleted the user's manifests.yaml and summary.txt)", () => {
    it("leaves a directory's own manifests.yaml and summary.txt, and says why", async () => {
        tally.dataLoss++;
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
    it("every warning the config raises has a known id, a cost and an action; none repeats", () => {
        tally.warning++;
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

    it("npm run plan prints each unacknowledged warning once, in its summary, and none to the console (it printed 46 times in npm test)", async () => {
        tally.warning++;
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

    it("an acknowledgment of a warning the config does not raise is itself a warning: remove it", () => {
        tally.warning++;
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
    };
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
        ["verify-placement", ["--stack", "staging"], /--context or --manifests|one of --context/],
        ["verify-placement", ["--stack", "staging", "--manifests", file, "--namespace", "Bad_Name"], /^--namespace must be a Kubernetes namespace name \(lowercase letters, digits and -, at most 63 characters\) \(got "Bad_Name"\)$/],
        ["verify-placement", ["--stack", "staging", "--manifests", file, "--namespace", "x".repeat(64)], /^--namespace must be a Kubernetes namespace name/],
        ["verify-placement", ["--stack", "staging", "--context", "staging", "--namespace", "default"], /^--namespace only applies to --manifests/],
        ["verify-placement", ["--stack", "staging", "--manifests", "/nonexistent/manifests.yaml"], /--manifests: no such file or directory/],
        ["verify-placement", ["--stack", "staging", "--context", "staging", "--manifests", "-"], /not both|either|one of/],
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

describe("bad input: the count", () => {
    it("is at least 200, across config keys, stack files and every command's flags", () => {
        const total = Object.values(tally).reduce((a, b) => a + b, 0);
        // Printed so that the figures can be quoted; each case above is a test of its own.
        console.log(`      bad inputs: ${total} (${Object.entries(tally).map(([k, n]) => `${k} ${n}`).join(", ")}); every one refused naming the key, file or flag`);
        expect(total).to.be.at.least(200);
    });
});
