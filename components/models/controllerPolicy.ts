// The Karpenter controller's IAM policies, statement for statement as in the v1.14.1 getting-started
// CloudFormation template (website/.../getting-started-with-karpenter/cloudformation.yaml), its fixed AWS names and
// Helm releases. Kept as plain data, without Pulumi, so that tests can compare it with the reference, a reviewer can
// diff it on a Karpenter upgrade, and config validation and the commands read it without loading the SDKs.

export interface PolicyContext {
    partition: string;
    region: string;
    accountId: string;
    clusterName: string;
    /** The node role Karpenter passes to EC2 instances. */
    nodeRoleArn: string;
    /** The interruption queue's ARN. */
    queueArn: string;
}

export interface PolicyStatement {
    Sid?: string;
    Effect: "Allow" | "Deny";
    Resource: string | string[];
    Action: string | string[];
    Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
    Version: "2012-10-17";
    Statement: PolicyStatement[];
}

/** One managed policy per concern, named and split as upstream does (each stays well under IAM's 6,144 characters). */
export type ControllerPolicyKey = "node-lifecycle" | "iam-integration" | "eks-integration" | "interruption" | "zonal-shift" | "resource-discovery";

export function controllerPolicies(c: PolicyContext): Record<ControllerPolicyKey, PolicyDocument> {
    const { partition: p, region: r, accountId: a, clusterName: cluster } = c;
    const ec2 = (resource: string) => `arn:${p}:ec2:${r}:*:${resource}`;
    const clusterOwned = `kubernetes.io/cluster/${cluster}`;
    const taggedByKarpenter = ec2Resources(p, r);
    const instanceProfiles = `arn:${p}:iam::${a}:instance-profile/*`;
    const clusterArn = `arn:${p}:eks:${r}:${a}:cluster/${cluster}`;
    const doc = (...Statement: PolicyStatement[]): PolicyDocument => ({ Version: "2012-10-17", Statement });

    return {
        "node-lifecycle": doc(
            {
                Sid: "AllowScopedEC2InstanceAccessActions",
                Effect: "Allow",
                Resource: [
                    `arn:${p}:ec2:${r}::image/*`,
                    `arn:${p}:ec2:${r}::snapshot/*`,
                    ec2("security-group/*"),
                    ec2("subnet/*"),
                    ec2("capacity-reservation/*"),
                    ec2("placement-group/*"),
                ],
                Action: ["ec2:RunInstances", "ec2:CreateFleet"],
            },
            {
                Sid: "AllowScopedEC2LaunchTemplateAccessActions",
                Effect: "Allow",
                Resource: ec2("launch-template/*"),
                Action: ["ec2:RunInstances", "ec2:CreateFleet"],
                Condition: {
                    StringEquals: { [`aws:ResourceTag/${clusterOwned}`]: "owned" },
                    StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" },
                },
            },
            {
                Sid: "AllowScopedEC2InstanceActionsWithTags",
                Effect: "Allow",
                Resource: taggedByKarpenter,
                Action: ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                Condition: {
                    StringEquals: { [`aws:RequestTag/${clusterOwned}`]: "owned", "aws:RequestTag/eks:eks-cluster-name": cluster },
                    StringLike: { "aws:RequestTag/karpenter.sh/nodepool": "*" },
                },
            },
            {
                Sid: "AllowScopedResourceCreationTagging",
                Effect: "Allow",
                Resource: taggedByKarpenter,
                Action: "ec2:CreateTags",
                Condition: {
                    StringEquals: {
                        [`aws:RequestTag/${clusterOwned}`]: "owned",
                        "aws:RequestTag/eks:eks-cluster-name": cluster,
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    },
                    StringLike: { "aws:RequestTag/karpenter.sh/nodepool": "*" },
                },
            },
            {
                Sid: "AllowScopedResourceTagging",
                Effect: "Allow",
                Resource: ec2("instance/*"),
                Action: "ec2:CreateTags",
                Condition: {
                    StringEquals: { [`aws:ResourceTag/${clusterOwned}`]: "owned" },
                    StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" },
                    StringEqualsIfExists: { "aws:RequestTag/eks:eks-cluster-name": cluster },
                    "ForAllValues:StringEquals": { "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"] },
                },
            },
            {
                Sid: "AllowScopedDeletion",
                Effect: "Allow",
                Resource: [ec2("instance/*"), ec2("launch-template/*")],
                Action: ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                Condition: {
                    StringEquals: { [`aws:ResourceTag/${clusterOwned}`]: "owned" },
                    StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" },
                },
            },
        ),
        "iam-integration": doc(
            {
                Sid: "AllowPassingInstanceRole",
                Effect: "Allow",
                Resource: c.nodeRoleArn,
                Action: "iam:PassRole",
                Condition: { StringEquals: { "iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"] } },
            },
            {
                Sid: "AllowScopedInstanceProfileCreationActions",
                Effect: "Allow",
                Resource: instanceProfiles,
                Action: ["iam:CreateInstanceProfile"],
                Condition: {
                    StringEquals: {
                        [`aws:RequestTag/${clusterOwned}`]: "owned",
                        "aws:RequestTag/eks:eks-cluster-name": cluster,
                        "aws:RequestTag/topology.kubernetes.io/region": r,
                    },
                    StringLike: { "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*" },
                },
            },
            {
                Sid: "AllowScopedInstanceProfileTagActions",
                Effect: "Allow",
                Resource: instanceProfiles,
                Action: ["iam:TagInstanceProfile"],
                Condition: {
                    StringEquals: {
                        [`aws:ResourceTag/${clusterOwned}`]: "owned",
                        "aws:ResourceTag/topology.kubernetes.io/region": r,
                        [`aws:RequestTag/${clusterOwned}`]: "owned",
                        "aws:RequestTag/eks:eks-cluster-name": cluster,
                        "aws:RequestTag/topology.kubernetes.io/region": r,
                    },
                    StringLike: {
                        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    },
                },
            },
            {
                Sid: "AllowScopedInstanceProfileActions",
                Effect: "Allow",
                Resource: instanceProfiles,
                Action: ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
                Condition: {
                    StringEquals: { [`aws:ResourceTag/${clusterOwned}`]: "owned", "aws:ResourceTag/topology.kubernetes.io/region": r },
                    StringLike: { "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*" },
                },
            },
        ),
        "eks-integration": doc({ Sid: "AllowAPIServerEndpointDiscovery", Effect: "Allow", Resource: clusterArn, Action: "eks:DescribeCluster" }),
        interruption: doc({
            Sid: "AllowInterruptionQueueActions",
            Effect: "Allow",
            Resource: c.queueArn,
            Action: ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }),
        "zonal-shift": doc({
            Sid: "AllowZonalShiftStatusReadOnly",
            Effect: "Allow",
            Resource: "*",
            Action: ["arc-zonal-shift:GetManagedResource"],
            Condition: { StringEquals: { "arc-zonal-shift:ResourceIdentifier": clusterArn } },
        }),
        "resource-discovery": doc(
            {
                Sid: "AllowRegionalReadActions",
                Effect: "Allow",
                Resource: "*",
                Action: [
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribePlacementGroups",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                Condition: { StringEquals: { "aws:RequestedRegion": r } },
            },
            { Sid: "AllowSSMReadActions", Effect: "Allow", Resource: `arn:${p}:ssm:${r}::parameter/aws/service/*`, Action: "ssm:GetParameter" },
            { Sid: "AllowPricingReadActions", Effect: "Allow", Resource: "*", Action: "pricing:GetProducts" },
            { Sid: "AllowUnscopedInstanceProfileListAction", Effect: "Allow", Resource: "*", Action: "iam:ListInstanceProfiles" },
            { Sid: "AllowInstanceProfileReadActions", Effect: "Allow", Resource: instanceProfiles, Action: "iam:GetInstanceProfile" },
        ),
    };
}

