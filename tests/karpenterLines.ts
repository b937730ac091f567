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
    // with controller-runtime's "Reconciler error" (v0.23.1 pkg/internal/controller/controller.go:495).
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
    ],
    // K pkg/controllers/provisioning/provisioner.go:281, logged with a nil error.
    nodePoolNotReady: [line("ERROR", "ignoring nodepool, not ready", { controller: "provisioner", NodePool: { name: "notify-karpenter" } })],
};

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
    line("INFO", "no dynamic nodepools found", { controller: "provisioner" }),
    // Another NodePool (GC Notify's old one, say) not ready is not this program's.
    line("ERROR", "ignoring nodepool, not ready", { controller: "provisioner", NodePool: { name: "some-other-pool" } }),
    // A headroom placeholder preempted by a burst, waiting while the pool is at its limit.
    line("ERROR", "could not schedule pod", {
        controller: "provisioner",
        Pod: { name: "celery-headroom-5b9c8d7f6-k2l3m", namespace: "notification-canada-ca" },
        error: 'incompatible with nodepool "notify-karpenter", daemonset overhead={"cpu":"600m","memory":"800Mi","pods":"5"}, all available instance types exceed limits for nodepool',
    }),
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
