// `npm run drill -- --stack <s> --context <ctx> [--nodes N] [--workload synthetic|live] [--profile ...] [--hook ...]
// [--notifications N ...] [--out dir] [--production]`: interrupts real spot nodes of the pool on purpose, through the
// stack's AWS FIS experiment template (components/spotInterruptionDrill.ts), and proves from the APIs' own timestamps
// what happened to the work on them: Karpenter's reaction to the notice, each displaced Celery pod's shutdown within
// its grace and its replacement, and the tasks: numbered messages of a synthetic worker that runs as GC Notify runs
// Celery (lost: deleted, never completed), or, live, GC Notify's own workers' log lines (received, never ended and never
// received again). Optionally, notifications through GC Notify's API with a test key. docs/drill.md says how to read it.
//
// A pure core (DrillRecord: what the APIs said; checks(): the verdict; the report's files) behind a thin shell that
// refuses unsafe starts, starts and follows the experiment, and stops it and removes what it created however it ends.
import * as path from "path";
import type { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import type { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import type { EC2Client } from "@aws-sdk/client-ec2";
import type { FisClient } from "@aws-sdk/client-fis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { STSClient } from "@aws-sdk/client-sts";
import * as k8s from "@kubernetes/client-node";
import { HEADROOM_DEPLOYMENT, INTERRUPTION_REACTION_SECONDS, SPOT_NOTICE_SECONDS } from "../components/models/celeryPlacement.ts";
import { KARPENTER_METRICS, PROMETHEUS_NAMESPACE, SPOT_INTERRUPTED_REASON, heartbeatMetric } from "../components/models/karpenterSignals.ts";
import { alarmNames } from "../components/models/alarmRules.ts";
import { DRILL_NAMESPACE, DRILL_SERVICE_ACCOUNT, EKS_CLUSTER_NAME_TAG, NODEPOOL_TAG, NOTICE_BEFORE_INTERRUPTION_SECONDS, SPOT_INSTANCE_RESOURCE_TYPE, SPOT_INSTANCES_TARGET_KEY, SPOT_INTERRUPTION_ACTION, MAX_DRILL_NODES, drillNames, isoDurationSeconds } from "../components/models/fis.ts";
import { type StackConfig, type SyntheticProfile, syntheticMessages } from "../stacks/config.ts";
import { PROJECT_DIR, STACK_TAG } from "../stacks/stackNames.ts";
import { type CommandLine, type CommandResult, EXIT, integerFlag, isResult, usage, valueOf } from "../cli/args.ts";
import { jsonText } from "../cli/output.ts";
import { loadStack } from "../stacks/validatedConfig.ts";
import { GC_NOTIFY_LONGEST_VISIBILITY_SECONDS, type LiveTasks, type PodTasks, addEvent, complete, filterLogEvents, fluentBitRecord, patterns, taskLines, unfinished } from "./celeryLogs.ts";
import { toCsv } from "../cli/csv.ts";
import { type DrillHook, workerBudget, workerDeployment } from "./drillWorkload.ts";
import { type Cluster, type KubeConfig, type KubeObject, type WatchEventType, WatchSet, apiClient, apiError, clusterOf, epochMs, kubeCall, listItems, useContext } from "./kube.ts";
import { checkedKubeConfig } from "./kubeconfigFile.ts";
import { FINAL_STATUSES, MAX_NOTIFICATIONS, type NotificationRecord, NotifyApiError, NotifyClient, type NotifyTarget, isFinal, notificationType, notifyTargetProblems } from "./notifyApi.ts";
import { outFilesProblem, writeFiles } from "../cli/outDir.ts";
import { AwsCallError, awsCall, awsClientConfig, guarded } from "./awsCalls.ts";
import { type Deadlines, deadlinesOf } from "./deadlines.ts";
import { type Clock, systemClock } from "./scaleTest.ts";
import { lineChart, steps } from "../cli/svg.ts";
import { plural } from "../cli/table.ts";
import { DRILL, type DrillDeps, type Signal } from "./drill.ts";

export { workerDeployment } from "./drillWorkload.ts";

const TICK_MS = 1000;
const PROGRESS_EVERY_MS = 10_000;
const EXPERIMENT_POLL_MS = 5000;
/**
 * How often the done queue is read. Each record carries the worker's own times, so no time of the report depends on
 * when it is read; a record is counted at most 5 s later, and the run may end 5 s later.
 */
const COLLECT_EVERY_MS = 5000;
/** Entries in one SendMessageBatch or DeleteMessageBatch at most (SQS's TooManyEntriesInBatchRequest past 10). */
const SQS_BATCH_ENTRIES = 10;
/** For the synthetic workers to run on every node before the experiment starts. */
const COVER_TIMEOUT_SECONDS = 5 * 60;
/** Beyond durationBeforeInterruption, for the replacements to run and the messages to settle. */
const SETTLE_MARGIN_SECONDS = 15 * 60;
/** For Karpenter's metric to reach CloudWatch (scrape, then EMF). */
const METRIC_WAIT_SECONDS = 10 * 60;
const METRIC_POLL_MS = 30_000;
const NAMESPACE_GONE_SECONDS = 120;
/** Beyond the work queue's visibility timeout, the time it must hold nothing before missing messages are lost. */
const WORK_EMPTY_MARGIN_SECONDS = 60;
/**
 * How often the work queue's depth is asked once every message is sent: a minute's margin needs no answer a second,
 * and each is a GetQueueAttributes call.
 */
const WORK_DEPTH_POLL_MS = 5000;
/** For the displaced workers' lines to reach CloudWatch Logs (Fluent Bit flushes every 5 s) past their eviction. */
const LOG_ARRIVAL_SECONDS = 3 * 60;
const LOG_POLL_MS = 20_000;
/** One read of the logs, every page of it: FilterLogEvents may answer empty pages while it searches a large group. */
const LOG_READ_SECONDS = 2 * 60;
/** How far before the notice a displaced worker's log is read: a task it received earlier and still held is rare. */
const LOG_LOOKBACK_SECONDS = 15 * 60;
/** After the last notification sent, for each to reach a final status (an email can wait 5 min for its fake receipt). */
const NOTIFICATION_WAIT_SECONDS = 10 * 60;
const NOTIFICATION_POLL_MS = 10_000;
/** The taint Karpenter puts on a node it is draining (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/taints.go). */
export const DISRUPTED_TAINT = "karpenter.sh/disrupted";
/**
 * The event Karpenter records on the NodeClaim when a spot interruption warning reaches it (aws/karpenter-provider-aws
 * v1.14.1 pkg/controllers/interruption/events/events.go:24-42, published at utils.go:195-196): unlike the disrupted
 * counter, it is there for the first interruption after a controller restart.
 */
export const SPOT_INTERRUPTED_EVENT = "SpotInterrupted";
/** EC2 states of an instance that is gone or going (EC2 API Reference, InstanceState). */
const GONE_STATES = ["shutting-down", "terminated", "stopping", "stopped"];

// ---- What the APIs said. Times are epoch milliseconds, from the objects where the APIs record them.

export interface ExperimentRecord {
    id?: string;
    templateId: string;
    /** COUNT(n) of the template's target. */
    count: number;
    durationBeforeInterruption: string;
    status?: string;
    reason?: string;
    started?: number;
    ended?: number;
    /** The action's start: the rebalance recommendation. */
    actionStarted?: number;
    /** The interruption notice: 2 minutes before the interruption, so the action's start + durationBeforeInterruption - 2 min. */
    notice?: number;
    /** The action's end (FIS does not document it as the interruption: EC2's state says when the instance went). */
    actionEnded?: number;
    actionStatus?: string;
    /** The instances the target resolved to (IDs). */
    instances: string[];
}

/** An interrupted instance's end as EC2 tells it (DescribeInstances). */
export interface InstanceEnd {
    state: string;
    /** The state transition's time when EC2 gives one (StateTransitionReason), else when the drill first saw it. */
    at: number;
    reason?: string;
}

export interface DrillPod {
    /** namespace/name */
    key: string;
    node?: string;
    /** The controller that recreates it (a ReplicaSet's name), and whether it is a DaemonSet's pod. */
    owner?: string;
    daemonSet: boolean;
    burst: boolean;
    /** A headroom placeholder (celery-headroom): capacity to preempt, no work of its own. */
    headroom: boolean;
    synthetic: boolean;
    created?: number;
    running?: number;
    /** The eviction: deletionTimestamp less the grace period. */
    evicted?: number;
    /** deletionTimestamp: when the kubelet kills what still runs. */
    deadline?: number;
    grace?: number;
    /** Each container's end: exit code, reason, finishedAt. */
    exits: { container: string; exitCode: number; reason?: string; finished?: number }[];
    gone?: number;
}

export interface DrillNode {
    name: string;
    instance?: string;
    created?: number;
    /** First seen with Karpenter's karpenter.sh/disrupted taint (no API timestamp: the watch's time). */
    tainted?: number;
    removing?: number;
    /** The watch saw it deleted (the API keeps no timestamp of a finished deletion). */
    gone?: number;
}

export interface DrillClaim {
    name: string;
    node?: string;
    instance?: string;
    created?: number;
    ready?: number;
    /** Karpenter deleted it: its deletionTimestamp. */
    deleting?: number;
    gone?: number;
}

/** One numbered message: when it was sent, and each completion the workers recorded. */
export interface MessageRecord {
    n: number;
    sent: number;
    completions: { pod: string; started: number; finished: number }[];
}

/** The instance ID in an AWS provider ID (aws:///ca-central-1a/i-0abc) or an instance ARN. */
export const instanceOf = (id: string | undefined) => /(i-[0-9a-f]+)$/.exec(id ?? "")?.[1];

export class DrillRecord {
    readonly pods = new Map<string, DrillPod>();
    readonly nodes = new Map<string, DrillNode>();
    readonly claims = new Map<string, DrillClaim>();
    readonly messages = new Map<number, MessageRecord>();
    readonly depths: { at: number; queue: string; visible: number; inFlight: number }[] = [];
    /** Each interrupted instance's end, by ID. */
    readonly instanceEnds = new Map<string, InstanceEnd>();
    /** Karpenter's SpotInterrupted events, by NodeClaim (undefined: not read). */
    interruptionEvents?: Map<string, number>;
    /** Karpenter's FailedDraining events on the interrupted nodes: an eviction a PodDisruptionBudget refused, say. */
    readonly drainEvents: { node: string; at: number; message: string }[] = [];
    metric?: { interruptions: number; samples: number };
    /** Live: the displaced GC Notify workers' tasks, from their logs. */
    tasks?: LiveTasks;
    readonly notifications: NotificationRecord[] = [];
    /** Why GC Notify's API stopped taking notifications during the run, if it did. */
    notificationsError?: string;

    private readonly now: () => number;
    readonly experiment: ExperimentRecord;
    private readonly burstLabel: string;

    constructor(now: () => number, experiment: ExperimentRecord, burstLabel: string) {
        this.now = now;
        this.experiment = experiment;
        this.burstLabel = burstLabel;
    }

    pod(type: WatchEventType, o: KubeObject): void {
        const key = `${o.metadata.namespace}/${o.metadata.name}`;
        const owner = o.metadata.ownerReferences?.[0];
        const r = this.pods.get(key) ?? {
            key,
            owner: owner?.name,
            daemonSet: owner?.kind === "DaemonSet",
            burst: o.metadata.labels?.[this.burstLabel] === "true",
            headroom: o.metadata.labels?.app === HEADROOM_DEPLOYMENT,
            synthetic: o.metadata.namespace === DRILL_NAMESPACE,
            exits: [],
        };
        const s = o.status ?? {};
        r.node ??= o.spec?.nodeName;
        r.created ??= epochMs(o.metadata.creationTimestamp);
        const started = (s.containerStatuses ?? []).map((c: any) => epochMs(c.state?.running?.startedAt ?? c.state?.terminated?.startedAt)).filter((t: number | undefined): t is number => t !== undefined);
        if (started.length && (s.phase === "Running" || s.phase === "Succeeded" || s.phase === "Failed")) r.running ??= Math.min(...started);
        const deadline = epochMs(o.metadata.deletionTimestamp);
        if (deadline !== undefined && r.deadline === undefined) {
            r.deadline = deadline;
            r.grace = (o.metadata as any).deletionGracePeriodSeconds ?? o.spec?.terminationGracePeriodSeconds ?? 30;
            r.evicted = deadline - r.grace! * 1000;
        }
        for (const c of s.containerStatuses ?? []) {
            const t = c.state?.terminated;
            if (t && !r.exits.some((e) => e.container === c.name)) r.exits.push({ container: c.name, exitCode: t.exitCode, reason: t.reason, finished: epochMs(t.finishedAt) });
        }
        if (type === "DELETED") r.gone ??= this.now();
        this.pods.set(key, r);
    }

    node(type: WatchEventType, o: KubeObject): void {
        const r = this.nodes.get(o.metadata.name) ?? { name: o.metadata.name };
        r.instance ??= instanceOf(o.spec?.providerID);
        r.created ??= epochMs(o.metadata.creationTimestamp);
        if ((o.spec?.taints ?? []).some((t: any) => t.key === DISRUPTED_TAINT)) r.tainted ??= this.now();
        r.removing ??= epochMs(o.metadata.deletionTimestamp);
        if (type === "DELETED") r.gone ??= this.now();
        this.nodes.set(r.name, r);
    }

    claim(type: WatchEventType, o: KubeObject): void {
        const r = this.claims.get(o.metadata.name) ?? { name: o.metadata.name };
        r.node ??= o.status?.nodeName;
        r.instance ??= instanceOf(o.status?.providerID);
        r.created ??= epochMs(o.metadata.creationTimestamp);
        const ready = (o.status?.conditions ?? []).find((c: any) => c.type === "Ready" && c.status === "True");
        if (ready) r.ready ??= epochMs(ready.lastTransitionTime);
        r.deleting ??= epochMs(o.metadata.deletionTimestamp);
        if (type === "DELETED") r.gone ??= this.now();
        this.claims.set(r.name, r);
    }

    /** A worker's completion record: "<number> <pod> <started> <finished>" (epoch seconds). */
    completion(body: string): void {
        const [n, pod, started, finished] = body.trim().split(/\s+/);
        const m = this.messages.get(Number(n));
        if (m) m.completions.push({ pod, started: Number(started) * 1000, finished: Number(finished) * 1000 });
    }

    /** An interrupted instance as DescribeInstances gives it; the first time it is seen gone, or going, is kept. */
    instance(id: string, state: string, transition: string | undefined): void {
        if (this.instanceEnds.has(id) || !GONE_STATES.includes(state)) return;
        // "User initiated (2026-11-30 05:11:04 GMT)": EC2's own time of the change, when it gives one.
        const stamp = /\((\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) GMT\)/.exec(transition ?? "");
        this.instanceEnds.set(id, { state, at: stamp ? Date.parse(`${stamp[1]}T${stamp[2]}Z`) : this.now(), reason: transition || undefined });
    }

    /** The nodes of the interrupted instances. */
    interruptedNodes(): DrillNode[] {
        const ids = new Set(this.experiment.instances);
        const claimNodes = new Set([...this.claims.values()].filter((c) => c.instance && ids.has(c.instance)).map((c) => c.node));
        return [...this.nodes.values()].filter((n) => (n.instance && ids.has(n.instance)) || claimNodes.has(n.name));
    }

    /** The NodeClaims of the interrupted instances. */
    interruptedClaims(): DrillClaim[] {
        const ids = new Set(this.experiment.instances);
        const nodes = new Set(this.interruptedNodes().map((n) => n.name));
        return [...this.claims.values()].filter((c) => (c.instance && ids.has(c.instance)) || (c.node && nodes.has(c.node)));
    }

    /** When the instance of `node` was gone: EC2's state, else the node's removal. */
    instanceGone(node: DrillNode): number | undefined {
        const end = node.instance ? this.instanceEnds.get(node.instance)?.at : undefined;
        return end ?? node.gone;
    }
}

// ---- The verdict.

export interface Displaced {
    pod: DrillPod;
    node: DrillNode;
    /** The instance gone: EC2's state change (or, without it, the node's removal). */
    gone?: number;
    replacement?: DrillPod;
    /** Killed before its grace period ended (SIGKILL before deletionTimestamp, or its node gone first), or never evicted. */
    cutShort?: string;
}

export interface Check {
    name: string;
    /** undefined: not checked, or reported only (the line says why); it fails nothing. */
    ok: boolean | undefined;
    message: string;
}

export interface DrillRun {
    stack: string;
    cluster: string;
    workload: "synthetic" | "live";
    /** The synthetic worker's profile and the hook it ran (synthetic only). */
    profile?: SyntheticProfile;
    hook?: DrillHook;
    record: DrillRecord;
    /** The spot-interruptions alarm's name, for the report. */
    alarmName: string;
    /** Messages the synthetic workload was to send. */
    messagesPlanned: number;
    /** Notifications to send through GC Notify's API (0: no end-to-end check). */
    notificationsPlanned: number;
    end: number;
    /** Why the run stopped before it settled (a Stop, an error, Ctrl-C). */
    stopped?: string;
}

const SIGKILL_EXIT = 137;
/** A Celery pod's work: a burst worker (GC Notify's, or the drill's own), not a headroom placeholder. */
const celery = (p: DrillPod) => (p.burst || p.synthetic) && !p.headroom;

/** The burst pods that ran on the interrupted nodes when the notice came, each with its replacement and how it ended. */
export function displaced(run: DrillRun): Displaced[] {
    const rec = run.record;
    const notice = rec.experiment.notice;
    if (notice === undefined) return [];
    const nodes = rec.interruptedNodes();
    const onNode = new Set(nodes.map((n) => n.name));
    const pods = [...rec.pods.values()];
    const out: Displaced[] = [];
    const used = new Set<string>();
    for (const p of pods.filter((x) => (x.burst || x.synthetic) && !x.daemonSet && x.node && onNode.has(x.node) && (x.gone === undefined || x.gone > notice) && (x.created ?? 0) <= notice)) {
        const node = nodes.find((n) => n.name === p.node)!;
        const gone = rec.instanceGone(node);
        const from = (p.evicted ?? notice) - 1000;
        const replacement = pods
            .filter((r) => r.owner !== undefined && r.owner === p.owner && r.key !== p.key && !used.has(r.key) && (r.created ?? 0) >= from && r.node !== undefined && !onNode.has(r.node) && r.running !== undefined)
            .sort((a, b) => a.running! - b.running!)[0];
        if (replacement) used.add(replacement.key);
        out.push({ pod: p, node, gone, replacement, cutShort: cutShort(p, gone) });
    }
    return out.sort((a, b) => a.pod.key.localeCompare(b.pod.key));
}

const podEnded = (p: DrillPod) => (p.exits.length > 0 ? Math.max(...p.exits.map((e) => e.finished ?? 0)) : undefined);

/** How a displaced pod was cut short, or undefined when it ended within its grace period. */
function cutShort(p: DrillPod, gone: number | undefined): string | undefined {
    if (p.deadline === undefined) return gone !== undefined ? "never evicted: its node went first (Karpenter did not drain it)" : undefined;
    const killed = p.exits.find((e) => e.exitCode === SIGKILL_EXIT && e.finished !== undefined && e.finished < p.deadline! - 1000);
    if (killed) return `killed (exit ${SIGKILL_EXIT}, ${killed.reason ?? "no reason"}) before its ${p.grace} s grace period ended`;
    const ended = podEnded(p);
    if (ended === undefined && gone !== undefined && gone < p.deadline) return `its node went before the pod ended and before its ${p.grace} s grace period ended`;
    return undefined;
}

/** The pods on the interrupted nodes that are neither burst pods nor DaemonSet pods: nothing else may run there. */
export function affectedNonBurst(run: DrillRun): DrillPod[] {
    const notice = run.record.experiment.notice;
    if (notice === undefined) return [];
    const onNode = new Set(run.record.interruptedNodes().map((n) => n.name));
    return [...run.record.pods.values()].filter((p) => !p.burst && !p.synthetic && !p.daemonSet && p.node && onNode.has(p.node) && (p.gone === undefined || p.gone > notice) && (p.created ?? 0) <= notice);
}

export function messageCounts(run: DrillRun) {
    const all = [...run.record.messages.values()];
    return {
        sent: all.length,
        completed: all.filter((m) => m.completions.length > 0).length,
        lost: all.filter((m) => m.completions.length === 0).map((m) => m.n),
        twice: all.filter((m) => m.completions.length > 1).map((m) => m.n),
    };
}

/** Every check of the verdict, in the report's order. */
export function checks(run: DrillRun): Check[] {
    const rec = run.record;
    const e = rec.experiment;
    const at = (t: number | undefined) => (t === undefined || e.notice === undefined ? "?" : `${secondsFrom(e.notice, t)} s`);
    const out: Check[] = [];
    const allGone = e.instances.length > 0 && e.instances.every((i) => rec.instanceEnds.has(i));
    out.push(
        e.status === "completed"
            ? { name: "experiment", ok: true, message: `${e.id} completed: ${plural(e.instances.length, "instance")} interrupted (${e.instances.join(", ") || "none"})` }
            : // Karpenter terminates the instance as soon as it is drained, before EC2 would; what FIS then says of its action
              // is not documented. The notice was sent and EC2 shows the instance gone: the experiment did its work.
              e.status === "failed" && e.notice !== undefined && allGone
              ? { name: "experiment", ok: true, message: `${e.id} failed (${e.reason ?? "no reason"}) after its notice, and EC2 shows every target instance gone (${e.instances.join(", ")}): Karpenter took it first` }
              : { name: "experiment", ok: false, message: `${e.id ?? "not started"} ${e.status ?? "never started"}${e.reason ? `: ${e.reason}` : ""}` },
    );
    const claims = rec.interruptedClaims();
    const late = claims.filter((c) => c.deleting === undefined || e.notice === undefined || c.deleting - e.notice > INTERRUPTION_REACTION_SECONDS * 1000);
    out.push(
        e.notice === undefined
            ? { name: "reaction", ok: false, message: "no interruption notice was sent" }
            : claims.length === 0
              ? { name: "reaction", ok: false, message: "no NodeClaim of the interrupted instance(s) was seen" }
              : late.length === 0
                ? { name: "reaction", ok: true, message: `Karpenter deleted ${claims.map((c) => `${c.name} at ${at(c.deleting)}`).join(", ")} after the notice (bound ${INTERRUPTION_REACTION_SECONDS} s)` }
                : { name: "reaction", ok: false, message: `${late.map((c) => `${c.name} ${c.deleting === undefined ? "never deleted" : `deleted at ${at(c.deleting)}`}`).join(", ")}: more than ${INTERRUPTION_REACTION_SECONDS} s after the notice, the interruption queue or Karpenter lags` },
    );
    const events = rec.interruptionEvents;
    const unseen = claims.filter((c) => !events?.has(c.name));
    out.push(
        !events
            ? { name: "interruption seen", ok: e.notice === undefined ? false : undefined, message: e.notice === undefined ? "no interruption notice was sent" : "not read (the run stopped first)" }
            : claims.length && unseen.length === 0
              ? { name: "interruption seen", ok: true, message: `Karpenter's ${SPOT_INTERRUPTED_EVENT} event on ${claims.map((c) => `${c.name} at ${at(events.get(c.name))}`).join(", ")}` }
              : { name: "interruption seen", ok: false, message: `no ${SPOT_INTERRUPTED_EVENT} event on ${unseen.map((c) => c.name).join(", ") || "the interrupted NodeClaim(s)"}: Karpenter did not take the notice as a spot interruption (the EventBridge rule, the queue)` },
    );
    const d = displaced(run);
    const workers = d.filter((x) => celery(x.pod));
    const bound = e.notice === undefined ? undefined : e.notice + SPOT_NOTICE_SECONDS * 1000;
    const notReplaced = workers.filter((x) => !x.replacement || x.replacement.running! > bound!);
    const gap = (x: Displaced) => {
        const ended = podEnded(x.pod) ?? x.pod.gone;
        return ended === undefined || !x.replacement ? "?" : `${Math.max(0, secondsFrom(ended, x.replacement.running!))} s`;
    };
    out.push(
        e.notice === undefined
            ? { name: "replaced", ok: false, message: "no interruption notice was sent" }
            : workers.length === 0
              ? { name: "replaced", ok: false, message: "no Celery pod ran on the interrupted node(s): nothing was displaced, so nothing is proved" }
              : notReplaced.length === 0
                ? { name: "replaced", ok: true, message: `${workers.length} of ${workers.length} displaced Celery pods Running elsewhere within ${SPOT_NOTICE_SECONDS} s of the notice (when EC2 takes the node), the last at ${at(Math.max(...workers.map((x) => x.replacement!.running!)))}; from exit to replacement Running: ${workers.map(gap).join(", ")}` }
                : { name: "replaced", ok: false, message: `${notReplaced.length} of ${workers.length} not Running elsewhere within ${SPOT_NOTICE_SECONDS} s of the notice: ${notReplaced.map((x) => `${x.pod.key} (${x.replacement ? `replacement Running at ${at(x.replacement.running)}` : "no replacement Running"})`).join(", ")}` },
    );
    const headroom = d.filter((x) => x.pod.headroom);
    if (headroom.length) {
        const restored = headroom.filter((x) => x.replacement);
        out.push({
            name: "headroom",
            ok: undefined,
            message: `${headroom.length} headroom pod(s) displaced, ${restored.length ? `restored at ${restored.map((x) => at(x.replacement!.running)).join(", ")}` : "not restored yet"} (reported only: headroom is capacity a burst preempts, and waits for a new node)`,
        });
    }
    const cut = d.filter((x) => x.cutShort);
    out.push(cut.length === 0 ? { name: "grace periods", ok: true, message: `no displaced pod killed before its grace period ended` } : { name: "grace periods", ok: false, message: cut.map((x) => `${x.pod.key} ${x.cutShort}`).join("; ") });
    const others = affectedNonBurst(run);
    out.push(others.length === 0 ? { name: "non-burst pods", ok: true, message: "none ran on the interrupted node(s) but DaemonSet pods" } : { name: "non-burst pods", ok: false, message: `${plural(others.length, "pod")} that may not run on ephemeral nodes lost their node: ${others.map((p) => p.key).join(", ")}` });
    if (run.workload === "synthetic") out.push(messagesCheck(run, d));
    else out.push(tasksCheck(run, workers));
    if (run.notificationsPlanned > 0) out.push(notificationsCheck(run));
    const metric = rec.metric;
    out.push(
        !metric
            ? { name: "interruption metric", ok: undefined, message: "not read (the run stopped first)" }
            : metric.samples === 0
              ? { name: "interruption metric", ok: undefined, message: `not checked: no ${KARPENTER_METRICS.nodePoolLimit} sample reached CloudWatch either, so Karpenter's metrics are not scraped here (the alarm ${run.alarmName} is blind)` }
              : metric.interruptions >= Math.max(1, e.instances.length)
                ? { name: "interruption metric", ok: true, message: `${KARPENTER_METRICS.nodeClaimsDisrupted}{reason="${SPOT_INTERRUPTED_REASON}"} rose by ${metric.interruptions} (alarm ${run.alarmName})` }
                : {
                      name: "interruption metric",
                      ok: undefined,
                      message: `${KARPENTER_METRICS.nodeClaimsDisrupted}{reason="${SPOT_INTERRUPTED_REASON}"} rose by ${metric.interruptions}, not ${Math.max(1, e.instances.length)} (reported only: the CloudWatch agent sends counter deltas from a series' second scrape, so the first interruption after a Karpenter restart never reaches the alarm ${run.alarmName}; the event above is the proof)`,
                  },
    );
    return out;
}

function messagesCheck(run: DrillRun, d: Displaced[]): Check {
    const m = messageCounts(run);
    if (run.stopped) return { name: "messages", ok: undefined, message: `not settled: the run stopped with ${m.sent} sent, ${m.completed} completed, ${m.sent - m.completed} outstanding` };
    const syntheticDisplaced = d.filter((x) => x.pod.synthetic).length;
    const unsent = run.messagesPlanned - m.sent;
    const ok = m.lost.length === 0 && unsent === 0 && syntheticDisplaced > 0;
    const lost = run.profile === "gc-notify" ? "deleted (acknowledged as their task started) and never completed" : "never completed";
    const why = [
        ...(m.lost.length ? [`lost (${lost}): ${m.lost.join(", ")}`] : []),
        ...(unsent > 0 ? [`${unsent} never sent`] : []),
        ...(syntheticDisplaced === 0 ? ["no synthetic worker was on the interrupted node, so the messages prove nothing about it"] : []),
    ];
    const worker = run.profile === "gc-notify" ? `${run.profile} workers with the ${run.hook} hook` : `${run.profile ?? "synthetic"} workers`;
    return {
        name: "messages",
        ok,
        message: `${m.sent} sent, ${m.completed} completed, ${m.lost.length} lost, ${m.twice.length} processed twice${m.twice.length ? ` (${m.twice.join(", ")}: received again after the visibility timeout)` : ""}; ${syntheticDisplaced} ${worker} displaced${why.length ? `; ${why.join("; ")}` : ""}`,
    };
}

/** Live: the displaced GC Notify workers' tasks as their logs tell them. */
function tasksCheck(run: DrillRun, workers: Displaced[]): Check {
    const t = run.record.tasks;
    if (workers.length === 0) return { name: "tasks", ok: undefined, message: "no GC Notify burst worker was on the interrupted node(s)" };
    if (!t) return { name: "tasks", ok: undefined, message: "not read (the run stopped first)" };
    if (t.error) return { name: "tasks", ok: false, message: `${t.group} could not be read: ${t.error}` };
    const silent = t.pods.filter((p) => !complete(p));
    const received = t.pods.reduce((n, p) => n + p.received.size, 0);
    const open = t.pods.flatMap((p) => unfinished(p).map((id) => ({ p, id })));
    const redelivered = open.filter((x) => x.p.redelivered.has(x.id));
    const lost = open.filter((x) => !x.p.redelivered.has(x.id));
    const counts = `${received} received by the ${plural(t.pods.length, "displaced worker")}, ${received - open.length} ended (succeeded, failed, retried...) before its container exited, ${open.length} did not: ${redelivered.length} received again by another worker (never acknowledged), ${lost.length} lost`;
    const missing = silent.map((p) => `no line of ${p.pod} from its eviction on reached ${t.group} (${p.lines} before): its tasks cannot be counted`);
    return {
        name: "tasks",
        ok: lost.length === 0 && silent.length === 0,
        message: `${counts}${lost.length ? ` (${lost.map((x) => `${x.p.received.get(x.id)}[${x.id}] on ${x.p.pod}`).join(", ")})` : ""}${missing.length ? `; ${missing.join("; ")}` : ""}`,
    };
}

function notificationsCheck(run: DrillRun): Check {
    const n = run.record.notifications;
    const never = n.filter((x) => !isFinal(x));
    const byStatus = FINAL_STATUSES.map((s) => [s, n.filter((x) => x.status === s).length] as const).filter(([, c]) => c > 0);
    const unsent = run.notificationsPlanned - n.length;
    return {
        name: "notifications",
        ok: never.length === 0 && unsent === 0,
        message: `${n.length} sent through GC Notify's API, ${n.length - never.length} final (${byStatus.map(([s, c]) => `${c} ${s}`).join(", ") || "none"})${never.length ? `; never final: ${never.map((x) => `${x.id} (${x.status ?? "no status"})`).join(", ")}` : ""}${unsent ? `; ${unsent} never sent${run.record.notificationsError ? ` (${run.record.notificationsError})` : ""}` : ""}`,
    };
}

const secondsFrom = (from: number, t: number) => Math.round((t - from) / 100) / 10;

// ---- The report.

export interface TimelineEvent {
    at: number;
    event: string;
    object: string;
    detail: string;
}

/** Every dated event of the run, in order, from the APIs' timestamps (and the watch's, where the API keeps none). */
export function timeline(run: DrillRun): TimelineEvent[] {
    const rec = run.record;
    const e = rec.experiment;
    const ev: TimelineEvent[] = [];
    const add = (at: number | undefined, event: string, object: string, detail = "") => at !== undefined && ev.push({ at, event, object, detail });
    add(e.started, "experiment started", e.id ?? "", `template ${e.templateId}, COUNT(${e.count}), ${e.durationBeforeInterruption}`);
    add(e.actionStarted, "rebalance recommendation", e.instances.join(" "), "FIS action started; Karpenter takes no action on it");
    add(e.notice, "interruption notice", e.instances.join(" "), `${NOTICE_BEFORE_INTERRUPTION_SECONDS} s before the interruption`);
    add(e.actionEnded, "FIS action ended", e.instances.join(" "), e.actionStatus ?? "");
    add(e.ended, `experiment ${e.status}`, e.id ?? "", e.reason ?? "");
    for (const [id, end] of rec.instanceEnds) add(end.at, "instance gone", id, `EC2 ${end.state}${end.reason ? `: ${end.reason}` : ""}`);
    for (const [claim, at] of rec.interruptionEvents ?? []) add(at, `${SPOT_INTERRUPTED_EVENT} event`, claim, "Karpenter");
    for (const x of rec.drainEvents) add(x.at, "drain blocked", x.node, x.message);
    const interrupted = new Set(rec.interruptedNodes().map((n) => n.name));
    for (const c of rec.claims.values()) {
        if (c.node && interrupted.has(c.node)) add(c.deleting, "NodeClaim deleted by Karpenter", c.name, `node ${c.node}`);
        else if (e.notice !== undefined && (c.created ?? 0) >= e.notice - 60_000) {
            add(c.created, "replacement NodeClaim created", c.name, "");
            add(c.ready, "replacement NodeClaim Ready", c.name, c.node ? `node ${c.node}` : "");
        }
    }
    for (const n of rec.nodes.values()) {
        if (!interrupted.has(n.name)) continue;
        add(n.tainted, "node tainted", n.name, `${DISRUPTED_TAINT}, first seen by the watch`);
        add(n.removing, "node deleting", n.name, "");
        add(n.gone, "node gone", n.name, "seen by the watch");
    }
    for (const x of displaced(run)) {
        add(x.pod.evicted, "pod evicted", x.pod.key, `grace ${x.pod.grace} s`);
        for (const exit of x.pod.exits) add(exit.finished, "pod exited", x.pod.key, `${exit.container}: exit ${exit.exitCode} (${exit.reason ?? "no reason"})`);
        if (x.replacement) add(x.replacement.running, "replacement Running", x.replacement.key, `on ${x.replacement.node}`);
    }
    for (const n of rec.notifications) {
        add(n.sent, "notification sent", n.id, "");
        add(n.final, "notification final", n.id, n.status ?? "");
    }
    return ev.sort((a, b) => a.at - b.at || a.event.localeCompare(b.event));
}

export function summary(run: DrillRun, cleanup: string[]): string[] {
    const e = run.record.experiment;
    const t0 = e.notice ?? e.started ?? run.end;
    const s = (t: number) => String(secondsFrom(t0, t)).padStart(7);
    const cs = checks(run);
    const failed = cs.filter((c) => c.ok === false);
    const d = displaced(run);
    const workload = run.workload === "synthetic" ? `synthetic workload (${run.profile}${run.profile === "gc-notify" ? `, ${run.hook} hook` : ""})` : "live workload";
    const lines = [
        `Spot interruption drill of stack ${run.stack} on ${run.cluster}: ${e.id ? `experiment ${e.id}` : "no experiment"} of template ${e.templateId} (COUNT(${e.count}), ${e.durationBeforeInterruption}), ${workload}`,
        `Timeline (seconds from the interruption notice${e.notice ? `, ${new Date(e.notice).toISOString()}` : ""}):`,
        ...timeline(run).map((x) => `${s(x.at)}  ${x.event}: ${x.object}${x.detail ? ` (${x.detail})` : ""}`),
        `Displaced burst pods: ${d.length}${d.length ? ` (${d.filter((x) => x.pod.synthetic).length} synthetic, ${d.filter((x) => x.pod.headroom).length} headroom)` : ""}`,
        ...d.map((x) => {
            const exit = x.pod.exits.length ? x.pod.exits.map((c) => `exit ${c.exitCode} (${c.reason ?? "no reason"}) at ${secondsFrom(t0, c.finished ?? t0)} s`).join(", ") : "no exit recorded";
            const rep = x.replacement ? `replaced by ${x.replacement.key.split("/")[1]}, Running on ${x.replacement.node} at ${secondsFrom(t0, x.replacement.running!)} s` : "not replaced";
            return `  ${x.pod.key} on ${x.node.name}: evicted at ${x.pod.evicted === undefined ? "?" : `${secondsFrom(t0, x.pod.evicted)} s`}, ${exit}; ${rep}`;
        }),
        ...(run.workload === "live" && run.record.depths.length ? ["Queue depths (visible + in flight), first and largest:", ...depthLines(run)] : []),
        "Checks:",
        ...cs.map((c) => `  ${(c.ok === true ? "OK" : c.ok === false ? "FAIL" : "-").padEnd(4)}  ${c.name}: ${c.message}`),
        run.stopped ? `Result: FAILED: ${run.stopped}` : failed.length ? `Result: FAILED: ${failed.map((c) => c.name).join(", ")}` : "Result: OK",
        ...cleanup,
    ];
    return lines;
}

function depthLines(run: DrillRun): string[] {
    const queues = [...new Set(run.record.depths.map((d) => d.queue))];
    return queues.map((q) => {
        const ds = run.record.depths.filter((d) => d.queue === q);
        const total = (d: { visible: number; inFlight: number }) => d.visible + d.inFlight;
        return `  ${q}: ${total(ds[0])} at the start, at most ${Math.max(...ds.map(total))}, ${total(ds[ds.length - 1])} at the end`;
    });
}

export function timelineCsv(run: DrillRun): string {
    const t0 = run.record.experiment.notice ?? run.record.experiment.started ?? run.end;
    return toCsv(["t_s", "at", "event", "object", "detail"], timeline(run).map((x) => [secondsFrom(t0, x.at), new Date(x.at).toISOString(), x.event, x.object, x.detail]));
}

export function podsCsv(run: DrillRun): string {
    const t0 = run.record.experiment.notice ?? run.end;
    const s = (t: number | undefined) => (t === undefined ? undefined : secondsFrom(t0, t));
    return toCsv(
        ["pod", "node", "kind", "evicted_s", "grace_s", "exit_codes", "exited_s", "cut_short", "replacement", "replacement_node", "replacement_running_s", "instance_gone_s"],
        displaced(run).map((x) => [
            x.pod.key,
            x.node.name,
            x.pod.headroom ? "headroom" : x.pod.synthetic ? "synthetic" : "celery",
            s(x.pod.evicted),
            x.pod.grace,
            x.pod.exits.map((c) => c.exitCode).join(" "),
            s(podEnded(x.pod)),
            x.cutShort ?? "",
            x.replacement?.key,
            x.replacement?.node,
            s(x.replacement?.running),
            s(x.gone),
        ]),
    );
}

export function messagesCsv(run: DrillRun): string {
    const t0 = run.record.experiment.notice ?? run.end;
    return toCsv(
        ["message", "sent_s", "completions", "first_completed_s", "pods"],
        [...run.record.messages.values()].sort((a, b) => a.n - b.n).map((m) => [m.n, secondsFrom(t0, m.sent), m.completions.length, m.completions.length ? secondsFrom(t0, Math.min(...m.completions.map((c) => c.finished))) : undefined, m.completions.map((c) => c.pod).join(" ")]),
    );
}

export function notificationsCsv(run: DrillRun): string {
    const t0 = run.record.experiment.notice ?? run.end;
    return toCsv(["notification", "sent_s", "status", "final_s"], run.record.notifications.map((n) => [n.id, secondsFrom(t0, n.sent), n.status, n.final === undefined ? undefined : secondsFrom(t0, n.final)]));
}

/** One panel on the time since the experiment started: displaced pods on the interrupted nodes, their replacements, the pool's nodes, messages outstanding. */
export function chart(run: DrillRun): string {
    const rec = run.record;
    const t0 = rec.experiment.started ?? run.end;
    const d = displaced(run);
    const alive = (from: number | undefined, to: number | undefined, t: number) => from !== undefined && from <= t && (to === undefined || to > t);
    const times = new Set<number>([t0, run.end]);
    const podEnd = (p: DrillPod) => Math.min(p.gone ?? Infinity, ...p.exits.map((e) => e.finished ?? Infinity));
    for (const x of d) [x.pod.running, podEnd(x.pod), x.replacement?.running].forEach((t) => t !== undefined && Number.isFinite(t) && times.add(t));
    for (const n of rec.nodes.values()) [n.created, n.gone].forEach((t) => t !== undefined && times.add(t));
    for (const m of rec.messages.values()) [m.sent, ...m.completions.map((c) => c.finished)].forEach((t) => times.add(t));
    const points = [...times].filter((t) => t >= t0 && t <= run.end).sort((a, b) => a - b);
    const series = (name: string, value: (t: number) => number) => ({ name, points: steps(points.map((t) => [secondsFrom(t0, t), value(t)] as [number, number])) });
    const notice = rec.experiment.notice === undefined ? "" : ` (notice at t=${secondsFrom(t0, rec.experiment.notice)} s)`;
    return lineChart({
        title: `Stack ${run.stack}: spot interruption drill, ${plural(rec.experiment.instances.length, "node")} interrupted`,
        xLabel: `seconds since the experiment started${notice}`,
        yLabel: "count",
        series: [
            series("displaced pods running", (t) => d.filter((x) => alive(x.pod.running, podEnd(x.pod), t)).length),
            series("replacements running", (t) => d.filter((x) => x.replacement && alive(x.replacement.running, x.replacement.gone, t)).length),
            series("pool nodes", (t) => [...rec.nodes.values()].filter((n) => alive(n.created ?? t0, n.gone, t)).length),
            ...(run.workload === "synthetic" ? [series("messages outstanding", (t) => [...rec.messages.values()].filter((m) => m.sent <= t && !m.completions.some((c) => c.finished <= t)).length)] : []),
        ],
    });
}

// ---- The template, as FIS holds it, against the stack's config.

export interface TemplateFacts {
    id: string;
    count?: number;
    selectionMode: string;
    durationBeforeInterruption: string;
    stopAlarmNames: string[];
    problems: string[];
}

/** What the template found in AWS does, and every way it would take more, or other, nodes than the config allows. */
export function readTemplate(t: any, cfg: StackConfig, nodes: number): TemplateFacts {
    const problems: string[] = [];
    const actions = Object.values(t.actions ?? {}) as any[];
    const action = actions.find((a) => a.actionId === SPOT_INTERRUPTION_ACTION);
    if (!action || actions.length !== 1) problems.push(`its actions are ${actions.map((a) => a.actionId).join(", ") || "none"}, not exactly one ${SPOT_INTERRUPTION_ACTION}`);
    const target = t.targets?.[action?.targets?.[SPOT_INSTANCES_TARGET_KEY]] ?? {};
    if (target.resourceType !== SPOT_INSTANCE_RESOURCE_TYPE) problems.push(`its target is ${target.resourceType ?? "missing"}, not ${SPOT_INSTANCE_RESOURCE_TYPE}`);
    if (target.resourceArns?.length) problems.push(`its target names instances (${target.resourceArns.join(", ")}) instead of the pool's tag`);
    const want = { [NODEPOOL_TAG]: cfg.nodePool.name, [EKS_CLUSTER_NAME_TAG]: cfg.cluster.name };
    if (Object.entries(want).some(([k, v]) => target.resourceTags?.[k] !== v)) {
        problems.push(`its target selects ${JSON.stringify(target.resourceTags ?? {})}, not ${Object.entries(want).map(([k, v]) => `${k}=${v}`).join(" and ")}: it could interrupt another cluster's nodes`);
    }
    const mode = String(target.selectionMode ?? "?");
    const count = /^COUNT\(([0-9]+)\)$/.exec(mode)?.[1];
    if (count === undefined) problems.push(`it selects ${mode}, not COUNT(n): it could take every node of the pool`);
    else if (Number(count) > nodes) problems.push(`it takes COUNT(${count}), more than the ${nodes} node(s) allowed (--nodes, at most drill.nodes ${cfg.drill.nodes})`);
    const duration = String(action?.parameters?.durationBeforeInterruption ?? "?");
    const stop = (t.stopConditions ?? []) as { source: string; value?: string }[];
    const alarms = stop.filter((c) => c.source === "aws:cloudwatch:alarm" && c.value).map((c) => c.value!.split(":alarm:").pop()!);
    if (alarms.length === 0) problems.push("it has no CloudWatch alarm as a stop condition");
    return { id: t.id, count: count === undefined ? undefined : Number(count), selectionMode: mode, durationBeforeInterruption: duration, stopAlarmNames: alarms, problems };
}

// ---- The run against AWS and the cluster.

class Stop extends Error {}
/** A call that could not be made (refused, or no answer): exit 3 before the start, the run's end after it. */
class CannotRun extends Error {}

/** One AWS call of the drill, named by `what`: its answer, or CannotRun saying what failed, by its own error code. */
type Call = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/**
 * The drill's AWS calls (ops/awsCalls.ts): the deadlines, throttling (FIS's common answer) retried with a growing wait,
 * and every failure, refusal or no answer, CannotRun: exit 3 before the start, the run's end after it.
 */
function caller(d: Deadlines): Call {
    return async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
        try {
            return (await awsCall(what, fn, { deadlines: d, permissions: "docs/drill.md lists the permissions" })) as T;
        } catch (e) {
            throw e instanceof AwsCallError ? new CannotRun(e.message) : e;
        }
    };
}

/** A field the drill reads: present, or the answer cannot be used (CannotRun, never read as "none"). */
function need<T>(value: T | undefined | null, what: string, field: string): T {
    if (value === undefined || value === null) throw new CannotRun(`${what} answered without ${field}: cannot check (an empty or cut answer is not read as "none")`);
    return value;
}

const refused = (why: string): CommandResult => ({ exitCode: EXIT.findings, output: `Refused: ${why}` });
/** The AWS SDK clients the drill sends with: loaded once its refusals have passed, since they cost most of its start. */
async function loadAwsSdk() {
    const [cw, logs, ec2, fis, sqs, sts] = await Promise.all([
        import("@aws-sdk/client-cloudwatch"),
        import("@aws-sdk/client-cloudwatch-logs"),
        import("@aws-sdk/client-ec2"),
        import("@aws-sdk/client-fis"),
        import("@aws-sdk/client-sqs"),
        import("@aws-sdk/client-sts"),
    ]);
    return { cw, logs, ec2, fis, sqs, sts };
}

/** Set by runDrill before it makes a client; every request of the run is built from it. */
let aws: Awaited<ReturnType<typeof loadAwsSdk>>;

const cannotRun = (why: string): CommandResult => ({ exitCode: EXIT.cannotCheck, output: `Could not run: ${why}` });
const oneOfFlag = <T extends string>(flag: string, value: string, allowed: readonly T[]): T | string => (allowed.includes(value as T) ? (value as T) : `--${flag} must be ${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)} (got "${value}")`);

/** The drill, once ops/drill.ts has read the flags: the stack's config, the refusals that need it, then the run. */
export async function runDrill(line: CommandLine, deps: DrillDeps, context: string, json = false): Promise<CommandResult> {
    const cfg = loadStack(valueOf(line, "stack"), DRILL, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return cfg;
    if (cfg.stack === "production" && line.flags.production !== true) return usage("the production stack is drilled only with --production: it interrupts a node that serves GC Notify's traffic", DRILL);
    const d = cfg.drill;
    const nodesFlag = valueOf(line, "nodes");
    const nodes = nodesFlag === undefined ? d.nodes : integerFlag("nodes", nodesFlag, 1, MAX_DRILL_NODES);
    if (typeof nodes === "string") return usage(nodes, DRILL);
    const workload = oneOfFlag("workload", valueOf(line, "workload") ?? d.workload, ["synthetic", "live"] as const);
    if (workload !== "synthetic" && workload !== "live") return usage(workload, DRILL);
    const profile = oneOfFlag("profile", valueOf(line, "profile") ?? d.synthetic?.profile ?? "gc-notify", ["gc-notify", "late-ack"] as const);
    if (profile !== "gc-notify" && profile !== "late-ack") return usage(profile, DRILL);
    const hookFlag = valueOf(line, "hook");
    const hook = oneOfFlag("hook", hookFlag ?? "notify-karpenter", ["notify-karpenter", "gc-notify"] as const);
    if (hook !== "notify-karpenter" && hook !== "gc-notify") return usage(hook, DRILL);
    if (hookFlag !== undefined && (workload !== "synthetic" || profile !== "gc-notify")) return usage("--hook chooses the hook of the synthetic gc-notify workers; GC Notify's own workers run the hook their Deployment has", DRILL);
    if (valueOf(line, "profile") !== undefined && workload !== "synthetic") return usage("--profile chooses the synthetic worker; the live workload is GC Notify's own", DRILL);
    const e2e = notifyFlags(line, deps.env ?? process.env);
    if (typeof e2e === "string") return usage(e2e, DRILL);
    if (!d.enabled) return refused(`notify-karpenter:drill.enabled is false for stack ${cfg.stack}: the stack has no FIS template to start`);
    if (nodes > d.nodes) return refused(`--nodes ${nodes} is more than the config allows (notify-karpenter:drill.nodes ${d.nodes})`);
    if (workload === "synthetic" && !d.synthetic) return refused("notify-karpenter:drill.synthetic is not set: the synthetic workers need its image");
    if (workload === "synthetic" && cfg.controller.identity !== "pod-identity") return refused("the synthetic workers get their queue credentials from the EKS Pod Identity agent, and controller.identity is irsa (no agent assumed): use --workload live");
    if (workload === "live" && d.live.queues.length === 0) return refused("notify-karpenter:drill.live.queues is empty: the live workload reads GC Notify's queue depths");
    let kc: KubeConfig;
    try {
        kc = (deps.kubeConfig ?? checkedKubeConfig)();
    } catch (e) {
        return cannotRun(`could not load the kubeconfig: ${(e as Error)?.message ?? e}`);
    }
    const wrongCluster = useContext(kc, context, cfg.cluster);
    if (wrongCluster) return usage(wrongCluster, DRILL);
    const clock = deps.clock ?? systemClock;
    const progress = deps.progress ?? ((l: string) => process.stderr.write(`${l}\n`));
    const stamp = new Date(clock.now()).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
    const out = valueOf(line, "out") ?? path.join("drill-out", `${cfg.stack}-${stamp}`);
    // Checked before anything starts: the run's record must not be lost to a directory of the user's own files.
    const badOut = outFilesProblem(out, drillFiles(workload, e2e !== undefined), { command: "drill", stack: cfg.stack });
    if (badOut) return usage(badOut, DRILL);

    const dl = deadlinesOf(deps.deadlines);
    const c = awsClientConfig(cfg.cluster.region, deps.aws ?? {}, dl);
    aws = await loadAwsSdk();
    const clients = { fis: guarded(new aws.fis.FisClient(c), dl), sqs: guarded(new aws.sqs.SQSClient(c), dl), cw: guarded(new aws.cw.CloudWatchClient(c), dl), ec2: guarded(new aws.ec2.EC2Client(c), dl), logs: guarded(new aws.logs.CloudWatchLogsClient(c), dl), sts: guarded(new aws.sts.STSClient(c), dl) };
    const call = caller(dl);
    try {
        // The account the experiment would start in is the caller's: a context whose cluster is another account's
        // (its ARN) is refused before anything is read or started.
        const me = await call("sts:GetCallerIdentity", () => clients.sts.send(new aws.sts.GetCallerIdentityCommand({})));
        const account = need(me.Account, "sts:GetCallerIdentity", "an Account");
        const otherAccount = useContext(kc, context, cfg.cluster, { account });
        if (otherAccount) return usage(otherAccount, DRILL);
        return await prepareAndRun(cfg, { context, nodes, workload, profile, hook, e2e, out, stamp, json }, kc, clients, { call, deadlines: dl }, clock, progress, deps);
    } catch (e) {
        if (e instanceof CannotRun) return cannotRun(e.message);
        throw e;
    } finally {
        for (const client of Object.values(clients)) client.destroy();
    }
}

/** The end-to-end flags with their environment fallbacks: undefined when --notifications is absent, or the usage error. */
function notifyFlags(line: CommandLine, env: Record<string, string | undefined>): { count: number; target: NotifyTarget } | undefined | string {
    const count = valueOf(line, "notifications");
    const given = ["notify-api", "notify-template", "notify-to"].filter((f) => valueOf(line, f) !== undefined);
    if (count === undefined) return given.length ? `--${given[0]} goes with --notifications <N>` : undefined;
    const n = integerFlag("notifications", count, 1, MAX_NOTIFICATIONS);
    if (typeof n === "string") return n;
    const target = { api: valueOf(line, "notify-api") ?? env.NOTIFY_API_URL, templateId: valueOf(line, "notify-template") ?? env.NOTIFY_TEMPLATE_ID, to: valueOf(line, "notify-to") ?? env.NOTIFY_TO, key: env.NOTIFY_API_KEY };
    const problems = notifyTargetProblems(target);
    return problems.length ? problems.join("; ") : { count: n, target: target as NotifyTarget };
}

type Clients = { fis: FisClient; sqs: SQSClient; cw: CloudWatchClient; ec2: EC2Client; logs: CloudWatchLogsClient; sts: STSClient };
/** How the run reaches AWS and the cluster: the AWS call and the deadlines. */
interface Net {
    call: Call;
    deadlines: Deadlines;
}

/** The files a drill writes into --out. */
function drillFiles(workload: "synthetic" | "live", notifications: boolean): string[] {
    return ["timeline.csv", "pods.csv", ...(workload === "synthetic" ? ["messages.csv"] : []), ...(notifications ? ["notifications.csv"] : []), "chart.svg", "summary.txt"];
}
interface Options {
    context: string;
    nodes: number;
    workload: "synthetic" | "live";
    profile: SyntheticProfile;
    hook: DrillHook;
    e2e?: { count: number; target: NotifyTarget };
    out: string;
    stamp: string;
    /** The report as one JSON object (docs/json-output.md). */
    json: boolean;
}

/** The checks before the start (refusals), then the run; what was seen is written however it ends. */
async function prepareAndRun(cfg: StackConfig, o: Options, kc: KubeConfig, clients: Clients, net: Net, clock: Clock, progress: (l: string) => void, deps: DrillDeps): Promise<CommandResult> {
    const { call } = net;
    const names = drillNames(cfg.controller.namePrefix ?? cfg.cluster.name);
    // The template: the stack's (its Name and stack tags), read back as FIS holds it.
    const summaries: any[] = [];
    let token: string | undefined;
    do {
        const page = await call("fis:ListExperimentTemplates", () => clients.fis.send(new aws.fis.ListExperimentTemplatesCommand({ nextToken: token })));
        summaries.push(...need(page.experimentTemplates, "fis:ListExperimentTemplates", "experimentTemplates"));
        token = page.nextToken;
    } while (token);
    const found = summaries.filter((t) => t.tags?.Name === names.template && t.tags?.[STACK_TAG] === cfg.stack);
    if (found.length !== 1) return refused(`${found.length === 0 ? "no" : found.length} FIS experiment template tagged Name=${names.template} and ${STACK_TAG}=${cfg.stack} in ${cfg.cluster.region}: run pulumi up with drill.enabled first`);
    const t = need((await call(`fis:GetExperimentTemplate ${found[0].id}`, () => clients.fis.send(new aws.fis.GetExperimentTemplateCommand({ id: found[0].id })))).experimentTemplate, `fis:GetExperimentTemplate ${found[0].id}`, "an experimentTemplate");
    const template = readTemplate(t, cfg, o.nodes);
    if (template.problems.length) return refused(`template ${template.id} ${template.problems.join("; ")}; pulumi up puts it back as the config says`);
    const alarms = need((await call("cloudwatch:DescribeAlarms", () => clients.cw.send(new aws.cw.DescribeAlarmsCommand({ AlarmNames: template.stopAlarmNames })))).MetricAlarms, "cloudwatch:DescribeAlarms", "MetricAlarms");
    const missing = template.stopAlarmNames.filter((n) => !alarms.some((a) => a.AlarmName === n));
    if (missing.length) return refused(`the template's stop-condition alarm(s) ${missing.join(", ")} do not exist: FIS would refuse to start`);
    const alarming = alarms.filter((a) => a.StateValue === "ALARM");
    if (alarming.length) return refused(`stop-condition alarm ${alarming.map((a) => `${a.AlarmName} is in ALARM (${a.StateReason ?? "no reason"})`).join("; ")}: burst capacity is already short; drill when it is OK`);

    const cluster = clusterOf(kc, net.deadlines);
    let poolNodes: KubeObject[];
    try {
        poolNodes = await cluster.listNodes(`${NODEPOOL_TAG}=${cfg.nodePool.name}`);
    } catch (e) {
        return cannotRun(`the cluster of context ${o.context} did not answer: ${apiError(e)}`);
    }
    const running = poolNodes.filter((n) => !n.metadata.deletionTimestamp && (n.status?.conditions ?? []).some((x: any) => x.type === "Ready" && x.status === "True"));
    if (running.length === 0) return refused(`no ephemeral node of NodePool ${cfg.nodePool.name} runs (Ready): there is nothing to interrupt; scale a burst Deployment or wait for the headroom pods' node`);
    if (o.workload === "synthetic" && (await cluster.namespaceExists(DRILL_NAMESPACE).catch((e) => Promise.reject(new CannotRun(`the cluster did not answer: ${apiError(e)}`))))) {
        return refused(`namespace ${DRILL_NAMESPACE} exists: another drill runs, or one was not cleaned up (kubectl delete namespace ${DRILL_NAMESPACE})`);
    }

    const record = new DrillRecord(() => clock.now(), { templateId: template.id, count: template.count ?? 0, durationBeforeInterruption: template.durationBeforeInterruption, instances: [] }, cfg.placement.burstPodLabel);
    const run: DrillRun = {
        stack: cfg.stack,
        cluster: cfg.cluster.name,
        workload: o.workload,
        ...(o.workload === "synthetic" ? { profile: o.profile, hook: o.hook } : {}),
        record,
        alarmName: alarmNames(cfg.cluster.name, [], []).spotInterruptions,
        messagesPlanned: o.workload === "synthetic" ? syntheticMessages(cfg.drill.synthetic!, o.profile) : 0,
        notificationsPlanned: o.e2e?.count ?? 0,
        end: clock.now(),
    };
    const env: Env = { cluster, kc, clients, net, clock, progress, deps, names, runningNodes: running.length, notify: o.e2e ? new NotifyClient(o.e2e.target) : undefined };
    const cleanup = await execute(cfg, o, run, env);
    if (run.stopped?.startsWith(REFUSED)) return refused(run.stopped.slice(REFUSED.length));
    const report = summary(run, cleanup);
    const files: Record<string, string> = {
        "timeline.csv": timelineCsv(run),
        "pods.csv": podsCsv(run),
        ...(o.workload === "synthetic" ? { "messages.csv": messagesCsv(run) } : {}),
        ...(o.e2e ? { "notifications.csv": notificationsCsv(run) } : {}),
        "chart.svg": chart(run),
        "summary.txt": report.join("\n") + "\n",
    };
    const unwritable = writeFiles(o.out, files, "--out", { command: "drill", stack: cfg.stack });
    const ok = !run.stopped && checks(run).every((x) => x.ok !== false) && !cleanup.some((l) => l.startsWith("Cleanup FAILED"));
    const exitCode = unwritable ? EXIT.cannotCheck : ok ? EXIT.ok : EXIT.findings;
    const written = unwritable ? [] : Object.keys(files).map((f) => path.join(o.out, f));
    if (o.json) return { exitCode, format: "json", output: jsonText("drill", { ...drillJson(run, report, cleanup, exitCode, written), ...(unwritable ? { error: unwritable } : {}) }) };
    if (unwritable) return { exitCode, output: [...report, unwritable].join("\n") };
    report.push(`Wrote ${written.join(", ")}`);
    return { exitCode, output: report.join("\n") };
}

/** The drill's JSON report (docs/json-output.md): the experiment, the checks, the result and the cleanup. */
export function drillJson(run: DrillRun, report: string[], cleanup: string[], exitCode: number, files: string[]) {
    const e = run.record.experiment;
    const at = (t: number | undefined) => (t === undefined ? null : new Date(t).toISOString());
    const result = report.find((l) => l.startsWith("Result: "))!.slice("Result: ".length);
    return {
        stack: run.stack,
        exitCode,
        cluster: run.cluster,
        workload: run.workload,
        experiment: { id: e.id ?? null, templateId: e.templateId, status: e.status ?? null, reason: e.reason ?? null, started: at(e.started), notice: at(e.notice), instances: e.instances },
        displaced: displaced(run).map((x) => ({ pod: x.pod.key, node: x.node.name, replacement: x.replacement?.key ?? null, cutShort: x.cutShort ?? null })),
        checks: checks(run).map((c) => ({ name: c.name, ok: c.ok ?? null, message: c.message })),
        result: { ok: result === "OK", message: result },
        cleanup,
        files,
    };
}

/** A run that ended before the experiment started, for a reason that refuses it (the first notification refused, say). */
const REFUSED = "refused before the start: ";

interface Env {
    cluster: Cluster;
    kc: KubeConfig;
    clients: Clients;
    net: Net;
    clock: Clock;
    progress: (l: string) => void;
    deps: DrillDeps;
    names: ReturnType<typeof drillNames>;
    runningNodes: number;
    notify?: NotifyClient;
}

/** Starts, follows and always cleans up; fills `run` and returns the cleanup lines. */
async function execute(cfg: StackConfig, o: Options, run: DrillRun, env: Env): Promise<string[]> {
    const { cluster, clients, clock, progress } = env;
    const { call } = env.net;
    const rec = run.record;
    const e = rec.experiment;
    const signals = env.deps.signals ?? process;
    const watches = new WatchSet(cluster);
    const interrupt = (signal: Signal) => () => {
        watches.stop(`interrupted (${signal})`);
        progress(`${signal}: stopping the experiment and cleaning up`);
    };
    const handlers = { SIGINT: interrupt("SIGINT"), SIGTERM: interrupt("SIGTERM") };
    for (const s of ["SIGINT", "SIGTERM"] as const) signals.on(s, handlers[s]);
    const durationSeconds = isoDurationSeconds(e.durationBeforeInterruption) ?? NOTICE_BEFORE_INTERRUPTION_SECONDS;

    let lastProgress = -Infinity;
    let lastPoll = -Infinity;
    // FIS's final states (botocore fis 2020-12-01 ExperimentStatus: pending, initiating, running, completed, stopping,
    // stopped, failed, cancelled).
    const terminal = () => ["completed", "stopped", "failed", "cancelled"].includes(e.status ?? "");
    const poll = async () => {
        run.end = clock.now();
        if (!e.id || clock.now() - lastPoll < EXPERIMENT_POLL_MS) return;
        lastPoll = clock.now();
        // FIS's terminal states are final (its times were read with them): asked no more while the run settles.
        if (!terminal()) readExperiment(e, need((await call(`fis:GetExperiment ${e.id}`, () => clients.fis.send(new aws.fis.GetExperimentCommand({ id: e.id })))).experiment, `fis:GetExperiment ${e.id}`, "an experiment"), durationSeconds);
        if (e.actionStarted !== undefined && e.instances.length === 0) {
            const resolved = need((await call(`fis:ListExperimentResolvedTargets ${e.id}`, () => clients.fis.send(new aws.fis.ListExperimentResolvedTargetsCommand({ experimentId: e.id })))).resolvedTargets, `fis:ListExperimentResolvedTargets ${e.id}`, "resolvedTargets");
            e.instances = [...new Set(resolved.flatMap((r) => Object.values(r.targetInformation ?? {}).map(instanceOf).filter((i): i is string => !!i)))];
        }
        // When each interrupted instance went, from EC2 itself: Karpenter terminates it once drained, before EC2 would.
        const pending = e.instances.filter((i) => !rec.instanceEnds.has(i));
        if (e.notice !== undefined && pending.length) {
            for (const i of await describeInstances(clients.ec2, call, pending)) rec.instance(i.id, i.state, i.reason);
        }
    };
    const until = async (phase: string, done: () => boolean, timeoutSeconds: number, status: () => string, each: () => Promise<void> = async () => {}) => {
        const deadline = clock.now() + timeoutSeconds * 1000;
        for (;;) {
            await poll();
            await each();
            if (watches.stopReason) throw new Stop(watches.stopReason);
            if (done()) return;
            if (clock.now() >= deadline) throw new Stop(`${phase} did not finish within ${timeoutSeconds} s`);
            if (clock.now() - lastProgress >= PROGRESS_EVERY_MS) {
                lastProgress = clock.now();
                const since = e.notice === undefined ? "" : `[${String(secondsFrom(e.notice, clock.now())).padStart(6)} s] `;
                progress(`${since}${phase}: ${status()}`);
            }
            await clock.sleep(TICK_MS);
        }
    };

    const queues: { work?: string; done?: string } = {};
    let namespaceCreated = false;
    const synthetic = o.workload === "synthetic";
    const s = cfg.drill.synthetic;
    const visibility = cfg.placement.burst.queueVisibilityTimeoutSeconds;
    /** Messages numbered so far; rec.messages holds those SQS took. */
    let numbered = 0;
    let workEmptySince: number | undefined;
    let lastWorkDepth = -Infinity;
    let reread = false;
    const batchRetry: BatchRetry = { attempts: env.net.deadlines.throttleAttempts, firstDelayMs: env.net.deadlines.throttleFirstDelayMs, sleep: (ms) => clock.sleep(ms) };
    /** The next n messages, ten to a call; each is recorded as sent once SQS has taken it. */
    const send = async (n: number) => {
        const numbers: number[] = [];
        while (numbers.length < n && numbered < run.messagesPlanned) numbers.push(++numbered);
        for (let i = 0; i < numbers.length; i += SQS_BATCH_ENTRIES) {
            const entries = numbers.slice(i, i + SQS_BATCH_ENTRIES).map((x) => ({ Id: `m${x}`, MessageBody: String(x) }));
            await sqsBatch(
                call,
                batchRetry,
                "sqs:SendMessageBatch",
                entries,
                (some) => clients.sqs.send(new aws.sqs.SendMessageBatchCommand({ QueueUrl: queues.work!, Entries: some })),
                (x) => `message ${x.MessageBody}`,
                (taken) => taken.forEach((x) => rec.messages.set(Number(x.MessageBody), { n: Number(x.MessageBody), sent: clock.now(), completions: [] })),
            );
        }
    };
    let lastCollect = -Infinity;
    /** The completions recorded so far; a long poll reads from every SQS server (a short poll samples some). */
    const collect = async (waitSeconds = 0) => {
        if (!queues.done) return;
        lastCollect = clock.now();
        for (let page = 0; page < 100; page++) {
            const got = (await call("sqs:ReceiveMessage", () => clients.sqs.send(new aws.sqs.ReceiveMessageCommand({ QueueUrl: queues.done, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds })))).Messages ?? [];
            const records = got.map((m, i) => ({ Id: `r${i}`, ReceiptHandle: need(m.ReceiptHandle, "sqs:ReceiveMessage", "a message's ReceiptHandle"), body: m.Body ?? "" }));
            for (const r of records) rec.completion(r.body);
            if (records.length) {
                await sqsBatch(
                    call,
                    batchRetry,
                    "sqs:DeleteMessageBatch",
                    records,
                    (some) => clients.sqs.send(new aws.sqs.DeleteMessageBatchCommand({ QueueUrl: queues.done, Entries: some.map(({ Id, ReceiptHandle }) => ({ Id, ReceiptHandle })) })),
                    (r) => `the record "${r.body.trim()}"`,
                );
            }
            if (got.length === 0 || (waitSeconds === 0 && got.length < 10)) return;
        }
    };
    let lastDepth = -Infinity;
    /** The live queues' URLs, asked once. */
    const liveUrls = new Map<string, string>();
    const depths = async () => {
        if (synthetic || clock.now() - lastDepth < 30_000) return;
        lastDepth = clock.now();
        for (const q of cfg.drill.live.queues) {
            const url = liveUrls.get(q) ?? need((await call(`sqs:GetQueueUrl ${q}`, () => clients.sqs.send(new aws.sqs.GetQueueUrlCommand({ QueueName: q })))).QueueUrl, `sqs:GetQueueUrl ${q}`, "a QueueUrl");
            liveUrls.set(q, url);
            rec.depths.push({ at: clock.now(), queue: q, ...(await queueDepth(call, clients.sqs, url, q)) });
        }
    };
    const notify = env.notify;
    const sendNotifications = async (n: number) => {
        for (let i = 0; i < n && notify && !rec.notificationsError && rec.notifications.length < run.notificationsPlanned; i++) {
            const id = await notify.send(`notify-karpenter-drill-${o.stamp}-${rec.notifications.length + 1}`);
            rec.notifications.push({ id, sent: clock.now() });
        }
    };
    /** During the interruption an API that stops answering ends the sending, not the drill: the check names it. */
    const sendNotificationsDuring = (n: number) =>
        sendNotifications(n).catch((x) => {
            rec.notificationsError = (x as Error).message;
            progress(`GC Notify's API: ${rec.notificationsError}; no more notifications are sent`);
        });

    const cleanup: string[] = [];
    try {
        // Everything that runs on the pool's nodes, and the pool's nodes and NodeClaims.
        await watches.watch("pods", "/api/v1/pods", {}, (t, obj) => rec.pod(t, obj));
        await watches.watch("nodes", "/api/v1/nodes", { labelSelector: `${NODEPOOL_TAG}=${cfg.nodePool.name}` }, (t, obj) => rec.node(t, obj));
        await watches.watch("NodeClaims", "/apis/karpenter.sh/v1/nodeclaims", { labelSelector: `${NODEPOOL_TAG}=${cfg.nodePool.name}` }, (t, obj) => rec.claim(t, obj));

        // The first half of the notifications before the start: a key or template GC Notify refuses stops the drill here.
        if (notify) {
            try {
                await sendNotifications(Math.ceil(run.notificationsPlanned / 2));
            } catch (x) {
                throw new Stop(`${REFUSED}GC Notify's API refused the first notification (${(x as Error).message}); nothing was started`);
            }
            progress(`sent ${plural(rec.notifications.length, "notification")} through GC Notify's API (${notificationType(o.e2e!.target.to)}, test key)`);
        }

        if (synthetic) {
            for (const kind of ["work", "done"] as const) {
                const name = `${env.names.queuePrefix}${o.stamp.toLowerCase()}-${kind}`;
                queues[kind] = need((await call(`sqs:CreateQueue ${name}`, () => clients.sqs.send(new aws.sqs.CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: String(visibility), SqsManagedSseEnabled: "true", MessageRetentionPeriod: "3600" }, tags: { [STACK_TAG]: cfg.stack } })))).QueueUrl, `sqs:CreateQueue ${name}`, "a QueueUrl");
            }
            // At least two workers on every ephemeral node, so the interrupted one holds two and meets the budget.
            const replicas = Math.max(s!.pods, 2 * env.runningNodes);
            const budget = workerBudget(cfg, replicas);
            progress(`creating namespace ${DRILL_NAMESPACE}: ${replicas} synthetic ${o.profile} workers${o.profile === "gc-notify" ? ` (${o.hook} hook)` : ""} (${s!.image}), budget ${JSON.stringify({ ...budget.spec, selector: undefined })}, queues ${queues.work!.split("/").pop()} and ${queues.done!.split("/").pop()}`);
            await cluster.createNamespace(DRILL_NAMESPACE, { "app.kubernetes.io/managed-by": "notify-karpenter-drill" });
            namespaceCreated = true;
            const d = env.net.deadlines;
            await kubeCall(`create serviceaccount ${DRILL_NAMESPACE}/${DRILL_SERVICE_ACCOUNT}`, () => apiClient(env.kc, k8s.CoreV1Api, d).createNamespacedServiceAccount({ namespace: DRILL_NAMESPACE, body: { metadata: { name: DRILL_SERVICE_ACCOUNT, namespace: DRILL_NAMESPACE } } }), d);
            await kubeCall(`create poddisruptionbudget ${DRILL_NAMESPACE}/${budget.metadata.name}`, () => apiClient(env.kc, k8s.PolicyV1Api, d).createNamespacedPodDisruptionBudget({ namespace: DRILL_NAMESPACE, body: budget as k8s.V1PodDisruptionBudget }), d);
            await cluster.createDeployment(DRILL_NAMESPACE, workerDeployment(cfg, { profile: o.profile, hook: o.hook, queues: { work: queues.work!, done: queues.done! }, replicas }));
            // Every running node of the pool holds a worker before the start, so the interrupted one does.
            const uncovered = () => {
                const live = [...rec.nodes.values()].filter((n) => n.gone === undefined && n.removing === undefined);
                const held = new Set([...rec.pods.values()].filter((p) => p.synthetic && p.running !== undefined && p.gone === undefined).map((p) => p.node));
                return live.filter((n) => !held.has(n.name)).map((n) => n.name);
            };
            await until("workers", () => uncovered().length === 0, COVER_TIMEOUT_SECONDS, () => `nodes without a running worker: ${uncovered().join(", ")}`);
            await send(Math.ceil(run.messagesPlanned / 2));
        }

        const clientToken = `drill-${cfg.stack}-${o.stamp}`;
        const started = (await call("fis:StartExperiment", () => clients.fis.send(new aws.fis.StartExperimentCommand({ clientToken, experimentTemplateId: e.templateId, tags: { [STACK_TAG]: cfg.stack } })))).experiment;
        // An answer without the experiment's ID leaves an experiment that may run, and that this run cannot follow or stop.
        if (typeof started?.id !== "string" || !started.id) {
            throw new Stop(`fis:StartExperiment answered without an experiment ID: an experiment of template ${e.templateId} may have started, and this run cannot follow or stop it: find it with aws fis list-experiments (tag ${STACK_TAG}=${cfg.stack}) and stop it with aws fis stop-experiment --id <id>`);
        }
        e.id = started.id;
        readExperiment(e, started, durationSeconds);
        progress(`started experiment ${e.id} of template ${e.templateId}: COUNT(${e.count}), the interruption ${e.durationBeforeInterruption} after the action starts, the notice 2 minutes before it`);
        const settled = () => {
            if (!terminal()) return false;
            // Stopped, or ended before any notice: there is nothing more to follow.
            if (e.notice === undefined || e.status === "stopped" || e.status === "cancelled") return true;
            if (rec.interruptedNodes().some((n) => n.gone === undefined)) return false;
            if (e.instances.some((i) => !rec.instanceEnds.has(i))) return false;
            if (displaced(run).some((x) => !x.replacement)) return false;
            if (rec.notifications.length < run.notificationsPlanned && !rec.notificationsError) return false;
            if (!synthetic) return true;
            if (rec.messages.size < run.messagesPlanned) return false;
            // Not all completed: lost once the work queue has held nothing, visible or in flight, for longer than a
            // message a killed worker held takes to come back, and a long poll of the done queue found nothing more.
            return messageCounts(run).lost.length === 0 || reread;
        };
        await until(
            "interruption",
            settled,
            durationSeconds + SETTLE_MARGIN_SECONDS,
            () => {
                const d = displaced(run);
                const m = messageCounts(run);
                return `experiment ${e.status}; ${d.length} displaced, ${d.filter((x) => x.replacement).length} replaced; interrupted nodes gone ${rec.interruptedNodes().filter((n) => n.gone !== undefined).length}/${rec.interruptedNodes().length}${synthetic ? `; messages ${m.completed}/${m.sent} completed` : ""}`;
            },
            async () => {
                if (clock.now() - lastCollect >= COLLECT_EVERY_MS) await collect();
                await depths();
                // The rest of the messages and notifications during the interruption: one a second from the notice on.
                if (e.notice !== undefined && clock.now() >= e.notice) {
                    if (synthetic) await send(1);
                    await sendNotificationsDuring(1);
                }
                if (synthetic && rec.messages.size >= run.messagesPlanned && !reread && clock.now() - lastWorkDepth >= WORK_DEPTH_POLL_MS) {
                    lastWorkDepth = clock.now();
                    const depth = await queueDepth(call, clients.sqs, queues.work!, "the work queue");
                    const held = depth.visible + depth.inFlight;
                    workEmptySince = held > 0 ? undefined : (workEmptySince ?? clock.now());
                    if (messageCounts(run).lost.length > 0 && workEmptySince !== undefined && clock.now() - workEmptySince >= (visibility + WORK_EMPTY_MARGIN_SECONDS) * 1000) {
                        await collect(5);
                        reread = true;
                    }
                }
            },
        );
        if (e.notice === undefined || e.status === "stopped" || e.status === "cancelled") throw new Stop(`experiment ${e.id} ${e.status}${e.reason ? `: ${e.reason}` : ""}`);
        rec.interruptionEvents = await readInterruptionEvents(env, rec);
        if (!synthetic) rec.tasks = await readLiveTasks(cfg, run, env);
        if (notify) await followNotifications(notify, run, env);
        await readMetric(cfg, run, env);
    } catch (err) {
        run.stopped = err instanceof Stop || err instanceof CannotRun || err instanceof NotifyApiError ? err.message : (err as Error).message;
    } finally {
        watches.stopAll();
        for (const sig of ["SIGINT", "SIGTERM"] as const) signals.off(sig, handlers[sig]);
        run.end = clock.now();
        if (e.id && !terminal()) {
            try {
                readExperiment(e, (await call(`fis:StopExperiment ${e.id}`, () => clients.fis.send(new aws.fis.StopExperimentCommand({ id: e.id })))).experiment, durationSeconds);
                cleanup.push(`Cleanup: stopped experiment ${e.id} (a notice already sent is not taken back)`);
            } catch (x) {
                cleanup.push(`Cleanup FAILED: could not stop experiment ${e.id} (${(x as Error).message}); stop it with: aws fis stop-experiment --id ${e.id}`);
            }
        }
        if (namespaceCreated) cleanup.push(await deleteNamespace(cluster, clock));
        for (const url of [queues.work, queues.done].filter((u): u is string => !!u)) {
            try {
                await call(`sqs:DeleteQueue ${url.split("/").pop()}`, () => clients.sqs.send(new aws.sqs.DeleteQueueCommand({ QueueUrl: url })));
                cleanup.push(`Cleanup: deleted queue ${url.split("/").pop()}`);
            } catch (x) {
                cleanup.push(`Cleanup FAILED: could not delete queue ${url} (${(x as Error).message}); delete it with: aws sqs delete-queue --queue-url ${url}`);
            }
        }
    }
    return cleanup;
}

