import { createRequire } from "node:module";
import { evaluate } from "@marcbachmann/cel-js";
import { expect } from "chai";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { DELETION_COST_ANNOTATION, annotationOnlyPolicySpec } from "../components/burstScaleDownOrder.ts";
import { serviceAccountUser } from "../components/models/celeryPlacement.ts";
import { DEPLOYMENT_LABEL } from "../components/models/celeryPlacement.ts";
import { FakeClock, FakeKubeApi, type FakeKubeApiOptions, iso } from "./fakeKubeApi.ts";
import { STACKS, buildStack, configErrorOf, rawConfig } from "./helpers.ts";
import { tempDir, expectScriptConfigMap } from "./opsHelpers.ts";
import { CutMidAnswer } from "./loopbackServer.ts";
const require = createRequire(import.meta.url);

// The script runs in the cluster as plain JavaScript; its functions are tested here as they are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const annotator = require("../components/inCluster/deletionCostAnnotator.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { stopper } = require("../components/inCluster/inClusterApi.js");
const SCRIPT = path.join(import.meta.dirname, "..", "components", "inCluster", "deletionCostAnnotator.js");

const NS = "notification-canada-ca";
const NAME = "burst-scale-down-order";
const USER = `system:serviceaccount:karpenter:${NAME}`;
const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const MIN = 60_000;

const node = (name: string, created: number, pool = "notify-karpenter") => ({
    metadata: { name, creationTimestamp: iso(created), labels: pool ? { "karpenter.sh/nodepool": pool } : { "eks.amazonaws.com/capacityType": "ON_DEMAND" } },
});
const pod = (name: string, nodeName: string | undefined, o: { deployment?: string; cost?: string; phase?: string; namespace?: string; deleting?: boolean } = {}) => ({
    metadata: {
        name,
        namespace: o.namespace ?? NS,
        labels: { "notification-canada-ca/celery-burst": "true", ...(o.deployment === undefined ? { [DEPLOYMENT_LABEL]: "notify-celery-email-send-burst" } : o.deployment ? { [DEPLOYMENT_LABEL]: o.deployment } : { app: "celery-headroom" }) },
        ...(o.cost ? { annotations: { [DELETION_COST_ANNOTATION]: o.cost } } : {}),
        ...(o.deleting ? { deletionTimestamp: iso(T0) } : {}),
    },
    spec: nodeName ? { nodeName } : {},
    status: { phase: o.phase ?? (nodeName ? "Running" : "Pending") },
});

/**
 * Which pods a ReplicaSet scale-down deletes first, for running, ready pods of one ReplicaSet: kubernetes
 * pkg/controller/controller_utils.go ActivePodsWithRanks.Less, step 4 (lower pod-deletion-cost first; unset is 0)
 * before step 5 (more of the ReplicaSet's pods on the same node first). Later steps (ready time, restarts, age) are
 * left as ties, which the real controller breaks by ready-time bucket and then pod UID, effectively at random.
 */
function deletionOrder(pods: any[]): string[] {
    const onNode = (p: any) => pods.filter((q) => q.spec.nodeName === p.spec.nodeName).length;
    const cost = (p: any) => Number(p.metadata.annotations?.[DELETION_COST_ANNOTATION] ?? 0);
    return [...pods].sort((a, b) => cost(a) - cost(b) || onNode(b) - onNode(a)).map((p) => p.metadata.name);
}

