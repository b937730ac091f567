import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/** Which notification target an alarm goes to (GC Notify: the alert-warning or alert-critical SNS topic). */
export type AlarmSeverity = "warning" | "critical";

/** When an alarm fires: CloudWatch's period, M of N and threshold, and who hears about it. */
export interface AlarmRule {
    /** Seconds per evaluation period: 10, 30 or a multiple of 60. */
    period: number;
    /** N: how many recent periods CloudWatch looks at. period x N is at most one day. */
    evaluationPeriods: number;
    /** M: how many of those N periods must breach; at most N. */
    datapointsToAlarm: number;
    /** The value a period's statistic is compared with (>= unless the alarm says otherwise). */
    threshold: number;
    /** Which topic gets the alarm and OK notifications. */
    notify: AlarmSeverity;
}

/** The alarms this component creates; each has its own rule. */
export type AlarmKind = "controllerDown" | "provisioningFailures" | "queueAge" | "failedInvocations" | "burstReplicas" | "spotInterruptions";

/**
 * Defaults of every rule, shared with the config schema. The provisioning-failure alarm fires when failures were
 * logged in 4 of the last 6 five-minute periods: Karpenter's daily "unable to provision" errors clear within
 * minutes (at most 2 or 3 periods), a starved or broken provisioner keeps failing and alarms after 20 minutes.
 */
export const DEFAULT_RULES: Record<AlarmKind, AlarmRule> = {
    // GC Notify's karpenter-replicas-unavailable: Minimum over 300 s, 2 periods, >= 1.
    controllerDown: { period: 300, evaluationPeriods: 2, datapointsToAlarm: 2, threshold: 1, notify: "warning" },
    provisioningFailures: { period: 300, evaluationPeriods: 6, datapointsToAlarm: 4, threshold: 1, notify: "warning" },
    // The queue keeps messages 300 s; Karpenter normally reads them within seconds.
    queueAge: { period: 60, evaluationPeriods: 5, datapointsToAlarm: 3, threshold: 120, notify: "warning" },
    failedInvocations: { period: 300, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 1, notify: "warning" },
    // GC Notify gives burst workers one more evaluation period than static ones (3 instead of 2).
    burstReplicas: { period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 1, notify: "warning" },
    spotInterruptions: { period: 3600, evaluationPeriods: 1, datapointsToAlarm: 1, threshold: 10, notify: "warning" },
};

/** Log terms that mark a launch or scheduling failure in Karpenter v1's controller logs. */
export const DEFAULT_FAILURE_PATTERNS = ["failed launching nodeclaim", "could not schedule pod", "InsufficientInstanceCapacity"];

/** Where the replica metrics come from: kube-state-metrics scraped by the CloudWatch agent (Container Insights). */
export interface ReplicaMetricSource {
    /** CloudWatch namespace of the kube-state-metrics series. @default "ContainerInsights/Prometheus" */
    namespace: string;
    /** Unavailable replicas of a Deployment. @default "kube_deployment_status_replicas_unavailable" */
    replicasUnavailable: string;
    /** Desired replicas of a Deployment, for the dashboard. @default "kube_deployment_spec_replicas" */
    desiredReplicas: string;
}

export const DEFAULT_METRIC_SOURCE: ReplicaMetricSource = {
    namespace: "ContainerInsights/Prometheus",
    replicasUnavailable: "kube_deployment_status_replicas_unavailable",
    desiredReplicas: "kube_deployment_spec_replicas",
};