/** A queue's messages, visible and in flight (GetQueueAttributes), each count checked to be one. */
async function queueDepth(call: Call, sqs: SQSClient, url: string, name: string): Promise<{ visible: number; inFlight: number }> {
    const what = `sqs:GetQueueAttributes ${name}`;
    const a = need((await call(what, () => sqs.send(new aws.sqs.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] })))).Attributes, what, "Attributes");
    const count = (key: string) => {
        const n = Number(need(a[key as keyof typeof a], what, key));
        if (!Number.isInteger(n) || n < 0) throw new CannotRun(`${what} answered ${key} ${JSON.stringify(a[key as keyof typeof a])}, which is no count: cannot check`);
        return n;
    };
    return { visible: count("ApproximateNumberOfMessages"), inFlight: count("ApproximateNumberOfMessagesNotVisible") };
}

/** What SQS says of each entry of a batch call (botocore sqs 2012-11-05 SendMessageBatchResult, DeleteMessageBatchResult). */
interface BatchAnswer {
    Successful?: { Id?: string }[];
    Failed?: { Id?: string; SenderFault?: boolean; Code?: string; Message?: string }[];
}

/** How often, and after what waits, an entry SQS failed by its own fault is tried again: as a throttled call is. */
interface BatchRetry {
    attempts: number;
    firstDelayMs: number;
    sleep: (ms: number) => Promise<void>;
}

