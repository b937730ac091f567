import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { DRILL_ACTION, DRILL_NAMESPACE, DRILL_SERVICE_ACCOUNT, DRILL_TARGET, EKS_CLUSTER_NAME_TAG, MAX_DRILL_NODES, MAX_STOP_CONDITIONS, NODEPOOL_TAG, SPOT_INSTANCES_TARGET_KEY, SPOT_INSTANCE_RESOURCE_TYPE, SPOT_INTERRUPTION_ACTION, drillNameProblems, drillNames, durationBeforeInterruptionProblem } from "./models/fis.ts";

export interface SpotInterruptionDrillArgs {
    /** Prefix of the drill's fixed AWS names (the controller's namePrefix); unique per cluster and account. */
    namePrefix: string;
    /** The EKS cluster the synthetic workers' Pod Identity association belongs to. */
    clusterName: pulumi.Input<string>;
    /** The cluster's region: the only region whose instances FIS may interrupt. */
    region: string;
    accountId: pulumi.Input<string>;
    partition: pulumi.Input<string>;
    /** The NodePool whose spot nodes the experiment interrupts, by the tag Karpenter puts on their instances. */
    nodePoolName: string;
    /**
     * How long after the action starts EC2 interrupts each node, from PT2M to PT15M. The action starts with a rebalance
     * recommendation (Karpenter ignores it); the interruption notice comes 2 minutes before the interruption, so at
     * start + this - 2 min (AWS FIS User Guide, "Actions reference", aws:ec2:send-spot-instance-interruptions).
     * @default "PT2M" (the notice at once: what a real interruption gives)
     */
    durationBeforeInterruption?: string;
    /** How many of the pool's running spot nodes one experiment interrupts, at random: COUNT(n), never ALL; at most MAX_DRILL_NODES. @default 1 */
    nodes?: number;
    /**
     * The CloudWatch alarms FIS checks as stop conditions (`aws:cloudwatch:alarm`): the stack's burst capacity alarms,
     * 1 to 5. They cannot stop a PT2M experiment once started (they need minutes to reach ALARM, and a notice sent is not
     * taken back); they stop a longer one, and the drill refuses to start while one is in ALARM.
     */
    stopAlarmArns: pulumi.Input<string>[];
    /** Days FIS's experiment log is kept. @default 30 */
    logRetentionDays?: number;
    /**
     * Create the synthetic workers' role and its Pod Identity association: the cluster runs the EKS Pod Identity
     * agent (a controller on IRSA says nothing of it). @default true
     */
    syntheticWorkload?: boolean;
    /** Namespace and service account of the synthetic workers. @default DRILL_NAMESPACE, DRILL_SERVICE_ACCOUNT */
    workloadNamespace?: string;
    workloadServiceAccount?: string;
}

/** What FIS's experiment role may do, read as IAM does: interrupt only this cluster's pool's instances in the stack's region, find them, log. */
export function experimentRolePolicy(p: { partition: string; region: string; accountId: string; nodePoolName: string; clusterName: string }) {
    return {
        Version: "2012-10-17",
        Statement: [
            {
                // EC2 authorizes SendSpotInstanceInterruptions on the instance, with its tags as aws:ResourceTag; IAM
                // requires every key of the condition, so the instance must carry both the pool's and the cluster's tag.
                Sid: "InterruptOnlyThePoolsInstances",
                Effect: "Allow",
                Action: "ec2:SendSpotInstanceInterruptions",
                Resource: `arn:${p.partition}:ec2:${p.region}:${p.accountId}:instance/*`,
                Condition: { StringEquals: { [`aws:ResourceTag/${NODEPOOL_TAG}`]: p.nodePoolName, [`aws:ResourceTag/${EKS_CLUSTER_NAME_TAG}`]: p.clusterName } },
            },
            {
                // FIS resolves the target's tags and state filter with DescribeInstances, which takes no resource or
                // tag condition (a read of every instance's description): only the region is scoped.
                Sid: "ResolveTargets",
                Effect: "Allow",
                Action: "ec2:DescribeInstances",
                Resource: "*",
                Condition: { StringEquals: { "aws:RequestedRegion": p.region } },
            },
            {
                // Experiment logging to CloudWatch Logs, as vended logs are set up (CloudWatch Logs User Guide, "Logs
                // sent to CloudWatch Logs"; AWS FIS User Guide, "Experiment logging", Permissions).
                Sid: "DeliverExperimentLog",
                Effect: "Allow",
                Action: "logs:CreateLogDelivery",
                Resource: "*",
            },
            {
                Sid: "ExperimentLogGroupPolicy",
                Effect: "Allow",
                Action: ["logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups"],
                Resource: `arn:${p.partition}:logs:${p.region}:${p.accountId}:log-group:*`,
            },
        ],
    };
}

