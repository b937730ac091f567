// Karpenter v1.14.1 log lines as the controller writes them, and as GC Notify's Fluent Bit ships them. Keys from the
// zap encoder (kubernetes-sigs/karpenter v1.14.1 pkg/operator/logging/logging.go:59-71: level in capitals, time
// ISO 8601, logger, message; caller only at debug), `commit` (logging.go:39, 83-90), the controller name, klog.KObj values
// ({name, namespace}) and `error`.

const COMMIT = "6e7eab7";
const line = (level: string, message: string, fields: Record<string, unknown>) =>
    JSON.stringify({ level, time: "2026-11-30T14:03:11.512Z", logger: "controller", message, commit: COMMIT, ...fields });

/** The failure classes, each with lines Karpenter writes for it. */
export const FAILURE_LINES = {
    // K pkg/controllers/provisioning/scheduling/scheduler.go:302; limits at :713, :718.
    unschedulablePods: [
        line("ERROR", "could not schedule pod", {
            controller: "provisioner",
            Pod: { name: "notify-celery-sms-send-burst-6d9c7b7f4-q8w2z", namespace: "notification-canada-ca" },
            error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, all available instance types exceed limits for nodepool',
        }),
        line("ERROR", "could not schedule pod", {
            controller: "provisioner",
            Pod: { name: "notify-celery-core-tasks-burst-7c9f8d6b5-abcde", namespace: "notification-canada-ca" },
            error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, no instance type has the required offering',
        }),
    ],
    // K pkg/controllers/nodeclaim/lifecycle/launch.go:87 (insufficient capacity), :99 (NodeClass not ready), :116
    // with controller-runtime's "Reconciler error" (v0.23.1 pkg/internal/controller/controller.go:495): only a launch
    // error starts "launching nodeclaim".
    launchFailures: [
        line("ERROR", "failed launching nodeclaim", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-7xk2p" },
            namespace: "",
            name: "notify-karpenter-7xk2p",
            reconcileID: "0e8a4f0c-1111-4c2d-8f7e-2a3b4c5d6e7f",
            error: "creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient c7i.xlarge capacity in the Availability Zone you requested (ca-central-1d).",
        }),
        line("ERROR", "Reconciler error", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-9qv4m" },
            namespace: "",
            name: "notify-karpenter-9qv4m",
            reconcileID: "4d2c1b0a-2222-4e3f-9a8b-3c4d5e6f7a8b",
            error: "launching nodeclaim, creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this operation.",
        }),
        // launch.go:98-99; the error from A pkg/cloudprovider/cloudprovider.go:124-126, K pkg/cloudprovider/types.go:672-674.
        line("ERROR", "failed launching nodeclaim", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-2hb8d" },
            namespace: "",
            name: "notify-karpenter-2hb8d",
            reconcileID: "7a1b2c3d-3333-4a5b-8c9d-0e1f2a3b4c5d",
            error: "NodeClassRef not ready, nodeclass status has not been reconciled against the latest spec",
        }),
        // launch.go:112,116 with A cloudprovider.go:121-122 (a CreateError): the NodeClass's readiness is Unknown.
        line("ERROR", "Reconciler error", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-5tq9w" },
            namespace: "",
            name: "notify-karpenter-5tq9w",
            reconcileID: "9b8a7c6d-4444-4e5f-8a9b-1c2d3e4f5a6b",
            error: "launching nodeclaim, resolving nodeclass readiness, nodeclass is in Ready=Unknown, ",
        }),
    ],
    // The other errors of the lifecycle controller, which are not launches (K lifecycle/controller.go:167-193 joins
    // launch, registration, initialization and liveness; :197-285 finalizes).
    lifecycleErrors: [
        // Registration: patching the node (K lifecycle/registration.go:107-111), here refused by RBAC.
        line("ERROR", "Reconciler error", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-8fj3k" },
            namespace: "",
            name: "notify-karpenter-8fj3k",
            reconcileID: "1c2d3e4f-5555-4a6b-9c8d-2e3f4a5b6c7d",
            error: 'patching node, nodes "ip-10-0-3-17.ca-central-1.compute.internal" is forbidden: User "system:serviceaccount:karpenter:karpenter" cannot patch resource "nodes" in API group "" at the cluster scope',
        }),
        // Termination: finalize returns the cloud provider's delete error (K lifecycle/controller.go:234-237), the
        // EC2 TerminateInstances error as is (A pkg/providers/instance/instance.go:283-291). controller-runtime logs
        // "Reconciler error" with its own request fields, not those Karpenter adds inside Reconcile (provider-id, Node).
        line("ERROR", "Reconciler error", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-7xk2p" },
            namespace: "",
            name: "notify-karpenter-7xk2p",
            reconcileID: "2d3e4f5a-6666-4b7c-8d9e-3f4a5b6c7d8e",
            error: "operation error EC2: TerminateInstances, https response error StatusCode: 403, RequestID: 5f1e2d3c-7777-4a8b-9c0d-4e5f6a7b8c9d, api error UnauthorizedOperation: You are not authorized to perform this operation.",
        }),
        // K lifecycle/registration.go:82-86: a node that registered without Karpenter's karpenter.sh/unregistered taint.
        line("ERROR", "node claim registration error", {
            controller: "nodeclaim.lifecycle",
            controllerGroup: "karpenter.sh",
            controllerKind: "NodeClaim",
            NodeClaim: { name: "notify-karpenter-4kd8s" },
            namespace: "",
            name: "notify-karpenter-4kd8s",
            reconcileID: "3e4f5a6b-8888-4c9d-8e0f-5a6b7c8d9e0f",
            "provider-id": "aws:///ca-central-1b/i-0fedcba9876543210",
            taint: "karpenter.sh/unregistered",
            error: "missing taint prevents registration-related race conditions on Karpenter-managed nodes",
        }),
    ],
    // K pkg/controllers/provisioning/provisioner.go:281, logged with a nil error.
    nodePoolNotReady: [line("ERROR", "ignoring nodepool, not ready", { controller: "provisioner", NodePool: { name: "notify-karpenter" } })],
};

