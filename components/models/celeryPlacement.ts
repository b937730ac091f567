// Where GC Notify's pods may run, as plain objects: the burst and stable pod templates the patches apply, the burst
// workers' grace and preStop hook, nidhogg's values, the admission policy, and every check on them, without Pulumi.
// CeleryWorkloadPlacement (components/celeryWorkloadPlacement.ts) applies them; config validation and the commands
// read them.
import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { type NodeSelectorRequirement, type PodScheduling, type Taint, type Toleration, requireInEveryTerm } from "./scheduling.ts";

/** Pinned like Karpenter: GC Notify's version, whose taint keys and config format this file was written for. */
export const NIDHOGG_CHART = "oci://ghcr.io/pelotech/charts/nidhogg";

export const NIDHOGG_VERSION = "0.6.6";

/** nidhogg's release (and StatefulSet and PodDisruptionBudget) name and namespace. */
export const NIDHOGG_RELEASE = { name: "nidhogg", namespace: "kube-system" };

/** nidhogg's default prefix; each startup taint is `<prefix>/<namespace>.<daemonset>`. */
const NIDHOGG_TAINT_PREFIX = "nidhogg.uswitch.com";

/** Labels every patched burst pod with its Deployment, so its PodDisruptionBudget selects exactly those pods. */
export const DEPLOYMENT_LABEL = "notify-karpenter/deployment";

/**
 * The burst workers' preStop hook (components/inCluster/celeryPreStop.sh) SIGKILLs the worker this long before the pod's grace
 * ends: the hook starts within a second of the pod's deletion and polls twice a second, and after it returns the
 * kubelet still sends SIGTERM to the container's first process, with at least 2 s to exit (kubernetes
 * pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer, minimumGracePeriodInSeconds).
 */
export const HOOK_MARGIN_SECONDS = 5;

/** EC2 warns of a spot interruption two minutes before it (EC2 User Guide, "Spot Instance interruption notices"). */
export const SPOT_NOTICE_SECONDS = 120;

/**
 * From the notice to the worker's SIGTERM: EventBridge to the interruption queue, Karpenter's receive, the NodeClaim's
 * deletion, the taint and the eviction. The drill measures the part up to the NodeClaim's deletion and fails above
 * this (ops/drillRun.ts, check "reaction"); the taint and eviction that follow in Karpenter's termination controller
 * are not measured. Karpenter long-polls the queue and polls again at once (aws/karpenter-provider-aws v1.14.1
 * pkg/providers/sqs/sqs.go:59-61 WaitTimeSeconds 20, pkg/controllers/interruption/controller.go:102,125
 * RequeueImmediately), so a notice is taken within seconds. 20 s is also the receive's VisibilityTimeout (sqs.go:60):
 * a message whose first handling fails comes back only after it, so a deletion past 20 s means a failed handling, or
 * a lagging queue or controller.
 */
export const INTERRUPTION_REACTION_SECONDS = 20;

/** What a spot interruption leaves a burst worker to finish in: the notice less Karpenter's reaction. */
export const SPOT_ROOM_SECONDS = SPOT_NOTICE_SECONDS - INTERRUPTION_REACTION_SECONDS;

/**
 * The hook, as bash runs it: `bash -c <script> celery-prestop <seconds to SIGKILL>`. Its comments stay in the file:
 * the pod spec carries the commands alone.
 */
