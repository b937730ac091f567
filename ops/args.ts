// What the ops commands share: flags, the stack's validated config, and exit codes that fit CI.
import { ConfigError, StackConfig, configSections, parseStackConfig } from "../stacks/config";
import { PROJECT, PROJECT_DIR, knownStacks, readStackConfig } from "../plan/offlineRuntime";

/**
 * 0: all good; 1: findings or a failed run; 2: the command was called wrongly; 3: the check could not be made (the
 * cluster unreachable, credentials refused, manifests unreadable), so CI can tell "something is wrong" from "could not look".
 */
export const EXIT = { ok: 0, findings: 1, usage: 2, cannotCheck: 3 } as const;

export interface CommandResult {
    exitCode: number;
    /** The report, with any findings (stdout), or the usage error (stderr). */
    output: string;
}

export const usage = (message: string, help: string): CommandResult => ({ exitCode: EXIT.usage, output: `${message}\n${help}` });

/** `--name value` pairs, each flag at most once; a string is the usage error. */
export function parseFlags(argv: string[], known: readonly string[]): Record<string, string> | string {
    const flags: Record<string, string> = {};
    for (let i = 0; i < argv.length; i += 2) {
        const [flag, value] = [argv[i], argv[i + 1]];
        const name = flag.replace(/^--/, "");
        if (!flag.startsWith("--") || !known.includes(name)) return `unexpected argument "${flag}": the flags are ${known.map((k) => `--${k}`).join(", ")}`;
        if (value === undefined || value.startsWith("--")) return `${flag} needs a value`;
        if (name in flags) return `${flag} is given twice`;
        flags[name] = value;
    }
    return flags;
}

/** A whole number from `min` to `max`, or the usage error naming the flag. */
export function integerFlag(flag: string, value: string, min: number, max: number): number | string {
    const n = Number(value);
    return /^[0-9]+$/.test(value) && n >= min && n <= max ? n : `--${flag} must be an integer from ${min} to ${max} (got "${value}")`;
}

/** The stack's validated config from `Pulumi.<stack>.yaml`, or the result to return: usage for an unknown stack, `invalidExit` (1 by default) for bad config. */
export function loadStack(stack: string | undefined, help: string, dir = PROJECT_DIR, invalidExit: number = EXIT.findings): StackConfig | CommandResult {
    const stacks = knownStacks(dir);
    if (!stack) return usage("--stack is required", help);
    if (!stacks.includes(stack)) return usage(`unknown stack "${stack}": known stacks are ${stacks.join(", ")}`, help);
    try {
        return parseStackConfig(stack, configSections(readStackConfig(stack, dir), PROJECT));
    } catch (e) {
        if (e instanceof ConfigError) return { exitCode: invalidExit, output: `invalid config:\n${e.message}` };
        throw e;
    }
}

export function isResult(v: unknown): v is CommandResult {
    return typeof v === "object" && v !== null && "exitCode" in v && "output" in v;
}

/** Runs a command as the process: its report (stderr for usage errors and checks not made), then its exit code (stdout and stderr writes are synchronous on Linux). */
export function runMain(command: () => Promise<CommandResult>): void {
    command().then(
        (r) => {
            (r.exitCode === EXIT.usage || r.exitCode === EXIT.cannotCheck ? process.stderr : process.stdout).write(r.output.endsWith("\n") ? r.output : `${r.output}\n`);
            process.exit(r.exitCode);
        },
        (e) => {
            console.error(e);
            process.exit(EXIT.findings);
        },
    );
}
