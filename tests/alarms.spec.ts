import { expect } from "chai";
import { keyLetsCloudWatch } from "../ops/preflight";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parseStackConfig } from "../stacks/validatedConfig";
import { CONTAINER_INSIGHTS_METRIC_SOURCE, DEFAULT_RULES, KarpenterAlarms, LOG_METRIC } from "../components/karpenterAlarms";
import { filterPatternMatches, jsonPatternMatches, parseJsonPattern } from "../components/filterPattern";
import { FAILURE_CLASSES, KARPENTER_METRICS, cloudwatchAgentKarpenterConfig, logSignalPatterns } from "../components/karpenterSignals";
import { PLACEHOLDERS, RecordedResource, runOffline } from "../plan/offlineRuntime";
import { plan } from "../plan/cli";
import { policyInputs, runPolicies } from "../plan/policyRun";
import { summary } from "../plan/render";
import { alarmTopicsSubscribed } from "../policy/policies";
import { BURST_DEPLOYMENTS, STACKS, buildStack, configErrorOf, errorOf, patchSections, parseJson, rawConfig, section } from "./helpers";
import { FAILURE_LINES, ORDINARY_LINES, OTHER_CONTAINER_ICE, fluentBitRecord } from "./karpenterLines";

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
        nodePoolNotReady: r(300, 2, 2, 1, "warning"),
        heartbeat: r(3600, 24, 24, 1, "warning"),
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
        nodePoolNotReady: r(300, 2, 2, 1, "critical"),
        heartbeat: r(3600, 24, 24, 1, "warning"),
        nodePoolLimit: r(300, 3, 3, 90, "warning"),
        queueAge: r(60, 5, 3, 120, "critical"),
        failedInvocations: r(300, 1, 1, 1, "warning"),
        burstReplicas: r(300, 3, 3, 1, "warning"),
        spotInterruptions: r(3600, 1, 1, 10, "warning"),
        scaleDownOrder: r(300, 3, 3, 1, "warning"),
    },
};

