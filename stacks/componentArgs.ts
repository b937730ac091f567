// Maps validated config onto component arguments. Config validation renders the node pool through the same
// mapping, so what is validated is exactly what is deployed.
import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { type BurstDeployment, type CeleryWorkloadPlacementArgs, burstGraceSeconds, startupTaintFor, waitsFor } from "../components/models/celeryPlacement.ts";
import type { EphemeralNodePoolArgs } from "../components/models/nodePool.ts";
import type { NodeRecyclerArgs } from "../components/nodeRecycler.ts";
import { markClearanceSeconds, recycleWindow } from "../components/models/recycleWindow.ts";
import type { SpotInterruptionDrillArgs } from "../components/spotInterruptionDrill.ts";
import { alarmNames } from "../components/models/alarmRules.ts";
import { type StackConfig, approvedInstanceTypes, durationSeconds, protectedWindows } from "./config.ts";

export function nodePoolArgs(cfg: StackConfig, nodeRoleName: pulumi.Input<string>, dependsOn?: pulumi.Resource[]): EphemeralNodePoolArgs {
    const p = cfg.nodePool;
    return {
        name: p.name,
        clusterName: cfg.cluster.name,
        nodeRoleName,
        instanceTypes: approvedInstanceTypes(p),
        zones: p.zones,
        capacityTypes: p.capacityTypes,
        ephemeralKey: p.ephemeralKey,
        // New nodes stay tainted until nidhogg sees each node agent running there.
        startupTaints: cfg.placement.nodeDaemonSets.filter(waitsFor).map(startupTaintFor),
        expireAfter: p.expireAfter,
        terminationGracePeriod: p.terminationGracePeriod,
        consolidationPolicy: p.consolidationPolicy,
        consolidateAfter: p.consolidateAfter,
        budgets: p.budgets,
        limits: p.limits,
        weight: p.weight,
        ami: p.ami,
        allowLatestAmi: p.allowLatestAmi,
        metadataHopLimit: p.metadataHopLimit,
        rootVolumeSize: p.rootVolumeSize,
        kubeReserved: p.kubeReserved,
        systemReserved: p.systemReserved,
        evictionHard: p.evictionHard,
        subnetIds: p.subnetIds,
        securityGroupIds: p.securityGroupIds,
        tags: p.tags,
        spotToSpotConsolidation: cfg.controller.spotToSpotConsolidation,
        capacityCheck: p.capacityCheck,
        dependsOn,
    };
}

/** The burst Deployments with their grace periods: long enough for the worker to finish every task it holds. */
export function burstDeployments(cfg: StackConfig): BurstDeployment[] {
    const b = cfg.placement.burst;
    return b.deployments.map((d) => ({
        name: d.name,
        ...(d.minAvailable !== undefined ? { minAvailable: d.minAvailable } : { maxUnavailable: d.maxUnavailable }),
        terminationGracePeriodSeconds: burstGraceSeconds(d.longestTaskSeconds ?? b.longestTaskSeconds, b.prefetchMultiplier),
    }));
}

export function placementArgs(cfg: StackConfig, dependsOn?: pulumi.Resource[], priorityClassProvider?: k8s.Provider): CeleryWorkloadPlacementArgs {
    const p = cfg.placement;
    const pod = cfg.nodePool.capacityCheck;
    return {
        namespace: p.namespace,
        ephemeralKey: cfg.nodePool.ephemeralKey,
        burstPodLabel: p.burstPodLabel,
        stableNodeSelector: cfg.cluster.stableNodeSelector,
        priorityClasses: p.priorityClasses,
        burst: { deployments: burstDeployments(cfg), spillToStable: p.burst.spillToStable },
        stableDeployments: p.stableDeployments,
        nodeDaemonSets: p.nodeDaemonSets,
        admission: p.admission,
        // Config validation requires capacityCheck whenever there is headroom.
        headroom: { pods: p.headroom.pods, cpu: pod?.celeryPodCpu ?? "0", memory: pod?.celeryPodMemory ?? "0" },
        dependsOn,
        lifecycle: {
            protect: cfg.lifecycle.protect,
            retainOnDelete: cfg.lifecycle.retainOnDelete,
            stableBatchSize: cfg.lifecycle.stableBatchSize,
            burstPatchTimeout: cfg.lifecycle.burstPatchTimeout,
            daemonSetPatchTimeout: cfg.lifecycle.daemonSetPatchTimeout,
            stablePatchTimeout: cfg.lifecycle.stablePatchTimeout,
            priorityClassProvider,
        },
    };
}

/** The node recycler's arguments; undefined when nodePool.recycle is not set. */
export function nodeRecyclerArgs(cfg: StackConfig): NodeRecyclerArgs | undefined {
    const p = cfg.nodePool;
    const r = p.recycle;
    if (!r) return undefined;
    const drainSeconds = durationSeconds(p.terminationGracePeriod);
    const windows = protectedWindows(p);
    // Config validation refused a schedule that leaves no time to mark and drain before a window, so the run's deadline is at least that.
    const window = recycleWindow(r.schedule, windows, p.budgets, Math.ceil(markClearanceSeconds(drainSeconds) / 60));
    return {
        namespace: cfg.controller.namespace,
        nodePoolName: p.name,
        stableNodeSelector: cfg.cluster.stableNodeSelector,
        image: r.image,
        schedule: r.schedule,
        maxAgeDays: r.maxAgeDays,
        stuckMinutes: r.stuckMinutes,
        windows,
        drainSeconds,
        // Killed, at the latest, when a protected window begins after the run that starts closest to one.
        activeDeadlineSeconds: window.shortestMinutes * 60,
    };
}

/**
 * The stack's burst capacity alarms, which stop a drill's experiment (FIS stop conditions): the NodePool near its
 * limit, and burst pods Karpenter cannot place (an alarm only when burst Deployments are configured).
 */
export function drillStopAlarmNames(cfg: StackConfig): string[] {
    const burst = cfg.placement.burst.deployments.map((d) => d.name);
    const names = alarmNames(cfg.cluster.name, [], burst);
    return [names.nodePoolLimit, ...(burst.length > 0 ? [names.unschedulablePods] : [])];
}

/** The drill's arguments, without what the stack's other components give (cluster facts, alarm ARNs); undefined when drill.enabled is false. */
export function drillArgs(cfg: StackConfig): Omit<SpotInterruptionDrillArgs, "clusterName" | "accountId" | "partition" | "stopAlarmArns"> | undefined {
    const d = cfg.drill;
    if (!d.enabled) return undefined;
    return {
        namePrefix: cfg.controller.namePrefix ?? cfg.cluster.name,
        region: cfg.cluster.region,
        nodePoolName: cfg.nodePool.name,
        durationBeforeInterruption: d.durationBeforeInterruption,
        nodes: d.nodes,
        // The synthetic workers' credentials come from the Pod Identity agent, which a controller on IRSA does not imply.
        syntheticWorkload: cfg.controller.identity === "pod-identity",
    };
}
