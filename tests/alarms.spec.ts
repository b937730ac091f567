import { expect } from "chai";
import { parseStackConfig } from "../stacks/config";
import { KarpenterAlarms, DEFAULT_RULES, filterPattern, filterPatternMatches } from "../components/karpenterAlarms";
import { PLACEHOLDERS, RecordedResource, runOffline } from "../plan/offlineRuntime";
import { summary } from "../plan/render";
import { BURST_DEPLOYMENTS, STACKS, buildStack, configErrorOf, errorOf, patchSections, parseJson, rawConfig, section } from "./helpers";

const ACCOUNT = PLACEHOLDERS.accountId;
const REGION = "ca-central-1";
const ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm";
const clusterOf = (stack: string) => `notification-canada-ca-${stack}-eks-cluster`;
const topicArn = (stack: string, severity: string) => `arn:aws:sns:${REGION}:${ACCOUNT}:${clusterOf(stack)}-karpenter-${severity}`;

const BURST = BURST_DEPLOYMENTS;
/** A KarpenterAlarms built directly, outside any stack. */
const MINIMAL_ARGS = {
    clusterName: "c",
    region: REGION,
    accountId: ACCOUNT,
    partition: "aws",
    logGroupName: "/aws/containerinsights/c/application",
    queueName: "c-karpenter",
    ruleNames: { "spot-interruption": "c-spot-interruption" },
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
        provisioningFailures: r(300, 6, 4, 3, "warning"),
        queueAge: r(60, 5, 5, 180, "warning"),
        failedInvocations: r(300, 1, 1, 5, "warning"),
        burstReplicas: r(300, 3, 3, 1, "warning"),
        spotInterruptions: r(3600, 1, 1, 20, "warning"),
    },
    production: {
        controllerDown: r(300, 2, 2, 1, "critical"),
        provisioningFailures: r(300, 5, 3, 1, "critical"),
        queueAge: r(60, 5, 3, 120, "critical"),
        failedInvocations: r(300, 1, 1, 1, "warning"),
        burstReplicas: r(300, 3, 3, 1, "warning"),
        spotInterruptions: r(3600, 1, 1, 10, "warning"),
    },
};

