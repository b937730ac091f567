// `npm run drill -- --stack <s> --context <ctx> [--nodes N] [--workload synthetic|live] [--out dir] [--production]`:
// interrupts real spot nodes of the pool on purpose, through the stack's AWS FIS experiment template
// (components/spotInterruptionDrill.ts), and proves from the APIs' own timestamps that the chain holds: EventBridge,
// the interruption queue, Karpenter's cordon and drain, the burst pods' grace period, and their replacements running
// elsewhere before the instance is gone. With the synthetic workload (a Celery-like worker on numbered messages of a
// temporary queue) it also counts the messages lost (must be 0) and worked twice. docs/drill.md says how to read it.
//
// A pure core (DrillRecord: what the APIs said; checks(): the verdict; the report's files) behind a thin shell that
// refuses unsafe starts, starts and follows the experiment, and stops it and removes what it created however it ends.
import * as fs from "fs";
import * as path from "path";
import { CloudWatchClient, DescribeAlarmsCommand, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { FisClient, GetExperimentCommand, GetExperimentTemplateCommand, ListExperimentResolvedTargetsCommand, ListExperimentTemplatesCommand, StartExperimentCommand, StopExperimentCommand } from "@aws-sdk/client-fis";
import { CreateQueueCommand, DeleteMessageCommand, DeleteQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, ReceiveMessageCommand, SQSClient, SendMessageCommand } from "@aws-sdk/client-sqs";
import * as k8s from "@kubernetes/client-node";
import { burstGraceSeconds, burstPodTemplate } from "../components/celeryWorkloadPlacement.ts";
import { KARPENTER_METRICS, PROMETHEUS_NAMESPACE, SPOT_INTERRUPTED_REASON } from "../components/karpenterSignals.ts";
import { alarmNames, heartbeatMetric } from "../components/karpenterAlarms.ts";
import { DRILL_NAMESPACE, DRILL_SERVICE_ACCOUNT, NODEPOOL_TAG, SPOT_INSTANCE_RESOURCE_TYPE, SPOT_INSTANCES_TARGET_KEY, SPOT_INTERRUPTION_ACTION, drillNames, isoDurationSeconds } from "../components/spotInterruptionDrill.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { DRILL_RECEIVE_WAIT_SECONDS, type StackConfig } from "../stacks/config.ts";
import { STACK_TAG } from "../stacks/createStack.ts";
import { PROJECT_DIR } from "../plan/offlineRuntime.ts";
import { type Command, type CommandResult, EXIT, integerFlag, isResult, loadStack, parseCommandLine, runMain, usage, valueOf } from "./args.ts";
import { toCsv } from "./csv.ts";
import { type Cluster, type KubeConfig, type KubeObject, type WatchEventType, WatchSet, clusterOf, epochMs, loadKubeConfig, useContext } from "./kube.ts";
import { outDirProblem, writeFiles } from "./outDir.ts";
import { type AwsClientConfig } from "./preflight.ts";
import { type Clock, systemClock } from "./scaleTest.ts";
import { lineChart, steps } from "./svg.ts";
import { plural } from "./table.ts";
import { apiError } from "./verifyPlacement.ts";

export const DRILL: Command = {
    usage: ["npm run drill -- --stack <name> --context <kubecontext> [--nodes <N>] [--workload synthetic|live] [--out <dir>] [--production]"],
    summary: [
        "Interrupts real spot nodes of the stack's NodePool through its AWS FIS experiment template (drill.enabled), and",
        "follows the interruption through the APIs' own timestamps: the notice, Karpenter's drain, each displaced burst pod's",
        "exit and its replacement, the instance gone. Refuses to start while a stop-condition alarm is in ALARM or no",
        "ephemeral node runs. Writes a timeline (CSV, SVG), the displaced pods, the messages (synthetic) and a summary;",
        "stops the experiment and removes what it created however it ends (docs/drill.md).",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose template, cluster and pool to drill", default: "required" },
        context: { value: "<kubecontext>", meaning: "the kubeconfig context of the stack's cluster; another cluster is refused", default: "required" },
        nodes: { value: "<N>", meaning: "how many nodes you expect to lose; the template may take no more (drill.nodes at most)", default: "drill.nodes" },
        workload: { value: "synthetic|live", meaning: "synthetic: a Celery-like worker on numbered messages; live: GC Notify's burst workers and queue depths", default: "drill.workload" },
        out: { value: "<dir>", meaning: "where to write the results", default: "drill-out/<stack>-<time>" },
        production: { meaning: "required to drill the production stack" },
    },
    exits: {
        0: "the drill ran and every check passed",
        1: "a check failed (a message lost, a pod killed early, a pod not replaced in time...), or the drill was refused before it started",
        3: "could not run: kubeconfig unreadable, the cluster or an AWS endpoint unreachable, credentials refused (HTTP 401/403)",
    },
    examples: ["npm run drill -- --stack scratch --context scratch", "npm run drill -- --stack staging --context staging --workload live"],
};

const WORKER = "drill-worker";
const TICK_MS = 1000;
const PROGRESS_EVERY_MS = 10_000;
const EXPERIMENT_POLL_MS = 5000;
/** For the synthetic workers to run on every node before the experiment starts. */
const COVER_TIMEOUT_SECONDS = 5 * 60;
/** Beyond durationBeforeInterruption, for the replacements to run and the messages to settle. */
const SETTLE_MARGIN_SECONDS = 15 * 60;
/** For Karpenter's metric to reach CloudWatch (scrape, then EMF). */
const METRIC_WAIT_SECONDS = 10 * 60;
const METRIC_POLL_MS = 30_000;
const NAMESPACE_GONE_SECONDS = 120;
/** The work queue empty this long, messages still not completed are lost (the done queue's records have arrived by then). */
const WORK_EMPTY_SECONDS = 10;
/** The taint Karpenter puts on a node it is draining (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/taints.go). */
export const DISRUPTED_TAINT = "karpenter.sh/disrupted";
/** The worker: ops/drillWorker.sh, run by bash in the AWS CLI image. */
export const WORKER_SCRIPT = fs.readFileSync(path.join(import.meta.dirname, "drillWorker.sh"), "utf8");

type Signal = "SIGINT" | "SIGTERM";

export interface DrillDeps {
    kubeConfig?: () => KubeConfig;
    /** SDK client settings (tests: the fake endpoint and static credentials); the default credential chain otherwise. */
    aws?: AwsClientConfig;
    clock?: Clock;
    progress?: (line: string) => void;
    signals?: { on(signal: Signal, listener: () => void): unknown; off(signal: Signal, listener: () => void): unknown };
    dir?: string;
}

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
    /** The action's start: FIS sends the interruption notice. */
    notice?: number;
    /** The action's end: the instance interrupted (or the action stopped). */
    actionEnded?: number;
    actionStatus?: string;
    /** The instances the target resolved to (IDs). */
    instances: string[];
}