export interface KarpenterAlarmsArgs {
    /** The EKS cluster name: part of every alarm, topic and dashboard name, and the ClusterName dimension. */
    clusterName: string;
    /** The cluster's region, for the dashboard's widgets. */
    region: string;
    /** Account and partition of the cluster, for the topics' KMS key policy. */
    accountId: pulumi.Input<string>;
    partition: pulumi.Input<string>;
    /**
     * Existing SNS topics to notify (GC Notify: alert-warning and alert-critical). When absent, the component
     * creates two KMS-encrypted topics, `<cluster>-karpenter-warning` and `<cluster>-karpenter-critical`.
     */
    topicArns?: Record<AlarmSeverity, pulumi.Input<string>>;
    /** Where replica metrics come from. @default DEFAULT_METRIC_SOURCE */
    metricSource?: ReplicaMetricSource;
    /** Namespace and Deployment of the Karpenter controller. @default "karpenter" and "karpenter" */
    karpenterNamespace?: string;
    karpenterDeployment?: string;
    /** The log group the controller's container logs go to (GC Notify: Fluent Bit to Container Insights). */
    logGroupName: string;
    /** Create that log group (one week's retention), where no log shipper has: a scratch account. @default false */
    createLogGroup?: boolean;
    /** Terms whose presence in a log event marks a provisioning failure (case-sensitive). @default DEFAULT_FAILURE_PATTERNS */
    failurePatterns?: string[];
    /** The interruption queue's name. */
    queueName: pulumi.Input<string>;
    /** The EventBridge rules that feed the queue, by a short label used in alarm names (`spot-interruption`, ...). */
    ruleNames: Record<string, pulumi.Input<string>>;
    /** Label in `ruleNames` of the EC2 Spot interruption warning rule. @default "spot-interruption" */
    spotInterruptionRule?: string;
    /** Namespace of the burst Celery Deployments. @default "notification-canada-ca" */
    burstNamespace?: string;
    /** Burst Celery Deployments that Karpenter's spot nodes serve; one alarm each. @default [] */
    burstDeployments?: string[];
    /** Rules of each alarm; a missing one uses DEFAULT_RULES. @default DEFAULT_RULES */
    rules?: Partial<Record<AlarmKind, AlarmRule>>;
}

/** CloudWatch's rule for an alarm period. */
export function isValidPeriod(p: unknown): boolean {
    return p === 10 || p === 30 || (Number.isInteger(p) && (p as number) >= 60 && (p as number) <= 86400 && (p as number) % 60 === 0);
}

/** CloudWatch limits: a period is 10, 30 or a multiple of 60, M <= N, and N periods cover at most a day. */
export function alarmRuleProblems(rule: AlarmRule): { key: keyof AlarmRule; message: string }[] {
    const problems: { key: keyof AlarmRule; message: string }[] = [];
    if (!isValidPeriod(rule.period)) problems.push({ key: "period", message: `must be 10, 30 or a multiple of 60 up to 86400 (got ${rule.period})` });
    if (rule.datapointsToAlarm > rule.evaluationPeriods) {
        problems.push({
            key: "datapointsToAlarm",
            message: `must be at most evaluationPeriods (${rule.evaluationPeriods}): an alarm cannot need more breaching periods than it looks at (got ${rule.datapointsToAlarm})`,
        });
    }
    if (rule.period * rule.evaluationPeriods > 86400) {
        problems.push({
            key: "evaluationPeriods",
            message: `must be at most ${Math.floor(86400 / rule.period)} with a period of ${rule.period} s: CloudWatch evaluates at most one day (got ${rule.evaluationPeriods})`,
        });
    }
    return problems;
}

/** CloudWatch's limit on alarm names. */
export const MAX_ALARM_NAME = 255;

/** The alarm names for a cluster: fixed ones by kind, failed invocations by rule label, burst ones by Deployment. */
export function alarmNames(clusterName: string, ruleLabels: string[], burstDeployments: string[]) {
    return {
        controllerDown: `${clusterName}-karpenter-replicas-unavailable`,
        provisioningFailures: `${clusterName}-karpenter-provisioning-failures`,
        queueAge: `${clusterName}-karpenter-interruption-queue-age`,
        spotInterruptions: `${clusterName}-karpenter-spot-interruption-rate`,
        failedInvocations: Object.fromEntries(ruleLabels.map((l) => [l, `${clusterName}-karpenter-${l}-failed-invocations`])) as Record<string, string>,
        burstReplicas: Object.fromEntries(burstDeployments.map((d) => [d, `${clusterName}-${d}-replicas-unavailable`])) as Record<string, string>,
    };
}