/** Every alarm a stack must have, with everything CloudWatch evaluates and who it tells. */
function expectedAlarms(stack: string) {
    const cluster = clusterOf(stack);
    const rules = RULES[stack];
    const alarm = (kind: string, metric: Record<string, unknown>, treatMissingData: string, ok = true) => {
        const { notify, ...rule } = rules[kind];
        const target = topicArn(stack, notify);
        return { ...metric, ...rule, comparisonOperator: "GreaterThanOrEqualToThreshold", treatMissingData, alarmActions: [target], okActions: ok ? [target] : [] };
    };
    const replicas = (namespace: string, deployment: string) => ({
        namespace: "ContainerInsights/Prometheus",
        metricName: "kube_deployment_status_replicas_unavailable",
        statistic: "Minimum",
        dimensions: { ClusterName: cluster, namespace, deployment },
    });
    return {
        [`${cluster}-karpenter-replicas-unavailable`]: alarm("controllerDown", replicas("karpenter", "karpenter"), "breaching"),
        [`${cluster}-karpenter-provisioning-failures`]: alarm(
            "provisioningFailures",
            { namespace: `NotifyKarpenter/${cluster}`, metricName: "ProvisioningFailures", statistic: "Sum" },
            "notBreaching",
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
        [`${cluster}-karpenter-spot-interruption-rate`]: alarm(
            "spotInterruptions",
            { namespace: "AWS/Events", metricName: "MatchedEvents", statistic: "Sum", dimensions: { RuleName: `${cluster}-spot-interruption` } },
            "notBreaching",
            false,
        ),
    };
}

const EVALUATED = [
    "namespace", "metricName", "statistic", "dimensions", "period", "evaluationPeriods", "datapointsToAlarm", "threshold",
    "comparisonOperator", "treatMissingData", "alarmActions", "okActions",
] as const;
const evaluated = (a: RecordedResource) => Object.fromEntries(EVALUATED.filter((k) => a.inputs[k] !== undefined).map((k) => [k, a.inputs[k]]));

/**
 * CloudWatch's M-of-N evaluation over a series of period values (undefined: no data): the alarm fires at the first
 * moment when M of the last N periods breach. Returns whether it ever fired.
 */
function wouldAlarm(alarm: RecordedResource, series: (number | undefined)[]): boolean {
    const { evaluationPeriods: n, datapointsToAlarm: m, threshold, treatMissingData } = alarm.inputs;
    const breaching = series.map((v) => (v === undefined ? treatMissingData === "breaching" : v >= threshold));
    return breaching.some((_, t) => t + 1 >= n && breaching.slice(t + 1 - n, t + 1).filter(Boolean).length >= m);
}

// Karpenter v1 controller log lines, as the controller writes them and as Fluent Bit ships them.
const LAUNCH_FAILURE = JSON.stringify({
    level: "ERROR",
    time: "2025-05-12T14:03:11.512Z",
    logger: "controller",
    message: "failed launching nodeclaim",
    commit: "1ad0d78",
    controller: "nodeclaim.lifecycle",
    controllerGroup: "karpenter.sh",
    controllerKind: "NodeClaim",
    NodeClaim: { name: "burst-spot-7xk2p" },
    error: "creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient m5.large capacity in the Availability Zone you requested (ca-central-1d).",
});
const SCHEDULING_FAILURE = JSON.stringify({
    level: "ERROR",
    time: "2025-05-12T14:03:12.001Z",
    logger: "controller",
    message: "could not schedule pod",
    commit: "1ad0d78",
    controller: "provisioner",
    Pod: { name: "notify-celery-sms-send-burst-6d9c7b7f4-q8w2z", namespace: "notification-canada-ca" },
    error: "incompatible with nodepool \"burst-spot\", daemonset overhead={...}, no instance type satisfied resources",
});
const INFO_LINES = [
    { message: "found provisionable pod(s)", controller: "provisioner", Pods: "notification-canada-ca/notify-celery-sms-send-burst-6d9c7b7f4-q8w2z", duration: "21.3ms" },
    { message: "computed new nodeclaim(s) to fit pod(s)", controller: "provisioner", nodeclaims: 1, pods: 3 },
    { message: "created nodeclaim", controller: "provisioner", NodePool: { name: "burst-spot" }, NodeClaim: { name: "burst-spot-7xk2p" } },
    { message: "launched nodeclaim", controller: "nodeclaim.lifecycle", "instance-type": "m5.large", zone: "ca-central-1a", "capacity-type": "spot" },
    { message: "registered nodeclaim", controller: "nodeclaim.lifecycle", Node: { name: "ip-10-0-1-23.ca-central-1.compute.internal" } },
    { message: "initialized nodeclaim", controller: "nodeclaim.lifecycle", allocatable: { cpu: "1930m", memory: "7060Mi" } },
    { message: "disrupting node(s)", controller: "disruption", reason: "underutilized", decision: "delete" },
].map((l) => JSON.stringify({ level: "INFO", time: "2025-05-12T14:03:10.000Z", logger: "controller", commit: "1ad0d78", ...l }));
/** Fluent Bit's copy of a container log line. */
const wrapped = (line: string) =>
    JSON.stringify({ log: line, stream: "stderr", kubernetes: { pod_name: "karpenter-6b7f9c9d8d-x2x4k", namespace_name: "karpenter", container_name: "controller" } });

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

        it("creates every alarm with its metric, dimensions, statistic, period, M of N, threshold, missing data and actions", () => {
            const actual = Object.fromEntries(b.byType(ALARM).map((a) => [a.inputs.name, evaluated(a)]));
            expect(actual).to.deep.equal(expectedAlarms(stack));
        });

        it("names every alarm after the cluster, within CloudWatch's limit, as children of the component", () => {
            const component = b.get("notify-karpenter:index:KarpenterAlarms", "karpenter-alarms");
            const alarms = b.byType(ALARM);
            expect(alarms).to.have.length(14);
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

        it("counts launch and scheduling failures from the controller's log group", () => {
            const filter = b.get("aws:cloudwatch/logMetricFilter:LogMetricFilter", "karpenter-alarms-provisioning-failures-filter");
            expect(filter.inputs).to.deep.include({
                name: `${cluster}-karpenter-provisioning-failures`,
                logGroupName: `/aws/containerinsights/${cluster}/application`,
                pattern: '?"failed launching nodeclaim" ?"could not schedule pod" ?"InsufficientInstanceCapacity"',
            });
            expect(filter.inputs.metricTransformation).to.deep.equal({
                namespace: `NotifyKarpenter/${cluster}`,
                name: "ProvisioningFailures",
                value: "1",
                defaultValue: "0",
                unit: "Count",
            });
            expect(alarmNamed(`${cluster}-karpenter-provisioning-failures`).dependencies).to.include(filter.urn);
        });

        it("creates two topics encrypted with a rotated key that CloudWatch may use", () => {
            const topics = b.byType("aws:sns/topic:Topic").map((t) => t.inputs);
            const keyArn = `arn:aws:kms:${REGION}:${ACCOUNT}:key/karpenter-alarms-topics-key`;
            expect(topics).to.deep.equal([
                { name: `${cluster}-karpenter-warning`, kmsMasterKeyId: keyArn },
                { name: `${cluster}-karpenter-critical`, kmsMasterKeyId: keyArn },
            ]);
            const key = b.get("aws:kms/key:Key", "karpenter-alarms-topics-key");
            expect(key.inputs.enableKeyRotation).to.equal(true);
            const cloudwatch = parseJson(key.inputs.policy).Statement.find((s: any) => s.Sid === "CloudWatchAlarmsPublish");
            expect(cloudwatch).to.deep.include({ Principal: { Service: "cloudwatch.amazonaws.com" }, Action: ["kms:Decrypt", "kms:GenerateDataKey*"] });
            expect(b.get("aws:kms/alias:Alias", "karpenter-alarms-topics-key-alias").inputs.name).to.equal(`alias/${cluster}-karpenter-alarms`);
        });

        it("draws a dashboard of nodes, burst replicas, failures, interruptions, queue age and the alarms' states", () => {
            const dashboard = b.get("aws:cloudwatch/dashboard:Dashboard", "karpenter-alarms-dashboard");
            expect(dashboard.inputs.dashboardName).to.equal(`${cluster}-karpenter`);
            const widgets = parseJson(dashboard.inputs.dashboardBody).widgets;
            const byTitle = (t: RegExp) => widgets.find((w: any) => t.test(w.properties.title));
            expect(byTitle(/alarms/).properties.alarms).to.have.members(b.byType(ALARM).map((a) => `arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${a.inputs.name}`));
            expect(byTitle(/Nodes/).properties.metrics).to.deep.equal([["ContainerInsights", "cluster_node_count", "ClusterName", cluster, { label: "nodes" }]]);
            const burst = byTitle(/Burst Celery/).properties.metrics;
            expect(burst).to.have.length(2 * BURST.length);
            expect(burst.map((m: any[]) => m[7])).to.have.members([...BURST, ...BURST]);
            expect(byTitle(/Provisioning failures/).properties.metrics[0].slice(0, 2)).to.deep.equal([`NotifyKarpenter/${cluster}`, "ProvisioningFailures"]);
            expect(byTitle(/Interruption events/).properties.metrics.map((m: any[]) => m[3])).to.include.members(RULE_SUFFIXES.map((s) => `${cluster}-${s}`));
            expect(byTitle(/queue/).properties.metrics).to.deep.equal([["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", `${cluster}-karpenter`, { label: "age" }]]);
            for (const w of widgets) expect(w.properties.region).to.equal(REGION);
        });

        it("exports the topics, alarm names and dashboard", async () => {
            expect(Object.keys(b.outputs)).to.include.members(["alarmTopicArns", "alarmNames", "alarmDashboardName", "provisioningFailurePattern"]);
            expect(b.outputs.alarmNames).to.have.members(b.byType(ALARM).map((a) => a.inputs.name));
            expect(b.outputs.alarmDashboardName).to.equal(`${cluster}-karpenter`);
        });

        it("shows each alarm with this stack's thresholds, the metric filter, the topics and the dashboard in the plan", () => {
            const text = summary(stack, b.resources);
            const pf = RULES[stack].provisioningFailures;
            expect(text).to.include(
                `alarm ${cluster}-karpenter-provisioning-failures: Sum of NotifyKarpenter/${cluster} ProvisioningFailures >= ${pf.threshold} in ${pf.datapointsToAlarm} of ${pf.evaluationPeriods} x ${pf.period}s, missing data notBreaching -> ${topicArn(stack, pf.notify)}`,
            );
            expect(text).to.include(`alarm ${cluster}-karpenter-spot-interruption-rate: Sum of AWS/Events MatchedEvents{RuleName=${cluster}-spot-interruption} >= ${RULES[stack].spotInterruptions.threshold} in 1 of 1 x 3600s`);
            expect(text.split("\n").filter((l) => l.startsWith("  alarm "))).to.have.length(14);
            expect(text).to.include(`log metric filter ${cluster}-karpenter-provisioning-failures on /aws/containerinsights/${cluster}/application: ?"failed launching nodeclaim"`);
            expect(text).to.include(`SNS topic ${cluster}-karpenter-critical`);
            expect(text).to.include(`dashboard ${cluster}-karpenter: 6 widgets`);
        });

        it("alarms on a persistent provisioning failure but not on a blip that clears within minutes", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-provisioning-failures`);
            const quiet = Array(12).fill(0);
            // Daily noise: a burst of failures that touches two 5-minute periods, then clears.
            expect(wouldAlarm(alarm, [...quiet, 40, 12, ...quiet])).to.equal(false);
            // Two separate blips within the window still do not add up to M.
            expect(wouldAlarm(alarm, [...quiet, 8, 0, 0, 0, 0, 0, ...quiet])).to.equal(false);
            // Karpenter keeps failing to launch: it alarms.
            expect(wouldAlarm(alarm, [...quiet, ...Array(6).fill(30)])).to.equal(true);
            // No log events at all (quiet log group) is not a failure.
            expect(wouldAlarm(alarm, Array(12).fill(undefined))).to.equal(false);
        });

        it("alarms when the controller stops, or its metric disappears, but not on a rolling restart", () => {
            const alarm = alarmNamed(`${cluster}-karpenter-replicas-unavailable`);
            expect(wouldAlarm(alarm, [0, 0, 2, 2, 2])).to.equal(true);
            expect(wouldAlarm(alarm, [0, 0, undefined, undefined])).to.equal(true);
            // Minimum over the period: one replica briefly unavailable during a restart gives a period minimum of 0.
            expect(wouldAlarm(alarm, [0, 0, 1, 0, 0])).to.equal(false);
        });

        it("alarms when burst replicas stay unavailable for three periods, not two", () => {
            const alarm = alarmNamed(`${cluster}-notify-celery-sms-send-burst-replicas-unavailable`);
            expect(wouldAlarm(alarm, [0, 4, 3, 0])).to.equal(false);
            expect(wouldAlarm(alarm, [0, 4, 3, 2])).to.equal(true);
            expect(wouldAlarm(alarm, [undefined, undefined, undefined])).to.equal(false);
        });
    });
}

describe("provisioning failure filter pattern", () => {
    const pattern = filterPattern(section("staging", "alarms").failurePatterns);

    it("counts a launch failure and a scheduling failure, raw and as Fluent Bit ships them", () => {
        for (const line of [LAUNCH_FAILURE, SCHEDULING_FAILURE]) {
            expect(filterPatternMatches(pattern, line), line).to.equal(true);
            expect(filterPatternMatches(pattern, wrapped(line)), wrapped(line)).to.equal(true);
        }
    });

    it("does not count Karpenter's ordinary info lines", () => {
        for (const line of INFO_LINES) {
            expect(filterPatternMatches(pattern, line), line).to.equal(false);
            expect(filterPatternMatches(pattern, wrapped(line)), line).to.equal(false);
        }
    });

    it("matches terms case-sensitively, any one of several, all of plain terms", () => {
        expect(filterPatternMatches(pattern, "Failed Launching NodeClaim")).to.equal(false);
        expect(filterPatternMatches(pattern, "fleet error: InsufficientInstanceCapacity")).to.equal(true);
        expect(filterPattern(["could not schedule pod"])).to.equal('"could not schedule pod"');
        expect(filterPatternMatches('"a" "b"', "a only")).to.equal(false);
        expect(filterPatternMatches('"a" "b"', "a and b")).to.equal(true);
    });

    it("is the same in both stacks", () => {
        expect(section("production", "alarms").failurePatterns).to.deep.equal(section("staging", "alarms").failurePatterns);
    });
});

describe("alarms config", () => {
    const rule = (stack: string, kind: string, patch: Record<string, unknown>) => ({ [kind]: { ...section(stack, "alarms")[kind], ...patch } });
    const badCases: [string, Record<string, unknown>, RegExp][] = [
        [
            "a period CloudWatch does not accept",
            rule("staging", "provisioningFailures", { period: 45 }),
            /^staging: notify-karpenter:alarms\.provisioningFailures\.period must be a period in seconds: 10, 30 or a multiple of 60 up to 86400 \(got 45\)$/m,
        ],
        [
            "more datapoints than evaluation periods",
            rule("staging", "provisioningFailures", { datapointsToAlarm: 7 }),
            /notify-karpenter:alarms\.provisioningFailures\.datapointsToAlarm must be at most evaluationPeriods \(6\): .* \(got 7\)/,
        ],
        [
            "an evaluation window longer than a day",
            rule("staging", "spotInterruptions", { evaluationPeriods: 25 }),
            /notify-karpenter:alarms\.spotInterruptions\.evaluationPeriods must be at most 24 with a period of 3600 s: CloudWatch evaluates at most one day \(got 25\)/,
        ],
        ["a zero threshold", rule("staging", "controllerDown", { threshold: 0 }), /notify-karpenter:alarms\.controllerDown\.threshold must be an integer from 1 to 10 \(got 0\)/],
        ["a threshold as text", rule("staging", "burstReplicas", { threshold: "one" }), /notify-karpenter:alarms\.burstReplicas\.threshold must be an integer from 1 to 1000 \(got "one"\)/],
        [
            "a queue age the queue never reaches",
            rule("staging", "queueAge", { threshold: 300 }),
            /notify-karpenter:alarms\.queueAge\.threshold must be an integer from 1 to 299 \(got 300\)/,
        ],
        ["zero evaluation periods", rule("staging", "queueAge", { evaluationPeriods: 0 }), /notify-karpenter:alarms\.queueAge\.evaluationPeriods must be an integer from 1 to 8640 \(got 0\)/],
        ["an unknown severity", rule("staging", "controllerDown", { notify: "page" }), /notify-karpenter:alarms\.controllerDown\.notify must be one of "warning", "critical" \(got "page"\)/],
        [
            "a misspelled rule key",
            { failedInvocations: { evaluationPeriod: 2 } },
            /notify-karpenter:alarms\.failedInvocations\.evaluationPeriod is not a known key \(did you mean "evaluationPeriods"\?\)/,
        ],
        [
            "a filter term with a double quote",
            { failurePatterns: ['"message":"could not schedule pod"'] },
            /notify-karpenter:alarms\.failurePatterns\[0\] must be a log term of at most 200 characters without double quotes or backslashes/,
        ],
        ["no filter terms", { failurePatterns: [] }, /notify-karpenter:alarms\.failurePatterns must be a list of 1 to 20 distinct items/],
        ["a bad topic ARN", { topicArns: { warning: "alert-warning", critical: "alert-critical" } }, /notify-karpenter:alarms\.topicArns\.warning must be an SNS topic ARN/],
        ["only one topic ARN", { topicArns: { warning: `arn:aws:sns:${REGION}:${ACCOUNT}:alert-warning` } }, /notify-karpenter:alarms\.topicArns\.critical is required/],
        ["a bad log group", { logGroupName: "karpenter logs" }, /notify-karpenter:alarms\.logGroupName must be a CloudWatch Logs group name/],
        ["a missing log group", { logGroupName: undefined }, /notify-karpenter:alarms\.logGroupName is required/],
    ];
    for (const [what, patch, expected] of badCases) {
        it(`rejects ${what}, naming the key`, () => {
            const raw = rawConfig("staging", "alarms", patch);
            const alarms = raw.alarms as Record<string, unknown>;
            for (const [k, v] of Object.entries(alarms)) if (v === undefined) delete alarms[k];
            expect(errorOf(() => parseStackConfig("staging", raw))).to.match(expected);
        });
    }

    it("uses the documented defaults for a section with only a log group", () => {
        const raw = rawConfig("production", "alarms", {});
        raw.alarms = { logGroupName: "/aws/containerinsights/x/application" };
        const cfg = parseStackConfig("production", raw);
        expect(cfg.alarms.provisioningFailures).to.deep.equal({ period: 300, evaluationPeriods: 6, datapointsToAlarm: 4, threshold: 1, notify: "warning" });
        expect(cfg.alarms.controllerDown).to.deep.equal(DEFAULT_RULES.controllerDown);
        expect(cfg.alarms.topicArns).to.equal(undefined);
        expect(cfg.alarms.failurePatterns).to.deep.equal(["failed launching nodeclaim", "could not schedule pod", "InsufficientInstanceCapacity"]);
    });

    it("fills a partly given rule from its defaults", () => {
        const cfg = parseStackConfig("staging", rawConfig("staging", "alarms", { queueAge: { threshold: 90 } }));
        expect(cfg.alarms.queueAge).to.deep.equal({ ...DEFAULT_RULES.queueAge, threshold: 90 });
    });

    it("stops the program before any resource with a bad threshold", async () => {
        const msg = await configErrorOf("production", patchSections("production", { alarms: rule("production", "provisioningFailures", { datapointsToAlarm: 6 }) }));
        expect(msg).to.match(/^production: notify-karpenter:alarms\.provisioningFailures\.datapointsToAlarm must be at most evaluationPeriods \(5\)/);
    });
});

describe("KarpenterAlarms options", () => {
    it("notifies existing topics when their ARNs are given, and creates no topic or key", async () => {
        const warning = `arn:aws:sns:${REGION}:${ACCOUNT}:alert-warning`;
        const critical = `arn:aws:sns:${REGION}:${ACCOUNT}:alert-critical`;
        const b = await buildStack("production", { alarms: { topicArns: { warning, critical } } });
        expect(b.byType("aws:sns/topic:Topic")).to.have.length(0);
        expect(b.byType("aws:kms/key:Key")).to.have.length(0);
        const actions = (name: string) => b.byType(ALARM).find((a) => a.inputs.name === `${clusterOf("production")}-${name}`)!.inputs.alarmActions;
        expect(actions("karpenter-replicas-unavailable")).to.deep.equal([critical]);
        expect(actions("karpenter-spot-interruption-rate")).to.deep.equal([warning]);
    });

    it("creates no burst alarms and no empty burst graph without burst Deployments", async () => {
        const b = await runOffline("staging", () => new KarpenterAlarms("alarms", { ...MINIMAL_ARGS, burstDeployments: [] }));
        expect(b.byType(ALARM).filter((a) => /celery/.test(a.inputs.name))).to.have.length(0);
        const widgets = parseJson(b.get("aws:cloudwatch/dashboard:Dashboard", "alarms-dashboard").inputs.dashboardBody).widgets;
        expect(widgets.map((w: any) => w.properties.title)).to.not.include("Burst Celery replicas: desired and unavailable (pending)");
        for (const w of widgets.filter((x: any) => x.type === "metric")) expect(w.properties.metrics).to.not.be.empty;
    });

    it("validates its inputs before creating any child", async () => {
        const program = () =>
            new KarpenterAlarms("bad", {
                ...MINIMAL_ARGS,
                failurePatterns: ['say "hi"'],
                rules: { queueAge: { ...DEFAULT_RULES.queueAge, period: 90, datapointsToAlarm: 9 } },
            });
        let message = "";
        try {
            await runOffline("staging", program);
        } catch (e) {
            message = (e as Error).message;
        }
        expect(message).to.equal(
            "KarpenterAlarms bad: rules.queueAge.period must be 10, 30 or a multiple of 60 up to 86400 (got 90); " +
                "rules.queueAge.datapointsToAlarm must be at most evaluationPeriods (5): an alarm cannot need more breaching periods than it looks at (got 9); " +
                'failurePatterns[0] must be a non-empty log term without double quotes or backslashes (got "say \\"hi\\"")',
        );
    });
});
