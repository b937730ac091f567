import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import {
    FAILURE_CLASSES,
    type FailureClass,
    KARPENTER_CONTAINER,
    KARPENTER_METRICS,
    type LogSignal,
    NODEPOOL_CONDITION_LABEL,
    PROMETHEUS_NAMESPACE,
    SPOT_INTERRUPTED_REASON,
    STUCK_CONDITIONS,
    STUCK_KINDS,
    type StuckKind,
    TIMEOUT_REASONS,
    logSignalPatterns,
    prometheusLogGroup,
    logSignalProblems,
    type Metric,
    heartbeatMetric,
    stuckMetric,
} from "./models/karpenterSignals.ts";
import { type AlarmKind, type AlarmRule, type AlarmSeverity, DEFAULT_METRIC_SOURCE, DEFAULT_RULES, type ReplicaMetricSource, SEVERITIES, SIGNAL_SLUG, STUCK_SLUG, alarmNames, alarmRuleProblems, burstAlarmNameProblems } from "./models/alarmRules.ts";

/** An SNS subscription endpoint of a created topic. */
export interface Subscription {
    protocol: "email" | "https";
    endpoint: string;
}

export interface KarpenterAlarmsArgs {
    /** The EKS cluster name: part of every alarm, topic and dashboard name, and the ClusterName dimension. */
    clusterName: string;
    /** The cluster's region, for the dashboard's widgets. */
    region: string;
    /** Account and partition of the cluster, for the topics' KMS key policy. */
    accountId: pulumi.Input<string>;
    partition: pulumi.Input<string>;
    /**
     * Existing SNS topics to notify (GC Notify: alert-warning and alert-critical), in the cluster's region: someone
     * is subscribed to them. When absent, the component creates two KMS-encrypted topics,
     * `<cluster>-karpenter-warning` and `<cluster>-karpenter-critical`, subscribed to `subscriptions`.
     */
    topicArns?: Record<AlarmSeverity, pulumi.Input<string>>;
    /** Endpoints of the created topics; each needs at least one, or its alarms reach nobody. */
    subscriptions?: Record<AlarmSeverity, Subscription[]>;
    /** Where replica metrics come from. @default DEFAULT_METRIC_SOURCE */
    metricSource?: ReplicaMetricSource;
    /** Namespace and Deployment of the Karpenter controller. @default "karpenter" and "karpenter" */
    karpenterNamespace?: string;
    karpenterDeployment?: string;
    /** The controller's container name in its pods. @default KARPENTER_CONTAINER */
    karpenterContainer?: string;
    /** The NodePool whose readiness, usage and interruptions the alarms watch. */
    nodePoolName: string;
    /** The log group the controller's container logs go to (GC Notify: Fluent Bit to Container Insights). */
    logGroupName: string;
    /** Create that log group (one week's retention), where no log shipper has: a scratch account. @default false */
    createLogGroup?: boolean;
    /** The interruption queue's name. */
    queueName: pulumi.Input<string>;
    /** The EventBridge rules that feed the queue, by a short label used in alarm names (`spot-interruption`, ...). */
    ruleNames: Record<string, pulumi.Input<string>>;
    /** Namespace of the burst Celery Deployments. @default "notification-canada-ca" */
    burstNamespace?: string;
    /** Burst Celery Deployments that Karpenter's spot nodes serve; one alarm each. @default [] */
    burstDeployments?: string[];
    /** The scale-down annotator's Deployment (BurstScaleDownOrder), in karpenterNamespace; one alarm when given. */
    scaleDownOrderDeployment?: string;
    /** Rules of each alarm; a missing one uses DEFAULT_RULES. @default DEFAULT_RULES */
    rules?: Partial<Record<AlarmKind, AlarmRule>>;
}

/** The args with their defaults, every rule filled in. */
type Resolved = Required<Omit<KarpenterAlarmsArgs, "topicArns" | "subscriptions" | "scaleDownOrderDeployment" | "rules">> &
    Pick<KarpenterAlarmsArgs, "topicArns" | "subscriptions" | "scaleDownOrderDeployment"> & { rules: Record<AlarmKind, AlarmRule> };

