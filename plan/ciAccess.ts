// What GC Notify's Terraform (cds-snc/notification-terraform, read at c446304c) must hold so that this repository's
// CI can run the program against a stack's cluster: two GitHub OIDC roles (preview: read only; up: deploy), their IAM
// policies, and the cluster identities they map to. `npm run plan -- --stack <s>` writes them to
// plan-out/<s>/ci-access/ for each stack on an existing cluster (GC Notify's), ready to paste, in `terraform fmt`'s
// layout (notification-terraform's pull requests run `terragrunt run-all fmt --check`), each file named for its stack
// so that both stacks' files sit side by side in one folder:
// - notify-karpenter-<s>-ci-roles.tf -> aws/github/ (beside iam_roles.tf: provider aws.core_services, `count` on
//   var.env, the account's GitHub OIDC provider as the gh_oidc_role module finds it; and this repository's GHA_VPN_*
//   secrets, as manifest-secrets.tf writes notification-manifests');
// - notify-karpenter-<s>-aws-auth-roles.hcl -> aws/aws-auth/aws-auth.tf, one more list in aws_auth_roles' concat(),
//   as the helmfile apply roles are mapped (authentication mode CONFIG_MAP, GC Notify's: no access_config);
// - notify-karpenter-<s>-access-entries.tf -> aws/eks/ instead, when the cluster's mode is API or API_AND_CONFIG_MAP;
// - preview-policy.json, up-policy.json (and drill-policy.json): the policies as IAM reads them, for review.
import { NODE_ROLE_POLICIES, controllerNames } from "../components/models/controllerPolicy.ts";
import { PREVIEW_GROUP } from "../components/models/previewAccess.ts";
import { SPOT_INTERRUPTION_ACTION, drillNames } from "../components/models/fis.ts";
import type { StackConfig } from "../stacks/config.ts";
import type { RecordedResource } from "./offlineRuntime.ts";

export { PREVIEW_GROUP };

/**
 * The GitHub repository whose workflows may assume the roles. A constant, not config: both stacks' roles trust the
 * same repository, and a stack file is no place to widen that trust.
 */
export const REPOSITORY = "cds-snc/notify-karpenter";

/** The folder of the plan's output, and its files: those GC Notify's repository takes carry the stack's name. */
export const CI_ACCESS_DIR = "ci-access";
export function ciAccessFileNames(stack: string) {
    return {
        readme: "README.md",
        roles: `notify-karpenter-${stack}-ci-roles.tf`,
        awsAuth: `notify-karpenter-${stack}-aws-auth-roles.hcl`,
        accessEntries: `notify-karpenter-${stack}-access-entries.tf`,
        previewPolicy: "preview-policy.json",
        upPolicy: "up-policy.json",
        drillPolicy: "drill-policy.json",
    } as const;
}

/** The component that gives PREVIEW_GROUP its Kubernetes rights (components/previewReadAccess.ts). */
export const PREVIEW_READ_ACCESS = "PreviewReadAccess component";

/** This repository's secrets that notification-terraform keeps in step (aws/github/manifest-secrets.tf writes the same for notification-manifests). */
const VPN_SECRETS = [
    { secret: "GHA_VPN_ID", variable: "gha_vpn_id" },
    { secret: "GHA_VPN_CERT", variable: "gha_vpn_certificate" },
    { secret: "GHA_VPN_KEY", variable: "gha_vpn_key" },
];

/**
 * IAM's limit for a managed policy document, whitespace not counted (IAM User Guide, "IAM and AWS STS quotas"), and
 * the most a generated document may use of it, so that one more statement never fails notification-terraform's apply.
 */
export const IAM_POLICY_CHARACTERS = 6144;
export const POLICY_CHARACTERS_BUDGET = 5500;

/**
 * The roles' MaxSessionDuration: CI asks for three-hour sessions (pulumi.yml, role-duration-seconds 10800), longer than
 * the up job may run (150 minutes), and STS refuses a session longer than the role allows.
 */
export const MAX_SESSION_SECONDS = 10800;

/**
 * The GitHub environments whose jobs may assume each role. Pull requests' previews run in `<stack>-preview`; the up
 * in `<stack>`, which has no reviewers: production's are on `production-approval`, a job of no role or secret
 * before the up, so that an approval never waits inside the stack's concurrency group (engine-ci-review-2 EN2-F3).
 */
export function ciEnvironments(stack: string): { preview: string[]; up: string[] } {
    return { preview: [`${stack}-preview`, `${stack}-drift`], up: [stack] };
}

/** GitHub's OIDC subject for a job that names an environment (GitHub docs, "About security hardening with OpenID Connect"). */
export const environmentSubject = (environment: string) => `repo:${REPOSITORY}:environment:${environment}`;

export function ciRoleNames(stack: string): { preview: string; up: string } {
    return { preview: `notify-karpenter-${stack}-preview`, up: `notify-karpenter-${stack}-up` };
}

/** IAM's longest role name (IAM API reference, CreateRole: RoleName, 1 to 64 characters). */
const IAM_ROLE_NAME_MAX = 64;

/** Why CI's role names for `stack` would be too long for IAM (the plan refuses the stack), or undefined. */
export function ciRoleNameProblem(stack: string): string | undefined {
    const longest = Object.values(ciRoleNames(stack)).reduce((a, b) => (b.length > a.length ? b : a));
    if (longest.length <= IAM_ROLE_NAME_MAX) return undefined;
    const most = IAM_ROLE_NAME_MAX - (longest.length - stack.length);
    return `the stack name "${stack}" (${stack.length} characters) makes CI's role ${longest} ${longest.length} characters long, and IAM role names are at most ${IAM_ROLE_NAME_MAX} (CreateRole, RoleName), so GC Notify's Terraform could not create it: a stack on an existing cluster may have a name of at most ${most} characters`;
}

