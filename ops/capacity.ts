// The capacity and cost model behind `npm run capacity`: how many burst Celery pods each approved instance type
// holds, how many nodes the peak needs and whether the NodePool limits allow them, how fast a burst ramps up, and
// what the burst capacity costs with Karpenter and spot against a static on-demand group, under the NodePool's
// disruption policy and budgets. Pure functions of config.
import { type DisruptionBudget, type NodeResources, nodeResources, quantityValue } from "../components/models/nodePool.ts";
import { SPAN_FROM, type DailyWindow, forbiddenInSpan, localWindow, windowMinutes, yearDays } from "../components/models/disruptionBudgets.ts";
import { type CapacityConfig, type StackConfig, approvedInstanceTypes, durationSeconds, protectedWindows } from "../stacks/config.ts";
import { markClearanceSeconds, recycleWindow } from "../components/models/recycleWindow.ts";

export interface CapacityInputs {
    instanceTypes: string[];
    kubelet: { kubeReserved?: Record<string, string>; systemReserved?: Record<string, string>; evictionHard?: Record<string, string> };
    /** One burst Celery pod's requests, and all daemonsets' requests on one node. */
    pod: NodeResources;
    daemonsets: NodeResources;
    baselinePods: number;
    peakPods: number;
    headroomPods: number;
    /** Whether the burst pods carry a deletion cost by node age (placement.burst.scaleDownOrder), so scale-down empties the newest nodes. */
    scaleDownOrdered: boolean;
    /** NodePool limits (node capacity counts against them). */
    limits: NodeResources;
    hpa: CapacityConfig["hpaScaleUp"];
    batchIdleSeconds: number;
    batchMaxSeconds: number;
    nodeLaunchSeconds: number;
    /** How long an empty node stays (consolidateAfter); undefined when consolidation is Never. */
    emptyNodeSeconds?: number;
    /** WhenEmpty removes only empty nodes; the other policies also replace or remove underutilized ones. */
    consolidationPolicy: StackConfig["nodePool"]["consolidationPolicy"];
    /** How long a node lives before Karpenter replaces it (expireAfter); undefined for Never. */
    expireAfterSeconds?: number;
    /** The NodePool's disruption budgets: when they forbid Underutilized, nodes kept after a burst wait. */
    budgets: DisruptionBudget[];
    sendingHours: DailyWindow;
    /** GC Notify's nightly batch (nodePool.nightlyBatch): the budgets forbid Underutilized then too. */
    nightlyBatch: DailyWindow;
    /** Local time (sendingHours.timeZone) the day's bursts begin; by default when sending hours begin. */
    burstStart: string;
    burstHoursPerDay: number;
    prices: CapacityConfig["prices"];
    spotDiscount: number;
    /**
     * The node recycler (nodePool.recycle): nodes older than maxAgeDays are replaced, one at a time, at the runs of
     * `schedule` (UTC); `longestGapMinutes` is the most a stuck node waits for a run. Undefined when off.
     */
    recycle?: { maxAgeDays: number; schedule: string; longestGapMinutes: number };
    /**
     * The NodePool's terminationGracePeriod: the longest a replaced node drains. Karpenter deletes a pod its
     * PodDisruptionBudget will not let go at that time less the pod's grace (kubernetes-sigs/karpenter v1.14.1
     * pkg/controllers/node/termination/terminator/terminator.go:140-177), so a budget that allows no eviction (one
     * burst pod under minAvailable 1) holds the node that long, beyond the longest burst grace.
     */
    drainSeconds: number;
}