/**
 * One SQS batch call (SendMessageBatch, DeleteMessageBatch) of which every entry must be done. SQS answers each entry
 * on its own, in Successful or in Failed (BatchResultErrorEntry: Id, SenderFault, Code, Message), and "you should check
 * for batch errors even when the call returns an HTTP status code of 200" (botocore sqs 2012-11-05; SQS API Reference,
 * SendMessageBatch, DeleteMessageBatch, BatchResultErrorEntry). `done` hears the entries SQS did, as it answers, and
 * only those. An entry failed by SQS's own fault (SenderFault false: an internal error) arrives in a 200, which the
 * SDK does not retry: it is tried again, with the other such entries of the call, after the waits a throttled call
 * gets (1, 2, 4... s). One still failing after `retry.attempts` tries, or failed by the request's fault (SenderFault
 * true: sending it again cannot help), ends the run as a refused call does, naming the call, the entry and SQS's code.
 * AWS's own batching client splits failed entries the same way (aws/aws-sdk-java aws-java-sdk-sqs buffered/
 * SendQueueBuffer.java: a SenderFault entry fails; any other is sent again, and retried).
 * An entry the answer leaves out of both lists cannot be told done or not: the answer is refused as cut.
 */
async function sqsBatch<E extends { Id: string }>(call: Call, retry: BatchRetry, what: string, entries: E[], send: (some: E[]) => Promise<BatchAnswer>, label: (entry: E) => string, done: (some: E[]) => void = () => {}): Promise<void> {
    let pending = entries;
    let wait = retry.firstDelayMs;
    for (let attempt = 1; pending.length; attempt++) {
        const r = await call(what, () => send(pending));
        const ok = new Set((r.Successful ?? []).map((x) => x.Id));
        const failed = new Map((r.Failed ?? []).map((x) => [x.Id, x]));
        const unanswered = pending.filter((x) => !ok.has(x.Id) && !failed.has(x.Id));
        done(pending.filter((x) => ok.has(x.Id)));
        if (unanswered.length) throw new CannotRun(`${what} answered nothing of ${unanswered.map(label).join(", ")}: cannot tell whether SQS did it (an empty or cut answer is not read as "done")`);
        const again = pending.filter((x) => failed.has(x.Id));
        const fatal = again.filter((x) => attempt >= retry.attempts || failed.get(x.Id)!.SenderFault !== false);
        if (fatal.length) {
            const why = (x: E) => {
                const f = failed.get(x.Id)!;
                return `${label(x)}: ${f.Code ?? "no code"}: ${f.Message ?? "no message"} (${f.SenderFault === false ? `SQS's fault, ${attempt} times` : "the request's fault: not tried again"})`;
            };
            throw new CannotRun(`${what} failed on ${fatal.map(why).join("; ")}`);
        }
        if (again.length) {
            await retry.sleep(wait);
            wait *= 2;
        }
        pending = again;
    }
}