export const CELERY_PRESTOP_SCRIPT = fs
    .readFileSync(path.join(import.meta.dirname, "..", "inCluster", "celeryPreStop.sh"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "" && !/^\s*#/.test(line))
    .join("\n");

/** Slack in the drain itself: the hook starts, sees the worker go (it looks twice a second), and the worker exits. */
export const DRAIN_SLACK_SECONDS = 5;

/**
 * How long a burst worker's warm shutdown may run: every task it holds, in turn on its threads (--pool=threads: the
 * executor's shutdown runs every submitted task, celery 5.6.3 celery/concurrency/thread.py:41-56). GC Notify
 * acknowledges a task as it starts (celery/worker/request.py:515-522), and kombu counts only unacknowledged messages
 * against the prefetch limit (kombu 860e40a6 kombu/transport/virtual/base.py:198-205): beside the task each thread
 * runs, a worker holds `prefetchMultiplier` waiting messages per thread (worker_prefetch_multiplier,
 * celery/worker/components.py:227-230). So each thread may run prefetchMultiplier + 1 tasks in a row.
 */
export function burstDrainSeconds(longestTaskSeconds: number, prefetchMultiplier: number): number {
    return (prefetchMultiplier + 1) * longestTaskSeconds;
}

/** A burst worker's grace period: its drain, the drain's slack, then the hook's margin before the kubelet's kill. */
export function burstGraceSeconds(longestTaskSeconds: number, prefetchMultiplier: number): number {
    return burstDrainSeconds(longestTaskSeconds, prefetchMultiplier) + DRAIN_SLACK_SECONDS + HOOK_MARGIN_SECONDS;
}

const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";

/** The chart's selector labels for release "nidhogg" (its StatefulSet is named after the release). */
export const NIDHOGG_POD_LABELS = { "app.kubernetes.io/name": "nidhogg", "app.kubernetes.io/instance": "nidhogg" };

export interface PriorityClassSpec {
    name: string;
    value: number;
}

export interface BurstDeployment {
    name: string;
    /** The PodDisruptionBudget: exactly one of the two, a count or a percentage. */
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    /**
     * Its pods' grace period, which their preStop hook uses to the last few seconds: long enough for the worker to
     * finish every task it holds (burstGraceSeconds).
     */
    terminationGracePeriodSeconds: number;
}

export interface NodeDaemonSet {
    namespace: string;
    name: string;
    /** Tolerate every taint (node agents usually do); otherwise only the ephemeral and startup taints. @default true */
    tolerateAll?: boolean;
    /** Requests equal to limits for one container, so the agent is never starved of CPU on a busy node. */
    guaranteed?: { container: string; cpu: string; memory: string };
    /**
     * New ephemeral nodes keep a startup taint until this agent runs there (nidhogg lifts it), so Celery never starts
     * before it; false only allows the agent on ephemeral nodes. @default true, false for an add-on
     */
    waitFor?: boolean;
    /**
     * The EKS add-on that owns this DaemonSet (aws-ebs-csi-driver): EKS manages its fields and may overwrite a patch
     * at the next add-on update, so it is not patched; its tolerations belong in the add-on's configurationValues.
     */
    addOn?: string;
}

/** Whether new ephemeral nodes wait for this agent (a startup taint nidhogg lifts). */
export const waitsFor = (ds: NodeDaemonSet): boolean => ds.waitFor ?? !ds.addOn;

export interface CeleryWorkloadPlacementArgs {
    /** Namespace of the Celery and other application Deployments (GC Notify: notification-canada-ca). */
    namespace: string;
    /** Label and taint key of ephemeral nodes (EphemeralNodePool.ephemeralKey); the value is "true". */
    ephemeralKey: string;
    /** Pod label (value "true") that marks burst Celery pods; the only pods allowed on ephemeral nodes. */
    burstPodLabel: string;
    /** Labels of the stable on-demand nodes. */
    stableNodeSelector: Record<string, string>;
    priorityClasses: { high: PriorityClassSpec; burst: PriorityClassSpec; headroom: PriorityClassSpec };
    burst: {
        deployments: BurstDeployment[];
        /** Prefer ephemeral nodes but allow stable ones when Karpenter cannot launch. @default false */
        spillToStable?: boolean;
    };
    /** Deployments pinned to stable nodes with the high priority class (API, admin, static Celery, beat...). */
    stableDeployments: string[];
    /** Node agents that must run on every ephemeral node before Celery does. */
    nodeDaemonSets: NodeDaemonSet[];
    admission: {
        /** "deny" rejects offending pods; "warn" only warns and audits (first rollout). */
        mode: "deny" | "warn";
        /** Namespaces whose pods the policy checks. @default [namespace] */
        namespaces?: string[];
    };
    /** Placeholder pods holding room on ephemeral nodes, each the size of one burst Celery pod; 0 turns it off. */
    headroom: { pods: number; cpu: string; memory: string };
    /** Resources to wait for before anything is patched (KarpenterController.ready, the node pool). */
    dependsOn?: pulumi.Resource[];
    /** How the priority classes outlive mistakes and how the first rollout is paced. */
    lifecycle: PlacementLifecycle;
}

export interface PlacementLifecycle {
    /** Refuse to delete or replace the priority classes (production). */
    protect: boolean;
    /** Leave the priority classes in the cluster when Pulumi deletes them: pods that name a missing class are refused. */
    retainOnDelete: boolean;
    /** Stable Deployments patched at once; the next batch waits for this one to roll out. */
    stableBatchSize: number;
    /** How long to wait for a burst Deployment's rollout (new pods wait for a spot node and nidhogg), e.g. "20m". */
    burstPatchTimeout: string;
    /** How long to wait for a node daemonset's rollout on every node, e.g. "15m". */
    daemonSetPatchTimeout: string;
    /** How long to wait for a stable Deployment's rollout (its pods need room on the on-demand nodes), e.g. "15m". */
    stablePatchTimeout: string;
    /**
     * A provider with `upsertExistingObjects` for the priority classes only, so `up` adopts classes of the same name
     * (GC Notify's priority-classes release) instead of failing on AlreadyExists. @default the component's provider
     */
    priorityClassProvider?: k8s.Provider;
}

/** The name of a burst Deployment's PodDisruptionBudget: not the chart's own budget's name (the Deployment's). */

export function burstBudgetName(deployment: string): string {
    return `${deployment}-ephemeral`;
}

/** Consecutive slices of at most `size` items. */
export function batches<T>(items: T[], size: number): T[][] {
    return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

/** The startup taint nidhogg manages for one daemonset: removed once its pod runs on the node. */
export function startupTaintFor(ds: { namespace: string; name: string }): Taint {
    return { key: `${NIDHOGG_TAINT_PREFIX}/${ds.namespace}.${ds.name}`, effect: "NoSchedule" };
}

const ephemeralToleration = (key: string): Toleration => ({ key, operator: "Equal", value: "true", effect: "NoSchedule" });

const ephemeralRequirement = (key: string) => ({ key, operator: "In" as const, values: ["true"] });

/** Where burst pods go: tolerate the ephemeral taint and require (or, with spill-over, prefer) ephemeral nodes. */
function burstScheduling(a: Pick<CeleryWorkloadPlacementArgs, "ephemeralKey" | "burst">): PodScheduling {
    const term = { matchExpressions: [ephemeralRequirement(a.ephemeralKey)] };
    return {
        tolerations: [ephemeralToleration(a.ephemeralKey)],
        affinity: {
            nodeAffinity: a.burst.spillToStable
                ? { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: term }] }
                : { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] } },
        },
    };
}

