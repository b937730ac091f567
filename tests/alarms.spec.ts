import { expect } from "chai";
import { keyLetsCloudWatch } from "../ops/preflightChecks.ts";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { CONTAINER_INSIGHTS_METRIC_SOURCE, DEFAULT_RULES } from "../components/models/alarmRules.ts";
import { KarpenterAlarms, LOG_METRIC } from "../components/karpenterAlarms.ts";
import { filterPatternMatches, jsonPatternMatches, parseJsonPattern } from "../components/models/filterPattern.ts";
import { FAILURE_CLASSES, KARPENTER_METRICS, cloudwatchAgentKarpenterConfig, logSignalPatterns, scrapeKeepRegex } from "../components/models/karpenterSignals.ts";
import { PLACEHOLDERS, type RecordedResource, runOffline } from "../plan/offlineRuntime.ts";
import { plan } from "../plan/cli.ts";
import { policyInputs, runPolicies } from "../plan/policyRun.ts";
import { summary } from "../plan/render.ts";
import { alarmTopicsSubscribed } from "../policy/policies.ts";
import { BURST_DEPLOYMENTS, STACKS, buildStack, configErrorOf, errorOf, patchSections, parseJson, rawConfig, section } from "./helpers.ts";
import { FAILURE_LINES, NOT_BURST_POD_LINES, ORDINARY_LINES, OTHER_CONTAINER_ICE, fluentBitRecord } from "./karpenterLines.ts";

const ACCOUNT = PLACEHOLDERS.accountId;
const REGION = "ca-central-1";
const ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";
const FILTER = "aws:cloudwatch/logMetricFilter:LogMetricFilter";
const clusterOf = (stack: string) => `notification-canada-ca-${stack}-eks-cluster`;
/** Both stacks notify GC Notify's alert topics by name: ARNs in the cluster's account and region. */
const topicArn = (severity: string) => `arn:aws:sns:${REGION}:${ACCOUNT}:alert-${severity}`;
const POOL = "notify-karpenter";
const PROM = "ContainerInsights/Prometheus";

const BURST = BURST_DEPLOYMENTS;
const EMAIL = [{ protocol: "email" as const, endpoint: "oncall@example.org" }];
/** A KarpenterAlarms built directly, outside any stack, notifying created topics. */
const MINIMAL_ARGS = {
    clusterName: "c",
    region: REGION,
    accountId: ACCOUNT,
    partition: "aws",
    nodePoolName: POOL,
    logGroupName: "/aws/containerinsights/c/application",
    queueName: "c-karpenter",
    ruleNames: { "spot-interruption": "c-spot-interruption" },
    subscriptions: { warning: EMAIL, critical: EMAIL },
};
const RULE_SUFFIXES = ["health-event", "spot-interruption", "rebalance", "state-change", "odcr-interruption"];

type Rule = { period: number; evaluationPeriods: number; datapointsToAlarm: number; threshold: number; notify: "warning" | "critical" };
const r = (period: number, evaluationPeriods: number, datapointsToAlarm: number, threshold: number, notify: Rule["notify"]): Rule => ({
    period,
    evaluationPeriods,
    datapointsToAlarm,
    threshold,
    notify,
});

/** Each stack's rules, written out here so a change to a stack file is a deliberate change to this table. */
const RULES: Record<string, Record<string, Rule>> = {
    staging: {
        controllerDown: r(300, 2, 2, 1, "warning"),
        unschedulablePods: r(300, 4, 3, 20, "warning"),
        launchFailures: r(300, 4, 3, 1, "warning"),
        lifecycleErrors: r(300, 4, 3, 1, "warning"),
        nodePoolNotReady: r(300, 2, 2, 1, "warning"),
        heartbeat: r(300, 3, 3, 1, "warning"),
        logHeartbeat: r(3600, 168, 168, 1, "warning"),
        nodeClaimNotInitialized: r(300, 1, 1, 1800, "warning"),
        nodeNotReady: r(300, 1, 1, 1800, "warning"),
        nodePoolLimit: r(300, 3, 3, 90, "warning"),
        queueAge: r(60, 5, 5, 180, "warning"),
        failedInvocations: r(300, 1, 1, 5, "warning"),
        burstReplicas: r(300, 3, 3, 1, "warning"),
        spotInterruptions: r(3600, 1, 1, 20, "warning"),
        scaleDownOrder: r(300, 3, 3, 1, "warning"),
    },
    production: {
        controllerDown: r(300, 2, 2, 1, "critical"),
        unschedulablePods: r(300, 4, 3, 20, "critical"),
        launchFailures: r(300, 4, 3, 1, "critical"),
        lifecycleErrors: r(300, 4, 3, 1, "warning"),
        nodePoolNotReady: r(300, 2, 2, 1, "critical"),
        heartbeat: r(300, 3, 3, 1, "warning"),
        logHeartbeat: r(3600, 168, 168, 1, "warning"),
        nodeClaimNotInitialized: r(300, 1, 1, 1800, "warning"),
        nodeNotReady: r(300, 1, 1, 1800, "warning"),
        nodePoolLimit: r(300, 3, 3, 90, "warning"),
        queueAge: r(60, 5, 3, 120, "critical"),
        failedInvocations: r(300, 1, 1, 1, "warning"),
        burstReplicas: r(300, 3, 3, 1, "warning"),
        spotInterruptions: r(3600, 1, 1, 10, "warning"),
        scaleDownOrder: r(300, 3, 3, 1, "warning"),
    },
};

const SLUG: Record<string, string> = {
    unschedulablePods: "unschedulable-pods",
    launchFailures: "launch-failures",
    lifecycleErrors: "nodeclaim-lifecycle-errors",
    nodePoolNotReady: "nodepool-not-ready",
    logHeartbeat: "log-heartbeat",
};

/** Every alarm a stack must have, with everything CloudWatch evaluates and who it tells. */
function expectedAlarms(stack: string) {
    const cluster = clusterOf(stack);
    const rules = RULES[stack];
    const alarm = (kind: string, metric: Record<string, unknown>, treatMissingData: string, opts: { ok?: boolean; comparison?: string; math?: boolean } = {}) => {
        const { notify, period, ...rule } = rules[kind];
        const target = topicArn(notify);
        return {
            ...metric,
            ...(opts.math ? {} : { period }),
            ...rule,
            comparisonOperator: opts.comparison ?? "GreaterThanOrEqualToThreshold",
            treatMissingData,
            alarmActions: [target],
            okActions: opts.ok === false ? [] : [target],
        };
    };
    const replicas = (namespace: string, deployment: string) => ({
        namespace: PROM,
        metricName: "kube_deployment_status_replicas_unavailable",
        statistic: "Minimum",
        dimensions: { ClusterName: cluster, namespace, deployment },
    });
    const logLines = (metricName: string) => ({ namespace: `NotifyKarpenter/${cluster}`, metricName, statistic: "Sum" });
    const gauge = (id: string, metricName: string, resource: string) => ({
        id,
        returnData: false,
        metric: { namespace: PROM, metricName, stat: "Maximum", period: 300, dimensions: { ClusterName: cluster, nodepool: POOL, resource_type: resource } },
    });
    return {
        [`${cluster}-karpenter-replicas-unavailable`]: alarm("controllerDown", replicas("karpenter", "karpenter"), "breaching"),
        [`${cluster}-karpenter-unschedulable-pods`]: alarm("unschedulablePods", logLines("UnschedulableBurstPodLines"), "notBreaching"),
        [`${cluster}-karpenter-launch-failures`]: alarm("launchFailures", logLines("LaunchFailureLines"), "notBreaching"),
        [`${cluster}-karpenter-nodeclaim-lifecycle-errors`]: alarm("lifecycleErrors", logLines("NodeClaimLifecycleErrorLines"), "notBreaching"),
        [`${cluster}-karpenter-nodepool-not-ready`]: alarm("nodePoolNotReady", logLines("NodePoolNotReadyLines"), "notBreaching"),
        [`${cluster}-karpenter-log-heartbeat`]: alarm("logHeartbeat", logLines("KarpenterLogLines"), "breaching", { comparison: "LessThanThreshold" }),
        // Samples of the leader's cpu limit gauge (one per scrape): none means Karpenter or its scrape is silent.
        [`${cluster}-karpenter-metrics-heartbeat`]: alarm(
            "heartbeat",
            { namespace: PROM, metricName: "karpenter_nodepools_limit", statistic: "SampleCount", dimensions: { ClusterName: cluster, nodepool: POOL, resource_type: "cpu" } },
            "breaching",
            { comparison: "LessThanThreshold" },
        ),
        // operatorpkg's condition gauges through the plan's scrape: seconds not Initialized, or not Ready.
        [`${cluster}-karpenter-nodeclaim-not-initialized`]: alarm(
            "nodeClaimNotInitialized",
            {
                namespace: PROM,
                metricName: "operator_nodeclaim_status_condition_current_status_seconds",
                statistic: "Maximum",
                dimensions: { ClusterName: cluster, karpenter_sh_nodepool: POOL, type: "Initialized" },
            },
            "notBreaching",
        ),
        [`${cluster}-karpenter-node-not-ready`]: alarm(
            "nodeNotReady",
            { namespace: PROM, metricName: "operator_node_status_condition_current_status_seconds", statistic: "Maximum", dimensions: { ClusterName: cluster, karpenter_sh_nodepool: POOL, type: "Ready" } },
            "notBreaching",
        ),
        [`${cluster}-karpenter-nodepool-near-limit`]: alarm(
            "nodePoolLimit",
            {
                metricQueries: [
                    gauge("cpu_used", "karpenter_nodepools_usage", "cpu"),
                    gauge("cpu_limit", "karpenter_nodepools_limit", "cpu"),
                    gauge("mem_used", "karpenter_nodepools_usage", "memory"),
                    gauge("mem_limit", "karpenter_nodepools_limit", "memory"),
                    { id: "share", expression: "MAX([100 * cpu_used / cpu_limit, 100 * mem_used / mem_limit])", label: `${POOL} % of limit`, returnData: true },
                ],
            },
            "notBreaching",
            { math: true },
        ),
        [`${cluster}-karpenter-interruption-queue-age`]: alarm(
            "queueAge",
            { namespace: "AWS/SQS", metricName: "ApproximateAgeOfOldestMessage", statistic: "Maximum", dimensions: { QueueName: `${cluster}-karpenter` } },
            "notBreaching",
        ),
        ...Object.fromEntries(
            RULE_SUFFIXES.map((s) => [
                `${cluster}-karpenter-${s}-failed-invocations`,
                alarm("failedInvocations", { namespace: "AWS/Events", metricName: "FailedInvocations", statistic: "Sum", dimensions: { RuleName: `${cluster}-${s}` } }, "notBreaching"),
            ]),
        ),
        ...Object.fromEntries(BURST.map((d) => [`${cluster}-${d}-replicas-unavailable`, alarm("burstReplicas", replicas("notification-canada-ca", d), "notBreaching")])),
        // This cluster's NodeClaims deleted for a spot interruption, from Karpenter's own counter.
        [`${cluster}-karpenter-spot-interruptions`]: alarm(
            "spotInterruptions",
            { namespace: PROM, metricName: "karpenter_nodeclaims_disrupted_total", statistic: "Sum", dimensions: { ClusterName: cluster, nodepool: POOL, reason: "spot_interrupted" } },
            "notBreaching",
            { ok: false },
        ),
        // The scale-down annotator not ready (its passes fail): a cost, not an outage, so no data is not breaching.
        [`${cluster}-burst-scale-down-order-replicas-unavailable`]: alarm("scaleDownOrder", replicas("karpenter", "burst-scale-down-order"), "notBreaching"),
    };
}

