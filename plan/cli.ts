// `npm run plan -- --stack <name> [--out <dir>]`: what the stack would deploy, checked against the policy pack,
// without AWS or a Pulumi CLI. `npm run plan -- --diff <stack> <stack>`: how two stacks' plans differ.
// `npm run plan -- --stack <name> --diff-against <git ref | plan directory | last>`: what an edit changes.
// This file reads the flags and answers --help and usage errors alone; the plan itself (plan/planRun.ts, with the
// Pulumi SDKs) is loaded only once they are good.
import * as path from "path";
import type { Policies } from "@pulumi/policy";
import { type Command, type CommandResult, OUTPUT_FLAGS, inForm, isResult, outputMode, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import { outDirProblem } from "../cli/outDir.ts";
import { PROJECT_DIR, knownStacks, unknownStackMessage } from "../stacks/stackNames.ts";

export const PLAN: Command = {
    usage: [
        "npm run plan -- --stack <name> [--out <dir>] [--verbose | --json] [--findings]",
        "npm run plan -- --stack <name> --diff-against <git ref | plan directory | last> [--out <dir>]",
        "npm run plan -- --diff <stack> <stack>",
    ],
    summary: [
        "What a stack would deploy, without AWS or a Pulumi CLI: runs the program offline, checks every resource against",
        "the policy pack, and writes preview.json, manifests.yaml, policy-config.json, policy-report.json and summary.txt",
        "(the full listing); prints a summary of at most 40 lines. With --diff-against, what an edit changes: the stack",
        "planned now against the same stack at a git ref or in an earlier plan. With --diff,",
        "how two stacks' plans differ (they run the same code and may differ only in values).",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack to plan (Pulumi.<name>.yaml)" },
        out: { value: "<dir>", meaning: "where to write the plan files", default: "plan-out/<stack>" },
        verbose: { meaning: "print the full listing (every resource's key settings, every violation) instead of the summary" },
        diff: { value: "<stack> <stack>", meaning: "compare two stacks' plans instead (takes two stack names)" },
        "diff-against": {
            value: "<git ref | plan directory | last>",
            meaning:
                "compare the stack's plan now with the stack at a git ref (its Pulumi.<stack>.yaml there, planned with this working tree's code), with the plan in a directory (its preview.json), or with last: the plan in --out; prints the resources added and removed and every input that changed, writes nothing",
        },
        json: OUTPUT_FLAGS.json,
        findings: { meaning: "print only the findings: the policy pack's violations and the warnings, and the verdict" },
    },
    exits: {
        0: "planned with no mandatory policy violation (or, with --diff, no resource in only one stack; with --diff-against, compared)",
        1: "a mandatory policy violation, a refused config, or (with --diff) a resource in only one stack",
        3: "the plan files could not be written to --out; with --diff-against, the baseline could not be read or planned (git missing, its stack file refused)",
    },
    examples: ["npm run plan -- --stack staging", "npm run plan -- --stack staging --diff-against main", "npm run plan -- --stack staging --diff-against last", "npm run plan -- --diff staging production"],
    positionals: 1,
};

export type PlanArgs = { stack: string; out?: string; verbose: boolean; json: boolean; findingsOnly: boolean; against?: string } | { diff: [string, string] };

/** Runs the plan for the stack files in `dir` (the project by default), checked against `pack` (the policy pack by default). With --json, every outcome is JSON. */
export async function plan(argv: string[], dir = PROJECT_DIR, pack?: Policies): Promise<CommandResult> {
    const raw = rawFlags(argv);
    return inForm(await planEntry(argv, dir, pack), raw.json, "plan", raw.stack, { usageToo: true });
}

async function planEntry(argv: string[], dir: string, pack: Policies | undefined): Promise<CommandResult> {
    const args = planArgs(argv);
    if (isResult(args)) return args;
    const stacks = knownStacks(dir);
    const unknown = ("diff" in args ? args.diff : [args.stack]).find((s) => !stacks.includes(s));
    if (unknown !== undefined) return usage(unknownStackMessage("diff" in args ? "--diff" : "--stack", unknown, stacks), PLAN);
    const out = "diff" in args ? "" : (args.out ?? path.join("plan-out", args.stack));
    const outProblem = "diff" in args ? undefined : outDirProblem(out);
    if (outProblem) return usage(outProblem, PLAN);
    const { runPlan } = await import("./planRun.ts");
    return runPlan(args, out, dir, pack);
}

function planArgs(argv: string[]): PlanArgs | CommandResult {
    const line = parseCommandLine(argv, PLAN);
    if (isResult(line)) return line;
    const [stack, out, diff, against] = [valueOf(line, "stack"), valueOf(line, "out"), valueOf(line, "diff"), valueOf(line, "diff-against")];
    const verbose = line.flags.verbose === true;
    const { json, findingsOnly } = outputMode(line);
    if (diff !== undefined) {
        if (stack !== undefined || out !== undefined || verbose) return usage("--diff takes no --stack, --out or --verbose", PLAN);
        if (against !== undefined) return usage("--diff takes no --diff-against: --diff-against compares one stack with itself at a git ref or in a plan", PLAN);
        if (json || findingsOnly) return usage("--json and --findings apply to the plan of one stack, not to --diff", PLAN);
        if (line.positionals.length !== 1) return usage("--diff needs two stack names: --diff <stack> <stack>", PLAN);
        return { diff: [diff, line.positionals[0]] };
    }
    if (line.positionals.length) return usage(`unexpected argument "${line.positionals[0]}": the flags are ${Object.keys(PLAN.flags).map((f) => `--${f}`).join(", ")}`, PLAN);
    if (against !== undefined && (verbose || json || findingsOnly)) return usage("--diff-against prints the changes only: it takes no --verbose, --json or --findings", PLAN);
    if (json && verbose) return usage("--json and --verbose are two forms of the report: give one", PLAN);
    return stack !== undefined ? { stack, out, verbose, json, findingsOnly, against } : usage("--stack or --diff is required", PLAN);
}

if (import.meta.main) runMain(() => plan(process.argv.slice(2)));
