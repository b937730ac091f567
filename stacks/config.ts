// The config schema: every key of a stack file, what it allows, and the rules across keys. Each stack's config is read
// once (stacks/validatedConfig.ts; the program's through stacks/programConfig.ts, the only reader of Pulumi config)
// into one typed, validated object; components receive plain values from it and never see config keys.
import { type ConfigWarning, fitsCeleryPod, nodeResources, quantityValue } from "../components/models/nodePool.ts";
import { WARNING_IDS } from "./warnings.ts";
import { disruptionProblems, isTimeZone } from "../components/models/disruptionBudgets.ts";
import { type ProtectedWindow, markClearanceSeconds, recycleWindow } from "../components/models/recycleWindow.ts";
import { type AlarmRule, DEFAULT_METRIC_SOURCE, DEFAULT_RULES, SEVERITIES, alarmRuleProblems, burstAlarmNameProblems, isValidPeriod } from "../components/models/alarmRules.ts";
import { STABLE_NODE_LABELS } from "../components/models/scheduling.ts";
import { NAME_LIMITS, controllerNameProblems } from "../components/models/controllerPolicy.ts";
import { DRAIN_SLACK_SECONDS, HOOK_MARGIN_SECONDS, INTERRUPTION_REACTION_SECONDS, SPOT_NOTICE_SECONDS, SPOT_ROOM_SECONDS, burstGraceSeconds, waitsFor } from "../components/models/celeryPlacement.ts";
import { type Infer, type Issue, type Schema, boolean, got, integer, k8sName, labelKey, leaf, list, number, object, oneOf, optional, quantity, record, text, duration, labelValue } from "./schema.ts";
import { cron, durationAtLeast, durationSeconds, isCalendarDate } from "./schema.ts";
import { familySizes, instanceFamilyProblem, instanceTypeProblem } from "../components/models/instanceTypes.ts";
import { regionProblem, zoneProblems } from "./awsRegions.ts";
import { MAX_DRILL_NODES } from "../components/models/fis.ts";
import { drillNameProblems, durationBeforeInterruptionProblem } from "../components/models/fis.ts";
import { KARPENTER_VERSION } from "../components/karpenter/version.ts";

const tagValue = text("a tag value of at most 256 characters", /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u, 256);

const zone = text("an availability zone such as ca-central-1a", /^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$/, 32);
const instanceTypePattern = /^[a-z][a-z0-9-]*\.[a-z0-9-]+$/;
const instanceType = text("an EC2 instance type such as c7i.xlarge", instanceTypePattern, 63);

/** `schema`, then `problem` on a value that passed it: facts beyond the shape (the type exists, its architecture...). */
function checked<T>(schema: Schema<T>, problem: (v: T) => string | undefined): Schema<T> {
    return {
        expected: schema.expected,
        parse(value, path, issues) {
            const before = issues.length;
            const v = schema.parse(value, path, issues);
            const p = issues.length === before ? problem(v) : undefined;
            if (p) issues.push({ path, message: p });
            return v;
        },
    };
}

/** A quantity above zero: a limit or a request of 0 is accepted by Kubernetes and Karpenter, and makes nothing run. */
const positiveQuantity = (why: string) => checked(quantity, (q) => (parseFloat(q) > 0 ? undefined : `must be above 0: ${why} (got ${got(q)})`));

/** One bound of a quantity: its value in `unit`, as written in messages, and why it is the bound; `above`: the bound itself is out. */
type QuantityBound = { value: number; text: string; why: string; above?: boolean };

/**
 * A quantity from `min` to `max` in `unit` (cores or GiB): Kubernetes takes any quantity, one byte of memory or a
 * million cores alike; each bound says what goes wrong beyond it.
 */
function quantityBetween(unit: "cores" | "GiB", min: QuantityBound, max: QuantityBound): Schema<string> {
    return checked(quantity, (q) => {
        const v = quantityValue(q, unit);
        if (!(min.above ? v > min.value : v >= min.value)) return `must be ${min.above ? "above" : "at least"} ${min.text}: ${min.why} (got ${got(q)})`;
        if (v > max.value) return `must be at most ${max.text}: ${max.why} (got ${got(q)})`;
        return undefined;
    });
}

/** The controller's request and limit, each. Karpenter's getting-started guide gives it 1 CPU and 1Gi. */
const CONTROLLER_RESOURCES = {
    cpu: quantityBetween(
        "cores",
        { value: 0.1, text: "100m", why: "the controller's request and limit; a throttled controller is slow to launch nodes for a burst of pending pods, and 100m is a tenth of what Karpenter's getting-started guide gives it (1)" },
        { value: 16, text: "16", why: "the controller's request and limit; it runs on a stable node, and a request above what any stable node holds leaves it pending" },
    ),
    memory: quantityBetween(
        "GiB",
        { value: 0.25, text: "256Mi", why: "the controller's request and limit; Karpenter keeps the cluster's nodes, pods and NodeClaims in memory, and an OOM-killed controller restarts and launches nothing meanwhile; 256Mi is a quarter of what Karpenter's getting-started guide gives it (1Gi)" },
        { value: 64, text: "64Gi", why: "the controller's request and limit; it runs on a stable node, and a request above what any stable node holds leaves it pending" },
    ),
};

/**
 * A NodePool limit: above 0, or the pool launches nothing; and bounded, since the limit is the one cap on what a runaway
 * scale-up launches (a Celery task that requeues itself, an HPA without maxReplicas): a limit past every real burst caps
 * nothing. 5000 vCPUs is 1250 nodes of 4 vCPUs, five times GC Notify's production limit; memory at 8Gi a vCPU.
 */
const NODE_POOL_LIMIT = {
    cpu: quantityBetween(
        "cores",
        { value: 0, text: "0", above: true, why: "a NodePool limited to 0 launches no node" },
        { value: 5000, text: "5000", why: "the limit is the one cap on what a runaway scale-up launches, and 5000 vCPUs (1250 nodes of 4 vCPUs, five times GC Notify's production limit) caps nothing a Celery burst needs" },
    ),
    memory: quantityBetween(
        "GiB",
        { value: 0, text: "0", above: true, why: "a NodePool limited to 0 launches no node" },
        { value: 40000, text: "40000Gi", why: "the limit is the one cap on what a runaway scale-up launches, and 40000Gi (8Gi for each of 5000 vCPUs) caps nothing a Celery burst needs" },
    ),
};

/**
 * A node agent's guaranteed resources: Kubernetes counts only requests and limits above 0 toward the Guaranteed QoS
 * class (k8s.io/kubernetes pkg/apis/core/v1/helper/qos GetPodQOS: zero quantities are left out), so 0 would leave the
 * agent Burstable, first to be evicted, which is what `guaranteed` is for.
 */
const guaranteedQuantity = checked(quantity, (q) =>
    parseFloat(q) > 0 ? undefined : `must be above 0: Kubernetes counts only requests and limits above 0 toward the Guaranteed QoS class (pkg/apis/core/v1/helper/qos), so the agent would be Burstable and evicted first (got ${got(q)})`,
);

/** A real calendar date, YYYY-MM-DD: 2026-13-01 and 2026-02-30 match the pattern and are no date. */
const calendarDate = checked(text("a date such as 2026-11-01", /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/, 10), (d) => {
    const [y, m, day] = d.split("-").map(Number);
    return isCalendarDate(y, m, day) ? undefined : `must be a real date (YYYY-MM-DD): ${m < 1 || m > 12 ? `there is no month ${m}` : `${y}-${String(m).padStart(2, "0")} has no day ${day}`} (got ${got(d)})`;
});

/**
 * An acknowledgment's reason must say why, in words a reviewer reads: not blanks, a placeholder (TODO, TBD, n/a) or one
 * word repeated. At least four distinct words of two letters or more.
 */
const PLACEHOLDER_WORDS = ["todo", "tbd", "tba", "fixme", "xxx", "n/a", "na", "none", "placeholder", "lorem", "ipsum", "reason", "because", "later", "asdf", "test", "changeme", "wip"];
function reasonProblem(reason: string): string | undefined {
    const words = reason.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'/.-]*/gu) ?? [];
    const placeholder = words.find((w) => PLACEHOLDER_WORDS.includes(w.replace(/[.]+$/, "")));
    const distinct = new Set(words.filter((w) => /\p{L}{2,}/u.test(w)));
    if (placeholder && distinct.size < 8) return `must say why the warning is accepted, as a sentence: "${placeholder}" is a placeholder, not a reason (got ${got(reason)})`;
    if (distinct.size < 4) return `must say why the warning is accepted, as a sentence of at least four distinct words (got ${got(reason)}, ${distinct.size === 0 ? "no word at all" : `${distinct.size} distinct word${distinct.size === 1 ? "" : "s"}`})`;
    return undefined;
}

/** An instance type EC2 has, amd64 (the pool's and the node group's AMIs), without GPUs (components/models/instanceTypes.ts). */
const cpuInstanceType = checked(instanceType, (t) => {
    const problem = instanceTypeProblem(t);
    return problem && `must be an amd64 EC2 instance type without GPUs: ${problem}`;
});

const cpuInstanceFamily = checked(text("an EC2 instance family such as c7i", /^[a-z][a-z0-9-]*$/, 20), (f) => {
    const problem = instanceFamilyProblem(f);
    return problem && `must be an amd64 EC2 instance family without GPUs: ${problem}`;
});

/** Every family in every size must be a type EC2 has: m7i.3xlarge is not, and Karpenter would look for it in vain. */
function instanceSizeProblems(p: { instanceFamilies?: string[]; instanceSizes?: string[] }): Issue[] {
    return (p.instanceSizes ?? []).flatMap((size, j) => {
        const lacking = (p.instanceFamilies ?? []).filter((f) => familySizes(f) && !familySizes(f)!.includes(size));
        return lacking.length
            ? [{ path: `nodePool.instanceSizes[${j}]`, message: `must be a size of every family in nodePool.instanceFamilies: there is no ${lacking.map((f) => `${f}.${size}`).join(", ")} (${lacking[0]} comes in ${familySizes(lacking[0])!.join(", ")})` }]
            : [];
    });
}
/** A cluster the program creates (mode create): its network and its stable on-demand node group. */
const createdCluster = object({
    /** Kubernetes minor version of the control plane and the stable nodes; a string, as YAML reads 1.30 as 1.3. */
    kubernetesVersion: text('a Kubernetes minor version as a string, such as "1.34"', /^1\.[0-9]{2}$/, 8),
    vpcCidr: optional(text("an IPv4 CIDR block from /16 to /20 such as 10.0.0.0/16", /^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\/(1[6-9]|20)$/, 18), "10.0.0.0/16"),
    /** One private and one public subnet in each; EKS needs at least two zones. */
    zones: list(zone, { min: 2, max: 6, unique: true }),
    /** One NAT gateway for the VPC (cheaper) or one per zone (survives a zone outage). */
    natGateways: optional(oneOf("single", "one-per-zone"), "single"),
    nodeGroup: object(
        {
            instanceTypes: list(cpuInstanceType, { min: 1, max: 10, unique: true }),
            minSize: integer(1, 20),
            desiredSize: integer(1, 20),
            maxSize: integer(1, 20),
            diskSize: optional(integer(20, 1000), 50),
        },
        (g, path) =>
            g.minSize <= g.desiredSize && g.desiredSize <= g.maxSize
                ? []
                : [{ path: `${path}.desiredSize`, message: `must be from minSize (${g.minSize}) to maxSize (${g.maxSize}) (got ${g.desiredSize})` }],
    ),
});