describe("scale-down order: the pod-deletion-cost annotator (components/deletionCostAnnotator.js)", () => {
    it("costs older nodes more, in whole minutes, as the API server accepts it (an int32, no sign or leading zero)", () => {
        const older = annotator.deletionCost(iso(T0));
        const newer = annotator.deletionCost(iso(T0 + 5 * MIN));
        expect(older).to.equal(String(-Math.floor(T0 / MIN)));
        expect(Number(older)).to.be.greaterThan(Number(newer));
        // Same minute, same cost: ties fall back to the ReplicaSet controller's own order.
        expect(annotator.deletionCost(iso(T0 + 59_000))).to.equal(older);
        for (const c of [older, newer]) expect(c).to.match(/^-[1-9][0-9]*$/);
        // The script and the admission policy name the same annotation.
        expect(annotator.ANNOTATION).to.equal(DELETION_COST_ANNOTATION);
    });

    it("stays above -2^27 for two centuries, or Karpenter v1.14.1 would count burst pods as nothing and nodes running Celery as empty", () => {
        // kubernetes-sigs/karpenter v1.14.1 pkg/utils/disruption/disruption.go:59 (EvictionCost 1 + cost/2^27) and
        // pkg/controllers/disruption/types.go:136-157 (a node is empty when its pods' costs add up to nothing).
        const evictionCost = (deletionCost: string, priority: number) => Math.min(10, Math.max(-10, 1 + Number(deletionCost) / 2 ** 27 + priority / 2 ** 25));
        for (const year of [2026, 2100, 2224]) expect(evictionCost(annotator.deletionCost(`${year}-12-31T23:59:00Z`), 10), String(year)).to.be.greaterThan(0);
        expect(Number(annotator.deletionCost("2224-12-31T23:59:00Z"))).to.be.greaterThan(-(2 ** 27));
    });

    it("patches running burst pods on the NodePool's nodes whose cost is missing or stale, and nothing else", () => {
        const nodes = [node("old", T0), node("new", T0 + 30 * MIN)];
        const oldCost = annotator.deletionCost(iso(T0));
        const newCost = annotator.deletionCost(iso(T0 + 30 * MIN));
        const patches = annotator.patchesFor(
            [
                pod("on-old", "old"),
                pod("on-new-stale", "new", { cost: oldCost }),
                pod("on-new-done", "new", { cost: newCost }),
                // A node that is not the NodePool's (stable, with spillToStable): unannotated, so kept longest.
                pod("on-stable", "stable-1"),
                pod("terminating", "new", { deleting: true }),
            ],
            nodes,
        );
        expect(patches).to.deep.equal([
            { namespace: NS, name: "on-old", cost: oldCost },
            { namespace: NS, name: "on-new-stale", cost: newCost },
        ]);
    });

    it("makes a scale-down empty the newest nodes first, where unordered it takes from the most crowded node", () => {
        // One burst Deployment: 4 pods on the warm baseline node, 6 on the burst's first node, 2 on its last.
        const nodes = [node("baseline", T0 - 600 * MIN), node("first", T0), node("last", T0 + 10 * MIN)];
        const pods = [
            ...[1, 2, 3, 4].map((i) => pod(`b${i}`, "baseline")),
            ...[1, 2, 3, 4, 5, 6].map((i) => pod(`f${i}`, "first")),
            ...[1, 2].map((i) => pod(`l${i}`, "last")),
        ];
        // Scale 12 -> 4. Unordered, ranks are counted once before the sort (replica_set.go getPodsToDelete): the 6 on
        // "first" go, then 2 of the 4 on "baseline"; the 2 on the newest node "last" survive and keep it.
        const unordered = deletionOrder(pods).slice(0, 8);
        expect(unordered.filter((n) => n.startsWith("f"))).to.have.length(6);
        expect(unordered.filter((n) => n.startsWith("b"))).to.have.length(2);
        expect(unordered.filter((n) => n.startsWith("l"))).to.have.length(0);
        const annotated = pods.map((p) => {
            const patch = annotator.patchesFor([p], nodes)[0];
            return { ...p, metadata: { ...p.metadata, annotations: { [DELETION_COST_ANNOTATION]: patch.cost } } };
        });
        // Ordered: every pod of "last", then every pod of "first": both nodes empty, the baseline node keeps 4.
        expect(deletionOrder(annotated).slice(0, 8).sort()).to.deep.equal(["f1", "f2", "f3", "f4", "f5", "f6", "l1", "l2"]);
    });

    it("names every missing or bad setting", () => {
        expect(annotator.settingsFrom({}).problems).to.deep.equal(["NAMESPACE must be set", "POD_SELECTOR must be set", "NODE_SELECTOR must be set"]);
        expect(annotator.settingsFrom({ NAMESPACE: NS, POD_SELECTOR: "a", NODE_SELECTOR: "b", INTERVAL_SECONDS: "0.5" }).problems).to.deep.equal([
            'INTERVAL_SECONDS must be a whole number of seconds, at least 1 (got "0.5")',
        ]);
    });
});

