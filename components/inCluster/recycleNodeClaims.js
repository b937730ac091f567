// Runs in the cluster as a CronJob, on Node's official image, with no dependencies: NodeRecycler mounts this file
// from a ConfigMap. Each run deletes, one at a time, the NodeClaims of one NodePool that are stuck or old:
//
// - not Initialized STUCK_MINUTES after creation: a startup taint never lifted (nidhogg down, a waited-for agent that
//   never starts) or a node that never went Ready. Karpenter v1.14.1 deletes a NodeClaim that does not *register*
//   within 15 minutes (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/liveness.go:51-53) but has no
//   timeout for initialization (initialization.go:56-102), never consolidates such a node
//   (pkg/controllers/nodeclaim/disruption/consolidation.go:52-58) and keeps counting it as room for pending pods;
// - whose node has been NotReady (Ready False or Unknown) for STUCK_MINUTES: such a node counts as disrupting in every
//   budget (pkg/controllers/disruption/helpers.go:289-293), so in a pool of 10 nodes or fewer it stops even empty
//   nodes from going;
// - older than MAX_AGE_DAYS: with expireAfter Never nothing else bounds a node's age, and the scale-down order keeps
//   the oldest nodes on purpose.
//
// Deleting a NodeClaim drains its node as Karpenter drains any node: the lifecycle controller sets the termination
// time to the deletion plus the NodeClaim's terminationGracePeriod (pkg/controllers/nodeclaim/lifecycle/
// controller.go:289-304) and deletes the Node (:209-231); the node termination controller taints it and evicts its
// pods through the eviction API, so PodDisruptionBudgets hold until that time (pkg/controllers/node/termination/
// controller.go:130-156, terminator/terminator.go:96-117); the provisioner schedules the draining node's pods at once
// (pkg/controllers/provisioning/provisioner.go:375-384), so a replacement launches while the old node drains.
//
// It never acts inside sending hours, and starts a deletion only when DRAIN_SECONDS (the terminationGracePeriod) from
// now stays outside them too. It deletes one NodeClaim at a time, and only while none of the pool is being deleted or
// is still launching; it waits for each deleted NodeClaim to be gone; it deletes each NodeClaim of the run's first
// list at most once, never one launched during the run, and stops if one launched during the run does not initialize.
"use strict";
const { apiClient, listAll, log, message } = require("./inClusterApi.js");

const NODEPOOL_LABEL = "karpenter.sh/nodepool";
/** Karpenter's annotation that keeps a node from voluntary disruption (pkg/apis/v1/labels.go:50; honoured on nodes by pkg/controllers/state/statenode.go:229-230). */
const DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt";
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
/** After SIGTERM, the most the step under way may take before the process exits anyway (the pod's grace is 30 s). */
const STOP_SECONDS = 20;
/** How much longer than DRAIN_SECONDS a deleted NodeClaim may take to go (instance termination, finalizers). */
const GONE_MARGIN_SECONDS = 300;
const MINUTE = 60_000;

/** The settings from the environment the CronJob sets; every problem named, or none. */
function settingsFrom(env) {
    const problems = [];
    const need = (key) => {
        if (!env[key]) problems.push(`${key} must be set`);
        return env[key] || "";
    };
    const whole = (key, min, fallback) => {
        const raw = env[key] === undefined || env[key] === "" ? fallback : env[key];
        const n = Number(raw);
        if (raw === undefined || !/^[0-9]+$/.test(String(raw)) || n < min) problems.push(`${key} must be a whole number, at least ${min} (got ${JSON.stringify(env[key])})`);
        return n;
    };
    const clock = (key) => {
        const v = need(key);
        if (v && !/^([01][0-9]|2[0-3]):[0-5][0-9]$/.test(v)) problems.push(`${key} must be a local time such as 08:00 (got ${JSON.stringify(v)})`);
        return v;
    };
    const settings = {
        nodePool: need("NODE_POOL"),
        maxAgeDays: whole("MAX_AGE_DAYS", 1),
        stuckMinutes: whole("STUCK_MINUTES", 1),
        sendingStart: clock("SENDING_START"),
        sendingEnd: clock("SENDING_END"),
        timeZone: need("TIME_ZONE"),
        drainSeconds: whole("DRAIN_SECONDS", 0),
        pollSeconds: Number(env.POLL_SECONDS || "10"),
    };
    if (settings.timeZone) {
        try {
            new Intl.DateTimeFormat("en-US", { timeZone: settings.timeZone });
        } catch {
            problems.push(`TIME_ZONE must be an IANA time zone such as America/Toronto (got ${JSON.stringify(settings.timeZone)})`);
        }
    }
    if (!(settings.pollSeconds > 0 && settings.pollSeconds <= 300)) problems.push(`POLL_SECONDS must be a number of seconds above 0, at most 300 (got ${JSON.stringify(env.POLL_SECONDS)})`);
    return { settings, problems };
}