/**
 * `could not schedule pod` lines (K scheduler.go:302) for pods of the burst namespace that are not burst pods: they
 * must not count as unschedulable burst pods. GC Notify's db-migration Job (notification-manifests 609853e2,
 * release notify-database: Job `notify-db-migration-job-701ac57-1`, pods `<job>-<suffix>`), staging's notify-jobs
 * CronJobs (Job `<cronjob>-<minutes since 1970>`), a stable Deployment's pod, and a headroom placeholder.
 */
export const NOT_BURST_POD_LINES = [
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "notify-db-migration-job-701ac57-1-x7k2p", namespace: "notification-canada-ca" },
        error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, incompatible requirements, label "eks.amazonaws.com/capacityType" does not have known values',
    }),
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "notify-jobs-dummy-report-a-29436480-q2w4e", namespace: "notification-canada-ca" },
        error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, incompatible requirements, label "eks.amazonaws.com/capacityType" does not have known values',
    }),
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "notify-celery-sms-send-6d9c7b7f4-abcde", namespace: "notification-canada-ca" },
        error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, incompatible requirements, key notification-canada-ca/ephemeral, notification-canada-ca/ephemeral DoesNotExist not in notification-canada-ca/ephemeral In [true]',
    }),
    // A headroom placeholder preempted by a burst, waiting while the pool is at its limit.
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "celery-headroom-5b9c8d7f6-k2l3m", namespace: "notification-canada-ca" },
        error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, all available instance types exceed limits for nodepool',
    }),
];

