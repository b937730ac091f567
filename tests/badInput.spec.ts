// Bad input, as a new user would give it (issue 15): mutations of the real stack files' config, of the stack files
// themselves, and of every command's flags. Each must be refused with a line that names the key, file or flag and
// says what is allowed; none may crash (a stack trace), hang (mocha's timeout) or be accepted. The capacity section
// is the one exception by design: its problems never refuse the config, and `npm run capacity` names them.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { CommandResult } from "../ops/args";
import { capacity } from "../ops/capacityCli";
import { scaleTest } from "../ops/scaleTest";
import { verifyPlacement } from "../ops/verifyPlacement";
import { plan } from "../plan/cli";
import { PROJECT, PROJECT_DIR, readStackConfig } from "../plan/offlineRuntime";
import { ConfigError, configSections } from "../stacks/config";
import { parseStackConfig } from "../stacks/validatedConfig";
import { FakeClock, FakeKubeApi } from "./fakeKubeApi";
import { tempDir } from "./opsHelpers";

const STACK = "production";
/** Maps whose keys are free (tags, labels, prices): an extra key is allowed there. */
const FREE_MAPS = /^(tags|cluster\.stableNodeSelector|nodePool\.(tags|kubeReserved|systemReserved|evictionHard)|capacity\.prices\.onDemandHourly)$/;
/** A stack trace line, which no user error may print. */
const STACK_TRACE = /^\s+at .+\(?.+:\d+:\d+\)?$/m;
/** Words that say what is allowed. */
const ALLOWED = /must|is not a known key|is required|repeats|needs|known stacks|the flags are|takes no value|needs a value|is given twice|is a file|belongs to the kernel|no permission|must be a YAML map/;

const tally = { config: 0, semantic: 0, capacity: 0, stackFile: 0, commandLine: 0 };

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
    ["nodePool.terminationGracePeriod", "30s", /must be at least the Celery grace period \(60 s\)/],
    ["nodePool.terminationGracePeriod", "Never", /must be a duration such as 30s, 15m or 24h/],
    ["controller.batchIdleDuration", "0s", /must be at least 1s/],
    ["controller.batchIdleDuration", "20s", /must be at most batchMaxDuration \(10s\)/],
    ["controller.batchMaxDuration", "0s", /must be at least 1s/],
    ["placement.nodeDaemonSets[1]", { namespace: "kube-system", name: "secrets-store-csi-driver" }, /repeats secrets-store-csi-driver \(already at placement\.nodeDaemonSets\[0\]\)/],
    ["placement.burst.deployments[1]", { name: "notify-celery-core-tasks-burst", minAvailable: 1 }, /repeats notify-celery-core-tasks-burst \(already at placement\.burst\.deployments\[0\]\)/],
    ["placement.stableDeployments[1]", "notify-api", /repeats "notify-api"/],
    ["placement.stableDeployments[0]", "notify-celery-sms-send-burst", /must not repeat the burst Deployment/],
    ["placement.burst.terminationGracePeriodSeconds", 30, /must be at least 40/],
    ["alarms.topicNames.warning", "alert warning", /must be an SNS topic name \(letters, digits, _ and -, at most 256 characters\)/],
    ["controller.nodeRolePolicyArns", ["arn:aws:iam::aws:policy/A", "arn:aws:iam::aws:policy/A"], /must be empty when existingNodeRoleName is set|repeats/],
    ["nodePool.limits.cpu", "a lot", /must be a Kubernetes quantity/],
    ["controller.replicas", 0, /must be an integer from 1 to 10/],
    ["controller.cpu", "0", /must be above 0: the controller's request and limit \(got "0"\)/],
    ["controller.memory", "0Mi", /must be above 0/],
    ["nodePool.limits.cpu", "0", /must be above 0: a NodePool limited to 0 launches no node \(got "0"\)/],
    ["nodePool.limits.memory", "0Gi", /must be above 0: a NodePool limited to 0 launches no node/],
    ["nodePool.capacityCheck.celeryPodCpu", "0m", /must be above 0: the size of one burst Celery pod/],
    ["nodePool.capacityCheck.celeryPodMemory", "0", /must be above 0: the size of one burst Celery pod/],
    ["nodePool.kubeReserved.cpu", "-100m", /must be a quantity such as 100m, 500Mi or 10%/],
    ["nodePool.rootVolumeSize", "99999Gi", /volumeSize: must match/],
    ["placement.namespace", "kube-system", /the admission policy would reject the node daemonsets in namespace kube-system/],
    ["nodePool.ami.alias", "al2023@latest", /alias "al2023@latest" follows every new AMI|must be absent|exactly one/],
];

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
        ["plan", ["--diff", "staging"], /--diff needs two stack names/],
        ["plan", ["--diff", "staging", "prod"], /--diff: unknown stack "prod"/],
        ["plan", ["--diff", "staging", "production", "--verbose"], /--diff takes no --stack, --out or --verbose/],
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
