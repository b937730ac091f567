// A stack's config, validated twice: against the schema (stacks/config.ts), then by rendering the Karpenter objects and
// placement it configures through the same mapping the program deploys (stacks/componentArgs.ts), so what is
// validated is exactly what is deployed. Kept apart from both so that neither imports the other's caller.
import * as pulumi from "@pulumi/pulumi";
import { placementProblems } from "../components/celeryWorkloadPlacement";
import { nodePoolProblems } from "../components/ephemeralNodePool";
import { nodePoolArgs, placementArgs } from "./componentArgs";
import { ConfigError, StackConfig, capacityWarnings, configSections, parseConfigSchema } from "./config";

/** A stack's validated config; throws a ConfigError naming the stack and each full key path. */
export function parseStackConfig(stack: string, raw: Record<string, unknown>, project = "notify-karpenter"): StackConfig {
    const cfg = parseConfigSchema(stack, raw, project);
    // The Karpenter objects this config renders, checked against the v1.14.1 schema and CEL rules.
    const objectIssues = [
        ...nodePoolProblems(nodePoolArgs(cfg, "node-role")).map((message) => ({ path: "nodePool", message: `would make ${message}` })),
        ...placementProblems(placementArgs(cfg)).map((message) => ({ path: "placement", message })),
    ];
    if (objectIssues.length > 0) throw new ConfigError(stack, objectIssues, project);
    return cfg;
}

/** Reads the current stack's config (all keys in this project's namespace) and validates it. */
export function loadConfig(): StackConfig {
    const cfg = parseStackConfig(pulumi.getStack(), configSections(pulumi.runtime.allConfig(), pulumi.getProject()), pulumi.getProject());
    for (const w of capacityWarnings(cfg)) pulumi.log.warn(w);
    return cfg;
}
