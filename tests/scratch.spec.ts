import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { expect } from "chai";
import { plan } from "../plan/cli.ts";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks.js";
import { specialResourceSig, specialSigKey, unknownValue } from "@pulumi/pulumi/runtime/rpc.js";
import * as settings from "@pulumi/pulumi/runtime/settings.js";
import { type InvokeAnswer, PLACEHOLDERS, type RecordedResource, runOffline } from "../plan/offlineRuntime.ts";
import { PROJECT } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { createStack } from "../stacks/createStack.ts";
import { clusterFor } from "../stacks/cluster.ts";
import { loadConfig } from "../stacks/programConfig.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { buildStack, configErrorOf, customResources, errorOf, parseJson, patchSections, rawConfig, section, stackConfig } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";

// Internal to the SDK (runtime/settings.js), as plan/offlineRuntime.ts uses it: resolves once every registration is done.
const { setMockOptions, waitForRPCs } = settings as typeof settings & { waitForRPCs(): Promise<void> };

const CLUSTER = "notify-karpenter-scratch";
const REGION = "ca-central-1";
const ZONES = ["ca-central-1a", "ca-central-1b", "ca-central-1d"];
const PRIVATE_SUBNETS = PLACEHOLDERS.subnetIds("private", 3);
const PUBLIC_SUBNETS = PLACEHOLDERS.subnetIds("public", 3);
const DISCOVERY = { "karpenter.sh/discovery": CLUSTER };
const providerOf = (pkg: string) => new RegExp(`::pulumi:providers:${pkg}::${pkg}::`);

