// Preflight's checks, once ops/preflight.ts has read the flags: a pure core (`preflightChecks`: fetched facts -> one
// verdict per check) behind a thin shell (`gatherAws`, `gatherKube`: the SDK and Kubernetes reads).
import * as fs from "fs";
import * as path from "path";
import { gunzipSync } from "zlib";
import { CONTROLLER_RELEASE, CRD_RELEASE, controllerNames, releaseDescription } from "../components/models/controllerPolicy.ts";
import { type DailyWindow, localWindow } from "../components/models/disruptionBudgets.ts";
import { ANNOTATOR_NAME, CELERY_PRESTOP_SCRIPT, DEPLOYMENT_LABEL, HOOK_MARGIN_SECONDS, NIDHOGG_RELEASE, burstBudgetName, burstGraceSeconds, burstPodTemplate, headroomDeployment, nidhoggValues, serviceAccountUser } from "../components/models/celeryPlacement.ts";
import { quantityValue } from "../components/models/nodePool.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { type StackConfig, approvedInstanceTypes } from "../stacks/config.ts";
import { PROJECT, PROJECT_DIR, STACK_TAG } from "../stacks/stackNames.ts";
import { CAPACITY_TYPE_KEY, CELERY_PRESTOP_TEMPLATE_FILE, type ChartDifference, GC_NOTIFY_PRESTOP, GC_NOTIFY_WORKLOADS, chartDifferences, valuesFilePath } from "../plan/gcNotifyCharts.ts";
import { type CommandLine, type CommandResult, EXIT, didYouMean, integerFlag, isResult, usage, valueOf } from "../cli/args.ts";
import { loadStack } from "../stacks/validatedConfig.ts";
import { elapsed, jsonText, progress } from "../cli/output.ts";
import { CI_ACCESS_DIR, PREVIEW_GROUP, PREVIEW_READ_ACCESS, ciAccessFileNames } from "../plan/ciAccess.ts";
import { VersionApi } from "@kubernetes/client-node";
import { type KubeConfig, KubeCallError, type KubeObject, type ListObjects, apiClient, kubeError as kubeCallError, listerOf, useContext } from "./kube.ts";
import { checkedKubeConfig } from "./kubeconfigFile.ts";
import { AwsCallError, awsCall, awsClientConfig, guarded, need as needField } from "./awsCalls.ts";
import { type Deadlines, deadlinesOf } from "./deadlines.ts";
import { plural } from "../cli/table.ts";
import { type AwsClientConfig, CHECKS, MAX_TASK_WINDOW_HOURS, PREFLIGHT, type PreflightDeps, type QueryTiming, TASK_WINDOW_HOURS, needsAws, needsCluster, needsOf } from "./preflight.ts";

export type Status = "ok" | "warn" | "fail";
export interface Verdict {
    check: string;
    status: Status;
    /** One line: what was found and, for WARN and FAIL, what to do. */
    message: string;
}

/** A Helm 3 release, from its latest Secret (type helm.sh/release.v1, labels owner=helm,name=<release>). */
export interface HelmRelease {
    name: string;
    namespace: string;
    revision: number;
    status: string;
    chart: string;
    chartVersion: string;
    values: any;
    /** The revision's description (`helm history`): the program's releases carry releaseDescription(project, stack). */
    description?: string;
}

export type Tags = Record<string, string>;

/** What the AWS account says. `undefined` tags: the name is free. */
/** How many FilterLogEvents pages the log-group check reads before it calls the answer unsure. */
const LOG_SEARCH_PAGES = 30;

export interface AwsFacts {
    account: string;
    partition: string;
    cluster?: { version: string; status: string; endpoint: EndpointAccess };
    podIdentityAgent?: { status: string; version: string };
    /** The cluster's EKS add-ons (ListAddons), when config names one; undefined: not asked, or no cluster. */
    addOns?: string[];
    /** karpenterLines: "unsure" when the search ran out of pages before the group's end. */
    logGroup: { exists: boolean; karpenterLines: boolean | "unsure" };
    /** null: no such image; undefined: not looked up (an alias). */
    image?: { id: string; state: string; architecture: string; name: string } | null;
    subnets: { id: string; zone: string }[];
    securityGroups: { id: string }[];
    /** EC2's message when a configured subnet or security group ID does not exist: it then answers nothing at all. */
    notFound: { subnets?: string; securityGroups?: string };
    offerings: { type: string; zone: string }[];
    instanceTypes: { type: string; architectures: string[] }[];
    spotRole: boolean;
    /** The stack that tagged the spot service-linked role (it created it), if any. */
    spotRoleStack?: string;
    existingNodeRole?: boolean;
    names: { kind: string; name: string; tags?: Tags }[];
    topics: TopicFacts[];
    /** The burst workers' SQS queues, read only for queue-visibility. */
    queues?: QueueFacts[];
    /** The Logs Insights answer on task durations, read only for task-durations. */
    taskDurations?: TaskDurationFacts;
}

/** A burst worker's queue as SQS answers: its SQS name, and its VisibilityTimeout (undefined: no such queue). */
export interface QueueFacts {
    name: string;
    visibilityTimeout?: number;
}

/** The longest successful run of one task in one burst container, and how many runs, over the window. */
export interface TaskDurationRow {
    container: string;
    task: string;
    longest: number;
    runs: number;
}

export interface TaskDurationFacts {
    hours: number;
    /**
     * Complete, or the status the query ended in (Failed, Cancelled, Timeout, Unknown); "stopped": preflight stopped
     * it at its deadline; "no-log-group" and "refused" (LimitExceededException): no query ran, `detail` says why.
     */
    outcome: string;
    detail?: string;
    rows: TaskDurationRow[];
    /** GetQueryResults' statistics (what the query cost: Logs Insights bills per GB scanned). */
    recordsScanned?: number;
    bytesScanned?: number;
}

export interface TopicFacts {
    severity: string;
    arn: string;
    exists: boolean;
    confirmed: number;
    pending: number;
    kmsKeyId?: string;
    /** The key's manager (AWS or CUSTOMER) and its default policy, when the topic is encrypted. */
    key?: { manager: string; policy?: string };
}

/** How the cluster's API endpoint can be reached and who it lets in (EKS DescribeCluster: resourcesVpcConfig, accessConfig). */
export interface EndpointAccess {
    publicAccess: boolean;
    privateAccess: boolean;
    /** Who may reach the public endpoint; EKS answers 0.0.0.0/0 when none were set. */
    publicAccessCidrs: string[];
    /** API, API_AND_CONFIG_MAP or CONFIG_MAP (the aws-auth ConfigMap only). */
    authenticationMode: string;
}

/** What the cluster says. */
export interface KubeFacts {
    releases: HelmRelease[];
    priorityClasses: KubeObject[];
    pdbs: KubeObject[];
    nodePools: KubeObject[];
    nodeClasses: KubeObject[];
    deployments: KubeObject[];
    daemonSets: KubeObject[];
    stableNodes: KubeObject[];
    pods: KubeObject[];
    /** The burst namespace, for its labels (webhooks select namespaces by label). */
    namespaces: KubeObject[];
    mutatingWebhooks: KubeObject[];
}

/** The release names GC Notify's helmfile declares (cds-snc/notification-manifests helmfile/helmfile.yaml.gotmpl @609853e2). */
export const HELMFILE_RELEASES: Record<string, string> = {
    [CRD_RELEASE]: "karpenter",
    [CONTROLLER_RELEASE]: "karpenter",
    "karpenter-nodepool": "karpenter",
    "priority-classes": "kube-system",
    [NIDHOGG_RELEASE.name]: NIDHOGG_RELEASE.namespace,
};

const MIN_MINOR = 30;
const POD_IDENTITY_AGENT = "eks-pod-identity-agent";
const SPOT_ROLE = "AWSServiceRoleForEC2Spot";
const DISCOVERY_TAG = "karpenter.sh/discovery";
/** The chart's container (karpenter v1.14.1 templates/deployment.yaml) whose lines Fluent Bit ships. */
const KARPENTER_CONTAINER = "controller";
const ZONE_LABEL = "topology.kubernetes.io/zone";

/** The fixed AWS names the stack creates, from the program's own naming. */
export function stackNames(cfg: StackConfig) {
    return controllerNames(cfg.controller.namePrefix ?? cfg.cluster.name);
}

/** A Kubernetes object a Pulumi program applied: pulumi-kubernetes' server-side apply manager, or its client-side label. */
export function managedByPulumi(o: KubeObject): boolean {
    // pulumi-kubernetes provider/pkg/provider/provider.go fieldManagerName: "pulumi-kubernetes-<random>" under SSA;
    // without SSA it labels what it creates app.kubernetes.io/managed-by: pulumi.
    return (o.metadata.managedFields ?? []).some((f) => f.manager?.startsWith("pulumi-kubernetes")) || o.metadata.labels?.["app.kubernetes.io/managed-by"] === "pulumi";
}

const managers = (o: KubeObject) => [...new Set((o.metadata.managedFields ?? []).map((f) => f.manager ?? "?").filter((m) => !m.startsWith("pulumi-kubernetes")))];

/**
 * Whether chart version `live` is `configured` or one version behind it: the same major, and the minor before, or the
 * same minor with an earlier patch (what an up that stopped halfway through an upgrade leaves).
 */
export function sameOrOneBehind(live: string, configured: string): boolean {
    const parse = (v: string) => /^v?([0-9]+)\.([0-9]+)\.([0-9]+)/.exec(v)?.slice(1).map(Number);
    const [l, c] = [parse(live), parse(configured)];
    if (!l || !c) return live === configured;
    if (l[0] !== c[0]) return false;
    return l[1] === c[1] ? l[2] <= c[2] : l[1] === c[1] - 1;
}

/** Whether this stack installed a release: the values only this stack's program sets. */
export function releaseIsOurs(r: HelmRelease, cfg: StackConfig, all: HelmRelease[]): boolean {
    const controllerNs = cfg.controller.namespace;
    if (r.name === CONTROLLER_RELEASE && r.namespace === controllerNs) return r.values?.settings?.interruptionQueue === stackNames(cfg).queue;
    // The CRD chart takes no values. It is ours with our controller release, at its version or the configured one (an
    // up that upgraded the CRDs and stopped before the controller); and without any controller release, at the
    // configured version or one behind: what a pulumi destroy retains (lifecycle.retainOnDelete, EN-R3).
    if (r.name === CRD_RELEASE && r.namespace === controllerNs) {
        if (r.chart !== CRD_RELEASE) return false;
        // What the program writes as the release's description says whose it is (a failed upgrade or a rollback
        // writes Helm's own text instead, and releases installed before the program wrote it have none).
        if (r.description === releaseDescription(PROJECT, cfg.stack)) return true;
        if (r.description?.startsWith(releaseDescription(PROJECT, ""))) return false;
        const controller = all.find((c) => c.name === CONTROLLER_RELEASE && c.namespace === controllerNs);
        if (!controller) return sameOrOneBehind(r.chartVersion, cfg.controller.version);
        return releaseIsOurs(controller, cfg, all) && (controller.chartVersion === r.chartVersion || sameOrOneBehind(r.chartVersion, cfg.controller.version) || sameOrOneBehind(controller.chartVersion, r.chartVersion));
    }
    if (r.name === NIDHOGG_RELEASE.name && r.namespace === NIDHOGG_RELEASE.namespace) {
        const ours = nidhoggValues(placementArgs(cfg)).configuration.nodeSelector;
        return JSON.stringify(r.values?.configuration?.nodeSelector) === JSON.stringify(ours);
    }
    return false;
}

/** A Helm 3 release Secret's release: base64 (Helm's) of gzipped JSON, inside the Secret's own base64. */
export function decodeRelease(secret: KubeObject): HelmRelease | undefined {
    const data = secret.data?.release;
    if (!data) return undefined;
    try {
        const rel = JSON.parse(gunzipSync(Buffer.from(Buffer.from(data, "base64").toString("utf8"), "base64")).toString("utf8"));
        return {
            name: rel.name,
            namespace: rel.namespace ?? secret.metadata.namespace,
            revision: rel.version,
            status: rel.info?.status ?? "unknown",
            chart: rel.chart?.metadata?.name ?? "?",
            chartVersion: rel.chart?.metadata?.version ?? "?",
            values: rel.config ?? {},
            description: rel.info?.description,
        };
    } catch {
        return undefined;
    }
}

/** Each release's latest revision, from every release Secret (history included). */
export function latestReleases(secrets: KubeObject[]): HelmRelease[] {
    const latest = new Map<string, HelmRelease>();
    for (const s of secrets) {
        const r = decodeRelease(s);
        if (!r) continue;
        const key = `${r.namespace}/${r.name}`;
        if ((latest.get(key)?.revision ?? -1) < r.revision) latest.set(key, r);
    }
    return [...latest.values()].filter((r) => r.status !== "uninstalled");
}

/** Requests of a pod template or pod spec: the sum over its containers. */
function requests(spec: any): { cpu: number; memoryGiB: number } {
    const sum = { cpu: 0, memoryGiB: 0 };
    for (const c of spec?.containers ?? []) {
        const r = c.resources?.requests ?? {};
        if (r.cpu) sum.cpu += quantityValue(String(r.cpu), "cores") || 0;
        if (r.memory) sum.memoryGiB += quantityValue(String(r.memory), "GiB") || 0;
    }
    return sum;
}

/** Pods a rolling update adds at once: maxSurge (default 25%) of the replicas, rounded up; none for Recreate. */
export function surgePods(d: KubeObject): number {
    if (d.spec?.strategy?.type === "Recreate") return 0;
    const replicas = d.spec?.replicas ?? 1;
    const s = d.spec?.strategy?.rollingUpdate?.maxSurge ?? "25%";
    return typeof s === "number" ? s : Math.ceil((replicas * parseFloat(s)) / 100);
}

const fmt = (n: number) => (Math.round(n * 100) / 100).toString();

/**
 * The webhooks, as "<configuration>/<webhook>", whose rules match UPDATE of pods (resource `pods` or `*`, core group)
 * and whose namespaceSelector selects a namespace of these labels; an objectSelector or matchConditions are named,
 * not evaluated (they may still spare the annotator's pods).
 */
export function podUpdateWebhooks(configurations: KubeObject[], namespaceLabels: Record<string, string>): { name: string; unevaluated?: string }[] {
    const has = (list: unknown, ...wanted: string[]) => Array.isArray(list) && list.some((x) => wanted.includes(x));
    return configurations.flatMap((c) =>
        ((c as any).webhooks ?? [])
            .filter((w: any) => (w.rules ?? []).some((r: any) => has(r.apiGroups, "", "*") && has(r.resources, "pods", "*", "*/*") && has(r.operations, "UPDATE", "*") && r.scope !== "Cluster"))
            .filter((w: any) => selectorSelects(w.namespaceSelector ?? {}, namespaceLabels))
            .map((w: any) => {
                const unevaluated = [Object.keys(w.objectSelector ?? {}).length ? "an objectSelector" : "", (w.matchConditions ?? []).length ? "matchConditions" : ""].filter(Boolean).join(" and ");
                return { name: `MutatingWebhookConfiguration ${c.metadata?.name}, webhook ${w.name}`, ...(unevaluated ? { unevaluated } : {}) };
            }),
    );
}