/** Only FIS, for this account's experiments in this region, may assume the experiment role (the confused deputy guard). */
function experimentRoleTrust(p: { partition: string; region: string; accountId: string }) {
    return {
        Version: "2012-10-17",
        Statement: [
            {
                Effect: "Allow",
                Principal: { Service: "fis.amazonaws.com" },
                Action: "sts:AssumeRole",
                Condition: {
                    StringEquals: { "aws:SourceAccount": p.accountId },
                    ArnLike: { "aws:SourceArn": `arn:${p.partition}:fis:${p.region}:${p.accountId}:experiment/*` },
                },
            },
        ],
    };
}

/** The synthetic workers' queue rights: their drill's temporary queues only. */
function workloadRolePolicy(p: { partition: string; region: string; accountId: string; queuePrefix: string }) {
    return {
        Version: "2012-10-17",
        Statement: [
            {
                Sid: "DrillQueuesOnly",
                Effect: "Allow",
                Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"],
                Resource: `arn:${p.partition}:sqs:${p.region}:${p.accountId}:${p.queuePrefix}*`,
            },
        ],
    };
}

/** The experiment template's inputs (aws.fis.ExperimentTemplate), for the component and its tests. `clusterName`: the EKS cluster's. */
export function experimentTemplateArgs(a: { nodePoolName: string; durationBeforeInterruption: string; nodes: number; clusterName: string }) {
    return {
        description: `Spot interruption drill of ${a.clusterName}: interrupts ${a.nodes} running spot node(s) of NodePool ${a.nodePoolName}, ${a.durationBeforeInterruption} after the action starts (npm run drill)`,
        actions: [
            {
                name: DRILL_ACTION,
                actionId: SPOT_INTERRUPTION_ACTION,
                description: `Interruption notice to ${a.nodes} spot node(s) of NodePool ${a.nodePoolName}`,
                parameters: [{ key: "durationBeforeInterruption", value: a.durationBeforeInterruption }],
                target: { key: SPOT_INSTANCES_TARGET_KEY, value: DRILL_TARGET },
            },
        ],
        targets: [
            {
                name: DRILL_TARGET,
                resourceType: SPOT_INSTANCE_RESOURCE_TYPE,
                // A fixed count at random, never ALL or PERCENT: the pool keeps nodes however large it is.
                selectionMode: `COUNT(${a.nodes})`,
                // The pool's nodes of this cluster only: the NodePool's name alone is shared by every stack (and GC
                // Notify's own Karpenter) in the account and region.
                resourceTags: [
                    { key: NODEPOOL_TAG, value: a.nodePoolName },
                    { key: EKS_CLUSTER_NAME_TAG, value: a.clusterName },
                ],
                filters: [{ path: "State.Name", values: ["running"] }],
            },
        ],
        // No running spot node of the pool: the experiment fails instead of succeeding on nothing.
        experimentOptions: { accountTargeting: "single-account", emptyTargetResolutionMode: "fail" },
    };
}

/** Refuses args FIS or IAM would refuse later, before any resource exists. */
function validate(name: string, a: SpotInterruptionDrillArgs): void {
    const problems = [
        ...drillNameProblems(a.namePrefix).map((p) => `namePrefix "${a.namePrefix}" ${p}`),
        ...(a.durationBeforeInterruption === undefined ? [] : [durationBeforeInterruptionProblem(a.durationBeforeInterruption)].filter((p): p is string => !!p).map((p) => `durationBeforeInterruption ${p}`)),
        ...(a.nodes === undefined || (Number.isInteger(a.nodes) && a.nodes >= 1 && a.nodes <= MAX_DRILL_NODES) ? [] : [`nodes must be an integer from 1 to ${MAX_DRILL_NODES}, EC2's quota of spot instances an experiment targets by tags (got ${a.nodes})`]),
        ...(a.stopAlarmArns.length >= 1 && a.stopAlarmArns.length <= MAX_STOP_CONDITIONS ? [] : [`stopAlarmArns must list 1 to ${MAX_STOP_CONDITIONS} alarms, FIS's limit (got ${a.stopAlarmArns.length})`]),
    ];
    if (problems.length > 0) throw new Error(`SpotInterruptionDrill ${name}: ${problems.join("; ")}`);
}

/**
 * A spot interruption drill as infrastructure: an AWS FIS experiment template that sends real interruption notices
 * to COUNT(n) running spot instances of one NodePool of this cluster (by the tags Karpenter puts on them), with the
 * stack's burst capacity alarms as stop conditions, logging to its own log group; the role FIS assumes, allowed to
 * interrupt only those instances in the stack's region; and the role the drill's synthetic workers get through Pod
 * Identity for their temporary queues. `npm run drill` starts and follows the experiment (docs/drill.md).
 */
export class SpotInterruptionDrill extends pulumi.ComponentResource {
    public readonly templateId: pulumi.Output<string>;
    public readonly experimentRoleArn: pulumi.Output<string>;
    public readonly logGroupName: pulumi.Output<string>;
    /** The template's Name tag, by which the drill finds it. */
    public readonly templateName: string;

