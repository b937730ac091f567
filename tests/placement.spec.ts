import { evaluate } from "@marcbachmann/cel-js";
import { expect } from "chai";
import { CeleryWorkloadPlacement } from "../components/celeryWorkloadPlacement.ts";
import { DEPLOYMENT_LABEL, admissionPolicySpec, celeryPreStop } from "../components/models/celeryPlacement.ts";
import { type NodeModel, requireInEveryTerm, schedulingProblems } from "../components/models/scheduling.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { nodePoolArgs, placementArgs } from "../stacks/componentArgs.ts";
import { renderNodePool } from "../components/models/nodePool.ts";
import { runOffline } from "../plan/offlineRuntime.ts";
import { summary } from "../plan/render.ts";
import { ephemeralNodesOf, podTemplatesOf } from "../plan/placementCheck.ts";
import { BURST_DEPLOYMENTS, STACKS, buildStack, configErrorOf, errorOf, patchSections, rawConfig, section, stackConfig } from "./helpers.ts";

const NS = "notification-canada-ca";
const EPHEMERAL = "notification-canada-ca/ephemeral";
const BURST_LABEL = "notification-canada-ca/celery-burst";
const BURST = BURST_DEPLOYMENTS;
const STABLE = [
    "notify-api",
    "notify-admin",
    "notify-document-download",
    "notify-documentation",
    "notify-celery-beat",
    "notify-celery-core-tasks-static",
    "notify-celery-email-send-static",
    "notify-celery-sms-send-static",
    "notify-celery-sms-dedicated-static",
    "notify-celery-generate-reports-static",
    "notify-celery-periodic-static",
    "notify-celery-nightly-burst",
];
/** GC Notify's node agents the program patches; new ephemeral nodes wait for the first four (waitFor). */
const AGENTS = [
    ["kube-system", "secrets-store-csi-driver"],
    ["kube-system", "secrets-provider-aws"],
    ["amazon-cloudwatch", "fb-agent-fluent-bit"],
    ["amazon-cloudwatch", "aws-cloudwatch-agent"],
    ["signoz", "signoz-k8s-k8s-infra-otel-agent"],
    ["velero", "node-agent"],
    ["falco", "falco"],
    ["xray", "xray-daemon-aws-xray"],
];
const WAITED = AGENTS.slice(0, 4);
const HEADROOM: Record<string, number> = { staging: 2, production: 6 };
const STABLE_NODE: NodeModel = { description: "a stable node", labels: { "eks.amazonaws.com/capacityType": "ON_DEMAND", "kubernetes.io/os": "linux" }, taints: [] };
const patchForce = { "pulumi.com/patchForce": "true" };

type Built = Awaited<ReturnType<typeof buildStack>>;

