import * as k8s from "@pulumi/kubernetes";
import { scriptFiles } from "./inClusterScript.ts";
import * as pulumi from "@pulumi/pulumi";
import { NOT_ON_KARPENTER_NODES } from "./celeryWorkloadPlacement.ts";
import { type DisruptionReason, MODEL_YEAR, SPAN_DAYS, SPAN_FROM, type SendingHours, forbiddenInSpan, forbiddenMinutes, sendingWindow, utcClock } from "./disruptionBudgets.ts";
import { type DisruptionBudget } from "./ephemeralNodePool.ts";

const SCRIPT = "recycleNodeClaims.js";
/** The label Karpenter puts on every NodeClaim and node of a NodePool (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go). */
export const NODEPOOL_LABEL = "karpenter.sh/nodepool";
/** The `node` user of Node's official images. */
const NODE_USER = 1000;
/** Seconds between looks at the pool while the run waits (a launch, a drain). */
const POLL_SECONDS = 10;

export interface NodeRecyclerArgs {
    /** Namespace the CronJob runs in (Karpenter's). */
    namespace: string;
    /** The NodePool whose NodeClaims it may delete (labelled karpenter.sh/nodepool=<name>), and no other. */
    nodePoolName: string;
    /** Labels of the stable on-demand nodes, where the job runs. */
    stableNodeSelector: Record<string, string>;
    /** An image with Node.js 18 or later on its PATH as `node` and a user 1000, such as Node's official alpine image. */
    image: string;
    /** When runs start: a cron schedule in UTC (the CronJob's timeZone), inside the budgets' window. */
    schedule: string;
    /** NodeClaims older than this are replaced. */
    maxAgeDays: number;
    /** NodeClaims not Initialized this long after creation, or whose node is NotReady this long, are replaced. */
    stuckMinutes: number;
    /** The run deletes nothing inside them, nor when a drain started now could reach them. */
    sendingHours: SendingHours;
    /** The NodePool's terminationGracePeriod in seconds: the longest a deleted NodeClaim drains. */
    drainSeconds: number;
    /** Longest a run may last (the Job's activeDeadlineSeconds): from the latest run start to sending hours. */
    activeDeadlineSeconds: number;
}

/** Every way these arguments would fail at `up`, as "<what>: <why>". */
export function nodeRecyclerProblems(a: NodeRecyclerArgs): string[] {
    const problems: string[] = [];
    if (!Number.isInteger(a.maxAgeDays) || a.maxAgeDays < 1) problems.push(`maxAgeDays must be a whole number of days, at least 1 (got ${a.maxAgeDays})`);
    if (!Number.isInteger(a.stuckMinutes) || a.stuckMinutes < 1) problems.push(`stuckMinutes must be a whole number of minutes, at least 1 (got ${a.stuckMinutes})`);
    if (!Number.isInteger(a.activeDeadlineSeconds) || a.activeDeadlineSeconds < 60) problems.push(`activeDeadlineSeconds must be at least 60 (got ${a.activeDeadlineSeconds})`);
    return problems;
}

/** The service account's user name, as the API server puts it in admission requests. */
export const recyclerUser = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

/**
 * The admission policy's CEL: the recycler's service account may delete a NodeClaim only if it belongs to the pool.
 * RBAC cannot say it: NodeClaims are cluster-scoped and their names generated, so `resourceNames` cannot list them,
 * and RBAC has no label selectors. On DELETE the object is `oldObject` (`object` is null).
 */
export function ownPoolOnlyPolicySpec(user: string, nodePoolName: string) {
    return {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: ["karpenter.sh"], apiVersions: ["v1"], operations: ["DELETE"], resources: ["nodeclaims"] }] },
        matchConditions: [{ name: "is-the-recycler", expression: `request.userInfo.username == '${user}'` }],
        validations: [
            {
                expression: `has(oldObject.metadata.labels) && '${NODEPOOL_LABEL}' in oldObject.metadata.labels && oldObject.metadata.labels['${NODEPOOL_LABEL}'] == '${nodePoolName}'`,
                message: `${user} may delete only NodeClaims of the NodePool ${nodePoolName} (label ${NODEPOOL_LABEL}=${nodePoolName})`,
                reason: "Forbidden",
            },
        ],
    };
}

/**
 * Replaces the NodePool's stuck and old nodes outside sending hours, one at a time: a CronJob that deletes the
 * NodeClaims not initialized after `stuckMinutes`, those whose node is NotReady that long, and those older than
 * `maxAgeDays`. Karpenter drains each under the NodePool's terminationGracePeriod and launches a replacement. With
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
        // The account never holds `delete nodeclaims` without the policy that limits it to the pool.
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
 * List and delete NodeClaims, list nodes: nothing else (no get, watch, update or patch). NodeClaims are
 * cluster-scoped with generated names, so the rule cannot name them; the admission policy limits deletes to the pool.
 */
