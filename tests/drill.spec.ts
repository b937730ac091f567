// The spot interruption drill: its FIS template, role and config as the stacks deploy them, and `npm run drill`
// against the fake AWS (FIS, SQS, CloudWatch) and the fake Kubernetes API replaying a recorded-style interruption on
// the fake clock, with simulated Celery-like workers on the fake queues.
import { expect } from "chai";
import { spawn, spawnSync } from "child_process";
import { EventEmitter } from "events";
import * as fs from "fs";
import * as path from "path";
import { KubeConfig } from "@kubernetes/client-node";
import { DRILL_NAMESPACE, NODEPOOL_TAG, experimentRolePolicy, experimentTemplateArgs, isoDurationSeconds } from "../components/spotInterruptionDrill.ts";
import { DrillRecord, checks, drill, workerDeployment } from "../ops/drill.ts";
import { policyAllows } from "../ops/preflight.ts";
import { PROJECT_DIR } from "../plan/offlineRuntime.ts";
import { FakeAwsApi, type FakeAwsState, type FakeQueue } from "./fakeAwsApi.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions, type Step, iso } from "./fakeKubeApi.ts";
import { buildStack, configErrorOf, customResources, patchSections, stackConfig } from "./helpers.ts";
import { readSeries, tempDir } from "./opsHelpers.ts";

const ACCOUNT = "123456789012";
const SCRATCH = "notify-karpenter-scratch";
const POOL = "notify-karpenter";
const BURST = "notification-canada-ca/celery-burst";
const STOP_ALARM = `${SCRATCH}-karpenter-nodepool-near-limit`;

// ---- The template and its role, as the stacks deploy them.

