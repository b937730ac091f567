import { expect } from "chai";
import { EphemeralNodePoolArgs, approvedTypeProblems, instanceShape, nodePoolWarnings, quantityValue, renderNodePool } from "../components/ephemeralNodePool";
import { KarpenterObject, validateKarpenterObject } from "../components/karpenter/validate";
import { nodePoolArgs } from "../stacks/componentArgs";
import { STACKS, buildStack, configErrorOf, patchSections, stackConfig } from "./helpers";

const FAMILIES = ["m7i", "m7a", "r7i", "r7a", "c7i", "c7a", "m6i", "m6a", "r6i", "r6a", "c6i", "c6a"];
const expectedTypes = { staging: FAMILIES.map((f) => `${f}.xlarge`), production: FAMILIES.flatMap((f) => [`${f}.xlarge`, `${f}.2xlarge`]) };

/** Staging's rendered objects, for mutation in the invalid-spec cases. */
function validObjects(): { nodeClass: KarpenterObject; nodePool: KarpenterObject } {
    return JSON.parse(JSON.stringify(renderNodePool(nodePoolArgs(stackConfig("staging"), "eks-worker-role"), "eks-worker-role")));
}

for (const stack of STACKS) {
    describe(`EphemeralNodePool (${stack})`, () => {
        let r: Awaited<ReturnType<typeof buildStack>>;
        before(async () => {
            r = await buildStack(stack);
        });
        const nodeClass = () => r.get("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "celery-burst-node-class");
        const nodePool = () => r.get("kubernetes:karpenter.sh/v1:NodePool", "celery-burst-node-pool");
        const cluster = `notification-canada-ca-${stack}-eks-cluster`;

        it("renders the EC2NodeClass: node role, discovery selectors, pinned AMI, IMDSv2, 80Gi encrypted gp3, kubelet reservations", () => {
            const { apiVersion, kind, metadata, spec } = nodeClass().inputs;
            expect({ apiVersion, kind, metadata }).to.deep.equal({ apiVersion: "karpenter.k8s.aws/v1", kind: "EC2NodeClass", metadata: { name: "notify-karpenter" } });
            expect(spec).to.deep.equal({
                role: "eks-worker-role",
                amiFamily: "AL2023",
                amiSelectorTerms: [{ id: "ami-031fc151e660ba74f" }],
                subnetSelectorTerms: [{ tags: { "karpenter.sh/discovery": cluster } }],
                securityGroupSelectorTerms: [{ tags: { "karpenter.sh/discovery": cluster } }],
                metadataOptions: { httpEndpoint: "enabled", httpProtocolIPv6: "disabled", httpPutResponseHopLimit: 2, httpTokens: "required" },
                blockDeviceMappings: [{ deviceName: "/dev/xvda", rootVolume: true, ebs: { volumeSize: "80Gi", volumeType: "gp3", encrypted: true, deleteOnTermination: true } }],
                kubelet: { kubeReserved: { cpu: "100m", memory: "500Mi" }, systemReserved: { cpu: "100m", memory: "300Mi" }, evictionHard: { "memory.available": "500Mi" } },
                tags: { CostCentre: `notification-canada-ca-${stack}` },
            });
            expect(validateKarpenterObject(nodeClass().inputs as KarpenterObject)).to.deep.equal([]);
        });

        it("renders a NodePool that launches only the approved types, tainted and labelled as ephemeral, disruption where Karpenter reads it", () => {
            const spec = nodePool().inputs.spec;
            expect(spec.template.spec.requirements).to.deep.equal([
                { key: "node.kubernetes.io/instance-type", operator: "In", values: expectedTypes[stack] },
                { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
                { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
                { key: "topology.kubernetes.io/zone", operator: "In", values: ["ca-central-1a", "ca-central-1b", "ca-central-1d"] },
                { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot"] },
            ]);
            expect(spec.template.metadata.labels).to.deep.equal({ "notification-canada-ca/ephemeral": "true" });
            expect(spec.template.spec.taints).to.deep.equal([{ key: "notification-canada-ca/ephemeral", value: "true", effect: "NoSchedule" }]);
            expect(spec.template.spec).to.include({ expireAfter: "24h", terminationGracePeriod: "1h" });
            expect(spec.template.spec.nodeClassRef).to.deep.equal({ group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "notify-karpenter" });
            expect(spec.template).to.not.have.property("disruption");
            expect(spec.disruption).to.deep.equal({
                consolidationPolicy: "WhenEmpty",
                consolidateAfter: "30m",
                budgets: [{ nodes: "10%" }, { nodes: "0", reasons: ["Drifted"], schedule: "0 13 * * mon-fri", duration: "10h" }],
            });
            expect(spec.limits).to.deep.equal(stack === "staging" ? { cpu: "400", memory: "1000Gi" } : { cpu: "1000", memory: "1000Gi" });
            expect(spec.weight).to.equal(10);
            expect(validateKarpenterObject(nodePool().inputs as KarpenterObject)).to.deep.equal([]);
        });

        it("creates the objects after the CRDs and the controller, the NodePool after its EC2NodeClass", () => {
            const crds = r.get("kubernetes:helm.sh/v3:Release", "karpenter-crds").urn;
            const chart = r.get("kubernetes:helm.sh/v3:Release", "karpenter-chart").urn;
            expect(nodeClass().dependencies).to.include.members([crds, chart]);
            expect(nodePool().dependencies).to.include.members([crds, chart, nodeClass().urn]);
            expect(nodePool().provider).to.match(/::pulumi:providers:kubernetes::kubernetes::/);
        });
    });
}

describe("Karpenter object validation (v1.14.1 schema and CEL rules)", () => {
    // Each case breaks a valid object the way a person could, and names the field the error must point at.
    const cases: [string, "nodeClass" | "nodePool", (o: any) => void, string, RegExp][] = [
        ["GC Notify's disruption block under spec.template", "nodePool", (o) => (o.spec.template.disruption = o.spec.disruption), "spec.template.disruption", /not a field of the v1\.14\.1 NodePool schema, so the API server would silently drop it/],
        ["disruption under spec.template.spec", "nodePool", (o) => (o.spec.template.spec.disruption = { consolidateAfter: "30m" }), "spec.template.spec.disruption", /silently drop/],
        ["a budget with a schedule and no duration", "nodePool", (o) => delete o.spec.disruption.budgets[1].duration, "spec.disruption.budgets", /'schedule' must be set with 'duration'/],
        ["a budget duration in seconds", "nodePool", (o) => (o.spec.disruption.budgets[1].duration = "30s"), "spec.disruption.budgets[1].duration", /must match/],
        ["a budget for an unknown reason", "nodePool", (o) => (o.spec.disruption.budgets[1].reasons = ["Expired"]), "spec.disruption.budgets[1].reasons[0]", /must be one of Underutilized, Empty, Drifted/],
        ["Gt with two values", "nodePool", (o) => o.spec.template.spec.requirements.push({ key: "karpenter.k8s.aws/instance-cpu", operator: "Gt", values: ["2", "4"] }), "spec.template.spec.requirements", /must have a single positive integer value/],
        ["In with no values", "nodePool", (o) => (o.spec.template.spec.requirements[3].values = []), "spec.template.spec.requirements", /operator 'In' must have a value defined/],
        ["minValues above the values", "nodePool", (o) => (o.spec.template.spec.requirements[0].minValues = 50), "spec.template.spec.requirements", /'minValues' must have at least that many values/],
        ["an unknown operator", "nodePool", (o) => (o.spec.template.spec.requirements[1].operator = "Equals"), "spec.template.spec.requirements[1].operator", /must be one of Gte, Lte, In, NotIn, Exists, DoesNotExist, Gt, Lt/],
        ["a restricted karpenter.sh label", "nodePool", (o) => (o.spec.template.metadata.labels["karpenter.sh/custom"] = "x"), "spec.template.metadata.labels", /label domain "karpenter\.sh" is restricted/],
        ["a requirement on kubernetes.io/hostname", "nodePool", (o) => o.spec.template.spec.requirements.push({ key: "kubernetes.io/hostname", operator: "Exists" }), "spec.template.spec.requirements[5].key", /label "kubernetes\.io\/hostname" is restricted/],
        ["consolidateAfter as a day", "nodePool", (o) => (o.spec.disruption.consolidateAfter = "1d"), "spec.disruption.consolidateAfter", /must match/],
        ["an unknown consolidation policy", "nodePool", (o) => (o.spec.disruption.consolidationPolicy = "WhenUnderutilized"), "spec.disruption.consolidationPolicy", /must be one of WhenEmpty, WhenEmptyOrUnderutilized, Balanced/],
        ["a weight above 100", "nodePool", (o) => (o.spec.weight = 101), "spec.weight", /must be at most 100/],
        ["no nodeClassRef", "nodePool", (o) => delete o.spec.template.spec.nodeClassRef, "spec.template.spec.nodeClassRef", /is required/],
        ["both role and instanceProfile", "nodeClass", (o) => (o.spec.instanceProfile = "profile"), "spec", /must specify exactly one of \['role', 'instanceProfile'\]/],
        ["an alias with an id in one AMI term", "nodeClass", (o) => (o.spec.amiSelectorTerms = [{ alias: "al2023@v20251117", id: "ami-0123" }]), "spec.amiSelectorTerms", /'id' is mutually exclusive/],
        ["an alias beside another AMI term", "nodeClass", (o) => (o.spec.amiSelectorTerms = [{ alias: "al2023@v20251117" }, { id: "ami-0123" }]), "spec.amiSelectorTerms", /'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms/],
        ["an AL2 alias with the AL2023 family", "nodeClass", (o) => (o.spec.amiSelectorTerms = [{ alias: "al2@v20251117" }]), "spec", /amiFamily must be 'AL2' or 'Custom' when using an AL2 alias/],
        ["a kubelet field misspelled", "nodeClass", (o) => (o.spec.kubelet.evictionHardd = {}), "spec.kubelet.evictionHardd", /not a field of the v1\.14\.1 EC2NodeClass schema/],
        ["an unknown eviction signal", "nodeClass", (o) => (o.spec.kubelet.evictionHard["memory.free"] = "500Mi"), "spec.kubelet.evictionHard", /valid keys for evictionHard are/],
        ["a negative kube reservation", "nodeClass", (o) => (o.spec.kubelet.kubeReserved.cpu = "-100m"), "spec.kubelet.kubeReserved", /cannot be a negative resource quantity/],
        ["a hop limit of 0", "nodeClass", (o) => (o.spec.metadataOptions.httpPutResponseHopLimit = 0), "spec.metadataOptions.httpPutResponseHopLimit", /must be at least 1/],
        ["a restricted tag", "nodeClass", (o) => (o.spec.tags["kubernetes.io/cluster/x"] = "owned"), "spec.tags", /restricted tag matching kubernetes\.io\/cluster\//],
        ["a root volume in GB words", "nodeClass", (o) => (o.spec.blockDeviceMappings[0].ebs.volumeSize = "80 GB"), "spec.blockDeviceMappings[0].ebs.volumeSize", /must match/],
        ["no subnet selector", "nodeClass", (o) => (o.spec.subnetSelectorTerms = []), "spec.subnetSelectorTerms", /subnetSelectorTerms cannot be empty/],
    ];
    for (const [what, which, mutate, path, message] of cases) {
        it(`rejects ${what} at ${path}`, () => {
            const objects = validObjects();
            mutate(objects[which]);
            const issues = validateKarpenterObject(objects[which]);
            expect(issues.map((i) => i.path), JSON.stringify(issues)).to.include(path);
            expect(issues.find((i) => i.path === path)!.message).to.match(message);
        });
    }

    it("rejects an instance type outside the approved list, and a pool without an instance-type bound", () => {
        const { nodePool } = validObjects();
        nodePool.spec.template.spec.requirements[0].values.push("p5.48xlarge");
        expect(approvedTypeProblems(nodePool, expectedTypes.staging)).to.deep.equal(['NodePool "notify-karpenter" allows instance types outside the approved list: p5.48xlarge']);
        nodePool.spec.template.spec.requirements.shift();
        expect(approvedTypeProblems(nodePool, expectedTypes.staging)[0]).to.match(/no "node\.kubernetes\.io\/instance-type In" requirement/);
    });
});

describe("EphemeralNodePool config", () => {
    const bad: [string, Record<string, unknown>, RegExp][] = [
        ["a budget schedule without a duration", { budgets: [{ nodes: "0", schedule: "0 13 * * mon-fri" }] }, /^staging: notify-karpenter:nodePool\.budgets\[0\] must set schedule and duration together: the budget applies for duration from each time schedule fires$/m],
        ["an unpinned AMI alias", { ami: { alias: "al2023@latest" } }, /notify-karpenter:nodePool would make ami: alias "al2023@latest" follows every new AMI/],
        ["both instance type forms", { instanceTypes: ["c7i.xlarge"] }, /notify-karpenter:nodePool\.instanceTypes or instanceFamilies with instanceSizes \(but not both forms\)/],
        ["a bad capacity type", { capacityTypes: ["reserved"] }, /notify-karpenter:nodePool\.capacityTypes\[0\] must be one of "spot", "on-demand"/],
        ["a restricted ephemeral label", { ephemeralKey: "karpenter.sh/ephemeral" }, /NodePool "notify-karpenter" spec\.template\.metadata\.labels: label domain "karpenter\.sh" is restricted/],
    ];
    for (const [what, patch, expected] of bad) {
        it(`rejects ${what}, naming the stack, object and field`, async () => {
            expect(await configErrorOf("staging", patchSections("staging", { nodePool: patch }))).to.match(expected);
        });
    }

    it("accepts @latest only when allowLatestAmi says so", async () => {
        expect(await configErrorOf("staging", patchSections("staging", { nodePool: { ami: { alias: "al2023@latest" }, allowLatestAmi: true } }))).to.equal("");
    });
});

describe("EphemeralNodePool warnings", () => {
    const base = (): EphemeralNodePoolArgs => nodePoolArgs(stackConfig("production"), "role");

    it("reads instance shapes and quantities", () => {
        expect(instanceShape("c7i.xlarge")).to.deep.equal({ vcpu: 4, memoryGiB: 8 });
        expect(instanceShape("r6a.2xlarge")).to.deep.equal({ vcpu: 8, memoryGiB: 64 });
        expect(instanceShape("t3.micro")).to.deep.equal({ vcpu: 2, memoryGiB: 1 });
        expect(instanceShape("m7z.xlarge")).to.equal(undefined);
        expect(quantityValue("550m", "cores")).to.equal(0.55);
        expect(quantityValue("1250Mi", "GiB")).to.be.closeTo(1.2207, 0.001);
    });

    it("is silent for production's config", () => {
        expect(nodePoolWarnings(base())).to.deep.equal([]);
    });

    it("warns when spot-to-spot consolidation has fewer than 15 types", () => {
        expect(nodePoolWarnings({ ...base(), instanceTypes: expectedTypes.staging })[0]).to.match(/allows 12 instance types; spot-to-spot consolidation needs at least 15/);
        expect(nodePoolWarnings({ ...base(), instanceTypes: expectedTypes.staging, spotToSpotConsolidation: false })).to.deep.equal([]);
    });

    it("warns when a type cannot fit one Celery pod next to the daemonsets", () => {
        const w = nodePoolWarnings({ ...base(), instanceTypes: [...expectedTypes.production, "c7i.large"], capacityCheck: { ...base().capacityCheck!, celeryPodCpu: "1500m" } });
        expect(w).to.include("instance types c7i.large cannot fit one Celery pod (1500m cpu, 1250Mi) next to the daemonsets");
    });

    it("warns when the limits are below the configured peak", () => {
        const w = nodePoolWarnings({ ...base(), limits: { cpu: "40", memory: "1000Gi" } });
        expect(w[0]).to.match(/limits \(cpu 40, memory 1000Gi\) are below what 100 Celery pods need \(cpu 55/);
    });
});
