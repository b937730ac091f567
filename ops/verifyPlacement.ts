// `npm run verify-placement`: only burst Celery pods and the node agents may run on ephemeral nodes.
// With --context it checks what runs on a live cluster; with --manifests it checks rendered manifests (helm template,
// kustomize build) with the scheduler's filters against nodes modelled from the stack's own NodePool.
// Exit codes: 0 nothing misplaced, 1 findings, 2 usage, 3 could not check (cluster unreachable, credentials refused,
// manifests unreadable or empty), so CI can tell a placement problem from a broken check.
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { NodeModel, PodScheduling, Taint, tolerates } from "../components/scheduling";
import { renderNodePool } from "../components/ephemeralNodePool";
import { nodePoolArgs } from "../stacks/componentArgs";
import { StackConfig } from "../stacks/config";
import { PROJECT_DIR } from "../plan/offlineRuntime";
import { EphemeralNodes, KubeObject as Manifest, PodTemplate, ephemeralNodesOf, placementFindings, podTemplatesOf } from "../plan/placementCheck";
import { Command, CommandResult, EXIT, isResult, loadStack, parseCommandLine, runMain, usage, valueOf } from "./args";
import { KubeConfig, KubeObject, clusterOf, loadKubeConfig, useContext } from "./kube";
import { plural } from "./table";

export const VERIFY_PLACEMENT: Command = {
    usage: [
        "npm run verify-placement -- --stack <name> --context <kubecontext>",
        "npm run verify-placement -- --stack <name> --manifests <file, directory or -> [--namespace <name>]",
    ],
    summary: [
        "Checks that only burst Celery pods and the node agents run on (or could run on) ephemeral nodes: on a live cluster",
        "(--context), or in rendered manifests such as helm template output (--manifests), judged with the scheduler's",
        "filters against nodes modelled from the stack's own NodePool.",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose NodePool and placement rules to check against", default: "required" },
        context: { value: "<kubecontext>", meaning: "check the pods running on this kubeconfig context's cluster (the stack's cluster only)" },
        manifests: { value: "<file, directory or ->", meaning: "check rendered YAML manifests: a file, every .yaml/.yml under a directory, or - for standard input" },
        namespace: { value: "<name>", meaning: "with --manifests: the namespace of objects that name none", default: "default" },
    },
    exits: {
        0: "nothing is (or could be) misplaced",
        1: "findings: a pod that may not be on ephemeral nodes is or could be there, or a burst pod runs on stable nodes; or the stack's config is refused",
        3: "could not check: cluster unreachable, credentials refused, kubeconfig or manifests unreadable, no manifests",
    },
    examples: ["npm run verify-placement -- --stack staging --context staging", "helm template notify-celery ./charts/notify-celery | npm run verify-placement -- --stack staging --manifests -"],
};

/** Who may run on ephemeral nodes. */
export interface PlacementRules {
    ephemeralKey: string;
    burstLabel: string;
    /** "namespace/name" of the node daemonsets the stack gates (placement.nodeDaemonSets). */
    daemonSets: string[];
    spillToStable: boolean;
}

export function placementRules(cfg: StackConfig): PlacementRules {
    const p = cfg.placement;
    return {
        ephemeralKey: cfg.nodePool.ephemeralKey,
        burstLabel: p.burstPodLabel,
        daemonSets: p.nodeDaemonSets.map((d) => `${d.namespace}/${d.name}`),
        spillToStable: p.burst.spillToStable,
    };
}

/** A daemonset of the stack's placement.nodeDaemonSets: the node agents. */
export function nodeAgent(rules: PlacementRules, namespace: string, name: string): boolean {
    return rules.daemonSets.includes(`${namespace}/${name}`);
}

/**
 * EKS installs its add-ons (aws-node, kube-proxy, eks-pod-identity-agent...) as DaemonSets in kube-system, on every
 * node. They are not in rendered charts, so only the live check allows kube-system DaemonSets beyond the node agents;
 * in manifests a kube-system DaemonSet is something a chart installs, and needs to be in placement.nodeDaemonSets.
 */
export const EKS_ADD_ON_NAMESPACE = "kube-system";

export interface Verdict {
    status: "ok" | "warn" | "fail";
    /** The pod or pod template: "Deployment notification-canada-ca/notify-api". */
    subject: string;
    reason: string;
}

const isBurst = (labels: Record<string, string> | undefined, rules: PlacementRules) => labels?.[rules.burstLabel] === "true";