/**
 * Each instance's state; EC2 refuses the whole call over one ID it no longer lists (InvalidInstanceID.NotFound, an
 * instance terminated an hour or more ago), so then each is asked alone and one not listed is taken as gone.
 */
async function describeInstances(ec2: EC2Client, call: Call, ids: string[]): Promise<{ id: string; state: string; reason?: string }[]> {
    const what = "ec2:DescribeInstances";
    const ask = async (some: string[]) => {
        const r = await call(what, () => ec2.send(new aws.ec2.DescribeInstancesCommand({ InstanceIds: some })));
        return need(r.Reservations, what, "Reservations")
            .flatMap((x) => need(x.Instances, what, "a reservation's Instances"))
            .map((i) => ({ id: need(i.InstanceId, what, "an InstanceId"), state: need(i.State?.Name, what, `${i.InstanceId}'s State.Name`), reason: i.StateTransitionReason }));
    };
    try {
        return await ask(ids);
    } catch (x) {
        if (!/InvalidInstanceID\.NotFound/.test((x as Error).message)) throw x;
        const out: { id: string; state: string; reason?: string }[] = [];
        for (const id of ids) out.push(...(await ask([id]).catch((y) => (/InvalidInstanceID\.NotFound/.test((y as Error).message) ? [{ id, state: "terminated", reason: "no longer listed by DescribeInstances" }] : Promise.reject(y)))));
        return out;
    }
}

