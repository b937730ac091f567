// The scale test, once ops/scaleTest.ts has read its flags: measures the node
// scaling curve on a real cluster. A Deployment of pause pods placed exactly like one burst Celery Deployment goes
// from 0 to N replicas and back to 0, while pods, ephemeral nodes and NodeClaims are watched; the run writes per-pod
// times, the counts over time, a chart and a summary, and deletes its namespace however it ends.
//
// The scale-down is complete when every test pod is gone and every ephemeral node the test used or caused (it ran a
// test pod, or appeared after the scale-up) is either gone or holds a burst-labelled pod from outside the test. The
// test pods preempt headroom pods, which start again elsewhere, often on a node launched for them; such a node is not
// empty, so it stays until consolidation may take it (never with WhenEmpty; with WhenEmptyOrUnderutilized, once the
// budgets allow Underutilized outside sending hours). What is measured is that Karpenter removes the nodes
// the test left empty; the nodes that stay are listed with the pods that keep them.
import * as path from "path";
import { burstGraceSeconds, burstPodTemplate, headroomDeployment } from "../components/models/celeryPlacement.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { type StackConfig, durationSeconds } from "../stacks/config.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { type CommandResult, EXIT, integerFlag, isResult, usage, valueOf } from "../cli/args.ts";
import { loadStack } from "../stacks/validatedConfig.ts";
import { jsonText } from "../cli/output.ts";
import { toCsv } from "../cli/csv.ts";
import { type Cluster, type KubeConfig, type KubeObject, type WatchEventType, WatchSet, clusterOf, epochMs, useContext } from "./kube.ts";
import { checkedKubeConfig } from "./kubeconfigFile.ts";
import { deadlinesOf } from "./deadlines.ts";
import { lineChart, steps } from "../cli/svg.ts";
import { apiError } from "./kube.ts";
import { plural } from "../cli/table.ts";
import { outFilesProblem, writeFiles } from "../cli/outDir.ts";
import type { CommandLine } from "../cli/args.ts";
import { type Clock, SCALE_TEST, type ScaleTestDeps, type Signal, systemClock } from "./scaleTest.ts";

const DEPLOYMENT = "celery-scale-test";
/** Generous for a burst: GC Notify has seen 5+ minutes for a cold spot node. */
const UP_TIMEOUT_SECONDS = 20 * 60;
/** Beyond consolidateAfter, for Karpenter to drain and terminate the empty nodes. */
const DOWN_MARGIN_SECONDS = 15 * 60;
const NAMESPACE_GONE_SECONDS = 120;
const PROGRESS_EVERY_MS = 5000;
const TICK_MS = 1000;

/** The test Deployment: the burst pod template the stack's real workers get, with a pause container of one Celery pod's requests. */
export function testDeployment(cfg: StackConfig, namespace: string) {
    const args = placementArgs(cfg);
    const b = cfg.placement.burst;
    const template = burstPodTemplate(args, { name: DEPLOYMENT, terminationGracePeriodSeconds: burstGraceSeconds(b.longestTaskSeconds, b.prefetchMultiplier) });
    // The headroom pods are pause containers of exactly this size, hardened; reuse theirs.
    const { containers, securityContext, automountServiceAccountToken } = headroomDeployment(args).spec.template.spec;
    const labels = { ...template.metadata.labels, app: DEPLOYMENT };
    return {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: DEPLOYMENT, namespace, labels: { app: DEPLOYMENT } },
        spec: {
            replicas: 0,
            selector: { matchLabels: { app: DEPLOYMENT } },
            template: { metadata: { labels }, spec: { ...template.spec, automountServiceAccountToken, securityContext, containers } },
        },
    };
}

// ---- What the watches saw. Times are epoch milliseconds, from the objects where the API records them.

export interface PodRecord {
    name: string;
    node?: string;
    created?: number;
    scheduled?: number;
    running?: number;
    /** Deletion requested, or the pod gone. */
    stopped?: number;
}

export interface NodeRecord {
    name: string;
    type?: string;
    added: number;
    /** Karpenter began removing it (deletionTimestamp). */
    removing?: number;
    gone?: number;
}

/** A burst-labelled pod outside the test: a headroom pod or a real burst worker; while it runs, its node is not empty. */
export interface OtherPodRecord {
    /** namespace/name */
    name: string;
    node?: string;
    created?: number;
    stopped?: number;
    headroom: boolean;
}

