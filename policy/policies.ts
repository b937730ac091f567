// The guardrails: GC Notify's acceptance criteria and lessons as rules that fail a preview. Plain data and pure
// functions, so tests and the offline plan (`npm run plan`) run them without the engine; only index.ts serves them.
//
// Preview-time unknowns: in a real preview, a value computed by another resource (an ARN, a queue URL) is unknown.
// The policy SDK hands policies a proxy that throws when such a value is read, and reports "can't run during
// preview" as advisory, so a mandatory policy never fails on a value it cannot see yet; it runs on `pulumi up`.
// Policies must therefore read values directly, never catch errors around a read, and never treat "unreadable" as
// "missing".
import type { PolicyPackConfig, ReportViolation, ResourceValidation, ResourceValidationArgs, ResourceValidationPolicy, StackValidationPolicy } from "@pulumi/policy";
import type { PolicyConfigJSONSchema } from "@pulumi/policy/schema.js";
// The scheduler's own toleration rule, shared with the plan's placement check and verify-placement.
import { tolerates } from "../components/models/scheduling.ts";

/** What a stack's policies check against; `npm run plan` writes each stack's into plan-out/<stack>/policy-config.json. */
export interface StackFacts {
    /** The only EC2 instance types a NodePool may launch. */
    approvedInstanceTypes: string[];
    /** Label (value "true") and NoSchedule taint key of ephemeral nodes. */
    ephemeralKey: string;
    /** Pod label (value "true") of burst Celery pods: the only pods allowed on ephemeral nodes. */
    burstPodLabel: string;
    /** DaemonSets that run on every node, ephemeral ones included. */
    nodeDaemonSets: { namespace: string; name: string }[];
    /** Labels of the stable on-demand nodes. */
    stableNodeSelector: Record<string, string>;
}

/**
 * GC Notify's values, so that a run without `--policy-pack-config` is still strict: staging's 12 types, the
 * narrower of the two lists. A test keeps them equal to what the staging stack file yields.
 */
export const GC_NOTIFY_FACTS: StackFacts = {
    approvedInstanceTypes: ["m7i", "m7a", "r7i", "r7a", "c7i", "c7a", "m6i", "m6a", "r6i", "r6a", "c6i", "c6a"].map((f) => `${f}.xlarge`),
    ephemeralKey: "notification-canada-ca/ephemeral",
    burstPodLabel: "notification-canada-ca/celery-burst",
    nodeDaemonSets: [
        { namespace: "kube-system", name: "secrets-store-csi-driver" },
        { namespace: "kube-system", name: "secrets-provider-aws" },
        { namespace: "amazon-cloudwatch", name: "fb-agent-fluent-bit" },
        { namespace: "amazon-cloudwatch", name: "aws-cloudwatch-agent" },
        { namespace: "signoz", name: "signoz-k8s-k8s-infra-otel-agent" },
        { namespace: "velero", name: "node-agent" },
        { namespace: "falco", name: "falco" },
        { namespace: "xray", name: "xray-daemon-aws-xray" },
        { namespace: "kube-system", name: "ebs-csi-node" },
    ],
    stableNodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" },
};

const FACT_SCHEMAS: Record<keyof StackFacts, PolicyConfigJSONSchema> = {
    approvedInstanceTypes: { type: "array", items: { type: "string" }, minItems: 1, description: "EC2 instance types a NodePool may launch" },
    ephemeralKey: { type: "string", minLength: 1, description: "label and NoSchedule taint key of ephemeral nodes" },
    burstPodLabel: { type: "string", minLength: 1, description: "pod label (value \"true\") of burst Celery pods" },
    nodeDaemonSets: {
        type: "array",
        items: { type: "object", properties: { namespace: { type: "string" }, name: { type: "string" } }, required: ["namespace", "name"] },
        description: "DaemonSets allowed on every node",
    },
    stableNodeSelector: { type: "object", additionalProperties: { type: "string" }, minProperties: 1, description: "labels of the stable nodes" },
};

/** A policy's config schema for the facts it reads, defaulting to GC Notify's. */
function factsSchema(...keys: (keyof StackFacts)[]) {
    return { properties: Object.fromEntries(keys.map((k) => [k, { ...FACT_SCHEMAS[k], default: GC_NOTIFY_FACTS[k] }])) };
}