for (const stack of STACKS) {
    describe(`CeleryWorkloadPlacement (${stack})`, () => {
        let r: Built;
        before(async () => {
            r = await buildStack(stack);
        });
        const patch = (kind: "Deployment" | "DaemonSet", name: string) => r.get(`kubernetes:apps/v1:${kind}Patch`, name).inputs;

        it("creates GC Notify's priority classes and a lower, non-preempting one for headroom", () => {
            const classes = r.byType("kubernetes:scheduling.k8s.io/v1:PriorityClass").map((p) => p.inputs);
            const pc = (name: string, value: number, description: string, preemptionPolicy?: string) => ({
                apiVersion: "scheduling.k8s.io/v1",
                kind: "PriorityClass",
                // Forced, so a migration can adopt the classes GC Notify's Helm release created.
                metadata: { name, annotations: patchForce },
                value,
                globalDefault: false,
                description,
                ...(preemptionPolicy ? { preemptionPolicy } : {}),
            });
            expect(classes).to.deep.equal([
                pc("high-priority", 1000000, "Workloads that must stay up: API, admin, static Celery, beat."),
                pc("celery", 10, "Burst Celery workers on ephemeral spot nodes; evicted before anything else that runs real work."),
                pc("celery-headroom", -10, "Placeholder pods holding room for a burst; preempted first, never preempt.", "Never"),
            ]);
        });

        it("patches each burst Deployment onto ephemeral nodes, at low priority, with a grace period its tasks fit and the program's preStop hook on the chart's container (named after the Deployment)", () => {
            // (prefetchMultiplier 4 + 1) x longestTaskSeconds + 10 s: 18 s tasks, and 600 s for the workers that run process-job.
            const longTasks = stack === "staging" ? ["notify-celery-periodic-burst"] : ["notify-celery-core-tasks-burst", "notify-celery-periodic-burst"];
            for (const name of BURST) {
                const grace = longTasks.includes(name) ? 3010 : 100;
                expect(patch("Deployment", `celery-placement-burst-${name}`)).to.deep.equal({
                    apiVersion: "apps/v1",
                    kind: "Deployment",
                    metadata: { name, namespace: NS, annotations: patchForce },
                    spec: {
                        template: {
                            metadata: { labels: { [BURST_LABEL]: "true", [DEPLOYMENT_LABEL]: name } },
                            spec: {
                                tolerations: [{ key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" }],
                                affinity: {
                                    nodeAffinity: {
                                        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: EPHEMERAL, operator: "In", values: ["true"] }] }] },
                                    },
                                },
                                priorityClassName: "celery",
                                terminationGracePeriodSeconds: grace,
                                containers: [{ name, lifecycle: { preStop: celeryPreStop(grace) } }],
                            },
                        },
                    },
                });
            }
        });

        it("gives each burst Deployment the PodDisruptionBudget from config, selecting only its own pods, under a name that is not the chart's budget's", () => {
            const budgets = Object.fromEntries(
                r.byType("kubernetes:policy/v1:PodDisruptionBudget").filter((p) => p.inputs.metadata.namespace === NS).map((p) => [p.inputs.metadata.name, p.inputs]),
            );
            // The notify-celery chart names its own budgets after the Deployments (gc-notify-what-runs-today.md).
            expect(Object.keys(budgets)).to.deep.equal(BURST.map((d) => `${d}-ephemeral`));
            expect(Object.keys(budgets).filter((n) => BURST.includes(n))).to.deep.equal([]);
            const expected = [{ minAvailable: 2 }, { minAvailable: 2 }, { maxUnavailable: "50%" }, { maxUnavailable: 1 }, { minAvailable: 1 }];
            BURST.forEach((name, i) => {
                expect(budgets[`${name}-ephemeral`].metadata.namespace).to.equal(NS);
                expect(budgets[`${name}-ephemeral`].spec).to.deep.equal({ ...expected[i], selector: { matchLabels: { [DEPLOYMENT_LABEL]: name } } });
            });
        });

        it("pins every other Deployment to stable nodes, with the high priority class in the pod template", () => {
            const patched = r.byType("kubernetes:apps/v1:DeploymentPatch").filter((p) => p.name.startsWith("celery-placement-stable-"));
            expect(patched.map((p) => p.inputs.metadata.name)).to.deep.equal(STABLE);
            for (const p of patched) {
                expect(p.inputs.metadata).to.deep.include({ namespace: NS, annotations: patchForce });
                // GC Notify's API chart set priorityClassName on the Deployment spec, where Kubernetes ignores it.
                // karpenter.sh/nodepool DoesNotExist: Karpenter ignores the pod (provisioner.go:203-212, 570-580).
                expect(p.inputs.spec).to.deep.equal({
                    template: {
                        spec: {
                            nodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" },
                            affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] }] } } },
                            priorityClassName: "high-priority",
                        },
                    },
                });
            }
            expect(summary(stack, r.resources)).to.include(
                `patch Deployment ${NS}/notify-api: nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND, requires karpenter.sh/nodepool DoesNotExist, priority high-priority`,
            );
            expect(summary(stack, r.resources)).to.include(`requires ${EPHEMERAL} In true`);
        });

        it("makes node agents tolerate ephemeral nodes at system-node-critical, and guarantees the CloudWatch agent its CPU", () => {
            // Every taint for the agents whose charts tolerate every taint already; only the new nodes' taints for those
            // whose charts do not, so none of them moves onto GC Notify's SigNoz nodes (dedicated=signoz, MW2-F7).
            const newNodeTaints = [
                { key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" },
                ...WAITED.map(([ns, name]) => ({ key: `nidhogg.uswitch.com/${ns}.${name}`, operator: "Exists", effect: "NoSchedule" })),
            ];
            const everyTaint = ["secrets-store-csi-driver", "secrets-provider-aws", "signoz-k8s-k8s-infra-otel-agent", "node-agent"];
            for (const [namespace, name] of AGENTS) {
                const p = patch("DaemonSet", `celery-placement-agent-${name}`);
                expect(p.metadata).to.deep.equal({ name, namespace, annotations: patchForce });
                const tolerations = everyTaint.includes(name) ? [{ operator: "Exists" }] : newNodeTaints;
                expect(p.spec.template.spec, name).to.deep.include({ tolerations, priorityClassName: "system-node-critical" });
            }
            const resources = { cpu: "300m", memory: "300Mi" };
            expect(patch("DaemonSet", "celery-placement-agent-aws-cloudwatch-agent").spec.template.spec.containers).to.deep.equal([
                { name: "cloudwatch-agent", resources: { requests: resources, limits: resources } },
            ]);
            expect(patch("DaemonSet", "celery-placement-agent-falco").spec.template.spec).to.not.have.property("containers");
        });

        it("leaves the EKS add-on's DaemonSet (ebs-csi-node) unpatched: EKS manages its fields", () => {
            expect(r.byType("kubernetes:apps/v1:DaemonSetPatch").map((x) => x.inputs.metadata.name)).to.have.members(AGENTS.map(([, name]) => name));
        });

        it("keeps new nodes tainted until each waited-for agent runs: startup taints with <namespace>.<name> keys, removed by a pinned nidhogg watching exactly those", () => {
            const pool = r.get("kubernetes:karpenter.sh/v1:NodePool", "celery-burst-node-pool").inputs;
            expect(pool.spec.template.spec.startupTaints).to.deep.equal(WAITED.map(([ns, name]) => ({ key: `nidhogg.uswitch.com/${ns}.${name}`, effect: "NoSchedule" })));
            const nidhogg = r.get("kubernetes:helm.sh/v3:Release", "celery-placement-nidhogg").inputs;
            expect(nidhogg).to.deep.include({ name: "nidhogg", chart: "oci://ghcr.io/pelotech/charts/nidhogg", version: "0.6.6", namespace: "kube-system" });
            const { podAnnotations, ...values } = nidhogg.values;
            // Out of GC Notify's reloader, rolled by Helm itself when its configuration changes (MW2-F4; tests/workflows.spec.ts).
            expect(podAnnotations).to.have.keys("reloader.stakater.com/auto", "notify-karpenter/nidhogg-configuration");
            expect(values).to.deep.equal({
                nodeSelector: { "eks.amazonaws.com/capacityType": "ON_DEMAND" },
                resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "256Mi" } },
                configuration: {
                    taintNamePrefix: "nidhogg.uswitch.com",
                    nodeSelector: [`${EPHEMERAL}=true`],
                    daemonsets: WAITED.map(([namespace, name]) => ({ name, namespace })),
                },
            });
        });

        it("installs nidhogg's release with at most 10 revisions (pulumi-kubernetes v4.32.0 helm_release.go:743-746), not atomic", () => {
            const { values, ...inputs } = r.get("kubernetes:helm.sh/v3:Release", "celery-placement-nidhogg").inputs;
            expect(values).to.be.an("object");
            expect(inputs).to.deep.equal({ name: "nidhogg", namespace: "kube-system", chart: "oci://ghcr.io/pelotech/charts/nidhogg", version: "0.6.6", maxHistory: 10, compat: "true" });
        });

        it("keeps nidhogg from being the first pod evicted: system-cluster-critical and a disruption budget", () => {
            const patch = r.get("kubernetes:apps/v1:StatefulSetPatch", "celery-placement-nidhogg-priority").inputs;
            expect(patch.metadata).to.deep.equal({ name: "nidhogg", namespace: "kube-system", annotations: patchForce });
            expect(patch.spec).to.deep.equal({ template: { spec: { priorityClassName: "system-cluster-critical" } } });
            const pdb = r.get("kubernetes:policy/v1:PodDisruptionBudget", "celery-placement-nidhogg-pdb").inputs;
            expect(pdb.spec).to.deep.equal({ maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": "nidhogg", "app.kubernetes.io/instance": "nidhogg" } } });
        });

        it("binds the admission policy in deny mode to the application namespace", () => {
            const policy = r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "celery-placement-admission-policy").inputs;
            expect(policy.metadata.name).to.equal("ephemeral-nodes-celery-burst-only");
            expect(policy.spec.failurePolicy).to.equal("Fail");
            expect(policy.spec.matchConstraints).to.deep.equal({
                resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods"] }],
            });
            const binding = r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "celery-placement-admission-binding").inputs;
            expect(binding.spec).to.deep.equal({
                policyName: "ephemeral-nodes-celery-burst-only",
                validationActions: ["Deny"],
                matchResources: { namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [NS] }] } },
            });
        });

        it(`holds room for ${HEADROOM[stack]} Celery pods on ephemeral nodes with preemptible pause pods`, () => {
            const size = section(stack, "nodePool").capacityCheck;
            expect(r.get("kubernetes:apps/v1:Deployment", "celery-placement-headroom").inputs).to.deep.equal({
                apiVersion: "apps/v1",
                kind: "Deployment",
                // Not awaited: its pods wait for spot capacity, which must not fail `up`.
                metadata: { name: "celery-headroom", namespace: NS, annotations: { "pulumi.com/skipAwait": "true" } },
                spec: {
                    replicas: HEADROOM[stack],
                    selector: { matchLabels: { app: "celery-headroom" } },
                    template: {
                        // The burst label lets the admission policy admit them next to the Celery pods they stand in for.
                        metadata: { labels: { app: "celery-headroom", [BURST_LABEL]: "true" } },
                        spec: {
                            tolerations: [{ key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" }],
                            affinity: {
                                nodeAffinity: {
                                    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: EPHEMERAL, operator: "In", values: ["true"] }] }] },
                                },
                                // Re-created during a burst, they gather on one node, so the others can empty afterwards.
                                podAffinity: {
                                    preferredDuringSchedulingIgnoredDuringExecution: [
                                        { weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { app: "celery-headroom" } }, topologyKey: "kubernetes.io/hostname" } },
                                    ],
                                },
                            },
                            priorityClassName: "celery-headroom",
                            terminationGracePeriodSeconds: 0,
                            automountServiceAccountToken: false,
                            securityContext: { runAsNonRoot: true, runAsUser: 65535, seccompProfile: { type: "RuntimeDefault" } },
                            containers: [
                                {
                                    name: "pause",
                                    image: "registry.k8s.io/pause:3.10",
                                    resources: { requests: { cpu: size.celeryPodCpu, memory: size.celeryPodMemory }, limits: { memory: size.celeryPodMemory } },
                                    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
                                },
                            ],
                        },
                    },
                },
            });
        });

        it("orders the rollout: agents, then nidhogg, then burst pods onto nodes that can exist", () => {
            const urn = (type: string, name: string) => r.get(type, name).urn;
            const nidhogg = urn("kubernetes:helm.sh/v3:Release", "celery-placement-nidhogg");
            const pool = urn("kubernetes:karpenter.sh/v1:NodePool", "celery-burst-node-pool");
            const agents = AGENTS.map(([, name]) => urn("kubernetes:apps/v1:DaemonSetPatch", `celery-placement-agent-${name}`));
            expect(r.get("kubernetes:helm.sh/v3:Release", "celery-placement-nidhogg").dependencies).to.include.members(agents);
            for (const name of BURST) {
                const deps = r.get("kubernetes:apps/v1:DeploymentPatch", `celery-placement-burst-${name}`).dependencies;
                expect(deps).to.include.members([nidhogg, pool, ...agents]);
            }
            expect(r.get("kubernetes:apps/v1:Deployment", "celery-placement-headroom").dependencies).to.include.members([nidhogg, pool]);
        });

        it("creates the PriorityClasses first, waiting for nothing: running GC Notify pods name them (migration-walk MW-W1)", () => {
            for (const role of ["high", "burst", "headroom"]) {
                expect(r.get("kubernetes:scheduling.k8s.io/v1:PriorityClass", `celery-placement-priority-${role}`).dependencies, role).to.deep.equal([]);
            }
        });

        it("schedules only burst Celery and headroom pods onto ready ephemeral nodes, and only node agents onto new ones", () => {
            const objects = r.resources.filter((x) => x.custom && x.type.startsWith("kubernetes:")).map((x) => x.inputs);
            const [nodes] = ephemeralNodesOf(objects);
            const templates = podTemplatesOf(objects);
            const onReady = templates.filter((t) => schedulingProblems(t.spec, nodes.ready).length === 0).map((t) => t.owner);
            const onNew = templates.filter((t) => schedulingProblems(t.spec, nodes.launched).length === 0).map((t) => t.owner);
            const agents = AGENTS.map(([ns, name]) => `DaemonSet ${ns}/${name}`);
            expect(onReady).to.have.members([...agents, ...BURST.map((d) => `Deployment ${NS}/${d}`), `Deployment ${NS}/celery-headroom`]);
            // Every patched agent tolerates every taint, startup taints included; nodes wait only for WAITED.
            expect(onNew).to.have.members(agents);
            for (const t of templates.filter((t) => STABLE.some((d) => t.owner === `Deployment ${NS}/${d}`))) {
                expect(schedulingProblems(t.spec, nodes.ready)).to.deep.equal([
                    `does not tolerate the taint ${EPHEMERAL}=true:NoSchedule`,
                    "nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND does not match",
                    "required node affinity does not match",
                ]);
                expect(schedulingProblems(t.spec, STABLE_NODE)).to.deep.equal([]);
            }
            // Without spill-over a burst pod waits for an ephemeral node rather than taking a stable one.
            const burst = templates.find((t) => t.owner === `Deployment ${NS}/${BURST[0]}`)!;
            expect(schedulingProblems(burst.spec, STABLE_NODE)).to.deep.equal(["required node affinity does not match"]);
        });
    });
}

