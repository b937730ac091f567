import { expect } from "chai";
import type { ResourceValidationPolicy } from "@pulumi/policy";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { plan } from "../plan/cli.ts";
import { PROJECT } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { policyInputs, runPolicies } from "../plan/policyRun.ts";
import { GC_NOTIFY_FACTS, policies } from "../policy/policies.ts";
import { policyConfigFor } from "../stacks/policyConfig.ts";
import { STACKS, buildStack, patchSections, stackConfig } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";
import { setProgressSink } from "../cli/output.ts";

describe("offline plan (npm run plan)", () => {
    for (const stack of STACKS) {
        it(`${stack}: writes preview.json in pulumi preview --json shape, manifests.yaml and the policy config, passes the pack, in under 10 s`, async () => {
            const out = tempDir();
            const started = Date.now();
            const result = await plan(["--stack", stack, "--out", out]);
            expect(Date.now() - started).to.be.below(10_000);
            expect(result.exitCode, result.output).to.equal(0);
            expect(result.output).to.match(new RegExp(`Offline plan of stack ${stack}: \\d+ resources`));
            // The terminal gets a summary; summary.txt (and --verbose) the full listing.
            const lines = result.output.split("\n");
            expect(lines.length, result.output).to.be.at.most(40);
            expect(lines.filter((l) => l.length > 120 && !l.includes(out)), "lines wider than 120 columns").to.deep.equal([]);
            expect(result.output).to.match(/^  KarpenterController karpenter: \d+$/m);
            expect(result.output).to.include(`Wrote to ${out}:\n  preview.json, manifests.yaml, policy-config.json, policy-report.json,\n  cwagent-prometheus-karpenter.json, summary.txt (the full listing; or --verbose)`);
            const full = fs.readFileSync(path.join(out, "summary.txt"), "utf8");
            expect(full).to.include("helm karpenter: oci://public.ecr.aws/karpenter/karpenter 1.14.1 in namespace karpenter");
            // The annotator names no class: it runs at 0, which the summary says rather than "priority undefined" (MW2-F15).
            expect(full).to.match(/Deployment karpenter\/burst-scale-down-order: .*no priority class \(0\)/);
            expect(full).not.to.include("undefined");

            const preview = JSON.parse(fs.readFileSync(path.join(out, "preview.json"), "utf8"));
            const root = `urn:pulumi:${stack}::${PROJECT}::pulumi:pulumi:Stack::${PROJECT}-${stack}`;
            expect(preview.steps[0]).to.deep.include({ op: "create", urn: root });
            for (const step of preview.steps.slice(1)) {
                expect(step.op).to.equal("create");
                expect(step.newState).to.include.keys("type", "urn", "parent", "provider", "inputs");
                expect(step.newState.urn).to.equal(step.urn);
                expect(step.urn).to.match(new RegExp(`^urn:pulumi:${stack}::${PROJECT}::`));
                expect(step.newState.parent).to.match(/^urn:pulumi:/);
            }
            const types = preview.steps.map((s: any) => s.newState.type);
            expect(types).to.include.members(["notify-karpenter:index:KarpenterController", "aws:sqs/queue:Queue", "kubernetes:helm.sh/v3:Release"]);

            const docs = parseAllDocuments(fs.readFileSync(path.join(out, "manifests.yaml"), "utf8")).map((d) => d.toJS());
            const releases = docs.filter((d) => d.helmRelease).map((d) => d.helmRelease);
            expect(releases.map((x: any) => `${x.chart}@${x.version}`)).to.include.members([
                "oci://public.ecr.aws/karpenter/karpenter-crd@1.14.1",
                "oci://public.ecr.aws/karpenter/karpenter@1.14.1",
            ]);
            expect(releases.find((x: any) => x.name === "karpenter").values.settings.clusterName).to.equal(`notification-canada-ca-${stack}-eks-cluster`);
            const kinds = docs.filter((d) => d.kind).map((d) => `${d.apiVersion}/${d.kind}/${d.metadata.name}`);
            expect(kinds).to.include.members(["karpenter.k8s.aws/v1/EC2NodeClass/notify-karpenter", "karpenter.sh/v1/NodePool/notify-karpenter"]);
            expect(full).to.match(/NodePool notify-karpenter: (12|24) approved types/);
            expect(result.output).to.match(/^NodePool notify-karpenter: (12|24) instance types, spot in ca-central-1a ca-central-1b ca-central-1d$/m);

            expect(result.output).to.include(`Policy pack: ${policies.length} policies, no violations`);
            // The file the CLI gets (--policy-pack-config): one entry per configurable policy, exactly its schema's keys,
            // with this stack's facts (production approves the 2xlarge sizes as well).
            const families = GC_NOTIFY_FACTS.approvedInstanceTypes.map((t) => t.split(".")[0]);
            const facts: Record<string, unknown> = {
                ...GC_NOTIFY_FACTS,
                approvedInstanceTypes: stack === "staging" ? GC_NOTIFY_FACTS.approvedInstanceTypes : families.flatMap((f) => [`${f}.xlarge`, `${f}.2xlarge`]),
            };
            const written = JSON.parse(fs.readFileSync(path.join(out, "policy-config.json"), "utf8"));
            const configurable = policies.filter((p) => p.configSchema);
            expect(Object.keys(written)).to.have.members(configurable.map((p) => p.name));
            for (const p of configurable) {
                expect(written[p.name], p.name).to.deep.equal(Object.fromEntries(Object.keys(p.configSchema!.properties).map((k) => [k, facts[k]])));
            }
            expect(JSON.parse(fs.readFileSync(path.join(out, "policy-report.json"), "utf8"))).to.deep.equal({ violations: [] });
        });
    }

    it("exits 1 on a mandatory policy violation, naming the policy and resource, and still writes the plan", async () => {
        const out = tempDir();
        const noNodePools = (enforcementLevel: "mandatory" | "advisory"): ResourceValidationPolicy => ({
            name: `no-nodepools-${enforcementLevel}`,
            description: "test",
            enforcementLevel,
            validateResource: (args, report) => (args.type === "kubernetes:karpenter.sh/v1:NodePool" ? report("NodePools are not allowed here") : args.notApplicable()),
        });
        const result = await plan(["--stack", "staging", "--out", out, "--verbose"], undefined, [noNodePools("mandatory"), noNodePools("advisory")]);
        expect(result.exitCode).to.equal(1);
        expect(result.output).to.include(
            [
                "Policy pack: 2 violations (1 mandatory)",
                "  [mandatory] no-nodepools-mandatory: kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool",
                "      NodePools are not allowed here",
                "  [advisory] no-nodepools-advisory: kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool",
            ].join("\n"),
        );
        expect(fs.readdirSync(out).sort()).to.deep.equal([".notify-karpenter-plan.json", "ci-access", "cwagent-prometheus-karpenter.json", "gc-notify-handover", "gc-notify-values", "manifests.yaml", "policy-config.json", "policy-report.json", "preview.json", "summary.txt"]);
        // Without --verbose, the summary shows the violations too.
        const brief = await plan(["--stack", "staging", "--out", out], undefined, [noNodePools("mandatory")]);
        expect(brief.output).to.include("Policy pack: 1 violation (1 mandatory)\n  [mandatory] no-nodepools-mandatory: kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool");
        const [violation] = JSON.parse(fs.readFileSync(path.join(out, "policy-report.json"), "utf8")).violations;
        expect(violation.urn).to.match(/^urn:pulumi:staging::notify-karpenter::.*kubernetes:karpenter\.sh\/v1:NodePool::celery-burst-node-pool$/);

        const advisoryOnly = await plan(["--stack", "staging", "--out", out], undefined, [noNodePools("advisory")]);
        expect(advisoryOnly.exitCode).to.equal(0);
    });

    it("the pack on the recorded staging plan fails an unapproved instance type and an API pod tolerating the ephemeral taint, by policy name", async () => {
        const { resources } = await buildStack("staging");
        const inputs = policyInputs(resources);
        const pool = inputs.find((r) => r.type === "kubernetes:karpenter.sh/v1:NodePool")!;
        pool.props = structuredClone(pool.props);
        pool.props.spec.template.spec.requirements[0].values.push("m5.24xlarge");
        const api = {
            type: "kubernetes:apps/v1:DeploymentPatch",
            name: "api",
            urn: "urn:pulumi:staging::notify-karpenter::kubernetes:apps/v1:DeploymentPatch::api",
            props: { metadata: { name: "api", namespace: "notification-canada-ca" }, spec: { template: { spec: { tolerations: [{ key: "notification-canada-ca/ephemeral", operator: "Exists" }] } } } },
        };
        const report = await runPolicies(policies, [...inputs, api], policyConfigFor(stackConfig("staging")));
        expect(report.violations.map((v) => [v.policy, v.enforcementLevel, v.urn])).to.deep.equal([
            ["nodepool-approved-instance-types", "mandatory", pool.urn],
            ["ephemeral-nodes-burst-celery-only", "mandatory", api.urn],
        ]);
    });

    it("exits 1 with the config error and writes nothing when config is bad", async () => {
        const out = path.join(tempDir(), "never");
        // A copy of the staging stack file with one bad value, in a directory of its own.
        const stackFileDir = tempDir();
        const config = { ...readStackConfig("staging"), ...patchSections("staging", { controller: { replicas: "two" } }) };
        const yaml = ["config:", ...Object.entries(config).map(([k, v]) => `  ${k}: ${typeof v === "string" && !v.startsWith("[") ? v : JSON.stringify(v)}`)];
        fs.writeFileSync(path.join(stackFileDir, "Pulumi.staging.yaml"), yaml.join("\n") + "\n");
        const result = await plan(["--stack", "staging", "--out", out], stackFileDir);
        expect(result.exitCode).to.equal(1);
        expect(result.output).to.include('staging: notify-karpenter:controller.replicas must be an integer from 1 to 10 (got "two")');
        expect(fs.existsSync(out)).to.equal(false);
    });

    it("--json: the summary in the documented schema (docs/json-output.md), the same counts as the text; --findings: violations and warnings alone", async () => {
        const out = tempDir();
        const text = await plan(["--stack", "staging", "--out", out]);
        const r = await plan(["--stack", "staging", "--out", out, "--json"]);
        expect(r).to.deep.include({ exitCode: 0, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "exitCode", "resources", "nodePool", "placement", "policy", "warnings", "out", "files"]);
        expect(Object.keys(report), "docs/json-output.md's table for plan").to.deep.equal(documentedFields("plan"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "plan", stack: "staging", exitCode: 0, out });
        expect(text.output).to.include(`Offline plan of stack staging: ${report.resources.total} resources`);
        for (const c of report.resources.byComponent) {
            expect(text.output).to.include(`  ${c.component}: ${c.total}\n`);
            expect(Object.values(c.types).reduce((a: number, b) => a + (b as number), 0)).to.equal(c.total);
        }
        expect(report.nodePool).to.deep.include({ name: "notify-karpenter", capacityTypes: ["spot"], zones: ["ca-central-1a", "ca-central-1b", "ca-central-1d"] });
        expect(report.policy).to.deep.equal({ policies: policies.length, mandatory: 0, violations: [] });
        expect(report.placement[0]).to.have.keys("nodePool", "podTemplates", "ephemeral", "beforeStartupTaints", "keptOff");
        expect(report.files).to.include.members(["preview.json", "manifests.yaml", "summary.txt"]);

        const pack: ResourceValidationPolicy = {
            name: "no-nodepools",
            description: "test",
            enforcementLevel: "mandatory",
            validateResource: (args, report) => (args.type === "kubernetes:karpenter.sh/v1:NodePool" ? report("NodePools are not allowed here") : args.notApplicable()),
        };
        const failing = JSON.parse((await plan(["--stack", "staging", "--out", out, "--json", "--findings"], undefined, [pack])).output);
        expect(failing.exitCode).to.equal(1);
        expect(failing.policy.violations).to.deep.equal([
            {
                policy: "no-nodepools",
                enforcementLevel: "mandatory",
                resource: "kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool",
                urn: failing.policy.violations[0].urn,
                message: "NodePools are not allowed here",
            },
        ]);
        const findings = await plan(["--stack", "staging", "--out", out, "--findings"], undefined, [pack]);
        expect(findings.exitCode).to.equal(1);
        expect(findings.output.split("\n")).to.deep.equal([
            `Offline plan of stack staging: findings only (the full listing: ${path.join(out, "summary.txt")})`,
            "  [mandatory] no-nodepools: kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool",
            "      NodePools are not allowed here",
            ...report.warnings.map((w: string) => `warning: ${w}`),
            "Policy pack: 1 violation (1 mandatory)",
        ]);
        // A refused config is JSON too (nothing was planned); --json and --verbose are two forms: refused.
        const both = await plan(["--stack", "staging", "--json", "--verbose"]);
        expect(both.exitCode).to.equal(2);
        expect(JSON.parse(both.output).error.split("\n")[0]).to.equal("--json and --verbose are two forms of the report: give one");
        // Usage errors too are JSON when --json was asked (issue 29: --json stays JSON on every path).
        expect(JSON.parse((await plan(["--diff", "staging", "production", "--json"])).output)).to.deep.include({ command: "plan", stack: null, exitCode: 2 });
        expect(JSON.parse((await plan(["--diff", "staging", "production", "--json"])).output).error.split("\n")[0]).to.equal("--json and --findings apply to the plan of one stack, not to --diff");
    });

    it("says what it is doing on standard error while it runs (progress), never in the report", async () => {
        const lines: string[] = [];
        const before = setProgressSink((l) => lines.push(l));
        try {
            const r = await plan(["--stack", "staging", "--out", tempDir()]);
            expect(r.output).to.not.include("plan: building");
        } finally {
            setProgressSink(before);
        }
        expect(lines.map((l) => l.replace(/[0-9.]+ s\b/, "<t> s").replace(/\d+ resources/, "<n> resources"))).to.deep.equal([
            "plan: building stack staging offline",
            "plan: built stack staging in <t> s: <n> resources recorded",
            `plan: running the policy pack (${policies.length} policies)`,
        ]);
    });

    it("refuses an unknown stack and bad arguments with usage", async () => {
        expect(await plan(["--stack", "prod"])).to.deep.include({ exitCode: 2 });
        expect((await plan(["--stack", "prod"])).output).to.match(/unknown stack "prod": known stacks are .*production.*staging/);
        expect((await plan([])).output).to.match(/--stack or --diff is required\nusage: npm run plan/);
    });
});
