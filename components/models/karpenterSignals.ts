// What Karpenter v1.14.1 writes and exports when it cannot provision, as CloudWatch sees it. Facts from the source at
// tag v1.14.1: kubernetes-sigs/karpenter (K) and aws/karpenter-provider-aws (A); GC Notify's log and metric pipeline
// from cds-snc/notification-manifests (M, 609853e2).
import type * as pulumi from "@pulumi/pulumi";
import { MAX_FILTER_PATTERN, parseJsonPattern } from "./filterPattern.ts";

/**
 * The chart's controller container (A charts/karpenter/values.yaml:124 `containerName: controller`). Fluent Bit's
 * kubernetes filter records it as `kubernetes.container_name`.
 */
export const KARPENTER_CONTAINER = "controller";

/** The failure classes a log metric filter counts, each with its own metric and alarm. */
export type FailureClass = "unschedulablePods" | "launchFailures" | "lifecycleErrors" | "nodePoolNotReady";
export const FAILURE_CLASSES: FailureClass[] = ["unschedulablePods", "launchFailures", "lifecycleErrors", "nodePoolNotReady"];
/** Every log signal: the failure classes and the log heartbeat (any line of Karpenter's container). */
export type LogSignal = FailureClass | "logHeartbeat";

export interface LogSignalSource {
    /** Karpenter's namespace and container (`kubernetes.namespace_name`, `kubernetes.container_name`). */
    namespace: string;
    container: string;
    /** Namespace of the pods Karpenter should place (the burst Celery Deployments). */
    burstNamespace: string;
    /**
     * The burst Deployments, whose pods alone count as unschedulable burst pods. Without any, there is no
     * unschedulable-pods signal: a Job's or CronJob's pod of the namespace is not Karpenter's to place.
     */
    burstDeployments: string[];
    /** The NodePool this program creates. */
    nodePoolName: string;
}

/** The text controller-runtime's `Reconciler error` carries for a launch (K pkg/controllers/nodeclaim/lifecycle/launch.go:116). */
const LAUNCH_ERROR_PREFIX = "launching nodeclaim";

/**
 * CloudWatch Logs JSON filter patterns on Fluent Bit's record of a Karpenter line. GC Notify's Fluent Bit runs with
 * `Merge_Log On` and `Merge_Log_Key log_processed` (M helmfile/overrides/system/fluentbit-agent.yaml.gotmpl:112-125),
 * so Karpenter's JSON line (K pkg/operator/logging/logging.go:59-71: `level` in capitals, `message`, `controller`,
 * `Pod`, `NodePool`, `error`) is the object `log_processed`, next to `kubernetes` metadata.
 *
 * - unschedulablePods: `could not schedule pod` (K pkg/controllers/provisioning/scheduling/scheduler.go:302: limits
 *   reached, no type or offering fits) for a pod of a burst Deployment: its name is `<deployment>-<pod template
 *   hash>-<suffix>`. Not a Job's or CronJob's pod of the same namespace (GC Notify's `notify-db-migration-job-…`,
 *   staging's `notify-jobs-…`), which waits for on-demand capacity and is not Karpenter's to place, and not the
 *   headroom placeholders (`celery-headroom-…`, the NodePool limit alarm reports them). Absent without burst
 *   Deployments.
 * - launchFailures: `failed launching nodeclaim` (insufficient capacity or a NodeClass gone not ready, K
 *   pkg/controllers/nodeclaim/lifecycle/launch.go:87,99) and controller-runtime's `Reconciler error` from
 *   `nodeclaim.lifecycle` whose error starts `launching nodeclaim` (every other launch error, launch.go:116). The
 *   lifecycle reconciler joins its launch, registration, initialization and liveness errors in that order
 *   (K lifecycle/controller.go:167-176, multierr), so a launch error always leads the text.
 * - lifecycleErrors: the other errors of `nodeclaim.lifecycle`: a `Reconciler error` whose error does not start
 *   `launching nodeclaim` (registration: `getting node for nodeclaim, …`, `patching node, …`, K
 *   lifecycle/registration.go:75,111; termination: `finalize`, K lifecycle/controller.go:197-285, such as a refused
 *   TerminateInstances), and `node claim registration error` (registration.go:83-86, a node without Karpenter's
 *   unregistered taint).
 * - nodePoolNotReady: `ignoring nodepool, not ready` for this NodePool (K pkg/controllers/provisioning/provisioner.go:281),
 *   the only line an EC2NodeClass that is not Ready produces.
 * - logHeartbeat: any line of Karpenter's container that Fluent Bit parsed, whatever its level (zap's levels).
 *
 * Each is restricted to Karpenter's container: `InsufficientInstanceCapacity` in another container's output, or a
 * stable pod Karpenter is told to ignore, is not a Karpenter failure.
 */