describe("scratch stack (cluster.mode: create)", () => {
    let r: Awaited<ReturnType<typeof buildStack>>;
    before(async () => {
        r = await buildStack("scratch");
    });
    const created = () => r.resources.filter((x) => x.parent.includes("CreatedCluster"));

    it("creates a VPC in the three zones, with one NAT gateway and subnets tagged for Karpenter and load balancers", () => {
        const vpc = r.get("awsx:ec2:Vpc", "cluster-vpc");
        expect(vpc.inputs).to.deep.equal({
            cidrBlock: "10.0.0.0/16",
            availabilityZoneNames: ZONES,
            natGateways: { strategy: "Single" },
            subnetStrategy: "Auto",
            subnetSpecs: [
                { type: "Private", tags: { ...DISCOVERY, "kubernetes.io/role/internal-elb": "1" } },
                { type: "Public", tags: { "kubernetes.io/role/elb": "1" } },
            ],
            enableDnsHostnames: true,
            tags: { Name: CLUSTER },
        });
        // With default providers disabled, the awsx plugin needs its own provider and the stack's aws one.
        expect(vpc.provider).to.match(providerOf("awsx"));
        expect(vpc.providers.aws).to.match(providerOf("aws"));
    });

    it("creates the EKS cluster in the VPC: API authentication, pinned version, no default node group, standard support", () => {
        const cluster = r.get("eks:index:Cluster", "cluster-eks");
        expect(cluster.inputs).to.deep.equal({
            name: CLUSTER,
            version: "1.34",
            vpcId: PLACEHOLDERS.vpcId,
            privateSubnetIds: PRIVATE_SUBNETS,
            publicSubnetIds: PUBLIC_SUBNETS,
            authenticationMode: "API",
            skipDefaultNodeGroup: true,
            skipDefaultSecurityGroups: true,
            createOidcProvider: true,
            upgradePolicy: { supportType: "STANDARD" },
        });
        expect(cluster.provider).to.match(providerOf("eks"));
        expect(cluster.providers.aws).to.match(providerOf("aws"));
    });

    it("installs the Pod Identity agent and tags the cluster security group for Karpenter's discovery", () => {
        expect(r.get("aws:eks/addon:Addon", "cluster-pod-identity-agent").inputs).to.deep.equal({ clusterName: CLUSTER, addonName: "eks-pod-identity-agent" });
        expect(r.get("aws:ec2/tag:Tag", "cluster-security-group-discovery-tag").inputs).to.deep.equal({
            resourceId: PLACEHOLDERS.clusterSecurityGroupId,
            key: "karpenter.sh/discovery",
            value: CLUSTER,
        });
    });

    it("runs the stable node group on demand in the private subnets, after its role has the four node policies", () => {
        const role = r.get("aws:iam/role:Role", "cluster-stable-node-role");
        expect(parseJson(role.inputs.assumeRolePolicy).Statement).to.deep.equal([{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: ["sts:AssumeRole"] }]);
        const attachments = r.byType("aws:iam/rolePolicyAttachment:RolePolicyAttachment").filter((a) => a.inputs.role === "cluster-stable-node-role");
        expect(attachments.map((a) => a.inputs.policyArn)).to.have.members(
            ["AmazonEKS_CNI_Policy", "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"].map((p) => `arn:aws:iam::aws:policy/${p}`),
        );
        const nodeGroup = r.get("aws:eks/nodeGroup:NodeGroup", "cluster-stable-nodes");
        expect(nodeGroup.inputs).to.deep.equal({
            clusterName: CLUSTER,
            nodeGroupName: "stable",
            nodeRoleArn: `arn:aws:iam::${PLACEHOLDERS.accountId}:role/cluster-stable-node-role`,
            subnetIds: PRIVATE_SUBNETS,
            capacityType: "ON_DEMAND",
            instanceTypes: ["m7i.large"],
            amiType: "AL2023_x86_64_STANDARD",
            diskSize: 50,
            scalingConfig: { minSize: 2, desiredSize: 2, maxSize: 3 },
            version: "1.34",
        });
        expect(nodeGroup.dependencies).to.include.members(attachments.map((a) => a.urn));
        for (const x of customResources(created())) expect(x.provider, x.name).to.match(providerOf("aws"));
    });

    it("installs nothing on the cluster before its stable nodes, Pod Identity agent and discovery tag exist", () => {
        // Through the provider's dependencies, not its kubeconfig (see CreatedCluster).
        const k8s = r.get("pulumi:providers:kubernetes", "kubernetes");
        const kube = parseJson(k8s.inputs.kubeconfig);
        expect(kube.clusters[0].cluster).to.deep.equal({ server: PLACEHOLDERS.clusterEndpoint(REGION), "certificate-authority-data": PLACEHOLDERS.certificateAuthority });
        expect(kube.users[0].user.exec.args).to.deep.equal(["eks", "get-token", "--cluster-name", CLUSTER, "--region", REGION, "--output", "json"]);
        const urnOf = (type: string, name: string) => r.get(type, name).urn;
        expect(k8s.dependencies).to.include.members([
            urnOf("aws:eks/nodeGroup:NodeGroup", "cluster-stable-nodes"),
            urnOf("aws:eks/addon:Addon", "cluster-pod-identity-agent"),
            urnOf("aws:ec2/tag:Tag", "cluster-security-group-discovery-tag"),
        ]);
    });

    it("builds the providers' kubeconfig and Karpenter's endpoint from a lookup of the created cluster by name, not from eks.Cluster's outputs", async () => {
        // The lookup answers an endpoint and CA of its own, so the test sees which of the two each value came from.
        const LOOKED_UP = { endpoint: "https://LOOKEDUP0000000000000000000000000.gr7.ca-central-1.eks.amazonaws.com", ca: "TE9PS0VEIFVQIENB" };
        const lookup: InvokeAnswer = (i, region) => ({
            name: i.name,
            arn: `arn:aws:eks:${region}:${PLACEHOLDERS.accountId}:cluster/${i.name}`,
            endpoint: LOOKED_UP.endpoint,
            certificateAuthorities: [{ data: LOOKED_UP.ca }],
            identities: [{ oidcs: [{ issuer: PLACEHOLDERS.oidcIssuer(region) }] }],
            vpcConfig: { clusterSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId },
            version: "1.34",
        });
        const run = await runOffline("scratch", () => createStack(loadConfig()), { invokes: { "aws:eks/getCluster:getCluster": lookup } });
        expect(run.calls.filter((c) => c.token === "aws:eks/getCluster:getCluster").map((c) => c.inputs)).to.deep.equal([{ name: CLUSTER }]);
        for (const name of ["kubernetes", "kubernetes-adopt-priority-classes"]) {
            const kube = parseJson(run.get("pulumi:providers:kubernetes", name).inputs.kubeconfig);
            expect(kube.clusters, name).to.deep.equal([{ name: CLUSTER, cluster: { server: LOOKED_UP.endpoint, "certificate-authority-data": LOOKED_UP.ca } }]);
        }
        expect(run.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").inputs.values.settings.clusterEndpoint).to.equal(LOOKED_UP.endpoint);
    });

    it("points Karpenter at the created cluster", () => {
        const values = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").inputs.values;
        expect(values.settings).to.include({ clusterName: CLUSTER, clusterEndpoint: PLACEHOLDERS.clusterEndpoint(REGION) });
        expect(values.nodeSelector).to.deep.equal({ "kubernetes.io/os": "linux", "eks.amazonaws.com/capacityType": "ON_DEMAND" });
        const clusterUrn = r.get("eks:index:Cluster", "cluster-eks").urn;
        for (const [type, name] of [
            ["aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity"],
            ["aws:eks/accessEntry:AccessEntry", "karpenter-node-access-entry"],
        ]) {
            expect(r.get(type, name).inputs.clusterName).to.equal(CLUSTER);
            expect(r.get(type, name).dependencies, name).to.include(clusterUrn);
        }
        const nodeClass = r.get("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "celery-burst-node-class").inputs.spec;
        expect(nodeClass.amiSelectorTerms).to.deep.equal([{ alias: "al2023@v20251117" }]);
        expect(nodeClass.subnetSelectorTerms).to.deep.equal([{ tags: DISCOVERY }]);
        expect(nodeClass.securityGroupSelectorTerms).to.deep.equal([{ tags: DISCOVERY }]);
    });

    it("creates the log group that the Karpenter log filters read, since nothing ships logs there yet", () => {
        const logGroup = r.get("aws:cloudwatch/logGroup:LogGroup", "karpenter-alarms-log-group");
        expect(logGroup.inputs).to.deep.equal({ name: `/aws/containerinsights/${CLUSTER}/application`, retentionInDays: 7 });
        const filters = r.byType("aws:cloudwatch/logMetricFilter:LogMetricFilter");
        expect(filters).to.have.length(4);
        for (const filter of filters) {
            expect(filter.inputs.logGroupName).to.equal(logGroup.inputs.name);
            expect(filter.dependencies).to.include(logGroup.urn);
        }
    });

    it("installs the same Karpenter, node pool and alarm resources as staging given the same options", async () => {
        // Staging reuses GC Notify's node role, has its spot role and log group already, and places GC Notify's pods.
        const staging = await buildStack("staging", {
            controller: { existingNodeRoleName: undefined, createSpotServiceLinkedRole: true },
            alarms: { createLogGroup: true, topicNames: undefined, subscriptions: section("scratch", "alarms").subscriptions },
            placement: section("scratch", "placement"),
        });
        const installed = (resources: RecordedResource[]) =>
            customResources(resources)
                .filter((x) => !x.parent.includes("CreatedCluster"))
                .map((x) => `${x.type}::${x.name}`)
                .sort();
        expect(installed(r.resources)).to.deep.equal(installed(staging.resources));
    });

    it("shows the VPC, the cluster and its stable node group in the offline plan", async () => {
        const result = await plan(["--stack", "scratch", "--out", tempDir("plan-"), "--verbose"]);
        expect(result.exitCode, result.output).to.equal(0);
        expect(result.output).to.include("1  awsx:ec2:Vpc (component; its contents are not planned offline)");
        expect(result.output).to.include("1  eks:index:Cluster (component; its contents are not planned offline)");
        expect(result.output).to.include("VPC 10.0.0.0/16 in ca-central-1a ca-central-1b ca-central-1d, NAT Single");
        expect(result.output).to.include(`EKS cluster ${CLUSTER}: Kubernetes 1.34, API authentication, no default node group, support STANDARD`);
        expect(result.output).to.include("EKS node group stable: ON_DEMAND m7i.large, 2-3 nodes (desired 2), AL2023_x86_64_STANDARD, 50 GiB, Kubernetes 1.34");
        expect(result.output).to.include("helm karpenter: oci://public.ecr.aws/karpenter/karpenter 1.14.1 in namespace karpenter; clusterName=notify-karpenter-scratch");
    });
});

describe("cluster facts in both modes", () => {
    /** The facts `clusterFor` gives for a stack, every output resolved, and the names of the resources in `ready`. */
    async function factsOf(stack: string): Promise<Record<string, any>> {
        const run = await runOffline(stack, () => clusterFor(loadConfig().cluster, new aws.Provider("aws", { region: REGION })));
        const { ready, podIdentityAgentVersion, ...rest } = run.outputs;
        const agent = await new Promise((resolve) => pulumi.output(podIdentityAgentVersion()).apply(resolve));
        const entries = await Promise.all(Object.entries(rest).map(async ([k, v]) => [k, await new Promise((resolve) => pulumi.output(v).apply(resolve))]));
        const readyNames = await Promise.all(ready.map((r) => new Promise((resolve) => r.urn.apply((urn) => resolve(urn.split("::").pop())))));
        return { ...Object.fromEntries(entries), podIdentityAgentVersion: agent, ready: readyNames };
    }

    it("gives components the same facts whether the cluster is looked up or created", async () => {
        for (const [stack, name, ready] of [
            ["staging", "notification-canada-ca-staging-eks-cluster", []],
            ["scratch", CLUSTER, ["cluster-stable-nodes", "cluster-pod-identity-agent", "cluster-security-group-discovery-tag"]],
        ] as const) {
            const { kubeconfig, ...facts } = await factsOf(stack);
            expect(facts, stack).to.deep.equal({
                name,
                arn: `arn:aws:eks:${REGION}:${PLACEHOLDERS.accountId}:cluster/${name}`,
                endpoint: PLACEHOLDERS.clusterEndpoint(REGION),
                certificateAuthority: PLACEHOLDERS.certificateAuthority,
                oidcIssuerUrl: PLACEHOLDERS.oidcIssuer(REGION),
                nodeSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId,
                partition: "aws",
                accountId: PLACEHOLDERS.accountId,
                region: REGION,
                kubernetesVersion: PLACEHOLDERS.kubernetesVersion,
                podIdentityAgentVersion: PLACEHOLDERS.podIdentityAgentVersion,
                ready,
            });
            expect(parseJson(kubeconfig)["current-context"], stack).to.equal(name);
        }
    });
});

describe("cluster.mode config", () => {
    const scratchCreate = section("scratch", "cluster").create;
    /** Scratch's cluster.create with some keys changed. */
    const createWith = (patch: Record<string, unknown>, nodeGroup: Record<string, unknown> = {}) => ({
        create: { ...scratchCreate, ...patch, nodeGroup: { ...scratchCreate.nodeGroup, ...nodeGroup } },
    });

    it("staging and production attach to existing clusters; scratch creates its own with the documented defaults", () => {
        expect(stackConfig("staging").cluster.mode).to.equal("existing");
        expect(stackConfig("production").cluster.mode).to.equal("existing");
        const raw = rawConfig("scratch", "cluster", createWith({ vpcCidr: undefined, natGateways: undefined }, { diskSize: undefined }));
        const create = parseStackConfig("scratch", raw).cluster.create!;
        expect(create).to.deep.include({ vpcCidr: "10.0.0.0/16", natGateways: "single" });
        expect(create.nodeGroup.diskSize).to.equal(50);
    });

    const badCases: [string, string, string, Record<string, unknown>, RegExp][] = [
        ["a missing mode", "staging", "cluster", { mode: undefined }, /^staging: notify-karpenter:cluster\.mode is required: it must be one of "existing", "create"$/m],
        ["create mode without cluster.create", "scratch", "cluster", { create: undefined }, /^scratch: notify-karpenter:cluster\.create is required when mode is "create": it must be an object with the keys kubernetesVersion, vpcCidr, zones, natGateways, nodeGroup$/m],
        ["cluster.create in existing mode", "staging", "cluster", { create: scratchCreate }, /^staging: notify-karpenter:cluster\.create must be absent when mode is "existing": the program looks the cluster up and creates nothing$/m],
        ["a zone of another region", "scratch", "cluster", createWith({ zones: ["ca-central-1a", "us-east-1b", "ca-central-1d"] }), /^scratch: notify-karpenter:cluster\.create\.zones\[1\] must be one of ca-central-1a, ca-central-1b, ca-central-1d: us-east-1b is not in the cluster's region ca-central-1 \(table of 2026-11 in stacks\/awsRegions\.ts; preflight checks live\)$/m],
        ["an unquoted Kubernetes version", "scratch", "cluster", createWith({ kubernetesVersion: 1.3 }), /notify-karpenter:cluster\.create\.kubernetesVersion must be a Kubernetes minor version as a string, such as "1\.34" \(got 1\.3\)/],
        ["a single zone", "scratch", "cluster", createWith({ zones: ["ca-central-1a"] }), /notify-karpenter:cluster\.create\.zones must be a list of 2 to 6 distinct items, each an availability zone/],
        ["a VPC too small", "scratch", "cluster", createWith({ vpcCidr: "10.0.0.0/24" }), /notify-karpenter:cluster\.create\.vpcCidr must be an IPv4 CIDR block from \/16 to \/20 such as 10\.0\.0\.0\/16 \(got "10\.0\.0\.0\/24"\)/],
        ["an unknown NAT strategy", "scratch", "cluster", createWith({ natGateways: "none" }), /notify-karpenter:cluster\.create\.natGateways must be one of "single", "one-per-zone" \(got "none"\)/],
        ["a desired size above the maximum", "scratch", "cluster", createWith({}, { desiredSize: 4 }), /notify-karpenter:cluster\.create\.nodeGroup\.desiredSize must be from minSize \(2\) to maxSize \(3\) \(got 4\)/],
        ["fewer stable nodes than controller replicas", "scratch", "cluster", createWith({}, { minSize: 1, desiredSize: 1 }), /notify-karpenter:cluster\.create\.nodeGroup\.minSize must be at least notify-karpenter:controller\.replicas \(2\): each controller replica needs a stable node of its own \(got 1\)/],
        ["a stable node label the created nodes lack", "scratch", "cluster", { stableNodeSelector: { "node-role": "stable" } }, /notify-karpenter:cluster\.stableNodeSelector must select the created node group, whose nodes have the labels eks\.amazonaws\.com\/capacityType: ON_DEMAND, eks\.amazonaws\.com\/nodegroup: stable/],
        ["a node pool zone outside the VPC", "scratch", "nodePool", { zones: ["ca-central-1a", "ca-central-1b", "ca-central-1c"] }, /^scratch: notify-karpenter:nodePool\.zones\[2\] must be one of the VPC's zones in notify-karpenter:cluster\.create\.zones \(ca-central-1a, ca-central-1b, ca-central-1d\), or Karpenter finds no subnet there \(got "ca-central-1c"\)$/m],
    ];
    for (const [what, stack, key, patch, expected] of badCases) {
        it(`rejects ${what}, naming the key`, () => {
            expect(errorOf(() => parseStackConfig(stack, rawConfig(stack, key, patch)))).to.match(expected);
        });
    }

    it("fails through Pulumi config before any resource exists", async () => {
        const msg = await configErrorOf("scratch", patchSections("scratch", { nodePool: { zones: ["ca-central-1a", "ca-central-1c"] } }));
        expect(msg).to.match(/^scratch: notify-karpenter:nodePool\.zones\[1\] must be one of the VPC's zones/);
    });
});

/**
 * The scratch stack as `pulumi preview` sees it after the cluster exists. pulumi-eks returns `eksCluster` as a
 * reference to an aws.eks.Cluster, which the SDK rehydrates through the engine's getResource (pulumi v3.259.0
 * pkg/resource/deploy/builtins.go:442-464): the ID is the one the engine holds for the new state (an update keeps the
 * old one even in a preview, step.go:961-963; a create or replacement has none yet), and outputs the preview cannot
 * know (the endpoint and CA, say) are unknown. Returns the inputs every resource was registered with; an input the
 * preview does not know is `pulumi.unknown`.
 */
async function previewScratch(eksCluster: { id?: string; endpoint?: string; certificateAuthority?: string }): Promise<Map<string, Record<string, any>>> {
    const registered = new Map<string, Record<string, any>>();
    const ref = `urn:pulumi:scratch::${PROJECT}::eks:index:Cluster$aws:eks/cluster:Cluster::cluster-eks-eksCluster`;
    let monitor: MockMonitor;
    const mocks: pulumi.runtime.Mocks = {
        newResource: (a) => {
            registered.set(`${a.type}::${a.name}`, a.inputs);
            if (a.type !== "eks:index:Cluster") return { id: undefined, state: a.inputs };
            const state = {
                name: a.inputs.name,
                arn: `arn:aws:eks:${REGION}:${PLACEHOLDERS.accountId}:cluster/${a.inputs.name}`,
                endpoint: eksCluster.endpoint ?? unknownValue,
                certificateAuthority: eksCluster.certificateAuthority ? { data: eksCluster.certificateAuthority } : unknownValue,
                identities: unknownValue,
                vpcConfig: unknownValue,
            };
            (monitor as any).resources.set(ref, { urn: ref, id: eksCluster.id ?? null, state });
            return { id: undefined, state: { eksCluster: { [specialSigKey]: specialResourceSig, urn: ref } } };
        },
        // What DescribeCluster answers for the live cluster, as the offline plan's lookup does.
        call: (a) => {
            if (a.token !== "aws:eks/getCluster:getCluster") throw new Error(`unexpected lookup ${a.token}`);
            return {
                name: a.inputs.name,
                arn: `arn:aws:eks:${REGION}:${PLACEHOLDERS.accountId}:cluster/${a.inputs.name}`,
                endpoint: PLACEHOLDERS.clusterEndpoint(REGION),
                certificateAuthorities: [{ data: PLACEHOLDERS.certificateAuthority }],
                identities: [{ oidcs: [{ issuer: PLACEHOLDERS.oidcIssuer(REGION) }] }],
                vpcConfig: { clusterSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId },
                version: "1.34",
            };
        },
    };
    await pulumi.runtime.setMocks(mocks, PROJECT, "scratch", true);
    monitor = new MockMonitor(mocks);
    setMockOptions(monitor, PROJECT, "scratch", true);
    pulumi.runtime.setAllConfig(readStackConfig("scratch"), []);
    // As runOffline does: no source-mapped stack trace for every promise the SDK makes.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
        createStack(loadConfig());
        await waitForRPCs();
    } finally {
        Error.stackTraceLimit = stackTraceLimit;
    }
    return registered;
}

describe("scratch previews once the cluster exists (engine-review R7)", () => {
    const providers = ["kubernetes", "kubernetes-adopt-priority-classes"];
    const kubeconfigOf = (registered: Map<string, Record<string, any>>, provider: string) => registered.get(`pulumi:providers:kubernetes::${provider}`)!.kubeconfig;

    it("a preview that updates the cluster (its ID kept, endpoint and CA unknown) gives both Kubernetes providers a known kubeconfig, unchanged", async function () {
        this.timeout(30_000);
        // Unknown there, pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go:504-516 would plan replacing both
        // providers, and the engine every resource on them (pulumi v3.259.0 step_generator.go:2798-2913).
        const registered = await previewScratch({ id: CLUSTER });
        for (const provider of providers) {
            const kubeconfig = kubeconfigOf(registered, provider);
            expect(pulumi.Output.isInstance(kubeconfig) || kubeconfig === pulumi.unknown, provider).to.equal(false);
            expect(parseJson(kubeconfig).clusters[0].cluster, provider).to.deep.equal({ server: PLACEHOLDERS.clusterEndpoint(REGION), "certificate-authority-data": PLACEHOLDERS.certificateAuthority });
        }
        // Karpenter's endpoint, too: the controller release sees no change either.
        expect(registered.get("kubernetes:helm.sh/v3:Release::karpenter-chart")!.values.settings.clusterEndpoint).to.equal(PLACEHOLDERS.clusterEndpoint(REGION));
    });

    it("a preview that creates or replaces the cluster (no ID yet) leaves the kubeconfig unknown, so the providers are new or replaced", async function () {
        this.timeout(30_000);
        const registered = await previewScratch({});
        for (const provider of providers) expect(kubeconfigOf(registered, provider), provider).to.equal(pulumi.unknown);
    });
});