/** Defaults applied and every input checked; throws one message listing every problem, before any child exists. */
function resolve(name: string, args: KarpenterAlarmsArgs): Resolved {
    const rules = Object.fromEntries((Object.keys(DEFAULT_RULES) as AlarmKind[]).map((k) => [k, args.rules?.[k] ?? DEFAULT_RULES[k]])) as Record<AlarmKind, AlarmRule>;
    const a: Resolved = {
        metricSource: DEFAULT_METRIC_SOURCE,
        karpenterNamespace: "karpenter",
        karpenterDeployment: "karpenter",
        karpenterContainer: KARPENTER_CONTAINER,
        createLogGroup: false,
        burstNamespace: "notification-canada-ca",
        burstDeployments: [],
        ...(Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)) as KarpenterAlarmsArgs),
        rules,
    };
    const problems = [
        ...(Object.keys(rules) as AlarmKind[]).flatMap((k) => alarmRuleProblems(rules[k]).map((p) => `rules.${k}.${p.key} ${p.message}`)),
        ...(rules.nodePoolLimit.threshold > 100 ? [`rules.nodePoolLimit.threshold must be a percentage of the limit, at most 100 (got ${rules.nodePoolLimit.threshold})`] : []),
        ...logSignalProblems(signalSource(a)),
        ...burstAlarmNameProblems(a.clusterName, a.burstDeployments).map((p) => `burstDeployments[${p.index}] ${p.message}`),
        ...(new Set(a.burstDeployments).size !== a.burstDeployments.length ? ["burstDeployments must be distinct"] : []),
        ...(a.topicArns
            ? []
            : SEVERITIES.filter((s) => (a.subscriptions?.[s] ?? []).length === 0).map(
                  (s) => `subscriptions.${s} must list at least one endpoint when topicArns is not given: the created ${s} topic would notify nobody`,
              )),
    ];
    if (problems.length > 0) throw new Error(`KarpenterAlarms ${name}: ${problems.join("; ")}`);
    return a;
}

/** The EventBridge rule label of EC2 Spot interruption warnings (components/models/controllerPolicy.ts interruptionRules), for the dashboard. */
const SPOT_RULE = "spot-interruption";

const signalSource = (a: Pick<Resolved, "karpenterNamespace" | "karpenterContainer" | "burstNamespace" | "burstDeployments" | "nodePoolName">) => ({
    namespace: a.karpenterNamespace,
    container: a.karpenterContainer,
    burstNamespace: a.burstNamespace,
    burstDeployments: a.burstDeployments,
    nodePoolName: a.nodePoolName,
});

/**
 * CloudWatch alarms that say when Karpenter is down or silent, cannot place burst pods, cannot launch nodes, fails
 * otherwise in a NodeClaim's lifecycle, ignores its NodePool, nears the NodePool's limits, or leaves a NodeClaim
 * uninitialized or a node NotReady; when its logs stop; when interruption handling is stuck; and when burst capacity
 * is unhealthy. With their notification topics and a dashboard per cluster.
 */
export class KarpenterAlarms extends pulumi.ComponentResource {
    /** Alarm and OK notification targets, by severity. */
    public readonly topicArns: Record<AlarmSeverity, pulumi.Output<string>>;
    /** Every alarm's name (known at preview). */
    public readonly alarmNames: string[];
    public readonly alarmArns: pulumi.Output<string>[];
    public readonly dashboardName: string;
    /** The metric filters' JSON patterns by failure class (and log heartbeat), as CloudWatch Logs receives them. */
    public readonly logPatterns: Partial<Record<LogSignal, string>>;

    constructor(name: string, args: KarpenterAlarmsArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:KarpenterAlarms", name, {}, opts);
        const a = resolve(name, args);
        const child = { parent: this };
        this.topicArns = notificationTopics(name, a, child);
        this.logPatterns = logSignalPatterns(signalSource(a));
        const filters = logMetricFilters(name, a, this.logPatterns, child);

        const names = alarmNames(a.clusterName, Object.keys(a.ruleNames), a.burstDeployments);
        const specs = [...controllerAlarms(a, names, filters), ...stuckNodeAlarms(a, names), ...capacityAlarms(a, names), ...interruptionAlarms(a, names)];
        const alarms = specs.map((s) => metricAlarm(name, s, a.rules[s.kind], this.topicArns, this));
        this.alarmNames = specs.map((s) => s.name);
        this.alarmArns = alarms.map((x) => x.arn);

        this.dashboardName = `${a.clusterName}-karpenter`;
        new aws.cloudwatch.Dashboard(
            `${name}-dashboard`,
            {
                dashboardName: this.dashboardName,
                dashboardBody: pulumi
                    .all([pulumi.output(a.queueName), pulumi.all(a.ruleNames), pulumi.all(this.alarmArns)])
                    .apply(([queueName, ruleNames, alarmArns]) => JSON.stringify(dashboardBody({ ...a, cluster: a.clusterName, source: a.metricSource, queueName, ruleNames, alarmArns }))),
            },
            child,
        );

        this.registerOutputs({ topicArns: this.topicArns, alarmNames: this.alarmNames, alarmArns: this.alarmArns, dashboardName: this.dashboardName, logPatterns: this.logPatterns });
    }
}