const cluster = object(
    {
    /** Name of the EKS cluster: looked up (GC Notify: notification-canada-ca-<env>-eks-cluster) or created. */
    name: text("an EKS cluster name (letters, digits, - and _, at most 100 characters)", /^[0-9A-Za-z][A-Za-z0-9\-_]*$/, 100),
    /** AWS region of the cluster. */
    region: text("an AWS region such as ca-central-1", /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$/, 32),
    /** Labels that select the stable on-demand nodes (GC Notify's managed node group). */
    stableNodeSelector: record("label keys such as eks.amazonaws.com/capacityType", labelKey, labelValue, 10),
    /** Attach to a cluster that exists, or create one with its VPC (a scratch account). */
    mode: oneOf("existing", "create"),
    /**
     * How CI and operators reach the cluster's API endpoint: GC Notify's Client VPN (its endpoints are private,
     * notification-terraform aws/eks/eks.tf), a self-hosted runner inside the VPC, or a public endpoint.
     */
    access: oneOf("client-vpn", "vpc-runner", "public"),
    create: optional(createdCluster),
    },
    (c, path) => [
        ...(regionProblem(c.region) ? [{ path: `${path}.region`, message: regionProblem(c.region)! }] : []),
        // Without a selector the controller could land on a node it manages and evict itself.
        ...(Object.keys(c.stableNodeSelector).length === 0 ? [{ path: `${path}.stableNodeSelector`, message: "must name at least one label of the stable nodes, such as eks.amazonaws.com/capacityType: ON_DEMAND" }] : []),
        ...createdClusterProblems(c, path),
    ],
);

/** Create mode needs `create`, existing mode refuses it, and a created cluster's zones and labels must fit. */
function createdClusterProblems(
    c: { region: string; stableNodeSelector: Record<string, string>; mode: "existing" | "create"; access: string; create?: Infer<typeof createdCluster> },
    path: string,
): Issue[] {
    if (c.mode === "existing") {
        return c.create === undefined ? [] : [{ path: `${path}.create`, message: 'must be absent when mode is "existing": the program looks the cluster up and creates nothing' }];
    }
    if (c.create === undefined) return [{ path: `${path}.create`, message: `is required when mode is "create": it must be ${createdCluster.expected}` }];
    const problems: Issue[] = regionProblem(c.region) ? [] : zoneProblems(c.create.zones, c.region, `${path}.create.zones`);
    const mismatched = Object.entries(c.stableNodeSelector).filter(([k, v]) => STABLE_NODE_LABELS[k] !== v);
    if (mismatched.length > 0) {
        const labels = Object.entries(STABLE_NODE_LABELS).map(([k, v]) => `${k}: ${v}`).join(", ");
        problems.push({ path: `${path}.stableNodeSelector`, message: `must select the created node group, whose nodes have the labels ${labels} (got ${got(c.stableNodeSelector)})` });
    }
    return problems;
}

const controller = object(
    {
        version: oneOf(KARPENTER_VERSION),
        namespace: optional(k8sName, "karpenter"),
        serviceAccount: optional(k8sName, "karpenter"),
        identity: optional(oneOf("pod-identity", "irsa"), "pod-identity"),
        replicas: optional(integer(1, 10), 2),
        cpu: optional(CONTROLLER_RESOURCES.cpu, "1"),
        memory: optional(CONTROLLER_RESOURCES.memory, "1Gi"),
        logLevel: optional(oneOf("debug", "info", "error"), "info"),
        namePrefix: optional(text("a name prefix (letters, digits and -, at most 40 characters)", /^[A-Za-z0-9][A-Za-z0-9-]*$/, 40)),
        existingNodeRoleName: optional(text("an IAM role name (letters, digits and +=,.@_-, at most 64 characters)", /^[\w+=,.@-]+$/, 64)),
        nodeRolePolicyArns: optional(list(text("an IAM policy ARN", /^arn:aws[a-z-]*:iam::(aws|[0-9]{12}):policy\/.+$/, 2048), { max: 10, unique: true }), []),
        createSpotServiceLinkedRole: optional(boolean(), false),
        spotToSpotConsolidation: optional(boolean(), false),
        batchIdleDuration: optional(durationAtLeast(1, "Karpenter waits this long for more pending pods before it launches"), "1s"),
        batchMaxDuration: optional(durationAtLeast(1, "Karpenter waits at most this long for more pending pods before it launches"), "10s"),
    },
    (c, path) => [
        ...(c.existingNodeRoleName !== undefined && c.nodeRolePolicyArns.length > 0
            ? [{ path: `${path}.nodeRolePolicyArns`, message: "must be empty when existingNodeRoleName is set: the program does not change a role it does not own" }]
            : []),
        ...(durationSeconds(c.batchIdleDuration) > durationSeconds(c.batchMaxDuration)
            ? [{ path: `${path}.batchIdleDuration`, message: `must be at most batchMaxDuration (${c.batchMaxDuration}): the batch window ends at the maximum (got ${got(c.batchIdleDuration)})` }]
            : []),
    ],
);

/**
 * The feature gates each Karpenter release's chart can set, read at its tag (aws/karpenter-provider-aws
 * charts/karpenter/templates/deployment.yaml, the FEATURE_GATES variable), with the chart's defaults
 * (charts/karpenter/values.yaml, settings.featureGates). The controller takes no other gate: the program renders
 * only `settings.featureGates.spotToSpotConsolidation` (components/karpenterController.ts controllerValues) and the
 * chart passes no other. Add a release here, read from its tag, before `controller.version` may name it.
 */
export const CHART_FEATURE_GATES: Record<string, Record<string, boolean>> = {
    // v1.14.1 deployment.yaml:129, values.yaml:230-248.
    "1.14.1": { ReservedCapacity: true, SpotToSpotConsolidation: false, NodeRepair: false, NodeOverlay: false, StaticCapacity: false, CapacityBuffer: false },
};

/**
 * Upstream's pod-deletion-cost controller: kubernetes-sigs/karpenter pull request #2894 (open, not on main at
 * 2266468, 2026-08-20; design in #2935), behind this gate, off by default in the PR and planned on at beta. With the
 * gate on it writes controller.kubernetes.io/pod-deletion-cost on every ReplicaSet pod of Karpenter's nodes without
 * regard for a value someone else set (refs/pull/2894/head pkg/controllers/pod/deletioncost/annotation.go:97-101),
 * and clears it on nodes beyond the NodePool's Underutilized budget (ranking.go:76-89): GC Notify's budget is 0 in
 * sending hours. It and the scale-down annotator would overwrite each other. With the gate off the PR only reads
 * karpenter.sh/disruption-cost first and falls back to pod-deletion-cost (pkg/utils/disruption/disruption.go:48-94 in
 * the PR), so nothing changes for the annotator.
 */
export const UPSTREAM_DELETION_COST_GATE = "PodDeletionCostManagement";

/** The gates the program turns on or off for the controller; the chart's default holds for every other. */
export function renderedFeatureGates(c: { spotToSpotConsolidation: boolean }): Record<string, boolean> {
    return { SpotToSpotConsolidation: c.spotToSpotConsolidation };
}

/**
 * While the scale-down annotator runs (placement.burst.scaleDownOrder), the controller must not run upstream's
 * pod-deletion-cost controller: a release whose gates were not read is refused, and so is one whose chart has the
 * gate on, by default or as rendered.
 */
export function upstreamDeletionCostProblems(c: { version: string; spotToSpotConsolidation: boolean }, annotator: boolean, chartGates = CHART_FEATURE_GATES): Issue[] {
    if (!annotator) return [];
    const gates = chartGates[c.version];
    if (gates === undefined) {
        return [
            {
                path: "controller.version",
                message: `must be a Karpenter release whose feature gates were read (${Object.keys(chartGates).join(", ")}) while placement.burst.scaleDownOrder is set: a newer release may carry upstream's pod-deletion-cost controller (gate ${UPSTREAM_DELETION_COST_GATE}, kubernetes-sigs/karpenter #2894), which would overwrite the annotator's pod-deletion-cost; read its chart and add it to CHART_FEATURE_GATES (got ${got(c.version)})`,
            },
        ];
    }
    const on = { ...gates, ...renderedFeatureGates(c) }[UPSTREAM_DELETION_COST_GATE] === true;
    return on
        ? [
              {
                  path: "controller.version",
                  message: `must not turn on ${UPSTREAM_DELETION_COST_GATE} while placement.burst.scaleDownOrder is set: Karpenter ${c.version} would then rewrite and clear controller.kubernetes.io/pod-deletion-cost on every burst pod, fighting the annotator (kubernetes-sigs/karpenter #2894); turn the gate off in the controller's values or remove placement.burst.scaleDownOrder`,
              },
          ]
        : [];
}

/** A container image pinned by tag or digest, such as Node's official image from ECR Public. */
const pinnedImage = text("a container image with a tag or digest, such as public.ecr.aws/docker/library/node:24-alpine", /^[a-z0-9]([a-z0-9._\/:-]*[a-z0-9])?(:[\w][\w.-]{0,127}|@sha256:[a-f0-9]{64})$/, 512);

/**
 * The node recycler (components/nodeRecycler.ts): each run, outside sending hours and the nightly batch, marks the
 * pool's NodeClaims older than maxAgeDays drifted one at a time, for Karpenter to replace (the new node first), and
 * deletes those not initialized after stuckMinutes or whose node is NotReady that long.
 */
