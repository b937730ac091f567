// Live facts the config relies on that no resource's preview would catch. Each is a lookup, so `pulumi preview`
// fails with one line naming what is wrong instead of `up` failing halfway (or, worse, succeeding into a broken state).
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterFacts } from "../components/models/clusterFacts.ts";
import type { StackConfig } from "./config.ts";

/** ValidatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from Kubernetes 1.30 (KEP-3488). */
const MIN_KUBERNETES_MINOR = 30;

/** Why a cluster's version cannot run this program, or undefined. */
function kubernetesVersionProblem(cluster: string, version: string): string | undefined {
    const minor = /^1\.([0-9]+)/.exec(version)?.[1];
    return minor !== undefined && Number(minor) >= MIN_KUBERNETES_MINOR
        ? undefined
        : `cluster ${cluster} runs Kubernetes ${version}; notify-karpenter needs 1.${MIN_KUBERNETES_MINOR} or later (its admission policy is admissionregistration.k8s.io/v1); upgrade the cluster first`;
}

/**
 * The kubeconfig, once the cluster's version is known to be supported: every Kubernetes resource waits on it, so a
 * cluster below 1.30 fails the preview before anything is applied. The one deliberate failure inside an apply: the
 * version is only known from the lookup, and the engine reports the program's error as this line.
 */
export function checkedKubeconfig(cluster: ClusterFacts, name: string): pulumi.Output<string> {
    return pulumi.all([cluster.kubeconfig, cluster.kubernetesVersion]).apply(([kubeconfig, version]) => {
        const problem = kubernetesVersionProblem(name, version);
        if (problem) throw new Error(problem);
        return kubeconfig;
    });
}

/**
 * The ARN of the log group the alarms' metric filter reads, when the stack does not create it. The provider fails
 * the lookup when the group does not exist, where a metric filter would otherwise fail only at `up`.
 */
export function logGroupArn(cfg: StackConfig, provider: aws.Provider): pulumi.Output<string> | undefined {
    if (cfg.alarms.createLogGroup) return undefined;
    return aws.cloudwatch.getLogGroupOutput({ name: cfg.alarms.logGroupName }, { provider }).arn;
}

/**
 * The pinned AMI, if it exists, is visible to the account and is x86_64 (every approved instance type is): the
 * provider fails the lookup unless exactly one image matches (aws.ec2.getAmi). Karpenter would otherwise only
 * report it on the EC2NodeClass's status, and launch nothing. An alias (al2023@v…) is resolved by Karpenter itself.
 */
export function nodeAmiId(cfg: StackConfig, provider: aws.Provider): pulumi.Output<string> | undefined {
    const id = cfg.nodePool.ami.id;
    if (id === undefined) return undefined;
    return aws.ec2.getAmiOutput(
        {
            includeDeprecated: true,
            filters: [
                { name: "image-id", values: [id] },
                { name: "architecture", values: ["x86_64"] },
            ],
        },
        { provider },
    ).id;
}