/**
 * The given topics, or two created here with their subscriptions. CloudWatch can publish to an encrypted topic only
 * when the key lets it, which AWS's managed aws/sns key does not: hence a key of our own.
 */
function notificationTopics(name: string, a: Resolved, child: pulumi.CustomResourceOptions): Record<AlarmSeverity, pulumi.Output<string>> {
    if (a.topicArns) return { warning: pulumi.output(a.topicArns.warning), critical: pulumi.output(a.topicArns.critical) };
    const cluster = a.clusterName;
    const key = new aws.kms.Key(
        `${name}-topics-key`,
        {
            description: `Encrypts the Karpenter alarm topics of ${cluster}`,
            enableKeyRotation: true,
            policy: pulumi.all([a.partition, a.accountId]).apply(([p, id]) => JSON.stringify(topicKeyPolicy(p, id))),
        },
        child,
    );
    new aws.kms.Alias(`${name}-topics-key-alias`, { name: `alias/${cluster}-karpenter-alarms`, targetKeyId: key.keyId }, child);
    const topic = (severity: AlarmSeverity) => {
        const t = new aws.sns.Topic(`${name}-${severity}-topic`, { name: `${cluster}-karpenter-${severity}`, kmsMasterKeyId: key.arn }, child);
        a.subscriptions![severity].forEach(
            (s, i) => new aws.sns.TopicSubscription(`${name}-${severity}-subscription-${i}`, { topic: t.arn, protocol: s.protocol, endpoint: s.endpoint }, child),
        );
        return t.arn;
    };
    return { warning: topic("warning"), critical: topic("critical") };
}

/** A metric per failure class and one for the log heartbeat. A period with log events but no match counts 0. */
function logMetricFilters(name: string, a: Resolved, patterns: Partial<Record<LogSignal, string>>, child: pulumi.CustomResourceOptions) {
    // A metric filter needs its log group to exist; on a created log group it waits for it.
    const logGroupName = a.createLogGroup ? new aws.cloudwatch.LogGroup(`${name}-log-group`, { name: a.logGroupName, retentionInDays: 7 }, child).name : a.logGroupName;
    const names = alarmNames(a.clusterName, [], []);
    return Object.fromEntries(
        (Object.keys(patterns) as LogSignal[]).map((k) => [
            k,
            new aws.cloudwatch.LogMetricFilter(
                `${name}-${SIGNAL_SLUG[k]}-filter`,
                {
                    name: names[k],
                    logGroupName,
                    pattern: patterns[k]!,
                    metricTransformation: { namespace: logMetricNamespace(a.clusterName), name: LOG_METRIC[k], value: "1", defaultValue: "0", unit: "Count" },
                },
                child,
            ),
        ]),
    ) as Partial<Record<LogSignal, aws.cloudwatch.LogMetricFilter>>;
}

const logMetricNamespace = (cluster: string) => `NotifyKarpenter/${cluster}`;
/** The metric each log filter writes. */
export const LOG_METRIC: Record<LogSignal, string> = {
    unschedulablePods: "UnschedulableBurstPodLines",
    launchFailures: "LaunchFailureLines",
    lifecycleErrors: "NodeClaimLifecycleErrorLines",
    nodePoolNotReady: "NodePoolNotReadyLines",
    logHeartbeat: "KarpenterLogLines",
};

type MetricQuery = aws.types.input.cloudwatch.MetricAlarmMetricQuery;

/** One alarm before its rule is applied: what it measures, how it reads missing data, what it says. */
interface AlarmSpec {
    kind: AlarmKind;
    role: string;
    name: string;
    description: string;
    metric: Metric | { metricQueries: MetricQuery[] };
    /** @default GreaterThanOrEqualToThreshold */
    comparison?: "GreaterThanOrEqualToThreshold" | "LessThanThreshold";
    treatMissingData: "breaching" | "notBreaching";
    /** A rate, not a state, has no OK notification. @default true */
    okAction?: boolean;
    dependsOn?: pulumi.Resource[];
}

