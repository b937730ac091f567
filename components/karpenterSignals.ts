// What Karpenter v1.14.1 writes and exports when it cannot provision, as CloudWatch sees it. Facts from the source at
// tag v1.14.1: kubernetes-sigs/karpenter (K) and aws/karpenter-provider-aws (A); GC Notify's log and metric pipeline
// from cds-snc/notification-manifests (M, 609853e2).
import { HEADROOM_DEPLOYMENT } from "./celeryWorkloadPlacement";
import { MAX_FILTER_PATTERN, parseJsonPattern } from "./filterPattern";

/**
 * The chart's controller container (A charts/karpenter/values.yaml:124 `containerName: controller`). Fluent Bit's
 * kubernetes filter records it as `kubernetes.container_name`.
 */
export const KARPENTER_CONTAINER = "controller";

/** The failure classes a log metric filter counts, each with its own metric and alarm. */
export type FailureClass = "unschedulablePods" | "launchFailures" | "nodePoolNotReady";
export const FAILURE_CLASSES: FailureClass[] = ["unschedulablePods", "launchFailures", "nodePoolNotReady"];

export interface LogSignalSource {
    /** Karpenter's namespace and container (`kubernetes.namespace_name`, `kubernetes.container_name`). */
    namespace: string;
    container: string;
    /** Namespace of the pods Karpenter should place (the burst Celery Deployments). */
    burstNamespace: string;
    /** The NodePool this program creates. */
    nodePoolName: string;
}

/**
 * CloudWatch Logs JSON filter patterns on Fluent Bit's record of a Karpenter line. GC Notify's Fluent Bit runs with
 * `Merge_Log On` and `Merge_Log_Key log_processed` (M helmfile/overrides/system/fluentbit-agent.yaml.gotmpl:112-125),
 * so Karpenter's JSON line (K pkg/operator/logging/logging.go:59-71: `level` in capitals, `message`, `controller`,
 * `Pod`, `NodePool`, `error`) is the object `log_processed`, next to `kubernetes` metadata.
 *
 * - unschedulablePods: `could not schedule pod` for a pod of the burst namespace (K
 *   pkg/controllers/provisioning/scheduling/scheduler.go:302): limits reached, no type or offering fits. Not the
 *   headroom placeholders: preempted during every burst, they wait whenever the pool is full, which the NodePool
 *   limit alarm reports.
 * - launchFailures: `failed launching nodeclaim` (insufficient capacity or a NodeClass gone not ready, K
 *   pkg/controllers/nodeclaim/lifecycle/launch.go:87,99) and controller-runtime's `Reconciler error` from
 *   `nodeclaim.lifecycle` for every other launch error (launch.go:116).
 * - nodePoolNotReady: `ignoring nodepool, not ready` for this NodePool (K pkg/controllers/provisioning/provisioner.go:281),
 *   the only line an EC2NodeClass that is not Ready produces.
 * - heartbeat: any line of Karpenter's container that Fluent Bit parsed, whatever its level (zap's levels).
 *
 * Each is restricted to Karpenter's container: `InsufficientInstanceCapacity` in another container's output, or a
 * stable pod Karpenter is told to ignore, is not a Karpenter failure.
 */
export function logSignalPatterns(s: LogSignalSource): Record<FailureClass | "heartbeat", string> {
    const from = `$.kubernetes.namespace_name = "${s.namespace}" && $.kubernetes.container_name = "${s.container}"`;
    const error = `${from} && $.log_processed.level = "ERROR"`;
    const message = (m: string) => `$.log_processed.message = "${m}"`;
    return {
        unschedulablePods: `{ ${error} && ${message("could not schedule pod")} && $.log_processed.Pod.namespace = "${s.burstNamespace}" && $.log_processed.Pod.name != "${HEADROOM_DEPLOYMENT}-*" }`,
        launchFailures: `{ ${error} && (${message("failed launching nodeclaim")} || (${message("Reconciler error")} && $.log_processed.controller = "nodeclaim.lifecycle")) }`,
        nodePoolNotReady: `{ ${error} && ${message("ignoring nodepool, not ready")} && $.log_processed.NodePool.name = "${s.nodePoolName}" }`,
        heartbeat: `{ ${from} && (${["DEBUG", "INFO", "WARN", "ERROR"].map((l) => `$.log_processed.level = "${l}"`).join(" || ")}) }`,
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
 *   pkg/metrics/constants.go:29-31);
 * - nodeclaims disrupted, by `reason`, `nodepool`, `capacity_type` (K pkg/metrics/metrics.go:61-73); the
 *   interruption controller counts a spot interruption of one of this cluster's NodeClaims with reason
 *   `spot_interrupted` (A pkg/controllers/interruption/utils.go:162-166, messages/types.go:40).
 */
export const KARPENTER_METRICS = {
    nodePoolUsage: "karpenter_nodepools_usage",
    nodePoolLimit: "karpenter_nodepools_limit",
    nodeClaimsDisrupted: "karpenter_nodeclaims_disrupted_total",
} as const;
export const SPOT_INTERRUPTED_REASON = "spot_interrupted";

/** Where the CloudWatch agent in Prometheus mode publishes EMF metrics on EKS (as for kube-state-metrics at GC Notify). */
export const PROMETHEUS_NAMESPACE = "ContainerInsights/Prometheus";
/** The scrape job's name: the `job` label the metric declarations select on. */
export const SCRAPE_JOB = "karpenter";

/** EMF dimensions of each metric: ClusterName (added by the agent) and the labels the alarms filter on. */
export const METRIC_DIMENSIONS = {
    nodePool: ["ClusterName", "nodepool", "resource_type"],
    disrupted: ["ClusterName", "nodepool", "reason"],
} as const;

export interface ScrapeTarget {
    clusterName: string;
    /** Namespace and Service of the controller (the chart's Service is named after the release). */
    namespace: string;
    service: string;
    /** The chart's `controller.metrics.port` (default 8080), served by the Service's port `http-metrics`. */
    port: number;
}

/**
 * Additions to GC Notify's `cwagent-prometheus` (M helmfile/charts/aws-cloudwatch/templates): a scrape job for
 * `prometheus.yaml` (ConfigMap prometheus-config) and EMF metric declarations for `cwagentconfig.json`
 * (ConfigMap prometheus-cwagentconfig, `logs.metrics_collected.prometheus.emf_processor.metric_declaration`).
 *
 * The job discovers the Service's endpoints (port `http-metrics`), so every replica is scraped: only the leader
 * exports the NodePool gauges and counts disruptions, and a static target on the Service would hit either replica
 * at random. cwagent-prometheus may list endpoints (M templates/prometheus-iam.yaml:1-16).
 */
export function cloudwatchAgentKarpenterConfig(t: ScrapeTarget) {
    const names = Object.values(KARPENTER_METRICS);
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
                // Only what the alarms and dashboard read: CloudWatch bills every metric.
                metric_relabel_configs: [{ source_labels: ["__name__"], regex: names.join("|"), action: "keep" }],
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
        ],
    };
}
