// `npm run benchmark`: the CPU each command costs, measured side by side in one run, as docs/development.md quotes it
// (issue 30): every command's --help against a bare `node -e 0`, the offline plan of staging against Node loading the
// same packages, and, with --tests, `npm test`. CPU is user + system time of the process and everything it waited for
// (bash's `times`), so a busy machine slows each figure less than it slows the clock; each is the median of --rounds
// runs, interleaved, so that load falls on every figure alike.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type Command, type CommandResult, EXIT, isResult, parseCommandLine, runMain, usage, valueOf } from "../cli/args.ts";
import { table } from "../cli/table.ts";

const ROOT = path.join(import.meta.dirname, "..");

export const BENCHMARK: Command = {
    usage: ["npm run benchmark -- [--rounds <n>] [--tests]"],
    summary: "The CPU seconds each command costs, side by side: --help against node -e 0, the offline plan of staging against Node loading the same packages.",
    flags: {
        rounds: { value: "<n>", meaning: "runs of each figure; the median is shown", default: "5" },
        tests: { meaning: "also run npm test (minutes) and show its CPU" },
    },
    exits: { 0: "measured" },
    examples: ["npm run benchmark", "npm run benchmark -- --rounds 9 --tests"],
};

/**
 * The packages the offline plan loads (plan/planRun.ts and what it imports): Node loading them alone is the plan's
 * floor. Loaded through the same compile cache as the commands, so that the two compare like for like.
 */
const PLAN_PACKAGES = ["@pulumi/pulumi", "@pulumi/aws", "@pulumi/kubernetes", "@pulumi/eks", "@pulumi/awsx", "@pulumi/policy", "yaml", "ajv", "@marcbachmann/cel-js"];
const PRELOAD = "--import ./cli/compileCache.mjs";

/**
 * Every npm script that runs a command: its name, its entry file and the V8 flags it runs with (package.json,
 * `node [flags] --import ... <entry>.ts`; the plan's tune garbage collection, docs/development.md).
 */
export function commands(): { name: string; entry: string; nodeFlags: string }[] {
    const scripts: Record<string, string> = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts;
    return Object.entries(scripts).flatMap(([name, line]) => {
        const [, nodeFlags = "", entry] = /^node ((?:--(?!import )\S+ )*)(?:--import \S+ )?(\S+\.ts)$/.exec(line) ?? [];
        return entry && name !== "benchmark" ? [{ name, entry, nodeFlags }] : [];
    });
}

/**
 * CPU seconds (user + system) of a shell command and its children, run from the repository's root. Not with Node's
 * stdin, a socket: bash takes that for rshd and sources ~/.bashrc, which added 0.6 s to every figure where it starts
 * pyenv (a run in the background measured `node -e 0` at 0.7 s).
 */
function cpuSeconds(command: string): number {
    const r = spawnSync("bash", ["-c", `${command} > /dev/null 2>&1; times`], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PATH: `${path.join(ROOT, "node_modules", ".bin")}:${process.env.PATH}` } });
    return childrenCpuSeconds(r.stdout);
}

/** The children's user + system seconds in bash's `times` output: the shell's own line, then its children's ("0m1.234s 0m0.567s"). */
export function childrenCpuSeconds(times: string): number {
    const children = times.trim().split("\n").pop() ?? "";
    return [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, [, m, s]) => sum + Number(m) * 60 + Number(s), 0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

export async function benchmark(argv: string[]): Promise<CommandResult> {
    const line = parseCommandLine(argv, BENCHMARK);
    if (isResult(line)) return line;
    const rounds = Number(valueOf(line, "rounds") ?? "5");
    if (!Number.isInteger(rounds) || rounds < 1 || rounds > 99) return usage(`--rounds: must be a whole number from 1 to 99 (got "${valueOf(line, "rounds")}")`, BENCHMARK);
    const plans = fs.mkdtempSync(path.join(os.tmpdir(), "notify-karpenter-benchmark-"));
    try {
        return measure(rounds, line.flags.tests === true, plans);
    } finally {
        fs.rmSync(plans, { recursive: true, force: true });
    }
}

/** A figure of the benchmark: what it is, the shell command timed, and the figure its ratio is against. */
type Figure = { what: string; command: string; baseline?: string };

/** The figures, in the order they run: each command as its npm script runs it, V8 flags included; the plan's into `plans`. */
export function figures(tests: boolean, plans: string): Figure[] {
    // The floor runs with the plan's own V8 flags, so that the two compare like for like.
    const planFlags = commands().find((c) => c.name === "plan")?.nodeFlags ?? "";
    const floor = `node ${planFlags}${PRELOAD} --input-type=module -e '${PLAN_PACKAGES.map((p) => `await import("${p}");`).join(" ")}'`;
    return [
        { what: "node -e 0", command: "node -e 0" },
        ...commands().map(({ name, entry, nodeFlags }) => ({ what: `${name} --help`, command: `node ${nodeFlags}${PRELOAD} ${entry} --help`, baseline: "node -e 0" })),
        { what: "Node loading the plan's packages", command: floor },
        // Each plan into a fresh directory of one removed at the end: a run leaves no plans behind (0.6 MB each).
        { what: "plan --stack staging", command: `node ${planFlags}${PRELOAD} plan/cli.ts --stack staging --out "$(mktemp -d -p ${JSON.stringify(plans)})"`, baseline: "Node loading the plan's packages" },
        ...(tests ? [{ what: "npm test", command: "npm test" }] : []),
    ];
}

/** A figure against its baseline, to two decimals: the plan's target is at most 1.5x, and 1.53 as "1.5x" reads as met. */
export const ratioText = (cpu: number, baseline: number) => `${(cpu / baseline).toFixed(2)}x`;

function measure(rounds: number, tests: boolean, plans: string): CommandResult {
    const timed = figures(tests, plans);
    // One untimed run of each warms the compile cache, as every run after the first finds it.
    for (const f of timed) if (f.what !== "npm test") cpuSeconds(f.command);
    const runs = new Map(timed.map((f) => [f.what, [] as number[]]));
    for (let round = 0; round < rounds; round++) for (const f of timed) runs.get(f.what)!.push(cpuSeconds(f.command));
    const cpu = (what: string) => median(runs.get(what)!);
    const rows = timed.map((f) => [f.what, cpu(f.what).toFixed(2), f.baseline ? `${ratioText(cpu(f.what), cpu(f.baseline))} ${f.baseline}` : ""]);
    return { exitCode: EXIT.ok, output: [`CPU seconds, median of ${rounds} interleaved runs (Node ${process.versions.node}, ${new Date().toISOString().slice(0, 10)}):`, ...table(["what", "CPU s", "ratio"], rows)].join("\n") };
}

if (import.meta.main) runMain(() => benchmark(process.argv.slice(2)));
