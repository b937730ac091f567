// The policy pack's config for a stack, derived from its validated config: one source of truth for what the
// policies enforce. `npm run plan` writes it to plan-out/<stack>/policy-config.json for `--policy-pack-config`.
import { PolicyPackConfig } from "@pulumi/policy";
import { GC_NOTIFY_FACTS, StackFacts, packConfig } from "../policy/policies";
import { StackConfig, approvedInstanceTypes } from "./config";

export function stackFacts(cfg: StackConfig): StackFacts {
    return {
        approvedInstanceTypes: approvedInstanceTypes(cfg.nodePool),
        ephemeralKey: cfg.nodePool.ephemeralKey,
        // Until the placement config section of CeleryWorkloadPlacement (issue 4) lands, GC Notify's values; then
        // cfg.placement.burstPodLabel and cfg.placement.nodeDaemonSets.
        burstPodLabel: GC_NOTIFY_FACTS.burstPodLabel,
        nodeDaemonSets: GC_NOTIFY_FACTS.nodeDaemonSets,
        stableNodeSelector: cfg.cluster.stableNodeSelector,
    };
}

export function policyConfigFor(cfg: StackConfig): PolicyPackConfig {
    return packConfig(stackFacts(cfg));
}
