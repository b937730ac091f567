// `npm run plan -- --stack <name> [--out <dir>]`: what the stack would deploy, checked against the policy pack,
// without AWS or a Pulumi CLI. `npm run plan -- --diff <stack> <stack>`: how two stacks' plans differ.
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { Policies } from "@pulumi/policy";
import { policies } from "../policy/policies";
import { ConfigError, StackConfig } from "../stacks/config";
import { warningLine } from "../stacks/warnings";
import { loadConfig } from "../stacks/validatedConfig";
import { createStack } from "../stacks/createStack";
import { policyConfigFor } from "../stacks/policyConfig";
import { CI_ACCESS_DIR, CI_ACCESS_PATHS, ciAccessFiles } from "./ciAccess";
import { PROJECT, readStackConfig } from "./offlineRuntime";
import { cloudwatchAgentFile } from "./cloudwatchAgent";
import { GC_NOTIFY_RELEASES, gcNotifyValues, gcNotifyValuesFiles, valuesFilePath } from "./gcNotifyCharts";
import { placementArgs } from "../stacks/componentArgs";
import { diffStacks, renderDiff } from "./diff";
import { PROJECT_DIR, PreviewError, RecordedResource, knownStacks, runOffline, unknownStackMessage } from "./offlineRuntime";
import { formatViolations, policyInputs, runPolicies } from "./policyRun";
import { briefSummary, fit, manifestsYaml, previewJson, summary } from "./render";
import { outDirProblem, writeFiles } from "../ops/outDir";
import { readInputFile } from "../ops/inputFile";
import { Command, CommandResult, EXIT, isResult, parseCommandLine, runMain, usage, valueOf } from "../ops/args";

export const PLAN: Command = {
    usage: ["npm run plan -- --stack <name> [--out <dir>] [--verbose]", "npm run plan -- --diff <stack> <stack>"],
    summary: [
        "What a stack would deploy, without AWS or a Pulumi CLI: runs the program offline, checks every resource against",
        "the policy pack, and writes preview.json, manifests.yaml, policy-config.json, policy-report.json and summary.txt",
        "(the full listing); prints a summary of at most 40 lines. With --diff,",
        "how two stacks' plans differ (they run the same code and may differ only in values).",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack to plan (Pulumi.<name>.yaml)" },
        out: { value: "<dir>", meaning: "where to write the plan files", default: "plan-out/<stack>" },
        verbose: { meaning: "print the full listing (every resource's key settings, every violation) instead of the summary" },
        diff: { value: "<stack> <stack>", meaning: "compare two stacks' plans instead (takes two stack names)" },
    },
    exits: {
        0: "planned with no mandatory policy violation (or, with --diff, no resource in only one stack)",
        1: "a mandatory policy violation, a refused config, or (with --diff) a resource in only one stack",
        3: "the plan files could not be written to --out",
    },
    examples: ["npm run plan -- --stack staging", "npm run plan -- --diff staging production"],
    positionals: 1,
};

type Args = { stack: string; out?: string; verbose: boolean } | { diff: [string, string] };

/** The most lines `npm run plan` prints without --verbose. */
const SUMMARY_LINES = 40;

/** The files a plan writes; a refused config removes them, so that no stale plan is mistaken for this one. */
export const PLAN_FILES = [
    "preview.json",
    "manifests.yaml",
    "policy-config.json",
    "policy-report.json",
    "cwagent-prometheus-karpenter.json",
    "summary.txt",
    ...GC_NOTIFY_RELEASES.map(valuesFilePath),
    ...CI_ACCESS_PATHS,
];

/** Runs the plan for the stack files in `dir` (the project by default), checked against `pack`. */
export async function plan(argv: string[], dir = PROJECT_DIR, pack: Policies = policies): Promise<CommandResult> {
    const args = planArgs(argv);
    if (isResult(args)) return args;
    const stacks = knownStacks(dir);
    const unknown = ("diff" in args ? args.diff : [args.stack]).find((s) => !stacks.includes(s));
    if (unknown !== undefined) return usage(unknownStackMessage("diff" in args ? "--diff" : "--stack", unknown, stacks), PLAN);
    const out = "diff" in args ? "" : (args.out ?? path.join("plan-out", args.stack));
    const outProblem = "diff" in args ? undefined : outDirProblem(out);
    if (outProblem) return usage(outProblem, PLAN);
    try {
        return "diff" in args ? await diff(args.diff, dir) : await planStack(args.stack, out, args.verbose, dir, pack);
    } catch (e) {
        if (e instanceof ConfigError) return { exitCode: 1, output: [`invalid config, nothing was planned:`, e.message, ...removeStalePlan(out)].join("\n") };
        if (e instanceof PreviewError) return { exitCode: 1, output: [`the preview would fail, nothing was planned:`, e.message, ...removeStalePlan(out)].join("\n") };
        throw e;
    }
}

