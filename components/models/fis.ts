// What AWS Fault Injection Service allows and the drill's fixed names: the drill (components/spotInterruptionDrill.ts,
// ops/drillRun.ts) keeps within it, and config validation reads it without loading the SDKs.

/**
 * EC2's quota on spot instances one aws:ec2:send-spot-instance-interruptions experiment targets by tags: 5 (EC2 User
 * Guide, "Initiate a Spot Instance interruption", Quotas). The drill never asks for more.
 */
export const MAX_DRILL_NODES = 5;
/**
 * The FIS action and its resource type and target key (AWS FIS User Guide, "Actions reference":
 * aws:ec2:send-spot-instance-interruptions targets aws:ec2:spot-instance through the key SpotInstances, with the one
 * parameter durationBeforeInterruption, from 2 to 15 minutes as an ISO 8601 duration).
 */
export const SPOT_INTERRUPTION_ACTION = "aws:ec2:send-spot-instance-interruptions";

export const SPOT_INSTANCE_RESOURCE_TYPE = "aws:ec2:spot-instance";

export const SPOT_INSTANCES_TARGET_KEY = "SpotInstances";

/** The template's names for its one action and its one target. */
export const DRILL_ACTION = "interrupt";

export const DRILL_TARGET = "pool-spot-instances";

/** The tag Karpenter puts on every instance it launches for a NodePool (karpenter-provider-aws v1.14.1 pkg/utils/utils.go:118). */
export const NODEPOOL_TAG = "karpenter.sh/nodepool";

/**
 * The tag Karpenter puts on every instance it launches, with its cluster's name (karpenter-provider-aws v1.14.1
 * pkg/utils/utils.go:119, pkg/apis/v1/labels.go:185): with the NodePool's, it tells this cluster's nodes from another
 * cluster's pool of the same name in the account and region.
 */
export const EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name";

/** FIS takes at most 5 stop conditions per experiment template (AWS FIS User Guide, "Quotas and limitations"). */
export const MAX_STOP_CONDITIONS = 5;

/** FIS sends the interruption notice this long before the interruption, whatever durationBeforeInterruption says. */
export const NOTICE_BEFORE_INTERRUPTION_SECONDS = 120;

/** The namespace and service account the drill's synthetic workers run as; their Pod Identity association names both. */
export const DRILL_NAMESPACE = "notify-karpenter-drill";

export const DRILL_SERVICE_ACCOUNT = "drill-worker";

/** ISO 8601 minutes and seconds (PT2M, PT150S, PT2M30S) as FIS reads durationBeforeInterruption; undefined when not one. */
export function isoDurationSeconds(value: string): number | undefined {
    const m = /^PT(?:([0-9]+)M)?(?:([0-9]+)S)?$/.exec(value);
    if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
    return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

/** Why FIS would refuse a durationBeforeInterruption (it takes 2 to 15 minutes), or undefined. */
export function durationBeforeInterruptionProblem(value: string): string | undefined {
    const s = isoDurationSeconds(value);
    if (s === undefined) return `must be an ISO 8601 duration in minutes or seconds such as PT2M or PT150S (got ${JSON.stringify(value)})`;
    return s >= 120 && s <= 900 ? undefined : `must be from PT2M to PT15M: FIS interrupts 2 to 15 minutes after the action starts, with the notice 2 minutes before (got ${JSON.stringify(value)}, ${s} s)`;
}

/** The fixed AWS names of the drill, from the stack's name prefix (the controller's). */
export function drillNames(prefix: string) {
    return {
        /** The role FIS assumes. */
        experimentRole: `${prefix}-fis-drill`,
        /** The role the synthetic workers get through Pod Identity. */
        workloadRole: `${prefix}-drill-sqs`,
        /** The synthetic workload's temporary queues are named `<queuePrefix><time>-work` and `-done`. */
        queuePrefix: `${prefix}-drill-`,
        logGroup: `/aws/fis/${prefix}-spot-interruption-drill`,
        /** The template's Name tag, by which `npm run drill` finds it (with the stack tag). */
        template: `${prefix}-spot-interruption-drill`,
    };
}

/** Each drill name AWS would refuse, as a sentence; empty when the prefix is fine. */
export function drillNameProblems(prefix: string): string[] {
    const n = drillNames(prefix);
    const limits: [string, string, number][] = [
        ["IAM role", n.experimentRole, 64],
        ["IAM role", n.workloadRole, 64],
        // The drill appends a 15-character time and -work or -done: SQS names are at most 80 characters.
        ["SQS queue", `${n.queuePrefix}20261130t051000-work`, 80],
    ];
    return limits.filter(([, name, max]) => name.length > max).map(([kind, name, max]) => `gives the ${kind} name "${name}" ${name.length} characters; AWS allows at most ${max}`);
}
