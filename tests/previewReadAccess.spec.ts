// The preview role's Kubernetes reads (components/previewReadAccess.ts), as the stacks deploy them under the
// recording mocks: read verbs only, Secrets in the controller's namespace and kube-system only, bound to the group the
// plan's aws-auth mapping and access entry give the role, and enough to read back every object the stack manages
// (a refresh) and every list preflight makes.
import { expect } from "chai";
import { PREVIEW_GROUP } from "../components/models/previewAccess.ts";
import { PreviewReadAccess } from "../components/previewReadAccess.ts";
import { HELMFILE_RELEASES } from "../ops/preflightChecks.ts";
import type { ReadKind } from "../ops/kube.ts";
import { NIDHOGG_RELEASE } from "../components/models/celeryPlacement.ts";
import { PREVIEW_GROUP as MAPPED_GROUP } from "../plan/ciAccess.ts";
import { type RecordedResource, runOffline } from "../plan/offlineRuntime.ts";
import { STACKS, buildStack, stackConfig } from "./helpers.ts";

const COMPONENT = "notify-karpenter:index:PreviewReadAccess";
const WRITES = ["create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"];

/** Where each kind the stack manages lives in the API (group, plural); Helm releases are their release Secrets. */
function apiOf(type: string): { group: string; resource: string } {
    const [, groupVersion, kind] = /^kubernetes:([^:]+):(.+)$/.exec(type)!;
    const group = groupVersion.includes("/") ? groupVersion.split("/")[0].replace(/^core$/, "") : "";
    if (kind === "Release") return { group: "", resource: "secrets" };
    const base = kind.replace(/Patch$/, "").toLowerCase();
    return { group, resource: base.endsWith("y") ? `${base.slice(0, -1)}ies` : base.endsWith("s") ? `${base}es` : `${base}s` };
}

/** preflight's lists (ops/kube.ts listerOf) by their API group. */
const PREFLIGHT_READS: Record<ReadKind, string> = {
    secrets: "",
    priorityclasses: "scheduling.k8s.io",
    poddisruptionbudgets: "policy",
    deployments: "apps",
    daemonsets: "apps",
    nodepools: "karpenter.sh",
    ec2nodeclasses: "karpenter.k8s.aws",
    nodes: "",
    pods: "",
    namespaces: "",
    mutatingwebhookconfigurations: "admissionregistration.k8s.io",
};

