import { createRequire } from "node:module";
import { expect } from "chai";
import type { ResourceValidationPolicy, StackValidationPolicy } from "@pulumi/policy";
import { controllerPolicies, interruptionQueuePolicy } from "../components/models/controllerPolicy.ts";
import { renderNodePool } from "../components/models/nodePool.ts";
import { NODE_ROLE_POLICIES } from "../components/models/controllerPolicy.ts";
import { controllerValues } from "../components/karpenterController.ts";
import { type PolicyInput, policyInputs, runPolicies } from "../plan/policyRun.ts";
import * as pack from "../policy/policies.ts";
import { nodePoolArgs } from "../stacks/componentArgs.ts";
import { stackFacts } from "../stacks/policyConfig.ts";
import { buildStack, stackConfig } from "./helpers.ts";
const require = createRequire(import.meta.url);

// The engine's sentinel for a value that is unknown at preview (@pulumi/policy's proxy recognises it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const UNKNOWN: string = require("@pulumi/policy/proxy.js").unknownStringValue;

const EPHEMERAL = "notification-canada-ca/ephemeral";
const BURST = "notification-canada-ca/celery-burst";
const NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool";

function resource(type: string, props: Record<string, any>, name = "r", extra: Partial<PolicyInput> = {}): PolicyInput {
    return { type, name, urn: `urn:pulumi:test::notify-karpenter::${type}::${name}`, props, ...extra };
}

/** The policy's outcome on these resources, under `facts` (the GC Notify defaults when absent). */
async function check(policy: ResourceValidationPolicy | StackValidationPolicy, resources: PolicyInput | PolicyInput[], facts?: Partial<pack.StackFacts>) {
    const report = await runPolicies([policy], [resources].flat(), facts ? { [policy.name]: facts } : {});
    return { violations: report.violations.map((v) => v.message), notApplicable: report.notApplicable.length, unknown: report.unknown.length, report };
}

/** Staging's NodePool exactly as the program renders it, with `change` applied to a copy. */
function stagingNodePool(change: (spec: any) => void = () => {}) {
    const { nodePool } = renderNodePool(nodePoolArgs(stackConfig("staging"), "node-role"), "node-role");
    const copy = structuredClone(nodePool);
    change(copy.spec);
    return resource(NODE_POOL, copy, "celery-burst-node-pool");
}

const deployment = (template: { labels?: Record<string, string>; spec?: Record<string, unknown> }, type = "kubernetes:apps/v1:Deployment", name = "api", namespace = "notification-canada-ca") =>
    resource(type, { metadata: { name, namespace }, spec: { template: { metadata: { labels: template.labels ?? {} }, spec: template.spec ?? {} } } }, name);
const tolerateEphemeral = { key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" };
const requireEphemeral = { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: EPHEMERAL, operator: "In", values: ["true"] }] }] } } } };

describe("policy pack", () => {
    it("names every policy uniquely and makes each mandatory", () => {
        const names = pack.policies.map((p) => p.name);
        expect(new Set(names).size).to.equal(names.length);
        for (const p of pack.policies) expect(p.enforcementLevel, p.name).to.equal("mandatory");
    });

    it("defaults to GC Notify's staging facts, so a run without --policy-pack-config is as strict as staging", () => {
        expect(pack.GC_NOTIFY_FACTS).to.deep.equal(stackFacts(stackConfig("staging")));
    });

    it("gives each configurable policy exactly the facts its schema declares", () => {
        const config = pack.packConfig(stackFacts(stackConfig("production")));
        expect(config["nodepool-approved-instance-types"]).to.have.keys("approvedInstanceTypes");
        expect((config["nodepool-approved-instance-types"] as any).approvedInstanceTypes).to.have.length(24);
        expect(config["ephemeral-nodes-burst-celery-only"]).to.have.keys("ephemeralKey", "burstPodLabel", "nodeDaemonSets");
        expect(config["karpenter-controller-on-stable-nodes"]).to.deep.equal({ stableNodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" }, ephemeralKey: EPHEMERAL });
        expect(config).not.to.have.any.keys("alarm-has-action", "sqs-queue-encrypted");
    });
});

describe("nodepool-approved-instance-types", () => {
    const policy = pack.nodePoolApprovedInstanceTypes;

    it("passes the NodePool the program renders", async () => {
        expect((await check(policy, stagingNodePool())).violations).to.deep.equal([]);
    });

    it("names the unapproved types and the approved list", async () => {
        const { violations } = await check(policy, stagingNodePool((s) => s.template.spec.requirements[0].values.push("m5.24xlarge", "p4d.24xlarge")));
        expect(violations).to.have.length(1);
        expect(violations[0]).to.match(/^NodePool "notify-karpenter" allows unapproved instance types m5\.24xlarge, p4d\.24xlarge; approved for this stack: m7i\.xlarge, /);
    });

    it("checks against the stack's own list: production's 2xlarge types fail staging's facts", async () => {
        const pool = stagingNodePool((s) => s.template.spec.requirements[0].values.push("c7i.2xlarge"));
        expect((await check(policy, pool)).violations).to.have.length(1);
        expect((await check(policy, pool, stackFacts(stackConfig("production")))).violations).to.deep.equal([]);
    });

    it("fails a NodePool that selects by family, size or cpu instead of pinning the instance types", async () => {
        const pool = stagingNodePool((s) => {
            s.template.spec.requirements[0] = { key: "karpenter.k8s.aws/instance-family", operator: "In", values: ["c7i", "m7i"] };
        });
        expect((await check(policy, pool)).violations[0]).to.match(/has no "node\.kubernetes\.io\/instance-type In" requirement, so Karpenter may launch any instance type/);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, resource("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", { spec: {} }))).notApplicable).to.equal(1);
    });
});