export interface DrillPod {
    /** namespace/name */
    key: string;
    node?: string;
    /** The controller that recreates it (a ReplicaSet's name), and whether it is a DaemonSet's pod. */
    owner?: string;
    daemonSet: boolean;
    burst: boolean;
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
    metric?: { interruptions: number; samples: number };

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

    /** The nodes of the interrupted instances. */
    interruptedNodes(): DrillNode[] {
        const ids = new Set(this.experiment.instances);
        const claimNodes = new Set([...this.claims.values()].filter((c) => c.instance && ids.has(c.instance)).map((c) => c.node));
        return [...this.nodes.values()].filter((n) => (n.instance && ids.has(n.instance)) || claimNodes.has(n.name));
    }
}

// ---- The verdict.

export interface Displaced {
    pod: DrillPod;
    node: DrillNode;
    /** The instance gone: FIS's interruption (the action's end) or the node's removal, whichever came first. */
    gone?: number;
    replacement?: DrillPod;
    /** Killed before its grace period ended (SIGKILL before deletionTimestamp, or its node gone first), or never evicted. */
    cutShort?: string;
}

export interface Check {
    name: string;
    /** undefined: not checked (the line says why); it fails nothing. */
    ok: boolean | undefined;
    message: string;
}

export interface DrillRun {
    stack: string;
    cluster: string;
    workload: "synthetic" | "live";
    record: DrillRecord;
    /** The spot-interruptions alarm's name, for the report. */
    alarmName: string;
    /** Messages the synthetic workload was to send. */
    messagesPlanned: number;
    end: number;
    /** Why the run stopped before it settled (a Stop, an error, Ctrl-C). */
    stopped?: string;
}

const SIGKILL_EXIT = 137;

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
        const gone = Math.min(rec.experiment.actionEnded ?? Infinity, node.gone ?? Infinity);
        const from = (p.evicted ?? notice) - 1000;
        const replacement = pods
            .filter((r) => r.owner !== undefined && r.owner === p.owner && r.key !== p.key && !used.has(r.key) && (r.created ?? 0) >= from && r.node !== undefined && !onNode.has(r.node) && r.running !== undefined)
            .sort((a, b) => a.running! - b.running!)[0];
        if (replacement) used.add(replacement.key);
        out.push({ pod: p, node, gone: Number.isFinite(gone) ? gone : undefined, replacement, cutShort: cutShort(p, node) });
    }
    return out.sort((a, b) => a.pod.key.localeCompare(b.pod.key));
}

