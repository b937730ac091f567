// Runs in the cluster as a CronJob, on Node's official image, with no dependencies: NodeRecycler mounts this file
// from a ConfigMap. Each run replaces, one at a time, the NodeClaims of one NodePool that are old or stuck. It never
// acts inside a protected window (PROTECTED_WINDOWS: sending hours, GC Notify's nightly batch), nor when a drain it
// starts could reach one. Citations are kubernetes-sigs/karpenter v1.14.1.
//
// Old, older than MAX_AGE_DAYS (with expireAfter Never nothing else bounds a node's age, and the scale-down order keeps
// the oldest nodes on purpose): the run never deletes it. It marks the NodeClaim drifted and Karpenter replaces it as
// it replaces any drifted node, the new node first:
// - a NodeClaim whose karpenter.sh/nodepool-hash annotation differs from its NodePool's while both
//   karpenter.sh/nodepool-hash-version annotations match is drifted, NodePoolDrifted
//   (pkg/controllers/nodeclaim/disruption/drift.go:153-168; the condition is set at :76-82, on every change to the
//   NodeClaim: controller.go:114-120); the NodePool hash controller rewrites a NodeClaim's hash only when its hash
//   *version* differs (pkg/controllers/nodepool/hash/controller.go:67-71, 97-125), so the mark stays. The run patches
//   that one annotation (a merge patch with a resourceVersion precondition) to "recycle-<date>-<the hash it had>";
//   NodeClaims without both annotations cannot be marked and are left alone;
// - the disruption controller takes a Drifted NodeClaim as a candidate once its node is Initialized, not deleting, not
//   nominated for a pending pod and not annotated karpenter.sh/do-not-disrupt (pkg/controllers/disruption/
//   drift.go:57-60, types.go:165-175, state/statenode.go:212-237), when the budgets allow Drifted (drift.go:76-82,
//   helpers.go:262-313), one candidate per command (drift.go:98-104). Drift is eventual disruption: a pod whose
//   PodDisruptionBudget allows no eviction does not keep the candidate (types.go:48-51, 188-197); Karpenter launches
//   no room for it (helpers.go:78-94) and the drain deletes it at terminationGracePeriod minus its grace
//   (node/termination/terminator/terminator.go:140-177);
// - it launches the replacement, waits for it to be Initialized, and only then deletes the old NodeClaim
//   (disruption/queue.go:183-251). A command whose replacement does not initialize within COMMAND_SECONDS (its
//   retry duration: 10 minutes, queue.go:66, 87-93, 189-195) is abandoned and the old node kept (:153-174).
// The run waits until the NodeClaim is gone. If Karpenter has not begun deleting it MARK_SECONDS after the mark, the
// run puts the annotation back (the condition clears: nodeclaim/disruption/drift.go:68-75) and goes on to the next.
//
// Stuck: Karpenter's drift cannot replace these, and nothing runs on them, so the run deletes them:
// - not Initialized STUCK_MINUTES after creation: a startup taint never lifted (nidhogg down, a waited-for agent that
//   never starts) or a node that never went Ready. Karpenter deletes a NodeClaim that does not *register* within 15
//   minutes (pkg/controllers/nodeclaim/lifecycle/liveness.go:51-53) but has no timeout for initialization
//   (initialization.go:56-102), and never takes an uninitialized node as a disruption candidate (statenode.go:219-221).
//   Its startup taints kept every burst pod off it;
// - whose node has been NotReady (Ready False or Unknown) for STUCK_MINUTES: such a node counts as disrupting in every
//   budget (disruption/helpers.go:289-293), so in a pool of 10 nodes or fewer it uses up the 10 % budget its own drift
//   would need. The node lifecycle controller's NoExecute taint evicted its pods after 300 s (the tolerations Kubernetes'
//   DefaultTolerationSeconds admission plugin gives every pod without its own) and their ReplicaSets replaced them.
//   With Ready=False the kubelet saw that and stopped them through their preStop hooks. With Ready=Unknown the API
//   cannot tell a dead node from one cut off from it: on a node that still runs, its burst workers may still be
//   taking SQS messages, and deleting the NodeClaim ends the instance under them (Karpenter skips pods stuck
//   terminating, pkg/utils/pod/scheduling.go:154). After STUCK_MINUTES this run takes that risk, as Karpenter's own
//   node repair does after the same 30 minutes (off by default in v1.14.1): a node cut off that long is already
//   replaced, and would otherwise hold the pool's budget for good.
// Deleting a NodeClaim drains its node as Karpenter drains any node, under the NodeClaim's terminationGracePeriod
// (pkg/controllers/nodeclaim/lifecycle/controller.go:289-304, node/termination/controller.go:130-156).
//
// One at a time: the run acts only while none of the pool's NodeClaims is being deleted or still launching, waits for
// each to be gone, acts on each NodeClaim of its first list at most once, never on one launched during the run, and
// stops if one launched during the run does not initialize. It deletes only when DRAIN_SECONDS from now stays outside
// every protected window, and marks only when MARK_SECONDS + COMMAND_SECONDS + DRAIN_SECONDS does: the last moment a
// mark can start a drain, then the drain.
"use strict";
const { REQUEST_SECONDS, apiClient, listAll, logger, message, stopOnSigterm, stopper } = require("./inClusterApi.js");