/** The burst worker's preStop: SIGTERM at once, SIGKILL HOOK_MARGIN_SECONDS before the grace ends. */
export function celeryPreStop(terminationGracePeriodSeconds: number) {
    return { exec: { command: ["/bin/bash", "-c", CELERY_PRESTOP_SCRIPT, "celery-prestop", String(terminationGracePeriodSeconds - HOOK_MARGIN_SECONDS)] } };
}

/**
 * The pod template a burst Deployment ends up with (the fields the patch sets). The container is the chart's
 * (notify-celery names it after its Deployment, templates/deployment.yaml:8, :45); containers merge by name, so the
 * patch replaces its preStop alone.
 */
export function burstPodTemplate(a: Pick<CeleryWorkloadPlacementArgs, "ephemeralKey" | "burst" | "burstPodLabel" | "priorityClasses">, deployment: BurstDeployment) {
    return {
        metadata: { labels: { [a.burstPodLabel]: "true", [DEPLOYMENT_LABEL]: deployment.name } },
        spec: {
            ...burstScheduling(a),
            priorityClassName: a.priorityClasses.burst.name,
            terminationGracePeriodSeconds: deployment.terminationGracePeriodSeconds,
            containers: [{ name: deployment.name, lifecycle: { preStop: celeryPreStop(deployment.terminationGracePeriodSeconds) } }],
        },
    };
}

