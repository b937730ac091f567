import { expect } from "chai";
import { EventEmitter } from "events";
import * as fs from "fs";
import * as path from "path";
import { burstPodTemplate } from "../components/models/celeryPlacement.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { Recorder, percentile, scaleDownState, testDeployment } from "../ops/scaleTestRun.ts";
import { scaleTest } from "../ops/scaleTest.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions, type Step, iso } from "./fakeKubeApi.ts";
import { stackConfig } from "./helpers.ts";
import { readSeries, tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import type { Deadlines } from "../ops/deadlines.ts";

const POOL = { "karpenter.sh/nodepool": "notify-karpenter" };

const node = (name: string, type: string, created: number, deleting?: number) => ({
    metadata: {
        name,
        creationTimestamp: iso(created),
        ...(deleting ? { deletionTimestamp: iso(deleting) } : {}),
        labels: { ...POOL, "notification-canada-ca/ephemeral": "true", "node.kubernetes.io/instance-type": type, "karpenter.sh/capacity-type": "spot" },
    },
});

const BURST_LABEL = { "notification-canada-ca/celery-burst": "true" };

/** A pod of the stack's headroom Deployment (or, with `worker`, of a real burst Deployment), as the API returns it. */
const burstPod = (name: string, created: number, at: { node?: string; deleting?: number; worker?: string } = {}) => ({
    metadata: {
        name,
        namespace: "notification-canada-ca",
        creationTimestamp: iso(created),
        ...(at.deleting ? { deletionTimestamp: iso(at.deleting) } : {}),
        labels: { ...BURST_LABEL, app: at.worker ?? "celery-headroom" },
    },
    spec: { priorityClassName: at.worker ? "celery" : "celery-headroom", ...(at.node ? { nodeName: at.node } : {}) },
    status: { phase: at.node ? "Running" : "Pending" },
});

const claim = (name: string, created: number, ready?: number) => ({
    metadata: { name, creationTimestamp: iso(created), labels: POOL },
    status: { conditions: ready ? [{ type: "Ready", status: "True", lastTransitionTime: iso(ready) }] : [{ type: "Ready", status: "Unknown", lastTransitionTime: iso(created) }] },
});

/** A pod's watch events as the API server sends them: pending, scheduled, running. Times are seconds after `t0`. */
function podSteps(namespace: string, name: string, t0: number, at: { created: number; scheduled: number; running: number; node: string }): Step[] {
    const s = (x: number) => iso(t0 + x * 1000);
    const metadata = { name, namespace, creationTimestamp: s(at.created), labels: { ...BURST_LABEL, app: "celery-scale-test" } };
    const pending = { metadata, spec: {}, status: { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", lastTransitionTime: s(at.created) }] } };
    const scheduled = { metadata, spec: { nodeName: at.node }, status: { phase: "Pending", conditions: [{ type: "PodScheduled", status: "True", lastTransitionTime: s(at.scheduled) }] } };
    const running = {
        ...scheduled,
        status: { ...scheduled.status, phase: "Running", containerStatuses: [{ name: "pause", state: { running: { startedAt: s(at.running) } } }] },
    };
    return [
        { at: at.created, resource: "pods", type: "ADDED", object: pending },
        { at: at.scheduled, resource: "pods", type: "MODIFIED", object: scheduled },
        { at: at.running, resource: "pods", type: "MODIFIED", object: running },
    ];
}

/** Where a test pod's deletion and disappearance land, `at` seconds after the scale to 0. */
const gone = (s: Step & { object: any }, t0: number, at: number): Step[] => [
    { ...s, at, type: "MODIFIED", object: { ...s.object, metadata: { ...s.object.metadata, deletionTimestamp: iso(t0 + at * 1000) } } },
    { ...s, at: at + 1, type: "DELETED" },
];

const WARM = Date.UTC(2026, 10, 30, 1);

/**
 * A recorded-style burst of 6 pods: two start at once on the warm node, which also holds the 2 headroom pods and a
 * real burst worker; Karpenter launches one node for the other four. After the scale to 0 the pods go at once and
 * the emptied node goes after consolidateAfter (30 min) + 5 s, 45 s of draining later; the warm node stays, held by
 * the headroom and the worker. The node watch is closed by the server halfway, as API servers do, and must resume.
 */
function burst(opts: { failAt?: number } = {}): FakeKubeApiOptions {
    const pods = ["a", "b", "c", "d", "e", "f"].map((x) => `celery-scale-test-7d9f-${x}`);
    return {
        nodes: [node("ip-10-0-1-1", "m6a.xlarge", WARM)],
        nodeclaims: [claim("notify-karpenter-warm1", WARM, Date.UTC(2026, 10, 30, 1, 2))],
        pods: [
            burstPod("celery-headroom-5b-h1", WARM, { node: "ip-10-0-1-1" }),
            burstPod("celery-headroom-5b-h2", WARM, { node: "ip-10-0-1-1" }),
            burstPod("notify-celery-email-send-burst-7c-x1", WARM, { node: "ip-10-0-1-1", worker: "notify-celery-email-send-burst" }),
        ],
        onScale: (replicas, namespace, t0) => {
            if (replicas > 0) {
                const steps: Step[] = [
                    ...pods.slice(0, 2).flatMap((p) => podSteps(namespace, p, t0, { created: 0, scheduled: 1, running: 3, node: "ip-10-0-1-1" })),
                    ...pods.slice(2).flatMap((p, i) => podSteps(namespace, p, t0, { created: 0, scheduled: 90, running: i < 2 ? 94 : 97, node: "ip-10-0-2-2" })),
                    { at: 2, resource: "nodeclaims", type: "ADDED", object: claim("notify-karpenter-b7x2k", t0 + 2000) },
                    { at: 60, resource: "nodes", type: "ADDED", object: node("ip-10-0-2-2", "c6a.xlarge", t0 + 60_000) },
                    { at: 90, resource: "nodeclaims", type: "MODIFIED", object: claim("notify-karpenter-b7x2k", t0 + 2000, t0 + 90_000) },
                ];
                return opts.failAt === undefined ? steps : [...steps.filter((s) => s.at < opts.failAt!), { at: opts.failAt, resource: "pods", end: "error" }];
            }
            const newNode = node("ip-10-0-2-2", "c6a.xlarge", t0 - 37_000);
            return [
                ...pods.flatMap((name) => gone({ at: 0, resource: "pods", type: "MODIFIED", object: { metadata: { name, namespace } } }, t0, 1)),
                { at: 900, resource: "nodes", end: "close" },
                { at: 1805, resource: "nodes", type: "MODIFIED", object: node("ip-10-0-2-2", "c6a.xlarge", t0 - 37_000, t0 + 1_805_000) },
                { at: 1850, resource: "nodes", type: "DELETED", object: newNode },
                { at: 1850, resource: "nodeclaims", type: "DELETED", object: claim("notify-karpenter-b7x2k", t0 - 95_000) },
            ];
        },
    };
}

/**
 * Headroom preempted. The warm c6a.xlarge (4 pods) holds the 2 headroom pods and has room for 2 more. Of 8 test
 * pods, 2 take the free room and 2 preempt the headroom pods, whose ReplicaSet recreates them at once; the new
 * headroom pods wait with the other 4 test pods, and Karpenter launches two nodes: the test pods land on one, the
 * headroom pods on the other. After the scale to 0 the warm node and the test pods' node are empty and go after
 * consolidateAfter; the headroom's new node is not empty and, with WhenEmpty, stays. With `stuck`, Karpenter never
 * removes the test pods' emptied node.
 */
function preempting(opts: { stuck?: boolean } = {}): FakeKubeApiOptions {
    const pods = [..."abcdefgh"].map((x) => `celery-scale-test-7d9f-${x}`);
    const [warm, testNode, headroomNode] = ["ip-10-0-1-1", "ip-10-0-2-2", "ip-10-0-3-3"];
    let up = 0;
    return {
        nodes: [node(warm, "c6a.xlarge", WARM)],
        nodeclaims: [claim("notify-karpenter-warm1", WARM, WARM + 90_000)],
        pods: [burstPod("celery-headroom-5b-h1", WARM, { node: warm }), burstPod("celery-headroom-5b-h2", WARM, { node: warm })],
        onScale: (replicas, namespace, t0) => {
            if (replicas > 0) {
                up = t0;
                return [
                    ...pods.slice(0, 2).flatMap((p) => podSteps(namespace, p, t0, { created: 0, scheduled: 1, running: 3, node: warm })),
                    // Preempted for c and d (grace period 0), and recreated, pending.
                    ...["h1", "h2"].flatMap((h): Step[] => {
                        const preempted = burstPod(`celery-headroom-5b-${h}`, WARM, { node: warm, deleting: t0 + 1000 });
                        return [
                            { at: 1, resource: "pods", type: "MODIFIED", object: preempted },
                            { at: 2, resource: "pods", type: "DELETED", object: preempted },
                        ];
                    }),
                    ...["h3", "h4"].flatMap((h): Step[] => [
                        { at: 2, resource: "pods", type: "ADDED", object: burstPod(`celery-headroom-5b-${h}`, t0 + 2000) },
                        { at: 90, resource: "pods", type: "MODIFIED", object: burstPod(`celery-headroom-5b-${h}`, t0 + 2000, { node: headroomNode }) },
                    ]),
                    ...pods.slice(2, 4).flatMap((p) => podSteps(namespace, p, t0, { created: 0, scheduled: 3, running: 5, node: warm })),
                    ...pods.slice(4).flatMap((p) => podSteps(namespace, p, t0, { created: 0, scheduled: 90, running: 94, node: testNode })),
                    ...["c1", "c2"].flatMap((c): Step[] => [
                        { at: 4, resource: "nodeclaims", type: "ADDED", object: claim(`notify-karpenter-${c}`, t0 + 4000) },
                        { at: 90, resource: "nodeclaims", type: "MODIFIED", object: claim(`notify-karpenter-${c}`, t0 + 4000, t0 + 90_000) },
                    ]),
                    { at: 60, resource: "nodes", type: "ADDED", object: node(testNode, "c6a.xlarge", t0 + 60_000) },
                    { at: 60, resource: "nodes", type: "ADDED", object: node(headroomNode, "c6a.xlarge", t0 + 60_000) },
                ];
            }
            const removed = (name: string, created: number, claimName: string, at: number): Step[] => [
                { at, resource: "nodes", type: "MODIFIED", object: node(name, "c6a.xlarge", created, t0 + at * 1000) },
                { at: at + 45, resource: "nodes", type: "DELETED", object: node(name, "c6a.xlarge", created, t0 + at * 1000) },
                { at: at + 45, resource: "nodeclaims", type: "DELETED", object: claim(claimName, created) },
            ];
            return [
                ...pods.flatMap((name) => gone({ at: 0, resource: "pods", type: "MODIFIED", object: { metadata: { name, namespace } } }, t0, 1)),
                ...removed(warm, WARM, "notify-karpenter-warm1", 1805),
                ...(opts.stuck ? [] : removed(testNode, up + 60_000, "notify-karpenter-c1", 1806)),
            ];
        },
    };
}

interface Harness {
    api: FakeKubeApi;
    clock: FakeClock;
    out: string;
    progress: string[];
    signals: EventEmitter;
}

async function harness(opts: FakeKubeApiOptions): Promise<Harness> {
    const clock = new FakeClock();
    const api = await new FakeKubeApi(clock, opts).start();
    return { api, clock, out: tempDir("scale-test-"), progress: [], signals: new EventEmitter() };
}

/** The lines of the n-th fenced example in docs/scale-test.md. */
function docExample(n: number): string[] {
    const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs", "scale-test.md"), "utf8");
    const blocks = [...doc.matchAll(/^```\n([\s\S]*?)^```$/gm)].map((m) => m[1].trimEnd().split("\n"));
    return blocks[n] ?? [];
}

const run = (h: Harness, argv: string[]) =>
    scaleTest(argv, { kubeConfig: () => h.api.kubeConfig(), clock: h.clock, progress: (l) => h.progress.push(l), signals: h.signals });

describe("npm run scale-test, against a fake Kubernetes API replaying watch events", () => {
    let h: Harness;
    afterEach(async () => h && (await h.api.stop()));

    it("records times to scheduled and running, nodes up and down, writes CSV, chart and summary, and deletes its namespace", async () => {
        h = await harness(burst());
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out]);
        expect(r.exitCode, r.output).to.equal(0);
        const ns = "notify-karpenter-scale-test-20261130-051000";
        expect(r.output.split("\n")).to.deep.equal([
            `Scale test of stack staging on notification-canada-ca-staging-eks-cluster: 6 burst-shaped pods in namespace ${ns}`,
            "Scale-up (0 -> 6 at t=0): all 6 pods running after 97 s",
            "  time to scheduled: p50 90 s, p95 90 s, max 90 s (6 pods)",
            "  time to running: p50 94 s, p95 97 s, max 97 s (6 pods)",
            "  ephemeral nodes: 1 before, 2 at most, 1 launched (c6a.xlarge x1)",
            "  NodeClaims, created to Ready: p50 88 s, max 88 s (the capacity model assumes 120 s: capacity.nodeLaunchSeconds)",
            "Scale-down (6 -> 0 at t=97 s): complete after 1850 s; consolidateAfter is 1800 s",
            "  nodes the test used or caused: 2; gone: 1, after 1850 s (Karpenter began removing it after 1805 s); kept: 1",
            "  kept, holding burst pods from outside the test (not empty; WhenEmptyOrUnderutilized may still consolidate them once the budgets allow Underutilized):",
            "    ip-10-0-1-1 (m6a.xlarge, there before the test): 2 headroom pods, 1 other burst pod (notification-canada-ca/notify-celery-email-send-burst-7c-x1)",
            "  ephemeral nodes: 1 before, 1 after",
            "Result: OK",
            `Cleanup: deleted namespace ${ns}`,
            `Wrote ${["pods.csv", "timeline.csv", "chart.svg", "summary.txt"].map((f) => path.join(h.out, f)).join(", ")}`,
        ]);
        // The API calls, in order: namespace, Deployment, four watches, scale up, scale down, the node watch resumed, the
        // list of the nodes that checks the watch saw them all, cleanup.
        const calls = h.api.requests.filter((q) => q !== `GET /api/v1/namespaces/${ns}`);
        expect(calls).to.deep.equal([
            "POST /api/v1/namespaces",
            `POST /apis/apps/v1/namespaces/${ns}/deployments`,
            `GET /api/v1/namespaces/${ns}/pods`,
            "GET /api/v1/pods",
            "GET /api/v1/nodes",
            "GET /apis/karpenter.sh/v1/nodeclaims",
            `PUT /apis/apps/v1/namespaces/${ns}/deployments/celery-scale-test/scale`,
            `PUT /apis/apps/v1/namespaces/${ns}/deployments/celery-scale-test/scale`,
            "GET /api/v1/nodes",
            "GET /api/v1/nodes",
            `DELETE /api/v1/namespaces/${ns}`,
        ]);
        expect(h.api.namespaces.size).to.equal(0);

        const pods = fs.readFileSync(path.join(h.out, "pods.csv"), "utf8").trim().split("\r\n");
        expect(pods[0]).to.equal("pod,node,created_s,scheduled_s,running_s,stopped_s");
        expect(pods.slice(1)).to.deep.equal([
            "celery-scale-test-7d9f-a,ip-10-0-1-1,0,1,3,98",
            "celery-scale-test-7d9f-b,ip-10-0-1-1,0,1,3,98",
            "celery-scale-test-7d9f-c,ip-10-0-2-2,0,90,94,98",
            "celery-scale-test-7d9f-d,ip-10-0-2-2,0,90,94,98",
            "celery-scale-test-7d9f-e,ip-10-0-2-2,0,90,97,98",
            "celery-scale-test-7d9f-f,ip-10-0-2-2,0,90,97,98",
        ]);
        const timeline = fs.readFileSync(path.join(h.out, "timeline.csv"), "utf8").trim().split("\r\n");
        expect(timeline).to.deep.equal([
            "t_s,phase,pods_running,pods_scheduled,ephemeral_nodes,nodeclaims",
            "0,up,0,0,1,1",
            "1,up,0,2,1,1",
            "2,up,0,2,1,2",
            "3,up,2,2,1,2",
            "60,up,2,2,2,2",
            "90,up,2,6,2,2",
            "94,up,4,6,2,2",
            "97,up,6,6,2,2",
            "98,down,0,0,2,2",
            "1947,down,0,0,1,1",
        ]);

        // The chart: the scale-up and the scale-down, each on its own time axis.
        const series = readSeries(fs.readFileSync(path.join(h.out, "chart.svg"), "utf8"));
        expect(series.map((s) => `${s.panel}: ${s.name}`)).to.deep.equal([
            "Stack staging: scale-up, 0 -> 6 pods: pods running",
            "Stack staging: scale-up, 0 -> 6 pods: ephemeral nodes",
            "Stack staging: scale-up, 0 -> 6 pods: NodeClaims",
            "Scale-down, 6 -> 0 pods: pods running",
            "Scale-down, 6 -> 0 pods: ephemeral nodes",
            "Scale-down, 6 -> 0 pods: NodeClaims",
        ]);
        const [upPods, upNodes, , downPods, downNodes] = series.map((s) => s.values);
        expect(upPods).to.deep.equal([[0, 0], [1, 0], [2, 0], [3, 0], [3, 2], [60, 2], [90, 2], [94, 2], [94, 4], [97, 4], [97, 6]]);
        expect(upNodes).to.deep.equal([[0, 1], [1, 1], [2, 1], [3, 1], [60, 1], [60, 2], [90, 2], [94, 2], [97, 2]]);
        expect(downPods).to.deep.equal([[0, 6], [1, 6], [1, 0], [1850, 0]]);
        expect(downNodes).to.deep.equal([[0, 2], [1, 2], [1850, 2], [1850, 1]]);
        for (const s of series) for (const [x, y] of s.pixels) expect(x >= 60 && x <= 780 && y >= 60 && y <= 370, `${s.name}: ${x},${y}`).to.equal(true);
        expect(fs.readFileSync(path.join(h.out, "summary.txt"), "utf8")).to.include("Result: OK");

        expect(h.progress[0]).to.equal(`creating namespace ${ns} and Deployment celery-scale-test (0 replicas)`);
        expect(h.progress[1]).to.equal("[     0 s] scale-up: 0/6 running, 0 scheduled; ephemeral nodes 1, NodeClaims launching 0");
        expect(h.progress).to.include("[    95 s] scale-up: 4/6 running, 6 scheduled; ephemeral nodes 2, NodeClaims launching 0");
        expect(h.progress.filter((l) => l.includes("scale-down")).length).to.be.greaterThan(300);
        expect(h.signals.listenerCount("SIGINT") + h.signals.listenerCount("SIGTERM")).to.equal(0);
    });

    it("headroom pods preempted onto a node of their own: the scale-down completes when the nodes the test emptied are gone", async () => {
        h = await harness(preempting());
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "8", "--out", h.out]);
        expect(r.exitCode, r.output).to.equal(0);
        const lines = r.output.split("\n");
        expect(lines[1]).to.equal("Scale-up (0 -> 8 at t=0): all 8 pods running after 94 s");
        expect(lines[4]).to.equal("  ephemeral nodes: 1 before, 3 at most, 2 launched (c6a.xlarge x2)");
        // The old rule (every node launched since the scale-up gone) would wait for ip-10-0-3-3 until the timeout.
        expect(lines.slice(6, 12)).to.deep.equal([
            "Scale-down (8 -> 0 at t=94 s): complete after 1851 s; consolidateAfter is 1800 s",
            "  nodes the test used or caused: 3; gone: 2, the last after 1851 s (Karpenter began removing them after 1805 s); kept: 1",
            "  kept, holding burst pods from outside the test (not empty; WhenEmptyOrUnderutilized may still consolidate them once the budgets allow Underutilized):",
            "    ip-10-0-3-3 (c6a.xlarge, launched at t=60 s): 2 headroom pods (all recreated during the test, after test pods preempted the ones before)",
            "  ephemeral nodes: 1 before, 1 after",
            "Result: OK",
        ]);
        expect(fs.readFileSync(path.join(h.out, "timeline.csv"), "utf8").trim().split("\r\n").slice(-3)).to.deep.equal([
            "95,down,0,0,3,3",
            "1944,down,0,0,2,2",
            "1945,down,0,0,1,1",
        ]);
        expect(h.api.namespaces.size).to.equal(0);
        // docs/scale-test.md quotes this summary: its first example is this run's output, line for line.
        expect(docExample(0), "docs/scale-test.md's first example is not what this replay prints now").to.deep.equal(lines.slice(0, -1));
    });

    it("a node the test emptied that Karpenter never removes fails the scale-down, named with why", async () => {
        h = await harness(preempting({ stuck: true }));
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "8", "--out", h.out]);
        expect(r.exitCode).to.equal(1);
        const lines = r.output.split("\n");
        expect(lines.slice(6, 15)).to.deep.equal([
            "Scale-down (8 -> 0 at t=94 s): NOT complete after 2700 s; consolidateAfter is 1800 s",
            "  nodes the test used or caused: 3; gone: 1, after 1850 s (Karpenter began removing it after 1805 s); kept: 1; empty but still up: 1",
            "  kept, holding burst pods from outside the test (not empty; WhenEmptyOrUnderutilized may still consolidate them once the budgets allow Underutilized):",
            "    ip-10-0-3-3 (c6a.xlarge, launched at t=60 s): 2 headroom pods (all recreated during the test, after test pods preempted the ones before)",
            "  empty but still up: no burst pod holds them, yet Karpenter has not removed them; kubectl describe node shows other pods and Karpenter's events:",
            "    ip-10-0-2-2 (c6a.xlarge, launched at t=60 s): no burst pod since t=95 s",
            "  ephemeral nodes: 1 before, 2 after",
            "Result: FAILED: scale-down did not finish within 2700 s",
            "Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000",
        ]);
        expect(docExample(1), "docs/scale-test.md's second example is not what this replay prints now").to.deep.equal(lines.slice(6, 14));
        expect(h.progress[h.progress.length - 1]).to.match(/scale-down: 0 pods running; nodes the test used: 1 gone, 1 kept by other burst pods, 1 empty; ephemeral nodes 2, NodeClaims launching 0$/);
    });

    it("--json: the run in the documented schema (docs/json-output.md); --findings: what went wrong and the result", async () => {
        h = await harness(preempting({ stuck: true }));
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "8", "--out", h.out, "--json"]);
        expect(r).to.deep.include({ exitCode: 1, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "cluster", "namespace", "pods", "result", "cleanup", "scaleUp", "scaleDown", "exitCode", "files"]);
        expect(Object.keys(report), "docs/json-output.md's table for scale-test").to.deep.equal(documentedFields("scale-test"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "scale-test", stack: "staging", pods: 8, exitCode: 1 });
        expect(report.result).to.deep.equal({ ok: false, message: "FAILED: scale-down did not finish within 2700 s" });
        expect(report.cleanup).to.equal("Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000");
        expect(report.scaleUp).to.deep.include({ running: 8, allRunningAfter: 94, timeToScheduled: { p50: 3, p95: 90, max: 90, pods: 8 }, ephemeralNodes: { before: 1, atMost: 3, launched: 2 } });
        expect(report.scaleUp.nodeClaimReady).to.deep.equal({ p50: 86, max: 86, modelled: 120 });
        expect(report.scaleDown).to.deep.include({ at: 94, complete: false, consolidateAfterSeconds: 1800, nodes: 3, ephemeralNodesAfter: 2 });
        expect(report.scaleDown.empty).to.deep.equal([{ name: "ip-10-0-2-2", instanceType: "c6a.xlarge", launchedAt: 60, emptySince: 95 }]);
        expect(report.scaleDown.kept.map((k: any) => [k.name, k.headroomPods])).to.deep.equal([["ip-10-0-3-3", 2]]);
        expect(report.files).to.deep.equal(["pods.csv", "timeline.csv", "chart.svg", "summary.txt"].map((f) => path.join(h.out, f)));
        await h.api.stop();

        h = await harness(preempting({ stuck: true }));
        const text = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "8", "--out", h.out, "--findings"]);
        expect(text.exitCode).to.equal(1);
        expect(text.output.split("\n").slice(0, -1)).to.deep.equal([
            "Scale test of stack staging on notification-canada-ca-staging-eks-cluster: findings only (the full summary: summary.txt)",
            "Scale-down (8 -> 0 at t=94 s): NOT complete after 2700 s; consolidateAfter is 1800 s",
            "  empty but still up: no burst pod holds them, yet Karpenter has not removed them; kubectl describe node shows other pods and Karpenter's events:",
            "    ip-10-0-2-2 (c6a.xlarge, launched at t=60 s): no burst pod since t=95 s",
            "Result: FAILED: scale-down did not finish within 2700 s",
            "Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000",
        ]);
        // The summary file keeps the whole summary.
        expect(fs.readFileSync(path.join(h.out, "summary.txt"), "utf8")).to.include("time to running: p50");
    });

    it("a watch that fails mid-run fails the test, and the namespace is still deleted", async () => {
        h = await harness(burst({ failAt: 30 }));
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out]);
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include("Scale-up (0 -> 6 at t=0): 2 of 6 pods running");
        expect(r.output).to.include("Result: FAILED: the pods watch failed: etcdserver: request timed out");
        expect(r.output).to.include("Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000");
        expect(r.output).not.to.include("Scale-down");
        expect(h.api.requests).to.include("DELETE /api/v1/namespaces/notify-karpenter-scale-test-20261130-051000");
        expect(h.api.requests.filter((q) => q.startsWith("PUT"))).to.have.length(1);
        expect(h.api.namespaces.size).to.equal(0);
        // What was seen is kept.
        expect(fs.readFileSync(path.join(h.out, "pods.csv"), "utf8").trim().split("\r\n")).to.have.length(7);
    });

    /** A clock whose ticks also take a millisecond of real time: a watch's deadline (real time) passes while the run waits. */
    const slowClock = (h: Harness) => ({
        now: () => h.clock.now(),
        sleep: async (ms: number) => {
            await h.clock.sleep(ms);
            await new Promise((resolve) => setTimeout(resolve, 1));
        },
    });
    const runWith = (h: Harness, deadlines: Partial<Deadlines>) =>
        scaleTest(["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out], { kubeConfig: () => h.api.kubeConfig(), clock: slowClock(h), progress: (l) => h.progress.push(l), signals: h.signals, deadlines });

    it("a watch answered and then silent (no event, bookmark or end) fails the test at its deadline, naming it; the namespace is still deleted (it waited on)", async () => {
        // The API server's bookmarks keep the live watches going; the nodes watch alone says nothing.
        h = await harness({ ...burst(), bookmarkEveryMs: 20, fault: (_m, p, watch) => (watch && p === "/api/v1/nodes" ? { kind: "silent" } : undefined) });
        const r = await runWith(h, { watchIdleMs: 50 });
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.include(
            "Result: FAILED: the nodes watch failed: watch /api/v1/nodes (notification-canada-ca/ephemeral=true): no event, bookmark or end for 0.05 s (the API server was asked to end it after 240 s): the connection or the server stopped answering",
        );
        expect(r.output).to.include("Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000");
        expect(h.api.namespaces.size).to.equal(0);
    });

    it("a watch silent for less than its deadline proves no scale-down: the nodes a list shows are not the nodes it saw (it said OK)", async () => {
        h = await harness({ ...burst(), fault: (_m, p, watch) => (watch && p === "/api/v1/nodes" ? { kind: "silent" } : undefined) });
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out]);
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.match(/^Result: FAILED: the nodes watch and a list of the nodes disagree \(watched: none; listed: \S+.*\): the watch missed changes, so the scale-down is not proved$/m);
        expect(h.api.namespaces.size).to.equal(0);
    });

    it("a watch event whose object has no name fails the test, naming the watch (client-node dropped it unread)", async () => {
        h = await harness({ ...burst(), fault: (_m, p, watch) => (watch && p === "/apis/karpenter.sh/v1/nodeclaims" ? { kind: "bad-event" } : undefined) });
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out]);
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.match(/^Result: FAILED: the NodeClaims watch failed: watch \/apis\/karpenter\.sh\/v1\/nodeclaims \(karpenter\.sh\/nodepool=notify-karpenter\): an event ADDED without metadata\.name \(\{"kind":"Pod","spec":\{\}\}\)$/m);
        expect(h.api.namespaces.size).to.equal(0);
    });

    it("a watch request never answered: the test fails at the request deadline, naming it, and the namespace is deleted", async () => {
        h = await harness({ ...burst(), fault: (_m, p, watch) => (watch && p.endsWith("/pods") && p.startsWith("/api/v1/namespaces/") ? { kind: "hang" } : undefined) });
        const r = await runWith(h, { kubeRequestMs: 300 });
        expect(r.exitCode, r.output).to.equal(1);
        expect(r.output).to.include("Result: FAILED: watch /api/v1/namespaces/notify-karpenter-scale-test-20261130-051000/pods: no answer within 0.3 s");
        expect(r.output).to.include("Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000");
    });

    it("a Deployment the API refuses fails the test, and the namespace is still deleted", async () => {
        h = await harness({ ...burst(), createDeploymentStatus: 403 });
        const r = await run(h, ["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out]);
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/Result: FAILED: .*403/);
        expect(h.api.requests.slice(-2)).to.deep.equal([
            "DELETE /api/v1/namespaces/notify-karpenter-scale-test-20261130-051000",
            "GET /api/v1/namespaces/notify-karpenter-scale-test-20261130-051000",
        ]);
        expect(h.api.requests.some((q) => q.startsWith("PUT"))).to.equal(false);
    });

    it("Ctrl-C stops the run and cleans up", async () => {
        h = await harness(burst());
        const r = await scaleTest(["--stack", "staging", "--context", "staging", "--pods", "6", "--out", h.out], {
            kubeConfig: () => h.api.kubeConfig(),
            clock: h.clock,
            signals: h.signals,
            progress: (line) => {
                h.progress.push(line);
                if (line.startsWith("[    10 s]")) h.signals.emit("SIGINT");
            },
        });
        expect(r.exitCode).to.equal(1);
        expect(h.progress).to.include("SIGINT: stopping and deleting namespace notify-karpenter-scale-test-20261130-051000");
        expect(r.output).to.include("Result: FAILED: interrupted (SIGINT)");
        expect(r.output).to.include("Cleanup: deleted namespace notify-karpenter-scale-test-20261130-051000");
        expect(h.api.namespaces.size).to.equal(0);
        expect(h.signals.listenerCount("SIGINT")).to.equal(0);
    });

    it("refuses a context whose cluster is not the stack's, before any API call", async () => {
        h = await harness(burst());
        const r = await run(h, ["--stack", "staging", "--context", "other", "--out", h.out]);
        expect(r.exitCode).to.equal(2);
        expect(r.output).to.match(/^--context other is cluster "kind-scratch" \(http:\/\/127\.0\.0\.1:\d+\), not the stack's cluster notification-canada-ca-staging-eks-cluster \(notify-karpenter:cluster\.name\); refusing to touch it\nusage: npm run scale-test/);
        expect((await run(h, ["--stack", "production", "--context", "staging"])).output).to.match(/not the stack's cluster notification-canada-ca-production-eks-cluster/);
        expect((await run(h, ["--stack", "staging", "--context", "prod"])).output).to.match(/^--context: no context "prod" in the kubeconfig; its contexts are staging, other/);
        expect(h.api.requests).to.deep.equal([]);
    });

    it("exits 3 with one line when there is no readable kubeconfig, as verify-placement does", async () => {
        const r = await scaleTest(["--stack", "staging", "--context", "staging"], {
            kubeConfig: () => {
                throw new Error("ENOENT: no such file or directory, open '/root/.kube/config'");
            },
        });
        expect(r).to.deep.equal({ exitCode: 3, output: "Could not run: could not load the kubeconfig: ENOENT: no such file or directory, open '/root/.kube/config'" });
    });

    it("exits 3, writing nothing, when the cluster is unreachable: the test could not run, it did not fail", async () => {
        const api = await new FakeKubeApi(new FakeClock()).start();
        const kc = api.kubeConfig();
        await api.stop();
        const out = tempDir("scale-unreachable-");
        const r = await scaleTest(["--stack", "staging", "--context", "staging", "--out", out], { kubeConfig: () => kc });
        expect(r.exitCode).to.equal(3);
        expect(r.output).to.match(/^Could not run: the cluster of context staging did not answer: read namespace notify-karpenter-scale-test-\S+: fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
        expect(fs.readdirSync(out)).to.deep.equal([]);
    });

    it("checks its flags", async () => {
        h = await harness({});
        expect((await run(h, ["--stack", "staging"])).output).to.match(/^--context is required/);
        expect((await run(h, ["--stack", "staging", "--context", "staging", "--pods", "0"])).output).to.match(/^--pods must be an integer from 1 to 1000 \(got "0"\)/);
        expect((await run(h, ["--stack", "staging", "--context", "staging", "--pods", "many"])).exitCode).to.equal(2);
        expect(h.api.requests).to.deep.equal([]);
    });
});

describe("scale test pieces", () => {
    it("shapes the test pods like the stack's burst Celery pods: same placement, one Celery pod's requests, a pause container", () => {
        const cfg = stackConfig("staging");
        const d = testDeployment(cfg, "ns");
        const burst = burstPodTemplate(placementArgs(cfg), { name: "celery-scale-test", terminationGracePeriodSeconds: 85 });
        expect(d.spec.replicas).to.equal(0);
        expect(d.spec.template.metadata.labels).to.include({ "notification-canada-ca/celery-burst": "true", app: "celery-scale-test" });
        expect(d.spec.selector.matchLabels).to.deep.equal({ app: "celery-scale-test" });
        expect(d.spec.template.spec).to.deep.include({ tolerations: burst.spec.tolerations, affinity: burst.spec.affinity, priorityClassName: "celery" });
        const [c] = d.spec.template.spec.containers;
        expect(c.image).to.match(/^registry\.k8s\.io\/pause:/);
        expect(c.resources.requests).to.deep.equal({ cpu: "550m", memory: "1250Mi" });
    });

    it("scale-down state: a node kept by a running burst pod is kept; one whose only pod was evicted (Failed) is empty", () => {
        const up = Date.UTC(2026, 10, 30, 5);
        const rec = new Recorder(() => up + 200_000, "celery-headroom");
        rec.node("ADDED", node("n1", "c6a.xlarge", up + 60_000));
        rec.node("ADDED", node("n2", "c6a.xlarge", up + 60_000));
        rec.pod("ADDED", { metadata: { name: "t1", deletionTimestamp: iso(up + 100_000) }, spec: { nodeName: "n1" } });
        rec.otherPod("ADDED", burstPod("celery-headroom-5b-h3", up + 2000, { node: "n1" }));
        rec.otherPod("ADDED", { ...burstPod("notify-celery-sms-send-burst-9d-x", up, { node: "n2", worker: "notify-celery-sms-send-burst" }), status: { phase: "Failed", reason: "Evicted" } });
        const s = scaleDownState({ stack: "staging", cluster: "c", namespace: "ns", pods: 1, up, down: up + 99_000, end: up + 200_000, consolidateAfterSeconds: 1800, record: rec });
        expect(s.kept.map((k) => [k.node.name, k.pods.map((p) => [p.name, p.headroom])])).to.deep.equal([["n1", [["notification-canada-ca/celery-headroom-5b-h3", true]]]]);
        expect(s.empty.map((e) => [e.node.name, e.since - up])).to.deep.equal([["n2", 200_000]]);
        expect([s.testPodsLeft, s.complete]).to.deep.equal([0, false]);
    });

    it("takes nearest-rank percentiles", () => {
        const v = [3, 3, 94, 94, 97, 97];
        expect([percentile(v, 50), percentile(v, 95), percentile(v, 100), percentile([7], 50)]).to.deep.equal([94, 97, 97, 7]);
    });
});