/** An IAM policy as IAM reads it. ARNs hold Terraform's `${var.account_id}` and `${var.region}`, filled in by GC Notify's Terraform. */
export interface PolicyStatement {
    Sid: string;
    Effect: "Allow";
    Action: string[];
    Resource: string[];
    /** operator -> key -> values, as IAM's Condition element. */
    Condition?: Record<string, Record<string, string[]>>;
}
export interface PolicyDocument {
    Version: "2012-10-17";
    Statement: PolicyStatement[];
}

/** `sts:GetCallerIdentity` needs no permission (STS API reference, GetCallerIdentity): no policy lists it. */
export const NO_PERMISSION_NEEDED = ["sts:GetCallerIdentity"];

/**
 * Every AWS call preflight makes (ops/preflightChecks.ts gatherAws), by its IAM action. tests/ciAccess.spec.ts runs
 * preflight against the fake AWS and fails on any call the preview policy does not allow.
 */
export const PREFLIGHT_ACTIONS = [
    "sts:GetCallerIdentity",
    "eks:DescribeCluster",
    "eks:DescribeAddon",
    "eks:ListAddons",
    "ec2:DescribeImages",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstanceTypeOfferings",
    "iam:GetRole",
    "iam:GetPolicy",
    "sqs:GetQueueUrl",
    "sqs:GetQueueAttributes",
    "sqs:ListQueueTags",
    "events:DescribeRule",
    "events:ListTagsForResource",
    "sns:GetTopicAttributes",
    "sns:ListSubscriptionsByTopic",
    "kms:DescribeKey",
    "kms:GetKeyPolicy",
    "logs:DescribeLogGroups",
    "logs:FilterLogEvents",
    "logs:StartQuery",
    "logs:GetQueryResults",
    "logs:StopQuery",
];

/**
 * The workflow's own AWS calls (pulumi.yml): the credentials check, the kubeconfig, the token `aws eks get-token`
 * presigns, and for client-vpn stacks the gha-vpn endpoint's client configuration (as GC Notify's setup-cluster-access).
 */
function workflowActions(access: StackConfig["cluster"]["access"]): string[] {
    return ["sts:GetCallerIdentity", "eks:DescribeCluster", ...(access === "client-vpn" ? ["ec2:ExportClientVpnClientConfiguration"] : [])];
}

/**
 * What each data source the program reads (stacks/lookups.ts, stacks/cluster.ts, components) calls, by invoke token,
 * in terraform-provider-aws (which pulumi-aws 7 bridges). The log group's data source lists its tags after the read
 * (internal/service/logs/group_data_source.go is @Tags(identifierAttribute="arn"), engine-review W2). The provider's
 * own configure calls sts:GetCallerIdentity.
 */
const LOOKUP_ACTIONS: Record<string, string[]> = {
    "aws:eks/getCluster:getCluster": ["eks:DescribeCluster"],
    "aws:eks/getAddon:getAddon": ["eks:DescribeAddon"],
    "aws:cloudwatch/getLogGroup:getLogGroup": ["logs:DescribeLogGroups", "logs:ListTagsForResource"],
    "aws:ec2/getAmi:getAmi": ["ec2:DescribeImages"],
    "aws:iam/getRole:getRole": ["iam:GetRole"],
};

/**
 * What a refresh (`pulumi preview --refresh`, every PR and drift run) reads of each AWS resource type the program
 * creates: the resource's Read in terraform-provider-aws, with its tags (the tags interceptor lists them).
 */
