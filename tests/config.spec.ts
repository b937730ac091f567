import { expect } from "chai";
import { parseStackConfig } from "../stacks/validatedConfig";
import { readStackConfig } from "../plan/offlineRuntime";
import { STACKS, configErrorOf, errorOf, patchSections, rawConfig, section } from "./helpers";

describe("stack config", () => {
    for (const stack of STACKS) {
        it(`${stack}: the stack file is valid and complete`, () => {
            const cfg = parseStackConfig(stack, rawConfig(stack));
            expect(cfg.stack).to.equal(stack);
            expect(cfg.cluster.name).to.equal(`notification-canada-ca-${stack}-eks-cluster`);
            expect(cfg.cluster.region).to.equal("ca-central-1");
            expect(cfg.controller.version).to.equal("1.14.1");
        });
    }

    it("staging and production set the same keys; only values differ", () => {
        const shape = (v: unknown): unknown =>
            v && typeof v === "object" && !Array.isArray(v)
                ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]).sort())
                : typeof v;
        const keysOf = (stack: string) => {
            const flat = readStackConfig(stack);
            return Object.fromEntries(Object.keys(flat).sort().map((k) => [k, shape(JSON.parse(flat[k].startsWith("[") || flat[k].startsWith("{") ? flat[k] : JSON.stringify(flat[k])))]));
        };
        expect(keysOf("production")).to.deep.equal(keysOf("staging"));
    });

    it("both stack files disable default providers", () => {
        for (const stack of STACKS) expect(readStackConfig(stack)["pulumi:disable-default-providers"]).to.equal('["*"]');
    });

    it("uses documented defaults for optional keys", () => {
        const raw = rawConfig("staging");
        raw.controller = { version: "1.14.1" };
        const cfg = parseStackConfig("staging", raw);
        expect(cfg.controller).to.include({ namespace: "karpenter", serviceAccount: "karpenter", identity: "pod-identity", replicas: 2, cpu: "1", memory: "1Gi" });
        expect(cfg.controller.spotToSpotConsolidation).to.equal(false);
        expect(cfg.controller.nodeRolePolicyArns).to.deep.equal([]);
    });

    // Each bad value must be reported with the stack, the full key path and what is allowed.
    const badCases: [string, string, Record<string, unknown>, RegExp][] = [
        ["replicas as a word", "controller", { replicas: "two" }, /^staging: notify-karpenter:controller\.replicas must be an integer from 1 to 10 \(got "two"\)$/m],
        ["replicas out of range", "controller", { replicas: 11 }, /notify-karpenter:controller\.replicas must be an integer from 1 to 10 \(got 11\)/],
        ["an unknown version", "controller", { version: "1.3.2" }, /notify-karpenter:controller\.version must be "1\.14\.1" \(got "1\.3\.2"\)/],
        ["a misspelled key", "controller", { replica: 2 }, /notify-karpenter:controller\.replica is not a known key \(did you mean "replicas"\?\)/],
        ["an unknown identity", "controller", { identity: "kiam" }, /notify-karpenter:controller\.identity must be one of "pod-identity", "irsa" \(got "kiam"\)/],
        ["a bad namespace", "controller", { namespace: "Karpenter" }, /notify-karpenter:controller\.namespace must be a Kubernetes name/],
        ["a bad cpu quantity", "controller", { cpu: "one" }, /notify-karpenter:controller\.cpu must be a Kubernetes quantity/],
        ["a bad duration", "controller", { batchMaxDuration: "10 seconds" }, /notify-karpenter:controller\.batchMaxDuration must be a duration of at least 1s such as 90s, 30m or 24h \(got "10 seconds"\)/],
        ["a feature gate as a string", "controller", { spotToSpotConsolidation: "yes" }, /notify-karpenter:controller\.spotToSpotConsolidation must be true or false \(got "yes"\)/],
        ["node role policies with an existing role", "controller", { nodeRolePolicyArns: ["arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"] }, /notify-karpenter:controller\.nodeRolePolicyArns must be empty when existingNodeRoleName is set/],
        ["a bad policy ARN", "controller", { existingNodeRoleName: undefined, nodeRolePolicyArns: ["CloudWatchAgentServerPolicy"] }, /notify-karpenter:controller\.nodeRolePolicyArns\[0\] must be an IAM policy ARN/],
        ["a bad region", "cluster", { region: "canada" }, /notify-karpenter:cluster\.region must be an AWS region such as ca-central-1 \(got "canada"\)/],
        ["a missing cluster name", "cluster", { name: undefined }, /notify-karpenter:cluster\.name is required: it must be an EKS cluster name/],
        ["an empty stable node selector", "cluster", { stableNodeSelector: {} }, /notify-karpenter:cluster\.stableNodeSelector must name at least one label of the stable nodes/],
        ["a bad stable node label", "cluster", { stableNodeSelector: { "bad key!": "x" } }, /notify-karpenter:cluster\.stableNodeSelector\.bad key! is not a valid key/],
        ["a name prefix too long for AWS names", "controller", { namePrefix: "notification-canada-ca-staging-eks-cluster1" }, /notify-karpenter:controller\.namePrefix must be a name prefix \(letters, digits and -, at most 40 characters\)/],
    ];
    for (const [what, key, patch, expected] of badCases) {
        it(`rejects ${what}, naming the key`, () => {
            const raw = rawConfig("staging", key, patch);
            expect(errorOf(() => parseStackConfig("staging", raw))).to.match(expected);
        });
    }

    it("rejects a cluster name that makes an AWS name too long, and says which key fixes it", () => {
        const raw = rawConfig("production", "cluster", { name: "notification-canada-ca-production-eks-cluster-with-a-suffix" });
        const msg = errorOf(() => parseStackConfig("production", raw));
        expect(msg).to.match(/^production: notify-karpenter:cluster\.name gives the IAM role name "notification-canada-ca-production-eks-cluster-with-a-suffix-karpenter" 69 characters; AWS allows at most 64; set notify-karpenter:controller\.namePrefix/m);
    });

    it("rejects an unknown top-level key in the project namespace", () => {
        const raw = { ...rawConfig("staging"), controler: {} };
        expect(errorOf(() => parseStackConfig("staging", raw))).to.match(/notify-karpenter:controler is not a known key \(did you mean "controller"\?\)/);
    });

    it("reports every problem at once, one per line", () => {
        const raw = rawConfig("staging", "controller", { replicas: 0, logLevel: "verbose" });
        const lines = errorOf(() => parseStackConfig("staging", raw)).split("\n");
        expect(lines).to.have.length(2);
        expect(lines[0]).to.match(/controller\.replicas/);
        expect(lines[1]).to.match(/controller\.logLevel must be one of "debug", "info", "error"/);
    });

    it("loadConfig reads the real stack file through Pulumi config and fails before any resource exists", async () => {
        const msg = await configErrorOf("staging", patchSections("staging", { controller: { replicas: "two" } }));
        expect(msg).to.equal('staging: notify-karpenter:controller.replicas must be an integer from 1 to 10 (got "two")');
        expect(section("production", "cluster").name).to.equal("notification-canada-ca-production-eks-cluster");
    });
});