export function recyclerRules() {
    return [
        { apiGroups: ["karpenter.sh"], resources: ["nodeclaims"], verbs: ["list", "delete"] },
        { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
    ];
}

/** The CronJob: one run at a time, on a stable node, unprivileged, read-only, never retried into the day. */
export function recyclerCronJob(name: string, a: NodeRecyclerArgs) {
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
                                        { name: "SENDING_START", value: a.sendingHours.start },
                                        { name: "SENDING_END", value: a.sendingHours.end },
                                        { name: "TIME_ZONE", value: a.sendingHours.timeZone },
                                        { name: "DRAIN_SECONDS", value: String(a.drainSeconds) },
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

/** The admission policy that limits the recycler's deletes to NodeClaims of its pool, and its binding. */
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

const DAY = 1440;

/** Minutes of the model year's span (from SPAN_FROM) inside sending hours. */
function sendingMinutes(h: SendingHours): Uint8Array {
    const out = new Uint8Array(SPAN_DAYS * DAY);
    for (let d = 0; d < SPAN_DAYS; d++) {
        const w = sendingWindow(h, new Date(SPAN_FROM.getTime() + d * DAY * 60_000), SPAN_FROM);
        for (let t = Math.max(0, w.start); t < Math.min(out.length, w.end); t++) out[t] = 1;
    }
    return out;
}

export interface RecycleWindow {
    /** Why the schedule does not fit, or undefined. */
    problem?: string;
    /** The shortest time, over the model year, from a run's start to the next sending hours (minutes). */
    shortestMinutes: number;
    /** The longest time between two runs' starts (minutes): how long a node that gets stuck just after a run waits. */
    longestGapMinutes: number;
}

const windows = new Map<string, RecycleWindow>();

/**
 * Whether every run of `schedule` (UTC, robfig/cron as Kubernetes' CronJob controller and Karpenter's budgets read
 * it, components/cron.ts) in the model year starts outside sending hours, in EST and EDT alike; in a minute the
 * budgets allow Drifted and Underutilized disruption (the window in which Karpenter itself replaces nodes); and at
 * least `drainMinutes` (the terminationGracePeriod) before sending hours begin, so its first deletion can drain.
 */
export function recycleWindow(schedule: string, h: SendingHours, budgets: DisruptionBudget[], drainMinutes: number): RecycleWindow {
    const key = JSON.stringify([schedule, h, budgets, drainMinutes]);
    let w = windows.get(key);
    if (!w) windows.set(key, (w = findRecycleWindow(schedule, h, budgets, drainMinutes)));
    return w;
}

function findRecycleWindow(schedule: string, h: SendingHours, budgets: DisruptionBudget[], drainMinutes: number): RecycleWindow {
    // A one-minute budget on the schedule marks exactly the minutes a run starts.
    // Over the model year and the next, for the gap after the year's last run.
    const runs = forbiddenMinutes([{ nodes: "0", schedule, duration: "1m" }], "Drifted", SPAN_FROM, SPAN_DAYS + 366, "cronjob");
    const sending = sendingMinutes(h);
    const forbidden: [DisruptionReason, Uint8Array][] = (["Drifted", "Underutilized"] as const).map((r) => [r, forbiddenInSpan(budgets, r)]);
    // Minutes until the next sending minute, from each minute (Infinity past the span's last one).
    const next = new Float64Array(sending.length + 1).fill(Infinity);
    for (let t = sending.length - 1; t >= 0; t--) next[t] = sending[t] ? 0 : next[t + 1] + 1;
    const hours = `sendingHours (${h.start}-${h.end} ${h.timeZone})`;
    const when = (t: number) => {
        const day = new Date(SPAN_FROM.getTime() + t * 60_000).toISOString().slice(0, 10);
        const offset = sendingWindow(h, new Date(`${day}T00:00:00Z`), SPAN_FROM).offset;
        return `${day} ${utcClock(t)} UTC (${utcClock(t + offset)} local)`;
    };
    let shortest = Infinity;
    let longest = 0;
    let last: number | undefined;
    // Runs in the model year itself; the span's two days either side only serve the windows around them.
    for (let t = 2 * DAY; t < (SPAN_DAYS - 2) * DAY; t++) {
        if (!runs[t]) continue;
        if (sending[t]) return { problem: `must start runs outside ${hours}: a run starts on ${when(t)}`, shortestMinutes: 0, longestGapMinutes: 0 };
        const blocked = forbidden.filter(([, f]) => f[t]).map(([r]) => r);
        if (blocked.length) {
            return {
                problem: `must start runs when the budgets allow Drifted and Underutilized disruption, as Karpenter replaces nodes only then: a run starts on ${when(t)}, when a budget allows no ${blocked.join(" or ")} disruption (nodes "0")`,
                shortestMinutes: 0,
                longestGapMinutes: 0,
            };
        }
        if (next[t] < drainMinutes) {
            return {
                problem: `must start runs at least nodePool.terminationGracePeriod (${drainMinutes} minutes) before ${hours} begin, so that a node deleted at the start drains before them: a run starts on ${when(t)}, ${next[t]} minutes before`,
                shortestMinutes: next[t],
                longestGapMinutes: 0,
            };
        }
        shortest = Math.min(shortest, next[t]);
        if (last !== undefined) longest = Math.max(longest, t - last);
        last = t;
    }
    if (shortest === Infinity || last === undefined) return { problem: `never starts a run in ${MODEL_YEAR}`, shortestMinutes: 0, longestGapMinutes: 0 };
    // From the year's last run to the next one.
    const following = runs.indexOf(1, last + 1);
    longest = Math.max(longest, following < 0 ? Infinity : following - last);
    return { shortestMinutes: shortest, longestGapMinutes: longest };
}
