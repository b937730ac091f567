// Which pod templates of a plan could run on the stack's ephemeral nodes. The nodes are modelled from the NodePool
// itself (its labels, taints and startup taints are what Karpenter puts on every node it launches), and each pod
// template goes through the scheduler's filters (components/scheduling.ts).
import { ANY_VALUE, type NodeModel, type PodScheduling, type Taint, schedulingProblems } from "../components/scheduling.ts";

const NODEPOOL = "karpenter.sh/v1:NodePool";

/** Anything shaped like a Kubernetes object: a recorded resource's inputs or a parsed manifest. */
export interface KubeObject {
    apiVersion?: string;
    kind?: string;
    metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: any;
}

export interface PodTemplate {
    /** "Deployment notification-canada-ca/notify-api" */
    owner: string;
    kind: string;
    namespace: string;
    name: string;
    labels: Record<string, string>;
    spec: PodScheduling;
    /** The object's helm.sh/hook annotation: a Helm hook or test (`helm test`) pod, not a long-running workload. */
    hook?: string;
}

/** The two states of an ephemeral node: just launched (startup taints still on) and ready. */
export interface EphemeralNodes {
    nodePool: string;
    launched: NodeModel;
    ready: NodeModel;
}

/** Ephemeral node models for each NodePool among `objects`. */
export function ephemeralNodesOf(objects: KubeObject[]): EphemeralNodes[] {
    return objects
        .filter((o) => `${o.apiVersion}:${o.kind}` === NODEPOOL)
        .map((pool) => {
            // A pool without a template or taints is still a pool: nodes with no taints admit every pod.
            const t = pool.spec?.template ?? {};
            const name = pool.metadata?.name ?? "";
            const labels = { ...wellKnownLabels(asList(t.spec?.requirements)), ...(t.metadata?.labels ?? {}), "karpenter.sh/nodepool": name };
            const taints: Taint[] = asList(t.spec?.taints);
            return {
                nodePool: name,
                launched: { description: `a new node of NodePool ${name}`, labels, taints: [...taints, ...asList<Taint>(t.spec?.startupTaints)] },
                ready: { description: `a ready node of NodePool ${name}`, labels, taints },
            };
        });
}

/**
 * The labels Karpenter gives the nodes of a pool, from its `In` requirements: each key with every value it allows
 * (instance types, zones, capacity types...), plus the family, size and category that follow from the types.
 */
function wellKnownLabels(requirements: { key: string; operator: string; values?: string[] }[]): Record<string, string | string[]> {
    const labels: Record<string, string | string[]> = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "karpenter.sh/capacity-type": "spot",
        // Labels every node has (kubelet; karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go) with values the
        // model cannot know: a selector on them may match, so they are "any value".
        ...Object.fromEntries(
            [
                "kubernetes.io/hostname",
                "topology.kubernetes.io/region",
                "karpenter.k8s.aws/instance-generation",
                "karpenter.k8s.aws/instance-cpu",
                "karpenter.k8s.aws/instance-memory",
                "karpenter.k8s.aws/instance-hypervisor",
                "karpenter.k8s.aws/instance-cpu-manufacturer",
                "karpenter.k8s.aws/instance-network-bandwidth",
                "karpenter.k8s.aws/instance-ebs-bandwidth",
                "karpenter.k8s.aws/instance-encryption-in-transit-supported",
                "karpenter.k8s.aws/instance-tenancy",
                "karpenter.k8s.aws/ec2nodeclass",
                "topology.k8s.aws/zone-id",
            ].map((k) => [k, ANY_VALUE]),
        ),
    };
    for (const r of requirements) if (r.operator === "In" && r.values?.length) labels[r.key] = r.values;
    const types = ([] as string[]).concat(labels["node.kubernetes.io/instance-type"] ?? []);
    if (types.length) {
        const unique = (f: (t: string) => string) => [...new Set(types.map(f))];
        labels["karpenter.k8s.aws/instance-family"] = unique((t) => t.split(".")[0]);
        labels["karpenter.k8s.aws/instance-size"] = unique((t) => t.split(".")[1]);
        labels["karpenter.k8s.aws/instance-category"] = unique((t) => t[0]);
    }
    return labels;
}

const CRONJOB = "CronJob";
/** The kinds whose pod template the check reads: Kubernetes' own workloads (apps/v1, batch/v1, v1). */
export const WORKLOAD_KINDS = ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", CRONJOB];

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);
const asList = <T = any>(v: unknown): T[] => (Array.isArray(v) ? v : []);
const templateOf = (o: KubeObject) => (o.kind === CRONJOB ? o.spec?.jobTemplate?.spec?.template : o.spec?.template);
const ownerOf = (o: KubeObject) => `${o.kind} ${o.metadata?.namespace ?? "default"}/${o.metadata?.name ?? ""}`;

/** Why a pod template cannot be judged, or undefined when it can. */
function unreadable(o: KubeObject): string | undefined {
    if (o.kind === "Pod") return isObject(o.spec) ? malformed(o.spec) : "a Pod without spec";
    if (WORKLOAD_KINDS.includes(o.kind ?? "")) {
        const where = o.kind === CRONJOB ? "spec.jobTemplate.spec.template" : "spec.template";
        const template = isObject(o.spec) ? templateOf(o) : undefined;
        if (!isObject(o.spec)) return "no spec";
        if (!isObject(template)) return `${where} is ${template === null ? "null" : "missing"}`;
        return isObject(template.spec) ? malformed(template.spec) : `${where} has no spec`;
    }
    // A kind this check does not know (an Argo Rollout, an operator's CRD) may still run pods from its template.
    return holdsPodTemplate(o) ? `${o.apiVersion} ${o.kind} is not a kind this check knows, yet it holds a pod template (spec.template)` : undefined;
}

