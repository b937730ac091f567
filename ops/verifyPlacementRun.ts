// verify-placement's check, once ops/verifyPlacement.ts has read its flags: only burst Celery pods and the node agents
// may run on ephemeral nodes.
// With --context it checks what runs on a live cluster; with --manifests it checks rendered manifests (helm template,
// kustomize build) with the scheduler's filters against nodes modelled from the stack's own NodePool.
// Exit codes: 0 nothing misplaced, 1 findings, 2 usage, 3 could not check (cluster unreachable, credentials refused,
// manifests unreadable or empty), so CI can tell a placement problem from a broken check.
import * as fs from "fs";
import * as path from "path";
import { InputFileError, readInputFile, readStream } from "../cli/inputFile.ts";
import { parseAllDocuments } from "yaml";
import { type NodeModel, type PodScheduling, type Taint, schedulingProblems, tolerates } from "../components/models/scheduling.ts";
import { renderNodePool } from "../components/models/nodePool.ts";
import { nodePoolArgs, placementArgs } from "../stacks/componentArgs.ts";
import type { StackConfig } from "../stacks/config.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { type EphemeralNodes, type KubeObject as Manifest, type PodTemplate, apiServerProblems, ephemeralNodesOf, holdsPodTemplate, patchedScheduling, podTemplatesOf, uncheckedTemplatesOf } from "../plan/placementCheck.ts";
import { type CeleryWorkloadPlacementArgs, type NodeDaemonSet, burstPodTemplate, stablePodTemplate, startupTaintFor, waitsFor } from "../components/models/celeryPlacement.ts";
import { type CommandResult, EXIT, inForm, isResult, outputMode, usage, valueOf } from "../cli/args.ts";
import { loadStack } from "../stacks/validatedConfig.ts";
import { elapsed, jsonText, progress } from "../cli/output.ts";
import type { KubeConfig, KubeObject } from "./kube.ts";
import { type Deadlines, deadlinesOf } from "./deadlines.ts";
import { plural } from "../cli/table.ts";
import { type ChartDifference, chartDifferences, valuesFilePath } from "../plan/gcNotifyCharts.ts";
import { VERIFY_PLACEMENT, type VerifyDeps } from "./verifyPlacement.ts";
import type { CommandLine } from "../cli/args.ts";

/** Who may run on ephemeral nodes, and what the program's patches will do to the charts' pod templates. */
export interface PlacementRules {
    ephemeralKey: string;
    burstLabel: string;
    /** "namespace/name" of the node daemonsets the stack gates (placement.nodeDaemonSets). */
    daemonSets: string[];
    spillToStable: boolean;
    /** The component's arguments: the burst, stable and agent patches are computed from them. */
    placement: CeleryWorkloadPlacementArgs;
    /** placement.ephemeralAllowed: other workloads allowed on ephemeral nodes. */
    allowed: Allowance[];
}

export interface Allowance {
    kind?: string;
    namespace?: string;
    name?: string;
    labels?: Record<string, string>;
    why: string;
}

export function placementRules(cfg: StackConfig): PlacementRules {
    const p = cfg.placement;
    return {
        ephemeralKey: cfg.nodePool.ephemeralKey,
        burstLabel: p.burstPodLabel,
        daemonSets: p.nodeDaemonSets.map((d) => `${d.namespace}/${d.name}`),
        spillToStable: p.burst.spillToStable,
        placement: placementArgs(cfg),
        allowed: p.ephemeralAllowed,
    };
}

/** A daemonset of the stack's placement.nodeDaemonSets: the node agents. */
export function nodeAgent(rules: PlacementRules, namespace: string, name: string): boolean {
    return rules.daemonSets.includes(`${namespace}/${name}`);
}

/** The placement.ephemeralAllowed entry that allows a workload (by kind, namespace and name) or its pods (by labels). */
export function allowanceFor(rules: PlacementRules, w: { kind: string; namespace: string; name: string; labels: Record<string, string> }): string | undefined {
    const i = rules.allowed.findIndex((a) =>
        a.labels ? Object.entries(a.labels).every(([k, v]) => w.labels[k] === v) : a.kind === w.kind && a.namespace === w.namespace && a.name === w.name,
    );
    return i < 0 ? undefined : `allowed by placement.ephemeralAllowed[${i}] (${rules.allowed[i].why})`;
}

/**
 * EKS installs its add-ons (aws-node, kube-proxy, eks-pod-identity-agent...) as DaemonSets in kube-system, on every
 * node. They are not in rendered charts, so only the live check allows kube-system DaemonSets beyond the node agents;
 * in manifests a kube-system DaemonSet is something a chart installs, and needs to be in placement.nodeDaemonSets.
 */
export const EKS_ADD_ON_NAMESPACE = "kube-system";

export interface Verdict {
    status: "ok" | "warn" | "fail" | "unchecked";
    /** The pod or pod template: "Deployment notification-canada-ca/notify-api". */
    subject: string;
    reason: string;
}

const isBurst = (labels: Record<string, string> | undefined, rules: PlacementRules) => labels?.[rules.burstLabel] === "true";

/** Other NodePools (from the input) that would admit a pod template, as "NodePool x (file:line)". */
export interface OtherPool {
    nodes: EphemeralNodes;
    where: string;
}