describe("CeleryWorkloadPlacement options", () => {
    it("lets burst pods spill over to stable nodes when config allows, still preferring ephemeral ones", async () => {
        const r = await buildStack("staging", { placement: { burst: { ...section("staging", "placement").burst, spillToStable: true } } });
        const spec = r.get("kubernetes:apps/v1:DeploymentPatch", `celery-placement-burst-${BURST[0]}`).inputs.spec.template.spec;
        expect(spec.affinity).to.deep.equal({
            nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: { matchExpressions: [{ key: EPHEMERAL, operator: "In", values: ["true"] }] } }] },
        });
        expect(schedulingProblems(spec, STABLE_NODE)).to.deep.equal([]);
        // Headroom exists only to warm ephemeral nodes, so it never spills.
        expect(r.get("kubernetes:apps/v1:Deployment", "celery-placement-headroom").inputs.spec.template.spec.affinity.nodeAffinity).to.have.property("requiredDuringSchedulingIgnoredDuringExecution");
    });

    it("warns and audits instead of denying in warn mode, over the configured namespaces", async () => {
        const r = await buildStack("staging", { placement: { admission: { mode: "warn", namespaces: [NS, "notify-jobs"] } } });
        const binding = r.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "celery-placement-admission-binding").inputs.spec;
        expect(binding.validationActions).to.deep.equal(["Warn", "Audit"]);
        expect(binding.matchResources.namespaceSelector.matchExpressions[0].values).to.deep.equal([NS, "notify-jobs"]);
    });

    it("creates no headroom Deployment when headroom is 0", async () => {
        const r = await buildStack("production", { placement: { headroom: { pods: 0 } } });
        expect(r.byType("kubernetes:apps/v1:Deployment").map((d) => d.inputs.metadata.name)).to.deep.equal(["burst-scale-down-order"]);
    });

    it("tolerates only the ephemeral and startup taints for an agent that must not tolerate everything", async () => {
        const agents = section("staging", "placement").nodeDaemonSets.map((d: any) => (d.name === "node-agent" ? { ...d, tolerateAll: false } : d));
        const r = await buildStack("staging", { placement: { nodeDaemonSets: agents } });
        expect(r.get("kubernetes:apps/v1:DaemonSetPatch", "celery-placement-agent-node-agent").inputs.spec.template.spec.tolerations).to.deep.equal([
            { key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" },
            ...WAITED.map(([ns, name]) => ({ key: `nidhogg.uswitch.com/${ns}.${name}`, operator: "Exists", effect: "NoSchedule" })),
        ]);
        const all = await buildStack("staging", { placement: { nodeDaemonSets: agents.map((d: any) => ({ ...d, tolerateAll: true })) } });
        expect(all.get("kubernetes:apps/v1:DaemonSetPatch", "celery-placement-agent-falco").inputs.spec.template.spec.tolerations).to.deep.equal([{ operator: "Exists" }]);
    });

    it("patches nothing and installs no nidhogg on a cluster without GC Notify's workloads (the scratch stack)", async () => {
        const r = await buildStack("staging", { placement: { burst: { ...section("staging", "placement").burst, deployments: [] }, stableDeployments: [], nodeDaemonSets: [] } });
        expect(r.resources.filter((x) => /Patch$|PodDisruptionBudget|helm.sh/.test(x.type) && x.name.startsWith("celery-placement"))).to.have.length(0);
        expect(r.get("kubernetes:karpenter.sh/v1:NodePool", "celery-burst-node-pool").inputs.spec.template.spec.startupTaints).to.deep.equal([]);
        expect(r.get("kubernetes:apps/v1:Deployment", "celery-placement-headroom").inputs.spec.replicas).to.equal(2);
    });

    it("validates its arguments before creating any child", async () => {
        const args = { ...placementArgs(stackConfig("staging")), stableDeployments: ["notify-api", BURST[0]] };
        let message = "";
        let created = -1;
        try {
            const r = await runOffline("staging", () => new CeleryWorkloadPlacement("bad", args));
            created = r.resources.length;
        } catch (e) {
            message = (e as Error).message;
        }
        expect(created).to.equal(-1);
        expect(message).to.equal(`CeleryWorkloadPlacement bad:\nDeployment ${BURST[0]} is listed as both burst and stable`);
    });
});

