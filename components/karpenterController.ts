import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterFacts } from "./models/clusterFacts.ts";
import { CONTROLLER_RELEASE, CRD_RELEASE, NODE_ROLE_POLICIES, RELEASE_HISTORY, type ControllerPolicyKey, controllerNameProblems, controllerNames, controllerPolicies, dnsSuffix, interruptionQueuePolicy, interruptionRules, releaseDescription } from "./models/controllerPolicy.ts";

export interface KarpenterControllerArgs {
    /** The cluster Karpenter manages nodes for. */
    cluster: ClusterFacts;
    /** Karpenter chart and CRD chart version; the IAM policy and Helm values are written for it. */
    version: string;
    /**
     * Prefix of every fixed AWS name (roles, queue, rules, policies). It must be unique per cluster and account.
     * Check it with `controllerNameProblems` first.
     */
    namePrefix: string;
    /** Namespace of the controller. @default "karpenter" */
    namespace?: string;
    /** Service account of the controller. @default "karpenter" */
    serviceAccount?: string;
    /** How the controller gets AWS credentials. @default "pod-identity" */
    identity?: "pod-identity" | "irsa";
    /** Controller replicas; two survive a node loss. @default 2 */
    replicas?: number;
    /** Controller CPU, requested and limited alike so the pod is Guaranteed. @default "1" */
    cpu?: string;
    /** Controller memory, requested and limited alike. @default "1Gi" */
    memory?: string;
    /** Controller log level. @default "info" */
    logLevel?: "debug" | "info" | "error";
    /** Node labels of the stable on-demand nodes; the controller must never run on nodes it manages. */
    stableNodeSelector: Record<string, string>;
    /** Reuse this IAM role for Karpenter nodes instead of creating one (no access entry is made for it). */
    existingNodeRoleName?: string;
    /** Extra managed policies for a created node role (e.g. CloudWatchAgentServerPolicy). @default [] */
    nodeRolePolicyArns?: string[];
    /** Create the account-wide `spot.amazonaws.com` service-linked role; an account holds only one. @default false */
    createSpotServiceLinkedRole?: boolean;
    /** Let consolidation replace spot nodes with cheaper spot nodes (an alpha feature gate). @default false */
    spotToSpotConsolidation?: boolean;
    /** Karpenter's batching window: idle and maximum length. @default "1s" and "10s" */
    batchIdleDuration?: string;
    batchMaxDuration?: string;
    /**
     * The CRD release outlives Pulumi: `retainOnDelete` leaves it (its CRDs, and with them every NodePool, NodeClaim
     * and EC2NodeClass) in the cluster when Pulumi deletes it; `protect` refuses the delete. @default both false
     */
    crds?: { protect?: boolean; retainOnDelete?: boolean };
    /**
     * How long `up` waits for the controller to be ready. Pods that start before their Pod Identity credentials
     * work exit and restart until they do. @default 600
     */
    readyTimeoutSeconds?: number;
}

const CHART_REPOSITORY = "oci://public.ecr.aws/karpenter";
/**
 * Karpenter's controller as the official v1.14.1 release installs it: IAM for the controller and its nodes, the
 * interruption queue with its EventBridge rules, and the CRD and controller Helm charts, in that order.
 *
 * Anything that creates NodePools or EC2NodeClasses must depend on `ready`, so `pulumi up` never races the CRDs
 * and `pulumi destroy` removes node pools while the controller can still drain their nodes.
 */
export class KarpenterController extends pulumi.ComponentResource {
    /** Depend on these before creating Karpenter objects: the CRDs and the running controller. */
    public readonly ready: pulumi.Resource[];
    public readonly queueName: pulumi.Output<string>;
    public readonly queueUrl: pulumi.Output<string>;
    public readonly queueArn: pulumi.Output<string>;
    public readonly controllerRoleArn: pulumi.Output<string>;
    public readonly nodeRoleArn: pulumi.Output<string>;
    /** The node role's name, for the EC2NodeClass's `role`. */
    public readonly nodeRoleName: pulumi.Output<string>;
    /** EventBridge rule names, for alarms on failed deliveries. */
    public readonly ruleNames: pulumi.Output<string>[];
    public readonly namespace: string;
    public readonly serviceAccount: string;
    /** The controller Deployment's name (the chart names it after the release). */
    public readonly deploymentName = CONTROLLER_RELEASE;

