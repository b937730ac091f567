// The part of the Kubernetes scheduler that decides whether a pod may run on a node at all: taints and
// tolerations, nodeSelector and required node affinity. Resources, preferences and spreads only rank nodes that
// pass these filters, so they are left out. The tests and `npm run verify-placement` both use this model.

export interface Taint {
    key: string;
    value?: string;
    effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

export interface Toleration {
    key?: string;
    operator?: "Equal" | "Exists";
    value?: string;
    effect?: string;
    tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt";
    values?: string[];
}

export interface NodeSelectorTerm {
    matchExpressions?: NodeSelectorRequirement[];
    matchFields?: NodeSelectorRequirement[];
}

/**
 * `terms` with `requirement` added to every term (one term of it alone when there are none). kube-scheduler ORs the
 * terms of a required node affinity, so a requirement in only some terms constrains nothing; Karpenter reads only
 * the first term (kubernetes-sigs/karpenter v1.14.1 pkg/scheduling/requirements.go:104-108).
 */
export function requireInEveryTerm(terms: NodeSelectorTerm[] | undefined, requirement: NodeSelectorRequirement): NodeSelectorTerm[] {
    if (!terms || terms.length === 0) return [{ matchExpressions: [requirement] }];
    return terms.map((t) => ({ ...t, matchExpressions: [...(t.matchExpressions ?? []), requirement] }));
}

/** The scheduling fields of a pod spec (a pod template's `spec`). */
export interface PodScheduling {
    nodeSelector?: Record<string, string>;
    tolerations?: Toleration[];
    affinity?: {
        nodeAffinity?: {
            requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] };
            preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; preference: NodeSelectorTerm }[];
        };
    };
}

export interface NodeModel {
    /** What the node is, for messages ("an ephemeral node"). */
    description: string;
    /**
     * Node labels. A list stands for a label that can take any of these values (a pool that launches several
     * instance types or zones), so each rule passes if some value passes: the model answers "could it land".
     */
    labels: Record<string, string | string[]>;
    taints: Taint[];
}

/** Whether one toleration tolerates one taint, as the scheduler decides it. */
export function tolerates(t: Toleration, taint: Taint): boolean {
    if (t.effect && t.effect !== taint.effect) return false;
    if (!t.key) return t.operator === "Exists";
    if (t.key !== taint.key) return false;
    return t.operator === "Exists" || (t.value ?? "") === (taint.value ?? "");
}

/**
 * A label the node surely has, with a value the model does not know (its hostname, its instance generation): it may
 * match any In, NotIn, Gt or Lt, so a check built on the model never says "kept off" for a node that could admit
 * the pod. Label values cannot contain "*", so it is no real value.
 */
export const ANY_VALUE = "*";

function matches(req: NodeSelectorRequirement, labels: NodeModel["labels"]): boolean {
    if (!Object.prototype.hasOwnProperty.call(labels, req.key)) return req.operator === "NotIn" || req.operator === "DoesNotExist";
    const values = ([] as string[]).concat(labels[req.key]);
    if (values.includes(ANY_VALUE)) return req.operator !== "DoesNotExist";
    return values.some((value) => {
        switch (req.operator) {
            case "In":
                return (req.values ?? []).includes(value);
            case "NotIn":
                return !(req.values ?? []).includes(value);
            case "Exists":
                return true;
            case "DoesNotExist":
                return false;
            case "Gt":
            case "Lt": {
                const [n, bound] = [Number(value), Number(req.values?.[0])];
                return Number.isInteger(n) && (req.operator === "Gt" ? n > bound : n < bound);
            }
        }
    });
}

/**
 * Why a pod cannot be placed on a node: one reason per failed filter, empty when the node is allowed.
 * A NoSchedule or NoExecute taint needs a toleration; PreferNoSchedule only steers.
 */
export function schedulingProblems(pod: PodScheduling, node: NodeModel): string[] {
    const problems: string[] = [];
    for (const taint of node.taints) {
        if (taint.effect === "PreferNoSchedule") continue;
        if (!(pod.tolerations ?? []).some((t) => tolerates(t, taint))) {
            problems.push(`does not tolerate the taint ${taint.key}${taint.value ? `=${taint.value}` : ""}:${taint.effect}`);
        }
    }
    for (const [key, value] of Object.entries(pod.nodeSelector ?? {})) {
        const has = ([] as (string | undefined)[]).concat(node.labels[key]);
        if (!has.includes(value) && !has.includes(ANY_VALUE)) problems.push(`nodeSelector ${key}=${value} does not match`);
    }
    const required = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    if (required) {
        // Terms are ORed, expressions within a term ANDed. matchFields (metadata.name) are not modelled: a term with
        // them may match some node, so the model errs towards "can land", never towards "kept off".
        const ok = required.nodeSelectorTerms.some(
            (term) => ((term.matchExpressions ?? []).length > 0 || (term.matchFields ?? []).length > 0) && (term.matchExpressions ?? []).every((r) => matches(r, node.labels)),
        );
        if (!ok) problems.push("required node affinity does not match");
    }
    return problems;
}

/** Name of a created cluster's stable node group (components/createdCluster.ts); EKS labels its nodes with it and with their capacity type. */
export const STABLE_NODE_GROUP = "stable";

/** The labels EKS puts on the stable nodes: the stack's `stableNodeSelector` must pick from these. */
export const STABLE_NODE_LABELS: Record<string, string> = {
    "eks.amazonaws.com/capacityType": "ON_DEMAND",
    "eks.amazonaws.com/nodegroup": STABLE_NODE_GROUP,
};