/** The model's inputs from a stack's config; undefined when the stack has no `capacity` section. */
export function capacityInputs(cfg: StackConfig): CapacityInputs | undefined {
    const c = cfg.capacity;
    const check = cfg.nodePool.capacityCheck;
    // Config validation requires capacityCheck whenever capacity is set.
    if (!c || !check) return undefined;
    const p = cfg.nodePool;
    const resources = (cpu: string, memory: string) => ({ cpu: quantityValue(cpu, "cores"), memoryGiB: quantityValue(memory, "GiB") });
    return {
        instanceTypes: approvedInstanceTypes(p),
        kubelet: { kubeReserved: p.kubeReserved, systemReserved: p.systemReserved, evictionHard: p.evictionHard },
        pod: resources(check.celeryPodCpu, check.celeryPodMemory),
        daemonsets: resources(check.daemonsetCpu, check.daemonsetMemory),
        baselinePods: c.baselineCeleryPods,
        peakPods: check.peakCeleryPods,
        headroomPods: cfg.placement.headroom.pods,
        scaleDownOrdered: cfg.placement.burst.scaleDownOrder !== undefined,
        limits: resources(p.limits.cpu, p.limits.memory),
        hpa: c.hpaScaleUp,
        batchIdleSeconds: durationSeconds(cfg.controller.batchIdleDuration),
        batchMaxSeconds: durationSeconds(cfg.controller.batchMaxDuration),
        nodeLaunchSeconds: c.nodeLaunchSeconds,
        emptyNodeSeconds: p.consolidateAfter === "Never" ? undefined : durationSeconds(p.consolidateAfter),
        consolidationPolicy: p.consolidationPolicy,
        expireAfterSeconds: p.expireAfter === "Never" ? undefined : durationSeconds(p.expireAfter),
        budgets: p.budgets,
        sendingHours: p.sendingHours,
        nightlyBatch: p.nightlyBatch,
        burstStart: c.burstStart ?? p.sendingHours.start,
        burstHoursPerDay: c.burstHoursPerDay,
        prices: c.prices,
        spotDiscount: c.spotDiscount,
        recycle: p.recycle && {
            maxAgeDays: p.recycle.maxAgeDays,
            schedule: p.recycle.schedule,
            longestGapMinutes: recycleWindow(p.recycle.schedule, protectedWindows(p), p.budgets, Math.ceil(markClearanceSeconds(durationSeconds(p.terminationGracePeriod)) / 60)).longestGapMinutes,
        },
        drainSeconds: durationSeconds(p.terminationGracePeriod),
    };
}

/** One approved instance type under the model. */
export interface TypeFit {
    type: string;
    /** What NodePool limits count: vCPUs, memory less the VM overhead. */
    capacity: NodeResources;
    /** After the kubelet reservations and eviction threshold. */
    allocatable: NodeResources;
    /** What is left for Celery pods after the daemonsets. */
    forPods: NodeResources;
    podsPerNode: number;
    boundBy: "cpu" | "memory";
    onDemandHourly: number;
    spotHourly: number;
    /** Spot price per burst pod and hour (Infinity when no pod fits). */
    spotPerPod: number;
    /** Nodes for the peak and the headroom. */
    peakNodes: number;
    /** The most nodes of this type the NodePool limits allow. */
    limitNodes: number;
}

// Quantities such as 0.55 cores are inexact in binary; an exact fit must not round down to one pod fewer.
const EPSILON = 1e-9;

/** Each approved type of known shape, with what it holds and costs; types of unknown shape are left out. */
export function typeFits(m: CapacityInputs): TypeFit[] {
    return m.instanceTypes.flatMap((type) => {
        const node = nodeResources(type, m.kubelet);
        if (!node) return [];
        const forPods = { cpu: node.allocatable.cpu - m.daemonsets.cpu, memoryGiB: node.allocatable.memoryGiB - m.daemonsets.memoryGiB };
        const byCpu = Math.max(0, Math.floor(forPods.cpu / m.pod.cpu + EPSILON));
        const byMemory = Math.max(0, Math.floor(forPods.memoryGiB / m.pod.memoryGiB + EPSILON));
        const podsPerNode = Math.min(byCpu, byMemory);
        const onDemandHourly = m.prices.onDemandHourly[type];
        const spotHourly = onDemandHourly * (1 - m.spotDiscount);
        return [
            {
                type,
                ...node,
                forPods,
                podsPerNode,
                boundBy: byCpu <= byMemory ? ("cpu" as const) : ("memory" as const),
                onDemandHourly,
                spotHourly,
                spotPerPod: podsPerNode > 0 ? spotHourly / podsPerNode : Infinity,
                peakNodes: nodesFor(m.peakPods + m.headroomPods, podsPerNode),
                limitNodes: Math.floor(Math.min(m.limits.cpu / node.capacity.cpu, m.limits.memoryGiB / node.capacity.memoryGiB) + EPSILON),
            },
        ];
    });
}

