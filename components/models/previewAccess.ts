// What CI's read-only preview role may read in the cluster: pure data, shared by the component that grants it
// (components/previewReadAccess.ts), the plan's ci-access files and preflight.

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