/** How a displaced pod was cut short, or undefined when it ended within its grace period. */
function cutShort(p: DrillPod, node: DrillNode): string | undefined {
    if (p.deadline === undefined) return node.gone !== undefined ? "never evicted: its node went first (Karpenter did not drain it)" : undefined;
    const killed = p.exits.find((e) => e.exitCode === SIGKILL_EXIT && e.finished !== undefined && e.finished < p.deadline! - 1000);
    if (killed) return `killed (exit ${SIGKILL_EXIT}, ${killed.reason ?? "no reason"}) before its ${p.grace} s grace period ended`;
    const ended = p.exits.length > 0 ? Math.max(...p.exits.map((e) => e.finished ?? 0)) : undefined;
    if (ended === undefined && node.gone !== undefined && node.gone < p.deadline) return `its node went before the pod ended and before its ${p.grace} s grace period ended`;
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
    out.push(
        e.status === "completed"
            ? { name: "experiment", ok: true, message: `${e.id} completed: ${plural(e.instances.length, "instance")} interrupted (${e.instances.join(", ") || "none"})` }
            : { name: "experiment", ok: false, message: `${e.id ?? "not started"} ${e.status ?? "never started"}${e.reason ? `: ${e.reason}` : ""}` },
    );
    const d = displaced(run);
    const notReplaced = d.filter((x) => !x.replacement || (x.gone !== undefined && x.replacement.running! >= x.gone));
    const last = d.filter((x) => x.replacement).map((x) => x.replacement!.running!);
    out.push(
        e.notice === undefined
            ? { name: "replaced in time", ok: false, message: "no interruption notice was sent" }
            : d.length === 0
              ? { name: "replaced in time", ok: false, message: "no burst pod ran on the interrupted node(s): nothing was displaced, so nothing is proved" }
              : notReplaced.length === 0
                ? { name: "replaced in time", ok: true, message: `${d.length} of ${d.length} displaced burst pods Running elsewhere before their instance was gone, the last at ${at(Math.max(...last))}` }
                : { name: "replaced in time", ok: false, message: `${notReplaced.length} of ${d.length} not Running elsewhere before their instance was gone: ${notReplaced.map((x) => `${x.pod.key} (${x.replacement ? `replacement Running at ${at(x.replacement.running)}, instance gone at ${at(x.gone)}` : "no replacement Running"})`).join(", ")}` },
    );
    const cut = d.filter((x) => x.cutShort);
    out.push(cut.length === 0 ? { name: "grace periods", ok: true, message: `no displaced pod killed before its grace period ended` } : { name: "grace periods", ok: false, message: cut.map((x) => `${x.pod.key} ${x.cutShort}`).join("; ") });
    const others = affectedNonBurst(run);
    out.push(others.length === 0 ? { name: "non-burst pods", ok: true, message: "none ran on the interrupted node(s) but DaemonSet pods" } : { name: "non-burst pods", ok: false, message: `${plural(others.length, "pod")} that may not run on ephemeral nodes lost their node: ${others.map((p) => p.key).join(", ")}` });
    if (run.workload === "synthetic") {
        const m = messageCounts(run);
        const syntheticDisplaced = d.filter((x) => x.pod.synthetic).length;
        const unsent = run.messagesPlanned - m.sent;
        const ok = m.lost.length === 0 && unsent === 0 && syntheticDisplaced > 0;
        const why = [
            ...(m.lost.length ? [`lost: ${m.lost.join(", ")}`] : []),
            ...(unsent > 0 ? [`${unsent} never sent`] : []),
            ...(syntheticDisplaced === 0 ? ["no synthetic worker was on the interrupted node, so the messages prove nothing about it"] : []),
        ];
        out.push({
            name: "messages",
            ok,
            message: `${m.sent} sent, ${m.completed} completed, ${m.lost.length} lost, ${m.twice.length} processed twice${m.twice.length ? ` (${m.twice.join(", ")}: redelivered after the visibility timeout)` : ""}; ${syntheticDisplaced} synthetic worker(s) displaced${why.length ? `; ${why.join("; ")}` : ""}`,
        });
    }
    const metric = rec.metric;
    out.push(
        !metric
            ? { name: "interruption metric", ok: undefined, message: "not read (the run stopped first)" }
            : metric.samples === 0
              ? { name: "interruption metric", ok: undefined, message: `not checked: no ${KARPENTER_METRICS.nodePoolLimit} sample reached CloudWatch either, so Karpenter's metrics are not scraped here (the alarm ${run.alarmName} is blind)` }
              : metric.interruptions >= Math.max(1, e.instances.length)
                ? { name: "interruption metric", ok: true, message: `${KARPENTER_METRICS.nodeClaimsDisrupted}{reason="${SPOT_INTERRUPTED_REASON}"} rose by ${metric.interruptions} (alarm ${run.alarmName})` }
                : { name: "interruption metric", ok: false, message: `${KARPENTER_METRICS.nodeClaimsDisrupted}{reason="${SPOT_INTERRUPTED_REASON}"} rose by ${metric.interruptions}, not ${Math.max(1, e.instances.length)}: the alarm ${run.alarmName} did not see the interruption` },
    );
    return out;
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
    add(e.notice, "interruption notice", e.instances.join(" "), "FIS action started");
    add(e.actionEnded, "instance interrupted", e.instances.join(" "), `FIS action ${e.actionStatus ?? "ended"}`);
    add(e.ended, `experiment ${e.status}`, e.id ?? "", e.reason ?? "");
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
    return ev.sort((a, b) => a.at - b.at || a.event.localeCompare(b.event));
}

