// Issue 22 item 6: upgrades cannot turn on Karpenter's own pod-deletion-cost controller (kubernetes-sigs/karpenter pull
// request #2894, gate PodDeletionCostManagement) while the scale-down annotator (placement.burst.scaleDownOrder) runs.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { controllerValues } from "../components/karpenterController.ts";
import { CHART_FEATURE_GATES, UPSTREAM_DELETION_COST_GATE, renderedFeatureGates, upstreamDeletionCostProblems } from "../stacks/config.ts";
import { KARPENTER_VERSION } from "../components/karpenter/version.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { errorOf, rawConfig, section } from "./helpers.ts";

const REFERENCE = process.env.KARPENTER_REFERENCE_DIR;

describe("upstream's pod-deletion-cost controller and the scale-down annotator (config)", () => {
    it("knows the feature gates of the pinned release's chart, and none of them is upstream's deletion-cost gate", () => {
        // aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/deployment.yaml:129 (FEATURE_GATES) and
        // values.yaml:230-248 (their defaults).
        expect(CHART_FEATURE_GATES[KARPENTER_VERSION]).to.deep.equal({
            ReservedCapacity: true,
            SpotToSpotConsolidation: false,
            NodeRepair: false,
            NodeOverlay: false,
            StaticCapacity: false,
            CapacityBuffer: false,
        });
        expect(CHART_FEATURE_GATES[KARPENTER_VERSION]).to.not.have.property(UPSTREAM_DELETION_COST_GATE);
    });

    it("renders only the gates the config sets, as the chart's values read them", () => {
        const values = controllerValues({ spotToSpotConsolidation: true } as any);
        expect(values.settings.featureGates).to.deep.equal({ spotToSpotConsolidation: true });
        const rendered = renderedFeatureGates({ spotToSpotConsolidation: true });
        // Each rendered gate is one of the chart's, under the chart's camel-case values key.
        for (const gate of Object.keys(rendered)) expect(CHART_FEATURE_GATES[KARPENTER_VERSION]).to.have.property(gate);
        expect(Object.keys(values.settings.featureGates).map((k) => k[0].toUpperCase() + k.slice(1))).to.deep.equal(Object.keys(rendered));
    });

    it("accepts the pinned release with the annotator: v1.14.1 has no such controller", () => {
        expect(upstreamDeletionCostProblems({ version: KARPENTER_VERSION, spotToSpotConsolidation: false }, true)).to.deep.equal([]);
        expect(() => parseStackConfig("production", rawConfig("production"))).to.not.throw();
        expect(section("production", "placement").burst.scaleDownOrder).to.not.equal(undefined);
    });

    it("refuses a release whose feature gates were not read, while the annotator runs", () => {
        const problems = upstreamDeletionCostProblems({ version: "1.15.0", spotToSpotConsolidation: false }, true);
        expect(problems.map((p) => p.path)).to.deep.equal(["controller.version"]);
        expect(problems[0].message).to.equal(
            `must be a Karpenter release whose feature gates were read (1.14.1) while placement.burst.scaleDownOrder is set: a newer release may carry upstream's pod-deletion-cost controller (gate PodDeletionCostManagement, kubernetes-sigs/karpenter #2894), which would overwrite the annotator's pod-deletion-cost; read its chart and add it to CHART_FEATURE_GATES (got "1.15.0")`,
        );
        // Without the annotator there is nothing to fight.
        expect(upstreamDeletionCostProblems({ version: "1.15.0", spotToSpotConsolidation: false }, false)).to.deep.equal([]);
    });

    it("refuses a release whose chart turns the gate on by default (the RFC's beta), and accepts one where it is off", () => {
        const gates = {
            ...CHART_FEATURE_GATES,
            "9.0.0": { ...CHART_FEATURE_GATES[KARPENTER_VERSION], [UPSTREAM_DELETION_COST_GATE]: true },
            "8.0.0": { ...CHART_FEATURE_GATES[KARPENTER_VERSION], [UPSTREAM_DELETION_COST_GATE]: false },
        };
        const on = upstreamDeletionCostProblems({ version: "9.0.0", spotToSpotConsolidation: false }, true, gates);
        expect(on.map((p) => p.message)).to.deep.equal([
            "must not turn on PodDeletionCostManagement while placement.burst.scaleDownOrder is set: Karpenter 9.0.0 would then rewrite and clear controller.kubernetes.io/pod-deletion-cost on every burst pod, fighting the annotator (kubernetes-sigs/karpenter #2894); turn the gate off in the controller's values or remove placement.burst.scaleDownOrder",
        ]);
        expect(upstreamDeletionCostProblems({ version: "8.0.0", spotToSpotConsolidation: true }, true, gates)).to.deep.equal([]);
        expect(upstreamDeletionCostProblems({ version: "9.0.0", spotToSpotConsolidation: false }, false, gates)).to.deep.equal([]);
    });

    it("refuses another Karpenter version in the stack file, naming the key", () => {
        expect(errorOf(() => parseStackConfig("staging", rawConfig("staging", "controller", { version: "1.15.0" })))).to.match(
            /^staging: notify-karpenter:controller\.version must be "1\.14\.1" \(got "1\.15\.0"\)/m,
        );
    });

    it("has no config key that sets another feature gate: the controller section refuses one", () => {
        for (const key of ["featureGates", "podDeletionCostManagement"]) {
            expect(errorOf(() => parseStackConfig("staging", rawConfig("staging", "controller", { [key]: true })))).to.match(new RegExp(`notify-karpenter:controller\\.${key} is not a known key`));
        }
    });

    (REFERENCE ? it : it.skip)("matches the feature gates of the official chart values (KARPENTER_REFERENCE_DIR)", () => {
        const values = parse(fs.readFileSync(path.join(REFERENCE!, "values.yaml"), "utf8"));
        const fromChart = Object.fromEntries(Object.entries(values.settings.featureGates as Record<string, boolean>).map(([k, v]) => [k[0].toUpperCase() + k.slice(1), v]));
        expect(fromChart).to.deep.equal(CHART_FEATURE_GATES[KARPENTER_VERSION]);
    });
});
