import * as k8s from "@pulumi/kubernetes";
import { scriptFiles } from "./inClusterScript.ts";
import * as pulumi from "@pulumi/pulumi";
import { NOT_ON_KARPENTER_NODES } from "./models/celeryPlacement.ts";
import { COMMAND_SECONDS, MARK_SECONDS, type ProtectedWindow } from "./models/recycleWindow.ts";

const SCRIPT = "recycleNodeClaims.js";
/** The label Karpenter puts on every NodeClaim and node of a NodePool (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go). */
export const NODEPOOL_LABEL = "karpenter.sh/nodepool";
/**
 * The NodePool hash a NodeClaim was made from (v1.14.1 pkg/apis/v1/labels.go:52): the one annotation the recycler
 * changes, to mark an old NodeClaim drifted (pkg/controllers/nodeclaim/disruption/drift.go:153-168).
 */
const NODEPOOL_HASH = "karpenter.sh/nodepool-hash";
/** The `node` user of Node's official images. */
const NODE_USER = 1000;
/** Seconds between looks at the pool while the run waits (a launch, a drain). */
const POLL_SECONDS = 10;
export interface NodeRecyclerArgs {
    /** Namespace the CronJob runs in (Karpenter's). */
    namespace: string;
    /** The NodePool whose NodeClaims it may mark and delete (labelled karpenter.sh/nodepool=<name>), and no other. */
    nodePoolName: string;
    /** Labels of the stable on-demand nodes, where the job runs. */
    stableNodeSelector: Record<string, string>;
    /** An image with Node.js 18 or later on its PATH as `node` and a user 1000, such as Node's official alpine image. */
    image: string;
    /** When runs start: a cron schedule in UTC (the CronJob's timeZone), outside the protected windows, where the budgets allow drift. */
    schedule: string;
    /** NodeClaims older than this are marked drifted, and Karpenter replaces them. */
    maxAgeDays: number;
    /** NodeClaims not Initialized this long after creation, or whose node is NotReady this long, are deleted. */
    stuckMinutes: number;
    /** The run acts inside none of them, nor when a drain it starts could reach one: sending hours, the nightly batch. */
    windows: ProtectedWindow[];
    /** The NodePool's terminationGracePeriod in seconds: the longest a deleted NodeClaim drains. */
    drainSeconds: number;
    /** Longest a run may last (the Job's activeDeadlineSeconds): from the latest run start to the next protected window. */
    activeDeadlineSeconds: number;
}

/** Every way these arguments would fail at `up`, as "<what>: <why>". */
function nodeRecyclerProblems(a: NodeRecyclerArgs): string[] {
    const problems: string[] = [];
    if (!Number.isInteger(a.maxAgeDays) || a.maxAgeDays < 1) problems.push(`maxAgeDays must be a whole number of days, at least 1 (got ${a.maxAgeDays})`);
    if (!Number.isInteger(a.stuckMinutes) || a.stuckMinutes < 1) problems.push(`stuckMinutes must be a whole number of minutes, at least 1 (got ${a.stuckMinutes})`);
    if (!Number.isInteger(a.activeDeadlineSeconds) || a.activeDeadlineSeconds < 60) problems.push(`activeDeadlineSeconds must be at least 60 (got ${a.activeDeadlineSeconds})`);
    if (a.windows.length === 0) problems.push("windows must name at least one protected window");
    return problems;
}

/** The service account's user name, as the API server puts it in admission requests. */
export const recyclerUser = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

/** `field` of `metadata` is the same in the old and the new object, absent in both or equal. */
const unchanged = (field: string) =>
    `has(object.metadata.${field}) == has(oldObject.metadata.${field}) && (!has(object.metadata.${field}) || object.metadata.${field} == oldObject.metadata.${field})`;

/**
 * The admission policy's CEL: the recycler's service account may delete a NodeClaim of the pool, and change its
 * karpenter.sh/nodepool-hash annotation, nothing else. RBAC cannot say it: NodeClaims are cluster-scoped and their
 * names generated, so `resourceNames` cannot list them, RBAC has no label selectors, and `patch` allows any change.
 * On DELETE the object is `oldObject` (`object` is null); a PATCH arrives as UPDATE with both. Owner references count
 * as a change too: a NodeClaim pointed at a missing owner would be deleted by the garbage collector.
 */