/** Lines that are not a failure of this program's provisioning. */
export const ORDINARY_LINES = [
    line("INFO", "found provisionable pod(s)", { controller: "provisioner", Pods: "notification-canada-ca/notify-celery-sms-send-burst-6d9c7b7f4-q8w2z", duration: "21.3ms" }),
    line("INFO", "computed new nodeclaim(s) to fit pod(s)", { controller: "provisioner", nodeclaims: 1, pods: 3 }),
    line("INFO", "created nodeclaim", { controller: "provisioner", NodePool: { name: "notify-karpenter" }, NodeClaim: { name: "notify-karpenter-7xk2p" } }),
    line("INFO", "launched nodeclaim", {
        controller: "nodeclaim.lifecycle",
        NodeClaim: { name: "notify-karpenter-7xk2p" },
        "provider-id": "aws:///ca-central-1a/i-0123456789abcdef0",
        "instance-type": "c7i.xlarge",
        zone: "ca-central-1a",
        "capacity-type": "spot",
        allocatable: { cpu: "3920m", "ephemeral-storage": "75350029139", memory: "6880Mi", pods: "58" },
    }),
    line("INFO", "registered nodeclaim", { controller: "nodeclaim.lifecycle", NodeClaim: { name: "notify-karpenter-7xk2p" }, Node: { name: "ip-10-0-1-23.ca-central-1.compute.internal" } }),
    // K pkg/controllers/disruption/queue.go:320-322, types.go:401-434.
    line("INFO", "disrupting node(s)", {
        controller: "disruption",
        command: "Empty/Delete, terminating 1 nodes (0 pods) ip-10-0-1-23.ca-central-1.compute.internal/c7i.xlarge/spot",
        decision: "delete",
        "disrupted-node-count": 1,
        "replacement-node-count": 0,
        "pod-count": 0,
        "disrupted-nodes": [{ Node: { name: "ip-10-0-1-23.ca-central-1.compute.internal" }, NodeClaim: { name: "notify-karpenter-7xk2p" }, "instance-type": "c7i.xlarge", "capacity-type": "spot" }],
        "replacement-nodes": [],
    }),
    // K lifecycle/initialization.go:99, controller.go:275, scheduler.go:341.
    line("INFO", "initialized nodeclaim", {
        controller: "nodeclaim.lifecycle",
        NodeClaim: { name: "notify-karpenter-7xk2p" },
        Node: { name: "ip-10-0-1-23.ca-central-1.compute.internal" },
        allocatable: { cpu: "3920m", "ephemeral-storage": "75350029139", memory: "6880Mi", pods: "58" },
    }),
    line("INFO", "deleted nodeclaim", { controller: "nodeclaim.lifecycle", NodeClaim: { name: "notify-karpenter-7xk2p" }, Node: { name: "ip-10-0-1-23.ca-central-1.compute.internal" } }),
    line("INFO", "computed unready node(s) will fit pod(s)", { controller: "provisioner", nodes: 1, pods: 4 }),
    line("INFO", "no dynamic nodepools found", { controller: "provisioner" }),
    // Another NodePool (GC Notify's old one, say) not ready is not this program's.
    line("ERROR", "ignoring nodepool, not ready", { controller: "provisioner", NodePool: { name: "some-other-pool" } }),
    // A pod of another namespace Karpenter cannot place.
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "coredns-5d8b7c6f9-x1y2z", namespace: "kube-system" },
        error: "incompatible with nodepool \"notify-karpenter\", did not tolerate taint",
    }),
    // At logLevel debug, per type and zone after an ICE, even when the launch then succeeds
    // (aws/karpenter-provider-aws v1.14.1 pkg/cache/unavailableofferings.go:144).
    line("DEBUG", "removing offering from offerings", {
        caller: "cache/unavailableofferings.go:144",
        controller: "nodeclaim.lifecycle",
        reason: "InsufficientInstanceCapacity",
        "instance-type": "c7i.xlarge",
        zone: "ca-central-1d",
        "capacity-type": "spot",
        ttl: "3m0s",
    }),
];

/** Fluent Bit's record of a container line: `log` raw, `log_processed` parsed (Merge_Log On), kubernetes metadata. */
export function fluentBitRecord(raw: string, container = { namespace: "karpenter", pod: "karpenter-6b7f9c9d8d-x2x4k", container: "controller" }): string {
    let parsed: unknown;
    try {
        parsed = JSON.parse(raw);
    } catch {
        parsed = undefined;
    }
    return JSON.stringify({
        time: "2026-11-30T14:03:11.512345678Z",
        stream: "stdout",
        _p: "F",
        log: raw,
        ...(parsed === undefined ? {} : { log_processed: parsed }),
        kubernetes: {
            pod_name: container.pod,
            namespace_name: container.namespace,
            pod_id: "3f0c2a9e-5b6d-4c7e-8f9a-0b1c2d3e4f5a",
            host: "ip-10-0-2-45.ca-central-1.compute.internal",
            container_name: container.container,
            docker_id: "a1b2c3d4e5f6",
            container_image: "public.ecr.aws/karpenter/controller:1.14.1",
            labels: { "app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter" },
        },
    });
}

/** Another container's line that mentions the EC2 error code (a GC Notify app logging an AWS error, say). */
export const OTHER_CONTAINER_ICE = fluentBitRecord(
    JSON.stringify({ level: "ERROR", message: "could not schedule pod: InsufficientInstanceCapacity from ec2", error: "failed launching nodeclaim" }),
    { namespace: "notification-canada-ca", pod: "notify-api-5f6d7c8b9-aaaaa", container: "api" },
);
