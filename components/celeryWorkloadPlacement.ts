import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { RELEASE_HISTORY } from "./models/controllerPolicy.ts";
import { type CeleryWorkloadPlacementArgs, DEPLOYMENT_LABEL, NIDHOGG_CHART, NIDHOGG_POD_LABELS, NIDHOGG_RELEASE, NIDHOGG_VERSION, type PriorityClassSpec, admissionPolicySpec, batches, burstBudgetName, burstPodTemplate, daemonSetPodTemplate, headroomDeployment, nidhoggValues, placementProblems, stablePodTemplate, waitsFor } from "./models/celeryPlacement.ts";

/**
 * Where GC Notify's pods may run. Burst Celery Deployments are patched onto ephemeral nodes (with their priority,
 * grace period and disruption budgets); every other listed Deployment is pinned to stable nodes; an admission
 * policy rejects any other pod that tries to reach ephemeral nodes; node agents are patched to run there first,
 * and nidhogg holds each new node tainted until they do; optional headroom pods keep warm room for a burst.
 */
export class CeleryWorkloadPlacement extends pulumi.ComponentResource {
    public readonly priorityClassNames: { high: string; burst: string; headroom: string };
    public readonly admissionPolicyName: string;
    public readonly headroomPods: number;

    constructor(name: string, args: CeleryWorkloadPlacementArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:CeleryWorkloadPlacement", name, {}, opts);
        const problems = placementProblems(args);
        if (problems.length > 0) throw new Error(`CeleryWorkloadPlacement ${name}:\n${problems.join("\n")}`);
        const step: PlacementStep = { name, args, parent: this, child: { parent: this, dependsOn: args.dependsOn } };

        const classes = createPriorityClasses(step);
        // Node agents first: they tolerate the new taints before any node carries them, and nidhogg lifts them.
        const agents = patchNodeAgents(step);
        const nidhogg = installNidhogg(step, agents);
        const nodesReady = { parent: this, dependsOn: [...(args.dependsOn ?? []), ...classes, ...agents, ...nidhogg] };
        const patched = [...agents, ...patchBurstDeployments(step, nodesReady), ...patchStableDeployments(step, classes)];
        if (args.headroom.pods > 0) patched.push(new k8s.apps.v1.Deployment(`${name}-headroom`, headroomDeployment(args), nodesReady));
        this.admissionPolicyName = admitOnlyBurstPods(step, patched);

        const pcs = args.priorityClasses;
        this.priorityClassNames = { high: pcs.high.name, burst: pcs.burst.name, headroom: pcs.headroom.name };
        this.headroomPods = args.headroom.pods;
        this.registerOutputs({ priorityClassNames: this.priorityClassNames, admissionPolicyName: this.admissionPolicyName, headroomPods: this.headroomPods });
    }
}

/** What every builder below needs: the component's name and args, and the options of its children. */
interface PlacementStep {
    name: string;
    args: CeleryWorkloadPlacementArgs;
    parent: pulumi.Resource;
    /** `{ parent, dependsOn: args.dependsOn }`. */
    child: pulumi.CustomResourceOptions;
}

/** Charts (Helm) own these objects; the patches take over only the fields they set. */
const patchMetadata = (resource: string, namespace: string) => ({ name: resource, namespace, annotations: { "pulumi.com/patchForce": "true" } });

/** The provider awaits each rollout, 10 minutes by default (pulumi-kubernetes provider/pkg/await/await.go:306). */
const rollout = (timeout: string) => ({ customTimeouts: { create: timeout, update: timeout } });

/**
 * First, with no dependency on the controller or the pool: running pods already name these classes (GC Notify's
 * priority-classes release made them), and the API server refuses every new pod that names a missing one.
 */
function createPriorityClasses({ name, args, parent }: PlacementStep): pulumi.Resource[] {
    const life = args.lifecycle;
    const priorityClass = (role: string, pc: PriorityClassSpec, description: string, preemptionPolicy?: string) =>
        new k8s.scheduling.v1.PriorityClass(
            `${name}-priority-${role}`,
            // Forced: when `up` adopts GC Notify's existing classes (docs/migration.md), Helm owns their fields.
            { metadata: { name: pc.name, annotations: { "pulumi.com/patchForce": "true" } }, value: pc.value, globalDefault: false, description, preemptionPolicy },
            {
                parent,
                provider: life.priorityClassProvider,
                protect: life.protect,
                retainOnDelete: life.retainOnDelete,
                // The API server refuses to change either in place (kubernetes pkg/apis/scheduling/validation
                // ValidatePriorityClassUpdate), and pulumi-kubernetes plans them as updates (no scheduling.k8s.io
                // entry in provider/pkg/provider/diff.go forceNew). Same name, so the old class goes first.
                replaceOnChanges: ["value", "preemptionPolicy"],
                deleteBeforeReplace: true,
            },
        );
    const pcs = args.priorityClasses;
    return [
        priorityClass("high", pcs.high, "Workloads that must stay up: API, admin, static Celery, beat."),
        priorityClass("burst", pcs.burst, "Burst Celery workers on ephemeral spot nodes; evicted before anything else that runs real work."),
        priorityClass("headroom", pcs.headroom, "Placeholder pods holding room for a burst; preempted first, never preempt.", "Never"),
    ];
}