/** Whether a label selector selects these labels (matchLabels and matchExpressions ANDed; null selects nothing, {} everything). */
export function selectorSelects(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined | null, labels: Record<string, string>): boolean {
    if (!selector) return false;
    const has = (k: string) => Object.prototype.hasOwnProperty.call(labels, k);
    const expression = (e: { key: string; operator: string; values?: string[] }) => {
        switch (e.operator) {
            case "In": return has(e.key) && (e.values ?? []).includes(labels[e.key]);
            case "NotIn": return !has(e.key) || !(e.values ?? []).includes(labels[e.key]);
            case "Exists": return has(e.key);
            case "DoesNotExist": return !has(e.key);
            default: return false;
        }
    };
    return Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v) && (selector.matchExpressions ?? []).every(expression);
}

/** Where the plan's values for a GC Notify release are, as the operator finds them after `npm run plan`. */
const valuesFile = (stack: string, release: string) => `plan-out/${stack}/${valuesFilePath(release)}`;

/** How to turn off a budget over burst pods: the chart's own switch when the budget is the chart's, else remove it. */
function budgetFix(stack: string, deployment: string, pdb: KubeObject): string {
    const chart = GC_NOTIFY_WORKLOADS.find((w) => w.kind === "Deployment" && w.namespace === pdb.metadata.namespace && w.name === deployment);
    // The notify-celery chart names each budget after its Deployment (templates/pdb.yaml).
    if (chart?.budgetKey && pdb.metadata.name === deployment) return `set ${chart.budgetKey.join(".")}: false in GC Notify's ${chart.release} release (${valuesFile(stack, chart.release)} sets it)`;
    return `delete it, or narrow its selector to other pods`;
}

/** A value in a short phrase: its JSON when short, else what it is and how big. */
function shortValue(v: unknown): string {
    const text = JSON.stringify(v) ?? "not set";
    if (text.length <= 160) return text;
    return Array.isArray(v) ? `a list of ${v.length}` : `a map of ${Object.keys(v as object).length} keys`;
}

const chartSets = (d: ChartDifference) => `${d.object}: Helm's chart sets ${d.field} = ${shortValue(d.chart)}; the stack sets ${shortValue(d.stack)}`;

/** The plan's values file that makes the chart agree, or why none can. */
function valuesFix(stack: string, d: ChartDifference): string {
    if (!d.release) return "no values key sets it (the chart hardcodes it, or it is no GC Notify chart's): change the chart's template or the stack's config";
    return `add ${valuesFile(stack, d.release)} to GC Notify's ${d.release} release (it sets ${d.valuesKey})${d.templateChange ? `, with the template change in plan-out/${stack}/${d.templateChange}` : ""}`;
}

/**
 * A burst Deployment whose chart selects a capacity type (GC Notify's notify-celery values.yaml: spot). The burst
 * patch sets no nodeSelector, so only the chart's values can remove the key (null removes it).
 */
function capacityTypeSelected(stack: string, d: ChartDifference): string {
    const live = (d.chart as Record<string, string>)[CAPACITY_TYPE_KEY];
    const fix = d.release ? `set ${d.valuesKey}: {${CAPACITY_TYPE_KEY}: null} in GC Notify's ${d.release} release (${valuesFile(stack, d.release)} sets it)` : "remove the key from the chart that renders it";
    return `${d.object}: its pod template still has nodeSelector ${CAPACITY_TYPE_KEY}: ${live}, which the stack's patch leaves to the chart (it sets no nodeSelector: setting one would replace the atomic map, and the chart's next release would put the key back), so burst pods can use ${live} nodes only; ${fix}`;
}

/** The pod-template fields that decide whether a burst worker finishes its tasks when its node goes (celery-shutdown's). */
const SHUTDOWN_FIELDS = ["preStop", "terminationGracePeriodSeconds"];

/** What a live preStop command is, in words. */
function preStopWords(command: unknown): string {
    if (command === undefined) return "no preStop hook (the kubelet's SIGTERM, then its SIGKILL at the end of the grace)";
    if (JSON.stringify(command) === JSON.stringify(GC_NOTIFY_PRESTOP)) return "GC Notify's preStop /app/scripts/run_celery_exit.sh, which SIGKILLs the worker about 10 s after its SIGTERM (notification-api scripts/run_celery_exit.sh)";
    if (Array.isArray(command) && command[3] === "celery-prestop") return "another version of the program's preStop hook";
    return `the preStop ${shortValue(command)}`;
}

/**
 * One burst Deployment's shutdown, live: its worker container's preStop (the program's hook, whose last argument is
 * the seconds to its SIGKILL) and the pod template's grace, against what the stack sets (burstGraceSeconds).
 */
function celeryShutdown(cfg: StackConfig, d: { name: string; terminationGracePeriodSeconds: number }, live: KubeObject): { status: Status; message: string } {
    const b = cfg.placement.burst;
    const object = `Deployment ${cfg.placement.namespace}/${d.name}`;
    const spec = live.spec?.template?.spec ?? {};
    const containers: { name: string; lifecycle?: any }[] = spec.containers ?? [];
    // notify-celery names the worker's container after its Deployment (templates/deployment.yaml), as the patch does.
    const worker = containers.find((c) => c.name === d.name);
    if (!worker) {
        return { status: "fail", message: `${object} has no container ${d.name} (it has ${containers.map((c) => c.name).join(", ") || "none"}): the stack's patch names the worker's container after its Deployment, as notify-celery does, and would add one without an image; fix placement.burst.deployments or the chart` };
    }
    const grace: number = spec.terminationGracePeriodSeconds ?? 30; // the API server's default
    const command = worker.lifecycle?.preStop?.exec?.command;
    const ours = Array.isArray(command) && command.length === 5 && command[0] === "/bin/bash" && command[1] === "-c" && command[2] === CELERY_PRESTOP_SCRIPT && command[3] === "celery-prestop" && /^[0-9]+$/.test(command[4]);
    const killAt = ours ? Number(command[4]) : undefined;
    const longest = b.deployments.find((x) => x.name === d.name)?.longestTaskSeconds ?? b.longestTaskSeconds;
    const needs = `the program's hook with its SIGKILL at ${d.terminationGracePeriodSeconds - HOOK_MARGIN_SECONDS} s and a grace of ${d.terminationGracePeriodSeconds} s ((prefetchMultiplier ${b.prefetchMultiplier} + 1) × longest task ${longest} s + 10 s)`;
    const found = ours ? `the program's hook with its SIGKILL at ${killAt} s and a grace of ${grace} s` : `${preStopWords(command)} and a grace of ${grace} s`;
    const problems = [
        ...(ours ? [] : ["its preStop is not the program's hook"]),
        ...(ours && killAt !== grace - HOOK_MARGIN_SECONDS ? [`its hook kills at ${killAt} s, not ${HOOK_MARGIN_SECONDS} s before the grace ends`] : []),
        ...(grace < d.terminationGracePeriodSeconds ? [`its grace is shorter than the ${d.terminationGracePeriodSeconds} s the worker needs to finish the tasks it holds`] : []),
    ];
    if (!problems.length) return { status: "ok", message: `${object}: ${found}${grace > d.terminationGracePeriodSeconds ? ` (the stack sets ${d.terminationGracePeriodSeconds} s)` : ""}: a worker finishes the tasks it holds before its node goes` };
    const chart = GC_NOTIFY_WORKLOADS.find((w) => w.kind === "Deployment" && w.name === d.name);
    const keys = [chart?.fields.preStop, chart?.fields.terminationGracePeriodSeconds].flatMap((source) => (source && "key" in source ? [source.key.join(".")] : []));
    const handover = `plan-out/${cfg.stack}/${CELERY_PRESTOP_TEMPLATE_FILE} and ${valuesFile(cfg.stack, "notify-celery")}${keys.length ? ` (${keys.join(", ")})` : ""}`;
    // The patch labels the pods with their Deployment (DEPLOYMENT_LABEL), a label no chart renders: without it, this
    // stack has not patched the Deployment yet, and its first up sets both.
    if (live.spec?.template?.metadata?.labels?.[DEPLOYMENT_LABEL] !== d.name) {
        return { status: "warn", message: `${object}: ${found}, not yet patched by this stack: its first up sets ${needs}; until GC Notify makes the chart change, each notify-celery release puts its own back and this check fails: hand over ${handover}` };
    }
    // A hook that kills later than the stack's, in a grace long enough, cuts no task: it just no longer fits its grace.
    const cuts = !ours || grace < d.terminationGracePeriodSeconds || killAt! < d.terminationGracePeriodSeconds - HOOK_MARGIN_SECONDS;
    const consequence = cuts ? "when its node goes, a task still running is killed, and lost (GC Notify acknowledges a task as it starts)" : "the hook no longer fits its grace (a hand edit, or a rollout cut short)";
    return {
        status: "fail",
        message: `${object}: ${problems.join(", and ")}: found ${found}, the stack needs ${needs}; ${consequence}; a pulumi up puts the stack's back now, until the next notify-celery release; the lasting fix is GC Notify's chart change and values, ${handover}`,
    };
}

/** A node's taints that keep pods off (NoSchedule, NoExecute), as key=value:effect. */
function hardTaints(node: KubeObject): string[] {
    const taints: { key: string; value?: string; effect: string }[] = node.spec?.taints ?? [];
    return taints.filter((t) => t.effect === "NoSchedule" || t.effect === "NoExecute").map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`);
}

type ClusterAccess = StackConfig["cluster"]["access"];

/** GC Notify's Client VPN to the private subnets (notification-terraform aws/eks/vpn.tf), and CI's way onto it. */
const JOIN_VPN = "join GC Notify's private-subnets Client VPN (notification-terraform aws/eks/vpn.tf; CI joins its gha-vpn endpoint, .github/workflows/pulumi.yml)";
const USE_RUNNER = "run this on a runner inside the cluster's VPC (a self-hosted runner whose subnet the cluster security group admits on port 443)";
const openToAll = (cidrs: string[]) => cidrs.includes("0.0.0.0/0");

/** The endpoint's reach, in words: "private only", "public (0.0.0.0/0) only", "public (203.0.113.0/24) and private". */
export function endpointWords(e: EndpointAccess): string {
    if (!e.publicAccess) return "private only";
    return `public (${e.publicAccessCidrs.join(", ") || "no CIDR"})${e.privateAccess ? " and private" : " only"}`;
}

/**
 * Why this machine cannot reach the cluster's API endpoint, and the access step that is missing, as one clause:
 * from the endpoint's access (EKS DescribeCluster) and how config says CI and operators reach it (cluster.access).
 */
export function missingAccessStep(access: ClusterAccess, endpoint: EndpointAccess | undefined, clusterName: string): string {
    if (!endpoint) return `no EKS cluster ${clusterName} to read its endpoint access from: check notify-karpenter:cluster.name, the region and the AWS profile`;
    const inside = access === "client-vpn" ? JOIN_VPN : USE_RUNNER;
    if (!endpoint.publicAccess) {
        if (access === "public") return `its API endpoint is private only (endpointPublicAccess false), but cluster.access is public: nothing outside the VPC reaches it; set cluster.access to client-vpn and ${JOIN_VPN}, or to vpc-runner and ${USE_RUNNER}, then retry`;
        return `its API endpoint is private only (endpointPublicAccess false) and cluster.access is ${access}: ${inside} and retry`;
    }
    if (access !== "public" && endpoint.privateAccess) return `its API endpoint is ${endpointWords(endpoint)} and cluster.access is ${access}: ${inside} and retry`;
    if (!openToAll(endpoint.publicAccessCidrs)) {
        const orInside = endpoint.privateAccess ? `, or set cluster.access to client-vpn and ${JOIN_VPN} (private access is on)` : "";
        return `its public API endpoint admits only ${endpoint.publicAccessCidrs.join(", ")} (publicAccessCidrs), and this machine's address is not among them: add it (aws eks update-cluster-config --name ${clusterName} --resources-vpc-config publicAccessCidrs=...)${orInside}, and retry`;
    }
    const mismatch = access === "public" ? "" : `; cluster.access is ${access}, but the endpoint is public only and needs no ${access === "client-vpn" ? "VPN" : "runner in the VPC"}: set cluster.access to public`;
    return `its public API endpoint admits every address (publicAccessCidrs 0.0.0.0/0), so the path from this machine is at fault: check its DNS, proxy and firewall, and that the kubeconfig's server is the cluster's endpoint${mismatch}`;
}

/** Who the cluster lets in, and where CI's identities go for that mode (the plan's ci-access files). */
export function authenticationWords(mode: string, stack: string): string {
    const dir = `plan-out/${stack}/${CI_ACCESS_DIR}`;
    const files = ciAccessFileNames(stack);
    switch (mode) {
        case "CONFIG_MAP":
            return `authentication mode CONFIG_MAP: identities are mapped in the aws-auth ConfigMap (notification-terraform aws/aws-auth/aws-auth.tf; CI's roles: ${dir}/${files.awsAuth}); EKS refuses access entries`;
        case "API":
            return `authentication mode API: identities need EKS access entries (${dir}/${files.accessEntries}); aws-auth is not read`;
        case "API_AND_CONFIG_MAP":
            return `authentication mode API_AND_CONFIG_MAP: an access entry (${dir}/${files.accessEntries}) or an aws-auth mapping (${dir}/${files.awsAuth}) lets an identity in`;
        default:
            return `authentication mode ${mode}`;
    }
}

/** The cluster-access verdict once the endpoint answered: OK, or WARN when cluster.access does not fit the endpoint. */
function accessVerdict(cfg: StackConfig, endpoint: EndpointAccess): { status: Status; message: string } {
    const access = cfg.cluster.access;
    const how = { "client-vpn": "the Client VPN", "vpc-runner": "a runner in the VPC", public: "the public endpoint" }[access];
    const reached = `endpoint ${endpointWords(endpoint)}, reached through ${how} (cluster.access ${access}); ${authenticationWords(endpoint.authenticationMode, cfg.stack)}`;
    if (!endpoint.publicAccess && access === "public") {
        return { status: "warn", message: `cluster.access is public, but the endpoint is private only: this machine reaches it (on the VPN or in the VPC), CI's hosted runners will not; set cluster.access to client-vpn (or vpc-runner). ${reached}` };
    }
    if (endpoint.publicAccess && !endpoint.privateAccess && access !== "public") {
        return { status: "warn", message: `cluster.access is ${access}, but the endpoint is public only: ${access === "client-vpn" ? "the VPN" : "a runner in the VPC"} does not lead to it, the public address does; set cluster.access to public. ${reached}` };
    }
    return { status: "ok", message: reached };
}

