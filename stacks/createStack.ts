// Turns one validated stack config into providers and components. Staging and production run this same code.
import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import { interruptionRules } from "../components/controllerPolicy";
import { CeleryWorkloadPlacement } from "../components/celeryWorkloadPlacement";
import { EphemeralNodePool } from "../components/ephemeralNodePool";
import { KarpenterAlarms } from "../components/karpenterAlarms";
import { KarpenterController } from "../components/karpenterController";
import { nodePoolArgs, placementArgs } from "./componentArgs";
import { clusterFor } from "./cluster";
import { StackConfig } from "./config";

/** The tag (through the provider's defaultTags) that marks every AWS resource as this stack's. */
export const STACK_TAG = "notify-karpenter:stack";

export function createStack(cfg: StackConfig) {
    const awsProvider = new aws.Provider("aws", {
        region: cfg.cluster.region as aws.Region,
        defaultTags: { tags: { ...cfg.tags, [STACK_TAG]: cfg.stack } },
    });
    const cluster = clusterFor(cfg.cluster, awsProvider);
    const k8sProvider = new k8s.Provider("kubernetes", { kubeconfig: cluster.kubeconfig, enableServerSideApply: true }, { dependsOn: cluster.ready });
    const providers = { aws: awsProvider, kubernetes: k8sProvider };

    const c = cfg.controller;
    const controller = new KarpenterController(
        "karpenter",
        {
            cluster,
            version: c.version,
            namePrefix: c.namePrefix ?? cfg.cluster.name,
            namespace: c.namespace,
            serviceAccount: c.serviceAccount,
            identity: c.identity,
            replicas: c.replicas,
            cpu: c.cpu,
            memory: c.memory,
            logLevel: c.logLevel,
            stableNodeSelector: cfg.cluster.stableNodeSelector,
            existingNodeRoleName: c.existingNodeRoleName,
            nodeRolePolicyArns: c.nodeRolePolicyArns,
            createSpotServiceLinkedRole: c.createSpotServiceLinkedRole,
            spotToSpotConsolidation: c.spotToSpotConsolidation,
            batchIdleDuration: c.batchIdleDuration,
            batchMaxDuration: c.batchMaxDuration,
        },
        { providers },
    );

    const pool = new EphemeralNodePool("celery-burst", nodePoolArgs(cfg, controller.nodeRoleName, controller.ready), { providers });
    // After the pool: burst pods are moved onto ephemeral nodes only once those nodes can exist.
    const placement = new CeleryWorkloadPlacement("celery-placement", placementArgs(cfg, [...controller.ready, pool]), { providers });
    // Names carry the plain cluster name from config, so every alarm name is known at preview.
    const a = cfg.alarms;
    const alarms = new KarpenterAlarms(
        "karpenter-alarms",
        {
            clusterName: cfg.cluster.name,
            region: cfg.cluster.region,
            accountId: cluster.accountId,
            partition: cluster.partition,
            topicArns: a.topicArns,
            metricSource: a.metricSource,
            karpenterNamespace: controller.namespace,
            karpenterDeployment: controller.deploymentName,
            logGroupName: a.logGroupName,
            createLogGroup: a.createLogGroup,
            failurePatterns: a.failurePatterns,
            queueName: controller.queueName,
            ruleNames: Object.fromEntries(interruptionRules.map((r, i) => [r.suffix, controller.ruleNames[i]])),
            spotInterruptionRule: "spot-interruption",
            burstNamespace: cfg.placement.namespace,
            burstDeployments: cfg.placement.burst.deployments.map((d) => d.name),
            rules: {
                controllerDown: a.controllerDown,
                provisioningFailures: a.provisioningFailures,
                queueAge: a.queueAge,
                failedInvocations: a.failedInvocations,
                burstReplicas: a.burstReplicas,
                spotInterruptions: a.spotInterruptions,
            },
        },
        { providers },
    );

    return {
        nodePoolName: pool.nodePoolName,
        ephemeralNodeKey: pool.ephemeralKey,
        clusterName: cluster.name,
        karpenterNamespace: controller.namespace,
        karpenterServiceAccount: controller.serviceAccount,
        interruptionQueueName: controller.queueName,
        interruptionQueueUrl: controller.queueUrl,
        interruptionQueueArn: controller.queueArn,
        controllerRoleArn: controller.controllerRoleArn,
        nodeRoleArn: controller.nodeRoleArn,
        alarmTopicArns: alarms.topicArns,
        alarmNames: alarms.alarmNames,
        alarmDashboardName: alarms.dashboardName,
        provisioningFailurePattern: alarms.failurePattern,
        priorityClassNames: placement.priorityClassNames,
        admissionPolicyName: placement.admissionPolicyName,
        headroomPods: placement.headroomPods,
    };
}
