import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ClusterFacts } from "../components/clusterFacts";
import { ClusterConfig } from "./config";

/** Looks up an existing EKS cluster by name and returns the facts components need. */
export function existingCluster(cfg: ClusterConfig, provider: aws.Provider): ClusterFacts {
    const cluster = aws.eks.getClusterOutput({ name: cfg.name }, { provider });
    // arn:<partition>:eks:<region>:<account>:cluster/<name>: the partition and account come with it, no extra lookup.
    const arnPart = (i: number) => cluster.arn.apply((arn) => arn.split(":")[i]);
    return {
        name: cluster.name,
        arn: cluster.arn,
        endpoint: cluster.endpoint,
        certificateAuthority: cluster.certificateAuthorities.apply((c) => c[0].data),
        oidcIssuerUrl: cluster.identities.apply((ids) => ids[0].oidcs[0].issuer),
        partition: arnPart(1),
        accountId: arnPart(4),
        region: cfg.region,
    };
}

/**
 * A kubeconfig that authenticates with `aws eks get-token`, so it holds no secret and works for whoever runs
 * `pulumi up` with access to the cluster.
 */
export function kubeconfigFor(cluster: ClusterFacts): pulumi.Output<string> {
    return pulumi.all([cluster.name, cluster.endpoint, cluster.certificateAuthority]).apply(([name, endpoint, ca]) =>
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
                            args: ["eks", "get-token", "--cluster-name", name, "--region", cluster.region, "--output", "json"],
                        },
                    },
                },
            ],
        }),
    );
}