/** The resources Karpenter creates and must tag with the cluster and NodePool on creation. */
function ec2Resources(p: string, r: string): string[] {
    return ["fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request"].map(
        (kind) => `arn:${p}:ec2:${r}:*:${kind}/*`,
    );
}

/** The interruption queue's resource policy: EventBridge (and SQS) may send; nothing may use plain HTTP. */
export function interruptionQueuePolicy(queueArn: string) {
    return {
        Version: "2012-10-17",
        Id: "EC2InterruptionPolicy",
        Statement: [
            {
                Effect: "Allow",
                Principal: { Service: ["events.amazonaws.com", "sqs.amazonaws.com"] },
                Action: "sqs:SendMessage",
                Resource: queueArn,
            },
            {
                Sid: "DenyHTTP",
                Effect: "Deny",
                Action: "sqs:*",
                Resource: queueArn,
                Condition: { Bool: { "aws:SecureTransport": false } },
                Principal: "*",
            },
        ],
    };
}

/** The EventBridge rules that feed the interruption queue: the five of the reference template. */
export const interruptionRules = [
    { key: "health", suffix: "health-event", source: "aws.health", detailType: "AWS Health Event" },
    { key: "spot-interruption", suffix: "spot-interruption", source: "aws.ec2", detailType: "EC2 Spot Instance Interruption Warning" },
    { key: "rebalance", suffix: "rebalance", source: "aws.ec2", detailType: "EC2 Instance Rebalance Recommendation" },
    { key: "state-change", suffix: "state-change", source: "aws.ec2", detailType: "EC2 Instance State-change Notification" },
    {
        key: "capacity-reservation-interruption",
        suffix: "odcr-interruption",
        source: "aws.ec2",
        detailType: "EC2 Capacity Reservation Instance Interruption Warning",
    },
] as const;
/** AWS limits on the fixed names this component creates (and on GC Notify's queue names, stacks/config.ts). */
export const NAME_LIMITS = { "IAM role": 64, "SQS queue": 80, "EventBridge rule": 64, "IAM policy": 128 } as const;

