// Which pod templates of a plan could run on the stack's ephemeral nodes. The nodes are modelled from the NodePool
// itself (its labels, taints and startup taints are what Karpenter puts on every node it launches), and each pod
// template goes through the scheduler's filters (components/models/scheduling.ts).
import { ANY_VALUE, type NodeModel, type PodScheduling, type Taint, schedulingProblems } from "../components/models/scheduling.ts";

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
    /** Where the pod spec is in the object ("spec.template.spec"), for messages. */
    templatePath?: string;
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

/**
 * Where each kind keeps its pod template (a PodTemplateSpec: metadata and a pod spec). Kubernetes' own workloads by
 * kind (apps/v1, batch/v1, v1); common CRDs by group and kind: KEDA's ScaledJob (keda.sh/v1alpha1,
 * spec.jobTargetRef, a batch/v1 JobSpec), Argo Rollouts' Rollout and OpenKruise's CloneSet (a Deployment's shape).
 */
export const TEMPLATE_PATHS: Record<string, string[]> = {
    Deployment: ["spec", "template"],
    StatefulSet: ["spec", "template"],
    DaemonSet: ["spec", "template"],
    ReplicaSet: ["spec", "template"],
    ReplicationController: ["spec", "template"],
    Job: ["spec", "template"],
    CronJob: ["spec", "jobTemplate", "spec", "template"],
    PodTemplate: ["template"],
    "keda.sh/ScaledJob": ["spec", "jobTargetRef", "template"],
    "argoproj.io/Rollout": ["spec", "template"],
    "apps.kruise.io/CloneSet": ["spec", "template"],
};

/** The kinds whose pod template the check reads (Kubernetes' own, and the CRDs of TEMPLATE_PATHS as group/kind). */
export const WORKLOAD_KINDS = Object.keys(TEMPLATE_PATHS);

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);
const asList = <T = any>(v: unknown): T[] => (Array.isArray(v) ? v : []);
const groupOf = (o: KubeObject) => ((o.apiVersion ?? "").includes("/") ? (o.apiVersion ?? "").split("/")[0] : "");
/** Kubernetes' own kinds, known by kind alone (a manifest may name an older apiVersion, such as extensions/v1beta1). */
const CORE_KINDS = WORKLOAD_KINDS.filter((k) => !k.includes("/"));
/** Where `o` keeps its pod template, when its kind is one this check knows. */
function templatePath(o: KubeObject): string[] | undefined {
    if (typeof o.kind !== "string") return undefined;
    return TEMPLATE_PATHS[`${groupOf(o)}/${o.kind}`] ?? (CORE_KINDS.includes(o.kind) ? TEMPLATE_PATHS[o.kind] : undefined);
}
const at = (o: unknown, path: string[]) => path.reduce<any>((v, k) => (isObject(v) ? v[k] : undefined), o);
const ownerOf = (o: KubeObject) => `${o.kind} ${o.metadata?.namespace ?? "default"}/${o.metadata?.name ?? ""}`;

/** Whether a value is a pod spec: an object with a list of containers, each an object. */
const isPodSpec = (v: unknown): boolean => isObject(v) && Array.isArray(v.containers) && v.containers.length > 0 && v.containers.every(isObject);

/**
 * Where in an object of a kind this check does not know a pod spec sits ("spec.workerGroupSpecs[0].template.spec"),
 * searched to a depth of 12; undefined when it holds none.
 */
