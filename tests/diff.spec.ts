import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parseDocument } from "yaml";
import { plan } from "../plan/cli";
import { edits, inputDifferences } from "../plan/diff";
import { PROJECT_DIR } from "../plan/offlineRuntime";
import { tempDir } from "./opsHelpers";

/** A project directory with copies of Pulumi.yaml and the stack files, `edit` applied to one stack file. */
function fixture(stack: string, edit: (doc: ReturnType<typeof parseDocument>) => void): string {
    const dir = tempDir("diff-");
    for (const file of ["Pulumi.yaml", "Pulumi.staging.yaml", "Pulumi.production.yaml"]) fs.copyFileSync(path.join(PROJECT_DIR, file), path.join(dir, file));
    const file = path.join(dir, `Pulumi.${stack}.yaml`);
    const doc = parseDocument(fs.readFileSync(file, "utf8"));
    edit(doc);
    fs.writeFileSync(file, String(doc));
    return dir;
}

describe("stack diff (npm run plan -- --diff)", () => {
    it("shows that staging and production differ only in values: no resource in one stack only, and what the values are", async () => {
        const { exitCode, output } = await plan(["--diff", "staging", "production"]);
        expect(exitCode, output).to.equal(0);
        // The one exception: the spot interruption drill, on in staging and off in production (drill.enabled).
        expect(output).to.include(
            [
                "Only in staging:",
                "  aws:cloudwatch/logGroup:LogGroup spot-interruption-drill-log-group",
                "  aws:eks/podIdentityAssociation:PodIdentityAssociation spot-interruption-drill-workload-pod-identity",
                "  aws:fis/experimentTemplate:ExperimentTemplate spot-interruption-drill-template",
                "  aws:iam/role:Role spot-interruption-drill-experiment-role",
                "  aws:iam/role:Role spot-interruption-drill-workload-role",
                "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-experiment-policy",
                "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-workload-policy",
                "  notify-karpenter:index:SpotInterruptionDrill spot-interruption-drill",
                "Only in production: none",
            ].join("\n"),
        );
        expect(output).to.match(/^8 resources only in one stack; \d+ inputs differ in \d+ resources$/m);
        // At a glance: the cluster names first, then the config values each stack chose.
        expect(output).to.match(/Changes in values, most frequent first \(staging → production\):\n +\d+× {2}staging → production\n/);
        expect(output).to.include("  kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool\n    spec.limits.cpu: 400 → 1000\n");
        expect(output).to.include("    spec.template.spec.requirements[0].values: +m7i.2xlarge +m7a.2xlarge");
        expect(output).to.include("    threshold: 180 → 120");
    });

    it("lists the resources that one stack has and exits 1, and each changed input", async () => {
        // Created topics in staging, subscribed by email: production notifies GC Notify's existing topics instead.
        const endpoint = [{ protocol: "email", endpoint: "oncall@example.org" }];
        const dir = fixture("staging", (doc) => {
            doc.deleteIn(["config", "notify-karpenter:alarms", "topicNames"]);
            doc.setIn(["config", "notify-karpenter:alarms", "subscriptions"], doc.createNode({ warning: endpoint, critical: endpoint }));
            doc.setIn(["config", "notify-karpenter:nodePool", "limits", "memory"], "2000Gi");
        });
        const { exitCode, output } = await plan(["--diff", "staging", "production"], dir);
        expect(exitCode, output).to.equal(1);
        expect(output).to.include(
            [
                "Only in staging:",
                "  aws:cloudwatch/logGroup:LogGroup spot-interruption-drill-log-group",
                "  aws:eks/podIdentityAssociation:PodIdentityAssociation spot-interruption-drill-workload-pod-identity",
                "  aws:fis/experimentTemplate:ExperimentTemplate spot-interruption-drill-template",
                "  aws:iam/role:Role spot-interruption-drill-experiment-role",
                "  aws:iam/role:Role spot-interruption-drill-workload-role",
                "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-experiment-policy",
                "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-workload-policy",
                "  aws:kms/alias:Alias karpenter-alarms-topics-key-alias",
                "  aws:kms/key:Key karpenter-alarms-topics-key",
                "  aws:sns/topic:Topic karpenter-alarms-critical-topic",
                "  aws:sns/topic:Topic karpenter-alarms-warning-topic",
                "  aws:sns/topicSubscription:TopicSubscription karpenter-alarms-critical-subscription-0",
                "  aws:sns/topicSubscription:TopicSubscription karpenter-alarms-warning-subscription-0",
                "  notify-karpenter:index:SpotInterruptionDrill spot-interruption-drill",
                "Only in production: none",
            ].join("\n"),
        );
        expect(output).to.include("    spec.limits.memory: 2000Gi → 1000Gi");
        // The drill's resources do not fail it (drill.enabled sets the stacks apart); the topics do.
        expect(output).to.match(/^14 resources only in one stack; \d+ inputs differ/m);
    });

    it("refuses an unknown stack and mixed arguments", async () => {
        expect((await plan(["--diff", "staging", "prod"])).output).to.match(/^--diff: unknown stack "prod"/);
        expect((await plan(["--diff", "staging"])).output).to.match(/^--diff needs two stack names: --diff <stack> <stack>\n/);
        expect(await plan(["--diff", "staging", "production", "--stack", "staging"])).to.deep.include({ exitCode: 2 });
    });
});

describe("input differences", () => {
    it("compares JSON held in strings by path, and lists of values as sets", () => {
        const policy = (cluster: string) => JSON.stringify({ Statement: [{ Resource: `arn:aws:eks:ca-central-1:1:cluster/${cluster}` }] });
        expect(inputDifferences({ policy: policy("a-staging"), values: ["x", "y"] }, { policy: policy("a-production"), values: ["y", "x", "z"] })).to.deep.equal([
            { path: "policy(json).Statement[0].Resource", values: ["arn:aws:eks:ca-central-1:1:cluster/a-staging", "arn:aws:eks:ca-central-1:1:cluster/a-production"] },
            { path: "values", values: [["x", "y"], ["y", "x", "z"]] },
        ]);
    });

    it("reads each difference as whole-word edits, and a key that names the stack as renamed", () => {
        const d = inputDifferences(
            { name: "c-staging-karpenter-warning", cpu: "400", tags: { "kubernetes.io/cluster/c-staging": "owned" } },
            { name: "c-production-karpenter-critical", cpu: "1000", tags: { "kubernetes.io/cluster/c-production": "owned" } },
        );
        expect(edits(d)).to.deep.equal(["staging → production; warning → critical", "400 → 1000", "staging → production"]);
    });
});
