import { createRequire } from "node:module";
import { evaluate } from "@marcbachmann/cel-js";
import { expect } from "chai";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import * as path from "path";
import { expiresInSendingHours } from "../components/disruptionBudgets.ts";
import { NODEPOOL_LABEL, ownPoolOnlyPolicySpec, recycleWindow, recyclerUser } from "../components/nodeRecycler.ts";
import { FakeKubeApi, type FakeKubeApiOptions, FakeClock, iso } from "./fakeKubeApi.ts";
import { STACKS, buildStack, rawConfig } from "./helpers.ts";
import { tempDir, expectScriptConfigMap } from "./opsHelpers.ts";
const require = createRequire(import.meta.url);

// The script runs in the cluster as plain JavaScript; its functions are tested here as they are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const recycler = require("../components/inCluster/recycleNodeClaims.js");
const SCRIPT = path.join(import.meta.dirname, "..", "components", "inCluster", "recycleNodeClaims.js");

const POOL = "notify-karpenter";
const NAME = "node-recycler";
const USER = `system:serviceaccount:karpenter:${NAME}`;
const MIN = 60_000;
const EASTERN = { sendingStart: "08:00", sendingEnd: "18:00", timeZone: "America/Toronto" };
const SETTINGS = { nodePool: POOL, maxAgeDays: 7, stuckMinutes: 30, drainSeconds: 3600, pollSeconds: 10, ...EASTERN };

/** A NodeClaim of the pool, `ageMinutes` old at `now`, Initialized unless told, with its node's name. */
function nodeClaim(name: string, ageMinutes: number, o: { initialized?: boolean; pool?: string; annotations?: Record<string, string>; now?: number } = {}) {
    return {
        apiVersion: "karpenter.sh/v1",
        kind: "NodeClaim",
        metadata: { name, uid: `uid-${name}`, creationTimestamp: iso((o.now ?? Date.now()) - ageMinutes * MIN), labels: { [NODEPOOL_LABEL]: o.pool ?? POOL }, ...(o.annotations ? { annotations: o.annotations } : {}) },
        status: { nodeName: `ip-${name}`, conditions: [{ type: "Initialized", status: o.initialized === false ? "Unknown" : "True" }] },
    };
}

/** The node of NodeClaim `claim`, Ready (or not) since `sinceMinutes` before `now`. */
function node(claim: string, o: { ready?: "True" | "False" | "Unknown"; sinceMinutes?: number; pool?: string; annotations?: Record<string, string>; now?: number } = {}) {
    return {
        metadata: { name: `ip-${claim}`, labels: { [NODEPOOL_LABEL]: o.pool ?? POOL }, ...(o.annotations ? { annotations: o.annotations } : {}) },
        status: { conditions: [{ type: "Ready", status: o.ready ?? "True", lastTransitionTime: iso((o.now ?? Date.now()) - (o.sinceMinutes ?? 60) * MIN) }] },
    };
}