/**
 * Where the stack puts the CRD release: KarpenterController "karpenter" (stacks/createStack.ts), its child
 * "<name>-crds", on the provider "kubernetes". tests/preflight.spec.ts holds these to the plan's URNs.
 */
export const CRD_RELEASE_PLACE = { component: { type: "notify-karpenter:index:KarpenterController", name: "karpenter" }, resource: "karpenter-crds", provider: "kubernetes" };

/**
 * The commands that adopt a retained CRD release into the stack's state under the program's parent and provider
 * (docs/architecture.md, "Re-adopting the retained karpenter-crd"): a targeted up makes the parent component and the
 * provider, which the destroy removed, then the import.
 */
export function crdReleaseImport(stack: string, namespace: string): string {
    const urn = (type: string, name: string) => `urn:pulumi:${stack}::${PROJECT}::${type}::${name}`;
    const p = CRD_RELEASE_PLACE;
    const target = `--stack <PULUMI_ORG>/${PROJECT}/${stack}`;
    const parent = urn(p.component.type, p.component.name);
    return [
        `pulumi up ${target} --target '${parent}', then`,
        `pulumi import ${target} kubernetes:helm.sh/v3:Release ${p.resource} ${namespace}/${CRD_RELEASE}`,
        `--parent '${p.component.name}=${parent}'`,
        `--provider '${p.provider}=${urn("pulumi:providers:kubernetes", p.provider)}'`,
        `--generate-code=false`,
    ].join(" ");
}