export function summary(run: DrillRun, cleanup: string[]): string[] {
    const e = run.record.experiment;
    const t0 = e.notice ?? e.started ?? run.end;
    const s = (t: number) => String(secondsFrom(t0, t)).padStart(7);
    const cs = checks(run);
    const failed = cs.filter((c) => c.ok === false);
    const d = displaced(run);
    const lines = [
        `Spot interruption drill of stack ${run.stack} on ${run.cluster}: ${e.id ? `experiment ${e.id}` : "no experiment"} of template ${e.templateId} (COUNT(${e.count}), ${e.durationBeforeInterruption}), ${run.workload} workload`,
        `Timeline (seconds from the interruption notice${e.notice ? `, ${new Date(e.notice).toISOString()}` : ""}):`,
        ...timeline(run).map((x) => `${s(x.at)}  ${x.event}: ${x.object}${x.detail ? ` (${x.detail})` : ""}`),
        `Displaced burst pods: ${d.length}${d.length ? ` (${d.filter((x) => x.pod.synthetic).length} synthetic)` : ""}`,
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
        ["pod", "node", "synthetic", "evicted_s", "grace_s", "exit_codes", "exited_s", "cut_short", "replacement", "replacement_node", "replacement_running_s", "instance_gone_s"],
        displaced(run).map((x) => [
            x.pod.key,
            x.node.name,
            String(x.pod.synthetic),
            s(x.pod.evicted),
            x.pod.grace,
            x.pod.exits.map((c) => c.exitCode).join(" "),
            s(x.pod.exits.length ? Math.max(...x.pod.exits.map((c) => c.finished ?? 0)) : undefined),
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
    if (target.resourceTags?.[NODEPOOL_TAG] !== cfg.nodePool.name) problems.push(`its target selects ${JSON.stringify(target.resourceTags ?? {})}, not ${NODEPOOL_TAG}=${cfg.nodePool.name}`);
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
/** A call that could not be made before anything started: exit 3. */
class CannotRun extends Error {}

/** One AWS call; 401/403 and no answer at all become CannotRun (exit 3) before the start, errors after it. */
async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
        return await fn();
    } catch (e) {
        const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } };
        const status = err.$metadata?.httpStatusCode;
        if (status === 401 || status === 403) throw new CannotRun(`${what}: HTTP ${status} ${err.name}: ${err.message} (docs/drill.md lists the permissions)`);
        if (!status) throw new CannotRun(`${what}: ${err.name ?? "error"}: ${err.message ?? e}${err.cause?.code ? ` (${err.cause.code})` : ""}`);
        throw new Error(`${what}: HTTP ${status} ${err.name}: ${err.message}`);
    }
}

const refused = (why: string): CommandResult => ({ exitCode: EXIT.findings, output: `Refused: ${why}` });
const cannotRun = (why: string): CommandResult => ({ exitCode: EXIT.cannotCheck, output: `Could not run: ${why}` });

