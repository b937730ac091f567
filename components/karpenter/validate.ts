// Checks a NodePool or EC2NodeClass the way the API server would, before Pulumi ever sees it: the v1.14.1
// structural schema (unknown fields included: the API server silently prunes them, which is how GC Notify lost its
// whole disruption policy) and the CRDs' CEL rules, each reported with the CRD's own message.
import { EC2NODECLASS_SPEC, NODEPOOL_SPEC, StructuralSchema } from "./crdSchema";

export interface KarpenterObject {
    apiVersion: string;
    kind: string;
    metadata: { name: string; [k: string]: unknown };
    spec: Record<string, any>;
}

/** One problem: the field path inside the object and what is wrong there. */
export interface SchemaIssue {
    path: string;
    message: string;
}

/** Every schema and CEL problem of `obj`; empty when the API server would accept it unchanged. */
export function validateKarpenterObject(obj: KarpenterObject): SchemaIssue[] {
    const kind = KINDS[obj.kind];
    if (!kind) return [{ path: "kind", message: `must be one of ${Object.keys(KINDS).join(", ")} (got ${JSON.stringify(obj.kind)})` }];
    const issues: SchemaIssue[] = [];
    if (obj.apiVersion !== kind.apiVersion) issues.push({ path: "apiVersion", message: `must be ${kind.apiVersion} (got ${JSON.stringify(obj.apiVersion)})` });
    if (typeof obj.metadata?.name !== "string" || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(obj.metadata.name) || obj.metadata.name.length > 253) {
        issues.push({ path: "metadata.name", message: `must be a DNS subdomain name (got ${JSON.stringify(obj.metadata?.name)})` });
    }
    checkSchema(kind.spec, obj.spec, "spec", issues, obj.kind);
    // CEL rules assume a structurally valid object, as the API server's do.
    if (issues.length === 0) {
        for (const rule of kind.rules) {
            for (const { path, value } of resolve(obj.spec, rule.path.replace(/^spec\.?/, ""), "spec")) {
                if (!rule.holds(value)) issues.push({ path, message: rule.message });
            }
        }
    }
    return issues;
}

function checkSchema(s: StructuralSchema, v: unknown, path: string, issues: SchemaIssue[], kind: string): void {
    const fail = (message: string) => issues.push({ path, message });
    switch (s.type) {
        case "object": {
            if (typeof v !== "object" || v === null || Array.isArray(v)) return void fail(`must be an object (got ${JSON.stringify(v)})`);
            const o = v as Record<string, unknown>;
            for (const k of s.required ?? []) if (o[k] === undefined) issues.push({ path: `${path}.${k}`, message: "is required" });
            for (const [k, x] of Object.entries(o)) {
                if (x === undefined) continue;
                const child = s.properties?.[k] ?? s.additionalProperties;
                if (!child) {
                    const known = Object.keys(s.properties ?? {});
                    issues.push({
                        path: `${path}.${k}`,
                        message: `is not a field of the v1.14.1 ${kind} schema, so the API server would silently drop it; fields here are ${known.join(", ") || "none"}`,
                    });
                } else checkSchema(child, x, `${path}.${k}`, issues, kind);
            }
            return;
        }
        case "array": {
            if (!Array.isArray(v)) return void fail(`must be a list (got ${JSON.stringify(v)})`);
            if (s.maxItems !== undefined && v.length > s.maxItems) fail(`must have at most ${s.maxItems} items (got ${v.length})`);
            if (s.minItems !== undefined && v.length < s.minItems) fail(`must have at least ${s.minItems} items (got ${v.length})`);
            v.forEach((x, i) => checkSchema(s.items!, x, `${path}[${i}]`, issues, kind));
            return;
        }
        case "integer":
            if (!Number.isInteger(v)) return void fail(`must be an integer (got ${JSON.stringify(v)})`);
            if (s.minimum !== undefined && (v as number) < s.minimum) fail(`must be at least ${s.minimum} (got ${v})`);
            if (s.maximum !== undefined && (v as number) > s.maximum) fail(`must be at most ${s.maximum} (got ${v})`);
            return;
        case "boolean":
            if (typeof v !== "boolean") fail(`must be true or false (got ${JSON.stringify(v)})`);
            return;
        case "int-or-string":
            if (Number.isInteger(v)) return;
            if (typeof v !== "string") return void fail(`must be an integer or a string (got ${JSON.stringify(v)})`);
            return checkString(s, v, fail);
        default:
            if (typeof v !== "string") return void fail(`must be a string (got ${JSON.stringify(v)})`);
            return checkString(s, v, fail);
    }
}