/** Each pod template against the ephemeral nodes (and any other NodePool): who could land there, and whether it may. */
export function judgeTemplates(templates: PodTemplate[], nodes: EphemeralNodes, rules: PlacementRules, others: OtherPool[] = []): Verdict[] {
    // Without node agents to wait for, the pool has no startup taints and "before the agents" means nothing.
    const gated = nodes.launched.taints.length > nodes.ready.taints.length;
    const a = rules.placement;
    return templates.map((t) => {
        const subject = `${t.owner}${t.hook ? ` (${/test/.test(t.hook) ? "Helm test pod" : `Helm hook ${t.hook}`})` : ""}`;
        const verdict = (status: Verdict["status"], reason: string): Verdict => ({ status, subject, reason });
        // A template the API server refuses never runs: neither kept off ephemeral nodes nor on them.
        const refused = apiServerProblems(t.spec as Record<string, any>, t.templatePath ?? "spec");
        if (refused.length) return verdict("fail", `refused by the API server, so it never runs and its release fails: ${refused.join("; ")}`);
        const allowed = allowanceFor(rules, t);
        if (allowed) {
            // The allowance is this check's; the admission policy still applies in the namespaces it covers.
            const rejected = admissionRejects(t.spec, t, rules);
            return rejected ? verdict(a.admission.mode === "deny" ? "fail" : "warn", `${allowed}, but ${rejected}`) : verdict("ok", allowed);
        }
        const agent = t.kind === "DaemonSet" ? a.nodeDaemonSets.find((d) => d.namespace === t.namespace && d.name === t.name) : undefined;
        if (agent) return judgeAgent(t, agent, nodes, verdict);
        const isApp = t.kind === "Deployment" && t.namespace === a.namespace;
        if (isApp && a.burst.deployments.some((d) => d.name === t.name)) return judgeBurstDeployment(t, nodes, rules, gated, verdict);
        // A stable Deployment is judged as the patch leaves it; the chart's own template only matters if the patch goes.
        const stable = isApp && a.stableDeployments.includes(t.name);
        const spec = stable ? patchedScheduling(t.spec, stablePodTemplate(a).spec) : t.spec;
        const ready = schedulingProblems(spec, nodes.ready);
        const elsewhere = others.filter((o) => schedulingProblems(spec, o.nodes.ready).length === 0).map((o) => o.where);
        const alsoOn = elsewhere.length ? `could run on the nodes of ${elsewhere.join(" and ")}, which this stack does not manage` : "";
        const rejected = admissionRejects(spec, t, rules);
        if (rejected) {
            const keep = stable ? `stable Deployment: the patch sets ${selectorText(a.stableNodeSelector)} but not tolerations, so the chart's stay; ` : "";
            return verdict(a.admission.mode === "deny" ? "fail" : "warn", `${keep}${rejected}`);
        }
        if (isBurst(t.labels, rules)) {
            if (ready.length) return verdict("warn", `burst Celery pod that cannot run on ephemeral nodes: ${ready.join("; ")}`);
            if (gated && schedulingProblems(spec, nodes.launched).length === 0) return verdict("fail", `burst Celery pod that could start before the node agents: it ${whyAllowed(spec, nodes.launched)}`);
            return verdict("ok", `burst Celery pod (${rules.burstLabel}=true)`);
        }
        if (ready.length === 0) {
            const early = gated && schedulingProblems(spec, nodes.launched).length === 0;
            // EKS add-ons are never rendered by a chart, so a kube-system DaemonSet here is not one.
            const addOnHint = t.kind === "DaemonSet" && t.namespace === EKS_ADD_ON_NAMESPACE ? "; a kube-system DaemonSet in manifests is not an EKS add-on: if it is a node agent, add it to placement.nodeDaemonSets" : "";
            const hookHint = t.hook ? "; if it may run there, allow it in placement.ephemeralAllowed" : "";
            return verdict("fail", `could run on ephemeral nodes: it ${whyAllowed(spec, nodes.ready)}${early ? ", even before the node agents are ready (startup taints)" : ""}${addOnHint}${hookHint}${alsoOn ? `; it also ${alsoOn}` : ""}`);
        }
        if (alsoOn) return verdict("fail", alsoOn);
        if (stable) {
            const rendered = schedulingProblems(t.spec, nodes.ready);
            const patch = `the patch sets ${selectorText(a.stableNodeSelector)}, priorityClassName ${a.priorityClasses.high.name} and the node affinity karpenter.sh/nodepool DoesNotExist`;
            return rendered.length
                ? verdict("ok", `stable Deployment: ${patch}; kept off: ${ready.join("; ")}`)
                : verdict("warn", `stable Deployment that only the program's patch keeps off ephemeral nodes: as rendered it ${whyAllowed(t.spec, nodes.ready)}; ${patch}, and a helm upgrade of its release sets the chart's nodeSelector again until the next pulumi up: select the stable nodes in the chart's values`);
        }
        return verdict("ok", `kept off: ${ready.join("; ")}`);
    });
}

type Judge = (status: Verdict["status"], reason: string) => Verdict;

/**
 * What the program's admission policy (admissionPolicySpec) says of a pod without the burst label in the namespaces it
 * covers: it rejects (deny) or warns about a pod that tolerates the ephemeral taint or selects ephemeral nodes.
 */