/** Each burst Deployment whose alarm name CloudWatch would reject, as a "must be" sentence; empty when all fit. */
export function burstAlarmNameProblems(clusterName: string, burstDeployments: string[]): { index: number; message: string }[] {
    const names = alarmNames(clusterName, [], burstDeployments).burstReplicas;
    return burstDeployments
        .map((d, index) => ({ index, d, name: names[d] }))
        .filter((x) => x.name.length > MAX_ALARM_NAME)
        .map(({ index, d, name }) => ({
            index,
            message: `must be at most ${MAX_ALARM_NAME - (name.length - d.length)} characters, or its alarm name "${name}" exceeds CloudWatch's ${MAX_ALARM_NAME} (got ${d.length} characters)`,
        }));
}

/**
 * A CloudWatch Logs filter pattern that matches a log event containing any of `terms`: `?"a" ?"b"`. Quoted terms
 * match exact, case-sensitive substrings, so they match Karpenter's JSON lines and Fluent Bit's wrapped copies alike.
 */
export function filterPattern(terms: string[]): string {
    return terms.length === 1 ? `"${terms[0]}"` : terms.map((t) => `?"${t}"`).join(" ");
}

/** The problems of a list of filter terms, each as a "must be" sentence with the index of the term (-1: the list). */
export function filterTermProblems(terms: string[]): { index: number; message: string }[] {
    const problems: { index: number; message: string }[] = [];
    if (terms.length === 0) problems.push({ index: -1, message: "must be at least one term (got [])" });
    terms.forEach((t, index) => {
        if (t.length === 0 || /["\\]/.test(t)) problems.push({ index, message: `must be a non-empty log term without double quotes or backslashes (got ${JSON.stringify(t)})` });
    });
    const pattern = filterPattern(terms);
    if (pattern.length > 1024) problems.push({ index: -1, message: `must be terms that make a filter pattern of at most 1024 characters (got ${pattern.length})` });
    return problems;
}

/**
 * Whether CloudWatch Logs would count `event` for a term filter pattern: quoted terms are case-sensitive
 * substrings; `?` terms are alternatives (any one matches), plain terms are all required.
 */
export function filterPatternMatches(pattern: string, event: string): boolean {
    const terms = [...pattern.matchAll(/(\?)?"([^"]*)"/g)].map((m) => ({ optional: m[1] === "?", text: m[2] }));
    if (terms.length === 0) throw new Error(`not a term filter pattern: ${pattern}`);
    const optional = terms.filter((t) => t.optional);
    const required = terms.filter((t) => !t.optional);
    if (optional.length > 0 && required.length > 0) throw new Error(`mixes ?-terms and plain terms: ${pattern}`);
    return optional.length > 0 ? optional.some((t) => event.includes(t.text)) : required.every((t) => event.includes(t.text));
}

const COMPARISON = "GreaterThanOrEqualToThreshold";

/**
 * CloudWatch alarms that say when Karpenter is down or cannot provision nodes, when interruption handling is stuck
 * and when burst capacity is unhealthy, with their notification topics and a dashboard per cluster.
 *
 * Provisioning failures are counted by a Logs metric filter and alarm only when they persist (M of N periods), so
 * Karpenter's daily transient "unable to provision" errors stay silent.
 */
export class KarpenterAlarms extends pulumi.ComponentResource {
    /** Alarm and OK notification targets, by severity. */
    public readonly topicArns: Record<AlarmSeverity, pulumi.Output<string>>;
    /** Every alarm's name (known at preview). */
    public readonly alarmNames: string[];
    public readonly alarmArns: pulumi.Output<string>[];
    public readonly dashboardName: string;
    /** The metric filter's pattern, as CloudWatch Logs receives it. */
    public readonly failurePattern: string;

    constructor(name: string, args: KarpenterAlarmsArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:KarpenterAlarms", name, {}, opts);
        const rules = Object.fromEntries(
            (Object.keys(DEFAULT_RULES) as AlarmKind[]).map((k) => [k, args.rules?.[k] ?? DEFAULT_RULES[k]]),
        ) as Record<AlarmKind, AlarmRule>;
        const terms = args.failurePatterns ?? DEFAULT_FAILURE_PATTERNS;
        const burstDeployments = args.burstDeployments ?? [];
        const spotLabel = args.spotInterruptionRule ?? "spot-interruption";
        const problems = [
            ...(Object.keys(rules) as AlarmKind[]).flatMap((k) => alarmRuleProblems(rules[k]).map((p) => `rules.${k}.${p.key} ${p.message}`)),
            ...filterTermProblems(terms).map((p) => `failurePatterns${p.index < 0 ? "" : `[${p.index}]`} ${p.message}`),
            ...burstAlarmNameProblems(args.clusterName, burstDeployments).map((p) => `burstDeployments[${p.index}] ${p.message}`),
            ...(new Set(burstDeployments).size !== burstDeployments.length ? ["burstDeployments must be distinct"] : []),
            ...(args.ruleNames[spotLabel] === undefined ? [`spotInterruptionRule "${spotLabel}" must be one of ruleNames (${Object.keys(args.ruleNames).join(", ")})`] : []),
        ];
        if (problems.length > 0) throw new Error(`KarpenterAlarms ${name}: ${problems.join("; ")}`);

        const cluster = args.clusterName;
        const source = args.metricSource ?? DEFAULT_METRIC_SOURCE;
        const karpenterNamespace = args.karpenterNamespace ?? "karpenter";
        const karpenterDeployment = args.karpenterDeployment ?? "karpenter";
        const burstNamespace = args.burstNamespace ?? "notification-canada-ca";
        const names = alarmNames(cluster, Object.keys(args.ruleNames), burstDeployments);
        const child = { parent: this };

        // Notification targets: the given topics, or two created here. CloudWatch can publish to an encrypted
        // topic only when the key lets it, which AWS's managed aws/sns key does not: hence a key of our own.
        if (args.topicArns) {
            this.topicArns = { warning: pulumi.output(args.topicArns.warning), critical: pulumi.output(args.topicArns.critical) };
        } else {
            const key = new aws.kms.Key(
                `${name}-topics-key`,
                {
                    description: `Encrypts the Karpenter alarm topics of ${cluster}`,
                    enableKeyRotation: true,
                    policy: pulumi.all([args.partition, args.accountId]).apply(([p, a]) => JSON.stringify(topicKeyPolicy(p, a))),
                },
                child,
            );
            new aws.kms.Alias(`${name}-topics-key-alias`, { name: `alias/${cluster}-karpenter-alarms`, targetKeyId: key.keyId }, child);
            const topic = (severity: AlarmSeverity) =>
                new aws.sns.Topic(`${name}-${severity}-topic`, { name: `${cluster}-karpenter-${severity}`, kmsMasterKeyId: key.arn }, child).arn;
            this.topicArns = { warning: topic("warning"), critical: topic("critical") };
        }

        // Provisioning failures, counted from the controller's logs. A period without a match counts 0, so the
        // alarm sees real zeros between failures and M of N means "failing most of the time", not "failed once".
        this.failurePattern = filterPattern(terms);
        const failureMetric = { namespace: `NotifyKarpenter/${cluster}`, name: "ProvisioningFailures" };
        // A metric filter needs its log group to exist; on a created log group it waits for it.
        const logGroupName = args.createLogGroup
            ? new aws.cloudwatch.LogGroup(`${name}-log-group`, { name: args.logGroupName, retentionInDays: 7 }, child).name
            : args.logGroupName;
        const metricFilter = new aws.cloudwatch.LogMetricFilter(
            `${name}-provisioning-failures-filter`,
            {
                name: `${cluster}-karpenter-provisioning-failures`,
                logGroupName,
                pattern: this.failurePattern,
                metricTransformation: { namespace: failureMetric.namespace, name: failureMetric.name, value: "1", defaultValue: "0", unit: "Count" },
            },
            child,
        );

        const alarms: aws.cloudwatch.MetricAlarm[] = [];
        const created: string[] = [];
        const alarm = (
            role: string,
            alarmName: string,
            rule: AlarmRule,
            metric: { namespace: string; metricName: string; statistic: string; dimensions?: Record<string, pulumi.Input<string>> },
            description: string,
            treatMissingData: "breaching" | "notBreaching",
            okAction: boolean,
            dependsOn: pulumi.Resource[] = [],
        ) => {
            const target = this.topicArns[rule.notify];
            const a = new aws.cloudwatch.MetricAlarm(
                `${name}-${role}`,
                {
                    name: alarmName,
                    alarmDescription: description,
                    ...metric,
                    period: rule.period,
                    evaluationPeriods: rule.evaluationPeriods,
                    datapointsToAlarm: rule.datapointsToAlarm,
                    threshold: rule.threshold,
                    comparisonOperator: COMPARISON,
                    treatMissingData,
                    alarmActions: [target],
                    okActions: okAction ? [target] : [],
                },
                { parent: this, dependsOn },
            );
            alarms.push(a);
            created.push(alarmName);
            return a;
        };
        const replicasMetric = (namespace: string, deployment: string) => ({
            namespace: source.namespace,
            metricName: source.replicasUnavailable,
            statistic: "Minimum",
            dimensions: { ClusterName: cluster, namespace, deployment },
        });

        // Karpenter not running. No data means the controller or the metrics pipeline is gone: both alarm.
        alarm(
            "controller-down",
            names.controllerDown,
            rules.controllerDown,
            replicasMetric(karpenterNamespace, karpenterDeployment),
            `Karpenter on ${cluster} has had unavailable replicas (or no metric) for ${describe(rules.controllerDown)}: new nodes cannot be launched and burst Celery pods stay pending.`,
            "breaching",
            true,
        );
        alarm(
            "provisioning-failures",
            names.provisioningFailures,
            rules.provisioningFailures,
            { namespace: failureMetric.namespace, metricName: failureMetric.name, statistic: "Sum" },
            `Karpenter on ${cluster} logged launch or scheduling failures (metric filter ${cluster}-karpenter-provisioning-failures) in ${describe(rules.provisioningFailures)}; a blip that clears within minutes does not alarm.`,
            "notBreaching",
            true,
            [metricFilter],
        );

        // Interruption handling stuck: Karpenter stopped reading its queue, or EventBridge cannot deliver to it.
        alarm(
            "queue-age",
            names.queueAge,
            rules.queueAge,
            { namespace: "AWS/SQS", metricName: "ApproximateAgeOfOldestMessage", statistic: "Maximum", dimensions: { QueueName: args.queueName } },
            `Karpenter on ${cluster} has not read its interruption queue for ${rules.queueAge.threshold} s (${describe(rules.queueAge)}): spot nodes are not drained before reclaim.`,
            "notBreaching",
            true,
        );
        for (const [label, ruleName] of Object.entries(args.ruleNames)) {
            alarm(
                `${label}-failed-invocations`,
                names.failedInvocations[label],
                rules.failedInvocations,
                { namespace: "AWS/Events", metricName: "FailedInvocations", statistic: "Sum", dimensions: { RuleName: ruleName } },
                `EventBridge could not deliver ${label} events to Karpenter's interruption queue on ${cluster} (${describe(rules.failedInvocations)}).`,
                "notBreaching",
                true,
            );
        }

        // Burst capacity: burst Celery replicas that stay unavailable, and spot interruptions too frequent to bear.
        // A Deployment that reports nothing is not a capacity problem; the controller alarm covers a lost pipeline.
        for (const deployment of burstDeployments) {
            alarm(
                `${deployment}-replicas-unavailable`,
                names.burstReplicas[deployment],
                rules.burstReplicas,
                replicasMetric(burstNamespace, deployment),
                `${burstNamespace}/${deployment} on ${cluster} has had unavailable replicas for ${describe(rules.burstReplicas)}: Karpenter is down, starved or cannot find spot capacity.`,
                "notBreaching",
                true,
            );
        }
        // EventBridge sees every spot interruption warning in the account and region, so this counts the spot pool
        // as a whole. It is a rate, not a state, so there is no OK notification.
        alarm(
            "spot-interruption-rate",
            names.spotInterruptions,
            rules.spotInterruptions,
            { namespace: "AWS/Events", metricName: "MatchedEvents", statistic: "Sum", dimensions: { RuleName: args.ruleNames[spotLabel] } },
            `At least ${rules.spotInterruptions.threshold} spot interruption warnings per ${rules.spotInterruptions.period} s near ${cluster} (${describe(rules.spotInterruptions)}): widen the NodePool's instance types and zones.`,
            "notBreaching",
            false,
        );

        this.alarmNames = created;
        this.alarmArns = alarms.map((a) => a.arn);

        this.dashboardName = `${cluster}-karpenter`;
        new aws.cloudwatch.Dashboard(
            `${name}-dashboard`,
            {
                dashboardName: this.dashboardName,
                dashboardBody: pulumi
                    .all([pulumi.output(args.queueName), pulumi.all(args.ruleNames), pulumi.all(this.alarmArns)])
                    .apply(([queueName, ruleNames, alarmArns]) =>
                        JSON.stringify(
                            dashboardBody({
                                cluster,
                                region: args.region,
                                source,
                                burstNamespace,
                                burstDeployments,
                                failureMetric,
                                queueName,
                                ruleNames,
                                alarmArns,
                            }),
                        ),
                    ),
            },
            child,
        );

        this.registerOutputs({ topicArns: this.topicArns, alarmNames: this.alarmNames, alarmArns: this.alarmArns, dashboardName: this.dashboardName });
    }
}

/** "3 of 5 periods of 300 s", for alarm descriptions. */
function describe(r: AlarmRule): string {
    return `${r.datapointsToAlarm} of ${r.evaluationPeriods} periods of ${r.period} s`;
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
    failureMetric: { namespace: string; name: string };
    queueName: string;
    ruleNames: Record<string, string>;
    alarmArns: string[];
}

/**
 * The dashboard: nodes, burst replicas, provisioning failures, interruption events and queue age over time, and
 * the alarms' states, so the scaling curves of a load test can be read in one place.
 */
export function dashboardBody(d: DashboardInput) {
    const graph = (title: string, metrics: unknown[][], y: number, x: number, stat = "Maximum", period = 60) => ({
        type: "metric",
        x,
        y,
        width: 12,
        height: 6,
        properties: { title, region: d.region, view: "timeSeries", stacked: false, stat, period, metrics },
    });
    const deploymentMetric = (metric: string, deployment: string, label: string) => [
        d.source.namespace,
        metric,
        "ClusterName",
        d.cluster,
        "namespace",
        d.burstNamespace,
        "deployment",
        deployment,
        { label },
    ];
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
                          "Burst Celery replicas: desired and unavailable (pending)",
                          d.burstDeployments.flatMap((dep) => [
                              deploymentMetric(d.source.desiredReplicas, dep, `${dep} desired`),
                              deploymentMetric(d.source.replicasUnavailable, dep, `${dep} unavailable`),
                          ]),
                          4,
                          12,
                      ),
                  ]),
            graph("Provisioning failures (log events)", [[d.failureMetric.namespace, d.failureMetric.name, { label: "failures" }]], 10, 0, "Sum", 300),
            graph(
                "Interruption events (EventBridge matched and failed)",
                Object.entries(d.ruleNames).flatMap(([label, rule]) => [
                    ["AWS/Events", "MatchedEvents", "RuleName", rule, { label: `${label} matched` }],
                    ["AWS/Events", "FailedInvocations", "RuleName", rule, { label: `${label} failed` }],
                ]),
                10,
                12,
                "Sum",
                300,
            ),
            graph("Interruption queue: age of oldest message (s)", [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", d.queueName, { label: "age" }]], 16, 0),
        ],
    };
}
