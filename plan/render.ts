// Turns a recording of the program into what a reviewer reads: a preview in `pulumi preview --json` shape, every
// Kubernetes object as YAML, and a short summary.
import { stringify } from "yaml";
import { PROJECT } from "../stacks/stackNames.ts";
import type { RecordedResource } from "./offlineRuntime.ts";
import { ephemeralNodesOf, placementFindings, podTemplatesOf } from "./placementCheck.ts";

const HELM_RELEASE = "kubernetes:helm.sh/v3:Release";

export function stackUrn(stack: string): string {
    return `urn:pulumi:${stack}::${PROJECT}::pulumi:pulumi:Stack::${PROJECT}-${stack}`;
}

/**
 * The shape of `pulumi preview --json`: one create step per resource, the stack itself first. Resource options sit
 * in `newState` as the engine's ResourceV3 has them (pulumi/pulumi sdk/go/common/apitype/core.go: protect,
 * retainOnDelete, ignoreChanges, replaceOnChanges, customTimeouts in seconds; left out when unset). The engine keeps
 * no deleteBeforeReplace there; the plan adds it beside them so a reviewer sees it.
 */
export function previewJson(stack: string, resources: RecordedResource[]) {
    const root = stackUrn(stack);
    const steps = [
        { op: "create", urn: root, newState: { type: "pulumi:pulumi:Stack", urn: root, custom: false, parent: "", provider: "", inputs: {} } },
        ...resources.map((r) => ({
            op: "create",
            urn: r.urn,
            newState: {
                type: r.type,
                urn: r.urn,
                custom: r.custom,
                parent: r.parent || root,
                provider: r.provider,
                dependencies: r.dependencies,
                inputs: r.inputs,
                ...r.options,
            },
        })),
    ];
    return { steps, changeSummary: { create: steps.length } };
}

/** Every Kubernetes object the stack applies, as multi-document YAML; Helm releases as chart, version and values. */
export function manifestsYaml(resources: RecordedResource[]): string {
    const docs = resources
        .filter((r) => r.custom && r.type.startsWith("kubernetes:") && !r.type.startsWith("pulumi:providers:"))
        .map((r) => {
            if (r.type === HELM_RELEASE) {
                const { name, namespace, chart, version, values } = r.inputs;
                return `# Helm release (${r.name}): ${chart} ${version}\n${stringify({ helmRelease: { name, namespace, chart, version, values } })}`;
            }
            const { apiVersion, kind, metadata, spec, data, ...rest } = r.inputs;
            const patch = r.type.endsWith("Patch") ? ", applied as a server-side apply patch" : "";
            const body = { apiVersion, kind, metadata, ...(spec === undefined ? {} : { spec }), ...(data === undefined ? {} : { data }), ...rest };
            return `# ${r.name}${patch}\n${stringify(body)}`;
        });
    return docs.join("---\n");
}

/**
 * A few lines a reviewer can read at a glance: counts by type, then the settings that matter. Remote components
 * (awsx, eks) count as one resource each: their plugins build what is inside them, which no offline plan sees.
 */
export function summary(stack: string, resources: RecordedResource[]): string {
    const custom = resources.filter((r) => (r.custom || r.remote) && !r.type.startsWith("pulumi:providers:"));
    const counts = new Map<string, number>();
    for (const r of custom) counts.set(r.type, (counts.get(r.type) ?? 0) + 1);
    const lines = [`Offline plan of stack ${stack}: ${custom.length} resources (placeholder AWS values; see docs/architecture.md)`, "", "Resources by type:"];
    for (const [type, n] of [...counts].sort()) lines.push(`  ${String(n).padStart(3)}  ${type}${custom.find((r) => r.type === type)!.remote ? " (component; its contents are not planned offline)" : ""}`);
    lines.push("", "Key settings:");
    for (const r of custom) {
        const line = keySetting(r);
        if (line) lines.push(`  ${line}${keptNote(r)}`);
    }
    lines.push(...placementLines(custom));
    return lines.join("\n");
}

