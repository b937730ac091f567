import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/**
 * The Kubernetes group CI's read-only preview role is mapped to (aws-auth, or its EKS access entry's
 * kubernetes_groups): the plan's ci-access files map the role to it, and this component gives it its rights.
 */
export const PREVIEW_GROUP = "notify-karpenter-preview";

/** Read, and nothing else. */
const READ = ["get", "list", "watch"];

/**
 * What preflight lists (ops/kube.ts ReadKind), what a `pulumi preview --refresh` reads back (every kind the stack
 * creates or patches), and what the drift check compares with the Helm releases' manifests, cluster-wide. Secrets and
 * ConfigMaps are not here: they are read in a few namespaces only (`namespaces`).
 */
export const CLUSTER_READ_RULES = [
    { apiGroups: [""], resources: ["nodes", "pods", "namespaces", "serviceaccounts", "services"] },
    { apiGroups: ["apps"], resources: ["deployments", "daemonsets", "statefulsets"] },
    // The node recycler's CronJob (components/nodeRecycler.ts).
    { apiGroups: ["batch"], resources: ["cronjobs"] },
    { apiGroups: ["policy"], resources: ["poddisruptionbudgets"] },
    { apiGroups: ["scheduling.k8s.io"], resources: ["priorityclasses"] },
    { apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles", "clusterrolebindings", "roles", "rolebindings"] },
    { apiGroups: ["admissionregistration.k8s.io"], resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingwebhookconfigurations"] },
    { apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"] },
    { apiGroups: ["karpenter.sh"], resources: ["nodepools", "nodeclaims"] },
    { apiGroups: ["karpenter.k8s.aws"], resources: ["ec2nodeclasses"] },
].map((r) => ({ ...r, verbs: READ }));

/**
 * In each of `namespaces`: Helm's release records (Secrets of type helm.sh/release.v1, which preflight lists and a
 * Release's refresh reads) and ConfigMaps (the stack's own there), get and list only.
 */
export const NAMESPACE_READ_RULES = [{ apiGroups: [""], resources: ["secrets", "configmaps"], verbs: ["get", "list"] }];

export interface PreviewReadAccessArgs {
    /** The Kubernetes group the preview identity is mapped to. @default PREVIEW_GROUP */
    group?: string;
    /** Namespaces whose Secrets (Helm's release records) and ConfigMaps the group reads: the controller's and kube-system. */
    namespaces: string[];
    /** The name of the ClusterRole, the Roles and their bindings. @default "notify-karpenter-preview-read" */
    objectName?: string;
}

/**
 * Read access for CI's preview role, which previews, refreshes, drift checks and preflight run as: a ClusterRole of
 * reads bound to its group, and in the controller's namespace and kube-system a Role that reads Secrets and
 * ConfigMaps. No write of any kind: a preview's server-side dry runs that the API refuses fall back to client-side
 * diffs (pulumi-kubernetes provider.go, Create and Update with preview).
 */
export class PreviewReadAccess extends pulumi.ComponentResource {
    public readonly group: string;
    public readonly clusterRoleName: string;

    constructor(name: string, args: PreviewReadAccessArgs, opts?: pulumi.ComponentResourceOptions) {
        super("notify-karpenter:index:PreviewReadAccess", name, {}, opts);
        const namespaces = [...new Set(args.namespaces)];
        if (namespaces.length === 0) throw new Error(`PreviewReadAccess ${name}: namespaces must name at least one namespace (the controller's)`);
        const group = args.group ?? PREVIEW_GROUP;
        const objectName = args.objectName ?? "notify-karpenter-preview-read";
        const child = { parent: this };
        const subjects = [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: group }];

        const role = new k8s.rbac.v1.ClusterRole(`${name}-cluster`, { metadata: { name: objectName }, rules: CLUSTER_READ_RULES }, child);
        new k8s.rbac.v1.ClusterRoleBinding(
            `${name}-cluster`,
            { metadata: { name: objectName }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: objectName }, subjects },
            { parent: this, dependsOn: [role] },
        );
        for (const namespace of namespaces) {
            const nsRole = new k8s.rbac.v1.Role(`${name}-${namespace}`, { metadata: { name: objectName, namespace }, rules: NAMESPACE_READ_RULES }, child);
            new k8s.rbac.v1.RoleBinding(
                `${name}-${namespace}`,
                { metadata: { name: objectName, namespace }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: objectName }, subjects },
                { parent: this, dependsOn: [nsRole] },
            );
        }

        this.group = group;
        this.clusterRoleName = objectName;
        this.registerOutputs({ group: this.group, clusterRoleName: this.clusterRoleName });
    }
}