/**
 * The record of what a plan wrote into --out: each file's path and sha256. Only files it lists, unchanged since, are
 * ever removed, so a file of the user's that happens to be called manifests.yaml or summary.txt is never touched.
 */
export const PLAN_RECORD = ".notify-karpenter-plan.json";

interface PlanRecord {
    writtenBy: "npm run plan";
    stack: string;
    files: Record<string, string>;
}

const sha256 = (text: string | Buffer) => crypto.createHash("sha256").update(text).digest("hex");

/** The record an earlier plan left in `out`, or undefined when there is none (or it is not one of ours). */
function readPlanRecord(out: string): PlanRecord | undefined {
    try {
        const record = JSON.parse(readInputFile(path.join(out, PLAN_RECORD), 1_000_000));
        const files = record?.files;
        if (record?.writtenBy !== "npm run plan" || typeof files !== "object" || files === null) return undefined;
        // Only paths of the plan's own files: a record cannot name anything else in the directory, or above it.
        const own = Object.entries(files).filter(([f, h]) => PLAN_FILES.includes(f) && typeof h === "string");
        return { writtenBy: "npm run plan", stack: String(record.stack), files: Object.fromEntries(own) as Record<string, string> };
    } catch {
        return undefined;
    }
}

/**
 * Removes from `out` the files the record says an earlier plan wrote, where each is still as written (`keep`: the files
 * about to be written again). Returns what was removed and what was left because it changed.
 */
function removeRecordedFiles(out: string, record: PlanRecord, keep: string[] = []): { removed: string[]; changed: string[] } {
    const removed: string[] = [];
    const changed: string[] = [];
    for (const [file, hash] of Object.entries(record.files)) {
        if (keep.includes(file)) continue;
        const full = path.join(out, file);
        let text: Buffer;
        try {
            if (!fs.lstatSync(full).isFile()) continue;
            text = fs.readFileSync(full);
        } catch {
            continue;
        }
        if (sha256(text) !== hash) {
            changed.push(file);
            continue;
        }
        fs.rmSync(full);
        removed.push(file);
    }
    // The folders of the values and ci-access files go with them, unless something else is in them.
    for (const folder of [path.dirname(valuesFilePath("x")), CI_ACCESS_DIR].map((d) => path.join(out, d))) {
        if (fs.existsSync(folder) && fs.statSync(folder).isDirectory() && fs.readdirSync(folder).length === 0) fs.rmdirSync(folder);
    }
    return { removed, changed };
}

/** Removes the files of an earlier plan from `out`, and says so; only files that plan wrote, unchanged since, go. */
function removeStalePlan(out: string): string[] {
    if (!out || !fs.existsSync(out) || !fs.statSync(out).isDirectory()) return [];
    const record = readPlanRecord(out);
    if (!record) {
        const present = PLAN_FILES.filter((f) => fs.existsSync(path.join(out, f)));
        return present.length ? [`Left ${present.join(", ")} in ${out} alone: no ${PLAN_RECORD} says npm run plan wrote them, and they are NOT this config's plan.`] : [];
    }
    try {
        const { removed, changed } = removeRecordedFiles(out, record);
        fs.rmSync(path.join(out, PLAN_RECORD));
        return [
            ...(removed.length ? [`Removed the earlier plan's files from ${out}: they showed a config that is no longer there.`] : []),
            ...(changed.length ? [`Left ${changed.join(", ")} in ${out}: changed since npm run plan wrote them, and NOT this config's plan.`] : []),
        ];
    } catch (e) {
        return [`The earlier plan in ${out} could not be removed (${(e as NodeJS.ErrnoException).code}): it is NOT this config's plan.`];
    }
}

