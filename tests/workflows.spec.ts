import { expect } from "chai";
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { PROJECT_DIR } from "../plan/offlineRuntime";
import { lintWorkflows, workflowFiles } from "../scripts/lint-workflows";
import { tempDir } from "./opsHelpers";

const workflow = (name: string) => parse(fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", name), "utf8"));

/** A repository with these workflow files and the real reusable pulumi.yml. */
function repoWith(files: Record<string, string>): string {
    const root = tempDir("workflows-");
    const dir = path.join(root, ".github", "workflows");
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(PROJECT_DIR, ".github", "workflows", "pulumi.yml"), path.join(dir, "pulumi.yml"));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    return root;
}

describe("GitHub workflows", () => {
    it("pass the linter", async () => {
        expect(workflowFiles(PROJECT_DIR).map((f) => path.basename(f))).to.deep.equal(["drift.yml", "main.yml", "pull-request.yml", "pulumi.yml"]);
        expect(await lintWorkflows(PROJECT_DIR)).to.deep.equal([]);
    });

    it("the linter reports a broken workflow by file, line and column, so it cannot pass silently", async () => {
        const broken = [
            "name: broken",
            "on: pull_request",
            "jobs:",
            "  preview:",
            "    runs_on: ubuntu-latest",
            "    needs: build",
            "    steps:",
            "      - run: echo ${{ var.AWS_ROLE_ARN }} ${{ vars.PULUMI_ORG }}",
            "  up:",
            "    uses: ./.github/workflows/pulumi.yml",
            "    with:",
            "      command: up",
            "      stak: staging",
            "",
        ].join("\n");
        const findings = (await lintWorkflows(repoWith({ "broken.yml": broken }))).filter((f) => f.file.endsWith("broken.yml"));
        const lines = findings.map((f) => `${f.file}:${f.line}:${f.column} ${f.message}`);
        const file = path.join(".github", "workflows", "broken.yml");
        expect(lines).to.include.members([
            `${file}:4:3 "runs-on" section is missing in job "preview"`,
            `${file}:4:3 job "preview" needs job "build" which does not exist in this workflow`,
            `${file}:9:3 job "up": input "stack" is required by ./.github/workflows/pulumi.yml`,
            `${file}:9:3 job "up": input "environment" is required by ./.github/workflows/pulumi.yml`,
            `${file}:9:3 job "up": input "stak" is not defined in ./.github/workflows/pulumi.yml; defined inputs are command, stack, environment, expect-no-changes`,
        ]);
        expect(lines.some((l) => l.includes('undefined variable "var"')), "a misspelt context is still reported").to.equal(true);
        expect(lines.some((l) => l.includes('undefined variable "vars"')), "the vars context is known to GitHub").to.equal(false);
    });

    it("preview and up run the offline plan first and give Pulumi the policy pack with the config the plan wrote", () => {
        const steps: any[] = workflow("pulumi.yml").jobs.pulumi.steps;
        const plan = steps.findIndex((s) => /npm run plan -- --stack "\$STACK"/.test(s.run ?? ""));
        const pulumi = steps.findIndex((s) => s.uses?.startsWith("pulumi/actions@"));
        expect(steps.slice(0, plan).map((s) => s.run).filter(Boolean)).to.deep.equal(["npm ci", "npm run build", "npm test"]);
        expect(plan).to.be.within(0, pulumi);
        expect(steps[pulumi].with).to.include({ policyPacks: "policy", policyPackConfigs: "plan-out/${{ inputs.stack }}/policy-config.json", diff: true, refresh: true });
        expect(fs.existsSync(path.join(PROJECT_DIR, "policy", "PulumiPolicy.yaml"))).to.equal(true);
    });

    it("the policy pack starts the way the Pulumi CLI starts it: from policy/, type-checked, serving on a port", async function () {
        this.timeout(60000);
        // The CLI runs this launcher in the pack's folder; it type-checks with its own defaults (target ES2020), which
        // the root tsconfig and the transpile-only tests do not, so only this catches a pack that cannot compile.
        const launcher = path.join(PROJECT_DIR, "node_modules", "@pulumi", "pulumi", "cmd", "run-policy-pack");
        const child = spawn(process.execPath, [launcher, "127.0.0.1:1", "."], { cwd: path.join(PROJECT_DIR, "policy") });
        let stdout = "";
        let stderr = "";
        const port = await new Promise<string>((resolve) => {
            child.stdout.on("data", (d) => {
                stdout += d;
                if (/^\d+\s*$/m.test(stdout)) resolve(stdout.trim());
            });
            child.stderr.on("data", (d) => (stderr += d));
            child.on("exit", () => resolve(""));
        });
        child.kill();
        expect(port, stderr).to.match(/^\d+$/);
    });

    it("run Node of the major the tests run on (the node devDependency), since the Pulumi CLI runs the program with the machine's Node", () => {
        const major = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8")).devDependencies.node.split(".")[0];
        const setups = ["pull-request.yml", "pulumi.yml"].flatMap((name) => Object.values(workflow(name).jobs).flatMap((j: any) => j.steps ?? []).filter((s: any) => s.uses?.startsWith("actions/setup-node@")));
        expect(setups.map((s: any) => s.with["node-version"])).to.deep.equal([major, major, major]);
        // Pull requests run the repository's own CI, which no preview replaces.
        expect(workflow("pull-request.yml").jobs.ci.steps.map((s: any) => s.run).filter(Boolean)).to.deep.equal(["bash .ci/run"]);
        expect(Number(process.versions.node.split(".")[0]), "the tests themselves run on Node 22 or later").to.be.at.least(22);
    });

    it("pin the Pulumi CLI to the release of the SDK and use OIDC credentials only", () => {
        const sdk = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8")).dependencies["@pulumi/pulumi"];
        const steps: any[] = workflow("pulumi.yml").jobs.pulumi.steps;
        expect(steps.find((s) => s.uses?.startsWith("pulumi/actions@")).with["pulumi-version"]).to.equal(sdk);
        expect(steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@")).with).to.have.keys("role-to-assume", "role-session-name", "aws-region");
        for (const name of ["drift.yml", "main.yml", "pull-request.yml", "pulumi.yml"]) {
            expect(fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", name), "utf8"), name).not.to.match(/secrets\.|aws-access-key-id|PULUMI_ACCESS_TOKEN/);
        }
        for (const job of [...Object.values(workflow("main.yml").jobs), workflow("pull-request.yml").jobs.preview, ...Object.values(workflow("drift.yml").jobs)] as any[]) expect(job.permissions["id-token"]).to.equal("write");
    });

    it("preview both stacks on pull requests, and update staging before production, one update per stack at a time", () => {
        const preview = workflow("pull-request.yml").jobs.preview;
        expect(preview.strategy.matrix.stack).to.deep.equal(["staging", "production"]);
        expect(preview.with).to.deep.equal({ command: "preview", stack: "${{ matrix.stack }}", environment: "${{ matrix.stack }}-preview" });
        const main = workflow("main.yml");
        // Per stack: a production update waiting for its reviewer must not hold up the next staging update.
        expect(main.concurrency).to.equal(undefined);
        expect(main.jobs.staging.concurrency).to.deep.equal({ group: "up-staging", "cancel-in-progress": false });
        expect(main.jobs.production.concurrency).to.deep.equal({ group: "up-production", "cancel-in-progress": false });
        // The first update of each stack runs in an environment of its own, whose reviewers approve it (runbook).
        expect(main.jobs.staging.with).to.deep.equal({ command: "up", stack: "staging", environment: "${{ vars.STAGING_DEPLOYED == 'true' && 'staging' || 'staging-first-up' }}" });
        expect(main.jobs.production.needs).to.equal("staging");
        expect(main.jobs.production.with).to.deep.equal({ command: "up", stack: "production", environment: "${{ vars.PRODUCTION_DEPLOYED == 'true' && 'production' || 'production-first-up' }}" });
    });

    it("check the live account and cluster with preflight before every preview and up: kubeconfig of the stack's cluster first, AWS credentials before both", () => {
        const steps: any[] = workflow("pulumi.yml").jobs.pulumi.steps;
        const at = (test: (s: any) => boolean) => steps.findIndex(test);
        const credentials = at((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"));
        const kubeconfig = at((s) => /aws eks update-kubeconfig --name "\$cluster" --region "\$region"/.test(s.run ?? ""));
        const preflight = at((s) => s.run === 'npm run preflight -- --stack "$STACK"');
        const pulumi = at((s) => s.uses?.startsWith("pulumi/actions@"));
        expect([credentials, kubeconfig, preflight, pulumi].every((i) => i >= 0), "all four steps exist").to.equal(true);
        expect(credentials < kubeconfig && kubeconfig < preflight && preflight < pulumi).to.equal(true);
        for (const i of [kubeconfig, preflight]) expect(steps[i].env).to.deep.equal({ STACK: "${{ inputs.stack }}" });
        // The cluster and region come from the stack file, so the kubeconfig is always the stack's own cluster.
        expect(steps[kubeconfig].run).to.include("'Pulumi.' + process.env.STACK + '.yaml'").and.include("config['notify-karpenter:cluster']");
    });

    it("refresh before every preview and up, and fail a preview with changes only when the caller expects none", () => {
        const pulumiYml = workflow("pulumi.yml");
        const action = pulumiYml.jobs.pulumi.steps.find((s: any) => s.uses?.startsWith("pulumi/actions@")).with;
        expect(action).to.include({ refresh: true, "expect-no-changes": "${{ inputs.expect-no-changes }}" });
        expect(pulumiYml.on.workflow_call.inputs["expect-no-changes"]).to.deep.include({ type: "boolean", required: false, default: false });
        expect(workflow("pull-request.yml").jobs.preview.with).not.to.have.property("expect-no-changes");
        for (const job of Object.values(workflow("main.yml").jobs) as any[]) expect(job.with).not.to.have.property("expect-no-changes");
    });

    it("check each stack for drift every day and on demand: a refreshed preview that must find no changes, with the read-only preview role", () => {
        const drift = workflow("drift.yml");
        expect(Object.keys(drift.on).sort()).to.deep.equal(["schedule", "workflow_dispatch"]);
        expect(drift.on.schedule).to.have.length(1);
        expect(drift.on.schedule[0].cron.split(" ").slice(2)).to.deep.equal(["*", "*", "*"]);
        expect(Object.keys(drift.jobs)).to.deep.equal(["staging", "production"]);
        for (const stack of ["staging", "production"]) {
            const job = drift.jobs[stack];
            // Before a stack's first update every resource is a change: it is checked from then on.
            expect(job.if).to.equal(`vars.${stack.toUpperCase()}_DEPLOYED == 'true'`);
            expect(job.uses).to.equal("./.github/workflows/pulumi.yml");
            expect(job.with).to.deep.equal({ command: "preview", stack, environment: `${stack}-preview`, "expect-no-changes": true });
            expect(job.permissions).to.deep.equal({ contents: "read", "id-token": "write" });
        }
    });
});
