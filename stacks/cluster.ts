import * as aws from "@pulumi/aws";
import { ClusterFacts, clusterFacts } from "../components/clusterFacts";
import { ClusterConfig } from "./config";

/** Looks up an existing EKS cluster by name and returns the facts components need. */
export function existingCluster(cfg: ClusterConfig, provider: aws.Provider): ClusterFacts {
    const cluster = aws.eks.getClusterOutput({ name: cfg.name }, { provider });
    return clusterFacts({
        name: cluster.name,
        arn: cluster.arn,
        endpoint: cluster.endpoint,
        certificateAuthority: cluster.certificateAuthorities.apply((c) => c[0].data),
        oidcIssuerUrl: cluster.identities.apply((ids) => ids[0].oidcs[0].issuer),
        nodeSecurityGroupId: cluster.vpcConfig.clusterSecurityGroupId,
        region: cfg.region,
    });
}