/**
 * Whether an object runs pods: a Pod, a workload, or any kind whose spec.template is a pod template (a pod spec has
 * containers; a Karpenter NodePool's template, which has requirements instead, is not one).
 */
export function holdsPodTemplate(o: KubeObject): boolean {
    return o.kind === "Pod" || WORKLOAD_KINDS.includes(o.kind ?? "") || Array.isArray(templateOf(o)?.spec?.containers);
}

/** Scheduling fields of the wrong shape, which the scheduler would refuse and this model cannot read. */
function malformed(spec: Record<string, any>): string | undefined {
    // The scheduler never sees such a pod: the kubelet of that node runs it, whatever its taints.
    if (spec.nodeName != null) return `spec.nodeName binds its pods to node ${JSON.stringify(spec.nodeName)} without the scheduler, so no taint keeps them off an ephemeral node; check that node is not one`;
    if (spec.tolerations != null && !(Array.isArray(spec.tolerations) && spec.tolerations.every(isObject))) return "its tolerations are not a list of tolerations";
    if (spec.nodeSelector != null && !isObject(spec.nodeSelector)) return "its nodeSelector is not a mapping";
    const na = spec.affinity?.nodeAffinity;
    const required = na?.requiredDuringSchedulingIgnoredDuringExecution;
    if (required != null && !(Array.isArray(required.nodeSelectorTerms) && required.nodeSelectorTerms.every(isObject))) return "its required node affinity has no list of nodeSelectorTerms";
    const requirementLists = (term: Record<string, any>) => [term.matchExpressions, term.matchFields].every((l) => l == null || (Array.isArray(l) && l.every(isObject)));
    if (required != null && !required.nodeSelectorTerms.every(requirementLists)) return "a nodeSelectorTerm's matchExpressions or matchFields is not a list of requirements";
    const preferred = na?.preferredDuringSchedulingIgnoredDuringExecution;
    if (preferred != null && !(Array.isArray(preferred) && preferred.every((p) => isObject(p) && isObject(p.preference) && requirementLists(p.preference)))) return "its preferred node affinity is not a list of weighted preferences";
    return undefined;
}

/** Every pod template among `objects`: workloads, their patches, and bare pods; only those that can be judged. */
export function podTemplatesOf(objects: KubeObject[]): PodTemplate[] {
    const out: PodTemplate[] = [];
    for (const o of objects) {
        if (!(o.kind === "Pod" || WORKLOAD_KINDS.includes(o.kind ?? "")) || unreadable(o)) continue;
        const [namespace, name] = [o.metadata?.namespace ?? "default", o.metadata?.name ?? ""];
        const template = o.kind === "Pod" ? { metadata: o.metadata, spec: o.spec } : templateOf(o);
        const hook = o.metadata?.annotations?.["helm.sh/hook"];
        out.push({ owner: ownerOf(o), kind: o.kind!, namespace, name, labels: template.metadata?.labels ?? {}, spec: template.spec, ...(hook ? { hook } : {}) });
    }
    return out;
}

/** The pod templates among `objects` that cannot be judged, each with why: never to be read as "kept off". */
export function uncheckedTemplatesOf(objects: KubeObject[]): { owner: string; why: string }[] {
    return objects.flatMap((o) => {
        const why = unreadable(o);
        return why ? [{ owner: ownerOf(o), why }] : [];
    });
}

/**
 * A pod spec's scheduling after a patch applied with server-side apply: tolerations, nodeSelector and the node
 * affinity term lists are atomic (k8s.io/api core/v1 PodSpec `+listType=atomic`, `+mapType=atomic`), so a patch that
 * sets one replaces it whole, and what the patch leaves out stays as the chart rendered it.
 */
export function patchedScheduling(spec: PodScheduling, patch: PodScheduling): PodScheduling {
    const na = { ...(spec.affinity?.nodeAffinity ?? {}), ...(patch.affinity?.nodeAffinity ?? {}) };
    return {
        ...spec,
        ...(patch.tolerations ? { tolerations: patch.tolerations } : {}),
        ...(patch.nodeSelector ? { nodeSelector: patch.nodeSelector } : {}),
        ...(Object.keys(na).length ? { affinity: { ...(spec.affinity ?? {}), nodeAffinity: na } } : {}),
    };
}

export interface PlacementFinding {
    owner: string;
    /** Could run on a ready ephemeral node. */
    ephemeral: boolean;
    /** Could run on a node that still has its startup taints (only node agents should). */
    launched: boolean;
    /** Why it cannot run on a ready ephemeral node (empty when it can). */
    reasons: string[];
}

/** For each pod template, whether it could run on the ephemeral nodes, before and after the startup taints go. */
export function placementFindings(templates: PodTemplate[], nodes: EphemeralNodes): PlacementFinding[] {
    return templates.map((t) => {
        const reasons = schedulingProblems(t.spec, nodes.ready);
        return { owner: t.owner, ephemeral: reasons.length === 0, launched: schedulingProblems(t.spec, nodes.launched).length === 0, reasons };
    });
}