describe("nodepool-limits-and-disruption", () => {
    const policy = pack.nodePoolLimitsAndDisruption;

    it("passes the NodePool the program renders", async () => {
        expect((await check(policy, stagingNodePool())).violations).to.deep.equal([]);
    });

    it("fails missing limits, a missing spec.disruption and disruption settings under spec.template (GC Notify's mistake)", async () => {
        const { violations } = await check(
            policy,
            stagingNodePool((s) => {
                delete s.limits.memory;
                s.template.spec.disruption = s.disruption;
                s.template.spec.consolidationPolicy = "WhenEmpty";
                delete s.disruption;
            }),
        );
        expect(violations).to.deep.equal([
            'NodePool "notify-karpenter" has no spec.limits.memory, so a burst could launch nodes without bound; set both',
            'NodePool "notify-karpenter" has no spec.disruption; set consolidationPolicy, consolidateAfter and budgets there',
            'NodePool "notify-karpenter" sets spec.template.spec.disruption, spec.template.spec.consolidationPolicy, which the API server drops as unknown fields, so Karpenter never sees them; move them to spec.disruption',
        ]);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, resource("aws:sqs/queue:Queue", {}))).notApplicable).to.equal(1);
    });
});

describe("nodepool-ephemeral-taint", () => {
    const policy = pack.nodePoolEphemeralTaint;

    it("passes the NodePool the program renders", async () => {
        expect((await check(policy, stagingNodePool())).violations).to.deep.equal([]);
    });

    it("fails a NodePool without the NoSchedule taint or the ephemeral label", async () => {
        const { violations } = await check(
            policy,
            stagingNodePool((s) => {
                s.template.spec.taints[0].effect = "PreferNoSchedule";
                delete s.template.metadata.labels[EPHEMERAL];
            }),
        );
        expect(violations).to.deep.equal([
            `NodePool "notify-karpenter" lacks the taint ${EPHEMERAL}=true:NoSchedule, so any pod could be scheduled on its spot nodes`,
            `NodePool "notify-karpenter" lacks the node label ${EPHEMERAL}: "true" that burst pods select`,
        ]);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, deployment({}))).notApplicable).to.equal(1);
    });
});