describe("spot interruption drill: the FIS template, its role and config", () => {
    it("scratch and staging create a template valid for the FIS API: the spot action, its target key and resource type, the pool's tag, COUNT(1), PT2M, the burst capacity alarms, logging", async () => {
        for (const stack of ["scratch", "staging"]) {
            const { resources } = await buildStack(stack);
            const [t] = customResources(resources).filter((r) => r.type === "aws:fis/experimentTemplate:ExperimentTemplate");
            expect(t, stack).not.to.equal(undefined);
            const cluster = stackConfig(stack).cluster.name;
            expect(t.inputs.actions).to.deep.equal([
                {
                    name: "interrupt",
                    actionId: "aws:ec2:send-spot-instance-interruptions",
                    description: `Interruption notice to 1 spot node(s) of NodePool ${POOL}`,
                    parameters: [{ key: "durationBeforeInterruption", value: "PT2M" }],
                    target: { key: "SpotInstances", value: "pool-spot-instances" },
                },
            ]);
            expect(t.inputs.targets).to.deep.equal([
                { name: "pool-spot-instances", resourceType: "aws:ec2:spot-instance", selectionMode: "COUNT(1)", resourceTags: [{ key: NODEPOOL_TAG, value: POOL }], filters: [{ path: "State.Name", values: ["running"] }] },
            ]);
            const alarms = stack === "scratch" ? ["nodepool-near-limit"] : ["nodepool-near-limit", "unschedulable-pods"];
            expect(t.inputs.stopConditions.map((c: any) => [c.source, c.value.split(":alarm:")[1]])).to.deep.equal(alarms.map((a) => ["aws:cloudwatch:alarm", `${cluster}-karpenter-${a}`]));
            expect(t.inputs.logConfiguration.logSchemaVersion).to.equal(2);
            expect(t.inputs.logConfiguration.cloudwatchLogsConfiguration.logGroupArn).to.match(new RegExp(`:log-group:/aws/fis/${cluster}-spot-interruption-drill:\\*$`));
            expect(t.inputs.experimentOptions).to.deep.equal({ accountTargeting: "single-account", emptyTargetResolutionMode: "fail" });
            expect(t.inputs.tags).to.include({ Name: `${cluster}-spot-interruption-drill` });
            const role = customResources(resources).find((r) => r.type === "aws:iam/role:Role" && r.inputs.name === `${cluster}-fis-drill`)!;
            const trust = JSON.parse(role.inputs.assumeRolePolicy);
            expect(trust.Statement[0].Principal).to.deep.equal({ Service: "fis.amazonaws.com" });
            expect(trust.Statement[0].Condition.ArnLike["aws:SourceArn"]).to.match(/^arn:aws:fis:ca-central-1:[0-9]{12}:experiment\/\*$/);
        }
    });

    // The request `pulumi up` makes of FIS (CreateExperimentTemplate, from the provider's inputs), held to the API's
    // own model: botocore 1.43.67 fis 2020-12-01 (required members, types, lengths, patterns), beside the checkout.
    const FIS_MODEL = [process.env.BOTOCORE_REFERENCE_DIR, path.resolve(PROJECT_DIR, "..", "shared", "reference", "botocore-1.43.67")]
        .filter((d): d is string => !!d)
        .map((d) => path.join(d, "fis", "2020-12-01", "service-2.json"))
        .find((f) => fs.existsSync(f));
    (FIS_MODEL ? it : it.skip)("the template is a valid CreateExperimentTemplate request by FIS's API model (botocore fis 2020-12-01)", async () => {
        const shapes = JSON.parse(fs.readFileSync(FIS_MODEL!, "utf8")).shapes;
        for (const stack of ["scratch", "staging"]) {
            const { resources } = await buildStack(stack);
            const i = customResources(resources).find((r) => r.type === "aws:fis/experimentTemplate:ExperimentTemplate")!.inputs;
            const request = {
                clientToken: "pulumi-create",
                description: i.description,
                stopConditions: i.stopConditions,
                targets: Object.fromEntries(i.targets.map((t: any) => [t.name, { resourceType: t.resourceType, selectionMode: t.selectionMode, resourceTags: Object.fromEntries(t.resourceTags.map((x: any) => [x.key, x.value])), filters: t.filters }])),
                actions: Object.fromEntries(i.actions.map((a: any) => [a.name, { actionId: a.actionId, description: a.description, parameters: Object.fromEntries(a.parameters.map((x: any) => [x.key, x.value])), targets: { [a.target.key]: a.target.value } }])),
                roleArn: i.roleArn,
                logConfiguration: { logSchemaVersion: i.logConfiguration.logSchemaVersion, cloudWatchLogsConfiguration: { logGroupArn: i.logConfiguration.cloudwatchLogsConfiguration.logGroupArn } },
                experimentOptions: i.experimentOptions,
                tags: i.tags,
            };
            expect(modelProblems(shapes, "CreateExperimentTemplateRequest", request, "request"), stack).to.deep.equal([]);
            // What the model cannot say: the action's target key and resource type, and an alarm to stop on.
            expect(Object.keys(request.actions.interrupt.targets)).to.deep.equal(["SpotInstances"]);
            expect(request.stopConditions.every((c: any) => c.source === "aws:cloudwatch:alarm" && /^arn:aws:cloudwatch:ca-central-1:[0-9]{12}:alarm:/.test(c.value))).to.equal(true);
        }
        // The checker itself: a missing required member, a bad type and an unknown member are named.
        expect(modelProblems(shapes, "CreateExperimentTemplateStopConditionInput", { value: 3, sorce: "x" }, "c")).to.deep.equal(["c.source is required", "c.value must be a string", "c.sorce is not a member of CreateExperimentTemplateStopConditionInput"]);
    });

    it("production creates none of it (drill.enabled false)", async () => {
        const { resources } = await buildStack("production");
        const types = customResources(resources).map((r) => r.type);
        expect(types).not.to.include("aws:fis/experimentTemplate:ExperimentTemplate");
        expect(customResources(resources).filter((r) => /fis-drill|drill-sqs/.test(r.inputs.name ?? ""))).to.deep.equal([]);
    });

    it("the experiment role interrupts nothing outside the pool: only instances tagged with the pool, in the stack's region; it may find instances and deliver its log", async () => {
        const { resources } = await buildStack("scratch");
        const doc = JSON.parse(customResources(resources).find((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.inputs.name === "spot-interruption-drill")!.inputs.policy);
        expect(doc).to.deep.equal(experimentRolePolicy({ partition: "aws", region: "ca-central-1", accountId: ACCOUNT, nodePoolName: POOL }));
        const instance = (region: string, account = ACCOUNT) => `arn:aws:ec2:${region}:${account}:instance/i-0abc`;
        const send = (resource: string, tags: Record<string, string>, region = "ca-central-1") =>
            policyAllows(doc, { action: "ec2:SendSpotInstanceInterruptions", resource, context: { ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:ResourceTag/${k}`, v])), "aws:RequestedRegion": region } }, { conditions: "evaluate" });
        expect(send(instance("ca-central-1"), { [NODEPOOL_TAG]: POOL })).to.equal(true);
        expect(send(instance("ca-central-1"), { [NODEPOOL_TAG]: "other-pool" })).to.equal(false);
        expect(send(instance("ca-central-1"), {})).to.equal(false);
        expect(send(instance("us-east-1"), { [NODEPOOL_TAG]: POOL }, "us-east-1")).to.equal(false);
        expect(send(instance("ca-central-1", "999999999999"), { [NODEPOOL_TAG]: POOL })).to.equal(false);
        for (const action of ["ec2:TerminateInstances", "ec2:StopInstances", "ec2:RebootInstances"]) {
            expect(policyAllows(doc, { action, resource: instance("ca-central-1"), context: { [`aws:ResourceTag/${NODEPOOL_TAG}`]: POOL } }, { conditions: "evaluate" }), action).to.equal(false);
        }
        expect(policyAllows(doc, { action: "ec2:DescribeInstances", resource: "*", context: { "aws:RequestedRegion": "ca-central-1" } }, { conditions: "evaluate" })).to.equal(true);
        expect(policyAllows(doc, { action: "ec2:DescribeInstances", resource: "*", context: { "aws:RequestedRegion": "eu-west-1" } }, { conditions: "evaluate" })).to.equal(false);
        for (const action of ["logs:CreateLogDelivery", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups"]) {
            expect(policyAllows(doc, { action, resource: `arn:aws:logs:ca-central-1:${ACCOUNT}:log-group:/aws/fis/x` }), action).to.equal(true);
        }
    });

    it("the synthetic workers' role reaches the drill's queues only, through a Pod Identity association in the drill's namespace", async () => {
        const { resources } = await buildStack("scratch");
        const all = customResources(resources);
        const doc = JSON.parse(all.find((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.inputs.name === "drill-queues")!.inputs.policy);
        const queue = (name: string) => `arn:aws:sqs:ca-central-1:${ACCOUNT}:${name}`;
        expect(policyAllows(doc, { action: "sqs:ReceiveMessage", resource: queue(`${SCRATCH}-drill-20261130t051000-work`) })).to.equal(true);
        expect(policyAllows(doc, { action: "sqs:ReceiveMessage", resource: queue(`${SCRATCH}-karpenter`) })).to.equal(false);
        expect(policyAllows(doc, { action: "sqs:DeleteQueue", resource: queue(`${SCRATCH}-drill-x-work`) })).to.equal(false);
        const assoc = all.find((r) => r.type === "aws:eks/podIdentityAssociation:PodIdentityAssociation" && r.inputs.namespace === DRILL_NAMESPACE)!;
        expect(assoc.inputs.serviceAccount).to.equal("drill-worker");
    });

    it("config: one clear line per bad value; ALL is no value nodes can take", async () => {
        const error = (patch: Record<string, unknown>) => configErrorOf("staging", patchSections("staging", { drill: patch }));
        expect(await error({ nodes: "ALL" })).to.equal('staging: notify-karpenter:drill.nodes must be an integer from 1 to 10 (got "ALL")');
        expect(await error({ durationBeforeInterruption: "PT1M" })).to.equal('staging: notify-karpenter:drill.durationBeforeInterruption must be from PT2M to PT15M: FIS sends the notice 2 to 15 minutes before the interruption (got "PT1M", 60 s)');
        expect(await error({ durationBeforeInterruption: "2m" })).to.match(/drill\.durationBeforeInterruption must be an ISO 8601 duration in minutes or seconds such as PT2M or PT150S \(got "2m"\)$/);
        expect(await error({ synthetic: { image: "public.ecr.aws/aws-cli/aws-cli:2.27.0", workSeconds: 26 } })).to.equal(
            "staging: notify-karpenter:drill.synthetic.workSeconds must be under placement.burst.queueVisibilityTimeoutSeconds (26): a message worked longer reappears and is worked twice (got 26)",
        );
        expect(await error({ synthetic: { image: "aws-cli" } })).to.match(/drill\.synthetic\.image must be a container image with a tag or digest/);
        expect(await error({ workload: "live", live: { queues: [] } })).to.equal("staging: notify-karpenter:drill.live.queues must name GC Notify's Celery queues when drill.workload is live: the drill reads their depth");
        const two = (await error({ nodes: 0, durationBeforeInterruption: "PT20M" })).split("\n");
        expect(two).to.have.length(2);
        expect(await configErrorOf("staging", patchSections("staging", { nodePool: { capacityTypes: ["on-demand"] } }))).to.include("notify-karpenter:drill.enabled must be false when nodePool.capacityTypes has no spot");
        expect(isoDurationSeconds("PT2M30S")).to.equal(150);
    });

    it("shapes the synthetic workers like burst Celery pods, running the worker script in the pinned AWS CLI image, with GC Notify's visibility timeout", () => {
        const cfg = stackConfig("scratch");
        const d = workerDeployment(cfg, { work: "https://sqs/w", done: "https://sqs/d" }, 4);
        const spec = d.spec.template.spec;
        expect(d.metadata.namespace).to.equal(DRILL_NAMESPACE);
        expect(d.spec.template.metadata.labels).to.include({ [BURST]: "true" });
        expect(spec.priorityClassName).to.equal("celery");
        // Its 10 s messages, 5 s to receive, one at a time: 15 s + 10 s of the drain's slack and the hook's margin.
        expect(spec.terminationGracePeriodSeconds).to.equal(25);
        expect(JSON.stringify(spec.tolerations)).to.include("notification-canada-ca/ephemeral");
        expect(spec.containers[0].image).to.equal("public.ecr.aws/aws-cli/aws-cli:2.27.0");
        expect(spec.containers[0].command.slice(0, 2)).to.deep.equal(["/bin/bash", "-c"]);
        expect(spec.containers[0].env).to.deep.include({ name: "VISIBILITY_TIMEOUT", value: "26" });
        expect(spec.serviceAccountName).to.equal("drill-worker");
    });
});

// ---- The worker script, as it runs: bash, with an `aws` that keeps queues in files.

describe("the synthetic worker (ops/drillWorker.sh)", () => {
    const FAKE_AWS = `#!/bin/bash
# receive-message, change-message-visibility, send-message, delete-message on queues kept as directories.
op=$2; shift 2
while [ $# -gt 0 ]; do case $1 in --queue-url) q=$2; shift 2;; --receipt-handle) h=$2; shift 2;; --message-body) b=$2; shift 2;; *) shift;; esac; done
case $op in
  receive-message) f=$(ls "$q" 2>/dev/null | sort -n | head -1); [ -z "$f" ] && { sleep 0.2; echo None; exit 0; }; mv "$q/$f" "$q.inflight/$f"; printf '%s\\t%s\\n' "$f" "$(cat "$q.inflight/$f")";;
  change-message-visibility) mv "$q.inflight/$h" "$q/$h";;
  send-message) echo "$b" >> "$q";;
  delete-message) rm "$q.inflight/$h";;
esac
`;
    it("works numbered messages one at a time; on SIGTERM finishes the current one, takes no more, and exits 0 (Celery's warm shutdown)", async function () {
        if (spawnSync("bash", ["--version"]).status !== 0) this.skip();
        const dir = tempDir("worker-");
        fs.mkdirSync(path.join(dir, "bin"));
        fs.writeFileSync(path.join(dir, "bin", "aws"), FAKE_AWS, { mode: 0o755 });
        for (const d of ["work", "work.inflight"]) fs.mkdirSync(path.join(dir, d));
        for (const n of [1, 2, 3, 4]) fs.writeFileSync(path.join(dir, "work", String(n)), String(n));
        const worker = spawn("bash", [path.join(PROJECT_DIR, "ops", "drillWorker.sh")], {
            env: { PATH: `${path.join(dir, "bin")}:${process.env.PATH}`, HOSTNAME: "drill-worker-a", WORK_QUEUE_URL: path.join(dir, "work"), DONE_QUEUE_URL: path.join(dir, "done"), WORK_SECONDS: "1", VISIBILITY_TIMEOUT: "26", RECEIVE_WAIT_SECONDS: "0" },
        });
        let log = "";
        worker.stdout.on("data", (c) => (log += c));
        const exited = new Promise<number | null>((resolve) => worker.on("exit", (code) => resolve(code)));
        // SIGTERM while message 1 is being worked.
        for (let i = 0; i < 250 && !log.includes("message 1: working"); i++) await new Promise((r) => setTimeout(r, 20));
        worker.kill("SIGTERM");
        expect(await exited).to.equal(0);
        expect(fs.readFileSync(path.join(dir, "done"), "utf8").trim().split("\n").map((l) => l.split(" ").slice(0, 2).join(" "))).to.deep.equal(["1 drill-worker-a"]);
        expect(fs.readdirSync(path.join(dir, "work")).sort()).to.deep.equal(["2", "3", "4"]);
        expect(fs.readdirSync(path.join(dir, "work.inflight"))).to.deep.equal([]);
        expect(log).to.match(/SIGTERM: taking no more messages; finishing the current one[\s\S]*message 1: done[\s\S]*stopped/);
    });
});

// ---- npm run drill against the fakes.

const T0 = Date.UTC(2026, 10, 30, 5, 10, 0);
const NODE_A = "ip-10-0-1-1";
const NODE_B = "ip-10-0-2-2";
const NODE_C = "ip-10-0-3-3";
const INSTANCE = { [NODE_A]: "i-0aaa", [NODE_B]: "i-0bbb", [NODE_C]: "i-0ccc" };
const WARM = Date.UTC(2026, 10, 30, 1);

const node = (name: string, created: number, extra: { deleting?: number; tainted?: boolean } = {}) => ({
    metadata: { name, creationTimestamp: iso(created), labels: { [NODEPOOL_TAG]: POOL, "notification-canada-ca/ephemeral": "true" }, ...(extra.deleting ? { deletionTimestamp: iso(extra.deleting) } : {}) },
    spec: { providerID: `aws:///ca-central-1a/${INSTANCE[name as keyof typeof INSTANCE]}`, ...(extra.tainted ? { taints: [{ key: "karpenter.sh/disrupted", effect: "NoSchedule" }] } : {}) },
    status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(created + 60_000) }] },
});
const claim = (name: string, nodeName: string, created: number, extra: { ready?: number; deleting?: number } = {}) => ({
    metadata: { name, creationTimestamp: iso(created), labels: { [NODEPOOL_TAG]: POOL }, ...(extra.deleting ? { deletionTimestamp: iso(extra.deleting) } : {}) },
    status: { nodeName, providerID: `aws:///ca-central-1a/${INSTANCE[nodeName as keyof typeof INSTANCE]}`, conditions: extra.ready ? [{ type: "Ready", status: "True", lastTransitionTime: iso(extra.ready) }] : [] },
});