const EVALUATED = [
    "namespace", "metricName", "statistic", "dimensions", "metricQueries", "period", "evaluationPeriods", "datapointsToAlarm", "threshold",
    "comparisonOperator", "treatMissingData", "alarmActions", "okActions",
] as const;
const evaluated = (a: RecordedResource) => Object.fromEntries(EVALUATED.filter((k) => a.inputs[k] !== undefined).map((k) => [k, a.inputs[k]]));

/**
 * CloudWatch's M-of-N evaluation over a series of period values (undefined: no data): the alarm fires at the first
 * moment when M of the last N periods breach. Returns whether it ever fired.
 */
function wouldAlarm(alarm: RecordedResource, series: (number | undefined)[]): boolean {
    const { evaluationPeriods: n, datapointsToAlarm: m, threshold, treatMissingData, comparisonOperator } = alarm.inputs;
    const breaches = (v: number) => (comparisonOperator === "LessThanThreshold" ? v < threshold : v >= threshold);
    const breaching = series.map((v) => (v === undefined ? treatMissingData === "breaching" : breaches(v)));
    return breaching.some((_, t) => t + 1 >= n && breaching.slice(t + 1 - n, t + 1).filter(Boolean).length >= m);
}

/** Lines per 5-minute period of `pods` pods stuck for `seconds` from the start of a period (one line per pod per 10 s). */
function stuckPods(pods: number, seconds: number, periods: number): number[] {
    return Array.from({ length: periods }, (_, i) => pods * Math.floor(Math.max(0, Math.min(seconds - i * 300, 300)) / 10));
}