export function logSignalPatterns(s: LogSignalSource): Partial<Record<LogSignal, string>> {
    const from = `$.kubernetes.namespace_name = "${s.namespace}" && $.kubernetes.container_name = "${s.container}"`;
    const error = `${from} && $.log_processed.level = "ERROR"`;
    const message = (m: string) => `$.log_processed.message = "${m}"`;
    const lifecycleReconcileError = `${message("Reconciler error")} && $.log_processed.controller = "nodeclaim.lifecycle"`;
    const burstPod = s.burstDeployments.map((d) => `$.log_processed.Pod.name = "${d}-*"`).join(" || ");
    return {
        ...(s.burstDeployments.length === 0
            ? {}
            : { unschedulablePods: `{ ${error} && ${message("could not schedule pod")} && $.log_processed.Pod.namespace = "${s.burstNamespace}" && (${burstPod}) }` }),
        launchFailures: `{ ${error} && (${message("failed launching nodeclaim")} || (${lifecycleReconcileError} && $.log_processed.error = "${LAUNCH_ERROR_PREFIX}*")) }`,
        lifecycleErrors: `{ ${error} && ((${lifecycleReconcileError} && $.log_processed.error != "${LAUNCH_ERROR_PREFIX}*") || ${message("node claim registration error")}) }`,
        nodePoolNotReady: `{ ${error} && ${message("ignoring nodepool, not ready")} && $.log_processed.NodePool.name = "${s.nodePoolName}" }`,
        logHeartbeat: `{ ${from} && (${["DEBUG", "INFO", "WARN", "ERROR"].map((l) => `$.log_processed.level = "${l}"`).join(" || ")}) }`,
    };
}

/** Each pattern CloudWatch would refuse (too long, or unreadable), as "must be" sentences. */
export function logSignalProblems(s: LogSignalSource): string[] {
    return Object.entries(logSignalPatterns(s)).flatMap(([k, p]) => {
        if (p.length > MAX_FILTER_PATTERN) return [`the ${k} filter pattern must be at most ${MAX_FILTER_PATTERN} characters (got ${p.length}): shorten the names in it`];
        try {
            parseJsonPattern(p);
            return [];
        } catch (e) {
            return [`the ${k} filter pattern must be a valid JSON filter pattern: ${(e as Error).message}`];
        }
    });
}

// ---- Prometheus metrics ---------------------------------------------------------------------------------------

/**
 * Karpenter's Prometheus metrics the alarms use, with their labels:
 * - usage and limit gauges per NodePool and resource (`resource_type`: `cpu` in cores, `memory` in bytes), set by
 *   the leader every 10 s (K pkg/controllers/metrics/nodepool/controller.go:45-71, 116, 126-137; label names
 *   pkg/metrics/constants.go:29-31). The limit series exist whenever the NodePool has limits (this program's always
 *   does), busy or idle: they are the heartbeat of Karpenter's leader and of the scrape;
 * - nodeclaims disrupted, by `reason`, `nodepool`, `capacity_type` (K pkg/metrics/metrics.go:61-73); the
 *   interruption controller counts a spot interruption of one of this cluster's NodeClaims with reason
 *   `spot_interrupted` (A pkg/controllers/interruption/utils.go:162-166, messages/types.go:40), the liveness
 *   controller a NodeClaim deleted for not launching in 5 or not registering in 15 minutes with `launch_timeout`
 *   and `registration_timeout` (K pkg/controllers/nodeclaim/lifecycle/liveness.go:52-59, 148-157);
 * - how long each status condition of each NodeClaim and Node has had its current status, from operatorpkg's status
 *   controllers, which Karpenter registers for NodeClaims and Nodes with the objects' `karpenter.sh/nodepool` label
 *   as a metric label (K pkg/controllers/controllers.go:143-160). Names: A
 *   website/content/en/docs/reference/metrics.md:61, :139 at v1.14.1 (generated from the binary's registry). Labels
 *   `name`, `type`, `status`, `reason`, plus `karpenter_sh_nodepool` (the label key with `/`, `.`, `-` as `_`),
 *   from awslabs/operatorpkg (O) status/metrics.go:75-94 and status/controller.go:126-146, 209-215, 276-291; the
 *   value is the seconds since the condition's lastTransitionTime, refreshed every 10 s (controller.go:358). O read
 *   at 7a13865 (2026-02-17): v1.14.1 pins 4da4c353 (2026-07-08), which is not available here; status/ is unchanged
 *   from b2c6f3b (2025-08-22) to 7a13865.
 */