/** A port nothing listens on now. */
function freePort(): Promise<number> {
    return new Promise((resolve) => {
        const server = net.createServer().listen(0, "127.0.0.1", () => {
            const port = (server.address() as net.AddressInfo).port;
            server.close(() => resolve(port));
        });
    });
}

/** The settings the Deployment gives the annotator, with the API server's address: a fake's, and the token the fake wants. */
function annotatorEnv(api: FakeKubeApi, healthPort: number): Record<string, string> {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "token"), "s3cret\n");
    return { KUBE_API_URL: api.url, KUBE_TOKEN_FILE: path.join(dir, "token"), NAMESPACE: NS, POD_SELECTOR: DEPLOYMENT_LABEL, NODE_SELECTOR: "karpenter.sh/nodepool=notify-karpenter", INTERVAL_SECONDS: "1", HEALTH_PORT: String(healthPort) };
}
const annotatorNodes = [node("ip-10-0-1-1", T0), node("ip-10-0-1-2", T0 + 20 * MIN), node("stable-1", T0 - 9000 * MIN, "")];
/** `GET /healthz` of the annotator on `port`: the status and the text. */
async function healthAt(port: number) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    return [res.status, (await res.text()).trim()];
}

describe("scale-down order: the annotator's run against a fake Kubernetes API (in-process)", () => {
    let api: FakeKubeApi | undefined;
    afterEach(async () => {
        await api?.stop();
        api = undefined;
    });

    /**
     * Runs the annotator's run against a fake API holding `opts`: after each pass, at its sleep, `afterPass` gets the
     * pass's number, its health port and `stop` (SIGTERM, in the pod). Its exit code and log lines.
     */
    async function annotate(opts: FakeKubeApiOptions & { pods: any[] }, env: Record<string, string>, afterPass: (pass: number, port: number, stop: () => void) => Promise<void> | void) {
        const clock = new FakeClock(T0);
        const healthPort = await freePort();
        const fake = await new FakeKubeApi(clock, { nodes: annotatorNodes, token: "s3cret", ...opts }).start();
        api = fake;
        const output: string[] = [];
        let passes = 0;
        const stop = stopper((seconds: number, done: () => void) => {
            const pass = ++passes;
            void clock
                .sleep(seconds * 1000)
                .then(() => afterPass(pass, healthPort, () => stop.request()))
                .then(done);
            return () => {};
        });
        const code: number = await annotator.run({ env: { ...annotatorEnv(fake, healthPort), ...env }, write: (line: string) => output.push(line), now: () => clock.now(), stop });
        return { code, output, api: fake, stop };
    }
    const failures = (output: string[], msg: string) => output.filter((l) => l.includes(msg)).map((l) => JSON.parse(l));

    it("logs a refused list with the API's message and keeps trying", async () => {
        let health: unknown[] = [];
        const { code, output } = await annotate({ pods: [pod("email-1", "ip-10-0-1-1")], listStatus: 403 }, {}, async (pass, port, stop) => {
            if (pass < 2) return;
            // Not ready, so the replicas-unavailable alarm sees it.
            health = await healthAt(port);
            stop();
        });
        expect(failures(output, "pass failed")[0]).to.deep.include({ level: "error", error: "GET /api/v1/nodes: HTTP 403 cannot list nodes", failedPasses: 1 });
        // Still running after two failed passes, until stopped.
        expect(output.map((l) => JSON.parse(l).msg)).to.deep.equal(["started", "pass failed", "pass failed", "stopped"]);
        expect(health).to.deep.equal([503, "no pass has succeeded yet"]);
        expect(code).to.equal(0);
    });

    it("logs refused patches (and a pod deleted meanwhile) and is not ready while they are refused", async () => {
        let health: unknown[] = [];
        const gone = pod("email-2", "ip-10-0-1-2");
        const { code, output } = await annotate(
            {
                pods: [pod("email-1", "ip-10-0-1-1"), gone],
                patchStatus: 403,
                // Scaled down between the list and its patch: 404, nothing to order, and no failure.
                beforePodPatch: (namespace, name) => name === gone.metadata.name && api!.remove("pods", gone),
            },
            {},
            async (pass, port, stop) => {
                health = await healthAt(port);
                stop();
            },
        );
        expect(api!.requests.filter((r) => r.startsWith("PATCH"))).to.have.length(2);
        expect(failures(output, "annotated pods")[0]).to.deep.include({
            level: "error",
            patched: 0,
            gone: 1,
            failed: ["email-1: HTTP 403 admission webhook denied the request"],
            // A failed pass: after 20 in a row the container exits and its restarts show.
            failedPasses: 1,
        });
        expect(health).to.deep.equal([503, "no pass has succeeded yet"]);
        expect(code).to.equal(0);
    });

    for (const [interval, staleSeconds] of [
        [30, 90],
        [5, 60],
    ]) {
        it(`is ready while its last good pass is at most three intervals old, at least 60 s (${staleSeconds} s every ${interval} s), then not, naming how long ago`, async () => {
            let failing = false;
            const health: Record<number, unknown[]> = {};
            const { code } = await annotate(
                {
                    pods: [pod("email-1", "ip-10-0-1-1")],
                    // The first pass succeeds, every later one fails (a proxy's page instead of the node list).
                    fault: (method, path) => (failing && path === "/api/v1/nodes" ? { kind: "garbage" } : undefined),
                },
                { INTERVAL_SECONDS: String(interval) },
                async (pass, port, stop) => {
                    failing = true;
                    // After pass n the clock is n intervals past the good pass.
                    health[pass * interval] = await healthAt(port);
                    if (pass * interval > staleSeconds) stop();
                },
            );
            expect(code).to.equal(0);
            expect(health[interval]).to.deep.equal([200, "ok"]);
            expect(health[staleSeconds]).to.deep.equal([200, "ok"]);
            expect(health[staleSeconds + interval]).to.deep.equal([503, `the last pass succeeded ${staleSeconds + interval} s ago`]);
        });
    }

    it("exits 1 after 20 failed passes in a row, so that the pod's restarts show the fault", async () => {
        const { code, output } = await annotate({ pods: [], listStatus: 403 }, {}, () => {});
        const lines = output.map((l) => JSON.parse(l));
        expect(lines.map((l) => l.msg)).to.deep.equal(["started", ...Array(20).fill("pass failed"), "exiting"]);
        expect(lines[lines.length - 1]).to.deep.include({ level: "error", failedPasses: 20 });
        expect(code).to.equal(1);
    });

    it("exits 1 when its health port is taken, once the pass under way ends: the readiness probe could not tell whether it orders pods", async () => {
        const taken = net.createServer();
        await new Promise<void>((resolve) => taken.listen(0, resolve));
        try {
            const { code, output, stop, api } = await annotate({ pods: [] }, { HEALTH_PORT: String((taken.address() as net.AddressInfo).port) }, () => {});
            expect(code).to.equal(1);
            // The passes end too, before the run returns: the one under way lists its nodes and pods, and nothing goes on
            // asking the API server. It logs no "stopped" (healthFailed).
            expect(stop.requested).to.equal(true);
            expect(api.requests).to.deep.equal(["GET /api/v1/nodes", `GET /api/v1/namespaces/${NS}/pods`]);

            const lines = output.map((l) => JSON.parse(l));
            expect(lines.map((l) => l.msg)).to.deep.equal(["started", "health port"]);
            expect(lines[1].error).to.match(/EADDRINUSE/);
        } finally {
            await new Promise((resolve) => taken.close(resolve));
        }
    });

    it("reads every page of a long list", async () => {
        const pods = ["a", "b", "c", "d", "e"].map((n) => pod(`email-${n}`, "ip-10-0-1-1"));
        const { code, api } = await annotate({ pods, pageSize: 2 }, {}, (pass, port, stop) => stop());
        expect(api.requests.filter((r) => r.startsWith("PATCH"))).to.have.length(5);
        for (const p of pods) expect(api.pod(NS, p.metadata.name).metadata.annotations).to.deep.equal({ [DELETION_COST_ANNOTATION]: annotator.deletionCost(iso(T0)) });
        expect(code).to.equal(0);
    });

    it("fails the pass, without hanging or exiting, when the connection is cut mid-answer", async () => {
        const cut = await new CutMidAnswer("NodeList").start();
        try {
            const { code, output } = await annotate({ pods: [] }, { KUBE_API_URL: cut.url }, (pass, port, stop) => {
                if (pass === 2) stop();
            });
            expect(failures(output, "pass failed")).to.have.length(2);
            expect(failures(output, "pass failed")[0]).to.deep.include({ error: "GET /api/v1/nodes: the connection closed mid-answer", failedPasses: 1 });
            expect(code).to.equal(0);
        } finally {
            await cut.stop();
        }
    });
});