for (const stack of STACKS) {
    describe(`KarpenterAlarms (${stack})`, () => {
        let b: Awaited<ReturnType<typeof buildStack>>;
        const cluster = clusterOf(stack);
        const alarmNamed = (name: string) => {
            const found = b.byType(ALARM).find((a) => a.inputs.name === name);
            if (!found) throw new Error(`no alarm ${name}`);
            return found;
        };

        before(async () => {
            b = await buildStack(stack);
        });

        it("creates every alarm with its metric, dimensions, statistic, period, M of N, threshold, comparison, missing data and actions", () => {
            const actual = Object.fromEntries(b.byType(ALARM).map((a) => [a.inputs.name, evaluated(a)]));
            expect(actual).to.deep.equal(expectedAlarms(stack));
        });

        it("names every alarm after the cluster, within CloudWatch's limit, as children of the component", () => {
            const component = b.get("notify-karpenter:index:KarpenterAlarms", "karpenter-alarms");
            const alarms = b.byType(ALARM);
            expect(alarms).to.have.length(23);
            for (const a of alarms) {
                expect(a.inputs.name).to.match(new RegExp(`^${cluster}-`));
                expect(a.inputs.name.length).to.be.at.most(255);
                expect(a.name).to.match(/^karpenter-alarms-/);
                expect(a.parent).to.equal(component.urn);
                expect(a.provider).to.match(/::pulumi:providers:aws::aws::/);
                expect(a.inputs.alarmDescription).to.include(cluster);
                expect(a.inputs.alarmDescription.length).to.be.at.most(1024);
            }
        });

        it("explains each log threshold by Karpenter's logging rate in the alarm description", () => {
            expect(alarmNamed(`${cluster}-karpenter-unschedulable-pods`).inputs.alarmDescription).to.include(
                'could not place burst pods of notification-canada-ca ("could not schedule pod" for a pod of a burst Deployment, not of a Job or CronJob: NodePool limits reached, or no instance type or offering fits) with at least 20 lines, about 4 pod-minutes at one line per pod every 10 s, in 3 of 4 periods of 300 s',
            );
            const launch = RULES[stack].launchFailures;
            expect(alarmNamed(`${cluster}-karpenter-launch-failures`).inputs.alarmDescription).to.include(
                `at least ${launch.threshold} time(s) a period, one line per failed launch; Karpenter retries another offering within seconds, so failures in most periods mean launches keep failing, in ${launch.datapointsToAlarm} of ${launch.evaluationPeriods} periods of 300 s`,
            );
            expect(alarmNamed(`${cluster}-karpenter-nodepool-not-ready`).inputs.alarmDescription).to.include(
                "it logs one on every provisioning loop, about every 10 s while pods wait, and stays so until someone acts, in 2 of 2 periods of 300 s",
            );
            expect(alarmNamed(`${cluster}-karpenter-log-heartbeat`).inputs.alarmDescription).to.match(/^No Karpenter log line from .* for 168 of 168 periods of 3600 s .*a whole quiet weekend long;.*the log alarms are blind\.$/);
            expect(alarmNamed(`${cluster}-karpenter-metrics-heartbeat`).inputs.alarmDescription).to.include(
                "Its leader exports that gauge at every scrape, busy or idle: no leader runs Karpenter's controllers, or cwagent-prometheus no longer scrapes it",
            );
            expect(alarmNamed(`${cluster}-karpenter-nodeclaim-lifecycle-errors`).inputs.alarmDescription).to.include('"Reconciler error" from nodeclaim.lifecycle other than a launch');
            expect(alarmNamed(`${cluster}-karpenter-nodeclaim-not-initialized`).inputs.alarmDescription).to.include(
                `kubectl get nodeclaims -l karpenter.sh/nodepool=${POOL}`,
            );
            expect(alarmNamed(`${cluster}-karpenter-node-not-ready`).inputs.alarmDescription).to.include("without the nodeRepair feature gate Karpenter does not replace it");
            expect(alarmNamed(`${cluster}-karpenter-nodepool-near-limit`).inputs.alarmDescription).to.include(`NodePool ${POOL} on ${cluster} has used at least 90% of its cpu or memory limit`);
        });

        it("counts each failure class and the log heartbeat with its own JSON metric filter on the controller's log group", () => {
            const filters = Object.fromEntries(b.byType(FILTER).map((f) => [f.name, f]));
            const expected = logSignalPatterns({ namespace: "karpenter", container: "controller", burstNamespace: "notification-canada-ca", burstDeployments: BURST, nodePoolName: POOL });
            expect(Object.keys(filters)).to.have.members(Object.values(SLUG).map((s) => `karpenter-alarms-${s}-filter`));
            for (const [kind, slug] of Object.entries(SLUG)) {
                const f = filters[`karpenter-alarms-${slug}-filter`];
                expect(f.inputs).to.deep.equal({
                    name: `${cluster}-karpenter-${slug}`,
                    logGroupName: `/aws/containerinsights/${cluster}/application`,
                    pattern: expected[kind as keyof typeof expected],
                    metricTransformation: { namespace: `NotifyKarpenter/${cluster}`, name: LOG_METRIC[kind as keyof typeof LOG_METRIC], value: "1", defaultValue: "0", unit: "Count" },
                });
                expect(alarmNamed(`${cluster}-karpenter-${slug}`).dependencies).to.include(f.urn);
            }
            const error = '$.kubernetes.namespace_name = "karpenter" && $.kubernetes.container_name = "controller" && $.log_processed.level = "ERROR"';
            expect(expected.unschedulablePods).to.equal(
                `{ ${error} && $.log_processed.message = "could not schedule pod" && $.log_processed.Pod.namespace = "notification-canada-ca" && (` +
                    BURST.map((d) => `$.log_processed.Pod.name = "${d}-*"`).join(" || ") +
                    ") }",
            );
            const lifecycle = '$.log_processed.message = "Reconciler error" && $.log_processed.controller = "nodeclaim.lifecycle"';
            expect(expected.launchFailures).to.equal(
                `{ ${error} && ($.log_processed.message = "failed launching nodeclaim" || (${lifecycle} && $.log_processed.error = "launching nodeclaim*")) }`,
            );
            expect(expected.lifecycleErrors).to.equal(
                `{ ${error} && ((${lifecycle} && $.log_processed.error != "launching nodeclaim*") || $.log_processed.message = "node claim registration error") }`,
            );
        });

        it("notifies GC Notify's alert-warning and alert-critical topics (by ARN in the cluster's account), creating no topic or key", () => {
            expect(b.byType("aws:sns/topic:Topic")).to.have.length(0);
            expect(b.byType("aws:kms/key:Key")).to.have.length(0);
            expect(new Set(b.byType(ALARM).flatMap((a) => a.inputs.alarmActions))).to.deep.equal(new Set(Object.values(RULES[stack]).map((x) => topicArn(x.notify))));
        });

        it("draws each failure class, both heartbeats, NodePool usage against its limit, interruptions, stuck NodeClaims and nodes, and the alarms' states", () => {
            const dashboard = b.get("aws:cloudwatch/dashboard:Dashboard", "karpenter-alarms-dashboard");
            expect(dashboard.inputs.dashboardName).to.equal(`${cluster}-karpenter`);
            const widgets = parseJson(dashboard.inputs.dashboardBody).widgets;
            const byTitle = (t: RegExp) => widgets.find((w: any) => t.test(w.properties.title));
            expect(byTitle(/alarms/).properties.alarms).to.have.members(b.byType(ALARM).map((a) => `arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${a.inputs.name}`));
            expect(byTitle(/Nodes/).properties.metrics).to.deep.equal([["ContainerInsights", "cluster_node_count", "ClusterName", cluster, { label: "nodes" }]]);
            const burst = byTitle(/Burst Celery/).properties.metrics;
            expect(burst).to.have.length(2 * BURST.length);
            expect(burst.map((m: any[]) => m[7])).to.have.members([...BURST, ...BURST]);
            expect(byTitle(/failures by class/).properties.metrics).to.deep.equal([
                [`NotifyKarpenter/${cluster}`, "UnschedulableBurstPodLines", { label: "unschedulable-pods" }],
                [`NotifyKarpenter/${cluster}`, "LaunchFailureLines", { label: "launch-failures" }],
                [`NotifyKarpenter/${cluster}`, "NodeClaimLifecycleErrorLines", { label: "nodeclaim-lifecycle-errors" }],
                [`NotifyKarpenter/${cluster}`, "NodePoolNotReadyLines", { label: "nodepool-not-ready" }],
            ]);
            const heartbeat = byTitle(/heartbeats/).properties;
            expect(heartbeat.metrics).to.deep.equal([
                [`NotifyKarpenter/${cluster}`, "KarpenterLogLines", { label: "log lines" }],
                [PROM, "karpenter_nodepools_limit", "ClusterName", cluster, "nodepool", POOL, "resource_type", "cpu", { label: "limit samples (one a scrape)", stat: "SampleCount" }],
            ]);
            expect(heartbeat.annotations.horizontal[0].value).to.equal(1);
            const stuck = byTitle(/^Stuck in /).properties;
            expect(stuck.metrics).to.deep.equal([
                [PROM, "operator_nodeclaim_status_condition_current_status_seconds", "ClusterName", cluster, "karpenter_sh_nodepool", POOL, "type", "Initialized", { label: "NodeClaim not initialized (s)" }],
                [PROM, "operator_node_status_condition_current_status_seconds", "ClusterName", cluster, "karpenter_sh_nodepool", POOL, "type", "Ready", { label: "node NotReady (s)" }],
                [PROM, "karpenter_nodeclaims_disrupted_total", "ClusterName", cluster, "nodepool", POOL, "reason", "launch_timeout", { label: "launch_timeout (per 5 min)", stat: "Sum", yAxis: "right" }],
                [PROM, "karpenter_nodeclaims_disrupted_total", "ClusterName", cluster, "nodepool", POOL, "reason", "registration_timeout", { label: "registration_timeout (per 5 min)", stat: "Sum", yAxis: "right" }],
            ]);
            expect(stuck.annotations.horizontal.map((h: any) => h.value)).to.deep.equal([1800, 1800]);
            // The table names them: cwagent-prometheus's EMF events carry every label of the series.
            const table = widgets.find((w: any) => w.type === "log").properties;
            expect(table.view).to.equal("table");
            expect(table.query).to.equal(
                `SOURCE '/aws/containerinsights/${cluster}/prometheus' | filter job = "karpenter" and karpenter_sh_nodepool = "${POOL}" and ` +
                    "(ispresent(operator_nodeclaim_status_condition_current_status_seconds) or ispresent(operator_node_status_condition_current_status_seconds))" +
                    " | stats max(operator_nodeclaim_status_condition_current_status_seconds) as notInitializedSeconds, max(operator_node_status_condition_current_status_seconds) as notReadySeconds, latest(reason) as reason by name" +
                    " | sort notInitializedSeconds desc, notReadySeconds desc | limit 50",
            );
            const usage = byTitle(/% of its cpu and memory limit/).properties;
            expect(usage.metrics.filter((m: any[]) => typeof m[0] === "string").map((m: any[]) => [m[1], m[7], m[8].id])).to.deep.equal([
                ["karpenter_nodepools_usage", "cpu", "cpu_used"],
                ["karpenter_nodepools_limit", "cpu", "cpu_limit"],
                ["karpenter_nodepools_usage", "memory", "mem_used"],
                ["karpenter_nodepools_limit", "memory", "mem_limit"],
            ]);
            expect(usage.metrics.filter((m: any[]) => typeof m[0] === "object").map((m: any[]) => m[0].expression)).to.deep.equal(["100 * cpu_used / cpu_limit", "100 * mem_used / mem_limit"]);
            expect(usage.annotations.horizontal[0].value).to.equal(RULES[stack].nodePoolLimit.threshold);
            expect(byTitle(/Spot interruptions/).properties.metrics[0].slice(0, 8)).to.deep.equal([PROM, "karpenter_nodeclaims_disrupted_total", "ClusterName", cluster, "nodepool", POOL, "reason", "spot_interrupted"]);
            expect(byTitle(/Interruption events/).properties.metrics.map((m: any[]) => m[3])).to.include.members(RULE_SUFFIXES.map((s) => `${cluster}-${s}`));
            expect(byTitle(/queue/).properties.metrics).to.deep.equal([["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", `${cluster}-karpenter`, { label: "age" }]]);
            for (const w of widgets) expect(w.properties.region).to.equal(REGION);
        });

        it("exports the topics, alarm names, dashboard and log patterns", () => {
            expect(Object.keys(b.outputs)).to.include.members(["alarmTopicArns", "alarmNames", "alarmDashboardName", "alarmLogPatterns"]);
            expect(b.outputs.alarmNames).to.have.members(b.byType(ALARM).map((a) => a.inputs.name));
            expect(b.outputs.alarmDashboardName).to.equal(`${cluster}-karpenter`);
            expect(Object.keys(b.outputs.alarmLogPatterns)).to.have.members([...FAILURE_CLASSES, "logHeartbeat"]);
        });

        it("shows each alarm with this stack's thresholds, metric math and comparison in the plan", () => {
            const text = summary(stack, b.resources);
            const u = RULES[stack].unschedulablePods;
            expect(text).to.include(
                `alarm ${cluster}-karpenter-unschedulable-pods: Sum of NotifyKarpenter/${cluster} UnschedulableBurstPodLines >= ${u.threshold} in ${u.datapointsToAlarm} of ${u.evaluationPeriods} x ${u.period}s, missing data notBreaching -> ${topicArn(u.notify)}`,
            );
            expect(text).to.include(`alarm ${cluster}-karpenter-log-heartbeat: Sum of NotifyKarpenter/${cluster} KarpenterLogLines < 1 in 168 of 168 x 3600s, missing data breaching`);
            expect(text).to.include(
                `alarm ${cluster}-karpenter-metrics-heartbeat: SampleCount of ${PROM} karpenter_nodepools_limit{ClusterName=${cluster},nodepool=${POOL},resource_type=cpu} < 1 in 3 of 3 x 300s, missing data breaching`,
            );
            expect(text).to.include(`alarm ${cluster}-karpenter-nodepool-near-limit: MAX([100 * cpu_used / cpu_limit, 100 * mem_used / mem_limit]) >= 90 in 3 of 3 x 300s`);
            expect(text.split("\n").filter((l) => l.startsWith("  alarm "))).to.have.length(23);
            expect(text).to.include(`log metric filter ${cluster}-karpenter-launch-failures on /aws/containerinsights/${cluster}/application: { $.kubernetes.namespace_name = "karpenter"`);
            expect(text).to.include(`dashboard ${cluster}-karpenter: 11 widgets`);
        });

        it("alarms on a pod stuck for most of 20 minutes, not on an offering blackout of 3 minutes", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-unschedulable-pods`);
            const quiet = Array(8).fill(0);
            // After an ICE, offerings are unavailable for 3 minutes: even 5 pods then touch at most two periods.
            expect(wouldAlarm(alarm, [...quiet, ...stuckPods(5, 180, 2), ...quiet])).to.equal(false);
            // One pod nothing can place (NodePool at its limit), for 20 minutes.
            expect(wouldAlarm(alarm, [...quiet, ...stuckPods(1, 1200, 4), ...quiet])).to.equal(true);
            expect(wouldAlarm(alarm, Array(12).fill(undefined))).to.equal(false);
        });

        it("alarms on launches failing in most periods, not on one failed launch retried elsewhere", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-launch-failures`);
            expect(wouldAlarm(alarm, [0, 0, 3, 0, 0, 1, 0, 0])).to.equal(false);
            expect(wouldAlarm(alarm, [0, 2, 1, 0, 4, 0])).to.equal(true);
        });

        it("alarms when Karpenter ignores the NodePool for 10 minutes", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-nodepool-not-ready`);
            expect(wouldAlarm(alarm, [0, 30, 0, 30])).to.equal(false);
            expect(wouldAlarm(alarm, [0, 30, 30])).to.equal(true);
        });

        it("alarms when no Karpenter line arrives for a week, or the log group receives nothing, but not after a quiet weekend", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-log-heartbeat`);
            const hours = (n: number, lines: number | undefined) => Array(n).fill(lines);
            // Lines on Friday evening, then silence until Monday's sending hours: 63 hours.
            expect(wouldAlarm(alarm, [...hours(100, 0), 4, ...hours(63, 0), 2, ...hours(10, 0)])).to.equal(false);
            expect(wouldAlarm(alarm, [5, ...hours(168, 0)])).to.equal(true);
            expect(wouldAlarm(alarm, [5, ...hours(168, undefined)])).to.equal(true);
            expect(wouldAlarm(alarm, [5, ...hours(167, 0), 1])).to.equal(false);
        });

        it("alarms when the leader's NodePool limit gauge has no sample for 15 minutes, not on a leader change or a missed scrape", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-metrics-heartbeat`);
            // SampleCount per 5 minutes: one sample a scrape, a scrape a minute (cwagent-prometheus's scrape_interval).
            expect(wouldAlarm(alarm, [5, 5, 3, 0, 4, 5, 5, 5])).to.equal(false);
            expect(wouldAlarm(alarm, [5, 5, undefined, 5, undefined, undefined, 5])).to.equal(false);
            expect(wouldAlarm(alarm, [5, 5, undefined, undefined, undefined])).to.equal(true);
            expect(wouldAlarm(alarm, [5, 0, 0, 0])).to.equal(true);
        });

        it("alarms when a NodeClaim of the pool is not initialized, or a node NotReady, for 30 minutes, not on an ordinary launch or termination", () => {
            for (const name of [`${cluster}-karpenter-nodeclaim-not-initialized`, `${cluster}-karpenter-node-not-ready`]) {
                const alarm = alarmNamed(name);
                // Maximum per 5 minutes of the gauge, which holds the seconds in the state; no series when none is stuck.
                expect(wouldAlarm(alarm, [undefined, 95, 140, undefined, undefined]), name).to.equal(false);
                expect(wouldAlarm(alarm, [undefined, 300, 600, 900, 1200, 1500, 1790, undefined]), name).to.equal(false);
                expect(wouldAlarm(alarm, [undefined, 300, 600, 900, 1200, 1500, 1800]), name).to.equal(true);
                expect(wouldAlarm(alarm, Array(12).fill(undefined)), name).to.equal(false);
            }
        });

        it("alarms when the controller stops, or its metric disappears, but not on a rolling restart", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-replicas-unavailable`);
            expect(wouldAlarm(alarm, [0, 0, 2, 2, 2])).to.equal(true);
            expect(wouldAlarm(alarm, [0, 0, undefined, undefined])).to.equal(true);
            expect(wouldAlarm(alarm, [0, 0, 1, 0, 0])).to.equal(false);
        });

        it("alarms when the scale-down annotator is not ready for three periods, not on a restart, and not when it is gone", () => {
            const alarm = alarmNamed(`${cluster}-burst-scale-down-order-replicas-unavailable`);
            expect(wouldAlarm(alarm, [0, 1, 0, 0, 1, 1, 0])).to.equal(false);
            expect(wouldAlarm(alarm, [0, 1, 1, 1, 0])).to.equal(true);
            expect(wouldAlarm(alarm, Array(6).fill(undefined))).to.equal(false);
            expect(alarm.inputs.alarmDescription).to.include("Costs money, breaks nothing");
        });

        it("alarms when burst replicas stay unavailable for three periods, not two", () => {
            const alarm = alarmNamed(`${cluster}-notify-celery-sms-send-burst-replicas-unavailable`);
            expect(wouldAlarm(alarm, [0, 4, 3, 0])).to.equal(false);
            expect(wouldAlarm(alarm, [0, 4, 3, 2])).to.equal(true);
            expect(wouldAlarm(alarm, [undefined, undefined, undefined])).to.equal(false);
        });

        it("alarms when the larger of the NodePool's cpu and memory shares reaches the threshold", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-nodepool-near-limit`);
            const limits = section(stack, "nodePool").limits;
            const cpuLimit = Number(limits.cpu);
            const memLimit = Number(limits.memory.replace("Gi", "")) * 2 ** 30;
            // The expression's value for usage (cores, bytes) against the stack's limits, as Karpenter exports them.
            const share = (cores: number, bytes: number) => Math.max((100 * cores) / cpuLimit, (100 * bytes) / memLimit);
            expect(wouldAlarm(alarm, [share(0.5 * cpuLimit, 0), share(0.95 * cpuLimit, 0), share(0.95 * cpuLimit, 0), share(cpuLimit, 0)])).to.equal(true);
            expect(wouldAlarm(alarm, Array(3).fill(share(0.1 * cpuLimit, 0.92 * memLimit)))).to.equal(true);
            expect(wouldAlarm(alarm, Array(6).fill(share(0.8 * cpuLimit, 0.8 * memLimit)))).to.equal(false);
        });
    });
}

// ---- A week's replay: what CloudWatch would store and evaluate ---------------------------------------------------

/** A metric's identity: namespace, name and its dimensions in any order. */
type MetricId = { namespace: string; metricName: string; dimensions?: Record<string, string> };
/** A metric of the replay, made once and shared by its datapoints, with its key (metricKey). */
type Metric = Required<MetricId> & { key: string };
/** A datapoint as CloudWatch stores it: minute `t` from Monday 00:00 UTC, its metric, value. */
type Point = { t: number; metric: Metric; value: number };
/** A log event of the application log group: minute, and Fluent Bit's record. */
type LogEvent = { t: number; record: string };

const MINUTE = 60;
const HOUR = 60;
const DAY = 24 * HOUR;
/** Monday 00:00 UTC to the next Monday 12:00 UTC: a working week, a quiet weekend, and Monday before sending hours. */
const REPLAY_MINUTES = 7 * DAY + 12 * HOUR;

const metricKey = (m: MetricId) => {
    const dimensions = Object.entries(m.dimensions ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    return `${m.namespace}\u0000${m.metricName}${dimensions.map(([k, v]) => `\u0000${k}\u0001${v}`).join("")}`;
};
/**
 * The replay's metrics, one object each: a week holds some 150,000 datapoints of a few dozen metrics, and a key or
 * dimensions object per datapoint made the replay slow to index and heavy to keep.
 */
const metrics = new Map<string, Metric>();
function metric(namespace: string, metricName: string, dimensions: Record<string, string> = {}): Metric {
    const key = metricKey({ namespace, metricName, dimensions });
    let m = metrics.get(key);
    if (!m) metrics.set(key, (m = { namespace, metricName, dimensions, key }));
    return m;
}
/** Datapoints by metric (metricKey), as CloudWatch stores them. */
type Index = Map<string, Point[]>;
const indexes = new WeakMap<Point[], Index>();
function indexOf(points: Point[]): Index {
    let index = indexes.get(points);
    if (!index) {
        index = new Map();
        for (const p of points) {
            const list = index.get(p.metric.key);
            if (list) list.push(p);
            else index.set(p.metric.key, [p]);
        }
        indexes.set(points, index);
    }
    return index;
}

/** How CloudWatch's statistics combine a period's datapoints, one at a time (`a` undefined: the period's first). */
const STATISTICS: Record<string, (a: number | undefined, v: number) => number> = {
    Sum: (a, v) => (a ?? 0) + v,
    Minimum: (a, v) => Math.min(a ?? v, v),
    Maximum: (a, v) => Math.max(a ?? v, v),
    SampleCount: (a) => (a ?? 0) + 1,
};
/** Datapoints of one metric per period (undefined: none), with CloudWatch's statistic. */
function periodSeries(index: Index, m: MetricId, stat: string, periodSeconds: number): (number | undefined)[] {
    const per = periodSeconds / MINUTE;
    const combine = STATISTICS[stat];
    const series: (number | undefined)[] = Array(Math.floor(REPLAY_MINUTES / per)).fill(undefined);
    for (const p of index.get(metricKey(m)) ?? []) {
        const i = Math.floor(p.t / per);
        if (i < series.length) series[i] = combine(series[i], p.value);
    }
    return series;
}

/**
 * The series an alarm evaluates in the replay: its metric with its statistic and period, or its metric math
 * evaluated per period where every input has a datapoint. Log metric filters turn each log event into 1 (a match)
 * or their default value.
 */
function alarmSeries(alarm: RecordedResource, filters: RecordedResource[], points: Point[], logs: LogEvent[]): (number | undefined)[] {
    const all = withLogMetrics(filters, points, logs);
    const a = alarm.inputs;
    if (!a.metricQueries) return periodSeries(all, a as MetricId, a.statistic, a.period);
    const byId = Object.fromEntries(a.metricQueries.filter((q: any) => q.metric).map((q: any) => [q.id, periodSeries(all, q.metric, q.metric.stat, q.metric.period)]));
    const result = a.metricQueries.find((q: any) => q.returnData);
    const ids = Object.keys(byId);
    const evaluate = new Function(...ids, "MAX", `return ${result.expression};`);
    return byId[ids[0]].map((_: unknown, i: number) => (ids.every((id) => byId[id][i] !== undefined) ? evaluate(...ids.map((id) => byId[id][i]), (xs: number[]) => Math.max(...xs)) : undefined));
}

/** The datapoints plus those the metric filters write (per log event 1 on a match, else the default value), by metric. */
const withLogs = new WeakMap<LogEvent[], WeakMap<Point[], Index>>();
/** What each metric filter writes from a week's log events: the tests' variations share their log events. */
const written = new WeakMap<LogEvent[], Map<RecordedResource, Point[]>>();
function withLogMetrics(filters: RecordedResource[], points: Point[], logs: LogEvent[]): Index {
    const cached = withLogs.get(logs)?.get(points);
    if (cached) return cached;
    if (!written.has(logs)) written.set(logs, new Map());
    const byFilter = written.get(logs)!;
    // The datapoints' own lists are shared, never changed: a metric the filters write gets a new list.
    const all: Index = new Map(indexOf(points));
    for (const f of filters) {
        const { namespace, name: metricName, value, defaultValue } = f.inputs.metricTransformation;
        const m = metric(namespace, metricName);
        if (!byFilter.has(f)) {
            // Most records repeat (the same API line every minute): the pattern is matched once per distinct record.
            const matches = new Map<string, boolean>();
            const matched = (record: string) => {
                let match = matches.get(record);
                if (match === undefined) matches.set(record, (match = filterPatternMatches(f.inputs.pattern, record)));
                return match;
            };
            byFilter.set(f, logs.map((e) => ({ t: e.t, metric: m, value: matched(e.record) ? Number(value) : Number(defaultValue) })));
        }
        all.set(m.key, [...(all.get(m.key) ?? []), ...byFilter.get(f)!]);
    }
    withLogs.set(logs, (withLogs.get(logs) ?? new WeakMap()).set(points, all));
    return all;
}

/**
 * A healthy week of GC Notify's cluster as CloudWatch receives it, minute by minute. Weekdays: a burst at 14:00 UTC
 * (Karpenter finds the pending burst pods, launches, registers and initializes a node: its real INFO lines; the
 * NodeClaim is uninitialized and its node NotReady for a minute or two; burst pods wait two minutes), and the night
 * consolidation at 23:05 UTC when the Underutilized budget opens (`disrupting node(s)`, `deleted nodeclaim`; the node
 * goes NotReady as its instance stops). Saturday and Sunday: no burst, nothing to launch or consolidate, so Karpenter
 * writes no line from Friday 23:05 to Monday 14:00; staging's notify-jobs CronJob pod waits 20 minutes on Saturday
 * for on-demand room. Every day and hour: other containers log, cwagent-prometheus scrapes kube-state-metrics and
 * Karpenter's leader every minute (one scrape missed on Saturday), one spot interruption on Wednesday, a controller
 * rolling restart on Tuesday, the interruption queue empty.
 */
function healthyWeek(cluster: string, stack: string): { points: Point[]; logs: LogEvent[] } {
    const points: Point[] = [];
    const logs: LogEvent[] = [];
    const limits = section(stack, "nodePool").limits as { cpu: string; memory: string };
    const cpuLimit = Number(limits.cpu);
    const memLimit = Number(limits.memory.replace("Gi", "")) * 2 ** 30;
    const karpenterLine = (t: number, message: string) => {
        const l = ORDINARY_LINES.find((x) => JSON.parse(x).message === message);
        if (!l) throw new Error(`no ordinary line ${message}`);
        logs.push({ t, record: fluentBitRecord(l) });
    };
    // Each gauge is looked up by its name and dimensions as written, not by metricKey: a cheaper key, a week long.
    const gauges = new Map<string, Metric>();
    const prom = (t: number, metricName: string, dimensions: Record<string, string>, value: number) => {
        const id = metricName + JSON.stringify(dimensions);
        let m = gauges.get(id);
        if (!m) gauges.set(id, (m = metric(PROM, metricName, { ClusterName: cluster, ...dimensions })));
        points.push({ t, metric: m, value });
    };
    const replicas = (t: number, namespace: string, deployment: string, unavailable: number) =>
        prom(t, "kube_deployment_status_replicas_unavailable", { namespace, deployment }, unavailable);
    const queueAge = metric("AWS/SQS", "ApproximateAgeOfOldestMessage", { QueueName: `${cluster}-karpenter` });
    const apiLine = fluentBitRecord(JSON.stringify({ level: "INFO", message: "GET /_status 200" }), { namespace: "notification-canada-ca", pod: "notify-api-5f6d7c8b9-aaaaa", container: "api" });
    for (let t = 0; t < REPLAY_MINUTES; t++) {
        const day = Math.floor(t / DAY);
        const minute = t % DAY;
        const weekday = day < 5;
        const burst = weekday && minute >= 14 * HOUR && minute < 15 * HOUR + 30;
        logs.push({ t, record: apiLine });
        // Karpenter's leader: NodePool gauges every scrape but one.
        if (!(day === 5 && minute === 3 * HOUR + 17)) {
            prom(t, "karpenter_nodepools_limit", { nodepool: POOL, resource_type: "cpu" }, cpuLimit);
            prom(t, "karpenter_nodepools_limit", { nodepool: POOL, resource_type: "memory" }, memLimit);
            prom(t, "karpenter_nodepools_usage", { nodepool: POOL, resource_type: "cpu" }, burst ? 48 : 16);
            prom(t, "karpenter_nodepools_usage", { nodepool: POOL, resource_type: "memory" }, (burst ? 96 : 32) * 2 ** 30);
        }
        replicas(t, "karpenter", "karpenter", day === 1 && minute === 10 * HOUR ? 1 : 0);
        replicas(t, "karpenter", "burst-scale-down-order", 0);
        for (const d of BURST) replicas(t, "notification-canada-ca", d, burst && minute < 14 * HOUR + 2 ? 6 : 0);
        points.push({ t, metric: queueAge, value: day === 2 && minute === 9 * HOUR ? 3 : 0 });
        if (weekday && minute === 14 * HOUR) {
            for (const m of ["found provisionable pod(s)", "computed new nodeclaim(s) to fit pod(s)", "created nodeclaim", "launched nodeclaim"]) karpenterLine(t, m);
        }
        if (weekday && minute === 14 * HOUR + 1) karpenterLine(t, "registered nodeclaim");
        if (weekday && minute === 14 * HOUR + 2) karpenterLine(t, "initialized nodeclaim");
        // The new NodeClaim is uninitialized from creation until 14:02, its node NotReady for its first minute.
        if (weekday && minute >= 14 * HOUR && minute < 14 * HOUR + 2) {
            prom(t, "operator_nodeclaim_status_condition_current_status_seconds", { karpenter_sh_nodepool: POOL, type: "Initialized" }, (minute - 14 * HOUR + 1) * 60);
        }
        if (weekday && minute === 14 * HOUR + 1) prom(t, "operator_node_status_condition_current_status_seconds", { karpenter_sh_nodepool: POOL, type: "Ready" }, 40);
        if (weekday && minute === 23 * HOUR + 5) for (const m of ["disrupting node(s)", "deleted nodeclaim"]) karpenterLine(t, m);
        if (weekday && minute >= 23 * HOUR + 6 && minute < 23 * HOUR + 9) {
            prom(t, "operator_node_status_condition_current_status_seconds", { karpenter_sh_nodepool: POOL, type: "Ready" }, (minute - 23 * HOUR - 5) * 60);
        }
        if (day === 2 && minute === 9 * HOUR) prom(t, "karpenter_nodeclaims_disrupted_total", { nodepool: POOL, reason: "spot_interrupted" }, 1);
        // Staging's notify-jobs CronJob pod waits for on-demand room on Saturday: Karpenter logs it every 10 s.
        if (stack === "staging" && day === 5 && minute >= 6 * HOUR && minute < 6 * HOUR + 20) {
            for (let i = 0; i < 6; i++) logs.push({ t, record: fluentBitRecord(NOT_BURST_POD_LINES[1]) });
        }
    }
    return { points, logs };
}

for (const stack of STACKS) {
    describe(`A quiet weekend with Karpenter healthy (${stack}): a week's replay of datapoints and log lines through every alarm`, () => {
        let b: Awaited<ReturnType<typeof buildStack>>;
        let week: ReturnType<typeof healthyWeek>;
        const cluster = clusterOf(stack);
        const series = (name: string, w = week) => alarmSeries(alarmNamed(name), b.byType(FILTER), w.points, w.logs);
        const alarmNamed = (name: string) => b.byType(ALARM).find((a) => a.inputs.name === name)!;
        const firing = (w: ReturnType<typeof healthyWeek>) => b.byType(ALARM).filter((a) => wouldAlarm(a, alarmSeries(a, b.byType(FILTER), w.points, w.logs))).map((a) => a.inputs.name);

        before(async () => {
            b = await buildStack(stack);
            week = healthyWeek(cluster, stack);
        });

        it("fires no alarm of the stack", () => {
            expect(firing(week)).to.deep.equal([]);
        });

        it("is quiet: Karpenter writes no line for more than two days, so the day-long log heartbeat it replaced would have fired", () => {
            const lines = series(`${cluster}-karpenter-log-heartbeat`);
            const silent = lines.map((v) => (v ?? 0) < 1);
            let longest = 0;
            silent.reduce((run, s) => ((longest = Math.max(longest, s ? run + 1 : 0)), s ? run + 1 : 0), 0);
            expect(longest).to.equal(stack === "staging" ? 53 : 60);
            const dayLong = { ...alarmNamed(`${cluster}-karpenter-log-heartbeat`), inputs: { ...alarmNamed(`${cluster}-karpenter-log-heartbeat`).inputs, evaluationPeriods: 24, datapointsToAlarm: 24 } };
            expect(wouldAlarm(dayLong, lines)).to.equal(true);
        });

        it("evaluates every alarm on data: each metric it reads has datapoints in the replay, but EventBridge's FailedInvocations (published only when a delivery fails)", () => {
            const empty = b.byType(ALARM).filter((a) => alarmSeries(a, b.byType(FILTER), week.points, week.logs).every((v) => v === undefined)).map((a) => a.inputs.name);
            expect(empty.every((n) => n.endsWith("-failed-invocations"))).to.equal(true);
            expect(empty).to.have.length(RULE_SUFFIXES.length);
        });

        it("fires the stuck alarms, and only them, when a replacement node never initializes on Saturday and another goes NotReady on Sunday", () => {
            const stuck = { points: [...week.points], logs: week.logs };
            const initialized = metric(PROM, "operator_nodeclaim_status_condition_current_status_seconds", { ClusterName: cluster, karpenter_sh_nodepool: POOL, type: "Initialized" });
            const ready = metric(PROM, "operator_node_status_condition_current_status_seconds", { ClusterName: cluster, karpenter_sh_nodepool: POOL, type: "Ready" });
            for (let m = 0; m < 45; m++) stuck.points.push({ t: 5 * DAY + 3 * HOUR + m, metric: initialized, value: (m + 1) * 60 });
            for (let m = 0; m < 45; m++) stuck.points.push({ t: 6 * DAY + 10 * HOUR + m, metric: ready, value: (m + 1) * 60 });
            expect(firing(stuck)).to.have.members([`${cluster}-karpenter-nodeclaim-not-initialized`, `${cluster}-karpenter-node-not-ready`]);
        });

        it("fires the metrics heartbeat, and only it, when cwagent-prometheus stops scraping Karpenter on Sunday", () => {
            const silent = { points: week.points.filter((p) => !(p.metric.metricName.startsWith("karpenter_") && p.t >= 6 * DAY + 2 * HOUR && p.t < 6 * DAY + 3 * HOUR)), logs: week.logs };
            expect(firing(silent)).to.deep.equal([`${cluster}-karpenter-metrics-heartbeat`]);
        });

        it("fires the log heartbeat, and only it, when Fluent Bit stops parsing Karpenter's lines for the whole week", () => {
            const unparsedRecords = new Map<string, string>();
            const unparsedRecord = (record: string) => {
                if (!unparsedRecords.has(record)) unparsedRecords.set(record, JSON.stringify({ ...JSON.parse(record), log_processed: undefined }));
                return unparsedRecords.get(record)!;
            };
            const unparsed = { points: week.points, logs: week.logs.map((e) => ({ t: e.t, record: unparsedRecord(e.record) })) };
            expect(firing(unparsed)).to.deep.equal([`${cluster}-karpenter-log-heartbeat`]);
        });
    });
}