export interface ClaimRecord {
    name: string;
    created: number;
    ready?: number;
    gone?: number;
}

export class Recorder {
    readonly pods = new Map<string, PodRecord>();
    readonly nodes = new Map<string, NodeRecord>();
    readonly claims = new Map<string, ClaimRecord>();
    /** Burst-labelled pods in other namespaces, by namespace/name. */
    readonly others = new Map<string, OtherPodRecord>();

    /** `headroomPriorityClass` tells headroom pods from real burst workers. */
    private readonly now: () => number;
    private readonly headroomPriorityClass?: string;

    constructor(now: () => number, headroomPriorityClass?: string) {
        this.now = now;
        this.headroomPriorityClass = headroomPriorityClass;
    }

    pod(type: WatchEventType, o: KubeObject): void {
        const r = this.pods.get(o.metadata.name) ?? { name: o.metadata.name };
        const s = o.status ?? {};
        r.node ??= o.spec?.nodeName;
        r.created ??= epochMs(o.metadata.creationTimestamp);
        const scheduled = (s.conditions ?? []).find((c: any) => c.type === "PodScheduled" && c.status === "True");
        if (scheduled) r.scheduled ??= epochMs(scheduled.lastTransitionTime) ?? this.now();
        if (s.phase === "Running") {
            const started = (s.containerStatuses ?? []).map((c: any) => epochMs(c.state?.running?.startedAt)).filter((t: number | undefined) => t !== undefined);
            r.running ??= started.length ? Math.min(...started) : this.now();
        }
        r.stopped ??= epochMs(o.metadata.deletionTimestamp) ?? (type === "DELETED" ? this.now() : undefined);
        this.pods.set(r.name, r);
    }

    otherPod(type: WatchEventType, o: KubeObject): void {
        const name = `${o.metadata.namespace}/${o.metadata.name}`;
        const r = this.others.get(name) ?? { name, headroom: this.headroomPriorityClass !== undefined && o.spec?.priorityClassName === this.headroomPriorityClass };
        r.node ??= o.spec?.nodeName;
        r.created ??= epochMs(o.metadata.creationTimestamp);
        // A finished pod (an evicted one stays, Failed) no longer keeps its node from being empty.
        const finished = o.status?.phase === "Succeeded" || o.status?.phase === "Failed";
        r.stopped ??= epochMs(o.metadata.deletionTimestamp) ?? (type === "DELETED" || finished ? this.now() : undefined);
        this.others.set(name, r);
    }

    node(type: WatchEventType, o: KubeObject): void {
        const r = this.nodes.get(o.metadata.name) ?? { name: o.metadata.name, added: epochMs(o.metadata.creationTimestamp) ?? this.now() };
        r.type ??= o.metadata.labels?.["node.kubernetes.io/instance-type"];
        r.removing ??= epochMs(o.metadata.deletionTimestamp);
        if (type === "DELETED") r.gone ??= this.now();
        this.nodes.set(r.name, r);
    }

    claim(type: WatchEventType, o: KubeObject): void {
        const r = this.claims.get(o.metadata.name) ?? { name: o.metadata.name, created: epochMs(o.metadata.creationTimestamp) ?? this.now() };
        const ready = (o.status?.conditions ?? []).find((c: any) => c.type === "Ready" && c.status === "True");
        if (ready) r.ready ??= epochMs(ready.lastTransitionTime) ?? this.now();
        if (type === "DELETED") r.gone ??= this.now();
        this.claims.set(r.name, r);
    }

    running(): number {
        return [...this.pods.values()].filter((p) => p.running !== undefined && p.stopped === undefined).length;
    }

    /** Ephemeral nodes that exist now. */
    liveNodes(): NodeRecord[] {
        return [...this.nodes.values()].filter((n) => n.gone === undefined);
    }

    /** Nodes that appeared after `since`: the ones this test made Karpenter launch. */
    launchedSince(since: number): NodeRecord[] {
        return [...this.nodes.values()].filter((n) => n.added >= since);
    }
}

// ---- Reading a run: counts over time, percentiles, the summary.

export interface Run {
    stack: string;
    cluster: string;
    namespace: string;
    pods: number;
    /** The scale-up and scale-down requests (epoch ms); down is absent when the run stopped before it. */
    up: number;
    down?: number;
    /** The end of the record. */
    end: number;
    /** Empty nodes are consolidated after this long (seconds); undefined for Never. */
    consolidateAfterSeconds?: number;
    consolidationPolicy?: string;
    nodeLaunchSeconds?: number;
    record: Recorder;
}