export function ownPoolOnlyPolicySpec(user: string, nodePoolName: string) {
    const update = (expression: string) => `request.operation != 'UPDATE' || (${expression})`;
    const annotations = ["object", "oldObject"].map((o) => `has(${o}.metadata.annotations)`).join(" && ");
    return {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: ["karpenter.sh"], apiVersions: ["v1"], operations: ["DELETE", "UPDATE"], resources: ["nodeclaims"] }] },
        matchConditions: [{ name: "is-the-recycler", expression: `request.userInfo.username == '${user}'` }],
        validations: [
            {
                expression: `has(oldObject.metadata.labels) && '${NODEPOOL_LABEL}' in oldObject.metadata.labels && oldObject.metadata.labels['${NODEPOOL_LABEL}'] == '${nodePoolName}'`,
                message: `${user} may delete or mark only NodeClaims of the NodePool ${nodePoolName} (label ${NODEPOOL_LABEL}=${nodePoolName})`,
                reason: "Forbidden",
            },
            {
                expression: update(
                    [
                        "object.spec == oldObject.spec",
                        "has(object.metadata.labels) && object.metadata.labels == oldObject.metadata.labels",
                        unchanged("finalizers"),
                        unchanged("ownerReferences"),
                        annotations,
                        `'${NODEPOOL_HASH}' in object.metadata.annotations`,
                        "size(object.metadata.annotations) == size(oldObject.metadata.annotations)",
                        `oldObject.metadata.annotations.all(k, k == '${NODEPOOL_HASH}' || (k in object.metadata.annotations && object.metadata.annotations[k] == oldObject.metadata.annotations[k]))`,
                    ].join(" && "),
                ),
                message: `${user} may change only the annotation ${NODEPOOL_HASH} of a NodeClaim: its spec, labels, other annotations, finalizers and owner references stay as they are`,
                reason: "Forbidden",
            },
        ],
    };
}

/**
 * Replaces the NodePool's old and stuck nodes outside sending hours and the nightly batch, one at a time: a CronJob
 * that marks NodeClaims older than `maxAgeDays` drifted, so that Karpenter replaces each the new node first and within
 * the budgets, and deletes the NodeClaims not initialized after `stuckMinutes` and those whose node is NotReady that
 * long, which nothing runs on and drift cannot replace (components/inCluster/recycleNodeClaims.js says why). With
 * expireAfter Never nothing else bounds a node's age or removes a node that never initializes.
 */
export class NodeRecycler extends pulumi.ComponentResource {
    public readonly cronJobName: string;
    public readonly admissionPolicyName: string;

    constructor(name: string, args: NodeRecyclerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:NodeRecycler", name, {}, opts);
        const problems = nodeRecyclerProblems(args);
        if (problems.length > 0) throw new Error(`NodeRecycler ${name}:\n${problems.join("\n")}`);
        const child = { parent: this };
        const account = new k8s.core.v1.ServiceAccount(`${name}-account`, { metadata: { name, namespace: args.namespace } }, child);
        const guard = allowOnlyOwnPool(name, args, child);
        // The account never holds `delete` or `patch nodeclaims` without the policy that limits it.
        const role = new k8s.rbac.v1.ClusterRole(`${name}-role`, { metadata: { name }, rules: recyclerRules() }, child);
        const binding = new k8s.rbac.v1.ClusterRoleBinding(
            `${name}-binding`,
            { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name }, subjects: [{ kind: "ServiceAccount", name, namespace: args.namespace }] },
            { parent: this, dependsOn: [role, ...guard] },
        );
        const script = new k8s.core.v1.ConfigMap(`${name}-script`, { metadata: { name, namespace: args.namespace }, data: scriptFiles(SCRIPT) }, child);
        new k8s.batch.v1.CronJob(`${name}-cronjob`, recyclerCronJob(name, args), { parent: this, dependsOn: [account, script, binding, ...guard] });