    constructor(name: string, args: SpotInterruptionDrillArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:SpotInterruptionDrill", name, {}, opts);
        validate(name, args);
        const names = drillNames(args.namePrefix);
        const child = { parent: this };
        const context = pulumi.all([args.partition, args.accountId]);
        const clusterName = pulumi.output(args.clusterName);

        const role = new aws.iam.Role(
            `${name}-experiment-role`,
            {
                name: names.experimentRole,
                description: `FIS experiment role of the spot interruption drill: NodePool ${args.nodePoolName} of this cluster in ${args.region} only`,
                assumeRolePolicy: context.apply(([partition, accountId]) => JSON.stringify(experimentRoleTrust({ partition, region: args.region, accountId }))),
            },
            // A fixed name: a replacement must delete the old role first (IAM refuses a second role of one name).
            { ...child, deleteBeforeReplace: true },
        );
        const rolePolicy = new aws.iam.RolePolicy(
            `${name}-experiment-policy`,
            {
                name: "spot-interruption-drill",
                role: role.name,
                policy: pulumi.all([context, clusterName]).apply(([[partition, accountId], cluster]) => JSON.stringify(experimentRolePolicy({ partition, region: args.region, accountId, nodePoolName: args.nodePoolName, clusterName: cluster }))),
            },
            child,
        );
        const logGroup = new aws.cloudwatch.LogGroup(`${name}-log-group`, { name: names.logGroup, retentionInDays: args.logRetentionDays ?? 30 }, child);
        const t = clusterName.apply((cluster) =>
            experimentTemplateArgs({ nodePoolName: args.nodePoolName, durationBeforeInterruption: args.durationBeforeInterruption ?? "PT2M", nodes: args.nodes ?? 1, clusterName: cluster }),
        );
        const template = new aws.fis.ExperimentTemplate(
            `${name}-template`,
            {
                description: t.description,
                actions: t.actions,
                targets: t.targets,
                experimentOptions: t.experimentOptions,
                roleArn: role.arn,
                stopConditions: args.stopAlarmArns.map((value) => ({ source: "aws:cloudwatch:alarm", value })),
                // FIS wants the log group's ARN with the :* suffix (the provider's arn attribute lacks it): built from
                // the name, known at preview, once the group exists.
                logConfiguration: {
                    logSchemaVersion: 2,
                    cloudwatchLogsConfiguration: { logGroupArn: pulumi.all([context, logGroup.name]).apply(([[partition, accountId], group]) => `arn:${partition}:logs:${args.region}:${accountId}:log-group:${group}:*`) },
                },
                tags: { Name: names.template },
            },
            // The policy first: FIS checks the role when an experiment starts, and a template without it cannot run.
            { ...child, dependsOn: [rolePolicy] },
        );

        if (args.syntheticWorkload ?? true) this.createWorkloadIdentity(name, args, names, context);

        this.templateId = template.id;
        this.experimentRoleArn = role.arn;
        this.logGroupName = logGroup.name;
        this.templateName = names.template;
        this.registerOutputs({ templateId: this.templateId, experimentRoleArn: this.experimentRoleArn, logGroupName: this.logGroupName, templateName: this.templateName });
    }

    /** The role the synthetic workers get through Pod Identity: the drill's temporary queues only. */
    private createWorkloadIdentity(name: string, args: SpotInterruptionDrillArgs, names: ReturnType<typeof drillNames>, context: pulumi.Output<[string, string]>): void {
        const child = { parent: this };
        const workloadRole = new aws.iam.Role(
            `${name}-workload-role`,
            {
                name: names.workloadRole,
                description: "The spot interruption drill's synthetic workers: its temporary SQS queues only",
                assumeRolePolicy: JSON.stringify({
                    Version: "2012-10-17",
                    Statement: [{ Effect: "Allow", Principal: { Service: "pods.eks.amazonaws.com" }, Action: ["sts:AssumeRole", "sts:TagSession"] }],
                }),
            },
            { ...child, deleteBeforeReplace: true },
        );
        new aws.iam.RolePolicy(
            `${name}-workload-policy`,
            {
                name: "drill-queues",
                role: workloadRole.name,
                policy: context.apply(([partition, accountId]) => JSON.stringify(workloadRolePolicy({ partition, region: args.region, accountId, queuePrefix: names.queuePrefix }))),
            },
            child,
        );
        // The drill creates the namespace and service account for each run; the association waits for them.
        new aws.eks.PodIdentityAssociation(
            `${name}-workload-pod-identity`,
            {
                clusterName: args.clusterName,
                namespace: args.workloadNamespace ?? DRILL_NAMESPACE,
                serviceAccount: args.workloadServiceAccount ?? DRILL_SERVICE_ACCOUNT,
                roleArn: workloadRole.arn,
            },
            child,
        );
    }
}