/** The scheduling check over every pod template in the plan: who may run on ephemeral nodes, and when. */
function placementLines(custom: RecordedResource[]): string[] {
    const objects = custom.filter((r) => r.type.startsWith("kubernetes:")).map((r) => r.inputs);
    const templates = podTemplatesOf(objects);
    return ephemeralNodesOf(objects).flatMap((nodes) => {
        const findings = placementFindings(templates, nodes);
        const list = (f: typeof findings) => (f.length ? f.map((x) => x.owner).join(", ") : "none");
        return [
            "",
            `Placement check (NodePool ${nodes.nodePool}, ${templates.length} pod templates in this plan):`,
            `  may run on ready ephemeral nodes: ${list(findings.filter((f) => f.ephemeral))}`,
            `  may run on a new node before its startup taints are removed: ${list(findings.filter((f) => f.launched))}`,
            `  kept off ephemeral nodes: ${list(findings.filter((f) => !f.ephemeral))}`,
        ];
    });
}

function keySetting(r: RecordedResource): string | undefined {
    const i = r.inputs;
    switch (r.type) {
        case HELM_RELEASE: {
            const s = i.values?.settings;
            const detail = s ? `; clusterName=${s.clusterName}, interruptionQueue=${s.interruptionQueue}, featureGates=${JSON.stringify(s.featureGates)}` : "";
            return `helm ${i.name}: ${i.chart} ${i.version} in namespace ${i.namespace}${detail}`;
        }
        case "aws:iam/role:Role":
            return `IAM role ${i.name ?? `${r.name} (auto-named)`}, trusted by ${trustedBy(i.assumeRolePolicy)}`;
        case "aws:iam/policy:Policy":
            return `IAM policy ${i.name}: ${actionCount(i.policy)} actions`;
        case "aws:sqs/queue:Queue":
            return `SQS queue ${i.name}: retention ${i.messageRetentionSeconds}s, SSE ${i.sqsManagedSseEnabled ? "on" : "off"}`;
        case "aws:cloudwatch/eventRule:EventRule":
            return `EventBridge rule ${i.name}: ${i.eventPattern}`;
        case "aws:eks/podIdentityAssociation:PodIdentityAssociation":
            return `Pod Identity: ${i.namespace}/${i.serviceAccount} -> ${i.roleArn}`;
        case "kubernetes:karpenter.sh/v1:NodePool": {
            const t = i.spec.template.spec;
            const types = t.requirements.find((x: any) => x.key === "node.kubernetes.io/instance-type")?.values ?? [];
            const capacity = t.requirements.find((x: any) => x.key === "karpenter.sh/capacity-type")?.values ?? [];
            const d = i.spec.disruption;
            return `NodePool ${i.metadata.name}: ${types.length} approved types (${types.join(" ")}), ${capacity.join("+")}, limits cpu ${i.spec.limits.cpu} memory ${i.spec.limits.memory}, ${d.consolidationPolicy} after ${d.consolidateAfter}, ${d.budgets.length} budgets, expireAfter ${t.expireAfter}`;
        }
        case "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": {
            const s = i.spec;
            return `EC2NodeClass ${i.metadata.name}: role ${s.role}, AMI ${JSON.stringify(s.amiSelectorTerms[0])}, root ${s.blockDeviceMappings[0].ebs.volumeSize} gp3 encrypted, IMDS hop limit ${s.metadataOptions.httpPutResponseHopLimit}`;
        }
        case "awsx:ec2:Vpc": {
            const specs = i.subnetSpecs.map((x: any) => `${x.type.toLowerCase()} ${Object.entries(x.tags ?? {}).map(([k, v]) => `${k}=${v}`).join(",")}`);
            return `VPC ${i.cidrBlock} in ${i.availabilityZoneNames.join(" ")}, NAT ${i.natGateways.strategy}, subnets per zone: ${specs.join("; ")}`;
        }
        case "eks:index:Cluster":
            return `EKS cluster ${i.name}: Kubernetes ${i.version}, ${i.authenticationMode} authentication${i.skipDefaultNodeGroup ? ", no default node group" : ""}, support ${i.upgradePolicy?.supportType}`;
        case "aws:eks/nodeGroup:NodeGroup": {
            const sc = i.scalingConfig;
            return `EKS node group ${i.nodeGroupName}: ${i.capacityType} ${i.instanceTypes.join(" ")}, ${sc.minSize}-${sc.maxSize} nodes (desired ${sc.desiredSize}), ${i.amiType}, ${i.diskSize} GiB, Kubernetes ${i.version}`;
        }
        case "aws:eks/addon:Addon":
            return `EKS add-on ${i.addonName}`;
        case "aws:ec2/tag:Tag":
            return `tag ${i.key}=${i.value} on ${i.resourceId}`;
        case "aws:eks/accessEntry:AccessEntry":
            return `EKS access entry ${i.type} for ${i.principalArn}`;
        case "aws:cloudwatch/metricAlarm:MetricAlarm": {
            const dims = (d: Record<string, string> | undefined) => Object.entries(d ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
            const metric = (m: any, stat: string) => `${stat} of ${m.namespace} ${m.metricName}${dims(m.dimensions) ? `{${dims(m.dimensions)}}` : ""}`;
            const math = i.metricQueries?.find((q: any) => q.returnData);
            const period = i.period ?? i.metricQueries?.find((q: any) => q.metric)?.metric.period;
            const op = i.comparisonOperator === "LessThanThreshold" ? "<" : ">=";
            return (
                `alarm ${i.name}: ${math ? math.expression : metric(i, i.statistic)} ${op} ${i.threshold}` +
                ` in ${i.datapointsToAlarm} of ${i.evaluationPeriods} x ${period}s, missing data ${i.treatMissingData} -> ${(i.alarmActions ?? []).join(", ")}`
            );
        }
        case "aws:sns/topicSubscription:TopicSubscription":
            return `SNS subscription ${i.protocol} ${i.endpoint} to ${i.topic}`;
        case "aws:cloudwatch/logMetricFilter:LogMetricFilter":
            return `log metric filter ${i.name} on ${i.logGroupName}: ${i.pattern} -> ${i.metricTransformation.namespace} ${i.metricTransformation.name}`;
        case "aws:sns/topic:Topic":
            return `SNS topic ${i.name}, encrypted with ${i.kmsMasterKeyId}`;
        case "kubernetes:scheduling.k8s.io/v1:PriorityClass":
            return `PriorityClass ${i.metadata.name}: ${i.value}${i.preemptionPolicy ? `, preemption ${i.preemptionPolicy}` : ""}`;
        case "kubernetes:apps/v1:DeploymentPatch":
        case "kubernetes:apps/v1:DaemonSetPatch":
        case "kubernetes:apps/v1:Deployment": {
            const t = i.spec.template.spec;
            const parts = [
                i.spec.replicas !== undefined ? `${i.spec.replicas} replicas` : undefined,
                t.tolerations ? `tolerates ${t.tolerations.map((x: any) => (x.key ? `${x.key}${x.value ? `=${x.value}` : ""}` : "everything")).join(", ")}` : undefined,
                t.nodeSelector ? `nodeSelector ${Object.entries(t.nodeSelector).map(([k, v]) => `${k}=${v}`).join(",")}` : undefined,
                t.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution ? `requires ${requiredTerms(t.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)}` : undefined,
                t.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ? "prefers ephemeral nodes" : undefined,
                // A patch without a class leaves the workload's; a Deployment without one runs at priority 0.
                t.priorityClassName ? `priority ${t.priorityClassName}` : r.type.endsWith("Patch") ? undefined : "no priority class (0)",
                t.terminationGracePeriodSeconds !== undefined ? `grace ${t.terminationGracePeriodSeconds}s` : undefined,
            ];
            const what = r.type.endsWith("Patch") ? `patch ${i.kind}` : i.kind;
            return `${what} ${i.metadata.namespace}/${i.metadata.name}: ${parts.filter(Boolean).join(", ")}`;
        }
        case "kubernetes:policy/v1:PodDisruptionBudget": {
            const s = i.spec;
            return `PodDisruptionBudget ${i.metadata.namespace}/${i.metadata.name}: ${s.minAvailable !== undefined ? `minAvailable ${s.minAvailable}` : `maxUnavailable ${s.maxUnavailable}`}`;
        }
        case "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding":
            // A binding of a policy on cluster-scoped objects (the node recycler's, on NodeClaims) has no namespace selector.
            return `admission policy ${i.spec.policyName}: ${i.spec.validationActions.join("+")} ${i.spec.matchResources?.namespaceSelector ? `in namespaces ${i.spec.matchResources.namespaceSelector.matchExpressions[0].values.join(", ")}` : "on cluster-scoped objects"}`;
        case "aws:cloudwatch/dashboard:Dashboard":
            return `dashboard ${i.dashboardName}: ${JSON.parse(i.dashboardBody).widgets.length} widgets`;
        default:
            return undefined;
    }
}

/** What outlives a mistaken delete: protected (refused) and retained (left in the cluster) resources. */
function keptNote(r: RecordedResource): string {
    const notes = [r.options.protect ? "protected" : "", r.options.retainOnDelete ? "kept on delete" : ""].filter(Boolean);
    return notes.length ? ` [${notes.join(", ")}]` : "";
}

function trustedBy(policy: string): string {
    const principals = JSON.parse(policy).Statement.map((s: any) => s.Principal.Service ?? s.Principal.Federated);
    return principals.join(", ");
}

function actionCount(policy: string): number {
    return JSON.parse(policy).Statement.flatMap((s: any) => [].concat(s.Action)).length;
}

/** Required node selector terms as "a In x and b DoesNotExist or ...". */
function requiredTerms(terms: { matchExpressions?: { key: string; operator: string; values?: string[] }[] }[]): string {
    return terms.map((t) => (t.matchExpressions ?? []).map((e) => `${e.key} ${e.operator}${e.values ? ` ${e.values.join("|")}` : ""}`).join(" and ")).join(" or ");
}

/** The widest line the plan prints on a terminal; the files keep every line whole. */
export const TERMINAL_WIDTH = 120;

/** `line` cut to `width` columns, with an ellipsis when cut. */
export function fit(line: string, width = TERMINAL_WIDTH): string {
    return line.length <= width ? line : `${line.slice(0, width - 3)}...`;
}

/** Words joined with ", " into lines of at most `width` columns, each starting with `indent`. */
function wrap(words: string[], indent: string, width = TERMINAL_WIDTH): string[] {
    const lines: string[] = [];
    let line = "";
    for (const w of words) {
        const next = line ? `${line}, ${w}` : `${indent}${w}`;
        if (next.length > width && line) {
            lines.push(`${line},`);
            line = `${indent}${w}`;
        } else line = next;
    }
    return line ? [...lines, line] : lines;
}

/** What the plan's summary says, as data: `briefSummary` prints it, `--json` writes it (docs/json-output.md). */
export interface PlanOverview {
    /** Resources planned: custom resources and remote components, not providers. */
    total: number;
    /** Each top-level component (or "(top level)") with its resources by short type name. */
    components: { component: string; total: number; types: Record<string, number> }[];
    nodePool?: {
        name: string;
        instanceTypes: string[];
        capacityTypes: string[];
        zones: string[];
        limits: { cpu: string; memory: string };
        consolidationPolicy: string;
        consolidateAfter: string;
        budgets: number;
        expireAfter: string;
    };
    /** The placement check per NodePool: the pod templates (by owner) that may run on its nodes, and when. */
    placement: { nodePool: string; podTemplates: number; ephemeral: string[]; beforeStartupTaints: string[]; keptOff: string[] }[];
}

export function planOverview(resources: RecordedResource[]): PlanOverview {
    const byUrn = new Map(resources.map((r) => [r.urn, r]));
    const planned = resources.filter((r) => (r.custom || r.remote) && !r.type.startsWith("pulumi:providers:"));
    // Each resource under its top-level component: the one whose parent is the stack.
    const componentOf = (r: RecordedResource): string => {
        let c = r;
        while (c.parent && byUrn.has(c.parent)) c = byUrn.get(c.parent)!;
        return c === r && (r.custom || r.remote) ? "(top level)" : `${c.type.split(":").pop()} ${c.name}`;
    };
    const groups = new Map<string, Map<string, number>>();
    for (const r of planned) {
        const types = groups.get(componentOf(r)) ?? new Map<string, number>();
        const short = r.type.split(":").pop()!;
        types.set(short, (types.get(short) ?? 0) + 1);
        groups.set(componentOf(r), types);
    }
    const components = [...groups].map(([component, types]) => ({
        component,
        total: [...types.values()].reduce((a, b) => a + b, 0),
        types: Object.fromEntries([...types].sort(([a], [b]) => a.localeCompare(b))),
    }));
    const pool = planned.find((r) => r.type === "kubernetes:karpenter.sh/v1:NodePool");
    let nodePool: PlanOverview["nodePool"];
    if (pool) {
        const t = pool.inputs.spec.template.spec;
        const values = (key: string): string[] => t.requirements.find((x: any) => x.key === key)?.values ?? [];
        const d = pool.inputs.spec.disruption;
        nodePool = {
            name: pool.inputs.metadata.name,
            instanceTypes: values("node.kubernetes.io/instance-type"),
            capacityTypes: values("karpenter.sh/capacity-type"),
            zones: values("topology.kubernetes.io/zone"),
            limits: { cpu: String(pool.inputs.spec.limits.cpu), memory: String(pool.inputs.spec.limits.memory) },
            consolidationPolicy: d.consolidationPolicy,
            consolidateAfter: d.consolidateAfter,
            budgets: d.budgets.length,
            expireAfter: t.expireAfter,
        };
    }
    const objects = planned.filter((r) => r.type.startsWith("kubernetes:")).map((r) => r.inputs);
    const templates = podTemplatesOf(objects);
    const placement = ephemeralNodesOf(objects).map((nodes) => {
        const findings = placementFindings(templates, nodes);
        return {
            nodePool: nodes.nodePool,
            podTemplates: templates.length,
            ephemeral: findings.filter((f) => f.ephemeral).map((f) => f.owner),
            beforeStartupTaints: findings.filter((f) => f.launched).map((f) => f.owner),
            keptOff: findings.filter((f) => !f.ephemeral).map((f) => f.owner),
        };
    });
    return { total: planned.length, components, nodePool, placement };
}

/**
 * What `npm run plan` prints: resources per component (the program's components, plus anything at the top level), the
 * NodePool, and who may run on ephemeral nodes, in counts; `summary` is the full listing the files keep.
 */
export function briefSummary(stack: string, resources: RecordedResource[]): string[] {
    const o = planOverview(resources);
    const lines = [fit(`Offline plan of stack ${stack}: ${o.total} resources (placeholder AWS values; see docs/architecture.md)`), "", "Resources by component:"];
    for (const c of o.components) {
        lines.push(fit(`  ${c.component}: ${c.total}`));
        lines.push(...wrap(Object.entries(c.types).map(([t, n]) => `${n} ${t}`), "      ").slice(0, 3));
    }
    const p = o.nodePool;
    if (p) {
        lines.push("", fit(`NodePool ${p.name}: ${p.instanceTypes.length} instance types, ${p.capacityTypes.join("+")} in ${p.zones.join(" ")}`));
        lines.push(fit(`  limits cpu ${p.limits.cpu} memory ${p.limits.memory}; ${p.consolidationPolicy} after ${p.consolidateAfter}; ${p.budgets} budgets; expireAfter ${p.expireAfter}`));
    }
    const kinds = (owners: string[]) => {
        const n = new Map<string, number>();
        for (const x of owners) n.set(x.split(" ")[0], (n.get(x.split(" ")[0]) ?? 0) + 1);
        return [...n].map(([k, c]) => `${c} ${k}${c === 1 ? "" : "s"}`).join(", ") || "none";
    };
    for (const x of o.placement) {
        lines.push(
            "",
            fit(`Placement check (${x.podTemplates} pod templates): ${x.ephemeral.length} may run on ephemeral nodes (${kinds(x.ephemeral)}),`),
            fit(`  ${x.beforeStartupTaints.length} before a new node's startup taints are removed, ${x.keptOff.length} kept off (${kinds(x.keptOff)})`),
        );
    }
    return lines;
}