/**
 * Karpenter skips a pending pod that requires this, without a log line at info level (kubernetes-sigs/karpenter
 * v1.14.1 pkg/controllers/provisioning/provisioner.go:203-212, 570-580). Without it Karpenter considers every
 * unschedulable pod, and a stable pod waiting for the full on-demand group logs `could not schedule pod` forever.
 */
export const NOT_ON_KARPENTER_NODES: NodeSelectorRequirement = { key: "karpenter.sh/nodepool", operator: "DoesNotExist" };

/**
 * The pod template fields a stable Deployment gets: stable nodes only, never a Karpenter node, high priority. The
 * charts give stable Deployments no node affinity, and the terms list is replaced whole (server-side apply treats
 * it as atomic), so the patch's terms are the pod's terms: each carries the requirement.
 */
export function stablePodTemplate(a: CeleryWorkloadPlacementArgs) {
    return {
        spec: {
            nodeSelector: a.stableNodeSelector,
            affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: requireInEveryTerm(undefined, NOT_ON_KARPENTER_NODES) } } },
            priorityClassName: a.priorityClasses.high.name,
        },
    };
}

/** A node daemonset's pod template: it must run on new ephemeral nodes, first. */
export function daemonSetPodTemplate(a: CeleryWorkloadPlacementArgs, ds: NodeDaemonSet) {
    const tolerations: Toleration[] =
        ds.tolerateAll ?? true
            ? [{ operator: "Exists" }]
            : [ephemeralToleration(a.ephemeralKey), ...a.nodeDaemonSets.filter(waitsFor).map((d) => ({ key: startupTaintFor(d).key, operator: "Exists" as const, effect: "NoSchedule" }))];
    const g = ds.guaranteed;
    return {
        spec: {
            tolerations,
            priorityClassName: "system-node-critical",
            ...(g ? { containers: [{ name: g.container, resources: { requests: { cpu: g.cpu, memory: g.memory }, limits: { cpu: g.cpu, memory: g.memory } } }] } : {}),
        },
    };
}

/** The headroom Deployment's name; its pods are named `celery-headroom-<hash>-<hash>`. */
export const HEADROOM_DEPLOYMENT = "celery-headroom";

/**
 * Placeholder pods shaped like one burst Celery pod, lowest priority, so any real pod preempts them. They prefer the
 * nodes that already hold headroom: the pods a burst preempts are re-created on its new nodes, and gathered there
 * they keep as few nodes as possible from emptying when the burst is over (docs/capacity.md).
 */
export function headroomDeployment(a: CeleryWorkloadPlacementArgs) {
    const labels = { app: HEADROOM_DEPLOYMENT, [a.burstPodLabel]: "true" };
    const scheduling = burstScheduling({ ephemeralKey: a.ephemeralKey, burst: { ...a.burst, spillToStable: false } });
    const together = { weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { app: HEADROOM_DEPLOYMENT } }, topologyKey: "kubernetes.io/hostname" } };
    return {
        // Not awaited: the pods wait for spot capacity, and a spot shortage must not fail `up`; the burst alarm watches it.
        metadata: { name: HEADROOM_DEPLOYMENT, namespace: a.namespace, annotations: { "pulumi.com/skipAwait": "true" } },
        spec: {
            replicas: a.headroom.pods,
            selector: { matchLabels: { app: HEADROOM_DEPLOYMENT } },
            template: {
                metadata: { labels },
                spec: {
                    tolerations: scheduling.tolerations,
                    affinity: { ...scheduling.affinity, podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [together] } },
                    priorityClassName: a.priorityClasses.headroom.name,
                    terminationGracePeriodSeconds: 0,
                    automountServiceAccountToken: false,
                    securityContext: { runAsNonRoot: true, runAsUser: 65535, seccompProfile: { type: "RuntimeDefault" } },
                    containers: [
                        {
                            name: "pause",
                            image: PAUSE_IMAGE,
                            resources: { requests: { cpu: a.headroom.cpu, memory: a.headroom.memory }, limits: { memory: a.headroom.memory } },
                            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                        },
                    ],
                },
            },
        },
    };
}