export function nodesFor(pods: number, podsPerNode: number): number {
    return podsPerNode > 0 ? Math.ceil(pods / podsPerNode) : Infinity;
}

/**
 * The type the model assumes Karpenter launches: the lowest spot price per burst pod (ties: more pods per node,
 * then by name). Karpenter really asks EC2 for every type that fits, with the price-capacity-optimized strategy,
 * so real nodes mix types; this is the cheapest case, and the per-type rows show the others.
 */
export function chosenType(fits: TypeFit[]): TypeFit | undefined {
    return [...fits].filter((f) => f.podsPerNode > 0).sort((a, b) => a.spotPerPod - b.spotPerPod || b.podsPerNode - a.podsPerNode || a.type.localeCompare(b.type))[0];
}

export interface LimitCheck {
    /** The limits allow the peak (with headroom) with the chosen type. */
    chosenOk: boolean;
    /** Types with which the limits do not allow it: Karpenter may launch any approved type. */
    shortTypes: string[];
    /** Limits that would allow the peak with every approved type. */
    needed: NodeResources;
}

export function limitCheck(m: CapacityInputs, fits: TypeFit[], chosen: TypeFit): LimitCheck {
    const usable = fits.filter((f) => f.podsPerNode > 0);
    return {
        chosenOk: chosen.limitNodes >= chosen.peakNodes,
        shortTypes: usable.filter((f) => f.limitNodes < f.peakNodes).map((f) => f.type),
        needed: {
            cpu: Math.max(...usable.map((f) => f.peakNodes * f.capacity.cpu)),
            memoryGiB: Math.ceil(Math.max(...usable.map((f) => f.peakNodes * f.capacity.memoryGiB))),
        },
    };
}

export interface RampPoint {
    /** Seconds since the burst began. */
    t: number;
    /** Burst pods the HPAs want. */
    desired: number;
    /** Burst pods running. */
    running: number;
    /** Ready ephemeral nodes. */
    nodes: number;
    /** Nodes launched but not yet ready. */
    launching: number;
}

export interface Ramp {
    points: RampPoint[];
    /** When the HPAs ask for the peak. */
    hpaPeakAt: number;
    /** When every peak pod runs; undefined when the limits stop short of it. */
    peakAt?: number;
}

/**
 * The burst as a 1-second simulation. At t=0 the load arrives with the baseline pods running on warm nodes that
 * also hold the headroom. The HPAs add `pods` x `deployments` pods per period once the stabilization window has
 * passed. New burst pods preempt headroom pods at once; pods that do not fit (the preempted headroom pods too)
 * wait for Karpenter, which gathers them in a batch (closed after the idle window, or the max window) and
 * launches enough nodes, ready `nodeLaunchSeconds` later, within the NodePool limits.
 */