describe("node recycler: what it deletes (components/recycleNodeClaims.js)", () => {
    const NOW = Date.UTC(2026, 6, 1, 4, 30);

    it("reads sending hours as components/disruptionBudgets.ts does, at every minute of the days clocks change and of a winter and a summer day", () => {
        const h = { start: "08:00", end: "18:00", timeZone: "America/Toronto" };
        for (const day of ["2026-01-15", "2026-03-07", "2026-03-08", "2026-03-09", "2026-07-01", "2026-10-31", "2026-11-01", "2026-11-02"]) {
            const midnight = Date.parse(`${day}T00:00:00Z`);
            for (let m = 0; m < 1440; m++) {
                const at = midnight + m * MIN;
                expect(recycler.inSendingHours(at, SETTINGS), new Date(at).toISOString()).to.equal(expiresInSendingHours(new Date(at), 0, h));
            }
        }
        // 12:30 UTC is 08:30 EDT in July, 07:30 EST in January.
        expect(recycler.inSendingHours(Date.UTC(2026, 6, 1, 12, 30), SETTINGS)).to.equal(true);
        expect(recycler.inSendingHours(Date.UTC(2026, 0, 15, 12, 30), SETTINGS)).to.equal(false);
        // Hours across midnight.
        expect(recycler.inSendingHours(Date.UTC(2026, 0, 15, 2, 0), { ...SETTINGS, sendingStart: "22:00", sendingEnd: "06:00", timeZone: "UTC" })).to.equal(true);
    });

    it("starts no deletion whose drain (terminationGracePeriod) could reach sending hours, in EDT and EST", () => {
        // EDT: sending hours begin at 12:00 UTC; a 1 h drain may start until 11:00 UTC.
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 6, 1, 11, 0), 3600, SETTINGS)).to.equal(Date.UTC(2026, 6, 1, 12, 0));
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 6, 1, 10, 59, 59), 3600, SETTINGS)).to.equal(undefined);
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 6, 1, 11, 0, 30), 3600, SETTINGS)).to.equal(Date.UTC(2026, 6, 1, 12, 0));
        // EST: an hour later.
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 0, 15, 11, 30), 3600, SETTINGS)).to.equal(undefined);
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 0, 15, 12, 30), 3600, SETTINGS)).to.equal(Date.UTC(2026, 0, 15, 13, 0));
        // Inside them: now.
        expect(recycler.sendingHoursWithin(Date.UTC(2026, 0, 15, 15, 0), 0, SETTINGS)).to.equal(Date.UTC(2026, 0, 15, 15, 0));
    });

    it("orders stuck before NotReady before old (oldest first), and keeps young, healthy and do-not-disrupt nodes from the age rule only", () => {
        const o = { now: NOW };
        const claims = [
            nodeClaim("old-8d", 8 * 1440, o),
            nodeClaim("old-9d", 9 * 1440, o),
            nodeClaim("young", 60, o),
            nodeClaim("not-ready", 120, o),
            nodeClaim("stuck", 31, { ...o, initialized: false }),
            nodeClaim("old-kept", 10 * 1440, { ...o, annotations: { "karpenter.sh/do-not-disrupt": "true" } }),
            nodeClaim("old-node-kept", 10 * 1440, o),
            nodeClaim("stuck-kept-anyway", 40, { ...o, initialized: false, annotations: { "karpenter.sh/do-not-disrupt": "true" } }),
            nodeClaim("not-ready-briefly", 120, o),
        ];
        const nodes = [
            node("old-8d", o),
            node("old-9d", o),
            node("young", o),
            node("not-ready", { ...o, ready: "Unknown", sinceMinutes: 30 }),
            node("old-node-kept", { ...o, annotations: { "karpenter.sh/do-not-disrupt": "true" } }),
            node("not-ready-briefly", { ...o, ready: "False", sinceMinutes: 29 }),
        ];
        const plan = recycler.planFor(claims, nodes, SETTINGS, NOW);
        expect(plan.busy).to.equal(undefined);
        expect(plan.candidates.map((c: any) => [c.name, c.reason])).to.deep.equal([
            ["stuck-kept-anyway", "not initialized 40 minutes after its creation"],
            ["stuck", "not initialized 31 minutes after its creation"],
            ["not-ready", "node ip-not-ready Ready=Unknown for 30 minutes"],
            ["old-9d", "older than 7 days (created 2026-06-22T04:30:00.000Z)"],
            ["old-8d", "older than 7 days (created 2026-06-23T04:30:00.000Z)"],
        ]);
        // What the delete's preconditions need.
        expect(plan.candidates[0]).to.deep.include({ uid: "uid-stuck-kept-anyway", node: "ip-stuck-kept-anyway" });
    });

    it("waits while a NodeClaim of the pool is being deleted or still launching: one at a time", () => {
        const o = { now: NOW };
        const deleting = { ...nodeClaim("draining", 9 * 1440, o), metadata: { ...nodeClaim("draining", 9 * 1440, o).metadata, deletionTimestamp: iso(NOW) } };
        expect(recycler.planFor([deleting, nodeClaim("old", 8 * 1440, o)], [], SETTINGS, NOW)).to.deep.include({ busy: "nodeclaim draining is being deleted" });
        expect(recycler.planFor([nodeClaim("new", 2, { ...o, initialized: false }), nodeClaim("old", 8 * 1440, o)], [], SETTINGS, NOW)).to.deep.include({ busy: "nodeclaim new is launching" });
        // A NodeClaim being deleted is never a candidate.
        expect(recycler.planFor([deleting], [], SETTINGS, NOW).candidates).to.deep.equal([]);
    });

    it("names every missing or bad setting", () => {
        expect(recycler.settingsFrom({}).problems).to.deep.equal([
            "NODE_POOL must be set",
            "MAX_AGE_DAYS must be a whole number, at least 1 (got undefined)",
            "STUCK_MINUTES must be a whole number, at least 1 (got undefined)",
            "SENDING_START must be set",
            "SENDING_END must be set",
            "TIME_ZONE must be set",
            "DRAIN_SECONDS must be a whole number, at least 0 (got undefined)",
        ]);
        const env = { NODE_POOL: POOL, MAX_AGE_DAYS: "7", STUCK_MINUTES: "30", SENDING_START: "8:00", SENDING_END: "18:00", TIME_ZONE: "Eastern", DRAIN_SECONDS: "3600", POLL_SECONDS: "0" };
        expect(recycler.settingsFrom(env).problems).to.deep.equal([
            'SENDING_START must be a local time such as 08:00 (got "8:00")',
            'TIME_ZONE must be an IANA time zone such as America/Toronto (got "Eastern")',
            'POLL_SECONDS must be a number of seconds above 0, at most 300 (got "0")',
        ]);
    });
});

