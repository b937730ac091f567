import { expect } from "chai";
import { PLACEHOLDERS, runOffline } from "../plan/offlineRuntime.ts";
import { loadConfig } from "../stacks/programConfig.ts";
import { createStack } from "../stacks/createStack.ts";
import { RELEASE_HISTORY, releaseDescription } from "../components/models/controllerPolicy.ts";
import { CHART_VALUE_KEYS } from "./chartValueKeys.ts";
import { STACKS, buildStack, customResources, parseJson, patchSections } from "./helpers.ts";

const ACCOUNT = PLACEHOLDERS.accountId;
const REGION = "ca-central-1";
const clusterOf = (stack: string) => `notification-canada-ca-${stack}-eks-cluster`;
const RELEASE = "kubernetes:helm.sh/v3:Release";

/** The 32 actions of the v1.14.1 reference controller policy. */
const REFERENCE_ACTIONS = [
    "arc-zonal-shift:GetManagedResource",
    "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:CreateTags", "ec2:DeleteLaunchTemplate",
    "ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes", "ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets", "ec2:RunInstances", "ec2:TerminateInstances",
    "eks:DescribeCluster",
    "iam:AddRoleToInstanceProfile", "iam:CreateInstanceProfile", "iam:DeleteInstanceProfile", "iam:GetInstanceProfile",
    "iam:ListInstanceProfiles", "iam:PassRole", "iam:RemoveRoleFromInstanceProfile", "iam:TagInstanceProfile",
    "pricing:GetProducts",
    "sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage",
    "ssm:GetParameter",
];

/** Values that are Kubernetes objects or free-form maps; the chart passes what is below them through. */
const FREE_FORM = ["nodeSelector", "affinity", "serviceAccount.annotations", "controller.resources"];

/** Every key path in a values object, stopping at free-form maps. */
function valuePaths(v: Record<string, unknown>, prefix = ""): string[] {
    return Object.entries(v).flatMap(([k, x]) => {
        const p = prefix ? `${prefix}.${k}` : k;
        if (FREE_FORM.includes(p) || x === null || typeof x !== "object" || Array.isArray(x)) return [p];
        return [p, ...valuePaths(x as Record<string, unknown>, p)];
    });
}

const isReadOnly = (action: string) => /^[a-z0-9-]+:(Describe|Get|List)/.test(action);

