// Drift check against the official Karpenter v1.14.1 files. They are not part of this project; CI points
// KARPENTER_REFERENCE_DIR at a copy, and elsewhere these tests are skipped (and say so).
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { controllerPolicies, interruptionQueuePolicy, interruptionRules } from "../components/controllerPolicy";
import { EC2NODECLASS_SPEC, NODEPOOL_SPEC, StructuralSchema } from "../components/karpenter/crdSchema";
import { ALLOWED_KARPENTER_K8S_AWS, implementedRuleMessages } from "../components/karpenter/validate";
import { CHART_VALUE_KEYS } from "./chartValueKeys";

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

    /** The CRD's spec schema in our compact form, and its CEL rules. */
    function crd(file: string) {
        const doc = parse(fs.readFileSync(path.join(dir!, file), "utf8"));
        const spec = doc.spec.versions[0].schema.openAPIV3Schema.properties.spec;
        const rules: { rule: string; message: string }[] = [];
        function convert(x: any): StructuralSchema {
            rules.push(...(x["x-kubernetes-validations"] ?? []));
            const o: any = {};
            if (x["x-kubernetes-int-or-string"]) o.type = "int-or-string";
            else if (x.type) o.type = x.type;
            for (const k of ["enum", "pattern", "maxLength", "maxItems", "minItems", "minimum", "maximum", "required"]) if (x[k] !== undefined) o[k] = x[k];
            if (x.properties) o.properties = Object.fromEntries(Object.entries(x.properties).map(([k, v]) => [k, convert(v)]));
            if (x.items) o.items = convert(x.items);
            if (x.additionalProperties && typeof x.additionalProperties === "object") o.additionalProperties = convert(x.additionalProperties);
            return o;
        }
        return { schema: convert(spec), rules };
    }

    for (const [kind, file, ours] of [
        ["NodePool", "karpenter.sh_nodepools.yaml", NODEPOOL_SPEC],
        ["EC2NodeClass", "karpenter.k8s.aws_ec2nodeclasses.yaml", EC2NODECLASS_SPEC],
    ] as const) {
        it(`the ${kind} spec schema equals the CRD's: fields, types, enums, patterns, limits, required`, () => {
            expect(ours).to.deep.equal(crd(file).schema);
        });

        it(`every ${kind} CEL rule that applies on create is implemented, with the CRD's message`, () => {
            const onCreate = crd(file).rules.filter((r) => !r.rule.includes("oldSelf"));
            expect(implementedRuleMessages(kind)).to.have.members(onCreate.map((r) => r.message));
        });
    }

    it("the restricted karpenter.k8s.aws label exceptions equal the CRD's", () => {
        const text = fs.readFileSync(path.join(dir!, "karpenter.sh_nodepools.yaml"), "utf8");
        const list = /self in \[("karpenter\.k8s\.aws\/instance-tenancy"[^\]]*)\]/.exec(text)![1];
        expect([...new Set(JSON.parse(`[${list}]`))]).to.deep.equal(ALLOWED_KARPENTER_K8S_AWS);
    });
});
