// The project's stacks: one stack file each beside Pulumi.yaml. Light on purpose: a command names its stacks in usage
// errors before it loads any config (docs/development.md, "Layers").
import * as fs from "fs";
import * as path from "path";
import { nearest } from "../cli/text.ts";

export const PROJECT = "notify-karpenter";
export const PROJECT_DIR = path.join(import.meta.dirname, "..");

/**
 * Why the Pulumi CLI refuses a stack name (sdk/go/common/tokens/stack_name.go ParseStackName): empty, over 100
 * characters, or a character other than letters, digits, -, _ and .; undefined when it takes it.
 */
export function stackNameProblem(stack: string): string | undefined {
    if (stack === "") return "a stack name may not be empty";
    if (stack.length > 100) return `a stack name cannot exceed 100 characters (got ${stack.length})`;
    const bad = /[^A-Za-z0-9_.-]/.exec(stack);
    return bad ? `a stack name may only contain alphanumeric, hyphens, underscores, or periods: invalid character ${JSON.stringify(bad[0])} at position ${bad.index}` : undefined;
}

/**
 * The one line for a --stack (or --diff) value that names no stack file: why the Pulumi CLI refuses the name, or the
 * known stacks, with the nearest one when there is one (prod: production).
 */
export function unknownStackMessage(flag: string, stack: string, known: string[]): string {
    const problem = stackNameProblem(stack);
    const qualified = /^[^/]+\/([^/]+\/)?([^/]+)$/.exec(stack)?.[2];
    const near = qualified && known.includes(qualified) ? qualified : nearest(stack, known);
    const hint = near ? `; did you mean "${near}"?` : "";
    if (problem && !qualified) return `${flag}: the Pulumi CLI refuses the stack name ${JSON.stringify(stack)}: ${problem}${hint} (known stacks are ${known.join(", ")})`;
    return `${flag}: unknown stack ${JSON.stringify(stack)}: known stacks are ${known.join(", ")}${hint}`;
}

/** The one line for a --stack flag that is missing or names no stack file in `dir`; undefined for a known stack. */
export function stackFlagProblem(stack: string | undefined, dir = PROJECT_DIR): string | undefined {
    const stacks = knownStacks(dir);
    if (stack === undefined) return `--stack is required: one of ${stacks.join(", ")}`;
    return stacks.includes(stack) ? undefined : unknownStackMessage("--stack", stack, stacks);
}

/** The stacks with a stack file in `dir`, whose names the Pulumi CLI takes. */
export function knownStacks(dir = PROJECT_DIR): string[] {
    return fs
        .readdirSync(dir)
        .map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1])
        .filter((s): s is string => !!s && stackNameProblem(s) === undefined)
        .sort();
}

/** The tag (through the provider's defaultTags) that marks every AWS resource as this stack's. */
export const STACK_TAG = "notify-karpenter:stack";
