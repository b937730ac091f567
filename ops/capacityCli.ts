// `npm run capacity -- --stack <name> [--out <dir>]`: the capacity and cost model of a stack, from config alone. This
// file reads the flags and answers --help and usage errors alone; the model (ops/capacityRun.ts) is loaded then.
import { type Command, type CommandResult, OUTPUT_FLAGS, inForm, isResult, outputMode, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import { PROJECT_DIR, stackFlagProblem } from "../stacks/stackNames.ts";

export const CAPACITY: Command = {
    usage: ["npm run capacity -- --stack <name> [--out <dir>] [--json] [--findings]"],
    summary: "The capacity and cost model of a stack, from its config alone: pods per node for each approved instance type, the peak node count against the NodePool limits, the modelled ramp-up (table, CSV, SVG) and the daily cost.",
    flags: {
        stack: { value: "<name>", meaning: "the stack whose Pulumi.<name>.yaml to model", default: "required" },
        out: { value: "<dir>", meaning: "where to write ramp.csv and ramp.svg", default: "capacity-out/<stack>" },
        json: OUTPUT_FLAGS.json,
        findings: { meaning: "print only the findings (limits short of the peak, the cost goal missed, expiry in sending hours, types not modelled) and the verdict" },
    },
    exits: { 0: "the NodePool limits allow the peak on every approved instance type", 1: "the limits are too low for the peak, or the config is refused or lacks the capacity section", 3: "the results could not be written to --out" },
    examples: ["npm run capacity -- --stack production", "npm run capacity -- --stack production --json"],
};

export async function capacity(argv: string[], dir = PROJECT_DIR): Promise<CommandResult> {
    const raw = rawFlags(argv);
    const line = parseCommandLine(argv, CAPACITY);
    if (isResult(line)) return inForm(line, raw.json, "capacity", raw.stack, { usageToo: true });
    const { json, findingsOnly } = outputMode(line);
    const stack = valueOf(line, "stack");
    const badStack = stackFlagProblem(stack, dir);
    if (badStack) return inForm(usage(badStack, CAPACITY), json, "capacity", stack, { usageToo: true });
    const { model } = await import("./capacityRun.ts");
    return inForm(await model(line, dir, findingsOnly, json), json, "capacity", stack, { usageToo: true });
}

if (import.meta.main) runMain(() => capacity(process.argv.slice(2)));
