// The spot interruption drill's synthetic workload (docs/drill.md): worker pods placed exactly like burst Celery workers,
// each running one of two worker scripts on the drill's temporary queues, and a PodDisruptionBudget like the burst
// workers' strictest. ops/drill.ts creates them; nothing here talks to a cluster.
import * as fs from "fs";
import * as path from "path";
import { burstPodTemplate, celeryPreStop } from "../components/models/celeryPlacement.ts";
import { DRILL_NAMESPACE, DRILL_SERVICE_ACCOUNT } from "../components/models/fis.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { type StackConfig, type SyntheticProfile, drillWorkerGraceSeconds } from "../stacks/config.ts";

export const WORKER = "drill-worker";
const script = (file: string) => fs.readFileSync(path.join(import.meta.dirname, file), "utf8");
/** late-ack: one message at a time, deleted once done (ops/drillWorker.sh). */
export const LATE_ACK_WORKER_SCRIPT = script("drillWorker.sh");
/** gc-notify: as GC Notify runs Celery (ops/drillWorkerGcNotify.sh). */
export const GC_NOTIFY_WORKER_SCRIPT = script("drillWorkerGcNotify.sh");
/** GC Notify's own preStop hook, modelled (ops/gcNotifyRunCeleryExit.sh): SIGKILL about 10 s after SIGTERM. */
export const GC_NOTIFY_HOOK_SCRIPT = script("gcNotifyRunCeleryExit.sh");

/** Which preStop hook the gc-notify workers run: the program's (what the burst workers get) or GC Notify's own. */
export type DrillHook = "notify-karpenter" | "gc-notify";

export interface WorkerOptions {
    profile: SyntheticProfile;
    hook: DrillHook;
    queues: { work: string; done: string };
    replicas: number;
}

/**
 * The container's command for a gc-notify worker: as in GC Notify's pods, the worker is not the container's first
 * process (that is `/bin/sh -c "sh run_celery_*.sh"`, notification-manifests 609853e2
 * helmfile/charts/notify-celery/templates/deployment.yaml:79-80), so the hook's SIGKILL reaches it (a PID 1 ignores
 * signals it has no handler for) and the kubelet's own SIGTERM to PID 1 does not; the container exits with its code.
 */
export const UNDER_A_SHELL = ["bash -c \"$1\" celery-worker; exit $?", "drill-worker"];

/** The synthetic workers: the burst pod template the stack's real workers get, running the profile's worker script. */
export function workerDeployment(cfg: StackConfig, o: WorkerOptions) {
    const s = cfg.drill.synthetic!;
    const grace = drillWorkerGraceSeconds(s, cfg.placement.burst.prefetchMultiplier, o.profile);
    const template = burstPodTemplate(placementArgs(cfg), { name: WORKER, terminationGracePeriodSeconds: grace });
    const labels = { ...template.metadata.labels, app: WORKER };
    const gcNotify = o.profile === "gc-notify";
    const env = gcNotify
        ? [
              { name: "TASK_SECONDS", value: s.taskSeconds.join(" ") },
              { name: "CONCURRENCY", value: String(s.concurrency) },
              { name: "PREFETCH_MULTIPLIER", value: String(cfg.placement.burst.prefetchMultiplier) },
          ]
        : [
              { name: "WORK_SECONDS", value: String(s.workSeconds) },
              { name: "VISIBILITY_TIMEOUT", value: String(cfg.placement.burst.queueVisibilityTimeoutSeconds) },
          ];
    return {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: WORKER, namespace: DRILL_NAMESPACE, labels: { app: WORKER } },
        spec: {
            replicas: o.replicas,
            selector: { matchLabels: { app: WORKER } },
            template: {
                metadata: { labels },
                spec: {
                    ...template.spec,
                    serviceAccountName: DRILL_SERVICE_ACCOUNT,
                    // Spread over the ephemeral nodes, two or more on each, so the interrupted node holds two.
                    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "ScheduleAnyway", labelSelector: { matchLabels: { app: WORKER } } }],
                    securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } },
                    containers: [
                        {
                            name: "worker",
                            image: s.image,
                            command: gcNotify ? ["/bin/bash", "-c", ...UNDER_A_SHELL, GC_NOTIFY_WORKER_SCRIPT] : ["/bin/bash", "-c", LATE_ACK_WORKER_SCRIPT],
                            // The burst workers' hook as the pod spec carries it (SIGTERM at once, SIGKILL 5 s before the
                            // grace ends), or GC Notify's, to reproduce what it does. The late-ack worker is the
                            // container's first process and takes the kubelet's SIGTERM itself.
                            ...(gcNotify ? { lifecycle: { preStop: o.hook === "notify-karpenter" ? celeryPreStop(grace) : { exec: { command: ["/bin/bash", "-c", GC_NOTIFY_HOOK_SCRIPT] } } } } : {}),
                            env: [
                                { name: "WORK_QUEUE_URL", value: o.queues.work },
                                { name: "DONE_QUEUE_URL", value: o.queues.done },
                                ...env,
                                { name: "AWS_REGION", value: cfg.cluster.region },
                                { name: "HOME", value: "/tmp" },
                            ],
                            // gc-notify runs up to five AWS CLI processes at once (a receive, and each thread's delete or record).
                            resources: gcNotify ? { requests: { cpu: "250m", memory: "320Mi" }, limits: { memory: "640Mi" } } : { requests: { cpu: "50m", memory: "96Mi" }, limits: { memory: "192Mi" } },
                            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                            volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
                        },
                    ],
                    volumes: [{ name: "tmp", emptyDir: {} }],
                },
            },
        },
    };
}

type Budget = { minAvailable: number | string } | { maxUnavailable: number | string };

/** Evictions a budget allows at once among `replicas` healthy pods (percentages round up, as the disruption controller's). */
function allowed(b: Budget, replicas: number): number {
    const count = (v: number | string) => (typeof v === "number" ? v : Math.ceil((replicas * Number(v.replace("%", ""))) / 100));
    return "minAvailable" in b ? replicas - count(b.minAvailable) : count(b.maxUnavailable);
}

/**
 * GC Notify's strictest burst budget when a stack lists no burst Deployment (scratch): staging's notify-celery-sms-send-burst
 * (Pulumi.staging.yaml placement.burst.deployments), which lets one pod go at a time.
 */
const GC_NOTIFY_STRICTEST_BUDGET: Budget = { maxUnavailable: 1 };

/**
 * The synthetic workers' PodDisruptionBudget: the stack's burst budget that lets the fewest of `replicas` pods go at
 * once. Karpenter evicts through the Eviction API and honours it (kubernetes-sigs/karpenter v1.14.1
 * pkg/controllers/node/termination/terminator/terminator.go:96-117): a second worker on the node is evicted only once
 * the first one's replacement is Ready, so its grace starts later, as a real burst worker's would.
 */
export function workerBudget(cfg: StackConfig, replicas: number) {
    const budgets: Budget[] = cfg.placement.burst.deployments.map((d) => (d.minAvailable !== undefined ? { minAvailable: d.minAvailable } : { maxUnavailable: d.maxUnavailable! }));
    const strictest = budgets.length ? budgets.reduce((a, b) => (allowed(b, replicas) < allowed(a, replicas) ? b : a)) : GC_NOTIFY_STRICTEST_BUDGET;
    return {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: WORKER, namespace: DRILL_NAMESPACE },
        spec: { ...strictest, selector: { matchLabels: { app: WORKER } } },
    };
}
