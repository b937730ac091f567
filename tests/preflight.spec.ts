// `npm run preflight` against an in-process AWS endpoint (tests/fakeAwsApi.ts, the real SDK v3 clients) and the fake
// Kubernetes API (tests/fakeKubeApi.ts, the real client-node): each check passing, warning and failing, every planted
// problem as one FAIL, and exit 3 when AWS or the cluster refuses (403) or cannot be reached.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { gzipSync } from "zlib";
import { parseDocument } from "yaml";
import { helpText } from "../cli/args.ts";
import { CHECKS, CHECK_NEEDS, PREFLIGHT, preflight } from "../ops/preflight.ts";
import {
    type AwsFacts,
    crdReleaseImport,
    decodeRelease,
    gatherAws,
    gatherKube,
    gatherQueues,
    gatherTaskDurations,
    keyLetsCloudWatch,
    policyAllows,
    preflightChecks,
    report,
    sameOrOneBehind,
    selectorSelects,
    stackNames,
    surgePods,
} from "../ops/preflightChecks.ts";
import { TASK_WINDOW_HOURS } from "../ops/preflight.ts";
import { deadlinesOf } from "../ops/deadlines.ts";
import { listerOf, useContext } from "../ops/kube.ts";
import { NO_PERMISSION_NEEDED, PREFLIGHT_ACTIONS, type PolicyDocument, previewActions, previewPolicy } from "../plan/ciAccess.ts";
import { buildStack } from "./helpers.ts";
import { type BurstDeployment, DEPLOYMENT_LABEL, burstBudgetName, celeryPreStop, nidhoggValues } from "../components/models/celeryPlacement.ts";
import { releaseDescription } from "../components/models/controllerPolicy.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { type StackConfig, approvedInstanceTypes, configSections } from "../stacks/config.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { STACK_TAG } from "../stacks/stackNames.ts";
import { PROJECT, PROJECT_DIR } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { FakeAwsApi, type FakeAwsState } from "./fakeAwsApi.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions } from "./fakeKubeApi.ts";
import { tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";
import { setProgressSink } from "../cli/output.ts";
import { KubeConfig } from "@kubernetes/client-node";

const NOW = Date.UTC(2026, 11, 1, 0, 0, 0);
const ACCOUNT = "123456789012";
const WARNING_TOPIC = `arn:aws:sns:ca-central-1:${ACCOUNT}:alert-warning`;
const CRITICAL_TOPIC = `arn:aws:sns:ca-central-1:${ACCOUNT}:alert-critical`;
const CLOUDWATCH_KEY_POLICY = JSON.stringify({
    Version: "2012-10-17",
    Statement: [
        { Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" },
        { Effect: "Allow", Principal: { Service: "cloudwatch.amazonaws.com" }, Action: ["kms:Decrypt", "kms:GenerateDataKey*"], Resource: "*" },
    ],
});

/** Staging's real stack file, with GC Notify's topics in alarms.topicArns (parsed and written once). */
let stagingWithTopics: string | undefined;
function stackFileText(): string {
    if (stagingWithTopics === undefined) {
        const doc = parseDocument(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8"));
        doc.deleteIn(["config", `${PROJECT}:alarms`, "topicNames"]);
        doc.setIn(["config", `${PROJECT}:alarms`, "topicArns"], doc.createNode({ warning: WARNING_TOPIC, critical: CRITICAL_TOPIC }));
        stagingWithTopics = doc.toString();
    }
    return stagingWithTopics;
}

/**
 * A stack directory holding staging's real stack file, with GC Notify's topics in alarms.topicArns; `edit` changes its
 * text. Unedited, one directory serves every run (preflight only reads it); tests/cleanup.ts removes them all.
 */
let uneditedStackDir: string | undefined;
function stackDir(edit?: (yaml: string) => string): string {
    if (!edit && uneditedStackDir && fs.existsSync(uneditedStackDir)) return uneditedStackDir;
    const dir = tempDir("preflight-");
    fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), edit ? edit(stackFileText()) : stackFileText());
    if (!edit) uneditedStackDir = dir;
    return dir;
}

/** Helm 3's release Secret: the release JSON gzipped and base64-encoded (helm v3 pkg/storage/driver/util.go encodeRelease), in a Secret of type helm.sh/release.v1 (secrets.go). */
function helmSecret(name: string, namespace: string, revision: number, chart: string, version: string, values: object, status = "deployed", description?: string) {
    const release = { name, namespace, version: revision, info: { status, ...(description ? { description } : {}) }, chart: { metadata: { name: chart, version } }, config: values };
    const helm = gzipSync(Buffer.from(JSON.stringify(release))).toString("base64");
    return {
        apiVersion: "v1",
        kind: "Secret",
        type: "helm.sh/release.v1",
        metadata: { name: `sh.helm.release.v1.${name}.v${revision}`, namespace, labels: { owner: "helm", name, status, version: String(revision) } },
        data: { release: Buffer.from(helm).toString("base64") },
    };
}

const managed = (...managers: string[]) => managers.map((manager) => ({ manager, operation: manager.startsWith("pulumi") ? "Apply" : "Update" }));
const meta = (name: string, namespace?: string, managers = ["helm"]) => ({ name, ...(namespace ? { namespace } : {}), managedFields: managed(...managers) });
const container = (name: string, cpu = "100m", memory = "128Mi") => ({ name, image: "x", resources: { requests: { cpu, memory } } });
/** As GC Notify's charts make them: pods labelled app: <deployment>, which the chart's budgets select. */
const deployment = (name: string, ns: string) => ({ metadata: meta(name, ns), spec: { replicas: 2, template: { metadata: { labels: { app: name } }, spec: { containers: [container("app")] } } } });
/**
 * A burst Deployment as the stack's patch leaves it: notify-celery's worker container (named after the Deployment,
 * templates/deployment.yaml) with the program's preStop hook, the stack's grace, the pods labelled with their Deployment.
 */
const burstDeployment = (d: BurstDeployment, ns: string) => {
    const o = deployment(d.name, ns);
    return {
        ...o,
        spec: {
            ...o.spec,
            template: {
                metadata: { labels: { app: d.name, [DEPLOYMENT_LABEL]: d.name } },
                spec: { terminationGracePeriodSeconds: d.terminationGracePeriodSeconds, containers: [{ ...container(d.name), lifecycle: { preStop: celeryPreStop(d.terminationGracePeriodSeconds) } }] },
            },
        },
    };
};
/** GC Notify's preStop, as notify-celery renders it for every worker (charts/notify-celery/templates/deployment.yaml:72-78). */
const GC_NOTIFY_HOOK = { exec: { command: ["/bin/bash", "-c", "/app/scripts/run_celery_exit.sh"] } };
/**
 * A task's success line in the application log group, as GC Notify's Fluent Bit ships it (notification-manifests
 * 609853e2 fluentbit-agent.yaml.gotmpl, celery-log.conf): the raw container line in `log` (a multiline regex parser,
 * no JSON to merge), Celery's own format, then the app logger's JSON line joined to it as a continuation. `withMetadata`:
 * the kubernetes filter found the pod (stream named after the container); without it, the input's Kube_Tag_Prefix
 * (celery.var.log.containers.) is not its tag's, no metadata is added, and the stream is fallback-stream + the tag.
 */
function tookLine(container: string, task: string, seconds: number, timestamp: number, withMetadata = true) {
    const took = `${task} took ${seconds.toFixed(4)}s`;
    const log = `2026-11-30T23:00:00.123456789Z stdout F [2026-11-30 23:00:00,123: INFO/MainProcess] ${took}\n2026-11-30T23:00:00.123456789Z stdout F ${JSON.stringify({ asctime: "2026-11-30T23:00:00", levelname: "INFO", message: took })}`;
    const pod = `${container}-5c7d8f9b4-xk2p9`;
    const file = `${pod}_notification-canada-ca_${container}-${"0123456789abcdef".repeat(4)}.log`;
    return withMetadata
        ? { timestamp, logStream: container, message: JSON.stringify({ log, kubernetes: { pod_name: pod, namespace_name: "notification-canada-ca", container_name: container } }) }
        : { timestamp, logStream: `fallback-streamnotify-celery.var.log.containers.${file}`, message: JSON.stringify({ log }) };
}
/** A container whose requests equal its limits, as the stack's guaranteed patch and GC Notify's cwagent chart set them. */
const guaranteed = (g: { container: string; cpu: string; memory: string }) => ({ name: g.container, image: "x", resources: { requests: { cpu: g.cpu, memory: g.memory }, limits: { cpu: g.cpu, memory: g.memory } } });
const node = (name: string, zone: string, cpu = "4", memory = "16Gi", taints: object[] = []) => ({
    metadata: { name, labels: { "eks.amazonaws.com/capacityType": "ON_DEMAND", "topology.kubernetes.io/zone": zone } },
    spec: { taints },
    status: { allocatable: { cpu, memory } },
});
/** GC Notify's SigNoz nodes: a managed on-demand group, so stable by label, but tainted for SigNoz alone (aws/eks/eks.tf). */
const signozNode = (name: string, zone: string) => node(name, zone, "8", "32Gi", [{ key: "dedicated", value: "signoz", effect: "NoSchedule" }]);

/** A successful task on each burst worker in the last day, well within its longest task; one without kubernetes metadata. */
function celeryLines(cfg: StackConfig) {
    return cfg.placement.burst.deployments.map((d, i) => tookLine(d.name, `task-of-${d.name}`, 0.5 + i, NOW - 7_200_000 - i * 60_000, i !== 1));
}

interface World {
    aws: FakeAwsState;
    kube: FakeKubeApiOptions;
}

/** Everything as it should be for staging, before its first up; tests change what they plant. */
function goodWorld(cfg: StackConfig): World {
    const p = cfg.placement;
    const ns = p.namespace;
    const types = approvedInstanceTypes(cfg.nodePool);
    const names = stackNames(cfg);
    const lg = cfg.alarms.logGroupName;
    const line = JSON.stringify({ log: "{\"level\":\"INFO\",\"message\":\"found provisionable pod(s)\"}", kubernetes: { namespace_name: "karpenter", container_name: "controller", pod_name: "karpenter-abc" } });
    const args = placementArgs(cfg);
    // The periodic worker's queues hide a held message for longer than its drain (4 × 600 s); the others, GC Notify's 310 s.
    const visibility = (d: { longestTaskSeconds?: number }) => String(p.burst.prefetchMultiplier * (d.longestTaskSeconds ?? p.burst.longestTaskSeconds) > 310 ? 3600 : 310);
    const sqs = Object.fromEntries(p.burst.deployments.flatMap((d) => (d.queues ?? []).map((q) => [p.burst.queuePrefix + q, { attributes: { VisibilityTimeout: visibility(d) }, messages: [] }])));
    return {
        aws: {
            account: ACCOUNT,
            clusters: { [cfg.cluster.name]: { version: "1.31", status: "ACTIVE" } },
            addons: {
                [`${cfg.cluster.name}/eks-pod-identity-agent`]: { status: "ACTIVE", addonVersion: "v1.3.4-eksbuild.1" },
                // The add-on staging's placement.nodeDaemonSets names (ebs-csi-node).
                [`${cfg.cluster.name}/aws-ebs-csi-driver`]: { status: "ACTIVE", addonVersion: "v1.37.0-eksbuild.1" },
            },
            logGroups: { [lg]: [{ timestamp: NOW - 3_600_000, message: line, logStream: "controller" }, ...celeryLines(cfg)] },
            images: [{ ImageId: cfg.nodePool.ami.id!, State: "available", Architecture: "x86_64", Name: "amazon-eks-node-al2023-x86_64-standard-1.31-v20251117" }],
            subnets: cfg.nodePool.zones.map((z, i) => ({ SubnetId: `subnet-0${i}`, AvailabilityZone: z, Tags: { "karpenter.sh/discovery": cfg.cluster.name } })),
            securityGroups: [{ GroupId: "sg-01", Tags: { "karpenter.sh/discovery": cfg.cluster.name } }],
            offerings: cfg.nodePool.zones.flatMap((zone) => types.map((type) => ({ type, zone }))),
            instanceTypes: types.map((type) => ({ type, architectures: ["x86_64"] })),
            roles: { AWSServiceRoleForEC2Spot: {}, "eks-worker-role": {}, [names.controllerRole]: { [STACK_TAG]: "staging" } },
            policies: {},
            queues: {},
            sqs,
            rules: {},
            topics: {
                [WARNING_TOPIC]: { attributes: { KmsMasterKeyId: "alias/notify-alarms" }, subscriptions: [`${WARNING_TOPIC}:0b1c`] },
                [CRITICAL_TOPIC]: { attributes: {}, subscriptions: [`${CRITICAL_TOPIC}:9f2e`, "PendingConfirmation"] },
            },
            keys: { "alias/notify-alarms": { KeyId: "key-1", KeyManager: "CUSTOMER", policy: CLOUDWATCH_KEY_POLICY }, "key-1": { KeyId: "key-1", KeyManager: "CUSTOMER", policy: CLOUDWATCH_KEY_POLICY } },
        },
        kube: {
            nodes: [node("stable-a", "ca-central-1a"), node("stable-b", "ca-central-1b"), node("stable-d", "ca-central-1d")],
            pods: [{ metadata: { name: "notify-api-1", namespace: ns }, spec: { nodeName: "stable-a", containers: [container("app", "1", "2Gi")] }, status: { phase: "Running" } }],
            collections: {
                // This stack's releases (a later up), over a helmfile revision they superseded.
                [`/api/v1/namespaces/karpenter/secrets`]: [
                    helmSecret("karpenter", "karpenter", 1, "karpenter", "1.3.2", { settings: { interruptionQueue: "Karpenter-notification-canada-ca-staging" } }, "superseded"),
                    helmSecret("karpenter", "karpenter", 2, "karpenter", "1.14.1", { settings: { interruptionQueue: names.queue } }),
                    helmSecret("karpenter-crd", "karpenter", 1, "karpenter-crd", "1.14.1", {}),
                ],
                [`/api/v1/namespaces/kube-system/secrets`]: [helmSecret("nidhogg", "kube-system", 3, "nidhogg", "0.6.6", nidhoggValues(placementArgs(cfg)))],
                "/apis/scheduling.k8s.io/v1/priorityclasses": [{ metadata: meta("high-priority"), value: 1000000, preemptionPolicy: "PreemptLowerPriority" }],
                "/api/v1/namespaces": [{ metadata: { name: ns, labels: { "kubernetes.io/metadata.name": ns } } }, { metadata: { name: "kube-system", labels: { "kubernetes.io/metadata.name": "kube-system" } } }],
                "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": [],
                // This stack's own budget (a later up): it selects the burst pods too, and is no second budget.
                [`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`]: [
                    { metadata: meta(burstBudgetName(p.burst.deployments[0].name), ns, ["pulumi-kubernetes-1a2b3c4d"]), spec: { minAvailable: 2, selector: { matchLabels: { [DEPLOYMENT_LABEL]: p.burst.deployments[0].name } } } },
                ],
                "/apis/policy/v1/namespaces/kube-system/poddisruptionbudgets": [],
                [`/apis/apps/v1/namespaces/${ns}/deployments`]: [...args.burst.deployments.map((d) => burstDeployment(d, ns)), ...p.stableDeployments.map((d) => deployment(d, ns))],
                ...Object.fromEntries(
                    [...new Set(p.nodeDaemonSets.map((d) => d.namespace))].map((dsNs) => [
                        `/apis/apps/v1/namespaces/${dsNs}/daemonsets`,
                        p.nodeDaemonSets
                            .filter((d) => d.namespace === dsNs)
                            .map((d) => ({ metadata: meta(d.name, dsNs), spec: { template: { spec: { containers: [d.guaranteed ? guaranteed(d.guaranteed) : container(d.name)] } } } })),
                    ]),
                ),
            },
        },
    };
}

interface RunOptions {
    awsDown?: boolean;
    kubeDown?: boolean;
    /** How long the API server has to answer preflight's first request (the fake's unresponsive mode never does). */
    reachTimeoutMs?: number;
    /** The kubeconfig to hand preflight, from the fake's own. */
    kubeConfig?: (fake: KubeConfig) => KubeConfig;
    /** Changes to the stack file (staging's with GC Notify's topics); `null`: staging's own file, as it is. */
    stackFile?: ((yaml: string) => string) | null;
    /** How task-durations polls its query: at once, with a deadline of a few seconds, unless a test says otherwise. */
    taskQuery?: { pollMs: number; deadlineMs: number };
}

async function run(world: World, argv = ["--stack", "staging", "--context", "staging"], opts: RunOptions = {}) {
    const dir = opts.stackFile === null ? PROJECT_DIR : stackDir(opts.stackFile);
    const aws = await new FakeAwsApi(world.aws).start();
    const kube = await new FakeKubeApi(new FakeClock(NOW), world.kube).start();
    try {
        if (opts.awsDown) await aws.stop();
        if (opts.kubeDown) await kube.stop();
        const kubeConfig = () => (opts.kubeConfig ?? ((kc: KubeConfig) => kc))(kube.kubeConfig());
        const r = await preflight(argv, { dir, aws: aws.clientConfig(), kubeConfig, now: () => NOW, reachTimeoutMs: opts.reachTimeoutMs, taskQuery: opts.taskQuery ?? { pollMs: 1, deadlineMs: 5000 } });
        return { ...r, awsRequests: aws.requests, queries: Object.values(aws.queries) };
    } finally {
        if (!opts.awsDown) await aws.stop();
        if (!opts.kubeDown) await kube.stop();
        if (opts.stackFile) fs.rmSync(dir, { recursive: true, force: true });
    }
}

type RunResult = Awaited<ReturnType<typeof run>>;
const sharedRuns = new Map<string, Promise<RunResult>>();
/**
 * A run of staging's good world that several tests only read (the same world, flags and options give the same
 * report and the same requests): made once, on first use.
 */
function sharedRun(cfg: StackConfig, argv?: string[], opts: Pick<RunOptions, "kubeDown" | "stackFile"> & { stackFile?: null } = {}): Promise<RunResult> {
    const key = JSON.stringify([argv, opts]);
    if (!sharedRuns.has(key)) sharedRuns.set(key, run(goodWorld(cfg), argv, opts));
    return sharedRuns.get(key)!;
}

/** The good world's AWS facts, read once through the real SDK clients from the fake (every read preflight makes by default). */
let goodAwsFacts: Promise<AwsFacts> | undefined;
function awsFactsOfGoodWorld(cfg: StackConfig): Promise<AwsFacts> {
    goodAwsFacts ??= (async () => {
        const api = await new FakeAwsApi(goodWorld(cfg).aws).start();
        try {
            const reads = { config: api.clientConfig(), deadlines: deadlinesOf() };
            const [facts, queues, taskDurations] = await Promise.all([
                gatherAws(cfg, reads, NOW),
                gatherQueues(cfg, reads),
                gatherTaskDurations(cfg, reads, NOW, TASK_WINDOW_HOURS, { pollMs: 1, deadlineMs: 5000 }),
            ]);
            return { ...facts, queues, taskDurations };
        } finally {
            await api.stop();
        }
    })();
    return goodAwsFacts;
}

/**
 * preflight's report (every check, context staging) on a world that differs from the good one in the cluster only:
 * the cluster's facts read from `world` through the real client and the fake API, the AWS facts the good world's,
 * read once. For tests of the checks on what the cluster holds; `run` reads both halves.
 */
async function runOnCluster(cfg: StackConfig, world: World): Promise<{ exitCode: number; output: string }> {
    expect(world.aws, "runOnCluster's world differs from the good one in the cluster only").to.deep.equal(goodWorld(cfg).aws);
    const aws = await awsFactsOfGoodWorld(cfg);
    const kube = await new FakeKubeApi(new FakeClock(NOW), world.kube).start();
    try {
        const kc = kube.kubeConfig();
        expect(useContext(kc, "staging", cfg.cluster, aws)).to.equal(undefined);
        const facts = await gatherKube(cfg, listerOf(kc, deadlinesOf()));
        return report(cfg, "staging", aws.account, preflightChecks(cfg, aws, facts));
    } finally {
        await kube.stop();
    }
}

/** Each stack's program, built once under the recording mocks: the tests here only read its resources and calls. */
const builtStacks = new Map<string, ReturnType<typeof buildStack>>();
function builtStack(stack: string): ReturnType<typeof buildStack> {
    if (!builtStacks.has(stack)) builtStacks.set(stack, buildStack(stack));
    return builtStacks.get(stack)!;
}

const linesOf = (output: string, status: string) => output.split("\n").filter((l) => l.startsWith(status.padEnd(4) + "  "));
const checkOf = (l: string) => l.slice(6).trim().split(/\s+/)[0];
/** The checks a report names with a status ("NOT RUN" included), in order, without repeats. */
const checksWith = (output: string, status: string) => [...new Set(linesOf(output, status).map((l) => l.slice(status.padEnd(4).length + 2).trim().split(/\s+/)[0]))];
/** The checks that need each half of the reads (CHECK_NEEDS), in report order. */
const needing = (half: "aws" | "cluster" | "both") => CHECKS.map(([id]) => id).filter((id) => CHECK_NEEDS[id] === half);
/** The one "Could not check:" line of a report that exits 3. */
function couldNotCheck(r: { exitCode: number; output: string }): string {
    expect(r.exitCode, r.output).to.equal(3);
    const lines = r.output.split("\n").filter((l) => l.startsWith("Could not check: "));
    expect(lines, r.output).to.have.length(1);
    return lines[0];
}

describe("npm run preflight", function () {
    this.timeout(20000);
    let cfg: StackConfig;
    before(() => {
        cfg = parseStackConfig("staging", configSections(readStackConfig("staging", stackDir()), PROJECT));
    });

    it("--help lists every check", () => {
        const help = helpText(PREFLIGHT);
        for (const [id, what] of CHECKS) expect(help).to.include(`${id}`).and.to.include(what);
    });

    it("passes every check on a clean account and cluster (exit 0), one line per check, reading each service through its own protocol", async () => {
        const r = await sharedRun(cfg);
        expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([]);
        expect(linesOf(r.output, "WARN"), r.output).to.deep.equal([]);
        const okChecks = new Set(linesOf(r.output, "OK").map(checkOf));
        expect([...okChecks]).to.have.members(CHECKS.map(([id]) => id));
        expect(r.exitCode).to.equal(0);
        expect(r.output.split("\n").at(-1)).to.equal("OK: no check failed");
        // This stack's own releases (revision 2 of karpenter supersedes the helmfile's 1.3.2), the adopted class.
        expect(r.output).to.include("none of karpenter-crd, karpenter, karpenter-nodepool, priority-classes, nidhogg is installed by anything but this stack");
        expect(r.output).to.include("high-priority exists with value 1000000 and PreemptLowerPriority: the stack adopts it");
        expect(r.output).to.match(/OK    alarm-topics +warning arn:aws:sns:ca-central-1:123456789012:alert-warning: key alias\/notify-alarms lets CloudWatch publish/);
        expect(r.output).to.include("critical arn:aws:sns:ca-central-1:123456789012:alert-critical: 1 confirmed subscription");
        expect(r.awsRequests).to.include.members(["sts:GetCallerIdentity", "eks:DescribeCluster", "ec2:DescribeInstanceTypeOfferings", "iam:GetPolicy", "sqs:GetQueueUrl", "events:DescribeRule", "logs:FilterLogEvents", "kms:GetKeyPolicy", "sns:ListSubscriptionsByTopic"]);
    });

    it("names the runbook's Terraform add-on, not aws eks create-addon, when the Pod Identity agent is missing (MW2-F5)", async () => {
        const w = goodWorld(cfg);
        delete w.aws.addons[`${cfg.cluster.name}/eks-pod-identity-agent`];
        const r = await run(w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([
            `FAIL  pod-identity-agent        no eks-pod-identity-agent add-on: the controller would get no AWS credentials; add it where the cluster's other add-ons are managed (GC Notify: resource "aws_eks_addon" "pod_identity_agent" in notification-terraform aws/eks/eks.tf, applied by its CI; docs/migration.md), not with aws eks create-addon, which that Terraform would then fail to create again (an add-on made by hand must be imported: terraform import aws_eks_addon.pod_identity_agent ${cfg.cluster.name}:eks-pod-identity-agent)`,
        ]);
    });

    it("warns where up works but something will bite later (exit 0)", async () => {
        const w = goodWorld(cfg);
        w.aws.clusters[cfg.cluster.name].status = "UPDATING";
        w.aws.addons[`${cfg.cluster.name}/eks-pod-identity-agent`].status = "CREATING";
        w.aws.logGroups[cfg.alarms.logGroupName] = [{ timestamp: NOW - 2 * 86_400_000, message: JSON.stringify({ kubernetes: { namespace_name: "karpenter", container_name: "controller" } }) }, ...celeryLines(cfg)];
        w.aws.offerings = w.aws.offerings.filter((o) => !(o.zone === "ca-central-1d" && o.type === "c7a.xlarge"));
        // A DaemonSet EKS manages that the config lists as a patched agent rather than as an add-on.
        const ds = (w.kube.collections!["/apis/apps/v1/namespaces/kube-system/daemonsets"] as any[]).find((d) => d.metadata.name === "secrets-store-csi-driver");
        ds.metadata.managedFields = managed("eks", "kube-controller-manager");
        const r = await run(w);
        expect(r.exitCode, r.output).to.equal(0);
        expect(linesOf(r.output, "WARN")).to.deep.equal([
            "WARN  cluster-version           Kubernetes 1.31, but the cluster is UPDATING: wait until it is ACTIVE before pulumi up",
            "WARN  pod-identity-agent        eks-pod-identity-agent v1.3.4-eksbuild.1 is CREATING, not ACTIVE: wait for it or fix the add-on",
            "WARN  daemonset-managers        kube-system/secrets-store-csi-driver is an EKS add-on (manager eks): EKS restores its fields at the next add-on update; set tolerations and priorityClassName in the add-on's configurationValues and mark it addOn in placement.nodeDaemonSets",
            "WARN  log-group                 /aws/containerinsights/notification-canada-ca-staging-eks-cluster/application has no line from the karpenter/controller container in the last day: the failure and heartbeat alarms would count nothing (the heartbeat fires); check that Fluent Bit ships the karpenter namespace",
            "WARN  instance-types            ca-central-1d: c7a.xlarge not offered (the others are)",
        ]);
        expect(r.output.split("\n").at(-1)).to.equal("OK: no check failed (5 warnings)");
    });

    it("FAILs on this stack's release whose latest revision is not deployed (a stopped up's pending-*, a failed upgrade), from Helm's release Secrets, naming the rollback: no up clears it (EN2-F1, EN2-F5)", async () => {
        const w = goodWorld(cfg);
        const kubeSystem = w.kube.collections!["/api/v1/namespaces/kube-system/secrets"] as any[];
        kubeSystem.push(helmSecret("nidhogg", "kube-system", 4, "nidhogg", "0.6.6", nidhoggValues(placementArgs(cfg)), "pending-upgrade"));
        const karpenter = w.kube.collections!["/api/v1/namespaces/karpenter/secrets"] as any[];
        const crd = karpenter.map((x) => decodeRelease(x as any)).filter((x) => x?.name === "karpenter-crd").sort((a, b) => b!.revision - a!.revision)[0]!;
        karpenter.push(helmSecret("karpenter-crd", "karpenter", crd.revision + 1, "karpenter-crd", crd.chartVersion, {}, "failed", releaseDescription(PROJECT, "staging")));
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode, r.output).to.equal(1);
        expect(linesOf(r.output, "FAIL")).to.deep.equal([
            `FAIL  helm-releases             karpenter/karpenter-crd revision ${crd.revision + 1} is failed, not deployed, and no up clears that: helm history karpenter-crd -n karpenter, then helm rollback karpenter-crd <last deployed revision> -n karpenter (docs/guardrails.md, "A stopped up"), then the up`,
            `FAIL  helm-releases             kube-system/nidhogg revision 4 is pending-upgrade, not deployed, and no up clears that: helm history nidhogg -n kube-system, then helm rollback nidhogg <last deployed revision> -n kube-system (docs/guardrails.md, "A stopped up"), then the up`,
        ]);
        // An earlier revision that failed, under a later deployed one (an atomic rollback's), is no problem.
        const rolledBack = goodWorld(cfg);
        const ks = rolledBack.kube.collections!["/api/v1/namespaces/kube-system/secrets"] as any[];
        ks.push(helmSecret("nidhogg", "kube-system", 4, "nidhogg", "0.6.6", nidhoggValues(placementArgs(cfg)), "failed"));
        ks.push(helmSecret("nidhogg", "kube-system", 5, "nidhogg", "0.6.6", nidhoggValues(placementArgs(cfg)), "deployed"));
        expect(linesOf((await runOnCluster(cfg, rolledBack)).output, "FAIL")).to.deep.equal([]);
    });

    it("prints one FAIL per planted problem and exits 1 when everything is wrong", async () => {
        const w = goodWorld(cfg);
        const names = stackNames(cfg);
        const ns = cfg.placement.namespace;
        const c = w.kube.collections!;
        w.aws.clusters[cfg.cluster.name].version = "1.29"; // 1
        w.aws.addons = {}; // 2, 25 (the add-on config names for ebs-csi-node)
        c["/api/v1/namespaces/karpenter/secrets"] = [
            helmSecret("karpenter", "karpenter", 4, "karpenter", "1.3.2", { settings: { interruptionQueue: "Karpenter-notification-canada-ca-staging" } }), // 3
        ];
        c["/api/v1/namespaces/kube-system/secrets"] = [helmSecret("priority-classes", "kube-system", 1, "priority-class", "0.1.1", {})]; // 4
        c["/apis/scheduling.k8s.io/v1/priorityclasses"] = [{ metadata: meta("celery"), value: 100, preemptionPolicy: "PreemptLowerPriority" }]; // 5
        c[`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`] = [{ metadata: meta("notify-celery-core-tasks-burst", ns), spec: { minAvailable: 2, selector: { matchLabels: { app: "notify-celery-core-tasks-burst" } } } }]; // 6
        c["/apis/karpenter.sh/v1/nodepools"] = [{ metadata: meta("notify-karpenter") }]; // 7
        c[`/apis/apps/v1/namespaces/${ns}/deployments`] = (c[`/apis/apps/v1/namespaces/${ns}/deployments`] as any[]).filter((d) => d.metadata.name !== "notify-admin"); // 8
        (c["/apis/apps/v1/namespaces/amazon-cloudwatch/daemonsets"] as any[]).find((d) => d.metadata.name === "aws-cloudwatch-agent").spec.template.spec.containers = [container("agent")]; // 9
        w.aws.logGroups = {}; // 10
        w.aws.images[0].Architecture = "arm64"; // 11
        w.aws.subnets = w.aws.subnets.filter((s) => s.AvailabilityZone !== "ca-central-1d"); // 12
        w.aws.securityGroups = []; // 13
        w.aws.instanceTypes = w.aws.instanceTypes.filter((t) => t.type !== "m7a.xlarge"); // 14
        w.aws.offerings = w.aws.offerings.filter((o) => o.zone !== "ca-central-1b"); // 15
        delete w.aws.roles.AWSServiceRoleForEC2Spot; // 16
        w.aws.roles[names.controllerRole] = {}; // 17
        delete w.aws.roles["eks-worker-role"]; // 24
        w.aws.queues[names.queue] = { [STACK_TAG]: "production" }; // 18
        w.aws.topics[WARNING_TOPIC] = { attributes: { KmsMasterKeyId: "alias/aws/sns" }, subscriptions: ["PendingConfirmation"] }; // 19, 20
        w.aws.keys["alias/aws/sns"] = { KeyId: "aws-key", KeyManager: "AWS", policy: "{}" };
        delete w.aws.topics[CRITICAL_TOPIC]; // 21
        w.kube.nodes = [node("stable-a", "ca-central-1a", "1", "2Gi")]; // 22, 23
        const r = await run(w);
        expect(r.exitCode).to.equal(1);
        const fails = linesOf(r.output, "FAIL");
        expect(fails.map(checkOf), r.output).to.deep.equal([
            "cluster-version",
            "pod-identity-agent",
            "helm-releases",
            "helm-releases",
            "priority-classes",
            "owned-objects",
            "owned-objects",
            "patch-targets",
            "patch-targets",
            "daemonset-managers",
            "log-group",
            "ami",
            "subnets",
            "security-groups",
            "instance-types",
            "instance-types",
            "spot-service-linked-role",
            "aws-names",
            "aws-names",
            "aws-names",
            "alarm-topics",
            "alarm-topics",
            "alarm-topics",
            "stable-nodes",
        ]);
        const text = fails.join("\n");
        for (const expected of [
            "Kubernetes 1.29: the admission policy needs ValidatingAdmissionPolicy v1",
            'karpenter/karpenter (chart karpenter 1.3.2, revision 4) is not this stack\'s: remove the "karpenter" entry from GC Notify\'s helmfile for staging and production (a template condition around it in helmfile/helmfile.yaml.gotmpl)',
            'kube-system/priority-classes (chart priority-class 0.1.1, revision 1) is not this stack\'s: remove the "priority-classes" entry',
            "celery exists with value 100 and PreemptLowerPriority, the config wants 10 and PreemptLowerPriority; both are immutable",
            "PodDisruptionBudget notification-canada-ca/notify-celery-core-tasks-burst selects the pods of burst Deployment notify-celery-core-tasks-burst beside this stack's notify-celery-core-tasks-burst-ephemeral: the eviction API refuses to evict a pod under two budgets",
            "NodePool notify-karpenter exists, managed by helm",
            "Deployment notification-canada-ca/notify-admin does not exist",
            "DaemonSet amazon-cloudwatch/aws-cloudwatch-agent has no container cloudwatch-agent (it has agent)",
            "kube-system/ebs-csi-node: placement.nodeDaemonSets calls it EKS add-on aws-ebs-csi-driver, but the cluster has no such add-on (it has none)",
            "/aws/containerinsights/notification-canada-ca-staging-eks-cluster/application does not exist",
            "ami-031fc151e660ba74f is arm64, but the NodePool requires amd64",
            "ca-central-1d: no subnet tagged karpenter.sh/discovery=notification-canada-ca-staging-eks-cluster",
            "no security group tagged karpenter.sh/discovery=notification-canada-ca-staging-eks-cluster",
            "m7a.xlarge unknown to EC2 in ca-central-1",
            "ca-central-1b: none of the approved types is offered",
            "AWSServiceRoleForEC2Spot does not exist: spot launches fail",
            "IAM role eks-worker-role (controller.existingNodeRoleName) does not exist",
            `IAM role ${names.controllerRole} exists and is untagged (no ${STACK_TAG})`,
            `SQS queue ${names.queue} exists and is stack production's`,
            `warning ${WARNING_TOPIC} has no confirmed subscription (1 pending confirmation)`,
            `warning ${WARNING_TOPIC} is encrypted with an AWS managed key (alias/aws/sns)`,
            `critical ${CRITICAL_TOPIC} does not exist`,
            "1 stable node (eks.amazonaws.com/capacityType=ON_DEMAND) for 2 controller replicas: the chart puts each replica on its own node",
        ]) {
            expect(text).to.include(expected);
        }
        // helmfile uninstalls a release marked installed: false at its next apply (at merge): never the advice.
        expect(r.output).to.not.include("installed: false");
        // Room for the first up's surge is advice, not a gate: after it the controller's pods already count as used.
        expect(linesOf(r.output, "WARN").join("\n")).to.include("free 0 CPU and 0 GiB, the rollout's surge and the controller need");
        // Without the log group there is no evidence of task durations: a warning, the log-group FAIL says the rest.
        expect(linesOf(r.output, "WARN")).to.include("WARN  task-durations            /aws/containerinsights/notification-canada-ca-staging-eks-cluster/application does not exist, so no task durations were read (log-group says more)");
        expect(r.output.split("\n").at(-1)).to.match(/^FAILED: 24 problems, 2 warnings/);
    });

    it("passes a spot service-linked role this stack created, and warns (not fails) on stable nodes in one zone", async () => {
        const w = goodWorld(cfg);
        w.aws.roles.AWSServiceRoleForEC2Spot = { [STACK_TAG]: "staging" };
        w.kube.nodes = [node("stable-a", "ca-central-1a", "8", "32Gi"), node("stable-b", "ca-central-1a", "8", "32Gi")];
        const creates = (yaml: string) => yaml.replace("createSpotServiceLinkedRole: false", "createSpotServiceLinkedRole: true");
        const r = await run(w, undefined, { stackFile: creates });
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("OK    spot-service-linked-role  AWSServiceRoleForEC2Spot exists, created by this stack");
        expect(linesOf(r.output, "WARN")).to.include(
            "WARN  stable-nodes              2 stable nodes (eks.amazonaws.com/capacityType=ON_DEMAND) in 1 zone: both controller replicas share a zone, so a zone outage stops Karpenter; add stable nodes in a second zone",
        );
        w.aws.roles.AWSServiceRoleForEC2Spot = {};
        expect(linesOf((await run(w, undefined, { stackFile: creates })).output, "FAIL")).to.deep.equal([
            "FAIL  spot-service-linked-role  AWSServiceRoleForEC2Spot exists and is not this stack's, and controller.createSpotServiceLinkedRole is true: creating it again fails; set it to false",
        ]);
    });

    it("lists the mutating webhooks that match pod updates in the burst namespace, which would make the annotator's policy refuse its patches (issue 22, KS-F1)", async () => {
        const w = goodWorld(cfg);
        const webhook = (name: string, rule: object, extra: object = {}) => ({ name, rules: [{ apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], operations: ["CREATE", "UPDATE"], ...rule }], ...extra });
        w.kube.collections!["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"] = [
            {
                metadata: { name: "istio-sidecar-injector" },
                webhooks: [
                    webhook("all.pods", {}),
                    webhook("create.only", { operations: ["CREATE"] }),
                    webhook("other.namespaces", {}, { namespaceSelector: { matchLabels: { "istio-injection": "enabled" } } }),
                    webhook("some.pods", { resources: ["*"] }, { objectSelector: { matchLabels: { inject: "true" } } }),
                    webhook("status.only", { resources: ["pods/status"] }),
                ],
            },
        ];
        const r = await runOnCluster(cfg, w);
        const lines = r.output.split("\n").filter((l) => l.includes("mutating-webhooks"));
        const annotator = "system:serviceaccount:karpenter:burst-scale-down-order";
        const tail = `if it changes the scale-down annotator's patch, the annotator's admission policy refuses every patch and the order stops (its alarm fires): exclude ${annotator} with a matchCondition, or leave pods' updates out of its rules`;
        expect(lines).to.deep.equal([
            `WARN  mutating-webhooks         MutatingWebhookConfiguration istio-sidecar-injector, webhook all.pods: matches UPDATE of pods in notification-canada-ca; ${tail}`,
            `WARN  mutating-webhooks         MutatingWebhookConfiguration istio-sidecar-injector, webhook some.pods: matches UPDATE of pods in notification-canada-ca (an objectSelector, not evaluated here); ${tail}`,
        ]);
        expect(r.exitCode, r.output).to.equal(0);
        // None: an OK line that says how many were read; without the scale-down order there is nothing to protect.
        const clean = await sharedRun(cfg);
        expect(clean.output).to.include("OK    mutating-webhooks         no mutating webhook matches UPDATE of pods in notification-canada-ca (0 configurations read)");
        const off = await run(w, undefined, { stackFile: (y) => y.replace(/\n      scaleDownOrder: \{[^}]*\}/, "") });
        expect(off.output).to.include("OK    mutating-webhooks         not needed: placement.burst.scaleDownOrder is off (no pod patches to protect)");
    });

    it("leaves tainted stable nodes (SigNoz's) out of the controller's nodes, the zones and the room, and says so", async () => {
        const w = goodWorld(cfg);
        w.kube.nodes = [node("stable-a", "ca-central-1a", "2", "8Gi"), node("stable-b", "ca-central-1a", "1", "4Gi"), signozNode("signoz-1", "ca-central-1b"), signozNode("signoz-2", "ca-central-1d")];
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode, r.output).to.equal(0);
        expect(linesOf(r.output, "WARN")).to.deep.equal([
            "WARN  stable-nodes              2 stable nodes (eks.amazonaws.com/capacityType=ON_DEMAND) in 1 zone: both controller replicas share a zone, so a zone outage stops Karpenter; add stable nodes in a second zone; 2 tainted nodes left out (dedicated=signoz:NoSchedule): only pods that tolerate the taint run there",
            "WARN  stable-nodes              free 2 CPU and 10 GiB, the rollout's surge and the controller need 3.2 CPU and 3.5 GiB: on a first up, surge pods would stay Pending and the up time out; add a stable node (or lower maxSurge) first",
        ]);
        w.kube.nodes = [node("stable-a", "ca-central-1a"), signozNode("signoz-1", "ca-central-1b"), signozNode("signoz-2", "ca-central-1d")];
        expect(linesOf((await runOnCluster(cfg, w)).output, "FAIL")).to.deep.equal([
            "FAIL  stable-nodes              1 stable node (eks.amazonaws.com/capacityType=ON_DEMAND) for 2 controller replicas: the chart puts each replica on its own node (required anti-affinity on kubernetes.io/hostname), so a replica stays Pending; add stable nodes; 2 tainted nodes left out (dedicated=signoz:NoSchedule): only pods that tolerate the taint run there",
        ]);
    });

    it("fails an agent that config calls an EKS add-on when the cluster has no such add-on, reading every page of ListAddons", async () => {
        const w = goodWorld(cfg);
        w.aws.addonPageSize = 1; // aws-ebs-csi-driver is on the second page
        const paged = await run(w);
        expect(paged.exitCode, paged.output).to.equal(0);
        expect(paged.output).to.include("OK    daemonset-managers        kube-system/ebs-csi-node: EKS add-on aws-ebs-csi-driver, not patched");
        expect(paged.awsRequests.filter((q) => q === "eks:ListAddons")).to.have.length(2);
        delete w.aws.addons[`${cfg.cluster.name}/aws-ebs-csi-driver`];
        const r = await run(w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "FAIL")).to.deep.equal([
            "FAIL  daemonset-managers        kube-system/ebs-csi-node: placement.nodeDaemonSets calls it EKS add-on aws-ebs-csi-driver, but the cluster has no such add-on (it has eks-pod-identity-agent): the stack does not patch it, so nothing puts its tolerations on it; fix addOn, or remove it so the stack patches the DaemonSet",
        ]);
    });

    it("fails a guaranteed container that is not its DaemonSet's first (the patch's list is compared by index)", async () => {
        const w = goodWorld(cfg);
        const agent = (w.kube.collections!["/apis/apps/v1/namespaces/amazon-cloudwatch/daemonsets"] as any[]).find((d) => d.metadata.name === "aws-cloudwatch-agent");
        agent.spec.template.spec.containers = [container("config-reloader"), container("cloudwatch-agent")];
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "FAIL")).to.deep.equal([
            "FAIL  patch-targets             DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: guaranteed.container cloudwatch-agent is container 2 of 2 (index 1, after config-reloader): pulumi-kubernetes compares patched lists by index, so the patch would differ at every preview and re-apply at every up; remove guaranteed from placement.nodeDaemonSets and set the resources in the chart's values",
        ]);
    });

    it("fails a burst Deployment whose chart still selects a capacity type, naming the values key that removes it", async () => {
        const w = goodWorld(cfg);
        const ns = cfg.placement.namespace;
        const burst = (w.kube.collections![`/apis/apps/v1/namespaces/${ns}/deployments`] as any[]).find((d) => d.metadata.name === "notify-celery-email-send-burst");
        burst.spec.template.spec.nodeSelector = { "karpenter.sh/capacity-type": "spot", "kubernetes.io/os": "linux" };
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "FAIL")).to.deep.equal([
            // email-send-burst is the chart's nodes.email-burst (charts/notify-celery/values.yaml: name: email-send-burst).
            "FAIL  chart-fields              Deployment notification-canada-ca/notify-celery-email-send-burst: its pod template still has nodeSelector karpenter.sh/capacity-type: spot, which the stack's patch leaves to the chart (it sets no nodeSelector: setting one would replace the atomic map, and the chart's next release would put the key back), so burst pods can use spot nodes only; set nodes.email-burst.deployment.nodeSelector: {karpenter.sh/capacity-type: null} in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml sets it)",
        ]);
        // Another key of the chart's selector is no concern of the stack's.
        burst.spec.template.spec.nodeSelector = { "kubernetes.io/os": "linux" };
        expect((await runOnCluster(cfg, w)).output).to.include("OK    chart-fields");
    });

    it("fails every other budget whose selector selects a burst Deployment's pods, and names the chart's switch for the chart's", async () => {
        const w = goodWorld(cfg);
        const ns = cfg.placement.namespace;
        const pdbs = w.kube.collections![`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`] as any[];
        const budget = (name: string, selector: object) => ({ metadata: meta(name, ns), spec: { minAvailable: 1, selector } });
        pdbs.push(
            // The notify-celery chart's (templates/pdb.yaml), named after the Deployment.
            budget("notify-celery-periodic-burst", { matchLabels: { app: "notify-celery-periodic-burst" } }),
            // Someone's budget over every burst pod, by the label the stack's patch adds.
            budget("celery-burst-guard", { matchExpressions: [{ key: "notification-canada-ca/celery-burst", operator: "Exists" }] }),
            // Over stable pods only, and one that selects nothing (a null selector): no concern.
            budget("notify-celery-periodic-static", { matchLabels: { app: "notify-celery-periodic-static" } }),
            { metadata: meta("empty", ns), spec: { minAvailable: 1 } },
        );
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode).to.equal(1);
        const fails = linesOf(r.output, "FAIL");
        expect(fails).to.include(
            "FAIL  owned-objects             PodDisruptionBudget notification-canada-ca/notify-celery-periodic-burst selects the pods of burst Deployment notify-celery-periodic-burst beside this stack's notify-celery-periodic-burst-ephemeral: the eviction API refuses to evict a pod under two budgets, so node drains stall; set nodes.periodic-burst.pdb.pdbEnabled: false in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml sets it)",
        );
        expect(fails).to.include(
            "FAIL  owned-objects             PodDisruptionBudget notification-canada-ca/celery-burst-guard selects the pods of burst Deployment notify-celery-core-tasks-burst beside this stack's notify-celery-core-tasks-burst-ephemeral: the eviction API refuses to evict a pod under two budgets, so node drains stall; delete it, or narrow its selector to other pods",
        );
        // One line per burst Deployment under the guard (five), and one for the chart's budget; the stack's own budget is none.
        expect(fails.filter((l) => l.includes("celery-burst-guard"))).to.have.length(cfg.placement.burst.deployments.length);
        expect(fails).to.have.length(cfg.placement.burst.deployments.length + 1);
    });

    it("warns on each patched field a chart sets otherwise live, and fails a waited-for agent that does not tolerate new nodes' taints", async () => {
        const w = goodWorld(cfg);
        const ns = cfg.placement.namespace;
        const c = w.kube.collections!;
        const find = (list: string, name: string) => (c[list] as any[]).find((o) => o.metadata.name === name);
        // What GC Notify's charts render (staging, notification-manifests 609853e2): the nightly worker's own class...
        find(`/apis/apps/v1/namespaces/${ns}/deployments`, "notify-celery-nightly-burst").spec.template.spec.priorityClassName = "celery";
        // ...and fluent-bit's explicit tolerations, without the ephemeral taint (fb-agent values, nidhogg's old key).
        find("/apis/apps/v1/namespaces/amazon-cloudwatch/daemonsets", "fb-agent-fluent-bit").spec.template.spec.tolerations = [
            { key: "nidhogg.uswitch.com/amazon-cloudwatch.fb-agent-fluent-bit", operator: "Exists", effect: "NoSchedule" },
        ];
        const r = await runOnCluster(cfg, w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "WARN")).to.deep.equal([
            `WARN  chart-fields              Deployment ${ns}/notify-celery-nightly-burst: Helm's chart sets priorityClassName = "celery"; the stack sets "high-priority", and each release of the chart puts its value back: add plan-out/staging/gc-notify-values/notify-celery.yaml to GC Notify's notify-celery release (it sets nodes.nightly-burst.deployment.priorityClassName)`,
        ]);
        expect(linesOf(r.output, "FAIL")).to.deep.equal([
            `FAIL  chart-fields              DaemonSet amazon-cloudwatch/fb-agent-fluent-bit: Helm's chart sets tolerations = [{"effect":"NoSchedule","key":"nidhogg.uswitch.com/amazon-cloudwatch.fb-agent-fluent-bit","operator":"Exists"}]; the stack sets a list of 5: new ephemeral nodes keep a startup taint until this agent runs there, and it does not tolerate them, so no burst pod starts; add plan-out/staging/gc-notify-values/fb-agent.yaml to GC Notify's fb-agent release (it sets tolerations)`,
        ]);
        // Fields the charts do not set live (before the first up: no tolerations on burst pods) are no difference.
        expect(r.output).to.not.match(/chart-fields .*notify-celery-core-tasks-burst/);
    });

    describe("the burst workers' shutdown, live (issue 27): celery-shutdown, queue-visibility, task-durations", () => {
        const NS = "notification-canada-ca";
        const EMAIL = "notify-celery-email-send-burst";
        const burst = (w: World, name: string) => (w.kube.collections![`/apis/apps/v1/namespaces/${NS}/deployments`] as any[]).find((d) => d.metadata.name === name);
        const worker = (w: World, name: string) => burst(w, name).spec.template.spec;
        const lineOf = (output: string, check: string, status = "") => output.split("\n").filter((l) => l.includes(`  ${check.padEnd(25)}`) && l.startsWith(status));
        const HANDOVER = "plan-out/staging/gc-notify-handover/celery-shutdown.md and plan-out/staging/gc-notify-values/notify-celery.yaml (nodes.email-burst.deployment.preStopCommand, nodes.email-burst.deployment.terminationGracePeriodSeconds)";

        describe("celery-shutdown", () => {
            it("OK: each burst worker has the program's hook, its SIGKILL 5 s before its grace ends, and the grace it needs", async () => {
                const r = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "celery-shutdown"]);
                expect(r.exitCode, r.output).to.equal(0);
                expect(lineOf(r.output, "celery-shutdown", "OK")).to.have.length(cfg.placement.burst.deployments.length);
                expect(r.output).to.include(`OK    celery-shutdown           Deployment ${NS}/${EMAIL}: the program's hook with its SIGKILL at 95 s and a grace of 100 s: a worker finishes the tasks it holds before its node goes`);
                // The periodic worker's own longest task (600 s): (4 + 1) × 600 + 10.
                expect(r.output).to.include(`Deployment ${NS}/notify-celery-periodic-burst: the program's hook with its SIGKILL at 3005 s and a grace of 3010 s`);
                // A longer grace, with the hook 5 s before its end, lets the worker finish too.
                const w = goodWorld(cfg);
                Object.assign(worker(w, EMAIL), { terminationGracePeriodSeconds: 120 });
                worker(w, EMAIL).containers[0].lifecycle.preStop = celeryPreStop(120);
                expect((await runOnCluster(cfg, w)).output).to.include(`OK    celery-shutdown           Deployment ${NS}/${EMAIL}: the program's hook with its SIGKILL at 115 s and a grace of 120 s (the stack sets 100 s): a worker finishes the tasks it holds`);
            });

            it("FAILs GC Notify's hook and grace back after a notify-celery release: one line, the celery-shutdown one, with what the stack needs and the hand-over", async () => {
                const w = goodWorld(cfg);
                // What a notify-celery release puts back (values.yaml: terminationGracePeriodSeconds 60, the hardcoded hook).
                Object.assign(worker(w, EMAIL), { terminationGracePeriodSeconds: 60 });
                worker(w, EMAIL).containers[0].lifecycle = { preStop: GC_NOTIFY_HOOK };
                const r = await runOnCluster(cfg, w);
                expect(r.exitCode).to.equal(1);
                expect(linesOf(r.output, "FAIL")).to.deep.equal([
                    `FAIL  celery-shutdown           Deployment ${NS}/${EMAIL}: its preStop is not the program's hook, and its grace is shorter than the 100 s the worker needs to finish the tasks it holds: found GC Notify's preStop /app/scripts/run_celery_exit.sh, which SIGKILLs the worker about 10 s after its SIGTERM (notification-api scripts/run_celery_exit.sh) and a grace of 60 s, the stack needs the program's hook with its SIGKILL at 95 s and a grace of 100 s ((prefetchMultiplier 4 + 1) × longest task 18 s + 10 s); when its node goes, a task still running is killed, and lost (GC Notify acknowledges a task as it starts); a pulumi up puts the stack's back now, until the next notify-celery release; the lasting fix is GC Notify's chart change and values, ${HANDOVER}`,
                ]);
                // chart-fields leaves those two fields to celery-shutdown: no second line for the same fact.
                expect(linesOf(r.output, "WARN"), r.output).to.deep.equal([]);
                expect(r.output).to.match(/OK    chart-fields +no chart sets a field the stack's patches set otherwise, .* \(the burst workers' preStop and grace: celery-shutdown\)/);
            });

            it("FAILs a hook whose SIGKILL is not 5 s before the grace ends, and a grace shorter than the worker's", async () => {
                const w = goodWorld(cfg);
                // The grace raised by hand, the hook left: the hook still kills at 95 s.
                Object.assign(worker(w, EMAIL), { terminationGracePeriodSeconds: 120 });
                // The program's hook for a shorter grace (an older longestTaskSeconds).
                Object.assign(worker(w, "notify-celery-sms-send-burst"), { terminationGracePeriodSeconds: 60 });
                worker(w, "notify-celery-sms-send-burst").containers[0].lifecycle.preStop = celeryPreStop(60);
                const fails = linesOf((await runOnCluster(cfg, w)).output, "FAIL");
                expect(fails.map((l) => l.split(": found")[0])).to.deep.equal([
                    `FAIL  celery-shutdown           Deployment ${NS}/${EMAIL}: its hook kills at 95 s, not 5 s before the grace ends`,
                    `FAIL  celery-shutdown           Deployment ${NS}/notify-celery-sms-send-burst: its grace is shorter than the 100 s the worker needs to finish the tasks it holds`,
                ]);
                expect(fails[0]).to.include("found the program's hook with its SIGKILL at 95 s and a grace of 120 s, the stack needs the program's hook with its SIGKILL at 95 s and a grace of 100 s ((prefetchMultiplier 4 + 1) × longest task 18 s + 10 s); the hook no longer fits its grace (a hand edit, or a rollout cut short)");
                // A hook that kills before the worker's drain ends cuts tasks.
                expect(fails[1]).to.include("found the program's hook with its SIGKILL at 55 s and a grace of 60 s, the stack needs the program's hook with its SIGKILL at 95 s and a grace of 100 s ((prefetchMultiplier 4 + 1) × longest task 18 s + 10 s); when its node goes, a task still running is killed");
                // No hook at all, and a hook that is neither GC Notify's nor the program's.
                delete worker(w, EMAIL).containers[0].lifecycle;
                worker(w, "notify-celery-sms-send-burst").containers[0].lifecycle = { preStop: { exec: { command: ["/bin/sh", "-c", "sleep 5"] } } };
                const other = linesOf((await runOnCluster(cfg, w)).output, "FAIL").join("\n");
                expect(other).to.include("found no preStop hook (the kubelet's SIGTERM, then its SIGKILL at the end of the grace) and a grace of 120 s");
                expect(other).to.include('found the preStop ["/bin/sh","-c","sleep 5"] and a grace of 60 s');
            });

            it("WARNs a worker this stack has not patched yet (its first up sets the hook), and a missing Deployment; FAILs one whose container is not named after it", async () => {
                const w = goodWorld(cfg);
                // Before the first up: the chart's hook and grace, and no notify-karpenter/deployment label.
                const before = burst(w, EMAIL);
                before.spec.template = { metadata: { labels: { app: EMAIL } }, spec: { terminationGracePeriodSeconds: 60, containers: [{ ...container(EMAIL), lifecycle: { preStop: GC_NOTIFY_HOOK } }] } };
                const c = w.kube.collections!;
                c[`/apis/apps/v1/namespaces/${NS}/deployments`] = (c[`/apis/apps/v1/namespaces/${NS}/deployments`] as any[]).filter((d) => d.metadata.name !== "notify-celery-sms-send-burst");
                worker(w, "notify-celery-periodic-burst").containers[0].name = "celery";
                const r = await run(w, ["--stack", "staging", "--context", "staging", "--only", "celery-shutdown"]);
                expect(r.exitCode).to.equal(1);
                expect(linesOf(r.output, "WARN")).to.deep.equal([
                    `WARN  celery-shutdown           Deployment ${NS}/${EMAIL}: GC Notify's preStop /app/scripts/run_celery_exit.sh, which SIGKILLs the worker about 10 s after its SIGTERM (notification-api scripts/run_celery_exit.sh) and a grace of 60 s, not yet patched by this stack: its first up sets the program's hook with its SIGKILL at 95 s and a grace of 100 s ((prefetchMultiplier 4 + 1) × longest task 18 s + 10 s); until GC Notify makes the chart change, each notify-celery release puts its own back and this check fails: hand over ${HANDOVER}`,
                    `WARN  celery-shutdown           Deployment ${NS}/notify-celery-sms-send-burst does not exist: its workers' shutdown is not checked (patch-targets says more)`,
                ]);
                expect(linesOf(r.output, "FAIL")).to.deep.equal([
                    `FAIL  celery-shutdown           Deployment ${NS}/notify-celery-periodic-burst has no container notify-celery-periodic-burst (it has celery): the stack's patch names the worker's container after its Deployment, as notify-celery does, and would add one without an image; fix placement.burst.deployments or the chart`,
                ]);
            });
        });

        describe("queue-visibility", () => {
            it("OK: every queue of every burst worker hides a held message for at least its drain; each queue read once", async () => {
                const r = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "queue-visibility"]);
                expect(r.exitCode, r.output).to.equal(0);
                expect(lineOf(r.output, "queue-visibility", "OK")).to.have.length(cfg.placement.burst.deployments.length);
                expect(r.output).to.include(`OK    queue-visibility          ${EMAIL}: 3 queues, the shortest visibility timeout 310 s (eks-notification-canada-casend-email-high), at least the 72 s a held message can wait in a drain`);
                // delivery-receipts is two workers' queue: read once.
                const queues = new Set(cfg.placement.burst.deployments.flatMap((d) => d.queues ?? []));
                expect(r.awsRequests.filter((q) => q === "sqs:GetQueueAttributes")).to.have.length(queues.size);
                expect(r.awsRequests.filter((q) => q === "sqs:GetQueueUrl")).to.have.length(queues.size);
            });

            it("WARNs, naming the queues and the numbers, where a drain outlasts the visibility timeout (GC Notify's 26 s and SQS's default 30 s)", async () => {
                const w = goodWorld(cfg);
                const q = w.aws.sqs!;
                q["eks-notification-canada-casend-email-high"].attributes.VisibilityTimeout = "26"; // notification-terraform aws/common/sqs.tf:49-58
                q["eks-notification-canada-ca-priority-database-tasks.fifo"].attributes.VisibilityTimeout = "30"; // no visibility_timeout_seconds: SQS's 30
                const r = await run(w);
                expect(r.exitCode, r.output).to.equal(0);
                expect(linesOf(r.output, "WARN")).to.deep.equal([
                    "WARN  queue-visibility          notify-celery-core-tasks-burst: a message its worker holds but has not started can wait 72 s in a drain (prefetchMultiplier 4 × longest task 18 s), longer than the visibility timeout of eks-notification-canada-ca-priority-database-tasks.fifo (30 s): SQS then hands it to another worker while this one will still run it, so the task runs twice (a duplicate, not a loss); raise their VisibilityTimeout to 72 s or more (notification-terraform aws/common/sqs.tf, or the queue's attributes where kombu made it), or lower the prefetch",
                    `WARN  queue-visibility          ${EMAIL}: a message its worker holds but has not started can wait 72 s in a drain (prefetchMultiplier 4 × longest task 18 s), longer than the visibility timeout of eks-notification-canada-casend-email-high (26 s): SQS then hands it to another worker while this one will still run it, so the task runs twice (a duplicate, not a loss); raise their VisibilityTimeout to 72 s or more (notification-terraform aws/common/sqs.tf, or the queue's attributes where kombu made it), or lower the prefetch`,
                ]);
            });

            it("WARNs a configured queue GC Notify does not have, and a worker with no queues listed", async () => {
                const w = goodWorld(cfg);
                delete w.aws.sqs!["eks-notification-canada-casend-email-low"];
                const noQueues = (yaml: string) => {
                    const sms = /(name: notify-celery-sms-send-burst,\s+maxUnavailable: 1),\s+queues: \[[^\]]*\]/;
                    if (!sms.test(yaml)) throw new Error("no queues of notify-celery-sms-send-burst in the stack file");
                    return yaml.replace(sms, "$1");
                };
                const r = await run(w, ["--stack", "staging", "--context", "staging", "--only", "queue-visibility"], { stackFile: noQueues });
                expect(r.exitCode, r.output).to.equal(0);
                expect(linesOf(r.output, "WARN")).to.deep.equal([
                    `WARN  queue-visibility          ${EMAIL}: no SQS queue eks-notification-canada-casend-email-low in ca-central-1: placement.burst.deployments[2].queues names a queue GC Notify does not have (the SQS name is placement.burst.queuePrefix eks-notification-canada-ca + the queue); fix the list or the prefix`,
                    "WARN  queue-visibility          notify-celery-sms-send-burst: placement.burst.deployments[3].queues is not set, so its queues are not read; list the -Q queues of its notification-api run_celery_*.sh",
                ]);
            });

            it("a refused queue read leaves queue-visibility alone NOT RUN, naming the call and the permission; every other check runs (exit 3)", async () => {
                const w = goodWorld(cfg);
                w.aws.deny = ["sqs:GetQueueAttributes"];
                const r = await run(w);
                expect(couldNotCheck(r)).to.match(/^Could not check: sqs:GetQueueAttributes eks-notification-canada-ca\S+: HTTP 400 AccessDeniedException: User is not authorized to perform: sqs:GetQueueAttributes \(the credentials lack sqs:GetQueueAttributes; docs\/preflight.md lists the read permissions\)$/);
                expect(checksWith(r.output, "NOT RUN")).to.deep.equal(["queue-visibility"]);
                expect(checksWith(r.output, "OK")).to.deep.equal(CHECKS.map(([id]) => id).filter((id) => id !== "queue-visibility"));
                expect(r.output.split("\n").at(-1)).to.equal("COULD NOT CHECK: 1 check not run (AWS could not be read); in the checks that ran: 0 problems, 0 warnings");
            });
        });

        describe("task-durations", () => {
            it("OK: each worker's longest successful run is within its longestTaskSeconds, with or without kubernetes metadata on the line", async () => {
                const r = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "task-durations"]);
                expect(r.exitCode, r.output).to.equal(0);
                expect(linesOf(r.output, "OK")).to.deep.equal(
                    cfg.placement.burst.deployments.map((d, i) => `OK    task-durations            ${d.name}: 1 successful run over the last 24 hours, the longest ${0.5 + i} s (task-of-${d.name}), within its longestTaskSeconds ${d.longestTaskSeconds ?? cfg.placement.burst.longestTaskSeconds}`),
                );
                // One query, over the last 24 h, in epoch seconds, of the configured group.
                expect(r.queries).to.have.length(1);
                expect(r.queries[0].input).to.deep.include({ logGroupName: cfg.alarms.logGroupName, startTime: (NOW - 86_400_000) / 1000, endTime: NOW / 1000 });
            });

            it("FAILs a worker whose task took longer than its longestTaskSeconds, naming the slowest tasks; other containers and older lines do not count", async () => {
                const w = goodWorld(cfg);
                const lines = w.aws.logGroups[cfg.alarms.logGroupName];
                const core = "notify-celery-core-tasks-burst";
                lines.push(
                    // notification-api app/celery/reporting_tasks.py: minutes-class aggregations on reporting-tasks.
                    tookLine(core, "create-nightly-billing-for-day", 143.2, NOW - 5 * 3_600_000),
                    tookLine(core, "create-nightly-billing-for-day", 12, NOW - 6 * 3_600_000),
                    tookLine(core, "create-nightly-notification-status-for-day", 88.1, NOW - 5 * 3_600_000, false),
                    tookLine(core, "deliver_email", 0.3, NOW - 3_600_000),
                    // A static worker's slow task, and a burst worker's slow task three days ago.
                    tookLine("notify-celery-core-tasks-static", "create-nightly-billing", 900, NOW - 3_600_000),
                    tookLine(EMAIL, "deliver_email", 75.5, NOW - 3 * 86_400_000),
                );
                const r = await run(w);
                expect(r.exitCode).to.equal(1);
                expect(linesOf(r.output, "FAIL")).to.deep.equal([
                    `FAIL  task-durations            ${core}: create-nightly-billing-for-day took 143.2 s over the last 24 hours, above its longestTaskSeconds 18 (slowest: create-nightly-billing-for-day 143.2 s, create-nightly-notification-status-for-day 88.1 s, task-of-${core} 0.5 s; 5 successful runs): its grace lets a warm shutdown finish tasks of 18 s, so a task this long is killed when its node goes, and lost (GC Notify acknowledges a task as it starts); set longestTaskSeconds: 144 on ${core} in placement.burst.deployments (a grace of 730 s), or shorten the task`,
                ]);
                // A week's window reaches the email worker's slow run too.
                const week = await run(w, ["--stack", "staging", "--context", "staging", "--only", "task-durations", "--task-window", "168"]);
                expect(linesOf(week.output, "FAIL").map((l) => l.split(":")[0])).to.deep.equal([`FAIL  task-durations            ${core}`, `FAIL  task-durations            ${EMAIL}`]);
                expect(week.queries[0].input.startTime).to.equal((NOW - 168 * 3_600_000) / 1000);
            });

            it("leaves out what ran inside GC Notify's nightly batch (nodePool.nightlyBatch, 05:00-10:30 UTC), when the program disrupts no node: longestTaskSeconds is the longest task outside it", async () => {
                const w = goodWorld(cfg);
                const core = "notify-celery-core-tasks-burst";
                const yesterday = NOW - 86_400_000;
                w.aws.logGroups[cfg.alarms.logGroupName].push(
                    // notification-api app/config.py:509-518: create-nightly-billing at 05:15 UTC, on reporting-tasks.
                    tookLine(core, "create-nightly-billing-for-day", 143.2, yesterday + (5 * 60 + 20) * 60_000),
                    tookLine(core, "create-nightly-billing-for-day", 95, yesterday + (10 * 60 + 29) * 60_000),
                );
                const inside = await run(w);
                expect(linesOf(inside.output, "FAIL")).to.deep.equal([]);
                expect(inside.queries[0].input.queryString).to.include("| fields toMillis(@timestamp) % 86400000 as msOfDay\n| filter msOfDay < 18000000 or msOfDay >= 37800000\n");
                // At 10:31 UTC it counts.
                w.aws.logGroups[cfg.alarms.logGroupName].push(tookLine(core, "create-nightly-billing-for-day", 61, yesterday + (10 * 60 + 31) * 60_000));
                expect(linesOf((await run(w)).output, "FAIL").map((l) => l.split(" took ")[0])).to.deep.equal([`FAIL  task-durations            ${core}: create-nightly-billing-for-day`]);
            });

            it("WARNs when no line at all is found (the evidence is missing, and why), and per worker without a line", async () => {
                const w = goodWorld(cfg);
                const lg = cfg.alarms.logGroupName;
                w.aws.logGroups[lg] = w.aws.logGroups[lg].filter((e) => !e.message.includes(" took "));
                const none = await run(w, ["--stack", "staging", "--context", "staging", "--only", "task-durations"]);
                expect(none.exitCode, none.output).to.equal(0);
                expect(linesOf(none.output, "WARN")).to.deep.equal([
                    `WARN  task-durations            no "<task> took <seconds>s" line from a burst worker (${cfg.placement.burst.deployments.map((d) => d.name).join(", ")}) in ${lg} over the last 24 hours; 1 record, 0 MB scanned: the evidence for longestTaskSeconds is missing. Each successful task logs one at INFO (notification-api app/celery/celery.py:40-42); none arrive when no burst worker ran, when Fluent Bit does not ship the notify-celery containers to this group (GC Notify's fb-agent celery input), or when the workers log above INFO`,
                ]);
                w.aws.logGroups[lg].push(tookLine(EMAIL, "deliver_email", 0.2, NOW - 60_000));
                const one = await run(w, ["--stack", "staging", "--context", "staging", "--only", "task-durations"]);
                expect(linesOf(one.output, "OK").map(checkOf)).to.deep.equal(["task-durations"]);
                expect(linesOf(one.output, "WARN")).to.have.length(cfg.placement.burst.deployments.length - 1);
                expect(linesOf(one.output, "WARN")[0]).to.equal(
                    `WARN  task-durations            notify-celery-core-tasks-burst: no successful task logged over the last 24 hours: no evidence for its longestTaskSeconds 18 (no pod of it ran, or its lines do not reach ${lg})`,
                );
            });

            it("WARNs a query that outlasts its deadline (and stops it), one that ends otherwise than Complete, and one Logs Insights refuses", async () => {
                const argv = ["--stack", "staging", "--context", "staging", "--only", "task-durations"];
                const w = goodWorld(cfg);
                const lg = cfg.alarms.logGroupName;
                w.aws.insights = { runningPolls: Infinity };
                const slow = await run(w, argv, { taskQuery: { pollMs: 1, deadlineMs: 30 } });
                expect(slow.exitCode, slow.output).to.equal(0);
                expect(linesOf(slow.output, "WARN")).to.deep.equal([`WARN  task-durations            the Logs Insights query over the last 24 hours of ${lg} did not finish within 0.03 s and was stopped: the evidence for longestTaskSeconds was not read; retry, or shorten --task-window`]);
                expect(slow.awsRequests.at(-1)).to.equal("logs:StopQuery");
                expect(slow.queries[0].stopped).to.equal(true);
                // Polled until it ends: Running twice, then its end.
                w.aws.insights = { runningPolls: 2, outcome: "Timeout" };
                const timedOut = await run(w, argv);
                expect(timedOut.awsRequests.filter((q) => q === "logs:GetQueryResults")).to.have.length(3);
                expect(linesOf(timedOut.output, "WARN")).to.deep.equal([`WARN  task-durations            the Logs Insights query over the last 24 hours of ${lg} ended Timeout: the evidence for longestTaskSeconds was not read; retry`]);
                w.aws.insights = { limitExceeded: true };
                expect(linesOf((await run(w, argv)).output, "WARN")).to.deep.equal([
                    "WARN  task-durations            Logs Insights refused the query (Account maximum query concurrency limit of [30] reached.): the account runs at most 30 queries at once; the evidence for longestTaskSeconds was not read: run npm run preflight -- --only task-durations later",
                ]);
            });

            it("a refused query leaves task-durations alone NOT RUN, naming the call and the permission (exit 3)", async () => {
                const w = goodWorld(cfg);
                w.aws.deny = ["logs:StartQuery"];
                const r = await run(w, ["--stack", "staging", "--context", "staging", "--only", "task-durations,ami"]);
                expect(couldNotCheck(r)).to.equal(
                    `Could not check: logs:StartQuery ${cfg.alarms.logGroupName}: HTTP 400 AccessDeniedException: User is not authorized to perform: logs:StartQuery (the credentials lack logs:StartQuery; docs/preflight.md lists the read permissions)`,
                );
                expect(checksWith(r.output, "NOT RUN")).to.deep.equal(["task-durations"]);
                expect(checksWith(r.output, "OK")).to.deep.equal(["ami"]);
            });
        });

        it("--only reads only what the selected checks need: the queue and query reads when selected, and nothing else", async () => {
            const kubeConfig = () => {
                throw new Error("the kubeconfig was loaded");
            };
            const api = await new FakeAwsApi(goodWorld(cfg).aws).start();
            try {
                const own = await preflight(["--stack", "staging", "--only", "queue-visibility,task-durations"], { dir: stackDir(), kubeConfig, aws: api.clientConfig(), now: () => NOW, taskQuery: { pollMs: 1, deadlineMs: 5000 } });
                expect(own.exitCode, own.output).to.equal(0);
                expect(own.output.split("\n")[0]).to.equal("Preflight of stack staging: cluster notification-canada-ca-staging-eks-cluster in ca-central-1 (account not read), context not read; only queue-visibility, task-durations");
                expect([...new Set(api.requests)].sort()).to.deep.equal(["logs:GetQueryResults", "logs:StartQuery", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"]);
            } finally {
                await api.stop();
            }
            const other = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "ami,chart-fields"]);
            expect(other.exitCode, other.output).to.equal(0);
            expect(other.awsRequests.filter((q) => /^(sqs:GetQueueAttributes|logs:StartQuery)$/.test(q))).to.deep.equal([]);
            expect(other.queries).to.deep.equal([]);
        });

        it("refuses a --task-window outside 1 to 168 hours, and one the selection does not use (exit 2)", async () => {
            const argv = (...rest: string[]) => ["--stack", "staging", "--context", "staging", ...rest];
            for (const [value, message] of [
                ["0", '--task-window must be an integer from 1 to 168 (got "0")'],
                ["169", '--task-window must be an integer from 1 to 168 (got "169")'],
                ["1d", '--task-window must be an integer from 1 to 168 (got "1d")'],
            ]) {
                const r = await run(goodWorld(cfg), argv("--task-window", value));
                expect(r.exitCode).to.equal(2);
                expect(r.output.split("\n")[0]).to.equal(message);
            }
            const unused = await run(goodWorld(cfg), argv("--only", "ami", "--task-window", "48"));
            expect(unused.exitCode).to.equal(2);
            expect(unused.output.split("\n")[0]).to.equal("--task-window only applies to the task-durations check, which --only leaves out");
        });
    });

    it("pages through FilterLogEvents' empty pages (a large log group), and says unsure rather than none when it stops", async () => {
        const w = goodWorld(cfg);
        w.aws.emptyLogPages = 3;
        const found = await run(w);
        expect(found.exitCode, found.output).to.equal(0);
        expect(found.output).to.include("exists and has Karpenter lines from the last day");
        expect(found.awsRequests.filter((q) => q.startsWith("logs:FilterLogEvents"))).to.have.length(4);
        w.aws.emptyLogPages = 100;
        expect(linesOf((await run(w)).output, "WARN")).to.deep.equal([
            `WARN  log-group                 ${cfg.alarms.logGroupName}: 30 pages of the last day searched without a line from the karpenter/controller container (a large group); check the heartbeat metric on the dashboard instead`,
        ]);
    });

    it("fails a topic whose key policy leaves CloudWatch out (a topic outside the region is a config error already)", async () => {
        const w = goodWorld(cfg);
        const policy = JSON.stringify({ Statement: [{ Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" }] });
        w.aws.keys["key-1"].policy = policy;
        const r = await run(w);
        expect(r.exitCode).to.equal(1);
        expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([
            `FAIL  alarm-topics              warning ${WARNING_TOPIC}: the policy of key alias/notify-alarms does not let cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey: alarms cannot publish; add that statement`,
        ]);
    });

    it("checks the topics alarms.topicNames names (staging's own file) in the cluster's account and region", async () => {
        const r = await sharedRun(cfg, undefined, { stackFile: null });
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/OK    alarm-topics +warning arn:aws:sns:ca-central-1:123456789012:alert-warning: key alias\/notify-alarms lets CloudWatch publish/);
        const w = goodWorld(cfg);
        delete w.aws.topics![WARNING_TOPIC];
        const missing = await run(w, undefined, { stackFile: null });
        expect(linesOf(missing.output, "FAIL")).to.deep.equal([`FAIL  alarm-topics              warning ${WARNING_TOPIC} does not exist (or is another account's): fix alarms.topicNames.warning`]);
    });

    it("warns when the stack creates its own alarm topics: each subscription must be confirmed", async () => {
        const subscribed = (yaml: string) => yaml.replace(/topicArns:[^\n]*\n(\s+(warning|critical):[^\n]*\n)*/, "subscriptions: { warning: [{ protocol: email, endpoint: ops@example.ca }], critical: [{ protocol: email, endpoint: ops@example.ca }] }\n");
        const r = await run(goodWorld(cfg), undefined, { stackFile: subscribed });
        expect(r.exitCode, r.output).to.equal(0);
        expect(linesOf(r.output, "WARN")).to.deep.equal([
            "WARN  alarm-topics              the stack creates its own two topics and subscribes ops@example.ca: each endpoint must confirm its subscription (the link SNS sends) before an alarm reaches it",
        ]);
        expect(r.awsRequests.filter((q) => q.startsWith("sns:"))).to.deep.equal([]);
    });

    it("takes a pinned al2023 alias and a log group the stack creates, and fails an alias of another family", async () => {
        const w = goodWorld(cfg);
        w.aws.logGroups = {};
        const alias = (a: string) => (yaml: string) => yaml.replace("id: ami-031fc151e660ba74f\n      family: AL2023", `alias: ${a}`).replace("createLogGroup: false", "createLogGroup: true");
        const al2023 = await run(w, undefined, { stackFile: alias("al2023@v20251117") });
        expect(al2023.exitCode, al2023.output).to.equal(0);
        expect(al2023.output).to.include("OK    ami                       alias al2023@v20251117: Karpenter resolves it to the AL2023 amd64 image of that release");
        expect(al2023.output).to.include("OK    log-group                 /aws/containerinsights/notification-canada-ca-staging-eks-cluster/application: absent, the stack creates it (alarms.createLogGroup)");
        expect(al2023.awsRequests).to.not.include("ec2:DescribeImages");
        const bottlerocket = await run(w, undefined, { stackFile: alias("bottlerocket@v1.26.0") });
        expect(linesOf(bottlerocket.output, "FAIL"), bottlerocket.output).to.deep.equal(["FAIL  ami                       alias bottlerocket@v1.26.0 is not Amazon Linux 2023: use an al2023@v<date> alias"]);
    });

    it("checks configured subnet and security group IDs, and names the one EC2 does not know (it then refuses the whole call)", async () => {
        const w = goodWorld(cfg);
        const ids = (subnets: string[], groups: string[]) => (yaml: string) => {
            const zones = /^( +)zones: .*\n/m;
            if (!zones.test(yaml)) throw new Error("no nodePool.zones line in the stack file");
            return yaml.replace(zones, (line, indent) => `${line}${indent}subnetIds: [${subnets.join(", ")}]\n${indent}securityGroupIds: [${groups.join(", ")}]\n`);
        };
        // Untagged: found by ID, not by the discovery tag.
        for (const x of [...w.aws.subnets, ...w.aws.securityGroups]) x.Tags = {};
        const known = await run(w, undefined, { stackFile: ids(["subnet-00", "subnet-01", "subnet-02"], ["sg-01"]) });
        expect(linesOf(known.output, "FAIL"), known.output).to.deep.equal([]);
        expect(known.output).to.include("OK    subnets                   ca-central-1d: subnet-02");
        expect(known.output).to.include("OK    security-groups           sg-01");
        const unknown = await run(w, undefined, { stackFile: ids(["subnet-00", "subnet-0bad", "subnet-02"], ["sg-0bad"]) });
        expect(linesOf(unknown.output, "FAIL").filter((l) => /subnets|security-groups/.test(checkOf(l))), unknown.output).to.deep.equal([
            "FAIL  subnets                   nodePool.subnetIds: The subnet ID 'subnet-0bad' does not exist; EC2 then answers for none of them, and Karpenter launches nowhere until it is fixed",
            "FAIL  security-groups           nodePool.securityGroupIds: The security group 'sg-0bad' does not exist; nodes could not launch with it",
        ]);
        expect(unknown.exitCode).to.equal(1);
    });

    it("exits 3 when AWS refuses a read (HTTP 403) or cannot be reached, naming the call, and still runs the cluster's checks", async () => {
        const w = goodWorld(cfg);
        w.aws.deny = ["ec2:DescribeSubnets"];
        const denied = await run(w);
        expect(couldNotCheck(denied)).to.match(/^Could not check: ec2:DescribeSubnets: HTTP 403 UnauthorizedOperation: .*the credentials lack ec2:DescribeSubnets/);
        const down = await run(goodWorld(cfg), undefined, { awsDown: true });
        expect(couldNotCheck(down)).to.match(/^Could not check: sts:GetCallerIdentity: .*ECONNREFUSED/);
        // The reverse of an unreachable cluster: the cluster's checks run, every check that reads AWS is NOT RUN.
        expect(checksWith(down.output, "OK")).to.deep.equal(needing("cluster"));
        expect(checksWith(down.output, "NOT RUN")).to.deep.equal([...needing("aws"), ...needing("both")].sort((a, b) => CHECKS.findIndex(([id]) => id === a) - CHECKS.findIndex(([id]) => id === b)));
        expect(down.output.split("\n")[0]).to.equal("Preflight of stack staging: cluster notification-canada-ca-staging-eks-cluster in ca-central-1 (account not read), context staging");
        expect(down.output.split("\n").at(-1)).to.equal(`COULD NOT CHECK: ${CHECKS.length - needing("cluster").length} checks not run (AWS could not be read); in the checks that ran: 0 problems, 0 warnings`);
    });

    it("runs the AWS checks while the cluster is unreachable, says which half could not run, and exits 3 even with a FAIL", async () => {
        const w = goodWorld(cfg);
        w.aws.images[0].Architecture = "arm64";
        const r = await run(w, undefined, { kubeDown: true });
        expect(couldNotCheck(r)).to.match(/^Could not check: cluster notification-canada-ca-staging-eks-cluster \(context staging\) is unreachable/);
        expect(checksWith(r.output, "OK")).to.deep.equal(needing("aws").filter((c) => c !== "ami"));
        expect(checksWith(r.output, "FAIL")).to.deep.equal(["ami"]);
        expect(checksWith(r.output, "NOT RUN")).to.deep.equal(CHECKS.map(([id]) => id).filter((id) => CHECK_NEEDS[id] !== "aws"));
        expect(linesOf(r.output, "NOT RUN")[0]).to.equal("NOT RUN  cluster-access            needs AWS and the cluster, which could not be read (below)");
        expect(r.output.split("\n").at(-1)).to.equal(`COULD NOT CHECK: ${CHECKS.length - needing("aws").length} checks not run (the cluster could not be read); in the checks that ran: 1 problem, 0 warnings`);
        // A partial report goes to standard output; its exit code is still 3.
        expect(r).to.deep.include({ exitCode: 3, stream: "stdout" });
    });

    it("names every check in CHECK_NEEDS, and reads only the half a --only selection needs", async () => {
        expect(Object.keys(CHECK_NEEDS).sort()).to.deep.equal(CHECKS.map(([id]) => id).sort());
        // AWS checks only: no kubeconfig is loaded, the cluster is never asked, exit 0.
        const api = await new FakeAwsApi(goodWorld(cfg).aws).start();
        const kubeConfig = () => {
            throw new Error("the kubeconfig was loaded");
        };
        const awsOnly = await preflight(["--stack", "staging", "--only", "ami,subnets", "--only", "instance-types"], { dir: stackDir(), kubeConfig, aws: api.clientConfig(), now: () => NOW }).finally(() => api.stop());
        expect(awsOnly.exitCode, awsOnly.output).to.equal(0);
        expect(awsOnly.output.split("\n")[0]).to.equal("Preflight of stack staging: cluster notification-canada-ca-staging-eks-cluster in ca-central-1 (account 123456789012), context not read; only ami, subnets, instance-types");
        expect(checksWith(awsOnly.output, "OK")).to.deep.equal(["ami", "subnets", "instance-types"]);
        // Cluster checks only: no AWS call at all.
        const clusterOnly = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "helm-releases,stable-nodes"]);
        expect(clusterOnly.exitCode, clusterOnly.output).to.equal(0);
        expect(clusterOnly.awsRequests).to.deep.equal([]);
        expect(checksWith(clusterOnly.output, "OK")).to.deep.equal(["helm-releases", "stable-nodes"]);
        // The cluster down, and the endpoint's access not read: said so, not guessed.
        const down = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--only", "stable-nodes"], { kubeDown: true });
        expect(couldNotCheck(down)).to.match(/is unreachable \(.*\): the endpoint's access was not read \(the checks selected need no AWS read\); cluster\.access is client-vpn$/);
    });

    it("says on standard error what it reads and how long each half took (progress), never in the report", async () => {
        const lines: string[] = [];
        const before = setProgressSink((l) => lines.push(l));
        let r;
        try {
            r = await run(goodWorld(cfg));
        } finally {
            setProgressSink(before);
        }
        expect(r.output).to.not.include("preflight: reading");
        const shown = lines.map((l) => l.replace(/[0-9.]+ s\b/, "<t> s").replace(/\d+ calls/, "<n> calls"));
        expect(shown[0]).to.equal("preflight: reading AWS (account, ca-central-1) and cluster notification-canada-ca-staging-eks-cluster");
        expect(shown.slice(1).sort()).to.deep.equal(["preflight: AWS read in <t> s (<n> calls)", "preflight: cluster read in <t> s"]);
        expect(Number(/(\d+) calls/.exec(lines.join("\n"))![1])).to.equal(r.awsRequests.length);
    });

    it("refuses an unknown --only check with a did-you-mean, and a --region other than the stack's, in one line (exit 2)", async () => {
        const typo = await run(goodWorld(cfg), ["--stack", "staging", "--only", "ami,subnet"]);
        expect(typo.exitCode).to.equal(2);
        expect(typo.output.split("\n")[0]).to.equal(`--only: unknown check "subnet" (did you mean subnets?): the checks are ${CHECKS.map(([id]) => id).join(", ")}`);
        expect((await run(goodWorld(cfg), ["--stack", "staging", "--only", "ami,,subnets"])).output.split("\n")[0]).to.match(/^--only needs check names separated by commas \(got "ami,,subnets"\)/);
        const region = await run(goodWorld(cfg), ["--stack", "staging", "--region", "us-east-1"]);
        expect(region.exitCode).to.equal(2);
        expect(region.output.split("\n")[0]).to.equal("--region us-east-1: stack staging's cluster is in ca-central-1 (notify-karpenter:cluster.region), and preflight reads that region only");
        const same = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--region", "ca-central-1", "--only", "ami"]);
        expect(same.exitCode, same.output).to.equal(0);
    });

    it("--profile reaches the SDK clients: the profile's keys are found where the default chain finds none, and a profile that does not exist is refused, named (exit 2)", async () => {
        const dir = tempDir("aws-profile-");
        fs.writeFileSync(path.join(dir, "credentials"), "[notify-staging]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = secret\n");
        fs.writeFileSync(path.join(dir, "config"), "[profile notify-staging]\nregion = ca-central-1\n");
        const changed = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED"];
        const saved = Object.fromEntries(changed.map((k) => [k, process.env[k]]));
        for (const k of changed) delete process.env[k];
        Object.assign(process.env, { AWS_CONFIG_FILE: path.join(dir, "config"), AWS_SHARED_CREDENTIALS_FILE: path.join(dir, "credentials"), AWS_EC2_METADATA_DISABLED: "true" });
        const aws = await new FakeAwsApi(goodWorld(cfg).aws).start();
        try {
            const argv = (profile: string) => ["--stack", "staging", "--only", "ami", "--profile", profile];
            const ok = await preflight(argv("notify-staging"), { dir: stackDir(), aws: { endpoint: aws.url, maxAttempts: 1 }, now: () => NOW });
            expect(ok.exitCode, ok.output).to.equal(0);
            expect(aws.requests).to.include.members(["sts:GetCallerIdentity", "ec2:DescribeImages"]);
            // The same files without --profile: the default profile has no keys.
            const none = await preflight(["--stack", "staging", "--only", "ami"], { dir: stackDir(), aws: { endpoint: aws.url, maxAttempts: 1 }, now: () => NOW });
            expect(couldNotCheck(none)).to.match(/^Could not check: sts:GetCallerIdentity: CredentialsProviderError: /);
            const missing = await preflight(argv("notify-stagin"), { dir: stackDir(), aws: { endpoint: aws.url, maxAttempts: 1 }, now: () => NOW });
            expect(missing.exitCode).to.equal(2);
            expect(missing.output.split("\n")[0]).to.equal(`--profile notify-stagin: no such profile in ${path.join(dir, "config")} or ${path.join(dir, "credentials")} (did you mean notify-staging?): the profiles are notify-staging`);
        } finally {
            for (const [k, v] of Object.entries(saved)) {
                if (v === undefined) delete process.env[k];
                else process.env[k] = v;
            }
            await aws.stop();
        }
    });

    it("--json: one object in the documented schema (docs/json-output.md), --findings keeps WARN and FAIL only", async () => {
        const w = goodWorld(cfg);
        w.aws.offerings = w.aws.offerings.filter((o) => !(o.zone === "ca-central-1d" && o.type === "c7a.xlarge"));
        const r = await run(w, ["--stack", "staging", "--context", "staging", "--json"]);
        expect(r).to.deep.include({ exitCode: 0, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "exitCode", "cluster", "region", "account", "context", "checks", "summary", "verdicts", "notRead", "verdict"]);
        expect(Object.keys(report), "docs/json-output.md's table for preflight").to.deep.equal(documentedFields("preflight"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "preflight", stack: "staging", exitCode: 0, account: "123456789012", context: "staging", notRead: [], verdict: "OK: no check failed (1 warning)" });
        expect(report.checks).to.deep.equal(CHECKS.map(([id]) => id));
        expect(report.summary).to.deep.equal({ ok: report.verdicts.length - 1, warn: 1, fail: 0, notRun: 0 });
        expect(report.verdicts[0]).to.have.keys("check", "status", "message");
        const findings = JSON.parse((await run(w, ["--stack", "staging", "--context", "staging", "--json", "--findings"])).output);
        expect(findings.verdicts).to.deep.equal([{ check: "instance-types", status: "warn", message: "ca-central-1d: c7a.xlarge not offered (the others are)" }]);
        expect(findings.summary).to.deep.equal(report.summary);
        // Text: the WARN line and the verdict, no OK line.
        const text = await run(w, ["--stack", "staging", "--context", "staging", "--findings"]);
        expect(text.output.split("\n").slice(1)).to.deep.equal(["WARN  instance-types            ca-central-1d: c7a.xlarge not offered (the others are)", "OK: no check failed (1 warning)"]);
        // Could not check, as JSON on standard output: the half that was read, and why the other was not.
        const down = await run(goodWorld(cfg), ["--stack", "staging", "--context", "staging", "--json"], { kubeDown: true });
        const partial = JSON.parse(down.output);
        expect(partial.exitCode).to.equal(3);
        expect(partial.notRead).to.have.length(1);
        expect(partial.notRead[0]).to.deep.include({ half: "cluster", checks: CHECKS.map(([id]) => id).filter((id) => CHECK_NEEDS[id] !== "aws") });
        expect(partial.summary.notRun).to.equal(partial.notRead[0].checks.length);
        // A refused config is JSON too, and so is a usage error (issue 29: it stayed text).
        const refused = await run(goodWorld(cfg), ["--stack", "staging", "--json"], { stackFile: (yaml) => yaml.replace(/replicas: 2/, "replicas: two") });
        expect(JSON.parse(refused.output)).to.deep.include({ schemaVersion: 1, command: "preflight", exitCode: 1 });
        const unknown = await run(goodWorld(cfg), ["--stack", "staging", "--json", "--only", "nope"]);
        expect(unknown).to.deep.include({ exitCode: 2, format: "json" });
        expect(JSON.parse(unknown.output)).to.deep.include({ schemaVersion: 1, command: "preflight", stack: "staging", exitCode: 2 });
        expect(JSON.parse(unknown.output).error).to.match(/^--only: unknown check "nope"/);
    });

    it("exits 3 without AWS credentials (the default chain finds none)", async () => {
        const keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"];
        const changed = [...keys, "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED"];
        const saved = Object.fromEntries(changed.map((k) => [k, process.env[k]]));
        for (const k of keys) delete process.env[k];
        Object.assign(process.env, { AWS_CONFIG_FILE: "/nonexistent/config", AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials", AWS_EC2_METADATA_DISABLED: "true" });
        const aws = await new FakeAwsApi(goodWorld(cfg).aws).start();
        const kube = await new FakeKubeApi(new FakeClock(NOW), goodWorld(cfg).kube).start();
        try {
            const r = await preflight(["--stack", "staging", "--context", "staging"], { aws: { endpoint: aws.url, maxAttempts: 1 }, kubeConfig: () => kube.kubeConfig(), now: () => NOW });
            expect(couldNotCheck(r)).to.match(/^Could not check: sts:GetCallerIdentity: CredentialsProviderError: /);
            expect(aws.requests).to.deep.equal([]);
        } finally {
            for (const [k, v] of Object.entries(saved)) {
                if (v === undefined) delete process.env[k];
                else process.env[k] = v;
            }
            await aws.stop();
            await kube.stop();
        }
    });

    it("exits 3 when the cluster refuses (403) or cannot be reached, and refuses another cluster's context (exit 2)", async () => {
        const w = goodWorld(cfg);
        w.kube.listStatus = 403;
        const forbidden = await run(w);
        expect(couldNotCheck(forbidden)).to.include("Could not check: cluster notification-canada-ca-staging-eks-cluster (context staging): HTTP 403 Forbidden");
        const down = await sharedRun(cfg, undefined, { kubeDown: true });
        expect(couldNotCheck(down)).to.match(/^Could not check: cluster notification-canada-ca-staging-eks-cluster \(context staging\) is unreachable \(.*ECONNREFUSED.*\): /);
        const other = await run(goodWorld(cfg), ["--stack", "staging", "--context", "other"]);
        expect(other.exitCode).to.equal(2);
        expect(other.output.split("\n")[0]).to.match(/^--context other is cluster "kind-scratch" .* refusing to touch it$/);
        // Without --context the current context is checked the same way.
        expect((await run(goodWorld(cfg), ["--stack", "staging"])).exitCode).to.equal(2);
    });

    describe("cluster access (cluster.access against the endpoint DescribeCluster reports)", () => {
        const CLUSTER = "notification-canada-ca-staging-eks-cluster";
        const access = (to: string) => (yaml: string) => {
            if (!/access: client-vpn/.test(yaml)) throw new Error("no cluster.access line in the stack file");
            return yaml.replace(/access: client-vpn/, `access: ${to}`);
        };
        const oneLine = couldNotCheck;

        it("a private endpoint with no route (the fake cluster down): exit 3, one line, join the Client VPN", async () => {
            const r = await sharedRun(cfg, undefined, { kubeDown: true });
            expect(oneLine(r)).to.match(
                new RegExp(
                    `^Could not check: cluster ${CLUSTER} \\(context staging\\) is unreachable \\(fetch failed: connect ECONNREFUSED 127\\.0\\.0\\.1:[0-9]+\\): its API endpoint is private only \\(endpointPublicAccess false\\) and cluster\\.access is client-vpn: join GC Notify's private-subnets Client VPN \\(notification-terraform aws/eks/vpn\\.tf; CI joins its gha-vpn endpoint, \\.github/workflows/pulumi\\.yml\\) and retry$`,
                ),
            );
        });

        it("an endpoint that never answers (a private address off the VPN) is unreachable after the timeout, not a hang", async () => {
            const w = goodWorld(cfg);
            w.kube.unresponsive = true;
            const started = Date.now();
            const r = await run(w, undefined, { reachTimeoutMs: 300 });
            expect(Date.now() - started).to.be.below(10_000);
            expect(oneLine(r)).to.equal(
                `Could not check: cluster ${CLUSTER} (context staging) is unreachable (no answer within 0.3 s): its API endpoint is private only (endpointPublicAccess false) and cluster.access is client-vpn: join GC Notify's private-subnets Client VPN (notification-terraform aws/eks/vpn.tf; CI joins its gha-vpn endpoint, .github/workflows/pulumi.yml) and retry`,
            );
        });

        it("names the runner for vpc-runner, and the mismatch when config says public but the endpoint is private only", async () => {
            const runner = await run(goodWorld(cfg), undefined, { kubeDown: true, stackFile: access("vpc-runner") });
            expect(oneLine(runner)).to.match(/\): its API endpoint is private only \(endpointPublicAccess false\) and cluster\.access is vpc-runner: run this on a runner inside the cluster's VPC \(a self-hosted runner whose subnet the cluster security group admits on port 443\) and retry$/);
            const mismatch = await run(goodWorld(cfg), undefined, { kubeDown: true, stackFile: access("public") });
            expect(oneLine(mismatch)).to.match(
                /\): its API endpoint is private only \(endpointPublicAccess false\), but cluster\.access is public: nothing outside the VPC reaches it; set cluster\.access to client-vpn and join GC Notify's private-subnets Client VPN .* or to vpc-runner and run this on a runner inside the cluster's VPC .*, then retry$/,
            );
        });

        it("a public endpoint whose publicAccessCidrs leave this machine out, and one open to all (the path is at fault)", async () => {
            const w = goodWorld(cfg);
            Object.assign(w.aws.clusters[CLUSTER], { endpointPublicAccess: true, endpointPrivateAccess: false, publicAccessCidrs: ["203.0.113.0/24"] });
            const narrow = await run(w, undefined, { kubeDown: true, stackFile: access("public") });
            expect(oneLine(narrow)).to.match(
                new RegExp(`\\): its public API endpoint admits only 203\\.0\\.113\\.0/24 \\(publicAccessCidrs\\), and this machine's address is not among them: add it \\(aws eks update-cluster-config --name ${CLUSTER} --resources-vpc-config publicAccessCidrs=\\.\\.\\.\\), and retry$`),
            );
            w.aws.clusters[CLUSTER].publicAccessCidrs = ["0.0.0.0/0"];
            const open = await run(w, undefined, { kubeDown: true });
            expect(oneLine(open)).to.match(/\): its public API endpoint admits every address \(publicAccessCidrs 0\.0\.0\.0\/0\), so the path from this machine is at fault: .*; cluster\.access is client-vpn, but the endpoint is public only and needs no VPN: set cluster\.access to public$/);
        });

        it("says OK with the endpoint, the access and the authentication mode when the cluster answers, and WARNs a mismatch", async () => {
            const r = await sharedRun(cfg);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output).to.include(
                "OK    cluster-access            endpoint private only, reached through the Client VPN (cluster.access client-vpn); authentication mode CONFIG_MAP: identities are mapped in the aws-auth ConfigMap (notification-terraform aws/aws-auth/aws-auth.tf; CI's roles: plan-out/staging/ci-access/notify-karpenter-staging-aws-auth-roles.hcl); EKS refuses access entries",
            );
            // On the VPN, an operator reaches a private endpoint whatever config says; CI's public runners would not.
            const w = goodWorld(cfg);
            w.aws.clusters[CLUSTER].authenticationMode = "API_AND_CONFIG_MAP";
            const mismatch = await run(w, undefined, { stackFile: access("public") });
            expect(mismatch.exitCode, mismatch.output).to.equal(0);
            expect(linesOf(mismatch.output, "WARN")).to.deep.equal([
                "WARN  cluster-access            cluster.access is public, but the endpoint is private only: this machine reaches it (on the VPN or in the VPC), CI's hosted runners will not; set cluster.access to client-vpn (or vpc-runner). endpoint private only, reached through the public endpoint (cluster.access public); authentication mode API_AND_CONFIG_MAP: an access entry (plan-out/staging/ci-access/notify-karpenter-staging-access-entries.tf) or an aws-auth mapping (plan-out/staging/ci-access/notify-karpenter-staging-aws-auth-roles.hcl) lets an identity in",
            ]);
        });

        it("fails a node role the stack would create with an access entry on a cluster that reads aws-auth only", async () => {
            const created = (yaml: string) => {
                if (!/\n\s+existingNodeRoleName: eks-worker-role\n/.test(yaml)) throw new Error("no existingNodeRoleName line in the stack file");
                return yaml.replace(/\n\s+existingNodeRoleName: eks-worker-role\n/, "\n");
            };
            const r = await run(goodWorld(cfg), undefined, { stackFile: created });
            expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([
                "FAIL  cluster-access            the stack creates Karpenter's node role with an EKS access entry (controller.existingNodeRoleName is unset), which EKS refuses in authentication mode CONFIG_MAP, so the up fails there and nodes could not join: set controller.existingNodeRoleName to a node role aws-auth maps (GC Notify's eks-worker-role), or move the cluster to API_AND_CONFIG_MAP",
            ]);
            const w = goodWorld(cfg);
            w.aws.clusters[CLUSTER].authenticationMode = "API_AND_CONFIG_MAP";
            expect(linesOf((await run(w, undefined, { stackFile: created })).output, "FAIL")).to.deep.equal([]);
        });

        it("an identity the cluster does not map (401) is told where its mapping goes for the cluster's mode; 403 names the preview group", async () => {
            const w = goodWorld(cfg);
            w.kube.token = "not-the-testers";
            const r = await run(w);
            expect(oneLine(r)).to.equal(
                `Could not check: cluster ${CLUSTER} (context staging): HTTP 401 Unauthorized: the cluster does not know this identity: refresh the credentials (aws eks update-kubeconfig, aws sso login), or map its role in aws-auth (authentication mode CONFIG_MAP: notification-terraform aws/aws-auth/aws-auth.tf; CI's roles: plan-out/staging/ci-access/notify-karpenter-staging-aws-auth-roles.hcl)`,
            );
            w.aws.clusters[CLUSTER].authenticationMode = "API";
            expect(couldNotCheck(await run(w))).to.match(/or give its role an access entry \(authentication mode API: plan-out\/staging\/ci-access\/notify-karpenter-staging-access-entries\.tf\)$/);
            const forbidden = goodWorld(cfg);
            forbidden.kube.listStatus = 403;
            expect(oneLine(await run(forbidden))).to.include("CI's preview role reads through group notify-karpenter-preview, which the stack's PreviewReadAccess component binds: before the stack's first up, run preflight as its up role or an operator");
        });

        it("a credential plugin that fails is no access problem: its error, not the VPN", async () => {
            const execUser = (kc: KubeConfig) => {
                const out = new KubeConfig();
                out.loadFromOptions({
                    clusters: kc.getClusters(),
                    users: [{ name: "tester", exec: { apiVersion: "client.authentication.k8s.io/v1beta1", command: "no-such-aws-cli", args: ["eks", "get-token"] } }],
                    contexts: kc.getContexts(),
                    currentContext: kc.getCurrentContext(),
                });
                return out;
            };
            const r = await run(goodWorld(cfg), undefined, { kubeConfig: execUser });
            expect(oneLine(r)).to.match(new RegExp(`^Could not check: cluster ${CLUSTER} \\(context staging\\): .*no-such-aws-cli.*ENOENT`));
            expect(r.output).to.not.include("VPN");
        });
    });

    describe("a CRD release this stack left (retained by a destroy, or a partial upgrade)", () => {
        const karpenterSecrets = (w: World, ...secrets: object[]) => (w.kube.collections!["/api/v1/namespaces/karpenter/secrets"] = secrets);
        const ours = () => ({ settings: { interruptionQueue: stackNames(cfg).queue } });

        it("after a destroy: WARNs with the import command that adopts it under the program's parent and provider", async () => {
            const w = goodWorld(cfg);
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 1, "karpenter-crd", "1.14.1", {}));
            const r = await runOnCluster(cfg, w);
            expect(r.exitCode, r.output).to.equal(0);
            expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([]);
            expect(linesOf(r.output, "WARN")).to.deep.equal([
                "WARN  helm-releases             karpenter/karpenter-crd (chart karpenter-crd 1.14.1, revision 1) is this stack's, without its controller release: retained by a pulumi destroy (lifecycle.retainOnDelete), or left by an up that stopped before the controller; if the stack's state lacks it (pulumi stack --show-urns), the next up fails to create it (Helm refuses a release name in use): adopt it first (docs/architecture.md, \"Re-adopting the retained karpenter-crd\"): " +
                    "pulumi up --stack <PULUMI_ORG>/notify-karpenter/staging --target 'urn:pulumi:staging::notify-karpenter::notify-karpenter:index:KarpenterController::karpenter', then " +
                    "pulumi import --stack <PULUMI_ORG>/notify-karpenter/staging kubernetes:helm.sh/v3:Release karpenter-crds karpenter/karpenter-crd --parent 'karpenter=urn:pulumi:staging::notify-karpenter::notify-karpenter:index:KarpenterController::karpenter' --provider 'kubernetes=urn:pulumi:staging::notify-karpenter::pulumi:providers:kubernetes::kubernetes' --generate-code=false",
            ]);
        });

        it("the import command's name, parent and provider are the plan's (npm run plan: preview.json)", async () => {
            const rec = await builtStack("staging");
            const crd = rec.resources.find((x) => x.type === "kubernetes:helm.sh/v3:Release" && x.inputs.name === "karpenter-crd")!;
            const command = crdReleaseImport("staging", "karpenter");
            const [, name, id] = /Release (\S+) (\S+)/.exec(command)!;
            expect(crd.name).to.equal(name);
            expect(id).to.equal(`${crd.inputs.namespace}/${crd.inputs.name}`);
            expect(command).to.include(`--parent 'karpenter=${crd.parent}'`);
            expect(command).to.include(`--target '${crd.parent}'`);
            expect(crd.provider.split("::").slice(0, -1).join("::")).to.equal(/--provider 'kubernetes=(\S+)'/.exec(command)![1]);
        });

        it("the release's description (the program's) says whose it is, whatever its version", async () => {
            const w = goodWorld(cfg);
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 3, "karpenter-crd", "1.11.0", {}, "deployed", releaseDescription("notify-karpenter", "staging")));
            const r = await runOnCluster(cfg, w);
            expect(linesOf(r.output, "FAIL"), r.output).to.deep.equal([]);
            expect(linesOf(r.output, "WARN").join("\n")).to.include("karpenter/karpenter-crd (chart karpenter-crd 1.11.0, revision 3) is this stack's");
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 3, "karpenter-crd", "1.14.1", {}, "deployed", releaseDescription("notify-karpenter", "production")));
            expect(linesOf((await runOnCluster(cfg, w)).output, "FAIL")).to.have.length(1);
        });

        it("one version behind the configured chart is this stack's too; an older one, or another chart, is not", async () => {
            const w = goodWorld(cfg);
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 4, "karpenter-crd", "1.13.2", {}));
            const behind = await runOnCluster(cfg, w);
            expect(linesOf(behind.output, "FAIL"), behind.output).to.deep.equal([]);
            expect(linesOf(behind.output, "WARN").join("\n")).to.include("karpenter/karpenter-crd (chart karpenter-crd 1.13.2, revision 4) is this stack's, without its controller release");
            // GC Notify's helmfile's CRD release, its controller release removed (docs/migration.md step 2 half done).
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 2, "karpenter-crd", "1.3.2", {}));
            expect(linesOf((await runOnCluster(cfg, w)).output, "FAIL")).to.deep.equal([
                `FAIL  helm-releases             karpenter/karpenter-crd (chart karpenter-crd 1.3.2, revision 2) is not this stack's: remove the "karpenter-crd" entry from GC Notify's helmfile for staging and production (a template condition around it in helmfile/helmfile.yaml.gotmpl) so the next helmfile apply cannot undo this program, then retire the release as docs/migration.md step 2 says`,
            ]);
            karpenterSecrets(w, helmSecret("karpenter-crd", "karpenter", 1, "some-other-chart", "1.14.1", {}));
            expect(linesOf((await runOnCluster(cfg, w)).output, "FAIL").map(checkOf)).to.deep.equal(["helm-releases"]);
        });

        it("a partial upgrade (CRDs at the configured version, this stack's controller one behind) passes", async () => {
            const w = goodWorld(cfg);
            karpenterSecrets(w, helmSecret("karpenter", "karpenter", 5, "karpenter", "1.13.2", ours()), helmSecret("karpenter-crd", "karpenter", 5, "karpenter-crd", "1.14.1", {}));
            const r = await runOnCluster(cfg, w);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output).to.include("OK    helm-releases             none of karpenter-crd, karpenter, karpenter-nodepool, priority-classes, nidhogg is installed by anything but this stack");
            expect(linesOf(r.output, "WARN"), r.output).to.deep.equal([]);
            // Beside a controller release that is not this stack's, no CRD release is.
            karpenterSecrets(w, helmSecret("karpenter", "karpenter", 5, "karpenter", "1.3.2", { settings: { interruptionQueue: "Karpenter-other" } }), helmSecret("karpenter-crd", "karpenter", 5, "karpenter-crd", "1.14.1", {}));
            expect(linesOf((await runOnCluster(cfg, w)).output, "FAIL").map(checkOf)).to.deep.equal(["helm-releases", "helm-releases"]);
        });

        it("reads 'one version behind' as the same major and the minor before, or an earlier patch", () => {
            expect(sameOrOneBehind("1.14.1", "1.14.1")).to.equal(true);
            expect(sameOrOneBehind("1.14.0", "1.14.1")).to.equal(true);
            expect(sameOrOneBehind("1.13.9", "1.14.1")).to.equal(true);
            expect(sameOrOneBehind("1.12.4", "1.14.1")).to.equal(false);
            expect(sameOrOneBehind("1.14.2", "1.14.1")).to.equal(false);
            expect(sameOrOneBehind("0.14.1", "1.14.1")).to.equal(false);
        });
    });

    describe("the preview role's policy (plan/ciAccess.ts) allows every AWS call of preflight, the lookups and a refresh", () => {
        /** Every action the fake AWS answered over runs that reach every call preflight makes. */
        async function preflightCalls(): Promise<string[]> {
            const names = stackNames(cfg);
            // This stack's queue and rules exist (a later up), so their tags are read too.
            const later = goodWorld(cfg);
            later.aws.queues[names.queue] = { [STACK_TAG]: "staging" };
            for (const rule of Object.values(names.rules)) later.aws.rules[rule] = { [STACK_TAG]: "staging" };
            // A task-durations query that outlasts its deadline, which preflight then stops.
            const slow = goodWorld(cfg);
            slow.aws.insights = { runningPolls: Infinity };
            const runs = [await sharedRun(cfg), await run(later), await sharedRun(cfg, undefined, { stackFile: null }), await run(slow, undefined, { taskQuery: { pollMs: 1, deadlineMs: 20 } })];
            for (const r of runs) expect(r.exitCode, r.output).to.equal(0);
            return [...new Set(runs.flatMap((r) => r.awsRequests))].sort();
        }
        const uncovered = (policy: PolicyDocument, required: string[]) => required.filter((a) => !NO_PERMISSION_NEEDED.includes(a) && !policyAllows(policy, a));
        const without = (policy: PolicyDocument, action: string): PolicyDocument => ({ ...policy, Statement: policy.Statement.map((st) => ({ ...st, Action: st.Action.filter((a) => a !== action) })).filter((st) => st.Action.length) });

        let called: string[];
        before(async () => {
            called = await preflightCalls();
        });

        it("preflight's calls, as the fake AWS answered them, are PREFLIGHT_ACTIONS exactly", () => {
            expect(called).to.deep.equal([...PREFLIGHT_ACTIONS].sort());
        });

        for (const stack of ["staging", "production"]) {
            it(`${stack}: allows each of them, each lookup and each refresh read, and fails when any one action is taken out`, async () => {
                const rec = await builtStack(stack);
                const plan = { resources: rec.resources, calls: rec.calls };
                const mine = parseStackConfig(stack, configSections(readStackConfig(stack), PROJECT));
                const { actions, unknown } = previewActions(mine, plan);
                // Every data source the program reads and every AWS type it creates has its reads listed.
                expect(unknown, "lookups and resource types without IAM actions in plan/ciAccess.ts").to.deep.equal([]);
                expect(rec.calls.map((c) => c.token).filter((t) => t.startsWith("aws:")), "the program's lookups").to.include.members(["aws:eks/getCluster:getCluster", "aws:cloudwatch/getLogGroup:getLogGroup"]);
                const required = [...new Set([...called, ...actions])].sort();
                // engine-review W2: the log group's data source lists its tags.
                expect(required).to.include("logs:ListTagsForResource");
                const policy = previewPolicy(mine, plan);
                expect(uncovered(policy, required)).to.deep.equal([]);
                // The W2 action taken out: the check names it.
                expect(uncovered(without(policy, "logs:ListTagsForResource"), required)).to.deep.equal(["logs:ListTagsForResource"]);
                // Log events are read in the stack's log group only: another group's are neither filtered nor queried.
                const group = (name: string) => `arn:aws:logs:\${var.region}:\${var.account_id}:log-group:${name}:*`;
                for (const action of ["logs:FilterLogEvents", "logs:StartQuery"]) {
                    expect(policyAllows(policy, { action, resource: group(mine.alarms.logGroupName) }), action).to.equal(true);
                    expect(policyAllows(policy, { action, resource: group("/aws/lambda/other") }), action).to.equal(false);
                }
                // Queues: the interruption queue and GC Notify's Celery queues (queuePrefix + name), no other.
                const queue = (name: string) => `arn:aws:sqs:\${var.region}:\${var.account_id}:${name}`;
                for (const action of ["sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ListQueueTags"]) {
                    expect(policyAllows(policy, { action, resource: queue(stackNames(mine).queue) }), action).to.equal(true);
                    expect(policyAllows(policy, { action, resource: queue(`${mine.placement.burst.queuePrefix}send-email-high`) }), action).to.equal(true);
                    expect(policyAllows(policy, { action, resource: queue("other-queue") }), action).to.equal(false);
                }
                // And so for every action of the policy: none is there for nothing.
                for (const action of policy.Statement.flatMap((st) => st.Action)) {
                    expect(uncovered(without(policy, action), required), `without ${action}`).to.include(action);
                }
            });
        }

        it("docs/preflight.md lists the same actions (its policy for preflight alone)", () => {
            const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs", "preflight.md"), "utf8");
            const json = /## Permissions preflight needs[\s\S]*?```json\n([\s\S]*?)```/.exec(doc)![1];
            const listed = JSON.parse(json).Statement.flatMap((st: { Action: string[] }) => st.Action).sort();
            expect(listed).to.deep.equal(PREFLIGHT_ACTIONS.filter((a) => !NO_PERMISSION_NEEDED.includes(a)).sort());
        });

        it("reads Action patterns as IAM does: wildcards, any case, NotAction, and an explicit Deny over an Allow", () => {
            const doc = (...Statement: object[]) => ({ Version: "2012-10-17", Statement });
            expect(policyAllows(doc({ Effect: "Allow", Action: "logs:ListTags*", Resource: "*" }), "LOGS:listtagsforresource")).to.equal(true);
            expect(policyAllows(doc({ Effect: "Allow", Action: ["sqs:GetQueue???"], Resource: "*" }), "sqs:GetQueueUrl")).to.equal(true);
            expect(policyAllows(doc({ Effect: "Allow", Action: ["sqs:GetQueue???"], Resource: "*" }), "sqs:GetQueueAttributes")).to.equal(false);
            expect(policyAllows(doc({ Effect: "Allow", NotAction: "iam:*", Resource: "*" }), "iam:GetRole")).to.equal(false);
            expect(policyAllows(doc({ Effect: "Allow", Action: "*", Resource: "*" }, { Effect: "Deny", Action: "logs:*", Resource: "*" }), "logs:FilterLogEvents")).to.equal(false);
            // Resources match case-sensitively; conditions only when asked to evaluate them.
            const passRole = doc({ Effect: "Allow", Action: "iam:PassRole", Resource: "arn:aws:iam::1:role/x-*", Condition: { StringEquals: { "iam:PassedToService": "pods.eks.amazonaws.com" } } });
            expect(policyAllows(passRole, { action: "iam:PassRole", resource: "arn:aws:iam::1:role/x-karpenter", context: { "iam:PassedToService": "pods.eks.amazonaws.com" } }, { conditions: "evaluate" })).to.equal(true);
            expect(policyAllows(passRole, { action: "iam:PassRole", resource: "arn:aws:iam::1:role/X-karpenter", context: { "iam:PassedToService": "pods.eks.amazonaws.com" } }, { conditions: "evaluate" })).to.equal(false);
            expect(policyAllows(passRole, { action: "iam:PassRole", resource: "arn:aws:iam::1:role/x-karpenter", context: { "iam:PassedToService": "ec2.amazonaws.com" } }, { conditions: "evaluate" })).to.equal(false);
        });
    });

    it("reads a Deployment's surge as Kubernetes does, and a key policy's CloudWatch grant", () => {
        const d = (strategy: object, replicas = 10) => ({ metadata: { name: "x" }, spec: { replicas, strategy } });
        expect(surgePods(d({}))).to.equal(3); // 25% of 10, rounded up
        expect(surgePods(d({ rollingUpdate: { maxSurge: 1 } }))).to.equal(1);
        expect(surgePods(d({ type: "Recreate" }))).to.equal(0);
        expect(keyLetsCloudWatch(CLOUDWATCH_KEY_POLICY)).to.equal(true);
        expect(keyLetsCloudWatch(JSON.stringify({ Statement: { Effect: "Allow", Principal: { Service: ["cloudwatch.amazonaws.com"] }, Action: "kms:*" } }))).to.equal(true);
        expect(keyLetsCloudWatch(JSON.stringify({ Statement: [{ Effect: "Allow", Principal: { Service: "cloudwatch.amazonaws.com" }, Action: "kms:Decrypt" }] }))).to.equal(false);
    });

    it("reads a budget's label selector as the API does: terms ANDed, an empty selector selects every pod, a missing one none", () => {
        const pod = { app: "notify-celery-sms-send-burst", tier: "celery" };
        expect(selectorSelects({}, pod)).to.equal(true);
        expect(selectorSelects(undefined, pod)).to.equal(false);
        expect(selectorSelects({ matchLabels: { app: "notify-celery-sms-send-burst" }, matchExpressions: [{ key: "tier", operator: "In", values: ["celery", "web"] }] }, pod)).to.equal(true);
        expect(selectorSelects({ matchLabels: { app: "notify-celery-sms-send-burst" }, matchExpressions: [{ key: "tier", operator: "NotIn", values: ["celery"] }] }, pod)).to.equal(false);
        // NotIn and DoesNotExist select a pod without the label.
        expect(selectorSelects({ matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a"] }, { key: "zone", operator: "DoesNotExist" }] }, pod)).to.equal(true);
        expect(selectorSelects({ matchExpressions: [{ key: "zone", operator: "Exists" }] }, pod)).to.equal(false);
    });

    it("reads a key policy as IAM evaluates it: wildcards, any principal, and an explicit Deny over an Allow", () => {
        const cw = { Service: "cloudwatch.amazonaws.com" };
        const policy = (...Statement: object[]) => JSON.stringify({ Version: "2012-10-17", Statement });
        // Wildcards match case-insensitively (IAM User Guide, "IAM JSON policy elements: Action").
        expect(keyLetsCloudWatch(policy({ Effect: "Allow", Principal: cw, Action: ["KMS:decrypt", "kms:Generate*"] }))).to.equal(true);
        expect(keyLetsCloudWatch(policy({ Effect: "Allow", Principal: "*", Action: "*" }))).to.equal(true);
        expect(keyLetsCloudWatch(policy({ Effect: "Allow", Principal: { AWS: "*" }, Action: "kms:*" }))).to.equal(true);
        // Another service's grant is not CloudWatch's.
        expect(keyLetsCloudWatch(policy({ Effect: "Allow", Principal: { Service: "sns.amazonaws.com" }, Action: "kms:*" }))).to.equal(false);
        // An explicit Deny wins ("Policy evaluation logic"), through a wildcard principal too.
        const allow = { Effect: "Allow", Principal: cw, Action: ["kms:Decrypt", "kms:GenerateDataKey*"] };
        expect(keyLetsCloudWatch(policy(allow, { Effect: "Deny", Principal: "*", Action: "kms:GenerateDataKey*" }))).to.equal(false);
        expect(keyLetsCloudWatch(policy(allow, { Effect: "Deny", Principal: cw, Action: "kms:Decrypt" }))).to.equal(false);
        // A Deny under a condition is not evaluated here, so it does not fail the check.
        expect(keyLetsCloudWatch(policy(allow, { Effect: "Deny", Principal: "*", Action: "kms:*", Condition: { Bool: { "aws:SecureTransport": "false" } } }))).to.equal(true);
    });
});
