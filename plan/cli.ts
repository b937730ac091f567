// `npm run plan -- --stack <name> [--out <dir>]`: what the stack would deploy, without AWS or a Pulumi CLI.
import * as fs from "fs";
import * as path from "path";
import { ConfigError, loadConfig } from "../stacks/config";
import { createStack } from "../stacks/createStack";
import { PROJECT_DIR, knownStacks, runOffline } from "./offlineRuntime";
import { manifestsYaml, previewJson, summary } from "./render";

const USAGE = "usage: npm run plan -- --stack <name> [--out <dir>]";

export interface PlanResult {
    exitCode: number;
    /** What was printed, for tests. */
    output: string;
}

/** Runs the plan for the stack files in `dir` (the project by default). */
export async function plan(argv: string[], dir = PROJECT_DIR): Promise<PlanResult> {
    const args = parseArgs(argv);
    if (typeof args === "string") return { exitCode: 2, output: `${args}\n${USAGE}` };
    const stacks = knownStacks(dir);
    if (!stacks.includes(args.stack)) return { exitCode: 2, output: `unknown stack "${args.stack}": known stacks are ${stacks.join(", ")}` };

    let recording;
    try {
        recording = await runOffline(args.stack, () => createStack(loadConfig()), { dir });
    } catch (e) {
        if (e instanceof ConfigError) return { exitCode: 1, output: `invalid config, nothing was planned:\n${e.message}` };
        throw e;
    }
    const out = args.out ?? path.join("plan-out", args.stack);
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, "preview.json"), JSON.stringify(previewJson(args.stack, recording.resources), null, 2) + "\n");
    fs.writeFileSync(path.join(out, "manifests.yaml"), manifestsYaml(recording.resources));
    const text = [summary(args.stack, recording.resources), "", `Wrote ${path.join(out, "preview.json")} and ${path.join(out, "manifests.yaml")}`];
    return { exitCode: 0, output: text.join("\n") };
}

function parseArgs(argv: string[]): { stack: string; out?: string } | string {
    let stack: string | undefined;
    let out: string | undefined;
    for (let i = 0; i < argv.length; i++) {
        const value = argv[i + 1];
        if (argv[i] === "--stack" && value) (stack = value), i++;
        else if (argv[i] === "--out" && value) (out = value), i++;
        else return `unexpected argument "${argv[i]}"`;
    }
    return stack ? { stack, out } : "--stack is required";
}

if (require.main === module) {
    plan(process.argv.slice(2)).then(
        (r) => {
            (r.exitCode === 0 ? console.log : console.error)(r.output);
            process.exit(r.exitCode);
        },
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
}