describe("the ephemeral node model", () => {
    const [nodes] = ephemeralNodesOf([renderNodePool(nodePoolArgs(stackConfig("production"), "node-role"), "node-role").nodePool]);
    const everything = [{ operator: "Exists" as const }];

    it("carries every label Karpenter may give a node of the pool, so no selector hides a pod that could land", () => {
        // Each of these pods tolerates every taint; a selector on a well-known label must not make it look safe.
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "kubernetes.io/arch": "amd64" } }, nodes.ready)).to.deep.equal([]);
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "topology.kubernetes.io/zone": "ca-central-1d" } }, nodes.ready)).to.deep.equal([]);
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "node.kubernetes.io/instance-type": "r7a.2xlarge" } }, nodes.ready)).to.deep.equal([]);
        const zone = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: "karpenter.k8s.aws/instance-family", operator: "In" as const, values: ["c7i"] }] }] } } };
        expect(schedulingProblems({ tolerations: everything, affinity: zone }, nodes.ready)).to.deep.equal([]);
    });

    it("still keeps off pods whose selectors no node of the pool can meet", () => {
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "kubernetes.io/arch": "arm64" } }, nodes.ready)).to.deep.equal(["nodeSelector kubernetes.io/arch=arm64 does not match"]);
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "node.kubernetes.io/instance-type": "m7i.4xlarge" } }, nodes.ready)).to.have.length(1);
        expect(schedulingProblems({ tolerations: everything, nodeSelector: { "karpenter.sh/capacity-type": "on-demand" } }, nodes.ready)).to.have.length(1);
    });
});