    constructor(name: string, args: KarpenterControllerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:KarpenterController", name, {}, opts);
        validateControllerArgs(name, args);
        const namespace = (this.namespace = args.namespace ?? "karpenter");
        const serviceAccount = (this.serviceAccount = args.serviceAccount ?? "karpenter");
        const step: Step = { name, args, names: controllerNames(args.namePrefix), child: { parent: this } };

        const interruption = createInterruptionQueue(step);
        const nodeRole = createNodeRole(step);
        const identity = createControllerIdentity(step, { nodeRoleArn: nodeRole.arn, queueArn: interruption.queue.arn, namespace, serviceAccount });
        if (args.createSpotServiceLinkedRole) {
            new aws.iam.ServiceLinkedRole(`${name}-spot-service-linked-role`, { awsServiceName: "spot.amazonaws.com" }, step.child);
        }
        const charts = installCharts(step, {
            namespace,
            serviceAccount,
            queueName: interruption.queue.name,
            irsaRoleArn: identity.irsaRoleArn,
            // The controller must find its CRDs, credentials and queue when it starts, or it crash-loops.
            prerequisites: [...identity.credentials, ...interruption.targets, ...nodeRole.accessEntries],
        });

        this.ready = [charts.crds, charts.controller];
        this.ruleNames = interruptionRules.map((r) => pulumi.output(step.names.rules[r.key]));
        this.queueName = interruption.queue.name;
        this.queueUrl = interruption.queue.url;
        this.queueArn = interruption.queue.arn;
        this.nodeRoleArn = nodeRole.arn;
        this.nodeRoleName = nodeRole.name;
        this.controllerRoleArn = identity.roleArn;
        this.registerOutputs({
            queueName: this.queueName,
            queueUrl: this.queueUrl,
            queueArn: this.queueArn,
            controllerRoleArn: this.controllerRoleArn,
            nodeRoleArn: this.nodeRoleArn,
            nodeRoleName: this.nodeRoleName,
            namespace,
            serviceAccount,
        });
    }
}

/** What every builder below needs: the component's name and args, its fixed AWS names, and `{ parent }`. */
interface Step {
    name: string;
    args: KarpenterControllerArgs;
    names: ReturnType<typeof controllerNames>;
    child: pulumi.CustomResourceOptions;
}

/** Refuses args that AWS would refuse later, before any resource exists. */
function validateControllerArgs(name: string, args: KarpenterControllerArgs): void {
    const problems = controllerNameProblems(args.namePrefix);
    if (problems.length > 0) throw new Error(`KarpenterController ${name}: namePrefix "${args.namePrefix}" ${problems.join("; ")}`);
    if (args.existingNodeRoleName && args.nodeRolePolicyArns?.length) {
        throw new Error(`KarpenterController ${name}: nodeRolePolicyArns cannot be used with existingNodeRoleName`);
    }
}

/**
 * Fixed names: a change that forces replacement (a policy's description or path, a role's path; terraform-provider-aws
 * internal/service/iam/policy.go, role.go: ForceNew) would create the new one under the name the old one still holds,
 * and IAM refuses with EntityAlreadyExists. Delete first.
 */
const fixedName = (step: Step): pulumi.CustomResourceOptions => ({ ...step.child, deleteBeforeReplace: true });

/**
 * Interruption handling: EC2 and AWS Health events reach the controller through this queue, so it can drain a spot
 * node in the two minutes before AWS reclaims it.
 */