export interface TimelinePoint {
    /** Seconds since the scale-up. */
    t: number;
    running: number;
    scheduled: number;
    nodes: number;
    claims: number;
}

/** The counts at every moment one of them changed (anything before the scale-up counts at t=0). */
export function timeline(run: Run): TimelinePoint[] {
    const { pods, nodes, claims } = run.record;
    const alive = (from: number | undefined, to: number | undefined, t: number) => from !== undefined && from <= t && (to === undefined || to > t);
    const times = new Set<number>([run.up, run.end, ...(run.down === undefined ? [] : [run.down])]);
    for (const p of pods.values()) [p.scheduled, p.running, p.stopped].forEach((t) => t !== undefined && times.add(t));
    for (const n of nodes.values()) [n.added, n.gone].forEach((t) => t !== undefined && times.add(t));
    for (const c of claims.values()) [c.created, c.gone].forEach((t) => t !== undefined && times.add(t));
    return [...times]
        .filter((t) => t >= run.up && t <= run.end)
        .sort((a, b) => a - b)
        .map((t) => ({
            t: seconds(t - run.up),
            running: [...pods.values()].filter((p) => alive(p.running, p.stopped, t)).length,
            scheduled: [...pods.values()].filter((p) => alive(p.scheduled, p.stopped, t)).length,
            nodes: [...nodes.values()].filter((n) => alive(n.added, n.gone, t)).length,
            claims: [...claims.values()].filter((c) => alive(c.created, c.gone, t)).length,
        }));
}

export interface ScaleDownState {
    /** Ephemeral nodes the test used or caused: they ran a test pod, or appeared after the scale-up. */
    scope: NodeRecord[];
    gone: NodeRecord[];
    /** Still up, holding burst pods from outside the test (headroom, real workers): not empty, so only Underutilized consolidation may take them. */
    kept: { node: NodeRecord; pods: OtherPodRecord[] }[];
    /** Still up with no burst pod at all, since `since`: Karpenter should remove them after consolidateAfter. */
    empty: { node: NodeRecord; since: number }[];
    testPodsLeft: number;
    /** Every test pod gone and no empty node left (with consolidateAfter Never: every test pod gone). */
    complete: boolean;
}

/** Where the scale-down stands, by the rule at the top of this file. */
export function scaleDownState(run: Run): ScaleDownState {
    const rec = run.record;
    const testPods = [...rec.pods.values()];
    const others = [...rec.others.values()];
    const used = new Set(testPods.map((p) => p.node));
    const scope = [...rec.nodes.values()].filter((n) => n.added >= run.up || used.has(n.name));
    const up = scope.filter((n) => n.gone === undefined);
    const holders = (n: NodeRecord) => others.filter((p) => p.node === n.name && p.stopped === undefined);
    const busy = (n: NodeRecord) => testPods.some((p) => p.node === n.name && p.stopped === undefined);
    const lastStop = (n: NodeRecord) => Math.max(n.added, ...[...testPods, ...others].filter((p) => p.node === n.name && p.stopped !== undefined).map((p) => p.stopped!));
    const testPodsLeft = testPods.filter((p) => p.stopped === undefined).length;
    const empty = up.filter((n) => holders(n).length === 0 && !busy(n)).map((node) => ({ node, since: lastStop(node) }));
    return {
        scope,
        gone: scope.filter((n) => n.gone !== undefined),
        kept: up.map((node) => ({ node, pods: holders(node) })).filter((k) => k.pods.length > 0),
        empty,
        testPodsLeft,
        complete: testPodsLeft === 0 && (run.consolidateAfterSeconds === undefined || empty.length === 0),
    };
}