export const KARPENTER_METRICS = {
    nodePoolUsage: "karpenter_nodepools_usage",
    nodePoolLimit: "karpenter_nodepools_limit",
    nodeClaimsDisrupted: "karpenter_nodeclaims_disrupted_total",
    nodeClaimConditionSeconds: "operator_nodeclaim_status_condition_current_status_seconds",
    nodeConditionSeconds: "operator_node_status_condition_current_status_seconds",
} as const;
export const SPOT_INTERRUPTED_REASON = "spot_interrupted";
/** Reasons of karpenter_nodeclaims_disrupted_total for a NodeClaim that never launched or registered (K liveness.go:53-54). */
export const TIMEOUT_REASONS = ["launch_timeout", "registration_timeout"] as const;
/** operatorpkg's metric label for the objects' `karpenter.sh/nodepool` label (K pkg/apis/v1/labels.go:41). */
export const NODEPOOL_CONDITION_LABEL = "karpenter_sh_nodepool";

/**
 * The stuck states the condition gauges show, each the condition and statuses that mean "not yet" or "no longer":
 * - a NodeClaim not initialized: `Initialized` is Unknown from creation (a dependent condition starts at the
 *   object's creationTimestamp, O status/condition_set.go:133-140, and keeps its time while the status stays) until the node is Ready with its
 *   startup taints gone (K pkg/controllers/nodeclaim/lifecycle/initialization.go:56-101). Registration times out
 *   after 15 minutes (liveness.go:52), initialization never: such a NodeClaim stays, counted as room for pods.
 * - a node NotReady: the Node's `Ready` condition False or Unknown (the kubelet stopped posting). Karpenter repairs
 *   it only with the nodeRepair feature gate (K pkg/controllers/controllers.go:164-167).
 */
export const STUCK_CONDITIONS = {
    nodeClaimNotInitialized: { metric: KARPENTER_METRICS.nodeClaimConditionSeconds, type: "Initialized", statuses: ["False", "Unknown"] },
    nodeNotReady: { metric: KARPENTER_METRICS.nodeConditionSeconds, type: "Ready", statuses: ["False", "Unknown"] },
} as const;
export type StuckKind = keyof typeof STUCK_CONDITIONS;
export const STUCK_KINDS = Object.keys(STUCK_CONDITIONS) as StuckKind[];

/** Where the CloudWatch agent in Prometheus mode publishes EMF metrics on EKS (as for kube-state-metrics at GC Notify). */
export const PROMETHEUS_NAMESPACE = "ContainerInsights/Prometheus";
/** The log group cwagent-prometheus writes its EMF events to (M templates/prometheus-cwagent-config.yaml:17). */
export const prometheusLogGroup = (cluster: string) => `/aws/containerinsights/${cluster}/prometheus`;
/** The scrape job's name: the `job` label the metric declarations select on. */
const SCRAPE_JOB = "karpenter";

/** EMF dimensions of each metric: ClusterName (added by the agent) and the labels the alarms filter on. */
const METRIC_DIMENSIONS = {
    nodePool: ["ClusterName", "nodepool", "resource_type"],
    disrupted: ["ClusterName", "nodepool", "reason"],
    // Not `status`: the declarations publish only the stuck statuses (False, Unknown), which the alarm takes together.
    condition: ["ClusterName", NODEPOOL_CONDITION_LABEL, "type"],
} as const;

export interface ScrapeTarget {
    clusterName: string;
    /** Namespace and Service of the controller (the chart's Service is named after the release). */
    namespace: string;
    service: string;
    /** The chart's `controller.metrics.port` (default 8080), served by the Service's port `http-metrics`. */
    port: number;
    /** The NodePool whose NodeClaims and nodes the condition gauges are kept for. */
    nodePoolName: string;
}

/** Prometheus joins relabeling source labels with `;` and anchors the regex (RE2) at both ends. */
const KEEP_LABELS = ["__name__", "type", "status", NODEPOOL_CONDITION_LABEL];

/**
 * The series the scrape keeps, as one regex on `__name__;type;status;karpenter_sh_nodepool`: every series of the
 * NodePool and disruption metrics (which have none of the other three labels), and of the condition gauges only the
 * stuck states of this NodePool. A gauge per condition, status and object would otherwise reach the agent every
 * minute for every node of the cluster (its log group bills every event).
 */
