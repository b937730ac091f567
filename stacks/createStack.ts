// Turns one validated stack config into providers and components. Staging and production run this same code.
import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { interruptionRules } from "../components/models/controllerPolicy.ts";
import { ANNOTATOR_NAME } from "../components/models/celeryPlacement.ts";
import { BurstScaleDownOrder } from "../components/burstScaleDownOrder.ts";
import { CeleryWorkloadPlacement } from "../components/celeryWorkloadPlacement.ts";
import { EphemeralNodePool } from "../components/ephemeralNodePool.ts";
import { KarpenterAlarms } from "../components/karpenterAlarms.ts";
import { KarpenterController } from "../components/karpenterController.ts";
import { PreviewReadAccess } from "../components/previewReadAccess.ts";
import { NodeRecycler } from "../components/nodeRecycler.ts";
import { SpotInterruptionDrill } from "../components/spotInterruptionDrill.ts";
import { drillArgs, drillStopAlarmNames, nodePoolArgs, nodeRecyclerArgs, placementArgs } from "./componentArgs.ts";
import { clusterFor } from "./cluster.ts";
import { type StackConfig, durationSeconds } from "./config.ts";
import { checkedKubeconfig, logGroupArn, nodeAmiId } from "./lookups.ts";
import { STACK_TAG } from "./stackNames.ts";

