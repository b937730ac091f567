// A NodePool and its EC2NodeClass as the program applies them, and every check on them (the v1.14.1 schema and CEL
// rules, approved instance types, the capacity warnings), without Pulumi: config validation and the commands use
// them as EphemeralNodePool (components/ephemeralNodePool.ts) does.
import type * as pulumi from "@pulumi/pulumi";
import { type KarpenterObject, type SchemaIssue, validateKarpenterObject } from "../karpenter/validate.ts";
import { instanceTypeFacts } from "./instanceTypes.ts";

export interface DisruptionBudget {
    /** Nodes that may be disrupted at once: a count or a percentage ("10%", "0"). */
    nodes: string;
    /** Limit the budget to these reasons (Underutilized, Empty, Drifted); all reasons when absent. */
    reasons?: string[];
    /** Cron schedule in UTC when the budget is active; needs `duration`. */
    schedule?: string;
    /** How long the budget stays active after each scheduled start ("10h"). */
    duration?: string;
}

/** What a single Celery burst pod and the per-node daemonsets need, for the capacity warnings. */
export interface CapacityCheck {
    celeryPodCpu: string;
    celeryPodMemory: string;
    daemonsetCpu: string;
    daemonsetMemory: string;
    /** Burst Celery pods at the configured peak. */
    peakCeleryPods: number;
}

export interface EphemeralNodePoolArgs {
    /** Name of the NodePool and EC2NodeClass objects. */
    name: string;
    /** The cluster, for the `karpenter.sh/discovery` selectors. */
    clusterName: string;
    /** IAM role of the nodes (KarpenterController.nodeRoleName). */
    nodeRoleName: pulumi.Input<string>;
    /** The only instance types this pool may launch. */
    instanceTypes: string[];
    /** Availability zones the nodes may use. */
    zones: string[];
    /** Capacity types; with both, Karpenter launches spot and falls back to on-demand when spot is unavailable. @default ["spot"] */
    capacityTypes?: ("spot" | "on-demand")[];
    /** Label and NoSchedule taint key that mark ephemeral nodes (value "true"). */
    ephemeralKey: string;
    /** Taints present until node daemonsets are ready (removed by another controller). @default [] */
    startupTaints?: { key: string; value?: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }[];
    /**
     * Node lifetime before replacement. Expiry ignores disruption budgets and drains every node of one burst at once
     * (Karpenter v1.14.1 pkg/controllers/nodeclaim/expiration/controller.go), so the default is none. @default "Never"
     */
    expireAfter?: string;
    /** Longest a draining node waits for its pods before it is terminated. @default "1h" */
    terminationGracePeriod?: string;
    /**
     * WhenEmpty never disrupts a node that still runs pods, so it is the safe default without budgets that keep
     * Underutilized out of sending hours; the stacks set WhenEmptyOrUnderutilized with such a budget. @default "WhenEmpty"
     */
    consolidationPolicy?: "WhenEmpty" | "WhenEmptyOrUnderutilized" | "Balanced";
    /** @default "30m" */
    consolidateAfter?: string;
    /** @default [{ nodes: "10%" }] */
    budgets?: DisruptionBudget[];
    /** Total cpu and memory the pool may hold. */
    limits: { cpu: string; memory: string };
    /** Priority among pools (higher first). @default 10 */
    weight?: number;
    /** The AMI: an alias pinned to a version (al2023@v20251117) or an image ID with its family. */
    ami: { alias?: string; id?: string; family?: "AL2023" | "AL2" | "Bottlerocket" };
    /** Allow an `@latest` alias (every new AMI then rolls all nodes). @default false */
    allowLatestAmi?: boolean;
    /** IMDSv2 hop limit; 2 lets pods reach IMDS. @default 2 */
    metadataHopLimit?: number;
    /** Root volume size (gp3, encrypted). @default "80Gi" */
    rootVolumeSize?: string;
    kubeReserved?: Record<string, string>;
    systemReserved?: Record<string, string>;
    evictionHard?: Record<string, string>;
    /** Explicit subnet and security-group IDs; discovery by tag when absent. */
    subnetIds?: string[];
    securityGroupIds?: string[];
    /** Tags on the instances and volumes Karpenter launches. @default {} */
    tags?: Record<string, string>;
    /** Whether spot-to-spot consolidation is on (for the diversity warning). @default false */
    spotToSpotConsolidation?: boolean;
    capacityCheck?: CapacityCheck;
    /** Resources to wait for before creating the objects: KarpenterController.ready. */
    dependsOn?: pulumi.Resource[];
}