export async function drill(argv: string[], deps: DrillDeps = {}): Promise<CommandResult> {
    const line = parseCommandLine(argv, DRILL);
    if (isResult(line)) return line;
    const context = valueOf(line, "context");
    if (!context) return usage("--context is required: the kubeconfig context of the stack's cluster", DRILL);
    const cfg = loadStack(valueOf(line, "stack"), DRILL, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return cfg;
    if (cfg.stack === "production" && line.flags.production !== true) return usage("the production stack is drilled only with --production: it interrupts a node that serves GC Notify's traffic", DRILL);
    const d = cfg.drill;
    if (!d.enabled) return refused(`notify-karpenter:drill.enabled is false for stack ${cfg.stack}: the stack has no FIS template to start`);
    const nodesFlag = valueOf(line, "nodes");
    const nodes = nodesFlag === undefined ? d.nodes : integerFlag("nodes", nodesFlag, 1, 10);
    if (typeof nodes === "string") return usage(nodes, DRILL);
    if (nodes > d.nodes) return refused(`--nodes ${nodes} is more than the config allows (notify-karpenter:drill.nodes ${d.nodes})`);
    const workload = (valueOf(line, "workload") ?? d.workload) as "synthetic" | "live";
    if (workload !== "synthetic" && workload !== "live") return usage(`--workload must be synthetic or live (got "${workload}")`, DRILL);
    if (workload === "synthetic" && !d.synthetic) return refused("notify-karpenter:drill.synthetic is not set: the synthetic workers need its image");
    if (workload === "synthetic" && cfg.controller.identity !== "pod-identity") return refused("the synthetic workers get their queue credentials from the EKS Pod Identity agent, and controller.identity is irsa (no agent assumed): use --workload live");
    if (workload === "live" && d.live.queues.length === 0) return refused("notify-karpenter:drill.live.queues is empty: the live workload reads GC Notify's queue depths");
    let kc: KubeConfig;
    try {
        kc = (deps.kubeConfig ?? loadKubeConfig)();
    } catch (e) {
        return cannotRun(`could not load the kubeconfig: ${(e as Error)?.message ?? e}`);
    }
    const wrongCluster = useContext(kc, context, cfg.cluster.name);
    if (wrongCluster) return usage(wrongCluster, DRILL);
    const clock = deps.clock ?? systemClock;
    const progress = deps.progress ?? ((l: string) => process.stderr.write(`${l}\n`));
    const stamp = new Date(clock.now()).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
    const out = valueOf(line, "out") ?? path.join("drill-out", `${cfg.stack}-${stamp}`);
    const badOut = outDirProblem(out);
    if (badOut) return usage(badOut, DRILL);

    const c = { region: cfg.cluster.region, ...(deps.aws ?? {}) };
    const clients = { fis: new FisClient(c), sqs: new SQSClient(c), cw: new CloudWatchClient(c) };
    try {
        return await prepareAndRun(cfg, { context, nodes, workload, out, stamp }, kc, clients, clock, progress, deps);
    } catch (e) {
        if (e instanceof CannotRun) return cannotRun(e.message);
        throw e;
    } finally {
        clients.fis.destroy();
        clients.sqs.destroy();
        clients.cw.destroy();
    }
}

type Clients = { fis: FisClient; sqs: SQSClient; cw: CloudWatchClient };
interface Options {
    context: string;
    nodes: number;
    workload: "synthetic" | "live";
    out: string;
    stamp: string;
}

/** The checks before the start (refusals), then the run; what was seen is written however it ends. */
async function prepareAndRun(cfg: StackConfig, o: Options, kc: KubeConfig, clients: Clients, clock: Clock, progress: (l: string) => void, deps: DrillDeps): Promise<CommandResult> {
    const names = drillNames(cfg.controller.namePrefix ?? cfg.cluster.name);
    // The template: the stack's (its Name and stack tags), read back as FIS holds it.
    const summaries: any[] = [];
    let token: string | undefined;
    do {
        const page = await call("fis:ListExperimentTemplates", () => clients.fis.send(new ListExperimentTemplatesCommand({ nextToken: token })));
        summaries.push(...(page.experimentTemplates ?? []));
        token = page.nextToken;
    } while (token);
    const found = summaries.filter((t) => t.tags?.Name === names.template && t.tags?.[STACK_TAG] === cfg.stack);
    if (found.length !== 1) return refused(`${found.length === 0 ? "no" : found.length} FIS experiment template tagged Name=${names.template} and ${STACK_TAG}=${cfg.stack} in ${cfg.cluster.region}: run pulumi up with drill.enabled first`);
    const t = (await call(`fis:GetExperimentTemplate ${found[0].id}`, () => clients.fis.send(new GetExperimentTemplateCommand({ id: found[0].id })))).experimentTemplate;
    const template = readTemplate(t, cfg, o.nodes);
    if (template.problems.length) return refused(`template ${template.id} ${template.problems.join("; ")}; pulumi up puts it back as the config says`);
    const alarms = (await call("cloudwatch:DescribeAlarms", () => clients.cw.send(new DescribeAlarmsCommand({ AlarmNames: template.stopAlarmNames })))).MetricAlarms ?? [];
    const missing = template.stopAlarmNames.filter((n) => !alarms.some((a) => a.AlarmName === n));
    if (missing.length) return refused(`the template's stop-condition alarm(s) ${missing.join(", ")} do not exist: FIS would refuse to start`);
    const alarming = alarms.filter((a) => a.StateValue === "ALARM");
    if (alarming.length) return refused(`stop-condition alarm ${alarming.map((a) => `${a.AlarmName} is in ALARM (${a.StateReason ?? "no reason"})`).join("; ")}: burst capacity is already short; drill when it is OK`);

    const cluster = clusterOf(kc);
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
        record,
        alarmName: alarmNames(cfg.cluster.name, [], []).spotInterruptions,
        messagesPlanned: o.workload === "synthetic" ? cfg.drill.synthetic!.messages : 0,
        end: clock.now(),
    };
    const cleanup = await execute(cfg, o, run, { cluster, kc, clients, clock, progress, deps, names, runningNodes: running.length });
    const report = summary(run, cleanup);
    const files: Record<string, string> = { "timeline.csv": timelineCsv(run), "pods.csv": podsCsv(run), ...(o.workload === "synthetic" ? { "messages.csv": messagesCsv(run) } : {}), "chart.svg": chart(run), "summary.txt": report.join("\n") + "\n" };
    const unwritable = writeFiles(o.out, files);
    if (unwritable) return { exitCode: EXIT.cannotCheck, output: [...report, unwritable].join("\n") };
    report.push(`Wrote ${Object.keys(files).map((f) => path.join(o.out, f)).join(", ")}`);
    const ok = !run.stopped && checks(run).every((x) => x.ok !== false) && !cleanup.some((l) => l.startsWith("Cleanup FAILED"));
    return { exitCode: ok ? EXIT.ok : EXIT.findings, output: report.join("\n") };
}