/** The nearest-rank percentile of `values` (p from 0 to 100). */
export function percentile(values: number[], p: number): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** The run as data (--json; docs/json-output.md, scale-test): seconds since the scale-up unless named otherwise. */
export function summaryJson(run: Run, outcome: { ok: boolean; message: string }) {
    const pods = [...run.record.pods.values()];
    const since = (t: number | undefined) => (t === undefined ? undefined : seconds(t - run.up));
    const spread = (values: number[]) => (values.length ? { p50: percentile(values, 50), p95: percentile(values, 95), max: Math.max(...values), pods: values.length } : null);
    const scheduled = pods.map((p) => since(p.scheduled)).filter((t): t is number => t !== undefined);
    const running = pods.map((p) => since(p.running)).filter((t): t is number => t !== undefined);
    const before = [...run.record.nodes.values()].filter((n) => n.added < run.up).length;
    const launched = run.record.launchedSince(run.up);
    const claimTimes = [...run.record.claims.values()].filter((c) => c.created >= run.up && c.ready !== undefined).map((c) => seconds(c.ready! - c.created));
    const node = (n: NodeRecord) => ({ name: n.name, instanceType: n.type ?? null, launchedAt: n.added < run.up ? null : since(n.added) });
    const down = run.down === undefined ? undefined : scaleDownState(run);
    const [result, ...rest] = outcome.message.split("\n");
    return {
        stack: run.stack,
        cluster: run.cluster,
        namespace: run.namespace,
        pods: run.pods,
        result: { ok: outcome.ok, message: result.replace(/^Result: /, "") },
        cleanup: rest.join("\n") || null,
        scaleUp: {
            running: running.length,
            allRunningAfter: running.length === run.pods ? Math.max(...running) : null,
            timeToScheduled: spread(scheduled),
            timeToRunning: spread(running),
            ephemeralNodes: { before, atMost: Math.max(before, ...timeline(run).map((p) => p.nodes)), launched: launched.length },
            launched: launched.map(node),
            nodeClaimReady: claimTimes.length ? { p50: percentile(claimTimes, 50), max: Math.max(...claimTimes), modelled: run.nodeLaunchSeconds ?? null } : null,
        },
        scaleDown:
            run.down === undefined || !down
                ? null
                : {
                      at: since(run.down),
                      complete: down.complete,
                      consolidateAfterSeconds: run.consolidateAfterSeconds ?? null,
                      nodes: down.scope.length,
                      gone: down.gone.map((n) => ({ ...node(n), goneAfter: seconds(n.gone! - run.down!) })),
                      kept: down.kept.map((k) => ({ ...node(k.node), pods: k.pods.map((p) => p.name), headroomPods: k.pods.filter((p) => p.headroom).length })),
                      empty: down.empty.map((e) => ({ ...node(e.node), emptySince: since(e.since) })),
                      ephemeralNodesAfter: run.record.liveNodes().length,
                  },
    };
}

/** The lines of the summary that say what went wrong, and the result (--findings). */
export function findingLines(run: Run, outcome: string): string[] {
    const all = summary(run, outcome);
    const down = run.down === undefined ? undefined : scaleDownState(run);
    const upLine = all[1];
    const problems = [
        ...(/ of \d+ pods running$/.test(upLine) ? [upLine] : []),
        ...(down && !down.complete ? all.filter((l) => /^Scale-down .*NOT complete/.test(l) || /^  empty but still up/.test(l) || /^    .*: no burst pod since/.test(l)) : []),
    ];
    return [`Scale test of stack ${run.stack} on ${run.cluster}: findings only (the full summary: summary.txt)`, ...problems, ...outcome.split("\n")];
}

export function summary(run: Run, outcome: string): string[] {
    const pods = [...run.record.pods.values()];
    const since = (t: number | undefined) => (t === undefined ? undefined : seconds(t - run.up));
    const spread = (what: string, values: number[]) =>
        values.length ? `  time to ${what}: p50 ${percentile(values, 50)} s, p95 ${percentile(values, 95)} s, max ${Math.max(...values)} s (${values.length} pods)` : `  time to ${what}: no pod got there`;
    const scheduled = pods.map((p) => since(p.scheduled)).filter((t): t is number => t !== undefined);
    const running = pods.map((p) => since(p.running)).filter((t): t is number => t !== undefined);
    const before = [...run.record.nodes.values()].filter((n) => n.added < run.up).length;
    const launched = run.record.launchedSince(run.up);
    const points = timeline(run);
    const types = [...new Set(launched.map((n) => n.type ?? "?"))].map((t) => `${t} x${launched.filter((n) => (n.type ?? "?") === t).length}`);
    const claimTimes = [...run.record.claims.values()].filter((c) => c.created >= run.up && c.ready !== undefined).map((c) => seconds(c.ready! - c.created));
    const lines = [
        `Scale test of stack ${run.stack} on ${run.cluster}: ${run.pods} burst-shaped pods in namespace ${run.namespace}`,
        `Scale-up (0 -> ${run.pods} at t=0): ${running.length === run.pods ? `all ${run.pods} pods running after ${Math.max(...running)} s` : `${running.length} of ${run.pods} pods running`}`,
        spread("scheduled", scheduled),
        spread("running", running),
        `  ephemeral nodes: ${before} before, ${Math.max(before, ...points.map((p) => p.nodes))} at most, ${launched.length} launched${types.length ? ` (${types.join(", ")})` : ""}`,
        claimTimes.length
            ? `  NodeClaims, created to Ready: p50 ${percentile(claimTimes, 50)} s, max ${Math.max(...claimTimes)} s${run.nodeLaunchSeconds ? ` (the capacity model assumes ${run.nodeLaunchSeconds} s: capacity.nodeLaunchSeconds)` : ""}`
            : "  NodeClaims: none launched",
    ];
    if (run.down !== undefined) lines.push(...scaleDownLines(run, run.down, before));
    lines.push(outcome);
    return lines;
}