describe("scale-down order: the annotator as a process (node deletionCostAnnotator.js, as its Deployment runs it)", () => {
    let api: FakeKubeApi;
    let child: ChildProcess | undefined;

    let healthPort = 0;
    const health = () => healthAt(healthPort);

    async function start(opts: { pods: any[] }, env: Record<string, string> = {}) {
        healthPort = await freePort();
        api = await new FakeKubeApi(new FakeClock(), { nodes: annotatorNodes, pods: opts.pods, token: "s3cret" }).start();
        const output: string[] = [];
        child = spawn(process.execPath, [SCRIPT], { env: { PATH: process.env.PATH, ...annotatorEnv(api, healthPort), ...env } });
        child.stdout!.on("data", (d) => output.push(...String(d).trim().split("\n")));
        return output;
    }
    const until = async (what: () => boolean) => {
        for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 25));
        expect(what(), "timed out").to.equal(true);
    };
    const stop = () =>
        new Promise<number | null>((resolve) => {
            child!.on("exit", (code) => resolve(code));
            child!.kill("SIGTERM");
        });

    afterEach(async () => {
        if (child && child.exitCode === null) child.kill("SIGKILL");
        child = undefined;
        await api?.stop();
    });

    it("annotates each running burst pod once with its node's age, leaves headroom, pending and other pods alone, and stops on SIGTERM", async () => {
        const output = await start({
            pods: [
                pod("email-1", "ip-10-0-1-1"),
                pod("email-2", "ip-10-0-1-2"),
                pod("headroom-1", "ip-10-0-1-2", { deployment: "" }),
                pod("pending-1", undefined),
                pod("elsewhere", "ip-10-0-1-1", { namespace: "other" }),
            ],
        });
        await until(() => api.requests.filter((r) => r.startsWith("PATCH")).length === 2 && api.requests.filter((r) => r.includes("/pods")).length >= 4);
        expect(api.pod(NS, "email-1").metadata.annotations).to.deep.equal({ [DELETION_COST_ANNOTATION]: annotator.deletionCost(iso(T0)) });
        expect(api.pod(NS, "email-2").metadata.annotations).to.deep.equal({ [DELETION_COST_ANNOTATION]: annotator.deletionCost(iso(T0 + 20 * MIN)) });
        for (const [ns, name] of [[NS, "headroom-1"], [NS, "pending-1"], ["other", "elsewhere"]]) expect(api.pod(ns, name).metadata.annotations, name).to.equal(undefined);
        // A second pass finds nothing stale and patches nothing.
        expect(api.requests.filter((r) => r.startsWith("PATCH"))).to.deep.equal([`PATCH /api/v1/namespaces/${NS}/pods/email-1`, `PATCH /api/v1/namespaces/${NS}/pods/email-2`]);
        expect(await health()).to.deep.equal([200, "ok"]);
        expect(await stop()).to.equal(0);
        const logged = output.map((l) => JSON.parse(l));
        expect(logged.map((l) => l.msg)).to.deep.equal(["started", "annotated pods", "stopped"]);
        expect(logged[1]).to.deep.include({ level: "info", patched: 2, gone: 0, failed: [] });
    });

    it("refuses missing settings in one line and exits 2", async () => {
        const output = await start({ pods: [] }, { NODE_SELECTOR: "" });
        const code = await new Promise((resolve) => child!.on("exit", resolve));
        expect(code).to.equal(2);
        expect(output.map((l) => JSON.parse(l))).to.deep.equal([{ time: JSON.parse(output[0]).time, level: "error", msg: "bad settings", problems: ["NODE_SELECTOR must be set"] }]);
    });
});