describe("Karpenter log filters on Karpenter v1.14.1's lines, as Fluent Bit ships them", () => {
    const patterns = logSignalPatterns({ namespace: "karpenter", container: "controller", burstNamespace: "notification-canada-ca", burstDeployments: BURST, nodePoolName: POOL });
    const counted = (record: string) => (Object.keys(patterns) as (keyof typeof patterns)[]).filter((k) => filterPatternMatches(patterns[k]!, record));

    for (const k of FAILURE_CLASSES) {
        it(`counts every ${k} line in its own metric, and in the log heartbeat`, () => {
            expect(FAILURE_LINES[k]).to.not.be.empty;
            for (const l of FAILURE_LINES[k]) expect(counted(fluentBitRecord(l)), l).to.deep.equal([k, "logHeartbeat"]);
        });
    }

    it("counts no ordinary line as a failure, the debug line about InsufficientInstanceCapacity included, but each in the log heartbeat", () => {
        for (const l of ORDINARY_LINES) expect(counted(fluentBitRecord(l)), l).to.deep.equal(["logHeartbeat"]);
        expect(ORDINARY_LINES.some((l) => l.includes('"level":"DEBUG"') && l.includes("InsufficientInstanceCapacity"))).to.equal(true);
    });

    it("counts no registration or termination error of nodeclaim.lifecycle as a launch failure (K launch.go:116 alone starts \"launching nodeclaim\")", () => {
        for (const l of FAILURE_LINES.lifecycleErrors) {
            expect(JSON.parse(l).error, l).to.not.match(/^launching nodeclaim/);
            expect(counted(fluentBitRecord(l)), l).to.not.include("launchFailures");
        }
        for (const l of FAILURE_LINES.launchFailures.filter((x) => JSON.parse(x).message === "Reconciler error")) expect(JSON.parse(l).error).to.match(/^launching nodeclaim, /);
    });

    it("counts no unschedulable pod of the burst namespace that is not a burst Deployment's: the db-migration Job, a notify-jobs CronJob, a stable pod, headroom", () => {
        for (const l of NOT_BURST_POD_LINES) {
            expect(JSON.parse(l).Pod.namespace).to.equal("notification-canada-ca");
            expect(counted(fluentBitRecord(l)), l).to.deep.equal(["logHeartbeat"]);
        }
        // The namespace-wide filter this replaced counted all but the headroom line.
        const namespaceWide =
            '{ $.log_processed.level = "ERROR" && $.log_processed.message = "could not schedule pod" && $.log_processed.Pod.namespace = "notification-canada-ca" && $.log_processed.Pod.name != "celery-headroom-*" }';
        expect(NOT_BURST_POD_LINES.filter((l) => filterPatternMatches(namespaceWide, fluentBitRecord(l)))).to.have.length(3);
    });

    it("has no unschedulable-pods filter without burst Deployments (scratch): no pod of the namespace is Karpenter's to place", () => {
        const none = logSignalPatterns({ namespace: "karpenter", container: "controller", burstNamespace: "notification-canada-ca", burstDeployments: [], nodePoolName: POOL });
        expect(Object.keys(none)).to.have.members(["launchFailures", "lifecycleErrors", "nodePoolNotReady", "logHeartbeat"]);
    });

    it("counts nothing from another container, even a line with Karpenter's messages and InsufficientInstanceCapacity", () => {
        expect(counted(OTHER_CONTAINER_ICE)).to.deep.equal([]);
        const sameNamespaceOtherContainer = fluentBitRecord(FAILURE_LINES.launchFailures[0], { namespace: "karpenter", pod: "karpenter-6b7f9c9d8d-x2x4k", container: "sidecar" });
        expect(counted(sameNamespaceOtherContainer)).to.deep.equal([]);
    });

    it("counts nothing when Fluent Bit did not parse the line (no log_processed), so the log heartbeat falls silent too", () => {
        const unparsed = JSON.stringify({ ...JSON.parse(fluentBitRecord(FAILURE_LINES.launchFailures[0])), log_processed: undefined });
        expect(counted(unparsed)).to.deep.equal([]);
        // The old term filter counted any line containing the words, wherever it came from.
        expect(filterPatternMatches('?"failed launching nodeclaim" ?"could not schedule pod" ?"InsufficientInstanceCapacity"', OTHER_CONTAINER_ICE)).to.equal(true);
    });

    it("keeps every pattern within CloudWatch's 1024 characters", () => {
        for (const p of Object.values(patterns)) expect(p!.length).to.be.at.most(1024);
    });
});