/** The facts a policy was configured with; the engine may not apply schema defaults, so they are applied here. */
function factsOf(args: { getConfig<T extends object>(): T }): StackFacts {
    return { ...GC_NOTIFY_FACTS, ...args.getConfig<Partial<StackFacts>>() };
}

type Props = Record<string, any>;

/** Validates resources of the given types; any other resource is not applicable, as with validateResourceOfType. */
function ofTypes(types: string[] | RegExp, validate: (props: Props, args: ResourceValidationArgs, report: ReportViolation) => void): ResourceValidation {
    return (args, report) => {
        const applies = Array.isArray(types) ? types.includes(args.type) : types.test(args.type);
        if (!applies) args.notApplicable(`applies only to ${types}`);
        validate(args.props, args, report);
    };
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const nameOf = (props: Props, args: { name: string }) => props.metadata?.name ?? args.name;

// ---- NodePools --------------------------------------------------------------------------------------------------

const NODE_POOL = ["kubernetes:karpenter.sh/v1:NodePool"];
const INSTANCE_TYPE = "node.kubernetes.io/instance-type";

export const nodePoolApprovedInstanceTypes: ResourceValidationPolicy = {
    name: "nodepool-approved-instance-types",
    description: "NodePools launch only the stack's approved instance types, through one node.kubernetes.io/instance-type In requirement.",
    enforcementLevel: "mandatory",
    configSchema: factsSchema("approvedInstanceTypes"),
    validateResource: ofTypes(NODE_POOL, (p, args, report) => {
        const approved = factsOf(args).approvedInstanceTypes;
        const requirements: Props[] = p.spec?.template?.spec?.requirements ?? [];
        // Requirements are ANDed, so with the pin in place other keys (instance-family, -size, -cpu) only narrow it;
        // without it they would let Karpenter pick any type they match.
        const pins = requirements.filter((r) => r.key === INSTANCE_TYPE && r.operator === "In");
        if (pins.length === 0) {
            report(`NodePool "${nameOf(p, args)}" has no "${INSTANCE_TYPE} In" requirement, so Karpenter may launch any instance type; pin it to the approved types: ${approved.join(", ")}`);
            return;
        }
        const unapproved = [...new Set(pins.flatMap((r) => list<string>(r.values)).filter((t) => !approved.includes(t)))];
        if (unapproved.length > 0) {
            report(`NodePool "${nameOf(p, args)}" allows unapproved instance types ${unapproved.join(", ")}; approved for this stack: ${approved.join(", ")}`);
        }
    }),
};

/** Disruption keys that Karpenter reads only at spec.disruption; GC Notify's sat under spec.template and were dropped. */
const DISRUPTION_KEYS = ["disruption", "consolidationPolicy", "consolidateAfter", "budgets"];

export const nodePoolLimitsAndDisruption: ResourceValidationPolicy = {
    name: "nodepool-limits-and-disruption",
    description: "NodePools have cpu and memory limits and a spec.disruption block, and no disruption settings under spec.template.",
    enforcementLevel: "mandatory",
    validateResource: ofTypes(NODE_POOL, (p, args, report) => {
        const name = nameOf(p, args);
        const missing = ["cpu", "memory"].filter((k) => !p.spec?.limits?.[k]);
        if (missing.length > 0) report(`NodePool "${name}" has no spec.limits.${missing.join(" or spec.limits.")}, so a burst could launch nodes without bound; set both`);
        if (!p.spec?.disruption) report(`NodePool "${name}" has no spec.disruption; set consolidationPolicy, consolidateAfter and budgets there`);
        const misplaced = [
            ...DISRUPTION_KEYS.filter((k) => p.spec?.template?.[k] !== undefined).map((k) => `spec.template.${k}`),
            ...DISRUPTION_KEYS.filter((k) => p.spec?.template?.spec?.[k] !== undefined).map((k) => `spec.template.spec.${k}`),
        ];
        if (misplaced.length > 0) {
            report(`NodePool "${name}" sets ${misplaced.join(", ")}, which the API server drops as unknown fields, so Karpenter never sees them; move them to spec.disruption`);
        }
    }),
};

export const nodePoolEphemeralTaint: ResourceValidationPolicy = {
    name: "nodepool-ephemeral-taint",
    description: "NodePools label their nodes ephemeral and taint them NoSchedule, so only pods that tolerate the taint land there.",
    enforcementLevel: "mandatory",
    configSchema: factsSchema("ephemeralKey"),
    validateResource: ofTypes(NODE_POOL, (p, args, report) => {
        const key = factsOf(args).ephemeralKey;
        const template = p.spec?.template;
        const tainted = list<Props>(template?.spec?.taints).some((t) => t.key === key && t.value === "true" && t.effect === "NoSchedule");
        if (!tainted) report(`NodePool "${nameOf(p, args)}" lacks the taint ${key}=true:NoSchedule, so any pod could be scheduled on its spot nodes`);
        if (template?.metadata?.labels?.[key] !== "true") report(`NodePool "${nameOf(p, args)}" lacks the node label ${key}: "true" that burst pods select`);
    }),
};

// ---- Workloads on ephemeral nodes -------------------------------------------------------------------------------

/** Every Kubernetes kind with a pod template, created or patched. */
const POD_TEMPLATE = /^kubernetes:(core|apps|batch)\/v1:(Pod|PodTemplate|ReplicationController|Deployment|StatefulSet|DaemonSet|ReplicaSet|Job|CronJob)(Patch)?$/;

function podTemplateOf(type: string, p: Props): Props | undefined {
    const kind = POD_TEMPLATE.exec(type)![2];
    if (kind === "Pod") return p;
    if (kind === "PodTemplate") return p.template;
    if (kind === "CronJob") return p.spec?.jobTemplate?.spec?.template;
    return p.spec?.template;
}


/** Whether a node selector expression picks nodes labelled `<key>: "true"` (NotIn and DoesNotExist keep pods away). */
function picks(e: Props, key: string): boolean {
    return e.key === key && (e.operator === "Exists" || (e.operator === "In" && list(e.values).includes("true")));
}

const ephemeralTaint = (key: string) => ({ key, value: "true", effect: "NoSchedule" as const });

function targetsEphemeralNodes(spec: Props | undefined, key: string): string[] {
    const node = spec?.affinity?.nodeAffinity;
    const required = list<Props>(node?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).flatMap((t) => list<Props>(t.matchExpressions));
    const preferred = list<Props>(node?.preferredDuringSchedulingIgnoredDuringExecution).flatMap((t) => list<Props>(t.preference?.matchExpressions));
    return [
        list<Props>(spec?.tolerations).some((t) => tolerates(t, ephemeralTaint(key))) && "tolerates the ephemeral taint",
        spec?.nodeSelector?.[key] === "true" && "selects ephemeral nodes",
        required.some((e) => picks(e, key)) && "requires ephemeral nodes",
        preferred.some((e) => picks(e, key)) && "prefers ephemeral nodes",
    ].filter((x): x is string => !!x);
}

export const ephemeralNodesBurstCeleryOnly: ResourceValidationPolicy = {
    name: "ephemeral-nodes-burst-celery-only",
    description:
        "Only burst Celery pods (and the node DaemonSets) may tolerate the ephemeral taint or select ephemeral nodes: the API, admin and other stable workloads must never land on spot nodes.",
    enforcementLevel: "mandatory",
    configSchema: factsSchema("ephemeralKey", "burstPodLabel", "nodeDaemonSets"),
    validateResource: ofTypes(POD_TEMPLATE, (p, args, report) => {
        const { ephemeralKey, burstPodLabel, nodeDaemonSets } = factsOf(args);
        const template = podTemplateOf(args.type, p);
        const reasons = targetsEphemeralNodes(template?.spec, ephemeralKey);
        if (reasons.length === 0 || template?.metadata?.labels?.[burstPodLabel] === "true") return;
        const namespace = p.metadata?.namespace ?? "default";
        const name = nameOf(p, args);
        const isDaemonSet = /:DaemonSet(Patch)?$/.test(args.type);
        if (isDaemonSet && nodeDaemonSets.some((d) => d.namespace === namespace && d.name === name)) return;
        const allowed = nodeDaemonSets.map((d) => `${d.namespace}/${d.name}`).join(", ");
        report(
            `${args.type.split(":")[2]} ${namespace}/${name} ${reasons.join(" and ")} but its pods lack the burst label ${burstPodLabel}: "true"; ` +
                `only burst Celery pods and the node DaemonSets (${allowed}) may run on ephemeral nodes`,
        );
    }),
};

// ---- Interruption queue -----------------------------------------------------------------------------------------

const QUEUE = "aws:sqs/queue:Queue";

export const sqsQueueEncrypted: ResourceValidationPolicy = {
    name: "sqs-queue-encrypted",
    description: "SQS queues (the interruption queue) are encrypted at rest, with SQS-managed SSE or a KMS key.",
    enforcementLevel: "mandatory",
    validateResource: ofTypes([QUEUE], (p, args, report) => {
        if (p.sqsManagedSseEnabled === true || p.kmsMasterKeyId) return;
        report(`SQS queue ${p.name ?? args.name} is not encrypted; set sqsManagedSseEnabled: true or a kmsMasterKeyId`);
    }),
};

/** A statement that denies every SQS action to everyone over plain HTTP. */
function deniesInsecureTransport(s: Props): boolean {
    const secure = s.Condition?.Bool?.["aws:SecureTransport"];
    const everyone = s.Principal === "*" || list(s.Principal?.AWS).includes("*");
    const allActions = list<string>(s.Action).some((a) => a === "*" || a === "sqs:*");
    return s.Effect === "Deny" && everyone && allActions && list(secure).some((v) => String(v) === "false");
}

export const sqsQueueTlsOnly: StackValidationPolicy = {
    name: "sqs-queue-tls-only",
    description: "Every SQS queue has a queue policy that denies all access over plain HTTP (aws:SecureTransport false).",
    enforcementLevel: "mandatory",
    validateStack: (args, report) => {
        const queues = args.resources.filter((r) => r.type === QUEUE);
        if (queues.length === 0) args.notApplicable("no SQS queues");
        const queuePolicies = args.resources.filter((r) => r.type === "aws:sqs/queuePolicy:QueuePolicy");
        for (const queue of queues) {
            // Matched by dependency, not by URL: the URL is unknown until the queue exists.
            const own = queuePolicies.filter((qp) => qp.dependencies.some((d) => d.urn === queue.urn));
            if (!own.some((qp) => list<Props>(documentOf(qp.props.policy).Statement).some(deniesInsecureTransport))) {
                report(`SQS queue ${queue.name} has no queue policy that denies sqs:* to "*" when aws:SecureTransport is false; add one (TLS only)`, queue.urn);
            }
        }
    },
};

// ---- Alarms -----------------------------------------------------------------------------------------------------

const ALARM_TYPES = ["aws:cloudwatch/metricAlarm:MetricAlarm", "aws:cloudwatch/compositeAlarm:CompositeAlarm"];

export const alarmHasAction: ResourceValidationPolicy = {
    name: "alarm-has-action",
    description: "Every CloudWatch alarm notifies someone: at least one alarm action, and actions enabled.",
    enforcementLevel: "mandatory",
    validateResource: ofTypes(ALARM_TYPES, (p, args, report) => {
        // Only the count of actions is read: topic ARNs are unknown at preview when the topics are new.
        if (list(p.alarmActions).length === 0) report(`alarm ${p.name ?? p.alarmName ?? args.name} has no alarmActions, so it would fire unseen; notify an SNS topic`);
        if (p.actionsEnabled === false) report(`alarm ${p.name ?? p.alarmName ?? args.name} has actionsEnabled: false, so it would fire unseen`);
    }),
};

/**
 * Every SNS topic the stack creates that an alarm notifies has a subscription: a topic nobody is subscribed to
 * turns every alarm on it into silence. Matched by dependency, not by ARN: a new topic's ARN is unknown at preview.
 * Topics the stack does not create (GC Notify's alert topics, given by ARN) are subscribed where they are managed.
 */
export const alarmTopicsSubscribed: StackValidationPolicy = {
    name: "alarm-topics-subscribed",
    description: "Every SNS topic the stack creates for alarms has at least one subscription, so an alarm reaches someone.",
    enforcementLevel: "mandatory",
    validateStack: (args, report) => {
        const topics = args.resources.filter((r) => r.type === "aws:sns/topic:Topic");
        const dependsOn = (r: { dependencies: { urn: string }[] }, urn: string) => r.dependencies.some((d) => d.urn === urn);
        const alarms = args.resources.filter((r) => ALARM_TYPES.includes(r.type));
        const subscriptions = args.resources.filter((r) => r.type === "aws:sns/topicSubscription:TopicSubscription");
        const notified = topics.filter((t) => alarms.some((a) => dependsOn(a, t.urn)));
        if (notified.length === 0) args.notApplicable("no created topic is an alarm's target");
        for (const topic of notified) {
            if (!subscriptions.some((s) => dependsOn(s, topic.urn))) {
                report(`SNS topic ${topic.props.name ?? topic.name} is notified by alarms but has no subscription, so they would fire unseen; subscribe an endpoint (alarms.subscriptions) or notify an existing topic (alarms.topicNames)`, topic.urn);
            }
        }
    },
};

// ---- Karpenter controller placement -----------------------------------------------------------------------------

const HELM = ["kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart"];

/**
 * Whether the chart's "karpenter.sh/nodepool DoesNotExist" node affinity survives these values. Helm merges maps
 * with the chart's defaults and replaces lists, so the rule survives unless the terms list is replaced without it
 * or a level above it is set to null (which deletes the default).
 */
function keepsNodePoolRule(affinity: Props | null | undefined): boolean {
    const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    if ([affinity, affinity?.nodeAffinity, required].includes(null)) return false;
    const terms = required?.nodeSelectorTerms;
    if (terms === undefined) return true;
    const excludesKarpenterNodes = (t: Props) => list<Props>(t.matchExpressions).some((e) => e.key === "karpenter.sh/nodepool" && e.operator === "DoesNotExist");
    return Array.isArray(terms) && terms.length > 0 && terms.every(excludesKarpenterNodes);
}

export const karpenterControllerOnStableNodes: ResourceValidationPolicy = {
    name: "karpenter-controller-on-stable-nodes",
    description:
        "The Karpenter controller runs on the stable nodes and never on a node Karpenter launched: its values select the stable nodes, keep the chart's karpenter.sh/nodepool DoesNotExist affinity and do not tolerate the ephemeral taint.",
    enforcementLevel: "mandatory",
    configSchema: factsSchema("stableNodeSelector", "ephemeralKey"),
    validateResource: ofTypes(HELM, (p, args, report) => {
        if (!/(^|\/)karpenter$/.test(String(p.chart))) args.notApplicable("not the karpenter chart");
        const { stableNodeSelector, ephemeralKey } = factsOf(args);
        const values: Props = p.values ?? {};
        const missing = Object.entries(stableNodeSelector).filter(([k, v]) => values.nodeSelector?.[k] !== v);
        if (missing.length > 0) {
            report(`Karpenter controller values.nodeSelector lacks ${missing.map(([k, v]) => `${k}: ${v}`).join(", ")}; it must run on the stable nodes, not on nodes it manages and may drain`);
        }
        if (!keepsNodePoolRule(values.affinity)) {
            report(`Karpenter controller values.affinity drops the chart's "karpenter.sh/nodepool DoesNotExist" node affinity from some node selector term; keep it in every term`);
        }
        if (list<Props>(values.tolerations).some((t) => tolerates(t, ephemeralTaint(ephemeralKey)))) report(`Karpenter controller values.tolerations tolerate the ephemeral taint ${ephemeralKey}; remove that toleration`);
    }),
};

// ---- IAM --------------------------------------------------------------------------------------------------------
//
// What counts as unscoped EC2 mutation, in an Allow statement without a Condition (a condition, such as the
// reference policy's `aws:ResourceTag/kubernetes.io/cluster/<name>` or `aws:RequestTag/karpenter.sh/nodepool`, is
// what scopes a statement; any condition counts):
// - under NotResource, any mutating EC2 action (it applies to every resource but a few);
// - otherwise, a mutating EC2 action on a resource pattern that covers every EC2 resource of some type in a region
//   or account: "*", `arn:*:ec2:*:*:instance/*`, `arn:aws:ec2:ca-central-1:123456789012:volume/*`, `…:instance/i-*`
//   and the like, whatever the partition, region and account. A pattern naming particular resources is scoped.
// The one exception is how the reference template lets Karpenter launch (AllowScopedEC2InstanceAccessActions):
// ec2:RunInstances and ec2:CreateFleet, written out, on every image, snapshot, security group, subnet, capacity
// reservation and placement group. Those are what a launch reads, not what it changes; what it creates or acts on
// (instances, volumes, network interfaces, fleets, spot requests) and the launch templates it runs (user data,
// instance profile) stay scoped by tag conditions, as the template does.
// A NotAction statement grants every mutating EC2 action unless it excludes all of EC2, so it is checked as ec2:*.
// Which resource types each action can act on is not modelled: ec2:DeleteSnapshot on `snapshot/*` counts, and so
// does ec2:TerminateInstances on `image/*`, which grants nothing but has no reason to be written.

const IAM_DOCUMENTS: Record<string, (p: Props) => unknown[]> = {
    "aws:iam/policy:Policy": (p) => [p.policy],
    "aws:iam/rolePolicy:RolePolicy": (p) => [p.policy],
    "aws:iam/userPolicy:UserPolicy": (p) => [p.policy],
    "aws:iam/groupPolicy:GroupPolicy": (p) => [p.policy],
    "aws:iam/role:Role": (p) => list<Props>(p.inlinePolicies).map((i) => i.policy),
};

/** Resources that attach managed policies, and the ARNs they attach. */
const IAM_ATTACHMENTS: Record<string, (p: Props) => unknown[]> = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": (p) => [p.policyArn],
    "aws:iam/userPolicyAttachment:UserPolicyAttachment": (p) => [p.policyArn],
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment": (p) => [p.policyArn],
    "aws:iam/policyAttachment:PolicyAttachment": (p) => [p.policyArn],
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": (p) => list(p.policyArns),
    "aws:iam/userPolicyAttachmentsExclusive:UserPolicyAttachmentsExclusive": (p) => list(p.policyArns),
    "aws:iam/groupPolicyAttachmentsExclusive:GroupPolicyAttachmentsExclusive": (p) => list(p.policyArns),
    "aws:iam/role:Role": (p) => list(p.managedPolicyArns),
};

