// What the commands share: one argument parser (Node's util.parseArgs) with --help, and exit codes that fit CI.
import { enableCompileCache } from "node:module";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { closest } from "./text.ts";
import { colourEnabled, colourStatuses, jsonText, setProgressSink } from "./output.ts";

/**
 * 0: all good; 1: findings, a failed run or a refused config; 2: the command was called wrongly; 3: the check could
 * not be made (the cluster unreachable, credentials refused, input unreadable), so CI can tell "something is wrong"
 * from "could not look".
 */
export const EXIT = { ok: 0, findings: 1, usage: 2, cannotCheck: 3 } as const;

export interface CommandResult {
    exitCode: number;
    /** The report, with any findings (stdout), or the usage error (stderr). */
    output: string;
    /** "json": the output is one JSON object (--json): standard output whatever the exit code, never coloured. */
    format?: "json";
    /** Standard output even with exit 3: a report that ran in part (preflight with one half unreachable). */
    stream?: "stdout";
}

/** One flag of a command, as `--help` lists it. */
export interface Flag {
    /** What the flag does. */
    meaning: string;
    /** The value's placeholder (`<name>`); a flag without one is a switch and takes no value. */
    value?: string;
    /** What applies when the flag is absent ("required" for a flag the command cannot do without). */
    default?: string;
    /** The flag may be given more than once; its values are joined with commas, as if given comma-separated. */
    repeatable?: boolean;
}

/** A command's whole interface: what `--help` prints and what the parser accepts. */
export interface Command {
    /** The usage lines, without the leading "usage: ". */
    usage: string[];
    /** What the command does, in a sentence or two. */
    summary: string;
    flags: Record<string, Flag>;
    /** What exit codes 0, 1 and 3 mean for this command (2, usage, is the same for all). */
    exits: { 0: string; 1?: string; 3?: string };
    examples: string[];
    /** How many bare arguments the command takes (`--diff <stack> <stack>`: one after the flag's value). */
    positionals?: number;
}

/** What the command line said: each flag's value (`true` for a switch) and the bare arguments. */
export interface CommandLine {
    flags: Record<string, string | true>;
    positionals: string[];
}

const HELP_FLAG: Flag = { meaning: "print this help and exit 0" };
const usageLines = (command: Command) => command.usage.map((u, i) => `${i === 0 ? "usage: " : "       "}${u}`);

/** `--help` for a command: usage, every flag with its meaning and default, the exit codes, examples. */
export function helpText(command: Command): string {
    const flags = Object.entries({ ...command.flags, help: HELP_FLAG }).map(([name, f]) => [`--${name}${f.value ? ` ${f.value}` : ""}${name === "help" ? ", -h" : ""}`, f] as const);
    const width = Math.max(...flags.map(([left]) => left.length));
    const exits: [number, string | undefined][] = [[0, command.exits[0]], [1, command.exits[1]], [2, "usage: an unknown, repeated or incomplete flag, or a bad flag value"], [3, command.exits[3]]];
    return [
        ...usageLines(command),
        "",
        command.summary,
        "",
        "Flags:",
        ...flags.map(([left, f]) => `  ${left.padEnd(width)}  ${f.meaning}${f.default ? ` (${f.default === "required" ? "required" : `default: ${f.default}`})` : ""}`),
        "",
        "Exit codes:",
        ...exits.filter(([, meaning]) => meaning).map(([code, meaning]) => `  ${code}  ${meaning}`),
        "",
        command.examples.length === 1 ? "Example:" : "Examples:",
        ...command.examples.map((e) => `  ${e}`),
    ].join("\n");
}

/** A usage error (exit 2): the line that says what is wrong, the usage lines, and where the rest is. */
export function usage(message: string, command: Command): CommandResult {
    return { exitCode: EXIT.usage, output: [message, ...usageLines(command), "(--help lists every flag)"].join("\n") };
}

/**
 * The command line, read with Node's `util.parseArgs` (its tokens, so that this can say what is wrong in the user's
 * terms): `--help` or `-h` anywhere gives the help (exit 0); an unknown flag, a flag without its value, a value for a
 * switch, a repeated flag or an extra argument is a usage error (exit 2) naming it.
 */
export function parseCommandLine(argv: string[], command: Command): CommandLine | CommandResult {
    const options = Object.fromEntries(Object.entries(command.flags).map(([name, f]) => [name, { type: f.value ? ("string" as const) : ("boolean" as const) }]));
    const { tokens } = parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } }, strict: false, allowPositionals: true, tokens: true });
    if (tokens.some((t) => t.kind === "option" && t.name === "help")) return { exitCode: EXIT.ok, output: helpText(command) };
    const names = Object.keys(command.flags).map((k) => `--${k}`);
    const known = names.length ? `the flags are ${names.join(", ")}` : "the only flag is --help";
    const line: CommandLine = { flags: {}, positionals: [] };
    for (const t of tokens) {
        if (t.kind === "positional") {
            if (line.positionals.length >= (command.positionals ?? 0)) return usage(`unexpected argument "${t.value}": ${known}`, command);
            line.positionals.push(t.value);
        } else if (t.kind === "option") {
            const flag = Object.hasOwn(command.flags, t.name) ? command.flags[t.name] : undefined;
            if (!flag) return usage(`unknown flag ${t.rawName}: ${known}`, command);
            if (t.name in line.flags && !flag.repeatable) return usage(`${t.rawName} is given twice`, command);
            if (!flag.value && t.inlineValue) return usage(`${t.rawName} takes no value`, command);
            // parseArgs takes the next argument as the value whatever it is: "--stack --out x" lacks the stack.
            if (flag.value && (t.value === undefined || (!t.inlineValue && /^--./.test(t.value)))) return usage(`${t.rawName} needs a value: ${flag.value}`, command);
            const earlier = line.flags[t.name];
            line.flags[t.name] = flag.value ? (typeof earlier === "string" ? `${earlier},${t.value!}` : t.value!) : true;
        }
    }
    return line;
}