const SLUG: Record<string, string> = { unschedulablePods: "unschedulable-pods", launchFailures: "launch-failures", nodePoolNotReady: "nodepool-not-ready", heartbeat: "log-heartbeat" };

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
        [`${cluster}-karpenter-nodepool-not-ready`]: alarm("nodePoolNotReady", logLines("NodePoolNotReadyLines"), "notBreaching"),
        [`${cluster}-karpenter-log-heartbeat`]: alarm("heartbeat", logLines("KarpenterLogLines"), "breaching", { comparison: "LessThanThreshold" }),
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
            expect(alarms).to.have.length(19);
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
                'could not place pods of notification-canada-ca ("could not schedule pod": NodePool limits reached, or no instance type or offering fits) with at least 20 lines, about 4 pod-minutes at one line per pod every 10 s, in 3 of 4 periods of 300 s',
            );
            const launch = RULES[stack].launchFailures;
            expect(alarmNamed(`${cluster}-karpenter-launch-failures`).inputs.alarmDescription).to.include(
                `at least ${launch.threshold} time(s) a period, one line per failed launch; Karpenter retries another offering within seconds, so failures in most periods mean launches keep failing, in ${launch.datapointsToAlarm} of ${launch.evaluationPeriods} periods of 300 s`,
            );
            expect(alarmNamed(`${cluster}-karpenter-nodepool-not-ready`).inputs.alarmDescription).to.include(
                "it logs one on every provisioning loop, about every 10 s while pods wait, and stays so until someone acts, in 2 of 2 periods of 300 s",
            );
            expect(alarmNamed(`${cluster}-karpenter-log-heartbeat`).inputs.alarmDescription).to.match(/^No Karpenter log line from .* for 24 of 24 periods of 3600 s .*the failure alarms are blind\.$/);
            expect(alarmNamed(`${cluster}-karpenter-nodepool-near-limit`).inputs.alarmDescription).to.include(`NodePool ${POOL} on ${cluster} has used at least 90% of its cpu or memory limit`);
        });

        it("counts each failure class and the heartbeat with its own JSON metric filter on the controller's log group", () => {
            const filters = Object.fromEntries(b.byType(FILTER).map((f) => [f.name, f]));
            const expected = logSignalPatterns({ namespace: "karpenter", container: "controller", burstNamespace: "notification-canada-ca", nodePoolName: POOL });
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
            expect(expected.unschedulablePods).to.equal(
                '{ $.kubernetes.namespace_name = "karpenter" && $.kubernetes.container_name = "controller" && $.log_processed.level = "ERROR" && $.log_processed.message = "could not schedule pod" && $.log_processed.Pod.namespace = "notification-canada-ca" && $.log_processed.Pod.name != "celery-headroom-*" }',
            );
        });

        it("notifies GC Notify's alert-warning and alert-critical topics (by ARN in the cluster's account), creating no topic or key", () => {
            expect(b.byType("aws:sns/topic:Topic")).to.have.length(0);
            expect(b.byType("aws:kms/key:Key")).to.have.length(0);
            expect(new Set(b.byType(ALARM).flatMap((a) => a.inputs.alarmActions))).to.deep.equal(new Set(Object.values(RULES[stack]).map((x) => topicArn(x.notify))));
        });

        it("draws each failure class, the heartbeat, NodePool usage against its limit, interruptions and the alarms' states", () => {
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
                [`NotifyKarpenter/${cluster}`, "NodePoolNotReadyLines", { label: "nodepool-not-ready" }],
            ]);
            const heartbeat = byTitle(/heartbeat/).properties;
            expect(heartbeat.metrics).to.deep.equal([[`NotifyKarpenter/${cluster}`, "KarpenterLogLines", { label: "lines" }]]);
            expect(heartbeat.annotations.horizontal[0].value).to.equal(1);
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
            expect(Object.keys(b.outputs.alarmLogPatterns)).to.have.members([...FAILURE_CLASSES, "heartbeat"]);
        });

        it("shows each alarm with this stack's thresholds, metric math and comparison in the plan", () => {
            const text = summary(stack, b.resources);
            const u = RULES[stack].unschedulablePods;
            expect(text).to.include(
                `alarm ${cluster}-karpenter-unschedulable-pods: Sum of NotifyKarpenter/${cluster} UnschedulableBurstPodLines >= ${u.threshold} in ${u.datapointsToAlarm} of ${u.evaluationPeriods} x ${u.period}s, missing data notBreaching -> ${topicArn(u.notify)}`,
            );
            expect(text).to.include(`alarm ${cluster}-karpenter-log-heartbeat: Sum of NotifyKarpenter/${cluster} KarpenterLogLines < 1 in 24 of 24 x 3600s, missing data breaching`);
            expect(text).to.include(`alarm ${cluster}-karpenter-nodepool-near-limit: MAX([100 * cpu_used / cpu_limit, 100 * mem_used / mem_limit]) >= 90 in 3 of 3 x 300s`);
            expect(text.split("\n").filter((l) => l.startsWith("  alarm "))).to.have.length(19);
            expect(text).to.include(`log metric filter ${cluster}-karpenter-launch-failures on /aws/containerinsights/${cluster}/application: { $.kubernetes.namespace_name = "karpenter"`);
            expect(text).to.include(`dashboard ${cluster}-karpenter: 9 widgets`);
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

        it("alarms when no Karpenter line arrives for a day, or the log group receives nothing, but not after a quiet night", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-log-heartbeat`);
            const day = (lines: number) => Array(24).fill(lines);
            expect(wouldAlarm(alarm, [...Array(23).fill(0), 4, ...Array(23).fill(0), 2])).to.equal(false);
            expect(wouldAlarm(alarm, [5, ...day(0)])).to.equal(true);
            expect(wouldAlarm(alarm, [5, ...Array(24).fill(undefined)])).to.equal(true);
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

describe("Karpenter log filters on Karpenter v1.14.1's lines, as Fluent Bit ships them", () => {
    const patterns = logSignalPatterns({ namespace: "karpenter", container: "controller", burstNamespace: "notification-canada-ca", nodePoolName: POOL });
    const counted = (record: string) => (Object.keys(patterns) as (keyof typeof patterns)[]).filter((k) => filterPatternMatches(patterns[k], record));

    for (const k of FAILURE_CLASSES) {
        it(`counts every ${k} line in its own metric, and in the heartbeat`, () => {
            for (const l of FAILURE_LINES[k]) expect(counted(fluentBitRecord(l)), l).to.deep.equal([k, "heartbeat"]);
        });
    }

    it("counts no ordinary line as a failure, the debug line about InsufficientInstanceCapacity included, but each in the heartbeat", () => {
        for (const l of ORDINARY_LINES) expect(counted(fluentBitRecord(l)), l).to.deep.equal(["heartbeat"]);
        expect(ORDINARY_LINES.some((l) => l.includes('"level":"DEBUG"') && l.includes("InsufficientInstanceCapacity"))).to.equal(true);
    });

    it("counts nothing from another container, even a line with Karpenter's messages and InsufficientInstanceCapacity", () => {
        expect(counted(OTHER_CONTAINER_ICE)).to.deep.equal([]);
        const sameNamespaceOtherContainer = fluentBitRecord(FAILURE_LINES.launchFailures[0], { namespace: "karpenter", pod: "karpenter-6b7f9c9d8d-x2x4k", container: "sidecar" });
        expect(counted(sameNamespaceOtherContainer)).to.deep.equal([]);
    });

    it("counts nothing when Fluent Bit did not parse the line (no log_processed), so the heartbeat falls silent too", () => {
        const unparsed = JSON.stringify({ ...JSON.parse(fluentBitRecord(FAILURE_LINES.launchFailures[0])), log_processed: undefined });
        expect(counted(unparsed)).to.deep.equal([]);
        // The old term filter counted any line containing the words, wherever it came from.
        expect(filterPatternMatches('?"failed launching nodeclaim" ?"could not schedule pod" ?"InsufficientInstanceCapacity"', OTHER_CONTAINER_ICE)).to.equal(true);
    });

    it("keeps every pattern within CloudWatch's 1024 characters", () => {
        for (const p of Object.values(patterns)) expect(p.length).to.be.at.most(1024);
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
            "a heartbeat window longer than a day",
            rule("staging", "heartbeat", { evaluationPeriods: 25 }),
            /notify-karpenter:alarms\.heartbeat\.evaluationPeriods must be at most 24 with a period of 3600 s: CloudWatch evaluates at most one day \(got 25\)/,
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
        raw.alarms = { logGroupName: "/aws/containerinsights/x/application", topicNames: { warning: "alert-warning", critical: "alert-critical" } };
        const cfg = parseStackConfig("production", raw);
        expect(cfg.alarms.unschedulablePods).to.deep.equal({ period: 300, evaluationPeriods: 4, datapointsToAlarm: 3, threshold: 20, notify: "warning" });
        expect(cfg.alarms.heartbeat).to.deep.equal(DEFAULT_RULES.heartbeat);
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
                metric_relabel_configs: [{ source_labels: ["__name__"], regex: "karpenter_nodepools_usage|karpenter_nodepools_limit|karpenter_nodeclaims_disrupted_total", action: "keep" }],
            },
        ]);
        expect(Object.keys(file.merge)).to.have.length(2);
    });

    it("declares as EMF every metric and dimension set the alarms read, in the shape of cwagent-prometheus's declarations", async () => {
        expect(file.metric_declaration).to.deep.equal([
            {
                source_labels: ["job"],
                label_matcher: "^karpenter$",
                dimensions: [["ClusterName", "nodepool", "resource_type"]],
                metric_selectors: ["^karpenter_nodepools_usage$", "^karpenter_nodepools_limit$"],
            },
            { source_labels: ["job"], label_matcher: "^karpenter$", dimensions: [["ClusterName", "nodepool", "reason"]], metric_selectors: ["^karpenter_nodeclaims_disrupted_total$"] },
        ]);
        // Each Prometheus-sourced alarm metric is published under exactly the dimension names it asks for.
        const b = await buildStack("production");
        const read = b.byType(ALARM).flatMap((a) => [a.inputs, ...(a.inputs.metricQueries ?? []).map((q: any) => q.metric).filter(Boolean)]).filter((m: any) => Object.values(KARPENTER_METRICS).includes(m.metricName));
        expect(read.length).to.equal(5);
        for (const m of read) {
            const decl = file.metric_declaration.find((d: any) => d.metric_selectors.includes(`^${m.metricName}$`));
            expect(decl.dimensions[0], m.metricName).to.have.members(Object.keys(m.dimensions));
        }
    });

    it("is the same config function the plan wrote, for any namespace", () => {
        const c = cloudwatchAgentKarpenterConfig({ clusterName: "x", namespace: "kube-system", service: "karpenter", port: 9090 });
        expect(c.metricsEndpoint).to.equal("http://karpenter.kube-system.svc:9090/metrics");
        expect(c.scrape_configs[0].kubernetes_sd_configs[0].namespaces.names).to.deep.equal(["kube-system"]);
    });
});
