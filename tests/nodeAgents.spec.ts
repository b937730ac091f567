// GC Notify's node agents in placement.nodeDaemonSets (issue 15 item 5): which ones new ephemeral nodes wait for,
// which are only allowed, and the EKS add-on the program must not patch.
import { expect } from "chai";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { nidhoggValues, waitsFor } from "../components/models/celeryPlacement.ts";
import { nodePoolArgs, placementArgs } from "../stacks/componentArgs.ts";
import { errorOf, rawConfig, section, stackConfig } from "./helpers.ts";

const withPlacement = (change: (p: any) => void) => {
    const p = section("staging", "placement");
    change(p);
    return () => parseStackConfig("staging", rawConfig("staging", "placement", p));
};

describe("GC Notify's node agents (placement.nodeDaemonSets)", () => {
    for (const stack of ["staging", "production"]) {
        it(`${stack}: nodes wait for the secrets CSI driver, its AWS provider, Fluent Bit and the CloudWatch agent (Celery's init container wait-cwagent-ready gives it 30 s: notification-manifests 609853e2 charts/notify-celery/templates/deployment.yaml:34-44); the other agents are only allowed; the EBS add-on is not patched`, () => {
            const agents = stackConfig(stack).placement.nodeDaemonSets;
            expect(agents.filter(waitsFor).map((d) => `${d.namespace}/${d.name}`)).to.deep.equal([
                "kube-system/secrets-store-csi-driver",
                "kube-system/secrets-provider-aws",
                "amazon-cloudwatch/fb-agent-fluent-bit",
                "amazon-cloudwatch/aws-cloudwatch-agent",
            ]);
            expect(agents.filter((d) => !waitsFor(d) && !d.addOn).map((d) => `${d.namespace}/${d.name}`)).to.deep.equal([
                "signoz/signoz-k8s-k8s-infra-otel-agent",
                "velero/node-agent",
                "falco/falco",
                "xray/xray-daemon-aws-xray",
            ]);
            expect(agents.filter((d) => d.addOn).map((d) => [d.name, d.addOn])).to.deep.equal([["ebs-csi-node", "aws-ebs-csi-driver"]]);
            const cfg = stackConfig(stack);
            expect((nodePoolArgs(cfg, "r").startupTaints ?? []).map((t) => t.key)).to.deep.equal([
                "nidhogg.uswitch.com/kube-system.secrets-store-csi-driver",
                "nidhogg.uswitch.com/kube-system.secrets-provider-aws",
                "nidhogg.uswitch.com/amazon-cloudwatch.fb-agent-fluent-bit",
                "nidhogg.uswitch.com/amazon-cloudwatch.aws-cloudwatch-agent",
            ]);
            expect(nidhoggValues(placementArgs(cfg)).configuration.daemonsets.map((d) => d.name)).to.deep.equal(["secrets-store-csi-driver", "secrets-provider-aws", "fb-agent-fluent-bit", "aws-cloudwatch-agent"]);
        });
    }

    it("refuses waiting for the AWS provider under its chart's default name: nidhogg's taint key would exceed 63 characters (pelotech/nidhogg handler.go:227)", () => {
        const msg = errorOf(
            withPlacement((p) => p.nodeDaemonSets.push({ namespace: "kube-system", name: "aws-secrets-provider-secrets-store-csi-driver-provider-aws", waitFor: true })),
        );
        expect(msg).to.include(
            'DaemonSet kube-system/aws-secrets-provider-secrets-store-csi-driver-provider-aws: its startup taint nidhogg.uswitch.com/kube-system.aws-secrets-provider-secrets-store-csi-driver-provider-aws needs "<namespace>.<name>" of at most 63 characters (got 70)',
        );
    });

    it("refuses waiting for an EKS add-on's DaemonSet, which the program does not patch", () => {
        const msg = errorOf(withPlacement((p) => (p.nodeDaemonSets.find((d: any) => d.name === "ebs-csi-node").waitFor = true)));
        expect(msg).to.include(
            "DaemonSet kube-system/ebs-csi-node: the aws-ebs-csi-driver add-on's DaemonSet is not patched, so it cannot be made to tolerate a startup taint; set waitFor: false and its tolerations in the add-on's configurationValues",
        );
    });

    it("placement.ephemeralAllowed names a workload by kind, namespace and name, or pods by labels, with a reason", () => {
        const both = errorOf(withPlacement((p) => (p.ephemeralAllowed = [{ kind: "Job", namespace: "x", name: "y", labels: { a: "b" }, why: "w" }])));
        expect(both).to.match(/notify-karpenter:placement\.ephemeralAllowed\[0\] must name a workload by kind, namespace and name, or its pods by labels \(not both\)/);
        const partial = errorOf(withPlacement((p) => (p.ephemeralAllowed = [{ kind: "Job", name: "y", why: "w" }])));
        expect(partial).to.match(/placement\.ephemeralAllowed\[0\] must name a workload by kind, namespace and name, or its pods by labels/);
        const noWhy = errorOf(withPlacement((p) => (p.ephemeralAllowed = [{ labels: { a: "b" } }])));
        expect(noWhy).to.match(/placement\.ephemeralAllowed\[0\]\.why /);
    });
});
