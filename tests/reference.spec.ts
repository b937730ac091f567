// Drift check against the official Karpenter v1.14.1 files. They are not part of this project; CI points
// KARPENTER_REFERENCE_DIR at a copy, and elsewhere these tests are skipped (and say so).
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { controllerPolicies, interruptionQueuePolicy, interruptionRules } from "../components/models/controllerPolicy.ts";
import { GENERATED_MODULE } from "../scripts/generate-karpenter-schema.ts";
import { generateKarpenterModule } from "../components/karpenter/generate.ts";
import { CHART_VALUE_KEYS } from "./chartValueKeys.ts";

const dir = process.env.KARPENTER_REFERENCE_DIR;
const ctx = {
    partition: "aws",
    region: "ca-central-1",
    accountId: "123456789012",
    clusterName: "notification-canada-ca-staging-eks-cluster",
    nodeRoleArn: "arn:aws:iam::123456789012:role/node",
    queueArn: "arn:aws:sqs:ca-central-1:123456789012:queue",
};

/** Reads the CloudFormation template, resolving !Sub, !GetAtt and !Ref against `ctx`. */
function template(): Record<string, any> {
    const sub = (s: string) =>
        s
            .replaceAll("${AWS::Partition}", ctx.partition)
            .replaceAll("${AWS::Region}", ctx.region)
            .replaceAll("${AWS::AccountId}", ctx.accountId)
            .replaceAll("${AWS::URLSuffix}", "amazonaws.com")
            .replaceAll("${ClusterName}", ctx.clusterName)
            .replaceAll("${KarpenterNodeRole.Arn}", ctx.nodeRoleArn)
            .replaceAll("${KarpenterInterruptionQueue.Arn}", ctx.queueArn);
    const getAtt = (s: string) => (s === "KarpenterInterruptionQueue.Arn" ? ctx.queueArn : `GetAtt:${s}`);
    return parse(fs.readFileSync(path.join(dir!, "cloudformation.yaml"), "utf8"), {
        customTags: [
            { tag: "!Sub", resolve: (s: string) => sub(s) },
            { tag: "!GetAtt", resolve: (s: string) => getAtt(s) },
            { tag: "!Ref", resolve: (s: string) => `Ref:${s}` },
        ],
    }).Resources;
}

(dir ? describe : describe.skip)("drift from the Karpenter v1.14.1 reference files (KARPENTER_REFERENCE_DIR)", () => {
    it("each controller policy equals the reference template's, statement for statement", () => {
        const resources = template();
        const ours = controllerPolicies(ctx);
        const map = {
            NodeLifecyclePolicy: "node-lifecycle",
            IAMIntegrationPolicy: "iam-integration",
            EKSIntegrationPolicy: "eks-integration",
            InterruptionPolicy: "interruption",
            ZonalShiftPolicy: "zonal-shift",
            ResourceDiscoveryPolicy: "resource-discovery",
        } as const;
        const managedPolicies = Object.keys(resources).filter((k) => resources[k].Type === "AWS::IAM::ManagedPolicy");
        expect(managedPolicies).to.have.members(Object.keys(map));
        for (const [cfn, key] of Object.entries(map)) {
            const doc = resources[cfn].Properties.PolicyDocument;
            expect(ours[key], cfn).to.deep.equal(typeof doc === "string" ? JSON.parse(doc) : doc);
        }
    });

    it("the queue, its policy and the EventBridge rules equal the reference", () => {
        const resources = template();
        expect(resources.KarpenterInterruptionQueue.Properties).to.deep.include({ MessageRetentionPeriod: 300, SqsManagedSseEnabled: true });
        const { Id, Statement } = resources.KarpenterInterruptionQueuePolicy.Properties.PolicyDocument;
        const ours = interruptionQueuePolicy(ctx.queueArn);
        expect({ Id: ours.Id, Statement: ours.Statement }).to.deep.equal({ Id, Statement });
        const rules = Object.values(resources).filter((r: any) => r.Type === "AWS::Events::Rule") as any[];
        expect(rules.map((r) => r.Properties.EventPattern)).to.have.deep.members(interruptionRules.map((r) => ({ source: [r.source], "detail-type": [r.detailType] })));
        for (const r of rules) expect(r.Properties.Targets).to.deep.equal([{ Id: "KarpenterInterruptionQueueTarget", Arn: ctx.queueArn }]);
    });

    it("the node role's managed policies equal the reference", () => {
        const arns: string[] = template().KarpenterNodeRole.Properties.ManagedPolicyArns;
        expect(arns.map((a) => a.split("/").pop())).to.have.members(["AmazonEKS_CNI_Policy", "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"]);
    });

    it("the chart value keys the tests allow are exactly those of values.yaml", () => {
        const values = parse(fs.readFileSync(path.join(dir!, "values.yaml"), "utf8"));
        const keys: string[] = [];
        (function walk(o: Record<string, unknown>, p: string) {
            for (const [k, x] of Object.entries(o)) {
                const q = p ? `${p}.${k}` : k;
                keys.push(q);
                if (x && typeof x === "object" && !Array.isArray(x)) walk(x as Record<string, unknown>, q);
            }
        })(values, "");
        expect(CHART_VALUE_KEYS).to.deep.equal(keys);
    });

    it("components/karpenter/generated/crds.ts is what the reference CRDs generate (npm run generate:karpenter)", () => {
        expect(fs.readFileSync(GENERATED_MODULE, "utf8")).to.equal(generateKarpenterModule(dir!));
    });
});