describe("keeping a pod off Karpenter's nodes (karpenter.sh/nodepool DoesNotExist)", () => {
    const [nodes] = ephemeralNodesOf([renderNodePool(nodePoolArgs(stackConfig("production"), "node-role"), "node-role").nodePool]);
    const everything = [{ operator: "Exists" as const }];
    const notKarpenter = { key: "karpenter.sh/nodepool", operator: "DoesNotExist" as const };
    const required = (nodeSelectorTerms: any[]) => ({ tolerations: everything, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } } });
    const zoneTerm = { matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In" as const, values: ["ca-central-1a"] }] };
    const anyTerm = { matchExpressions: [{ key: "kubernetes.io/os", operator: "In" as const, values: ["linux"] }] };

    it("adds the requirement to every existing term, since kube-scheduler ORs terms and Karpenter reads only the first", () => {
        expect(requireInEveryTerm(undefined, notKarpenter)).to.deep.equal([{ matchExpressions: [notKarpenter] }]);
        expect(requireInEveryTerm([zoneTerm, anyTerm], notKarpenter)).to.deep.equal([
            { matchExpressions: [...zoneTerm.matchExpressions, notKarpenter] },
            { matchExpressions: [...anyTerm.matchExpressions, notKarpenter] },
        ]);
        // As a new term of its own, it would be ORed away: the pod still fits a Karpenter node through the other term.
        expect(schedulingProblems(required([zoneTerm, { matchExpressions: [notKarpenter] }]), nodes.ready)).to.deep.equal([]);
        expect(schedulingProblems(required(requireInEveryTerm([zoneTerm, anyTerm], notKarpenter)), nodes.ready)).to.deep.equal(["required node affinity does not match"]);
    });
});