function metricAlarm(name: string, s: AlarmSpec, rule: AlarmRule, topics: Record<AlarmSeverity, pulumi.Output<string>>, parent: pulumi.Resource) {
    const target = topics[rule.notify];
    return new aws.cloudwatch.MetricAlarm(
        `${name}-${s.role}`,
        {
            name: s.name,
            alarmDescription: s.description,
            ...s.metric,
            // A metric math alarm carries its period in its queries.
            ...("metricQueries" in s.metric ? {} : { period: rule.period }),
            evaluationPeriods: rule.evaluationPeriods,
            datapointsToAlarm: rule.datapointsToAlarm,
            threshold: rule.threshold,
            comparisonOperator: s.comparison ?? "GreaterThanOrEqualToThreshold",
            treatMissingData: s.treatMissingData,
            alarmActions: [target],
            okActions: s.okAction === false ? [] : [target],
        },
        { parent, dependsOn: s.dependsOn },
    );
}

/** "3 of 5 periods of 300 s", for alarm descriptions. */
function describe(r: AlarmRule): string {
    return `${r.datapointsToAlarm} of ${r.evaluationPeriods} periods of ${r.period} s`;
}

function replicasMetric(a: Resolved, namespace: string, deployment: string): Metric {
    const s = a.metricSource;
    const d = s.dimensions ?? DEFAULT_METRIC_SOURCE.dimensions!;
    return { namespace: s.namespace, metricName: s.replicasUnavailable, statistic: "Minimum", dimensions: { [d.cluster]: a.clusterName, [d.namespace]: namespace, [d.deployment]: deployment } };
}

/** Karpenter down, silent (its metrics or its logs), or failing in one of the ways its logs show. */
function controllerAlarms(a: Resolved, names: ReturnType<typeof alarmNames>, filters: Partial<Record<LogSignal, aws.cloudwatch.LogMetricFilter>>): AlarmSpec[] {
    const cluster = a.clusterName;
    const r = a.rules;
    const logMetric = (k: LogSignal): Metric => ({ namespace: logMetricNamespace(cluster), metricName: LOG_METRIC[k], statistic: "Sum" });
    const what: Record<FailureClass, string> = {
        unschedulablePods: `could not place burst pods of ${a.burstNamespace} ("could not schedule pod" for a pod of a burst Deployment, not of a Job or CronJob: NodePool limits reached, or no instance type or offering fits) with at least ${r.unschedulablePods.threshold} lines, about ${Math.ceil((r.unschedulablePods.threshold * 10) / 60)} pod-minutes at one line per pod every 10 s,`,
        launchFailures: `failed to launch nodes ("failed launching nodeclaim", or "Reconciler error" from nodeclaim.lifecycle with "launching nodeclaim": insufficient capacity, launch template, IAM or fleet errors) at least ${r.launchFailures.threshold} time(s) a period, one line per failed launch; Karpenter retries another offering within seconds, so failures in most periods mean launches keep failing,`,
        lifecycleErrors: `failed to register or terminate NodeClaims ("Reconciler error" from nodeclaim.lifecycle other than a launch, or "node claim registration error": patching the node, a refused TerminateInstances) at least ${r.lifecycleErrors.threshold} time(s) a period; the reconciler retries at most a minute apart, so errors in most periods persist. Nodes may stay or leak,`,
        nodePoolNotReady: `ignored NodePool ${a.nodePoolName} as not ready (its EC2NodeClass is not Ready: AMI, subnets, security groups or instance profile), so it launches nothing, with at least ${r.nodePoolNotReady.threshold} line(s) a period; it logs one on every provisioning loop, about every 10 s while pods wait, and stays so until someone acts,`,
    };
    const failureClasses = (Object.keys(what) as FailureClass[]).filter((k) => filters[k] !== undefined);
    return [
        {
            kind: "controllerDown",
            role: "controller-down",
            name: names.controllerDown,
            description: `Karpenter on ${cluster} has had unavailable replicas (or no metric) for ${describe(r.controllerDown)}: new nodes cannot be launched and burst Celery pods stay pending.`,
            metric: replicasMetric(a, a.karpenterNamespace, a.karpenterDeployment),
            // No data means the controller or the metrics pipeline is gone: both alarm.
            treatMissingData: "breaching",
        },
        ...failureClasses.map(
            (k): AlarmSpec => ({
                kind: k,
                role: SIGNAL_SLUG[k],
                name: names[k],
                description: `Karpenter on ${cluster} ${what[k]} in ${describe(r[k])} (metric filter ${names[k]}). A blip that clears within minutes does not alarm.`,
                metric: logMetric(k),
                treatMissingData: "notBreaching",
                dependsOn: [filters[k]!],
            }),
        ),
        {
            kind: "heartbeat",
            role: "metrics-heartbeat",
            name: names.heartbeat,
            description:
                `Karpenter on ${cluster} exported fewer than ${r.heartbeat.threshold} ${KARPENTER_METRICS.nodePoolLimit} sample(s) for NodePool ${a.nodePoolName} a period, or none, in ${describe(r.heartbeat)}. ` +
                `Its leader exports that gauge at every scrape, busy or idle: no leader runs Karpenter's controllers, or cwagent-prometheus no longer scrapes it ` +
                `(plan-out/<stack>/cwagent-prometheus-karpenter.json). The NodePool-limit, spot-interruption and stuck-node alarms are blind meanwhile.`,
            metric: heartbeatMetric(cluster, a.nodePoolName),
            comparison: "LessThanThreshold",
            treatMissingData: "breaching",
        },
        {
            kind: "logHeartbeat",
            role: SIGNAL_SLUG.logHeartbeat,
            name: names.logHeartbeat,
            description:
                `No Karpenter log line from ${cluster} reached ${a.logGroupName} for ${describe(r.logHeartbeat)} (fewer than ${r.logHeartbeat.threshold} a period, or no log events at all). ` +
                `An idle Karpenter writes nothing at info, a whole quiet weekend long; a window this long without a line means the log pipeline (Fluent Bit, its JSON parsing, the container name) is broken and the log alarms are blind.`,
            metric: logMetric("logHeartbeat"),
            comparison: "LessThanThreshold",
            treatMissingData: "breaching",
            dependsOn: [filters.logHeartbeat!],
        },
    ];
}

