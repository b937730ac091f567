// The policy pack's config for a stack, derived from its validated config: one source of truth for what the
// policies enforce. `npm run plan` writes it to plan-out/<stack>/policy-config.json for `--policy-pack-config`.
import type { PolicyPackConfig } from "@pulumi/policy";
import { type StackFacts, packConfig } from "../policy/policies.ts";
import { type StackConfig, approvedInstanceTypes } from "./config.ts";

export function stackFacts(cfg: StackConfig): StackFacts {
    return {
        approvedInstanceTypes: approvedInstanceTypes(cfg.nodePool),
        ephemeralKey: cfg.nodePool.ephemeralKey,
        burstPodLabel: cfg.placement.burstPodLabel,
        nodeDaemonSets: cfg.placement.nodeDaemonSets.map(({ namespace, name }) => ({ namespace, name })),
        stableNodeSelector: cfg.cluster.stableNodeSelector,
    };
}

export function policyConfigFor(cfg: StackConfig): PolicyPackConfig {
    return packConfig(stackFacts(cfg));
}
