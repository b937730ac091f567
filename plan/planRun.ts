// The offline plan, once plan/cli.ts has read its flags: a stack built under Pulumi's mocks and checked against the
// policy pack, what an edit changes (--diff-against), and two stacks compared (--diff).
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawnSync } from "child_process";
import type { Policies } from "@pulumi/policy";
import { policies } from "../policy/policies.ts";
import { ConfigError, type StackConfig, StackFileError } from "../stacks/config.ts";
import { warningLine } from "../stacks/warnings.ts";
import { loadConfig } from "../stacks/programConfig.ts";
import { createStack } from "../stacks/createStack.ts";
import { policyConfigFor } from "../stacks/policyConfig.ts";
import { CI_ACCESS_DIR, ciAccessFiles, ciAccessPaths, ciRoleNameProblem } from "./ciAccess.ts";
import { PROJECT } from "../stacks/stackNames.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { cloudwatchAgentFile } from "./cloudwatchAgent.ts";
import { CELERY_PRESTOP_TEMPLATE_FILE, GC_NOTIFY_RELEASES, gcNotifyValues, gcNotifyValuesFiles, valuesFilePath } from "./gcNotifyCharts.ts";
import { celeryHandoverFiles } from "./celeryHandover.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { diffStacks, renderChanges, renderDiff } from "./diff.ts";
import { PreviewError, type RecordedResource, runOffline } from "./offlineRuntime.ts";
import { formatViolations, policyInputs, runPolicies } from "./policyRun.ts";
import { briefSummary, fit, manifestsYaml, planOverview, previewJson, summary } from "./render.ts";
import { type OutRecord, outFilesProblem, outRecordName, readOutRecord, removeRecordedFiles, writeFiles } from "../cli/outDir.ts";
import { type CommandResult, EXIT, inForm, isResult, usage } from "../cli/args.ts";
import { elapsed, jsonText, progress } from "../cli/output.ts";
import { PLAN, type PlanArgs } from "./cli.ts";



/** The most lines `npm run plan` prints without --verbose. */
const SUMMARY_LINES = 40;

/** The files a plan writes (the ci-access ones of `stack`); a refused config removes them, so that no stale plan is mistaken for this one. */
export const planFiles = (stack: string) => [
    "preview.json",
    "manifests.yaml",
    "policy-config.json",
    "policy-report.json",
    "cwagent-prometheus-karpenter.json",
    "summary.txt",
    ...GC_NOTIFY_RELEASES.map(valuesFilePath),
    CELERY_PRESTOP_TEMPLATE_FILE,
    // A stack name as stack files have it, so that no record can name a path of its choosing.
    ...(/^[a-z0-9-]+$/.test(stack) ? ciAccessPaths(stack) : []),
];
/** The files every plan writes, whatever its stack. */
export const PLAN_FILES = planFiles("");



/**
 * The plan of flags `npm run plan` has read (plan/cli.ts): a stack's plan into `out`, what an edit changes, or two stacks
 * compared, checked against `pack`. With --json, every outcome is JSON.
 */
export async function runPlan(args: PlanArgs, out: string, dir: string, pack: Policies = policies): Promise<CommandResult> {
    // --diff-against writes nothing, so a refused config there leaves the plan in --out alone.
    const removeStale = (o: string) => ("diff" in args || args.against !== undefined ? [] : removeStalePlan(o));
    try {
        if ("diff" in args) return await diff(args.diff, dir);
        if (args.against !== undefined) return await diffAgainst(args.stack, args.against, out, dir);
        return inForm(await planStack(args.stack, out, args, dir, pack), args.json, "plan", args.stack);
    } catch (e) {
        const json = !("diff" in args) && args.json;
        const stack = "diff" in args ? undefined : args.stack;
        if (e instanceof ConfigError) return inForm({ exitCode: 1, output: [`invalid config, nothing was planned:`, e.message, ...removeStale(out)].join("\n") }, json, "plan", stack);
        if (e instanceof PreviewError) return inForm({ exitCode: 1, output: [`the preview would fail, nothing was planned:`, e.message, ...removeStale(out)].join("\n") }, json, "plan", stack);
        // Anything else is this program's fault, not the input's: one line, never a stack trace, and nothing written.
        return { exitCode: EXIT.cannotCheck, output: `Could not plan (an error in npm run plan itself, please report it): ${(e as Error)?.message ?? e}` };
    }
}