/** The node agents' DaemonSets, tolerating the ephemeral and startup taints. EKS owns add-ons' fields: not patched. */
function patchNodeAgents({ name, args, child }: PlacementStep): pulumi.Resource[] {
    return args.nodeDaemonSets
        .filter((ds) => !ds.addOn)
        .map(
            (ds) =>
                new k8s.apps.v1.DaemonSetPatch(
                    `${name}-agent-${ds.name}`,
                    { metadata: patchMetadata(ds.name, ds.namespace), spec: { template: daemonSetPodTemplate(args, ds) } },
                    { ...child, ...rollout(args.lifecycle.daemonSetPatchTimeout) },
                ),
        );
}

/** nidhogg, which lifts each startup taint once its agent runs on the node; none without agents to wait for. */
function installNidhogg({ name, args, parent }: PlacementStep, agents: pulumi.Resource[]): pulumi.Resource[] {
    if (!args.nodeDaemonSets.some(waitsFor)) return [];
    const release = new k8s.helm.v3.Release(
        `${name}-nidhogg`,
        // A bounded history, like the controller's releases (RELEASE_HISTORY in components/models/controllerPolicy.ts says why).
        { ...NIDHOGG_RELEASE, chart: NIDHOGG_CHART, version: NIDHOGG_VERSION, maxHistory: RELEASE_HISTORY, values: nidhoggValues(args) },
        { parent, dependsOn: [...(args.dependsOn ?? []), ...agents] },
    );
    // The chart (0.6.6) has no priority class or disruption budget; without nidhogg every new node stays tainted,
    // so it must not be the first pod preempted on a stable node full of high-priority work.
    new k8s.apps.v1.StatefulSetPatch(
        `${name}-nidhogg-priority`,
        { metadata: patchMetadata("nidhogg", "kube-system"), spec: { template: { spec: { priorityClassName: "system-cluster-critical" } } } },
        { parent, dependsOn: [release] },
    );
    new k8s.policy.v1.PodDisruptionBudget(
        `${name}-nidhogg-pdb`,
        { metadata: NIDHOGG_RELEASE, spec: { maxUnavailable: 1, selector: { matchLabels: NIDHOGG_POD_LABELS } } },
        { parent, dependsOn: [release] },
    );
    return [release];
}

/** Each burst Deployment onto ephemeral nodes, once nodes can become usable, with a disruption budget of its own. */
function patchBurstDeployments({ name, args, child }: PlacementStep, nodesReady: pulumi.CustomResourceOptions): pulumi.Resource[] {
    return args.burst.deployments.map((d) => {
        const budget = d.minAvailable !== undefined ? { minAvailable: d.minAvailable } : { maxUnavailable: d.maxUnavailable };
        // Its own name: the chart's budget has the Deployment's name, and a pod under two budgets cannot be evicted.
        new k8s.policy.v1.PodDisruptionBudget(
            `${name}-pdb-${d.name}`,
            { metadata: { name: burstBudgetName(d.name), namespace: args.namespace }, spec: { ...budget, selector: { matchLabels: { [DEPLOYMENT_LABEL]: d.name } } } },
            child,
        );
        return new k8s.apps.v1.DeploymentPatch(
            `${name}-burst-${d.name}`,
            { metadata: patchMetadata(d.name, args.namespace), spec: { template: burstPodTemplate(args, d) } },
            { ...nodesReady, ...rollout(args.lifecycle.burstPatchTimeout) },
        );
    });
}

/**
 * Every stable Deployment pinned to stable nodes, a few at a time: each batch waits until the previous one has rolled
 * out, so the first `up` never restarts the API, admin and every static worker at once.
 */
function patchStableDeployments({ name, args, parent }: PlacementStep, classes: pulumi.Resource[]): pulumi.Resource[] {
    const patched: pulumi.Resource[] = [];
    let previous: pulumi.Resource[] = [];
    for (const batch of batches(args.stableDeployments, args.lifecycle.stableBatchSize)) {
        previous = batch.map(
            (d) =>
                new k8s.apps.v1.DeploymentPatch(
                    `${name}-stable-${d}`,
                    { metadata: patchMetadata(d, args.namespace), spec: { template: stablePodTemplate(args) } },
                    { parent, dependsOn: [...classes, ...previous], ...rollout(args.lifecycle.stablePatchTimeout) },
                ),
        );
        patched.push(...previous);
    }
    return patched;
}

/** The admission policy that rejects any other pod reaching for ephemeral nodes, bound last; returns its name. */
function admitOnlyBurstPods({ name, args, parent, child }: PlacementStep, patched: pulumi.Resource[]): string {
    const policyName = "ephemeral-nodes-celery-burst-only";
    const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(`${name}-admission-policy`, { metadata: { name: policyName }, spec: admissionPolicySpec(args) }, child);
    new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        `${name}-admission-binding`,
        {
            metadata: { name: policyName },
            spec: {
                policyName,
                validationActions: args.admission.mode === "deny" ? ["Deny"] : ["Warn", "Audit"],
                matchResources: {
                    namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: args.admission.namespaces ?? [args.namespace] }] },
                },
            },
        },
        // Last: a binding that rejects a pod it should not would otherwise stall the patches' rollouts midway; after
        // them its effect shows on its own. The first rollout uses admission.mode "warn" (docs/migration.md).
        { parent, dependsOn: [policy, ...patched] },
    );
    return policyName;
}
