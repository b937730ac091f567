// The alarms' rules and names: each rule's defaults and limits, which replica metric the controller alarms read, and
// the alarm names CloudWatch will hold, without Pulumi. KarpenterAlarms (components/karpenterAlarms.ts) builds the
// alarms from them; config validation checks a stack's rules against them.
import { type FailureClass, type LogSignal, PROMETHEUS_NAMESPACE, type StuckKind } from "./karpenterSignals.ts";

/** Which notification target an alarm goes to (GC Notify: the alert-warning or alert-critical SNS topic). */
export type AlarmSeverity = "warning" | "critical";

export const SEVERITIES: AlarmSeverity[] = ["warning", "critical"];

/** When an alarm fires: CloudWatch's period, M of N and threshold, and who hears about it. */
export interface AlarmRule {
    /** Seconds per evaluation period: a multiple of 60 (the metrics have one-minute resolution). */
    period: number;
    /** N: how many recent periods CloudWatch looks at. period x N is at most 7 days, and one day for periods under an hour. */
    evaluationPeriods: number;
    /** M: how many of those N periods must breach; at most N. */
    datapointsToAlarm: number;
    /** The value a period's statistic is compared with (>= unless the alarm says otherwise). */
    threshold: number;
    /** Which topic gets the alarm and OK notifications. */
    notify: AlarmSeverity;
}

/** The alarms this component creates; each has its own rule. */
export type AlarmKind =
    | "controllerDown"
    | FailureClass
    | "logHeartbeat"
    | "heartbeat"
    | StuckKind
    | "nodePoolLimit"
    | "queueAge"
    | "failedInvocations"
    | "burstReplicas"
    | "spotInterruptions"
    | "scaleDownOrder";

/**
 * Defaults of every rule, shared with the config schema. The log thresholds follow Karpenter's logging rate: the
 * provisioner requeues every pending pod every 10 s (K pkg/controllers/provisioning/controller.go:70-77) and logs one
 * `could not schedule pod` per loop, so one pod stuck for a whole 5-minute period writes about 28-30 lines.
 */