/** The verdicts: one or more per check, in CHECKS order. */
export function preflightChecks(cfg: StackConfig, aws: AwsFacts, kube: KubeFacts): Verdict[] {
    const out: Verdict[] = [];
    const ok = (check: string, message: string) => out.push({ check, status: "ok", message });
    const warn = (check: string, message: string) => out.push({ check, status: "warn", message });
    const fail = (check: string, message: string) => out.push({ check, status: "fail", message });
    const cluster = cfg.cluster.name;
    const region = cfg.cluster.region;
    const p = cfg.placement;

    // cluster-version
    if (!aws.cluster) fail("cluster-version", `no EKS cluster ${cluster} in ${region} (account ${aws.account}): check notify-karpenter:cluster.name and the AWS profile`);
    else {
        const minor = Number(/^1\.([0-9]+)/.exec(aws.cluster.version)?.[1] ?? 0);
        if (minor < MIN_MINOR) fail("cluster-version", `Kubernetes ${aws.cluster.version}: the admission policy needs ValidatingAdmissionPolicy v1 (1.${MIN_MINOR} or later); upgrade the cluster first`);
        else if (aws.cluster.status !== "ACTIVE") warn("cluster-version", `Kubernetes ${aws.cluster.version}, but the cluster is ${aws.cluster.status}: wait until it is ACTIVE before pulumi up`);
        else ok("cluster-version", `Kubernetes ${aws.cluster.version} (1.${MIN_MINOR} or later)`);
    }

    // cluster-access: the cluster answered (preflight stops with one line when it does not, missingAccessStep).
    if (aws.cluster) {
        const v = accessVerdict(cfg, aws.cluster.endpoint);
        out.push({ check: "cluster-access", ...v });
        // A node role the stack creates gets an EC2_LINUX access entry (components/karpenterController.ts), which EKS
        // refuses while the cluster reads aws-auth only.
        if (!cfg.controller.existingNodeRoleName && aws.cluster.endpoint.authenticationMode === "CONFIG_MAP") {
            fail("cluster-access", `the stack creates Karpenter's node role with an EKS access entry (controller.existingNodeRoleName is unset), which EKS refuses in authentication mode CONFIG_MAP, so the up fails there and nodes could not join: set controller.existingNodeRoleName to a node role aws-auth maps (GC Notify's eks-worker-role), or move the cluster to API_AND_CONFIG_MAP`);
        }
    }

    // pod-identity-agent
    if (cfg.controller.identity !== "pod-identity") ok("pod-identity-agent", "not needed: controller.identity is irsa");
    else if (!aws.podIdentityAgent) fail("pod-identity-agent", `no ${POD_IDENTITY_AGENT} add-on: the controller would get no AWS credentials; add it where the cluster's other add-ons are managed (GC Notify: resource "aws_eks_addon" "pod_identity_agent" in notification-terraform aws/eks/eks.tf, applied by its CI; docs/migration.md), not with aws eks create-addon, which that Terraform would then fail to create again (an add-on made by hand must be imported: terraform import aws_eks_addon.pod_identity_agent ${cluster}:${POD_IDENTITY_AGENT})`);
    else if (aws.podIdentityAgent.status !== "ACTIVE") warn("pod-identity-agent", `${POD_IDENTITY_AGENT} ${aws.podIdentityAgent.version} is ${aws.podIdentityAgent.status}, not ACTIVE: wait for it or fix the add-on`);
    else ok("pod-identity-agent", `${POD_IDENTITY_AGENT} ${aws.podIdentityAgent.version} is ACTIVE`);

    // helm-releases. Never advise `installed: false`: helmfile then uninstalls the release at the next apply (at merge,
    // mid-drain for karpenter-crd), where removing the entry leaves it for the operator to retire.
    const foreign = kube.releases.filter((r) => HELMFILE_RELEASES[r.name] !== undefined && !releaseIsOurs(r, cfg, kube.releases));
    for (const r of foreign) {
        fail(
            "helm-releases",
            `${r.namespace}/${r.name} (chart ${r.chart} ${r.chartVersion}, revision ${r.revision}) is not this stack's: remove the "${r.name}" entry from GC Notify's helmfile for staging and production (a template condition around it in helmfile/helmfile.yaml.gotmpl) so the next helmfile apply cannot undo this program, then retire the release as docs/migration.md step 2 says`,
        );
    }
    // This stack's release whose latest revision is not deployed: no up clears it. Helm refuses to upgrade a pending one
    // ("another operation (install/upgrade/rollback) is in progress", helm v3.20.2 pkg/action/upgrade.go); a failed one
    // is not upgraded again, since the refresh copies the failed revision's values into the state (engine-ci-review-2
    // EN2-F5, EN2-F6), and the controller would be upgraded over a failed karpenter-crd.
    for (const r of kube.releases.filter((x) => !foreign.includes(x) && HELMFILE_RELEASES[x.name] !== undefined && x.status !== "deployed")) {
        fail(
            "helm-releases",
            `${r.namespace}/${r.name} revision ${r.revision} is ${r.status}, not deployed, and no up clears that: helm history ${r.name} -n ${r.namespace}, then helm rollback ${r.name} <last deployed revision> -n ${r.namespace} (docs/guardrails.md, "A stopped up"), then the up`,
        );
    }
    // This stack's CRD release without its controller release: what a pulumi destroy retains (retainOnDelete), which
    // the state no longer holds, so the next up's create of it fails on the name (EN-R3).
    const ns = cfg.controller.namespace;
    const retained = kube.releases.find((r) => r.name === CRD_RELEASE && r.namespace === ns && !foreign.includes(r));
    if (retained && !kube.releases.some((r) => r.name === CONTROLLER_RELEASE && r.namespace === ns)) {
        warn(
            "helm-releases",
            `${ns}/${CRD_RELEASE} (chart ${retained.chart} ${retained.chartVersion}, revision ${retained.revision}) is this stack's, without its controller release: retained by a pulumi destroy (lifecycle.retainOnDelete), or left by an up that stopped before the controller; if the stack's state lacks it (pulumi stack --show-urns), the next up fails to create it (Helm refuses a release name in use): adopt it first (docs/architecture.md, "Re-adopting the retained karpenter-crd"): ${crdReleaseImport(cfg.stack, ns)}`,
        );
    }
    if (!foreign.length) ok("helm-releases", `none of ${Object.keys(HELMFILE_RELEASES).join(", ")} is installed by anything but this stack`);

    // priority-classes
    for (const [role, pc] of Object.entries(p.priorityClasses)) {
        const live = kube.priorityClasses.find((c) => c.metadata.name === pc.name);
        const policy = role === "headroom" ? "Never" : "PreemptLowerPriority";
        if (!live) ok("priority-classes", `${pc.name}: absent, the stack creates it (value ${pc.value}, ${policy})`);
        else if (live.value !== pc.value || (live.preemptionPolicy ?? "PreemptLowerPriority") !== policy) {
            fail(
                "priority-classes",
                `${pc.name} exists with value ${live.value} and ${live.preemptionPolicy ?? "PreemptLowerPriority"}, the config wants ${pc.value} and ${policy}; both are immutable: set placement.priorityClasses.${role}.value to ${live.value}, or delete and recreate the class (pods naming it are refused meanwhile)`,
            );
        } else ok("priority-classes", `${pc.name} exists with value ${pc.value} and ${policy}: the stack adopts it`);
    }

    // owned-objects
    const owned: [string, KubeObject[], string, string | undefined][] = [
        ...p.burst.deployments.map((d): [string, KubeObject[], string, string | undefined] => ["PodDisruptionBudget", kube.pdbs, burstBudgetName(d.name), p.namespace]),
        ["PodDisruptionBudget", kube.pdbs, NIDHOGG_RELEASE.name, NIDHOGG_RELEASE.namespace],
        ["NodePool", kube.nodePools, cfg.nodePool.name, undefined],
        ["EC2NodeClass", kube.nodeClasses, cfg.nodePool.name, undefined],
        ...(p.headroom.pods > 0 ? [["Deployment", kube.deployments, headroomDeployment(placementArgs(cfg)).metadata.name, p.namespace] as [string, KubeObject[], string, string | undefined]] : []),
    ];
    let clashes = 0;
    for (const [kind, objects, name, namespace] of owned) {
        const live = objects.find((o) => o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace));
        if (!live || managedByPulumi(live)) continue;
        clashes++;
        const by = managers(live).join(", ") || "an unknown manager";
        fail("owned-objects", `${kind} ${namespace ? `${namespace}/` : ""}${name} exists, managed by ${by}: the stack's create fails with AlreadyExists; remove it from the chart or release that made it (docs/migration.md)`);
    }
    // Any other budget whose selector selects a burst Deployment's pods, with the labels the patch adds (GC Notify's
    // chart has one per worker, selecting app: <deployment>): the eviction API refuses a pod under two budgets.
    const ourBudgets = new Set(p.burst.deployments.map((d) => burstBudgetName(d.name)));
    const args = placementArgs(cfg);
    for (const d of args.burst.deployments) {
        const live = kube.deployments.find((o) => o.metadata.name === d.name && o.metadata.namespace === p.namespace);
        if (!live) continue;
        const labels = { ...live.spec?.template?.metadata?.labels, ...burstPodTemplate(args, d).metadata.labels };
        for (const pdb of kube.pdbs.filter((o) => o.metadata.namespace === p.namespace && !ourBudgets.has(o.metadata.name) && selectorSelects(o.spec?.selector, labels))) {
            clashes++;
            fail("owned-objects", `PodDisruptionBudget ${p.namespace}/${pdb.metadata.name} selects the pods of burst Deployment ${d.name} beside this stack's ${burstBudgetName(d.name)}: the eviction API refuses to evict a pod under two budgets, so node drains stall; ${budgetFix(cfg.stack, d.name, pdb)}`);
        }
    }
    if (!clashes) ok("owned-objects", `no PodDisruptionBudget, NodePool, EC2NodeClass or Deployment of another tool has a name this stack creates, and no other budget covers the burst pods`);

    // patch-targets: EKS add-ons' DaemonSets are not patched (the add-on's configurationValues set their fields).
    const guaranteedContainer = (what: string, container: string, live: KubeObject) => {
        const names: string[] = (live.spec?.template?.spec?.containers ?? []).map((c: { name: string }) => c.name);
        const index = names.indexOf(container);
        if (index < 0) fail("patch-targets", `${what} has no container ${container} (it has ${names.join(", ") || "none"}): fix placement.nodeDaemonSets guaranteed.container, or the patch adds a container without an image`);
        // pulumi-kubernetes pairs the patch's containers with the live ones by position (pruneSlice, EN-R4): a patch
        // naming the second container is compared with the first, and shows a change at every preview and up.
        else if (index > 0) {
            fail("patch-targets", `${what}: guaranteed.container ${container} is container ${index + 1} of ${names.length} (index ${index}, after ${names.slice(0, index).join(", ")}): pulumi-kubernetes compares patched lists by index, so the patch would differ at every preview and re-apply at every up; remove guaranteed from placement.nodeDaemonSets and set the resources in the chart's values`);
        }
    };
    const patchedAgents = p.nodeDaemonSets.filter((ds) => !ds.addOn);
    const missing: string[] = [];
    for (const name of [...p.burst.deployments.map((d) => d.name), ...p.stableDeployments]) {
        if (!kube.deployments.some((d) => d.metadata.name === name && d.metadata.namespace === p.namespace)) missing.push(`Deployment ${p.namespace}/${name}`);
    }
    for (const ds of patchedAgents) {
        const live = kube.daemonSets.find((d) => d.metadata.name === ds.name && d.metadata.namespace === ds.namespace);
        if (!live) missing.push(`DaemonSet ${ds.namespace}/${ds.name}`);
        else if (ds.guaranteed) guaranteedContainer(`DaemonSet ${ds.namespace}/${ds.name}`, ds.guaranteed.container, live);
    }
    for (const m of missing) fail("patch-targets", `${m} does not exist: a patch of a missing object fails the up; fix placement in Pulumi.${cfg.stack}.yaml or deploy it first`);
    if (!missing.length) ok("patch-targets", `all ${plural(p.burst.deployments.length + p.stableDeployments.length, "Deployment")} and ${plural(patchedAgents.length, "DaemonSet")} to patch exist`);

    // daemonset-managers
    for (const ds of p.nodeDaemonSets) {
        const live = kube.daemonSets.find((d) => d.metadata.name === ds.name && d.metadata.namespace === ds.namespace);
        if (!live) continue;
        const m = managers(live);
        if (ds.addOn && aws.addOns && !aws.addOns.includes(ds.addOn)) {
            // Not patched because config says EKS owns it: if EKS does not, nothing sets its tolerations for ephemeral nodes.
            fail("daemonset-managers", `${ds.namespace}/${ds.name}: placement.nodeDaemonSets calls it EKS add-on ${ds.addOn}, but the cluster has no such add-on (it has ${aws.addOns.join(", ") || "none"}): the stack does not patch it, so nothing puts its tolerations on it; fix addOn, or remove it so the stack patches the DaemonSet`);
        } else if (ds.addOn) {
            ok("daemonset-managers", `${ds.namespace}/${ds.name}: EKS add-on ${ds.addOn}, not patched; its tolerations are the add-on's configurationValues`);
        } else if (m.includes("eks")) {
            warn("daemonset-managers", `${ds.namespace}/${ds.name} is an EKS add-on (manager eks): EKS restores its fields at the next add-on update; set tolerations and priorityClassName in the add-on's configurationValues and mark it addOn in placement.nodeDaemonSets`);
        } else ok("daemonset-managers", `${ds.namespace}/${ds.name}: managed by ${m.join(", ") || "nobody else"}; a chart deploy resets the fields the chart also sets (the drift check shows it)`);
    }

    // chart-fields. Helm 3 upgrades with a three-way merge that puts back every field the chart renders: a field the
    // patch sets but the chart renders otherwise changes hands at each release of the chart. Budgets are owned-objects'.
    const workloads = [...kube.deployments.map((o) => ({ ...o, kind: "Deployment" })), ...kube.daemonSets.map((o) => ({ ...o, kind: "DaemonSet" }))];
    const burstObjects = new Set(p.burst.deployments.map((d) => `Deployment ${p.namespace}/${d.name}`));
    // The burst workers' preStop and grace are celery-shutdown's: one line per fact, read from the live worker itself.
    const differences = chartDifferences(workloads, args).filter((d) => !(burstObjects.has(d.object) && SHUTDOWN_FIELDS.includes(d.field)));
    for (const d of differences) {
        if (burstObjects.has(d.object) && d.field === "nodeSelector") fail("chart-fields", capacityTypeSelected(cfg.stack, d));
        else if (d.blocksCapacity) fail("chart-fields", `${chartSets(d)}: new ephemeral nodes keep a startup taint until this agent runs there, and it does not tolerate them, so no burst pod starts; ${valuesFix(cfg.stack, d)}`);
        else warn("chart-fields", `${chartSets(d)}, and each release of the chart puts its value back: ${valuesFix(cfg.stack, d)}`);
    }
    if (!differences.length) ok("chart-fields", `no chart sets a field the stack's patches set otherwise, on ${plural(p.burst.deployments.length + p.stableDeployments.length, "Deployment")} and ${plural(patchedAgents.length, "DaemonSet")} (the burst workers' preStop and grace: celery-shutdown)`);

    // celery-shutdown
    for (const d of args.burst.deployments) {
        const live = kube.deployments.find((o) => o.metadata.name === d.name && o.metadata.namespace === p.namespace);
        if (!live) warn("celery-shutdown", `Deployment ${p.namespace}/${d.name} does not exist: its workers' shutdown is not checked (patch-targets says more)`);
        else out.push({ check: "celery-shutdown", ...celeryShutdown(cfg, d, live) });
    }

    // queue-visibility. GC Notify acknowledges a task as it starts: a message the worker holds but has not started
    // stays unacknowledged, and SQS hands it out again when its visibility timeout ends.
    const b = p.burst;
    const visibility = new Map((aws.queues ?? []).map((q) => [q.name, q.visibilityTimeout]));
    b.deployments.forEach((d, i) => {
        if (!aws.queues) return;
        const longest = d.longestTaskSeconds ?? b.longestTaskSeconds;
        const drain = b.prefetchMultiplier * longest;
        if (!d.queues) {
            warn("queue-visibility", `${d.name}: placement.burst.deployments[${i}].queues is not set, so its queues are not read; list the -Q queues of its notification-api run_celery_*.sh`);
            return;
        }
        const sqsName = (q: string) => b.queuePrefix + q;
        const missing = d.queues.filter((q) => visibility.get(sqsName(q)) === undefined);
        const short = d.queues.filter((q) => (visibility.get(sqsName(q)) ?? Infinity) < drain);
        if (missing.length) {
            warn("queue-visibility", `${d.name}: no SQS queue ${missing.map(sqsName).join(", ")} in ${region}: placement.burst.deployments[${i}].queues names a queue GC Notify does not have (the SQS name is placement.burst.queuePrefix ${b.queuePrefix} + the queue); fix the list or the prefix`);
        }
        if (short.length) {
            warn(
                "queue-visibility",
                `${d.name}: a message its worker holds but has not started can wait ${drain} s in a drain (prefetchMultiplier ${b.prefetchMultiplier} × longest task ${longest} s), longer than the visibility timeout of ${short.map((q) => `${sqsName(q)} (${visibility.get(sqsName(q))} s)`).join(", ")}: SQS then hands it to another worker while this one will still run it, so the task runs twice (a duplicate, not a loss); raise their VisibilityTimeout to ${drain} s or more (notification-terraform aws/common/sqs.tf, or the queue's attributes where kombu made it), or lower the prefetch`,
            );
        }
        if (!missing.length && !short.length) {
            const shortest = d.queues.reduce((m, q) => (visibility.get(sqsName(q))! < visibility.get(sqsName(m))! ? q : m));
            ok("queue-visibility", `${d.name}: ${plural(d.queues.length, "queue")}, the shortest visibility timeout ${visibility.get(sqsName(shortest))} s (${sqsName(shortest)}), at least the ${drain} s a held message can wait in a drain`);
        }
    });

    // task-durations: the evidence for longestTaskSeconds, each successful task's "<name> took <seconds>s" line.
    const td = aws.taskDurations;
    if (td) {
        const window = `the last ${plural(td.hours, "hour")}`;
        const lg = cfg.alarms.logGroupName;
        const size = (bytes: number) => (bytes >= 1e9 ? `${fmt(bytes / 1e9)} GB` : `${fmt(bytes / 1e6)} MB`);
        const scanned = td.bytesScanned !== undefined ? `; ${plural(td.recordsScanned ?? 0, "record")}, ${size(td.bytesScanned)} scanned` : "";
        if (td.outcome === "no-log-group") warn("task-durations", `${lg} does not exist, so no task durations were read (log-group says more)`);
        else if (td.outcome === "refused") warn("task-durations", `Logs Insights refused the query (${td.detail}): the account runs at most 30 queries at once; the evidence for longestTaskSeconds was not read: run npm run preflight -- --only task-durations later`);
        else if (td.outcome === "stopped") warn("task-durations", `the Logs Insights query over ${window} of ${lg} did not finish within ${td.detail} and was stopped: the evidence for longestTaskSeconds was not read; retry, or shorten --task-window`);
        else if (td.outcome !== "Complete") warn("task-durations", `the Logs Insights query over ${window} of ${lg} ended ${td.outcome}: the evidence for longestTaskSeconds was not read; retry`);
        else if (!td.rows.length) {
            warn(
                "task-durations",
                `no "<task> took <seconds>s" line from a burst worker (${b.deployments.map((d) => d.name).join(", ")}) in ${lg} over ${window}${scanned}: the evidence for longestTaskSeconds is missing. Each successful task logs one at INFO (notification-api app/celery/celery.py:40-42); none arrive when no burst worker ran, when Fluent Bit does not ship the notify-celery containers to this group (GC Notify's fb-agent celery input), or when the workers log above INFO`,
            );
        } else {
            for (const d of b.deployments) {
                const longest = d.longestTaskSeconds ?? b.longestTaskSeconds;
                const rows = td.rows.filter((r) => r.container === d.name).sort((x, y) => y.longest - x.longest);
                if (!rows.length) {
                    warn("task-durations", `${d.name}: no successful task logged over ${window}: no evidence for its longestTaskSeconds ${longest} (no pod of it ran, or its lines do not reach ${lg})`);
                    continue;
                }
                const runs = rows.reduce((n, r) => n + r.runs, 0);
                const slowest = rows.slice(0, 3).map((r) => `${r.task} ${fmt(r.longest)} s`).join(", ");
                if (rows[0].longest > longest) {
                    const needed = Math.ceil(rows[0].longest);
                    fail(
                        "task-durations",
                        `${d.name}: ${rows[0].task} took ${fmt(rows[0].longest)} s over ${window}, above its longestTaskSeconds ${longest} (slowest: ${slowest}; ${plural(runs, "successful run")}): its grace lets a warm shutdown finish tasks of ${longest} s, so a task this long is killed when its node goes, and lost (GC Notify acknowledges a task as it starts); set longestTaskSeconds: ${needed} on ${d.name} in placement.burst.deployments (a grace of ${burstGraceSeconds(needed, b.prefetchMultiplier)} s), or shorten the task`,
                    );
                } else ok("task-durations", `${d.name}: ${plural(runs, "successful run")} over ${window}, the longest ${fmt(rows[0].longest)} s (${rows[0].task}), within its longestTaskSeconds ${longest}`);
            }
        }
    }

    // mutating-webhooks (KS-F1's neighbour): the annotator's patch passes through every mutating webhook that matches
    // pod updates; the annotation-only policy then compares the mutated pod with the old one and refuses any other change.
    if (p.burst.scaleDownOrder) {
        const labels = kube.namespaces.find((n) => n.metadata?.name === p.namespace)?.metadata?.labels ?? { "kubernetes.io/metadata.name": p.namespace };
        const matching = podUpdateWebhooks(kube.mutatingWebhooks, labels);
        const annotator = serviceAccountUser(cfg.controller.namespace, ANNOTATOR_NAME);
        for (const m of matching) {
            warn(
                "mutating-webhooks",
                `${m.name}: matches UPDATE of pods in ${p.namespace}${m.unevaluated ? ` (${m.unevaluated}, not evaluated here)` : ""}; if it changes the scale-down annotator's patch, the annotator's admission policy refuses every patch and the order stops (its alarm fires): exclude ${annotator} with a matchCondition, or leave pods' updates out of its rules`,
            );
        }
        if (!matching.length) ok("mutating-webhooks", `no mutating webhook matches UPDATE of pods in ${p.namespace} (${plural(kube.mutatingWebhooks.length, "configuration")} read)`);
    } else ok("mutating-webhooks", "not needed: placement.burst.scaleDownOrder is off (no pod patches to protect)");

    // log-group
    const lg = cfg.alarms.logGroupName;
    if (!aws.logGroup.exists) {
        if (cfg.alarms.createLogGroup) ok("log-group", `${lg}: absent, the stack creates it (alarms.createLogGroup)`);
        else fail("log-group", `${lg} does not exist: the stack's metric filters on Karpenter's lines cannot be created; fix alarms.logGroupName (Fluent Bit's group: /aws/containerinsights/${cluster}/application) or set alarms.createLogGroup`);
    } else if (aws.logGroup.karpenterLines === "unsure") {
        warn("log-group", `${lg}: ${LOG_SEARCH_PAGES} pages of the last day searched without a line from the ${cfg.controller.namespace}/${KARPENTER_CONTAINER} container (a large group); check the heartbeat metric on the dashboard instead`);
    } else if (!aws.logGroup.karpenterLines) {
        warn("log-group", `${lg} has no line from the ${cfg.controller.namespace}/${KARPENTER_CONTAINER} container in the last day: the failure and heartbeat alarms would count nothing (the heartbeat fires); check that Fluent Bit ships the ${cfg.controller.namespace} namespace`);
    } else ok("log-group", `${lg} exists and has Karpenter lines from the last day`);

    // ami
    const ami = cfg.nodePool.ami;
    if (ami.alias) {
        if (!ami.alias.startsWith("al2023@")) fail("ami", `alias ${ami.alias} is not Amazon Linux 2023: use an al2023@v<date> alias`);
        else ok("ami", `alias ${ami.alias}: Karpenter resolves it to the AL2023 amd64 image of that release`);
    } else if (aws.image === null) fail("ami", `${ami.id} does not exist in ${region} (or is not shared with account ${aws.account}): fix nodePool.ami.id`);
    else if (aws.image) {
        const im = aws.image;
        const problems = [
            ...(im.state !== "available" ? [`is ${im.state}`] : []),
            ...(im.architecture !== "x86_64" ? [`is ${im.architecture}, but the NodePool requires amd64`] : []),
            ...(!/al2023/i.test(im.name) || ami.family !== "AL2023" ? [`is "${im.name}" with nodePool.ami.family ${ami.family ?? "unset"}, not Amazon Linux 2023 with family AL2023`] : []),
        ];
        if (problems.length) fail("ami", `${im.id} ${problems.join("; ")}: pin an available amd64 AL2023 EKS AMI (nodePool.ami)`);
        else ok("ami", `${im.id} (${im.name}) is available, x86_64, AL2023`);
    }

    // subnets
    const discovery = `${DISCOVERY_TAG}=${cluster}`;
    if (aws.notFound.subnets) fail("subnets", `nodePool.subnetIds: ${aws.notFound.subnets}; EC2 then answers for none of them, and Karpenter launches nowhere until it is fixed`);
    for (const zone of aws.notFound.subnets ? [] : cfg.nodePool.zones) {
        const here = aws.subnets.filter((s) => s.zone === zone);
        if (!here.length) fail("subnets", `${zone}: no ${cfg.nodePool.subnetIds ? "configured subnet" : `subnet tagged ${discovery}`}: Karpenter cannot launch there; tag the private subnet of ${zone} or drop the zone from nodePool.zones`);
        else ok("subnets", `${zone}: ${here.map((s) => s.id).join(", ")}`);
    }

    // security-groups
    if (aws.notFound.securityGroups) fail("security-groups", `nodePool.securityGroupIds: ${aws.notFound.securityGroups}; nodes could not launch with it`);
    else if (!aws.securityGroups.length) fail("security-groups", `no ${cfg.nodePool.securityGroupIds ? "configured security group exists" : `security group tagged ${discovery}`}: nodes could not reach the cluster; tag the cluster security group`);
    else ok("security-groups", aws.securityGroups.map((g) => g.id).join(", "));

    // instance-types
    const approved = approvedInstanceTypes(cfg.nodePool);
    const known = new Map(aws.instanceTypes.map((t) => [t.type, t.architectures]));
    const unknown = approved.filter((t) => !known.has(t));
    const notAmd64 = approved.filter((t) => known.has(t) && !known.get(t)!.includes("x86_64"));
    if (unknown.length) fail("instance-types", `${unknown.join(", ")} unknown to EC2 in ${region}: fix the nodePool instance types`);
    if (notAmd64.length) fail("instance-types", `${notAmd64.map((t) => `${t} (${known.get(t)!.join(", ")})`).join(", ")} not x86_64: the NodePool requires amd64, so they never launch; remove them`);
    for (const zone of cfg.nodePool.zones) {
        const offered = new Set(aws.offerings.filter((o) => o.zone === zone).map((o) => o.type));
        const absent = approved.filter((t) => known.has(t) && !offered.has(t));
        if (approved.every((t) => !offered.has(t))) fail("instance-types", `${zone}: none of the approved types is offered: Karpenter cannot launch there; add types offered in ${zone} or drop the zone`);
        else if (absent.length) warn("instance-types", `${zone}: ${absent.join(", ")} not offered (the others are)`);
        else ok("instance-types", `${zone}: all ${approved.length} approved types offered`);
    }

    // spot-service-linked-role
    if (aws.spotRole && cfg.controller.createSpotServiceLinkedRole && aws.spotRoleStack === cfg.stack) ok("spot-service-linked-role", `${SPOT_ROLE} exists, created by this stack`);
    else if (aws.spotRole && cfg.controller.createSpotServiceLinkedRole) {
        fail("spot-service-linked-role", `${SPOT_ROLE} exists and is ${aws.spotRoleStack ? `stack ${aws.spotRoleStack}'s` : "not this stack's"}, and controller.createSpotServiceLinkedRole is true: creating it again fails; set it to false`);
    }
    else if (!aws.spotRole && !cfg.controller.createSpotServiceLinkedRole) {
        fail("spot-service-linked-role", `${SPOT_ROLE} does not exist: spot launches fail; aws iam create-service-linked-role --aws-service-name spot.amazonaws.com, or set controller.createSpotServiceLinkedRole`);
    } else ok("spot-service-linked-role", aws.spotRole ? `${SPOT_ROLE} exists` : `${SPOT_ROLE}: absent, the stack creates it`);

    // aws-names
    if (aws.existingNodeRole === false) fail("aws-names", `IAM role ${cfg.controller.existingNodeRoleName} (controller.existingNodeRoleName) does not exist: fix the name`);
    const taken = aws.names.filter((n) => n.tags !== undefined && n.tags[STACK_TAG] !== cfg.stack);
    for (const n of taken) {
        const owner = n.tags![STACK_TAG] ? `stack ${n.tags![STACK_TAG]}'s` : `untagged (no ${STACK_TAG})`;
        fail("aws-names", `${n.kind} ${n.name} exists and is ${owner}: the create fails; delete it, or set controller.namePrefix to a prefix of this cluster's own`);
    }
    if (!taken.length) ok("aws-names", `${plural(aws.names.length, "name")} free or this stack's (IAM roles and policies, SQS queue, EventBridge rules)`);

    // alarm-topics
    const subscriptions = cfg.alarms.subscriptions;
    if (subscriptions) {
        const endpoints = [...subscriptions.warning, ...subscriptions.critical].map((e) => e.endpoint);
        warn("alarm-topics", `the stack creates its own two topics and subscribes ${[...new Set(endpoints)].join(", ")}: each endpoint must confirm its subscription (the link SNS sends) before an alarm reaches it`);
    }
    const key = cfg.alarms.topicNames ? "alarms.topicNames" : "alarms.topicArns";
    for (const t of aws.topics) {
        if (!t.exists) {
            fail("alarm-topics", `${t.severity} ${t.arn} does not exist (or is another account's): fix ${key}.${t.severity}`);
            continue;
        }
        if (!t.confirmed) fail("alarm-topics", `${t.severity} ${t.arn} has no confirmed subscription${t.pending ? ` (${t.pending} pending confirmation)` : ""}: alarms would reach nobody; subscribe and confirm`);
        else ok("alarm-topics", `${t.severity} ${t.arn}: ${plural(t.confirmed, "confirmed subscription")}`);
        if (t.kmsKeyId && t.key) {
            if (t.key.manager === "AWS") fail("alarm-topics", `${t.severity} ${t.arn} is encrypted with an AWS managed key (${t.kmsKeyId}), whose policy CloudWatch may not use: encrypt it with a customer managed key that allows cloudwatch.amazonaws.com`);
            else if (!keyLetsCloudWatch(t.key.policy)) fail("alarm-topics", `${t.severity} ${t.arn}: the policy of key ${t.kmsKeyId} does not let cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey: alarms cannot publish; add that statement`);
            else ok("alarm-topics", `${t.severity} ${t.arn}: key ${t.kmsKeyId} lets CloudWatch publish`);
        }
    }

    // stable-nodes. A NoSchedule or NoExecute taint keeps off every pod that does not tolerate it, and neither the
    // controller nor the stable patch adds tolerations: such nodes (GC Notify's SigNoz nodes, dedicated=signoz) carry
    // the stable labels but are neither room nor a zone for them.
    const tainted = kube.stableNodes.filter((n) => hardTaints(n).length > 0);
    const stableNodes = kube.stableNodes.filter((n) => !tainted.includes(n));
    const leftOut = tainted.length ? `; ${plural(tainted.length, "tainted node")} left out (${[...new Set(tainted.flatMap(hardTaints))].join(", ")}): only pods that tolerate the taint run there` : "";
    const zones = new Set(stableNodes.map((n) => n.metadata.labels?.[ZONE_LABEL]).filter(Boolean));
    const selector = Object.entries(cfg.cluster.stableNodeSelector).map(([k, v]) => `${k}=${v}`).join(",");
    if (stableNodes.length < cfg.controller.replicas) {
        // The chart's required anti-affinity on kubernetes.io/hostname (values.yaml affinity): one replica per node.
        fail("stable-nodes", `${plural(stableNodes.length, "stable node")} (${selector}) for ${cfg.controller.replicas} controller replicas: the chart puts each replica on its own node (required anti-affinity on kubernetes.io/hostname), so a replica stays Pending; add stable nodes${leftOut}`);
    } else if (zones.size < 2) {
        // The chart's zone spread has no minDomains, so one zone schedules; it only loses the zone redundancy.
        warn("stable-nodes", `${plural(stableNodes.length, "stable node")} (${selector}) in ${plural(zones.size, "zone")}: both controller replicas share a zone, so a zone outage stops Karpenter; add stable nodes in a second zone${leftOut}`);
    } else ok("stable-nodes", `${plural(stableNodes.length, "stable node")} in ${[...zones].sort().join(", ")}${leftOut}`);
    const onStable = new Set(stableNodes.map((n) => n.metadata.name));
    const free = { cpu: 0, memoryGiB: 0 };
    for (const n of stableNodes) {
        free.cpu += quantityValue(String(n.status?.allocatable?.cpu ?? "0"), "cores") || 0;
        free.memoryGiB += quantityValue(String(n.status?.allocatable?.memory ?? "0"), "GiB") || 0;
    }
    for (const pod of kube.pods) {
        if (!onStable.has(pod.spec?.nodeName) || ["Succeeded", "Failed"].includes(pod.status?.phase)) continue;
        const r = requests(pod.spec);
        free.cpu -= r.cpu;
        free.memoryGiB -= r.memoryGiB;
    }
    // The first up rolls every stable Deployment at once, and starts the controller's replicas on stable nodes.
    const need = { cpu: cfg.controller.replicas * quantityValue(cfg.controller.cpu, "cores"), memoryGiB: cfg.controller.replicas * quantityValue(cfg.controller.memory, "GiB") };
    for (const name of p.stableDeployments) {
        const d = kube.deployments.find((x) => x.metadata.name === name && x.metadata.namespace === p.namespace);
        if (!d) continue;
        const r = requests(d.spec?.template?.spec);
        need.cpu += surgePods(d) * r.cpu;
        need.memoryGiB += surgePods(d) * r.memoryGiB;
    }
    const room = `free ${fmt(free.cpu)} CPU and ${fmt(free.memoryGiB)} GiB, the rollout's surge and the controller need ${fmt(need.cpu)} CPU and ${fmt(need.memoryGiB)} GiB`;
    // A warning: after the first up the controller's pods already run (and count as used), and later ups roll no
    // stable Deployment, so this sizes the first up only.
    if (free.cpu < need.cpu || free.memoryGiB < need.memoryGiB) warn("stable-nodes", `${room}: on a first up, surge pods would stay Pending and the up time out; add a stable node (or lower maxSurge) first`);
    else ok("stable-nodes", room);
    return out;
}

