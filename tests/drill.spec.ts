// The spot interruption drill: its FIS template, role and config as the stacks deploy them; its synthetic workers run as
// real processes (bash, against a fake SQS kept in files, with the hooks the pods carry); and `npm run drill` against
// the fake AWS (FIS, SQS, EC2, CloudWatch, CloudWatch Logs), the fake Kubernetes API and a fake GC Notify API, replaying
// a recorded-style interruption on the fake clock with simulated workers on the fake queues.
import { expect } from "chai";
import { type ChildProcess, spawn, spawnSync } from "child_process";
import { EventEmitter } from "events";
import * as fs from "fs";
import * as path from "path";
import { KubeConfig } from "@kubernetes/client-node";
import { celeryPreStop } from "../components/models/celeryPlacement.ts";
import { DRILL_NAMESPACE, EKS_CLUSTER_NAME_TAG, NODEPOOL_TAG, isoDurationSeconds } from "../components/models/fis.ts";
import { experimentRolePolicy, experimentTemplateArgs } from "../components/spotInterruptionDrill.ts";
import { fluentBitRecord, taskLines } from "../ops/celeryLogs.ts";
import { DrillRecord, type DrillRun, checks, workerDeployment } from "../ops/drillRun.ts";
import { drill } from "../ops/drill.ts";
import { GC_NOTIFY_WORKER_SCRIPT, UNDER_A_SHELL, workerBudget } from "../ops/drillWorkload.ts";
import { policyAllows } from "../ops/preflightChecks.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { type StackConfig, drillWorkerGraceSeconds } from "../stacks/config.ts";
import { type EntryFault, FakeAwsApi, type FakeAwsState, type FakeQueue, type Fault, authorizingAction } from "./fakeAwsApi.ts";
import type { Deadlines } from "../ops/deadlines.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions, type Step, iso } from "./fakeKubeApi.ts";
import { FakeNotifyApi } from "./fakeNotifyApi.ts";
import { buildStack, configErrorOf, customResources, patchSections, stackConfig } from "./helpers.ts";
import { readSeries, tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";

const ACCOUNT = "123456789012";
const SCRATCH = "notify-karpenter-scratch";
const STAGING = "notification-canada-ca-staging-eks-cluster";
const POOL = "notify-karpenter";
const BURST = "notification-canada-ca/celery-burst";
const STOP_ALARM = `${SCRATCH}-karpenter-nodepool-near-limit`;
/** A service's API model in botocore 1.43.67, where BOTOCORE_REFERENCE_DIR names it (.ci/run sets it where CI has the reference data); else undefined. */
const botocoreModel = (service: string, version: string) => {
    const file = process.env.BOTOCORE_REFERENCE_DIR && path.join(process.env.BOTOCORE_REFERENCE_DIR, service, version, "service-2.json");
    return file && fs.existsSync(file) ? file : undefined;
};

// ---- The template and its role, as the stacks deploy them.

describe("spot interruption drill: the FIS template, its role and config", () => {
    it("scratch and staging create a template valid for the FIS API: the spot action, its target key and resource type, the pool's and the cluster's tags, COUNT(1), PT2M, the burst capacity alarms, logging", async () => {
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
            // Karpenter tags every instance with its cluster (aws/karpenter-provider-aws v1.14.1 pkg/utils/utils.go:116-121).
            expect(t.inputs.targets).to.deep.equal([
                {
                    name: "pool-spot-instances",
                    resourceType: "aws:ec2:spot-instance",
                    selectionMode: "COUNT(1)",
                    resourceTags: [
                        { key: NODEPOOL_TAG, value: POOL },
                        { key: "eks:eks-cluster-name", value: cluster },
                    ],
                    filters: [{ path: "State.Name", values: ["running"] }],
                },
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
    const FIS_MODEL = botocoreModel("fis", "2020-12-01");
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

    it("the experiment role interrupts nothing outside this cluster's pool: only instances with both tags, in the stack's region; it may find instances and deliver its log", async () => {
        const { resources } = await buildStack("scratch");
        const doc = JSON.parse(customResources(resources).find((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.inputs.name === "spot-interruption-drill")!.inputs.policy);
        expect(doc).to.deep.equal(experimentRolePolicy({ partition: "aws", region: "ca-central-1", accountId: ACCOUNT, nodePoolName: POOL, clusterName: SCRATCH }));
        const instance = (region: string, account = ACCOUNT) => `arn:aws:ec2:${region}:${account}:instance/i-0abc`;
        const send = (resource: string, tags: Record<string, string>, region = "ca-central-1") =>
            policyAllows(doc, { action: "ec2:SendSpotInstanceInterruptions", resource, context: { ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:ResourceTag/${k}`, v])), "aws:RequestedRegion": region } }, { conditions: "evaluate" });
        const ours = { [NODEPOOL_TAG]: POOL, [EKS_CLUSTER_NAME_TAG]: SCRATCH };
        expect(send(instance("ca-central-1"), ours)).to.equal(true);
        expect(send(instance("ca-central-1"), { ...ours, [NODEPOOL_TAG]: "other-pool" })).to.equal(false);
        // Staging's pool has the same name: its instances differ by the cluster's tag only.
        expect(send(instance("ca-central-1"), { ...ours, [EKS_CLUSTER_NAME_TAG]: STAGING })).to.equal(false);
        expect(send(instance("ca-central-1"), { [NODEPOOL_TAG]: POOL })).to.equal(false);
        expect(send(instance("ca-central-1"), {})).to.equal(false);
        expect(send(instance("us-east-1"), ours, "us-east-1")).to.equal(false);
        expect(send(instance("ca-central-1", "999999999999"), ours)).to.equal(false);
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

    it("config: one clear line per bad value; ALL is no value nodes can take, and 5 nodes is EC2's quota", async () => {
        const error = (patch: Record<string, unknown>) => configErrorOf("staging", patchSections("staging", { drill: patch }));
        const image = "public.ecr.aws/aws-cli/aws-cli:2.27.0";
        expect(await error({ nodes: "ALL" })).to.equal('staging: notify-karpenter:drill.nodes must be an integer from 1 to 5 (got "ALL")');
        expect(await error({ nodes: 6 })).to.equal("staging: notify-karpenter:drill.nodes must be an integer from 1 to 5 (got 6)");
        expect(await error({ durationBeforeInterruption: "PT1M" })).to.equal('staging: notify-karpenter:drill.durationBeforeInterruption must be from PT2M to PT15M: FIS interrupts 2 to 15 minutes after the action starts, with the notice 2 minutes before (got "PT1M", 60 s)');
        expect(await error({ durationBeforeInterruption: "2m" })).to.match(/drill\.durationBeforeInterruption must be an ISO 8601 duration in minutes or seconds such as PT2M or PT150S \(got "2m"\)$/);
        expect(await error({ synthetic: { image, workSeconds: 26 } })).to.equal(
            "staging: notify-karpenter:drill.synthetic.workSeconds must be under placement.burst.queueVisibilityTimeoutSeconds (26): a message worked longer reappears and is worked twice (got 26)",
        );
        // (4 + 1) × (20 s + 2 s) + 10 s + 5 s = 125 s: more than the 100 s an interruption leaves after Karpenter's reaction.
        expect(await error({ synthetic: { image, taskSeconds: [0.1, 20] } })).to.equal(
            "staging: notify-karpenter:drill.synthetic.taskSeconds must let a gc-notify worker run all it holds within the 100 s an interruption leaves (120 s notice less 20 s for Karpenter to evict): (placement.burst.prefetchMultiplier 4 + 1) × (the longest 20 s + 2 s of AWS CLI calls) + 10 s + a 5 s receive is 125 s; shorten the longest task",
        );
        expect(await error({ synthetic: { image, profile: "early-ack" } })).to.match(/drill\.synthetic\.profile must be one of "gc-notify", "late-ack"|drill\.synthetic\.profile must be .*gc-notify.*late-ack/);
        expect(await error({ synthetic: { image, taskSeconds: [] } })).to.match(/drill\.synthetic\.taskSeconds must be a list of 1 to 100 items, each a number from 0\.1 to 600/);
        expect(await error({ synthetic: { image: "aws-cli" } })).to.match(/drill\.synthetic\.image must be a container image with a tag or digest/);
        expect(await error({ workload: "live", live: { queues: [] } })).to.equal("staging: notify-karpenter:drill.live.queues must name GC Notify's Celery queues when drill.workload is live: the drill reads their depth");
        const two = (await error({ nodes: 0, durationBeforeInterruption: "PT20M" })).split("\n");
        expect(two).to.have.length(2);
        expect(await configErrorOf("staging", patchSections("staging", { nodePool: { capacityTypes: ["on-demand"] } }))).to.include("notify-karpenter:drill.enabled must be false when nodePool.capacityTypes has no spot");
        expect(isoDurationSeconds("PT2M30S")).to.equal(150);
    });

    it("shapes the gc-notify workers like burst Celery pods: the burst workers' preStop in the pod spec, under a shell as in GC Notify's pods, a grace from its prefetch and its longest task; GC Notify's hook with --hook gc-notify", () => {
        const cfg = stackConfig("scratch");
        const queues = { work: "https://sqs/w", done: "https://sqs/d" };
        const d = workerDeployment(cfg, { profile: "gc-notify", hook: "notify-karpenter", queues, replicas: 4 });
        const spec = d.spec.template.spec;
        expect(d.metadata.namespace).to.equal(DRILL_NAMESPACE);
        expect(d.spec.template.metadata.labels).to.include({ [BURST]: "true" });
        expect(spec.priorityClassName).to.equal("celery");
        // prefetchMultiplier 4 × (the longest task 15 s + 2 s of AWS CLI calls) + 10 s of slack and margin + a 5 s receive.
        expect(spec.terminationGracePeriodSeconds).to.equal(100);
        expect(JSON.stringify(spec.tolerations)).to.include("notification-canada-ca/ephemeral");
        const c = spec.containers[0] as any;
        expect(c.image).to.equal("public.ecr.aws/aws-cli/aws-cli:2.27.0");
        expect(c.command).to.deep.equal(["/bin/bash", "-c", ...UNDER_A_SHELL, GC_NOTIFY_WORKER_SCRIPT]);
        expect(c.lifecycle.preStop).to.deep.equal(celeryPreStop(100));
        expect(c.env).to.deep.include.members([
            { name: "TASK_SECONDS", value: "0.1 0.1 0.2 0.2 0.3 0.5 0.5 1 12 15" },
            { name: "CONCURRENCY", value: "4" },
            { name: "PREFETCH_MULTIPLIER", value: "4" },
        ]);
        expect(spec.serviceAccountName).to.equal("drill-worker");
        const gc = workerDeployment(cfg, { profile: "gc-notify", hook: "gc-notify", queues, replicas: 4 }).spec.template.spec.containers[0] as any;
        expect(gc.lifecycle.preStop.exec.command.slice(0, 2)).to.deep.equal(["/bin/bash", "-c"]);
        expect(gc.lifecycle.preStop.exec.command[2]).to.include("kill -KILL");
        // The late-ack worker takes one message at a time: 10 s + a 5 s receive + 10 s; no hook, it is the container's process.
        const late = workerDeployment(cfg, { profile: "late-ack", hook: "notify-karpenter", queues, replicas: 4 }).spec.template.spec;
        expect(late.terminationGracePeriodSeconds).to.equal(25);
        expect((late.containers[0] as any).lifecycle).to.equal(undefined);
        expect(late.containers[0].env).to.deep.include({ name: "VISIBILITY_TIMEOUT", value: "26" });
    });

    it("gives the synthetic workers the strictest burst budget the stack has (staging: maxUnavailable 1), GC Notify's strictest without any (scratch)", () => {
        expect(workerBudget(stackConfig("staging"), 4).spec).to.deep.equal({ maxUnavailable: 1, selector: { matchLabels: { app: "drill-worker" } } });
        expect(workerBudget(stackConfig("scratch"), 4).spec).to.deep.equal({ maxUnavailable: 1, selector: { matchLabels: { app: "drill-worker" } } });
        // At 10 pods, 50% lets 5 go and minAvailable 2 lets 8 go: maxUnavailable 1 stays the strictest.
        const cfg = stackConfig("staging");
        const only = (deployments: object[]): StackConfig => ({ ...cfg, placement: { ...cfg.placement, burst: { ...cfg.placement.burst, deployments } } }) as StackConfig;
        expect(workerBudget(only([{ name: "a", minAvailable: 3 }, { name: "b", maxUnavailable: "50%" }]), 4).spec).to.include({ minAvailable: 3 });
        expect(workerBudget(only([{ name: "a", minAvailable: "80%" }, { name: "b", maxUnavailable: 2 }]), 10).spec).to.include({ minAvailable: "80%" });
    });
});

// ---- The worker scripts, as they run: bash, with an `aws` that keeps queues in files.

/**
 * receive-message (up to --max-number-of-messages, moving them in flight), change-message-visibility (back), send-message
 * and delete-message on queues kept as directories, one file a message.
 */
const FAKE_AWS = `#!/bin/bash
op=$2; shift 2; max=1
while [ $# -gt 0 ]; do case $1 in --queue-url) q=$2; shift 2;; --receipt-handle) h=$2; shift 2;; --message-body) b=$2; shift 2;; --max-number-of-messages) max=$2; shift 2;; *) shift;; esac; done
case $op in
  receive-message) fs=$(ls "$q" 2>/dev/null | sort -n | head -"$max"); [ -z "$fs" ] && { sleep 0.2; echo None; exit 0; }
    for f in $fs; do mv "$q/$f" "$q.inflight/$f"; printf '%s\\t%s\\n' "$f" "$(cat "$q.inflight/$f")"; done;;
  change-message-visibility) mv "$q.inflight/$h" "$q/$h";;
  send-message) echo "$b" >> "$q";;
  delete-message) rm "$q.inflight/$h";;
esac
`;

/** A work queue of messages 1..n, the fake `aws` first on PATH. */
function fakeQueues(n: number) {
    const dir = tempDir("worker-");
    fs.mkdirSync(path.join(dir, "bin"));
    fs.writeFileSync(path.join(dir, "bin", "aws"), FAKE_AWS, { mode: 0o755 });
    for (const d of ["work", "work.inflight"]) fs.mkdirSync(path.join(dir, d));
    for (let i = 1; i <= n; i++) fs.writeFileSync(path.join(dir, "work", String(i)), String(i));
    const list = (d: string) => fs.readdirSync(path.join(dir, d)).map(Number).sort((a, b) => a - b);
    const done = () => (fs.existsSync(path.join(dir, "done")) ? fs.readFileSync(path.join(dir, "done"), "utf8").trim().split("\n").map((l) => Number(l.split(" ")[0])) : []);
    return { dir, env: { PATH: `${path.join(dir, "bin")}:${process.env.PATH}`, WORK_QUEUE_URL: path.join(dir, "work"), DONE_QUEUE_URL: path.join(dir, "done") }, queued: () => list("work"), inFlight: () => list("work.inflight"), done };
}

const exited = (p: ChildProcess) => new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => p.on("exit", (code, signal) => resolve({ code, signal })));
const waitFor = async (what: () => boolean, ms = 10_000) => {
    for (let i = 0; i < ms / 20 && !what(); i++) await new Promise((r) => setTimeout(r, 20));
};

describe("the synthetic workers, as processes", function () {
    this.timeout(60_000);
    before(function () {
        if (spawnSync("bash", ["--version"]).status !== 0) this.skip();
    });

    it("late-ack (ops/drillWorker.sh): works numbered messages one at a time; on SIGTERM finishes the current one, takes no more, and exits 0", async () => {
        const q = fakeQueues(4);
        const worker = spawn("bash", [path.join(PROJECT_DIR, "ops", "drillWorker.sh")], { env: { ...q.env, HOSTNAME: "drill-worker-a", WORK_SECONDS: "1", VISIBILITY_TIMEOUT: "26", RECEIVE_WAIT_SECONDS: "0" } });
        let log = "";
        worker.stdout.on("data", (c) => (log += c));
        const end = exited(worker);
        // SIGTERM while message 1 is being worked.
        await waitFor(() => log.includes("message 1: working"));
        worker.kill("SIGTERM");
        expect((await end).code).to.equal(0);
        expect(q.done()).to.deep.equal([1]);
        expect(q.queued()).to.deep.equal([2, 3, 4]);
        expect(q.inFlight()).to.deep.equal([]);
        expect(log).to.match(/SIGTERM: taking no more messages; finishing the current one[\s\S]*message 1: done[\s\S]*stopped/);
    });

    /**
     * The gc-notify worker as its pod runs it (under a shell, its pid in the pidfile), shrunk to 2 threads and a prefetch
     * multiplier of 2 on a queue of 12 messages, and the preStop hook `hook` started once it holds 4 (and 2 more on its
     * threads): the node starts draining.
     */
    async function gcNotifyDrain(hook: (pidfile: string) => string[], longTask: number) {
        const q = fakeQueues(12);
        const pidfile = path.join(q.dir, "celery.pid");
        // Tasks of 0.2 s and `longTask` s in turn: each thread's share of the 6 it may hold takes about 1.5 × longTask.
        const env = { ...q.env, HOSTNAME: "drill-worker-a", TASK_SECONDS: `0.2 ${longTask}`, CONCURRENCY: "2", PREFETCH_MULTIPLIER: "2", RECEIVE_WAIT_SECONDS: "0", CELERY_PIDFILE: pidfile };
        const worker = spawn("/bin/bash", ["-c", ...UNDER_A_SHELL, GC_NOTIFY_WORKER_SCRIPT], { env, stdio: ["ignore", "pipe", "pipe"] });
        let log = "";
        worker.stdout.on("data", (c) => (log += c));
        const end = exited(worker);
        await waitFor(() => fs.existsSync(pidfile) && q.inFlight().length >= 4 && q.queued().length <= 6);
        const [file, ...args] = hook(pidfile);
        const h = spawn(file, args, { env: { PATH: process.env.PATH, CELERY_PIDFILE: pidfile, CELERY_PRESTOP_LOG: path.join(q.dir, "hook.log") }, stdio: "ignore" });
        const [w] = await Promise.all([end, exited(h)]);
        // A thread of a killed worker might still be asleep: wait past the longest task before counting.
        if (w.code !== 0) await new Promise((r) => setTimeout(r, longTask * 1000 + 500));
        const lost = Array.from({ length: 12 }, (_, i) => i + 1).filter((n) => !q.done().includes(n) && !q.queued().includes(n) && !q.inFlight().includes(n));
        return { exit: w.code, done: q.done(), lost, heldBack: q.inFlight(), queued: q.queued(), log };
    }

    it("gc-notify, with the program's hook: on SIGTERM it receives nothing more, runs all it holds to the end (each deleted as it starts) and exits 0, nothing lost; with GC Notify's own hook: SIGKILL at about 10 s, and the tasks running then, already acknowledged, are lost (any not yet started stay SQS's, to come back after the visibility timeout)", async () => {
        const [ours, theirs] = await Promise.all([gcNotifyDrain(() => celeryPreStop(40).exec.command, 3), gcNotifyDrain(() => ["/bin/bash", path.join(PROJECT_DIR, "ops", "gcNotifyRunCeleryExit.sh")], 6)]);
        expect(ours.exit, ours.log).to.equal(0);
        expect(ours.done.length + ours.queued.length).to.equal(12);
        expect(ours.lost).to.deep.equal([]);
        expect(ours.heldBack).to.deep.equal([]);
        expect(ours.log).to.match(/Task drill\.work\[1\] received[\s\S]*Warm shutdown \(MainProcess\)[\s\S]*Task drill\.work\[[0-9]+\] succeeded in 3s: None[\s\S]*worker: stopped/);

        expect(theirs.exit).to.equal(137);
        expect(theirs.lost.length).to.be.within(1, 2);
        expect(theirs.done.length + theirs.lost.length + theirs.heldBack.length + theirs.queued.length).to.equal(12);
        // The Celery lines the drill's live check reads: a received task with no outcome is one that did not end.
        const open = new Set(taskLines(theirs.log).filter((t) => t.outcome === "received").map((t) => t.id));
        for (const t of taskLines(theirs.log).filter((x) => x.outcome !== "received")) open.delete(t.id);
        expect([...open].map(Number).sort((a, b) => a - b)).to.deep.equal([...theirs.lost, ...theirs.heldBack].sort((a, b) => a - b));
    });
});

// ---- npm run drill against the fakes.

const T0 = Date.UTC(2026, 10, 30, 5, 10, 0);
const NODE_A = "ip-10-0-1-1";
const NODE_B = "ip-10-0-2-2";
const NODE_C = "ip-10-0-3-3";
const INSTANCE = { [NODE_A]: "i-0aaa", [NODE_B]: "i-0bbb", [NODE_C]: "i-0ccc" };
const WARM = Date.UTC(2026, 10, 30, 1);
const NOTIFY_KEY = `gcntfy-drill-${"0".repeat(8)}-1111-2222-3333-${"4".repeat(12)}-${"a".repeat(8)}-bbbb-cccc-dddd-${"e".repeat(12)}`;

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
    labels?: Record<string, string>;
    /** Evicted at this time with this grace (deletionTimestamp = evicted + grace). */
    evicted?: number;
    grace?: number;
    exit?: { at: number; code: number; reason: string };
}
const pod = (p: PodAt, phase: "Running" | "Terminating" | "Done" = "Running") => ({
    metadata: {
        name: p.name,
        namespace: p.namespace,
        creationTimestamp: iso(p.created),
        labels: { ...(p.burst === false ? {} : { [BURST]: "true" }), ...p.labels } as Record<string, string>,
        ownerReferences: [p.owner],
        ...(phase !== "Running" && p.evicted !== undefined ? { deletionTimestamp: iso(p.evicted + (p.grace ?? 60) * 1000), deletionGracePeriodSeconds: p.grace ?? 60 } : {}),
    },
    spec: { nodeName: p.node, terminationGracePeriodSeconds: p.grace ?? 60 },
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
    if (p.exit) steps.push(...podExit(p, from));
    return steps;
}
const podExit = (p: PodAt, from: number): Step[] => {
    const at = Math.max(0, (p.exit!.at - from) / 1000);
    return [
        { at, resource: "pods", type: "MODIFIED", object: pod(p, "Done") },
        { at: at + 1, resource: "pods", type: "DELETED", object: pod(p, "Done") },
    ];
};

const RS = { kind: "ReplicaSet", name: "drill-worker-7d" };
const HEADROOM_RS = { kind: "ReplicaSet", name: "celery-headroom-5b" };
const HEADROOM = { app: "celery-headroom" };
const CORE_RS = { kind: "ReplicaSet", name: "notify-celery-core-tasks-burst-7f" };
const GC_NOTIFY_NS = "notification-canada-ca";

/** A simulated synthetic worker on the fake clock. */
interface SimWorker {
    pod: string;
    from: number;
    sigterm?: number;
    /** gc-notify with GC Notify's hook: SIGKILL this long after SIGTERM. */
    killAfterMs?: number;
    /** late-ack: records its message done but is killed before deleting it (a message worked twice). */
    killedBeforeDelete?: boolean;
    /** Called once when it exits (gc-notify): when, with what code, and the clock's time. */
    onExit?: (at: number, code: number, now: number) => void;
    held: { n: string; handle: string }[];
    threads: { n: string; started: number; until: number }[];
    exited?: boolean;
}
const simWorker = (pod: string, from: number): SimWorker => ({ pod, from, held: [], threads: [] });

interface ScenarioOptions {
    /** --profile late-ack (scratch's config says gc-notify). */
    lateAck?: boolean;
    /** --hook gc-notify. */
    gcNotifyHook?: boolean;
    /** Staging's GC Notify workers and their logs; `lostTask`: one of them received a task and never ended it. */
    live?: boolean;
    lostTask?: boolean;
    /** Karpenter records no SpotInterrupted event. */
    noEvent?: boolean;
    /** Seconds from the notice to Karpenter's deletion of the NodeClaim (1). */
    reactAfter?: number;
    /** FIS's durationBeforeInterruption (PT2M). */
    duration?: string;
    /** FIS says failed once the instance is gone. */
    fisFails?: boolean;
}

/**
 * The cluster's and the workers' side of a drill on scratch: nodes A and B run the headroom pod and two synthetic
 * workers each; FIS interrupts A. Karpenter deletes A's NodeClaim 1 s after the notice, taints A, evicts its pods; the
 * workers run what they hold and exit (or GC Notify's hook kills them 10 s after SIGTERM); a replacement NodeClaim's
 * node C is Ready at +58 s and the replacements run there at +63 s; Karpenter terminates A's instance at +66 s and A
 * is removed at +70 s, before FIS's interruption at +120 s.
 */
function scenario(opts: ScenarioOptions = {}) {
    const clock = new FakeClock(T0);
    const workers: SimWorker[] = [];
    const events: any[] = [];
    const logs: { timestamp: number; message: string; stream?: string }[] = [];
    let kube!: FakeKubeApi;
    let grace = 60;
    const kubeOpts: FakeKubeApiOptions = {
        nodes: [node(NODE_A, WARM), node(NODE_B, WARM)],
        nodeclaims: [claim("notify-karpenter-aaaaa", NODE_A, WARM, { ready: WARM + 60_000 }), claim("notify-karpenter-bbbbb", NODE_B, WARM, { ready: WARM + 60_000 })],
        pods: [
            pod({ namespace: "default", name: "celery-headroom-5b-h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM, labels: HEADROOM }),
            pod({ namespace: "amazon-cloudwatch", name: "fluent-bit-x1", owner: { kind: "DaemonSet", name: "fluent-bit" }, node: NODE_A, created: WARM, running: WARM, burst: false }),
            ...(opts.live ? [pod({ namespace: GC_NOTIFY_NS, name: "notify-celery-core-tasks-burst-7f-x1", owner: CORE_RS, node: NODE_A, created: WARM, running: WARM, grace: 70 })] : []),
        ],
        events,
        onCreateDeployment: (namespace, d, now) => {
            grace = d.spec.template.spec.terminationGracePeriodSeconds;
            const names = ["a", "b", "c", "d"].map((x) => `drill-worker-7d-${x}`);
            names.forEach((n) => workers.push(simWorker(n, now + 2000)));
            return names.flatMap((n, i) => podLife({ namespace, name: n, owner: RS, node: i % 2 ? NODE_B : NODE_A, created: now, running: now + 2000, grace }, now));
        },
    };
    const durationS = isoDurationSeconds(opts.duration ?? "PT2M")!;
    const aws: FakeAwsState = {
        account: ACCOUNT,
        clusters: {},
        addons: {},
        logGroups: { [`/aws/containerinsights/${SCRATCH}/application`]: [], [`/aws/containerinsights/${STAGING}/application`]: logs },
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
        instances: { "i-0aaa": {} },
        cloudwatch: {
            alarms: { [STOP_ALARM]: "OK" },
            metric: (name) => (name === "karpenter_nodeclaims_disrupted_total" ? [{ timestamp: started + 62_000, value: 1 }] : name === "karpenter_nodepools_limit" ? [{ timestamp: started + 60_000, value: 1 }] : []),
        },
        fis: {
            templates: [{ id: "EXTdrill1", tags: { Name: `${SCRATCH}-spot-interruption-drill`, "notify-karpenter:stack": "scratch" }, template: apiTemplate(1, undefined, SCRATCH, opts.duration) }],
            timeline: opts.fisFails ? { running: 1, actionStart: 2, failed: { at: 2 + durationS + 1, reason: "Target resolution failed: i-0aaa is terminated" } } : { running: 1, actionStart: 2, actionEnd: 2 + durationS, completed: 3 + durationS },
            instances: ["i-0aaa"],
            onStart: (_id, now) => {
                started = now;
                const notice = now + 2000 + (durationS - 120) * 1000;
                if (aws.instances?.["i-0aaa"]) aws.instances["i-0aaa"].goneAt = notice + 66_000;
                kube.schedule(interruption(now, notice, workers, grace, opts, kube));
                if (opts.live) events.push({ metadata: { name: "ip-10-0-1-1.2", namespace: "default" }, involvedObject: { kind: "Node", name: NODE_A }, reason: "FailedDraining", type: "Warning", message: "Failed to drain node, evicting pod violates a PDB (Pod=notification-canada-ca/notify-celery-core-tasks-burst-7f-x9)", firstTimestamp: iso(notice + 2000) });
                if (!opts.noEvent) events.push({ metadata: { name: "notify-karpenter-aaaaa.1", namespace: "default" }, involvedObject: { kind: "NodeClaim", name: "notify-karpenter-aaaaa" }, reason: "SpotInterrupted", type: "Warning", message: "Spot interruption warning was triggered", firstTimestamp: iso(notice + 1000) });
                if (opts.live) logs.push(...liveLogs(notice, opts));
            },
        },
    };
    let started = 0;
    return { clock, aws, workers, kubeOpts, setKube: (k: FakeKubeApi) => (kube = k), logs };
}

/** A Fluent Bit record of GC Notify's celery input: the line with the runtime's prefix in `log`, the pod beside it. */
const celeryRecord = (podName: string, at: number, line: string) =>
    JSON.stringify({ log: `${iso(at).replace("Z", "123456Z")} stdout F ${line}`, stream: "stdout", kubernetes: { pod_name: podName, namespace_name: GC_NOTIFY_NS, container_name: "notify-celery-core-tasks-burst" } });
const celeryLine = (at: number, text: string) => `[${iso(at).replace("T", " ").replace("Z", "").replace(".", ",")}: INFO/MainProcess] ${text}`;

/** The displaced GC Notify worker's log (and its replacement's): task 1 ends, task 2 is received again by x2. */
function liveLogs(notice: number, opts: ScenarioOptions) {
    const rec = (pod: string, at: number, text: string) => ({ timestamp: at, logStream: "notify-celery-core-tasks-burst", message: celeryRecord(pod, at, celeryLine(at, text)) });
    const x1 = "notify-celery-core-tasks-burst-7f-x1";
    const [t1, t2, t3] = ["1b1b1b1b-0000-4000-8000-000000000001", "2c2c2c2c-0000-4000-8000-000000000002", "3d3d3d3d-0000-4000-8000-000000000003"];
    return [
        rec(x1, notice - 3000, `Task deliver_email[${t1}] received`),
        rec(x1, notice - 2000, `Task deliver_email[${t2}] received`),
        ...(opts.lostTask ? [rec(x1, notice - 1000, `Task send-delivery-status[${t3}] received`)] : []),
        rec(x1, notice + 1000, `Task deliver_email[${t1}] succeeded in 3.2s: None`),
        { timestamp: notice + 2500, logStream: "notify-celery-core-tasks-burst", message: celeryRecord(x1, notice + 2500, "celery-prestop: SIGTERM to Celery worker 7: it finishes the tasks it holds; SIGKILL in 65 s if it has not exited") },
        rec("notify-celery-core-tasks-burst-7f-x2", notice + 70_000, `Task deliver_email[${t2}] received`),
        rec("notify-celery-core-tasks-burst-7f-x2", notice + 71_000, `Task deliver_email[${t2}] succeeded in 0.4s: None`),
    ];
}

/** The cluster's response to the notice, and the workers' SIGTERMs. */
function interruption(t0: number, notice: number, workers: SimWorker[], grace: number, opts: ScenarioOptions, kube: FakeKubeApi): Step[] {
    const reacted = notice + (opts.reactAfter ?? 1) * 1000;
    const evicted = reacted + 1000;
    const s = (t: number) => (t - t0) / 1000;
    const displacedWorker = (name: string, exit?: PodAt["exit"]): PodAt => ({ namespace: DRILL_NAMESPACE, name, owner: RS, node: NODE_A, created: t0 - 60_000, running: t0 - 60_000, evicted, grace, exit });
    for (const w of workers.filter((x) => x.pod.endsWith("-a") || x.pod.endsWith("-c"))) {
        w.sigterm = evicted;
        if (opts.gcNotifyHook) w.killAfterMs = 10_000;
        if (opts.lateAck && w.pod.endsWith("-c")) w.killedBeforeDelete = true;
        // The pod's end follows the worker's (gc-notify: when it has run what it holds, or is killed).
        w.onExit = (at, code, now) => kube.schedule(podExit(displacedWorker(w.pod, { at, code, reason: code === 0 ? "Completed" : "Error" }), now));
    }
    workers.push(simWorker("drill-worker-7d-e", notice + 63_000), simWorker("drill-worker-7d-f", notice + 63_000));
    const gone = notice + 70_000;
    return [
        { at: s(reacted), resource: "nodeclaims", type: "MODIFIED", object: claim("notify-karpenter-aaaaa", NODE_A, WARM, { ready: WARM + 60_000, deleting: reacted }) },
        { at: s(reacted), resource: "nodes", type: "MODIFIED", object: node(NODE_A, WARM, { tainted: true }) },
        { at: s(reacted), resource: "nodeclaims", type: "ADDED", object: claim("notify-karpenter-ccccc", NODE_C, reacted) },
        // Evictions: the pods' own events (deletionTimestamp = eviction + grace). The late-ack workers exit as scripted.
        ...(opts.live ? [] : ["a", "c"].map((x) => displacedWorker(`drill-worker-7d-${x}`, opts.lateAck ? { at: notice + (x === "a" ? 12_000 : 14_000), code: 0, reason: "Completed" } : undefined)))
            .flatMap((p) => podLife(p, t0).filter((x) => "type" in x && x.type !== "ADDED")),
        ...podLife({ namespace: "default", name: "celery-headroom-5b-h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM, labels: HEADROOM, evicted, grace: 0, exit: { at: evicted + 1000, code: 0, reason: "Completed" } }, t0).filter((x) => "type" in x && x.type !== "ADDED"),
        ...(opts.live
            ? podLife({ namespace: GC_NOTIFY_NS, name: "notify-celery-core-tasks-burst-7f-x1", owner: CORE_RS, node: NODE_A, created: WARM, running: WARM, evicted, grace: 70, exit: { at: notice + 20_000, code: 0, reason: "Completed" } }, t0).filter((x) => "type" in x && x.type !== "ADDED")
            : []),
        { at: s(notice + 50_000), resource: "nodes", type: "ADDED", object: node(NODE_C, notice + 50_000) },
        { at: s(notice + 58_000), resource: "nodeclaims", type: "MODIFIED", object: claim("notify-karpenter-ccccc", NODE_C, reacted, { ready: notice + 58_000 }) },
        ...(opts.live ? [] : ["e", "f"]).flatMap((x) => podLife({ namespace: DRILL_NAMESPACE, name: `drill-worker-7d-${x}`, owner: RS, node: NODE_C, created: evicted, running: notice + 63_000, grace }, t0)),
        ...(opts.live ? podLife({ namespace: GC_NOTIFY_NS, name: "notify-celery-core-tasks-burst-7f-x2", owner: CORE_RS, node: NODE_C, created: evicted, running: notice + 63_000, grace: 70 }, t0) : []),
        ...podLife({ namespace: "default", name: "celery-headroom-5b-h2", owner: HEADROOM_RS, node: NODE_C, created: evicted, running: notice + 64_000, labels: HEADROOM }, t0),
        { at: s(gone - 5000), resource: "nodes", type: "MODIFIED", object: node(NODE_A, WARM, { tainted: true, deleting: gone - 5000 }) },
        { at: s(gone), resource: "nodes", type: "DELETED", object: node(NODE_A, WARM, { tainted: true, deleting: gone - 5000 }) },
        { at: s(gone), resource: "nodeclaims", type: "DELETED", object: claim("notify-karpenter-aaaaa", NODE_A, WARM, { deleting: reacted }) },
    ];
}

/** The FIS template as GetExperimentTemplate answers it: the program's inputs in the API's shape. */
function apiTemplate(count: number, selectionMode = `COUNT(${count})`, cluster = SCRATCH, duration = "PT2M") {
    const a = experimentTemplateArgs({ nodePoolName: POOL, durationBeforeInterruption: duration, nodes: count, clusterName: cluster });
    return {
        description: a.description,
        roleArn: `arn:aws:iam::${ACCOUNT}:role/${cluster}-fis-drill`,
        actions: Object.fromEntries(a.actions.map((x) => [x.name, { actionId: x.actionId, description: x.description, parameters: Object.fromEntries(x.parameters.map((p) => [p.key, p.value])), targets: { [x.target.key]: x.target.value } }])),
        targets: Object.fromEntries(a.targets.map((x) => [x.name, { resourceType: x.resourceType, selectionMode, resourceTags: Object.fromEntries(x.resourceTags.map((t) => [t.key, t.value])), filters: x.filters }])),
        stopConditions: [{ source: "aws:cloudwatch:alarm", value: `arn:aws:cloudwatch:ca-central-1:${ACCOUNT}:alarm:${STOP_ALARM}` }],
        logConfiguration: { logSchemaVersion: 2, cloudWatchLogsConfiguration: { logGroupArn: `arn:aws:logs:ca-central-1:${ACCOUNT}:log-group:/aws/fis/${cluster}-spot-interruption-drill:*` } },
        experimentOptions: a.experimentOptions,
    };
}

/**
 * The workers, on the fake clock (a tick is a second). gc-notify, as ops/drillWorkerGcNotify.sh: it holds up to
 * concurrency × prefetchMultiplier received messages (visibility 26 s), starts them on its threads in turn, deleting
 * each as it starts, and records it done when its task time is up; after SIGTERM it receives nothing more and exits
 * once all it holds is done, unless it is killed first (its running tasks are then lost; its held messages come back).
 * late-ack: one message at a time, recorded and then deleted; after SIGTERM it finishes the current one.
 */
function simulate(clock: FakeClock, aws: FakeAwsState, workers: SimWorker[], cfg: StackConfig, lateAck: boolean) {
    const s = cfg.drill.synthetic!;
    const prefetch = s.concurrency * cfg.placement.burst.prefetchMultiplier;
    const late = new Map<string, { n: string; handle: string; until: number }>();
    const record = (done: FakeQueue, n: string, pod: string, started: number, until: number) =>
        done.messages.push({ id: `d${n}${pod}${until}`, body: `${n} ${pod} ${started / 1000} ${until / 1000}`, visibleAt: 0, receives: 0 });
    const receive = (work: FakeQueue, now: number, max: number) => {
        const got = work.messages.filter((x) => x.visibleAt <= now).slice(0, max);
        for (const m of got) Object.assign(m, { handle: `h-${m.id}-${m.receives + 1}`, visibleAt: now + 26_000, receives: m.receives + 1 });
        return got.map((m) => ({ n: m.body, handle: m.handle! }));
    };
    clock.onAdvance(async (now) => {
        const work = Object.entries(aws.sqs ?? {}).find(([k]) => k.endsWith("-work"))?.[1];
        const done = Object.entries(aws.sqs ?? {}).find(([k]) => k.endsWith("-done"))?.[1];
        if (!work || !done || work.deleted) return;
        for (const w of workers) {
            if (w.exited || now < w.from) continue;
            const stopping = w.sigterm !== undefined && now >= w.sigterm;
            if (lateAck) {
                const job = late.get(w.pod);
                if (job && now >= job.until) {
                    record(done, job.n, w.pod, job.until - s.workSeconds * 1000, job.until);
                    if (!w.killedBeforeDelete || !stopping) work.messages = work.messages.filter((m) => m.handle !== job.handle);
                    late.delete(w.pod);
                }
                if (!late.has(w.pod) && !stopping) {
                    const [m] = receive(work, now, 1);
                    if (m) late.set(w.pod, { ...m, until: now + s.workSeconds * 1000 });
                }
                continue;
            }
            if (stopping && w.killAfterMs !== undefined && now >= w.sigterm! + w.killAfterMs) {
                w.exited = true;
                w.onExit?.(w.sigterm! + w.killAfterMs, 137, now);
                continue;
            }
            for (const t of w.threads.filter((x) => now >= x.until)) record(done, t.n, w.pod, t.started, t.until);
            w.threads = w.threads.filter((x) => now < x.until);
            while (w.held.length && w.threads.length < s.concurrency) {
                const m = w.held.shift()!;
                work.messages = work.messages.filter((x) => x.handle !== m.handle);
                w.threads.push({ n: m.n, started: now, until: now + s.taskSeconds[Number(m.n) % s.taskSeconds.length] * 1000 });
            }
            if (stopping) {
                if (!w.held.length && !w.threads.length) {
                    w.exited = true;
                    w.onExit?.(now, 0, now);
                }
                continue;
            }
            w.held.push(...receive(work, now, prefetch - w.held.length));
        }
    });
}

/** A kubeconfig whose context `scratch` is the scratch cluster, `staging` staging's, at the fake API. */
function kubeConfig(api: FakeKubeApi): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [
            { name: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${SCRATCH}`, server: api.url, skipTLSVerify: true },
            { name: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${STAGING}`, server: api.url, skipTLSVerify: true },
        ],
        users: [{ name: "tester", token: "t" }],
        contexts: [
            { name: "scratch", cluster: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${SCRATCH}`, user: "tester" },
            { name: "staging", cluster: `arn:aws:eks:ca-central-1:${ACCOUNT}:cluster/${STAGING}`, user: "tester" },
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
    notify?: FakeNotifyApi;
    env: Record<string, string>;
}

async function harness(opts: ScenarioOptions = {}, change: (s: ReturnType<typeof scenario>) => void = () => {}): Promise<Harness> {
    const sc = scenario(opts);
    change(sc);
    const kube = await new FakeKubeApi(sc.clock, sc.kubeOpts).start();
    sc.setKube(kube);
    simulate(sc.clock, sc.aws, sc.workers, stackConfig("scratch"), !!opts.lateAck);
    const aws = await new FakeAwsApi(sc.aws).start();
    return { kube, aws, clock: sc.clock, signals: new EventEmitter(), progress: [], out: tempDir("drill-"), env: {} };
}

/** The deadlines of these runs: the real ones (nothing waits on them), a throttled call retried at once. */
const DEADLINES: Partial<Deadlines> = { throttleFirstDelayMs: 1 };
const run = async (h: Harness, argv: string[], progress?: (line: string) => void, deadlines = DEADLINES, clock: { now(): number; sleep(ms: number): Promise<void> } = h.clock) => {
    const r = await drill(argv, { kubeConfig: () => kubeConfig(h.kube), aws: h.aws.clientConfig(), clock, signals: h.signals, env: h.env, progress: progress ?? ((l) => h.progress.push(l)), deadlines });
    // In every run: FIS is asked no more once it has answered a final state (its times come with it).
    const states = h.aws.experimentStates;
    const final = states.findIndex((st) => ["completed", "stopped", "failed", "cancelled"].includes(st));
    expect(final === -1 ? states.length : final + 1, `fis:GetExperiment answered ${states.join(", ")}`).to.equal(states.length);
    return r;
};
const SCRATCH_ARGS = (h: Harness) => ["--stack", "scratch", "--context", "scratch", "--out", h.out];
const STAGING_ARGS = (h: Harness) => ["--stack", "staging", "--context", "staging", "--out", h.out];

/** Staging's template and alarms in the fake FIS and CloudWatch, and its two live queues. */
function asStaging(s: ReturnType<typeof scenario>): void {
    s.aws.queues = { "eks-notification-canada-casend-sms-high": {}, "eks-notification-canada-casend-email-high": {} };
    s.aws.sqs = { "eks-notification-canada-casend-sms-high": { attributes: {}, messages: [{ id: "m", body: "x", visibleAt: 0, receives: 0 }] }, "eks-notification-canada-casend-email-high": { attributes: {}, messages: [] } };
    s.aws.fis!.templates[0].tags["notify-karpenter:stack"] = "staging";
    s.aws.fis!.templates[0].tags.Name = `${STAGING}-spot-interruption-drill`;
    const t = apiTemplate(1, undefined, STAGING) as any;
    t.stopConditions = ["nodepool-near-limit", "unschedulable-pods"].map((a) => ({ source: "aws:cloudwatch:alarm", value: `arn:aws:cloudwatch:ca-central-1:${ACCOUNT}:alarm:${STAGING}-karpenter-${a}` }));
    s.aws.fis!.templates[0].template = t;
    s.aws.cloudwatch!.alarms = Object.fromEntries(t.stopConditions.map((c: any) => [c.value.split(":alarm:")[1], "OK"]));
}

/**
 * The lines of docs/drill.md's example (the fenced block that starts with the report's first line) that `printed`
 * lacks, in order: a line "..." stands for lines left out, and "…" in a line for text that varies from run to run.
 */
function docExampleNotPrinted(printed: string[]): string[] {
    const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs", "drill.md"), "utf8");
    const block = /^```\n(Spot interruption drill of stack [\s\S]*?)^```$/m.exec(doc);
    if (!block) return ["docs/drill.md: the example is gone"];
    const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const missing: string[] = [];
    let at = 0;
    for (const line of block[1].trimEnd().split("\n")) {
        if (line.trim() === "...") continue;
        const pattern = new RegExp(`^${line.split("…").map(escape).join(".*?")}$`);
        const found = printed.findIndex((p, i) => i >= at && pattern.test(p));
        if (found < 0) missing.push(line);
        else at = found + 1;
    }
    return missing;
}

/** Every AWS call the drill made in these tests, to hold docs/drill.md's list of permissions to them. */
const calls = new Set<string>();

describe("npm run drill, against the fake AWS (FIS, SQS, EC2, CloudWatch, CloudWatch Logs) and Kubernetes APIs", () => {
    let h: Harness | undefined;
    afterEach(async () => {
        if (!h) return;
        for (const r of h.aws.requests) calls.add(r);
        await h.kube.stop();
        await h.aws.stop();
        await h.notify?.stop();
        h = undefined;
    });

    it("gc-notify workers with the program's hook: every displaced Celery pod runs what it holds and exits, is replaced within the notice, Karpenter reacts within its bound, no message is lost; writes the report and cleans up", async () => {
        h = await harness();
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        const lines = r.output.split("\n");
        expect(lines[0]).to.equal(`Spot interruption drill of stack scratch on ${SCRATCH}: experiment EXP1abcdef of template EXTdrill1 (COUNT(1), PT2M), synthetic workload (gc-notify, notify-karpenter hook)`);
        expect(lines).to.include.members([
            "      0  rebalance recommendation: i-0aaa (FIS action started; Karpenter takes no action on it)",
            "      0  interruption notice: i-0aaa (120 s before the interruption)",
            "      1  NodeClaim deleted by Karpenter: notify-karpenter-aaaaa (node ip-10-0-1-1)",
            "      1  SpotInterrupted event: notify-karpenter-aaaaa (Karpenter)",
            "      1  node tainted: ip-10-0-1-1 (karpenter.sh/disrupted, first seen by the watch)",
            "      2  pod evicted: notify-karpenter-drill/drill-worker-7d-a (grace 100 s)",
            "     58  replacement NodeClaim Ready: notify-karpenter-ccccc (node ip-10-0-3-3)",
            "     63  replacement Running: notify-karpenter-drill/drill-worker-7d-e (on ip-10-0-3-3)",
            "     66  instance gone: i-0aaa (EC2 terminated: User initiated (2026-11-30 05:11:10 GMT))",
            "     70  node gone: ip-10-0-1-1 (seen by the watch)",
            "    120  FIS action ended: i-0aaa (completed)",
            "Displaced burst pods: 3 (2 synthetic, 1 headroom)",
            "Checks:",
            "  OK    experiment: EXP1abcdef completed: 1 instance interrupted (i-0aaa)",
            "  OK    reaction: Karpenter deleted notify-karpenter-aaaaa at 1 s after the notice (bound 20 s)",
            "  OK    interruption seen: Karpenter's SpotInterrupted event on notify-karpenter-aaaaa at 1 s",
            "  -     headroom: 1 headroom pod(s) displaced, restored at 64 s (reported only: headroom is capacity a burst preempts, and waits for a new node)",
            "  OK    grace periods: no displaced pod killed before its grace period ended",
            "  OK    non-burst pods: none ran on the interrupted node(s) but DaemonSet pods",
            '  OK    interruption metric: karpenter_nodeclaims_disrupted_total{reason="spot_interrupted"} rose by 1 (alarm notify-karpenter-scratch-karpenter-spot-interruptions)',
            "Result: OK",
            "Cleanup: deleted namespace notify-karpenter-drill",
        ]);
        expect(lines.find((l) => l.includes("OK    replaced:"))).to.match(/^ {2}OK {4}replaced: 2 of 2 displaced Celery pods Running elsewhere within 120 s of the notice \(when EC2 takes the node\), the last at 63 s; from exit to replacement Running: [0-9.]+ s, [0-9.]+ s$/);
        expect(lines.find((l) => l.includes("OK    messages:"))).to.match(/^ {2}OK {4}messages: 200 sent, 200 completed, 0 lost, [0-9]+ processed twice.*; 2 gc-notify workers with the notify-karpenter hook displaced$/);
        // Both displaced workers ran every message they held to the end and exited 0, within their grace.
        const exits = lines.filter((l) => / {2}notify-karpenter-drill\/drill-worker-7d-[ac] on/.test(l));
        expect(exits).to.have.length(2);
        for (const l of exits) expect(l).to.match(/evicted at 2 s, exit 0 \(Completed\) at [0-9.]+ s; replaced by drill-worker-7d-[ef]/);
        expect(lines.filter((l) => l.startsWith("Cleanup: deleted queue"))).to.have.length(2);
        // The FIS calls, in order, and nothing left behind; the workers' budget was created with them.
        const fis = h.aws.requests.filter((q) => q.startsWith("fis:"));
        expect(fis.slice(0, 3)).to.deep.equal(["fis:ListExperimentTemplates", "fis:GetExperimentTemplate", "fis:StartExperiment"]);
        expect(fis).not.to.include("fis:StopExperiment");
        expect(h.kube.namespaces.size).to.equal(0);
        expect(h.kube.serviceAccounts).to.deep.equal([`${DRILL_NAMESPACE}/drill-worker`]);
        expect(h.kube.budgets.map((b) => b.spec)).to.deep.equal([{ maxUnavailable: 1, selector: { matchLabels: { app: "drill-worker" } } }]);
        expect(Object.values(h.aws.state.sqs!).every((q) => q.deleted)).to.equal(true);
        expect(h.signals.listenerCount("SIGINT") + h.signals.listenerCount("SIGTERM")).to.equal(0);

        const pods = fs.readFileSync(path.join(h.out, "pods.csv"), "utf8").trim().split("\r\n");
        expect(pods[0]).to.equal("pod,node,kind,evicted_s,grace_s,exit_codes,exited_s,cut_short,replacement,replacement_node,replacement_running_s,instance_gone_s");
        expect(pods[1]).to.equal("default/celery-headroom-5b-h1,ip-10-0-1-1,headroom,2,0,0,3,,default/celery-headroom-5b-h2,ip-10-0-3-3,64,66");
        expect(pods.slice(2).map((p) => p.split(",").slice(0, 6).join(","))).to.deep.equal([
            "notify-karpenter-drill/drill-worker-7d-a,ip-10-0-1-1,synthetic,2,100,0",
            "notify-karpenter-drill/drill-worker-7d-c,ip-10-0-1-1,synthetic,2,100,0",
        ]);
        const messages = fs.readFileSync(path.join(h.out, "messages.csv"), "utf8").trim().split("\r\n");
        expect(messages[0]).to.equal("message,sent_s,completions,first_completed_s,pods");
        expect(messages).to.have.length(201);
        const timeline = fs.readFileSync(path.join(h.out, "timeline.csv"), "utf8").trim().split("\r\n");
        expect(timeline[0]).to.equal("t_s,at,event,object,detail");
        expect(timeline).to.include("0,2026-11-30T05:10:04.000Z,interruption notice,i-0aaa,120 s before the interruption");
        const series = readSeries(fs.readFileSync(path.join(h.out, "chart.svg"), "utf8"));
        expect(series.map((s) => s.name)).to.deep.equal(["displaced pods running", "replacements running", "pool nodes", "messages outstanding"]);
        expect(series[2].values.map(([, y]) => y)).to.include.members([2, 3]);
        expect(fs.readFileSync(path.join(h.out, "summary.txt"), "utf8")).to.include("Result: OK");
        // docs/drill.md quotes this run: each line of its example is printed, in that order.
        expect(docExampleNotPrinted(lines), "lines of docs/drill.md's example this replay no longer prints (in this order)").to.deep.equal([]);
    });

    it("--hook gc-notify reproduces the loss: GC Notify's own hook kills each displaced worker 10 s after SIGTERM (exit 137, before its grace), and the tasks it had started (acknowledged) are lost", async () => {
        h = await harness({ gcNotifyHook: true });
        const r = await run(h, [...SCRATCH_ARGS(h), "--hook", "gc-notify"]);
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output.split("\n")[0]).to.match(/synthetic workload \(gc-notify, gc-notify hook\)$/);
        expect(r.output).to.include("  FAIL  grace periods: notify-karpenter-drill/drill-worker-7d-a killed (exit 137, Error) before its 100 s grace period ended; notify-karpenter-drill/drill-worker-7d-c killed (exit 137, Error) before its 100 s grace period ended");
        const messages = r.output.split("\n").find((l) => l.includes("messages:"))!;
        expect(messages).to.match(/^ {2}FAIL {2}messages: 200 sent, 19[0-9] completed, [1-8] lost, .*2 gc-notify workers with the gc-notify hook displaced; lost \(deleted \(acknowledged as their task started\) and never completed\): [0-9, ]+$/);
        expect(r.output).to.match(/Result: FAILED: grace periods, messages$/m);
        expect(h.kube.namespaces.size).to.equal(0);
    });

    it("--profile late-ack: one message at a time, deleted once done; a worker killed between its record and its delete makes a message worked twice, reported, not failed", async () => {
        h = await harness({ lateAck: true });
        const r = await run(h, [...SCRATCH_ARGS(h), "--profile", "late-ack"]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("synthetic workload (late-ack)");
        expect(r.output).to.include("pod evicted: notify-karpenter-drill/drill-worker-7d-a (grace 25 s)");
        expect(r.output).to.match(/ {2}OK {4}messages: 60 sent, 60 completed, 0 lost, 1 processed twice \([0-9]+: received again after the visibility timeout\); 2 late-ack workers displaced$/m);
        expect(h.kube.budgets).to.have.length(1);
    });

    it("a lost message is declared only once the work queue has held nothing for the visibility timeout and a minute (its depth asked every 5 s), after a long poll of the done queue", async () => {
        h = await harness({ gcNotifyHook: true });
        const r = await run(h, [...SCRATCH_ARGS(h), "--hook", "gc-notify"]);
        expect(r.exitCode).to.equal(1);
        // The last message went at +100 s from the notice; the run settled no sooner than 26 s + 60 s after the work
        // queue emptied, which was after that.
        const timeline = fs.readFileSync(path.join(h.out, "timeline.csv"), "utf8");
        const notice = Date.parse(/,([^,]+),interruption notice,/.exec(timeline)![1]);
        const sent = fs.readFileSync(path.join(h.out, "messages.csv"), "utf8").trim().split("\r\n").slice(1).map((l) => Number(l.split(",")[1]));
        expect(Math.max(...sent)).to.be.at.least(99);
        expect(h.clock.now() - notice).to.be.at.least((Math.max(...sent) + 26 + 60) * 1000);
        // Asked every 5 s once all is sent (WORK_DEPTH_POLL_MS), not each second: it settles within about two polls
        // (the queue empties up to one before it is seen, and the wait ends on the next), and the wait cost about 20
        // GetQueueAttributes calls, not 90.
        expect(h.clock.now() - notice).to.be.at.most((Math.max(...sent) + 26 + 60 + 10) * 1000);
        const waited = h.clock.now() - notice - Math.max(...sent) * 1000;
        expect(h.aws.requests.filter((x) => x === "sqs:GetQueueAttributes").length).to.be.at.most(Math.ceil(waited / 5000) + 2);
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

    it("an SQS call refused after the notice ends the run with the call named and cleans up (the operator's policy must list it)", async () => {
        h = await harness();
        const hh = h;
        const r = await run(hh, SCRATCH_ARGS(hh), (l) => {
            hh.progress.push(l);
            if (/^\[ +1[0-9]\.?[0-9]? s\] interruption/.test(l)) hh.aws.state.deny = ["sqs:GetQueueAttributes", "sqs:ReceiveMessage"];
        });
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/^Result: FAILED: sqs:(ReceiveMessage|GetQueueAttributes)( \S+)?: HTTP 400 AccessDeniedException: User is not authorized to perform: sqs:\w+ \(the credentials lack sqs:\w+; docs\/drill\.md lists the permissions\)$/m);
        expect(r.output).to.include("Cleanup: stopped experiment EXP1abcdef");
        expect(hh.kube.namespaces.size).to.equal(0);
    });

    // SQS's batch calls, held to its API model where it is at hand (botocore 1.43.67 sqs 2012-11-05).
    const SQS_MODEL = botocoreModel("sqs", "2012-11-05");
    const sqsShapes = () => (SQS_MODEL ? JSON.parse(fs.readFileSync(SQS_MODEL, "utf8")).shapes : undefined);
    // The two tests below hold their entries and answers to the model only where it is at hand: say so when it is not.
    if (!SQS_MODEL) it.skip("the batch calls' entries and the fake's answers against botocore's sqs model (needs BOTOCORE_REFERENCE_DIR)");
    /** The body of the message a receipt handle is of, in any of the fake's queues. */
    const bodyOf = (aws: FakeAwsState, handle: string) => Object.values(aws.sqs ?? {}).flatMap((q) => q.messages).find((m) => m.handle === handle)?.body ?? "";
    // SQS documents no wording for an internal error of one entry: this message is the fake's own.
    const INTERNAL_ERROR: EntryFault = { code: "InternalError", message: "We encountered an internal error. Please try again.", senderFault: false };
    const messageNumbers = (out: string) => fs.readFileSync(path.join(out, "messages.csv"), "utf8").trim().split("\r\n").slice(1).map((l) => Number(l.split(",")[0]));

    it("a batch entry SQS failed by its own fault (SenderFault false) is sent once more, alone, after a throttled call's wait (the SDK does not retry what a 200 answers): a message is recorded once SQS took it, a completion's record is deleted, and the run completes", async () => {
        const seen: { action: string; entry: any; at: number }[] = [];
        let [sendTries, deleteTries] = [0, 0];
        h = await harness({}, (s) => {
            s.aws.entryFault = (action, entry) => {
                seen.push({ action, entry, at: h!.clock.now() });
                if (action === "sqs:SendMessageBatch" && entry.MessageBody === "7" && sendTries++ === 0) return INTERNAL_ERROR;
                if (action === "sqs:DeleteMessageBatch" && bodyOf(s.aws, entry.ReceiptHandle).startsWith("12 ") && deleteTries++ === 0) return INTERNAL_ERROR;
                return undefined;
            };
        });
        const r = await run(h, SCRATCH_ARGS(h), undefined, { throttleFirstDelayMs: 1000 });
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/^ {2}OK {4}messages: 200 sent, 200 completed, 0 lost, /m);
        const bodies = seen.filter((x) => x.action === "sqs:SendMessageBatch").map((x) => x.entry.MessageBody);
        expect(bodies.filter((b) => b === "7")).to.have.length(2);
        const sevens = seen.filter((x) => x.action === "sqs:SendMessageBatch" && x.entry.MessageBody === "7").map((x) => x.at);
        expect(sevens[1] - sevens[0]).to.be.at.least(1000);
        expect(bodies.filter((b) => b !== "7").sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 199 }, (_, i) => String(i < 6 ? i + 1 : i + 2)));
        // Ten calls of ten before the start, one a second from the notice on, and the one that sent message 7 again.
        expect(h.aws.requests.filter((q) => q === "sqs:SendMessageBatch")).to.have.length(10 + 100 + 1);
        expect(messageNumbers(h.out)).to.deep.equal(Array.from({ length: 200 }, (_, i) => i + 1));
        // Message 12's record was deleted on the second try: it did not come back to be counted as a second completion.
        expect(deleteTries).to.equal(2);
        const row12 = fs.readFileSync(path.join(h.out, "messages.csv"), "utf8").split("\r\n").find((l) => l.startsWith("12,"))!;
        expect(row12.split(",")[2]).to.equal("1");
        const shapes = sqsShapes();
        if (shapes) for (const x of seen) expect(modelProblems(shapes, `${x.action.slice(4)}RequestEntry`, x.entry, "entry"), x.action).to.deep.equal([]);
        // The done queue is read every 5 s, not every second (a read may take several receives to empty it): 34 receives
        // in this 128 s run, where a read a second would be more than 128.
        const seconds = (h.clock.now() - T0) / 1000;
        expect(h.aws.requests.filter((q) => q === "sqs:ReceiveMessage").length).to.be.below(seconds / 2);
    });

    it("a batch entry SQS refused (SenderFault true), or still failing after a throttled call's tries, or left out of the answer, ends the run naming the call, the entry and SQS's code; what SQS took is recorded, nothing else; it cleans up", async () => {
        h = await harness({}, (s) => (s.aws.entryFault = (action, e) => (action === "sqs:SendMessageBatch" && e.MessageBody === "7" ? { code: "InvalidMessageContents", message: "Invalid characters found.", senderFault: true } : undefined)));
        let r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include("Result: FAILED: sqs:SendMessageBatch failed on message 7: InvalidMessageContents: Invalid characters found. (the request's fault: not tried again)");
        expect(h.aws.requests.filter((q) => q === "sqs:SendMessageBatch")).to.have.length(1);
        // The rest of that call SQS took: recorded as sent, and message 7 is not.
        expect(messageNumbers(h.out)).to.deep.equal([1, 2, 3, 4, 5, 6, 8, 9, 10]);
        expect(r.output).to.include("  -     messages: not settled: the run stopped with 9 sent, ");
        expect(h.aws.requests).not.to.include("fis:StartExperiment");
        expect(r.output).to.match(/^Cleanup: deleted queue \S+-work$/m);
        expect(h.kube.namespaces.size).to.equal(0);
        await h.kube.stop();
        await h.aws.stop();

        let handle: string | undefined;
        h = await harness({}, (s) => (s.aws.entryFault = (action, e) => (action === "sqs:DeleteMessageBatch" && (handle ??= e.ReceiptHandle) === e.ReceiptHandle ? INTERNAL_ERROR : undefined)));
        r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/^Result: FAILED: sqs:DeleteMessageBatch failed on the record "[0-9]+ drill-worker-7d-[a-d] [0-9.]+ [0-9.]+": InternalError: We encountered an internal error\. Please try again\. \(SQS's fault, 5 times\)$/m);
        expect(h.aws.requests.filter((q) => q === "sqs:DeleteMessageBatch").length).to.be.at.least(5);
        expect(r.output).to.include("Cleanup: stopped experiment EXP1abcdef");
        expect(Object.values(h.aws.state.sqs!).every((q) => q.deleted)).to.equal(true);
        await h.kube.stop();
        await h.aws.stop();

        // An answer that lists an entry in neither Successful nor Failed: nothing of it is counted as sent.
        h = await harness({}, (s) => (s.aws.faults = { "sqs:SendMessageBatch": [{ kind: "empty" }] }));
        r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include(`Result: FAILED: sqs:SendMessageBatch answered nothing of ${Array.from({ length: 10 }, (_, i) => `message ${i + 1}`).join(", ")}: cannot tell whether SQS did it`);
        expect(messageNumbers(h.out)).to.deep.equal([]);
        expect(h.aws.requests).not.to.include("fis:StartExperiment");
    });

    it("batch calls are authorized by the single actions: a policy without sqs:SendMessage refuses SendMessageBatch, and the line names sqs:SendMessage; SQS refuses an empty batch, more than 10 entries, a repeated or malformed Id", async () => {
        h = await harness({}, (s) => (s.aws.deny = ["sqs:SendMessage"]));
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.output).to.include("Result: FAILED: sqs:SendMessageBatch: HTTP 400 AccessDeniedException: User is not authorized to perform: sqs:SendMessage (the credentials lack sqs:SendMessage; docs/drill.md lists the permissions)");
        // The fake as the SDK's client meets it (the client checks each body's MD5).
        h.aws.state.deny = [];
        const { SQSClient, CreateQueueCommand, SendMessageBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } = await import("@aws-sdk/client-sqs");
        const sqs = new SQSClient({ region: "ca-central-1", ...h.aws.clientConfig() });
        try {
            const QueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: "batch" }))).QueueUrl!;
            const refusal = (Entries: { Id: string; MessageBody: string }[]) => sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries })).then(() => "taken", (e: Error) => e.name);
            expect(await refusal([])).to.equal("EmptyBatchRequest");
            expect(await refusal(Array.from({ length: 11 }, (_, i) => ({ Id: `m${i}`, MessageBody: "x" })))).to.equal("TooManyEntriesInBatchRequest");
            expect(await refusal([{ Id: "a", MessageBody: "x" }, { Id: "a", MessageBody: "y" }])).to.equal("BatchEntryIdsNotDistinct");
            expect(await refusal([{ Id: "a.1", MessageBody: "x" }])).to.equal("InvalidBatchEntryId");
            const { $metadata: _s, ...sent } = await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: "a", MessageBody: "x" }, { Id: "b", MessageBody: "y" }] }));
            expect(sent.Successful!.map((x) => x.Id)).to.deep.equal(["a", "b"]);
            expect(sent.Failed).to.deep.equal([]);
            const got = (await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }))).Messages!;
            const { $metadata: _d, ...deleted } = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl, Entries: got.map((m, i) => ({ Id: `r${i}`, ReceiptHandle: m.ReceiptHandle! })) }));
            expect(deleted).to.deep.equal({ Successful: [{ Id: "r0" }, { Id: "r1" }], Failed: [] });
            // An entry failed by SQS's own fault, as the fake answers one (BatchResultErrorEntry: Id, SenderFault, Code required).
            h.aws.state.entryFault = (_action, e) => (e.Id === "c" ? INTERNAL_ERROR : undefined);
            const { $metadata: _p, ...partly } = await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: "c", MessageBody: "z" }, { Id: "d", MessageBody: "w" }] }));
            expect(partly).to.deep.equal({ Successful: [{ Id: "d", MessageId: partly.Successful![0].MessageId, MD5OfMessageBody: partly.Successful![0].MD5OfMessageBody }], Failed: [{ Id: "c", SenderFault: false, Code: "InternalError", Message: INTERNAL_ERROR.message }] });
            // The answers as the SDK parsed them: its deserializer drops members the model lacks, so this holds the
            // required members and their types, not that the fake sent nothing more.
            const shapes = sqsShapes();
            if (shapes) {
                for (const answer of [sent, partly]) expect(modelProblems(shapes, "SendMessageBatchResult", answer, "answer")).to.deep.equal([]);
                expect(modelProblems(shapes, "DeleteMessageBatchResult", deleted, "answer")).to.deep.equal([]);
            }
        } finally {
            sqs.destroy();
        }
    });

    it("refuses to start while a stop-condition alarm is in ALARM, with no ephemeral node, beyond --nodes, or with a template taking more or not scoped to the cluster: nothing created", async () => {
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
        // A template of the pool's tag alone (as before DR-F6) could take a node of another cluster's pool of that name.
        const unscoped = apiTemplate(1) as any;
        unscoped.targets["pool-spot-instances"].resourceTags = { [NODEPOOL_TAG]: POOL };
        h.aws.state.fis!.templates[0].template = unscoped;
        expect((await run(h, SCRATCH_ARGS(h))).output).to.equal(
            `Refused: template EXTdrill1 its target selects {"karpenter.sh/nodepool":"notify-karpenter"}, not karpenter.sh/nodepool=notify-karpenter and eks:eks-cluster-name=${SCRATCH}: it could interrupt another cluster's nodes; pulumi up puts it back as the config says`,
        );
        expect(h.aws.requests.filter((q) => q === "fis:StartExperiment")).to.deep.equal([]);
        expect(h.kube.namespaces.size + h.kube.serviceAccounts.length).to.equal(0);
        await h.kube.stop();
        await h.aws.stop();
        h = await harness({}, (s) => (s.kubeOpts.nodes = []));
        expect((await run(h, SCRATCH_ARGS(h))).output).to.match(/^Refused: no ephemeral node of NodePool notify-karpenter runs \(Ready\): there is nothing to interrupt/);
        expect(h.aws.requests.filter((q) => q === "fis:StartExperiment")).to.deep.equal([]);
    });

    it("refuses production without --production, another cluster's context, a stack with drill.enabled false, and flags that do not apply", async () => {
        h = await harness();
        const prod = await run(h, ["--stack", "production", "--context", "scratch"]);
        expect(prod.exitCode).to.equal(2);
        expect(prod.output.split("\n")[0]).to.equal("the production stack is drilled only with --production: it interrupts a node that serves GC Notify's traffic");
        expect(await run(h, ["--stack", "production", "--context", "scratch", "--production"])).to.deep.equal({ exitCode: 1, output: "Refused: notify-karpenter:drill.enabled is false for stack production: the stack has no FIS template to start" });
        const other = await run(h, ["--stack", "scratch", "--context", "staging"]);
        expect(other.exitCode).to.equal(2);
        expect(other.output).to.match(/^--context staging is cluster ".*notification-canada-ca-staging-eks-cluster" .*not the stack's cluster notify-karpenter-scratch/);
        const first = async (argv: string[]) => (await run(h!, ["--stack", "scratch", "--context", "scratch", ...argv])).output.split("\n")[0];
        expect(await first(["--workload", "both"])).to.equal('--workload must be synthetic or live (got "both")');
        expect(await first(["--profile", "early"])).to.equal('--profile must be gc-notify or late-ack (got "early")');
        expect(await first(["--hook", "none"])).to.equal('--hook must be notify-karpenter or gc-notify (got "none")');
        expect(await first(["--hook", "gc-notify", "--profile", "late-ack"])).to.equal("--hook chooses the hook of the synthetic gc-notify workers; GC Notify's own workers run the hook their Deployment has");
        expect(await first(["--workload", "live", "--profile", "late-ack"])).to.equal("--profile chooses the synthetic worker; the live workload is GC Notify's own");
        expect(await first(["--nodes", "6"])).to.equal('--nodes must be an integer from 1 to 5 (got "6")');
        expect(await first(["--notify-to", "a@example.com"])).to.equal("--notify-to goes with --notifications <N>");
        expect(await first(["--notifications", "3"])).to.equal(
            "NOTIFY_API_KEY must hold a GC Notify test API key (from the environment only, never a flag or config); --notify-api (or NOTIFY_API_URL) must give GC Notify's API base URL; --notify-template (or NOTIFY_TEMPLATE_ID) must give the template to send; --notify-to (or NOTIFY_TO) must give the email address or phone number to send to",
        );
        h.env = { NOTIFY_API_KEY: NOTIFY_KEY, NOTIFY_API_URL: "https://api.example", NOTIFY_TEMPLATE_ID: "5e5e5e5e-0000-4000-8000-000000000000" };
        expect(await first(["--notifications", "3", "--notify-to", "Simulate-Delivered@notification.canada.ca"])).to.equal(
            "--notify-to Simulate-Delivered@notification.canada.ca is one of GC Notify's simulated recipients: nothing is stored for them (GET answers 404), so they prove nothing; use any other address with the test key",
        );
        expect(await first(["--notifications", "3", "--notify-to", "+1 (613) 253-2222"])).to.match(/^--notify-to \+1 \(613\) 253-2222 is one of GC Notify's simulated recipients/);
        h.env.NOTIFY_API_KEY = "secret-123";
        expect(await first(["--notifications", "3", "--notify-to", "a@example.com"])).to.equal("NOTIFY_API_KEY is not a GC Notify API key (gcntfy-<name>-<service id>-<secret>)");
        expect(h.aws.requests).to.deep.equal([]);
        expect(h.kube.requests).to.deep.equal([]);
    });

    it("exits 3 when FIS answers 403, when AWS is unreachable and when the cluster is unreachable, having created nothing", async () => {
        h = await harness({}, (s) => (s.aws.deny = ["fis:ListExperimentTemplates"]));
        const denied = await run(h, SCRATCH_ARGS(h));
        expect(denied.exitCode).to.equal(3);
        expect(denied.output).to.match(/^Could not run: fis:ListExperimentTemplates: HTTP 403 AccessDeniedException: User is not authorized to perform: fis:ListExperimentTemplates \(the credentials lack fis:ListExperimentTemplates; docs\/drill\.md lists the permissions\)$/);
        h.aws.state.deny = [];
        await h.aws.stop();
        const noAws = await run(h, SCRATCH_ARGS(h));
        expect(noAws.exitCode).to.equal(3);
        expect(noAws.output).to.match(/^Could not run: sts:GetCallerIdentity: .*ECONNREFUSED/);
        await h.aws.start();
        await h.kube.stop();
        const noKube = await run(h, SCRATCH_ARGS(h));
        expect(noKube.exitCode).to.equal(3);
        expect(noKube.output).to.match(/^Could not run: the cluster of context scratch did not answer: list nodes: fetch failed: .*ECONNREFUSED/);
        expect(fs.readdirSync(h.out)).to.deep.equal([]);
        await h.kube.start();
    });

    it("exits 1, not 3, when a call is refused once the run has begun (fis:StartExperiment), naming the call, and cleans up (docs/drill.md)", async () => {
        h = await harness({}, (s) => (s.aws.deny = ["fis:StartExperiment"]));
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.match(/Result: FAILED: fis:StartExperiment: HTTP 403 AccessDeniedException/);
        expect(r.output).to.match(/Cleanup: deleted namespace/);
    });

    const FIS_ANSWERS_MODEL = botocoreModel("fis", "2020-12-01");
    (FIS_ANSWERS_MODEL ? it : it.skip)("the fake answers as FIS's API model says (botocore fis 2020-12-01): each answer of a run, as it was sent", async () => {
        h = await harness();
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        const shapes = JSON.parse(fs.readFileSync(FIS_ANSWERS_MODEL!, "utf8")).shapes;
        expect([...new Set(h.aws.fisAnswers.map((a) => a.action))].sort()).to.deep.equal(["GetExperiment", "GetExperimentTemplate", "ListExperimentResolvedTargets", "ListExperimentTemplates", "StartExperiment"]);
        for (const a of h.aws.fisAnswers) expect(modelProblems(shapes, `${a.action}Response`, a.body, a.action), a.action).to.deep.equal([]);
    });

    it("--json: the run in the documented schema (docs/json-output.md); a refusal and a usage error are JSON too", async () => {
        h = await harness();
        const r = await run(h, [...SCRATCH_ARGS(h), "--json"]);
        expect(r).to.deep.include({ exitCode: 0, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report), "docs/json-output.md's table for drill").to.deep.equal(documentedFields("drill"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "drill", stack: "scratch", exitCode: 0, cluster: SCRATCH, workload: "synthetic", result: { ok: true, message: "OK" } });
        expect(report.experiment).to.deep.include({ id: "EXP1abcdef", templateId: "EXTdrill1", status: "completed", instances: ["i-0aaa"] });
        expect(report.checks.map((c: { name: string }) => c.name)).to.include.members(["experiment", "reaction", "replaced", "messages"]);
        expect(report.cleanup).to.include(`Cleanup: deleted namespace ${DRILL_NAMESPACE}`);
        expect(report.files.map((f: string) => path.basename(f))).to.deep.equal(["timeline.csv", "pods.csv", "messages.csv", "chart.svg", "summary.txt"]);
        const refused = await run(h, ["--stack", "production", "--context", "scratch", "--production", "--json"]);
        expect(refused).to.deep.include({ exitCode: 1, format: "json" });
        expect(JSON.parse(refused.output)).to.deep.include({ command: "drill", stack: "production", exitCode: 1, error: "Refused: notify-karpenter:drill.enabled is false for stack production: the stack has no FIS template to start" });
        const unknown = await run(h, ["--stack", "scratch", "--json"]);
        expect(unknown).to.deep.include({ exitCode: 2, format: "json" });
        expect(JSON.parse(unknown.output).error).to.match(/^--context is required/);
    });

    it("FIS throttling during the interruption (GetExperiment: ThrottlingException twice) is retried: the drill completes as if nothing happened (it stopped the run)", async () => {
        const throttled: Fault = { kind: "error", status: 429, code: "ThrottlingException", message: "Rate exceeded" };
        h = await harness({}, (s) => (s.aws.faults = { "fis:GetExperiment": [throttled, throttled] }));
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output.split("\n")).to.include("Result: OK");
        expect(h.aws.requests.filter((q) => q === "fis:GetExperiment").length).to.be.greaterThan(3);
    });

    it("StartExperiment answered without an experiment ID: the run stops, says how to find and stop what may have started, and cleans up what it made", async () => {
        h = await harness({}, (s) => (s.aws.faults = { "fis:StartExperiment": [{ kind: "empty" }] }));
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.include(
            "Result: FAILED: fis:StartExperiment answered without an experiment ID: an experiment of template EXTdrill1 may have started, and this run cannot follow or stop it: find it with aws fis list-experiments (tag notify-karpenter:stack=scratch) and stop it with aws fis stop-experiment --id <id>",
        );
        expect(r.output).to.include(`Cleanup: deleted namespace ${DRILL_NAMESPACE}`);
        expect(r.output).to.match(/^Cleanup: deleted queue \S+-work$/m);
        expect(h.kube.namespaces.size).to.equal(0);
        // What was seen is written, and recorded as the drill's.
        expect(JSON.parse(fs.readFileSync(path.join(h.out, ".notify-karpenter-drill.json"), "utf8"))).to.deep.include({ writtenBy: "npm run drill", stack: "scratch" });
    });

    it("DescribeAlarms answered without MetricAlarms: could not run (not 'the alarms do not exist'), nothing created", async () => {
        h = await harness({}, (s) => (s.aws.faults = { "monitoring:DescribeAlarms": [{ kind: "empty" }] }));
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r).to.deep.equal({ exitCode: 3, output: `Could not run: cloudwatch:DescribeAlarms answered without MetricAlarms: cannot check (an empty or cut answer is not read as "none")` });
        expect(h.aws.requests).to.not.include("fis:StartExperiment");
    });

    it("the cluster answers nothing to the list of the pool's nodes: could not run at the request deadline, naming the list; nothing started", async () => {
        h = await harness({}, (s) => (s.kubeOpts.fault = (method, p, watch) => (method === "GET" && p === "/api/v1/nodes" && !watch ? { kind: "hang" } : undefined)));
        const r = await run(h, SCRATCH_ARGS(h), undefined, { ...DEADLINES, kubeRequestMs: 300 });
        expect(r).to.deep.equal({ exitCode: 3, output: "Could not run: the cluster of context scratch did not answer: list nodes: no answer within 0.3 s" });
        expect(h.aws.requests).to.not.include("fis:StartExperiment");
    });

    it("a watch that gives nothing (no event, bookmark or end) stops the drill at its deadline, and what it made is removed", async () => {
        h = await harness({}, (s) => {
            s.kubeOpts.fault = (_m, p, watch) => (watch && p === "/apis/karpenter.sh/v1/nodeclaims" ? { kind: "silent" } : undefined);
            // The API server's bookmarks keep the quiet watches that are alive alive.
            s.kubeOpts.bookmarkEveryMs = 20;
        });
        // The fake clock moves a second a tick; here each tick takes a millisecond of real time too, for the watch's
        // deadline (real time: it watches a connection) to pass while the run waits for its workers.
        const hh = h;
        const clock = { now: () => hh.clock.now(), sleep: async (ms: number) => {
                await hh.clock.sleep(ms);
                await new Promise((resolve) => setTimeout(resolve, 1));
            },
        };
        const r = await run(h, SCRATCH_ARGS(h), undefined, { ...DEADLINES, watchIdleMs: 150 }, clock);
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.match(/^Result: FAILED: the NodeClaims watch failed: watch \/apis\/karpenter\.sh\/v1\/nodeclaims \(karpenter\.sh\/nodepool=notify-karpenter\): no event, bookmark or end for 0\.15 s \(the API server was asked to end it after 240 s\): the connection or the server stopped answering$/m);
        expect(h.kube.namespaces.size).to.equal(0);
    });

    it("live: counts the displaced GC Notify worker's tasks from its Celery lines in CloudWatch Logs (one ended, one received again by another worker); reads the queues' depth; no synthetic workload", async () => {
        h = await harness({ live: true }, (s) => {
            asStaging(s);
            s.aws.logPageSize = 2;
        });
        const r = await run(h, STAGING_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include(`staging on ${STAGING}`);
        expect(r.output).to.include("live workload");
        expect(r.output).to.include("Queue depths (visible + in flight), first and largest:\n  eks-notification-canada-casend-sms-high: 1 at the start, at most 1, 1 at the end");
        expect(r.output).to.include("Displaced burst pods: 2 (0 synthetic, 1 headroom)");
        // Karpenter's eviction refused by a budget, in the timeline.
        expect(r.output).to.include("      2  drain blocked: ip-10-0-1-1 (Failed to drain node, evicting pod violates a PDB (Pod=notification-canada-ca/notify-celery-core-tasks-burst-7f-x9))");
        expect(r.output).to.include("  OK    tasks: 2 received by the 1 displaced worker, 1 ended (succeeded, failed, retried...) before its container exited, 1 did not: 1 received again by another worker (never acknowledged), 0 lost");
        expect(r.output).to.match(/ {2}OK {4}replaced: 1 of 1 displaced Celery pods Running elsewhere within 120 s of the notice/);
        expect(r.output).not.to.include("messages:");
        expect(h.kube.namespaces.size + h.kube.serviceAccounts.length).to.equal(0);
        expect(h.aws.requests.filter((q) => q === "sqs:CreateQueue")).to.deep.equal([]);
        // Paginated: two events a page.
        expect(h.aws.requests.filter((q) => q === "logs:FilterLogEvents").length).to.be.at.least(3);
        // Each live queue's URL is asked once, however often its depth is read.
        expect(h.aws.requests.filter((q) => q === "sqs:GetQueueUrl")).to.have.length(2);
        expect(h.aws.requests.filter((q) => q === "sqs:GetQueueAttributes").length).to.be.greaterThan(2);
    });

    it("live: a task the displaced worker received and never ended, and no worker received again within the longest visibility timeout, is lost", async () => {
        h = await harness({ live: true, lostTask: true }, asStaging);
        const r = await run(h, STAGING_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include(
            "  FAIL  tasks: 3 received by the 1 displaced worker, 1 ended (succeeded, failed, retried...) before its container exited, 2 did not: 1 received again by another worker (never acknowledged), 1 lost (send-delivery-status[3d3d3d3d-0000-4000-8000-000000000003] on notify-celery-core-tasks-burst-7f-x1)",
        );
        // It waited for the message to come back: past the exit (+20 s) by 310 s and a minute.
        const progress = h.progress.join("\n");
        expect(progress).not.to.include("Could not");
    });

    it("live: a worker whose lines after its eviction never reach CloudWatch Logs cannot be counted, and that fails", async () => {
        h = await harness({ live: true }, (s) => {
            asStaging(s);
            s.aws.fis!.onStart = ((orig) => (id: string, now: number) => {
                orig!(id, now);
                s.logs.splice(0, s.logs.length, ...s.logs.filter((l) => l.timestamp < now + 2000));
            })(s.aws.fis!.onStart);
        });
        const r = await run(h, STAGING_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/FAIL {2}tasks: .*no line of notify-celery-core-tasks-burst-7f-x1 from its eviction on reached \/aws\/containerinsights\/notification-canada-ca-staging-eks-cluster\/application \(2 before\): its tasks cannot be counted/);
    });

    it("end to end: notifications sent with the test key through GC Notify's API during the interruption, each followed to a final status; the key is sent only in the Authorization header and never printed", async () => {
        h = await harness({ live: true }, asStaging);
        h.notify = await new FakeNotifyApi({ key: NOTIFY_KEY, now: () => h!.clock.now() }).start();
        h.env = { NOTIFY_API_KEY: NOTIFY_KEY, NOTIFY_API_URL: h.notify.url, NOTIFY_TEMPLATE_ID: "5e5e5e5e-0000-4000-8000-000000000000" };
        const r = await run(h, [...STAGING_ARGS(h), "--notifications", "4", "--notify-to", "drill@example.com"]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("  OK    notifications: 4 sent through GC Notify's API, 4 final (4 delivered)");
        expect(h.notify.requests.filter((x) => x.startsWith("POST"))).to.deep.equal(Array(4).fill("POST /v2/notifications/email"));
        expect(h.notify.notifications.map((n) => n.body.email_address)).to.deep.equal(Array(4).fill("drill@example.com"));
        expect(new Set(h.notify.authorizations)).to.deep.equal(new Set([`ApiKey-v1 ${NOTIFY_KEY}`]));
        const written = fs.readdirSync(h.out).map((f) => fs.readFileSync(path.join(h!.out, f), "utf8")).join("\n");
        for (const text of [r.output, h.progress.join("\n"), written]) expect(text).not.to.include(NOTIFY_KEY.slice(-36));
        expect(fs.readFileSync(path.join(h.out, "notifications.csv"), "utf8").split("\r\n")[0]).to.equal("notification,sent_s,status,final_s");
    });

    it("end to end: a notification that never reaches a final status fails the check; a key GC Notify refuses stops the drill before the experiment starts", async () => {
        h = await harness({ live: true }, asStaging);
        h.notify = await new FakeNotifyApi({ key: NOTIFY_KEY, now: () => h!.clock.now(), stuck: [3] }).start();
        h.env = { NOTIFY_API_KEY: NOTIFY_KEY, NOTIFY_API_URL: h.notify.url, NOTIFY_TEMPLATE_ID: "5e5e5e5e-0000-4000-8000-000000000000", NOTIFY_TO: "+16135550199" };
        const r = await run(h, [...STAGING_ARGS(h), "--notifications", "4"]);
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/ {2}FAIL {2}notifications: 4 sent through GC Notify's API, 3 final \(3 delivered\); never final: [0-9a-f-]{36} \(sending\)$/m);
        expect(h.notify.requests.filter((x) => x.startsWith("POST"))[0]).to.equal("POST /v2/notifications/sms");
        h.env.NOTIFY_API_KEY = NOTIFY_KEY.replace(/e/g, "f");
        const refused = await run(h, [...STAGING_ARGS(h), "--notifications", "4"]);
        expect(refused).to.deep.equal({ exitCode: 1, output: "Refused: GC Notify's API refused the first notification (POST /v2/notifications/sms: HTTP 403 AuthError: Invalid token: API key not found); nothing was started" });
        expect(h.aws.requests.filter((q) => q === "fis:StartExperiment")).to.have.length(1);
    });

    it("PT5M: the notice comes 3 minutes after the action starts (with the rebalance recommendation), and the times count from it", async () => {
        h = await harness({ duration: "PT5M" });
        const r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include(" -180  rebalance recommendation: i-0aaa");
        expect(r.output).to.include("      0  interruption notice: i-0aaa (120 s before the interruption)");
        expect(r.output).to.include("  OK    reaction: Karpenter deleted notify-karpenter-aaaaa at 1 s after the notice (bound 20 s)");
    });

    it("the first interruption after a Karpenter restart: no metric in CloudWatch, but the SpotInterrupted event proves it (the metric is reported, not failed); no event fails", async () => {
        h = await harness({}, (s) => (s.aws.cloudwatch!.metric = (name) => (name === "karpenter_nodepools_limit" ? [{ timestamp: T0 + 60_000, value: 1 }] : [])));
        let r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include('  -     interruption metric: karpenter_nodeclaims_disrupted_total{reason="spot_interrupted"} rose by 0, not 1 (reported only:');
        await h.kube.stop();
        await h.aws.stop();
        h = await harness({ noEvent: true });
        r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include("  FAIL  interruption seen: no SpotInterrupted event on notify-karpenter-aaaaa: Karpenter did not take the notice as a spot interruption (the EventBridge rule, the queue)");
    });

    it("Karpenter deleting the NodeClaim 25 s after the notice fails 'reaction'; FIS failing once the instance is gone (Karpenter took it first) is accepted from EC2's state", async () => {
        h = await harness({ reactAfter: 25 });
        let r = await run(h, SCRATCH_ARGS(h));
        expect(r.output).to.include("  FAIL  reaction: notify-karpenter-aaaaa deleted at 25 s: more than 20 s after the notice, the interruption queue or Karpenter lags");
        await h.kube.stop();
        await h.aws.stop();
        h = await harness({ fisFails: true });
        r = await run(h, SCRATCH_ARGS(h));
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("  OK    experiment: EXP1abcdef failed (Target resolution failed: i-0aaa is terminated) after its notice, and EC2 shows every target instance gone (i-0aaa): Karpenter took it first");
    });

    it("an instance EC2 no longer lists (InvalidInstanceID.NotFound) is taken as gone, asked alone", async () => {
        h = await harness({}, (s) => (s.aws.instances = {}));
        const r = await run(h, SCRATCH_ARGS(h));
        // Seen at the first poll after the notice (every 5 s).
        expect(r.output).to.include("      3  instance gone: i-0aaa (EC2 terminated: no longer listed by DescribeInstances)");
        expect(h.aws.requests.filter((q) => q === "ec2:DescribeInstances")).to.have.length(2);
    });

    it("docs/drill.md lists every AWS permission these runs used, and the one FIS's first experiment in an account needs", () => {
        const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs", "drill.md"), "utf8");
        const paragraph = doc.slice(doc.indexOf("**Permissions**"), doc.indexOf("\n\n", doc.indexOf("**Permissions**")));
        const listed = new Set([...paragraph.matchAll(/`([a-z0-9-]+:[A-Za-z]+)`/g)].map((m) => m[1]));
        const used = [...calls].map((c) => authorizingAction(c).replace(/^monitoring:/, "cloudwatch:"));
        expect(used.length).to.be.greaterThan(10);
        expect(used.filter((c) => !listed.has(c))).to.deep.equal([]);
        expect(listed).to.include("iam:CreateServiceLinkedRole");
        expect(paragraph).to.include("fis.amazonaws.com");
    });
});

describe("drill verdict pieces", () => {
    const live = (rec: DrillRecord): DrillRun => ({ stack: "scratch", cluster: SCRATCH, workload: "live", record: rec, alarmName: "a", messagesPlanned: 0, notificationsPlanned: 0, end: T0 + 100_000 });

    it("a node that goes before its pods were evicted is Karpenter not draining: cut short, and no replacement fails 'replaced'", () => {
        const rec = new DrillRecord(() => T0 + 100_000, { templateId: "t", count: 1, durationBeforeInterruption: "PT2M", instances: ["i-0aaa"], notice: T0, status: "completed", actionEnded: T0 + 120_000 }, BURST);
        rec.node("ADDED", node(NODE_A, WARM));
        rec.pod("ADDED", pod({ namespace: GC_NOTIFY_NS, name: "w1", owner: CORE_RS, node: NODE_A, created: WARM, running: WARM }));
        rec.node("DELETED", node(NODE_A, WARM));
        const cs = checks(live(rec));
        expect(cs.find((c) => c.name === "grace periods")!.message).to.equal(`${GC_NOTIFY_NS}/w1 never evicted: its node went first (Karpenter did not drain it)`);
        expect(cs.find((c) => c.name === "replaced")!.ok).to.equal(false);
        expect(cs.find((c) => c.name === "interruption metric")!.ok).to.equal(undefined);
    });

    it("a well-handled interruption is not failed by Karpenter terminating the instance early: a Celery pod replaced at +8 s passes, the headroom's replacement at +75 s after the instance went at +25 s is reported only", () => {
        const rec = new DrillRecord(() => T0 + 100_000, { templateId: "t", count: 1, durationBeforeInterruption: "PT2M", instances: ["i-0aaa"], notice: T0, status: "completed" }, BURST);
        rec.node("ADDED", node(NODE_A, WARM));
        rec.claim("ADDED", claim("notify-karpenter-aaaaa", NODE_A, WARM, { deleting: T0 + 1000 }));
        rec.interruptionEvents = new Map([["notify-karpenter-aaaaa", T0 + 1000]]);
        const worker = { namespace: GC_NOTIFY_NS, name: "w1", owner: CORE_RS, node: NODE_A, created: WARM, running: WARM, evicted: T0 + 2000, grace: 70, exit: { at: T0 + 6000, code: 0, reason: "Completed" } };
        const headroom = { namespace: "default", name: "h1", owner: HEADROOM_RS, node: NODE_A, created: WARM, running: WARM, labels: HEADROOM, evicted: T0 + 2000, grace: 0, exit: { at: T0 + 3000, code: 0, reason: "Completed" } };
        for (const p of [worker, headroom]) rec.pod("MODIFIED", pod(p, "Done"));
        rec.pod("ADDED", pod({ namespace: GC_NOTIFY_NS, name: "w2", owner: CORE_RS, node: NODE_B, created: T0 + 2000, running: T0 + 8000 }));
        rec.pod("ADDED", pod({ namespace: "default", name: "h2", owner: HEADROOM_RS, node: NODE_C, created: T0 + 2000, running: T0 + 75_000, labels: HEADROOM }));
        rec.instance("i-0aaa", "shutting-down", "User initiated (2026-11-30 05:10:25 GMT)");
        rec.node("DELETED", node(NODE_A, WARM));
        rec.tasks = { group: "g", pods: [{ pod: "w1", evicted: T0 + 2000, lines: 3, last: T0 + 5000, received: new Map([["x", "deliver_email"]]), ended: new Set(["x"]), redelivered: new Set() }] };
        const cs = checks(live(rec));
        expect(cs.find((c) => c.name === "replaced")).to.deep.equal({ name: "replaced", ok: true, message: "1 of 1 displaced Celery pods Running elsewhere within 120 s of the notice (when EC2 takes the node), the last at 8 s; from exit to replacement Running: 2 s" });
        expect(cs.find((c) => c.name === "headroom")).to.deep.include({ ok: undefined, message: "1 headroom pod(s) displaced, restored at 75 s (reported only: headroom is capacity a burst preempts, and waits for a new node)" });
        expect(cs.find((c) => c.name === "grace periods")!.ok).to.equal(true);
        expect(rec.instanceEnds.get("i-0aaa")).to.deep.equal({ state: "shutting-down", at: Date.UTC(2026, 10, 30, 5, 10, 25), reason: "User initiated (2026-11-30 05:10:25 GMT)" });
        expect(cs.filter((c) => c.ok === false)).to.deep.equal([]);
    });

    it("Celery's own lines, as GC Notify's Fluent Bit ships them: the runtime's prefix in `log`, a JSON record's `log_processed`; every outcome celery 5.6.3 logs ends a task", () => {
        const record = fluentBitRecord(celeryRecord("p1", T0, "[2026-11-30 05:10:00,000: INFO/MainProcess] Task deliver_email[abc-1] received"));
        expect(record).to.deep.equal({ pod: "p1", text: "[2026-11-30 05:10:00,000: INFO/MainProcess] Task deliver_email[abc-1] received\n" });
        expect(fluentBitRecord(JSON.stringify({ log: "{}", log_processed: { message: "Task x[1] retry: Retry in 25s" }, kubernetes: { pod_name: "p2" } })).text).to.include("Task x[1] retry");
        const outcomes = [
            "Task a.b[1] succeeded in 0.25s: None",
            "Task a.b[2] raised unexpected: ValueError('x')",
            "Task a.b[3] raised expected: Ignore()",
            "Task a.b[4] INTERNAL ERROR: KeyError('x')",
            "Task a.b[5] ignored",
            "Task a.b[6] retry: Retry in 300s",
            "Task a.b[7] Reject(requeue=False)",
        ];
        expect(taskLines(outcomes.join("\n")).map((t) => [t.id, t.outcome])).to.deep.equal([
            ["1", "succeeded"],
            ["2", "raised"],
            ["3", "raised"],
            ["4", "INTERNAL"],
            ["5", "ignored"],
            ["6", "retry"],
            ["7", "Reject(requeue=False)"],
        ]);
        expect(taskLines("Task deliver_sms[9f-1] received")).to.deep.equal([{ name: "deliver_sms", id: "9f-1", outcome: "received" }]);
    });

    it("the synthetic grace is the burst workers' rule applied to the synthetic tasks", () => {
        const s = stackConfig("scratch").drill.synthetic!;
        expect(drillWorkerGraceSeconds(s, 4)).to.equal((4 + 1) * (15 + 2) + 10 + 5);
        expect(drillWorkerGraceSeconds(s, 4, "late-ack")).to.equal(10 + 5 + 10);
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