// AWS's examples: CloudWatch Logs User Guide, "Using filter patterns to match terms in JSON log events"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/matching-terms-json-log-events.html, part of "Filter
// pattern syntax for metric filters, subscription filters, filter log events, and Live Tail").
describe("JSON filter patterns (CloudWatch Logs' documented examples)", () => {
    const event = JSON.stringify({
        eventType: "UpdateTrail",
        sourceIPAddress: "111.111.111.111",
        arrayKey: ["value", "another value"],
        objectList: [
            { name: "a", id: 1 },
            { name: "b", id: 2 },
        ],
        SomeObject: null,
        "cluster.name": "c",
    });
    const compound = JSON.stringify({
        user: { id: 1, email: "John.Stiles@example.com" },
        users: [
            { id: 2, email: "John.Doe@example.com" },
            { id: 3, email: "Jane.Doe@example.com" },
        ],
        actions: ["GET", "PUT", "DELETE"],
        coordinates: [
            [0, 1, 2],
            [4, 5, 6],
            [7, 8, 9],
        ],
    });

    const cases: [string, string, boolean][] = [
        ['{ $.eventType = "UpdateTrail" }', event, true],
        ["{ $.sourceIPAddress != 123.123.* }", event, true],
        ["{ $.sourceIPAddress != 111.111.* }", event, false],
        ['{ $.arrayKey[0] = "value" }', event, true],
        ["{ $.objectList[1].id = 2 }", event, true],
        ["{ $.SomeObject IS NULL }", event, true],
        ["{ $.SomeOtherObject NOT EXISTS }", event, true],
        ["{ $.eventType NOT EXISTS }", event, false],
        ["{ $.['cluster.name'] = \"c\" }", event, true],
        ['{ $.eventType = "Update*" }', event, true],
        ['{ $.eventType = "update*" }', event, false],
        ['{ ($.user.id = 2 && $.users[0].email = "nonmatch") || $.actions[2] = "GET" }', compound, false],
        ['{ $.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = "nonmatch" && $.actions[2] = "nonmatch" }', compound, true],
        ['{ ($.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = "nonmatch") && $.actions[2] = "nonmatch" }', compound, false],
        ["{ $.users[1].id > 2 && $.users[1].id <= 3 && $.coordinates[2][0] >= 7 && $.user.id < 1.5 }", compound, true],
        ["{ $.user.id != 1 }", compound, false],
    ];
    for (const [pattern, e, matches] of cases) {
        it(`${matches ? "matches" : "does not match"} ${pattern}`, () => {
            expect(jsonPatternMatches(pattern, e)).to.equal(matches);
        });
    }

    it("reads IS TRUE and IS FALSE, and treats a comparison on a missing field as false", () => {
        const e = JSON.stringify({ ok: true, retried: false, n: "7" });
        expect(jsonPatternMatches("{ $.ok IS TRUE && $.retried IS FALSE }", e)).to.equal(true);
        expect(jsonPatternMatches("{ $.retried IS TRUE }", e)).to.equal(false);
        expect(jsonPatternMatches('{ $.missing != "x" }', e)).to.equal(false);
        expect(jsonPatternMatches("{ $.n = 7 }", e), "a number compares with numbers only").to.equal(false);
        expect(jsonPatternMatches("{ $.ok IS TRUE }", "not json")).to.equal(false);
    });

    it("refuses a pattern it cannot read, naming the position", () => {
        expect(() => parseJsonPattern('{ $.a = "x" ')).to.throw(/expected "}" at character 13/);
        expect(() => parseJsonPattern('{ $.a < "x" }')).to.throw(/expected a number after </);
        expect(() => parseJsonPattern("{ $ = 1 }")).to.throw(/expected a field after \$/);
    });

    it("still reads term patterns: any ?-term, or all plain terms, case-sensitive", () => {
        expect(filterPatternMatches('?"a b" ?"c"', "x c y")).to.equal(true);
        expect(filterPatternMatches('"a" "b"', "a only")).to.equal(false);
        expect(filterPatternMatches('"A"', "a")).to.equal(false);
    });
});