/** One request to an IAM policy: an action, and optionally its resource's ARN and the condition keys' values. */
export interface PolicyRequest {
    action: string;
    resource?: string;
    context?: Record<string, string>;
}

/**
 * Whether a policy allows a request, read as IAM evaluates it (IAM User Guide, "Policy evaluation logic"): some Allow
 * statement that applies, and no Deny statement that does. Actions (and NotAction) match case-insensitively with `*`
 * and `?` wildcards; resources match case-sensitively with them (a request without a resource matches any).
 * `principal` keeps only the statements for the principal asked about (a key policy). Conditions: with "ignore", a
 * conditional Allow counts and a conditional Deny does not; with "evaluate", StringEquals, StringLike, ArnEquals and
 * ArnLike are checked against `context` (a missing key, or another operator, does not match).
 */
export function policyAllows(policy: string | object, request: PolicyRequest | string, opts: { principal?: (statement: any) => boolean; conditions?: "ignore" | "evaluate" } = {}): boolean {
    const doc = typeof policy === "string" ? JSON.parse(policy) : policy;
    const r = typeof request === "string" ? { action: request } : request;
    const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
    const wildcard = (pattern: string, flags: string) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`, flags);
    const actionIn = (patterns: string[]) => patterns.some((a) => wildcard(a, "i").test(r.action));
    const resourceIn = (patterns: string[]) => r.resource === undefined || patterns.some((p) => wildcard(p, "").test(r.resource!));
    const conditionHolds = (condition: Record<string, Record<string, string | string[]>>) =>
        Object.entries(condition).every(([operator, byKey]) =>
            Object.entries(byKey).every(([key, values]) => {
                const value = r.context?.[key];
                if (value === undefined) return false;
                if (operator === "StringEquals" || operator === "ArnEquals") return list(values).includes(value);
                if (operator === "StringLike" || operator === "ArnLike") return list(values).some((v) => wildcard(v, "").test(value));
                return false;
            }),
        );
    const applies = (s: any, effect: string) =>
        s.Effect === effect &&
        (s.Action !== undefined ? actionIn(list(s.Action)) : !actionIn(list(s.NotAction))) &&
        (s.Resource !== undefined || s.NotResource === undefined ? resourceIn(list(s.Resource ?? "*")) : !resourceIn(list(s.NotResource))) &&
        (s.Condition === undefined || (opts.conditions === "evaluate" ? conditionHolds(s.Condition) : effect === "Allow"));
    const statements = list<any>(doc.Statement).filter(opts.principal ?? (() => true));
    return statements.some((s) => applies(s, "Allow")) && !statements.some((s) => applies(s, "Deny"));
}

/**
 * Whether a key policy lets cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey (what publishing to an
 * encrypted topic needs), by policyAllows: a principal of "*" matches every principal; conditions are not evaluated,
 * so a conditional Allow counts and a conditional Deny does not (a key refused only under some condition passes).
 */
export function keyLetsCloudWatch(policy: string | undefined): boolean {
    if (!policy) return false;
    const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
    const forCloudWatch = (s: any) => s.Principal === "*" || list<string>(s.Principal?.AWS).includes("*") || list<string>(s.Principal?.Service).includes("cloudwatch.amazonaws.com");
    return ["kms:Decrypt", "kms:GenerateDataKey"].every((action) => policyAllows(policy, action, { principal: forCloudWatch }));
}

/** A half of the reads that could not be made: which, why (one line), and the checks it leaves NOT RUN. */
export interface HalfNotRead {
    half: "aws" | "cluster";
    reason: string;
    checks: string[];
}

/** How the report is asked for, and what it covers beyond the verdicts. */
export interface ReportOptions {
    /** The checks --only selected (every check when absent). */
    only?: string[];
    notRead?: HalfNotRead[];
    json?: boolean;
    findingsOnly?: boolean;
}

/**
 * The report and its exit code: 3 when a half could not be read (its checks NOT RUN, the other half's shown), else 1
 * on a FAIL, else 0. `account` and `context` are undefined when their half was not read.
 */
export function report(cfg: StackConfig, context: string | undefined, account: string | undefined, verdicts: Verdict[], opts: ReportOptions = {}): CommandResult {
    const width = Math.max(...CHECKS.map(([id]) => id.length));
    const failed = verdicts.filter((v) => v.status === "fail").length;
    const warned = verdicts.filter((v) => v.status === "warn").length;
    const notRead = opts.notRead ?? [];
    const notRun = notRead.flatMap((h) => h.checks);
    const exitCode = notRead.length ? EXIT.cannotCheck : failed ? EXIT.findings : EXIT.ok;
    const counts = `${plural(failed, "problem")}, ${plural(warned, "warning")}`;
    const verdict = notRead.length
        ? `COULD NOT CHECK: ${plural(notRun.length, "check")} not run (${[...new Set(notRead.map((h) => (h.half === "aws" ? "AWS" : "the cluster")))].join(" and ")} could not be read); in the checks that ran: ${counts}`
        : failed
          ? `FAILED: ${counts}: fix each FAIL before pulumi up`
          : `OK: no check failed${warned ? ` (${plural(warned, "warning")})` : ""}`;
    const shown = opts.findingsOnly ? verdicts.filter((v) => v.status !== "ok") : verdicts;
    if (opts.json) {
        const body = {
            stack: cfg.stack,
            exitCode,
            cluster: cfg.cluster.name,
            region: cfg.cluster.region,
            account: account ?? null,
            context: context ?? null,
            checks: opts.only ?? CHECKS.map(([id]) => id),
            summary: { ok: verdicts.length - failed - warned, warn: warned, fail: failed, notRun: notRun.length },
            verdicts: shown.map((v) => ({ check: v.check, status: v.status, message: v.message })),
            notRead: notRead.map((h) => ({ half: h.half, reason: h.reason, checks: h.checks })),
            verdict,
        };
        return { exitCode, format: "json", output: jsonText("preflight", body) };
    }
    const where = `cluster ${cfg.cluster.name} in ${cfg.cluster.region} (account ${account ?? "not read"}), context ${context ?? "not read"}`;
    const lines = [
        `Preflight of stack ${cfg.stack}: ${where}${opts.only ? `; only ${opts.only.join(", ")}` : ""}${opts.findingsOnly ? `; findings only (${plural(verdicts.length - shown.length, "OK line")} left out)` : ""}`,
        ...shown.map((v) => `${v.status.toUpperCase().padEnd(4)}  ${v.check.padEnd(width)}  ${v.message}`),
        ...notRead.flatMap((h) => h.checks.map((c) => `NOT RUN  ${c.padEnd(width)}  needs ${needsOf(c) === "both" ? "AWS and the cluster" : h.half === "aws" ? "AWS" : "the cluster"}, which could not be read (below)`)),
        ...notRead.map((h) => `Could not check: ${h.reason}`),
        verdict,
    ];
    // A partial report is still a report: standard output, with the reason on its own lines.
    return { exitCode, output: lines.join("\n"), ...(notRead.length ? { stream: "stdout" as const } : {}) };
}

/** A check that could not be made (exit 3): its message names the call and why. */
export class CannotCheck extends Error {}

/** Where an access refusal sends the operator. */
const PERMISSIONS = "docs/preflight.md lists the read permissions";

/**
 * Preflight's AWS calls (ops/awsCalls.ts: deadlines, throttling retried, each failure by its own code): `missing`
 * error codes mean "not there" (undefined); any other failure cannot be checked (CannotCheck, naming the call).
 */
function reader(d: Deadlines) {
    return async <T>(what: string, fn: () => Promise<T>, missing: string[] = [], onMissing?: (message: string, name: string) => void): Promise<T | undefined> => {
        try {
            return await awsCall(what, fn, { deadlines: d, missing, onMissing, permissions: PERMISSIONS });
        } catch (e) {
            throw e instanceof AwsCallError ? new CannotCheck(e.message) : e;
        }
    };
}

/** A field of an answer preflight reads: present, or the half cannot be checked (an empty answer is never "none"). */
function need<T>(value: T | undefined | null, what: string, field: string): T {
    try {
        return needField(value, what, field);
    } catch (e) {
        throw new CannotCheck((e as Error).message);
    }
}

/** The SDK clients of one half of preflight's reads: the stack's region, the deadlines, the bound on answers. */
export interface AwsReads {
    config: AwsClientConfig;
    deadlines: Deadlines;
    /** Hears each request sent (progress). */
    onCall?: (operation: string) => void;
}

/** A client of `Client` for these reads, heard by onCall. */
function clientOf<C extends { middlewareStack: { add: (m: any, o: any) => void }; destroy: () => void; send: unknown }>(Client: new (config: any) => C, cfg: StackConfig, r: AwsReads): C {
    const client = guarded(new Client(awsClientConfig(cfg.cluster.region, r.config, r.deadlines)), r.deadlines);
    heard(r.onCall, client);
    return client;
}

/** The caller's account and partition (STS GetCallerIdentity, which needs no permission). */
export async function callerIdentity(cfg: StackConfig, r: AwsReads): Promise<{ account: string; partition: string; arn: string }> {
    const { STSClient, GetCallerIdentityCommand } = await import("@aws-sdk/client-sts");
    const sts = clientOf(STSClient, cfg, r);
    try {
        const me = (await reader(r.deadlines)("sts:GetCallerIdentity", () => sts.send(new GetCallerIdentityCommand({}))))!;
        const arn = need(me.Arn, "sts:GetCallerIdentity", "an Arn");
        const account = need(me.Account, "sts:GetCallerIdentity", "an Account");
        if (!/^\d{12}$/.test(account) || !/^arn:aws[a-z-]*:/.test(arn)) throw new CannotCheck(`sts:GetCallerIdentity answered the account ${JSON.stringify(account)} and the ARN ${JSON.stringify(arn)}, which are no account ID and ARN: cannot check`);
        return { account, partition: arn.split(":")[1], arn };
    } finally {
        sts.destroy();
    }
}

/** Reads the AWS facts; throws CannotCheck when a call is refused or the endpoint unreachable. `me`: the caller, when already read. */
export async function gatherAws(cfg: StackConfig, r: AwsReads, now: number, me?: { account: string; partition: string }): Promise<AwsFacts> {
    const call = reader(r.deadlines);
    // Each SDK client is loaded when the reads that need it run, not when preflight starts (or prints its usage).
    const [
        { EKSClient, DescribeAddonCommand, DescribeClusterCommand, paginateListAddons },
        { EC2Client, DescribeImagesCommand, DescribeSecurityGroupsCommand, DescribeSubnetsCommand, paginateDescribeInstanceTypeOfferings, paginateDescribeInstanceTypes },
        { IAMClient, GetPolicyCommand, GetRoleCommand },
        { SQSClient, GetQueueUrlCommand, ListQueueTagsCommand },
        { SNSClient, GetTopicAttributesCommand, ListSubscriptionsByTopicCommand },
        { KMSClient, DescribeKeyCommand, GetKeyPolicyCommand },
        { CloudWatchLogsClient, DescribeLogGroupsCommand, FilterLogEventsCommand },
        { EventBridgeClient, DescribeRuleCommand, ListTagsForResourceCommand },
    ] = await Promise.all([
        import("@aws-sdk/client-eks"),
        import("@aws-sdk/client-ec2"),
        import("@aws-sdk/client-iam"),
        import("@aws-sdk/client-sqs"),
        import("@aws-sdk/client-sns"),
        import("@aws-sdk/client-kms"),
        import("@aws-sdk/client-cloudwatch-logs"),
        import("@aws-sdk/client-eventbridge"),
    ]);
    const [eks, ec2, iam, sqs, sns, kms, logs, events] = [clientOf(EKSClient, cfg, r), clientOf(EC2Client, cfg, r), clientOf(IAMClient, cfg, r), clientOf(SQSClient, cfg, r), clientOf(SNSClient, cfg, r), clientOf(KMSClient, cfg, r), clientOf(CloudWatchLogsClient, cfg, r), clientOf(EventBridgeClient, cfg, r)];
    try {
        const { partition, account } = me ?? (await callerIdentity(cfg, r));
        const name = cfg.cluster.name;
        const np = cfg.nodePool;
        const names = stackNames(cfg);
        const discovery = [{ Name: `tag:${DISCOVERY_TAG}`, Values: [name] }];
        const approved = approvedInstanceTypes(np);
        const tagsOf = (list?: { Key?: string; Value?: string }[]) => Object.fromEntries((list ?? []).map((t) => [t.Key!, t.Value ?? ""]));

        const role = async (roleName: string) => {
            const what = `iam:GetRole ${roleName}`;
            const answer = await call(what, () => iam.send(new GetRoleCommand({ RoleName: roleName })), ["NoSuchEntityException", "NoSuchEntity"]);
            return answer && need(answer.Role, what, "a Role");
        };
        const policy = async (policyName: string) => {
            const what = `iam:GetPolicy ${policyName}`;
            const answer = await call(what, () => iam.send(new GetPolicyCommand({ PolicyArn: `arn:${partition}:iam::${account}:policy/${policyName}` })), ["NoSuchEntityException", "NoSuchEntity"]);
            return answer && need(answer.Policy, what, "a Policy");
        };
        const queue = async (queueName: string) => {
            const what = `sqs:GetQueueUrl ${queueName}`;
            const answer = await call(what, () => sqs.send(new GetQueueUrlCommand({ QueueName: queueName })), NO_QUEUE);
            if (!answer) return undefined;
            const url = need(answer.QueueUrl, what, "a QueueUrl");
            // SQS leaves Tags out of the answer of a queue without tags.
            return (await call(`sqs:ListQueueTags ${queueName}`, () => sqs.send(new ListQueueTagsCommand({ QueueUrl: url }))))!.Tags ?? {};
        };
        const rule = async (ruleName: string) => {
            const what = `events:DescribeRule ${ruleName}`;
            const answer = await call(what, () => events.send(new DescribeRuleCommand({ Name: ruleName })), ["ResourceNotFoundException"]);
            if (!answer) return undefined;
            const arn = need(answer.Arn, what, "an Arn");
            const tags = (await call(`events:ListTagsForResource ${ruleName}`, () => events.send(new ListTagsForResourceCommand({ ResourceARN: arn }))))!;
            return tagsOf(need(tags.Tags, `events:ListTagsForResource ${ruleName}`, "Tags"));
        };
        const topic = async (severity: string, arn: string): Promise<TopicFacts> => {
            const facts: TopicFacts = { severity, arn, exists: false, confirmed: 0, pending: 0 };
            const what = `sns:GetTopicAttributes ${arn}`;
            const answer = await call(what, () => sns.send(new GetTopicAttributesCommand({ TopicArn: arn })), ["NotFoundException", "NotFound"]);
            if (!answer) return facts;
            const attrs = need(answer.Attributes, what, "Attributes");
            facts.exists = true;
            let token: string | undefined;
            do {
                const listing = `sns:ListSubscriptionsByTopic ${arn}`;
                const page = (await call(listing, () => sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: arn, NextToken: token }))))!;
                for (const s of need(page.Subscriptions, listing, "Subscriptions")) {
                    // A subscription awaiting confirmation has the ARN "PendingConfirmation" (SNS API reference, Subscription).
                    if (s.SubscriptionArn === "PendingConfirmation") facts.pending++;
                    else if (s.SubscriptionArn?.startsWith("arn:")) facts.confirmed++;
                }
                token = page.NextToken;
            } while (token);
            facts.kmsKeyId = attrs.KmsMasterKeyId || undefined;
            if (facts.kmsKeyId) {
                const describing = `kms:DescribeKey ${facts.kmsKeyId}`;
                const meta = need((await call(describing, () => kms.send(new DescribeKeyCommand({ KeyId: facts.kmsKeyId }))))!.KeyMetadata, describing, "KeyMetadata");
                const keyId = need(meta.KeyId, describing, "a KeyId");
                const reading = `kms:GetKeyPolicy ${keyId}`;
                const policyDoc = meta.KeyManager === "AWS" ? undefined : need((await call(reading, () => kms.send(new GetKeyPolicyCommand({ KeyId: keyId, PolicyName: "default" }))))!.Policy, reading, "a Policy");
                facts.key = { manager: need(meta.KeyManager, describing, "a KeyManager"), policy: policyDoc };
            }
            return facts;
        };
        // FilterLogEvents may answer pages with no events and a nextToken while it searches a large group (API
        // reference, FilterLogEvents): page on, up to a bound, and say "unsure" rather than "none" when it is reached.
        const karpenterLines = async (): Promise<boolean | "unsure"> => {
            // Fluent Bit's records carry the pod's kubernetes metadata (Container Insights' application log group).
            const filterPattern = `{ $.kubernetes.namespace_name = "${cfg.controller.namespace}" && $.kubernetes.container_name = "${KARPENTER_CONTAINER}" }`;
            const what = `logs:FilterLogEvents ${cfg.alarms.logGroupName}`;
            let token: string | undefined;
            for (let page = 0; page < LOG_SEARCH_PAGES; page++) {
                const r = (await call(what, () =>
                    logs.send(new FilterLogEventsCommand({ logGroupName: cfg.alarms.logGroupName, filterPattern, startTime: now - 86_400_000, endTime: now, limit: 1, nextToken: token })),
                ))!;
                if (need(r.events, what, "events").length) return true;
                token = r.nextToken;
                if (!token) return false;
            }
            return "unsure";
        };

        // ListAddons answers at most 100 names a page, with a nextToken for the rest (EKS API reference, ListAddons).
        const addOns = async () => {
            const all: string[] = [];
            for await (const page of paginateListAddons({ client: eks }, { clusterName: name })) all.push(...need(page.addons, `eks:ListAddons ${name}`, "addons"));
            return all;
        };
        const notFound: AwsFacts["notFound"] = {};
        const [cluster, addon, addOnNames, logGroups, image, subnets, groups, offerings, types, spot, existingNode] = await Promise.all([
            call(`eks:DescribeCluster ${name}`, () => eks.send(new DescribeClusterCommand({ name })), ["ResourceNotFoundException"]),
            cfg.controller.identity === "pod-identity" ? call(`eks:DescribeAddon ${POD_IDENTITY_AGENT}`, () => eks.send(new DescribeAddonCommand({ clusterName: name, addonName: POD_IDENTITY_AGENT })), ["ResourceNotFoundException"]) : undefined,
            cfg.placement.nodeDaemonSets.some((ds) => ds.addOn) ? call(`eks:ListAddons ${name}`, addOns, ["ResourceNotFoundException"]) : undefined,
            call(`logs:DescribeLogGroups ${cfg.alarms.logGroupName}`, () => logs.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: cfg.alarms.logGroupName }))),
            np.ami.id ? call(`ec2:DescribeImages ${np.ami.id}`, () => ec2.send(new DescribeImagesCommand({ ImageIds: [np.ami.id!] })), ["InvalidAMIID.NotFound", "InvalidAMIID.Unavailable"]) : undefined,
            // EC2 refuses the whole call when one listed ID does not exist (EC2 API Reference, DescribeSubnets and
            // DescribeSecurityGroups errors): keep its message, which names the ID.
            call("ec2:DescribeSubnets", () => ec2.send(new DescribeSubnetsCommand(np.subnetIds ? { SubnetIds: np.subnetIds } : { Filters: discovery })), ["InvalidSubnetID.NotFound"], (m) => (notFound.subnets = m)),
            call("ec2:DescribeSecurityGroups", () => ec2.send(new DescribeSecurityGroupsCommand(np.securityGroupIds ? { GroupIds: np.securityGroupIds } : { Filters: discovery })), ["InvalidGroup.NotFound"], (m) => (notFound.securityGroups = m)),
            call("ec2:DescribeInstanceTypeOfferings", async () => {
                const all: { type: string; zone: string }[] = [];
                const input = { LocationType: "availability-zone" as const, Filters: [{ Name: "instance-type", Values: approved }, { Name: "location", Values: np.zones }] };
                for await (const page of paginateDescribeInstanceTypeOfferings({ client: ec2 }, input)) {
                    for (const o of need(page.InstanceTypeOfferings, "ec2:DescribeInstanceTypeOfferings", "InstanceTypeOfferings")) {
                        all.push({ type: need(o.InstanceType, "ec2:DescribeInstanceTypeOfferings", "an offering's InstanceType"), zone: need(o.Location, "ec2:DescribeInstanceTypeOfferings", "an offering's Location") });
                    }
                }
                return all;
            }),
            call("ec2:DescribeInstanceTypes", async () => {
                const all: { type: string; architectures: string[] }[] = [];
                for await (const page of paginateDescribeInstanceTypes({ client: ec2 }, { Filters: [{ Name: "instance-type", Values: approved }] })) {
                    for (const t of need(page.InstanceTypes, "ec2:DescribeInstanceTypes", "InstanceTypes")) {
                        all.push({ type: need(t.InstanceType, "ec2:DescribeInstanceTypes", "a type's InstanceType"), architectures: need(t.ProcessorInfo?.SupportedArchitectures, "ec2:DescribeInstanceTypes", `${t.InstanceType}'s ProcessorInfo.SupportedArchitectures`) });
                    }
                }
                return all;
            }),
            role(SPOT_ROLE),
            cfg.controller.existingNodeRoleName ? role(cfg.controller.existingNodeRoleName) : undefined,
        ]);
        // An answer without the object it is about reads as "absent" below: refuse it here, as an answer that says nothing.
        if (cluster) {
            const c = need(cluster.cluster, `eks:DescribeCluster ${name}`, "a cluster");
            for (const [field, value] of [["a version", c.version], ["a status", c.status], ["resourcesVpcConfig", c.resourcesVpcConfig]] as const) need(value, `eks:DescribeCluster ${name}`, field);
        }
        if (addon) need(need(addon.addon, `eks:DescribeAddon ${POD_IDENTITY_AGENT}`, "an addon").status, `eks:DescribeAddon ${POD_IDENTITY_AGENT}`, "a status");
        const lg = need(logGroups?.logGroups, `logs:DescribeLogGroups ${cfg.alarms.logGroupName}`, "logGroups").some((g) => g.logGroupName === cfg.alarms.logGroupName);
        const images = image && need(image.Images, `ec2:DescribeImages ${np.ami.id}`, "Images");
        const subnetList = subnets && need(subnets.Subnets, "ec2:DescribeSubnets", "Subnets");
        const groupList = groups && need(groups.SecurityGroups, "ec2:DescribeSecurityGroups", "SecurityGroups");
        const named: AwsFacts["names"] = await Promise.all([
            ...[names.controllerRole, ...(cfg.controller.existingNodeRoleName ? [] : [names.nodeRole])].map(async (n) => {
                const r = await role(n);
                return { kind: "IAM role", name: n, tags: r ? tagsOf(r.Tags) : undefined };
            }),
            ...Object.values(names.policies).map(async (n) => {
                const pol = await policy(n);
                return { kind: "IAM policy", name: n, tags: pol ? tagsOf(pol.Tags) : undefined };
            }),
            queue(names.queue).then((tags) => ({ kind: "SQS queue", name: names.queue, tags })),
            ...Object.values(names.rules).map(async (n) => ({ kind: "EventBridge rule", name: n, tags: await rule(n) })),
        ]);
        // The program turns topicNames into topics of the cluster's own account and region (stacks/createStack.ts).
        const topicNames = cfg.alarms.topicNames;
        const topicArn = (name: string) => `arn:${partition}:sns:${cfg.cluster.region}:${account}:${name}`;
        const arns = cfg.alarms.topicArns ?? (topicNames && { warning: topicArn(topicNames.warning), critical: topicArn(topicNames.critical) });
        const topics = arns ? await Promise.all((arns.warning === arns.critical ? [["warning and critical", arns.warning]] : [["warning", arns.warning], ["critical", arns.critical]]).map(([s, a]) => topic(s, a))) : [];
        const im = images?.[0];
        const imageWhat = `ec2:DescribeImages ${np.ami.id}`;
        return {
            account,
            partition,
            cluster: cluster?.cluster ? { version: cluster.cluster.version ?? "?", status: cluster.cluster.status ?? "?", endpoint: endpointAccess(cluster.cluster) } : undefined,
            podIdentityAgent: addon?.addon ? { status: addon.addon.status ?? "?", version: addon.addon.addonVersion ?? "?" } : undefined,
            addOns: addOnNames,
            logGroup: { exists: lg, karpenterLines: lg ? await karpenterLines() : false },
            image: np.ami.id ? (im ? { id: need(im.ImageId, imageWhat, "an ImageId"), state: need(im.State, imageWhat, "an image's State"), architecture: need(im.Architecture, imageWhat, "an image's Architecture"), name: im.Name ?? "" } : null) : undefined,
            subnets: (subnetList ?? []).map((s) => ({ id: need(s.SubnetId, "ec2:DescribeSubnets", "a SubnetId"), zone: need(s.AvailabilityZone, "ec2:DescribeSubnets", "a subnet's AvailabilityZone") })),
            securityGroups: (groupList ?? []).map((g) => ({ id: need(g.GroupId, "ec2:DescribeSecurityGroups", "a GroupId") })),
            notFound,
            offerings: offerings ?? [],
            instanceTypes: types ?? [],
            spotRole: spot !== undefined,
            spotRoleStack: spot ? tagsOf(spot.Tags)[STACK_TAG] : undefined,
            existingNodeRole: cfg.controller.existingNodeRoleName ? existingNode !== undefined : undefined,
            names: named,
            topics,
        };
    } finally {
        for (const client of [eks, ec2, iam, sqs, sns, kms, logs, events]) client.destroy();
    }
}