const formats = new Map();
/** Minutes since local midnight in `timeZone` at instant `ms` (DST included: Intl knows the zone's rules). */
function localMinutes(ms, timeZone) {
    let format = formats.get(timeZone);
    if (!format) formats.set(timeZone, (format = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", hour: "2-digit", minute: "2-digit" })));
    const parts = format.formatToParts(new Date(ms));
    const get = (t) => Number(parts.find((p) => p.type === t).value);
    return get("hour") * 60 + get("minute");
}

const clockMinutes = (s) => Number(s.slice(0, 2)) * 60 + Number(s.slice(3, 5));

/** Whether instant `ms` is inside sending hours: [start, end) local, across midnight when end is not after start. */
function inSendingHours(ms, s) {
    const m = localMinutes(ms, s.timeZone);
    const start = clockMinutes(s.sendingStart);
    const end = clockMinutes(s.sendingEnd);
    return end > start ? m >= start && m < end : m >= start || m < end;
}

/**
 * The first instant of [from, from + seconds] inside sending hours, or undefined. Sending hours begin and end on whole
 * local minutes, and zone offsets are whole minutes, so `from` and every minute boundary after it decide.
 */
function sendingHoursWithin(from, seconds, s) {
    if (inSendingHours(from, s)) return from;
    for (let t = Math.floor(from / MINUTE) * MINUTE + MINUTE; t <= from + seconds * 1000; t += MINUTE) if (inSendingHours(t, s)) return t;
    return undefined;
}

const condition = (o, type) => ((o && o.status && o.status.conditions) || []).find((c) => c.type === type);
const isInitialized = (nc) => (condition(nc, "Initialized") || {}).status === "True";
const ageMs = (o, now) => now - Date.parse(o.metadata.creationTimestamp);
const doNotDisrupt = (o) => ((o && o.metadata.annotations) || {})[DO_NOT_DISRUPT] === "true";

/**
 * Why a NodeClaim should go, or undefined: the reason's rank (stuck first, then NotReady, then old) and words. A
 * NodeClaim or node annotated karpenter.sh/do-not-disrupt is kept from the age rule only: a stuck node runs nothing.
 */
function reasonFor(nc, node, s, now) {
    const stuckMs = s.stuckMinutes * MINUTE;
    if (!isInitialized(nc) && ageMs(nc, now) >= stuckMs) return { rank: 0, why: `not initialized ${Math.floor(ageMs(nc, now) / MINUTE)} minutes after its creation` };
    const ready = node && condition(node, "Ready");
    if (ready && ready.status !== "True" && now - Date.parse(ready.lastTransitionTime) >= stuckMs) {
        return { rank: 1, why: `node ${node.metadata.name} Ready=${ready.status} for ${Math.floor((now - Date.parse(ready.lastTransitionTime)) / MINUTE)} minutes` };
    }
    if (ageMs(nc, now) >= s.maxAgeDays * 1440 * MINUTE && !doNotDisrupt(nc) && !doNotDisrupt(node)) return { rank: 2, why: `older than ${s.maxAgeDays} days (created ${nc.metadata.creationTimestamp})` };
    return undefined;
}

/**
 * What one look at the pool decides: `busy` names a NodeClaim being deleted or still launching (not initialized,
 * younger than STUCK_MINUTES), which the run waits for; `candidates` are the NodeClaims to delete, in order: stuck,
 * NotReady, then oldest first.
 */
function planFor(nodeClaims, nodes, s, now) {
    const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
    const deleting = nodeClaims.find((nc) => nc.metadata.deletionTimestamp);
    const launching = nodeClaims.find((nc) => !nc.metadata.deletionTimestamp && !isInitialized(nc) && ageMs(nc, now) < s.stuckMinutes * MINUTE);
    const busy = deleting ? `nodeclaim ${deleting.metadata.name} is being deleted` : launching ? `nodeclaim ${launching.metadata.name} is launching` : undefined;
    const candidates = nodeClaims
        .filter((nc) => !nc.metadata.deletionTimestamp)
        .map((nc) => ({ nc, reason: reasonFor(nc, byName.get(nc.status && nc.status.nodeName), s, now) }))
        .filter((c) => c.reason)
        .sort((a, b) => a.reason.rank - b.reason.rank || Date.parse(a.nc.metadata.creationTimestamp) - Date.parse(b.nc.metadata.creationTimestamp))
        .map(({ nc, reason }) => ({ name: nc.metadata.name, uid: nc.metadata.uid, resourceVersion: nc.metadata.resourceVersion, node: (nc.status && nc.status.nodeName) || undefined, reason: reason.why }));
    return { busy, candidates };
}

/** The pool's NodeClaims and nodes (both carry the karpenter.sh/nodepool label). */
async function lookAtPool(api, s) {
    const selector = `labelSelector=${encodeURIComponent(`${NODEPOOL_LABEL}=${s.nodePool}`)}`;
    const nodeClaims = await listAll(api, `${NODECLAIMS}?${selector}`);
    const nodes = await listAll(api, `/api/v1/nodes?${selector}`);
    return { nodeClaims, nodes };
}

/**
 * Deletes that NodeClaim and nothing else: the uid and resourceVersion preconditions make the API server refuse (409)
 * if it was replaced or changed since the list, and the admission policy refuses a NodeClaim of another pool.
 */
function deleteNodeClaim(api, c) {
    return api("DELETE", `${NODECLAIMS}/${encodeURIComponent(c.name)}`, { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: c.uid, resourceVersion: c.resourceVersion } });
}


/** One run: 0 when it ends normally (done, or sending hours near), 1 on a failure, 2 on bad settings. */
async function main(env) {
    const { settings: s, problems } = settingsFrom(env);
    if (problems.length > 0) {
        log("error", "bad settings", { problems });
        return 2;
    }
    const api = apiClient(env);
    let stopping = false;
    let wake = () => {};
    process.on("SIGTERM", () => {
        stopping = true;
        wake();
        setTimeout(() => process.exit(0), STOP_SECONDS * 1000).unref();
    });
    const sleep = (seconds) =>
        new Promise((resolve) => {
            const timer = setTimeout(resolve, seconds * 1000);
            wake = () => {
                clearTimeout(timer);
                resolve();
            };
        });
    const hours = `${s.sendingStart}-${s.sendingEnd} ${s.timeZone}`;
    log("info", "started", s);
    let first;
    const deleted = [];
    try {
        while (!stopping) {
            const now = Date.now();
            const clash = sendingHoursWithin(now, s.drainSeconds, s);
            if (clash !== undefined) {
                if (clash === now) log("info", "inside sending hours: deleting nothing", { sendingHours: hours, deleted });
                else log("info", "stopping: a node deleted now could still drain when sending hours begin", { sendingHours: hours, begin: new Date(clash).toISOString(), drainSeconds: s.drainSeconds, deleted });
                return 0;
            }
            const { nodeClaims, nodes } = await lookAtPool(api, s);
            if (!first) first = new Set(nodeClaims.map((nc) => nc.metadata.uid));
            // A node launched during this run (a replacement) that does not initialize: deleting more would only shrink the pool.
            const failed = nodeClaims.find((nc) => !first.has(nc.metadata.uid) && !isInitialized(nc) && ageMs(nc, now) >= s.stuckMinutes * MINUTE);
            if (failed) {
                log("error", "stopping: a nodeclaim launched during this run is not initialized", { nodeClaim: failed.metadata.name, stuckMinutes: s.stuckMinutes, deleted });
                return 1;
            }
            const plan = planFor(nodeClaims, nodes, s, now);
            const candidates = plan.candidates.filter((c) => first.has(c.uid) && !deleted.some((d) => d.uid === c.uid));
            if (candidates.length === 0) {
                log("info", "done", { nodeClaims: nodeClaims.length, deleted });
                return 0;
            }
            // One at a time: Karpenter's own deletions and launches (a replacement) first.
            if (plan.busy) {
                log("info", "waiting", { because: plan.busy });
                await sleep(s.pollSeconds);
                continue;
            }
            const c = candidates[0];
            const res = await deleteNodeClaim(api, c);
            if (res.status === 404) continue;
            if (res.status === 409) {
                log("info", "changed since listed: looking again", { nodeClaim: c.name });
                continue;
            }
            if (res.status !== 200 && res.status !== 202) {
                log("error", "delete refused", { nodeClaim: c.name, status: res.status, error: message(res), deleted });
                return 1;
            }
            deleted.push({ name: c.name, uid: c.uid });
            log("info", "deleted nodeclaim", { nodeClaim: c.name, node: c.node, reason: c.reason });
            // Drained under terminationGracePeriod, then the instance goes: wait for it before the next one.
            const until = Date.now() + (s.drainSeconds + GONE_MARGIN_SECONDS) * 1000;
            for (;;) {
                await sleep(s.pollSeconds);
                if (stopping) break;
                const { nodeClaims: current } = await lookAtPool(api, s);
                if (!current.some((nc) => nc.metadata.uid === c.uid)) {
                    log("info", "nodeclaim gone", { nodeClaim: c.name });
                    break;
                }
                if (Date.now() > until) {
                    log("error", "stopping: the deleted nodeclaim is still there", { nodeClaim: c.name, waitedSeconds: s.drainSeconds + GONE_MARGIN_SECONDS, deleted });
                    return 1;
                }
            }
        }
    } catch (err) {
        log("error", "run failed", { error: String(err && err.message ? err.message : err), deleted });
        return 1;
    }
    log("info", "stopped", { deleted });
    return 0;
}

module.exports = { DO_NOT_DISRUPT, inSendingHours, localMinutes, planFor, reasonFor, sendingHoursWithin, settingsFrom };

if (require.main === module) main(process.env).then((code) => process.exit(code));