/** A NodeClaim of the pool not initialized, or one of its nodes NotReady, for the threshold's seconds. */
function stuckNodeAlarms(a: Resolved, names: ReturnType<typeof alarmNames>): AlarmSpec[] {
    const cluster = a.clusterName;
    const r = a.rules;
    const pool = a.nodePoolName;
    const which = `Which one: the dashboard ${a.clusterName}-karpenter's table of stuck NodeClaims and nodes`;
    const what: Record<StuckKind, string> = {
        nodeClaimNotInitialized:
            `A NodeClaim of NodePool ${pool} on ${cluster} has not initialized for at least ${r.nodeClaimNotInitialized.threshold} s (${describe(r.nodeClaimNotInitialized)}): its node never went Ready or kept a startup taint (a waited-for agent that never started). ` +
            `Karpenter never times initialization out, never consolidates such a node and keeps counting it as room for pending pods. ${which}, or kubectl get nodeclaims -l karpenter.sh/nodepool=${pool}.`,
        nodeNotReady:
            `A node of NodePool ${pool} on ${cluster} has been NotReady (Ready False or Unknown) for at least ${r.nodeNotReady.threshold} s (${describe(r.nodeNotReady)}): its pods are lost, it counts as disrupting in the NodePool's budgets (at 10% of 10 nodes or fewer, emptied nodes then stay), ` +
            `and without the nodeRepair feature gate Karpenter does not replace it. ${which}, or kubectl get nodes -l karpenter.sh/nodepool=${pool}.`,
    };
    return STUCK_KINDS.map((k) => ({
        kind: k,
        role: STUCK_SLUG[k],
        name: names[k],
        description: what[k],
        metric: stuckMetric(cluster, pool, k),
        // No series means no NodeClaim or node of the pool is in that state (the gauge is deleted when it leaves it).
        treatMissingData: "notBreaching",
    }));
}

