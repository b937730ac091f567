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
    /** AWS partition (aws, aws-cn, aws-us-gov). */
    partition: pulumi.Input<string>;
    /** AWS account ID that owns the cluster. */
    accountId: pulumi.Input<string>;
    /** AWS region of the cluster. */
    region: string;
}