const NODEPOOL_LABEL = "karpenter.sh/nodepool";
/** The NodePool hash a NodeClaim was made from, and its version (pkg/apis/v1/labels.go:52-53). */
const HASH = "karpenter.sh/nodepool-hash";
const HASH_VERSION = "karpenter.sh/nodepool-hash-version";
/** Karpenter's annotation that keeps a node from voluntary disruption (pkg/apis/v1/labels.go:50; honoured on nodes by pkg/controllers/state/statenode.go:229-230). */
const DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt";
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
/** After SIGTERM, the most the step under way may take before the process exits anyway (the pod's grace is 30 s). */
const STOP_SECONDS = 20;
/** How much longer than DRAIN_SECONDS a deleted NodeClaim may take to go (instance termination, finalizers). */
const GONE_MARGIN_SECONDS = 300;
/**
 * How long a withdrawal refused for a change since the look (409) waits before it looks again, once stopped or after
 * a failed run: Karpenter writes NodeClaim status, at most every 10 s from pod events (v1.14.1
 * pkg/controllers/nodeclaim/podevents/controller.go:41-44), and each write is a new resourceVersion.
 */
const CONFLICT_RETRY_SECONDS = 1;
/**
 * Once stopped, how long refused withdrawals go on before the run gives up, says the mark is still there, and exits
 * 1: the last look and patch may take REQUEST_SECONDS more, within STOP_SECONDS, so the exit is the run's own and not
 * the silent forced one.
 */
const STOPPED_WITHDRAW_SECONDS = STOP_SECONDS - REQUEST_SECONDS;
/** After a failed run, how many times a withdrawal refused for a change since the look (409) is made. */
const FAILED_RUN_WITHDRAW_TRIES = 3;
const MINUTE = 60_000;
const CLOCK = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
/** The recycler's mark: "recycle-2026-07-01-<the hash the NodeClaim had>", so that the hash can be put back. */
const MARK = /^recycle-[0-9]{4}-[0-9]{2}-[0-9]{2}-(.*)$/;

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
    const settings = {
        nodePool: need("NODE_POOL"),
        maxAgeDays: whole("MAX_AGE_DAYS", 1),
        stuckMinutes: whole("STUCK_MINUTES", 1),
        windows: windowsFrom(need("PROTECTED_WINDOWS"), problems),
        drainSeconds: whole("DRAIN_SECONDS", 0),
        markSeconds: whole("MARK_SECONDS", 1),
        commandSeconds: whole("COMMAND_SECONDS", 0),
        pollSeconds: Number(env.POLL_SECONDS || "10"),
    };
    if (!(settings.pollSeconds > 0 && settings.pollSeconds <= 300)) problems.push(`POLL_SECONDS must be a number of seconds above 0, at most 300 (got ${JSON.stringify(env.POLL_SECONDS)})`);
    return { settings, problems };
}