/** "HH:MM" of UTC minutes from now (wrapped to the day). */
const utcClockIn = (minutes: number) => {
    const d = new Date(Date.now() + minutes * MIN);
    return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
};

describe("node recycler: the script as a process against a fake Kubernetes API", () => {
    let api: FakeKubeApi;
    let child: ChildProcess | undefined;

    /** Runs the script with sending hours (UTC) 3 to 4 hours from now unless `env` says otherwise; its log lines. */
    async function start(opts: FakeKubeApiOptions, env: Record<string, string> = {}) {
        const dir = tempDir();
        fs.writeFileSync(path.join(dir, "token"), "s3cret\n");
        api = await new FakeKubeApi(new FakeClock(), { token: "s3cret", ...opts }).start();
        const output: string[] = [];
        child = spawn(process.execPath, [SCRIPT], {
            env: {
                PATH: process.env.PATH,
                KUBE_API_URL: api.url,
                KUBE_TOKEN_FILE: path.join(dir, "token"),
                NODE_POOL: POOL,
                MAX_AGE_DAYS: "7",
                STUCK_MINUTES: "30",
                SENDING_START: utcClockIn(180),
                SENDING_END: utcClockIn(240),
                TIME_ZONE: "UTC",
                DRAIN_SECONDS: "3600",
                POLL_SECONDS: "0.02",
                ...env,
            },
        });
        child.stdout!.on("data", (d) => output.push(...String(d).trim().split("\n")));
        return output;
    }
    const exit = () => new Promise<number | null>((resolve) => (child!.exitCode !== null ? resolve(child!.exitCode) : child!.on("exit", resolve)));
    const until = async (what: () => boolean) => {
        for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 25));
        expect(what(), "timed out").to.equal(true);
    };
    const messages = (output: string[]) => output.map((l) => JSON.parse(l).msg);
    const deletes = () => api.requests.filter((r) => r.startsWith("DELETE"));

    afterEach(async () => {
        if (child && child.exitCode === null) child.kill("SIGKILL");
        child = undefined;
        await api?.stop();
    });

    it("deletes the pool's stuck, NotReady and old NodeClaims one at a time, each once gone, and nothing else", async () => {
        let overlapping = 0;
        const old = nodeClaim("old", 8 * 1440);
        const output = await start({
            nodeclaims: [
                nodeClaim("healthy", 60),
                old,
                nodeClaim("not-ready", 120),
                nodeClaim("stuck", 45, { initialized: false }),
                // Another pool's: not even listed (the label selector), and the admission policy would refuse it.
                nodeClaim("other-old", 30 * 1440, { pool: "other" }),
            ],
            nodes: [node("healthy"), node("old"), node("not-ready", { ready: "False", sinceMinutes: 40 }), node("other-old", { pool: "other" })],
            // Karpenter drains it, then the NodeClaim and its node go; no second deletion may start meanwhile.
            onNodeClaimDelete: () => {
                if ([...["healthy", "old", "not-ready", "stuck"]].filter((n) => api.nodeClaim(n)?.metadata.deletionTimestamp).length > 1) overlapping++;
                return { goneAfterMs: 60 };
            },
        });
        expect(await exit()).to.equal(0);
        expect(deletes()).to.deep.equal(["stuck", "not-ready", "old"].map((n) => `DELETE /apis/karpenter.sh/v1/nodeclaims/${n}`));
        expect(overlapping).to.equal(0);
        for (const n of ["stuck", "not-ready", "old"]) expect(api.nodeClaim(n), n).to.equal(undefined);
        expect(api.nodeClaim("healthy")).to.not.equal(undefined);
        expect(api.nodeClaim("other-old")).to.not.equal(undefined);
        // Every list asks for the pool's label only.
        expect(api.requests.filter((r) => r.startsWith("GET")).every((r) => r === "GET /apis/karpenter.sh/v1/nodeclaims" || r === "GET /api/v1/nodes")).to.equal(true);
        const logged = output.map((l) => JSON.parse(l));
        expect(logged.filter((l) => l.msg === "deleted nodeclaim").map((l) => [l.nodeClaim, l.node, l.reason])).to.deep.equal([
            ["stuck", "ip-stuck", "not initialized 45 minutes after its creation"],
            ["not-ready", "ip-not-ready", "node ip-not-ready Ready=False for 40 minutes"],
            ["old", "ip-old", `older than 7 days (created ${old.metadata.creationTimestamp})`],
        ]);
        expect(logged[logged.length - 1]).to.deep.include({ msg: "done", deleted: ["stuck", "not-ready", "old"].map((n) => ({ name: n, uid: `uid-${n}` })) });
    });

    it("deletes only the NodeClaim it looked at: one changed since the list (409 on its preconditions) is looked at again", async () => {
        let changed = false;
        const output = await start({
            nodeclaims: [nodeClaim("old", 8 * 1440)],
            nodes: [node("old")],
            // Karpenter updates it between the recycler's list and its delete: a new resourceVersion.
            beforeNodeClaimDelete: (name) => {
                if (!changed) api.put("nodeclaims", { ...api.nodeClaim(name), metadata: { ...api.nodeClaim(name).metadata, annotations: { touched: "yes" } } });
                changed = true;
            },
            onNodeClaimDelete: () => ({ goneAfterMs: 20 }),
        });
        expect(await exit()).to.equal(0);
        expect(deletes()).to.deep.equal(["old", "old"].map((n) => `DELETE /apis/karpenter.sh/v1/nodeclaims/${n}`));
        expect(messages(output)).to.deep.equal(["started", "changed since listed: looking again", "deleted nodeclaim", "nodeclaim gone", "done"]);
    });

    it("waits for the replacement Karpenter launches before the next deletion", async () => {
        const output = await start({
            nodeclaims: [nodeClaim("old-1", 9 * 1440), nodeClaim("old-2", 8 * 1440)],
            nodes: [node("old-1"), node("old-2")],
            onNodeClaimDelete: (nc) => ({ goneAfterMs: 20, add: [nodeClaim(`for-${nc.metadata.name}`, 0, { initialized: false })] }),
        });
        await until(() => output.some((l) => l.includes('"msg":"waiting"')));
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/old-1"]);
        expect(JSON.parse(output.find((l) => l.includes('"msg":"waiting"'))!)).to.deep.include({ because: "nodeclaim for-old-1 is launching" });
        // The replacement initializes; then, and only then, the next one goes.
        api.put("nodeclaims", nodeClaim("for-old-1", 1));
        await until(() => deletes().length === 2);
        api.put("nodeclaims", nodeClaim("for-old-2", 1));
        expect(await exit()).to.equal(0);
        expect(deletes()).to.deep.equal(["old-1", "old-2"].map((n) => `DELETE /apis/karpenter.sh/v1/nodeclaims/${n}`));
        expect(messages(output).slice(-1)).to.deep.equal(["done"]);
    });

    it("stops, deleting nothing more, when a node launched during the run does not initialize", async () => {
        const output = await start({
            nodeclaims: [nodeClaim("old-1", 9 * 1440), nodeClaim("old-2", 8 * 1440)],
            nodes: [node("old-1"), node("old-2")],
            // A replacement that is already STUCK_MINUTES old and not initialized (nidhogg down, say).
            onNodeClaimDelete: () => ({ goneAfterMs: 20, add: [nodeClaim("replacement", 31, { initialized: false })] }),
        });
        expect(await exit()).to.equal(1);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/old-1"]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ level: "error", msg: "stopping: a nodeclaim launched during this run is not initialized", nodeClaim: "replacement" });
    });

    it("refuses to act inside sending hours: no list, no delete", async () => {
        const output = await start({ nodeclaims: [nodeClaim("old", 8 * 1440)], nodes: [node("old")] }, { SENDING_START: utcClockIn(-60), SENDING_END: utcClockIn(60) });
        expect(await exit()).to.equal(0);
        expect(api.requests).to.deep.equal([]);
        expect(JSON.parse(output[1])).to.deep.include({ msg: "inside sending hours: deleting nothing", deleted: [] });
    });

    it("starts no deletion when a drain of DRAIN_SECONDS could reach sending hours", async () => {
        const output = await start({ nodeclaims: [nodeClaim("old", 8 * 1440)], nodes: [node("old")] }, { SENDING_START: utcClockIn(30), SENDING_END: utcClockIn(90) });
        expect(await exit()).to.equal(0);
        expect(deletes()).to.deep.equal([]);
        expect(JSON.parse(output[1])).to.deep.include({ msg: "stopping: a node deleted now could still drain when sending hours begin", drainSeconds: 3600 });
    });

    it("logs a refused delete (RBAC, the admission policy) with the API's message and exits 1", async () => {
        const output = await start({ nodeclaims: [nodeClaim("old", 8 * 1440)], nodes: [node("old")], deleteStatus: 403 });
        expect(await exit()).to.equal(1);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ level: "error", msg: "delete refused", nodeClaim: "old", status: 403, error: 'nodeclaims.karpenter.sh "old" is forbidden' });
    });

    it("reads every page of a long list", async () => {
        const claims = ["a", "b", "c", "d", "e"].map((n) => nodeClaim(n, 60));
        const output = await start({ nodeclaims: [...claims, nodeClaim("old", 8 * 1440)], nodes: [], pageSize: 2, onNodeClaimDelete: () => ({ goneAfterMs: 20 }) });
        expect(await exit()).to.equal(0);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/old"]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "done", nodeClaims: 5 });
    });

    it("stops on SIGTERM while a deleted node drains, and deletes nothing more", async () => {
        // Karpenter never finishes this one.
        const output = await start({ nodeclaims: [nodeClaim("old-1", 9 * 1440), nodeClaim("old-2", 8 * 1440)], nodes: [], onNodeClaimDelete: () => ({}) });
        await until(() => output.some((l) => l.includes("deleted nodeclaim")));
        const t = Date.now();
        child!.kill("SIGTERM");
        expect(await exit()).to.equal(0);
        expect(Date.now() - t).to.be.below(2000);
        expect(deletes()).to.deep.equal(["DELETE /apis/karpenter.sh/v1/nodeclaims/old-1"]);
        expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "stopped", deleted: [{ name: "old-1", uid: "uid-old-1" }] });
    });

    it("fails the run, without hanging, when the connection is cut mid-answer", async () => {
        const cut = http.createServer((req, res) => {
            res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "1000" });
            res.write('{"kind":"NodeClaimList","items":[');
            setTimeout(() => res.destroy(), 20);
        });
        await new Promise<void>((resolve) => cut.listen(0, "127.0.0.1", resolve));
        try {
            const output = await start({}, { KUBE_API_URL: `http://127.0.0.1:${(cut.address() as net.AddressInfo).port}` });
            expect(await exit()).to.equal(1);
            expect(JSON.parse(output[output.length - 1])).to.deep.include({ msg: "run failed", error: "GET /apis/karpenter.sh/v1/nodeclaims: the connection closed mid-answer" });
        } finally {
            cut.closeAllConnections();
            await new Promise((resolve) => cut.close(resolve));
        }
    });

    it("refuses missing settings in one line and exits 2", async () => {
        const output = await start({}, { TIME_ZONE: "" });
        expect(await exit()).to.equal(2);
        expect(output.map((l) => JSON.parse(l))).to.deep.equal([{ time: JSON.parse(output[0]).time, level: "error", msg: "bad settings", problems: ["TIME_ZONE must be set"] }]);
    });
});