const recycle = object({
    /** An image with Node.js 18 or later as `node` and a user 1000: Node's official alpine image, pinned. */
    image: pinnedImage,
    /**
     * When runs start, in UTC: outside sendingHours and nightlyBatch, where the budgets allow Drifted, well before
     * either. 01:00, after the budget for GC Notify's quarterly tasks (23:00-01:00 UTC, in the default budgets too).
     */
    schedule: optional(cron("cronjob"), "0 1 * * *"),
    /** Nodes older than this are replaced: with expireAfter Never, the bound on a node's age. */
    maxAgeDays: optional(integer(1, 90), 7),
    /**
     * A NodeClaim not Initialized this long after creation, or whose node is NotReady this long, is replaced. Karpenter
     * itself deletes one that does not register within 15 minutes (pkg/controllers/nodeclaim/lifecycle/liveness.go:52).
     */
    stuckMinutes: optional(integer(15, 1440), 30),
});

type Window = { start: string; end: string; timeZone: string };

/** The daily windows the budgets, the recycler and the capacity model keep disruption out of, named by their keys. */
export function protectedWindows(p: { sendingHours: Window; nightlyBatch: Window }): ProtectedWindow[] {
    return [
        { name: "sendingHours", ...p.sendingHours },
        { name: "nightlyBatch", ...p.nightlyBatch },
    ];
}

/** A recycler whose runs would start inside a protected window, while budgets forbid replacements, or too late to drain. */
function recycleProblems(p: { recycle?: Infer<typeof recycle>; sendingHours: Window; nightlyBatch: Window; budgets: { nodes: string; reasons?: string[]; schedule?: string; duration?: string }[]; terminationGracePeriod: string }, path: string): Issue[] {
    // disruptionProblems names a bad time zone, and the CRD a schedule without a duration.
    if (!p.recycle || ![p.sendingHours, p.nightlyBatch].every((w) => isTimeZone(w.timeZone)) || p.budgets.some((b) => (b.schedule === undefined) !== (b.duration === undefined))) return [];
    const w = recycleWindow(p.recycle.schedule, protectedWindows(p), p.budgets, Math.ceil(markClearanceSeconds(durationSeconds(p.terminationGracePeriod)) / 60));
    return w.problem ? [{ path: `${path}.recycle.schedule`, message: `${w.problem} (got ${got(p.recycle.schedule)})` }] : [];
}

/** Hours of every day in a time zone, such as sending hours: budgets must cover them in EST and EDT alike. */
const dailyWindow = (start: string, end: string) =>
    object({
        start: text(`a local time such as ${start}`, /^([01][0-9]|2[0-3]):[0-5][0-9]$/, 5),
        end: text(`a local time such as ${end}`, /^([01][0-9]|2[0-3]):[0-5][0-9]$/, 5),
        timeZone: text("an IANA time zone such as America/Toronto", /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/, 64),
    });