export function rampUp(m: CapacityInputs, podsPerNode: number, maxNodes: number): Ramp {
    const { pods, periodSeconds, stabilizationSeconds, deployments } = m.hpa;
    const desiredAt = (t: number) =>
        t < stabilizationSeconds ? m.baselinePods : Math.min(m.peakPods, m.baselinePods + pods * deployments * (Math.floor((t - stabilizationSeconds) / periodSeconds) + 1));
    const steps = Math.ceil((m.peakPods - m.baselinePods) / (pods * deployments));
    const hpaPeakAt = steps > 0 ? stabilizationSeconds + (steps - 1) * periodSeconds : 0;

    let ready = Math.min(maxNodes, nodesFor(m.baselinePods + m.headroomPods, podsPerNode));
    let launching: number[] = [];
    let batch: { start: number; last: number; size: number } | undefined;
    let peakAt: number | undefined;
    const points: RampPoint[] = [];
    for (let t = 0; t <= 24 * 3600; t++) {
        ready += launching.filter((at) => at === t).length;
        launching = launching.filter((at) => at > t);
        const desired = desiredAt(t);
        const slots = ready * podsPerNode;
        const running = Math.min(desired, slots);
        const pending = desired - running + m.headroomPods - Math.min(m.headroomPods, slots - running);
        const uncovered = pending - launching.length * podsPerNode;
        const room = maxNodes - ready - launching.length;
        if (uncovered > 0 && room > 0) {
            if (!batch) batch = { start: t, last: t, size: uncovered };
            else if (uncovered > batch.size) batch = { ...batch, last: t, size: uncovered };
            if (t - batch.last >= m.batchIdleSeconds || t - batch.start >= m.batchMaxSeconds) {
                const count = Math.min(room, nodesFor(uncovered, podsPerNode));
                launching.push(...Array<number>(count).fill(t + m.nodeLaunchSeconds));
                batch = undefined;
            }
        } else batch = undefined;
        const point = { t, desired, running, nodes: ready, launching: launching.length };
        const last = points[points.length - 1];
        const settled = desired === m.peakPods && launching.length === 0 && (pending === 0 || room === 0);
        // A row per change, and the last one so the curve ends where the model does.
        if (settled || !last || last.desired !== desired || last.running !== running || last.nodes !== ready || last.launching !== point.launching) points.push(point);
        if (peakAt === undefined && running === m.peakPods) peakAt = t;
        if (settled) break;
    }
    return { points, hpaPeakAt, peakAt };
}

export interface Tier {
    pods: number;
    nodes: number;
    hourly: number;
}

export interface Daily {
    karpenter: number;
    static: number;
    saving: number;
    savingPercent: number;
}

/** The policies the report compares. */
export interface Policy {
    consolidationPolicy: CapacityInputs["consolidationPolicy"];
    emptyNodeSeconds?: number;
    expireAfterSeconds?: number;
    budgets: DisruptionBudget[];
    /** The minutes (from SPAN_FROM) in which Underutilized is forbidden, when not the budgets' own. */
    forbidden?: Uint8Array;
}

/** One policy's day (the costliest of the model year): the burst, then the nodes it leaves, then the baseline. */
export interface PolicyDay {
    /** The costliest day, "2026-07-01": with budgets in UTC and bursts in local time, days differ by season. */
    date: string;
    /** When the burst begins and when the kept nodes go, in minutes since 00:00 UTC of that day. */
    burstStartUtc: number;
    /** When the nodes kept after the burst go; undefined when they stay until the next day's burst. */
    releaseUtc?: number;
    /** What removes them: consolidation once the budgets allow Underutilized, or expiry. */
    releasedBy?: "consolidation" | "expiry";
    /** Hours at the peak (the burst and consolidateAfter), at the after-burst count, at the baseline. */
    peakHours: number;
    keptHours: number;
    baselineHours: number;
    /** Node-hours above the baseline after the burst: (after-burst nodes - baseline nodes) x kept hours. */
    keptNodeHours: number;
    /** What the node recycler replaces under this policy (included in `daily`); undefined when it is off. */
    recycling?: Recycling;
    daily: Daily;
}

/**
 * The node recycler's replacements. The nodes that outlive maxAgeDays are the ones a policy never releases: the
 * baseline's, or the after-burst nodes when they stay until the next burst. Each is replaced every maxAgeDays, by
 * Karpenter's drift: it launches the replacement, waits until it is initialized, then deletes the old node, which runs
 * until drained (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/disruption/queue.go:183-251). So both are paid for
 * at most nodeLaunchSeconds plus the drain, bounded by terminationGracePeriod (drainSeconds): an upper bound, since a
 * node whose pods fit elsewhere gets no replacement and most drains end sooner.
 */
export interface Recycling {
    nodes: number;
    perDay: number;
    overlapSeconds: number;
    nodeHoursPerDay: number;
    /** Cost a day, at the chosen type's spot price. */
    daily: number;
}