export function createStack(cfg: StackConfig) {
    const awsProvider = new aws.Provider("aws", {
        region: cfg.cluster.region as aws.Region,
        defaultTags: { tags: { ...cfg.tags, [STACK_TAG]: cfg.stack } },
    });
    const cluster = clusterFor(cfg.cluster, awsProvider);
    const kubeconfig = checkedKubeconfig(cluster, cfg.cluster.name);
    // upsertExistingObjects false, not unset: unset, the SDK takes PULUMI_K8S_UPSERT_EXISTING_OBJECTS from the
    // environment (@pulumi/kubernetes provider.js), and the provider's own setting wins over it (pulumi-kubernetes
    // provider/pkg/provider/provider.go:683-690), so a variable left in a shell cannot adopt every object.
    const k8sProvider = new k8s.Provider("kubernetes", { kubeconfig, enableServerSideApply: true, upsertExistingObjects: false }, { dependsOn: cluster.ready });
    const providers = { aws: awsProvider, kubernetes: k8sProvider };
    // Only the priority classes are created through this one: it applies over an existing class of the same name
    // (pulumi-kubernetes provider/pkg/await/await.go:190) instead of failing on AlreadyExists, which adopts GC Notify's.
    const adoptingProvider = new k8s.Provider(
        "kubernetes-adopt-priority-classes",
        { kubeconfig, enableServerSideApply: true, upsertExistingObjects: true },
        { dependsOn: cluster.ready },
    );

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
            crds: { protect: cfg.lifecycle.protect, retainOnDelete: cfg.lifecycle.retainOnDelete },
            readyTimeoutSeconds: durationSeconds(cfg.lifecycle.controllerReadyTimeout),
        },
        { providers },
    );

    const pool = new EphemeralNodePool("celery-burst", nodePoolArgs(cfg, controller.nodeRoleName, controller.ready), { providers });
    // After the pool: burst pods are moved onto ephemeral nodes only once those nodes can exist.
    const placement = new CeleryWorkloadPlacement("celery-placement", placementArgs(cfg, [...controller.ready, pool], adoptingProvider), { providers });
    const order = cfg.placement.burst.scaleDownOrder;
    const scaleDownOrder =
        order &&
        new BurstScaleDownOrder(
            ANNOTATOR_NAME,
            { namespace: c.namespace, podNamespace: cfg.placement.namespace, nodePoolName: cfg.nodePool.name, stableNodeSelector: cfg.cluster.stableNodeSelector, image: order.image, intervalSeconds: order.intervalSeconds },
            // The CRD release creates the controller's namespace.
            { providers, dependsOn: controller.ready },
        );
    // CI's preview role reads through this group (the plan's ci-access files map the role to it), Helm's records in
    // the controller's namespace (the CRD release creates it) and kube-system included.
    new PreviewReadAccess("preview-read-access", { namespaces: [c.namespace, "kube-system"] }, { providers, dependsOn: controller.ready });
    const recycle = nodeRecyclerArgs(cfg);
    // After the pool: it deletes the pool's NodeClaims, and the CRD release creates the controller's namespace.
    const recycler = recycle && new NodeRecycler("node-recycler", recycle, { providers, dependsOn: [...controller.ready, pool] });
    // Names carry the plain cluster name from config, so every alarm name is known at preview.
    const a = cfg.alarms;
    // Topics by name are the cluster account's, in its region: where CloudWatch may publish.
    const topicArn = (topic: string) => pulumi.interpolate`arn:${cluster.partition}:sns:${cfg.cluster.region}:${cluster.accountId}:${topic}`;
    const alarms = new KarpenterAlarms(
        "karpenter-alarms",
        {
            clusterName: cfg.cluster.name,
            region: cfg.cluster.region,
            accountId: cluster.accountId,
            partition: cluster.partition,
            topicArns: a.topicArns ?? (a.topicNames && { warning: topicArn(a.topicNames.warning), critical: topicArn(a.topicNames.critical) }),
            subscriptions: a.subscriptions,
            metricSource: a.metricSource,
            karpenterNamespace: controller.namespace,
            karpenterDeployment: controller.deploymentName,
            nodePoolName: cfg.nodePool.name,
            logGroupName: a.logGroupName,
            createLogGroup: a.createLogGroup,
            queueName: controller.queueName,
            ruleNames: Object.fromEntries(interruptionRules.map((r, i) => [r.suffix, controller.ruleNames[i]])),
            burstNamespace: cfg.placement.namespace,
            burstDeployments: cfg.placement.burst.deployments.map((d) => d.name),
            scaleDownOrderDeployment: scaleDownOrder ? scaleDownOrder.deploymentName : undefined,
            rules: {
                controllerDown: a.controllerDown,
                unschedulablePods: a.unschedulablePods,
                launchFailures: a.launchFailures,
                lifecycleErrors: a.lifecycleErrors,
                nodePoolNotReady: a.nodePoolNotReady,
                heartbeat: a.heartbeat,
                logHeartbeat: a.logHeartbeat,
                nodeClaimNotInitialized: a.nodeClaimNotInitialized,
                nodeNotReady: a.nodeNotReady,
                nodePoolLimit: a.nodePoolLimit,
                queueAge: a.queueAge,
                failedInvocations: a.failedInvocations,
                burstReplicas: a.burstReplicas,
                spotInterruptions: a.spotInterruptions,
                scaleDownOrder: a.scaleDownOrder,
            },
        },
        { providers },
    );

    const drill = drillArgs(cfg);
    // The stack's own burst capacity alarms stop the experiment; their ARNs come from the alarms component.
    const stopAlarmArns = drillStopAlarmNames(cfg).map((n) => alarms.alarmArns[alarms.alarmNames.indexOf(n)]);
    const spotDrill = drill && new SpotInterruptionDrill("spot-interruption-drill", { ...drill, clusterName: cluster.name, accountId: cluster.accountId, partition: cluster.partition, stopAlarmArns }, { providers });

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
        alarmLogPatterns: alarms.logPatterns,
        priorityClassNames: placement.priorityClassNames,
        admissionPolicyName: placement.admissionPolicyName,
        headroomPods: placement.headroomPods,
        scaleDownOrderDeployment: scaleDownOrder ? scaleDownOrder.deploymentName : undefined,
        nodeRecyclerCronJob: recycler ? recycler.cronJobName : undefined,
        drillTemplateId: spotDrill ? spotDrill.templateId : undefined,
        drillTemplateName: spotDrill ? spotDrill.templateName : undefined,
        // Lookups that fail the preview when the log group or the pinned AMI is missing.
        alarmLogGroupArn: logGroupArn(cfg, awsProvider),
        nodeAmiId: nodeAmiId(cfg, awsProvider),
    };
}