describe("ephemeral-nodes-burst-celery-only", () => {
    const policy = pack.ephemeralNodesBurstCeleryOnly;

    it("fails a stable workload (the API) that tolerates the ephemeral taint, naming what is allowed", async () => {
        const { violations } = await check(policy, deployment({ labels: { app: "api" }, spec: { tolerations: [tolerateEphemeral] } }));
        expect(violations).to.deep.equal([
            'Deployment notification-canada-ca/api tolerates the ephemeral taint but its pods lack the burst label notification-canada-ca/celery-burst: "true"; ' +
                "only burst Celery pods and the node DaemonSets (kube-system/secrets-store-csi-driver, kube-system/secrets-provider-aws, amazon-cloudwatch/fb-agent-fluent-bit, amazon-cloudwatch/aws-cloudwatch-agent, signoz/signoz-k8s-k8s-infra-otel-agent, velero/node-agent, falco/falco, xray/xray-daemon-aws-xray, kube-system/ebs-csi-node) may run on ephemeral nodes",
        ]);
    });

    it("fails tolerate-everything tolerations, node selectors and required or preferred affinity for ephemeral nodes, in patches and every pod-template kind", async () => {
        const cases: [string, PolicyInput][] = [
            ["tolerates the ephemeral taint", deployment({ spec: { tolerations: [{ operator: "Exists" }] } }, "kubernetes:apps/v1:DeploymentPatch")],
            ["selects ephemeral nodes", deployment({ spec: { nodeSelector: { [EPHEMERAL]: "true" } } }, "kubernetes:apps/v1:StatefulSet")],
            ["requires ephemeral nodes", deployment({ spec: requireEphemeral }, "kubernetes:batch/v1:Job")],
            [
                "prefers ephemeral nodes",
                deployment({ spec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: EPHEMERAL, operator: "Exists" }] } }] } } } }),
            ],
            ["tolerates the ephemeral taint", resource("kubernetes:batch/v1:CronJob", { metadata: { name: "report" }, spec: { jobTemplate: { spec: { template: { spec: { tolerations: [tolerateEphemeral] } } } } } })],
            ["tolerates the ephemeral taint", resource("kubernetes:core/v1:Pod", { metadata: { name: "debug" }, spec: { tolerations: [{ key: EPHEMERAL, operator: "Exists" }] } })],
            ["tolerates the ephemeral taint", deployment({ spec: { tolerations: [tolerateEphemeral] } }, "kubernetes:apps/v1:DaemonSetPatch", "node-exporter", "monitoring")],
        ];
        for (const [reason, r] of cases) {
            const { violations } = await check(policy, r);
            expect(violations, `${r.type} ${reason}`).to.have.length(1);
            expect(violations[0]).to.include(` ${reason} but its pods lack the burst label`);
        }
    });

    it("passes burst Celery pods, the configured node DaemonSets, stable workloads and tolerations of other taints", async () => {
        const passing = [
            deployment({ labels: { [BURST]: "true" }, spec: { tolerations: [tolerateEphemeral], ...requireEphemeral } }, "kubernetes:apps/v1:DeploymentPatch", "celery-sms-send-burst"),
            deployment({ spec: { tolerations: [{ operator: "Exists" }] } }, "kubernetes:apps/v1:DaemonSetPatch", "fb-agent-fluent-bit", "amazon-cloudwatch"),
            deployment({ spec: { nodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" }, priorityClassName: "high-priority" } }, "kubernetes:apps/v1:DeploymentPatch"),
            deployment({ spec: { tolerations: [{ key: EPHEMERAL, operator: "Exists", effect: "NoExecute" }, { key: "CriticalAddonsOnly", operator: "Exists" }] } }),
            deployment({ spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: EPHEMERAL, operator: "DoesNotExist" }] }] } } } } }),
        ];
        for (const r of passing) expect((await check(policy, r)).violations, `${r.type} ${r.name}`).to.deep.equal([]);
    });

    it("allows a node DaemonSet only as a DaemonSet in its own namespace", async () => {
        const tolerant = { spec: { tolerations: [{ operator: "Exists" }] } };
        expect((await check(policy, deployment(tolerant, "kubernetes:apps/v1:Deployment", "fb-agent-fluent-bit", "amazon-cloudwatch"))).violations).to.have.length(1);
        expect((await check(policy, deployment(tolerant, "kubernetes:apps/v1:DaemonSet", "fb-agent-fluent-bit", "default"))).violations).to.have.length(1);
    });

    it("uses the configured burst label, ephemeral key and DaemonSets", async () => {
        const facts = { ephemeralKey: "example.com/spot", burstPodLabel: "example.com/batch", nodeDaemonSets: [] };
        const r = deployment({ labels: { [BURST]: "true" }, spec: { tolerations: [{ key: "example.com/spot", operator: "Exists" }] } });
        expect((await check(policy, r, facts)).violations).to.have.length(1);
        expect((await check(policy, deployment({ spec: { tolerations: [tolerateEphemeral] } }), facts)).violations).to.deep.equal([]);
    });

    it("does not apply to resources without a pod template", async () => {
        expect((await check(policy, resource("kubernetes:core/v1:ConfigMap", { data: {} }))).notApplicable).to.equal(1);
        expect((await check(policy, resource("kubernetes:policy/v1:PodDisruptionBudget", { spec: {} }))).notApplicable).to.equal(1);
    });
});