interface Env {
    cluster: Cluster;
    kc: KubeConfig;
    clients: Clients;
    clock: Clock;
    progress: (l: string) => void;
    deps: DrillDeps;
    names: ReturnType<typeof drillNames>;
    runningNodes: number;
}

/** The synthetic workers: the burst pod template the stack's real workers get, running ops/drillWorker.sh. */
export function workerDeployment(cfg: StackConfig, queues: { work: string; done: string }, replicas: number) {
    const s = cfg.drill.synthetic!;
    const template = burstPodTemplate(placementArgs(cfg), { name: WORKER, terminationGracePeriodSeconds: burstGraceSeconds(s.workSeconds + DRILL_RECEIVE_WAIT_SECONDS, 1) });
    const labels = { ...template.metadata.labels, app: WORKER };
    return {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: WORKER, namespace: DRILL_NAMESPACE, labels: { app: WORKER } },
        spec: {
            replicas,
            selector: { matchLabels: { app: WORKER } },
            template: {
                metadata: { labels },
                spec: {
                    ...template.spec,
                    serviceAccountName: DRILL_SERVICE_ACCOUNT,
                    // One worker on every ephemeral node when there are enough, so the interrupted node holds one.
                    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "ScheduleAnyway", labelSelector: { matchLabels: { app: WORKER } } }],
                    securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } },
                    containers: [
                        {
                            name: "worker",
                            image: s.image,
                            command: ["/bin/bash", "-c", WORKER_SCRIPT],
                            env: [
                                { name: "WORK_QUEUE_URL", value: queues.work },
                                { name: "DONE_QUEUE_URL", value: queues.done },
                                { name: "WORK_SECONDS", value: String(s.workSeconds) },
                                { name: "VISIBILITY_TIMEOUT", value: String(cfg.placement.burst.queueVisibilityTimeoutSeconds) },
                                { name: "AWS_REGION", value: cfg.cluster.region },
                                { name: "HOME", value: "/tmp" },
                            ],
                            resources: { requests: { cpu: "50m", memory: "96Mi" }, limits: { memory: "192Mi" } },
                            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                            volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
                        },
                    ],
                    volumes: [{ name: "tmp", emptyDir: {} }],
                },
            },
        },
    };
}

