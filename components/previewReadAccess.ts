import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { CLUSTER_READ_RULES, NAMESPACE_READ_RULES, PREVIEW_GROUP } from "./models/previewAccess.ts";

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