interface PodAt {
    namespace: string;
    name: string;
    owner: { kind: string; name: string };
    node: string;
    created: number;
    running: number;
    burst?: boolean;
    /** Evicted at this time with this grace (deletionTimestamp = evicted + grace). */
    evicted?: number;
    exit?: { at: number; code: number; reason: string };
}
const pod = (p: PodAt, phase: "Running" | "Terminating" | "Done" = "Running") => ({
    metadata: {
        name: p.name,
        namespace: p.namespace,
        creationTimestamp: iso(p.created),
        labels: (p.burst === false ? {} : { [BURST]: "true" }) as Record<string, string>,
        ownerReferences: [p.owner],
        ...(phase !== "Running" && p.evicted !== undefined ? { deletionTimestamp: iso(p.evicted + 60_000), deletionGracePeriodSeconds: 60 } : {}),
    },
    spec: { nodeName: p.node, terminationGracePeriodSeconds: 60 },
    status: {
        phase: phase === "Done" ? (p.exit!.code === 0 ? "Succeeded" : "Failed") : "Running",
        containerStatuses: [
            { name: "worker", state: phase === "Done" ? { terminated: { exitCode: p.exit!.code, reason: p.exit!.reason, startedAt: iso(p.running), finishedAt: iso(p.exit!.at) } } : { running: { startedAt: iso(p.running) } } },
        ],
    },
});
/** A pod's life as watch events: added running, evicted, exited, gone. Times are absolute; `at` in seconds from `from`. */
function podLife(p: PodAt, from: number): Step[] {
    const at = (t: number) => Math.max(0, (t - from) / 1000);
    const steps: Step[] = [{ at: at(p.running), resource: "pods", type: "ADDED", object: pod(p) }];
    if (p.evicted !== undefined) steps.push({ at: at(p.evicted), resource: "pods", type: "MODIFIED", object: pod(p, "Terminating") });
    if (p.exit) {
        steps.push({ at: at(p.exit.at), resource: "pods", type: "MODIFIED", object: pod(p, "Done") });
        steps.push({ at: at(p.exit.at) + 1, resource: "pods", type: "DELETED", object: pod(p, "Done") });
    }
    return steps;
}