describe("alarms config", () => {
    const rule = (stack: string, kind: string, patch: Record<string, unknown>) => ({ [kind]: { ...section(stack, "alarms")[kind], ...patch } });
    const badCases: [string, Record<string, unknown>, RegExp][] = [
        [
            "a period CloudWatch does not accept",
            rule("staging", "unschedulablePods", { period: 45 }),
            /^staging: notify-karpenter:alarms\.unschedulablePods\.period must be a period in seconds: a multiple of 60 up to 86400 \(the metrics have one-minute resolution\) \(got 45\)$/m,
        ],
        [
            "more datapoints than evaluation periods",
            rule("staging", "launchFailures", { datapointsToAlarm: 7 }),
            /notify-karpenter:alarms\.launchFailures\.datapointsToAlarm must be at most evaluationPeriods \(4\): .* \(got 7\)/,
        ],
        [
            "a log heartbeat window longer than 7 days",
            rule("staging", "logHeartbeat", { evaluationPeriods: 169 }),
            /notify-karpenter:alarms\.logHeartbeat\.evaluationPeriods must be at most 168 with a period of 3600 s: CloudWatch evaluates at most 7 days \(got 169\)/,
        ],
        [
            "a window of 5-minute periods longer than a day",
            rule("staging", "heartbeat", { evaluationPeriods: 289 }),
            /notify-karpenter:alarms\.heartbeat\.evaluationPeriods must be at most 288 with a period of 300 s: CloudWatch evaluates at most one day with periods under an hour, 7 days with periods of an hour or more \(got 289\)/,
        ],
        [
            "a stuck-node threshold an ordinary launch reaches",
            rule("staging", "nodeClaimNotInitialized", { threshold: 120 }),
            /notify-karpenter:alarms\.nodeClaimNotInitialized\.threshold must be an integer from 600 to 604800 \(got 120\)/,
        ],
        ["a share of the limit above 100%", rule("staging", "nodePoolLimit", { threshold: 120 }), /notify-karpenter:alarms\.nodePoolLimit\.threshold must be an integer from 1 to 100 \(got 120\)/],
        ["a zero threshold", rule("staging", "controllerDown", { threshold: 0 }), /notify-karpenter:alarms\.controllerDown\.threshold must be an integer from 1 to 10 \(got 0\)/],
        ["a queue age the queue never reaches", rule("staging", "queueAge", { threshold: 300 }), /notify-karpenter:alarms\.queueAge\.threshold must be an integer from 1 to 299 \(got 300\)/],
        ["an unknown severity", rule("staging", "controllerDown", { notify: "page" }), /notify-karpenter:alarms\.controllerDown\.notify must be one of "warning", "critical" \(got "page"\)/],
        ["the removed term filter", { failurePatterns: ["could not schedule pod"] }, /notify-karpenter:alarms\.failurePatterns is not a known key/],
        [
            "no topics and no subscriptions",
            { topicNames: undefined },
            /^staging: notify-karpenter:alarms\.subscriptions is required when neither topicArns nor topicNames is given: the created warning and critical topics would have nobody subscribed and every alarm would fire unseen/m,
        ],
        [
            "topics by name and by ARN",
            { topicArns: { warning: `arn:aws:sns:${REGION}:${ACCOUNT}:a`, critical: `arn:aws:sns:${REGION}:${ACCOUNT}:b` } },
            /notify-karpenter:alarms\.topicNames must not be given with topicArns: give one of topicArns, topicNames or subscriptions/,
        ],
        [
            "a topic in another region",
            { topicNames: undefined, topicArns: { warning: `arn:aws:sns:us-east-1:${ACCOUNT}:alert-warning`, critical: `arn:aws:sns:${REGION}:${ACCOUNT}:alert-critical` } },
            /^staging: notify-karpenter:alarms\.topicArns\.warning must be a topic in the cluster's region ca-central-1 \(an ARN starting arn:aws:sns:ca-central-1:\): CloudWatch alarm actions must be in the alarm's region \(got "arn:aws:sns:us-east-1:/m,
        ],
        [
            "a topic in another partition",
            { topicNames: undefined, topicArns: { warning: `arn:aws:sns:${REGION}:${ACCOUNT}:w`, critical: `arn:aws-us-gov:sns:${REGION}:${ACCOUNT}:c` } },
            /notify-karpenter:alarms\.topicArns\.critical must be a topic in the cluster's region/,
        ],
        [
            "an email endpoint that is not an address",
            { topicNames: undefined, subscriptions: { warning: [{ protocol: "email", endpoint: "oncall" }], critical: EMAIL } },
            /notify-karpenter:alarms\.subscriptions\.warning\[0\]\.endpoint must be an email address for protocol email \(got "oncall"\)/,
        ],
        ["an empty subscription list", { topicNames: undefined, subscriptions: { warning: [], critical: EMAIL } }, /notify-karpenter:alarms\.subscriptions\.warning must be a list of 1 to 10/],
        ["a bad topic name", { topicNames: { warning: "alert warning", critical: "alert-critical" } }, /notify-karpenter:alarms\.topicNames\.warning must be an SNS topic name/],
        ["a bad log group", { logGroupName: "karpenter logs" }, /notify-karpenter:alarms\.logGroupName must be a CloudWatch Logs group name/],
    ];
    for (const [what, patch, expected] of badCases) {
        it(`rejects ${what}, naming the key`, () => {
            const raw = rawConfig("staging", "alarms", patch);
            const alarms = raw.alarms as Record<string, unknown>;
            for (const [k, v] of Object.entries(alarms)) if (v === undefined) delete alarms[k];
            expect(errorOf(() => parseStackConfig("staging", raw))).to.match(expected);
        });
    }

    it("uses the documented defaults for a section with only a log group and topics", () => {
        const raw = rawConfig("production", "alarms", {});
        raw.alarms = { logGroupName: "/aws/containerinsights/notification-canada-ca-production-eks-cluster/application", topicNames: { warning: "alert-warning", critical: "alert-critical" } };
        const cfg = parseStackConfig("production", raw);
        expect(cfg.alarms.unschedulablePods).to.deep.equal({ period: 300, evaluationPeriods: 4, datapointsToAlarm: 3, threshold: 20, notify: "warning" });
        expect(cfg.alarms.heartbeat).to.deep.equal({ period: 300, evaluationPeriods: 3, datapointsToAlarm: 3, threshold: 1, notify: "warning" });
        expect(cfg.alarms.logHeartbeat).to.deep.equal({ period: 3600, evaluationPeriods: 168, datapointsToAlarm: 168, threshold: 1, notify: "warning" });
        for (const k of ["lifecycleErrors", "nodeClaimNotInitialized", "nodeNotReady"] as const) expect(cfg.alarms[k]).to.deep.equal(DEFAULT_RULES[k]);
        expect(cfg.alarms.metricSource.dimensions).to.deep.equal({ cluster: "ClusterName", namespace: "namespace", deployment: "deployment" });
    });

    it("stops the program before any resource when the alarms would notify nobody", async () => {
        const msg = await configErrorOf("production", patchSections("production", { alarms: { topicNames: undefined } }));
        expect(msg).to.match(/^production: notify-karpenter:alarms\.subscriptions is required/);
    });

    it("lets metricSource name Container Insights' own metric and dimensions", async () => {
        const b = await buildStack("staging", { alarms: { metricSource: CONTAINER_INSIGHTS_METRIC_SOURCE } });
        const controller = b.byType(ALARM).find((a) => a.inputs.name === `${clusterOf("staging")}-karpenter-replicas-unavailable`)!;
        expect(controller.inputs).to.deep.include({
            namespace: "ContainerInsights",
            metricName: "status_replicas_unavailable",
            dimensions: { ClusterName: clusterOf("staging"), Namespace: "karpenter", PodName: "karpenter" },
        });
        const widgets = parseJson(b.get("aws:cloudwatch/dashboard:Dashboard", "karpenter-alarms-dashboard").inputs.dashboardBody).widgets;
        const burst = widgets.find((w: any) => /Burst Celery/.test(w.properties.title)).properties.metrics;
        expect(burst[0].slice(0, 8)).to.deep.equal(["ContainerInsights", "replicas_desired", "ClusterName", clusterOf("staging"), "Namespace", "notification-canada-ca", "PodName", BURST[0]]);
    });
});

describe("KarpenterAlarms topics", () => {
    it("creates two KMS-encrypted topics, each subscribed to its endpoints, with a key CloudWatch may use", async () => {
        const b = await runOffline("staging", () =>
            new KarpenterAlarms("alarms", { ...MINIMAL_ARGS, subscriptions: { warning: EMAIL, critical: [...EMAIL, { protocol: "https", endpoint: "https://events.pagerduty.com/x" }] } }),
        );
        const keyArn = `arn:aws:kms:${REGION}:${ACCOUNT}:key/alarms-topics-key`;
        expect(b.byType("aws:sns/topic:Topic").map((t) => t.inputs)).to.deep.equal([
            { name: "c-karpenter-warning", kmsMasterKeyId: keyArn },
            { name: "c-karpenter-critical", kmsMasterKeyId: keyArn },
        ]);
        const topicArnOf = (s: string) => `arn:aws:sns:${REGION}:${ACCOUNT}:c-karpenter-${s}`;
        expect(b.byType("aws:sns/topicSubscription:TopicSubscription").map((s) => s.inputs)).to.deep.equal([
            { topic: topicArnOf("warning"), protocol: "email", endpoint: "oncall@example.org" },
            { topic: topicArnOf("critical"), protocol: "email", endpoint: "oncall@example.org" },
            { topic: topicArnOf("critical"), protocol: "https", endpoint: "https://events.pagerduty.com/x" },
        ]);
        const key = b.get("aws:kms/key:Key", "alarms-topics-key");
        expect(key.inputs.enableKeyRotation).to.equal(true);
        // CloudWatch needs kms:Decrypt and kms:GenerateDataKey* on an encrypted topic's key (SNS developer guide,
        // "Enable compatibility between event sources from AWS services and encrypted topics"); preflight's own check
        // of a topic's key accepts this policy.
        const policy = parseJson(key.inputs.policy);
        expect(policy).to.deep.equal({
            Version: "2012-10-17",
            Statement: [
                { Sid: "AccountAdministers", Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" },
                {
                    Sid: "CloudWatchAlarmsPublish",
                    Effect: "Allow",
                    Principal: { Service: "cloudwatch.amazonaws.com" },
                    Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
                    Resource: "*",
                    Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT } },
                },
            ],
        });
        expect(keyLetsCloudWatch(key.inputs.policy)).to.equal(true);
        expect(b.get("aws:kms/alias:Alias", "alarms-topics-key-alias").inputs.name).to.equal("alias/c-karpenter-alarms");
        expect(summary("staging", b.resources)).to.include(`SNS subscription https https://events.pagerduty.com/x to ${topicArnOf("critical")}`);
    });

    it("refuses created topics without a subscriber, before creating any child", async () => {
        let message = "";
        try {
            await runOffline("staging", () => new KarpenterAlarms("bad", { ...MINIMAL_ARGS, subscriptions: { warning: EMAIL, critical: [] } }));
        } catch (e) {
            message = (e as Error).message;
        }
        expect(message).to.equal("KarpenterAlarms bad: subscriptions.critical must list at least one endpoint when topicArns is not given: the created critical topic would notify nobody");
    });

    it("the policy pack refuses an alarm topic the stack creates without a subscription (alarm-topics-subscribed)", async () => {
        // Every default rule notifies the warning topic.
        const b = await runOffline("staging", () => new KarpenterAlarms("alarms", MINIMAL_ARGS));
        const inputs = policyInputs(b.resources);
        expect((await runPolicies([alarmTopicsSubscribed], inputs)).violations).to.deep.equal([]);
        const unsubscribed = inputs.filter((i) => !(i.type === "aws:sns/topicSubscription:TopicSubscription" && i.name.startsWith("alarms-warning")));
        const report = await runPolicies([alarmTopicsSubscribed], unsubscribed);
        expect(report.violations.map((v) => [v.message, v.urn])).to.deep.equal([
            [
                "SNS topic c-karpenter-warning is notified by alarms but has no subscription, so they would fire unseen; subscribe an endpoint (alarms.subscriptions) or notify an existing topic (alarms.topicNames)",
                b.get("aws:sns/topic:Topic", "alarms-warning-topic").urn,
            ],
        ]);
        const existing = await buildStack("production");
        expect((await runPolicies([alarmTopicsSubscribed], policyInputs(existing.resources))).notApplicable).to.have.length(1);
    });
});