describe("sqs-queue-encrypted", () => {
    const policy = pack.sqsQueueEncrypted;

    it("passes SQS-managed SSE and a KMS key; fails an unencrypted queue", async () => {
        expect((await check(policy, resource("aws:sqs/queue:Queue", { name: "q", sqsManagedSseEnabled: true }))).violations).to.deep.equal([]);
        expect((await check(policy, resource("aws:sqs/queue:Queue", { name: "q", kmsMasterKeyId: "alias/q" }))).violations).to.deep.equal([]);
        expect((await check(policy, resource("aws:sqs/queue:Queue", { name: "q" }))).violations).to.deep.equal(["SQS queue q is not encrypted; set sqsManagedSseEnabled: true or a kmsMasterKeyId"]);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, resource("aws:sns/topic:Topic", { name: "t" }))).notApplicable).to.equal(1);
    });
});

describe("sqs-queue-tls-only", () => {
    const policy = pack.sqsQueueTlsOnly;
    const arn = "arn:aws:sqs:ca-central-1:123456789012:q";
    const queue = resource("aws:sqs/queue:Queue", { name: "q", sqsManagedSseEnabled: true }, "queue");
    const queuePolicy = (document: object, dependsOnQueue = true) =>
        resource("aws:sqs/queuePolicy:QueuePolicy", { queueUrl: "https://sqs", policy: JSON.stringify(document) }, "queue-policy", { dependencies: dependsOnQueue ? [queue.urn] : [] });

    it("passes the interruption queue's policy (EventBridge may send, nothing over plain HTTP)", async () => {
        expect((await check(policy, [queue, queuePolicy(interruptionQueuePolicy(arn))])).violations).to.deep.equal([]);
    });

    it("fails a queue without a policy, or whose policy does not deny plain HTTP to everyone", async () => {
        const allowOnly = { Version: "2012-10-17", Statement: [interruptionQueuePolicy(arn).Statement[0]] };
        const message = 'SQS queue queue has no queue policy that denies sqs:* to "*" when aws:SecureTransport is false; add one (TLS only)';
        expect((await check(policy, [queue])).violations).to.deep.equal([message]);
        expect((await check(policy, [queue, queuePolicy(allowOnly)])).violations).to.deep.equal([message]);
        expect((await check(policy, [queue, queuePolicy(interruptionQueuePolicy(arn), false)])).violations, "another queue's policy").to.deep.equal([message]);
        expect((await check(policy, [queue])).report.violations[0].urn).to.equal(queue.urn);
    });

    it("does not apply to a stack without queues", async () => {
        expect((await check(policy, [resource("aws:sns/topic:Topic", {})])).notApplicable).to.equal(1);
    });
});

describe("alarm-has-action", () => {
    const policy = pack.alarmHasAction;
    const alarm = (props: object) => resource("aws:cloudwatch/metricAlarm:MetricAlarm", { name: "queue-age", ...props });

    it("passes an alarm that notifies a topic, even when the topic's ARN is unknown at preview", async () => {
        expect((await check(policy, alarm({ alarmActions: ["arn:aws:sns:ca-central-1:123456789012:warning"] }))).violations).to.deep.equal([]);
        const preview = await check(policy, alarm({ alarmActions: [UNKNOWN] }));
        expect([preview.violations, preview.unknown]).to.deep.equal([[], 0]);
    });

    it("fails an alarm without actions or with actions disabled", async () => {
        expect((await check(policy, alarm({ alarmActions: [] }))).violations).to.deep.equal(["alarm queue-age has no alarmActions, so it would fire unseen; notify an SNS topic"]);
        expect((await check(policy, alarm({ alarmActions: ["arn"], actionsEnabled: false }))).violations).to.deep.equal(["alarm queue-age has actionsEnabled: false, so it would fire unseen"]);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, resource("aws:cloudwatch/dashboard:Dashboard", {}))).notApplicable).to.equal(1);
    });
});