export function recycling(m: CapacityInputs, nodes: number, hourly: number): Recycling | undefined {
    if (!m.recycle) return undefined;
    const perDay = nodes / m.recycle.maxAgeDays;
    const overlapSeconds = m.nodeLaunchSeconds + m.drainSeconds;
    const nodeHoursPerDay = (perDay * overlapSeconds) / 3600;
    return { nodes, perDay, overlapSeconds, nodeHoursPerDay, daily: nodeHoursPerDay * hourly };
}

/** Nodes that expireAfter drains together, at once and regardless of budgets. */
export interface ExpiryWave {
    nodes: number;
    /** Minutes since 00:00 UTC, and local (sendingHours.timeZone), on the costliest day's schedule. */
    atUtc: number;
    atLocal: number;
    /** Whether it falls within sending hours on any day of the model year. */
    inSendingHours: boolean;
}

export interface Costs {
    baseline: Tier;
    peak: Tier;
    /**
     * The nodes left once a burst is over, until consolidation may remove underutilized nodes or they expire. Only
     * empty nodes go before that. Unordered, the ReplicaSet controller deletes pods from the nodes with the most of
     * them first, so the baseline and headroom pods that remain end up spread out: at worst one per node,
     * min(peak nodes, baseline + headroom pods). Ordered by node age, the survivors are the pods on the oldest
     * nodes, the baseline's, and the headroom re-created during the burst gathers on the nodes it fills (its
     * preferred affinity to itself): baseline nodes (if any baseline pod survives) + headroom nodes.
     */
    afterBurst: Tier;
    /** An always-on on-demand group sized for the peak, of the cheapest on-demand type per pod. */
    static: { type: string; nodes: number; hourly: number };
    /** The configured policy. */
    configured: PolicyDay;
    /** WhenEmpty with the same consolidateAfter and expireAfter. */
    whenEmpty: PolicyDay;
    /** Back to the baseline 30 minutes after each burst: what consolidation without budgets would do. */
    backToBaseline: PolicyDay;
    /**
     * The configured policy on the same day with Underutilized allowed in the nightly batch (outside sending hours):
     * against `configured`, what keeping consolidation out of the nightly batch costs.
     */
    withoutNightlyBatch: PolicyDay;
    /** The longest a node left underutilized when the nightly batch begins waits for the budgets to allow consolidation (hours). */
    nightlyWaitHours: number;
    /** The configured policy's expiry, or undefined with expireAfter Never. */
    expiry?: ExpiryWave;
}

const DAY = 1440;
const MINUTE = 60_000;

/** Hourly and daily cost of the burst capacity; the stable node group costs the same either way and is left out. */
export function costs(m: CapacityInputs, fits: TypeFit[], chosen: TypeFit): Costs {
    const nodes = (pods: number) => Math.min(chosen.limitNodes, nodesFor(pods, chosen.podsPerNode));
    const tier = (pods: number, count = nodes(pods)) => ({ pods, nodes: count, hourly: count * chosen.spotHourly });
    const baseline = tier(m.baselinePods + m.headroomPods);
    const peak = tier(m.peakPods + m.headroomPods);
    const kept = m.scaleDownOrdered
        ? // The survivors stay where the baseline ran (none without baseline pods), beside the gathered headroom.
          (m.baselinePods > 0 ? baseline.nodes : 0) + nodesFor(m.headroomPods, chosen.podsPerNode)
        : // One remaining pod per node at worst.
          m.baselinePods + m.headroomPods;
    // On at most the nodes the peak had.
    const afterBurst = tier(m.baselinePods + m.headroomPods, Math.max(baseline.nodes, Math.min(peak.nodes, kept)));
    const onDemand = [...fits].filter((f) => f.podsPerNode > 0).sort((a, b) => a.onDemandHourly / a.podsPerNode - b.onDemandHourly / b.podsPerNode || a.type.localeCompare(b.type))[0];
    const staticNodes = nodesFor(m.peakPods, onDemand.podsPerNode);
    const staticGroup = { type: onDemand.type, nodes: staticNodes, hourly: staticNodes * onDemand.onDemandHourly };
    const tiers = { baseline, peak, afterBurst, staticDaily: staticGroup.hourly * 24, nodeHourly: chosen.spotHourly };
    const configured = policyDay(m, tiers, m);
    return {
        baseline,
        peak,
        afterBurst,
        static: staticGroup,
        configured,
        whenEmpty: policyDay(m, tiers, { ...m, consolidationPolicy: "WhenEmpty" }, configured.date),
        backToBaseline: policyDay(m, tiers, { consolidationPolicy: "WhenEmptyOrUnderutilized", emptyNodeSeconds: 1800, budgets: [] }, configured.date),
        withoutNightlyBatch: policyDay(m, tiers, { ...m, forbidden: withoutNightlyBatch(m) }, configured.date),
        nightlyWaitHours: nightlyWaitHours(m),
        expiry: expiryWave(m, tiers, configured),
    };
}