function admissionRejects(spec: PodScheduling, t: PodTemplate, rules: PlacementRules): string | undefined {
    const a = rules.placement;
    if (isBurst(t.labels, rules) || !(a.admission.namespaces ?? [a.namespace]).includes(t.namespace)) return undefined;
    const key = rules.ephemeralKey;
    const tolerating = (spec.tolerations ?? []).find((x) => (x.key ? x.key === key : x.operator === "Exists"));
    const selects = (e: { key: string; operator: string; values?: string[] }) => e.key === key && (e.operator === "Exists" || (e.operator === "In" && (e.values ?? []).includes("true")));
    const na = spec.affinity?.nodeAffinity;
    const selecting =
        key in (spec.nodeSelector ?? {}) ||
        (na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).some((term) => (term.matchExpressions ?? []).some(selects)) ||
        (na?.preferredDuringSchedulingIgnoredDuringExecution ?? []).some((p) => (p.preference.matchExpressions ?? []).some(selects));
    if (!tolerating && !selecting) return undefined;
    const what = tolerating ? (tolerating.key ? `tolerates the taint ${key}` : "tolerates every taint (operator Exists, no key)") : `selects ephemeral nodes (${key})`;
    return `the admission policy (${a.admission.mode}, namespace ${t.namespace}) would ${a.admission.mode === "deny" ? "reject" : "warn about"} its pods: it ${what} without the label ${rules.burstLabel}=true; the chart must drop that`;
}

/**
 * A node agent as rendered: it should reach ephemeral nodes (and, when nodes wait for it, new ones with startup taints)
 * without the program's patch, because a helm upgrade of its release sets the chart's tolerations again.
 */
function judgeAgent(t: PodTemplate, agent: NodeDaemonSet, nodes: EphemeralNodes, verdict: Judge): Verdict {
    const waits = waitsFor(agent);
    const role = agent.addOn
        ? `node agent of the ${agent.addOn} EKS add-on (not patched: set its tolerations in the add-on's configurationValues)`
        : waits
          ? `node agent; new ephemeral nodes wait for it (startup taint ${startupTaintFor(agent).key})`
          : "node agent, allowed on ephemeral nodes (nodes do not wait for it)";
    const target = waits ? nodes.launched : nodes.ready;
    const problems = schedulingProblems(t.spec, target);
    if (problems.length === 0) return verdict("ok", role);
    if (agent.addOn) return verdict("warn", `${role}; as rendered it cannot run on ephemeral nodes: ${problems.join("; ")}`);
    const cost = waits ? "new ephemeral nodes would stay tainted and burst pods pending" : "it would stop running on ephemeral nodes";
    return verdict(
        "warn",
        `${role}, which reaches ${waits ? "new " : ""}ephemeral nodes only through the program's patch: as rendered it ${problems.join("; ")}. A helm upgrade of its release sets the chart's tolerations again (then ${cost} until the next pulumi up): add a toleration with operator Exists to the chart's values`,
    );
}

/** A configured burst Deployment: judged as the patch leaves it, saying what the patch changes and what the chart must drop. */
function judgeBurstDeployment(t: PodTemplate, nodes: EphemeralNodes, rules: PlacementRules, gated: boolean, verdict: Judge): Verdict {
    const a = rules.placement;
    const patch = burstPodTemplate(a, a.burst.deployments.find((d) => d.name === t.name)!).spec;
    const spec = patchedScheduling(t.spec, patch);
    const ready = schedulingProblems(spec, nodes.ready);
    const rendered = schedulingProblems(t.spec, nodes.ready);
    const changes = [
        `adds the toleration and ${a.burst.spillToStable ? "preferred" : "required"} node affinity for ${rules.ephemeralKey}=true and the label ${rules.burstLabel}=true`,
        ...((t.spec as { priorityClassName?: string }).priorityClassName !== patch.priorityClassName ? [`sets priorityClassName ${patch.priorityClassName}`] : []),
    ];
    // The patch does not set nodeSelector, so the chart's stays and still narrows where the pods may go.
    const leftover = Object.entries(t.spec.nodeSelector ?? {}).map(([k, v]) => `nodeSelector ${k}: ${v}`);
    const drop = leftover.length ? `; the chart must drop ${leftover.join(" and ")} (the patch leaves nodeSelector to the chart, and it still applies on top of the patch's node affinity)` : "";
    const before = rendered.length ? `as rendered it cannot run on ephemeral nodes (${rendered.join("; ")}); ` : "";
    const what = `burst Deployment (placement.burst.deployments): ${before}the program's patch ${changes.join(" and ")}`;
    if (ready.length) return verdict("fail", `${what}, yet it still cannot run on ephemeral nodes: ${ready.join("; ")}${drop}`);
    if (gated && schedulingProblems(spec, nodes.launched).length === 0) return verdict("fail", `${what}, yet it could start before the node agents: it ${whyAllowed(spec, nodes.launched)}`);
    return verdict(leftover.length ? "warn" : "ok", `${what}${drop}`);
}

const selectorText = (sel: Record<string, string>) => `nodeSelector ${Object.entries(sel).map(([k, v]) => `${k}: ${v}`).join(", ")}`;

/** Which tolerations let a pod past a node's taints. */
function whyAllowed(spec: PodScheduling, node: NodeModel): string {
    const reasons = node.taints
        .filter((taint) => taint.effect !== "PreferNoSchedule")
        .map((taint) => {
            const t = (spec.tolerations ?? []).find((x) => tolerates(x, taint))!;
            return t.key ? `tolerates ${taintText(taint)}` : "tolerates every taint (a toleration with operator Exists and no key)";
        });
    return [...new Set(reasons)].join(" and ") || "meets no taint";
}

const taintText = (t: Taint) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;