/** PROTECTED_WINDOWS: a JSON list of { name, start, end, timeZone }, local times "HH:MM", end exclusive. */
function windowsFrom(raw, problems) {
    if (!raw) return [];
    let list;
    try {
        list = JSON.parse(raw);
    } catch {
        list = undefined;
    }
    const bad = (w) => {
        if (!w || typeof w !== "object" || typeof w.name !== "string" || !w.name) return "a name";
        if (!CLOCK.test(w.start) || !CLOCK.test(w.end)) return "start and end as local times such as 08:00";
        try {
            new Intl.DateTimeFormat("en-US", { timeZone: w.timeZone });
            return typeof w.timeZone === "string" ? undefined : "an IANA time zone";
        } catch {
            return "an IANA time zone such as America/Toronto";
        }
    };
    if (!Array.isArray(list) || list.length === 0) {
        problems.push(`PROTECTED_WINDOWS must be a JSON list of { name, start, end, timeZone } (got ${JSON.stringify(raw)})`);
        return [];
    }
    list.forEach((w, i) => {
        const why = bad(w);
        if (why) problems.push(`PROTECTED_WINDOWS[${i}] needs ${why} (got ${JSON.stringify(w)})`);
    });
    return list;
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

/** Whether instant `ms` is inside window `w`: [start, end) local, across midnight when end is not after start. */
function inWindow(ms, w) {
    const m = localMinutes(ms, w.timeZone);
    const start = clockMinutes(w.start);
    const end = clockMinutes(w.end);
    return end > start ? m >= start && m < end : m >= start || m < end;
}

/**
 * The first instant of [from, from + seconds] inside one of the windows, and its name; undefined when none. Windows
 * begin and end on whole local minutes, and zone offsets are whole minutes, so `from` and every minute boundary after
 * it decide.
 */
function protectedWithin(from, seconds, windows) {
    const hit = (t) => windows.find((w) => inWindow(t, w));
    let w = hit(from);
    if (w) return { at: from, name: w.name };
    for (let t = Math.floor(from / MINUTE) * MINUTE + MINUTE; t <= from + seconds * 1000; t += MINUTE) if ((w = hit(t))) return { at: t, name: w.name };
    return undefined;
}

const condition = (o, type) => ((o && o.status && o.status.conditions) || []).find((c) => c.type === type);
const isInitialized = (nc) => (condition(nc, "Initialized") || {}).status === "True";
const ageMs = (o, now) => now - Date.parse(o.metadata.creationTimestamp);
const annotations = (o) => (o && o.metadata.annotations) || {};
const doNotDisrupt = (o) => annotations(o)[DO_NOT_DISRUPT] === "true";

/**
 * What to do with a NodeClaim, or undefined: its rank (stuck first, then NotReady, then old), `delete` or `mark`, and
 * why. A NodeClaim or node annotated karpenter.sh/do-not-disrupt is kept from the age rule only: a stuck node runs
 * nothing. One without Karpenter's hash annotations cannot be marked, so the age rule leaves it too.
 */
function reasonFor(nc, node, s, now) {
    const stuckMs = s.stuckMinutes * MINUTE;
    if (!isInitialized(nc) && ageMs(nc, now) >= stuckMs) return { rank: 0, action: "delete", why: `not initialized ${Math.floor(ageMs(nc, now) / MINUTE)} minutes after its creation` };
    const ready = node && condition(node, "Ready");
    if (ready && ready.status !== "True" && now - Date.parse(ready.lastTransitionTime) >= stuckMs) {
        return { rank: 1, action: "delete", why: `node ${node.metadata.name} Ready=${ready.status} for ${Math.floor((now - Date.parse(ready.lastTransitionTime)) / MINUTE)} minutes` };
    }
    const markable = annotations(nc)[HASH] !== undefined && annotations(nc)[HASH_VERSION] !== undefined;
    if (ageMs(nc, now) >= s.maxAgeDays * 1440 * MINUTE && markable && !doNotDisrupt(nc) && !doNotDisrupt(node)) {
        return { rank: 2, action: "mark", why: `older than ${s.maxAgeDays} days (created ${nc.metadata.creationTimestamp})` };
    }
    return undefined;
}

/**
 * What one look at the pool decides: `busy` names a NodeClaim being deleted or still launching (not initialized,
 * younger than STUCK_MINUTES), which the run waits for; `candidates` are the NodeClaims to act on, in order: stuck,
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
        .map(({ nc, reason }) => ({
            name: nc.metadata.name,
            uid: nc.metadata.uid,
            resourceVersion: nc.metadata.resourceVersion,
            node: (nc.status && nc.status.nodeName) || undefined,
            hash: annotations(nc)[HASH],
            action: reason.action,
            reason: reason.why,
        }));
    return { busy, candidates };
}

/** The mark for a NodeClaim whose hash is `hash` (a mark left by an earlier run keeps the hash it carries). */
function markFor(hash, now) {
    const earlier = MARK.exec(hash);
    return `recycle-${new Date(now).toISOString().slice(0, 10)}-${earlier ? earlier[1] : hash}`;
}

/** The hash a marked NodeClaim had before the mark. */
const unmarked = (value) => MARK.exec(value)[1];

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

/**
 * Sets the NodeClaim's hash annotation to `value`, and nothing else: the resourceVersion makes the API server refuse
 * (409) if it changed since the list, and the admission policy refuses any other change and other pools' NodeClaims.
 */
function setHash(api, name, resourceVersion, value) {
    return api("PATCH", `${NODECLAIMS}/${encodeURIComponent(name)}`, { metadata: { resourceVersion, annotations: { [HASH]: value } } }, "application/merge-patch+json");
}

/**
 * One run: 0 when it ends normally (done, or a protected window near), 1 on a failure, 2 on bad settings. `env` holds
 * the settings and the API server's address, `write` takes each log line, `now` is the clock, and `stop` (SIGTERM, in
 * the pod) ends the run at its next step; its `sleep` is how the run waits.
 */
async function run({ env, write, now, stop }) {
    const log = logger(write, now);
    const { settings: s, problems } = settingsFrom(env);
    if (problems.length > 0) {
        log("error", "bad settings", { problems });
        return 2;
    }
    const api = apiClient(env);
    const windows = s.windows.map((w) => `${w.name} ${w.start}-${w.end} ${w.timeZone}`);
    log("info", "started", s);
    let first;
    const done = [];
    const notReplaced = [];
    const found = (list, c) => list.find((nc) => nc.metadata.uid === c.uid);

    /** Deletes a stuck NodeClaim and waits until it is gone: "next", "again" (changed since the list), or an exit code. */
    async function deleteAndWait(c) {
        const res = await deleteNodeClaim(api, c);
        if (res.status === 404) return "next";
        if (res.status === 409) {
            log("info", "changed since listed: looking again", { nodeClaim: c.name });
            await stop.sleep(s.pollSeconds);
            return "again";
        }
        if (res.status !== 200 && res.status !== 202) {
            log("error", "delete refused", { nodeClaim: c.name, status: res.status, error: message(res), done });
            return 1;
        }
        done.push({ name: c.name, uid: c.uid, action: "deleted" });
        log("info", "deleted nodeclaim", { nodeClaim: c.name, node: c.node, reason: c.reason });
        // Drained under terminationGracePeriod, then the instance goes: wait for it before the next one.
        const until = now() + (s.drainSeconds + GONE_MARGIN_SECONDS) * 1000;
        for (;;) {
            await stop.sleep(s.pollSeconds);
            if (stop.requested) return "next";
            const { nodeClaims } = await lookAtPool(api, s);
            if (!found(nodeClaims, c)) {
                log("info", "nodeclaim gone", { nodeClaim: c.name });
                return "next";
            }
            if (now() > until) {
                log("error", "stopping: the deleted nodeclaim is still there", { nodeClaim: c.name, waitedSeconds: s.drainSeconds + GONE_MARGIN_SECONDS, done });
                return 1;
            }
        }
    }

    /**
     * Marks an old NodeClaim drifted and waits until Karpenter has replaced it (gone); puts the hash back if Karpenter
     * has not begun deleting it MARK_SECONDS later, or the run is stopped. "next", "again", or an exit code.
     */
    async function markAndWait(c) {
        const mark = markFor(c.hash, now());
        const res = await setHash(api, c.name, c.resourceVersion, mark);
        if (res.status === 404) return "next";
        if (res.status === 409) {
            log("info", "changed since listed: looking again", { nodeClaim: c.name });
            await stop.sleep(s.pollSeconds);
            return "again";
        }
        if (res.status !== 200) {
            log("error", "mark refused", { nodeClaim: c.name, status: res.status, error: message(res), done });
            return 1;
        }
        done.push({ name: c.name, uid: c.uid, action: "marked" });
        log("info", "marked nodeclaim drifted", { nodeClaim: c.name, node: c.node, reason: c.reason, [HASH]: mark });
        try {
            return await waitForReplacement(c, mark);
        } catch (err) {
            // The run fails (an API error): the mark must not outlive it, or Karpenter could act on it at any hour.
            await withdrawAfterFailure(c, mark).catch(() => undefined);
            throw err;
        }
    }

    /**
     * Puts the hash back if the mark is still there and Karpenter has not begun deleting the NodeClaim; a refusal for a
     * change since the look (409) is looked at again, a few times.
     */
    async function withdrawAfterFailure(c, mark) {
        for (let tries = 1; ; tries++) {
            const { nodeClaims } = await lookAtPool(api, s);
            const current = found(nodeClaims, c);
            if (!current || current.metadata.deletionTimestamp || annotations(current)[HASH] !== mark) return;
            const back = await setHash(api, c.name, current.metadata.resourceVersion, unmarked(mark));
            if (back.status === 409 && tries < FAILED_RUN_WITHDRAW_TRIES) {
                await stop.pause(CONFLICT_RETRY_SECONDS);
                continue;
            }
            log(back.status === 200 ? "info" : "error", back.status === 200 ? "mark withdrawn" : "the mark could not be withdrawn", { nodeClaim: c.name, status: back.status });
            return;
        }
    }

    /** Until the marked NodeClaim is gone, or its mark withdrawn: "next", or an exit code. */
    async function waitForReplacement(c, mark) {
        const withdrawAt = now() + s.markSeconds * 1000;
        let deletingUntil;
        /** When the first withdrawal after the stop was refused for a change since the look. */
        let stoppedConflictAt;
        for (;;) {
            await stop.sleep(s.pollSeconds);
            const { nodeClaims } = await lookAtPool(api, s);
            const current = found(nodeClaims, c);
            if (!current) {
                log("info", "nodeclaim replaced", { nodeClaim: c.name });
                return "next";
            }
            if (current.metadata.deletionTimestamp) {
                // Karpenter's replacement is Initialized and the old node drains: wait for it, as for a deletion.
                if (deletingUntil === undefined) {
                    deletingUntil = now() + (s.drainSeconds + GONE_MARGIN_SECONDS) * 1000;
                    log("info", "karpenter is deleting it", { nodeClaim: c.name });
                }
                if (stop.requested) return "next";
                if (now() > deletingUntil) {
                    log("error", "stopping: the nodeclaim Karpenter deletes is still there", { nodeClaim: c.name, waitedSeconds: s.drainSeconds + GONE_MARGIN_SECONDS, done });
                    return 1;
                }
                continue;
            }
            if (!stop.requested && now() < withdrawAt) continue;
            // Not taken in time (budgets, a node Karpenter cannot launch, pods it cannot place): the mark goes, so no
            // drain it might still start can reach a protected window.
            const value = annotations(current)[HASH];
            if (value !== mark) {
                log("info", "the mark was replaced: leaving the annotation as it is", { nodeClaim: c.name, [HASH]: value });
                return "next";
            }
            const back = await setHash(api, c.name, current.metadata.resourceVersion, unmarked(mark));
            if (back.status === 409) {
                // Looked at again after pollSeconds (the sleep above); once stopped, that sleep is none, so a second
                // apart: a NodeClaim whose status Karpenter keeps changing is not patched as fast as the API answers.
                if (stop.requested) {
                    stoppedConflictAt ??= now();
                    if (now() - stoppedConflictAt >= STOPPED_WITHDRAW_SECONDS * 1000) {
                        log("error", "stopping: the mark could not be withdrawn", { nodeClaim: c.name, status: 409, error: `changed at each look for ${STOPPED_WITHDRAW_SECONDS} s`, done });
                        return 1;
                    }
                    await stop.pause(CONFLICT_RETRY_SECONDS);
                }
                continue;
            }
            if (back.status === 404) return "next";
            if (back.status !== 200) {
                log("error", "stopping: the mark could not be withdrawn", { nodeClaim: c.name, status: back.status, error: message(back), done });
                return 1;
            }
            if (stop.requested) {
                log("info", "mark withdrawn", { nodeClaim: c.name });
                return "next";
            }
            notReplaced.push({ name: c.name, uid: c.uid });
            log("error", "not replaced in time: mark withdrawn", { nodeClaim: c.name, markSeconds: s.markSeconds });
            return "next";
        }
    }

    try {
        while (!stop.requested) {
            const at = now();
            const inside = protectedWithin(at, 0, s.windows);
            if (inside) {
                log("info", `inside ${inside.name}: doing nothing`, { windows, done });
                return 0;
            }
            const { nodeClaims, nodes } = await lookAtPool(api, s);
            if (!first) first = new Set(nodeClaims.map((nc) => nc.metadata.uid));
            // A node launched during this run (a replacement) that does not initialize: acting on more would only shrink the pool.
            const failed = nodeClaims.find((nc) => !first.has(nc.metadata.uid) && !isInitialized(nc) && ageMs(nc, at) >= s.stuckMinutes * MINUTE);
            if (failed) {
                log("error", "stopping: a nodeclaim launched during this run is not initialized", { nodeClaim: failed.metadata.name, stuckMinutes: s.stuckMinutes, done });
                return 1;
            }
            const plan = planFor(nodeClaims, nodes, s, at);
            const candidates = plan.candidates.filter((c) => first.has(c.uid) && !done.some((d) => d.uid === c.uid));
            if (candidates.length === 0) {
                log(notReplaced.length ? "error" : "info", "done", { nodeClaims: nodeClaims.length, done, notReplaced });
                return 0;
            }
            // One at a time: Karpenter's own deletions and launches (a replacement) first.
            if (plan.busy) {
                log("info", "waiting", { because: plan.busy });
                await stop.sleep(s.pollSeconds);
                continue;
            }
            const c = candidates[0];
            const clearance = c.action === "delete" ? s.drainSeconds : s.markSeconds + s.commandSeconds + s.drainSeconds;
            const clash = protectedWithin(at, clearance, s.windows);
            if (clash) {
                const what = c.action === "delete" ? "deleted" : "marked";
                log("info", `stopping: a node ${what} now could still drain when ${clash.name} begins`, { windows, begin: new Date(clash.at).toISOString(), clearanceSeconds: clearance, done });
                return 0;
            }
            const outcome = c.action === "delete" ? await deleteAndWait(c) : await markAndWait(c);
            if (typeof outcome === "number") return outcome;
        }
    } catch (err) {
        log("error", "run failed", { error: String(err && err.message ? err.message : err), done });
        return 1;
    }
    log("info", "stopped", { done });
    return 0;
}

module.exports = { DO_NOT_DISRUPT, HASH, STOP_SECONDS, inWindow, localMinutes, markFor, planFor, protectedWithin, reasonFor, run, settingsFrom };

if (require.main === module) {
    const stop = stopper();
    stopOnSigterm(stop, STOP_SECONDS);
    run({ env: process.env, write: console.log, now: Date.now, stop }).then((code) => process.exit(code));
}
