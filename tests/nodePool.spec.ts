import { expect } from "chai";
import { type EphemeralNodePoolArgs, approvedTypeProblems, instanceShape, nodePoolFindings, nodePoolWarnings, quantityValue, renderNodePool } from "../components/models/nodePool.ts";
import { type KarpenterObject, validateKarpenterObject } from "../components/karpenter/validate.ts";
import { QUARTERLY_RUNS, quarterlyGaps } from "../components/models/disruptionBudgets.ts";
import { nodePoolArgs } from "../stacks/componentArgs.ts";
import { knownStacks } from "../stacks/stackNames.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { STACKS, buildStack, configErrorOf, patchSections, rawConfig, stackConfig } from "./helpers.ts";

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
                tags: { CostCenter: `notification-canada-ca-${stack}` },
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
            // No expiry: it ignores budgets (Karpenter v1.14.1 pkg/controllers/nodeclaim/expiration/controller.go:71-81).
            expect(spec.template.spec).to.include({ expireAfter: "Never", terminationGracePeriod: "1h" });
            expect(spec.template.spec.nodeClassRef).to.deep.equal({ group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "notify-karpenter" });
            expect(spec.template).to.not.have.property("disruption");
            // Underutilized and Drifted forbidden 12:00-23:00 UTC, every day: 08:00-18:00 Eastern in EST and EDT (budget
            // schedules are UTC: pkg/apis/v1/nodepool.go:416); empty nodes still go, 10 % at a time.
            expect(spec.disruption).to.deep.equal({
                consolidationPolicy: "WhenEmptyOrUnderutilized",
                consolidateAfter: "30m",
                budgets: [
                    { nodes: "10%" },
                    { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" },
                    { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" },
                    // GC Notify's quarterly tasks, 23:00 UTC on days 1-3 of January, April, July and October, until 01:00.
                    { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 23 1-3 1,4,7,10 *", duration: "2h" },
                ],
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
        ["Gt with a word, which the CRD's int() cannot read", "nodePool", (o) => o.spec.template.spec.requirements.push({ key: "karpenter.k8s.aws/instance-cpu", operator: "Gt", values: ["four"] }), "spec.template.spec.requirements", /single positive integer value \(the rule could not be evaluated/],
        ["a budget reason twice (reasons is a set list)", "nodePool", (o) => (o.spec.disruption.budgets[1].reasons = ["Drifted", "Drifted"]), "spec.disruption.budgets[1].reasons", /must not repeat a value/],
        ["a requirement on a karpenter.k8s.aws label Karpenter does not allow", "nodePool", (o) => o.spec.template.spec.requirements.push({ key: "karpenter.k8s.aws/instance-price", operator: "Exists" }), "spec.template.spec.requirements[5].key", /label domain "karpenter\.k8s\.aws" is restricted/],
        ["a restricted karpenter.sh label", "nodePool", (o) => (o.spec.template.metadata.labels["karpenter.sh/custom"] = "x"), "spec.template.metadata.labels", /label domain "karpenter\.sh" is restricted/],
        ["a requirement on kubernetes.io/hostname", "nodePool", (o) => o.spec.template.spec.requirements.push({ key: "kubernetes.io/hostname", operator: "Exists" }), "spec.template.spec.requirements[5].key", /label "kubernetes\.io\/hostname" is restricted/],
        ["expireAfter as a day", "nodePool", (o) => (o.spec.template.spec.expireAfter = "1d"), "spec.template.spec.expireAfter", /must match/],
        ["a budget of nodes as a fraction", "nodePool", (o) => (o.spec.disruption.budgets[1].nodes = "0.5"), "spec.disruption.budgets[1].nodes", /must match/],
        ["a budget schedule of four fields", "nodePool", (o) => (o.spec.disruption.budgets[1].schedule = "0 12 * *"), "spec.disruption.budgets[1].schedule", /must match/],
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

    it("accepts the karpenter.k8s.aws labels the CRD lists as allowed, such as instance-family", () => {
        const { nodePool } = validObjects();
        nodePool.spec.template.spec.requirements.push({ key: "karpenter.k8s.aws/instance-family", operator: "In", values: ["c7i"] });
        expect(validateKarpenterObject(nodePool)).to.deep.equal([]);
    });

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

    it("gives production's config the one warning its stack file acknowledges: a lone xlarge node is never replaced alone", () => {
        expect(nodePoolFindings(base()).map((w) => w.id)).to.deep.equal(["spot-to-spot-single-node"]);
        expect(nodePoolFindings(base())[0].message).to.include("and 12 types are of size xlarge (4 vCPUs)");
        expect(nodePoolFindings({ ...base(), spotToSpotConsolidation: false })).to.deep.equal([]);
    });

    it("warns that spot-to-spot does nothing under WhenEmpty, for that reason and not the type count", () => {
        // consolidation.go:130-134 at v1.14.1: WhenEmpty skips every node that still has pods; a replacement needs one.
        expect(nodePoolWarnings({ ...base(), consolidationPolicy: "WhenEmpty" })).to.deep.equal([
            'NodePool "notify-karpenter": spot-to-spot consolidation does nothing here: it replaces a running spot node with a cheaper one, and consolidationPolicy is WhenEmpty, which never disrupts a node that still has pods. It costs nothing but misleads: set controller.spotToSpotConsolidation to false',
        ]);
        expect(nodePoolWarnings({ ...base(), consolidateAfter: "Never" })[0]).to.match(/does nothing here: .* and consolidateAfter is Never\. It costs nothing/);
        expect(nodePoolWarnings({ ...base(), consolidationPolicy: "WhenEmpty", spotToSpotConsolidation: false })).to.deep.equal([]);
    });

    it("warns when too few types leave 15 cheaper ones for a single spot node (consolidation.go:48, :311-315)", () => {
        expect(nodePoolWarnings({ ...base(), instanceTypes: expectedTypes.staging })[0]).to.equal(
            'NodePool "notify-karpenter": a lone spot node of the smallest approved size is never replaced by a cheaper one: Karpenter needs at least 15 cheaper approved types to replace one node (v1.14.1 consolidation.go:311), and the pool approves 12 types (4 vCPUs). Cost: such a node, underused, runs until it empties or is consolidated with others. To act: approve at least 16 types of that size, or acknowledge it',
        );
        expect(nodePoolWarnings({ ...base(), instanceTypes: expectedTypes.staging, spotToSpotConsolidation: false })).to.deep.equal([]);
        expect(nodePoolWarnings({ ...base(), instanceTypes: expectedTypes.staging, capacityTypes: ["on-demand"] })).to.deep.equal([]);
    });

    it("warns when a type cannot fit one Celery pod next to the daemonsets", () => {
        const w = nodePoolWarnings({ ...base(), instanceTypes: [...expectedTypes.production, "c7i.large"], capacityCheck: { ...base().capacityCheck!, celeryPodCpu: "1500m" } });
        expect(w.find((m) => m.startsWith("instance types"))).to.equal(
            "instance types c7i.large cannot fit one Celery pod (1500m cpu, 1250Mi) next to the daemonsets: Karpenter never launches them for burst pods, so they only seem to widen the spot choice. To act: remove them from nodePool, or correct nodePool.capacityCheck",
        );
    });

    it("warns when the limits are below the configured peak", () => {
        const w = nodePoolWarnings({ ...base(), limits: { cpu: "40", memory: "1000Gi" } });
        expect(w.find((m) => m.includes("limits"))).to.match(/limits \(cpu 40, memory 1000Gi\) are below what 100 Celery pods need \(cpu 55, .*; pods past the limit stay pending and the burst queues back up\. To act: raise nodePool\.limits/);
    });
});

describe("Disruption policy config: no Underutilized disruption, expiry or drift in sending hours or the nightly batch", () => {
    const pool = (patch: Record<string, unknown>) => errorOfConfig(() => parseStackConfig("staging", rawConfig("staging", "nodePool", patch)));
    const budget = (schedule: string, duration: string, reasons = ["Underutilized", "Drifted"]) => ({ nodes: "0", reasons, schedule, duration });
    // The stack files' nightly budget: 05:00-10:30 UTC every day.
    const NIGHT = budget("0 5 * * *", "5h30m");
    // The stack files' budget for GC Notify's quarterly tasks: 23:00-01:00 UTC on days 1-3 of their months.
    const QUARTER = budget("0 23 1-3 1,4,7,10 *", "2h");
    const example = '{ nodes: "0", reasons: [Underutilized, Drifted], schedule: "0 12 * * *", duration: 11h }, which covers 08:00-18:00 America/Toronto all year';
    const nightExample = '{ nodes: "0", reasons: [Underutilized, Drifted], schedule: "0 5 * * *", duration: 5h30m }, which covers 05:00-10:30 Etc/UTC all year';

    it("refuses WhenEmptyOrUnderutilized without a budget forbidding Underutilized in sending hours, in one line naming the key", () => {
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h", ["Drifted"]), NIGHT, QUARTER] })).to.equal(
            `staging: notify-karpenter:nodePool.budgets must allow no Underutilized disruption (nodes "0") throughout sendingHours (08:00-18:00 America/Toronto), since consolidationPolicy is WhenEmptyOrUnderutilized: it is allowed on 2026-01-01 13:00 UTC (08:00 local), which would drain nodes under running batches; add a budget such as ${example}`,
        );
        // Balanced consolidates underutilized nodes too.
        expect(pool({ consolidationPolicy: "Balanced", budgets: [{ nodes: "10%" }, NIGHT, QUARTER] })).to.match(/^staging: notify-karpenter:nodePool\.budgets must allow no Underutilized or Drifted disruption .* since consolidationPolicy is Balanced, and expireAfter is Never/);
    });

    it("refuses budgets that leave a gap in the nightly batch, in one line naming the key", () => {
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), QUARTER] })).to.equal(
            `staging: notify-karpenter:nodePool.budgets must allow no Underutilized or Drifted disruption (nodes "0") throughout nightlyBatch (05:00-10:30 Etc/UTC), since consolidationPolicy is WhenEmptyOrUnderutilized, and expireAfter is Never, so drift (a new AMI, a changed NodePool, the recycler) is what replaces nodes: it is allowed on 2026-01-01 05:00 UTC (05:00 local), which would drain nodes under GC Notify's nightly tasks; add a budget such as ${nightExample}`,
        );
        // Until 10:00 only: the deletes GC Notify sizes at 35 minutes from 09:45 still run.
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), budget("0 5 * * *", "5h"), QUARTER] })).to.match(/throughout nightlyBatch .*: it is allowed on 2026-01-01 10:00 UTC \(10:00 local\)/);
        // Drifted alone left out: the recycler's marks and a new AMI would replace nodes under the nightly tasks.
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), budget("0 5 * * *", "5h30m", ["Underutilized"]), QUARTER] })).to.match(
            /^staging: notify-karpenter:nodePool\.budgets must allow no Drifted disruption \(nodes "0"\) throughout nightlyBatch/,
        );
        // Both windows uncovered: one line each.
        expect(pool({ budgets: [{ nodes: "10%" }, QUARTER] }).split("\n").map((l) => l.match(/throughout (\w+)/)![1])).to.deep.equal(["sendingHours", "nightlyBatch"]);
    });

    it("reads a nightly batch given in Eastern time in EST and EDT, across the changes of clock", () => {
        // 01:00-05:30 Eastern: 06:00-10:30 UTC in EST, 05:00-09:30 UTC in EDT. On 8 March clocks go forward at 02:00
        // (01:00 is still EST, 06:00 UTC); on 1 November back at 02:00 (01:00 is EDT, 05:00 UTC, and 01:00-02:00 comes twice).
        const eastern = { nightlyBatch: { start: "01:00", end: "05:30", timeZone: "America/Toronto" } };
        // One UTC window over both seasons, as the example says.
        expect(pool({ ...eastern, budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), NIGHT, QUARTER] })).to.equal("");
        // Winter's UTC window alone: EDT's first night (9 March, 01:00 EDT = 05:00 UTC) is not covered.
        expect(pool({ ...eastern, budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), budget("0 6 * * *", "4h30m"), QUARTER] })).to.match(
            /throughout nightlyBatch \(01:00-05:30 America\/Toronto\), .*: it is allowed on 2026-03-09 05:00 UTC \(01:00 local\), .* schedule: "0 5 \* \* \*", duration: 5h30m \}/,
        );
        // Summer's alone (05:00-09:30 UTC): winter nights run to 10:30 UTC, uncovered from 09:30 (04:30 EST) on 1 January.
        expect(pool({ ...eastern, budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), budget("0 5 * * *", "4h30m"), QUARTER] })).to.match(/it is allowed on 2026-01-01 09:30 UTC \(04:30 local\)/);
        // Seasonal windows by month: 1 November's night is still EDT (01:00 EDT = 05:00 UTC), so a winter window from
        // November misses 05:00-06:00 UTC that night (a model that took each day's noon offset would miss it too).
        const seasonal = [budget("0 5 * 3-10 *", "5h30m"), budget("0 6 * 1,2,11,12 *", "4h30m")];
        expect(pool({ ...eastern, budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), ...seasonal, QUARTER] })).to.match(/it is allowed on 2026-11-01 05:00 UTC \(01:00 local\)/);
        // Summer's window through November covers it.
        const overlapping = [budget("0 5 * 3-11 *", "5h30m"), budget("0 6 * 1,2,12 *", "4h30m")];
        expect(pool({ ...eastern, budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h"), ...overlapping, QUARTER] })).to.equal("");
    });

    it("refuses a UTC window that covers only winter time, or only weekdays (schedules are UTC: nodepool.go:416)", () => {
        // 13:00-23:00 UTC is 08:00-18:00 EST, but 09:00-19:00 EDT: 08:00 EDT on the day clocks change is not covered.
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 13 * * *", "10h"), NIGHT, QUARTER] })).to.match(/throughout sendingHours .*: it is allowed on 2026-03-08 12:00 UTC \(08:00 local\)/);
        // 3 January 2026 is a Saturday.
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * mon-fri", "11h"), NIGHT, QUARTER] })).to.match(/: it is allowed on 2026-01-03 13:00 UTC \(08:00 local\)/);
        // A 10 % budget limits how many nodes go at once, not whether.
        expect(pool({ budgets: [{ nodes: "10%" }, { nodes: "1", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" }, NIGHT, QUARTER] })).to.match(/must allow no Underutilized or Drifted disruption/);
    });

    it("accepts two seasonal windows that cover EDT and EST, and the stack files' windows: 12:00-23:00 and 05:00-10:30 UTC", () => {
        // 12:00-22:00 UTC all year (08:00-18:00 EDT), plus 22:00-23:00 UTC from November to March (18:00 EST).
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "10h"), budget("0 22 * 1-3,11,12 *", "1h"), NIGHT, QUARTER] })).to.equal("");
        // One budget over both windows, 05:00-23:00 UTC, does it too.
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 5 * * *", "18h"), QUARTER] })).to.equal("");
        expect(pool({})).to.equal("");
    });

    it("reads GC Notify's quarterly tasks as its Celery beat schedules them (notification-api 72e3ae1e app/config.py:561-609, at 23:00 UTC)", () => {
        // Task, day of month, month, as the beat schedule lists them (its comment on send-quarterly-email-q3 says 2nd Jan; the crontab says 3).
        const beat = [
            ["insert-quarter-data-for-annual-limits", 1, 7],
            ["insert-quarter-data-for-annual-limits", 1, 10],
            ["insert-quarter-data-for-annual-limits", 1, 1],
            ["insert-quarter-data-for-annual-limits", 1, 4],
            ["send-quarterly-email", 2, 7],
            ["send-quarterly-email", 2, 10],
            ["send-quarterly-email", 3, 1],
        ];
        const key = ([task, day, month]: (string | number)[]) => `${task} ${month}-${day}`;
        expect(QUARTERLY_RUNS.map((r) => key([r.task, r.day, r.month])).sort()).to.deep.equal(beat.map(key).sort());
    });

    it("keeps Underutilized and Drifted out of the 2 h from each quarterly task's start in every stack file and by default, and refuses budgets that do not", () => {
        const budgetsOf = (stack: string, patch: Record<string, unknown> = {}) => parseStackConfig(stack, rawConfig(stack, "nodePool", patch)).nodePool.budgets;
        const stacks = knownStacks();
        expect(stacks).to.include.members(["staging", "production", "scratch"]);
        for (const [name, budgets] of [...stacks.map((s) => [s, budgetsOf(s)] as const), ["the default budgets", budgetsOf("staging", { budgets: undefined })] as const]) {
            expect([...quarterlyGaps(budgets, "Underutilized"), ...quarterlyGaps(budgets, "Drifted")], name).to.deep.equal([]);
        }
        // Without the quarterly budget, the sending-hours budget ends as each run starts: every run is open from its first minute.
        const others = budgetsOf("staging").filter((b) => !b.schedule?.startsWith("0 23 "));
        expect(quarterlyGaps(others, "Drifted")).to.deep.equal(QUARTERLY_RUNS.map((r) => ({ ...r, minute: 0 })));
        expect(pool({ budgets: others })).to.equal(
            'staging: notify-karpenter:nodePool.budgets must allow no Underutilized or Drifted disruption (nodes "0") for 2 h from 23:00 UTC on the days GC Notify\'s quarterly tasks start (1 January, April, July and October; 2 July and October; 3 January), since consolidationPolicy is WhenEmptyOrUnderutilized, and expireAfter is Never, so drift (a new AMI, a changed NodePool, the recycler) is what replaces nodes: it is allowed on 2026-01-01 23:00 UTC, which would drain nodes under insert-quarter-data-for-annual-limits, whose run Celery has already acknowledged; add a budget such as { nodes: "0", reasons: [Underutilized, Drifted], schedule: "0 23 1-3 1,4,7,10 *", duration: 2h }',
        );
        // One hour is not enough; the budget's open second hour is named.
        expect(pool({ budgets: [...others, budget("0 23 1-3 1,4,7,10 *", "1h")] })).to.match(/it is allowed on 2026-01-02 00:00 UTC, which would drain nodes under insert-quarter-data-for-annual-limits/);
        // WhenEmpty with an expiry needs neither reason held back: nothing to refuse here.
        expect(pool({ budgets: others, consolidationPolicy: "WhenEmpty", expireAfter: "720h" })).to.not.match(/quarterly/);
    });

    it("refuses an expireAfter that expires a node launched at any minute of the day inside sending hours: 24h, 720h, and 36h too", () => {
        // Expiry ignores budgets (expiration/controller.go:71-83): 24 h after a burst at 08:00 is the next 08:00; so is 720 h.
        expect(pool({ expireAfter: "24h" })).to.equal(
            "staging: notify-karpenter:nodePool.expireAfter must not expire inside sendingHours (08:00-18:00 America/Toronto) a node launched at any minute of the day, since expiry ignores budgets and nodes launch at every hour (bursts, spot replacements, consolidation and recycling at night): with 24h, a node launched 2026-01-01 at 08:00 local expires 2026-01-02 at 08:00 local; use Never, with drift kept out of sending hours by a budget, and bound node age with nodePool.recycle.maxAgeDays, which replaces nodes one at a time outside sending hours and the nightly batch",
        );
        expect(pool({ expireAfter: "720h" })).to.match(/expireAfter must not expire .* with 720h/);
        // 36 h spares the nodes of a burst (08:00-18:00 ends 20:00-06:00), not one launched at midnight (tests/config.spec.ts).
        expect(pool({ expireAfter: "36h" })).to.match(/with 36h, a node launched 2026-01-01 at 00:00 local expires 2026-01-02 at 12:00 local/);
    });

    it("refuses expireAfter Never without a budget keeping drift out of sending hours", () => {
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * *", "11h", ["Underutilized"]), NIGHT] })).to.match(
            /^staging: notify-karpenter:nodePool\.budgets must allow no Drifted disruption \(nodes "0"\) throughout sendingHours \(08:00-18:00 America\/Toronto\), since expireAfter is Never, so drift \(a new AMI, a changed NodePool, the recycler\) is what replaces nodes: it is allowed on 2026-01-01 13:00 UTC/,
        );
    });

    it("refuses a schedule Karpenter's cron cannot parse (it would block every disruption the budget governs) and an unknown time zone", () => {
        expect(pool({ budgets: [{ nodes: "10%" }, budget("0 12 * * 7", "11h"), NIGHT] })).to.equal(
            'staging: notify-karpenter:nodePool.budgets[1].schedule must be a cron schedule in UTC: the day of week field "7" has 7: it must be 0-6 or sun-sat (got "0 12 * * 7")',
        );
        expect(pool({ sendingHours: { start: "08:00", end: "18:00", timeZone: "Eastern" } })).to.equal(
            'staging: notify-karpenter:nodePool.sendingHours.timeZone must be an IANA time zone such as America/Toronto (got "Eastern")',
        );
        expect(pool({ nightlyBatch: { start: "05:00", end: "10:30", timeZone: "UTC+0" } })).to.equal(
            'staging: notify-karpenter:nodePool.nightlyBatch.timeZone must be an IANA time zone such as America/Toronto (got "UTC+0")',
        );
        expect(pool({ nightlyBatch: { start: "5:00", end: "10:30", timeZone: "Etc/UTC" } })).to.equal('staging: notify-karpenter:nodePool.nightlyBatch.start must be a local time such as 05:00 (got "5:00")');
    });

    it("keeps Celery's grace period check: the node's terminationGracePeriod must cover the pods'", () => {
        expect(pool({ terminationGracePeriod: "30s" })).to.match(/nodePool\.terminationGracePeriod must be at least 3010s, the grace period of notify-celery-periodic-burst/);
    });
});

function errorOfConfig(fn: () => unknown): string {
    try {
        fn();
        return "";
    } catch (e) {
        return (e as Error).message;
    }
}