/** Has `onCall` hear each request these clients send. */
function heard(onCall: ((operation: string) => void) | undefined, ...clients: { middlewareStack: { add: (m: any, o: any) => void } }[]): void {
    if (!onCall) return;
    for (const client of clients) {
        client.middlewareStack.add((next: (a: unknown) => unknown, context: { commandName?: string }) => (args: unknown) => (onCall(context.commandName ?? "?"), next(args)), { step: "initialize", name: "preflightProgress" });
    }
}

/** SQS's answer for a queue that does not exist (JSON protocol, and its awsQuery-compatible code). */
const NO_QUEUE = ["QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"];

/** Each burst worker's queue (queue-visibility): its URL, then its VisibilityTimeout; each queue once. */
export async function gatherQueues(cfg: StackConfig, r: AwsReads): Promise<QueueFacts[]> {
    const b = cfg.placement.burst;
    const names = [...new Set(b.deployments.flatMap((d) => (d.queues ?? []).map((q) => b.queuePrefix + q)))];
    const call = reader(r.deadlines);
    const { SQSClient, GetQueueUrlCommand, GetQueueAttributesCommand } = await import("@aws-sdk/client-sqs");
    const sqs = clientOf(SQSClient, cfg, r);
    try {
        return await Promise.all(
            names.map(async (name): Promise<QueueFacts> => {
                const found = await call(`sqs:GetQueueUrl ${name}`, () => sqs.send(new GetQueueUrlCommand({ QueueName: name })), NO_QUEUE);
                if (!found) return { name };
                const url = need(found.QueueUrl, `sqs:GetQueueUrl ${name}`, "a QueueUrl");
                const what = `sqs:GetQueueAttributes ${name}`;
                const answer = await call(what, () => sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["VisibilityTimeout"] })), NO_QUEUE);
                if (!answer) return { name };
                const seconds = Number(need(need(answer.Attributes, what, "Attributes").VisibilityTimeout, what, "a VisibilityTimeout"));
                if (!Number.isInteger(seconds) || seconds < 0) throw new CannotCheck(`${what} answered a VisibilityTimeout of ${JSON.stringify(answer.Attributes!.VisibilityTimeout)}, which is no number of seconds: cannot check`);
                return { name, visibilityTimeout: seconds };
            }),
        );
    } finally {
        sqs.destroy();
    }
}