/** The program's resources and data-source calls for a stack, with the validated config they came from. */
async function build(stack: string, dir: string): Promise<{ resources: RecordedResource[]; calls: { token: string }[]; cfg: StackConfig }> {
    const recording = await runOffline(
        stack,
        () => {
            const cfg = loadConfig();
            createStack(cfg);
            return cfg;
        },
        { dir },
    );
    return { resources: recording.resources, calls: recording.calls, cfg: recording.outputs };
}

/** Writes the plan and the policy results, even when a policy fails, so that users can look at what failed. */
async function planStack(stack: string, out: string, verbose: boolean, dir: string, pack: Policies): Promise<CommandResult> {
    const { resources, calls, cfg } = await build(stack, dir);
    const policyConfig = policyConfigFor(cfg);
    const report = await runPolicies(pack, policyInputs(resources), policyConfig);
    const mandatory = report.violations.filter((v) => v.enforcementLevel === "mandatory").length;
    const byUrn = new Map(resources.map((r) => [r.urn, `${r.type} ${r.name}`]));
    const policyHeading = report.violations.length === 0 ? `Policy pack: ${pack.length} policies, no violations` : `Policy pack: ${count(report.violations.length, "violation")} (${mandatory} mandatory)`;
    const violations = formatViolations(report.violations, (urn) => byUrn.get(urn ?? "") ?? "the stack").flatMap((v) => v.split("\n"));
    const placement = placementArgs(cfg);
    const ciAccess = ciAccessFiles(stack, cfg, { resources, calls });
    // Each once: the config's own (what it costs and what to do; acknowledged ones quiet), then the plan's notes.
    const warnings = [...cfg.warnings.map(warningLine), ...gcNotifyValues(placement).notes, ...ciAccess.notes].map((w) => `warning: ${w}`);
    const acknowledged = cfg.quietedWarnings.length ? [`Acknowledged in the stack file (notify-karpenter:acknowledged), so quiet: ${cfg.quietedWarnings.map((w) => w.id).join(", ")}`] : [];
    const quietedLines = cfg.quietedWarnings.map((w) => `acknowledged: ${warningLine(w)} (reason: ${w.reason})`);
    const full = [summary(stack, resources), "", policyHeading, ...violations, ...(warnings.length || quietedLines.length ? ["", ...warnings, ...quietedLines] : [])].join("\n") + "\n";
    const files = {
        "preview.json": JSON.stringify(previewJson(stack, resources), null, 2) + "\n",
        "manifests.yaml": manifestsYaml(resources),
        "policy-config.json": JSON.stringify(policyConfig, null, 2) + "\n",
        "policy-report.json": JSON.stringify({ violations: report.violations }, null, 2) + "\n",
        "cwagent-prometheus-karpenter.json": cloudwatchAgentFile(cfg),
        "summary.txt": full,
    };
    const values = gcNotifyValuesFiles(stack, placement);
    const written: Record<string, string> = { ...files, ...values, ...ciAccess.files };
    // A config that moved to a created cluster leaves no ci-access files of an earlier plan behind (only files that
    // plan wrote, unchanged since).
    const earlier = fs.existsSync(out) && fs.statSync(out).isDirectory() ? readPlanRecord(out) : undefined;
    if (earlier) removeRecordedFiles(out, earlier, Object.keys(written));
    const record: PlanRecord = { writtenBy: "npm run plan", stack, files: Object.fromEntries(Object.entries(written).map(([f, text]) => [f, sha256(text)])) };
    const unwritable = writeFiles(out, { ...written, [PLAN_RECORD]: JSON.stringify(record, null, 2) + "\n" });
    if (unwritable) return { exitCode: EXIT.cannotCheck, output: unwritable };

    const valuesLine = [
        ...(Object.keys(values).length ? [`  ${path.dirname(valuesFilePath("x"))}/: ${Object.keys(values).length} Helm values files, one per GC Notify release (docs/migration.md, step 1)`] : []),
        ...(Object.keys(ciAccess.files).length ? [`  ${CI_ACCESS_DIR}/: CI's GitHub OIDC roles and their cluster access, for GC Notify's Terraform (its README.md)`] : []),
    ];
    if (verbose) return { exitCode: mandatory > 0 ? 1 : 0, output: [full.trimEnd(), "", `Wrote ${Object.keys(files).join(", ")} to ${out}`, ...valuesLine].join("\n") };
    // The summary: at most SUMMARY_LINES lines of at most TERMINAL_WIDTH columns; as many violations as fit, then where
    // the rest are. Paths are never cut: the user copies them.
    const rest = (n: number, what: string) => [`  ... ${n} more ${what} in ${path.join(out, "summary.txt")}`];
    const warningLines = warnings.length > 2 ? [...warnings.slice(0, 1).map((w) => fit(w)), ...rest(warnings.length - 1, "warnings")] : warnings.map((w) => fit(w));
    const head = [...briefSummary(stack, resources), "", fit(policyHeading)];
    const tail = [...warningLines, "", `Wrote to ${out}:`, `  ${Object.keys(files).slice(0, 4).join(", ")},`, `  ${Object.keys(files).slice(4).join(", ")} (the full listing; or --verbose)`, ...valuesLine];
    const room = SUMMARY_LINES - head.length - tail.length;
    const shown = violations.length <= room ? violations : violations.slice(0, Math.max(0, room - 1));
    const cut = shown.length < violations.length ? rest(violations.length - shown.length, "lines of violations") : [];
    // The acknowledged warnings' line only where no violation needs the room.
    const quiet = room - shown.length - cut.length >= acknowledged.length ? acknowledged.map((a) => fit(a)) : [];
    const text = [...head, ...shown.map((v) => fit(v)), ...cut, ...tail.slice(0, warningLines.length), ...quiet, ...tail.slice(warningLines.length)];
    return { exitCode: mandatory > 0 ? 1 : 0, output: text.join("\n") };
}

