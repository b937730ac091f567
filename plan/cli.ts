// `npm run plan -- --stack <name> [--out <dir>]`: what the stack would deploy, checked against the policy pack,
// without AWS or a Pulumi CLI. `npm run plan -- --diff <stack> <stack>`: how two stacks' plans differ.
import * as fs from "fs";
import * as path from "path";
import { Policies } from "@pulumi/policy";
import { policies } from "../policy/policies";
import { ConfigError, StackConfig, loadConfig } from "../stacks/config";
import { createStack } from "../stacks/createStack";
import { policyConfigFor } from "../stacks/policyConfig";
import { cloudwatchAgentFile } from "./cloudwatchAgent";
import { diffStacks, renderDiff } from "./diff";
import { PROJECT_DIR, PreviewError, RecordedResource, knownStacks, runOffline } from "./offlineRuntime";
import { formatViolations, policyInputs, runPolicies } from "./policyRun";
import { manifestsYaml, previewJson, summary } from "./render";
import { Command, CommandResult, isResult, parseCommandLine, runMain, usage, valueOf } from "../ops/args";

export const PLAN: Command = {
    usage: ["npm run plan -- --stack <name> [--out <dir>]", "npm run plan -- --diff <stack> <stack>"],
    summary: [
        "What a stack would deploy, without AWS or a Pulumi CLI: runs the program offline, checks every resource against",
        "the policy pack, and writes preview.json, manifests.yaml, policy-config.json and policy-report.json. With --diff,",
        "how two stacks' plans differ (they run the same code and may differ only in values).",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack to plan (Pulumi.<name>.yaml)" },
        out: { value: "<dir>", meaning: "where to write the plan files", default: "plan-out/<stack>" },
        diff: { value: "<stack> <stack>", meaning: "compare two stacks' plans instead (takes two stack names)" },
    },
    exits: {
        0: "planned with no mandatory policy violation (or, with --diff, no resource in only one stack)",
        1: "a mandatory policy violation, a refused config, or (with --diff) a resource in only one stack",
    },
    examples: ["npm run plan -- --stack staging", "npm run plan -- --diff staging production"],
    positionals: 1,
};

export type PlanResult = CommandResult;

type Args = { stack: string; out?: string } | { diff: [string, string] };

/** Runs the plan for the stack files in `dir` (the project by default), checked against `pack`. */
export async function plan(argv: string[], dir = PROJECT_DIR, pack: Policies = policies): Promise<PlanResult> {
    const args = planArgs(argv);
    if (isResult(args)) return args;
    const stacks = knownStacks(dir);
    const unknown = ("diff" in args ? args.diff : [args.stack]).find((s) => !stacks.includes(s));
    if (unknown) return usage(`${"diff" in args ? "--diff" : "--stack"}: unknown stack "${unknown}": known stacks are ${stacks.join(", ")}`, PLAN);
    try {
        return "diff" in args ? await diff(args.diff, dir) : await planStack(args.stack, args.out ?? path.join("plan-out", args.stack), dir, pack);
    } catch (e) {
        if (e instanceof ConfigError) return { exitCode: 1, output: `invalid config, nothing was planned:\n${e.message}` };
        if (e instanceof PreviewError) return { exitCode: 1, output: `the preview would fail, nothing was planned:\n${e.message}` };
        throw e;
    }
}

/** The program's resources for a stack, with the validated config they came from. */
async function build(stack: string, dir: string): Promise<{ resources: RecordedResource[]; cfg: StackConfig }> {
    const recording = await runOffline(
        stack,
        () => {
            const cfg = loadConfig();
            createStack(cfg);
            return cfg;
        },
        { dir },
    );
    return { resources: recording.resources, cfg: recording.outputs };
}

/** Writes the plan and the policy results, even when a policy fails, so that users can look at what failed. */
async function planStack(stack: string, out: string, dir: string, pack: Policies): Promise<PlanResult> {
    const { resources, cfg } = await build(stack, dir);
    const policyConfig = policyConfigFor(cfg);
    const report = await runPolicies(pack, policyInputs(resources), policyConfig);
    const files = {
        "preview.json": JSON.stringify(previewJson(stack, resources), null, 2) + "\n",
        "manifests.yaml": manifestsYaml(resources),
        "policy-config.json": JSON.stringify(policyConfig, null, 2) + "\n",
        "policy-report.json": JSON.stringify({ violations: report.violations }, null, 2) + "\n",
        "cwagent-prometheus-karpenter.json": cloudwatchAgentFile(cfg),
    };
    fs.mkdirSync(out, { recursive: true });
    for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(out, file), text);

    const mandatory = report.violations.filter((v) => v.enforcementLevel === "mandatory").length;
    const byUrn = new Map(resources.map((r) => [r.urn, `${r.type} ${r.name}`]));
    const text = [
        summary(stack, resources),
        "",
        report.violations.length === 0
            ? `Policy pack: ${pack.length} policies, no violations`
            : [`Policy pack: ${count(report.violations.length, "violation")} (${mandatory} mandatory)`, ...formatViolations(report.violations, (urn) => byUrn.get(urn ?? "") ?? "the stack")].join("\n"),
        "",
        `Wrote ${Object.keys(files).map((f) => path.join(out, f)).join(", ")}`,
    ];
    return { exitCode: mandatory > 0 ? 1 : 0, output: text.join("\n") };
}

/** Exit code 1 when a resource exists in only one stack: the stacks run the same code and may differ only in values. */
async function diff([a, b]: [string, string], dir: string): Promise<PlanResult> {
    const d = diffStacks({ stack: a, ...(await build(a, dir)) }, { stack: b, ...(await build(b, dir)) });
    return { exitCode: d.onlyIn[0].length + d.onlyIn[1].length > 0 ? 1 : 0, output: renderDiff(d) };
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

function planArgs(argv: string[]): Args | CommandResult {
    const line = parseCommandLine(argv, PLAN);
    if (isResult(line)) return line;
    const [stack, out, diff] = [valueOf(line, "stack"), valueOf(line, "out"), valueOf(line, "diff")];
    if (diff !== undefined) {
        if (stack !== undefined || out !== undefined) return usage("--diff takes no --stack or --out", PLAN);
        if (line.positionals.length !== 1) return usage("--diff needs two stack names: --diff <stack> <stack>", PLAN);
        return { diff: [diff, line.positionals[0]] };
    }
    if (line.positionals.length) return usage(`unexpected argument "${line.positionals[0]}": the flags are --stack, --out, --diff`, PLAN);
    return stack !== undefined ? { stack, out } : usage("--stack or --diff is required", PLAN);
}

if (require.main === module) runMain(() => plan(process.argv.slice(2)));