/** NodePool usage against its limits, burst replicas unavailable, and this cluster's spot interruptions. */
function capacityAlarms(a: Resolved, names: ReturnType<typeof alarmNames>): AlarmSpec[] {
    const cluster = a.clusterName;
    const r = a.rules;
    return [
        {
            kind: "nodePoolLimit",
            role: "nodepool-near-limit",
            name: names.nodePoolLimit,
            description: `NodePool ${a.nodePoolName} on ${cluster} has used at least ${r.nodePoolLimit.threshold}% of its cpu or memory limit for ${describe(r.nodePoolLimit)}: at 100% Karpenter launches nothing more and burst pods stay pending. Raise nodePool.limits or reduce the burst.`,
            metric: { metricQueries: nodePoolShareQueries(cluster, a.nodePoolName, r.nodePoolLimit.period) },
            treatMissingData: "notBreaching",
        },
        // A Deployment that reports nothing is not a capacity problem; the controller alarm covers a lost pipeline.
        ...a.burstDeployments.map(
            (d): AlarmSpec => ({
                kind: "burstReplicas",
                role: `${d}-replicas-unavailable`,
                name: names.burstReplicas[d],
                description: `${a.burstNamespace}/${d} on ${cluster} has had unavailable replicas for ${describe(r.burstReplicas)}: Karpenter is down, starved or cannot find spot capacity, or a launched node never became Ready.`,
                metric: replicasMetric(a, a.burstNamespace, d),
                treatMissingData: "notBreaching",
            }),
        ),
        ...(a.scaleDownOrderDeployment
            ? [
                  {
                      kind: "scaleDownOrder" as const,
                      role: "scale-down-order-replicas-unavailable",
                      name: names.scaleDownOrder,
                      description: `${a.karpenterNamespace}/${a.scaleDownOrderDeployment} on ${cluster} has not ordered the burst pods for ${describe(r.scaleDownOrder)} (not ready: the API refuses its lists or patches, or it does not run): after a burst the HPAs' scale-down spreads the remaining pods and the burst's nodes stay until the budget window ends. Costs money, breaks nothing; its log says why.`,
                      metric: replicasMetric(a, a.karpenterNamespace, a.scaleDownOrderDeployment),
                      treatMissingData: "notBreaching" as const,
                  },
              ]
            : []),
        {
            kind: "spotInterruptions",
            role: "spot-interruptions",
            name: names.spotInterruptions,
            description: `Karpenter on ${cluster} deleted at least ${r.spotInterruptions.threshold} of its ${a.nodePoolName} nodes for spot interruptions per ${r.spotInterruptions.period} s (${describe(r.spotInterruptions)}): widen the NodePool's instance types and zones.`,
            metric: {
                namespace: PROMETHEUS_NAMESPACE,
                metricName: KARPENTER_METRICS.nodeClaimsDisrupted,
                statistic: "Sum",
                dimensions: { ClusterName: cluster, nodepool: a.nodePoolName, reason: SPOT_INTERRUPTED_REASON },
            },
            treatMissingData: "notBreaching",
            okAction: false,
        },
    ];
}

/** Percent of the NodePool's cpu and of its memory limit in use, and the larger of the two (the alarm's value). */
function nodePoolShareQueries(cluster: string, nodePool: string, period: number): MetricQuery[] {
    const gauge = (id: string, metricName: string, resource: string): MetricQuery => ({
        id,
        returnData: false,
        metric: { namespace: PROMETHEUS_NAMESPACE, metricName, stat: "Maximum", period, dimensions: { ClusterName: cluster, nodepool: nodePool, resource_type: resource } },
    });
    return [
        gauge("cpu_used", KARPENTER_METRICS.nodePoolUsage, "cpu"),
        gauge("cpu_limit", KARPENTER_METRICS.nodePoolLimit, "cpu"),
        gauge("mem_used", KARPENTER_METRICS.nodePoolUsage, "memory"),
        gauge("mem_limit", KARPENTER_METRICS.nodePoolLimit, "memory"),
        { id: "share", expression: "MAX([100 * cpu_used / cpu_limit, 100 * mem_used / mem_limit])", label: `${nodePool} % of limit`, returnData: true },
    ];
}

/** Interruption handling stuck: Karpenter stopped reading its queue, or EventBridge cannot deliver to it. */
function interruptionAlarms(a: Resolved, names: ReturnType<typeof alarmNames>): AlarmSpec[] {
    const cluster = a.clusterName;
    return [
        {
            kind: "queueAge",
            role: "queue-age",
            name: names.queueAge,
            description: `Karpenter on ${cluster} has not read its interruption queue for ${a.rules.queueAge.threshold} s (${describe(a.rules.queueAge)}): spot nodes are not drained before reclaim.`,
            metric: { namespace: "AWS/SQS", metricName: "ApproximateAgeOfOldestMessage", statistic: "Maximum", dimensions: { QueueName: a.queueName } },
            treatMissingData: "notBreaching",
        },
        ...Object.entries(a.ruleNames).map(
            ([label, ruleName]): AlarmSpec => ({
                kind: "failedInvocations",
                role: `${label}-failed-invocations`,
                name: names.failedInvocations[label],
                description: `EventBridge could not deliver ${label} events to Karpenter's interruption queue on ${cluster} (${describe(a.rules.failedInvocations)}).`,
                metric: { namespace: "AWS/Events", metricName: "FailedInvocations", statistic: "Sum", dimensions: { RuleName: ruleName } },
                treatMissingData: "notBreaching",
            }),
        ),
    ];
}