/** The scale-down: done or not, the nodes gone, the ones kept and what keeps them, the empty ones Karpenter left. */
function scaleDownLines(run: Run, down: number, before: number): string[] {
    const s = scaleDownState(run);
    const after = (t: number) => `${seconds(t - down)} s`;
    const at = (t: number) => `t=${seconds(t - run.up)} s`;
    const nodeText = (n: NodeRecord) => `${n.name} (${n.type ?? "?"}, ${n.added < run.up ? "there before the test" : `launched at ${at(n.added)}`})`;
    const finished = Math.max(down, ...[...run.record.pods.values()].map((p) => p.stopped ?? down), ...s.gone.map((n) => n.gone!));
    const policy = run.consolidateAfterSeconds === undefined ? "consolidateAfter is Never, so Karpenter removes no node" : `consolidateAfter is ${run.consolidateAfterSeconds} s`;
    const removing = s.gone.map((n) => n.removing).filter((t): t is number => t !== undefined);
    const gone = s.gone.length
        ? `gone: ${s.gone.length}, ${s.gone.length > 1 ? "the last " : ""}after ${after(Math.max(...s.gone.map((n) => n.gone!)))}${removing.length ? ` (Karpenter began removing ${s.gone.length > 1 ? "them" : "it"} after ${after(Math.min(...removing))})` : ""}`
        : "gone: 0";
    const lines = [
        `Scale-down (${run.pods} -> 0 at ${at(down)}): ${s.complete ? `complete after ${after(finished)}` : `NOT complete after ${after(run.end)}`}; ${policy}`,
        `  nodes the test used or caused: ${s.scope.length}; ${[gone, `kept: ${s.kept.length}`, ...(s.empty.length ? [`empty but still up: ${s.empty.length}`] : [])].join("; ")}`,
    ];
    if (s.kept.length) {
        const why = run.consolidationPolicy === "WhenEmpty" ? "WhenEmpty removes only empty nodes" : `not empty; ${run.consolidationPolicy ?? "the policy"} may still consolidate them once the budgets allow Underutilized`;
        lines.push(`  kept, holding burst pods from outside the test (${why}):`);
        for (const k of s.kept) lines.push(`    ${nodeText(k.node)}: ${holdersText(k.pods, run.up)}`);
    }
    if (s.empty.length) {
        lines.push(`  empty but still up: no burst pod holds them${run.consolidateAfterSeconds === undefined ? "" : ", yet Karpenter has not removed them"}; kubectl describe node shows other pods and Karpenter's events:`);
        for (const e of s.empty) lines.push(`    ${nodeText(e.node)}: no burst pod since ${at(e.since)}${e.node.removing !== undefined ? `; Karpenter began removing it at ${at(e.node.removing)}` : ""}`);
    }
    lines.push(`  ephemeral nodes: ${before} before, ${run.record.liveNodes().length} after`);
    return lines;
}

/** "2 headroom pods (all recreated during the test, ...)", "1 other burst pod (ns/name)". */
function holdersText(pods: OtherPodRecord[], up: number): string {
    const headroom = pods.filter((p) => p.headroom);
    const recreated = headroom.filter((p) => p.created !== undefined && p.created >= up).length;
    const workers = pods.filter((p) => !p.headroom).map((p) => p.name);
    return [
        ...(headroom.length
            ? [`${plural(headroom.length, "headroom pod")}${recreated ? ` (${recreated === headroom.length ? "all" : recreated} recreated during the test, after test pods preempted the ones before)` : ""}`]
            : []),
        ...(workers.length ? [`${plural(workers.length, "other burst pod")} (${workers.slice(0, 3).join(", ")}${workers.length > 3 ? ", ..." : ""})`] : []),
    ].join(", ");
}