/** The experiment's state and its one action's times, from GetExperiment (or Start/StopExperiment). */
function readExperiment(e: ExperimentRecord, x: any, durationSeconds: number): void {
    if (!x) return;
    e.status = x.state?.status ?? e.status;
    e.reason = x.state?.reason ?? e.reason;
    e.started ??= x.startTime?.getTime?.() ?? x.creationTime?.getTime?.();
    e.ended ??= x.endTime?.getTime?.();
    const a = Object.values(x.actions ?? {})[0] as any;
    if (a) {
        e.actionStarted ??= a.startTime?.getTime?.();
        // FIS: "sends a Spot Instance interruption notice ... two minutes before interrupting them. The interruption
        // time is determined by the specified durationBeforeInterruption" (AWS FIS User Guide, "Actions reference").
        if (e.actionStarted !== undefined) e.notice ??= e.actionStarted + (durationSeconds - NOTICE_BEFORE_INTERRUPTION_SECONDS) * 1000;
        e.actionEnded ??= a.endTime?.getTime?.();
        e.actionStatus = a.state?.status ?? e.actionStatus;
    }
}

/**
 * Karpenter's events on the interrupted NodeClaims and nodes (core/v1 Events; the API server keeps them an hour):
 * SpotInterrupted on the NodeClaim, and FailedDraining on the node when an eviction was refused, by a
 * PodDisruptionBudget say (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/node/termination/terminator/eviction.go:199-207).
 */