        this.cronJobName = name;
        this.admissionPolicyName = `${name}-own-pool-only`;
        this.registerOutputs({ cronJobName: this.cronJobName, admissionPolicyName: this.admissionPolicyName });
    }
}

/**
 * List, patch and delete NodeClaims, list nodes: nothing else (no get, watch or update, no status). NodeClaims are
 * cluster-scoped with generated names, so the rule cannot name them; the admission policy limits deletes to the pool
 * and patches to the one annotation.
 */
function recyclerRules() {
    return [
        { apiGroups: ["karpenter.sh"], resources: ["nodeclaims"], verbs: ["list", "patch", "delete"] },
        { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
    ];
}

/** The CronJob: one run at a time, on a stable node, unprivileged, read-only, never retried into the day. */
function recyclerCronJob(name: string, a: NodeRecyclerArgs) {
    const labels = { app: name };
    return {
        metadata: { name, namespace: a.namespace },
        spec: {
            schedule: a.schedule,
            // The schedule is validated in UTC, as Karpenter reads budget schedules; without it the controller manager's zone applies.
            timeZone: "Etc/UTC",
            concurrencyPolicy: "Forbid",
            // A run missed by more than this is skipped, not started late.
            startingDeadlineSeconds: 3600,
            successfulJobsHistoryLimit: 3,
            failedJobsHistoryLimit: 3,
            jobTemplate: {
                spec: {
                    // A failed run retries twice (each run looks at the pool afresh), and never past the deadline.
                    backoffLimit: 2,
                    activeDeadlineSeconds: a.activeDeadlineSeconds,
                    template: {
                        metadata: { labels },
                        spec: {
                            serviceAccountName: name,
                            restartPolicy: "Never",
                            terminationGracePeriodSeconds: 30,
                            nodeSelector: a.stableNodeSelector,
                            affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [NOT_ON_KARPENTER_NODES] }] } } },
                            securityContext: { runAsNonRoot: true, runAsUser: NODE_USER, runAsGroup: NODE_USER, seccompProfile: { type: "RuntimeDefault" } },
                            containers: [
                                {
                                    name: "recycler",
                                    image: a.image,
                                    command: ["node", `/app/${SCRIPT}`],
                                    env: [
                                        { name: "NODE_POOL", value: a.nodePoolName },
                                        { name: "MAX_AGE_DAYS", value: String(a.maxAgeDays) },
                                        { name: "STUCK_MINUTES", value: String(a.stuckMinutes) },
                                        { name: "PROTECTED_WINDOWS", value: JSON.stringify(a.windows.map(({ name, start, end, timeZone }) => ({ name, start, end, timeZone }))) },
                                        { name: "DRAIN_SECONDS", value: String(a.drainSeconds) },
                                        { name: "MARK_SECONDS", value: String(MARK_SECONDS) },
                                        { name: "COMMAND_SECONDS", value: String(COMMAND_SECONDS) },
                                        { name: "POLL_SECONDS", value: String(POLL_SECONDS) },
                                    ],
                                    resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } },
                                    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                                    volumeMounts: [{ name: "script", mountPath: "/app", readOnly: true }],
                                },
                            ],
                            volumes: [{ name: "script", configMap: { name } }],
                        },
                    },
                },
            },
        },
    };
}

/** The admission policy that limits the recycler to its pool's NodeClaims and to the one annotation, and its binding. */
function allowOnlyOwnPool(name: string, a: NodeRecyclerArgs, child: pulumi.CustomResourceOptions): pulumi.Resource[] {
    const policyName = `${name}-own-pool-only`;
    const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        `${name}-admission-policy`,
        { metadata: { name: policyName }, spec: ownPoolOnlyPolicySpec(recyclerUser(a.namespace, name), a.nodePoolName) },
        child,
    );
    // NodeClaims are cluster-scoped: no namespace selector; the policy's own constraints pick the requests.
    const binding = new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        `${name}-admission-binding`,
        { metadata: { name: policyName }, spec: { policyName, validationActions: ["Deny"] } },
        { ...child, dependsOn: [policy] },
    );
    return [policy, binding];
}
