import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as eks from "@pulumi/eks";
import * as pulumi from "@pulumi/pulumi";
import { type ClusterFacts, clusterFacts, lookedUpAttributes } from "./models/clusterFacts.ts";
import { STABLE_NODE_GROUP } from "./models/scheduling.ts";
import { NODE_ROLE_POLICIES, dnsSuffix } from "./models/controllerPolicy.ts";

export interface CreatedClusterArgs {
    /** The EKS cluster name; also the value of every `karpenter.sh/discovery` tag. */
    name: string;
    region: string;
    /** Kubernetes minor version of the control plane and the stable nodes, such as "1.34". */
    kubernetesVersion: string;
    vpcCidr: string;
    /** Availability zones, each with one private and one public subnet. */
    zones: string[];
    /** One NAT gateway for the VPC, or one per zone. */
    natGateways: "single" | "one-per-zone";
    /** The on-demand node group for the controller and stable workloads (x86_64 instance types). */
    nodeGroup: { instanceTypes: string[]; minSize: number; desiredSize: number; maxSize: number; diskSize: number };
}

/**
 * An EKS cluster built from nothing, for a scratch account: the VPC, the control plane, a small on-demand node group
 * for the controller and stable workloads, and the Pod Identity agent. `facts` are what a lookup of an existing
 * cluster gives, so the other components run on it unchanged.
 *
 * Give it the `aws`, `eks` and `awsx` providers in `providers`: the VPC and the cluster are remote components, built
 * by the awsx and eks plugins, which create their AWS resources with the aws one.
 */
export class CreatedCluster extends pulumi.ComponentResource {
    public readonly facts: ClusterFacts;

    constructor(name: string, args: CreatedClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:CreatedCluster", name, {}, opts);
        const child = { parent: this };
        // A remote component gets its own package's provider from its parent, but no other: pass on the aws one.
        const remote = { parent: this, providers: { aws: this.getProvider("aws::")! } };

        const vpc = createVpc(name, args, remote);
        const eksCluster = createControlPlane(name, args, vpc, remote).eksCluster;
        const attributes = lookedUpAttributes(lookUpOnceCreated(args.name, eksCluster, this), args.region, args.kubernetesVersion);
        const partition = pulumi.output(attributes.arn).apply((arn) => arn.split(":")[1]);

        const podIdentityAgent = new aws.eks.Addon(`${name}-pod-identity-agent`, { clusterName: attributes.name, addonName: "eks-pod-identity-agent" }, child);
        const discoveryTag = new aws.ec2.Tag(
            `${name}-security-group-discovery-tag`,
            { resourceId: attributes.nodeSecurityGroupId, key: "karpenter.sh/discovery", value: args.name },
            child,
        );
        const nodeGroup = createStableNodeGroup(name, args, { clusterName: pulumi.output(attributes.name), subnetIds: vpc.privateSubnetIds, partition }, this);

        // Nothing is installed before the controller can run: stable nodes, the Pod Identity agent, and the discovery
        // tag its nodes need. (A dependency, not part of the kubeconfig: a kubeconfig unknown at preview, as when the
        // node group is replaced, makes the kubernetes provider replace everything on the cluster.)
        this.facts = clusterFacts(attributes, () => podIdentityAgent.addonVersion, [nodeGroup, podIdentityAgent, discoveryTag]);
        this.registerOutputs({ clusterName: attributes.name, vpcId: vpc.vpcId, nodeGroupName: nodeGroup.nodeGroupName });
    }
}

/**
 * The cluster as EKS describes it, looked up by its configured name once the engine has an ID for it, instead of
 * read from the eks.Cluster's outputs. The Kubernetes providers' kubeconfig is built from these values, and
 * pulumi-kubernetes plans a replacement of a provider whose kubeconfig is unknown at preview, and with it of every
 * resource on the cluster (v4.32.0 provider/pkg/provider/provider.go:504-516; the engine replaces a resource whose
 * provider is replaced: pulumi v3.259.0 pkg/resource/deploy/step_generator.go:2798-2913). A preview that updates the
 * EKS cluster (a version upgrade, say) can leave the cluster resource's endpoint and CA outputs unknown, but never its
 * ID: an update step keeps the old ID even in a preview (pkg/resource/deploy/step.go:961-963), and resolving the
 * resource reference returns that ID (builtins.go:442-464). So:
 *
 * - the cluster already exists (it is updated, or unchanged): the lookup runs at preview against the live cluster
 *   and returns its endpoint and CA, so the kubeconfig is the one in the state and the providers have no diff;
 * - the cluster is created or replaced: its ID is unknown at preview, the lookup is not made, the kubeconfig is
 *   unknown and the providers are (rightly) new or replaced; at `up` the lookup reads the new cluster.
 *
 * A lookup by a name known from config, without this gate, would fail the first preview (no such cluster yet).
 * The lookup depends on the eks.Cluster component, and the engine answers an invoke with unknown while a custom
 * resource beneath its dependencies is still to be created (pkg/resource/deploy/source_eval.go:1131,
 * resourcetracker/tracker.go:96): a preview that also creates or replaces a resource inside pulumi-eks's component
 * still shows the providers replaced. In `up` every value is known before the providers are diffed, so nothing on
 * the cluster is replaced unless its endpoint or CA really changed.
 */