function createInterruptionQueue({ name, args, names, child }: Step) {
    const queue = new aws.sqs.Queue(`${name}-interruption-queue`, { name: names.queue, messageRetentionSeconds: 300, sqsManagedSseEnabled: true }, child);
    const queuePolicy = new aws.sqs.QueuePolicy(
        `${name}-interruption-queue-policy`,
        { queueUrl: queue.url, policy: queue.arn.apply((arn) => JSON.stringify(interruptionQueuePolicy(arn))) },
        child,
    );
    const targets = interruptionRules.map((r) => {
        const rule = new aws.cloudwatch.EventRule(
            `${name}-${r.key}-rule`,
            {
                name: names.rules[r.key],
                description: `Karpenter interruption handling for ${args.namePrefix}: ${r.detailType}`,
                eventPattern: JSON.stringify({ source: [r.source], "detail-type": [r.detailType] }),
            },
            child,
        );
        return new aws.cloudwatch.EventTarget(`${name}-${r.key}-target`, { rule: rule.name, arn: queue.arn, targetId: "KarpenterInterruptionQueueTarget" }, { ...child, dependsOn: [queuePolicy] });
    });
    return { queue, targets };
}

/** The role Karpenter's nodes run as. GC Notify reuses its managed node group's role, which EKS already maps. */
function createNodeRole(step: Step): { arn: pulumi.Output<string>; name: pulumi.Output<string>; accessEntries: pulumi.Resource[] } {
    const { name, args, names, child } = step;
    const { cluster } = args;
    if (args.existingNodeRoleName) {
        const existing = aws.iam.getRoleOutput({ name: args.existingNodeRoleName }, child);
        return { arn: existing.arn, name: existing.name, accessEntries: [] };
    }
    const role = new aws.iam.Role(
        `${name}-node-role`,
        {
            name: names.nodeRole,
            assumeRolePolicy: pulumi.output(cluster.partition).apply((p) =>
                JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: { Service: `ec2.${dnsSuffix(p)}` }, Action: ["sts:AssumeRole"] }] }),
            ),
        },
        fixedName(step),
    );
    const policyArns = [
        ...NODE_ROLE_POLICIES.map((p) => pulumi.interpolate`arn:${cluster.partition}:iam::aws:policy/${p}`),
        ...(args.nodeRolePolicyArns ?? []).map((arn) => pulumi.output(arn)),
    ];
    policyArns.forEach((policyArn, i) => {
        const label = i < NODE_ROLE_POLICIES.length ? NODE_ROLE_POLICIES[i] : `extra-${i - NODE_ROLE_POLICIES.length}`;
        new aws.iam.RolePolicyAttachment(`${name}-node-${label}`, { role: role.name, policyArn }, child);
    });
    // Without an access entry, nodes launch but never join the cluster.
    const accessEntry = new aws.eks.AccessEntry(`${name}-node-access-entry`, { clusterName: cluster.name, principalArn: role.arn, type: "EC2_LINUX" }, child);
    return { arn: role.arn, name: role.name, accessEntries: [accessEntry] };
}