export function scrapeKeepRegex(nodePoolName: string): string {
    const plain = [KARPENTER_METRICS.nodePoolUsage, KARPENTER_METRICS.nodePoolLimit, KARPENTER_METRICS.nodeClaimsDisrupted];
    const stuck = STUCK_KINDS.map((k) => {
        const c = STUCK_CONDITIONS[k];
        return `${c.metric};${c.type};(${c.statuses.join("|")});${nodePoolName}`;
    });
    return [`(${plain.join("|")});;;`, ...stuck].join("|");
}

/**
 * Additions to GC Notify's `cwagent-prometheus` (M helmfile/charts/aws-cloudwatch/templates): a scrape job for
 * `prometheus.yaml` (ConfigMap prometheus-config) and EMF metric declarations for `cwagentconfig.json`
 * (ConfigMap prometheus-cwagentconfig, `logs.metrics_collected.prometheus.emf_processor.metric_declaration`).
 *
 * The job discovers the Service's endpoints (port `http-metrics`), so every replica is scraped: only the leader
 * exports the NodePool gauges, the condition gauges and counts disruptions, and a static target on the Service would
 * hit either replica at random. cwagent-prometheus may list endpoints (M templates/prometheus-iam.yaml:1-16).
 * GC Notify's own kube-state-metrics job keeps only `kube_deployment_status_replicas.*` and `kube_daemonset_status.*`
 * (M templates/prometheus-configmap.yaml:40-44), so `kube_node_status_condition` never reaches CloudWatch there:
 * the stuck alarms read Karpenter's own condition gauges instead, through this job.
 */
export function cloudwatchAgentKarpenterConfig(t: ScrapeTarget) {
    const condition = (k: StuckKind) => {
        const c = STUCK_CONDITIONS[k];
        return {
            source_labels: ["job", "type", "status"],
            label_matcher: `^${SCRAPE_JOB};${c.type};(${c.statuses.join("|")})$`,
            dimensions: [[...METRIC_DIMENSIONS.condition]],
            metric_selectors: [`^${c.metric}$`],
        };
    };
    return {
        cluster: t.clusterName,
        metricsEndpoint: `http://${t.service}.${t.namespace}.svc:${t.port}/metrics`,
        scrape_configs: [
            {
                job_name: SCRAPE_JOB,
                kubernetes_sd_configs: [{ role: "endpoints", namespaces: { names: [t.namespace] } }],
                relabel_configs: [
                    { source_labels: ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"], action: "keep", regex: `${t.service};http-metrics` },
                    { source_labels: ["__meta_kubernetes_pod_name"], action: "replace", target_label: "pod_name" },
                ],
                // Only what the alarms and dashboard read: CloudWatch bills every metric and every log event.
                metric_relabel_configs: [{ source_labels: [...KEEP_LABELS], regex: scrapeKeepRegex(t.nodePoolName), action: "keep" }],
            },
        ],
        metric_declaration: [
            {
                source_labels: ["job"],
                label_matcher: `^${SCRAPE_JOB}$`,
                dimensions: [[...METRIC_DIMENSIONS.nodePool]],
                metric_selectors: [`^${KARPENTER_METRICS.nodePoolUsage}$`, `^${KARPENTER_METRICS.nodePoolLimit}$`],
            },
            {
                source_labels: ["job"],
                label_matcher: `^${SCRAPE_JOB}$`,
                dimensions: [[...METRIC_DIMENSIONS.disrupted]],
                metric_selectors: [`^${KARPENTER_METRICS.nodeClaimsDisrupted}$`],
            },
            ...STUCK_KINDS.map(condition),
        ],
    };
}

/** A CloudWatch metric an alarm or the drill reads. */
export type Metric = { namespace: string; metricName: string; statistic: string; dimensions?: Record<string, pulumi.Input<string>> };

/** The metrics heartbeat: samples of the leader's cpu limit gauge for this NodePool (one per scrape). */
export function heartbeatMetric(cluster: string, nodePool: string): Metric {
    return {
        namespace: PROMETHEUS_NAMESPACE,
        metricName: KARPENTER_METRICS.nodePoolLimit,
        statistic: "SampleCount",
        dimensions: { ClusterName: cluster, nodepool: nodePool, resource_type: "cpu" },
    };
}

/** The longest a NodeClaim of the pool has not initialized, or a node of the pool has been NotReady, in seconds. */
export function stuckMetric(cluster: string, nodePool: string, kind: StuckKind): Metric {
    const c = STUCK_CONDITIONS[kind];
    return { namespace: PROMETHEUS_NAMESPACE, metricName: c.metric, statistic: "Maximum", dimensions: { ClusterName: cluster, [NODEPOOL_CONDITION_LABEL]: nodePool, type: c.type } };
}