/** Each pod template against the ephemeral nodes: who could land there, and whether it may. */
export function judgeTemplates(templates: PodTemplate[], nodes: EphemeralNodes, rules: PlacementRules): Verdict[] {
    const findings = placementFindings(templates, nodes);
    // Without node agents to wait for, the pool has no startup taints and "before the agents" means nothing.
    const gated = nodes.launched.taints.length > nodes.ready.taints.length;
    return templates.map((t, i) => {
        const f = findings[i];
        const early = gated && f.launched;
        const subject = t.owner;
        if (t.kind === "DaemonSet" && nodeAgent(rules, t.namespace, t.name)) return { status: "ok", subject, reason: "allowed daemonset (node agent)" };
        if (!isBurst(t.labels, rules)) {
            // EKS add-ons are never rendered by a chart, so a kube-system DaemonSet here is not one.
            const addOnHint = t.kind === "DaemonSet" && t.namespace === EKS_ADD_ON_NAMESPACE ? "; a kube-system DaemonSet in manifests is not an EKS add-on: if it is a node agent, add it to placement.nodeDaemonSets" : "";
            return f.ephemeral
                ? { status: "fail", subject, reason: `could run on ephemeral nodes: it ${whyAllowed(t.spec, nodes.ready)}${early ? ", even before the node agents are ready (startup taints)" : ""}${addOnHint}` }
                : { status: "ok", subject, reason: `kept off: ${f.reasons.join("; ")}` };
        }
        if (!f.ephemeral) return { status: "warn", subject, reason: `burst Celery pod that cannot run on ephemeral nodes: ${f.reasons.join("; ")}` };
        if (early) return { status: "fail", subject, reason: `burst Celery pod that could start before the node agents: it ${whyAllowed(t.spec, nodes.launched)}` };
        return { status: "ok", subject, reason: `burst Celery pod (${rules.burstLabel}=true)` };
    });
}

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
            const by = owner ? `${owner.kind} ${owner.name}` : "no owner";
            return { node, status: "fail" as const, subject, reason: `${by}: neither a burst Celery pod (${rules.burstLabel}=true), a node agent nor an EKS add-on` };
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

export interface VerifyDeps {
    /** The kubeconfig for --context; the default reads ~/.kube/config or $KUBECONFIG. */
    kubeConfig?: () => KubeConfig;
    /** Where the stack files are. */
    dir?: string;
    /** What `--manifests -` reads (standard input by default). */
    stdin?: () => string;
}

export async function verifyPlacement(argv: string[], deps: VerifyDeps = {}): Promise<CommandResult> {
    const line = parseCommandLine(argv, VERIFY_PLACEMENT);
    if (isResult(line)) return line;
    const [context, manifests, namespace] = [valueOf(line, "context"), valueOf(line, "manifests"), valueOf(line, "namespace")];
    if ((context === undefined) === (manifests === undefined)) return usage("give exactly one of --context (a live cluster) and --manifests (rendered files)", VERIFY_PLACEMENT);
    if (namespace !== undefined && manifests === undefined) return usage("--namespace only applies to --manifests", VERIFY_PLACEMENT);
    // A namespace is a DNS-1123 label (Kubernetes' apimachinery validation): lowercase letters, digits and -, at most 63.
    if (namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
        return usage(`--namespace must be a Kubernetes namespace name (lowercase letters, digits and -, at most 63 characters) (got "${namespace}")`, VERIFY_PLACEMENT);
    }
    const cfg = loadStack(valueOf(line, "stack"), VERIFY_PLACEMENT, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return cfg;
    try {
        return manifests !== undefined ? await verifyManifests(cfg, manifests, namespace, deps.stdin) : await verifyLive(cfg, context!, deps.kubeConfig ?? loadKubeConfig);
    } catch (e) {
        // Whatever else went wrong, nothing was judged: never let it pass for a finding.
        return cannotCheck(`${(e as Error).message ?? e}`);
    }
}

const cannotCheck = (why: string): CommandResult => ({ exitCode: EXIT.cannotCheck, output: `Could not check: ${why}` });
const messageOf = (e: unknown) => (e as Error)?.message ?? String(e);

async function verifyManifests(cfg: StackConfig, target: string, namespace = "default", stdin = () => fs.readFileSync(0, "utf8")): Promise<CommandResult> {
    if (target !== "-" && !fs.existsSync(target)) return usage(`--manifests: no such file or directory "${target}"`, VERIFY_PLACEMENT);
    const source = target === "-" ? "standard input" : target;
    let files: string[];
    try {
        files = target === "-" ? ["-"] : manifestFiles(target);
    } catch (e) {
        return cannotCheck(`could not read ${source}: ${messageOf(e)}`);
    }
    const objects: Manifest[] = [];
    for (const file of files) {
        let text: string;
        try {
            text = file === "-" ? stdin() : fs.readFileSync(file, "utf8");
        } catch (e) {
            return cannotCheck(`could not read ${file === "-" ? source : file}: ${messageOf(e)}`);
        }
        for (const doc of parseAllDocuments(text)) {
            if (doc.errors.length) return cannotCheck(`${file === "-" ? source : file} is not valid YAML: ${doc.errors[0].message}`);
            const o = doc.toJS();
            // kubectl get -o yaml wraps objects in a List.
            for (const item of o?.kind === "List" ? o.items ?? [] : [o]) {
                if (item?.kind) objects.push({ ...item, metadata: { namespace, ...item.metadata } });
            }
        }
    }
    // Empty input is what a failed `helm template ... |` leaves: it must not read as "nothing misplaced".
    if (objects.length === 0) return cannotCheck(`no Kubernetes objects in ${source}${target === "-" ? "" : ` (${plural(files.length, "YAML file")})`}; give the output of helm template or kustomize build`);
    const { nodePool } = renderNodePool(nodePoolArgs(cfg, "node-role"), "node-role");
    const [nodes] = ephemeralNodesOf([nodePool]);
    const verdicts = judgeTemplates(podTemplatesOf(objects), nodes, placementRules(cfg));
    const failed = verdicts.filter((v) => v.status === "fail");
    const lines = [
        `Manifests ${target === "-" ? "from standard input" : target} (${plural(files.length, "file")}, ${plural(objects.length, "object")}, ${plural(verdicts.length, "pod template")}) against the ephemeral nodes of NodePool ${nodes.nodePool}, stack ${cfg.stack}`,
        ...verdicts.map((v) => `  ${v.status.toUpperCase().padEnd(4)}  ${v.subject}: ${v.reason}`),
        failed.length
            ? `${plural(failed.length, "pod template")} could run on ephemeral nodes but must not`
            : "No pod template other than burst Celery pods and the node agents can run on ephemeral nodes",
    ];
    return { exitCode: failed.length ? EXIT.findings : EXIT.ok, output: lines.join("\n") };
}

/** The file itself, or every .yaml and .yml file below the directory, in a stable order. */
function manifestFiles(target: string): string[] {
    if (!fs.statSync(target).isDirectory()) return [target];
    return fs
        .readdirSync(target, { recursive: true, encoding: "utf8" })
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => path.join(target, f));
}