/** The controller's own role, its six scoped policies, and how its pods get the role (Pod Identity or IRSA). */
function createControllerIdentity(step: Step, at: { nodeRoleArn: pulumi.Output<string>; queueArn: pulumi.Output<string>; namespace: string; serviceAccount: string }) {
    const { name, args, names, child } = step;
    const { cluster } = args;
    const identity = args.identity ?? "pod-identity";
    const role = new aws.iam.Role(
        `${name}-controller-role`,
        {
            name: names.controllerRole,
            assumeRolePolicy:
                identity === "pod-identity"
                    ? JSON.stringify(podIdentityTrust())
                    : pulumi.all([cluster.partition, cluster.accountId, cluster.oidcIssuerUrl]).apply(([p, a, issuer]) => JSON.stringify(irsaTrust(p, a, issuer, at.namespace, at.serviceAccount))),
        },
        fixedName(step),
    );
    const policyContext = pulumi.all([cluster.partition, cluster.accountId, cluster.name, at.nodeRoleArn, at.queueArn]);
    const credentials: pulumi.Resource[] = (Object.keys(names.policies) as ControllerPolicyKey[]).map((key) => {
        const policy = new aws.iam.Policy(
            `${name}-${key}-policy`,
            {
                name: names.policies[key],
                description: `Karpenter controller (${key}) for cluster ${args.namePrefix}`,
                policy: policyContext.apply(([partition, accountId, clusterName, nodeRoleArn, queueArn]) =>
                    JSON.stringify(controllerPolicies({ partition, region: cluster.region, accountId, clusterName, nodeRoleArn, queueArn })[key]),
                ),
            },
            fixedName(step),
        );
        return new aws.iam.RolePolicyAttachment(`${name}-${key}-attachment`, { role: role.name, policyArn: policy.arn }, child);
    });
    if (identity === "pod-identity") {
        credentials.push(
            new aws.eks.PodIdentityAssociation(
                `${name}-pod-identity`,
                {
                    clusterName: cluster.name,
                    namespace: at.namespace,
                    serviceAccount: at.serviceAccount,
                    // Waits on the agent's version: on a cluster without the agent the preview fails here, before
                    // the controller is installed with no way to get credentials.
                    roleArn: pulumi.all([cluster.podIdentityAgentVersion(), role.arn]).apply(([, arn]) => arn),
                },
                child,
            ),
        );
    }
    return { roleArn: role.arn, irsaRoleArn: identity === "irsa" ? role.arn : undefined, credentials };
}

/** The karpenter-crd and karpenter charts, CRDs first; the controller once everything it needs at start exists. */
function installCharts(
    { name, args, child }: Step,
    at: { namespace: string; serviceAccount: string; queueName: pulumi.Output<string>; irsaRoleArn?: pulumi.Output<string>; prerequisites: pulumi.Resource[] },
) {
    const description = releaseDescription(pulumi.getProject(), pulumi.getStack());
    // CRDs from their own chart: Helm never upgrades a chart's crds/ folder, the karpenter-crd chart does.
    // Not atomic, no cleanupOnFail: a failed upgrade of this release would then roll back to the previous chart, which
    // applies the older CRDs over the newer ones (a CRD downgrade, while objects stored under the newer schema and a
    // controller that may already expect it stay), and cleanupOnFail would delete a CRD the failed upgrade created,
    // with every object of that kind. A failed CRD upgrade is left `failed` for a person to read; the controller
    // release depends on this one, so it is not upgraded in that run.
    const crds = new k8s.helm.v3.Release(
        `${name}-crds`,
        {
            name: CRD_RELEASE,
            chart: `${CHART_REPOSITORY}/karpenter-crd`,
            version: args.version,
            namespace: at.namespace,
            createNamespace: true,
            maxHistory: RELEASE_HISTORY,
            description,
        },
        // The chart keeps its CRDs in templates/, so uninstalling it deletes every NodePool and NodeClaim with them.
        { ...child, protect: args.crds?.protect ?? false, retainOnDelete: args.crds?.retainOnDelete ?? false },
    );
    const controller = new k8s.helm.v3.Release(
        `${name}-chart`,
        {
            name: CONTROLLER_RELEASE,
            chart: `${CHART_REPOSITORY}/karpenter`,
            version: args.version,
            namespace: at.namespace,
            createNamespace: true,
            skipCrds: true,
            // Awaited (helm --wait; pulumi-kubernetes v4.32.0 helm_release.go:608,734, 300 s unless `timeout` is set:
            // :437-439, :1766-1770): the controller exits when its EC2 check fails (karpenter-provider-aws v1.14.1
            // pkg/operator/operator.go:124-126), as it does until the Pod Identity association reaches the agent, so
            // ready means credentials work. The provider hands `timeout` to Helm's install and upgrade alike
            // (helm_release.go:612,733).
            timeout: args.readyTimeoutSeconds ?? 600,
            // A failed upgrade rolls back to the last deployed revision instead of leaving the release `failed` with
            // Karpenter possibly down until the next `up` (helm_release.go:736 → helm v3.20.2 pkg/action/upgrade.go:
            // 504-538; the rollback waits up to the same `timeout`, so a failed upgrade can take twice as long to
            // report). A failed first install is uninstalled (install.go:506-519) and, no release being left, the
            // provider records nothing (helm_release.go:641-647), so the next `up` installs again. Atomic implies
            // Helm's wait (upgrade.go:158, install.go:289), which this release has anyway.
            atomic: true,
            // Before that rollback, delete what the failed upgrade created (upgrade.go:492-503; helm_release.go:747).
            cleanupOnFail: true,
            maxHistory: RELEASE_HISTORY,
            description,
            values: controllerValues({
                ...args,
                clusterName: args.cluster.name,
                clusterEndpoint: args.cluster.endpoint,
                queueName: at.queueName,
                serviceAccount: at.serviceAccount,
                irsaRoleArn: at.irsaRoleArn,
            }),
        },
        { ...child, dependsOn: [crds, ...at.prerequisites] },
    );
    return { crds, controller };
}

