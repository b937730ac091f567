import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parseDocument } from "yaml";
import { plan } from "../plan/cli.ts";
import { edits, inputDifferences } from "../plan/diff.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { tempDir } from "./opsHelpers.ts";
import { spawnSync } from "child_process";

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

/** The spot interruption drill's resources, which staging has and production does not (drill.enabled). */
const DRILL_ONLY = [
    "  aws:cloudwatch/logGroup:LogGroup spot-interruption-drill-log-group",
    "  aws:eks/podIdentityAssociation:PodIdentityAssociation spot-interruption-drill-workload-pod-identity",
    "  aws:fis/experimentTemplate:ExperimentTemplate spot-interruption-drill-template",
    "  aws:iam/role:Role spot-interruption-drill-experiment-role",
    "  aws:iam/role:Role spot-interruption-drill-workload-role",
    "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-experiment-policy",
    "  aws:iam/rolePolicy:RolePolicy spot-interruption-drill-workload-policy",
];

describe("stack diff (npm run plan -- --diff)", () => {
    it("shows that staging and production differ only in values: no resource in one stack only, and what the values are", async () => {
        const { exitCode, output } = await plan(["--diff", "staging", "production"]);
        expect(exitCode, output).to.equal(0);
        // The one exception: the spot interruption drill, on in staging and off in production (drill.enabled).
        expect(output).to.include(
            [
                "Only in staging:",
                ...DRILL_ONLY,
                "  notify-karpenter:index:SpotInterruptionDrill spot-interruption-drill",
                "Only in production: none",
            ].join("\n"),
        );
        expect(output).to.match(/^8 resources only in one stack; \d+ inputs and \d+ options differ in \d+ resources$/m);
        // Resource options are compared too: production protects what staging does not (lifecycle.protect).
        expect(output).to.include("  kubernetes:scheduling.k8s.io/v1:PriorityClass celery-placement-priority-high\n    [option] protect: (absent) → true");
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
                ...DRILL_ONLY,
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
        expect(output).to.match(/^14 resources only in one stack; \d+ inputs (and \d+ options )?differ/m);
    });

    it("refuses an unknown stack and mixed arguments", async () => {
        expect((await plan(["--diff", "staging", "prod"])).output).to.match(/^--diff: unknown stack "prod"/);
        expect((await plan(["--diff", "staging"])).output).to.match(/^--diff needs two stack names: --diff <stack> <stack>\n/);
        expect(await plan(["--diff", "staging", "production", "--stack", "staging"])).to.deep.include({ exitCode: 2 });
    });
});

/** A git repository holding copies of Pulumi.yaml and the staging stack file, committed once; returns its directory. */
function repository(): string {
    const dir = tempDir("diff-against-");
    for (const file of ["Pulumi.yaml", "Pulumi.staging.yaml"]) fs.copyFileSync(path.join(PROJECT_DIR, file), path.join(dir, file));
    const git = (...args: string[]) => {
        const r = spawnSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", ...args], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
    };
    git("init", "-q");
    git("add", ".");
    git("commit", "-q", "-m", "staging as it is");
    return dir;
}

/** Applies `edit` to the stack file of `dir`. */
function editStack(dir: string, stack: string, edit: (doc: ReturnType<typeof parseDocument>) => void): void {
    const file = path.join(dir, `Pulumi.${stack}.yaml`);
    const doc = parseDocument(fs.readFileSync(file, "utf8"));
    edit(doc);
    fs.writeFileSync(file, String(doc));
}