/** Pods on ephemeral nodes that may not be there, and burst pods that spilled to stable nodes. */
export function judgePods(pods: KubeObject[], ephemeralNodes: Set<string>, rules: PlacementRules): { onEphemeral: (Verdict & { node: string })[]; spilled: (Verdict & { node: string })[] } {
    const subjectOf = (p: KubeObject) => `${p.metadata.namespace}/${p.metadata.name}`;
    const onEphemeral = pods
        .filter((p) => ephemeralNodes.has(p.spec?.nodeName))
        .map((p) => {
            const node: string = p.spec.nodeName;
            const owner = p.metadata.ownerReferences?.[0];
            const subject = subjectOf(p);
            if (isBurst(p.metadata.labels, rules)) return { node, status: "ok" as const, subject, reason: "burst Celery pod" };
            if (owner?.kind === "DaemonSet" && nodeAgent(rules, p.metadata.namespace ?? "", owner.name)) {
                return { node, status: "ok" as const, subject, reason: `daemonset ${p.metadata.namespace}/${owner.name}` };
            }
            if (owner?.kind === "DaemonSet" && p.metadata.namespace === EKS_ADD_ON_NAMESPACE) return { node, status: "ok" as const, subject, reason: "EKS add-on (kube-system DaemonSet)" };
            const allowed = allowanceFor(rules, workloadOf(p));
            if (allowed) return { node, status: "ok" as const, subject, reason: allowed };
            const by = owner ? `${owner.kind} ${owner.name}` : "no owner";
            return { node, status: "fail" as const, subject, reason: `${by}: neither a burst Celery pod (${rules.burstLabel}=true), a node agent, an EKS add-on nor in placement.ephemeralAllowed` };
        });
    const spilled = pods
        .filter((p) => isBurst(p.metadata.labels, rules) && p.spec?.nodeName && !ephemeralNodes.has(p.spec.nodeName))
        .map((p) => ({
            node: p.spec.nodeName as string,
            status: rules.spillToStable ? ("warn" as const) : ("fail" as const),
            subject: subjectOf(p),
            reason: rules.spillToStable ? "burst pod on a stable node (allowed: placement.burst.spillToStable is true)" : "burst pod on a stable node, although placement.burst.spillToStable is false",
        }));
    return { onEphemeral, spilled };
}

/** The workload a running pod belongs to: its owner, a Deployment for a ReplicaSet named "<deployment>-<hash>". */
function workloadOf(p: KubeObject): { kind: string; namespace: string; name: string; labels: Record<string, string> } {
    const owner = p.metadata.ownerReferences?.[0];
    const fromReplicaSet = owner?.kind === "ReplicaSet" ? /^(.+)-[a-z0-9]{5,10}$/.exec(owner.name)?.[1] : undefined;
    const [kind, name] = fromReplicaSet ? ["Deployment", fromReplicaSet] : owner ? [owner.kind, owner.name] : ["Pod", p.metadata.name];
    return { kind, namespace: p.metadata.namespace ?? "default", name, labels: p.metadata.labels ?? {} };
}