interface ValuesInput extends KarpenterControllerArgs {
    clusterName: pulumi.Input<string>;
    clusterEndpoint: pulumi.Input<string>;
    queueName: pulumi.Input<string>;
    serviceAccount: string;
    irsaRoleArn?: pulumi.Input<string>;
}

/** The karpenter chart's values. Every key here exists in the chart's values.yaml (a test holds us to that). */
export function controllerValues(v: ValuesInput) {
    const resources = { cpu: v.cpu ?? "1", memory: v.memory ?? "1Gi" };
    return {
        settings: {
            clusterName: v.clusterName,
            clusterEndpoint: v.clusterEndpoint,
            interruptionQueue: v.queueName,
            batchIdleDuration: v.batchIdleDuration ?? "1s",
            batchMaxDuration: v.batchMaxDuration ?? "10s",
            featureGates: { spotToSpotConsolidation: v.spotToSpotConsolidation ?? false },
        },
        replicas: v.replicas ?? 2,
        podDisruptionBudget: { name: "karpenter", maxUnavailable: 1 },
        priorityClassName: "system-cluster-critical",
        serviceAccount: {
            create: true,
            name: v.serviceAccount,
            annotations: v.irsaRoleArn ? { "eks.amazonaws.com/role-arn": v.irsaRoleArn } : {},
        },
        controller: { resources: { requests: resources, limits: resources } },
        // Stable nodes only, and never a node Karpenter launched (the chart's own rule, kept explicitly).
        nodeSelector: { "kubernetes.io/os": "linux", ...v.stableNodeSelector },
        affinity: {
            nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [{ matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] }],
                },
            },
            podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "kubernetes.io/hostname" }] },
        },
        logLevel: v.logLevel ?? "info",
    };
}

function podIdentityTrust() {
    return {
        Version: "2012-10-17",
        Statement: [{ Effect: "Allow", Principal: { Service: "pods.eks.amazonaws.com" }, Action: ["sts:AssumeRole", "sts:TagSession"] }],
    };
}

function irsaTrust(partition: string, accountId: string, issuerUrl: string, namespace: string, serviceAccount: string) {
    const issuer = issuerUrl.replace(/^https:\/\//, "");
    return {
        Version: "2012-10-17",
        Statement: [
            {
                Effect: "Allow",
                Principal: { Federated: `arn:${partition}:iam::${accountId}:oidc-provider/${issuer}` },
                Action: "sts:AssumeRoleWithWebIdentity",
                Condition: {
                    StringEquals: {
                        [`${issuer}:sub`]: `system:serviceaccount:${namespace}:${serviceAccount}`,
                        [`${issuer}:aud`]: "sts.amazonaws.com",
                    },
                },
            },
        ],
    };
}