/** Starts, follows and always cleans up; fills `run` and returns the cleanup lines. */
async function execute(cfg: StackConfig, o: Options, run: DrillRun, env: Env): Promise<string[]> {
    const { cluster, clients, clock, progress } = env;
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


    let lastProgress = -Infinity;
    let lastPoll = -Infinity;
    const poll = async () => {
        run.end = clock.now();
        if (e.id && clock.now() - lastPoll >= EXPERIMENT_POLL_MS) {
            lastPoll = clock.now();
            readExperiment(e, (await clients.fis.send(new GetExperimentCommand({ id: e.id }))).experiment);
            if (e.notice !== undefined && e.instances.length === 0) {
                const resolved = (await clients.fis.send(new ListExperimentResolvedTargetsCommand({ experimentId: e.id }))).resolvedTargets ?? [];
                e.instances = [...new Set(resolved.flatMap((r) => Object.values(r.targetInformation ?? {}).map(instanceOf).filter((i): i is string => !!i)))];
            }
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
    let sent = 0;
    let workEmptySince: number | undefined;
    const send = async (n: number) => {
        for (let i = 0; i < n && sent < run.messagesPlanned; i++) {
            const number = ++sent;
            await clients.sqs.send(new SendMessageCommand({ QueueUrl: queues.work!, MessageBody: String(number) }));
            rec.messages.set(number, { n: number, sent: clock.now(), completions: [] });
        }
    };
    const collect = async () => {
        if (!queues.done) return;
        for (let page = 0; page < 10; page++) {
            const got = (await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.done, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }))).Messages ?? [];
            for (const m of got) {
                rec.completion(m.Body ?? "");
                await clients.sqs.send(new DeleteMessageCommand({ QueueUrl: queues.done, ReceiptHandle: m.ReceiptHandle! }));
            }
            if (got.length < 10) return;
        }
    };
    let lastDepth = -Infinity;
    const depths = async () => {
        if (synthetic || clock.now() - lastDepth < 30_000) return;
        lastDepth = clock.now();
        for (const q of cfg.drill.live.queues) {
            const url = (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: q }))).QueueUrl!;
            const a = (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }))).Attributes ?? {};
            rec.depths.push({ at: clock.now(), queue: q, visible: Number(a.ApproximateNumberOfMessages ?? 0), inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) });
        }
    };

    const cleanup: string[] = [];
    try {
        // Everything that runs on the pool's nodes, and the pool's nodes and NodeClaims.
        await watches.watch("pods", "/api/v1/pods", {}, (t, obj) => rec.pod(t, obj));
        await watches.watch("nodes", "/api/v1/nodes", { labelSelector: `${NODEPOOL_TAG}=${cfg.nodePool.name}` }, (t, obj) => rec.node(t, obj));
        await watches.watch("NodeClaims", "/apis/karpenter.sh/v1/nodeclaims", { labelSelector: `${NODEPOOL_TAG}=${cfg.nodePool.name}` }, (t, obj) => rec.claim(t, obj));

        if (synthetic) {
            const visibility = String(cfg.placement.burst.queueVisibilityTimeoutSeconds);
            for (const kind of ["work", "done"] as const) {
                const name = `${env.names.queuePrefix}${o.stamp.toLowerCase()}-${kind}`;
                queues[kind] = (await clients.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: visibility, SqsManagedSseEnabled: "true", MessageRetentionPeriod: "3600" }, tags: { [STACK_TAG]: cfg.stack } }))).QueueUrl;
            }
            progress(`creating namespace ${DRILL_NAMESPACE}: ${Math.max(s!.pods, env.runningNodes)} synthetic workers (${s!.image}), queues ${queues.work!.split("/").pop()} and ${queues.done!.split("/").pop()}`);
            await cluster.createNamespace(DRILL_NAMESPACE, { "app.kubernetes.io/managed-by": "notify-karpenter-drill" });
            namespaceCreated = true;
            await env.kc.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccount({ namespace: DRILL_NAMESPACE, body: { metadata: { name: DRILL_SERVICE_ACCOUNT, namespace: DRILL_NAMESPACE } } });
            await cluster.createDeployment(DRILL_NAMESPACE, workerDeployment(cfg, { work: queues.work!, done: queues.done! }, Math.max(s!.pods, env.runningNodes)));
            // Every running node of the pool holds a worker before the start, so the interrupted one does.
            const uncovered = () => {
                const live = [...rec.nodes.values()].filter((n) => n.gone === undefined && n.removing === undefined);
                const held = new Set([...rec.pods.values()].filter((p) => p.synthetic && p.running !== undefined && p.gone === undefined).map((p) => p.node));
                return live.filter((n) => !held.has(n.name)).map((n) => n.name);
            };
            await until("workers", () => uncovered().length === 0, COVER_TIMEOUT_SECONDS, () => `nodes without a running worker: ${uncovered().join(", ")}`);
            await send(Math.ceil(run.messagesPlanned / 2));
        }

        const started = (await clients.fis.send(new StartExperimentCommand({ clientToken: `drill-${cfg.stack}-${o.stamp}`, experimentTemplateId: e.templateId, tags: { [STACK_TAG]: cfg.stack } }))).experiment;
        e.id = started?.id;
        readExperiment(e, started);
        progress(`started experiment ${e.id} of template ${e.templateId}: COUNT(${e.count}), notice ${e.durationBeforeInterruption} before the interruption`);
        const durationSeconds = isoDurationSeconds(e.durationBeforeInterruption) ?? 120;
        const terminal = () => ["completed", "stopped", "failed", "cancelled"].includes(e.status ?? "");
        const settled = () => {
            if (!terminal()) return false;
            if (e.status !== "completed") return true;
            if (rec.interruptedNodes().some((n) => n.gone === undefined)) return false;
            if (displaced(run).some((x) => !x.replacement)) return false;
            if (!synthetic) return true;
            if (sent < run.messagesPlanned) return false;
            if (messageCounts(run).lost.length === 0) return true;
            // Not all completed: lost once the work queue has held nothing, visible or in flight, for a while (a
            // message a killed worker held comes back after the visibility timeout and is in flight till then).
            return workEmptySince !== undefined && clock.now() - workEmptySince >= WORK_EMPTY_SECONDS * 1000;
        };
        await until(
            "interruption",
            settled,
            durationSeconds + SETTLE_MARGIN_SECONDS,
            () => {
                const d = displaced(run);
                const m = messageCounts(run);
                return `experiment ${e.status}; ${d.length} displaced, ${d.filter((x) => x.replacement).length} replaced; interrupted nodes gone ${rec.interruptedNodes().filter((n) => n.gone !== undefined).length}/${rec.interruptedNodes().length}${synthetic ? `; messages ${m.completed}/${sent} completed` : ""}`;
            },
            async () => {
                await collect();
                await depths();
                // The rest of the messages during the interruption: one a second from the notice on.
                if (synthetic && e.notice !== undefined) await send(1);
                if (synthetic && sent >= run.messagesPlanned) {
                    const a = (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queues.work!, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }))).Attributes ?? {};
                    const held = Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
                    workEmptySince = held > 0 ? undefined : (workEmptySince ?? clock.now());
                }
            },
        );
        if (e.status !== "completed") throw new Stop(`experiment ${e.id} ${e.status}${e.reason ? `: ${e.reason}` : ""}`);
        await readMetric(cfg, run, env);
    } catch (err) {
        run.stopped = err instanceof Stop ? err.message : (err as Error).message;
    } finally {
        watches.stopAll();
        for (const sig of ["SIGINT", "SIGTERM"] as const) signals.off(sig, handlers[sig]);
        run.end = clock.now();
        if (e.id && !["completed", "stopped", "failed", "cancelled"].includes(e.status ?? "")) {
            try {
                readExperiment(e, (await clients.fis.send(new StopExperimentCommand({ id: e.id }))).experiment);
                cleanup.push(`Cleanup: stopped experiment ${e.id} (a notice already sent is not taken back)`);
            } catch (x) {
                cleanup.push(`Cleanup FAILED: could not stop experiment ${e.id} (${(x as Error).message}); stop it with: aws fis stop-experiment --id ${e.id}`);
            }
        }
        if (namespaceCreated) cleanup.push(await deleteNamespace(cluster, clock));
        for (const url of [queues.work, queues.done].filter((u): u is string => !!u)) {
            try {
                await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
                cleanup.push(`Cleanup: deleted queue ${url.split("/").pop()}`);
            } catch (x) {
                cleanup.push(`Cleanup FAILED: could not delete queue ${url} (${(x as Error).message}); delete it with: aws sqs delete-queue --queue-url ${url}`);
            }
        }
    }
    return cleanup;
}

