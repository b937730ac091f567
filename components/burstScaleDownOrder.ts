import * as k8s from "@pulumi/kubernetes";
import { scriptFiles } from "./inClusterScript.ts";
import * as pulumi from "@pulumi/pulumi";
import { DEPLOYMENT_LABEL, NOT_ON_KARPENTER_NODES, serviceAccountUser } from "./models/celeryPlacement.ts";

const SCRIPT = "deletionCostAnnotator.js";
/** The annotation the ReplicaSet controller reads (kubernetes pkg/controller/controller_utils.go, PodDeletionCost). */
export const DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost";
const HEALTH_PORT = 8080;
/** The `node` user of Node's official images. */
const NODE_USER = 1000;

export interface BurstScaleDownOrderArgs {
    /** Namespace the annotator runs in (Karpenter's). */
    namespace: string;
    /** Namespace of the burst Celery pods; the annotator may patch pods there and nowhere else. */
    podNamespace: string;
    /** The Karpenter NodePool whose nodes are ordered by age (nodes labelled karpenter.sh/nodepool=<name>). */
    nodePoolName: string;
    /** Labels of the stable on-demand nodes, where the annotator runs. */
    stableNodeSelector: Record<string, string>;
    /** An image with Node.js 18 or later on its PATH as `node` and a user 1000, such as Node's official alpine image. */
    image: string;
    /** Seconds between passes; a pod is ordered within this long of starting. @default 15 */
    intervalSeconds?: number;
}

/** Every way these arguments would fail at `up`, as "<what>: <why>". */
export function scaleDownOrderProblems(a: BurstScaleDownOrderArgs): string[] {
    const problems: string[] = [];
    const interval = a.intervalSeconds ?? 15;
    if (!Number.isInteger(interval) || interval < 1 || interval > 300) problems.push(`intervalSeconds must be a whole number from 1 to 300 (got ${interval})`);
    if (a.namespace === a.podNamespace) problems.push(`namespace ${a.namespace}: the annotator must not run among the pods it may patch`);
    return problems;
}

/**
 * Karpenter v1.14.1 counts a pod whose deletion cost is at most this as nothing when it decides whether a node is
 * empty (pkg/utils/disruption/disruption.go:59, 1 + cost/2^27; pkg/controllers/disruption/types.go:136-157), and
 * budgets never hold back empty nodes: a lower cost on a Celery pod would let Karpenter delete its node mid-batch.
 */
const KARPENTER_IGNORES_COST = -(2 ** 27);

/**
 * The admission policy's CEL: the annotator's service account may set the pod-deletion-cost of a burst pod (one
 * carrying DEPLOYMENT_LABEL), to a value Karpenter still counts, and change nothing else. `patch pods` alone would
 * let it change any pod's image, labels, owners or cost in the namespace.
 */
export function annotationOnlyPolicySpec(user: string) {
    const same = (field: string) => `has(object.${field}) == has(oldObject.${field}) && (!has(object.${field}) || object.${field} == oldObject.${field})`;
    const key = `'${DELETION_COST_ANNOTATION}'`;
    const kept = (a: string, b: string) => `!has(${a}.metadata.annotations) || ${a}.metadata.annotations.all(k, k == ${key} || (has(${b}.metadata.annotations) && k in ${b}.metadata.annotations && ${b}.metadata.annotations[k] == ${a}.metadata.annotations[k]))`;
    const cost = `object.metadata.annotations[${key}]`;
    return {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["pods"] }] },
        matchConditions: [{ name: "is-the-annotator", expression: `request.userInfo.username == '${user}'` }],
        validations: [
            {
                expression: [same("spec"), same("metadata.labels"), same("metadata.ownerReferences"), same("metadata.finalizers"), kept("object", "oldObject"), kept("oldObject", "object")].map((e) => `(${e})`).join(" && "),
                message: `${user} may change only the ${DELETION_COST_ANNOTATION} annotation of a pod`,
                reason: "Forbidden",
            },
            {
                expression: `has(object.metadata.labels) && '${DEPLOYMENT_LABEL}' in object.metadata.labels`,
                message: `${user} may annotate only burst pods (label ${DEPLOYMENT_LABEL})`,
                reason: "Forbidden",
            },
            {
                // At most nine digits, so int() cannot overflow before the comparison.
                expression: `!has(object.metadata.annotations) || !(${key} in object.metadata.annotations) || (${cost}.matches('^(0|-?[1-9][0-9]{0,8})$') && int(${cost}) > ${KARPENTER_IGNORES_COST})`,
                message: `${user} may set ${DELETION_COST_ANNOTATION} only to an integer above ${KARPENTER_IGNORES_COST}, which Karpenter still counts`,
                reason: "Forbidden",
            },
        ],
    };
}

/**
 * Orders the burst Deployments' scale-down by node age. A small annotator gives each running burst pod on an
 * ephemeral node the pod-deletion-cost of its node's age, so the HPAs' scale-down deletes the pods on the newest nodes
 * first and those nodes empty; without it the survivors end up spread over every node of the burst. Karpenter then
 * removes the empty nodes at any hour, while consolidation of nodes that still run Celery waits for the budgets.
 */
export class BurstScaleDownOrder extends pulumi.ComponentResource {
    public readonly deploymentName: string;
    public readonly admissionPolicyName: string;