/** Exit code 1 when a resource exists in only one stack: the stacks run the same code and may differ only in values. */
async function diff([a, b]: [string, string], dir: string): Promise<CommandResult> {
    const d = diffStacks({ stack: a, ...(await build(a, dir)) }, { stack: b, ...(await build(b, dir)) });
    // The components a config switch turns off may be in one stack only, when the two stacks set it apart.
    const switched = SWITCHED_COMPONENTS.filter((c) => switchOf(a, c.key, dir) !== switchOf(b, c.key, dir));
    const allowed = (r: string) => switched.some((c) => r.split(" ")[1]?.startsWith(c.name));
    const failing = [...d.onlyIn[0], ...d.onlyIn[1]].filter((r) => !allowed(r));
    const lines = renderDiff(d).split("\n");
    const notes = switched.map((c) => `(${c.what} is in one stack only: ${c.key} is ${switchOf(a, c.key, dir)} in ${a} and ${switchOf(b, c.key, dir)} in ${b})`);
    return { exitCode: failing.length > 0 ? 1 : 0, output: [...lines.slice(0, -1), ...notes, ...lines.slice(-1)].join("\n") };
}

/** Components that a stack's config switches on or off by design, by the name their resources start with. */
const SWITCHED_COMPONENTS = [{ key: "drill.enabled", name: "spot-interruption-drill", what: "the spot interruption drill" }];

/** A config switch's value in a stack file ("section.key"), as written (false when absent). */
function switchOf(stack: string, key: string, dir: string): boolean {
    const [section, field] = key.split(".");
    const raw = readStackConfig(stack, dir)[`${PROJECT}:${section}`];
    return raw === undefined ? false : JSON.parse(raw)?.[field] === true;
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

function planArgs(argv: string[]): Args | CommandResult {
    const line = parseCommandLine(argv, PLAN);
    if (isResult(line)) return line;
    const [stack, out, diff] = [valueOf(line, "stack"), valueOf(line, "out"), valueOf(line, "diff")];
    const verbose = line.flags.verbose === true;
    if (diff !== undefined) {
        if (stack !== undefined || out !== undefined || verbose) return usage("--diff takes no --stack, --out or --verbose", PLAN);
        if (line.positionals.length !== 1) return usage("--diff needs two stack names: --diff <stack> <stack>", PLAN);
        return { diff: [diff, line.positionals[0]] };
    }
    if (line.positionals.length) return usage(`unexpected argument "${line.positionals[0]}": the flags are ${Object.keys(PLAN.flags).map((f) => `--${f}`).join(", ")}`, PLAN);
    return stack !== undefined ? { stack, out, verbose } : usage("--stack or --diff is required", PLAN);
}

if (require.main === module) runMain(() => plan(process.argv.slice(2)));