async function verifyLive(cfg: StackConfig, context: string, kubeConfig: () => KubeConfig): Promise<CommandResult> {
    let kc: KubeConfig;
    try {
        kc = kubeConfig();
    } catch (e) {
        return cannotCheck(`could not load the kubeconfig: ${messageOf(e)}`);
    }
    const refused = useContext(kc, context, cfg.cluster.name);
    if (refused) return usage(refused, VERIFY_PLACEMENT);
    const rules = placementRules(cfg);
    let nodes: KubeObject[], pods: KubeObject[];
    try {
        const cluster = clusterOf(kc);
        [nodes, pods] = await Promise.all([cluster.listNodes(`${rules.ephemeralKey}=true`), cluster.listPods()]);
    } catch (e) {
        return cannotCheck(`could not list the nodes and pods of ${cfg.cluster.name} (context ${context}): ${apiError(e)}`);
    }
    const { onEphemeral, spilled } = judgePods(pods, new Set(nodes.map((n) => n.metadata.name)), rules);
    const lines = [`Pods on the ephemeral nodes of ${cfg.cluster.name} (context ${context}): ${plural(nodes.length, "node")}, ${plural(onEphemeral.length, "pod")}`];
    for (const node of nodes) {
        const l = node.metadata.labels ?? {};
        lines.push(`${node.metadata.name} (${l["node.kubernetes.io/instance-type"] ?? "?"}, ${l["karpenter.sh/capacity-type"] ?? "?"}):`);
        for (const v of onEphemeral.filter((p) => p.node === node.metadata.name)) lines.push(`  ${v.status.toUpperCase().padEnd(4)}  ${v.subject}: ${v.reason}`);
    }
    if (spilled.length) {
        lines.push(`Burst pods on stable nodes (${spilled.length}):`);
        for (const v of spilled) lines.push(`  ${v.status.toUpperCase().padEnd(4)}  ${v.subject} on ${v.node}: ${v.reason}`);
    }
    const failed = [...onEphemeral, ...spilled].filter((v) => v.status === "fail");
    const misplaced = onEphemeral.filter((v) => v.status === "fail").length;
    lines.push(
        failed.length
            ? `FAILED: ${plural(misplaced, "pod")} on ephemeral nodes that must not be there, ${plural(failed.length - misplaced, "burst pod")} on stable nodes`
            : `OK: only burst Celery pods and the node agents run on ephemeral nodes${spilled.length ? `; ${plural(spilled.length, "burst pod")} spilled to stable nodes` : ""}`,
    );
    return { exitCode: failed.length ? EXIT.findings : EXIT.ok, output: lines.join("\n") };
}

/** An API client error in one line: HTTP refusals by status, connection failures by their reason. */
export function apiError(e: unknown): string {
    const err = e as { code?: number | string; message?: string };
    if (err?.code === 401) return "HTTP 401 Unauthorized: the API server refused the credentials (expired token or SSO session? aws eks update-kubeconfig, aws sso login)";
    if (err?.code === 403) return "HTTP 403 Forbidden: the user may not list nodes and pods in all namespaces";
    // The client's message for other statuses says no more than the status.
    if (typeof err?.code === "number") return `HTTP ${err.code} from the API server`;
    // client-node 2.x calls fetch, whose error says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND,
    // a certificate) is its cause.
    const cause = (e as { cause?: unknown })?.cause;
    return cause ? `${messageOf(e)}: ${messageOf(cause)}` : messageOf(e);
}

if (require.main === module) runMain(() => verifyPlacement(process.argv.slice(2)));