describe("the admission policy's CEL", () => {
    const spec = admissionPolicySpec(placementArgs(stackConfig("production")));

    /** What the API server answers for a pod: the messages of the failed validations (none: admitted). */
    function admit(pod: { metadata?: object; spec: object }): string[] {
        const object = { metadata: {}, ...pod };
        const variables: Record<string, unknown> = {};
        for (const v of spec.variables) variables[v.name] = evaluate(v.expression, { object, variables });
        return spec.validations.filter((v) => evaluate(v.expression, { object, variables }) !== true).map((v) => v.message);
    }
    const tolerates = `only burst Celery pods (label ${BURST_LABEL}=true) may tolerate the ephemeral node taint ${EPHEMERAL}`;
    const selects = `only burst Celery pods (label ${BURST_LABEL}=true) may select ephemeral nodes (${EPHEMERAL})`;
    const burstLabels = { labels: { app: "celery", [BURST_LABEL]: "true" } };
    const toleration = { key: EPHEMERAL, operator: "Equal", value: "true", effect: "NoSchedule" };
    const required = (operator: string, values?: string[]) => ({
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: EPHEMERAL, operator, ...(values ? { values } : {}) }] }] } },
    });

    const cases: [string, { metadata?: object; spec: object }, string[]][] = [
        ["admits a plain pod", { spec: { containers: [] } }, []],
        ["admits a burst pod that tolerates and requires ephemeral nodes", { metadata: burstLabels, spec: { tolerations: [toleration], affinity: required("In", ["true"]) } }, []],
        ["rejects an API pod that tolerates the ephemeral taint", { metadata: { labels: { app: "api" } }, spec: { tolerations: [toleration] } }, [tolerates]],
        ["rejects a pod that tolerates every taint", { spec: { tolerations: [{ operator: "Exists" }] } }, [tolerates]],
        ["admits a pod that tolerates only other taints", { spec: { tolerations: [{ key: "CriticalAddonsOnly", operator: "Exists" }, { key: "", operator: "Equal", value: "x" }] } }, []],
        ["rejects a burst label with another value", { metadata: { labels: { [BURST_LABEL]: "false" } }, spec: { tolerations: [toleration] } }, [tolerates]],
        ["rejects a nodeSelector on ephemeral nodes", { spec: { nodeSelector: { [EPHEMERAL]: "true" } } }, [selects]],
        ["rejects a required affinity to ephemeral nodes (Exists)", { spec: { affinity: required("Exists") } }, [selects]],
        [
            "rejects a preferred affinity to ephemeral nodes",
            { spec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: EPHEMERAL, operator: "In", values: ["true"] }] } }] } } } },
            [selects],
        ],
        ["admits an affinity that keeps a pod away from ephemeral nodes", { spec: { affinity: required("DoesNotExist") } }, []],
        ["admits a NotIn affinity", { spec: { affinity: required("NotIn", ["true"]) } }, []],
        ["reports both faults of a pod that tolerates and selects", { spec: { tolerations: [toleration], nodeSelector: { [EPHEMERAL]: "true" } } }, [tolerates, selects]],
    ];
    for (const [what, pod, expected] of cases) it(what, () => expect(admit(pod)).to.deep.equal(expected));

    it("admits every pod template the plan renders, headroom and burst included", async () => {
        const r = await buildStack("production");
        const templates = podTemplatesOf(r.resources.filter((x) => x.custom && x.type.startsWith("kubernetes:")).map((x) => x.inputs));
        for (const t of templates.filter((t) => t.owner.includes(NS))) expect(admit({ metadata: { labels: t.labels }, spec: t.spec }), t.owner).to.deep.equal([]);
        // The node agents tolerate everything, so the policy must never cover their namespaces.
        for (const t of templates.filter((t) => t.kind === "DaemonSet")) expect(admit({ metadata: { labels: t.labels }, spec: t.spec })).to.deep.equal([tolerates]);
    });
});