for (const stack of STACKS) {
    describe(`KarpenterController (${stack})`, () => {
        let r: Awaited<ReturnType<typeof buildStack>>;
        const cluster = clusterOf(stack);
        const policies = () => r.byType("aws:iam/policy:Policy").map((p) => ({ name: p.inputs.name, doc: parseJson(p.inputs.policy) }));
        const statements = () => policies().flatMap((p) => p.doc.Statement);
        const statementBySid = (sid: string) => statements().find((s: any) => s.Sid === sid);

        before(async () => {
            r = await buildStack(stack);
        });

        it("answers every data-source call, uses an explicit provider everywhere and unique names", () => {
            expect(r.unmockedCalls).to.deep.equal([]);
            for (const res of customResources(r.resources)) expect(res.provider, `${res.type} ${res.name}`).to.match(/::pulumi:providers:(aws|kubernetes)::/);
            const urns = r.resources.map((x) => x.urn);
            expect(new Set(urns).size).to.equal(urns.length);
            for (const res of r.resources.filter((x) => x.parent.includes("KarpenterController"))) expect(res.name).to.match(/^karpenter-/);
        });

        it("configures the aws provider for the cluster's region with default tags", () => {
            const aws = r.get("pulumi:providers:aws", "aws");
            expect(aws.inputs.region).to.equal(REGION);
            expect(parseJson(aws.inputs.defaultTags).tags).to.include({ Environment: stack, "notify-karpenter:stack": stack });
        });

        it("builds a kubeconfig that authenticates with aws eks get-token", () => {
            const provider = r.get("pulumi:providers:kubernetes", "kubernetes");
            expect(String(provider.inputs.enableServerSideApply)).to.equal("true");
            const kube = parseJson(provider.inputs.kubeconfig);
            expect(kube.clusters[0].cluster.server).to.equal(PLACEHOLDERS.clusterEndpoint(REGION));
            expect(kube.users[0].user.exec).to.deep.include({ command: "aws", args: ["eks", "get-token", "--cluster-name", cluster, "--region", REGION, "--output", "json"] });
        });

        it("grants exactly the 32 actions of the reference policy", () => {
            const actions = statements().flatMap((s: any) => [].concat(s.Action));
            expect([...new Set(actions)].sort()).to.deep.equal([...REFERENCE_ACTIONS].sort());
            expect(policies().map((p) => p.name)).to.have.members(
                ["node-lifecycle", "iam-integration", "eks-integration", "interruption", "zonal-shift", "resource-discovery"].map((k) => `${cluster}-karpenter-${k}`),
            );
        });

        it("grants no mutating action on an unscoped resource", () => {
            for (const s of statements()) {
                if ([].concat(s.Resource).includes("*" as never)) {
                    for (const a of [].concat(s.Action) as string[]) expect(isReadOnly(a), `${s.Sid}: ${a} on *`).to.equal(true);
                }
            }
        });

        it("scopes launches, tagging and deletion to this cluster's Karpenter resources", () => {
            const owned = `kubernetes.io/cluster/${cluster}`;
            expect(statementBySid("AllowScopedEC2LaunchTemplateAccessActions").Condition).to.deep.equal({
                StringEquals: { [`aws:ResourceTag/${owned}`]: "owned" },
                StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" },
            });
            expect(statementBySid("AllowScopedEC2InstanceActionsWithTags").Condition.StringEquals).to.deep.equal({
                [`aws:RequestTag/${owned}`]: "owned",
                "aws:RequestTag/eks:eks-cluster-name": cluster,
            });
            expect(statementBySid("AllowScopedResourceCreationTagging").Condition.StringEquals["ec2:CreateAction"]).to.deep.equal(["RunInstances", "CreateFleet", "CreateLaunchTemplate"]);
            expect(statementBySid("AllowScopedResourceTagging").Condition["ForAllValues:StringEquals"]).to.deep.equal({ "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"] });
            const deletion = statementBySid("AllowScopedDeletion");
            expect(deletion.Resource).to.deep.equal([`arn:aws:ec2:${REGION}:*:instance/*`, `arn:aws:ec2:${REGION}:*:launch-template/*`]);
            expect(deletion.Condition.StringEquals).to.deep.equal({ [`aws:ResourceTag/${owned}`]: "owned" });
            expect(statementBySid("AllowScopedInstanceProfileCreationActions").Condition.StringEquals["aws:RequestTag/topology.kubernetes.io/region"]).to.equal(REGION);
            expect(statementBySid("AllowRegionalReadActions").Condition).to.deep.equal({ StringEquals: { "aws:RequestedRegion": REGION } });
        });

        it("lets the controller pass only the node role, only to EC2", () => {
            expect(statementBySid("AllowPassingInstanceRole")).to.deep.equal({
                Sid: "AllowPassingInstanceRole",
                Effect: "Allow",
                Resource: `arn:aws:iam::${ACCOUNT}:role/eks-worker-role`,
                Action: "iam:PassRole",
                Condition: { StringEquals: { "iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"] } },
            });
        });

        it("scopes SQS to the interruption queue and DescribeCluster to the cluster", () => {
            expect(statementBySid("AllowInterruptionQueueActions").Resource).to.equal(`arn:aws:sqs:${REGION}:${ACCOUNT}:${cluster}-karpenter`);
            const clusterArn = `arn:aws:eks:${REGION}:${ACCOUNT}:cluster/${cluster}`;
            expect(statementBySid("AllowAPIServerEndpointDiscovery").Resource).to.equal(clusterArn);
            expect(statementBySid("AllowZonalShiftStatusReadOnly").Condition.StringEquals["arc-zonal-shift:ResourceIdentifier"]).to.equal(clusterArn);
            expect(statementBySid("AllowSSMReadActions").Resource).to.equal(`arn:aws:ssm:${REGION}::parameter/aws/service/*`);
        });

        it("attaches every policy to the controller role, which trusts EKS Pod Identity", () => {
            const role = r.get("aws:iam/role:Role", "karpenter-controller-role");
            expect(role.inputs.name).to.equal(`${cluster}-karpenter`);
            expect(parseJson(role.inputs.assumeRolePolicy).Statement).to.deep.equal([
                { Effect: "Allow", Principal: { Service: "pods.eks.amazonaws.com" }, Action: ["sts:AssumeRole", "sts:TagSession"] },
            ]);
            const attachments = r.byType("aws:iam/rolePolicyAttachment:RolePolicyAttachment");
            expect(attachments.map((a) => a.inputs.policyArn)).to.have.members(policies().map((p) => `arn:aws:iam::${ACCOUNT}:policy/${p.name}`));
            for (const a of attachments) expect(a.inputs.role).to.equal(`${cluster}-karpenter`);
            const association = r.get("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity");
            expect(association.inputs).to.include({ clusterName: cluster, namespace: "karpenter", serviceAccount: "karpenter", roleArn: `arn:aws:iam::${ACCOUNT}:role/${cluster}-karpenter` });
        });

        it("reuses the existing node role without creating one or an access entry", () => {
            // The spot interruption drill's roles (its own component) aside.
            expect(r.byType("aws:iam/role:Role").map((x) => x.name).filter((n) => !n.startsWith("spot-interruption-drill-"))).to.deep.equal(["karpenter-controller-role"]);
            expect(r.byType("aws:eks/accessEntry:AccessEntry")).to.have.length(0);
            expect(r.byType("aws:iam/serviceLinkedRole:ServiceLinkedRole")).to.have.length(0);
        });

        it("creates an encrypted interruption queue that only EventBridge may feed, over TLS only", () => {
            const queue = r.get("aws:sqs/queue:Queue", "karpenter-interruption-queue");
            expect(queue.inputs).to.include({ name: `${cluster}-karpenter`, messageRetentionSeconds: 300, sqsManagedSseEnabled: true });
            const arn = `arn:aws:sqs:${REGION}:${ACCOUNT}:${cluster}-karpenter`;
            const policy = r.get("aws:sqs/queuePolicy:QueuePolicy", "karpenter-interruption-queue-policy");
            expect(policy.inputs.queueUrl).to.equal(`https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${cluster}-karpenter`);
            expect(parseJson(policy.inputs.policy).Statement).to.deep.equal([
                { Effect: "Allow", Principal: { Service: ["events.amazonaws.com", "sqs.amazonaws.com"] }, Action: "sqs:SendMessage", Resource: arn },
                { Sid: "DenyHTTP", Effect: "Deny", Action: "sqs:*", Resource: arn, Condition: { Bool: { "aws:SecureTransport": false } }, Principal: "*" },
            ]);
        });

        it("routes the five reference EventBridge events to the queue, under per-cluster names", () => {
            const rules = r.byType("aws:cloudwatch/eventRule:EventRule").map((x) => ({ name: x.inputs.name, pattern: parseJson(x.inputs.eventPattern) }));
            expect(rules).to.deep.equal([
                { name: `${cluster}-health-event`, pattern: { source: ["aws.health"], "detail-type": ["AWS Health Event"] } },
                { name: `${cluster}-spot-interruption`, pattern: { source: ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"] } },
                { name: `${cluster}-rebalance`, pattern: { source: ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"] } },
                { name: `${cluster}-state-change`, pattern: { source: ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"] } },
                { name: `${cluster}-odcr-interruption`, pattern: { source: ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"] } },
            ]);
            const targets = r.byType("aws:cloudwatch/eventTarget:EventTarget");
            expect(targets.map((t) => t.inputs.rule)).to.deep.equal(rules.map((x) => x.name));
            for (const t of targets) expect(t.inputs).to.include({ arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${cluster}-karpenter`, targetId: "KarpenterInterruptionQueueTarget" });
        });

        it("installs the CRD chart and the controller chart from the official OCI repository, same version", () => {
            const crds = r.get("kubernetes:helm.sh/v3:Release", "karpenter-crds");
            expect(crds.inputs).to.include({ name: "karpenter-crd", chart: "oci://public.ecr.aws/karpenter/karpenter-crd", version: "1.14.1", namespace: "karpenter", createNamespace: true });
            const chart = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart");
            expect(chart.inputs).to.include({ name: "karpenter", chart: "oci://public.ecr.aws/karpenter/karpenter", version: "1.14.1", namespace: "karpenter", skipCrds: true, createNamespace: true });
        });

        // pulumi-kubernetes v4.32.0 provider/pkg/provider/helm_release.go:608-623 (install) and :733-748 (upgrade) hand
        // these inputs to Helm v3.20.2; the pinned 4.34.2 SDK's helm/v3/release.d.ts declares each of them.
        it("controller release: atomic and cleanupOnFail (a failed upgrade rolls back), 10 revisions, the stack's mark, ready within lifecycle.controllerReadyTimeout", () => {
            const { values, ...inputs } = r.get(RELEASE, "karpenter-chart").inputs;
            expect(values).to.be.an("object");
            expect(inputs).to.deep.equal({
                name: "karpenter",
                chart: "oci://public.ecr.aws/karpenter/karpenter",
                version: "1.14.1",
                namespace: "karpenter",
                createNamespace: true,
                skipCrds: true,
                timeout: 600,
                atomic: true,
                cleanupOnFail: true,
                maxHistory: RELEASE_HISTORY,
                description: `managed by Pulumi stack notify-karpenter/${stack}`,
                compat: "true",
            });
            expect(inputs).not.to.have.property("skipAwait");
        });

        it("CRD release: 10 revisions and the stack's mark, but neither atomic nor cleanupOnFail (a rollback would downgrade the CRDs)", () => {
            expect(r.get(RELEASE, "karpenter-crds").inputs).to.deep.equal({
                name: "karpenter-crd",
                chart: "oci://public.ecr.aws/karpenter/karpenter-crd",
                version: "1.14.1",
                namespace: "karpenter",
                createNamespace: true,
                maxHistory: RELEASE_HISTORY,
                description: releaseDescription("notify-karpenter", stack),
                compat: "true",
            });
        });

        it("sets the Helm values GC Notify needs, each under a key the chart reads", () => {
            const values = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").inputs.values;
            expect(values.settings).to.deep.equal({
                clusterName: cluster,
                clusterEndpoint: PLACEHOLDERS.clusterEndpoint(REGION),
                interruptionQueue: `${cluster}-karpenter`,
                batchIdleDuration: "1s",
                batchMaxDuration: "10s",
                featureGates: { spotToSpotConsolidation: true },
            });
            expect(values.replicas).to.equal(2);
            expect(values.podDisruptionBudget).to.deep.equal({ name: "karpenter", maxUnavailable: 1 });
            expect(values.priorityClassName).to.equal("system-cluster-critical");
            expect(values.controller.resources.requests).to.deep.equal(values.controller.resources.limits);
            expect(values.nodeSelector).to.deep.equal({ "kubernetes.io/os": "linux", "eks.amazonaws.com/capacityType": "ON_DEMAND" });
            expect(values.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).to.deep.equal([
                { matchExpressions: [{ key: "karpenter.sh/nodepool", operator: "DoesNotExist" }] },
            ]);
            // The chart's own rule (its values.yaml), kept explicitly: two replicas never share a node.
            expect(values.affinity.podAntiAffinity).to.deep.equal({ requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "kubernetes.io/hostname" }] });
            // controller.logLevel: the log alarms and the log heartbeat read Karpenter's info lines.
            expect(values.logLevel).to.equal("info");
            expect(values.serviceAccount).to.deep.equal({ create: true, name: "karpenter", annotations: {} });
            for (const p of valuePaths(values)) expect(CHART_VALUE_KEYS, `values key ${p}`).to.include(p);
        });

        it("orders CRDs, then credentials and the queue, then the controller", () => {
            const chart = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart");
            const urnOf = (type: string, name: string) => r.get(type, name).urn;
            expect(chart.dependencies).to.include.members([
                urnOf("kubernetes:helm.sh/v3:Release", "karpenter-crds"),
                urnOf("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity"),
                urnOf("aws:sqs/queue:Queue", "karpenter-interruption-queue"),
                ...r.byType("aws:iam/rolePolicyAttachment:RolePolicyAttachment").map((a) => a.urn),
                ...r.byType("aws:cloudwatch/eventTarget:EventTarget").map((t) => t.urn),
            ]);
        });

        it("exports the queue, the roles, the namespace and the service account", () => {
            expect(Object.keys(r.outputs)).to.include.members([
                "interruptionQueueName", "interruptionQueueUrl", "interruptionQueueArn", "controllerRoleArn", "nodeRoleArn", "karpenterNamespace", "karpenterServiceAccount",
            ]);
        });
    });
}

describe("KarpenterController options", () => {
    it("creates a node role with the reference managed policies and an EC2_LINUX access entry when none is named", async () => {
        const r = await buildStack("staging", {
            controller: { existingNodeRoleName: undefined, nodeRolePolicyArns: ["arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"] },
        });
        const cluster = clusterOf("staging");
        const role = r.get("aws:iam/role:Role", "karpenter-node-role");
        expect(role.inputs.name).to.equal(`${cluster}-karpenter-node`);
        expect(parseJson(role.inputs.assumeRolePolicy).Statement).to.deep.equal([
            { Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: ["sts:AssumeRole"] },
        ]);
        const nodePolicies = r.byType("aws:iam/rolePolicyAttachment:RolePolicyAttachment").filter((a) => a.inputs.role === `${cluster}-karpenter-node`);
        expect(nodePolicies.map((a) => a.inputs.policyArn)).to.have.members([
            "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
            "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
            "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
            "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
            "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy",
        ]);
        const entry = r.get("aws:eks/accessEntry:AccessEntry", "karpenter-node-access-entry");
        expect(entry.inputs).to.include({ clusterName: cluster, principalArn: `arn:aws:iam::${ACCOUNT}:role/${cluster}-karpenter-node`, type: "EC2_LINUX" });
        const passRole = r.byType("aws:iam/policy:Policy").map((p) => parseJson(p.inputs.policy)).flatMap((d) => d.Statement).find((s: any) => s.Sid === "AllowPassingInstanceRole");
        expect(passRole.Resource).to.equal(`arn:aws:iam::${ACCOUNT}:role/${cluster}-karpenter-node`);
        expect(r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").dependencies).to.include(entry.urn);
    });

    it("trusts the cluster's OIDC provider for the service account with IRSA, and annotates it", async () => {
        const r = await buildStack("production", { controller: { identity: "irsa", namespace: "kube-system" } });
        const issuer = PLACEHOLDERS.oidcIssuer(REGION).replace("https://", "");
        const trust = parseJson(r.get("aws:iam/role:Role", "karpenter-controller-role").inputs.assumeRolePolicy);
        expect(trust.Statement).to.deep.equal([
            {
                Effect: "Allow",
                Principal: { Federated: `arn:aws:iam::${ACCOUNT}:oidc-provider/${issuer}` },
                Action: "sts:AssumeRoleWithWebIdentity",
                Condition: { StringEquals: { [`${issuer}:sub`]: "system:serviceaccount:kube-system:karpenter", [`${issuer}:aud`]: "sts.amazonaws.com" } },
            },
        ]);
        expect(r.byType("aws:eks/podIdentityAssociation:PodIdentityAssociation")).to.have.length(0);
        const values = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").inputs.values;
        expect(values.serviceAccount.annotations).to.deep.equal({ "eks.amazonaws.com/role-arn": `arn:aws:iam::${ACCOUNT}:role/${clusterOf("production")}-karpenter` });
    });

    it("waits lifecycle.controllerReadyTimeout for the atomic controller release, whatever it is set to (install, upgrade and rollback alike)", async () => {
        const r = await buildStack("staging", { lifecycle: { controllerReadyTimeout: "25m" } });
        expect(r.get(RELEASE, "karpenter-chart").inputs).to.include({ timeout: 1500, atomic: true, cleanupOnFail: true });
        expect(RELEASE_HISTORY).to.equal(10);
    });

    it("creates the spot service-linked role only when asked", async () => {
        const r = await buildStack("staging", { controller: { createSpotServiceLinkedRole: true } });
        expect(r.get("aws:iam/serviceLinkedRole:ServiceLinkedRole", "karpenter-spot-service-linked-role").inputs.awsServiceName).to.equal("spot.amazonaws.com");
    });

    it("uses the name prefix for every fixed AWS name when one is set", async () => {
        const r = await buildStack("staging", { controller: { namePrefix: "notify-staging" } });
        const fixedNameTypes = ["aws:iam/role:Role", "aws:iam/policy:Policy", "aws:sqs/queue:Queue", "aws:cloudwatch/eventRule:EventRule"];
        const names = fixedNameTypes.flatMap((t) => r.byType(t).map((x) => x.inputs.name as string));
        // 13 of the controller's, and the spot interruption drill's two roles.
        expect(names).to.have.length(15);
        for (const n of names) expect(n).to.match(/^notify-staging-/);
    });
});

describe("the EKS Pod Identity agent on an existing cluster", () => {
    // A data source that finds nothing fails `pulumi preview` with AWS's error; under mocks a failing call hangs
    // instead (pulumi-conventions P5), so the tests assert the lookup itself and what waits for it.
    const build = (identity: string) =>
        runOffline("staging", () => createStack(loadConfig()), { overrides: patchSections("staging", { controller: { identity } }) });
    const agentLookups = (r: Awaited<ReturnType<typeof build>>) => r.calls.filter((c) => c.token === "aws:eks/getAddon:getAddon").map((c) => c.inputs);

    it("is looked up for a controller on Pod Identity, and the association's role waits for it", async () => {
        const r = await build("pod-identity");
        expect(agentLookups(r)).to.deep.equal([{ clusterName: "notification-canada-ca-staging-eks-cluster", addonName: "eks-pod-identity-agent" }]);
        expect(r.get("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity").inputs.roleArn).to.match(/:role\/notification-canada-ca-staging-eks-cluster-karpenter$/);
    });

    it("is not needed by a controller on IRSA", async () => {
        const r = await build("irsa");
        expect(agentLookups(r)).to.deep.equal([]);
        expect(r.byType("aws:eks/podIdentityAssociation:PodIdentityAssociation")).to.have.length(0);
    });
});
