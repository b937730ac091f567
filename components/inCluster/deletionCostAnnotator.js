// Runs in the cluster, on Node's official image, with no dependencies: BurstScaleDownOrder mounts this file from a
// ConfigMap. It gives every running burst Celery pod on an ephemeral node the pod-deletion-cost of its node's age, so
// when an HPA scales a burst Deployment down, the ReplicaSet controller deletes the pods on the newest nodes first.
// Those nodes empty, and Karpenter removes empty nodes at any hour.
//
// Without it the ReplicaSet controller deletes first the pods of nodes that hold the most of that Deployment
// ("doubled up"), which spreads the survivors over every node of the burst, so no node empties. The deletion cost is
// compared before that rank (kubernetes pkg/controller/controller_utils.go, ActivePodsWithRanks.Less: step 4, "lower
// pod-deletion-cost < higher", before step 5, "doubled up < not doubled up"; feature PodDeletionCost, beta and on by
// default since 1.22). The ReplicaSet documentation calls it best effort: a pod that just started, or a node
// replaced in the burst, can still keep a node.
//
// A node's age never changes, so each pod is patched once in its life: the ReplicaSet documentation asks that the
// annotation not be updated frequently ("based on a metric value").
"use strict";
const http = require("http");
const { apiClient, listAll, logger, message, stopOnSigterm, stopper } = require("./inClusterApi.js");

const ANNOTATION = "controller.kubernetes.io/pod-deletion-cost";
/** Failed passes in a row before the process exits, so the pod's restarts show the fault. */
const MAX_FAILED_PASSES = 20;
/** After SIGTERM, the most the pass under way may take before the process exits anyway (the pod's grace is 30 s). */
const STOP_SECONDS = 20;

/**
 * Older nodes cost more to delete from. Whole minutes since 1970, negated: below 0, the cost of a pod not annotated
 * yet, so a pod that just started is kept over any other. It must stay above -2^27: Karpenter v1.14.1 counts a pod
 * whose deletion cost is about -2^27 or lower as nothing when it decides a node is empty (kubernetes-sigs/karpenter
 * pkg/utils/disruption/disruption.go:59, "1 + cost/2^27", and pkg/controllers/disruption/types.go:136-157), and would
 * remove nodes that still run Celery as empty. Minutes reach -2^27 in the year 2225; seconds would have in 1974. The
 * admission policy refuses any value at or below -2^27 (components/burstScaleDownOrder.ts).
 */
function deletionCost(nodeCreationTimestamp) {
    return String(-Math.floor(Date.parse(nodeCreationTimestamp) / 60000));
}

/** The patches one pass makes: running burst pods on an ephemeral node whose cost is missing or stale. */
function patchesFor(pods, nodes) {
    const created = new Map(nodes.map((n) => [n.metadata.name, n.metadata.creationTimestamp]));
    const patches = [];
    for (const pod of pods) {
        const nodeCreated = created.get(pod.spec && pod.spec.nodeName);
        if (!nodeCreated || pod.metadata.deletionTimestamp) continue;
        const cost = deletionCost(nodeCreated);
        if ((pod.metadata.annotations || {})[ANNOTATION] !== cost) patches.push({ namespace: pod.metadata.namespace, name: pod.metadata.name, cost });
    }
    return patches;
}

/** The settings from the environment the Deployment sets; every problem named, or none. */
function settingsFrom(env) {
    const problems = [];
    const need = (key) => {
        if (!env[key]) problems.push(`${key} must be set`);
        return env[key];
    };
    const settings = {
        namespace: need("NAMESPACE"),
        podSelector: need("POD_SELECTOR"),
        nodeSelector: need("NODE_SELECTOR"),
        intervalSeconds: Number(env.INTERVAL_SECONDS || "15"),
        healthPort: Number(env.HEALTH_PORT || "8080"),
    };
    if (!Number.isInteger(settings.intervalSeconds) || settings.intervalSeconds < 1) problems.push(`INTERVAL_SECONDS must be a whole number of seconds, at least 1 (got ${JSON.stringify(env.INTERVAL_SECONDS)})`);
    if (!Number.isInteger(settings.healthPort) || settings.healthPort < 0 || settings.healthPort > 65535) problems.push(`HEALTH_PORT must be a port number from 0 to 65535 (got ${JSON.stringify(env.HEALTH_PORT)})`);
    return { settings, problems };
}