function checkString(s: StructuralSchema, v: string, fail: (m: string) => void): void {
    if (s.enum && !s.enum.includes(v)) fail(`must be one of ${s.enum.join(", ")} (got ${JSON.stringify(v)})`);
    if (s.pattern && !new RegExp(s.pattern).test(v)) fail(`must match ${s.pattern} (got ${JSON.stringify(v)})`);
    if (s.maxLength !== undefined && v.length > s.maxLength) fail(`must be at most ${s.maxLength} characters (got ${v.length})`);
}

/** The values at a rule's path: "a.b[]" visits each item of the list at a.b; absent fields are skipped. */
function resolve(root: unknown, path: string, prefix: string): { path: string; value: any }[] {
    let here: { path: string; value: any }[] = [{ path: prefix, value: root }];
    for (const part of path ? path.split(".") : []) {
        const each = part.endsWith("[]");
        const key = each ? part.slice(0, -2) : part;
        here = here.flatMap(({ path: p, value }) => {
            const v = value?.[key];
            if (v === undefined) return [];
            return each ? (v as unknown[]).map((x, i) => ({ path: `${p}.${key}[${i}]`, value: x })) : [{ path: `${p}.${key}`, value: v }];
        });
    }
    return here;
}

/** A CEL rule of the CRD, written in TypeScript: where it applies, the condition, and the CRD's message. */
interface Rule {
    path: string;
    message: string;
    holds: (self: any) => boolean;
}

const has = (o: any, k: string) => o?.[k] !== undefined;
const domainOf = (key: string) => /^([^/]+)/.exec(key)?.[1] ?? "";
const ALLOWED_KARPENTER_SH = ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"];
/** Well-known labels in the restricted karpenter.k8s.aws domain that NodePools may still use. */
export const ALLOWED_KARPENTER_K8S_AWS = [
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/ec2nodeclass",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
];

/** The label-domain rules, which the CRD applies both to template labels and to requirement keys. */
function labelKeyRules(path: string, keysOf: (self: any) => string[]): Rule[] {
    const all = (test: (k: string) => boolean) => (self: any) => keysOf(self).every(test);
    return [
        { path, message: 'label domain "karpenter.sh" is restricted', holds: all((k) => ALLOWED_KARPENTER_SH.includes(k) || !domainOf(k).endsWith("karpenter.sh")) },
        { path, message: 'label "karpenter.sh/nodepool" is restricted', holds: all((k) => k !== "karpenter.sh/nodepool") },
        { path, message: 'label "kubernetes.io/hostname" is restricted', holds: all((k) => k !== "kubernetes.io/hostname") },
        { path, message: 'label domain "karpenter.k8s.aws" is restricted', holds: all((k) => ALLOWED_KARPENTER_K8S_AWS.includes(k) || !domainOf(k).endsWith("karpenter.k8s.aws")) },
    ];
}

const isNonNegativeInt = (s: string) => /^\+?[0-9]+$/.test(s.trim());