/** nidhogg's values: watch exactly the node daemonsets, on ephemeral nodes only; run on stable nodes. */
export function nidhoggValues(a: CeleryWorkloadPlacementArgs) {
    const configuration = {
        taintNamePrefix: NIDHOGG_TAINT_PREFIX,
        nodeSelector: [`${a.ephemeralKey}=true`],
        daemonsets: a.nodeDaemonSets.filter(waitsFor).map((d) => ({ name: d.name, namespace: d.namespace })),
    };
    return {
        nodeSelector: a.stableNodeSelector,
        // Requests, so a busy stable node cannot squeeze out the one controller every new ephemeral node waits for.
        resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "256Mi" } },
        configuration,
        podAnnotations: {
            // GC Notify's reloader (stakater, autoReloadAll) would add STAKATER_* env vars to the StatefulSet at each
            // change of its ConfigMap or Secret, which no up removes (migration-walk-2 MW2-F4): a pod annotation
            // `reloader.stakater.com/auto: "false"` opts it out (Reloader v1.4.12, chart 2.2.7, pkg/common/common.go
            // ShouldReload reads the pod template's annotations when the workload has none of its own).
            [RELOADER_AUTO_ANNOTATION]: "false",
            // nidhogg reads its configuration file only at start and chart 0.6.6 has no checksum of it: this one rolls
            // the pods when the configuration changes, in the same Helm upgrade.
            [NIDHOGG_CONFIG_CHECKSUM]: createHash("sha256").update(JSON.stringify(configuration)).digest("hex"),
        },
    };
}

/** Reloader's opt-out annotation (stakater/Reloader internal/pkg/options/flags.go ReloaderAutoAnnotation). */
export const RELOADER_AUTO_ANNOTATION = "reloader.stakater.com/auto";

/** The pod annotation that carries the checksum of nidhogg's configuration. */
export const NIDHOGG_CONFIG_CHECKSUM = "notify-karpenter/nidhogg-configuration";

/**
 * The admission policy's CEL. A pod that tolerates the ephemeral taint (by key, or by tolerating everything) or
 * selects ephemeral nodes (nodeSelector, or a required or preferred In/Exists term) must carry the burst label.
 */