describe("node recycler: what the stacks deploy (components/nodeRecycler.ts)", () => {
    for (const stack of STACKS) {
        it(`${stack}: a nightly CronJob on a stable node, in UTC inside the budgets' window, allowed to list and delete NodeClaims and list nodes, guarded to its pool`, async () => {
            const r = await buildStack(stack);
            const cronJob = r.get("kubernetes:batch/v1:CronJob", `${NAME}-cronjob`).inputs;
            expect(cronJob.metadata).to.deep.equal({ name: NAME, namespace: "karpenter" });
            const { jobTemplate, ...schedule } = cronJob.spec;
            expect(schedule).to.deep.equal({ schedule: "30 4 * * *", timeZone: "Etc/UTC", concurrencyPolicy: "Forbid", startingDeadlineSeconds: 3600, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 });
            // 04:30 UTC to 12:00 UTC (08:00 EDT), the nearest sending hours of the year: the run is killed by then at the latest.
            expect([jobTemplate.spec.backoffLimit, jobTemplate.spec.activeDeadlineSeconds]).to.deep.equal([2, 450 * 60]);
            const pod = jobTemplate.spec.template.spec;
            expect(pod.nodeSelector).to.deep.equal({ "eks.amazonaws.com/capacityType": "ON_DEMAND" });
            expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).to.deep.equal([{ matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] }]);
            expect([pod.serviceAccountName, pod.restartPolicy]).to.deep.equal([NAME, "Never"]);
            expect(pod.securityContext).to.deep.equal({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
            const container = pod.containers[0];
            expect(container.image).to.equal("public.ecr.aws/docker/library/node:24.18.0-alpine3.23");
            expect(container.command).to.deep.equal(["node", "/app/recycleNodeClaims.js"]);
            expect(container.env).to.deep.equal([
                { name: "NODE_POOL", value: POOL },
                { name: "MAX_AGE_DAYS", value: "7" },
                { name: "STUCK_MINUTES", value: "30" },
                { name: "SENDING_START", value: "08:00" },
                { name: "SENDING_END", value: "18:00" },
                { name: "TIME_ZONE", value: "America/Toronto" },
                // The NodePool's terminationGracePeriod (1h).
                { name: "DRAIN_SECONDS", value: "3600" },
                { name: "POLL_SECONDS", value: "10" },
            ]);
            expect(container.securityContext).to.deep.equal({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
            expect(container.resources).to.deep.equal({ requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } });
            expectScriptConfigMap(r.get("kubernetes:core/v1:ConfigMap", `${NAME}-script`).inputs.data, "recycleNodeClaims.js");

            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", `${NAME}-role`).inputs.rules).to.deep.equal([
                { apiGroups: ["karpenter.sh"], resources: ["nodeclaims"], verbs: ["list", "delete"] },
                { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
            ]);
            const { apiVersion, kind, ...binding } = r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`).inputs;
            expect(binding).to.deep.equal({ metadata: { name: NAME }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: NAME }, subjects: [{ kind: "ServiceAccount", name: NAME, namespace: "karpenter" }] });
            expect(r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", `${NAME}-admission-policy`).inputs.spec).to.deep.equal(ownPoolOnlyPolicySpec(USER, POOL));
            expect(r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`).inputs.spec).to.deep.equal({ policyName: `${NAME}-own-pool-only`, validationActions: ["Deny"] });
            // The account never holds `delete nodeclaims` before the policy that limits it is bound, nor runs before.
            const urn = (type: string, name: string) => r.get(type, name).urn;
            const guard = urn("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", `${NAME}-admission-binding`);
            const grant = urn("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`);
            expect(r.get("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", `${NAME}-binding`).dependencies).to.include(guard);
            expect(r.get("kubernetes:batch/v1:CronJob", `${NAME}-cronjob`).dependencies).to.include.members([guard, grant]);
        });
    }

    it("is left out without nodePool.recycle", async () => {
        const r = await buildStack("staging", { nodePool: { ...rawConfig("staging").nodePool as object, recycle: undefined } });
        expect(r.byType("kubernetes:batch/v1:CronJob")).to.deep.equal([]);
        expect(r.byType("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy").map((p) => p.inputs.metadata.name)).to.not.include(`${NAME}-own-pool-only`);
    });

    it("takes the run's deadline from the schedule: the shortest time from a run's start to sending hours", () => {
        const h = { start: "08:00", end: "18:00", timeZone: "America/Toronto" };
        const budgets = [{ nodes: "10%" }, { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" }];
        // 23:00 UTC is 18:00 EST, the end of sending hours; EDT's next start, 12:00 UTC, is 13 h later.
        expect(recycleWindow("0 23 * * *", h, budgets, 60)).to.deep.equal({ shortestMinutes: 780, longestGapMinutes: 1440 });
        // 11:00 UTC is 07:00 EDT: a 1 h drain just fits.
        expect(recycleWindow("0 11 * * *", h, budgets, 60)).to.deep.equal({ shortestMinutes: 60, longestGapMinutes: 1440 });
        // Weekends only: a node stuck on Monday waits until Saturday.
        expect(recycleWindow("30 4 * * sat,sun", h, budgets, 60)).to.deep.include({ longestGapMinutes: 6 * 1440 });
    });
});

describe("node recycler: the admission policy's CEL", () => {
    const spec = ownPoolOnlyPolicySpec(recyclerUser("karpenter", NAME), POOL);
    /** The policy's verdict on the recycler deleting `old`: the failed messages (none: admitted). */
    function admit(old: any, username = USER): string[] {
        if (!spec.matchConditions.every((c) => evaluate(c.expression, { request: { userInfo: { username } } }) === true)) return [];
        return spec.validations.filter((v) => evaluate(v.expression, { object: null, oldObject: old }) !== true).map((v) => v.message);
    }
    const refused = [`${USER} may delete only NodeClaims of the NodePool ${POOL} (label karpenter.sh/nodepool=${POOL})`];

    it("admits deleting a NodeClaim of the pool", () => expect(admit(nodeClaim("a", 1))).to.deep.equal([]));
    it("refuses a NodeClaim of another pool", () => expect(admit(nodeClaim("a", 1, { pool: "gpu" }))).to.deep.equal(refused));
    it("refuses a NodeClaim without labels, or without the pool's", () => {
        expect(admit({ metadata: { name: "a" } })).to.deep.equal(refused);
        expect(admit({ metadata: { name: "a", labels: { app: "x" } } })).to.deep.equal(refused);
    });
    it("does not apply to anyone else (Karpenter, kubectl)", () => expect(admit(nodeClaim("a", 1, { pool: "gpu" }), "system:serviceaccount:karpenter:karpenter")).to.deep.equal([]));
    it("matches DELETE of nodeclaims.karpenter.sh only, and fails closed", () => {
        expect(spec.matchConstraints).to.deep.equal({ resourceRules: [{ apiGroups: ["karpenter.sh"], apiVersions: ["v1"], operations: ["DELETE"], resources: ["nodeclaims"] }] });
        expect(spec.failurePolicy).to.equal("Fail");
    });
});