/** The check, once ops/verifyPlacement.ts has read the flags. */
export async function runVerifyPlacement(line: CommandLine, deps: VerifyDeps, context: string | undefined, manifests: string | undefined, namespace: string | undefined): Promise<CommandResult> {
    const mode = outputMode(line);
    const cfg = loadStack(valueOf(line, "stack"), VERIFY_PLACEMENT, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return inForm(cfg, mode.json, "verify-placement", valueOf(line, "stack"));
    let result: CommandResult;
    try {
        result = manifests !== undefined ? await verifyManifests(cfg, manifests, namespace, mode, deps.stdin) : await verifyLive(cfg, context!, deps.kubeConfig, mode, deadlinesOf(deps.deadlines));
    } catch (e) {
        // Whatever else went wrong, nothing was judged: never let it pass for a finding.
        result = cannotCheck(`${(e as Error).message ?? e}`);
    }
    return inForm(result, mode.json, "verify-placement", cfg.stack);
}

/**
 * A stream read to its end. Not fs.readFileSync(0): when standard input is a pipe in non-blocking mode (as another
 * process sharing it, such as npm, may leave it) a synchronous read of a pipe with no data yet throws EAGAIN.
 */
export async function readToEnd(stream: NodeJS.ReadableStream, maxBytes = MANIFESTS_MAX_BYTES, idleMs = STDIN_IDLE_MS): Promise<string> {
    return readStream(stream, maxBytes, idleMs, "standard input");
}

/**
 * The most --manifests may hold, all files together: every GC Notify release rendered is 1.3 MB (notification-manifests
 * 609853e2), so this is fifteen times that; a 44 MB file took minutes and gigabytes to parse.
 */
export const MANIFESTS_MAX_BYTES = 20_000_000;
/** How long standard input may send nothing, not ended, before --manifests - gives up on it (a tail -f never ends). */
export const STDIN_IDLE_MS = 120_000;

const cannotCheck = (why: string): CommandResult => ({ exitCode: EXIT.cannotCheck, output: `Could not check: ${why}` });
const messageOf = (e: unknown) => (e as Error)?.message ?? String(e);

/** A parsed object and where it starts ("file:line"), for messages. */
type Located = Manifest & { where: string };

/** Every Kubernetes object in a YAML text, with the warnings Helm and kubectl would not give (duplicate keys: the last wins). */
function parseManifests(text: string, source: string): { objects: Located[]; warnings: string[]; error?: string } {
    // Line starts once, then a binary search per lookup: slicing the text for each document made big inputs quadratic.
    const starts = [0];
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
    const lineOf = (offset: number) => {
        let [lo, hi] = [0, starts.length - 1];
        while (lo < hi) {
            const mid = (lo + hi + 1) >> 1;
            if (starts[mid] <= offset) lo = mid;
            else hi = mid - 1;
        }
        return lo + 1;
    };
    const objects: Located[] = [];
    const warnings: string[] = [];
    for (const doc of parseAllDocuments(text)) {
        // Helm and kubectl decode with sigs.k8s.io/yaml (go-yaml v2), which keeps the last of duplicate keys; GC
        // Notify's notify-admin chart renders one (its ServiceAccount's annotations, notification-manifests 609853e2).
        for (const e of doc.errors.filter((x) => x.code === "DUPLICATE_KEY")) {
            const line = lineOf(e.pos[0]);
            warnings.push(`${source}:${line}: duplicate key "${text.slice(starts[line - 1], starts[line] ?? text.length).trim().replace(/:.*$/, "")}" in one mapping; reading the last one, as Helm and kubectl do`);
        }
        const error = doc.errors.find((x) => x.code !== "DUPLICATE_KEY");
        if (error) return { objects, warnings, error: templateDirective(text, source) ?? `${source}:${lineOf(error.pos[0])} is not valid YAML: ${error.message.split("\n")[0].replace(/:$/, "")}; give rendered manifests, YAML documents as helm template or kustomize build write them` };
        const o = doc.toJS();
        // `name: {{ .Release.Name }}` is valid YAML (a flow map): a template's directive left where a name belongs.
        if (/\{\{/.test(`${o?.metadata?.name ?? ""}${o?.metadata?.namespace ?? ""}`) || (o?.metadata && typeof o.metadata.name === "object" && o.metadata.name !== null)) {
            const directive = templateDirective(text, source);
            if (directive) return { objects, warnings, error: directive };
        }
        const where = `${source}:${lineOf(doc.contents?.range?.[0] ?? doc.range[0])}`;
        // kubectl get -o yaml wraps objects in a List; the API answers a list with a typed one (DeploymentList,
        // PodList), whose items name no kind: each takes the list's kind less "List" and its apiVersion.
        for (const item of listItems(o)) {
            if (item?.kind) objects.push({ ...item, where });
        }
    }
    return { objects, warnings };
}

/**
 * A chart template's directive ({{ ... }}) in text given as rendered manifests, as the one line to print; undefined
 * when there is none. Rendered output may hold "{{" in data (a dashboard, an alert template), so this is asked only
 * where the YAML fails to read or a name is not a name.
 */
function templateDirective(text: string, source: string): string | undefined {
    const lines = text.split("\n");
    const i = lines.findIndex((l) => /\{\{-?\s*[-.$\w("\/]/.test(l) && !/^\s*#/.test(l));
    if (i < 0) return undefined;
    return `${source}:${i + 1} holds a Helm template directive (${lines[i].trim().slice(0, 60)}), not rendered YAML: it is a chart's template; give the output of helm template (helm template <release> <chart> | npm run verify-placement -- --stack <stack> --manifests -)`;
}

/** The objects of a document: the items of a List or a typed list (any kind ending in List, with items), or itself. */
export function listItems(o: any): any[] {
    if (typeof o?.kind !== "string" || !/List$/.test(o.kind) || !Array.isArray(o.items)) return [o];
    const kind = o.kind === "List" ? undefined : o.kind.slice(0, -"List".length);
    return o.items.map((item: any) => (item && typeof item === "object" && !Array.isArray(item) && !item.kind && kind ? { apiVersion: o.apiVersion, kind, ...item } : item));
}

/**
 * Objects that name no namespace (helm template without -n; charts such as aws-cloudwatch and aws-xray render none):
 * a DaemonSet named like exactly one placement.nodeDaemonSets entry goes to that entry's namespace, every other one to
 * --namespace, default "default", as `kubectl apply -n` would. Only objects with a pod template are placed and told.
 */
function placeNamespaces(objects: Located[], rules: PlacementRules, namespace: string | undefined): string[] {
    const agents = new Map<string, string[]>();
    for (const d of rules.placement.nodeDaemonSets) agents.set(d.name, [...(agents.get(d.name) ?? []), d.namespace]);
    const placed = new Map<string, string[]>();
    for (const o of objects) {
        if (o.metadata?.namespace || !holdsPodTemplate(o)) continue;
        const listed = o.kind === "DaemonSet" ? agents.get(o.metadata?.name ?? "") : undefined;
        const ns = listed?.length === 1 ? listed[0] : namespace ?? "default";
        o.metadata = { ...o.metadata, namespace: ns };
        const why = listed?.length === 1 ? `${ns} (named like a placement.nodeDaemonSets entry)` : `${ns} (${namespace ? "--namespace" : "the default without --namespace"})`;
        placed.set(why, [...(placed.get(why) ?? []), `${o.kind} ${o.metadata.name}`]);
    }
    return [...placed].map(([why, what]) => `Note: ${plural(what.length, "object")} named no namespace, put in ${why}: ${what.join(", ")}`);
}

/** The input's NodePools: a pool named like the stack's must be the stack's; any other admits what it admits. */
function judgePools(pools: Located[], stackPool: Manifest, nodes: EphemeralNodes): { verdicts: Verdict[]; others: OtherPool[] } {
    const verdicts: Verdict[] = [];
    const others: OtherPool[] = [];
    for (const pool of pools) {
        const [model] = ephemeralNodesOf([pool]);
        const where = `NodePool ${model.nodePool} (${pool.where})`;
        others.push({ nodes: model, where });
        const taints = model.ready.taints.length ? model.ready.taints.map(taintText).join(", ") : "no taint";
        if (model.nodePool !== nodes.nodePool) {
            verdicts.push({ status: "warn", subject: where, reason: `another NodePool beside the stack's, with ${taints}: pods it would admit are findings below` });
            continue;
        }
        const differences = poolDifferences(pool, stackPool);
        if (differences.length) {
            verdicts.push({
                status: "fail",
                subject: where,
                reason: `has the stack's NodePool name but differs from it (${differences.join("; ")}): whatever renders it and this stack would overwrite each other's NodePool; remove it (GC Notify: the karpenter-nodepool release) before pulumi up`,
            });
        }
    }
    return { verdicts, others };
}

/** How a NodePool differs from the stack's in what decides placement: taints, startup taints, requirements, labels. */
function poolDifferences(pool: Manifest, stack: Manifest): string[] {
    const t = (p: Manifest) => p.spec?.template ?? {};
    const taints = (list: unknown) => (Array.isArray(list) ? list.map(taintText).sort().join(", ") : "") || "none";
    const reqs = (p: Manifest) => (Array.isArray(t(p).spec?.requirements) ? t(p).spec.requirements : []) as { key: string; operator: string; values?: string[] }[];
    const reqText = (p: Manifest) => new Map(reqs(p).map((r) => [r.key, `${r.operator} ${[...(r.values ?? [])].sort().join(",")}`]));
    const out: string[] = [];
    if (taints(t(pool).spec?.taints) !== taints(t(stack).spec?.taints)) out.push(`taints: ${taints(t(pool).spec?.taints)}, the stack's: ${taints(t(stack).spec?.taints)}`);
    const count = (p: Manifest) => (Array.isArray(t(p).spec?.startupTaints) ? t(p).spec.startupTaints.length : 0);
    if (taints(t(pool).spec?.startupTaints) !== taints(t(stack).spec?.startupTaints)) out.push(`startup taints: ${count(pool)}, the stack's: ${count(stack)}, not the same keys`);
    const [a, b] = [reqText(pool), reqText(stack)];
    const keys = [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
    if (keys.length) out.push(`requirements on ${keys.join(", ")}`);
    if (JSON.stringify(t(pool).metadata?.labels ?? {}) !== JSON.stringify(t(stack).metadata?.labels ?? {})) out.push("node labels");
    return out;
}

async function verifyManifests(cfg: StackConfig, target: string, namespace: string | undefined, mode: OutputMode, stdin = () => readToEnd(process.stdin)): Promise<CommandResult> {
    if (target !== "-" && !fs.existsSync(target)) return usage(`--manifests: no such file or directory "${target}"`, VERIFY_PLACEMENT);
    const source = target === "-" ? "standard input" : target;
    let files: string[];
    try {
        const walked = target === "-" ? { files: ["-"] } : walkManifests(target);
        if (walked.chart) return cannotCheck(`--manifests ${target}: is a Helm chart (${walked.chart}), not rendered manifests: its templates hold {{ }} directives only helm resolves; give the output of helm template (helm template <release> ${target} | npm run verify-placement -- --stack ${cfg.stack} --manifests -)`);
        files = walked.files;
    } catch (e) {
        return cannotCheck(`could not read ${source}: ${messageOf(e)}`);
    }
    const objects: Located[] = [];
    const warnings: string[] = [];
    let read = 0;
    for (const file of files) {
        let text: string;
        try {
            // Regular files only, within what is left of the cap: a FIFO, /dev/zero or a huge file is refused, not read.
            text = file === "-" ? await stdin() : readInputFile(file, MANIFESTS_MAX_BYTES - read, `--manifests ${file}`, "rendered manifests");
        } catch (e) {
            if (e instanceof InputFileError) return cannotCheck(file === "-" ? `--manifests -: ${e.message}` : e.message);
            return cannotCheck(`could not read ${file === "-" ? source : file}: ${messageOf(e)}`);
        }
        read += Buffer.byteLength(text);
        const parsed = parseManifests(text, file === "-" ? source : file);
        if (parsed.error) return cannotCheck(parsed.error);
        objects.push(...parsed.objects);
        warnings.push(...parsed.warnings.map((w) => `Warning: ${w}`));
    }
    // Empty input is what a failed `helm template ... |` leaves: it must not read as "nothing misplaced".
    if (objects.length === 0) return cannotCheck(`no Kubernetes objects in ${source}${target === "-" ? "" : ` (${plural(files.length, "YAML file")})`}; give the output of helm template or kustomize build`);
    const rules = placementRules(cfg);
    const notes = placeNamespaces(objects, rules, namespace);
    const { nodePool } = renderNodePool(nodePoolArgs(cfg, "node-role"), "node-role");
    const [nodes] = ephemeralNodesOf([nodePool]);
    const pools = judgePools(objects.filter((o) => `${o.apiVersion}:${o.kind}` === "karpenter.sh/v1:NodePool"), nodePool, nodes);
    const templates = podTemplatesOf(objects);
    const unchecked: Verdict[] = uncheckedTemplatesOf(objects).map((u) => ({ status: "unchecked", subject: u.owner, reason: `not checked: ${u.why}` }));
    const differences = chartDifferences(objects, rules.placement);
    // Nothing to judge is no verdict: "nothing is misplaced" would be read of a file that holds no workload at all.
    if (templates.length + unchecked.length + pools.verdicts.length + differences.length === 0) {
        return cannotCheck(`no workload found in ${source}: ${plural(objects.length, "object")}, none a Pod, a workload with a pod template, a NodePool or a chart budget; give the output of helm template or kustomize build`);
    }
    const verdicts = [...pools.verdicts, ...judgeTemplates(templates, nodes, rules, pools.others), ...unchecked];
    const failed = [...verdicts.filter((v) => v.status === "fail"), ...differences.filter((d) => d.blocksCapacity || d.killsTasks)];
    const exitCode = failed.length ? EXIT.findings : unchecked.length ? EXIT.cannotCheck : EXIT.ok;
    const verdict = failed.length
        ? `${plural(failed.length, "finding")}: pod templates that could run on ephemeral nodes (or another NodePool's) but must not or that the API server refuses, a NodePool that clashes with the stack's, or a chart value that blocks burst capacity`
        : unchecked.length
          ? `${plural(unchecked.length, "pod template")} not checked (above): the run cannot say nothing is misplaced`
          : "No pod template other than burst Celery pods and the node agents can run on ephemeral nodes";
        if (mode.json) {
        const body = {
            stack: cfg.stack,
            exitCode,
            mode: "manifests",
            source: target === "-" ? "standard input" : target,
            files: files.length,
            objects: objects.length,
            podTemplates: templates.length + unchecked.length,
            nodePool: nodes.nodePool,
            warnings: warnings.map((w) => w.replace(/^Warning: /, "")),
            notes: notes.map((n) => n.replace(/^Note: /, "")),
            summary: countStatuses(verdicts),
            verdicts: verdicts.filter((v) => !mode.findingsOnly || v.status !== "ok").map((v) => ({ status: v.status, subject: v.subject, reason: v.reason })),
            chartFields: differences.map((d) => ({ status: d.blocksCapacity || d.killsTasks ? "fail" : "warn", object: d.object, field: d.field, chart: d.chart ?? null, stack: d.stack ?? null, release: d.release ?? null, valuesKey: d.valuesKey ?? null })),
            verdict,
        };
        return { exitCode, format: "json", output: jsonText("verify-placement", body) };
    }
    const shown = verdicts.filter((v) => !mode.findingsOnly || v.status !== "ok");
    const lines = [
        `Manifests ${target === "-" ? "from standard input" : target} (${plural(files.length, "file")}, ${plural(objects.length, "object")}, ${plural(templates.length + unchecked.length, "pod template")}) against the ephemeral nodes of NodePool ${nodes.nodePool}, stack ${cfg.stack}${mode.findingsOnly ? `: findings only (${plural(verdicts.length - shown.length, "OK line")} left out)` : ""}`,
        ...warnings,
        ...(mode.findingsOnly ? [] : notes),
        ...shown.map((v) => `  ${v.status === "unchecked" ? "NOT CHECKED" : v.status.toUpperCase().padEnd(4)}  ${v.subject}: ${v.reason}`),
        ...differenceLines(differences, cfg.stack),
        verdict,
    ];
    return { exitCode, output: lines.join("\n") };
}

/** How many verdicts have each status (the JSON report's summary). */
function countStatuses(verdicts: { status: Verdict["status"] }[]): Record<"ok" | "warn" | "fail" | "unchecked", number> {
    const n = { ok: 0, warn: 0, fail: 0, unchecked: 0 };
    for (const v of verdicts) n[v.status]++;
    return n;
}

/** The report's form: --json, --findings. */
interface OutputMode {
    json: boolean;
    findingsOnly: boolean;
}

/**
 * The fields where the charts and the stack's patches differ: Helm puts the chart's value back at each release of
 * it, so each has two owners until the release gets the plan's values file for it.
 */
export function differenceLines(differences: ChartDifference[], stack: string): string[] {
    if (differences.length === 0) return [];
    const fix = (d: ChartDifference) =>
        !d.valuesKey
            ? "no values key sets it: change the chart's template or the stack"
            : `set ${d.valuesKey} in GC Notify's ${d.release} release (plan-out/${stack}/${valuesFilePath(d.release!)})${d.templateChange ? `, once its chart renders the key (the template change in plan-out/${stack}/${d.templateChange})` : ""}`;
    const why = (d: ChartDifference) =>
        d.blocksCapacity
            ? "; after a release new ephemeral nodes keep a startup taint this agent does not tolerate, and no burst pod can start"
            : d.killsTasks
              ? "; after a release, a node's departure kills a running Celery task (GC Notify acknowledges tasks as they start, so it is lost)"
              : "";
    return [
        `Fields the charts set otherwise than the stack's patches (${plural(differences.length, "field")}; each chart release puts its value back):`,
        ...differences.map(
            (d) =>
                `  ${d.blocksCapacity || d.killsTasks ? "FAIL" : "WARN"}  ${d.object} ${d.field}: chart ${brief(d.chart)}, stack ${brief(d.stack)}${why(d)}: ${fix(d)}`,
        ),
    ];
}

/** A value in a few words: itself when short, else what it is and how many. */
function brief(v: unknown): string {
    const text = JSON.stringify(v) ?? "not set";
    if (text.length <= 60) return text;
    return Array.isArray(v) ? `a list of ${v.length}` : `a map of ${Object.keys(v as object).length} keys`;
}

/**
 * The file itself, or every .yaml and .yml file below the directory, in a stable order. Each real directory is walked
 * once and each real file read once (by realpath): a symbolic link back up the tree (a loop) or a second link to one
 * file would otherwise read the same objects many times over.
 */
export function manifestFiles(target: string): string[] {
    return walkManifests(target).files;
}

/** manifestFiles, and the first Chart.yaml met: a Helm chart's folder, whose templates are not rendered manifests. */
function walkManifests(target: string): { files: string[]; chart?: string } {
    if (!fs.statSync(target).isDirectory()) return { files: [target] };
    let chart: string | undefined;
    const dirs = new Set<string>();
    const files = new Set<string>();
    const found: string[] = [];
    const walk = (dir: string, relative: string) => {
        const real = fs.realpathSync(dir);
        if (dirs.has(real)) return;
        dirs.add(real);
        for (const entry of fs.readdirSync(dir).sort()) {
            const full = path.join(dir, entry);
            let stat: fs.Stats;
            try {
                stat = fs.statSync(full);
            } catch {
                continue; // A dangling link or a loop of links: nothing to read.
            }
            if (stat.isDirectory()) walk(full, path.join(relative, entry));
            else if (entry === "Chart.yaml") chart ??= full;
            else if (/\.ya?ml$/.test(entry)) {
                const realFile = fs.realpathSync(full);
                if (files.has(realFile)) continue;
                files.add(realFile);
                found.push(path.join(relative, entry));
            }
        }
    };
    walk(target, "");
    return { files: found.sort().map((f) => path.join(target, f)), chart };
}

async function verifyLive(cfg: StackConfig, context: string, kubeConfig: (() => KubeConfig) | undefined, mode: OutputMode, d: Deadlines): Promise<CommandResult> {
    // The Kubernetes client only for a cluster: a file needs none.
    const { apiError, clusterOf, useContext } = await import("./kube.ts");
    let kc: KubeConfig;
    try {
        kc = (kubeConfig ?? (await import("./kubeconfigFile.ts")).checkedKubeConfig)();
    } catch (e) {
        return cannotCheck(`could not load the kubeconfig: ${messageOf(e)}`);
    }
    const refused = useContext(kc, context, cfg.cluster);
    if (refused) return usage(refused, VERIFY_PLACEMENT);
    const rules = placementRules(cfg);
    let nodes: KubeObject[], pods: KubeObject[];
    const started = Date.now();
    progress(`verify-placement: listing the ephemeral nodes and every pod of ${cfg.cluster.name} (context ${context})`);
    try {
        const cluster = clusterOf(kc, d);
        [nodes, pods] = await Promise.all([cluster.listNodes(`${rules.ephemeralKey}=true`), cluster.listPods()]);
        progress(`verify-placement: listed ${plural(nodes.length, "node")} and ${plural(pods.length, "pod")} in ${elapsed(started)}`);
    } catch (e) {
        return cannotCheck(`could not list the nodes and pods of ${cfg.cluster.name} (context ${context}): ${apiError(e)}`);
    }
    const { onEphemeral, spilled } = judgePods(pods, new Set(nodes.map((n) => n.metadata.name)), rules);
    const failed = [...onEphemeral, ...spilled].filter((v) => v.status === "fail");
    const misplaced = onEphemeral.filter((v) => v.status === "fail").length;
    const exitCode = failed.length ? EXIT.findings : EXIT.ok;
    const verdict = failed.length
        ? `FAILED: ${plural(misplaced, "pod")} on ephemeral nodes that must not be there, ${plural(failed.length - misplaced, "burst pod")} on stable nodes`
        : `OK: only burst Celery pods and the node agents run on ephemeral nodes${spilled.length ? `; ${plural(spilled.length, "burst pod")} spilled to stable nodes` : ""}`;
    const shows = (v: Verdict) => !mode.findingsOnly || v.status !== "ok";
    if (mode.json) {
        const body = {
            stack: cfg.stack,
            exitCode,
            mode: "live",
            context,
            cluster: cfg.cluster.name,
            ephemeralNodes: nodes.map((n) => ({ name: n.metadata.name, instanceType: n.metadata.labels?.["node.kubernetes.io/instance-type"] ?? null, capacityType: n.metadata.labels?.["karpenter.sh/capacity-type"] ?? null })),
            summary: countStatuses([...onEphemeral, ...spilled]),
            verdicts: [...onEphemeral.map((v) => ({ ...v, on: "ephemeral" })), ...spilled.map((v) => ({ ...v, on: "stable" }))]
                .filter(shows)
                .map((v) => ({ status: v.status, subject: v.subject, reason: v.reason, node: v.node, on: v.on })),
            verdict,
        };
        return { exitCode, format: "json", output: jsonText("verify-placement", body) };
    }
    const lines = [`Pods on the ephemeral nodes of ${cfg.cluster.name} (context ${context}): ${plural(nodes.length, "node")}, ${plural(onEphemeral.length, "pod")}${mode.findingsOnly ? ": findings only" : ""}`];
    for (const node of nodes) {
        const l = node.metadata.labels ?? {};
        const here = onEphemeral.filter((p) => p.node === node.metadata.name && shows(p));
        if (mode.findingsOnly && here.length === 0) continue;
        lines.push(`${node.metadata.name} (${l["node.kubernetes.io/instance-type"] ?? "?"}, ${l["karpenter.sh/capacity-type"] ?? "?"}):`);
        for (const v of here) lines.push(`  ${v.status.toUpperCase().padEnd(4)}  ${v.subject}: ${v.reason}`);
    }
    const spilledShown = spilled.filter(shows);
    if (spilledShown.length) {
        lines.push(`Burst pods on stable nodes (${spilled.length}):`);
        for (const v of spilledShown) lines.push(`  ${v.status.toUpperCase().padEnd(4)}  ${v.subject} on ${v.node}: ${v.reason}`);
    }
    lines.push(verdict);
    return { exitCode, output: lines.join("\n") };
}

