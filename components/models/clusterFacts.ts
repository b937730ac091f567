import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/**
 * What every component needs to know about the EKS cluster. The stack builds it, from a lookup of an existing
 * cluster or from a cluster it creates, so no component knows which of the two it runs on.
 */
export interface ClusterFacts {
    /** The EKS cluster name, as AWS knows it. */
    name: pulumi.Input<string>;
    /** The cluster ARN: arn:<partition>:eks:<region>:<account>:cluster/<name>. */
    arn: pulumi.Input<string>;
    /** The API server endpoint URL. */
    endpoint: pulumi.Input<string>;
    /** Base64 certificate authority data of the API server. */
    certificateAuthority: pulumi.Input<string>;
    /** The OIDC issuer URL (https://oidc.eks.<region>.amazonaws.com/id/<id>), used for IRSA trust. */
    oidcIssuerUrl: pulumi.Input<string>;
    /** The cluster security group, which EKS gives managed nodes; Karpenter's nodes need it to reach the control plane. */
    nodeSecurityGroupId: pulumi.Input<string>;
    /** AWS partition (aws, aws-cn, aws-us-gov). */
    partition: pulumi.Input<string>;
    /** AWS account ID that owns the cluster. */
    accountId: pulumi.Input<string>;
    /** AWS region of the cluster. */
    region: string;
    /** The control plane's Kubernetes minor version, such as "1.34". */
    kubernetesVersion: pulumi.Input<string>;
    /**
     * A kubeconfig that authenticates with `aws eks get-token`, so it holds no secret and works for whoever runs
     * `pulumi up` with access to the cluster. Built from `name`, `endpoint` and `certificateAuthority` only: the
     * Kubernetes providers take it, and pulumi-kubernetes replaces a provider (and with it every resource on it) when
     * its kubeconfig is unknown at preview (v4.32.0 provider/pkg/provider/provider.go:504-516), so those three must
     * be known whenever the cluster already exists (see CreatedCluster).
     */
    kubeconfig: pulumi.Output<string>;
    /**
     * The version of the cluster's EKS Pod Identity agent add-on, for a controller that uses Pod Identity: read
     * only when called, so a cluster on IRSA needs no agent. A lookup that finds none fails the preview.
     */
    podIdentityAgentVersion: () => pulumi.Input<string>;
    /**
     * What must exist before anything is installed on the cluster: a created cluster's stable nodes and add-ons,
     * nothing for an existing one. The kubernetes provider depends on them.
     */
    ready: pulumi.Resource[];
}

/** What AWS says about a cluster, from which the rest of the facts follow. */
export type ClusterAttributes = Pick<ClusterFacts, "name" | "arn" | "endpoint" | "certificateAuthority" | "oidcIssuerUrl" | "nodeSecurityGroupId" | "region" | "kubernetesVersion">;

/**
 * A cluster's attributes as EKS reports them (DescribeCluster, through `aws.eks.getClusterOutput`): the same lookup
 * for a cluster the stack finds and, once it exists, for one the stack creates. `kubernetesVersion` is the caller's:
 * the lookup's for an existing cluster, the configured one for a created cluster (which an `up` may be upgrading).
 */
export function lookedUpAttributes(cluster: pulumi.Output<aws.eks.GetClusterResult>, region: string, kubernetesVersion: pulumi.Input<string>): ClusterAttributes {
    return {
        name: cluster.name,
        arn: cluster.arn,
        endpoint: cluster.endpoint,
        certificateAuthority: cluster.certificateAuthorities.apply((c) => c[0].data),
        oidcIssuerUrl: cluster.identities.apply((ids) => ids[0].oidcs[0].issuer),
        nodeSecurityGroupId: cluster.vpcConfig.clusterSecurityGroupId,
        region,
        kubernetesVersion,
    };
}

/** The facts of a cluster, from its attributes and what must exist before anything is installed on it. */
export function clusterFacts(c: ClusterAttributes, podIdentityAgentVersion: () => pulumi.Input<string>, ready: pulumi.Resource[] = []): ClusterFacts {
    // arn:<partition>:eks:<region>:<account>:cluster/<name>: the partition and account come with it, no extra lookup.
    const arnPart = (i: number) => pulumi.output(c.arn).apply((arn) => arn.split(":")[i]);
    const kubeconfig = pulumi.all([c.name, c.endpoint, c.certificateAuthority]).apply(([name, endpoint, ca]) =>
        JSON.stringify({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{ name, cluster: { server: endpoint, "certificate-authority-data": ca } }],
            contexts: [{ name, context: { cluster: name, user: name } }],
            "current-context": name,
            users: [
                {
                    name,
                    user: {
                        exec: {
                            apiVersion: "client.authentication.k8s.io/v1beta1",
                            command: "aws",
                            args: ["eks", "get-token", "--cluster-name", name, "--region", c.region, "--output", "json"],
                        },
                    },
                },
            ],
        }),
    );
    return { ...c, partition: arnPart(1), accountId: arnPart(4), kubeconfig, podIdentityAgentVersion, ready };
}