describe("what an edit changes (npm run plan -- --stack <s> --diff-against <git ref | plan directory | last>)", () => {
    it("a git ref: plans the ref's stack file with this working tree's code, and shows the resources and inputs the edit changes (exit 0)", async () => {
        const dir = repository();
        const same = await plan(["--stack", "staging", "--diff-against", "HEAD"], dir);
        expect(same.exitCode, same.output).to.equal(0);
        expect(same.output.split("\n").at(-1)).to.equal("No change: the working tree plans the same resources with the same inputs and resource options as HEAD");
        // Topics created and subscribed instead of GC Notify's, and a higher cpu limit.
        const endpoint = [{ protocol: "email", endpoint: "oncall@example.org" }];
        editStack(dir, "staging", (doc) => {
            doc.deleteIn(["config", "notify-karpenter:alarms", "topicNames"]);
            doc.setIn(["config", "notify-karpenter:alarms", "subscriptions"], doc.createNode({ warning: endpoint, critical: endpoint }));
            doc.setIn(["config", "notify-karpenter:nodePool", "limits", "cpu"], "500");
        });
        const { exitCode, output } = await plan(["--stack", "staging", "--diff-against", "HEAD"], dir);
        expect(exitCode, output).to.equal(0);
        const lines = output.split("\n");
        expect(lines[0]).to.match(/^Changes to stack staging: HEAD → the working tree \(offline plans; Pulumi\.staging\.yaml as it is at HEAD \([0-9a-f]{12}\), both planned with this working tree's code\)$/);
        expect(output).to.include(
            [
                "Removed (only in HEAD): none",
                "Added (only in the working tree):",
                "  aws:kms/alias:Alias karpenter-alarms-topics-key-alias",
                "  aws:kms/key:Key karpenter-alarms-topics-key",
                "  aws:sns/topic:Topic karpenter-alarms-critical-topic",
                "  aws:sns/topic:Topic karpenter-alarms-warning-topic",
                "  aws:sns/topicSubscription:TopicSubscription karpenter-alarms-critical-subscription-0",
                "  aws:sns/topicSubscription:TopicSubscription karpenter-alarms-warning-subscription-0",
            ].join("\n"),
        );
        expect(output).to.include("  kubernetes:karpenter.sh/v1:NodePool celery-burst-node-pool\n    spec.limits.cpu: 400 → 500\n");
        expect(lines.at(-1)).to.match(/^6 resources added, 0 removed; \d+ inputs and \d+ options differ in \d+ resources$/);
        // The alarms now wait for the topics they notify: a dependency is a resource option too.
        expect(output).to.match(/\[option\] dependsOn: \+.*karpenter-alarms-warning-topic/);
        // It writes nothing: no plan-out beside the stack files.
        expect(fs.readdirSync(dir).sort()).to.deep.equal([".git", "Pulumi.staging.yaml", "Pulumi.yaml"]);
    });

    it("refuses what it cannot compare: an unknown ref, a stack file the ref lacks, a ref whose stack file this code refuses", async () => {
        const dir = repository();
        const unknown = await plan(["--stack", "staging", "--diff-against", "no-such-branch"], dir);
        expect(unknown.exitCode).to.equal(2);
        expect(unknown.output.split("\n")[0]).to.equal('--diff-against: "no-such-branch" is not a commit of this repository (git rev-parse: fatal: Needed a single revision), a plan directory (with preview.json) or last');
        expect((await plan(["--stack", "staging", "--diff-against", "--help-me"], dir)).output.split("\n")[0]).to.equal("--diff-against needs a value: <git ref | plan directory | last>");
        fs.copyFileSync(path.join(dir, "Pulumi.staging.yaml"), path.join(dir, "Pulumi.production.yaml"));
        const missing = await plan(["--stack", "production", "--diff-against", "HEAD"], dir);
        expect(missing.exitCode).to.equal(2);
        expect(missing.output.split("\n")[0]).to.match(/^--diff-against HEAD: Pulumi\.production\.yaml does not exist at HEAD \([0-9a-f]{12}\)$/);
        // A ref whose stack file this working tree's code refuses: exit 3, naming the ref's file.
        editStack(dir, "staging", (doc) => doc.setIn(["config", "notify-karpenter:controller", "replicas"], "two"));
        spawnSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", "commit", "-q", "-am", "bad"]);
        editStack(dir, "staging", (doc) => doc.setIn(["config", "notify-karpenter:controller", "replicas"], 2));
        const refused = await plan(["--stack", "staging", "--diff-against", "HEAD"], dir);
        expect(refused.exitCode, refused.output).to.equal(3);
        expect(refused.output).to.match(/^Could not check: Pulumi\.staging\.yaml at HEAD does not plan with this working tree's code, so there is nothing to compare with:\n/);
        expect(refused.output).to.include('notify-karpenter:controller.replicas must be an integer from 1 to 10 (got "two")');
        // Outside any repository, a ref means nothing.
        const bare = tempDir("no-repo-");
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), path.join(bare, "Pulumi.staging.yaml"));
        expect((await plan(["--stack", "staging", "--diff-against", "HEAD"], bare)).output.split("\n")[0]).to.equal(`--diff-against HEAD: ${bare} is in no git repository (git: fatal: not a git repository (or any of the parent directories): .git); give a plan directory or last instead`);
    });

    it("last (the plan in --out) or a plan directory: compares with that plan's preview.json and leaves it as it was", async () => {
        const dir = fixture("staging", () => undefined);
        const out = path.join(tempDir("diff-last-"), "plan");
        const cwd = process.cwd();
        expect((await plan(["--stack", "staging", "--out", out], dir)).exitCode).to.equal(0);
        const before = fs.readFileSync(path.join(out, "preview.json"), "utf8");
        editStack(dir, "staging", (doc) => doc.setIn(["config", "notify-karpenter:nodePool", "limits", "memory"], "2000Gi"));
        for (const against of ["last", out]) {
            const r = await plan(["--stack", "staging", "--out", out, "--diff-against", against], dir);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output.split("\n")[0]).to.equal(`Changes to stack staging: the plan in ${out} → the working tree (offline plans; the plan written to ${out}, as its code planned it then)`);
            expect(r.output).to.include("    spec.limits.memory: 1000Gi → 2000Gi");
            expect(r.output.split("\n").at(-1)).to.equal("0 resources added, 0 removed; 1 input differs in 1 resource");
        }
        expect(fs.readFileSync(path.join(out, "preview.json"), "utf8")).to.equal(before);
        expect(process.cwd()).to.equal(cwd);
        // No plan there yet, or another stack's plan: refused in one line.
        const empty = tempDir("diff-empty-");
        expect((await plan(["--stack", "staging", "--out", empty, "--diff-against", "last"], dir)).output.split("\n")[0]).to.equal(`--diff-against last: no plan in ${empty} (no preview.json): run npm run plan -- --stack staging first`);
        expect((await plan(["--stack", "production", "--diff-against", out], dir)).output.split("\n")[0]).to.equal(`--diff-against ${out}: ${path.join(out, "preview.json")} is a plan of stack staging, not of stack production`);
        // With --json even the refusal is JSON.
        const json = await plan(["--stack", "staging", "--diff-against", "last", "--json"], dir);
        expect(json.exitCode).to.equal(2);
        expect(JSON.parse(json.output)).to.deep.include({ command: "plan", stack: "staging", exitCode: 2 });
        expect(JSON.parse(json.output).error.split("\n")[0]).to.equal("--diff-against prints the changes only: it takes no --verbose, --json or --findings");
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