function lookUpOnceCreated(clusterName: string, eksCluster: pulumi.Output<aws.eks.Cluster>, parent: pulumi.Resource): pulumi.Output<aws.eks.GetClusterResult> {
    const name = eksCluster.id.apply(() => clusterName);
    return aws.eks.getClusterOutput({ name }, { parent, provider: parent.getProvider("aws::") });
}

/** The VPC: a private and a public subnet per zone, tagged for Karpenter and the load balancer controllers. */
function createVpc(name: string, args: CreatedClusterArgs, remote: pulumi.ComponentResourceOptions): awsx.ec2.Vpc {
    const discovery = { "karpenter.sh/discovery": args.name };
    return new awsx.ec2.Vpc(
        `${name}-vpc`,
        {
            cidrBlock: args.vpcCidr,
            availabilityZoneNames: args.zones,
            natGateways: { strategy: args.natGateways === "single" ? "Single" : "OnePerAz" },
            subnetStrategy: "Auto",
            // Karpenter finds its subnets by the discovery tag, load balancer controllers by the role tags.
            subnetSpecs: [
                { type: "Private", tags: { ...discovery, "kubernetes.io/role/internal-elb": "1" } },
                { type: "Public", tags: { "kubernetes.io/role/elb": "1" } },
            ],
            // Nodes do not register with the cluster without DNS hostnames.
            enableDnsHostnames: true,
            tags: { Name: args.name },
        },
        remote,
    );
}

/** The EKS control plane, API authentication only, with no node group or security groups of pulumi-eks's own. */
function createControlPlane(name: string, args: CreatedClusterArgs, vpc: awsx.ec2.Vpc, remote: pulumi.ComponentResourceOptions): eks.Cluster {
    return new eks.Cluster(
        `${name}-eks`,
        {
            name: args.name,
            version: args.kubernetesVersion,
            vpcId: vpc.vpcId,
            privateSubnetIds: vpc.privateSubnetIds,
            publicSubnetIds: vpc.publicSubnetIds,
            authenticationMode: "API",
            // The node group below replaces the default self-managed one, and the security group EKS creates is
            // the only one: managed nodes get it, Karpenter's nodes find it by the discovery tag.
            skipDefaultNodeGroup: true,
            skipDefaultSecurityGroups: true,
            // So that controller.identity: irsa works here as on the existing clusters.
            createOidcProvider: true,
            // Extended support costs six times the standard hourly fee; a scratch cluster upgrades instead.
            upgradePolicy: { supportType: "STANDARD" },
        },
        remote,
    );
}

/** The on-demand node group `stable` for the controller and everything that is not burst Celery, with its role. */
function createStableNodeGroup(name: string, args: CreatedClusterArgs, at: { clusterName: pulumi.Output<string>; subnetIds: pulumi.Output<string[]>; partition: pulumi.Output<string> }, parent: pulumi.Resource): aws.eks.NodeGroup {
    const child = { parent };
    const partition = at.partition;
    // In API authentication mode EKS creates the access entry of a managed node group's role itself.
    const nodeRole = new aws.iam.Role(
        `${name}-stable-node-role`,
        {
            assumeRolePolicy: partition.apply((p) =>
                JSON.stringify({
                    Version: "2012-10-17",
                    Statement: [{ Effect: "Allow", Principal: { Service: `ec2.${dnsSuffix(p)}` }, Action: ["sts:AssumeRole"] }],
                }),
            ),
        },
        child,
    );
    const attachments = NODE_ROLE_POLICIES.map(
        (policy) => new aws.iam.RolePolicyAttachment(`${name}-stable-node-${policy}`, { role: nodeRole.name, policyArn: pulumi.interpolate`arn:${partition}:iam::aws:policy/${policy}` }, child),
    );
    const g = args.nodeGroup;
    return new aws.eks.NodeGroup(
        `${name}-stable-nodes`,
        {
            clusterName: at.clusterName,
            nodeGroupName: STABLE_NODE_GROUP,
            nodeRoleArn: nodeRole.arn,
            subnetIds: at.subnetIds,
            capacityType: "ON_DEMAND",
            instanceTypes: g.instanceTypes,
            amiType: "AL2023_x86_64_STANDARD",
            diskSize: g.diskSize,
            scalingConfig: { minSize: g.minSize, desiredSize: g.desiredSize, maxSize: g.maxSize },
            // Follows the control plane when kubernetesVersion changes, so an upgrade can be rehearsed.
            version: args.kubernetesVersion,
        },
        // Nodes whose role lacks a policy never join, and the node group fails after 20 minutes.
        { parent, dependsOn: attachments },
    );
}