const REFRESH_ACTIONS: Record<string, string[]> = {
    "aws:iam/role:Role": ["iam:GetRole", "iam:ListRoleTags", "iam:ListRolePolicies", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies"],
    "aws:iam/policy:Policy": ["iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyTags"],
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ["iam:ListAttachedRolePolicies"],
    "aws:iam/serviceLinkedRole:ServiceLinkedRole": ["iam:GetRole"],
    "aws:sqs/queue:Queue": ["sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ListQueueTags"],
    "aws:sqs/queuePolicy:QueuePolicy": ["sqs:GetQueueAttributes"],
    "aws:cloudwatch/eventRule:EventRule": ["events:DescribeRule", "events:ListTagsForResource"],
    "aws:cloudwatch/eventTarget:EventTarget": ["events:ListTargetsByRule"],
    "aws:cloudwatch/metricAlarm:MetricAlarm": ["cloudwatch:DescribeAlarms", "cloudwatch:ListTagsForResource"],
    "aws:cloudwatch/dashboard:Dashboard": ["cloudwatch:GetDashboard"],
    "aws:cloudwatch/logMetricFilter:LogMetricFilter": ["logs:DescribeMetricFilters"],
    "aws:cloudwatch/logGroup:LogGroup": ["logs:DescribeLogGroups", "logs:ListTagsForResource"],
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ["eks:DescribePodIdentityAssociation"],
    "aws:eks/accessEntry:AccessEntry": ["eks:DescribeAccessEntry"],
    "aws:sns/topic:Topic": ["sns:GetTopicAttributes", "sns:ListTagsForResource"],
    "aws:sns/topicSubscription:TopicSubscription": ["sns:GetSubscriptionAttributes"],
    "aws:kms/key:Key": ["kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags"],
    "aws:kms/alias:Alias": ["kms:ListAliases"],
    "aws:iam/rolePolicy:RolePolicy": ["iam:GetRolePolicy"],
    "aws:fis/experimentTemplate:ExperimentTemplate": ["fis:GetExperimentTemplate", "fis:ListTagsForResource"],
};

/** What the plan recorded of a stack: its resources and its data-source calls. */
export interface PlanRecording {
    resources: Pick<RecordedResource, "type" | "name" | "custom" | "inputs">[];
    calls: { token: string }[];
}

const awsResources = (r: PlanRecording) => r.resources.filter((x) => x.custom && x.type.startsWith("aws:"));
const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

/** The AWS actions the preview role needs for a stack, from all four sources; `unknown` lists lookups and types with no entry. */
export function previewActions(cfg: StackConfig, rec: PlanRecording): { actions: string[]; unknown: string[] } {
    const unknown: string[] = [];
    const lookups = sorted(rec.calls.map((c) => c.token).filter((t) => t.startsWith("aws:")));
    const types = sorted(awsResources(rec).map((r) => r.type));
    const fromLookups = lookups.flatMap((t) => LOOKUP_ACTIONS[t] ?? (unknown.push(`lookup ${t}`), []));
    const fromRefresh = types.flatMap((t) => REFRESH_ACTIONS[t] ?? (unknown.push(`refresh of ${t}`), []));
    return { actions: sorted([...PREFLIGHT_ACTIONS, ...workflowActions(cfg.cluster.access), ...fromLookups, ...fromRefresh]), unknown };
}

const ACCOUNT = "${var.account_id}";
const REGION = "${var.region}";
const arn = (service: string, resource: string, region = REGION) => `arn:aws:${service}:${region}:${ACCOUNT}:${resource}`;
const iamArn = (resource: string) => `arn:aws:iam::${ACCOUNT}:${resource}`;
const logGroupArns = (name: string) => [arn("logs", `log-group:${name}`), arn("logs", `log-group:${name}:*`)];

/** What reads log events, allowed on the configured log group only: the controller's lines, the task durations' query. */
const LOG_EVENT_READS = ["logs:FilterLogEvents", "logs:StartQuery"];
/** The queue reads (every SQS action the role needs), allowed on the interruption queue and GC Notify's Celery queues only. */
const QUEUE_READS = ["sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ListQueueTags"];

/**
 * The preview role's policy: every read preflight, the workflow, the program's lookups and a refresh of the stack's
 * resources make (Resource "*": most of them have no resource-level permissions); the queue reads on the interruption
 * queue and the queues of placement.burst.queuePrefix only (GC Notify's Celery queues, whose visibility timeouts
 * preflight reads); the log events of the configured group only (FilterLogEvents, and StartQuery, which names the
 * groups a query reads; GetQueryResults and StopQuery take a query's ID and no group, so "*"); and for client-vpn
 * stacks the gha-vpn endpoint's client configuration, as GC Notify's helmfile apply policy allows it
 * (aws/github/iam_policies.tf). Not AWS's ReadOnlyAccess: that one also reads every S3 object (GC Notify's Terraform
 * state among them) and every log group's events.
 */
export function previewPolicy(cfg: StackConfig, rec: PlanRecording): PolicyDocument {
    const { actions } = previewActions(cfg, rec);
    const vpn = "ec2:ExportClientVpnClientConfiguration";
    const scoped = new Set([...LOG_EVENT_READS, ...QUEUE_READS, vpn, ...NO_PERMISSION_NEEDED]);
    const interruptionQueue = controllerNames(cfg.controller.namePrefix ?? cfg.cluster.name).queue;
    const statements: PolicyStatement[] = [
        { Sid: "PreflightLookupsAndRefresh", Effect: "Allow", Action: actions.filter((a) => !scoped.has(a)), Resource: ["*"] },
        { Sid: "Queues", Effect: "Allow", Action: QUEUE_READS.filter((a) => actions.includes(a)), Resource: [arn("sqs", interruptionQueue), arn("sqs", `${cfg.placement.burst.queuePrefix}*`)] },
        { Sid: "ApplicationLogEvents", Effect: "Allow", Action: LOG_EVENT_READS, Resource: logGroupArns(cfg.alarms.logGroupName) },
    ];
    if (actions.includes(vpn)) statements.push({ Sid: "GhaVpnClientConfiguration", Effect: "Allow", Action: [vpn], Resource: [arn("ec2", "client-vpn-endpoint/*")] });
    return { Version: "2012-10-17", Statement: statements };
}

/**
 * The up role's own policy (it also holds the preview policy): create, change, tag and delete what the program
 * creates, each on its names only: the controller's `<prefix>-karpenter*` roles and policies (attachable only to
 * those roles, and only those policies and the node role's managed ones), the queue, the five rules, the
 * `<cluster>-*` alarms, the dashboard, the metric filters of the configured log group, the Pod Identity association
 * of the controller's role (PassRole to pods.eks.amazonaws.com only); in `drill`, the spot interruption drill's roles
 * and template when the stack has them. `unknown` lists AWS resource types the plan has that no statement here covers.
 */
export function upPolicy(cfg: StackConfig, rec: PlanRecording): { policy: PolicyDocument; drill?: PolicyDocument; unknown: string[] } {
    const c = cfg.controller;
    const prefix = c.namePrefix ?? cfg.cluster.name;
    const names = controllerNames(prefix);
    const drill = drillNames(prefix);
    const cluster = cfg.cluster.name;
    const types = new Set(awsResources(rec).map((r) => r.type));
    const has = (t: string) => types.has(t);
    const roles = iamArn(`role/${prefix}-karpenter*`);
    const policies = iamArn(`policy/${prefix}-karpenter-*`);
    const statements: PolicyStatement[] = [];
    const drillStatements: PolicyStatement[] = [];
    const covered = new Set<string>();
    const add = (type: string | string[], s: PolicyStatement) => {
        for (const t of [type].flat()) covered.add(t);
        statements.push(s);
    };
    if (has("aws:iam/role:Role")) {
        add("aws:iam/role:Role", {
            Sid: "KarpenterRoles",
            Effect: "Allow",
            Action: ["iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:ListInstanceProfilesForRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListRoleTags", "iam:TagRole", "iam:UntagRole", "iam:UpdateAssumeRolePolicy", "iam:UpdateRole", "iam:UpdateRoleDescription"],
            Resource: [roles],
        });
    }
    if (has("aws:iam/policy:Policy")) {
        add("aws:iam/policy:Policy", {
            Sid: "KarpenterPolicies",
            Effect: "Allow",
            Action: ["iam:CreatePolicy", "iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyTags", "iam:ListPolicyVersions", "iam:TagPolicy", "iam:UntagPolicy"],
            Resource: [policies],
        });
    }
    if (has("aws:iam/rolePolicyAttachment:RolePolicyAttachment")) {
        // Only these policies: the up role cannot attach AdministratorAccess to a role it made.
        const managed = c.existingNodeRoleName ? [] : [...NODE_ROLE_POLICIES.map((p) => `arn:aws:iam::aws:policy/${p}`), ...(c.nodeRolePolicyArns ?? [])];
        add("aws:iam/rolePolicyAttachment:RolePolicyAttachment", {
            Sid: "AttachOnlyKarpenterPolicies",
            Effect: "Allow",
            Action: ["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
            Resource: [roles],
            Condition: { ArnLike: { "iam:PolicyARN": [policies, ...managed] } },
        });
    }
    if (has("aws:iam/serviceLinkedRole:ServiceLinkedRole")) {
        add("aws:iam/serviceLinkedRole:ServiceLinkedRole", {
            Sid: "SpotServiceLinkedRole",
            Effect: "Allow",
            Action: ["iam:CreateServiceLinkedRole", "iam:DeleteServiceLinkedRole", "iam:GetServiceLinkedRoleDeletionStatus", "iam:GetRole", "iam:TagRole"],
            Resource: [iamArn("role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot")],
            Condition: { StringLike: { "iam:AWSServiceName": ["spot.amazonaws.com"] } },
        });
    }
    if (has("aws:sqs/queue:Queue")) {
        add(["aws:sqs/queue:Queue", "aws:sqs/queuePolicy:QueuePolicy"], {
            Sid: "InterruptionQueue",
            Effect: "Allow",
            Action: ["sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListQueueTags", "sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:UntagQueue"],
            Resource: [arn("sqs", names.queue)],
        });
    }
    if (has("aws:cloudwatch/eventRule:EventRule")) {
        add(["aws:cloudwatch/eventRule:EventRule", "aws:cloudwatch/eventTarget:EventTarget"], {
            Sid: "InterruptionRules",
            Effect: "Allow",
            Action: ["events:DeleteRule", "events:DescribeRule", "events:DisableRule", "events:EnableRule", "events:ListTagsForResource", "events:ListTargetsByRule", "events:PutRule", "events:PutTargets", "events:RemoveTargets", "events:TagResource", "events:UntagResource"],
            Resource: Object.values(names.rules).map((r) => arn("events", `rule/${r}`)),
        });
    }
    if (has("aws:cloudwatch/metricAlarm:MetricAlarm")) {
        add("aws:cloudwatch/metricAlarm:MetricAlarm", {
            Sid: "Alarms",
            Effect: "Allow",
            Action: ["cloudwatch:DeleteAlarms", "cloudwatch:DescribeAlarms", "cloudwatch:ListTagsForResource", "cloudwatch:PutMetricAlarm", "cloudwatch:TagResource", "cloudwatch:UntagResource"],
            Resource: [arn("cloudwatch", `alarm:${cluster}-*`)],
        });
    }
    if (has("aws:cloudwatch/dashboard:Dashboard")) {
        add("aws:cloudwatch/dashboard:Dashboard", {
            Sid: "Dashboard",
            Effect: "Allow",
            Action: ["cloudwatch:DeleteDashboards", "cloudwatch:GetDashboard", "cloudwatch:PutDashboard"],
            Resource: [`arn:aws:cloudwatch::${ACCOUNT}:dashboard/${cluster}-karpenter`],
        });
    }
    if (has("aws:cloudwatch/logMetricFilter:LogMetricFilter")) {
        add("aws:cloudwatch/logMetricFilter:LogMetricFilter", {
            Sid: "MetricFilters",
            Effect: "Allow",
            Action: ["logs:DeleteMetricFilter", "logs:DescribeMetricFilters", "logs:PutMetricFilter"],
            Resource: logGroupArns(cfg.alarms.logGroupName),
        });
    }
    if (has("aws:cloudwatch/logGroup:LogGroup")) {
        add("aws:cloudwatch/logGroup:LogGroup", {
            Sid: "LogGroup",
            Effect: "Allow",
            Action: ["logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:DeleteRetentionPolicy", "logs:ListTagsForResource", "logs:PutRetentionPolicy", "logs:TagResource", "logs:UntagResource"],
            Resource: [...(cfg.alarms.createLogGroup ? logGroupArns(cfg.alarms.logGroupName) : []), ...(cfg.drill.enabled ? logGroupArns(drill.logGroup) : [])],
        });
    }
    if (has("aws:eks/podIdentityAssociation:PodIdentityAssociation")) {
        add("aws:eks/podIdentityAssociation:PodIdentityAssociation", {
            Sid: "PodIdentityAssociation",
            Effect: "Allow",
            Action: ["eks:CreatePodIdentityAssociation", "eks:DeletePodIdentityAssociation", "eks:DescribePodIdentityAssociation", "eks:TagResource", "eks:UntagResource", "eks:UpdatePodIdentityAssociation"],
            Resource: [arn("eks", `cluster/${cluster}`), arn("eks", `podidentityassociation/${cluster}/*`)],
        });
        // EKS checks that the caller may pass the role it associates (EKS User Guide, Pod Identity associations).
        statements.push({
            Sid: "PassControllerRoleToPodIdentity",
            Effect: "Allow",
            Action: ["iam:PassRole"],
            Resource: [iamArn(`role/${names.controllerRole}`), ...(has("aws:fis/experimentTemplate:ExperimentTemplate") && cfg.controller.identity === "pod-identity" ? [iamArn(`role/${drill.workloadRole}`)] : [])],
            Condition: { StringEquals: { "iam:PassedToService": ["pods.eks.amazonaws.com"] } },
        });
    }
    if (has("aws:fis/experimentTemplate:ExperimentTemplate")) {
        // The spot interruption drill (components/spotInterruptionDrill.ts): its two roles and their inline policies,
        // and its template, whose ID AWS makes (so any template of the account, as FIS's own examples scope it). A
        // policy of their own, attached only where the drill is on: together they would bring the up policy close to
        // IAM's size limit (engine-ci-review-2 EN2-F9).
        for (const t of ["aws:fis/experimentTemplate:ExperimentTemplate", "aws:iam/rolePolicy:RolePolicy"]) covered.add(t);
        drillStatements.push({
            Sid: "DrillRoles",
            Effect: "Allow",
            Action: ["iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:ListInstanceProfilesForRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListRoleTags", "iam:TagRole", "iam:UntagRole", "iam:UpdateAssumeRolePolicy", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"],
            Resource: [iamArn(`role/${drill.experimentRole}`), iamArn(`role/${drill.workloadRole}`)],
        });
        drillStatements.push({
            Sid: "DrillTemplate",
            Effect: "Allow",
            Action: ["fis:CreateExperimentTemplate", "fis:DeleteExperimentTemplate", "fis:GetExperimentTemplate", "fis:UpdateExperimentTemplate", "fis:ListTagsForResource", "fis:TagResource", "fis:UntagResource"],
            Resource: [arn("fis", "experiment-template/*"), arn("fis", `action/${SPOT_INTERRUPTION_ACTION}`)],
        });
        // FIS checks that the template's creator may pass it its role (AWS FIS User Guide, "IAM roles for AWS FIS experiments").
        drillStatements.push({
            Sid: "PassDrillRoleToFis",
            Effect: "Allow",
            Action: ["iam:PassRole"],
            Resource: [iamArn(`role/${drill.experimentRole}`)],
            Condition: { StringEquals: { "iam:PassedToService": ["fis.amazonaws.com"] } },
        });
    }
    if (has("aws:eks/accessEntry:AccessEntry")) {
        add("aws:eks/accessEntry:AccessEntry", {
            Sid: "NodeRoleAccessEntry",
            Effect: "Allow",
            Action: ["eks:CreateAccessEntry", "eks:DeleteAccessEntry", "eks:DescribeAccessEntry", "eks:TagResource", "eks:UntagResource", "eks:UpdateAccessEntry"],
            Resource: [arn("eks", `cluster/${cluster}`), arn("eks", `access-entry/${cluster}/role/${ACCOUNT}/${names.nodeRole}/*`)],
        });
    }
    const unknown = [...types].filter((t) => !covered.has(t)).sort();
    const document = (x: PolicyStatement[]): PolicyDocument => ({ Version: "2012-10-17", Statement: x });
    return { policy: document(statements), ...(drillStatements.length ? { drill: document(drillStatements) } : {}), unknown };
}

// ---- Terraform, in the shape of notification-terraform's aws/github/iam_roles.tf and iam_policies.tf

const q = (s: string) => JSON.stringify(s);
const tfId = (s: string) => s.replace(/[^A-Za-z0-9_]/g, "_");
const list = (xs: string[], indent: string) => (xs.length <= 1 ? `[${xs.map(q).join(", ")}]` : `[\n${xs.map((x) => `${indent}  ${q(x)},`).join("\n")}\n${indent}]`);

/**
 * Attributes as `terraform fmt` lays them out (hclwrite's Format): the `=` of consecutive one-line attributes aligned,
 * and an attribute whose value spans lines ending the run with a single space before its `=`.
 */
function attributes(indent: string, attrs: [string, string][]): string[] {
    const lines: string[] = [];
    let run: [string, string][] = [];
    const flush = () => {
        const width = Math.max(...run.map(([k]) => k.length));
        lines.push(...run.map(([k, v]) => `${indent}${k.padEnd(width)} = ${v}`));
        run = [];
    };
    for (const [key, value] of attrs) {
        if (!value.includes("\n")) {
            run.push([key, value]);
            continue;
        }
        if (run.length) flush();
        lines.push(`${indent}${key} = ${value}`);
    }
    if (run.length) flush();
    return lines;
}

/** A policy as an aws_iam_policy_document, statement for statement (its `.json` is the document IAM reads). */
function policyDocumentHcl(id: string, when: string, doc: PolicyDocument): string {
    const statement = (s: PolicyStatement) => {
        const conditions = Object.entries(s.Condition ?? {}).flatMap(([test, byKey]) =>
            Object.entries(byKey).map(([variable, values]) => [`    condition {`, ...attributes("      ", [["test", q(test)], ["variable", q(variable)], ["values", list(values, "      ")]]), `    }`].join("\n")),
        );
        const attrs = attributes("    ", [["sid", q(s.Sid)], ["effect", q(s.Effect)], ["actions", list(s.Action, "    ")], ["resources", list(s.Resource, "    ")]]);
        return [`  statement {`, ...attrs, ...(conditions.length ? ["", ...conditions] : []), `  }`].join("\n");
    };
    return [`data "aws_iam_policy_document" "${id}" {`, `  count = ${when}`, "", doc.Statement.map(statement).join("\n\n"), `}`].join("\n");
}

/** The trust of a role: the account's GitHub OIDC provider, for this repository's jobs in these environments only. */
function trustHcl(id: string, when: string, environments: string[]): string {
    const condition = (variable: string, values: string[]) => [`    condition {`, ...attributes("      ", [["test", q("StringEquals")], ["variable", q(variable)], ["values", list(values, "      ")]]), `    }`];
    return [
        `data "aws_iam_policy_document" "${id}" {`,
        `  count = ${when}`,
        "",
        `  statement {`,
        `    effect  = "Allow"`,
        `    actions = ["sts:AssumeRoleWithWebIdentity"]`,
        "",
        `    principals {`,
        `      type        = "Federated"`,
        `      identifiers = [${q(iamArn("oidc-provider/token.actions.githubusercontent.com"))}]`,
        `    }`,
        "",
        ...condition("token.actions.githubusercontent.com:aud", ["sts.amazonaws.com"]),
        "",
        ...condition("token.actions.githubusercontent.com:sub", environments.map(environmentSubject)),
        `  }`,
        `}`,
    ].join("\n");
}

/** The policies of one stack's roles: preview, up, and the drill's where the stack has one. */
export interface CiPolicies {
    preview: PolicyDocument;
    up: PolicyDocument;
    drill?: PolicyDocument;
}

/**
 * The two roles, their trust, their policies and the attachments, for one stack (one GC Notify environment), and this
 * repository's GHA_VPN_* secrets of that environment. Every Terraform name carries the stack's, so both stacks' files
 * can sit in aws/github/ together.
 */
function rolesTerraform(stack: string, policies: CiPolicies): string {
    const when = `var.env == ${q(stack)} ? 1 : 0`;
    const names = ciRoleNames(stack);
    const envs = ciEnvironments(stack);
    const drillName = `notify-karpenter-${stack}-drill`;
    const policyName = { preview: names.preview, up: names.up, drill: drillName };
    const role = (kind: "preview" | "up", description: string, attached: ("preview" | "up" | "drill")[]) => {
        const id = tfId(names[kind]);
        return [
            trustHcl(`${id}_trust`, when, envs[kind]),
            "",
            `resource "aws_iam_role" "${id}" {`,
            `  provider = aws.core_services`,
            `  count    = ${when}`,
            "",
            `  name                 = ${q(names[kind])}`,
            `  description          = ${q(description)}`,
            `  assume_role_policy   = data.aws_iam_policy_document.${id}_trust[0].json`,
            `  max_session_duration = ${MAX_SESSION_SECONDS}`,
            "",
            `  tags = {`,
            `    CostCenter = var.billing_tag_value`,
            `    Terraform  = "true"`,
            `  }`,
            `}`,
            ...attached.flatMap((p) => [
                "",
                `resource "aws_iam_role_policy_attachment" "${id}_${p}" {`,
                `  provider = aws.core_services`,
                `  count    = ${when}`,
                "",
                `  role       = aws_iam_role.${id}[0].name`,
                `  policy_arn = aws_iam_policy.${tfId(policyName[p])}[0].arn`,
                `}`,
            ]),
        ].join("\n");
    };
    const policy = (kind: "preview" | "up" | "drill", doc: PolicyDocument) => {
        const id = tfId(policyName[kind]);
        return [
            policyDocumentHcl(id, when, doc),
            "",
            `resource "aws_iam_policy" "${id}" {`,
            `  provider = aws.core_services`,
            `  count    = ${when}`,
            "",
            `  name   = ${q(policyName[kind])}`,
            `  path   = "/"`,
            `  policy = data.aws_iam_policy_document.${id}[0].json`,
            `}`,
        ].join("\n");
    };
    const repo = REPOSITORY.split("/")[1];
    const repoId = tfId(`notify-karpenter-${stack}`);
    const secrets = [
        `data "github_repository" "${repoId}" {`,
        `  count = ${when}`,
        `  name  = ${q(repo)}`,
        `}`,
        ...VPN_SECRETS.flatMap(({ secret, variable }) => [
            "",
            `resource "github_actions_secret" "${repoId}_${secret.toLowerCase()}" {`,
            ...attributes("  ", [["count", when], ["repository", `data.github_repository.${repoId}[0].name`], ["secret_name", `"${secret}_\${upper(var.env)}"`], ["plaintext_value", `var.${variable}`], ["destroy_on_drift", "false"]]),
            `}`,
        ]),
    ].join("\n");
    return [
        header(stack, "aws/github/ (beside iam_roles.tf)"),
        `#`,
        `# ${names.preview}: read only, for previews (pull requests' and main's) and the drift check. Trusted for`,
        `# ${REPOSITORY} in the environments ${envs.preview.join(", ")}; a job that names an environment gets the`,
        `# OIDC subject repo:<repo>:environment:<environment> whatever its event, so pull requests' previews match too.`,
        `# ${names.up}: deploys (pulumi up), in ${envs.up.join(", ")} (deployment branch main). Both allow ${MAX_SESSION_SECONDS / 3600}-hour`,
        `# sessions, which pulumi.yml asks for (role-duration-seconds ${MAX_SESSION_SECONDS}).`,
        `# Plain roles rather than the gh_oidc_role module: its pinned version (64b19ecf, v10.2.1) sets neither`,
        `# max_session_duration nor more than one subject per role.`,
        `# Then ${REPOSITORY}'s GHA_VPN_* secrets, from aws/eks's gha_vpn_* outputs as manifest-secrets.tf writes`,
        `# notification-manifests': they follow the endpoint's certificate when it is renewed.`,
        "",
        role("preview", `notify-karpenter ${stack}: preview, refresh, drift and preflight (read only)`, ["preview"]),
        "",
        policy("preview", policies.preview),
        "",
        role("up", `notify-karpenter ${stack}: pulumi up`, ["preview", "up", ...(policies.drill ? (["drill"] as const) : [])]),
        "",
        policy("up", policies.up),
        ...(policies.drill ? ["", `# The spot interruption drill's roles and template (drill.enabled), apart from the up policy to keep each under IAM's size limit.`, policy("drill", policies.drill)] : []),
        "",
        secrets,
        "",
    ].join("\n");
}

const header = (stack: string, where: string) =>
    [`# Generated by \`npm run plan -- --stack ${stack}\` (notify-karpenter plan/ciAccess.ts): do not edit by hand.`, `# For cds-snc/notification-terraform ${where}; ${stack} only (var.env == "${stack}").`].join("\n");

/**
 * The two roles' aws-auth mappings, as one more list in aws_auth_roles' concat() of aws/aws-auth/aws-auth.tf: the
 * up role to system:masters, as the notification-manifests-helmfile-<env>-apply roles; the preview role to
 * PREVIEW_GROUP, which the stack's PreviewReadAccess binds to reads. Authentication modes CONFIG_MAP (GC Notify's)
 * and API_AND_CONFIG_MAP read it; API ignores it.
 */
function awsAuthRoles(stack: string): string {
    const names = ciRoleNames(stack);
    const entry = (name: string, groups: string[]) =>
        [`      {`, `        rolearn  = ${q(iamArn(`role/${name}`))}`, `        username = ${q(name)}`, `        groups   = [${groups.map(q).join(", ")}]`, `      },`].join("\n");
    // Indented as the arguments of concat() it goes among, comments too, as terraform fmt has them.
    const comments = [header(stack, "aws/aws-auth/aws-auth.tf: add as one more argument of concat() in aws_auth_roles"), `# (authentication mode CONFIG_MAP or API_AND_CONFIG_MAP; in mode API use ${ciAccessFileNames(stack).accessEntries} instead).`];
    return [
        ...comments.join("\n").split("\n").map((l) => `    ${l}`),
        `    var.env == ${q(stack)} ? [`,
        entry(names.up, ["system:masters"]),
        entry(names.preview, [PREVIEW_GROUP]),
        `    ] : [],`,
        "",
    ].join("\n");
}
/**
 * The same identities as EKS access entries, for a cluster in authentication mode API or API_AND_CONFIG_MAP (EKS
 * refuses access entries in CONFIG_MAP): the up role with AmazonEKSClusterAdminPolicy, the preview role in
 * PREVIEW_GROUP only (no access policy: the stack's PreviewReadAccess gives the group its reads).
 */
function accessEntriesTerraform(stack: string): string {
    const when = `var.env == ${q(stack)} ? 1 : 0`;
    const names = ciRoleNames(stack);
    const cluster = "aws_eks_cluster.notification-canada-ca-eks-cluster.name";
    const entry = (kind: "preview" | "up", extra: string[]) => {
        const id = tfId(names[kind]);
        return [
            `resource "aws_eks_access_entry" "${id}" {`,
            `  provider = aws.core_services`,
            `  count    = ${when}`,
            "",
            `  cluster_name  = ${cluster}`,
            `  principal_arn = ${q(iamArn(`role/${names[kind]}`))}`,
            `  type          = "STANDARD"`,
            ...extra,
            `}`,
        ].join("\n");
    };
    const upId = tfId(names.up);
    return [
        header(stack, "aws/eks/ (beside eks.tf)"),
        `# Only when the cluster's authentication mode is API or API_AND_CONFIG_MAP (aws eks describe-cluster --query`,
        `# cluster.accessConfig): EKS refuses access entries in CONFIG_MAP mode, GC Notify's (use ${ciAccessFileNames(stack).awsAuth}).`,
        "",
        entry("up", []),
        "",
        `resource "aws_eks_access_policy_association" "${upId}" {`,
        `  provider = aws.core_services`,
        `  count    = ${when}`,
        "",
        `  cluster_name  = ${cluster}`,
        `  principal_arn = aws_eks_access_entry.${upId}[0].principal_arn`,
        `  policy_arn    = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"`,
        "",
        `  access_scope {`,
        `    type = "cluster"`,
        `  }`,
        `}`,
        "",
        entry("preview", ["", `  # Reads through the group only: the stack's PreviewReadAccess binds it (no access policy).`, `  kubernetes_groups = [${q(PREVIEW_GROUP)}]`]),
        "",
    ].join("\n");
}

function readme(stack: string, cfg: StackConfig, policies: CiPolicies, unknown: string[]): string {
    const names = ciRoleNames(stack);
    const envs = ciEnvironments(stack);
    const f = ciAccessFileNames(stack);
    const { preview, up, drill } = policies;
    return [
        `# CI access for stack ${stack} (generated by \`npm run plan -- --stack ${stack}\`; do not edit)`,
        "",
        `What GC Notify's Terraform (cds-snc/notification-terraform) must hold before this repository's workflows can run`,
        `against cluster ${cfg.cluster.name}. The repository the roles trust is ${REPOSITORY} (\`REPOSITORY\` in`,
        `plan/ciAccess.ts; change it there if the repository moves). The files are as \`terraform fmt\` writes them, and named`,
        `for the stack, so staging's and production's go into the same folders side by side.`,
        "",
        `| file | where | what |`,
        `| --- | --- | --- |`,
        `| ${f.roles} | aws/github/ | roles ${names.preview} (environments ${envs.preview.join(", ")}) and ${names.up} (${envs.up.join(", ")}), their policies; sessions up to ${MAX_SESSION_SECONDS} s; ${REPOSITORY}'s ${VPN_SECRETS.map((v) => `${v.secret}_${stack.toUpperCase()}`).join(", ")} secrets |`,
        `| ${f.awsAuth} | aws/aws-auth/aws-auth.tf, inside concat() of aws_auth_roles | authentication mode CONFIG_MAP (GC Notify's today) or API_AND_CONFIG_MAP: ${names.up} to system:masters, ${names.preview} to group ${PREVIEW_GROUP} |`,
        `| ${f.accessEntries} | aws/eks/ | instead of the aws-auth lines, in mode API (or API_AND_CONFIG_MAP): the same two identities as EKS access entries |`,
        `| ${[f.previewPolicy, f.upPolicy, ...(drill ? [f.drillPolicy] : [])].join(", ")} | nowhere (review) | the policies as IAM reads them, ARNs with Terraform's \${var.account_id} and \${var.region} (${preview.Statement.length}, ${up.Statement.length}${drill ? ` and ${drill.Statement.length}` : ""} statements; the up role holds them all) |`,
        "",
        `Check the mode with \`aws eks describe-cluster --name ${cfg.cluster.name} --query cluster.accessConfig\`; \`npm run preflight\``,
        `prints it (check cluster-access).`,
        "",
        `The secrets need notification-terraform's GitHub provider to reach ${REPOSITORY} (the GitHub App or token it uses`,
        `must be granted that repository). ${stack === "production" ? "Production's aws/github and aws/aws-auth are applied from a notification-terraform release (env/production's terragrunt.hcl sources ref=v${INFRASTRUCTURE_VERSION}): these changes reach production with the next release, not at merge." : "Staging applies them at merge."}`,
        "",
        `Then set each GitHub environment's variable AWS_ROLE_ARN: ${envs.preview.join(" and ")} to arn:aws:iam::<account>:role/${names.preview},`,
        `${envs.up.join(" and ")} to arn:aws:iam::<account>:role/${names.up}.`,
        "",
        `Group ${PREVIEW_GROUP} gets its Kubernetes reads from the stack itself (PreviewReadAccess: a ClusterRole of get, list`,
        `and watch, and Secrets and ConfigMaps in ${cfg.controller.namespace} and kube-system). Until the stack's first up has`,
        `created it, the preview role can call the API but read nothing: preflight then stops with HTTP 403; run that first`,
        `preflight as the up role or an operator.`,
        ...(unknown.length ? ["", `Not covered (add them to plan/ciAccess.ts): ${unknown.join("; ")}.`] : []),
        "",
    ].join("\n");
}

/** The policies of a stack's CI roles (plan/ciAccess.ts): what its ci-access files hold. */
export function ciPolicies(cfg: StackConfig, rec: PlanRecording): CiPolicies & { unknown: string[] } {
    const up = upPolicy(cfg, rec);
    return { preview: previewPolicy(cfg, rec), up: up.policy, ...(up.drill ? { drill: up.drill } : {}), unknown: [...previewActions(cfg, rec).unknown, ...up.unknown.map((t) => `deploy of ${t}`)] };
}

/** The files the plan writes under ci-access/ for a stack on an existing cluster; none for a cluster the stack creates. */
export function ciAccessFiles(stack: string, cfg: StackConfig, rec: PlanRecording): { files: Record<string, string>; notes: string[] } {
    if (cfg.cluster.mode !== "existing") return { files: {}, notes: [] };
    const { unknown, ...policies } = ciPolicies(cfg, rec);
    const f = ciAccessFileNames(stack);
    const at = (name: string) => `${CI_ACCESS_DIR}/${name}`;
    const json = (doc: PolicyDocument) => JSON.stringify(doc, null, 2) + "\n";
    return {
        files: {
            [at(f.readme)]: readme(stack, cfg, policies, unknown),
            [at(f.roles)]: rolesTerraform(stack, policies),
            [at(f.awsAuth)]: awsAuthRoles(stack),
            [at(f.accessEntries)]: accessEntriesTerraform(stack),
            [at(f.previewPolicy)]: json(policies.preview),
            [at(f.upPolicy)]: json(policies.up),
            ...(policies.drill ? { [at(f.drillPolicy)]: json(policies.drill) } : {}),
        },
        notes: unknown.map((u) => `ci-access: no IAM actions known for the ${u}: the generated roles may lack them (plan/ciAccess.ts)`),
    };
}

/** Every file ci-access/ may hold for a stack, for the plan's list of its own files. */
export const ciAccessPaths = (stack: string) => Object.values(ciAccessFileNames(stack)).map((f) => `${CI_ACCESS_DIR}/${f}`);