/**
 * The Logs Insights query of task durations: every line "<task name> took <seconds>s" (notification-api 72e3ae1e
 * app/celery/celery.py:40-42, NotifyTask.on_success: four decimals) from the burst workers' containers, the longest
 * and the count per container and task. The line is matched anywhere in the event (@message): GC Notify's Fluent Bit
 * keeps the raw container line in `log` (notification-manifests 609853e2 helmfile/overrides/system/fluentbit-agent.yaml.gotmpl,
 * celery-log.conf: a multiline regex parser, so no JSON to merge into log_processed). The container is the
 * record's kubernetes.container_name, or else the one in the log stream's name: that input's Kube_Tag_Prefix
 * (celery.var.log.containers.) is not its tag's (notify-celery.var.log.containers.), so Fluent Bit's kubernetes filter
 * may find no pod and add no metadata, and the output then names the stream fallback-stream + the tag, which ends in
 * the container log's file name, <pod>_<namespace>_<container>-<id>.log.
 */
export function taskDurationQuery(containers: string[], outside: { from: number; to: number }[] = []): string {
    return [
        "filter @message like / took [0-9]+\\.[0-9]+s/",
        // longestTaskSeconds is the longest task outside GC Notify's nightly batch (nodePool.nightlyBatch), when the
        // program disrupts no node: lines logged inside it are left out, by their minute of the UTC day.
        ...(outside.length
            ? ["| fields toMillis(@timestamp) % 86400000 as msOfDay", ...outside.map((w) => `| filter msOfDay < ${w.from * 60_000} or msOfDay >= ${w.to * 60_000}`)]
            : []),
        "| parse @message /(?<task>[A-Za-z0-9_.:-]+) took (?<seconds>[0-9]+\\.[0-9]+)s/",
        "| parse @logStream /_[^_]+_(?<streamContainer>[a-z0-9-]+)-[0-9a-f]{64}\\.log$/",
        "| fields coalesce(kubernetes.container_name, streamContainer, @logStream) as container",
        `| filter container in [${containers.map((c) => JSON.stringify(c)).join(", ")}] and ispresent(seconds)`,
        "| stats max(seconds) as longest, count(*) as runs by container, task",
        "| limit 10000",
    ].join("\n");
}

/**
 * The minutes of the UTC day a local daily window covers on some day between `from` and `to` (epoch ms): one span
 * in UTC, two when a time zone's offset changes in between (EST and EDT), each split at midnight.
 */
export function utcMinutesOfDay(w: DailyWindow, from: number, to: number): { from: number; to: number }[] {
    const spans = new Map<string, { from: number; to: number }>();
    for (let day = Math.floor(from / 86_400_000) * 86_400_000 - 86_400_000; day <= to; day += 86_400_000) {
        const { start, end } = localWindow(w, new Date(day), new Date(day));
        const s = ((start % 1440) + 1440) % 1440;
        const e = s + (end - start);
        for (const span of e <= 1440 ? [{ from: s, to: e }] : [{ from: s, to: 1440 }, { from: 0, to: e - 1440 }]) spans.set(`${span.from}-${span.to}`, span);
    }
    return [...spans.values()].sort((a, b) => a.from - b.from);
}

export const TASK_QUERY_TIMING: QueryTiming = { pollMs: 1000, deadlineMs: 120_000 };

/** Runs the task-durations query over the last `hours` (StartQuery, GetQueryResults until it ends, StopQuery at the deadline). */
export async function gatherTaskDurations(cfg: StackConfig, r: AwsReads, now: number, hours: number, timing: QueryTiming): Promise<TaskDurationFacts> {
    const group = cfg.alarms.logGroupName;
    const call = reader(r.deadlines);
    const { CloudWatchLogsClient, GetQueryResultsCommand, StartQueryCommand, StopQueryCommand } = await import("@aws-sdk/client-cloudwatch-logs");
    const logs = clientOf(CloudWatchLogsClient, cfg, r);
    try {
        let refusal: { message: string; name: string } | undefined;
        const from = now - hours * 3_600_000;
        const nightly = utcMinutesOfDay(cfg.nodePool.nightlyBatch, from, now);
        const input = { logGroupName: group, startTime: Math.floor(from / 1000), endTime: Math.floor(now / 1000), queryString: taskDurationQuery(cfg.placement.burst.deployments.map((d) => d.name), nightly), limit: 10_000 };
        const started = await call(`logs:StartQuery ${group}`, () => logs.send(new StartQueryCommand(input)), ["ResourceNotFoundException", "LimitExceededException"], (message, name) => (refusal = { message, name }));
        if (!started) return { hours, outcome: refusal?.name === "ResourceNotFoundException" ? "no-log-group" : "refused", detail: refusal?.message, rows: [] };
        const queryId = need(started.queryId, `logs:StartQuery ${group}`, "a queryId");
        const deadline = Date.now() + timing.deadlineMs;
        const what = `logs:GetQueryResults ${group}`;
        for (;;) {
            const answer = (await call(what, () => logs.send(new GetQueryResultsCommand({ queryId }))))!;
            const status = need(answer.status, what, "a status");
            if (status !== "Scheduled" && status !== "Running") {
                const field = (row: { field?: string; value?: string }[], name: string) => row.find((f) => f.field === name)?.value ?? "";
                const results = status === "Complete" ? need(answer.results, what, "results") : [];
                const rows = results.map((row) => ({ container: field(row, "container"), task: field(row, "task"), longest: Number(field(row, "longest")), runs: Number(field(row, "runs")) }));
                // A row whose numbers are not numbers is no evidence either way.
                if (rows.some((x) => !Number.isFinite(x.longest) || !Number.isFinite(x.runs) || !x.container || !x.task)) throw new CannotCheck(`${what} answered a row without its container, task, longest or runs: cannot check`);
                return { hours, outcome: status, rows, recordsScanned: answer.statistics?.recordsScanned, bytesScanned: answer.statistics?.bytesScanned };
            }
            if (Date.now() >= deadline) {
                // A query left running still counts against the account's concurrent queries (and bills its scan).
                await call(`logs:StopQuery ${group}`, () => logs.send(new StopQueryCommand({ queryId })), ["InvalidParameterException", "ResourceNotFoundException"]);
                return { hours, outcome: "stopped", detail: `${timing.deadlineMs / 1000} s`, rows: [] };
            }
            await new Promise((resolve) => setTimeout(resolve, timing.pollMs));
        }
    } finally {
        logs.destroy();
    }
}

/** DescribeCluster's endpoint access and authentication mode (botocore eks 2017-11-01 VpcConfigResponse, AccessConfigResponse). */
function endpointAccess(c: { resourcesVpcConfig?: { endpointPublicAccess?: boolean; endpointPrivateAccess?: boolean; publicAccessCidrs?: string[] }; accessConfig?: { authenticationMode?: string } }): EndpointAccess {
    const v = c.resourcesVpcConfig ?? {};
    return {
        publicAccess: v.endpointPublicAccess ?? false,
        privateAccess: v.endpointPrivateAccess ?? false,
        publicAccessCidrs: v.publicAccessCidrs ?? [],
        // A cluster made before access entries existed, and never changed, answers CONFIG_MAP (EKS User Guide,
        // "Change authentication mode"); an answer without the field reads the same.
        authenticationMode: c.accessConfig?.authenticationMode ?? "CONFIG_MAP",
    };
}

/** Reads the cluster facts (list calls only). */
export async function gatherKube(cfg: StackConfig, list: ListObjects): Promise<KubeFacts> {
    const p = cfg.placement;
    const releaseNamespaces = [...new Set([cfg.controller.namespace, ...Object.values(HELMFILE_RELEASES), NIDHOGG_RELEASE.namespace])];
    const dsNamespaces = [...new Set(p.nodeDaemonSets.map((d) => d.namespace))];
    const selector = Object.entries(cfg.cluster.stableNodeSelector).map(([k, v]) => `${k}=${v}`).join(",");
    const [secrets, priorityClasses, pdbs, nodePools, nodeClasses, deployments, daemonSets, stableNodes, pods, namespaces, mutatingWebhooks] = await Promise.all([
        Promise.all(releaseNamespaces.map((ns) => list("secrets", ns, "owner=helm"))).then((l) => l.flat()),
        list("priorityclasses"),
        Promise.all([...new Set([p.namespace, NIDHOGG_RELEASE.namespace])].map((ns) => list("poddisruptionbudgets", ns))).then((l) => l.flat()),
        list("nodepools"),
        list("ec2nodeclasses"),
        list("deployments", p.namespace),
        Promise.all(dsNamespaces.map((ns) => list("daemonsets", ns))).then((l) => l.flat()),
        list("nodes", undefined, selector),
        list("pods"),
        list("namespaces", undefined, `kubernetes.io/metadata.name=${p.namespace}`),
        list("mutatingwebhookconfigurations"),
    ]);
    return { releases: latestReleases(secrets), priorityClasses, pdbs, nodePools, nodeClasses, deployments, daemonSets, stableNodes, pods, namespaces, mutatingWebhooks };
}

const cannotCheck = (why: string): CommandResult => ({ exitCode: EXIT.cannotCheck, output: `Could not check: ${why}` });