/**
 * AWS managed policies that grant mutating EC2 actions on "*" without a condition, by path and name (the same in
 * every partition), with what they grant. Short on purpose: the broad ones someone might attach to a role through
 * `controller.nodeRolePolicyArns`. AmazonEKS_CNI_Policy, which every node role has, also allows network-interface
 * actions on "*"; it is not listed, since nodes cannot run the VPC CNI without it.
 */
const UNSCOPED_EC2_MANAGED_POLICIES: Record<string, string> = {
    AdministratorAccess: "every action",
    PowerUserAccess: "every action but IAM, Organizations and Account ones",
    AmazonEC2FullAccess: "ec2:*",
    "service-role/AmazonEC2SpotFleetTaggingRole": "ec2:RunInstances, ec2:RequestSpotInstances, ec2:TerminateInstances and ec2:CreateTags",
};

/** What an AWS managed policy ARN (any partition) grants, when it is one of the unscoped ones. */
function unscopedManagedPolicy(arn: unknown): string | undefined {
    const path = /^arn:[a-z-]+:iam::aws:policy\/(.+)$/.exec(String(arn))?.[1];
    return path !== undefined && Object.prototype.hasOwnProperty.call(UNSCOPED_EC2_MANAGED_POLICIES, path) ? UNSCOPED_EC2_MANAGED_POLICIES[path] : undefined;
}

