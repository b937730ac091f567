import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as eks from "@pulumi/eks";
import { type ClusterFacts, clusterFacts, lookedUpAttributes } from "../components/models/clusterFacts.ts";
import { CreatedCluster } from "../components/createdCluster.ts";
import type { ClusterConfig } from "./config.ts";

/** The cluster the stack installs on, by `cluster.mode`: looked up, or created with its VPC. */
export function clusterFor(cfg: ClusterConfig, provider: aws.Provider): ClusterFacts {
    return cfg.mode === "create" ? createdCluster(cfg, provider) : existingCluster(cfg, provider);
}

/** Looks up an existing EKS cluster by name and returns the facts components need. */
function existingCluster(cfg: ClusterConfig, provider: aws.Provider): ClusterFacts {
    const cluster = aws.eks.getClusterOutput({ name: cfg.name }, { provider });
    return clusterFacts(
        lookedUpAttributes(cluster, cfg.region, cluster.version),
        () => aws.eks.getAddonOutput({ clusterName: cfg.name, addonName: "eks-pod-identity-agent" }, { provider }).addonVersion,
    );
}

/** Creates the cluster, its VPC and stable nodes. The eks and awsx packages need providers of their own. */
function createdCluster(cfg: ClusterConfig, provider: aws.Provider): ClusterFacts {
    const providers = { aws: provider, eks: new eks.Provider("eks"), awsx: new awsx.Provider("awsx") };
    return new CreatedCluster("cluster", { name: cfg.name, region: cfg.region, ...cfg.create! }, { providers }).facts;
}