function nodePoolRules(): Rule[] {
    // The CRD's transition rules (replicas mode, nodeClassRef group and kind immutable) compare with the stored
    // object (`oldSelf`) and cannot apply to the object we are about to create.
    return [
        {
            path: "spec",
            message: "only 'limits.nodes' is supported on static NodePools",
            holds: (s) => !has(s, "replicas") || !has(s, "limits") || Object.keys(s.limits).length === 0 || (Object.keys(s.limits).length === 1 && "nodes" in s.limits),
        },
        { path: "spec", message: "'weight' is not supported on static NodePools", holds: (s) => !has(s, "replicas") || !has(s, "weight") },
        { path: "spec.disruption.budgets", message: "'schedule' must be set with 'duration'", holds: (b) => b.every((x: any) => has(x, "schedule") === has(x, "duration")) },
        ...labelKeyRules("spec.template.metadata.labels", (labels) => Object.keys(labels)),
        { path: "spec.template.spec.nodeClassRef.group", message: "group may not be empty", holds: (s) => s !== "" },
        { path: "spec.template.spec.nodeClassRef.kind", message: "kind may not be empty", holds: (s) => s !== "" },
        { path: "spec.template.spec.nodeClassRef.name", message: "name may not be empty", holds: (s) => s !== "" },
        {
            path: "spec.template.spec.requirements",
            message: "requirements with operator 'In' must have a value defined",
            holds: (rs) => rs.every((x: any) => (x.operator === "In" ? (x.values ?? []).length !== 0 : true)),
        },
        {
            path: "spec.template.spec.requirements",
            message: "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
            holds: (rs) => rs.every((x: any) => (["Gt", "Lt", "Gte", "Lte"].includes(x.operator) ? (x.values ?? []).length === 1 && isNonNegativeInt(x.values[0]) : true)),
        },
        {
            path: "spec.template.spec.requirements",
            message: "requirements with 'minValues' must have at least that many values specified in the 'values' field",
            holds: (rs) => rs.every((x: any) => (x.operator === "In" && has(x, "minValues") ? (x.values ?? []).length >= x.minValues : true)),
        },
        ...labelKeyRules("spec.template.spec.requirements[].key", (key) => [key]),
    ];
}

const nonEmptyTags = (path: string): Rule => ({
    path,
    message: "empty tag keys or values aren't supported",
    holds: (tags) => Object.entries(tags).every(([k, v]) => k !== "" && v !== ""),
});
const EVICTION_SIGNALS = ["memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"];
const RESERVED_KEYS = ["cpu", "memory", "ephemeral-storage", "pid"];
const AMI_FAMILIES: [string, string][] = [
    ["al2", "AL2"],
    ["al2023", "AL2023"],
    ["bottlerocket", "Bottlerocket"],
    ["windows2019", "Windows2019"],
    ["windows2022", "Windows2022"],
    ["windows2025", "Windows2025"],
];
const aliasFamily = (alias: string) => /^[^@]+/.exec(alias)?.[0] ?? "";
const article = (family: string) => (/^[AE]/.test(family) ? "an" : "a");