describe("scale-down order: what the stacks deploy (components/burstScaleDownOrder.ts)", () => {
    for (const stack of STACKS) {
        it(`${stack}: one annotator on a stable node, allowed to list nodes and to change one annotation of pods in ${NS} only`, async () => {
            const r = await buildStack(stack);
            const deployment = r.get("kubernetes:apps/v1:Deployment", `${NAME}-annotator`);
            const spec = deployment.inputs.spec.template.spec;
            expect(deployment.inputs.metadata).to.deep.equal({ name: NAME, namespace: "karpenter" });
            expect(spec.nodeSelector).to.deep.equal({ "eks.amazonaws.com/capacityType": "ON_DEMAND" });
            expect(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).to.deep.equal([{ matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] }]);
            expect(spec.serviceAccountName).to.equal(NAME);
            expect(spec.containers[0].env).to.deep.equal([
                { name: "NAMESPACE", value: NS },
                { name: "POD_SELECTOR", value: DEPLOYMENT_LABEL },
                { name: "NODE_SELECTOR", value: "karpenter.sh/nodepool=notify-karpenter" },
                { name: "INTERVAL_SECONDS", value: "15" },
                { name: "HEALTH_PORT", value: "8080" },
            ]);
            // Ready only while passes succeed: the replicas-unavailable alarm reads it.
            expect(spec.containers[0].readinessProbe).to.deep.equal({ httpGet: { path: "/healthz", port: "health" }, periodSeconds: 15, failureThreshold: 2 });
            expect(spec.containers[0].ports).to.deep.equal([{ name: "health", containerPort: 8080 }]);
            expect(spec.containers[0].command).to.deep.equal(["node", "/app/deletionCostAnnotator.js"]);
            expect(spec.containers[0].securityContext).to.deep.equal({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
            expectScriptConfigMap(r.get("kubernetes:core/v1:ConfigMap", `${NAME}-script`).inputs.data, "deletionCostAnnotator.js");

            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", `${NAME}-read-nodes`).inputs.rules).to.deep.equal([{ apiGroups: [""], resources: ["nodes"], verbs: ["list"] }]);
            const role = r.get("kubernetes:rbac.authorization.k8s.io/v1:Role", `${NAME}-annotate-pods`).inputs;
            expect([role.metadata.namespace, role.rules]).to.deep.equal([NS, [{ apiGroups: [""], resources: ["pods"], verbs: ["list", "patch"] }]]);
            const binding = r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`).inputs.spec;
            expect(binding).to.deep.equal({
                policyName: `${NAME}-annotation-only`,
                validationActions: ["Deny"],
                matchResources: { namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [NS] }] } },
            });
            // The account never holds `patch pods` before the policy that limits it is bound, nor runs before.
            const urn = (type: string, name: string) => r.get(type, name).urn;
            const guard = urn("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`);
            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", `${NAME}-annotate-pods`).dependencies).to.include(guard);
            expect(deployment.dependencies).to.include.members([guard, urn("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", `${NAME}-annotate-pods`)]);
        });
    }

    it("plans the annotator's objects whole: its account, its pod, and bindings to exactly its own roles", async () => {
        const r = await buildStack("production");
        const inputs = (type: string, name: string) => {
            const { apiVersion, kind, ...rest } = r.get(type, name).inputs;
            return rest;
        };
        expect(inputs("kubernetes:core/v1:ServiceAccount", `${NAME}-account`)).to.deep.equal({ metadata: { name: NAME, namespace: "karpenter" } });
        const subjects = [{ kind: "ServiceAccount", name: NAME, namespace: "karpenter" }];
        expect(inputs("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-read-nodes`)).to.deep.equal({
            metadata: { name: `${NAME}-read-nodes` },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${NAME}-read-nodes` },
            subjects,
        });
        expect(inputs("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", `${NAME}-annotate-pods`)).to.deep.equal({
            metadata: { name: NAME, namespace: NS },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAME },
            subjects,
        });
        // The policy the API server gets is the one the CEL cases below run, for this account.
        expect(inputs("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", `${NAME}-admission-policy`)).to.deep.equal({
            metadata: { name: `${NAME}-annotation-only` },
            spec: annotationOnlyPolicySpec(USER),
        });
        const { spec } = inputs("kubernetes:apps/v1:Deployment", `${NAME}-annotator`);
        expect([spec.replicas, spec.selector, spec.template.metadata]).to.deep.equal([1, { matchLabels: { app: NAME } }, { labels: { app: NAME } }]);
        // Restricted pod security: non-root as Node's image user, no privilege, read-only root.
        expect(spec.template.spec.securityContext).to.deep.equal({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
        const container = spec.template.spec.containers[0];
        expect(container.image).to.equal("public.ecr.aws/docker/library/node:24.18.0-alpine3.23");
        expect(container.resources).to.deep.equal({ requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } });
        expect(container.volumeMounts).to.deep.equal([{ name: "script", mountPath: "/app", readOnly: true }]);
        expect(spec.template.spec.volumes).to.deep.equal([{ name: "script", configMap: { name: NAME } }]);
    });

    it("is left out, with its alarm, without placement.burst.scaleDownOrder; refuses a bad image, interval or namespace naming the key", async () => {
        const placement = rawConfig("staging").placement as any;
        const burst = placement.burst;
        const without = await buildStack("staging", { placement: { burst: { ...burst, scaleDownOrder: undefined } } });
        expect(without.byType("kubernetes:apps/v1:Deployment").map((d) => d.inputs.metadata.name)).to.deep.equal(["celery-headroom"]);
        expect(without.byType("aws:cloudwatch/metricAlarm:MetricAlarm").map((a) => a.inputs.name).filter((n: string) => n.includes("scale-down-order"))).to.deep.equal([]);
        const error = await configErrorOf("staging", { "notify-karpenter:placement": { ...placement, burst: { ...burst, scaleDownOrder: { image: "node", intervalSeconds: 0 } } } });
        expect(error).to.include("notify-karpenter:placement.burst.scaleDownOrder.image must be a container image with a tag or digest");
        expect(error).to.include('notify-karpenter:placement.burst.scaleDownOrder.intervalSeconds must be an integer from 1 to 300 (got 0)');
        // The annotator must not run among the pods it may patch.
        const controller = rawConfig("staging").controller as any;
        expect(await configErrorOf("staging", { "notify-karpenter:controller": { ...controller, namespace: NS } })).to.include(
            `notify-karpenter:placement.burst.scaleDownOrder needs controller.namespace to differ from placement.namespace (${NS})`,
        );
    });
});

describe("scale-down order: the admission policy's CEL", () => {
    const spec = annotationOnlyPolicySpec(serviceAccountUser("karpenter", NAME));
    const before = { metadata: { name: "email-1", labels: { app: "celery", [DEPLOYMENT_LABEL]: "notify-celery-email-send-burst" }, annotations: { "kubectl.kubernetes.io/restartedAt": "x" }, ownerReferences: [{ kind: "ReplicaSet", name: "rs" }] }, spec: { containers: [{ name: "celery", image: "notify/celery:1" }] } };
    const withCost = (o: any, cost: string) => ({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, [DELETION_COST_ANNOTATION]: cost } } });

    /** The policy's verdict on the annotator changing `before` into `after`: the failed messages (none: admitted). */
    function admit(after: any, old: any = before, username = USER): string[] {
        const request = { userInfo: { username } };
        if (!spec.matchConditions.every((c) => evaluate(c.expression, { request }) === true)) return [];
        return spec.validations.filter((v) => evaluate(v.expression, { object: after, oldObject: old }) !== true).map((v) => v.message);
    }
    const refused = [`${USER} may change only the ${DELETION_COST_ANNOTATION} annotation of a pod`];
    const badCost = [`${USER} may set ${DELETION_COST_ANNOTATION} only to an integer above -134217728, which Karpenter still counts`];
    const api = { metadata: { name: "api-1", labels: { app: "api" } }, spec: { containers: [{ name: "api", image: "notify/api:1" }] } };

    const cases: [string, any, any, string[]][] = [
        ["admits adding the cost", withCost(before, "-100"), before, []],
        ["admits changing the cost", withCost(before, "-200"), withCost(before, "-100"), []],
        ["admits the cost on a pod without annotations", withCost({ ...before, metadata: { name: "p", labels: before.metadata.labels } }, "-1"), { ...before, metadata: { name: "p", labels: before.metadata.labels } }, []],
        ["refuses a new image", { ...withCost(before, "-1"), spec: { containers: [{ name: "celery", image: "evil:1" }] } }, before, refused],
        ["refuses a changed label (it would take the pod from its ReplicaSet)", { ...before, metadata: { ...before.metadata, labels: { ...before.metadata.labels, app: "other" } } }, before, refused],
        ["refuses a removed label set", { ...before, metadata: { ...before.metadata, labels: undefined } }, before, [...refused, `${USER} may annotate only burst pods (label ${DEPLOYMENT_LABEL})`]],
        ["refuses another annotation changed", { ...before, metadata: { ...before.metadata, annotations: { "kubectl.kubernetes.io/restartedAt": "y" } } }, before, refused],
        ["refuses another annotation removed", withCost({ ...before, metadata: { ...before.metadata, annotations: {} } }, "-1"), before, refused],
        ["refuses a finalizer", { ...before, metadata: { ...before.metadata, finalizers: ["x/y"] } }, before, refused],
        ["refuses dropped owners", { ...before, metadata: { ...before.metadata, ownerReferences: [] } }, before, refused],
        ["refuses a cost on a pod that is not a burst pod (the API's, in the same namespace)", withCost(api, "-100"), api, [`${USER} may annotate only burst pods (label ${DEPLOYMENT_LABEL})`]],
        // Karpenter v1.14.1 would count the pod as nothing and take its node for empty.
        ["refuses a cost of -2^27", withCost(before, "-134217728"), before, badCost],
        ["admits a cost just above -2^27", withCost(before, "-134217727"), before, []],
        ["refuses a cost too long to be an int32", withCost(before, "-99999999999"), before, badCost],
        ["refuses a cost that is not an integer", withCost(before, "-1e3"), before, badCost],
        ["refuses a cost with a plus sign or a leading zero (the API server refuses them too)", withCost(before, "+5"), before, badCost],
    ];
    for (const [what, after, old, expected] of cases) it(what, () => expect(admit(JSON.parse(JSON.stringify(after)), old)).to.deep.equal(expected));

    it("does not apply to anyone else (kubectl, controllers)", () => {
        expect(admit({ ...before, spec: { containers: [] } }, before, "system:serviceaccount:kube-system:replicaset-controller")).to.deep.equal([]);
    });
});