describe("the preview role's Kubernetes reads (PreviewReadAccess)", function () {
    this.timeout(30000);

    for (const stack of STACKS) {
        describe(stack, () => {
            let resources: RecordedResource[];
            let component: RecordedResource;
            let children: RecordedResource[];
            const rulesIn = (namespace: string | undefined) => [
                ...children.filter((r) => r.type === "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole").flatMap((r) => r.inputs.rules),
                ...children.filter((r) => r.type === "kubernetes:rbac.authorization.k8s.io/v1:Role" && r.inputs.metadata.namespace === namespace).flatMap((r) => r.inputs.rules),
            ];
            const mayRead = (group: string, resource: string, namespace: string | undefined, verb = "get") =>
                rulesIn(namespace).some((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));

            before(async () => {
                resources = (await buildStack(stack)).resources;
                component = resources.find((r) => r.type === COMPONENT)!;
                children = resources.filter((r) => r.parent === component?.urn);
            });

            it("is one component of the stack, its children named after it and parented to it", () => {
                expect(component, "no PreviewReadAccess").to.not.equal(undefined);
                expect(component.name).to.equal("preview-read-access");
                expect(children.map((c) => c.name).sort()).to.deep.equal(
                    ["preview-read-access-cluster", "preview-read-access-cluster", "preview-read-access-karpenter", "preview-read-access-karpenter", "preview-read-access-kube-system", "preview-read-access-kube-system"].sort(),
                );
                expect([...new Set(children.map((c) => c.type))].sort()).to.deep.equal(
                    ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].map((k) => `kubernetes:rbac.authorization.k8s.io/v1:${k}`),
                );
                // On the stack's own provider (never the adopting one), after the CRD release made the controller's namespace.
                for (const c of children) expect(c.provider).to.match(/::pulumi:providers:kubernetes::kubernetes::/);
                expect(component.dependencies.some((d) => d.endsWith("Release::karpenter-crds"))).to.equal(true);
            });

            it("binds the group CI's preview role is mapped to (aws-auth, access entry), and only that group", () => {
                expect(MAPPED_GROUP).to.equal(PREVIEW_GROUP);
                const bindings = children.filter((c) => c.type.endsWith("RoleBinding"));
                expect(bindings).to.have.length(3);
                for (const b of bindings) {
                    expect(b.inputs.subjects).to.deep.equal([{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: PREVIEW_GROUP }]);
                    const role = children.find((c) => c.type === b.type.replace("Binding", "") && c.inputs.metadata.name === b.inputs.roleRef.name && c.inputs.metadata.namespace === b.inputs.metadata.namespace);
                    expect(role, `${b.name}: no role ${b.inputs.roleRef.name}`).to.not.equal(undefined);
                    expect(b.dependencies).to.include(role!.urn);
                }
            });

            it("grants reads only: no write verb, no wildcard; Secrets only in the controller's namespace and kube-system, get and list", () => {
                const all = children.filter((c) => /:(Cluster)?Role$/.test(c.type)).flatMap((c) => c.inputs.rules);
                for (const r of all) {
                    expect(r.verbs.filter((v: string) => WRITES.includes(v)), JSON.stringify(r)).to.deep.equal([]);
                    expect(r.resources).to.not.include("*");
                    expect(r.apiGroups).to.not.include("*");
                }
                const cluster = children.find((c) => c.type.endsWith(":ClusterRole"))!;
                expect(cluster.inputs.rules.flatMap((r: any) => r.resources)).to.not.include.members(["secrets", "configmaps"]);
                const cfg = stackConfig(stack);
                const roles = children.filter((c) => c.type.endsWith(":Role"));
                expect(roles.map((r) => r.inputs.metadata.namespace).sort()).to.deep.equal([cfg.controller.namespace, "kube-system"].sort());
                for (const r of roles) expect(r.inputs.rules).to.deep.equal([{ apiGroups: [""], resources: ["secrets", "configmaps"], verbs: ["get", "list"] }]);
                expect(mayRead("", "secrets", cfg.placement.namespace)).to.equal(false);
            });

            it("reads back every object the stack manages (a refresh), Helm's release records included", () => {
                const managed = resources.filter((r) => r.custom && r.type.startsWith("kubernetes:"));
                expect(managed.length).to.be.above(40);
                for (const r of managed) {
                    const { group, resource } = apiOf(r.type);
                    const namespace = r.type.endsWith(":Release") ? r.inputs.namespace : r.inputs.metadata?.namespace;
                    expect(mayRead(group, resource, namespace), `${r.type} ${namespace ?? ""}/${r.inputs.metadata?.name ?? r.inputs.name}`).to.equal(true);
                }
            });

            it("reads everything preflight lists, where it lists it", () => {
                const cfg = stackConfig(stack);
                const secretNamespaces = [...new Set([cfg.controller.namespace, ...Object.values(HELMFILE_RELEASES), NIDHOGG_RELEASE.namespace])];
                for (const [kind, group] of Object.entries(PREFLIGHT_READS)) {
                    const where = kind === "secrets" ? secretNamespaces : [cfg.placement.namespace, "kube-system", undefined];
                    for (const ns of where) {
                        if (kind === "secrets" && ns === undefined) continue;
                        expect(mayRead(group, kind, ns, "list"), `list ${kind} in ${ns ?? "the cluster"}`).to.equal(true);
                    }
                }
            });
        });
    }

    it("refuses to bind nothing: at least the controller's namespace", async () => {
        let message = "";
        try {
            await runOffline("staging", () => new PreviewReadAccess("x", { namespaces: [] }));
        } catch (e) {
            message = String((e as Error).message);
        }
        expect(message).to.include("PreviewReadAccess x: namespaces must name at least one namespace");
    });
});