function ec2NodeClassRules(): Rule[] {
    return [
        {
            path: "spec",
            message: "must specify exactly one of ['role', 'instanceProfile']",
            holds: (s) => has(s, "role") !== has(s, "instanceProfile"),
        },
        ...AMI_FAMILIES.map(([alias, family]): Rule => ({
            path: "spec",
            message: `if set, amiFamily must be '${family}' or 'Custom' when using ${article(family)} ${family} alias`,
            holds: (s) =>
                !has(s, "amiFamily") ||
                (s.amiSelectorTerms.some((x: any) => has(x, "alias") && aliasFamily(x.alias) === alias) ? s.amiFamily === "Custom" || s.amiFamily === family : true),
        })),
        {
            path: "spec",
            message: "must specify amiFamily if amiSelectorTerms does not contain an alias",
            holds: (s) => (s.amiSelectorTerms.some((x: any) => has(x, "alias")) ? true : has(s, "amiFamily")),
        },
        {
            path: "spec.amiSelectorTerms",
            message: "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
            holds: (ts) => ts.every((x: any) => ["tags", "id", "name", "alias", "ssmParameter"].some((k) => has(x, k))),
        },
        {
            path: "spec.amiSelectorTerms",
            message: "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
            holds: (ts) => !ts.some((x: any) => has(x, "id") && ["alias", "tags", "name", "owner"].some((k) => has(x, k))),
        },
        {
            path: "spec.amiSelectorTerms",
            message: "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
            holds: (ts) => !ts.some((x: any) => has(x, "alias") && ["id", "tags", "name", "owner"].some((k) => has(x, k))),
        },
        {
            path: "spec.amiSelectorTerms",
            message: "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
            holds: (ts) => !(ts.some((x: any) => has(x, "alias")) && ts.length !== 1),
        },
        {
            path: "spec.amiSelectorTerms[].alias",
            message: "'alias' is improperly formatted, must match the format 'family@version'",
            holds: (a) => /^[a-zA-Z0-9]+@.+$/.test(a),
        },
        {
            path: "spec.amiSelectorTerms[].alias",
            message: "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
            holds: (a) => AMI_FAMILIES.some(([f]) => f === a.split("@")[0]),
        },
        {
            path: "spec.amiSelectorTerms[].alias",
            message: "windows families may only specify version 'latest'",
            holds: (a) => (a.split("@")[0].startsWith("windows") ? a.split("@")[1] === "latest" : true),
        },
        nonEmptyTags("spec.amiSelectorTerms[].tags"),
        {
            path: "spec.blockDeviceMappings",
            message: "must have only one blockDeviceMappings with rootVolume",
            holds: (ms) => ms.filter((x: any) => x.rootVolume === true).length <= 1,
        },
        { path: "spec.blockDeviceMappings[].ebs", message: "snapshotID or volumeSize must be defined", holds: (e) => has(e, "snapshotID") || has(e, "volumeSize") },
        {
            path: "spec.blockDeviceMappings[].ebs",
            message: "snapshotID must be set when volumeInitializationRate is set",
            holds: (e) => !has(e, "volumeInitializationRate") || (has(e, "snapshotID") && e.snapshotID !== ""),
        },
        {
            path: "spec.capacityReservationSelectorTerms",
            message: "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
            holds: (ts) => ts.every((x: any) => has(x, "tags") || has(x, "id") || has(x, "instanceMatchCriteria")),
        },
        {
            path: "spec.capacityReservationSelectorTerms",
            message: "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
            holds: (ts) => !ts.every((x: any) => has(x, "id") && (has(x, "tags") || has(x, "ownerID") || has(x, "instanceMatchCriteria"))),
        },
        nonEmptyTags("spec.capacityReservationSelectorTerms[].tags"),
        {
            path: "spec.connectionTracking",
            message: "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
            holds: (c) => has(c, "tcpEstablishedTimeout") || has(c, "udpStreamTimeout") || has(c, "udpTimeout"),
        },
        { path: "spec.instanceProfile", message: "instanceProfile cannot be empty", holds: (s) => s !== "" },
        {
            path: "spec.kubelet",
            message: "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            holds: (k) => (has(k, "imageGCHighThresholdPercent") && has(k, "imageGCLowThresholdPercent") ? k.imageGCHighThresholdPercent > k.imageGCLowThresholdPercent : true),
        },
        {
            path: "spec.kubelet",
            message: "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
            holds: (k) => (has(k, "evictionSoft") ? Object.keys(k.evictionSoft).every((e) => e in (k.evictionSoftGracePeriod ?? {})) : true),
        },
        {
            path: "spec.kubelet",
            message: "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
            holds: (k) => (has(k, "evictionSoftGracePeriod") ? Object.keys(k.evictionSoftGracePeriod).every((e) => e in (k.evictionSoft ?? {})) : true),
        },
        ...["evictionHard", "evictionSoft", "evictionSoftGracePeriod"].map((field): Rule => ({
            path: `spec.kubelet.${field}`,
            message: `valid keys for ${field} are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']`,
            holds: (m) => Object.keys(m).every((x) => EVICTION_SIGNALS.includes(x)),
        })),
        ...["kubeReserved", "systemReserved"].flatMap((field): Rule[] => [
            {
                path: `spec.kubelet.${field}`,
                message: `valid keys for ${field} are ['cpu','memory','ephemeral-storage','pid']`,
                holds: (m) => Object.keys(m).every((x) => RESERVED_KEYS.includes(x)),
            },
            {
                path: `spec.kubelet.${field}`,
                message: `${field} value cannot be a negative resource quantity`,
                holds: (m) => Object.values(m).every((x) => !String(x).startsWith("-")),
            },
        ]),
        {
            path: "spec.networkInterfaces",
            message: "networkInterfaces must include a primary interface with interfaceType='interface'",
            holds: (ns) => ns.length === 0 || ns.some((x: any) => x.deviceIndex === 0 && x.networkCardIndex === 0 && x.interfaceType === "interface"),
        },
        {
            path: "spec.networkInterfaces",
            message: "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card",
            holds: (ns) =>
                ns.every(
                    (x: any) =>
                        ns.filter((y: any) => x.networkCardIndex === y.networkCardIndex && x.deviceIndex === y.deviceIndex).length === 1 &&
                        (x.interfaceType !== "efa-only" || ns.filter((y: any) => x.networkCardIndex === y.networkCardIndex && y.interfaceType === "efa-only").length === 1),
                ),
        },
        { path: "spec.placementGroupSelector", message: "expected at least one, got none, ['name', 'id']", holds: (p) => has(p, "name") || has(p, "id") },
        { path: "spec.placementGroupSelector", message: "'name' and 'id' are mutually exclusive", holds: (p) => !(has(p, "name") && has(p, "id")) },
        { path: "spec.role", message: "role cannot be empty", holds: (s) => s !== "" },
        { path: "spec.securityGroupSelectorTerms", message: "securityGroupSelectorTerms cannot be empty", holds: (ts) => ts.length !== 0 },
        {
            path: "spec.securityGroupSelectorTerms",
            message: "expected at least one, got none, ['tags', 'id', 'name']",
            holds: (ts) => ts.every((x: any) => has(x, "tags") || has(x, "id") || has(x, "name")),
        },
        {
            path: "spec.securityGroupSelectorTerms",
            message: "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
            holds: (ts) => !ts.every((x: any) => has(x, "id") && (has(x, "tags") || has(x, "name"))),
        },
        {
            path: "spec.securityGroupSelectorTerms",
            message: "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
            holds: (ts) => !ts.every((x: any) => has(x, "name") && (has(x, "tags") || has(x, "id"))),
        },
        nonEmptyTags("spec.securityGroupSelectorTerms[].tags"),
        { path: "spec.subnetSelectorTerms", message: "subnetSelectorTerms cannot be empty", holds: (ts) => ts.length !== 0 },
        { path: "spec.subnetSelectorTerms", message: "expected at least one, got none, ['tags', 'id']", holds: (ts) => ts.every((x: any) => has(x, "tags") || has(x, "id")) },
        {
            path: "spec.subnetSelectorTerms",
            message: "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",
            holds: (ts) => !ts.every((x: any) => has(x, "id") && has(x, "tags")),
        },
        nonEmptyTags("spec.subnetSelectorTerms[].tags"),
        { path: "spec.tags", message: "empty tag keys aren't supported", holds: (t) => Object.keys(t).every((k) => k !== "") },
        ...["eks:eks-cluster-name", "kubernetes.io/cluster", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"].map((tag): Rule => ({
            path: "spec.tags",
            message: `tag contains a restricted tag matching ${tag === "kubernetes.io/cluster" ? "kubernetes.io/cluster/" : tag}`,
            holds: (t) => Object.keys(t).every((k) => (tag === "kubernetes.io/cluster" ? !k.startsWith(tag) : k !== tag)),
        })),
    ];
}

/** The CEL messages this module implements, for the reference drift test. */
export function implementedRuleMessages(kind: "NodePool" | "EC2NodeClass"): string[] {
    return KINDS[kind].rules.map((r) => r.message);
}

// Last, so the rule tables above are initialised when it is built.
const KINDS: Record<string, { apiVersion: string; spec: StructuralSchema; rules: Rule[] }> = {
    NodePool: { apiVersion: "karpenter.sh/v1", spec: NODEPOOL_SPEC, rules: nodePoolRules() },
    EC2NodeClass: { apiVersion: "karpenter.k8s.aws/v1", spec: EC2NODECLASS_SPEC, rules: ec2NodeClassRules() },
};