/** The account may administer the key; CloudWatch alarms may use it to publish to the topics it encrypts. */
function topicKeyPolicy(partition: string, accountId: string) {
    return {
        Version: "2012-10-17",
        Statement: [
            { Sid: "AccountAdministers", Effect: "Allow", Principal: { AWS: `arn:${partition}:iam::${accountId}:root` }, Action: "kms:*", Resource: "*" },
            {
                Sid: "CloudWatchAlarmsPublish",
                Effect: "Allow",
                Principal: { Service: "cloudwatch.amazonaws.com" },
                Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
                Resource: "*",
                Condition: { StringEquals: { "aws:SourceAccount": accountId } },
            },
        ],
    };
}

export interface DashboardInput {
    cluster: string;
    region: string;
    source: ReplicaMetricSource;
    burstNamespace: string;
    burstDeployments: string[];
    nodePoolName: string;
    rules: Record<AlarmKind, AlarmRule>;
    queueName: string;
    ruleNames: Record<string, string>;
    alarmArns: string[];
}

/**
 * The dashboard: the alarms' states; nodes and burst replicas; each failure class and both heartbeats; NodePool
 * usage against its limit; interruptions and queue age; stuck NodeClaims and nodes, with a table naming them; so a
 * load test's scaling curves read in one place.
 */