/** The EC2NodeClass and NodePool objects, exactly as they will be applied. */
export function renderNodePool(a: EphemeralNodePoolArgs, nodeRoleName: pulumi.Input<string>): { nodeClass: KarpenterObject; nodePool: KarpenterObject } {
    const discovery = { "karpenter.sh/discovery": a.clusterName };
    const amiTerm = a.ami.alias !== undefined ? { alias: a.ami.alias } : { id: a.ami.id };
    const nodeClass: KarpenterObject = {
        apiVersion: "karpenter.k8s.aws/v1",
        kind: "EC2NodeClass",
        metadata: { name: a.name },
        spec: {
            role: nodeRoleName,
            ...(a.ami.family ? { amiFamily: a.ami.family } : {}),
            amiSelectorTerms: [amiTerm],
            subnetSelectorTerms: a.subnetIds?.length ? a.subnetIds.map((id) => ({ id })) : [{ tags: discovery }],
            securityGroupSelectorTerms: a.securityGroupIds?.length ? a.securityGroupIds.map((id) => ({ id })) : [{ tags: discovery }],
            metadataOptions: { httpEndpoint: "enabled", httpProtocolIPv6: "disabled", httpPutResponseHopLimit: a.metadataHopLimit ?? 2, httpTokens: "required" },
            blockDeviceMappings: [
                { deviceName: "/dev/xvda", rootVolume: true, ebs: { volumeSize: a.rootVolumeSize ?? "80Gi", volumeType: "gp3", encrypted: true, deleteOnTermination: true } },
            ],
            kubelet: {
                ...(a.kubeReserved ? { kubeReserved: a.kubeReserved } : {}),
                ...(a.systemReserved ? { systemReserved: a.systemReserved } : {}),
                ...(a.evictionHard ? { evictionHard: a.evictionHard } : {}),
            },
            tags: a.tags ?? {},
        },
    };
    const nodePool: KarpenterObject = {
        apiVersion: "karpenter.sh/v1",
        kind: "NodePool",
        metadata: { name: a.name },
        spec: {
            template: {
                metadata: { labels: { [a.ephemeralKey]: "true" } },
                spec: {
                    nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: a.name },
                    requirements: [
                        { key: "node.kubernetes.io/instance-type", operator: "In", values: a.instanceTypes },
                        { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
                        { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
                        { key: "topology.kubernetes.io/zone", operator: "In", values: a.zones },
                        { key: "karpenter.sh/capacity-type", operator: "In", values: a.capacityTypes ?? ["spot"] },
                    ],
                    taints: [{ key: a.ephemeralKey, value: "true", effect: "NoSchedule" }],
                    startupTaints: a.startupTaints ?? [],
                    expireAfter: a.expireAfter ?? "Never",
                    terminationGracePeriod: a.terminationGracePeriod ?? "1h",
                },
            },
            // At spec.disruption, where Karpenter reads it (GC Notify's sat under spec.template and was dropped).
            disruption: {
                consolidationPolicy: a.consolidationPolicy ?? "WhenEmpty",
                consolidateAfter: a.consolidateAfter ?? "30m",
                budgets: a.budgets ?? [{ nodes: "10%" }],
            },
            limits: a.limits,
            weight: a.weight ?? 10,
        },
    };
    return { nodeClass, nodePool };
}

/**
 * Every reason the pool's objects would be rejected or would allow more than approved, as "<object> <path>: <why>".
 * Checked with a placeholder role, since the real one is known only after the role exists.
 */
export function nodePoolProblems(a: EphemeralNodePoolArgs): string[] {
    const problems: string[] = [];
    if ((a.ami.alias === undefined) === (a.ami.id === undefined)) problems.push("ami: set exactly one of alias and id");
    if (a.ami.alias?.endsWith("@latest") && !a.allowLatestAmi) {
        problems.push(`ami: alias "${a.ami.alias}" follows every new AMI and rolls all nodes; pin a version (al2023@vYYYYMMDD) or set allowLatestAmi`);
    }
    if (problems.length > 0) return problems;
    const { nodeClass, nodePool } = renderNodePool(a, "node-role");
    const describe = (o: KarpenterObject) => (i: SchemaIssue) => `${o.kind} "${o.metadata.name}" ${i.path}: ${i.message}`;
    problems.push(...validateKarpenterObject(nodeClass).map(describe(nodeClass)), ...validateKarpenterObject(nodePool).map(describe(nodePool)));
    problems.push(...approvedTypeProblems(nodePool, a.instanceTypes));
    return problems;
}

/** A NodePool may launch only approved types: one `In` requirement on the instance type, within the approved list. */
export function approvedTypeProblems(nodePool: KarpenterObject, approved: string[]): string[] {
    const reqs: any[] = nodePool.spec.template.spec.requirements.filter((r: any) => r.key === "node.kubernetes.io/instance-type");
    const bounded = reqs.filter((r) => r.operator === "In");
    if (bounded.length === 0) return [`NodePool "${nodePool.metadata.name}" has no "node.kubernetes.io/instance-type In" requirement, so it could launch any instance type`];
    const extra = bounded.flatMap((r) => r.values as string[]).filter((t) => !approved.includes(t));
    return extra.length ? [`NodePool "${nodePool.metadata.name}" allows instance types outside the approved list: ${extra.join(", ")}`] : [];
}

/** vCPUs and GiB of an instance type (c7i.xlarge: 4 vCPU, 8 GiB), from EC2's own figures; undefined for a type EC2 does not have. */
export function instanceShape(type: string): { vcpu: number; memoryGiB: number } | undefined {
    const facts = instanceTypeFacts(type);
    return facts && { vcpu: facts.vcpu, memoryGiB: facts.memoryMiB / 1024 };
}

/** A Kubernetes quantity as a number: cpu in cores ("500m" is 0.5), memory in GiB ("512Mi" is 0.5). */
export function quantityValue(q: string, unit: "cores" | "GiB"): number {
    const m = /^([0-9.]+)(m|k|Ki|M|Mi|G|Gi|T|Ti)?$/.exec(q);
    if (!m) return NaN;
    const n = parseFloat(m[1]);
    const scale: Record<string, number> =
        unit === "cores" ? { "": 1, m: 0.001, k: 1000 } : { "": 1 / 2 ** 30, k: 1e3 / 2 ** 30, Ki: 1 / 2 ** 20, M: 1e6 / 2 ** 30, Mi: 1 / 2 ** 10, G: 1e9 / 2 ** 30, Gi: 1, T: 1e12 / 2 ** 30, Ti: 1024 };
    return n * (scale[m[2] ?? ""] ?? NaN);
}

/** Karpenter's default vmMemoryOverheadPercent: the share of memory it assumes the hypervisor keeps. */
export const VM_MEMORY_OVERHEAD = 0.075;

export interface NodeResources {
    cpu: number;
    memoryGiB: number;
}

/**
 * One node of an instance type as Karpenter sees it: `capacity` is its vCPUs and its memory less the VM
 * overhead (what NodePool limits count), `allocatable` is capacity less the kubelet reservations and the hard
 * eviction threshold (what pods can request). Undefined for a type of unknown shape.
 */
export function nodeResources(type: string, kubelet: Pick<EphemeralNodePoolArgs, "kubeReserved" | "systemReserved" | "evictionHard">): { capacity: NodeResources; allocatable: NodeResources } | undefined {
    const s = instanceShape(type);
    if (!s) return undefined;
    const reserved = (k: "cpu" | "memory", unit: "cores" | "GiB") =>
        [kubelet.kubeReserved?.[k], kubelet.systemReserved?.[k], k === "memory" ? kubelet.evictionHard?.["memory.available"] : undefined]
            .filter((q): q is string => !!q)
            .reduce((sum, q) => sum + quantityValue(q, unit), 0);
    const capacity = { cpu: s.vcpu, memoryGiB: s.memoryGiB * (1 - VM_MEMORY_OVERHEAD) };
    return { capacity, allocatable: { cpu: capacity.cpu - reserved("cpu", "cores"), memoryGiB: capacity.memoryGiB - reserved("memory", "GiB") } };
}

/** A warning: legal config that costs something, with a stable id by which a stack file may acknowledge it. */
export interface ConfigWarning {
    /** Stable, kebab-case: notify-karpenter:acknowledged names it. */
    id: string;
    /** What is wrong, what it costs and what to do, in one line. */
    message: string;
}

/** The ids nodePoolFindings may give, with what each means (docs/configuration.md lists them, from stacks/warnings.ts). */
export const NODE_POOL_WARNINGS: Record<string, string> = {
    "spot-to-spot-inert": "controller.spotToSpotConsolidation is on, but the pool's consolidation never replaces a node",
    "spot-to-spot-single-node": "a lone spot node of the smallest approved size is never replaced by a cheaper one: fewer than 15 approved types of that size",
    "celery-pod-too-big": "some approved instance types cannot fit one Celery pod next to the daemonsets",
    "limits-below-peak": "the NodePool limits are below what the configured peak of Celery pods needs",
};

/** Karpenter v1.14.1 replaces a single spot node only with at least this many cheaper types (consolidation.go:48). */
const SPOT_TO_SPOT_MIN_TYPES = 15;

/**
 * Pain the config invites but Karpenter would accept, each with its id, what it costs and what to do. Config
 * validation (stacks/validatedConfig.ts) gathers them with the rest, once per run; an acknowledged one is quiet.
 */
export function nodePoolFindings(a: EphemeralNodePoolArgs): ConfigWarning[] {
    const warnings: ConfigWarning[] = [];
    // kubernetes-sigs/karpenter v1.14.1 pkg/controllers/disruption/consolidation.go: WhenEmpty skips every
    // non-empty node (:130-134) and empty ones are deleted, not replaced (emptiness.go:42-58); a single spot node is
    // replaced only with at least 15 cheaper compatible types (:48, :311-315); several at once need none (:294).
    if (a.spotToSpotConsolidation && (a.capacityTypes ?? ["spot"]).includes("spot")) {
        if ((a.consolidationPolicy ?? "WhenEmpty") === "WhenEmpty" || a.consolidateAfter === "Never") {
            const why = a.consolidateAfter === "Never" ? "consolidateAfter is Never" : "consolidationPolicy is WhenEmpty, which never disrupts a node that still has pods";
            warnings.push({
                id: "spot-to-spot-inert",
                message: `NodePool "${a.name}": spot-to-spot consolidation does nothing here: it replaces a running spot node with a cheaper one, and ${why}. It costs nothing but misleads: set controller.spotToSpotConsolidation to false`,
            });
        } else {
            // A node is replaced only by cheaper types; of its own size at most the others can be, so the smallest
            // size decides whether any lone node can ever be replaced.
            const shaped = a.instanceTypes.map((t) => ({ t, vcpu: instanceShape(t)?.vcpu })).filter((x): x is { t: string; vcpu: number } => x.vcpu !== undefined);
            const least = Math.min(...shaped.map((x) => x.vcpu));
            const smallest = shaped.filter((x) => x.vcpu === least).map((x) => x.t);
            if (smallest.length > 0 && smallest.length <= SPOT_TO_SPOT_MIN_TYPES) {
                const size = smallest[0].split(".")[1];
                warnings.push({
                    id: "spot-to-spot-single-node",
                    message: `NodePool "${a.name}": a lone spot node of the smallest approved size is never replaced by a cheaper one: Karpenter needs at least ${SPOT_TO_SPOT_MIN_TYPES} cheaper approved types to replace one node (v1.14.1 consolidation.go:311), and ${smallest.length === a.instanceTypes.length ? `the pool approves ${a.instanceTypes.length} types` : `${smallest.length} types are of size ${size}`} (${least} vCPUs). Cost: such a node, underused, runs until it empties or is consolidated with others. To act: approve at least ${SPOT_TO_SPOT_MIN_TYPES + 1} types of that size, or acknowledge it`,
                });
            }
        }
    }
    const c = a.capacityCheck;
    if (!c) return warnings;
    const podCpu = quantityValue(c.celeryPodCpu, "cores");
    const podMem = quantityValue(c.celeryPodMemory, "GiB");
    const tooSmall = a.instanceTypes.filter((t) => !fitsCeleryPod(t, a, c));
    if (tooSmall.length) {
        warnings.push({
            id: "celery-pod-too-big",
            message: `instance types ${tooSmall.join(", ")} cannot fit one Celery pod (${c.celeryPodCpu} cpu, ${c.celeryPodMemory}) next to the daemonsets: Karpenter never launches them for burst pods, so they only seem to widen the spot choice. To act: remove them from nodePool, or correct nodePool.capacityCheck`,
        });
    }
    const needCpu = c.peakCeleryPods * podCpu;
    const needMem = c.peakCeleryPods * podMem;
    if (quantityValue(a.limits.cpu, "cores") < needCpu || quantityValue(a.limits.memory, "GiB") < needMem) {
        warnings.push({
            id: "limits-below-peak",
            message: `NodePool "${a.name}" limits (cpu ${a.limits.cpu}, memory ${a.limits.memory}) are below what ${c.peakCeleryPods} Celery pods need (cpu ${+needCpu.toFixed(3)}, memory ${+needMem.toFixed(3)}Gi); pods past the limit stay pending and the burst queues back up. To act: raise nodePool.limits, or lower capacityCheck.peakCeleryPods to the real peak`,
        });
    }
    return warnings;
}

/** Whether one Celery pod fits on a node of `type` next to the daemonsets, after the kubelet reservations (unknown shapes fit). */
export function fitsCeleryPod(type: string, a: Pick<EphemeralNodePoolArgs, "kubeReserved" | "systemReserved" | "evictionHard">, c: CapacityCheck): boolean {
    const node = nodeResources(type, a);
    if (!node) return true;
    const cpu = node.allocatable.cpu - quantityValue(c.daemonsetCpu, "cores");
    const mem = node.allocatable.memoryGiB - quantityValue(c.daemonsetMemory, "GiB");
    return cpu >= quantityValue(c.celeryPodCpu, "cores") && mem >= quantityValue(c.celeryPodMemory, "GiB");
}

/** The warnings' messages alone. */
export function nodePoolWarnings(a: EphemeralNodePoolArgs): string[] {
    return nodePoolFindings(a).map((w) => w.message);
}