export function podSpecPath(o: unknown, path: string[] = [], depth = 0): string | undefined {
    if (depth > 12) return undefined;
    if (isPodSpec(o) && path.length > 0) return path.join(".").replace(/\.\[/g, "[");
    const entries: [string, unknown][] = Array.isArray(o) ? o.map((v, i) => [`[${i}]`, v]) : isObject(o) ? Object.entries(o).filter(([k]) => k !== "metadata" && k !== "status") : [];
    for (const [k, v] of entries) {
        if (typeof v !== "object" || v === null) continue;
        const found = podSpecPath(v, [...path, k], depth + 1);
        if (found) return found;
    }
    return undefined;
}

/** Why a pod template cannot be judged, or undefined when it can. */
function unreadable(o: KubeObject): string | undefined {
    if (o.kind === "Pod") return isObject(o.spec) ? malformed(o.spec) : "a Pod without spec";
    const p = templatePath(o);
    if (p) {
        const where = p.join(".");
        const template = at(o, p);
        if (!isObject(at(o, p.slice(0, 1)))) return `no ${p[0]}`;
        if (!isObject(template)) return `${where} is ${template === null ? "null" : "missing"}`;
        return isObject(template.spec) ? malformed(template.spec) : `${where} has no spec`;
    }
    // A kind this check does not know (a Ray cluster, a Spark application, an operator's CRD) may still run pods from a
    // pod spec anywhere in it: not checked, never "nothing misplaced".
    const found = podSpecPath(o);
    return found ? `${o.apiVersion} ${o.kind} is not a kind this check knows, yet it holds a pod spec at ${found}: judge its pods live (--context), or ask for the kind to be added (plan/placementCheck.ts TEMPLATE_PATHS)` : undefined;
}

/** Whether an object runs pods: a Pod, a workload this check knows, or any kind that holds a pod spec somewhere. */
export function holdsPodTemplate(o: KubeObject): boolean {
    return o.kind === "Pod" || templatePath(o) !== undefined || podSpecPath(o) !== undefined;
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
        const p = templatePath(o);
        if (!(o.kind === "Pod" || p) || unreadable(o)) continue;
        const [namespace, name] = [o.metadata?.namespace ?? "default", o.metadata?.name ?? ""];
        const template = o.kind === "Pod" ? { metadata: o.metadata, spec: o.spec } : at(o, p!);
        const hook = o.metadata?.annotations?.["helm.sh/hook"];
        out.push({ owner: ownerOf(o), kind: o.kind!, namespace, name, labels: template.metadata?.labels ?? {}, spec: template.spec, templatePath: o.kind === "Pod" ? "spec" : `${p!.join(".")}.spec`, ...(hook ? { hook } : {}) });
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

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key is not one (apimachinery validation IsQualifiedName), or undefined. */
function labelKeyProblem(key: unknown): string | undefined {
    if (typeof key !== "string") return "must be a string";
    const parts = key.split("/");
    const name = parts.at(-1)!;
    if (parts.length > 2 || (parts.length === 2 && (parts[0].length > 253 || !DNS_SUBDOMAIN.test(parts[0])))) return "a qualified name's prefix must be a DNS subdomain, with one / before the name";
    if (!LABEL_NAME.test(name)) return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters";
    return undefined;
}

/** Why a label value is not one (apimachinery validation IsValidLabelValue), or undefined. */
function labelValueProblem(value: unknown): string | undefined {
    if (value === undefined || value === null || value === "") return undefined;
    if (typeof value !== "string") return "must be a string";
    return LABEL_NAME.test(value) ? undefined : "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters";
}

const q = (v: unknown) => JSON.stringify(v ?? "");

/** A node selector requirement as the API server validates it (ValidateNodeSelectorRequirement, ...FieldSelector...). */
function requirementProblems(r: Record<string, any>, at: string, field: boolean): string[] {
    const out: string[] = [];
    const values = Array.isArray(r.values) ? r.values : [];
    if (field) {
        if (r.key !== "metadata.name") out.push(`${at}.key: Invalid value: ${q(r.key)}: not a valid field selector key`);
        if (r.operator !== "In" && r.operator !== "NotIn") out.push(`${at}.operator: Invalid value: ${q(r.operator)}: not a valid selector operator`);
        else if (values.length !== 1) out.push(`${at}.values: Required value: must be only one value when \`operator\` is 'In' or 'NotIn' for node field selector`);
        return out;
    }
    switch (r.operator) {
        case "In":
        case "NotIn":
            if (values.length === 0) out.push(`${at}.values: Required value: must be specified when \`operator\` is 'In' or 'NotIn'`);
            break;
        case "Exists":
        case "DoesNotExist":
            if (values.length > 0) out.push(`${at}.values: Forbidden: may not be specified when \`operator\` is 'Exists' or 'DoesNotExist'`);
            break;
        case "Gt":
        case "Lt":
            if (values.length !== 1) out.push(`${at}.values: Required value: must be specified single value when \`operator\` is 'Lt' or 'Gt'`);
            break;
        default:
            out.push(`${at}.operator: Invalid value: ${q(r.operator)}: not a valid selector operator (In, NotIn, Exists, DoesNotExist, Gt, Lt)`);
    }
    const key = labelKeyProblem(r.key);
    if (key) out.push(`${at}.key: Invalid value: ${q(r.key)}: ${key}`);
    return out;
}

function termProblems(term: Record<string, any>, at: string): string[] {
    return [
        ...asList<Record<string, any>>(term.matchExpressions).flatMap((r, i) => (isObject(r) ? requirementProblems(r, `${at}.matchExpressions[${i}]`, false) : [])),
        ...asList<Record<string, any>>(term.matchFields).flatMap((r, i) => (isObject(r) ? requirementProblems(r, `${at}.matchFields[${i}]`, true) : [])),
    ];
}

/**
 * What the API server refuses in a pod spec's scheduling fields, in its own words (k8s.io/kubernetes v1.34
 * pkg/apis/core/validation/validation.go: validateTolerations, validateTaintEffect, ValidateNodeSelector,
 * ValidateNodeSelectorRequirement, ValidatePreferredSchedulingTerms, ValidateLabels). A workload with any of these is
 * never created, so its pods are neither on ephemeral nodes nor kept off them: the release that applies it fails.
 */
export function apiServerProblems(spec: Record<string, any>, at = "spec"): string[] {
    const out: string[] = [];
    asList<Record<string, any>>(spec.tolerations).forEach((t, i) => {
        if (!isObject(t)) return;
        const p = `${at}.tolerations[${i}]`;
        const key = t.key ?? "";
        const operator = t.operator ?? "";
        const effect = t.effect ?? "";
        if (key !== "") {
            const problem = labelKeyProblem(key);
            if (problem) out.push(`${p}.key: Invalid value: ${q(key)}: ${problem}`);
        }
        if (key === "" && operator !== "Exists") out.push(`${p}.operator: Invalid value: ${q(operator)}: operator must be Exists when \`key\` is empty, which means "match all values and all keys"`);
        if (t.tolerationSeconds != null && effect !== "NoExecute") out.push(`${p}.effect: Invalid value: ${q(effect)}: effect must be 'NoExecute' when \`tolerationSeconds\` is set`);
        if (operator === "Equal" || operator === "") {
            const problem = labelValueProblem(t.value);
            if (problem) out.push(`${p}.operator: Invalid value: ${q(t.value)}: ${problem}`);
        } else if (operator === "Exists") {
            if (t.value != null && t.value !== "") out.push(`${p}.operator: Invalid value: ${q(t.value)}: value must be empty when \`operator\` is 'Exists'`);
        } else {
            out.push(`${p}.operator: Unsupported value: ${q(operator)}: supported values: "Equal", "Exists"`);
        }
        if (effect !== "" && !["NoSchedule", "PreferNoSchedule", "NoExecute"].includes(effect)) out.push(`${p}.effect: Unsupported value: ${q(effect)}: supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`);
    });
    if (isObject(spec.nodeSelector)) {
        for (const [k, v] of Object.entries(spec.nodeSelector)) {
            const key = labelKeyProblem(k);
            if (key) out.push(`${at}.nodeSelector: Invalid value: ${q(k)}: ${key}`);
            const value = labelValueProblem(v);
            if (value) out.push(`${at}.nodeSelector: Invalid value: ${q(v)}: ${value}`);
        }
    }
    const na = isObject(spec.affinity) && isObject(spec.affinity.nodeAffinity) ? spec.affinity.nodeAffinity : undefined;
    const required = na?.requiredDuringSchedulingIgnoredDuringExecution;
    if (isObject(required)) {
        const p = `${at}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
        const terms = asList<Record<string, any>>(required.nodeSelectorTerms);
        if (terms.length === 0) out.push(`${p}: Required value: must have at least one node selector term`);
        terms.forEach((term, i) => isObject(term) && out.push(...termProblems(term, `${p}[${i}]`)));
    }
    asList<Record<string, any>>(na?.preferredDuringSchedulingIgnoredDuringExecution).forEach((pref, i) => {
        if (!isObject(pref)) return;
        const p = `${at}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
        if (!(Number.isInteger(pref.weight) && pref.weight >= 1 && pref.weight <= 100)) out.push(`${p}.weight: Invalid value: ${JSON.stringify(pref.weight ?? 0)}: must be in the range 1-100`);
        if (isObject(pref.preference)) out.push(...termProblems(pref.preference, `${p}.preference`));
    });
    return out;
}
