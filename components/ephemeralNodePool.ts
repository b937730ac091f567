import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { type EphemeralNodePoolArgs, nodePoolProblems, nodePoolWarnings, renderNodePool } from "./models/nodePool.ts";

/**
 * Karpenter's spot pool: an EC2NodeClass and a NodePool for burst Celery workers, validated against the v1.14.1
 * schema before registration, so no invalid or silently pruned Karpenter object can leave the program.
 */
export class EphemeralNodePool extends pulumi.ComponentResource {
    /** Label and taint key marking ephemeral nodes; CeleryWorkloadPlacement tolerates and selects it. */
    public readonly ephemeralKey: string;
    public readonly nodePoolName: string;
    public readonly nodeClassName: string;
    /** The pool's warnings, for review; config validation reports them once per run (stacks/validatedConfig.ts). */
    public readonly warnings: string[];

    constructor(name: string, args: EphemeralNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:EphemeralNodePool", name, {}, opts);
        const problems = nodePoolProblems(args);
        if (problems.length > 0) throw new Error(`EphemeralNodePool ${name}:\n${problems.join("\n")}`);
        this.ephemeralKey = args.ephemeralKey;
        this.nodePoolName = this.nodeClassName = args.name;
        this.warnings = nodePoolWarnings(args);

        const { nodeClass, nodePool } = renderNodePool(args, args.nodeRoleName);
        const nodeClassResource = new k8s.apiextensions.CustomResource(`${name}-node-class`, nodeClass, { parent: this, dependsOn: args.dependsOn });
        new k8s.apiextensions.CustomResource(`${name}-node-pool`, nodePool, { parent: this, dependsOn: [...(args.dependsOn ?? []), nodeClassResource] });
        this.registerOutputs({ ephemeralKey: this.ephemeralKey, nodePoolName: this.nodePoolName, nodeClassName: this.nodeClassName });
    }
}