/** The fixed AWS names derived from a prefix, with the AWS limit that applies to each. */
export function controllerNames(prefix: string) {
    const policyKeys: ControllerPolicyKey[] = ["node-lifecycle", "iam-integration", "eks-integration", "interruption", "zonal-shift", "resource-discovery"];
    return {
        controllerRole: `${prefix}-karpenter`,
        nodeRole: `${prefix}-karpenter-node`,
        queue: `${prefix}-karpenter`,
        rules: Object.fromEntries(interruptionRules.map((r) => [r.key, `${prefix}-${r.suffix}`])) as Record<string, string>,
        policies: Object.fromEntries(policyKeys.map((k) => [k, `${prefix}-karpenter-${k}`])) as Record<ControllerPolicyKey, string>,
    };
}

/** Each derived name that AWS would reject, as a sentence; empty when the prefix is fine. */
export function controllerNameProblems(prefix: string): string[] {
    const n = controllerNames(prefix);
    const named: [keyof typeof NAME_LIMITS, string][] = [
        ["IAM role", n.controllerRole],
        ["IAM role", n.nodeRole],
        ["SQS queue", n.queue],
        ...Object.values(n.rules).map((r): [keyof typeof NAME_LIMITS, string] => ["EventBridge rule", r]),
        ...Object.values(n.policies).map((p): [keyof typeof NAME_LIMITS, string] => ["IAM policy", p]),
    ];
    return named
        .filter(([kind, name]) => name.length > NAME_LIMITS[kind])
        .map(([kind, name]) => `gives the ${kind} name "${name}" ${name.length} characters; AWS allows at most ${NAME_LIMITS[kind]}`);
}

/** AWS managed policies of a node role, as in the reference template; a created cluster's stable nodes get the same. */
export const NODE_ROLE_POLICIES = ["AmazonEKS_CNI_Policy", "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"];

/** Helm release names, in the controller's namespace; the chart names the controller Deployment after its release. */
export const CRD_RELEASE = "karpenter-crd";

export const CONTROLLER_RELEASE = "karpenter";

/**
 * Revisions Helm keeps of each of the program's releases (one Secret `sh.helm.release.v1.<release>.v<n>` each).
 * pulumi-kubernetes passes `maxHistory` to Helm's upgrade only, and unset it is 0, no limit (v4.32.0
 * provider/pkg/provider/helm_release.go:743-746); Helm then prunes the oldest at each upgrade and rollback
 * (helm v3.20.2 pkg/action/upgrade.go:170, pkg/storage/storage.go:62-64). Ten is enough to `helm rollback` by hand.
 */
export const RELEASE_HISTORY = 10;

/**
 * What the program's Karpenter releases carry as their description in Helm's release record (`helm history`; the
 * release Secret's `info.description`), so a release left in the cluster, such as the retained `karpenter-crd` after
 * `pulumi destroy`, can be told apart from one GC Notify's helmfile installed. Helm stores it on install and on every
 * successful upgrade (helm v3.20.2 pkg/action/install.go:486-487, upgrade.go:367-368; pulumi-kubernetes v4.32.0
 * helm_release.go:623,748); a failed upgrade or a rollback replaces it with Helm's own text for that revision.
 */
export function releaseDescription(project: string, stack: string): string {
    return `managed by Pulumi stack ${project}/${stack}`;
}

export function dnsSuffix(partition: string): string {
    return partition === "aws-cn" ? "amazonaws.com.cn" : "amazonaws.com";
}