export function admissionPolicySpec(a: CeleryWorkloadPlacementArgs) {
    const key = JSON.stringify(a.ephemeralKey).replace(/"/g, "'");
    const label = JSON.stringify(a.burstPodLabel).replace(/"/g, "'");
    const selects = `e.key == ${key} && (e.operator == 'Exists' || (e.operator == 'In' && has(e.values) && 'true' in e.values))`;
    const na = "object.spec.affinity.nodeAffinity";
    return {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"] }] },
        variables: [
            { name: "isBurst", expression: `has(object.metadata.labels) && ${label} in object.metadata.labels && object.metadata.labels[${label}] == 'true'` },
            {
                name: "toleratesEphemeral",
                expression: `has(object.spec.tolerations) && object.spec.tolerations.exists(t, has(t.key) && t.key != '' ? t.key == ${key} : has(t.operator) && t.operator == 'Exists')`,
            },
            {
                name: "selectsEphemeral",
                expression:
                    `(has(object.spec.nodeSelector) && ${key} in object.spec.nodeSelector) || ` +
                    `(has(object.spec.affinity) && has(${na}) && (` +
                    `(has(${na}.requiredDuringSchedulingIgnoredDuringExecution) && ${na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(term, has(term.matchExpressions) && term.matchExpressions.exists(e, ${selects}))) || ` +
                    `(has(${na}.preferredDuringSchedulingIgnoredDuringExecution) && ${na}.preferredDuringSchedulingIgnoredDuringExecution.exists(p, has(p.preference.matchExpressions) && p.preference.matchExpressions.exists(e, ${selects})))))`,
            },
        ],
        validations: [
            {
                expression: "variables.isBurst || !variables.toleratesEphemeral",
                message: `only burst Celery pods (label ${a.burstPodLabel}=true) may tolerate the ephemeral node taint ${a.ephemeralKey}`,
                reason: "Forbidden",
            },
            {
                expression: "variables.isBurst || !variables.selectsEphemeral",
                message: `only burst Celery pods (label ${a.burstPodLabel}=true) may select ephemeral nodes (${a.ephemeralKey})`,
                reason: "Forbidden",
            },
        ],
    };
}

/** Every way these arguments would misplace a pod, as "<what>: <why>". */
export function placementProblems(a: CeleryWorkloadPlacementArgs): string[] {
    const problems: string[] = [];
    const burst = new Set(a.burst.deployments.map((d) => d.name));
    for (const name of a.stableDeployments) if (burst.has(name)) problems.push(`Deployment ${name} is listed as both burst and stable`);
    for (const d of a.burst.deployments) {
        if ((d.minAvailable === undefined) === (d.maxUnavailable === undefined)) problems.push(`Deployment ${d.name}: set exactly one of minAvailable and maxUnavailable`);
    }
    // Every agent tolerates the ephemeral taint, so the policy must never cover an agent's namespace.
    const agentNamespaces = new Set(a.nodeDaemonSets.map((d) => d.namespace));
    for (const ns of a.admission.namespaces ?? [a.namespace]) {
        if (agentNamespaces.has(ns)) problems.push(`the admission policy would reject the node daemonsets in namespace ${ns}, which tolerate the ephemeral taint`);
    }
    // Label values and the name part of a taint key are at most 63 characters; the API server would refuse them.
    for (const d of a.burst.deployments) {
        if (!(Number.isInteger(d.terminationGracePeriodSeconds) && d.terminationGracePeriodSeconds > HOOK_MARGIN_SECONDS)) {
            problems.push(`Deployment ${d.name}: terminationGracePeriodSeconds must be a whole number above ${HOOK_MARGIN_SECONDS}, the seconds its preStop hook leaves before the grace ends (got ${d.terminationGracePeriodSeconds})`);
        }
        if (d.name.length > 63) problems.push(`Deployment ${d.name}: a burst Deployment's name is also its pods' ${DEPLOYMENT_LABEL} label value, at most 63 characters (got ${d.name.length})`);
    }
    for (const d of a.nodeDaemonSets.filter((x) => x.addOn && x.waitFor)) {
        problems.push(`DaemonSet ${d.namespace}/${d.name}: the ${d.addOn} add-on's DaemonSet is not patched, so it cannot be made to tolerate a startup taint; set waitFor: false and its tolerations in the add-on's configurationValues`);
    }
    for (const d of a.nodeDaemonSets.filter(waitsFor)) {
        const keyName = startupTaintFor(d).key.split("/")[1];
        if (keyName.length > 63) problems.push(`DaemonSet ${d.namespace}/${d.name}: its startup taint ${startupTaintFor(d).key} needs "<namespace>.<name>" of at most 63 characters (got ${keyName.length})`);
    }
    const { high, burst: low, headroom } = a.priorityClasses;
    for (const pc of [high, low, headroom]) {
        if (pc.name.startsWith("system-")) problems.push(`priority class ${pc.name}: names starting with "system-" are reserved for Kubernetes`);
    }
    if (!(high.value > low.value && low.value > headroom.value)) {
        problems.push(`priority classes must rank high (${high.value}) above burst (${low.value}) above headroom (${headroom.value})`);
    }
    if (new Set([high.name, low.name, headroom.name]).size < 3) problems.push("the three priority classes need distinct names");
    return problems;
}
/** The service account's user name, as the API server puts it in admission requests. */
export const serviceAccountUser = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

/** The name the stack gives the annotator (its component, Deployment and ServiceAccount). */
export const ANNOTATOR_NAME = "burst-scale-down-order";