/** The value of a flag that takes one (undefined when absent). */
export function valueOf(line: CommandLine, name: string): string | undefined {
    const v = line.flags[name];
    return typeof v === "string" ? v : undefined;
}

/** The known name within edit distance 2 of `name` (case aside), as " (did you mean x?)", or "". */
export function didYouMean(name: string, known: string[]): string {
    const k = closest(name, known);
    return k ? ` (did you mean ${k}?)` : "";
}

/** The shared output switches: --json (one JSON object, docs/json-output.md) and --findings (the findings alone). */
export const OUTPUT_FLAGS: Record<"json" | "findings", Flag> = {
    json: { meaning: "print the report as one JSON object (schema: docs/json-output.md) instead of text" },
    findings: { meaning: "print only the findings (WARN and FAIL lines, and the verdict); with --json, only the findings in the lists" },
};

/** Whether the command line asked for JSON and for the findings alone. */
export const outputMode = (line: CommandLine) => ({ json: line.flags.json === true, findingsOnly: line.flags.findings === true });

/**
 * A result in the form asked for: with --json, a text result that is not a usage error (a refused config, a check
 * that could not be made, unwritable output) becomes {schemaVersion, command, stack, exitCode, error}; so does a
 * usage error with `usageToo` (plan, capacity, verify-placement, scale-test), else it stays text on standard error.
 */
export function inForm(result: CommandResult, json: boolean, command: string, stack?: string, opts: { usageToo?: boolean } = {}): CommandResult {
    if (!json || result.format === "json" || (result.exitCode === EXIT.usage && !opts.usageToo)) return result;
    // --help is no error: it stays the help text, with --json or without.
    if (result.exitCode === EXIT.ok) return result;
    return { exitCode: result.exitCode, format: "json", output: jsonText(command, { stack: stack ?? null, exitCode: result.exitCode, error: result.output }) };
}

/**
 * What a command line asked for before it is parsed, for the form of its own usage errors: --json, and the --stack
 * value. A command that takes --json answers in JSON on every path, a usage error included (exit 2).
 */
export function rawFlags(argv: string[]): { json: boolean; stack?: string } {
    const i = argv.findIndex((a) => a === "--stack" || a.startsWith("--stack="));
    const stack = i < 0 ? undefined : argv[i].startsWith("--stack=") ? argv[i].slice("--stack=".length) : argv[i + 1];
    return { json: argv.includes("--json"), stack: stack === undefined || stack.startsWith("--") ? undefined : stack };
}

/** A whole number from `min` to `max`, or the usage error naming the flag. */
export function integerFlag(flag: string, value: string, min: number, max: number): number | string {
    const n = Number(value);
    return /^[0-9]+$/.test(value) && n >= min && n <= max ? n : `--${flag} must be an integer from ${min} to ${max} (got "${value}")`;
}


export function isResult(v: unknown): v is CommandResult {
    return typeof v === "object" && v !== null && "exitCode" in v && "output" in v;
}

/** Where this project keeps what it compiles once: Node's compile cache (cli/compileCache.mjs writes the same path), ajv's validators, Go's build cache for the tests. */
export const CACHE_DIR = path.join(import.meta.dirname, "..", "node_modules", ".cache", "notify-karpenter");

/**
 * Runs a command as the process: progress lines on stderr while it runs; its report (stderr for usage errors and
 * checks not made, stdout for JSON and partial reports), its status words coloured where the stream shows colour
 * (cli/output.ts); then its exit code (stdout and stderr writes are synchronous on Linux).
 */
export function runMain(command: () => Promise<CommandResult>): void {
    // The compile cache of cli/compileCache.mjs, which npm scripts preload, for a command run as `node <entry>.ts`:
    // from here on, what it loads (its run, the SDKs) comes compiled and stripped from node_modules/.cache.
    enableCompileCache(CACHE_DIR);
    setProgressSink((line) => process.stderr.write(`${line}\n`));
    command().then(
        (r) => {
            setProgressSink(undefined);
            const toStderr = r.format !== "json" && r.stream !== "stdout" && (r.exitCode === EXIT.usage || r.exitCode === EXIT.cannotCheck);
            const stream = toStderr ? process.stderr : process.stdout;
            const text = r.format !== "json" && colourEnabled(stream) ? colourStatuses(r.output) : r.output;
            stream.write(text.endsWith("\n") ? text : `${text}\n`);
            process.exit(r.exitCode);
        },
        (e) => {
            // A fault of the command's own, not of its input (those are results): one line naming it, never a stack
            // trace; exit 3, since nothing was checked.
            const message = e instanceof Error ? e.message : String(e);
            process.stderr.write(`${path.basename(process.argv[1] ?? "command")}: an error in the command itself, please report it: ${message.split("\n")[0]}\n`);
            process.exit(EXIT.cannotCheck);
        },
    );
}