export function podsCsv(run: Run): string {
    const since = (t: number | undefined) => (t === undefined ? undefined : seconds(t - run.up));
    const rows = [...run.record.pods.values()].sort((a, b) => a.name.localeCompare(b.name)).map((p) => [p.name, p.node, since(p.created), since(p.scheduled), since(p.running), since(p.stopped)]);
    return toCsv(["pod", "node", "created_s", "scheduled_s", "running_s", "stopped_s"], rows);
}

export function timelineCsv(run: Run): string {
    const down = run.down === undefined ? Infinity : seconds(run.down - run.up);
    return toCsv(
        ["t_s", "phase", "pods_running", "pods_scheduled", "ephemeral_nodes", "nodeclaims"],
        timeline(run).map((p) => [p.t, p.t <= down ? "up" : "down", p.running, p.scheduled, p.nodes, p.claims]),
    );
}

/** Two panels, each on its own time axis: the scale-up, then the much longer scale-down. */
export function chart(run: Run): string {
    const points = timeline(run);
    const down = run.down === undefined ? Infinity : seconds(run.down - run.up);
    const panel = (title: string, xLabel: string, phase: TimelinePoint[], from: number) => {
        const series = (name: string, value: (p: TimelinePoint) => number) => ({ name, points: steps(phase.map((p) => [seconds((p.t - from) * 1000), value(p)] as [number, number])) });
        return { title, xLabel, yLabel: "count", series: [series("pods running", (p) => p.running), series("ephemeral nodes", (p) => p.nodes), series("NodeClaims", (p) => p.claims)] };
    };
    const up = panel(`Stack ${run.stack}: scale-up, 0 -> ${run.pods} pods`, "seconds since scale-up", points.filter((p) => p.t <= down), 0);
    if (run.down === undefined) return lineChart(up);
    return lineChart(up, panel(`Scale-down, ${run.pods} -> 0 pods`, "seconds since scale-down", points.filter((p) => p.t >= down), down));
}

// ---- The run against the cluster.

/** Thrown inside the run to end it; the message becomes the outcome. */
class Stop extends Error {}

/** The files scale-test writes into --out. */
const SCALE_TEST_FILES = ["pods.csv", "timeline.csv", "chart.svg", "summary.txt"];