describe("karpenter-controller-on-stable-nodes", () => {
    const policy = pack.karpenterControllerOnStableNodes;
    const values = controllerValues({
        cluster: {} as any,
        version: "1.14.1",
        namePrefix: "c",
        stableNodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" },
        clusterName: "c",
        clusterEndpoint: "https://c",
        queueName: "q",
        serviceAccount: "karpenter",
    });
    const release = (v: object, chart = "oci://public.ecr.aws/karpenter/karpenter") => resource("kubernetes:helm.sh/v3:Release", { name: "karpenter", chart, values: v }, "karpenter-chart");

    it("passes the values the controller component sets, and values that leave the chart's affinity alone", async () => {
        expect((await check(policy, release(values))).violations).to.deep.equal([]);
        expect((await check(policy, release({ nodeSelector: values.nodeSelector }))).violations).to.deep.equal([]);
    });

    it("fails values that leave the stable nodes, drop the chart's nodepool affinity or tolerate the ephemeral taint", async () => {
        const { violations } = await check(
            policy,
            release({
                ...values,
                nodeSelector: { "kubernetes.io/os": "linux" },
                affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/arch", operator: "In", values: ["amd64"] }] }] } } },
                tolerations: [{ operator: "Exists" }],
            }),
        );
        expect(violations).to.deep.equal([
            "Karpenter controller values.nodeSelector lacks eks.amazonaws.com/capacityType: ON_DEMAND; it must run on the stable nodes, not on nodes it manages and may drain",
            `Karpenter controller values.affinity drops the chart's "karpenter.sh/nodepool DoesNotExist" node affinity from some node selector term; keep it in every term`,
            `Karpenter controller values.tolerations tolerate the ephemeral taint ${EPHEMERAL}; remove that toleration`,
        ]);
        expect((await check(policy, release({ ...values, affinity: { nodeAffinity: null } }))).violations, "null deletes the chart's default").to.have.length(1);
    });

    it("does not apply to other charts (the CRD chart included) or other resources", async () => {
        expect((await check(policy, release({}, "oci://public.ecr.aws/karpenter/karpenter-crd"))).notApplicable).to.equal(1);
        expect((await check(policy, resource("kubernetes:core/v1:Namespace", {}))).notApplicable).to.equal(1);
    });
});