const resourceMap = record("resource names such as cpu or memory.available", /^[a-z.-]+$/, text("a quantity such as 100m, 500Mi or 10%", /^[0-9.]+(m|Ki|Mi|Gi|%)?$/, 32), 10);
const nodePool = object(
    {
        name: optional(k8sName, "notify-karpenter"),
        instanceTypes: optional(list(cpuInstanceType, { min: 1, max: 500, unique: true })),
        instanceFamilies: optional(list(cpuInstanceFamily, { min: 1, max: 50, unique: true })),
        instanceSizes: optional(list(text("an EC2 instance size such as xlarge", /^([0-9]*x?large|nano|micro|small|medium|metal(-[0-9]+xl)?)$/, 20), { min: 1, max: 20, unique: true })),
        zones: list(zone, { min: 1, max: 10, unique: true }),
        capacityTypes: optional(list(oneOf("spot", "on-demand"), { min: 1, max: 2, unique: true }), ["spot"] as ("spot" | "on-demand")[]),
        ephemeralKey: optional(text("a label key such as notification-canada-ca/ephemeral", labelKey, 316), "notification-canada-ca/ephemeral"),
        expireAfter: optional(durationAtLeast(3600, "a node must outlive its launch and a Celery drain, or Karpenter replaces nodes without end", { never: true }), "Never"),
        terminationGracePeriod: optional(duration, "1h"),
        consolidationPolicy: optional(oneOf("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"), "WhenEmptyOrUnderutilized"),
        consolidateAfter: optional(durationAtLeast(60, "the HPAs add pods every 45 s or so, and a node emptied between two steps would be removed and launched again", { never: true }), "30m"),
        budgets: optional(
            list(
                object(
                    {
                        // Karpenter's pattern for nodes (karpenter.sh_nodepools.yaml, budgets[].nodes).
                        nodes: checked(text('a node count or a percentage from 0% to 100%, as a string such as "1" or "10%"', /^((100|[0-9]{1,2})%|[0-9]+)$/, 8), (n) =>
                            /^[0-9]+$/.test(n) && Number(n) > 5000
                                ? `must be at most 5000 nodes, or a percentage: no pool here has more nodes (nodePool.limits.cpu is at most 5000 vCPUs), so a larger count allows every node, as "100%" does; write "100%" (got ${got(n)})`
                                : undefined,
                        ),
                        reasons: optional(list(oneOf("Underutilized", "Empty", "Drifted"), { min: 1, max: 3, unique: true })),
                        schedule: optional(cron("budget")),
                        duration: optional(durationAtLeast(60, "a shorter window is never active", { units: "hm" })),
                    },
                    // Karpenter's CEL rule on budgets: 'schedule' must be set with 'duration'.
                    (b, path) => ((b.schedule === undefined) === (b.duration === undefined) ? [] : [{ path, message: "must set schedule and duration together: the budget applies for duration from each time schedule fires" }]),
                ),
                { min: 1, max: 50, unique: true },
            ),
            // Karpenter's own default, and no Underutilized or Drifted disruption in the default sendingHours and
            // nightlyBatch, nor in GC Notify's quarterly tasks (23:00-01:00 UTC, docs/capacity.md), which the default
            // recycle schedule (01:00) starts after.
            [
                { nodes: "10%" },
                { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" },
                { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" },
                { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 23 1-3 1,4,7,10 *", duration: "2h" },
            ] as { nodes: string; reasons?: ("Underutilized" | "Empty" | "Drifted")[]; schedule?: string; duration?: string }[],
        ),
        /** When batches run (GC Notify: 08:00-18:00 Eastern): no Underutilized disruption, no expiry, no drift then. */
        sendingHours: optional(dailyWindow("08:00", "18:00"), { start: "08:00", end: "18:00", timeZone: "America/Toronto" }),
        /**
         * When GC Notify's nightly tasks run on the burst workers (05:05 until about 10:20 UTC, notification-api
         * app/config.py beat schedule): no Underutilized disruption, no drift, no recycling then.
         */
        nightlyBatch: optional(dailyWindow("05:00", "10:30"), { start: "05:00", end: "10:30", timeZone: "Etc/UTC" }),
        limits: object({ cpu: NODE_POOL_LIMIT.cpu, memory: NODE_POOL_LIMIT.memory }),
        weight: optional(integer(1, 100), 10),
        ami: object({
            alias: optional(text("an AMI alias such as al2023@v20251117", /^[a-z0-9]+@.+$/, 30)),
            id: optional(text("an AMI ID such as ami-0123456789abcdef0", /^ami-[0-9a-f]+$/, 32)),
            family: optional(oneOf("AL2023", "AL2", "Bottlerocket")),
        }),
        allowLatestAmi: optional(boolean(), false),
        metadataHopLimit: optional(integer(1, 64), 2),
        rootVolumeSize: optional(text("a size in Gi such as 80Gi", /^[1-9][0-9]*Gi$/, 8), "80Gi"),
        kubeReserved: optional(resourceMap),
        systemReserved: optional(resourceMap),
        evictionHard: optional(resourceMap),
        subnetIds: optional(list(text("a subnet ID", /^subnet-[0-9a-f]+$/, 32), { min: 1, max: 30, unique: true })),
        securityGroupIds: optional(list(text("a security group ID", /^sg-[0-9a-f]+$/, 32), { min: 1, max: 30, unique: true })),
        tags: optional(record("tag keys", /^.{1,128}$/, tagValue), {}),
        recycle: optional(recycle),
        capacityCheck: optional(
            object({
                celeryPodCpu: positiveQuantity("the size of one burst Celery pod, which headroom pods and the capacity model divide by"),
                celeryPodMemory: positiveQuantity("the size of one burst Celery pod, which headroom pods and the capacity model divide by"),
                daemonsetCpu: quantity,
                daemonsetMemory: quantity,
                peakCeleryPods: integer(0, 10000),
            }),
        ),
    },
    (p, path) => {
        const explicit = p.instanceTypes !== undefined;
        const product = p.instanceFamilies !== undefined || p.instanceSizes !== undefined;
        if (explicit === product || (product && (!p.instanceFamilies || !p.instanceSizes))) {
            return [{ path: `${path}.instanceTypes`, message: "or instanceFamilies with instanceSizes (but not both forms) must list the approved instance types" }];
        }
        // Karpenter accepts such a budget and it silently does nothing: WhenEmpty never consolidates underused nodes.
        // A budget that also governs another reason (the default one also holds Drifted back) still does something.
        const inert =
            p.consolidationPolicy !== "WhenEmpty"
                ? []
                : p.budgets.flatMap((b, i) =>
                      b.reasons?.length && b.reasons.every((r) => r === "Underutilized")
                          ? [{ path: `${path}.budgets[${i}].reasons`, message: "must not list Underutilized with consolidationPolicy WhenEmpty, which never disrupts a node for that reason: the budget would do nothing (use Empty or Drifted)" }]
                          : [],
                  );
        return [
            ...inert,
            ...disruptionProblems(p).map((d) => ({ path: `${path}.${d.key}`, message: d.message })),
            ...recycleProblems(p, path),
            ...limitProblems(p, path),
            ...celeryFitProblems(p, path),
            ...amiProblems(p, path),
        ];
    },
);

/** What the pool's checks read (spelled out: inferring it from nodePool would be circular). */
type NodePoolConfig = {
    instanceTypes?: string[];
    instanceFamilies?: string[];
    instanceSizes?: string[];
    limits: { cpu: string; memory: string };
    kubeReserved?: Record<string, string>;
    systemReserved?: Record<string, string>;
    evictionHard?: Record<string, string>;
    capacityCheck?: { celeryPodCpu: string; celeryPodMemory: string; daemonsetCpu: string; daemonsetMemory: string; peakCeleryPods: number };
    ami: { alias?: string; id?: string; family?: "AL2023" | "AL2" | "Bottlerocket" };
    rootVolumeSize: string;
};

/**
 * Limits that no approved type fits: Karpenter launches only types whose capacity (vCPUs, and memory less its 7.5 %
 * VM overhead) fits within what the limits leave, and with none it logs "all available instance types exceed limits
 * for nodepool" and launches nothing (kubernetes-sigs/karpenter v1.14.1 scheduler.go:716-719, 1069-1085).
 */
function limitProblems(p: NodePoolConfig, path: string): Issue[] {
    const cpu = quantityValue(p.limits.cpu, "cores");
    const memory = quantityValue(p.limits.memory, "GiB");
    const shapes = approvedInstanceTypes(p).flatMap((t) => {
        const r = nodeResources(t, p);
        return r ? [{ t, ...r.capacity }] : [];
    });
    if (shapes.length === 0 || !Number.isFinite(cpu) || !Number.isFinite(memory) || shapes.some((s) => s.cpu <= cpu && s.memoryGiB <= memory)) return [];
    const fewestCpus = shapes.reduce((a, b) => (b.cpu < a.cpu ? b : a));
    const leastMemory = shapes.reduce((a, b) => (b.memoryGiB < a.memoryGiB ? b : a));
    const why = "Karpenter launches no node whose capacity exceeds the limit (v1.14.1 scheduler.go:716), so the pool would launch nothing";
    if (fewestCpus.cpu > cpu) return [{ path: `${path}.limits.cpu`, message: `must allow one node of an approved type: the smallest, ${fewestCpus.t}, has ${fewestCpus.cpu} vCPUs, and ${why} (got ${got(p.limits.cpu)})` }];
    if (leastMemory.memoryGiB > memory) {
        return [{ path: `${path}.limits.memory`, message: `must allow one node of an approved type: the smallest, ${leastMemory.t}, has ${gib(leastMemory.memoryGiB)} of memory (less Karpenter's 7.5 % VM overhead), and ${why} (got ${got(p.limits.memory)})` }];
    }
    return [{ path: `${path}.limits`, message: `must allow one node of an approved type in both cpu and memory: ${fewestCpus.t} has ${fewestCpus.cpu} vCPUs but ${gib(fewestCpus.memoryGiB)}, ${leastMemory.t} ${gib(leastMemory.memoryGiB)} but ${leastMemory.cpu} vCPUs, and ${why} (got ${got(p.limits)})` }];
}

const gib = (n: number) => `${+n.toFixed(2)}Gi`;

/** A Celery pod that fits on no approved type: every burst pod would stay pending (some types too small only warns). */
function celeryFitProblems(p: NodePoolConfig, path: string): Issue[] {
    const c = p.capacityCheck;
    const types = approvedInstanceTypes(p);
    if (!c || types.some((t) => fitsCeleryPod(t, p, c))) return [];
    const largest = types.map((t) => ({ t, r: nodeResources(t, p)! })).reduce((a, b) => (b.r.allocatable.cpu + b.r.allocatable.memoryGiB > a.r.allocatable.cpu + a.r.allocatable.memoryGiB ? b : a));
    const room = `${+(largest.r.allocatable.cpu - quantityValue(c.daemonsetCpu, "cores")).toFixed(3)} cpu and ${gib(largest.r.allocatable.memoryGiB - quantityValue(c.daemonsetMemory, "GiB"))}`;
    return [
        {
            path: `${path}.capacityCheck`,
            message: `must describe a Celery pod that fits on an approved type: one pod (${c.celeryPodCpu} cpu, ${c.celeryPodMemory}) fits on none next to the daemonsets (${c.daemonsetCpu} cpu, ${c.daemonsetMemory}); the roomiest, ${largest.t}, has ${room} left after the kubelet reservations, so every burst pod would stay pending: approve larger types or correct the sizes`,
        },
    ];
}

/**
 * The root snapshot of the EKS-optimized AMIs of each family: 20 GiB for AL2023 and AL2, the size Karpenter v1.14.1
 * gives their root volume by default (aws/karpenter-provider-aws pkg/providers/amifamily/resolver.go:43, DefaultEBS);
 * EC2 refuses a launch whose volume is smaller than its snapshot. Bottlerocket's root (/dev/xvda) holds only the OS:
 * 4Gi by default (bottlerocket.go:185). An AMI of your own may have a larger snapshot: preflight's DescribeImages tells.
 */
const AMI_ROOT_SNAPSHOT_GIB: Record<string, number> = { AL2023: 20, AL2: 20, Bottlerocket: 4 };

/** The families an alias may name (the CRD also has Windows families; these nodes run Linux). */
const ALIAS_FAMILIES: Record<string, "AL2023" | "AL2" | "Bottlerocket"> = { al2023: "AL2023", al2: "AL2", bottlerocket: "Bottlerocket" };

/**
 * An alias Karpenter v1.14.1 cannot resolve, and a root volume smaller than the AMI's snapshot. The CRD admits any
 * "<family>@<anything>": more than one @ stops the controller (log.Fatalf, pkg/apis/v1/ec2nodeclass.go:703-708), and a
 * version of another form names an SSM parameter that does not exist, so no node launches ("failed to discover any
 * AMIs for alias", pkg/providers/amifamily/al2023.go:60, al2.go, bottlerocket.go).
 */
function amiProblems(p: NodePoolConfig, path: string): Issue[] {
    const issues: Issue[] = [];
    const alias = p.ami.alias;
    let family = p.ami.family;
    if (alias !== undefined) {
        const parts = alias.split("@");
        const aliasFamily = ALIAS_FAMILIES[parts[0]];
        if (parts.length !== 2) {
            issues.push({ path: `${path}.ami.alias`, message: `must be <family>@<version> with a single @: Karpenter v1.14.1 stops with a fatal error on any other alias (pkg/apis/v1/ec2nodeclass.go:703-708), and the controller would restart without end (got ${got(alias)})` });
        } else if (!aliasFamily) {
            issues.push({ path: `${path}.ami.alias`, message: `must name the family al2023, al2 or bottlerocket: these nodes run Linux on amd64 (got ${got(alias)})` });
        } else {
            family = aliasFamily;
            const version = parts[1];
            const dated = /^v([0-9]{4})([0-9]{2})([0-9]{2})$/.exec(version);
            const realDate = !!dated && isCalendarDate(+dated[1], +dated[2], +dated[3]);
            const ok = version === "latest" || (aliasFamily === "Bottlerocket" ? /^v?[0-9]+\.[0-9]+\.[0-9]+$/.test(version) : realDate);
            if (!ok) {
                const form = aliasFamily === "Bottlerocket" ? "a Bottlerocket release such as v1.46.0" : "v and an AMI release date such as v20251117";
                issues.push({ path: `${path}.ami.alias`, message: `must have a version Karpenter can look up: ${form}, or latest; Karpenter resolves ${parts[0]}@<version> through an SSM parameter that exists for no other form, and would launch no node ("failed to discover any AMIs for alias") (got ${got(alias)})` });
            }
        }
    }
    const floor = family ? AMI_ROOT_SNAPSHOT_GIB[family] : undefined;
    const size = parseInt(p.rootVolumeSize, 10);
    if (floor !== undefined && size < floor) {
        issues.push({ path: `${path}.rootVolumeSize`, message: `must be at least ${floor}Gi, the root snapshot of the EKS-optimized ${family} AMI: EC2 refuses to launch a volume smaller than its snapshot, so no node would start (got ${got(p.rootVolumeSize)})` });
    }
    return issues;
}

/** The approved instance types: the explicit list, or every family in every size. */
export function approvedInstanceTypes(p: { instanceTypes?: string[]; instanceFamilies?: string[]; instanceSizes?: string[] }): string[] {
    return p.instanceTypes ?? p.instanceFamilies!.flatMap((f) => p.instanceSizes!.map((s) => `${f}.${s}`));
}

const snsTopicArn = text("an SNS topic ARN such as arn:aws:sns:ca-central-1:123456789012:alert-warning", /^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$/, 400);
const snsTopicName = text("an SNS topic name (letters, digits, _ and -, at most 256 characters)", /^[A-Za-z0-9_-]+$/, 256);
const metricName = text("a CloudWatch metric name (at most 255 characters)", /^[^\s]+$/, 255);
const dimensionName = text("a CloudWatch dimension name (at most 255 characters)", /^[^\s:]+$/, 255);
const subscription = object(
    {
        protocol: oneOf("email", "https"),
        endpoint: text("an email address or an https URL, at most 512 characters", /^\S+$/, 512),
    },
    (s, path) =>
        (s.protocol === "email" ? /^[^@\s]+@[^@\s]+\.[^@\s]+$/ : /^https:\/\/[^\s/]+/).test(s.endpoint)
            ? []
            : [{ path: `${path}.endpoint`, message: `must be ${s.protocol === "email" ? "an email address" : "an https:// URL"} for protocol ${s.protocol} (got ${got(s.endpoint)})` }],
);
/** One endpoint twice on a topic: SNS keeps one subscription per topic, protocol and endpoint, and here it would be two resources. */
const subscriptions = list(subscription, { min: 1, max: 10, uniqueBy: (s) => `${s.protocol} ${String(s.endpoint).toLowerCase()}` });

/** One alarm's rule: CloudWatch's period, N, M and threshold, checked against CloudWatch's limits. */
function alarmRule(defaults: AlarmRule, threshold: Schema<number>) {
    const rule = object(
        {
            period: optional(leaf<number>("a period in seconds: a multiple of 60 up to 86400 (the metrics have one-minute resolution)", isValidPeriod), defaults.period),
            evaluationPeriods: optional(integer(1, 8640), defaults.evaluationPeriods),
            datapointsToAlarm: optional(integer(1, 8640), defaults.datapointsToAlarm),
            threshold: optional(threshold, defaults.threshold),
            notify: optional(oneOf("warning", "critical"), defaults.notify),
        },
        (r, path) => alarmRuleProblems(r).map((p) => ({ path: `${path}.${p.key}`, message: p.message })),
    );
    return optional(rule, defaults);
}

const alarms = object(
    {
        /** Existing topics by ARN (GC Notify: alert-warning, alert-critical), in the cluster's region and partition. */
        topicArns: optional(object({ warning: snsTopicArn, critical: snsTopicArn })),
        /** Existing topics by name, in the cluster's account and region. */
        topicNames: optional(object({ warning: snsTopicName, critical: snsTopicName })),
        /** Without existing topics the component creates two; each needs someone subscribed. */
        subscriptions: optional(object({ warning: subscriptions, critical: subscriptions })),
        /** The log group of the controller's container logs (Fluent Bit: /aws/containerinsights/<cluster>/application). */
        logGroupName: text("a CloudWatch Logs group name (letters, digits and _-./#, at most 512 characters)", /^[.\-_/#A-Za-z0-9]+$/, 512),
        /** Create the log group: only where no log shipper (Fluent Bit) creates it, such as a scratch account. */
        createLogGroup: optional(boolean(), false),
        metricSource: optional(
            object({
                namespace: text("a CloudWatch namespace (at most 255 characters)", /^[A-Za-z0-9._\-/#][A-Za-z0-9 ._\-/#:]*$/, 255),
                replicasUnavailable: metricName,
                desiredReplicas: metricName,
                /** Dimension names; Container Insights' own metrics use ClusterName, Namespace, PodName. */
                dimensions: optional(object({ cluster: dimensionName, namespace: dimensionName, deployment: dimensionName }), DEFAULT_METRIC_SOURCE.dimensions!),
            }),
            DEFAULT_METRIC_SOURCE,
        ),
        controllerDown: alarmRule(DEFAULT_RULES.controllerDown, integer(1, 10)),
        unschedulablePods: alarmRule(DEFAULT_RULES.unschedulablePods, integer(1, 100000)),
        launchFailures: alarmRule(DEFAULT_RULES.launchFailures, integer(1, 10000)),
        lifecycleErrors: alarmRule(DEFAULT_RULES.lifecycleErrors, integer(1, 10000)),
        nodePoolNotReady: alarmRule(DEFAULT_RULES.nodePoolNotReady, integer(1, 10000)),
        /** Karpenter's scraped metrics: fewer than `threshold` samples of the leader's NodePool limit gauge a period. */
        heartbeat: alarmRule(DEFAULT_RULES.heartbeat, integer(1, 10000)),
        /** Karpenter's log lines: fewer than `threshold` a period, in every period of the window (up to 7 days). */
        logHeartbeat: alarmRule(DEFAULT_RULES.logHeartbeat, integer(1, 10000)),
        // Seconds in the state. Every NodeClaim is uninitialized for a minute or two after launch, and one that never
        // registers is deleted after 15 minutes: below 10 minutes the alarm would fire on ordinary launches.
        nodeClaimNotInitialized: alarmRule(DEFAULT_RULES.nodeClaimNotInitialized, integer(600, 604800)),
        nodeNotReady: alarmRule(DEFAULT_RULES.nodeNotReady, integer(600, 604800)),
        nodePoolLimit: alarmRule(DEFAULT_RULES.nodePoolLimit, integer(1, 100)),
        // The queue keeps a message 300 s, so an older message never exists.
        queueAge: alarmRule(DEFAULT_RULES.queueAge, integer(1, 299)),
        failedInvocations: alarmRule(DEFAULT_RULES.failedInvocations, integer(1, 10000)),
        burstReplicas: alarmRule(DEFAULT_RULES.burstReplicas, integer(1, 1000)),
        spotInterruptions: alarmRule(DEFAULT_RULES.spotInterruptions, integer(1, 10000)),
        scaleDownOrder: alarmRule(DEFAULT_RULES.scaleDownOrder, integer(1, 10)),
    },
    (a, path) => alarmTopicProblems(a, path),
);

/** Alarms must reach someone: existing topics (by ARN or by name), or created topics with a subscriber each. */
function alarmTopicProblems(a: { topicArns?: object; topicNames?: object; subscriptions?: object }, path: string): Issue[] {
    const given = (["topicArns", "topicNames", "subscriptions"] as const).filter((k) => a[k] !== undefined);
    if (given.length === 0) {
        return [
            {
                path: `${path}.subscriptions`,
                message: `is required when neither topicArns nor topicNames is given: the created ${SEVERITIES.join(" and ")} topics would have nobody subscribed and every alarm would fire unseen (give at least one endpoint each, or GC Notify's topics alert-warning and alert-critical in topicNames)`,
            },
        ];
    }
    return given.length > 1 ? [{ path: `${path}.${given[1]}`, message: `must not be given with ${given[0]}: give one of topicArns, topicNames or subscriptions` }] : [];
}

/** The partition of a region: alarm actions must be in the alarm's own region and partition. */
function partitionOf(region: string): string {
    return region.startsWith("cn-") ? "aws-cn" : region.startsWith("us-gov-") ? "aws-us-gov" : "aws";
}

/** Each topic ARN outside the cluster's region or partition: CloudWatch alarm actions must be in the alarm's region. */
function topicRegionProblems(s: { cluster: { region: string }; alarms: { topicArns?: Record<string, string> } }): Issue[] {
    const expected = `arn:${partitionOf(s.cluster.region)}:sns:${s.cluster.region}:`;
    return Object.entries(s.alarms.topicArns ?? {})
        .filter(([, arn]) => !arn.startsWith(expected))
        .map(([severity, arn]) => ({
            path: `alarms.topicArns.${severity}`,
            message: `must be a topic in the cluster's region ${s.cluster.region} (an ARN starting ${expected}): CloudWatch alarm actions must be in the alarm's region (got ${got(arn)})`,
        }));
}

const deploymentName = text("a Deployment name (lowercase letters, digits, - and ., at most 253 characters)", /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 253);
// A PodDisruptionBudget's IntOrString: an int32 count or a percentage.
const countOrPercent = leaf<number | string>("a pod count from 0 to 2147483647, or a percentage from 0% to 100% such as 25%", (v) => (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 2147483647) || (typeof v === "string" && /^(100|[1-9]?[0-9])%$/.test(v)));
const priorityClass = (name: string, value: number) =>
    optional(object({ name: k8sName, value: integer(-1000000000, 1000000000) }), { name, value });

const placement = object(
    {
        /** Namespace of GC Notify's Deployments. */
        namespace: optional(k8sName, "notification-canada-ca"),
        /** Pod label (value "true") of burst Celery pods: the only pods allowed on ephemeral nodes. */
        burstPodLabel: optional(text("a label key such as notification-canada-ca/celery-burst", labelKey, 316), "notification-canada-ca/celery-burst"),
        priorityClasses: optional(
            object({ high: priorityClass("high-priority", 1000000), burst: priorityClass("celery", 10), headroom: priorityClass("celery-headroom", -10) }),
            { high: { name: "high-priority", value: 1000000 }, burst: { name: "celery", value: 10 }, headroom: { name: "celery-headroom", value: -10 } },
        ),
        burst: object({
            deployments: list(
                object(
                    {
                        name: deploymentName,
                        minAvailable: optional(countOrPercent),
                        maxUnavailable: optional(countOrPercent),
                        /** Its own longest task, when it differs from burst.longestTaskSeconds (docs/celery-shutdown.md). */
                        longestTaskSeconds: optional(integer(1, 3600)),
                        /** The Celery queues its workers consume (-Q of its run_celery_*.sh), without burst.queuePrefix: preflight reads their visibility timeouts. */
                        // SQS's CreateQueue QueueName: letters, digits, - and _, a FIFO queue's ending in .fifo (botocore sqs 2012-11-05).
                        queues: optional(list(text("a Celery queue name such as send-email-high (letters, digits, - and _; a FIFO queue's ends in .fifo)", /^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/, 80), { min: 1, max: 30, unique: true })),
                    },
                    (d, path) =>
                    (d.minAvailable === undefined) === (d.maxUnavailable === undefined)
                        ? [{ path, message: "must set exactly one of minAvailable and maxUnavailable (its PodDisruptionBudget)" }]
                        : [],
                ),
                { max: 30, uniqueBy: (d) => d.name },
            ),
            spillToStable: optional(boolean(), false),
            /**
             * The longest a task of a burst worker runs outside GC Notify's nightly batch (nodePool.nightlyBatch), unless
             * a Deployment says otherwise: each pod's grace period and preStop are derived from it, so the worker
             * finishes every task it holds when its node goes (docs/celery-shutdown.md; preflight checks it live).
             */
            longestTaskSeconds: integer(1, 3600),
            /**
             * Celery's worker_prefetch_multiplier as GC Notify's workers run it: none is set, so Celery's 4 (celery
             * 5.6.3 celery/app/defaults.py:348). A warm shutdown runs every prefetched task, this many per thread.
             */
            prefetchMultiplier: optional(integer(1, 100), 4),
            /** The SQS name of Celery queue q is queuePrefix + q (notification-api app/config.py:422, NOTIFICATION_QUEUE_PREFIX). */
            queuePrefix: optional(text("an SQS queue name prefix such as eks-notification-canada-ca (not empty: CI's preview role and the drill's workers may read the queues it begins)", /^[A-Za-z0-9_-]{1,60}$/, 60), "eks-notification-canada-ca"),
            /** SQS visibility timeout of the high-priority queues (GC Notify: 26 s): the drill's synthetic queue gets it. */
            queueVisibilityTimeoutSeconds: optional(integer(0, 43200), 26),
            /**
             * Order the HPAs' scale-down by node age (components/burstScaleDownOrder.ts): a small annotator, in the
             * controller's namespace, gives each burst pod the pod-deletion-cost of its node's age, so the newest nodes
             * empty first after a burst. Without it the survivors spread over every node of the burst (docs/capacity.md).
             */
            scaleDownOrder: optional(
                object({
                    /** An image with Node.js 18 or later as `node` and a user 1000: Node's official alpine image, pinned. */
                    image: pinnedImage,
                    /** Seconds between passes: a pod gets its cost within this long of starting. */
                    intervalSeconds: optional(integer(1, 300), 15),
                }),
            ),
        }),
        stableDeployments: list(deploymentName, { max: 50, unique: true }),
        nodeDaemonSets: list(
            object({
                namespace: k8sName,
                name: k8sName,
                tolerateAll: optional(boolean(), true),
                guaranteed: optional(object({ container: k8sName, cpu: guaranteedQuantity, memory: guaranteedQuantity })),
                /** New ephemeral nodes wait for this agent (startup taint); default true, false for an add-on. */
                waitFor: optional(boolean()),
                /** The EKS add-on that owns the DaemonSet (aws-ebs-csi-driver): not patched, configured through EKS. */
                addOn: optional(text("an EKS add-on name such as aws-ebs-csi-driver", /^[a-z0-9][a-z0-9-]*$/, 100)),
            }),
            // One DaemonSet listed twice makes two patches with one name, which the engine refuses.
            // By name alone: a node agent's patch is named after it (celery-placement-agent-<name>), so two agents of
            // one name in two namespaces would be two resources with one URN, which the engine refuses.
            { max: 20, uniqueBy: (d) => d.name },
        ),
        /** Other workloads allowed on ephemeral nodes (verify-placement): by kind, namespace and name, or by pod labels. */
        ephemeralAllowed: optional(
            list(
                object(
                    {
                        kind: optional(text("a workload kind such as Job", /^[A-Z][A-Za-z0-9]*$/, 63)),
                        namespace: optional(k8sName),
                        name: optional(deploymentName),
                        labels: optional(record("pod label keys such as app.kubernetes.io/name", labelKey, labelValue, 10)),
                        /** Why it may run there; verify-placement prints it. */
                        why: text("a short reason such as \"CRD upgrade hook, runs for seconds\"", /^.+$/, 200),
                    },
                    (a, path) =>
                        (a.labels !== undefined) === (a.kind !== undefined || a.namespace !== undefined || a.name !== undefined) ||
                        (a.labels === undefined && (a.kind === undefined || a.namespace === undefined || a.name === undefined))
                            ? [{ path, message: "must name a workload by kind, namespace and name, or its pods by labels (not both)" }]
                            : [],
                ),
                { max: 50 },
            ),
            [],
        ),
        admission: optional(object({ mode: oneOf("deny", "warn"), namespaces: optional(list(k8sName, { min: 1, max: 20, unique: true })) }), { mode: "deny" as "deny" | "warn", namespaces: undefined }),
        /** Placeholder pods, each the size of one burst Celery pod (nodePool.capacityCheck), held on ephemeral nodes. */
        headroom: object({ pods: integer(0, 100) }),
    },
);

type Placement = Infer<typeof placement>;

/** How resources behave when deleted, replaced or rolled out (docs/migration.md). */
/** A rollout must have time to pull images and start pods: a shorter wait fails `up` on a healthy rollout. */
const rolloutTimeout = durationAtLeast(60, "a rollout needs time to pull images and start its pods");

const lifecycle = object({
    /** Refuse any delete or replacement of the PriorityClasses and the CRD release until unprotected (production). */
    protect: optional(boolean(), false),
    /** Leave the PriorityClasses and the CRD release (and with it every NodePool and NodeClaim) in the cluster when Pulumi deletes them. */
    retainOnDelete: optional(boolean(), true),
    /** Stable Deployments patched at once; each batch starts once the previous one has rolled out. */
    stableBatchSize: optional(integer(1, 50), 4),
    /** How long `up` waits for a burst Deployment to roll out: its new pods wait for a spot node and nidhogg. */
    burstPatchTimeout: optional(rolloutTimeout, "20m"),
    /** How long `up` waits for a node daemonset to roll out on every node. */
    daemonSetPatchTimeout: optional(rolloutTimeout, "15m"),
    /** How long `up` waits for a stable Deployment to roll out: its new pods need room on the on-demand nodes. */
    stablePatchTimeout: optional(rolloutTimeout, "15m"),
    /** How long `up` waits for the controller to be ready; pods restart until their Pod Identity credentials work. */
    controllerReadyTimeout: optional(rolloutTimeout, "10m"),
});
const LIFECYCLE_DEFAULTS = { protect: false, retainOnDelete: true, stableBatchSize: 4, burstPatchTimeout: "20m", daemonSetPatchTimeout: "15m", stablePatchTimeout: "15m", controllerReadyTimeout: "10m" };

/** Placement rules that span sections: grace periods against the queue and the node pool, headroom sizing. */
function placementConfigProblems(s: { placement: Placement; nodePool: Infer<typeof nodePool>; controller: { namespace: string } }): Issue[] {
    const issues: Issue[] = [];
    const b = s.placement.burst;
    // Karpenter deletes a draining node's pods early enough that each ends by the NodeClaim's terminationGracePeriod
    // (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/node/termination/terminator/terminator.go): a longer grace
    // is cut short there, and the worker killed mid-task.
    const nodeGrace = durationSeconds(s.nodePool.terminationGracePeriod);
    const graces = b.deployments.map((d) => ({ name: d.name, longest: d.longestTaskSeconds ?? b.longestTaskSeconds })).map((d) => ({ ...d, grace: burstGraceSeconds(d.longest, b.prefetchMultiplier) }));
    const longest = graces.reduce<(typeof graces)[number] | undefined>((m, d) => (m && m.grace >= d.grace ? m : d), undefined);
    if (longest && longest.grace > nodeGrace) {
        issues.push({
            path: "nodePool.terminationGracePeriod",
            message: `must be at least ${longest.grace}s, the grace period of ${longest.name} (placement.burst: prefetchMultiplier ${b.prefetchMultiplier} + 1 tasks in a row of its longest, ${longest.longest} s, + ${DRAIN_SLACK_SECONDS + HOOK_MARGIN_SECONDS} s), or Karpenter kills workers mid-task at the end of a drain; or shorten the tasks (docs/celery-shutdown.md) (got ${s.nodePool.terminationGracePeriod})`,
        });
    }
    // Preflight asks SQS for queuePrefix + each queue: a name SQS cannot have would reach it as its own error.
    b.deployments.forEach((d, i) =>
        (d.queues ?? []).forEach((q, j) => {
            const name = b.queuePrefix + q;
            if (name.length > NAME_LIMITS["SQS queue"]) {
                issues.push({ path: `placement.burst.deployments[${i}].queues[${j}]`, message: `must make, after placement.burst.queuePrefix, an SQS queue name of at most ${NAME_LIMITS["SQS queue"]} characters, SQS's limit: ${name} has ${name.length} (got ${got(q)})` });
            }
        }),
    );
    const burst = new Set(b.deployments.map((d) => d.name));
    s.placement.stableDeployments.forEach((d, i) => {
        if (burst.has(d)) issues.push({ path: `placement.stableDeployments[${i}]`, message: `must not repeat the burst Deployment ${d}: a Deployment is either burst or stable` });
    });
    if (b.scaleDownOrder && s.controller.namespace === s.placement.namespace) {
        issues.push({ path: "placement.burst.scaleDownOrder", message: `needs controller.namespace to differ from placement.namespace (${s.placement.namespace}): the annotator runs in the controller's namespace and may patch pods only in the Celery one` });
    }
    if (s.placement.headroom.pods > 0 && !s.nodePool.capacityCheck) {
        issues.push({ path: "placement.headroom.pods", message: "needs nodePool.capacityCheck.celeryPodCpu and celeryPodMemory, the size of each placeholder pod" });
    }
    return issues;
}

/** GC Notify's burst HPAs: 6 pods per 45 s after a 90 s stabilization window (notification-manifests, 2025-05). */
const GC_NOTIFY_SCALE_UP = { pods: 6, periodSeconds: 45, stabilizationSeconds: 90, deployments: 1 };

/** Inputs of the capacity and cost model (`npm run capacity`); the program itself does not read them. */
export const capacitySchema = object({
    hpaScaleUp: optional(
        object({
            pods: optional(integer(1, 1000), GC_NOTIFY_SCALE_UP.pods),
            periodSeconds: optional(integer(1, 1800), GC_NOTIFY_SCALE_UP.periodSeconds),
            stabilizationSeconds: optional(integer(0, 3600), GC_NOTIFY_SCALE_UP.stabilizationSeconds),
            /** Burst HPAs that scale together in one burst; their steps add up. */
            deployments: optional(integer(1, 30), GC_NOTIFY_SCALE_UP.deployments),
        }),
        GC_NOTIFY_SCALE_UP,
    ),
    /** Burst Celery pods outside bursts (the burst HPAs' minReplicas, summed). */
    baselineCeleryPods: integer(0, 10000),
    /** From Karpenter's launch decision until pods can run on the node (startup taints gone); the scale test measures it. */
    nodeLaunchSeconds: integer(10, 1800),
    /** Hours a day at peak, for the daily cost. */
    burstHoursPerDay: number(0, 24),
    /** Local time (nodePool.sendingHours.timeZone) the day's bursts begin; by default when sending hours begin, the costliest case. */
    burstStart: optional(text("a local time such as 09:30", /^([01][0-9]|2[0-3]):[0-5][0-9]$/, 5)),
    prices: object({
        asOf: calendarDate,
        currency: text("a currency code such as USD", /^[A-Z]{3}$/, 3),
        region: text("an AWS region such as ca-central-1", /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$/, 32),
        onDemandHourly: record("EC2 instance types such as c7i.xlarge", instanceTypePattern, number(0.0001, 1000), 500),
    }),
    /** Spot's discount on the on-demand price, as a fraction (0.6: spot costs 40 % of on-demand). */
    spotDiscount: number(0, 0.95),
});

/** The model needs the pod size and peak, a price for every type Karpenter may launch, and prices for the cluster's region. */
function capacityConfigProblems(s: { cluster: Infer<typeof cluster>; nodePool: Infer<typeof nodePool>; capacity?: Infer<typeof capacitySchema> }): Issue[] {
    const c = s.capacity;
    if (!c) return [];
    const issues: Issue[] = [];
    if (!s.nodePool.capacityCheck) {
        issues.push({ path: "capacity", message: "needs nodePool.capacityCheck: the Celery pod's and daemonsets' requests and the peak pod count the model sizes nodes for" });
    } else if (c.baselineCeleryPods > s.nodePool.capacityCheck.peakCeleryPods) {
        issues.push({ path: "capacity.baselineCeleryPods", message: `must be at most nodePool.capacityCheck.peakCeleryPods (${s.nodePool.capacityCheck.peakCeleryPods}) (got ${c.baselineCeleryPods})` });
    }
    const unpriced = approvedInstanceTypes(s.nodePool).filter((t) => c.prices.onDemandHourly[t] === undefined);
    if (unpriced.length) {
        issues.push({ path: "capacity.prices.onDemandHourly", message: `has no price for ${unpriced.join(", ")}: every approved instance type of nodePool needs its hourly on-demand price` });
    }
    if (c.prices.region !== s.cluster.region) {
        issues.push({ path: "capacity.prices.region", message: `must be the cluster's region ${s.cluster.region}: prices differ by region (got "${c.prices.region}")` });
    }
    return issues;
}

/** A synthetic worker's receive waits at most this long (a long poll), so it sees SIGTERM within it when idle. */
const DRILL_RECEIVE_WAIT_SECONDS = 5;
/**
 * What the synthetic GC Notify worker spends on a task besides the task itself: its two AWS CLI calls, the delete that
 * acknowledges the message and the record of its completion, each a Python start-up of under a second.
 */
const DRILL_CLI_SECONDS_PER_TASK = 2;
/** GC Notify's burst workers' task times as the evidence has them: drill.synthetic.taskSeconds says whence. */
const GC_NOTIFY_TASK_SECONDS = [0.1, 0.1, 0.2, 0.2, 0.3, 0.5, 0.5, 1, 12, 15];

/**
 * The spot interruption drill (components/spotInterruptionDrill.ts, `npm run drill`, docs/drill.md): an AWS FIS
 * experiment template that interrupts COUNT(nodes) running spot nodes of the pool, and the synthetic workload's role.
 */
const drill = object({
    /** Create the FIS experiment template, its role and log group, and the synthetic workers' role. */
    enabled: optional(boolean(), false),
    /**
     * How long after the FIS action starts EC2 interrupts each node: an ISO 8601 duration from PT2M to PT15M. The
     * interruption notice comes 2 minutes before the interruption (at once with PT2M, what a real interruption gives);
     * the action starts with a rebalance recommendation, which Karpenter ignores.
     */
    durationBeforeInterruption: optional(checked(text("an ISO 8601 duration such as PT2M", /^\S+$/, 16), durationBeforeInterruptionProblem), "PT2M"),
    /**
     * How many of the pool's running spot nodes one experiment interrupts, chosen at random by FIS: COUNT(n), never ALL;
     * at most 5, EC2's quota of spot instances one experiment targets by tags.
     */
    nodes: optional(integer(1, MAX_DRILL_NODES), 1),
    /** The workload `npm run drill` watches when --workload is not given. */
    workload: optional(oneOf("synthetic", "live"), "synthetic"),
    /** The synthetic Celery-like workload: pods placed like burst workers, working numbered messages of a temporary queue. */
    synthetic: optional(
        object({
            /**
             * How the synthetic worker treats its messages (docs/drill.md). gc-notify: as GC Notify runs Celery, early
             * acknowledgement (the message is deleted as its task starts), `concurrency` threads holding up to
             * concurrency × placement.burst.prefetchMultiplier messages, the burst workers' preStop hook, the pidfile, a
             * warm shutdown that runs everything held. late-ack: one message at a time, deleted only once done, as
             * Celery with acks_late would (GC Notify does not run it so).
             */
            profile: optional(oneOf("gc-notify", "late-ack"), "gc-notify"),
            /** An image with the AWS CLI v2 and bash, pinned: the AWS CLI's official image from ECR Public. */
            image: pinnedImage,
            /** Worker pods; at least two on every ephemeral node (more when more nodes run), so the interrupted one holds two. */
            pods: optional(integer(1, 50), 4),
            /** Numbered messages sent before and during the interruption. @default 200 with gc-notify, 60 with late-ack */
            messages: optional(integer(1, 2000)),
            /**
             * gc-notify: each message's task time in seconds, message n taking taskSeconds[n mod length]. The default
             * is GC Notify's as the evidence has them (notification-api 72e3ae1e): 8 in 10 under a second, a provider
             * call or a few rows (Pinpoint's "average delay in production" is 0.06 s, app/config.py:619; research-mode
             * tasks make no provider call, app/celery/research_mode_tasks.py:35-59), 2 in 10 of 12 and 15 s, as a
             * service callback (5 s to connect and 5 s a read, app/celery/service_callback_tasks.py:67-76) or a slow
             * provider call (botocore's 60 s read timeout, none set: app/clients/email/aws_ses.py:25) take.
             */
            taskSeconds: optional(list(number(0.1, 600), { min: 1, max: 100 }), GC_NOTIFY_TASK_SECONDS),
            /** gc-notify: the worker's threads, GC Notify's CELERY_CONCURRENCY (notification-manifests 609853e2 helmfile/overrides/notify/celery.yaml.gotmpl:32). */
            concurrency: optional(integer(1, 16), 4),
            /** late-ack: seconds each message is "worked"; under the visibility timeout. */
            workSeconds: optional(integer(1, 600), 10),
        }),
    ),
    /** GC Notify's real burst workers (staging): the Celery queues whose depth the drill reads. */
    live: optional(object({ queues: list(text("an SQS queue name (letters, digits, - and _, at most 80 characters)", /^[A-Za-z0-9_-]{1,80}$/, 80), { max: 10, unique: true }) }), { queues: [] }),
});
const DRILL_DEFAULTS = { enabled: false, durationBeforeInterruption: "PT2M", nodes: 1, workload: "synthetic" as "synthetic" | "live", synthetic: undefined, live: { queues: [] as string[] } };
export type DrillSynthetic = NonNullable<Infer<typeof drill>["synthetic"]>;
export type SyntheticProfile = DrillSynthetic["profile"];

/** The messages a synthetic drill sends: drill.synthetic.messages, or its profile's default. */
export const syntheticMessages = (s: DrillSynthetic, profile: SyntheticProfile = s.profile) => s.messages ?? (profile === "gc-notify" ? 200 : 60);

/**
 * The synthetic workers' grace period, reckoned as a real burst worker's (burstGraceSeconds) with the receive it may
 * be in when SIGTERM comes: gc-notify runs every message it holds, prefetchMultiplier per thread, each its task and its
 * two AWS CLI calls; late-ack finishes the one message it works.
 */
export function drillWorkerGraceSeconds(s: DrillSynthetic, prefetchMultiplier: number, profile: SyntheticProfile = s.profile): number {
    return profile === "gc-notify"
        ? burstGraceSeconds(Math.ceil(Math.max(...s.taskSeconds) + DRILL_CLI_SECONDS_PER_TASK), prefetchMultiplier) + DRILL_RECEIVE_WAIT_SECONDS
        : // One message at a time, received once the last is done: no prefetch.
          burstGraceSeconds(s.workSeconds + DRILL_RECEIVE_WAIT_SECONDS, 0);
}

/** A drill needs spot nodes, names AWS takes, and work that fits the visibility timeout, the grace period and the notice. */
function drillConfigProblems(s: { drill: Infer<typeof drill>; nodePool: Infer<typeof nodePool>; controller: { namePrefix?: string }; cluster: { name: string }; placement: Placement }): Issue[] {
    const d = s.drill;
    if (!d.enabled) return [];
    const issues: Issue[] = [];
    if (!s.nodePool.capacityTypes.includes("spot")) issues.push({ path: "drill.enabled", message: `must be false when nodePool.capacityTypes has no spot: FIS interrupts spot instances only (got capacityTypes ${got(s.nodePool.capacityTypes)})` });
    for (const p of drillNameProblems(s.controller.namePrefix ?? s.cluster.name)) issues.push({ path: s.controller.namePrefix === undefined ? "cluster.name" : "controller.namePrefix", message: `${p}; set notify-karpenter:controller.namePrefix to a shorter prefix` });
    if (d.workload === "synthetic" && !d.synthetic) issues.push({ path: "drill.synthetic", message: "is required when drill.workload is synthetic: the worker image, at least" });
    if (d.workload === "live" && d.live.queues.length === 0) issues.push({ path: "drill.live.queues", message: "must name GC Notify's Celery queues when drill.workload is live: the drill reads their depth" });
    const b = s.placement.burst;
    if (d.synthetic && d.synthetic.workSeconds >= b.queueVisibilityTimeoutSeconds) {
        issues.push({ path: "drill.synthetic.workSeconds", message: `must be under placement.burst.queueVisibilityTimeoutSeconds (${b.queueVisibilityTimeoutSeconds}): a message worked longer reappears and is worked twice (got ${d.synthetic.workSeconds})` });
    }
    // The program's hook lets a gc-notify worker run everything it holds; that must end before EC2 takes the node.
    if (d.synthetic && drillWorkerGraceSeconds(d.synthetic, b.prefetchMultiplier, "gc-notify") > SPOT_ROOM_SECONDS) {
        const longest = Math.max(...d.synthetic.taskSeconds);
        issues.push({
            path: "drill.synthetic.taskSeconds",
            message: `must let a gc-notify worker run all it holds within the ${SPOT_ROOM_SECONDS} s an interruption leaves (${SPOT_NOTICE_SECONDS} s notice less ${INTERRUPTION_REACTION_SECONDS} s for Karpenter to evict): (placement.burst.prefetchMultiplier ${b.prefetchMultiplier} + 1) × (the longest ${longest} s + ${DRILL_CLI_SECONDS_PER_TASK} s of AWS CLI calls) + ${DRAIN_SLACK_SECONDS + HOOK_MARGIN_SECONDS} s + a ${DRILL_RECEIVE_WAIT_SECONDS} s receive is ${drillWorkerGraceSeconds(d.synthetic, b.prefetchMultiplier, "gc-notify")} s; shorten the longest task`,
        });
    }
    return issues;
}

export { durationSeconds };

export const stackSchema = object(
    {
        cluster,
        /** Tags on every AWS resource (through the provider's defaultTags). */
        tags: optional(record("AWS tag keys (at most 128 characters, not starting with aws:)", /^(?!aws:)[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$/u, tagValue), {}),
        controller,
        nodePool,
        /** Warnings known and accepted for this stack, each with why: they are then quiet (docs/configuring.md). */
        acknowledged: optional(
            list(
                object({
                    warning: oneOf(...WARNING_IDS),
                    reason: checked(text("a reason of 20 to 500 characters: why the warning is accepted for this stack", /^[^]{20,}$/, 500), reasonProblem),
                }),
                { max: 20, uniqueBy: (a) => a.warning },
            ),
            [],
        ),
        alarms,
        placement,
        // Parsed on its own in parseStackConfig: nothing is deployed from it, so it never blocks plan, preview or up.
        capacity: optional(leaf<Infer<typeof capacitySchema>>("an object", () => true)),
        lifecycle: optional(lifecycle, LIFECYCLE_DEFAULTS),
        drill: optional(drill, DRILL_DEFAULTS),
    },
    (s) => [
        ...controllerNameProblems(s.controller.namePrefix ?? s.cluster.name).map((message) => ({
            path: s.controller.namePrefix === undefined ? "cluster.name" : "controller.namePrefix",
            message: `${message}; set notify-karpenter:controller.namePrefix to a shorter prefix that is unique to this cluster`,
        })),
        ...burstAlarmNameProblems(s.cluster.name, s.placement.burst.deployments.map((d) => d.name)).map((p) => ({
            path: `placement.burst.deployments[${p.index}].name`,
            message: p.message,
        })),
        ...placementConfigProblems(s),
        ...topicRegionProblems(s),
        ...logGroupProblems(s),
        ...guaranteedProblems(s),
        ...(s.cluster.create ? createdCapacityProblems(s.cluster.create, s.nodePool.zones, s.controller.replicas) : []),
        ...(regionProblem(s.cluster.region) ? [] : zoneProblems(s.nodePool.zones, s.cluster.region, "nodePool.zones")),
        ...instanceSizeProblems(s.nodePool),
        ...stableSelectorProblems(s.cluster.stableNodeSelector, s.nodePool.ephemeralKey),
        // At error level a healthy controller writes nothing, and the log heartbeat alarm would fire after every quiet window.
        ...(s.controller.logLevel === "error"
            ? [{ path: "controller.logLevel", message: 'must be "debug" or "info": at "error" a healthy Karpenter writes no line, so the log heartbeat alarm (alarms.logHeartbeat) fires after every quiet week' }]
            : []),
        ...upstreamDeletionCostProblems(s.controller, s.placement.burst.scaleDownOrder !== undefined),
        ...drillConfigProblems(s),
    ],
);

/**
 * The stable selector may not name a label Karpenter's own nodes carry (the ephemeral key, karpenter.sh/...): stable
 * pods would then need ephemeral nodes, which their karpenter.sh/nodepool DoesNotExist term and the admission policy
 * forbid, and nothing stable could schedule.
 */
function stableSelectorProblems(selector: Record<string, string>, ephemeralKey: string): Issue[] {
    return Object.keys(selector)
        .filter((k) => k === ephemeralKey || k.startsWith("karpenter.sh/") || k.startsWith("karpenter.k8s.aws/"))
        .map((k) => ({ path: `cluster.stableNodeSelector.${k}`, message: `must not be a label of Karpenter's nodes (${ephemeralKey}, karpenter.sh/*, karpenter.k8s.aws/*): select the on-demand node group, such as eks.amazonaws.com/capacityType: ON_DEMAND` }));
}

/**
 * The Container Insights log group names its cluster (/aws/containerinsights/<cluster>/application, where GC Notify's
 * Fluent Bit ships container logs: notification-manifests, aws-for-fluent-bit values). One naming another cluster, or
 * another of the cluster's groups (performance, dataplane, host), would feed the log alarms and the log heartbeat
 * another cluster's or no Karpenter lines: the alarms would watch the wrong controller and say nothing of this one.
 */
function logGroupProblems(s: { cluster: { name: string }; alarms: { logGroupName: string } }): Issue[] {
    const m = /^\/aws\/containerinsights\/([^/]+)\/([^/]+)$/.exec(s.alarms.logGroupName);
    if (!m) return [];
    const [, cluster, group] = m;
    const own = `/aws/containerinsights/${s.cluster.name}/application`;
    if (cluster !== s.cluster.name) {
        return [{ path: "alarms.logGroupName", message: `must be this cluster's Container Insights log group ${own}: it names the cluster "${cluster}", so the log alarms and the log heartbeat would watch that cluster's Karpenter, not this one's (cluster.name is "${s.cluster.name}") (got ${got(s.alarms.logGroupName)})` }];
    }
    if (group !== "application") {
        return [{ path: "alarms.logGroupName", message: `must be the application log group ${own}: Fluent Bit ships container logs, the controller's among them, there, and the ${group} group holds none of its lines (got ${got(s.alarms.logGroupName)})` }];
    }
    return [];
}

/**
 * A node agent's guaranteed resources run on every ephemeral node: they must fit on the smallest approved type, or the
 * agent never starts there (and a node waiting for it keeps its startup taint), and their sum must be within what
 * nodePool.capacityCheck counts for the daemonsets, or the fit and capacity checks count too little.
 */
function guaranteedProblems(s: { nodePool: Infer<typeof nodePool>; placement: Placement }): Issue[] {
    const agents = s.placement.nodeDaemonSets.map((d, i) => ({ d, i })).filter(({ d }) => d.guaranteed);
    if (agents.length === 0) return [];
    const issues: Issue[] = [];
    const shapes = approvedInstanceTypes(s.nodePool).flatMap((t) => {
        const r = nodeResources(t, s.nodePool);
        return r ? [{ t, ...r.allocatable }] : [];
    });
    const resources = [
        ["cpu", "cores", "cpu"],
        ["memory", "GiB", "memoryGiB"],
    ] as const;
    for (const { d, i } of agents) {
        for (const [key, unit, field] of resources) {
            const need = quantityValue(d.guaranteed![key], unit);
            const smallest = shapes.reduce<(typeof shapes)[number] | undefined>((a, b) => (a && a[field] <= b[field] ? a : b), undefined);
            if (smallest && need > smallest[field]) {
                issues.push({
                    path: `placement.nodeDaemonSets[${i}].guaranteed.${key}`,
                    message: `must fit on every approved instance type: the smallest, ${smallest.t}, has ${unit === "cores" ? `${+smallest.cpu.toFixed(3)} cpu` : gib(smallest.memoryGiB)} allocatable, so ${d.name} would never start on its nodes${waitsFor(d) ? " and they would keep their startup taint" : ""} (got ${got(d.guaranteed![key])})`,
                });
            }
        }
    }
    const c = s.nodePool.capacityCheck;
    if (c) {
        for (const [key, unit] of resources) {
            const counted = key === "cpu" ? c.daemonsetCpu : c.daemonsetMemory;
            const sum = agents.reduce((n, { d }) => n + quantityValue(d.guaranteed![key], unit), 0);
            if (sum > quantityValue(counted, unit) + 1e-9) {
                issues.push({
                    path: `nodePool.capacityCheck.daemonset${key === "cpu" ? "Cpu" : "Memory"}`,
                    message: `must count at least the node agents' guaranteed ${key} (${agents.map(({ d }) => `${d.name} ${d.guaranteed![key]}`).join(", ")}), which run on every ephemeral node: the fit and capacity checks would count too little room for them (got ${got(counted)})`,
                });
            }
        }
    }
    return issues;
}

/** A created cluster must have room for what runs on it: the pool's zones and one stable node per controller replica. */
function createdCapacityProblems(create: Infer<typeof createdCluster>, poolZones: string[], replicas: number): Issue[] {
    const problems: Issue[] = poolZones.flatMap((z, i) =>
        create.zones.includes(z)
            ? []
            : [{ path: `nodePool.zones[${i}]`, message: `must be one of the VPC's zones in notify-karpenter:cluster.create.zones (${create.zones.join(", ")}), or Karpenter finds no subnet there (got ${got(z)})` }],
    );
    // The chart spreads replicas over nodes (required anti-affinity), so a replica without a node stays pending.
    if (create.nodeGroup.minSize < replicas) {
        problems.push({ path: "cluster.create.nodeGroup.minSize", message: `must be at least notify-karpenter:controller.replicas (${replicas}): each controller replica needs a stable node of its own (got ${create.nodeGroup.minSize})` });
    }
    return problems;
}

export type StackConfig = Infer<typeof stackSchema> & {
    stack: string;
    /** What is wrong with the capacity section: `npm run capacity` refuses to model, everything else only warns. */
    capacityProblems: Issue[];
    /** The warnings this config raises that no acknowledgment quiets (stacks/validatedConfig.ts fills them in). */
    warnings: ConfigWarning[];
    /** The warnings it raises that `acknowledged` quiets, with the reasons given. */
    quietedWarnings: (ConfigWarning & { reason: string })[];
};
export type ClusterConfig = StackConfig["cluster"];
export type CapacityConfig = NonNullable<StackConfig["capacity"]>;

/**
 * Raised for invalid config; its message lists every problem, one per line. A RunError to the Pulumi SDK, so that
 * `pulumi preview` and `up` print the message alone, without the stack trace (@pulumi/pulumi cmd/run/run.js: "Always
 * hide the stack for RunErrors"). The SDK knows a RunError by this member (errors.js RunError.isInstance, made to work
 * across copies of the SDK), so that reading config loads no Pulumi.
 */
export class ConfigError extends Error {
    readonly __pulumiRunError = true;
    readonly stack: string;
    readonly issues: Issue[];
    constructor(stack: string, issues: Issue[], project: string) {
        super(issues.map((i) => `${stack}: ${project}:${i.path} ${i.message}`).join("\n"));
        this.stack = stack;
        this.issues = issues;
        this.name = "ConfigError";
    }
}

/** A stack file that cannot be read as config (not YAML, a duplicate key, no config map): one line, file:line:column. */
export class StackFileError extends ConfigError {
    constructor(stack: string, message: string) {
        super(stack, [], "");
        this.message = message;
        this.name = "StackFileError";
    }
}

/**
 * Checks a stack's config against the schema: `raw` maps the keys below the project namespace (`cluster`,
 * `controller`, ...) to their parsed YAML values. Throws a ConfigError naming the stack and each full key path.
 * `parseStackConfig` (stacks/validatedConfig.ts) also checks the Karpenter objects the config renders.
 */
export function parseConfigSchema(stack: string, raw: Record<string, unknown>, project = "notify-karpenter"): StackConfig {
    const issues: Issue[] = [];
    const parsed = stackSchema.parse(raw, "", issues);
    if (issues.length > 0) throw new ConfigError(stack, issues, project);
    const capacityProblems: Issue[] = [];
    const cap = parsed.capacity === undefined ? undefined : capacitySchema.parse(parsed.capacity, "capacity", capacityProblems);
    // A capacity section of the wrong shape is left out, so that nothing reads half of it.
    const wellFormed = capacityProblems.length === 0;
    if (cap && wellFormed) capacityProblems.push(...capacityConfigProblems({ ...parsed, capacity: cap }));
    return { ...parsed, capacity: wellFormed ? cap : undefined, capacityProblems, stack, warnings: [], quietedWarnings: [] };
}

/** The capacity section's problems as warnings: they concern `npm run capacity` only. */
export function capacityWarnings(cfg: Pick<StackConfig, "capacityProblems">, project = "notify-karpenter"): ConfigWarning[] {
    return cfg.capacityProblems.map((i) => ({
        id: "capacity-section",
        message: `${project}:${i.path} ${i.message} (only npm run capacity reads this section; nothing deployed depends on it, and npm run capacity refuses to model until it is fixed)`,
    }));
}

/**
 * The project's config sections (`cluster`, `controller`, ...) from flat `<project>:<key>` values, as the engine
 * hands them over: structured values as JSON, plain values as strings. `readStackConfig` yields the same shape.
 */
export function configSections(flat: Record<string, string>, project = "notify-karpenter"): Record<string, unknown> {
    const sections: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(flat)) {
        if (key.startsWith(`${project}:`)) sections[key.slice(project.length + 1)] = parseConfigValue(value);
    }
    return sections;
}

function parseConfigValue(value: string): unknown {
    try {
        return JSON.parse(value);
    } catch {
        return value;
    }
}
