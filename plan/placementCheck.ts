// Which pod templates of a plan could run on the stack's ephemeral nodes. The nodes are modelled from the NodePool
// itself (its labels, taints and startup taints are what Karpenter puts on every node it launches), and each pod
// template goes through the scheduler's filters (components/scheduling.ts).
import { NodeModel, PodScheduling, Taint, schedulingProblems } from "../components/scheduling";

const NODEPOOL = "karpenter.sh/v1:NodePool";

/** Anything shaped like a Kubernetes object: a recorded resource's inputs or a parsed manifest. */
export interface KubeObject {
    apiVersion?: string;
    kind?: string;
    metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
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
            const t = pool.spec.template;
            const labels = { ...wellKnownLabels(t.spec.requirements), ...(t.metadata?.labels ?? {}), "karpenter.sh/nodepool": pool.metadata!.name! };
            const taints: Taint[] = t.spec.taints ?? [];
            const name = pool.metadata!.name!;
            return {
                nodePool: name,
                launched: { description: `a new node of NodePool ${name}`, labels, taints: [...taints, ...(t.spec.startupTaints ?? [])] },
                ready: { description: `a ready node of NodePool ${name}`, labels, taints },
            };
        });
}

/**
 * The labels Karpenter gives the nodes of a pool, from its `In` requirements: each key with every value it allows
 * (instance types, zones, capacity types...), plus the family, size and category that follow from the types.
 */
function wellKnownLabels(requirements: { key: string; operator: string; values?: string[] }[]): Record<string, string | string[]> {
    const labels: Record<string, string | string[]> = { "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "karpenter.sh/capacity-type": "spot" };
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

/** Every pod template among `objects`: workloads, their patches, and bare pods. */
export function podTemplatesOf(objects: KubeObject[]): PodTemplate[] {
    const out: PodTemplate[] = [];
    for (const o of objects) {
        const [namespace, name] = [o.metadata?.namespace ?? "default", o.metadata?.name ?? ""];
        const owner = `${o.kind} ${namespace}/${name}`;
        if (o.kind === "Pod" && o.spec) out.push({ owner, kind: o.kind, namespace, name, labels: o.metadata?.labels ?? {}, spec: o.spec });
        const template = o.kind === CRONJOB ? o.spec?.jobTemplate?.spec?.template : o.spec?.template;
        if (template?.spec && ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", CRONJOB].includes(o.kind ?? "")) {
            out.push({ owner, kind: o.kind!, namespace, name, labels: template.metadata?.labels ?? {}, spec: template.spec });
        }
    }
    return out;
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