    constructor(name: string, args: BurstScaleDownOrderArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:BurstScaleDownOrder", name, {}, opts);
        const problems = scaleDownOrderProblems(args);
        if (problems.length > 0) throw new Error(`BurstScaleDownOrder ${name}:\n${problems.join("\n")}`);
        const child = { parent: this };
        const account = new k8s.core.v1.ServiceAccount(`${name}-account`, { metadata: { name, namespace: args.namespace } }, child);

        const guard = allowOnlyTheAnnotation(name, args, child);
        // The account never holds `patch pods` without the policy that limits it.
        const grants = grantAccess(name, args, { parent: this, dependsOn: guard });
        const script = new k8s.core.v1.ConfigMap(`${name}-script`, { metadata: { name, namespace: args.namespace }, data: scriptFiles(SCRIPT) }, child);
        new k8s.apps.v1.Deployment(`${name}-annotator`, annotatorDeployment(name, args), { parent: this, dependsOn: [account, script, ...guard, ...grants] });

        this.deploymentName = name;
        this.admissionPolicyName = `${name}-annotation-only`;
        this.registerOutputs({ deploymentName: this.deploymentName, admissionPolicyName: this.admissionPolicyName });
    }
}

/** The annotator's Deployment: one replica on a stable node, read-only and unprivileged. */
export function annotatorDeployment(name: string, a: BurstScaleDownOrderArgs) {
    const labels = { app: name };
    return {
        metadata: { name, namespace: a.namespace },
        spec: {
            replicas: 1,
            selector: { matchLabels: labels },
            template: {
                metadata: { labels },
                spec: {
                    serviceAccountName: name,
                    nodeSelector: a.stableNodeSelector,
                    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [NOT_ON_KARPENTER_NODES] }] } } },
                    securityContext: { runAsNonRoot: true, runAsUser: NODE_USER, runAsGroup: NODE_USER, seccompProfile: { type: "RuntimeDefault" } },
                    containers: [
                        {
                            name: "annotator",
                            image: a.image,
                            command: ["node", `/app/${SCRIPT}`],
                            env: [
                                { name: "NAMESPACE", value: a.podNamespace },
                                // Every burst pod the placement patches carries it; the headroom pods do not, and are never scaled down.
                                { name: "POD_SELECTOR", value: DEPLOYMENT_LABEL },
                                { name: "NODE_SELECTOR", value: `karpenter.sh/nodepool=${a.nodePoolName}` },
                                { name: "INTERVAL_SECONDS", value: String(a.intervalSeconds ?? 15) },
                                { name: "HEALTH_PORT", value: String(HEALTH_PORT) },
                            ],
                            ports: [{ name: "health", containerPort: HEALTH_PORT }],
                            // Ready while passes succeed, so the replicas-unavailable alarm sees an annotator that cannot order pods.
                            readinessProbe: { httpGet: { path: "/healthz", port: "health" }, periodSeconds: 15, failureThreshold: 2 },
                            resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } },
                            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                            volumeMounts: [{ name: "script", mountPath: "/app", readOnly: true }],
                        },
                    ],
                    volumes: [{ name: "script", configMap: { name } }],
                },
            },
        },
    };
}

/** Read nodes (their age), list and patch pods in the Celery namespace only. */
function grantAccess(name: string, a: BurstScaleDownOrderArgs, opts: { parent: pulumi.Resource; dependsOn: pulumi.Resource[] }): pulumi.Resource[] {
    const child = { parent: opts.parent };
    const subjects = [{ kind: "ServiceAccount", name, namespace: a.namespace }];
    const nodes = new k8s.rbac.v1.ClusterRole(`${name}-read-nodes`, { metadata: { name: `${name}-read-nodes` }, rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["list"] }] }, child);
    const pods = new k8s.rbac.v1.Role(`${name}-annotate-pods`, { metadata: { name, namespace: a.podNamespace }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["list", "patch"] }] }, child);
    return [
        new k8s.rbac.v1.ClusterRoleBinding(`${name}-read-nodes`, { metadata: { name: `${name}-read-nodes` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${name}-read-nodes` }, subjects }, { ...child, dependsOn: [nodes] }),
        new k8s.rbac.v1.RoleBinding(
            `${name}-annotate-pods`,
            { metadata: { name, namespace: a.podNamespace }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name }, subjects },
            { ...child, dependsOn: [pods, ...opts.dependsOn] },
        ),
    ];
}

/** The admission policy that limits the annotator's pod updates to the deletion-cost annotation, and its binding. */
function allowOnlyTheAnnotation(name: string, a: BurstScaleDownOrderArgs, child: pulumi.CustomResourceOptions): pulumi.Resource[] {
    const policyName = `${name}-annotation-only`;
    const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(`${name}-admission-policy`, { metadata: { name: policyName }, spec: annotationOnlyPolicySpec(serviceAccountUser(a.namespace, name)) }, child);
    const binding = new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        `${name}-admission-binding`,
        {
            metadata: { name: policyName },
            spec: {
                policyName,
                validationActions: ["Deny"],
                matchResources: { namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [a.podNamespace] }] } },
            },
        },
        { ...child, dependsOn: [policy] },
    );
    return [policy, binding];
}