interface Tiers {
    baseline: Tier;
    peak: Tier;
    afterBurst: Tier;
    staticDaily: number;
    /** One node of the chosen type, spot, an hour. */
    nodeHourly: number;
}

/** The budgets' Underutilized minutes, less those of the nightly batch that are not also in sending hours. */
function withoutNightlyBatch(m: CapacityInputs): Uint8Array {
    const forbidden = forbiddenInSpan(m.budgets, "Underutilized");
    const nightly = windowMinutes(m.nightlyBatch);
    const sending = windowMinutes(m.sendingHours);
    return forbidden.map((f, t) => (nightly[t] && !sending[t] ? 0 : f));
}

/** From each day's nightly batch start, the longest wait of the model year until the budgets allow Underutilized. */
function nightlyWaitHours(m: CapacityInputs): number {
    const forbidden = forbiddenInSpan(m.budgets, "Underutilized");
    let longest = 0;
    for (const day of yearDays()) {
        const start = localWindow(m.nightlyBatch, day, SPAN_FROM).start;
        let t = start;
        while (t < forbidden.length && forbidden[t]) t++;
        longest = Math.max(longest, t - start);
    }
    return longest / 60;
}

/** Each day's burst (minutes since SPAN_FROM) begins at the local burstStart. */
function burstStarts(m: CapacityInputs): { day: Date; start: number }[] {
    return yearDays().map((day) => ({ day, start: localWindow({ ...m.sendingHours, start: m.burstStart }, day, SPAN_FROM).start }));
}

/**
 * A day under a policy, from one burst's start to the next: the peak until the burst ends and consolidateAfter
 * passes (then empty nodes go), the after-burst nodes until they go, then the baseline. WhenEmpty keeps them until
 * they expire (launched when the burst began); the other policies consolidate them at the first minute the budgets
 * allow Underutilized (or at expiry, if sooner). Computed for every day of the model year (or `date`, "2026-07-01");
 * the costliest is kept.
 */