/**
 * The record of what a plan wrote into --out: each file's path and sha256 (cli/outDir.ts, as every command that writes
 * keeps one). Only files it lists, unchanged since, are ever overwritten or removed, so a file of the user's that
 * happens to be called manifests.yaml or summary.txt is never touched.
 */
export const PLAN_RECORD = outRecordName("plan");

/** The record an earlier plan left in `out`, its files the plan's own (a record cannot name anything else). */
function readPlanRecord(out: string): OutRecord | undefined {
    const record = readOutRecord(out, "plan");
    return record && { ...record, files: Object.fromEntries(Object.entries(record.files).filter(([f]) => planFiles(record.stack ?? "").includes(f))) };
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
async function build(stack: string, dir: string, what = `stack ${stack}`): Promise<{ resources: RecordedResource[]; calls: { token: string }[]; cfg: StackConfig }> {
    progress(`plan: building ${what} offline`);
    const started = Date.now();
    const recording = await runOffline(
        stack,
        () => {
            const cfg = loadConfig();
            // CI's roles are named after the stack (plan/ciAccess.ts); IAM refuses a name that does not fit.
            const tooLong = cfg.cluster.mode === "existing" ? ciRoleNameProblem(stack) : undefined;
            if (tooLong) throw new StackFileError(stack, `Pulumi.${stack}.yaml: ${tooLong}`);
            createStack(cfg);
            return cfg;
        },
        { dir, reuseAs: "plan" },
    );
    progress(`plan: built ${what} in ${elapsed(started)}: ${recording.resources.length} resources recorded`);
    return { resources: recording.resources, calls: recording.calls, cfg: recording.outputs };
}

/** Writes the plan and the policy results, even when a policy fails, so that users can look at what failed. */
async function planStack(stack: string, out: string, mode: { verbose: boolean; json: boolean; findingsOnly: boolean }, dir: string, pack: Policies): Promise<CommandResult> {
    const { verbose } = mode;
    const { resources, calls, cfg } = await build(stack, dir);
    const policyConfig = policyConfigFor(cfg);
    progress(`plan: running the policy pack (${pack.length} policies)`);
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
    const handover = celeryHandoverFiles(cfg);
    const written: Record<string, string> = { ...files, ...values, ...handover, ...ciAccess.files };
    // A config that moved to a created cluster leaves no ci-access files of an earlier plan behind: writeFiles removes
    // the files of the earlier plan it does not write again (only files that plan wrote, unchanged since).
    // Only over files an earlier plan wrote, unchanged since (cli/outDir.ts): a file of the user's stays, and nothing is written.
    const conflict = outFilesProblem(out, Object.keys(written), { command: "plan", stack });
    if (conflict) return usage(conflict, PLAN);
    const unwritable = writeFiles(out, written, "--out", { command: "plan", stack });
    if (unwritable) return { exitCode: EXIT.cannotCheck, output: unwritable };

    const valuesLine = [
        ...(Object.keys(values).length
            ? [
                  Object.keys(handover).length
                      ? `  ${path.dirname(valuesFilePath("x"))}/ (${Object.keys(values).length} releases), ${path.dirname(Object.keys(handover)[0])}/: GC Notify's changes (docs/migration.md, step 1)`
                      : `  ${path.dirname(valuesFilePath("x"))}/: ${Object.keys(values).length} Helm values files, one per GC Notify release (docs/migration.md, step 1)`,
              ]
            : []),
        ...(Object.keys(ciAccess.files).length ? [`  ${CI_ACCESS_DIR}/: CI's GitHub OIDC roles and their cluster access, for GC Notify's Terraform (its README.md)`] : []),
    ];
    const exitCode = mandatory > 0 ? EXIT.findings : EXIT.ok;
    if (mode.json) {
        const body = {
            stack,
            exitCode,
            ...overviewJson(planOverview(resources)),
            policy: {
                policies: pack.length,
                mandatory,
                violations: report.violations.map((v) => ({ policy: v.policy, enforcementLevel: v.enforcementLevel, resource: byUrn.get(v.urn ?? "") ?? null, urn: v.urn ?? null, message: v.message })),
            },
            warnings: warnings.map((w) => w.replace(/^warning: /, "")),
            out,
            files: Object.keys(written).sort(),
        };
        return { exitCode, format: "json", output: jsonText("plan", body) };
    }
    if (mode.findingsOnly) {
        // The findings alone: each violation and warning whole (a terminal wraps them), then the verdict.
        return { exitCode, output: [`Offline plan of stack ${stack}: findings only (the full listing: ${path.join(out, "summary.txt")})`, ...violations, ...warnings, policyHeading].join("\n") };
    }
    if (verbose) return { exitCode, output: [full.trimEnd(), "", `Wrote ${Object.keys(files).join(", ")} to ${out}`, ...valuesLine].join("\n") };
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

/** The plan's overview in the JSON report's shape (docs/json-output.md). */
function overviewJson(o: ReturnType<typeof planOverview>) {
    return { resources: { total: o.total, byComponent: o.components }, nodePool: o.nodePool ?? null, placement: o.placement };
}

/**
 * What an edit changes (--diff-against): the stack planned now against a baseline, compared as the stack diff compares
 * two stacks. The baseline is a git ref's stack file planned with this working tree's code (only config is taken from
 * the ref), or an earlier plan's preview.json (as that plan's code planned it). Writes nothing; exit 0 when compared.
 */
async function diffAgainst(stack: string, against: string, out: string, dir: string): Promise<CommandResult> {
    const baseline = await baselinePlan(stack, against, out, dir);
    if (isResult(baseline)) return baseline;
    const { resources } = await build(stack, dir);
    const now = resourcesOf(previewJson(stack, resources));
    const d = diffStacks({ stack, label: baseline.label, resources: baseline.resources }, { stack, label: "the working tree", resources: now });
    return { exitCode: EXIT.ok, output: renderChanges(stack, d, baseline.note) };
}

/** The resource options preview.json holds beside the inputs (plan/render.ts previewJson: newState, as ResourceV3). */
const OPTION_FIELDS = ["protect", "retainOnDelete", "deleteBeforeReplace", "replaceOnChanges", "ignoreChanges", "customTimeouts"] as const;

/**
 * The resources of a plan's preview.json (the stack itself left out), as the diff compares them: URN, type, name,
 * inputs, resource options and dependencies.
 */
function resourcesOf(preview: unknown): RecordedResource[] {
    const steps = (JSON.parse(JSON.stringify(preview)) as { steps?: unknown }).steps;
    if (!Array.isArray(steps)) throw new Error("it has no steps list");
    return steps
        .filter((s: any) => typeof s?.urn === "string" && s.newState?.type !== "pulumi:pulumi:Stack")
        .map((s: any) => {
            const state = s.newState ?? {};
            const options = Object.fromEntries(OPTION_FIELDS.filter((k) => state[k] !== undefined).map((k) => [k, state[k]]));
            return { urn: s.urn, type: String(state.type ?? ""), name: s.urn.split("::").pop(), inputs: state.inputs ?? {}, options, dependencies: Array.isArray(state.dependencies) ? state.dependencies : [] } as RecordedResource;
        });
}

/** The baseline of --diff-against: `last` (the plan in --out), a plan directory, or a git ref; or the result to return. */
async function baselinePlan(stack: string, against: string, out: string, dir: string): Promise<{ label: string; note: string; resources: RecordedResource[] } | CommandResult> {
    if (against.startsWith("-") || against.trim() === "") return usage(`--diff-against: "${against}" is not a git ref, a plan directory or last`, PLAN);
    const git = (...args: string[]) => spawnSync("git", ["-C", dir, ...args], { encoding: "utf8", timeout: 30_000, maxBuffer: 20_000_000 });
    const isDirectory = against !== "last" && fs.existsSync(against) && fs.statSync(against).isDirectory();
    // A name that is both a plan (a directory, or last) and a git ref is refused: neither may silently win.
    // Without --quiet: when git refuses the repository (dubious ownership, a broken clone), its reason is kept.
    const commit = git("rev-parse", "--verify", "--end-of-options", `${against}^{commit}`);
    const isRef = !commit.error && commit.status === 0;
    if ((isDirectory || against === "last") && isRef) {
        const plan = isDirectory ? `the directory ${path.resolve(against)}` : `last (the plan in ${out})`;
        const forPlan = isDirectory ? `./${path.normalize(against).replace(/\/$/, "")}/ for the directory` : `--diff-against ${out} for the plan in --out`;
        return usage(`--diff-against ${against}: is both ${plan} and a git ref (${commit.stdout.trim().slice(0, 12)}); say which: ${forPlan}, or ${against}^{commit} for the ref`, PLAN);
    }
    const planDir = against === "last" ? out : isDirectory ? against : undefined;
    if (planDir !== undefined) {
        const file = path.join(planDir, "preview.json");
        if (!fs.existsSync(file)) {
            return usage(`--diff-against ${against}: no plan in ${planDir} (no preview.json): run npm run plan -- --stack ${stack}${planDir === out ? "" : ` --out ${planDir}`} first`, PLAN);
        }
        try {
            // A plan's preview.json is a few megabytes; anything far larger is not one.
            if (!fs.statSync(file).isFile() || fs.statSync(file).size > 200_000_000) throw new Error("not a regular file of at most 200 MB");
            const preview = JSON.parse(fs.readFileSync(file, "utf8"));
            const planned = String(preview?.steps?.[0]?.urn ?? "").split("::")[0];
            if (planned !== `urn:pulumi:${stack}`) return usage(`--diff-against ${against}: ${file} is a plan of ${planned.replace(/^urn:pulumi:/, "stack ") || "no stack"}, not of stack ${stack}`, PLAN);
            return { label: `the plan in ${planDir}`, note: `the plan written to ${planDir}, as its code planned it then`, resources: resourcesOf(preview) };
        } catch (e) {
            return { exitCode: EXIT.cannotCheck, output: `Could not check: ${file} is not a plan's preview.json: ${(e as Error).message}` };
        }
    }
    if (!isRef && fs.existsSync(against)) return usage(`--diff-against ${against}: is a file, not a plan directory: give the directory that holds a plan's preview.json, a git ref or last`, PLAN);
    if (commit.error) return { exitCode: EXIT.cannotCheck, output: `Could not check: --diff-against ${against} needs git: ${(commit.error as NodeJS.ErrnoException).code === "ENOENT" ? "git is not installed" : commit.error.message}` };
    if (commit.status !== 0) {
        const top = git("rev-parse", "--show-toplevel");
        if (top.status !== 0) {
            const said = gitSaid(top);
            // Not a repository is a usage error; a repository git refuses to read (owned by another user: dubious
            // ownership) is one this command could not check, in git's own words.
            if (/not a git repository/i.test(said)) return usage(`--diff-against ${against}: ${dir} is in no git repository (git: ${said}); give a plan directory or last instead`, PLAN);
            return { exitCode: EXIT.cannotCheck, output: `Could not check: --diff-against ${against}: git cannot read the repository at ${dir}: ${said}` };
        }
        const shallow = String(git("rev-parse", "--is-shallow-repository").stdout ?? "").trim() === "true";
        const why = shallow ? `; this clone is shallow (git rev-parse --is-shallow-repository), so older commits are not in it: git fetch --unshallow, or check out with fetch-depth: 0` : "";
        return usage(`--diff-against: "${against}" is not a commit of this repository (git rev-parse: ${gitSaid(commit)})${why}, a plan directory (with preview.json) or last`, PLAN);
    }
    const sha = commit.stdout.trim();
    const file = `Pulumi.${stack}.yaml`;
    const shown = fileAtRef(git, sha, file);
    if (typeof shown !== "object") return usage(`--diff-against ${against}: ${shown.replace("<ref>", `${against} (${sha.slice(0, 12)})`)}`, PLAN);
    const temp = fs.mkdtempSync(path.join(os.tmpdir(), "notify-karpenter-diff-against-"));
    try {
        fs.writeFileSync(path.join(temp, file), shown.text);
        const via = shown.path === file ? "" : ` (a link there to ${shown.path})`;
        try {
            const { resources } = await build(stack, temp, `stack ${stack} as it is at ${against}`);
            return { label: against, note: `${file} as it is at ${against} (${sha.slice(0, 12)})${via}, both planned with this working tree's code`, resources: resourcesOf(previewJson(stack, resources)) };
        } catch (e) {
            if (!(e instanceof ConfigError) && !(e instanceof PreviewError)) throw e;
            const message = e.message.split(path.join(temp, file)).join(`${against}:${file}`);
            return { exitCode: EXIT.cannotCheck, output: `Could not check: ${file} at ${against} does not plan with this working tree's code, so there is nothing to compare with:\n${message}` };
        }
    } finally {
        fs.rmSync(temp, { recursive: true, force: true });
    }
}

/** What git said on standard error, as it said it: its lines (hints left out) on one line, at most 400 characters. */
function gitSaid(r: ReturnType<typeof spawnSync>): string {
    if (r.error) return r.error.message;
    const lines = String(r.stderr ?? "").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("hint:"));
    return (lines.join(" ") || `exit ${r.status}`).slice(0, 400);
}

/**
 * A file's text at a commit, following symbolic links (git stores a link as a blob holding its target, mode 120000)
 * within the repository, as a checkout would; or why not, with "<ref>" for the ref. Paths are relative to `dir`.
 */
function fileAtRef(git: (...args: string[]) => ReturnType<typeof spawnSync>, sha: string, file: string): { text: string; path: string } | string {
    let at = file;
    for (let hops = 0; hops <= 10; hops++) {
        const listed = git("ls-tree", sha, "--", at);
        if (listed.status !== 0) return `${at} cannot be read at <ref> (git ls-tree: ${gitSaid(listed)})`;
        const entry = String(listed.stdout ?? "").split("\n")[0];
        const m = /^(\d{6}) (\w+) [0-9a-f]+\t/.exec(entry);
        if (!m) return hops === 0 ? `${file} does not exist at <ref>` : `${file} at <ref> is a link to ${at}, which does not exist there`;
        const shown = git("show", `${sha}:${at.startsWith("..") ? at : `./${at}`}`);
        if (shown.status !== 0) return `${at} cannot be read at <ref> (git show: ${gitSaid(shown)})`;
        if (m[1] !== "120000") {
            if (m[2] !== "blob") return `${at} at <ref> is a ${m[2] === "tree" ? "directory" : m[2]}, not a stack file`;
            return { text: String(shown.stdout), path: at };
        }
        const target = String(shown.stdout).trim();
        if (path.isAbsolute(target)) return `${file} at <ref> is a link to the absolute path ${target}, outside the repository: commit the stack file itself`;
        at = path.normalize(path.join(path.dirname(at), target));
        const top = String(git("rev-parse", "--show-prefix").stdout ?? "").trim();
        if (path.normalize(path.join(top, at)).startsWith("..")) return `${file} at <ref> is a link to ${target}, outside the repository: commit the stack file itself`;
    }
    return `${file} at <ref> is a chain of more than 10 links (a loop?)`;
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