/** A policy document given as JSON text or as an object; {} when the text is not JSON (AWS would reject it anyway). */
function documentOf(policy: unknown): Props {
    if (typeof policy !== "string") return (policy as Props) ?? {};
    try {
        return JSON.parse(policy);
    } catch {
        return {};
    }
}

const glob = (pattern: string) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`, "i");

/** Whether an action pattern can match an EC2 action other than Describe*, Get* and List*. */
function mutatesEc2(pattern: string): boolean {
    const [service, verb = ""] = pattern.split(":");
    return glob(service).test("ec2") && !/^(describe|get|list)/i.test(verb);
}

/** The launch actions, and the resource types they only read (see above). */
const LAUNCH_ACTIONS = ["ec2:runinstances", "ec2:createfleet"];
const LAUNCH_INPUTS = ["image", "snapshot", "security-group", "subnet", "capacity-reservation", "placement-group"];

/** EC2 resource types a wildcard resource pattern is tried against, with their id prefixes. */
const EC2_TYPES: Record<string, string> = {
    instance: "i-",
    volume: "vol-",
    "network-interface": "eni-",
    fleet: "fleet-",
    "spot-instances-request": "sir-",
    "launch-template": "lt-",
    image: "ami-",
    snapshot: "snap-",
    "security-group": "sg-",
    subnet: "subnet-",
    "capacity-reservation": "cr-",
    "placement-group": "",
    vpc: "vpc-",
};

/**
 * Whether a resource pattern covers every EC2 resource of `type`: whether it matches an id no resource has (after the
 * type's id prefix) in the partition, region and account the pattern names, or any when it names none.
 */
function coversEvery(pattern: string, type: string): boolean {
    const f = pattern.split(":");
    const field = (i: number, otherwise: string) => (f[i] === undefined || /[*?]/.test(f[i]) ? otherwise : f[i]);
    return glob(pattern).test(`arn:${field(1, "aws")}:ec2:${field(3, "ca-central-1")}:${field(4, "123456789012")}:${type}/${EC2_TYPES[type] ?? ""}~`);
}

/** Whether an action pattern may mutate, unconditionally, every resource of some type that `resource` covers. */
function unscopedOn(action: string, resource: string): boolean {
    const named = resource.split(":").slice(5).join(":").split("/")[0];
    const types = [...new Set([...Object.keys(EC2_TYPES), ...(named && !/[*?]/.test(named) ? [named.toLowerCase()] : [])])];
    const launch = LAUNCH_ACTIONS.includes(action.toLowerCase());
    return types.some((t) => !(launch && LAUNCH_INPUTS.includes(t)) && coversEvery(resource, t));
}

/** The mutating EC2 actions a statement allows unscoped (see above), and on what; undefined when it allows none. */
function unscopedEc2Mutations(s: Props): { actions: string[]; on: string } | undefined {
    const unconditional = !s.Condition || Object.keys(s.Condition).length === 0;
    if (s.Effect !== "Allow" || !unconditional) return undefined;
    let actions = list<string>(s.Action).filter(mutatesEc2);
    if (s.NotAction !== undefined) {
        // NotAction grants everything it does not name, so only excluding all of EC2 keeps EC2 out.
        const notActions = list<string>(s.NotAction);
        const excludesEc2 = notActions.some((a) => glob(a.split(":")[0]).test("ec2") && (a.split(":")[1] ?? "*") === "*");
        actions = excludesEc2 ? [] : [`everything but ${notActions.join(", ")}`];
    }
    if (actions.length === 0) return undefined;
    if (s.NotResource !== undefined) return { actions, on: `every resource but ${list<string>(s.NotResource).join(", ")}` };
    const resources = list<string>(s.Resource);
    const flagged = actions.map((a) => [a, resources.filter((r) => unscopedOn(a, r))] as const).filter(([, on]) => on.length > 0);
    if (flagged.length === 0) return undefined;
    const on = [...new Set(flagged.flatMap(([, rs]) => rs))].map((r) => (r === "*" ? '"*"' : r));
    return { actions: flagged.map(([a]) => a), on: on.join(", ") };
}

export const iamNoUnscopedEc2Mutation: ResourceValidationPolicy = {
    name: "iam-no-unscoped-ec2-mutation",
    description:
        "IAM policies and managed policy attachments grant mutating EC2 actions (anything but Describe*, Get*, List*) only on named resources or under a condition: " +
        'never unconditionally on "*", on every resource of a type (instance/*) or through NotResource or NotAction.',
    enforcementLevel: "mandatory",
    validateResource: ofTypes([...new Set([...Object.keys(IAM_DOCUMENTS), ...Object.keys(IAM_ATTACHMENTS)])], (p, args, report) => {
        for (const doc of (IAM_DOCUMENTS[args.type]?.(p) ?? []).map(documentOf)) {
            list<Props>(doc.Statement).forEach((s, i) => {
                const unscoped = unscopedEc2Mutations(s);
                if (!unscoped) return;
                report(
                    `IAM policy ${p.name ?? args.name} statement ${s.Sid ?? i} allows ${unscoped.actions.join(", ")} on ${unscoped.on} without a condition; ` +
                        "scope mutating EC2 actions with tag conditions as Karpenter's reference policy does (unconditionally, only Describe*, Get* and List* may cover every resource, " +
                        "and ec2:RunInstances and ec2:CreateFleet every image, snapshot, security group, subnet, capacity reservation and placement group)",
                );
            });
        }
        // After the documents: an attached ARN unknown at preview stops the policy here, with the documents checked.
        for (const arn of IAM_ATTACHMENTS[args.type]?.(p) ?? []) {
            const grants = unscopedManagedPolicy(arn);
            if (grants === undefined) continue;
            report(
                `${args.type.split(":")[2]} ${p.name ?? args.name} attaches the AWS managed policy ${arn}, which allows ${grants} on every resource without a condition; ` +
                    "attach a policy that scopes mutating EC2 actions with tag conditions instead",
            );
        }
    }),
};

/**
 * An AWS FIS experiment template (the spot interruption drill) interrupts a bounded number of one cluster's NodePool's
 * nodes: each target selects COUNT(n), never ALL or PERCENT(n) (which grow with the pool), by the NodePool's tag and the
 * cluster's (eks:eks-cluster-name, which Karpenter puts on every instance) rather than by instance ARNs, and a
 * CloudWatch alarm can stop the experiment.
 */
export const fisTemplateBounded: ResourceValidationPolicy = {
    name: "fis-template-bounded",
    description: "FIS experiment templates select COUNT(n) of one cluster's NodePool's instances by the karpenter.sh/nodepool and eks:eks-cluster-name tags (never ALL or PERCENT) and stop on a CloudWatch alarm.",
    enforcementLevel: "mandatory",
    validateResource: ofTypes(["aws:fis/experimentTemplate:ExperimentTemplate"], (p, args, report) => {
        const name = p.tags?.Name ?? args.name;
        for (const t of list<Props>(p.targets)) {
            if (!/^COUNT\([1-9][0-9]*\)$/.test(String(t.selectionMode))) {
                report(`FIS template ${name} target ${t.name} selects ${t.selectionMode}: use COUNT(n), so one experiment interrupts n nodes however large the pool grows (ALL and PERCENT take more as it grows)`);
            }
            if (list(t.resourceArns).length > 0 || !list<Props>(t.resourceTags).some((tag) => tag.key === "karpenter.sh/nodepool")) {
                report(`FIS template ${name} target ${t.name} does not select by the karpenter.sh/nodepool tag: name the NodePool, so only its nodes can be interrupted`);
            } else if (!list<Props>(t.resourceTags).some((tag) => tag.key === "eks:eks-cluster-name")) {
                report(`FIS template ${name} target ${t.name} does not select by the eks:eks-cluster-name tag: name the cluster too, so another cluster's pool of the same name in the account is never interrupted`);
            }
        }
        if (!list<Props>(p.stopConditions).some((c) => c.source === "aws:cloudwatch:alarm")) {
            report(`FIS template ${name} has no CloudWatch alarm as a stop condition: give it the stack's burst capacity alarms, so an experiment stops when capacity runs short`);
        }
    }),
};

/** The pack, in the order a reviewer reads them. */
export const policies = [
    nodePoolApprovedInstanceTypes,
    nodePoolLimitsAndDisruption,
    nodePoolEphemeralTaint,
    ephemeralNodesBurstCeleryOnly,
    sqsQueueEncrypted,
    sqsQueueTlsOnly,
    alarmHasAction,
    alarmTopicsSubscribed,
    karpenterControllerOnStableNodes,
    iamNoUnscopedEc2Mutation,
    fisTemplateBounded,
];

/** The pack config (`--policy-pack-config`) for a stack: each policy gets the facts its schema declares. */
export function packConfig(facts: StackFacts): PolicyPackConfig {
    const config: PolicyPackConfig = {};
    for (const p of policies) {
        if (p.configSchema) config[p.name] = Object.fromEntries(Object.keys(p.configSchema.properties).map((k) => [k, facts[k as keyof StackFacts]]));
    }
    return config;
}