/** One pass: list the ephemeral nodes and the running burst pods, patch the pods whose cost is missing or stale. */
async function annotateOnce(api, s) {
    const q = encodeURIComponent;
    const nodes = await listAll(api, `/api/v1/nodes?labelSelector=${q(s.nodeSelector)}`);
    const pods = await listAll(api, `/api/v1/namespaces/${q(s.namespace)}/pods?labelSelector=${q(s.podSelector)}&fieldSelector=${q("status.phase=Running")}`);
    const result = { patched: [], gone: 0, failed: [] };
    for (const p of patchesFor(pods, nodes)) {
        const res = await api("PATCH", `/api/v1/namespaces/${q(p.namespace)}/pods/${q(p.name)}`, { metadata: { annotations: { [ANNOTATION]: p.cost } } }, "application/merge-patch+json");
        if (res.status === 200) result.patched.push(p);
        // Deleted since the list: nothing to order.
        else if (res.status === 404) result.gone++;
        else result.failed.push(`${p.name}: HTTP ${res.status} ${message(res)}`);
    }
    return result;
}

/**
 * Ready while passes succeed: /healthz answers 200 when the last successful pass ended within three intervals (at
 * least a minute), else 503. The readiness probe reads it, so "replicas unavailable" means "not ordering pods", which
 * the stack's alarm watches.
 */
function healthServer(state, intervalSeconds, now) {
    const staleMs = Math.max(3 * intervalSeconds, 60) * 1000;
    return http.createServer((req, res) => {
        const age = state.lastSuccess === undefined ? undefined : now() - state.lastSuccess;
        const ok = req.url === "/healthz" && age !== undefined && age <= staleMs;
        res.writeHead(req.url === "/healthz" ? (ok ? 200 : 503) : 404, { "Content-Type": "text/plain" });
        res.end(req.url !== "/healthz" ? "not found\n" : ok ? "ok\n" : age === undefined ? "no pass has succeeded yet\n" : `the last pass succeeded ${Math.round(age / 1000)} s ago\n`);
    });
}


/**
 * Passes every interval until stopped (SIGTERM, in the pod): 0 then, 1 after MAX_FAILED_PASSES passes in a row that
 * failed or when the health port cannot be served, 2 on bad settings. `env` holds the settings and the API server's
 * address, `write` takes each log line, `now` is the clock, and `stop`'s `sleep` is how it waits between passes.
 */
async function run({ env, write, now, stop }) {
    const log = logger(write, now);
    const { settings, problems } = settingsFrom(env);
    if (problems.length > 0) {
        log("error", "bad settings", { problems });
        return 2;
    }
    const api = apiClient(env);
    const state = { lastSuccess: undefined };
    const health = healthServer(state, settings.intervalSeconds, now).listen(settings.healthPort);
    // The port cannot be served: the run ends with 1 once the pass under way ends (the stop ends the passes), so that
    // nothing goes on asking the API server; healthFailed keeps the passes from logging "stopped".
    let healthFailed = false;
    const unhealthy = new Promise((resolve) =>
        health.on("error", (err) => {
            healthFailed = true;
            log("error", "health port", { error: err.message });
            stop.request();
            resolve(1);
        }),
    );
    async function passes() {
        let failedPasses = 0;
        log("info", "started", settings);
        while (!stop.requested) {
            try {
                const r = await annotateOnce(api, settings);
                // A pass whose patches were refused (RBAC, the admission policy) leaves pods unordered: a failed pass.
                failedPasses = r.failed.length === 0 ? 0 : failedPasses + 1;
                if (failedPasses === 0) state.lastSuccess = now();
                if (r.patched.length > 0 || r.failed.length > 0) log(r.failed.length > 0 ? "error" : "info", "annotated pods", { patched: r.patched.length, gone: r.gone, failed: r.failed, ...(failedPasses > 0 ? { failedPasses } : {}) });
            } catch (err) {
                failedPasses++;
                log("error", "pass failed", { error: String(err && err.message ? err.message : err), failedPasses });
            }
            if (failedPasses >= MAX_FAILED_PASSES) {
                log("error", "exiting", { failedPasses });
                return 1;
            }
            await stop.sleep(settings.intervalSeconds);
        }
        if (healthFailed) return 1;
        log("info", "stopped");
        return 0;
    }
    const passing = passes();
    const code = await Promise.race([unhealthy, passing]);
    if (healthFailed) await passing;
    health.close();
    return code;
}

module.exports = { ANNOTATION, deletionCost, patchesFor, run, settingsFrom };

if (require.main === module) {
    const stop = stopper();
    stopOnSigterm(stop, STOP_SECONDS);
    run({ env: process.env, write: console.log, now: Date.now, stop }).then((code) => process.exit(code));
}