/** The experiment's state and its one action's times, from GetExperiment (or Start/StopExperiment). */
function readExperiment(e: ExperimentRecord, x: any): void {
    if (!x) return;
    e.status = x.state?.status ?? e.status;
    e.reason = x.state?.reason ?? e.reason;
    e.started ??= x.startTime?.getTime?.() ?? x.creationTime?.getTime?.();
    e.ended ??= x.endTime?.getTime?.();
    const a = Object.values(x.actions ?? {})[0] as any;
    if (a) {
        e.notice ??= a.startTime?.getTime?.();
        e.actionEnded ??= a.endTime?.getTime?.();
        e.actionStatus = a.state?.status ?? e.actionStatus;
    }
}

/** Waits for Karpenter's spot interruption count to reach CloudWatch (or for the sign that nothing scrapes it). */
async function readMetric(cfg: StackConfig, run: DrillRun, env: Env): Promise<void> {
    const { clients, clock } = env;
    const e = run.record.experiment;
    const from = new Date((e.notice ?? e.started ?? clock.now()) - 5 * 60_000);
    const deadline = clock.now() + METRIC_WAIT_SECONDS * 1000;
    const hb = heartbeatMetric(cfg.cluster.name, cfg.nodePool.name);
    const dims = (x: Record<string, string>) => Object.entries(x).map(([Name, Value]) => ({ Name, Value }));
    for (;;) {
        const r = await clients.cw.send(
            new GetMetricDataCommand({
                StartTime: from,
                EndTime: new Date(clock.now() + 60_000),
                MetricDataQueries: [
                    { Id: "interruptions", MetricStat: { Metric: { Namespace: PROMETHEUS_NAMESPACE, MetricName: KARPENTER_METRICS.nodeClaimsDisrupted, Dimensions: dims({ ClusterName: cfg.cluster.name, nodepool: cfg.nodePool.name, reason: SPOT_INTERRUPTED_REASON }) }, Period: 60, Stat: "Sum" } },
                    { Id: "samples", MetricStat: { Metric: { Namespace: hb.namespace, MetricName: hb.metricName, Dimensions: dims(hb.dimensions as Record<string, string>) }, Period: 60, Stat: "SampleCount" } },
                ],
            }),
        );
        const sum = (id: string) => (r.MetricDataResults ?? []).filter((x) => x.Id === id).flatMap((x) => x.Values ?? []).reduce((a, b) => a + b, 0);
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

if (import.meta.main) runMain(() => drill(process.argv.slice(2)));