describe("placement config errors", () => {
    const withPlacement = (patch: Record<string, unknown>) => rawConfig("staging", "placement", patch);
    const burst = (patch: Record<string, unknown>) => withPlacement({ burst: { ...section("staging", "placement").burst, ...patch } });

    it("rejects a Celery Deployment also listed as stable, naming the key", () => {
        expect(errorOf(() => parseStackConfig("staging", withPlacement({ stableDeployments: ["notify-api", BURST[2]] })))).to.equal(
            `staging: notify-karpenter:placement.stableDeployments[1] must not repeat the burst Deployment ${BURST[2]}: a Deployment is either burst or stable`,
        );
    });

    it("refuses a longest task whose grace (5 in a row per thread, + 10 s) would outlast Karpenter's terminationGracePeriod, naming the key and the worker", () => {
        expect(errorOf(() => parseStackConfig("staging", burst({ longestTaskSeconds: 1000 })))).to.equal(
            "staging: notify-karpenter:nodePool.terminationGracePeriod must be at least 5010s, the grace period of notify-celery-core-tasks-burst (placement.burst: prefetchMultiplier 4 + 1 tasks in a row of its longest, 1000 s, + 10 s), or Karpenter kills workers mid-task at the end of a drain; or shorten the tasks (docs/celery-shutdown.md) (got 1h)",
        );
    });

    it("refuses a node pool that would cut draining Celery pods short: the longest grace is periodic-burst's, for its 600 s tasks", () => {
        const raw = rawConfig("staging", "nodePool", { terminationGracePeriod: "45s" });
        expect(errorOf(() => parseStackConfig("staging", raw))).to.equal(
            "staging: notify-karpenter:nodePool.terminationGracePeriod must be at least 3010s, the grace period of notify-celery-periodic-burst (placement.burst: prefetchMultiplier 4 + 1 tasks in a row of its longest, 600 s, + 10 s), or Karpenter kills workers mid-task at the end of a drain; or shorten the tasks (docs/celery-shutdown.md) (got 45s)",
        );
    });

    it("refuses the grace period as a key of its own: it follows from the tasks ((prefetchMultiplier + 1) × longestTaskSeconds + 10 s)", () => {
        expect(errorOf(() => parseStackConfig("staging", burst({ terminationGracePeriodSeconds: 60 })))).to.match(/placement\.burst\.terminationGracePeriodSeconds is not a known key/);
    });

    it("refuses a queue whose SQS name (placement.burst.queuePrefix + the queue) SQS cannot have, before preflight asks SQS for it", () => {
        const [first, ...rest] = section("staging", "placement").burst.deployments;
        const queue = "q".repeat(60);
        expect(errorOf(() => parseStackConfig("staging", burst({ deployments: [{ ...first, queues: ["send-email-high", queue] }, ...rest] })))).to.equal(
            `staging: notify-karpenter:placement.burst.deployments[0].queues[1] must make, after placement.burst.queuePrefix, an SQS queue name of at most 80 characters, SQS's limit: eks-notification-canada-ca${queue} has 86 (got "${queue}")`,
        );
    });

    it("refuses a queue name SQS cannot have (a dot but in .fifo), before preflight asks SQS for it (botocore sqs 2012-11-05 CreateQueue QueueName)", () => {
        const [first, ...rest] = section("staging", "placement").burst.deployments;
        const parse = (queue: string) => () => parseStackConfig("staging", burst({ deployments: [{ ...first, queues: [queue] }, ...rest] }));
        expect(errorOf(parse("send.email"))).to.equal(
            `staging: notify-karpenter:placement.burst.deployments[0].queues[0] must be a Celery queue name such as send-email-high (letters, digits, - and _; a FIFO queue's ends in .fifo) (got "send.email")`,
        );
        expect(parse("-priority-database-tasks.fifo")).not.to.throw();
    });

    it("refuses an empty queuePrefix: CI's preview role and the drill's workers would read every queue of the account (plan/ciAccess.ts, components/spotInterruptionDrill.ts)", () => {
        expect(errorOf(() => parseStackConfig("staging", burst({ queuePrefix: "" })))).to.match(/^staging: notify-karpenter:placement\.burst\.queuePrefix must be an SQS queue name prefix such as eks-notification-canada-ca \(not empty/);
    });

    it("needs exactly one of minAvailable and maxUnavailable for each burst Deployment", () => {
        const deployments = [{ name: BURST[0] }, { name: BURST[1], minAvailable: 1, maxUnavailable: 1 }, { name: BURST[2], minAvailable: "150%" }];
        expect(errorOf(() => parseStackConfig("staging", burst({ deployments })))).to.equal(
            [
                "staging: notify-karpenter:placement.burst.deployments[0] must set exactly one of minAvailable and maxUnavailable (its PodDisruptionBudget)",
                "staging: notify-karpenter:placement.burst.deployments[1] must set exactly one of minAvailable and maxUnavailable (its PodDisruptionBudget)",
                'staging: notify-karpenter:placement.burst.deployments[2].minAvailable must be a pod count from 0 to 2147483647, or a percentage from 0% to 100% such as 25% (got "150%")',
            ].join("\n"),
        );
    });

    it("rejects a disruption budget that can never apply: only Underutilized under WhenEmpty (one that also holds Drifted back still applies)", () => {
        // The nightly batch's and the quarterly tasks' budgets too, which disruption validation asks for.
        const nightly = { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" };
        const quarterly = { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 23 1-3 1,4,7,10 *", duration: "2h" };
        const budgets = [{ nodes: "10%" }, { nodes: "0", reasons: ["Underutilized"], schedule: "0 12 * * *", duration: "11h" }, nightly, quarterly];
        const withDrift = [{ nodes: "10%" }, { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" }, nightly, quarterly];
        expect(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { budgets: withDrift, consolidationPolicy: "WhenEmpty" }))).to.not.throw();
        expect(errorOf(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { budgets, consolidationPolicy: "WhenEmpty" }))).split("\n")[0]).to.equal(
            "staging: notify-karpenter:nodePool.budgets[1].reasons must not list Underutilized with consolidationPolicy WhenEmpty, which never disrupts a node for that reason: the budget would do nothing (use Empty or Drifted)",
        );
        expect(() => parseStackConfig("staging", rawConfig("staging", "nodePool", { budgets: withDrift, consolidationPolicy: "WhenEmptyOrUnderutilized" }))).to.not.throw();
    });

    it("rejects headroom without a Celery pod size", () => {
        const raw = rawConfig("staging", "nodePool", { capacityCheck: undefined });
        expect(errorOf(() => parseStackConfig("staging", raw))).to.equal(
            [
                "staging: notify-karpenter:placement.headroom.pods needs nodePool.capacityCheck.celeryPodCpu and celeryPodMemory, the size of each placeholder pod",
            ].join("\n"),
        );
    });

    it("rejects an admission policy over a node agent's namespace", () => {
        expect(errorOf(() => parseStackConfig("staging", withPlacement({ admission: { mode: "deny", namespaces: [NS, "kube-system"] } })))).to.equal(
            "staging: notify-karpenter:placement the admission policy would reject the node daemonsets in namespace kube-system, which tolerate the ephemeral taint",
        );
    });

    it("rejects names the API server would refuse: a long label value, a long startup taint key, a reserved class name", () => {
        const deployments = [{ name: `notify-celery-${"x".repeat(50)}-burst`, maxUnavailable: 1 }];
        const nodeDaemonSets = [{ namespace: "amazon-cloudwatch", name: `cloudwatch-agent-${"x".repeat(30)}` }];
        const priorityClasses = { high: { name: "system-high", value: 1000000 }, burst: { name: "celery", value: 10 }, headroom: { name: "celery-headroom", value: -10 } };
        expect(errorOf(() => parseStackConfig("staging", withPlacement({ burst: { ...section("staging", "placement").burst, deployments }, nodeDaemonSets, priorityClasses }))).split("\n")).to.deep.equal([
            `staging: notify-karpenter:placement Deployment ${deployments[0].name}: a burst Deployment's name is also its pods' notify-karpenter/deployment label value, at most 63 characters (got 70)`,
            `staging: notify-karpenter:placement DaemonSet amazon-cloudwatch/${nodeDaemonSets[0].name}: its startup taint nidhogg.uswitch.com/amazon-cloudwatch.${nodeDaemonSets[0].name} needs "<namespace>.<name>" of at most 63 characters (got 65)`,
            'staging: notify-karpenter:placement priority class system-high: names starting with "system-" are reserved for Kubernetes',
        ]);
    });

    it("rejects priority classes out of order and an unknown admission mode", () => {
        const priorityClasses = { high: { name: "high-priority", value: 5 }, burst: { name: "celery", value: 10 }, headroom: { name: "celery-headroom", value: -10 } };
        expect(errorOf(() => parseStackConfig("staging", withPlacement({ priorityClasses })))).to.equal(
            "staging: notify-karpenter:placement priority classes must rank high (5) above burst (10) above headroom (-10)",
        );
        expect(errorOf(() => parseStackConfig("staging", withPlacement({ admission: { mode: "audit" } })))).to.equal(
            'staging: notify-karpenter:placement.admission.mode must be one of "deny", "warn" (got "audit")',
        );
    });

    it("rejects a burst Deployment whose alarm name would be too long", () => {
        const deployments = [{ name: "a".repeat(220), maxUnavailable: 1 }];
        expect(errorOf(() => parseStackConfig("staging", burst({ deployments })))).to.match(
            /^staging: notify-karpenter:placement\.burst\.deployments\[0\]\.name must be at most 191 characters, or its alarm name ".*" exceeds CloudWatch's 255 \(got 220 characters\)$/,
        );
    });

    it("stops the program before any resource is registered", async () => {
        const msg = await configErrorOf("production", patchSections("production", { placement: { stableDeployments: [BURST[0]] } }));
        expect(msg).to.match(/^production: notify-karpenter:placement\.stableDeployments\[0\] must not repeat the burst Deployment/);
    });
});