const RS = { kind: "ReplicaSet", name: "drill-worker-7d" };
const HEADROOM_RS = { kind: "ReplicaSet", name: "celery-headroom-5b" };

/** A simulated worker: which pod, when it starts taking messages, when it gets SIGTERM, and how it misbehaves. */
interface SimWorker {
    pod: string;
    from: number;
    sigterm?: number;
    /** Acknowledges (deletes) its message at SIGTERM without working it: a message lost. */
    ackEarly?: boolean;
    /** Records its message done but is killed before deleting it: a message worked twice. */
    killedBeforeDelete?: boolean;
}

/**
 * The cluster's and the workers' side of a drill on scratch: nodes A and B run the headroom pod and the synthetic
 * workers; FIS interrupts A. Karpenter deletes A's NodeClaim at +1 s after the notice, taints A, evicts its pods (60 s
 * grace); they finish their message and exit 0; a replacement NodeClaim's node C is Ready at +58 s and the replacements
 * run there at +63 s; A is removed at +70 s, before FIS interrupts it at +120 s.
 */
function scenario(opts: { killEarly?: boolean; loseOne?: boolean; live?: boolean } = {}) {
    const clock = new FakeClock(T0);
    const workers: SimWorker[] = [];
    let kube!: FakeKubeApi;
    const kubeOpts: FakeKubeApiOptions = {
        nodes: [node(NODE_A, WARM), node(NODE_B, WARM)],
        nodeclaims: [claim("notify-karpenter-aaaaa", NODE_A, WARM, { ready: WARM + 60_000 }), claim("notify-karpenter-bbbbb", NODE_B, WARM, { ready: WARM + 60_000 })],
        pods: [
            pod({ namespace: "default", name: "celery-headroom-5b-h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM }),
            pod({ namespace: "amazon-cloudwatch", name: "fluent-bit-x1", owner: { kind: "DaemonSet", name: "fluent-bit" }, node: NODE_A, created: WARM, running: WARM, burst: false }),
        ],
        onCreateDeployment: (namespace, _d, now) => {
            const names = ["a", "b", "c", "d"].map((x) => `drill-worker-7d-${x}`);
            names.forEach((n, i) => workers.push({ pod: n, from: now + 2000 }));
            return names.flatMap((n, i) => podLife({ namespace, name: n, owner: RS, node: i % 2 ? NODE_B : NODE_A, created: now, running: now + 2000 }, now));
        },
    };
    const aws: FakeAwsState = {
        account: ACCOUNT,
        clusters: {},
        addons: {},
        logGroups: {},
        images: [],
        subnets: [],
        securityGroups: [],
        offerings: [],
        instanceTypes: [],
        roles: {},
        policies: {},
        queues: {},
        rules: {},
        topics: {},
        keys: {},
        now: () => clock.now(),
        cloudwatch: {
            alarms: { [STOP_ALARM]: "OK" },
            metric: (name) => (name === "karpenter_nodeclaims_disrupted_total" ? [{ timestamp: started + 62_000, value: 1 }] : name === "karpenter_nodepools_limit" ? [{ timestamp: started + 60_000, value: 1 }] : []),
        },
        fis: {
            templates: [{ id: "EXTdrill1", tags: { Name: `${SCRATCH}-spot-interruption-drill`, "notify-karpenter:stack": "scratch" }, template: apiTemplate(1) }],
            timeline: { running: 1, actionStart: 2, actionEnd: 122, completed: 123 },
            instances: ["i-0aaa"],
            onStart: (_id, now) => {
                started = now;
                kube.schedule(interruption(now, workers, opts));
            },
        },
    };
    let started = 0;
    return {
        clock,
        aws,
        workers,
        kubeOpts,
        setKube: (k: FakeKubeApi) => (kube = k),
    };
}

/** The cluster's response to the notice at `t0 + 2 s`, and the workers' SIGTERMs. */
function interruption(t0: number, workers: SimWorker[], opts: { killEarly?: boolean; loseOne?: boolean; live?: boolean }): Step[] {
    const notice = t0 + 2000;
    const evicted = notice + 2000;
    const s = (t: number) => (t - t0) / 1000;
    for (const w of workers) {
        if (w.pod.endsWith("-a") || w.pod.endsWith("-c")) w.sigterm = evicted;
        if (opts.loseOne && w.pod.endsWith("-a")) w.ackEarly = true;
        if (w.pod.endsWith("-c")) w.killedBeforeDelete = true;
    }
    workers.push({ pod: "drill-worker-7d-e", from: notice + 63_000 }, { pod: "drill-worker-7d-f", from: notice + 63_000 });
    const displacedWorker = (name: string, exitAt: number): PodAt => ({
        namespace: DRILL_NAMESPACE,
        name,
        owner: RS,
        node: NODE_A,
        created: t0 - 60_000,
        running: t0 - 60_000,
        evicted,
        exit: opts.killEarly && name.endsWith("-a") ? { at: notice + 20_000, code: 137, reason: "Error" } : { at: exitAt, code: 0, reason: "Completed" },
    });
    const gone = notice + 70_000;
    return [
        { at: s(notice + 1000), resource: "nodeclaims", type: "MODIFIED", object: claim("notify-karpenter-aaaaa", NODE_A, WARM, { ready: WARM + 60_000, deleting: notice + 1000 }) },
        { at: s(notice + 1000), resource: "nodes", type: "MODIFIED", object: node(NODE_A, WARM, { tainted: true }) },
        { at: s(notice + 1000), resource: "nodeclaims", type: "ADDED", object: claim("notify-karpenter-ccccc", NODE_C, notice + 1000) },
        // Evictions: the pods' own events (deletionTimestamp = eviction + 60 s).
        ...(opts.live ? [] : [displacedWorker("drill-worker-7d-a", notice + 12_000), displacedWorker("drill-worker-7d-c", notice + 14_000)]).flatMap((p) => podLife(p, t0).filter((x) => "type" in x && x.type !== "ADDED")),
        ...podLife({ namespace: "default", name: "celery-headroom-5b-h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM, evicted, exit: { at: evicted + 1000, code: 0, reason: "Completed" } }, t0).filter((x) => "type" in x && x.type !== "ADDED"),
        { at: s(notice + 50_000), resource: "nodes", type: "ADDED", object: node(NODE_C, notice + 50_000) },
        { at: s(notice + 58_000), resource: "nodeclaims", type: "MODIFIED", object: claim("notify-karpenter-ccccc", NODE_C, notice + 1000, { ready: notice + 58_000 }) },
        ...(opts.live ? [] : ["e", "f"]).flatMap((x) => podLife({ namespace: DRILL_NAMESPACE, name: `drill-worker-7d-${x}`, owner: RS, node: NODE_C, created: evicted, running: notice + 63_000 }, t0)),
        ...podLife({ namespace: "default", name: "celery-headroom-5b-h2", owner: HEADROOM_RS, node: NODE_C, created: evicted, running: notice + 64_000 }, t0),
        { at: s(gone - 5000), resource: "nodes", type: "MODIFIED", object: node(NODE_A, WARM, { tainted: true, deleting: gone - 5000 }) },
        { at: s(gone), resource: "nodes", type: "DELETED", object: node(NODE_A, WARM, { tainted: true, deleting: gone - 5000 }) },
        { at: s(gone), resource: "nodeclaims", type: "DELETED", object: claim("notify-karpenter-aaaaa", NODE_A, WARM, { deleting: notice + 1000 }) },
    ];
}

/** The FIS template as GetExperimentTemplate answers it: the program's inputs in the API's shape. */
function apiTemplate(count: number, selectionMode = `COUNT(${count})`) {
    const a = experimentTemplateArgs({ nodePoolName: POOL, durationBeforeInterruption: "PT2M", nodes: count, clusterName: SCRATCH });
    return {
        description: a.description,
        roleArn: `arn:aws:iam::${ACCOUNT}:role/${SCRATCH}-fis-drill`,
        actions: Object.fromEntries(a.actions.map((x) => [x.name, { actionId: x.actionId, description: x.description, parameters: Object.fromEntries(x.parameters.map((p) => [p.key, p.value])), targets: { [x.target.key]: x.target.value } }])),
        targets: Object.fromEntries(a.targets.map((x) => [x.name, { resourceType: x.resourceType, selectionMode, resourceTags: Object.fromEntries(x.resourceTags.map((t) => [t.key, t.value])), filters: x.filters }])),
        stopConditions: [{ source: "aws:cloudwatch:alarm", value: `arn:aws:cloudwatch:ca-central-1:${ACCOUNT}:alarm:${STOP_ALARM}` }],
        logConfiguration: { logSchemaVersion: 2, cloudWatchLogsConfiguration: { logGroupArn: `arn:aws:logs:ca-central-1:${ACCOUNT}:log-group:/aws/fis/${SCRATCH}-spot-interruption-drill:*` } },
        experimentOptions: a.experimentOptions,
    };
}

/**
 * The workers, on the fake clock: each takes the next visible message of the work queue (its visibility 26 s), works
 * it 10 s, records it in the done queue and deletes it; after SIGTERM it finishes the current one and takes no more.
 */
function simulate(clock: FakeClock, aws: FakeAwsState, workers: SimWorker[]) {
    const busy = new Map<string, { n: string; handle: string; until: number }>();
    clock.onAdvance(async (now) => {
        const work = Object.entries(aws.sqs ?? {}).find(([k]) => k.endsWith("-work"))?.[1];
        const done = Object.entries(aws.sqs ?? {}).find(([k]) => k.endsWith("-done"))?.[1];
        if (!work || !done || work.deleted) return;
        for (const w of workers) {
            const job = busy.get(w.pod);
            if (job && w.ackEarly && w.sigterm !== undefined && now >= w.sigterm) {
                work.messages = work.messages.filter((m) => m.handle !== job.handle);
                busy.delete(w.pod);
                w.from = Infinity;
                continue;
            }
            if (job && now >= job.until) {
                done.messages.push({ id: `d${job.n}${w.pod}`, body: `${job.n} ${w.pod} ${Math.floor((job.until - 10_000) / 1000)} ${Math.floor(job.until / 1000)}`, visibleAt: 0, receives: 0 });
                if (!w.killedBeforeDelete || w.sigterm === undefined || now < w.sigterm) work.messages = work.messages.filter((m) => m.handle !== job.handle);
                busy.delete(w.pod);
            }
            if (!busy.has(w.pod) && now >= w.from && (w.sigterm === undefined || now < w.sigterm)) {
                const m = work.messages.find((x: FakeQueue["messages"][number]) => x.visibleAt <= now);
                if (!m) continue;
                Object.assign(m, { handle: `h-${m.id}-${m.receives + 1}`, visibleAt: now + 26_000, receives: m.receives + 1 });
                busy.set(w.pod, { n: m.body, handle: m.handle!, until: now + 10_000 });
            }
        }
    });
}

/** A kubeconfig whose context `scratch` is the scratch cluster, `staging` staging's, at the fake API. */
function kubeConfig(api: FakeKubeApi): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [
            { name: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${SCRATCH}`, server: api.url, skipTLSVerify: true },
            { name: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/notification-canada-ca-staging-eks-cluster`, server: api.url, skipTLSVerify: true },
        ],
        users: [{ name: "tester", token: "t" }],
        contexts: [
            { name: "scratch", cluster: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${SCRATCH}`, user: "tester" },
            { name: "staging", cluster: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/notification-canada-ca-staging-eks-cluster`, user: "tester" },
        ],
        currentContext: "scratch",
    });
    return kc;
}

interface Harness {
    kube: FakeKubeApi;
    aws: FakeAwsApi;
    clock: FakeClock;
    signals: EventEmitter;
    progress: string[];
    out: string;
}

async function harness(opts: Parameters<typeof scenario>[0] = {}, change: (s: ReturnType<typeof scenario>) => void = () => {}): Promise<Harness> {
    const sc = scenario(opts);
    change(sc);
    const kube = await new FakeKubeApi(sc.clock, sc.kubeOpts).start();
    sc.setKube(kube);
    simulate(sc.clock, sc.aws, sc.workers);
    const aws = await new FakeAwsApi(sc.aws).start();
    return { kube, aws, clock: sc.clock, signals: new EventEmitter(), progress: [], out: tempDir("drill-") };
}

const run = (h: Harness, argv: string[], progress?: (line: string) => void) =>
    drill(argv, { kubeConfig: () => kubeConfig(h.kube), aws: h.aws.clientConfig(), clock: h.clock, signals: h.signals, progress: progress ?? ((l) => h.progress.push(l)) });
const SCRATCH_ARGS = (h: Harness) => ["--stack", "scratch", "--context", "scratch", "--out", h.out];

describe("npm run drill, against the fake AWS (FIS, SQS, CloudWatch) and Kubernetes APIs", () => {
    let h: Harness | undefined;
    afterEach(async () => {
        if (!h) return;
        await h.kube.stop();
        await h.aws.stop();
        h = undefined;
    });

    it("follows a recorded interruption through the APIs' timestamps: every displaced pod Running elsewhere before the instance is gone, none cut short, no message lost; writes the report and cleans up", async () => {
        h = await harness();
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        const lines = r.output.split("\n");
        expect(lines[0]).to.equal(`Spot interruption drill of stack scratch on ${SCRATCH}: experiment EXP1abcdef of template EXTdrill1 (COUNT(1), PT2M), synthetic workload`);
        expect(lines).to.include.members([
            "      0  interruption notice: i-0aaa (FIS action started)",
            "      1  NodeClaim deleted by Karpenter: notify-karpenter-aaaaa (node ip-10-0-1-1)",
            "      1  node tainted: ip-10-0-1-1 (karpenter.sh/disrupted, first seen by the watch)",
            "      2  pod evicted: notify-karpenter-drill/drill-worker-7d-a (grace 60 s)",
            "     12  pod exited: notify-karpenter-drill/drill-worker-7d-a (worker: exit 0 (Completed))",
            "     58  replacement NodeClaim Ready: notify-karpenter-ccccc (node ip-10-0-3-3)",
            "     63  replacement Running: notify-karpenter-drill/drill-worker-7d-e (on ip-10-0-3-3)",
            "     70  node gone: ip-10-0-1-1 (seen by the watch)",
            "    120  instance interrupted: i-0aaa (FIS action completed)",
            "Displaced burst pods: 3 (2 synthetic)",
            "  default/celery-headroom-5b-h1 on ip-10-0-1-1: evicted at 2 s, exit 0 (Completed) at 3 s; replaced by celery-headroom-5b-h2, Running on ip-10-0-3-3 at 64 s",
            "Checks:",
            "  OK    experiment: EXP1abcdef completed: 1 instance interrupted (i-0aaa)",
            "  OK    replaced in time: 3 of 3 displaced burst pods Running elsewhere before their instance was gone, the last at 64 s",
            "  OK    grace periods: no displaced pod killed before its grace period ended",
            "  OK    non-burst pods: none ran on the interrupted node(s) but DaemonSet pods",
            '  OK    interruption metric: karpenter_nodeclaims_disrupted_total{reason="spot_interrupted"} rose by 1 (alarm notify-karpenter-scratch-karpenter-spot-interruptions)',
            "Result: OK",
            "Cleanup: deleted namespace notify-karpenter-drill",
        ]);
        // The worker killed between its record and its delete: its message came back and was worked twice, reported.
        expect(lines.find((l) => l.includes("OK    messages:"))).to.match(/^ {2}OK {4}messages: 60 sent, 60 completed, 0 lost, 1 processed twice \([0-9]+: redelivered after the visibility timeout\); 2 synthetic worker\(s\) displaced$/);
        expect(lines.filter((l) => l.startsWith("Cleanup: deleted queue"))).to.have.length(2);
        // The FIS calls, in order, and nothing left behind.
        const fis = h.aws.requests.filter((q) => q.startsWith("fis:"));
        expect(fis.slice(0, 3)).to.deep.equal(["fis:ListExperimentTemplates", "fis:GetExperimentTemplate", "fis:StartExperiment"]);
        expect(fis).not.to.include("fis:StopExperiment");
        expect(h.kube.namespaces.size).to.equal(0);
        expect(h.kube.serviceAccounts).to.deep.equal([`${DRILL_NAMESPACE}/drill-worker`]);
        expect(Object.values(h.aws.state.sqs!).every((q) => q.deleted)).to.equal(true);
        expect(h.signals.listenerCount("SIGINT") + h.signals.listenerCount("SIGTERM")).to.equal(0);

        const pods = fs.readFileSync(path.join(h.out, "pods.csv"), "utf8").trim().split("\r\n");
        expect(pods[0]).to.equal("pod,node,synthetic,evicted_s,grace_s,exit_codes,exited_s,cut_short,replacement,replacement_node,replacement_running_s,instance_gone_s");
        expect(pods.slice(1)).to.deep.equal([
            "default/celery-headroom-5b-h1,ip-10-0-1-1,false,2,60,0,3,,default/celery-headroom-5b-h2,ip-10-0-3-3,64,70",
            "notify-karpenter-drill/drill-worker-7d-a,ip-10-0-1-1,true,2,60,0,12,,notify-karpenter-drill/drill-worker-7d-e,ip-10-0-3-3,63,70",
            "notify-karpenter-drill/drill-worker-7d-c,ip-10-0-1-1,true,2,60,0,14,,notify-karpenter-drill/drill-worker-7d-f,ip-10-0-3-3,63,70",
        ]);
        const messages = fs.readFileSync(path.join(h.out, "messages.csv"), "utf8").trim().split("\r\n");
        expect(messages[0]).to.equal("message,sent_s,completions,first_completed_s,pods");
        expect(messages).to.have.length(61);
        const timeline = fs.readFileSync(path.join(h.out, "timeline.csv"), "utf8").trim().split("\r\n");
        expect(timeline[0]).to.equal("t_s,at,event,object,detail");
        expect(timeline).to.include("0,2026-11-30T05:10:04.000Z,interruption notice,i-0aaa,FIS action started");
        const series = readSeries(fs.readFileSync(path.join(h.out, "chart.svg"), "utf8"));
        expect(series.map((s) => s.name)).to.deep.equal(["displaced pods running", "replacements running", "pool nodes", "messages outstanding"]);
        expect(series[2].values.map(([, y]) => y)).to.include.members([2, 3]);
        expect(fs.readFileSync(path.join(h.out, "summary.txt"), "utf8")).to.include("Result: OK");
    });

    it("a lost message fails the run (a worker that acknowledged before it worked it)", async () => {
        h = await harness({ loseOne: true });
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/ {2}FAIL {2}messages: 60 sent, 59 completed, 1 lost, [0-9]+ processed twice.*; lost: [0-9]+$/m);
        expect(r.output).to.include("Result: FAILED: messages");
        expect(h.kube.namespaces.size).to.equal(0);
    });

    it("a pod killed (exit 137) before its grace period ended fails the run", async () => {
        h = await harness({ killEarly: true });
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include("  FAIL  grace periods: notify-karpenter-drill/drill-worker-7d-a killed (exit 137, Error) before its 60 s grace period ended");
    });

    it("Ctrl-C stops the experiment, deletes the namespace and the queues, and keeps what was seen", async () => {
        h = await harness();
        const hh = h;
        const r = await run(hh, SCRATCH_ARGS(hh), (l) => {
            hh.progress.push(l);
            if (/^\[ +2[0-9]\.?[0-9]? s\] interruption/.test(l)) hh.signals.emit("SIGINT");
        });
        expect(r.exitCode).to.equal(1);
        expect(hh.progress).to.include("SIGINT: stopping the experiment and cleaning up");
        expect(r.output).to.include("Result: FAILED: interrupted (SIGINT)");
        expect(r.output).to.include("Cleanup: stopped experiment EXP1abcdef (a notice already sent is not taken back)");
        expect(hh.aws.requests).to.include("fis:StopExperiment");
        expect(hh.aws.state.fis!.experiments!.EXP1abcdef.stopped).to.be.a("number");
        expect(hh.kube.namespaces.size).to.equal(0);
        expect(Object.values(hh.aws.state.sqs!).every((q) => q.deleted)).to.equal(true);
        expect(hh.signals.listenerCount("SIGINT")).to.equal(0);
        expect(fs.readFileSync(path.join(hh.out, "timeline.csv"), "utf8")).to.include("interruption notice");
    });

    it("refuses to start while a stop-condition alarm is in ALARM, with no ephemeral node, beyond --nodes, or with a template taking more: nothing created", async () => {
        h = await harness({}, (s) => (s.aws.cloudwatch!.alarms[STOP_ALARM] = "ALARM"));
        let r = await run(h, SCRATCH_ARGS(h));
        expect(r).to.deep.equal({ exitCode: 1, output: `Refused: stop-condition alarm ${STOP_ALARM} is in ALARM (Threshold Crossed: fake ALARM): burst capacity is already short; drill when it is OK` });
        h.aws.state.cloudwatch!.alarms[STOP_ALARM] = "OK";
        expect((await run(h, [...SCRATCH_ARGS(h), "--nodes", "2"])).output).to.equal("Refused: --nodes 2 is more than the config allows (notify-karpenter:drill.nodes 1)");
        h.aws.state.fis!.templates[0].template = apiTemplate(3);
        expect((await run(h, SCRATCH_ARGS(h))).output).to.equal(
            "Refused: template EXTdrill1 it takes COUNT(3), more than the 1 node(s) allowed (--nodes, at most drill.nodes 1); pulumi up puts it back as the config says",
        );
        h.aws.state.fis!.templates[0].template = apiTemplate(1, "ALL");
        expect((await run(h, SCRATCH_ARGS(h))).output).to.include("it selects ALL, not COUNT(n): it could take every node of the pool");
        expect(h.aws.requests.filter((q) => q === "fis:StartExperiment")).to.deep.equal([]);
        expect(h.kube.namespaces.size + h.kube.serviceAccounts.length).to.equal(0);
        await h.kube.stop();
        await h.aws.stop();
        h = await harness({}, (s) => (s.kubeOpts.nodes = []));
        expect((await run(h, SCRATCH_ARGS(h))).output).to.match(/^Refused: no ephemeral node of NodePool notify-karpenter runs \(Ready\): there is nothing to interrupt/);
        expect(h.aws.requests.filter((q) => q === "fis:StartExperiment")).to.deep.equal([]);
    });

    it("refuses production without --production, another cluster's context, and a stack with drill.enabled false", async () => {
        h = await harness();
        const prod = await run(h, ["--stack", "production", "--context", "scratch"]);
        expect(prod.exitCode).to.equal(2);
        expect(prod.output.split("\n")[0]).to.equal("the production stack is drilled only with --production: it interrupts a node that serves GC Notify's traffic");
        expect(await run(h, ["--stack", "production", "--context", "scratch", "--production"])).to.deep.equal({ exitCode: 1, output: "Refused: notify-karpenter:drill.enabled is false for stack production: the stack has no FIS template to start" });
        const other = await run(h, ["--stack", "scratch", "--context", "staging"]);
        expect(other.exitCode).to.equal(2);
        expect(other.output).to.match(/^--context staging is cluster ".*notification-canada-ca-staging-eks-cluster" .*not the stack's cluster notify-karpenter-scratch/);
        expect((await run(h, ["--stack", "scratch", "--context", "scratch", "--workload", "both"])).output.split("\n")[0]).to.equal('--workload must be synthetic or live (got "both")');
        expect(h.aws.requests).to.deep.equal([]);
        expect(h.kube.requests).to.deep.equal([]);
    });

    it("exits 3 when FIS answers 403, when AWS is unreachable and when the cluster is unreachable, having created nothing", async () => {
        h = await harness({}, (s) => (s.aws.deny = ["fis:ListExperimentTemplates"]));
        const denied = await run(h, SCRATCH_ARGS(h));
        expect(denied.exitCode).to.equal(3);
        expect(denied.output).to.match(/^Could not run: fis:ListExperimentTemplates: HTTP 403 AccessDeniedException: User is not authorized to perform: fis:ListExperimentTemplates \(docs\/drill\.md lists the permissions\)$/);
        h.aws.state.deny = [];
        await h.aws.stop();
        const noAws = await run(h, SCRATCH_ARGS(h));
        expect(noAws.exitCode).to.equal(3);
        expect(noAws.output).to.match(/^Could not run: fis:ListExperimentTemplates: .*ECONNREFUSED/);
        await h.aws.start();
        await h.kube.stop();
        const noKube = await run(h, SCRATCH_ARGS(h));
        expect(noKube.exitCode).to.equal(3);
        expect(noKube.output).to.match(/^Could not run: the cluster of context scratch did not answer: .*ECONNREFUSED/);
        expect(fs.readdirSync(h.out)).to.deep.equal([]);
        await h.kube.start();
    });

    it("live: watches GC Notify's own burst pods and reads its queues' depth; no synthetic workload", async () => {
        h = await harness({ live: true }, (s) => {
            s.aws.queues = { "eks-notification-canada-casend-sms-high": {}, "eks-notification-canada-casend-email-high": {} };
            s.aws.sqs = { "eks-notification-canada-casend-sms-high": { attributes: {}, messages: [{ id: "m", body: "x", visibleAt: 0, receives: 0 }] }, "eks-notification-canada-casend-email-high": { attributes: {}, messages: [] } };
            s.aws.fis!.templates[0].tags["notify-karpenter:stack"] = "staging";
            s.aws.fis!.templates[0].tags.Name = "notification-canada-ca-staging-eks-cluster-spot-interruption-drill";
            const t = s.aws.fis!.templates[0].template as any;
            t.targets["pool-spot-instances"].resourceTags = { [NODEPOOL_TAG]: POOL };
            t.stopConditions = ["nodepool-near-limit", "unschedulable-pods"].map((a) => ({ source: "aws:cloudwatch:alarm", value: `arn:aws:cloudwatch:ca-central-1:${ACCOUNT}:alarm:notification-canada-ca-staging-eks-cluster-karpenter-${a}` }));
            s.aws.cloudwatch!.alarms = Object.fromEntries(t.stopConditions.map((c: any) => [c.value.split(":alarm:")[1], "OK"]));
        });
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--out", h.out]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("staging on notification-canada-ca-staging-eks-cluster");
        expect(r.output).to.include("live workload");
        expect(r.output).to.include("Queue depths (visible + in flight), first and largest:\n  eks-notification-canada-casend-sms-high: 1 at the start, at most 1, 1 at the end");
        expect(r.output).to.include("Displaced burst pods: 1 (0 synthetic)");
        expect(r.output).not.to.include("messages:");
        expect(h.kube.namespaces.size + h.kube.serviceAccounts.length).to.equal(0);
        expect(h.aws.requests.filter((q) => q === "sqs:CreateQueue")).to.deep.equal([]);
    });
});

describe("drill verdict pieces", () => {
    it("a node that goes before its pods were evicted is Karpenter not draining: cut short, and no replacement fails 'replaced in time'", () => {
        const rec = new DrillRecord(() => T0 + 100_000, { templateId: "t", count: 1, durationBeforeInterruption: "PT2M", instances: ["i-0aaa"], notice: T0, status: "completed", actionEnded: T0 + 120_000 }, BURST);
        rec.node("ADDED", node(NODE_A, WARM));
        rec.pod("ADDED", pod({ namespace: "default", name: "h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM }));
        rec.node("DELETED", node(NODE_A, WARM));
        const cs = checks({ stack: "scratch", cluster: SCRATCH, workload: "live", record: rec, alarmName: "a", messagesPlanned: 0, end: T0 + 100_000 });
        expect(cs.find((c) => c.name === "grace periods")!.message).to.equal("default/h1 never evicted: its node went first (Karpenter did not drain it)");
        expect(cs.find((c) => c.name === "replaced in time")!.ok).to.equal(false);
        expect(cs.find((c) => c.name === "interruption metric")!.ok).to.equal(undefined);
    });
});

/** Every way `value` breaks the botocore shape `name`: required members, types, lengths, patterns, enums. */
function modelProblems(shapes: Record<string, any>, name: string, value: unknown, at: string): string[] {
    const s = shapes[name];
    const out: string[] = [];
    switch (s.type) {
        case "structure": {
            if (typeof value !== "object" || value === null || Array.isArray(value)) return [`${at} must be an object`];
            const v = value as Record<string, unknown>;
            for (const r of s.required ?? []) if (v[r] === undefined) out.push(`${at}.${r} is required`);
            for (const [k, x] of Object.entries(v)) {
                if (x === undefined) continue;
                if (!s.members[k]) out.push(`${at}.${k} is not a member of ${name}`);
                else out.push(...modelProblems(shapes, s.members[k].shape, x, `${at}.${k}`));
            }
            return out;
        }
        case "list":
            if (!Array.isArray(value)) return [`${at} must be a list`];
            if ((s.min !== undefined && value.length < s.min) || (s.max !== undefined && value.length > s.max)) out.push(`${at} must have ${s.min ?? 0} to ${s.max ?? "any"} items`);
            return [...out, ...value.flatMap((x, i) => modelProblems(shapes, s.member.shape, x, `${at}[${i}]`))];
        case "map":
            if (typeof value !== "object" || value === null) return [`${at} must be a map`];
            if (s.max !== undefined && Object.keys(value).length > s.max) out.push(`${at} must have at most ${s.max} entries`);
            return [...out, ...Object.entries(value).flatMap(([k, x]) => [...modelProblems(shapes, s.key.shape, k, `${at} key ${k}`), ...modelProblems(shapes, s.value.shape, x, `${at}.${k}`)])];
        case "string":
            if (typeof value !== "string") return [`${at} must be a string`];
            if ((s.min !== undefined && value.length < s.min) || (s.max !== undefined && value.length > s.max)) out.push(`${at} must be ${s.min ?? 0} to ${s.max ?? "any"} characters`);
            if (s.pattern && !new RegExp(s.pattern, "u").test(value)) out.push(`${at} must match ${s.pattern}`);
            if (s.enum && !s.enum.includes(value)) out.push(`${at} must be one of ${s.enum.join(", ")}`);
            return out;
        case "integer":
        case "long":
            return Number.isInteger(value) ? [] : [`${at} must be an integer`];
        case "boolean":
            return typeof value === "boolean" ? [] : [`${at} must be true or false`];
        default:
            return [];
    }
}