async function readInterruptionEvents(env: Env, rec: DrillRecord): Promise<Map<string, number>> {
    const d = env.net.deadlines;
    const core = apiClient(env.kc, k8s.CoreV1Api, d);
    const list = async (kind: string, reason: string) => {
        const what = `list events (involvedObject.kind=${kind},reason=${reason})`;
        try {
            return listItems(what, await kubeCall(what, () => core.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=${kind},reason=${reason}` }), d)) as k8s.CoreV1Event[];
        } catch (x) {
            throw new Error(`could not list the ${kind}s' events: ${apiError(x)}`);
        }
    };
    const at = (ev: k8s.CoreV1Event) => epochMs((ev.firstTimestamp ?? ev.eventTime ?? ev.metadata?.creationTimestamp) as any) ?? env.clock.now();
    const claims = new Set(rec.interruptedClaims().map((c) => c.name));
    const out = new Map<string, number>();
    for (const ev of await list("NodeClaim", SPOT_INTERRUPTED_EVENT)) {
        const name = ev.involvedObject?.name;
        if (name && claims.has(name) && !out.has(name)) out.set(name, at(ev));
    }
    const nodes = new Set(rec.interruptedNodes().map((n) => n.name));
    for (const ev of await list("Node", "FailedDraining")) {
        if (nodes.has(ev.involvedObject?.name ?? "")) rec.drainEvents.push({ node: ev.involvedObject.name!, at: at(ev), message: ev.message ?? "" });
    }
    return out;
}

/**
 * Live: the displaced GC Notify workers' tasks, from their lines in CloudWatch Logs (ops/celeryLogs.ts). It waits for
 * each worker's log to reach past its eviction, then, for a task received and never ended there, for another worker to
 * receive it again (a message never acknowledged comes back within the longest visibility timeout).
 */
async function readLiveTasks(cfg: StackConfig, run: DrillRun, env: Env): Promise<LiveTasks> {
    const { clients, clock } = env;
    const group = cfg.alarms.logGroupName;
    const notice = run.record.experiment.notice!;
    const workers = displaced(run).filter((x) => celery(x.pod) && !x.pod.synthetic);
    if (workers.length === 0) return { group, pods: [] };
    const fresh = (): PodTasks[] => workers.map((x) => ({ pod: x.pod.key.split("/")[1], evicted: x.pod.evicted ?? notice, lines: 0, received: new Map(), ended: new Set(), redelivered: new Set() }));
    const from = Math.max(notice - LOG_LOOKBACK_SECONDS * 1000, Math.min(...workers.map((x) => x.pod.running ?? x.pod.created ?? notice)));
    const lastExit = Math.max(...workers.map((x) => podEnded(x.pod) ?? x.gone ?? notice));
    const logDeadline = clock.now() + LOG_ARRIVAL_SECONDS * 1000;
    const redeliveryDeadline = Math.max(logDeadline, lastExit + (GC_NOTIFY_LONGEST_VISIBILITY_SECONDS + WORK_EMPTY_MARGIN_SECONDS) * 1000);
    const podPatterns = patterns(workers.map((x) => x.pod.key.split("/")[1]), (p) => `$.kubernetes.pod_name = "${p}"`, " || ", (b) => `{ ${b} }`);
    let pods = fresh();
    try {
        for (;;) {
            pods = fresh();
            const readBy = clock.now() + LOG_READ_SECONDS * 1000;
            for (const pattern of podPatterns) await filterLogEvents(clients.logs, env.net.call, clock, { group, pattern, from, to: clock.now(), deadline: readBy }, (ev) => addEvent(pods, ev));
            const open = pods.flatMap((p) => unfinished(p).map((id) => ({ p, id })));
            if (pods.every(complete) && open.length) {
                // Received again by a worker that is not the one that held it: that message was never acknowledged.
                const ids = [...new Set(open.map((x) => x.id))];
                for (const pattern of patterns(ids, (id) => `?"${id}"`, " ", (b) => b)) {
                    await filterLogEvents(clients.logs, env.net.call, clock, { group, pattern, from: notice, to: clock.now(), deadline: readBy }, (ev) => {
                        const r = fluentBitRecord(ev.message ?? "");
                        for (const t of taskLines(r.text).filter((l) => l.outcome === "received")) for (const x of open.filter((y) => y.id === t.id && y.p.pod !== r.pod)) x.p.redelivered.add(x.id);
                    });
                }
            }
            const done = pods.every(complete) && open.every((x) => x.p.redelivered.has(x.id));
            if (done || clock.now() >= (pods.every(complete) ? redeliveryDeadline : logDeadline)) return { group, pods };
            await clock.sleep(LOG_POLL_MS);
            run.end = clock.now();
        }
    } catch (x) {
        const err = x as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
        return { group, pods, error: `${err.$metadata?.httpStatusCode ? `logs:FilterLogEvents: HTTP ${err.$metadata.httpStatusCode} ${err.name}: ` : ""}${err.message}${err.$metadata?.httpStatusCode === 403 ? " (docs/drill.md lists the permissions)" : ""}` };
    }
}

/** Each notification's status until every one is final or NOTIFICATION_WAIT_SECONDS after the last was sent. */
async function followNotifications(notify: NotifyClient, run: DrillRun, env: Env): Promise<void> {
    const { clock, progress } = env;
    const n = run.record.notifications;
    const deadline = Math.max(...n.map((x) => x.sent)) + NOTIFICATION_WAIT_SECONDS * 1000;
    for (;;) {
        for (const x of n.filter((y) => !isFinal(y))) {
            try {
                x.status = await notify.status(x.id);
            } catch (err) {
                // Asked again next round; the check names what it last said.
                x.status = `unread: ${(err as Error).message}`;
            }
            if (isFinal(x)) x.final = clock.now();
        }
        const open = n.filter((x) => !isFinal(x));
        if (open.length === 0 || clock.now() >= deadline) return;
        progress(`notifications: ${n.length - open.length}/${n.length} final`);
        await clock.sleep(NOTIFICATION_POLL_MS);
        run.end = clock.now();
    }
}

/** Waits for Karpenter's spot interruption count to reach CloudWatch (or for the sign that nothing scrapes it). */
async function readMetric(cfg: StackConfig, run: DrillRun, env: Env): Promise<void> {
    const { clients, clock } = env;
    const { call } = env.net;
    const e = run.record.experiment;
    const from = new Date((e.notice ?? e.started ?? clock.now()) - 5 * 60_000);
    const deadline = clock.now() + METRIC_WAIT_SECONDS * 1000;
    const hb = heartbeatMetric(cfg.cluster.name, cfg.nodePool.name);
    const dims = (x: Record<string, string>) => Object.entries(x).map(([Name, Value]) => ({ Name, Value }));
    for (;;) {
        const r = await call("cloudwatch:GetMetricData", () =>
            clients.cw.send(
                new aws.cw.GetMetricDataCommand({
                    StartTime: from,
                    EndTime: new Date(clock.now() + 60_000),
                    MetricDataQueries: [
                        { Id: "interruptions", MetricStat: { Metric: { Namespace: PROMETHEUS_NAMESPACE, MetricName: KARPENTER_METRICS.nodeClaimsDisrupted, Dimensions: dims({ ClusterName: cfg.cluster.name, nodepool: cfg.nodePool.name, reason: SPOT_INTERRUPTED_REASON }) }, Period: 60, Stat: "Sum" } },
                        { Id: "samples", MetricStat: { Metric: { Namespace: hb.namespace, MetricName: hb.metricName, Dimensions: dims(hb.dimensions as Record<string, string>) }, Period: 60, Stat: "SampleCount" } },
                    ],
                }),
            ),
        );
        const results = need(r.MetricDataResults, "cloudwatch:GetMetricData", "MetricDataResults");
        const sum = (id: string) => results.filter((x) => x.Id === id).flatMap((x) => x.Values ?? []).reduce((a, b) => a + b, 0);
        run.record.metric = { interruptions: sum("interruptions"), samples: sum("samples") };
        if (run.record.metric.samples === 0 || run.record.metric.interruptions >= Math.max(1, e.instances.length) || clock.now() >= deadline) return;
        await clock.sleep(METRIC_POLL_MS);
        run.end = clock.now();
    }
}

async function deleteNamespace(cluster: Cluster, clock: Clock): Promise<string> {
    try {
        await cluster.deleteNamespace(DRILL_NAMESPACE);
        const deadline = clock.now() + NAMESPACE_GONE_SECONDS * 1000;
        while (clock.now() < deadline) {
            if (!(await cluster.namespaceExists(DRILL_NAMESPACE))) return `Cleanup: deleted namespace ${DRILL_NAMESPACE}`;
            await clock.sleep(2000);
        }
        return `Cleanup FAILED: namespace ${DRILL_NAMESPACE} is still terminating after ${NAMESPACE_GONE_SECONDS} s; check it with: kubectl get namespace ${DRILL_NAMESPACE}`;
    } catch (x) {
        return `Cleanup FAILED: could not delete namespace ${DRILL_NAMESPACE} (${(x as Error).message}); delete it with: kubectl delete namespace ${DRILL_NAMESPACE}`;
    }
}