describe("KarpenterAlarms options", () => {
    it("creates no burst alarms and no empty burst graph without burst Deployments", async () => {
        const b = await runOffline("staging", () => new KarpenterAlarms("alarms", { ...MINIMAL_ARGS, burstDeployments: [] }));
        expect(b.byType(ALARM).filter((a) => /celery/.test(a.inputs.name))).to.have.length(0);
        const widgets = parseJson(b.get("aws:cloudwatch/dashboard:Dashboard", "alarms-dashboard").inputs.dashboardBody).widgets;
        expect(widgets.map((w: any) => w.properties.title)).to.not.include("Burst Celery replicas: total and unavailable (pending)");
        for (const w of widgets.filter((x: any) => x.type === "metric")) expect(w.properties.metrics).to.not.be.empty;
    });

    it("validates its inputs before creating any child", async () => {
        const program = () =>
            new KarpenterAlarms("bad", {
                ...MINIMAL_ARGS,
                rules: { queueAge: { ...DEFAULT_RULES.queueAge, period: 90, datapointsToAlarm: 9 }, nodePoolLimit: { ...DEFAULT_RULES.nodePoolLimit, threshold: 150 } },
            });
        let message = "";
        try {
            await runOffline("staging", program);
        } catch (e) {
            message = (e as Error).message;
        }
        expect(message).to.equal(
            "KarpenterAlarms bad: rules.queueAge.period must be a multiple of 60 up to 86400 (got 90); " +
                "rules.queueAge.datapointsToAlarm must be at most evaluationPeriods (5): an alarm cannot need more breaching periods than it looks at (got 9); " +
                "rules.nodePoolLimit.threshold must be a percentage of the limit, at most 100 (got 150)",
        );
    });
});