export function dashboardBody(d: DashboardInput) {
    const graph = (title: string, metrics: unknown[][], y: number, x: number, stat = "Maximum", period = 60, extra: Record<string, unknown> = {}) => ({
        type: "metric",
        x,
        y,
        width: 12,
        height: 6,
        properties: { title, region: d.region, view: "timeSeries", stacked: false, stat, period, metrics, ...extra },
    });
    const dims = d.source.dimensions ?? DEFAULT_METRIC_SOURCE.dimensions!;
    const deploymentMetric = (metric: string, deployment: string, label: string) => [
        d.source.namespace,
        metric,
        dims.cluster,
        d.cluster,
        dims.namespace,
        d.burstNamespace,
        dims.deployment,
        deployment,
        { label },
    ];
    const logs = logMetricNamespace(d.cluster);
    const share = nodePoolShareQueries(d.cluster, d.nodePoolName, 300);
    const gauges = share.filter((q) => q.metric).map((q) => {
        const m = q.metric as { namespace: string; metricName: string; dimensions: Record<string, string> };
        return [m.namespace, m.metricName, "ClusterName", d.cluster, "nodepool", d.nodePoolName, "resource_type", m.dimensions.resource_type, { id: q.id, visible: false }];
    });
    return {
        widgets: [
            {
                type: "alarm",
                x: 0,
                y: 0,
                width: 24,
                height: 4,
                properties: { title: `Karpenter alarms on ${d.cluster}`, region: d.region, alarms: d.alarmArns, sortBy: "stateUpdatedTimestamp" },
            },
            // Container Insights' node count: the stable node group is fixed, so the rise and fall is Karpenter's.
            graph("Nodes (the change is Karpenter-launched nodes)", [["ContainerInsights", "cluster_node_count", "ClusterName", d.cluster, { label: "nodes" }]], 4, 0),
            // CloudWatch rejects a graph without metrics.
            ...(d.burstDeployments.length === 0
                ? []
                : [
                      graph(
                          "Burst Celery replicas: total and unavailable (pending)",
                          d.burstDeployments.flatMap((dep) => [
                              deploymentMetric(d.source.desiredReplicas, dep, `${dep} replicas`),
                              deploymentMetric(d.source.replicasUnavailable, dep, `${dep} unavailable`),
                          ]),
                          4,
                          12,
                      ),
                  ]),
            graph(
                "Karpenter failures by class (log lines per 5 min)",
                FAILURE_CLASSES.filter((k) => k !== "unschedulablePods" || d.burstDeployments.length > 0).map((k) => [logs, LOG_METRIC[k], { label: SIGNAL_SLUG[k] }]),
                10,
                0,
                "Sum",
                300,
            ),
            graph(
                "Karpenter heartbeats: log lines and NodePool limit samples per hour",
                [
                    [logs, LOG_METRIC.logHeartbeat, { label: "log lines" }],
                    [...metricPath(heartbeatMetric(d.cluster, d.nodePoolName)), { label: "limit samples (one a scrape)", stat: "SampleCount" }],
                ],
                10,
                12,
                "Sum",
                3600,
                { annotations: { horizontal: [{ label: "log alarm below", value: d.rules.logHeartbeat.threshold }] } },
            ),
            graph(
                `NodePool ${d.nodePoolName}: % of its cpu and memory limit in use`,
                [
                    ...gauges,
                    [{ expression: "100 * cpu_used / cpu_limit", label: "cpu %", id: "cpu" }],
                    [{ expression: "100 * mem_used / mem_limit", label: "memory %", id: "memory" }],
                ],
                16,
                0,
                "Maximum",
                300,
                { yAxis: { left: { min: 0, max: 100 } }, annotations: { horizontal: [{ label: "alarm at", value: d.rules.nodePoolLimit.threshold }] } },
            ),
            graph(
                "Spot interruptions: this cluster's nodes (Karpenter) and the account's warnings (EventBridge)",
                [
                    [PROMETHEUS_NAMESPACE, KARPENTER_METRICS.nodeClaimsDisrupted, "ClusterName", d.cluster, "nodepool", d.nodePoolName, "reason", SPOT_INTERRUPTED_REASON, { label: "this cluster's nodes" }],
                    ...(d.ruleNames[SPOT_RULE] ? [["AWS/Events", "MatchedEvents", "RuleName", d.ruleNames[SPOT_RULE], { label: "account-wide warnings" }]] : []),
                ],
                16,
                12,
                "Sum",
                300,
            ),
            graph(
                "Interruption events (EventBridge matched and failed, account-wide)",
                Object.entries(d.ruleNames).flatMap(([label, rule]) => [
                    ["AWS/Events", "MatchedEvents", "RuleName", rule, { label: `${label} matched` }],
                    ["AWS/Events", "FailedInvocations", "RuleName", rule, { label: `${label} failed` }],
                ]),
                22,
                0,
                "Sum",
                300,
            ),
            graph("Interruption queue: age of oldest message (s)", [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", d.queueName, { label: "age" }]], 22, 12),
            graph(
                `Stuck in ${d.nodePoolName}: longest uninitialized NodeClaim and NotReady node (s); NodeClaims deleted for launch or registration timeouts (right)`,
                [
                    [...metricPath(stuckMetric(d.cluster, d.nodePoolName, "nodeClaimNotInitialized")), { label: "NodeClaim not initialized (s)" }],
                    [...metricPath(stuckMetric(d.cluster, d.nodePoolName, "nodeNotReady")), { label: "node NotReady (s)" }],
                    ...TIMEOUT_REASONS.map((reason) => [
                        PROMETHEUS_NAMESPACE,
                        KARPENTER_METRICS.nodeClaimsDisrupted,
                        "ClusterName",
                        d.cluster,
                        "nodepool",
                        d.nodePoolName,
                        "reason",
                        reason,
                        { label: `${reason} (per 5 min)`, stat: "Sum", yAxis: "right" },
                    ]),
                ],
                28,
                0,
                "Maximum",
                300,
                {
                    annotations: {
                        horizontal: STUCK_KINDS.map((k) => ({ label: `${STUCK_SLUG[k]} alarm at`, value: d.rules[k].threshold })),
                    },
                },
            ),
            {
                type: "log",
                x: 12,
                y: 28,
                width: 12,
                height: 6,
                properties: {
                    title: `Stuck NodeClaims and nodes of ${d.nodePoolName}, by name (seconds in the state, last hour)`,
                    region: d.region,
                    view: "table",
                    query: stuckTableQuery(d.cluster, d.nodePoolName),
                },
            },
        ],
    };
}

/** A metric widget's path: namespace, name, then dimension name and value pairs. */
function metricPath(m: Metric): string[] {
    return [m.namespace, m.metricName, ...Object.entries(m.dimensions ?? {}).flatMap(([k, v]) => [k, v as string])];
}

/**
 * Logs Insights over cwagent-prometheus's EMF events, which carry every label of a series (the object's `name`, the
 * condition's `reason`) next to its value: which NodeClaims and nodes are stuck, that the alarms count together.
 */
function stuckTableQuery(cluster: string, nodePool: string): string {
    const nc = STUCK_CONDITIONS.nodeClaimNotInitialized.metric;
    const node = STUCK_CONDITIONS.nodeNotReady.metric;
    return (
        `SOURCE '${prometheusLogGroup(cluster)}' | filter job = "karpenter" and ${NODEPOOL_CONDITION_LABEL} = "${nodePool}" and (ispresent(${nc}) or ispresent(${node}))` +
        ` | stats max(${nc}) as notInitializedSeconds, max(${node}) as notReadySeconds, latest(reason) as reason by name` +
        ` | sort notInitializedSeconds desc, notReadySeconds desc | limit 50`
    );
}