export function policyDay(m: CapacityInputs, t: Tiers, policy: Policy, date?: string): PolicyDay {
    const forbidden = policy.forbidden ?? forbiddenInSpan(policy.budgets, "Underutilized");
    const burst = Math.round(m.burstHoursPerDay * 60);
    let worst: PolicyDay | undefined;
    for (const { day, start } of burstStarts(m).filter((b) => date === undefined || b.day.toISOString().startsWith(date))) {
        const peakEnd = policy.emptyNodeSeconds === undefined ? start + DAY : Math.min(start + DAY, start + burst + policy.emptyNodeSeconds / 60);
        const expiry = policy.expireAfterSeconds === undefined ? Infinity : start + policy.expireAfterSeconds / 60;
        let consolidation = Infinity;
        if (policy.consolidationPolicy !== "WhenEmpty" && policy.emptyNodeSeconds !== undefined) {
            for (let x = peakEnd; x < start + DAY; x++) {
                if (!forbidden[x]) {
                    consolidation = x;
                    break;
                }
            }
        }
        const release = Math.min(consolidation, expiry);
        const keptEnd = Math.max(peakEnd, Math.min(start + DAY, release));
        const peakHours = (peakEnd - start) / 60;
        const keptHours = (keptEnd - peakEnd) / 60;
        const baselineHours = 24 - peakHours - keptHours;
        const dayStart = (day.getTime() - SPAN_FROM.getTime()) / MINUTE;
        const released = release < start + DAY;
        const recycled = recycling(m, released ? t.baseline.nodes : t.afterBurst.nodes, t.nodeHourly);
        const karpenter = t.peak.hourly * peakHours + t.afterBurst.hourly * keptHours + t.baseline.hourly * baselineHours + (recycled?.daily ?? 0);
        const candidate: PolicyDay = {
            date: day.toISOString().slice(0, 10),
            burstStartUtc: start - dayStart,
            releaseUtc: released ? Math.max(peakEnd, release) - dayStart : undefined,
            releasedBy: released ? (consolidation <= expiry ? "consolidation" : "expiry") : undefined,
            peakHours,
            keptHours,
            baselineHours,
            keptNodeHours: (t.afterBurst.nodes - t.baseline.nodes) * keptHours,
            ...(recycled ? { recycling: recycled } : {}),
            daily: daily(karpenter, t.staticDaily),
        };
        if (!worst || candidate.daily.karpenter > worst.daily.karpenter + 1e-9) worst = candidate;
    }
    return worst!;
}

function daily(karpenter: number, staticDaily: number): Daily {
    return { karpenter, static: staticDaily, saving: staticDaily - karpenter, savingPercent: staticDaily > 0 ? (100 * (staticDaily - karpenter)) / staticDaily : 0 };
}

/**
 * The nodes of one burst that expire together, expireAfter after the burst began: the peak's nodes if that comes
 * before empty ones go, the after-burst nodes if before they are released, else at most the baseline's nodes (the
 * ones consolidation kept). Undefined with expireAfter Never.
 */
export function expiryWave(m: CapacityInputs, t: Tiers, day: PolicyDay): ExpiryWave | undefined {
    if (m.expireAfterSeconds === undefined) return undefined;
    const after = m.expireAfterSeconds / 60;
    const peakEnd = day.peakHours * 60;
    const released = day.releaseUtc === undefined ? Infinity : day.releaseUtc - day.burstStartUtc;
    const nodes = after < peakEnd ? t.peak.nodes : after < released || day.releasedBy === "expiry" ? t.afterBurst.nodes : t.baseline.nodes;
    const inSendingHours = burstStarts(m).some(({ day: d, start }) => {
        const at = start + after;
        return [-1, 0, 1, 2].some((k) => {
            const shifted = new Date(d.getTime() + (Math.floor(after / DAY) + k) * DAY * MINUTE);
            const w = localWindow(m.sendingHours, shifted, SPAN_FROM);
            return at >= w.start && at < w.end;
        });
    });
    const atUtc = (day.burstStartUtc + after) % DAY;
    const offset = localWindow(m.sendingHours, new Date(`${day.date}T00:00:00Z`), SPAN_FROM).offset;
    return { nodes, atUtc, atLocal: (atUtc + offset + DAY) % DAY, inSendingHours };
}

export interface CapacityReport {
    inputs: CapacityInputs;
    fits: TypeFit[];
    /** Approved types whose shape the model does not know. */
    unknownTypes: string[];
    chosen: TypeFit;
    limits: LimitCheck;
    ramp: Ramp;
    costs: Costs;
}

/** The whole model; a string says why it cannot run (no approved type fits one pod). */
export function capacityReport(m: CapacityInputs): CapacityReport | string {
    const fits = typeFits(m);
    const chosen = chosenType(fits);
    if (!chosen) return `no approved instance type of known shape fits one burst Celery pod next to the daemonsets (types: ${m.instanceTypes.join(", ")})`;
    return {
        inputs: m,
        fits,
        unknownTypes: m.instanceTypes.filter((t) => !fits.some((f) => f.type === t)),
        chosen,
        limits: limitCheck(m, fits, chosen),
        ramp: rampUp(m, chosen.podsPerNode, chosen.limitNodes),
        costs: costs(m, fits, chosen),
    };
}