/** The checks, once preflight (ops/preflight.ts) has read the flags and `only` the --only selection. */
export async function runPreflight(line: CommandLine, deps: PreflightDeps, mode: { json: boolean; findingsOnly: boolean }, only: string[] | undefined): Promise<CommandResult> {
    const cfg = loadStack(valueOf(line, "stack"), PREFLIGHT, deps.dir ?? PROJECT_DIR);
    if (isResult(cfg)) return cfg;
    const region = valueOf(line, "region");
    if (region !== undefined && region !== cfg.cluster.region) {
        return usage(`--region ${region}: stack ${cfg.stack}'s cluster is in ${cfg.cluster.region} (notify-karpenter:cluster.region), and preflight reads that region only`, PREFLIGHT);
    }
    const profile = valueOf(line, "profile");
    if (profile !== undefined) {
        const known = awsProfiles();
        if (!known.profiles.includes(profile)) {
            return usage(`--profile ${profile}: no such profile in ${known.files.join(" or ")}${didYouMean(profile, known.profiles)}${known.profiles.length ? `: the profiles are ${known.profiles.join(", ")}` : ": it has none"}`, PREFLIGHT);
        }
    }
    const checks = only ?? CHECKS.map(([id]) => id);
    const windowFlag = valueOf(line, "task-window");
    const hours = windowFlag === undefined ? TASK_WINDOW_HOURS : integerFlag("task-window", windowFlag, 1, MAX_TASK_WINDOW_HOURS);
    if (typeof hours === "string") return usage(hours, PREFLIGHT);
    if (windowFlag !== undefined && !checks.includes("task-durations")) return usage(`--task-window only applies to the task-durations check, which --only leaves out`, PREFLIGHT);
    const [wantAws, wantCluster] = [checks.some(needsAws), checks.some(needsCluster)];

    let kc: KubeConfig | undefined;
    let context: string | undefined;
    if (wantCluster) {
        try {
            kc = (deps.kubeConfig ?? checkedKubeConfig)();
        } catch (e) {
            return cannotCheck(`could not load the kubeconfig: ${(e as Error)?.message ?? e}`);
        }
        context = valueOf(line, "context") ?? kc.getCurrentContext();
        if (!context) return usage("the kubeconfig has no current context: pass --context <kubecontext>", PREFLIGHT);
        const refused = useContext(kc, context, cfg.cluster);
        if (refused) return usage(refused, PREFLIGHT);
    }
    const d = deadlinesOf(deps.deadlines);
    let calls = 0;
    const reads: AwsReads = { config: { ...(deps.aws ?? {}), ...(profile ? { profile } : {}) }, deadlines: d, onCall: () => calls++ };
    // The caller first, when the checks read the account anyway: a context whose cluster ARN names another account
    // is refused before anything of that cluster is read (a cluster of the same name elsewhere).
    const baseAws = checks.some((c) => needsAws(c) && !OWN_AWS_READS.includes(c));
    let me: { account: string; partition: string } | CannotCheck | undefined;
    if (baseAws) {
        me = await callerIdentity(cfg, reads).catch((e) => (e instanceof CannotCheck ? e : Promise.reject(e)));
        const otherAccount = kc && context && !(me instanceof CannotCheck) ? useContext(kc, context, cfg.cluster, me) : undefined;
        if (otherAccount) return usage(otherAccount, PREFLIGHT);
    }
    const now = (deps.now ?? Date.now)();
    const cluster = `cluster ${cfg.cluster.name} (context ${context})`;
    // The AWS reads and the cluster's, side by side; the cluster's start with one request that must be answered in
    // time, so that an endpoint this machine has no route to (a private one, off the VPN) is named as such.
    const started = Date.now();
    const halves = [wantAws ? `AWS (account, ${cfg.cluster.region}${profile ? `, profile ${profile}` : ""})` : "", wantCluster ? `cluster ${cfg.cluster.name}` : ""].filter(Boolean);
    progress(`preflight: reading ${halves.join(" and ")}${only ? ` for ${plural(checks.length, "check")}` : ""}`);
    const ticker = setInterval(() => progress(`preflight: still reading after ${elapsed(started)} (${plural(calls, "AWS call")} so far)`), PROGRESS_EVERY_MS);
    ticker.unref?.();
    const [aws, kube] = await Promise.allSettled([
        wantAws
            ? readAws(cfg, reads, now, checks, { hours, timing: deps.taskQuery ?? TASK_QUERY_TIMING }, me).finally(() => progress(`preflight: AWS read in ${elapsed(started)} (${plural(calls, "call")})`))
            : Promise.resolve(undefined),
        wantCluster && kc
            ? reachCluster(kc, deps.reachTimeoutMs ?? REACH_TIMEOUT_MS, d)
                  .then(() => gatherKube(cfg, listerOf(kc!, d)).catch((e) => Promise.reject(new KubeRefusal(e))))
                  .finally(() => progress(`preflight: cluster read in ${elapsed(started)}`))
            : Promise.resolve(undefined),
    ]).finally(() => clearInterval(ticker));
    if (aws.status === "rejected" && !(aws.reason instanceof CannotCheck)) throw aws.reason;
    if (kube.status === "rejected" && !(kube.reason instanceof Unreachable) && !(kube.reason instanceof KubeRefusal)) throw kube.reason;
    const awsFacts = aws.status === "fulfilled" ? aws.value?.facts : undefined;
    const kubeFacts = kube.status === "fulfilled" ? kube.value : undefined;
    const notRead: HalfNotRead[] = aws.status === "fulfilled" ? (aws.value?.failed ?? []) : [];
    if (aws.status === "rejected") notRead.push({ half: "aws", reason: (aws.reason as Error).message, checks: checks.filter(needsAws) });
    if (kube.status === "rejected") {
        // The endpoint's access comes from the AWS half: without it, say so rather than guess.
        const endpoint = awsFacts?.cluster?.endpoint;
        const noEndpoint = !wantAws
            ? "the endpoint's access was not read (the checks selected need no AWS read)"
            : !awsFacts
              ? "the endpoint's access could not be read (AWS could not be read either)"
              : aws.status === "fulfilled" && aws.value?.account === undefined
                ? "the endpoint's access was not read (the checks selected do not read the cluster's)"
                : undefined;
        const reason =
            kube.reason instanceof Unreachable
                ? `${cluster} is unreachable (${kube.reason.message}): ${endpoint || !noEndpoint ? missingAccessStep(cfg.cluster.access, endpoint, cfg.cluster.name) : `${noEndpoint}; cluster.access is ${cfg.cluster.access}`}`
                : `${cluster}: ${kubeError((kube.reason as KubeRefusal).error, cfg, endpoint)}`;
        notRead.push({ half: "cluster", reason, checks: checks.filter((c) => needsCluster(c) && !notRead.some((h) => h.checks.includes(c))) });
    }
    // Each check runs on the facts of the halves it needs; the other half's facts are empty stand-ins it never reads.
    const ran = checks.filter((c) => (!needsAws(c) || awsFacts) && (!needsCluster(c) || kubeFacts) && !notRead.some((h) => h.checks.includes(c)));
    const verdicts = ran.length ? preflightChecks(cfg, awsFacts ?? NO_AWS_FACTS, kubeFacts ?? NO_KUBE_FACTS).filter((v) => ran.includes(v.check)) : [];
    return report(cfg, context, aws.status === "fulfilled" ? aws.value?.account : undefined, verdicts, { only, notRead, json: mode.json, findingsOnly: mode.findingsOnly });
}

/** Checks that make AWS reads of their own, only when selected; the others share gatherAws's. */
const OWN_AWS_READS = ["queue-visibility", "task-durations"];

/**
 * The AWS half: gatherAws's reads when a selected check needs them, and each check's own reads only when it is
 * selected (the task-durations query bills per GB it scans). A refusal of gatherAws's reads fails the half
 * (CannotCheck); a refusal of a check's own reads leaves that check alone NOT RUN, so that a role without the new
 * permissions still gets every other check. `account` is undefined when gatherAws did not run.
 */
async function readAws(
    cfg: StackConfig,
    reads: AwsReads,
    now: number,
    checks: string[],
    tasks: { hours: number; timing: QueryTiming },
    me: { account: string; partition: string } | CannotCheck | undefined,
): Promise<{ facts: AwsFacts; account?: string; failed: HalfNotRead[] }> {
    const own = (check: string) => checks.includes(check);
    // The caller could not be read: nothing of the account can be.
    if (me instanceof CannotCheck) throw me;
    const [base, queues, durations] = await Promise.allSettled([
        me ? gatherAws(cfg, reads, now, me) : Promise.resolve(undefined),
        own("queue-visibility") ? gatherQueues(cfg, reads) : Promise.resolve(undefined),
        own("task-durations") ? gatherTaskDurations(cfg, reads, now, tasks.hours, tasks.timing) : Promise.resolve(undefined),
    ]);
    for (const r of [base, queues, durations]) if (r.status === "rejected" && !(r.reason instanceof CannotCheck)) throw r.reason;
    if (base.status === "rejected") throw base.reason;
    const facts: AwsFacts = { ...(base.value ?? NO_AWS_FACTS) };
    const failed: HalfNotRead[] = [];
    if (queues.status === "fulfilled") facts.queues = queues.value;
    else failed.push({ half: "aws", reason: (queues.reason as Error).message, checks: ["queue-visibility"] });
    if (durations.status === "fulfilled") facts.taskDurations = durations.value;
    else failed.push({ half: "aws", reason: (durations.reason as Error).message, checks: ["task-durations"] });
    return { facts, account: base.value?.account, failed };
}

/**
 * The profiles of the AWS shared config and credentials files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/config and ~/.aws/credentials), as the SDK and the AWS CLI name them: "[profile x]" or "[default]" in config,
 * "[x]" in credentials.
 */
export function awsProfiles(env: NodeJS.ProcessEnv = process.env): { files: string[]; profiles: string[] } {
    const home = env.HOME ?? env.USERPROFILE ?? "~";
    const files = [env.AWS_CONFIG_FILE ?? path.join(home, ".aws", "config"), env.AWS_SHARED_CREDENTIALS_FILE ?? path.join(home, ".aws", "credentials")];
    const profiles = new Set<string>();
    files.forEach((file, i) => {
        let text = "";
        try {
            text = fs.readFileSync(file, "utf8");
        } catch {
            return;
        }
        for (const [, name] of text.matchAll(/^\s*\[\s*([^\]]+?)\s*\]\s*$/gm)) {
            if (i === 1) profiles.add(name);
            else if (name === "default") profiles.add(name);
            else if (name.startsWith("profile ")) profiles.add(name.slice("profile ".length).trim());
        }
    });
    return { files, profiles: [...profiles].sort() };
}

/** How often preflight says it is still reading. */
const PROGRESS_EVERY_MS = 5000;

/** Stand-ins for a half that was not read: only checks that do not need it run on them (CHECK_NEEDS), and those never look. */
const NO_AWS_FACTS: AwsFacts = {
    account: "",
    partition: "aws",
    logGroup: { exists: false, karpenterLines: false },
    subnets: [],
    securityGroups: [],
    notFound: {},
    offerings: [],
    instanceTypes: [],
    spotRole: false,
    names: [],
    topics: [],
};
const NO_KUBE_FACTS: KubeFacts = { releases: [], priorityClasses: [], pdbs: [], nodePools: [], nodeClasses: [], deployments: [], daemonSets: [], stableNodes: [], pods: [], namespaces: [], mutatingWebhooks: [] };

/** How long the API server has to answer preflight's first request (GET /version) before it is called unreachable. */
export const REACH_TIMEOUT_MS = 15_000;

/** A request that failed otherwise than by getting no answer: an HTTP error (401, 403...), a credential plugin's failure. */
class KubeRefusal extends Error {
    readonly error: unknown;
    constructor(error: unknown) {
        super("a Kubernetes request failed");
        this.error = error;
    }
}

/** No HTTP answer from the API server: its message says what the connection did (refused, timed out...). */
class Unreachable extends Error {}

/**
 * One request that any authenticated user may make (GET /version: ClusterRole system:public-info-viewer). It rejects
 * Unreachable only when no HTTP answer comes: refused, reset, unresolvable, or nothing within `timeoutMs` (a private
 * endpoint off the VPN: the connection attempt is never answered). An HTTP error status is an answer, and resolves;
 * a credential plugin that fails or hangs, or an answer that is not the API server's, is a KubeRefusal (its own line,
 * not the VPN's).
 */
async function reachCluster(kc: KubeConfig, timeoutMs: number, deadlines: Deadlines): Promise<void> {
    const d = { ...deadlines, kubeRequestMs: timeoutMs };
    let version: { gitVersion?: unknown } | undefined;
    try {
        version = await apiClient(kc, VersionApi, d).getCode();
    } catch (e) {
        const err = kubeCallError("GET /version", e, d);
        if (err.kind === "http") return;
        if (err.kind === "deadline") throw new Unreachable(`no answer within ${timeoutMs / 1000} s`);
        if (err.kind === "no-route") throw new Unreachable(connectionError(e));
        throw new KubeRefusal(err);
    }
    if (typeof version?.gitVersion !== "string") {
        throw new KubeRefusal(new KubeCallError("malformed", `GET /version: the answer has no gitVersion, so it is not the API server's: is the kubeconfig's server the cluster's API endpoint?`));
    }
}

/** Why a request got no answer, in a few words (the client's own message, and its cause's). */
function connectionError(e: unknown): string {
    const err = e as { message?: string; cause?: { message?: string; code?: string } };
    const message = err?.message ?? String(e);
    return err?.cause?.message && !message.includes(err.cause.message) ? `${message}: ${err.cause.message}` : message;
}

/** A Kubernetes API error in one line; 401 and 403 name what the cluster's authentication mode needs. */
function kubeError(e: unknown, cfg: StackConfig, endpoint: EndpointAccess | undefined): string {
    const err = e as { code?: number; message?: string; cause?: { message?: string } };
    const dir = `plan-out/${cfg.stack}/${CI_ACCESS_DIR}`;
    const files = ciAccessFileNames(cfg.stack);
    const mode = endpoint?.authenticationMode;
    const mapping =
        mode === "CONFIG_MAP"
            ? `map its role in aws-auth (authentication mode CONFIG_MAP: notification-terraform aws/aws-auth/aws-auth.tf; CI's roles: ${dir}/${files.awsAuth})`
            : mode
              ? `give its role an access entry (authentication mode ${mode}: ${dir}/${files.accessEntries})`
              : `map its role (aws-auth or an access entry, ${dir}/)`;
    if (err?.code === 401) return `HTTP 401 Unauthorized: the cluster does not know this identity: refresh the credentials (aws eks update-kubeconfig, aws sso login), or ${mapping}`;
    if (err?.code === 403) {
        return `HTTP 403 Forbidden: the identity may not list what preflight reads (docs/preflight.md lists the permissions); CI's preview role reads through group ${PREVIEW_GROUP}, which the stack's ${PREVIEW_READ_ACCESS} binds: before the stack's first up, run preflight as its up role or an operator`;
    }
    if (e instanceof KubeCallError) return e.message;
    if (typeof err?.code === "number") return `HTTP ${err.code} from the API server`;
    return err?.cause?.message ? `${err.message}: ${err.cause.message}` : `${err?.message ?? e}`;
}