export const DEFAULT_RULES: Record<AlarmKind, AlarmRule> = {
    // GC Notify's karpenter-replicas-unavailable: Minimum over 300 s, 2 periods, >= 1.
    controllerDown: { period: 300, evaluationPeriods: 2, datapointsToAlarm: 2, threshold: 1, notify: "warning" },
    // 20 lines: two thirds of one pod stuck all period. 3 of 4: an offering blackout after an ICE (3 min, A
    // pkg/cache/cache.go:31) touches at most 2 periods; a pod nothing can place keeps failing.
    unschedulablePods: { period: 300, evaluationPeriods: 4, datapointsToAlarm: 3, threshold: 20, notify: "warning" },
    // One line per failed launch; Karpenter retries another offering within seconds, so only failures in most
    // periods mean launches keep failing.
    launchFailures: { period: 300, evaluationPeriods: 4, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
    // Registration and termination errors: the reconciler retries with backoff up to a minute (K
    // pkg/controllers/nodeclaim/lifecycle/controller.go:117-122), so a persistent one writes a line every minute.
    lifecycleErrors: { period: 300, evaluationPeriods: 4, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
    // Logged on every provisioning loop while pods wait; a NodeClass that is not Ready stays so until someone acts.
    nodePoolNotReady: { period: 300, evaluationPeriods: 2, datapointsToAlarm: 2, threshold: 1, notify: "warning" },
    // An idle Karpenter logs nothing at info, for a whole quiet weekend; a week without one line is a broken log
    // pipeline. CloudWatch evaluates up to 7 days when the period is an hour or more.
    logHeartbeat: { period: 3600, evaluationPeriods: 168, datapointsToAlarm: 168, threshold: 1, notify: "warning" },
    // The leader exports the NodePool limit gauges every scrape (one a minute), busy or idle: 15 minutes without a
    // sample is Karpenter, or the scrape of its metrics, gone silent.
    heartbeat: { period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
    // The gauges hold the seconds a NodeClaim has not initialized, or a node has been NotReady: one period at 30
    // minutes is enough, the value itself is the duration.
    nodeClaimNotInitialized: { period: 300, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 1800, notify: "warning" },
    nodeNotReady: { period: 300, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 1800, notify: "warning" },
    // Percent of the NodePool's cpu or memory limit in use.
    nodePoolLimit: { period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 90, notify: "warning" },
    // The queue keeps messages 300 s; Karpenter normally reads them within seconds.
    queueAge: { period: 60, evaluationPeriods: 5, datapointsToAlarm: 3, threshold: 120, notify: "warning" },
    failedInvocations: { period: 300, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 1, notify: "warning" },
    // GC Notify gives burst workers one more evaluation period than static ones (3 instead of 2).
    burstReplicas: { period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
    spotInterruptions: { period: 3600, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 10, notify: "warning" },
    // Not ready means no pass has succeeded for three intervals; 15 minutes of that is not a restart.
    scaleDownOrder: { period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
};

/** Where the Deployment replica metrics come from, with the dimension names that source uses. */
export interface ReplicaMetricSource {
    /** CloudWatch namespace of the series. @default "ContainerInsights/Prometheus" */
    namespace: string;
    /** Unavailable replicas of a Deployment. @default "kube_deployment_status_replicas_unavailable" */
    replicasUnavailable: string;
    /**
     * Replicas of a Deployment, for the dashboard. @default "kube_deployment_status_replicas": GC Notify's scrape
     * keeps only `kube_deployment_status_replicas.*` of kube-state-metrics (notification-manifests
     * helmfile/charts/aws-cloudwatch/templates/prometheus-configmap.yaml:39-43), so `kube_deployment_spec_replicas`
     * never reaches CloudWatch there.
     */
    desiredReplicas: string;
    /** Dimension names of the cluster, namespace and Deployment. @default ClusterName, namespace, deployment */
    dimensions?: { cluster: string; namespace: string; deployment: string };
}

/** GC Notify's: kube-state-metrics scraped by its CloudWatch agent in Prometheus mode (cwagent-prometheus), as EMF. */
export const DEFAULT_METRIC_SOURCE: ReplicaMetricSource = {
    namespace: PROMETHEUS_NAMESPACE,
    replicasUnavailable: "kube_deployment_status_replicas_unavailable",
    desiredReplicas: "kube_deployment_status_replicas",
    dimensions: { cluster: "ClusterName", namespace: "namespace", deployment: "deployment" },
};

/**
 * Container Insights' own names (the add-on with enhanced observability), for a cluster without kube-state-metrics:
 * namespace ContainerInsights, dimensions ClusterName, Namespace and PodName (the Deployment's name). AWS, CloudWatch
 * User Guide, "Amazon EKS and Kubernetes Container Insights with enhanced observability metrics".
 */
export const CONTAINER_INSIGHTS_METRIC_SOURCE: ReplicaMetricSource = {
    namespace: "ContainerInsights",
    replicasUnavailable: "status_replicas_unavailable",
    desiredReplicas: "replicas_desired",
    dimensions: { cluster: "ClusterName", namespace: "Namespace", deployment: "PodName" },
};

/** CloudWatch's rule for an alarm period. */
export function isValidPeriod(p: unknown): boolean {
    // CloudWatch also takes 10 and 30, but only for high-resolution metrics; every metric these alarms read (log
    // metric filters, the agent's EMF, SQS, EventBridge) has one-minute resolution, and a shorter period misses data
    // points (PutMetricAlarm, Period), which breaching alarms read as an outage.
    return Number.isInteger(p) && (p as number) >= 60 && (p as number) <= 86400 && (p as number) % 60 === 0;
}

/**
 * How long CloudWatch evaluates at most with a period: 7 days (604,800 s), and one day (86,400 s) for periods under
 * an hour (PutMetricAlarm, Period: botocore 1.43.67 cloudwatch/2010-08-01/service-2.json, PutMetricAlarmInput).
 */
function maxEvaluationSeconds(period: number): number {
    return period >= 3600 ? 604800 : 86400;
}

/** CloudWatch limits: a period is a multiple of 60, M <= N, and N periods cover at most 7 days (a day under an hour). */
export function alarmRuleProblems(rule: AlarmRule): { key: keyof AlarmRule; message: string }[] {
    const problems: { key: keyof AlarmRule; message: string }[] = [];
    if (!isValidPeriod(rule.period)) problems.push({ key: "period", message: `must be a multiple of 60 up to 86400 (got ${rule.period})` });
    if (rule.datapointsToAlarm > rule.evaluationPeriods) {
        problems.push({
            key: "datapointsToAlarm",
            message: `must be at most evaluationPeriods (${rule.evaluationPeriods}): an alarm cannot need more breaching periods than it looks at (got ${rule.datapointsToAlarm})`,
        });
    }
    const max = maxEvaluationSeconds(rule.period);
    if (rule.period * rule.evaluationPeriods > max) {
        problems.push({
            key: "evaluationPeriods",
            message:
                `must be at most ${Math.floor(max / rule.period)} with a period of ${rule.period} s: CloudWatch evaluates at most ` +
                (max === 86400 ? "one day with periods under an hour, 7 days with periods of an hour or more" : "7 days") +
                ` (got ${rule.evaluationPeriods})`,
        });
    }
    return problems;
}

/** CloudWatch's limit on alarm names. */
const MAX_ALARM_NAME = 255;

/** The kebab-case part of an alarm or metric filter name for a log signal. */
export const SIGNAL_SLUG: Record<LogSignal, string> = {
    unschedulablePods: "unschedulable-pods",
    launchFailures: "launch-failures",
    lifecycleErrors: "nodeclaim-lifecycle-errors",
    nodePoolNotReady: "nodepool-not-ready",
    logHeartbeat: "log-heartbeat",
};

export const STUCK_SLUG: Record<StuckKind, string> = { nodeClaimNotInitialized: "nodeclaim-not-initialized", nodeNotReady: "node-not-ready" };

/** The alarm names for a cluster: fixed ones by kind, failed invocations by rule label, burst ones by Deployment. */
export function alarmNames(clusterName: string, ruleLabels: string[], burstDeployments: string[]) {
    const byLabel = (labels: string[], name: (l: string) => string) => Object.fromEntries(labels.map((l) => [l, name(l)])) as Record<string, string>;
    return {
        controllerDown: `${clusterName}-karpenter-replicas-unavailable`,
        ...(Object.fromEntries(Object.entries(SIGNAL_SLUG).map(([k, slug]) => [k, `${clusterName}-karpenter-${slug}`])) as Record<LogSignal, string>),
        heartbeat: `${clusterName}-karpenter-metrics-heartbeat`,
        ...(Object.fromEntries(Object.entries(STUCK_SLUG).map(([k, slug]) => [k, `${clusterName}-karpenter-${slug}`])) as Record<StuckKind, string>),
        nodePoolLimit: `${clusterName}-karpenter-nodepool-near-limit`,
        queueAge: `${clusterName}-karpenter-interruption-queue-age`,
        spotInterruptions: `${clusterName}-karpenter-spot-interruptions`,
        scaleDownOrder: `${clusterName}-burst-scale-down-order-replicas-unavailable`,
        failedInvocations: byLabel(ruleLabels, (l) => `${clusterName}-karpenter-${l}-failed-invocations`),
        burstReplicas: byLabel(burstDeployments, (d) => `${clusterName}-${d}-replicas-unavailable`),
    };
}

/** Each burst Deployment whose alarm name CloudWatch would reject, as a "must be" sentence; empty when all fit. */
export function burstAlarmNameProblems(clusterName: string, burstDeployments: string[]): { index: number; message: string }[] {
    const all = alarmNames(clusterName, [], burstDeployments);
    const names = all.burstReplicas;
    // A burst alarm named like one of the fixed ones would overwrite it: PutMetricAlarm replaces an alarm of that name.
    const fixed = new Set(Object.values(all).filter((v): v is string => typeof v === "string"));
    return burstDeployments.flatMap((d, index) => {
        const name = names[d];
        if (name.length > MAX_ALARM_NAME) {
            return [{ index, message: `must be at most ${MAX_ALARM_NAME - (name.length - d.length)} characters, or its alarm name "${name}" exceeds CloudWatch's ${MAX_ALARM_NAME} (got ${d.length} characters)` }];
        }
        return fixed.has(name) ? [{ index, message: `must not be ${JSON.stringify(d)}: its alarm "${name}" would overwrite the Karpenter alarm of that name` }] : [];
    });
}