describe("iam-no-unscoped-ec2-mutation", () => {
    const policy = pack.iamNoUnscopedEc2Mutation;
    const doc = (...Statement: object[]) => JSON.stringify({ Version: "2012-10-17", Statement });
    const iamPolicy = (document: unknown) => resource("aws:iam/policy:Policy", { name: "karpenter-node-lifecycle", policy: document });
    const statementCheck = (statement: object) => check(policy, iamPolicy(doc({ Effect: "Allow", ...statement })));
    const context = { partition: "aws", region: "ca-central-1", accountId: "123456789012", clusterName: "c", nodeRoleArn: "arn:aws:iam::123456789012:role/n", queueArn: "arn:aws:sqs:ca-central-1:123456789012:q" };
    const advice =
        "scope mutating EC2 actions with tag conditions as Karpenter's reference policy does (unconditionally, only Describe*, Get* and List* may cover every resource, " +
        "and ec2:RunInstances and ec2:CreateFleet every image, snapshot, security group, subnet, capacity reservation and placement group)";
    const attachment = (policyArn: unknown, type = "aws:iam/rolePolicyAttachment:RolePolicyAttachment") => resource(type, { role: "karpenter-node", policyArn }, "karpenter-node-extra-0");

    it("passes every controller policy of the Karpenter reference in every partition (its unconditional launch statement included), and unscoped reads", async () => {
        for (const partition of ["aws", "aws-cn", "aws-us-gov"]) {
            for (const [key, document] of Object.entries(controllerPolicies({ ...context, partition }))) {
                expect((await check(policy, iamPolicy(JSON.stringify(document)))).violations, `${partition} ${key}`).to.deep.equal([]);
            }
        }
        expect((await statementCheck({ Action: ["ec2:Describe*", "ec2:GetConsoleOutput"], Resource: "*" })).violations).to.deep.equal([]);
    });

    it("passes the IAM resources of every stack's program: the controller's policies, its role and their attachments", async () => {
        for (const stack of ["staging", "production", "scratch"]) {
            const inputs = policyInputs((await buildStack(stack)).resources);
            const report = await runPolicies([policy], inputs);
            expect(report.violations, stack).to.deep.equal([]);
            expect(report.unknown, stack).to.deep.equal([]);
            const checked = inputs.filter((r) => !report.notApplicable.includes(`${policy.name} ${r.urn}`)).map((r) => r.type);
            expect(checked.filter((t) => t === "aws:iam/policy:Policy"), stack).to.have.length(6);
            expect(checked, stack).to.include("aws:iam/rolePolicyAttachment:RolePolicyAttachment");
        }
    });

    it("passes mutating actions under a condition or on named resources, and launch actions on what they launch from", async () => {
        const passing = [
            { Action: "ec2:TerminateInstances", Resource: "arn:aws:ec2:*:*:instance/*", Condition: { StringEquals: { "aws:ResourceTag/kubernetes.io/cluster/c": "owned" } } },
            { Action: ["ec2:TerminateInstances", "ec2:CreateTags"], Resource: ["arn:aws:ec2:ca-central-1:123456789012:instance/i-0123456789abcdef0", "arn:aws:ec2:ca-central-1:123456789012:volume/vol-0123*"] },
            { Action: "ec2:RunInstances", Resource: ["arn:aws:ec2:ca-central-1::image/*", "arn:aws:ec2:*:*:subnet/*", "arn:aws:ec2:*:*:placement-group/*"] },
            { Action: "ec2:CreateFleet", Resource: "arn:aws-us-gov:ec2:us-gov-west-1:*:security-group/*" },
            { Action: "ec2:RunInstances", Resource: "*", Effect: "Deny" },
            { NotAction: ["ec2:*", "iam:*"], Resource: "*" },
        ];
        for (const statement of passing) expect((await statementCheck(statement)).violations, JSON.stringify(statement)).to.deep.equal([]);
    });

    it('fails unconditional mutating EC2 actions on "*", written out, by wildcard or through NotAction', async () => {
        const unscoped = await check(policy, iamPolicy(doc({ Sid: "Launch", Effect: "Allow", Action: ["ec2:RunInstances", "ec2:DescribeImages", "ec2:Terminate*"], Resource: "*" })));
        expect(unscoped.violations).to.deep.equal([`IAM policy karpenter-node-lifecycle statement Launch allows ec2:RunInstances, ec2:Terminate* on "*" without a condition; ${advice}`]);
        for (const statement of [{ Action: "*" }, { Action: "ec2:*" }, { Action: "EC2:De*" }, { NotAction: "iam:*" }]) {
            expect((await statementCheck({ Resource: "*", ...statement })).violations, JSON.stringify(statement)).to.have.length(1);
        }
    });

    it("fails unconditional mutating EC2 actions on every resource of a type, in any partition, region and account", async () => {
        const unscoped = await check(
            policy,
            iamPolicy(doc({ Sid: "Nodes", Effect: "Allow", Action: ["ec2:RunInstances", "ec2:CreateFleet"], Resource: ["arn:aws:ec2:ca-central-1::image/*", "arn:aws:ec2:*:*:instance/*"] })),
        );
        expect(unscoped.violations).to.deep.equal([
            `IAM policy karpenter-node-lifecycle statement Nodes allows ec2:RunInstances, ec2:CreateFleet on arn:aws:ec2:*:*:instance/* without a condition; ${advice}`,
        ]);
        const failing: [string, string][] = [
            ["ec2:TerminateInstances", "arn:aws:ec2:ca-central-1:123456789012:instance/*"],
            ["ec2:RunInstances", "arn:aws-cn:ec2:cn-north-1:*:instance/*"],
            ["ec2:DeleteVolume", "arn:aws-us-gov:ec2:us-gov-west-1:123456789012:volume/*"],
            ["ec2:TerminateInstances", "arn:aws:ec2:*:*:instance/i-*"],
            ["ec2:TerminateInstances", "arn:aws:ec2:*:*:*"],
            ["ec2:TerminateInstances", "arn:*:ec2:*"],
            ["ec2:CreateRoute", "arn:aws:ec2:ca-central-1:123456789012:route-table/*"],
        ];
        for (const [Action, Resource] of failing) expect((await statementCheck({ Action, Resource })).violations, `${Action} on ${Resource}`).to.have.length(1);
    });

    it("exempts only ec2:RunInstances and ec2:CreateFleet, written out, on the resource types a launch reads", async () => {
        const failing: [string, string][] = [
            ["ec2:RunInstances", "arn:aws:ec2:*:*:launch-template/*"],
            ["ec2:CreateFleet", "arn:aws:ec2:*:*:fleet/*"],
            ["ec2:RunInstances", "arn:aws:ec2:*:*:*/*"],
            ["ec2:Run*", "arn:aws:ec2:ca-central-1::image/*"],
            ["ec2:*", "arn:aws:ec2:*:*:security-group/*"],
            ["ec2:DeleteSnapshot", "arn:aws:ec2:ca-central-1::snapshot/*"],
            ["ec2:AuthorizeSecurityGroupIngress", "arn:aws:ec2:*:*:security-group/*"],
        ];
        for (const [Action, Resource] of failing) expect((await statementCheck({ Action, Resource })).violations, `${Action} on ${Resource}`).to.have.length(1);
    });

    it("fails every conditioned statement of the reference's node-lifecycle policy once its condition is dropped", async () => {
        const conditioned = controllerPolicies(context)["node-lifecycle"].Statement.filter((s) => s.Condition);
        expect(conditioned).to.have.length(5);
        for (const { Condition: _, ...statement } of conditioned) {
            expect((await check(policy, iamPolicy(doc(statement)))).violations, statement.Sid).to.have.length(1);
        }
    });

    it("fails mutating EC2 actions under NotResource, and NotAction on every resource of a type", async () => {
        const notResource = await statementCheck({ Sid: "AllBut", Action: "ec2:TerminateInstances", NotResource: "arn:aws:ec2:*:*:instance/i-0123456789abcdef0" });
        expect(notResource.violations).to.deep.equal([
            `IAM policy karpenter-node-lifecycle statement AllBut allows ec2:TerminateInstances on every resource but arn:aws:ec2:*:*:instance/i-0123456789abcdef0 without a condition; ${advice}`,
        ]);
        const notAction = await statementCheck({ Sid: "AllBut", NotAction: ["iam:*", "s3:*"], Resource: "arn:aws:ec2:*:*:instance/*" });
        expect(notAction.violations).to.deep.equal([
            `IAM policy karpenter-node-lifecycle statement AllBut allows everything but iam:*, s3:* on arn:aws:ec2:*:*:instance/* without a condition; ${advice}`,
        ]);
        expect((await statementCheck({ NotAction: "iam:*", NotResource: "arn:aws:iam::*:role/*" })).violations).to.have.length(1);
        expect((await statementCheck({ Action: "ec2:RunInstances", NotResource: "arn:aws:ec2:*:*:instance/*" })).violations).to.have.length(1);
    });

    it("checks inline role policies and role policies too", async () => {
        const bad = doc({ Effect: "Allow", Action: "ec2:CreateTags", Resource: ["*"] });
        expect((await check(policy, resource("aws:iam/role:Role", { name: "r", inlinePolicies: [{ name: "i", policy: bad }] }))).violations).to.have.length(1);
        expect((await check(policy, resource("aws:iam/rolePolicy:RolePolicy", { name: "rp", policy: bad }))).violations).to.have.length(1);
    });

    it("fails an attachment of an AWS managed policy that grants unscoped EC2 mutation, in any partition", async () => {
        const { violations } = await check(policy, attachment("arn:aws:iam::aws:policy/AmazonEC2FullAccess"));
        expect(violations).to.deep.equal([
            "RolePolicyAttachment karpenter-node-extra-0 attaches the AWS managed policy arn:aws:iam::aws:policy/AmazonEC2FullAccess, which allows ec2:* on every resource without a condition; " +
                "attach a policy that scopes mutating EC2 actions with tag conditions instead",
        ]);
        for (const partition of ["aws", "aws-cn", "aws-us-gov"]) {
            for (const name of ["AdministratorAccess", "PowerUserAccess", "AmazonEC2FullAccess", "service-role/AmazonEC2SpotFleetTaggingRole"]) {
                const arn = `arn:${partition}:iam::aws:policy/${name}`;
                expect((await check(policy, attachment(arn))).violations, arn).to.have.length(1);
            }
        }
    });

    it("checks every way to attach a managed policy: attachments of roles, users and groups, exclusive attachments and a role's managedPolicyArns", async () => {
        const admin = "arn:aws:iam::aws:policy/AdministratorAccess";
        const attaching = [
            ...["role", "user", "group"].map((k) => attachment(admin, `aws:iam/${k}PolicyAttachment:${k[0].toUpperCase()}${k.slice(1)}PolicyAttachment`)),
            resource("aws:iam/policyAttachment:PolicyAttachment", { name: "admins", roles: ["r"], policyArn: admin }),
            ...["Role", "User", "Group"].map((k) => resource(`aws:iam/${k.toLowerCase()}PolicyAttachmentsExclusive:${k}PolicyAttachmentsExclusive`, { policyArns: [admin] })),
            resource("aws:iam/role:Role", { name: "r", managedPolicyArns: ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore", admin] }),
        ];
        for (const r of attaching) expect((await check(policy, r)).violations, r.type).to.have.length(1);
    });

    it("fails a node role policy from config that grants unscoped EC2 mutation, in the stack's plan", async () => {
        const built = await buildStack("staging", { controller: { existingNodeRoleName: undefined, nodeRolePolicyArns: ["arn:aws:iam::aws:policy/PowerUserAccess"] } });
        const report = await runPolicies([policy], policyInputs(built.resources));
        expect(report.violations.map((v) => [v.urn?.split("::").pop(), v.message.split(",")[0]])).to.deep.equal([
            ["karpenter-node-extra-0", "RolePolicyAttachment karpenter-node-extra-0 attaches the AWS managed policy arn:aws:iam::aws:policy/PowerUserAccess"],
        ]);
    });

    it("passes the node role's and stable nodes' managed policies, other AWS managed policies and customer policies", async () => {
        const passing = [
            ...NODE_ROLE_POLICIES.map((p) => `arn:aws:iam::aws:policy/${p}`),
            "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy",
            "arn:aws:iam::aws:policy/AmazonEC2ReadOnlyAccess",
            "arn:aws:iam::123456789012:policy/karpenter-node-lifecycle",
        ];
        for (const arn of passing) expect((await check(policy, attachment(arn))).violations, arn).to.deep.equal([]);
        expect((await check(policy, resource("aws:iam/role:Role", { name: "r", managedPolicyArns: passing }))).violations).to.deep.equal([]);
    });

    it("skips rather than fails a document or an attached ARN that is unknown at preview (it runs on up)", async () => {
        for (const r of [iamPolicy(UNKNOWN), attachment(UNKNOWN), resource("aws:iam/role:Role", { name: "r", managedPolicyArns: [UNKNOWN] })]) {
            const { violations, unknown } = await check(policy, r);
            expect([violations, unknown], r.type).to.deep.equal([[], 1]);
        }
        const known = doc({ Effect: "Allow", Action: "ec2:*", Resource: "*" });
        const partly = await check(policy, resource("aws:iam/role:Role", { name: "r", inlinePolicies: [{ name: "i", policy: known }], managedPolicyArns: [UNKNOWN] }));
        expect([partly.violations.length, partly.unknown], "the known document is still checked").to.deep.equal([1, 1]);
    });

    it("does not apply to other resources", async () => {
        expect((await check(policy, resource("aws:iam/instanceProfile:InstanceProfile", { role: "r" }))).notApplicable).to.equal(1);
        expect((await check(policy, resource("aws:iam/serviceLinkedRole:ServiceLinkedRole", { awsServiceName: "spot.amazonaws.com" }))).notApplicable).to.equal(1);
    });
});

describe("fis-template-bounded", () => {
    const policy = pack.fisTemplateBounded;
    const FIS = "aws:fis/experimentTemplate:ExperimentTemplate";
    const target = (extra: Record<string, unknown> = {}) => ({ name: "pool-spot-instances", resourceType: "aws:ec2:spot-instance", selectionMode: "COUNT(1)", resourceTags: [{ key: "karpenter.sh/nodepool", value: "notify-karpenter" }, { key: "eks:eks-cluster-name", value: "notify-karpenter-scratch" }], ...extra });
    const template = (t: object, stopConditions: object[] = [{ source: "aws:cloudwatch:alarm", value: "arn:aws:cloudwatch:ca-central-1:123456789012:alarm:a" }]) =>
        resource(FIS, { tags: { Name: "drill" }, targets: [t], stopConditions }, "spot-interruption-drill-template");

    it("passes the drill template of every stack that has one", async () => {
        for (const stack of ["staging", "scratch"]) {
            const inputs = policyInputs((await buildStack(stack)).resources);
            const report = await runPolicies([policy], inputs);
            expect(report.violations, stack).to.deep.equal([]);
            expect(inputs.filter((r) => r.type === FIS), stack).to.have.length(1);
        }
    });

    it("refuses ALL and PERCENT, targets by instance ARNs or without the NodePool's or the cluster's tag, and no alarm to stop on", async () => {
        expect((await check(policy, template(target({ selectionMode: "ALL" })))).violations).to.deep.equal([
            "FIS template drill target pool-spot-instances selects ALL: use COUNT(n), so one experiment interrupts n nodes however large the pool grows (ALL and PERCENT take more as it grows)",
        ]);
        expect((await check(policy, template(target({ selectionMode: "PERCENT(50)" })))).violations).to.have.length(1);
        expect((await check(policy, template(target({ resourceTags: [], resourceArns: ["arn:aws:ec2:ca-central-1:123456789012:instance/i-0abc"] })))).violations).to.deep.equal([
            "FIS template drill target pool-spot-instances does not select by the karpenter.sh/nodepool tag: name the NodePool, so only its nodes can be interrupted",
        ]);
        expect((await check(policy, template(target({ resourceTags: [{ key: "karpenter.sh/nodepool", value: "notify-karpenter" }] })))).violations).to.deep.equal([
            "FIS template drill target pool-spot-instances does not select by the eks:eks-cluster-name tag: name the cluster too, so another cluster's pool of the same name in the account is never interrupted",
        ]);
        expect((await check(policy, template(target(), [{ source: "none" }]))).violations).to.deep.equal([
            "FIS template drill has no CloudWatch alarm as a stop condition: give it the stack's burst capacity alarms, so an experiment stops when capacity runs short",
        ]);
        expect((await check(policy, template(target()))).violations).to.deep.equal([]);
        expect((await check(policy, resource("aws:sqs/queue:Queue", {}))).notApplicable).to.equal(1);
    });
});