describe("CloudWatch agent file for Karpenter's metrics (npm run plan)", () => {
    let out: string;
    let file: any;
    before(async () => {
        out = fs.mkdtempSync(path.join(os.tmpdir(), "plan-"));
        const result = await plan(["--stack", "production", "--out", out]);
        expect(result.exitCode, result.output).to.equal(0);
        expect(result.output).to.include("cwagent-prometheus-karpenter.json");
        file = JSON.parse(fs.readFileSync(path.join(out, "cwagent-prometheus-karpenter.json"), "utf8"));
    });
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("scrapes every controller replica's http-metrics port (8080) in Karpenter's namespace, keeping only the metrics the alarms read", () => {
        expect(file.metricsEndpoint).to.equal("http://karpenter.karpenter.svc:8080/metrics");
        expect(file.scrape_configs).to.deep.equal([
            {
                job_name: "karpenter",
                kubernetes_sd_configs: [{ role: "endpoints", namespaces: { names: ["karpenter"] } }],
                relabel_configs: [
                    { source_labels: ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"], action: "keep", regex: "karpenter;http-metrics" },
                    { source_labels: ["__meta_kubernetes_pod_name"], action: "replace", target_label: "pod_name" },
                ],
                metric_relabel_configs: [
                    {
                        source_labels: ["__name__", "type", "status", "karpenter_sh_nodepool"],
                        regex:
                            "(karpenter_nodepools_usage|karpenter_nodepools_limit|karpenter_nodeclaims_disrupted_total);;;" +
                            "|operator_nodeclaim_status_condition_current_status_seconds;Initialized;(False|Unknown);notify-karpenter" +
                            "|operator_node_status_condition_current_status_seconds;Ready;(False|Unknown);notify-karpenter",
                        action: "keep",
                    },
                ],
            },
        ]);
        expect(Object.keys(file.merge)).to.have.length(2);
    });

    // Series as Karpenter v1.14.1's leader exports them, with the labels its source gives each (K
    // pkg/controllers/metrics/nodepool/controller.go:53-56, pkg/metrics/metrics.go:61-73; operatorpkg's condition gauges
    // with name, type, status, reason and the objects' karpenter.sh/nodepool label, K pkg/controllers/controllers.go:143-160).
    const series: { labels: Record<string, string>; kept: boolean; why: string }[] = [
        { labels: { __name__: "karpenter_nodepools_limit", nodepool: POOL, resource_type: "cpu" }, kept: true, why: "the heartbeat and the limit share" },
        { labels: { __name__: "karpenter_nodepools_usage", nodepool: POOL, resource_type: "memory" }, kept: true, why: "the limit share" },
        { labels: { __name__: "karpenter_nodeclaims_disrupted_total", nodepool: POOL, reason: "registration_timeout", capacity_type: "spot" }, kept: true, why: "timeouts and spot interruptions" },
        { labels: { __name__: "operator_nodeclaim_status_condition_current_status_seconds", name: "notify-karpenter-7xk2p", type: "Initialized", status: "Unknown", reason: "StartupTaintsExist", karpenter_sh_nodepool: POOL, karpenter_k8s_aws_ec2nodeclass: POOL }, kept: true, why: "a NodeClaim not initialized" },
        { labels: { __name__: "operator_nodeclaim_status_condition_current_status_seconds", name: "notify-karpenter-7xk2p", type: "Initialized", status: "True", reason: "Initialized", karpenter_sh_nodepool: POOL }, kept: false, why: "an initialized NodeClaim" },
        { labels: { __name__: "operator_nodeclaim_status_condition_current_status_seconds", name: "notify-karpenter-7xk2p", type: "Ready", status: "Unknown", reason: "AwaitingReconciliation", karpenter_sh_nodepool: POOL }, kept: false, why: "the root condition, which Initialized decides" },
        { labels: { __name__: "operator_node_status_condition_current_status_seconds", name: "ip-10-0-1-23.ca-central-1.compute.internal", type: "Ready", status: "Unknown", reason: "NodeStatusUnknown", karpenter_sh_nodepool: POOL, karpenter_sh_initialized: "true" }, kept: true, why: "a node NotReady" },
        { labels: { __name__: "operator_node_status_condition_current_status_seconds", name: "ip-10-0-1-23.ca-central-1.compute.internal", type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory", karpenter_sh_nodepool: POOL }, kept: false, why: "a healthy condition that is False" },
        { labels: { __name__: "operator_node_status_condition_current_status_seconds", name: "ip-10-0-9-9.ca-central-1.compute.internal", type: "Ready", status: "False", reason: "KubeletNotReady", karpenter_sh_nodepool: "" }, kept: false, why: "a stable node, not the pool's" },
        { labels: { __name__: "operator_nodeclaim_status_condition_count", name: "notify-karpenter-7xk2p", type: "Initialized", status: "Unknown", karpenter_sh_nodepool: POOL }, kept: false, why: "a gauge no alarm reads" },
        { labels: { __name__: "karpenter_pods_state", name: "x", namespace: "notification-canada-ca" }, kept: false, why: "a metric no alarm reads" },
    ];
    /** Prometheus relabeling: source label values joined with ";" (a missing label is ""), the regex anchored at both ends. */
    const prometheusKeeps = (labels: Record<string, string>) => {
        const rule = file.scrape_configs[0].metric_relabel_configs[0];
        return new RegExp(`^(?:${rule.regex})$`).test(rule.source_labels.map((l: string) => labels[l] ?? "").join(";"));
    };
    for (const x of series) {
        it(`${x.kept ? "keeps" : "drops"} ${x.labels.__name__}${x.labels.type ? `{type=${x.labels.type}, status=${x.labels.status}}` : ""}: ${x.why}`, () => {
            expect(prometheusKeeps(x.labels)).to.equal(x.kept);
        });
    }

    it("declares as EMF every metric and dimension set the alarms read, in the shape of cwagent-prometheus's declarations", async () => {
        expect(file.metric_declaration).to.deep.equal([
            {
                source_labels: ["job"],
                label_matcher: "^karpenter$",
                dimensions: [["ClusterName", "nodepool", "resource_type"]],
                metric_selectors: ["^karpenter_nodepools_usage$", "^karpenter_nodepools_limit$"],
            },
            { source_labels: ["job"], label_matcher: "^karpenter$", dimensions: [["ClusterName", "nodepool", "reason"]], metric_selectors: ["^karpenter_nodeclaims_disrupted_total$"] },
            {
                source_labels: ["job", "type", "status"],
                label_matcher: "^karpenter;Initialized;(False|Unknown)$",
                dimensions: [["ClusterName", "karpenter_sh_nodepool", "type"]],
                metric_selectors: ["^operator_nodeclaim_status_condition_current_status_seconds$"],
            },
            {
                source_labels: ["job", "type", "status"],
                label_matcher: "^karpenter;Ready;(False|Unknown)$",
                dimensions: [["ClusterName", "karpenter_sh_nodepool", "type"]],
                metric_selectors: ["^operator_node_status_condition_current_status_seconds$"],
            },
        ]);
        // Every series the scrape keeps is declared by one declaration (the agent joins source labels with ";").
        for (const x of series.filter((y) => y.kept)) {
            const labels: Record<string, string> = { ...x.labels, job: "karpenter" };
            const decls = file.metric_declaration.filter(
                (d: any) => d.metric_selectors.includes(`^${labels.__name__}$`) && new RegExp(d.label_matcher).test(d.source_labels.map((l: string) => labels[l] ?? "").join(";")),
            );
            expect(decls, x.why).to.have.length(1);
            for (const dim of decls[0].dimensions[0].filter((d: string) => d !== "ClusterName")) expect(labels, `${x.why}: ${dim}`).to.have.property(dim);
        }
        // Each Prometheus-sourced alarm metric is published under exactly the dimension names it asks for.
        const b = await buildStack("production");
        const read = b.byType(ALARM).flatMap((a) => [a.inputs, ...(a.inputs.metricQueries ?? []).map((q: any) => q.metric).filter(Boolean)]).filter((m: any) => Object.values(KARPENTER_METRICS).includes(m.metricName));
        expect(read.length).to.equal(8);
        for (const m of read) {
            const decl = file.metric_declaration.find((d: any) => d.metric_selectors.includes(`^${m.metricName}$`));
            expect(decl.dimensions[0], m.metricName).to.have.members(Object.keys(m.dimensions));
        }
    });

    it("is the same config function the plan wrote, for any namespace and NodePool", () => {
        const c = cloudwatchAgentKarpenterConfig({ clusterName: "x", namespace: "kube-system", service: "karpenter", port: 9090, nodePoolName: "other" });
        expect(c.metricsEndpoint).to.equal("http://karpenter.kube-system.svc:9090/metrics");
        expect(c.scrape_configs[0].kubernetes_sd_configs[0].namespaces.names).to.deep.equal(["kube-system"]);
        expect(c.scrape_configs[0].metric_relabel_configs[0].regex).to.equal(scrapeKeepRegex("other"));
        expect(scrapeKeepRegex("other")).to.match(/;Initialized;\(False\|Unknown\);other\|/);
    });

    it("leaves kube_node_status_condition alone: GC Notify's kube-state-metrics job keeps only kube_deployment_status_replicas.* and kube_daemonset_status.*", () => {
        // notification-manifests 609853e2 helmfile/charts/aws-cloudwatch/templates/prometheus-configmap.yaml:40-44.
        const gcNotifyKeep = /^(?:(kube_deployment_status_replicas.*|kube_daemonset_status.*))$/;
        expect(gcNotifyKeep.test("kube_node_status_condition")).to.equal(false);
        expect(gcNotifyKeep.test("kube_deployment_status_replicas_unavailable")).to.equal(true);
        expect(JSON.stringify(file)).to.not.include("kube_node");
    });
});