/** The scale test, once ops/scaleTest.ts has read the flags. */
export async function runScaleTest(line: CommandLine, deps: ScaleTestDeps, mode: { json: boolean; findingsOnly: boolean }, context: string): Promise<CommandResult> {
    const cfg = loadStack(valueOf(line, "stack"), SCALE_TEST, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return cfg;
    const check = cfg.nodePool.capacityCheck;
    if (!check) return { exitCode: EXIT.findings, output: `${cfg.stack}: notify-karpenter:nodePool.capacityCheck is not set; the test pods take their requests from it` };
    const podsFlag = valueOf(line, "pods");
    const pods = podsFlag === undefined ? check.peakCeleryPods : integerFlag("pods", podsFlag, 1, 1000);
    if (typeof pods === "string") return usage(pods, SCALE_TEST);
    let kc: KubeConfig;
    try {
        kc = (deps.kubeConfig ?? checkedKubeConfig)();
    } catch (e) {
        return { exitCode: EXIT.cannotCheck, output: `Could not run: could not load the kubeconfig: ${(e as Error)?.message ?? e}` };
    }
    const refused = useContext(kc, context, cfg.cluster);
    if (refused) return usage(refused, SCALE_TEST);

    const clock = deps.clock ?? systemClock;
    const progress = deps.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
    const stamp = new Date(clock.now()).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
    const out = valueOf(line, "out") ?? path.join("scale-test-out", `${cfg.stack}-${stamp}`);
    // Checked before the test runs: its results must not be lost to a bad path after minutes of scaling.
    const badOut = outFilesProblem(out, SCALE_TEST_FILES, { command: "scale-test" });
    if (badOut) return usage(badOut, SCALE_TEST);
    const run: Run = {
        stack: cfg.stack,
        cluster: cfg.cluster.name,
        namespace: `notify-karpenter-scale-test-${stamp.toLowerCase()}`,
        pods,
        up: clock.now(),
        end: clock.now(),
        consolidateAfterSeconds: cfg.nodePool.consolidateAfter === "Never" ? undefined : durationSeconds(cfg.nodePool.consolidateAfter),
        consolidationPolicy: cfg.nodePool.consolidationPolicy,
        nodeLaunchSeconds: cfg.capacity?.nodeLaunchSeconds,
        record: new Recorder(() => clock.now(), cfg.placement.priorityClasses.headroom.name),
    };
    const cluster = clusterOf(kc, deadlinesOf(deps.deadlines));
    // One read first: an unreachable cluster or refused credentials is "could not run" (3), not a failed scale test.
    try {
        await cluster.namespaceExists(run.namespace);
    } catch (e) {
        return { exitCode: EXIT.cannotCheck, output: `Could not run: the cluster of context ${context} did not answer: ${apiError(e)}` };
    }
    const outcome = await execute(cfg, run, cluster, clock, progress, deps);
    const report = summary(run, outcome.message);
    const names = SCALE_TEST_FILES;
    const unwritable = writeFiles(out, { "pods.csv": podsCsv(run), "timeline.csv": timelineCsv(run), "chart.svg": chart(run), "summary.txt": report.join("\n") + "\n" }, "--out", { command: "scale-test", stack: cfg.stack });
    const exitCode = unwritable ? EXIT.cannotCheck : outcome.ok ? EXIT.ok : EXIT.findings;
    if (mode.json) {
        const body = { ...summaryJson(run, outcome), exitCode, files: unwritable ? [] : names.map((f) => path.join(out, f)), ...(unwritable ? { error: unwritable } : {}) };
        return { exitCode, format: "json", output: jsonText("scale-test", body) };
    }
    const shown = mode.findingsOnly ? findingLines(run, outcome.message) : report;
    if (unwritable) return { exitCode, output: [...shown, unwritable].join("\n") };
    return { exitCode, output: [...shown, `Wrote ${names.map((f) => path.join(out, f)).join(", ")}`].join("\n") };
}

/** Creates, scales, watches and always cleans up; returns how it ended. */
async function execute(cfg: StackConfig, run: Run, cluster: Cluster, clock: Clock, progress: (line: string) => void, deps: ScaleTestDeps): Promise<{ ok: boolean; message: string }> {
    const signals = deps.signals ?? process;
    const watches = new WatchSet(cluster);
    const interrupt = (signal: Signal) => () => {
        watches.stop(`interrupted (${signal})`);
        progress(`${signal}: stopping and deleting namespace ${run.namespace}`);
    };
    const handlers = { SIGINT: interrupt("SIGINT"), SIGTERM: interrupt("SIGTERM") };
    for (const s of ["SIGINT", "SIGTERM"] as const) signals.on(s, handlers[s]);


    const rec = run.record;
    let lastProgress = -Infinity;
    /** Ticks until `done()`, reporting progress; a stop reason or the deadline ends the run. */
    const until = async (phase: string, done: () => boolean, timeoutSeconds: number, status: () => string) => {
        const deadline = clock.now() + timeoutSeconds * 1000;
        for (;;) {
            run.end = clock.now();
            if (watches.stopReason) throw new Stop(watches.stopReason);
            if (done()) return;
            if (clock.now() >= deadline) throw new Stop(`${phase} did not finish within ${timeoutSeconds} s`);
            if (clock.now() - lastProgress >= PROGRESS_EVERY_MS) {
                lastProgress = clock.now();
                progress(`[${String(seconds(clock.now() - run.up)).padStart(6)} s] ${phase}: ${status()}`);
            }
            await clock.sleep(TICK_MS);
        }
    };
    const nodesStatus = () => {
        const launching = [...rec.claims.values()].filter((c) => c.gone === undefined && c.ready === undefined).length;
        return `ephemeral nodes ${rec.liveNodes().length}, NodeClaims launching ${launching}`;
    };

    let created = false;
    let outcome = { ok: true, message: "Result: OK" };
    try {
        progress(`creating namespace ${run.namespace} and Deployment ${DEPLOYMENT} (0 replicas)`);
        await cluster.createNamespace(run.namespace, { "app.kubernetes.io/managed-by": "notify-karpenter-scale-test" });
        created = true;
        await cluster.createDeployment(run.namespace, testDeployment(cfg, run.namespace));
        await watches.watch("pods", `/api/v1/namespaces/${run.namespace}/pods`, {}, (t, o) => rec.pod(t, o));
        // The other burst-labelled pods (headroom, real workers): what keeps an ephemeral node from being empty.
        await watches.watch("burst pods", "/api/v1/pods", { labelSelector: `${cfg.placement.burstPodLabel}=true` }, (t, o) => o.metadata.namespace !== run.namespace && rec.otherPod(t, o));
        await watches.watch("nodes", "/api/v1/nodes", { labelSelector: `${cfg.nodePool.ephemeralKey}=true` }, (t, o) => rec.node(t, o));
        await watches.watch("NodeClaims", "/apis/karpenter.sh/v1/nodeclaims", { labelSelector: `karpenter.sh/nodepool=${cfg.nodePool.name}` }, (t, o) => rec.claim(t, o));

        run.up = clock.now();
        await cluster.scaleDeployment(run.namespace, DEPLOYMENT, run.pods);
        await until("scale-up", () => rec.running() >= run.pods, UP_TIMEOUT_SECONDS, () => {
            const all = [...rec.pods.values()].filter((p) => p.stopped === undefined);
            return `${rec.running()}/${run.pods} running, ${all.filter((p) => p.scheduled !== undefined).length} scheduled; ${nodesStatus()}`;
        });

        run.down = clock.now();
        await cluster.scaleDeployment(run.namespace, DEPLOYMENT, 0);
        // With consolidateAfter Never no node goes: wait for the pods only.
        const downTimeout = run.consolidateAfterSeconds === undefined ? 5 * 60 : run.consolidateAfterSeconds + DOWN_MARGIN_SECONDS;
        await until("scale-down", () => scaleDownState(run).complete, downTimeout, () => {
            const s = scaleDownState(run);
            return `${rec.running()} pods running; nodes the test used: ${s.gone.length} gone, ${s.kept.length} kept by other burst pods, ${s.empty.length} empty; ${nodesStatus()}`;
        });
        await watchedAsListed(cluster, cfg, rec, clock);
    } catch (e) {
        outcome = { ok: false, message: `Result: FAILED: ${e instanceof Stop ? e.message : (e as Error).message}` };
    } finally {
        watches.stopAll();
        for (const s of ["SIGINT", "SIGTERM"] as const) signals.off(s, handlers[s]);
        run.end = clock.now();
        if (created) {
            const cleanup = await deleteNamespace(cluster, run.namespace, clock);
            outcome = { ok: outcome.ok && cleanup.ok, message: `${outcome.message}\n${cleanup.message}` };
        }
    }
    return outcome;
}

/**
 * The ephemeral nodes the watch holds live are those a list shows: a watch that went quiet without failing (answered,
 * then nothing, for less than its deadline) would otherwise prove a scale-down it never saw. A few ticks are allowed
 * for an event in flight.
 */
async function watchedAsListed(cluster: Cluster, cfg: StackConfig, rec: Recorder, clock: Clock): Promise<void> {
    let listed: string[] = [];
    let watched: string[] = [];
    for (let tries = 0; tries < 5; tries++) {
        listed = (await cluster.listNodes(`${cfg.nodePool.ephemeralKey}=true`)).filter((n) => !n.metadata.deletionTimestamp).map((n) => n.metadata.name).sort();
        watched = rec.liveNodes().filter((n) => n.removing === undefined).map((n) => n.name).sort();
        if (listed.join() === watched.join()) return;
        await clock.sleep(TICK_MS);
    }
    throw new Stop(`the nodes watch and a list of the nodes disagree (watched: ${watched.join(", ") || "none"}; listed: ${listed.join(", ") || "none"}): the watch missed changes, so the scale-down is not proved`);
}

/** Deletes the test namespace (and so everything in it) and waits until it is gone. */
async function deleteNamespace(cluster: Cluster, namespace: string, clock: Clock): Promise<{ ok: boolean; message: string }> {
    try {
        await cluster.deleteNamespace(namespace);
        const deadline = clock.now() + NAMESPACE_GONE_SECONDS * 1000;
        while (clock.now() < deadline) {
            if (!(await cluster.namespaceExists(namespace))) return { ok: true, message: `Cleanup: deleted namespace ${namespace}` };
            await clock.sleep(2000);
        }
        return { ok: false, message: `Cleanup: namespace ${namespace} is still terminating after ${NAMESPACE_GONE_SECONDS} s; check it with: kubectl get namespace ${namespace}` };
    } catch (e) {
        return { ok: false, message: `Cleanup FAILED: could not delete namespace ${namespace} (${(e as Error).message}); delete it with: kubectl delete namespace ${namespace}` };
    }
}

