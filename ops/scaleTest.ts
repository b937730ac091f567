// `npm run scale-test -- --stack <name> --context <kubecontext> [--pods N] [--out <dir>]`: measures the node
// scaling curve on a real cluster. A Deployment of pause pods placed exactly like one burst Celery Deployment goes
// from 0 to N replicas and back to 0, while pods, ephemeral nodes and NodeClaims are watched; the run writes per-pod
// times, the counts over time, a chart and a summary, and deletes its namespace however it ends.
// This file reads the flags and answers --help and usage errors alone; the test (ops/scaleTestRun.ts) is loaded then.
import type { Deadlines } from "./deadlines.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import { type Command, type CommandLine, type CommandResult, OUTPUT_FLAGS, inForm, isResult, outputMode, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import { PROJECT_DIR, stackFlagProblem } from "../stacks/stackNames.ts";

export const SCALE_TEST: Command = {
    usage: ["npm run scale-test -- --stack <name> --context <kubecontext> [--pods <N>] [--out <dir>] [--json] [--findings]"],
    summary: [
        "Measures the node scaling curve on the stack's real cluster: pause pods placed like one burst Celery Deployment go",
        "from 0 to N replicas and back to 0 while pods, ephemeral nodes and NodeClaims are watched. Writes per-pod times,",
        "counts over time (CSV), a chart (SVG) and a summary, and deletes its namespace however the run ends.",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose cluster and placement to test", default: "required" },
        context: { value: "<kubecontext>", meaning: "the kubeconfig context of the stack's cluster; another cluster is refused", default: "required" },
        pods: { value: "<N>", meaning: "how many test pods at the peak, 1 to 1000", default: "nodePool.capacityCheck.peakCeleryPods" },
        out: { value: "<dir>", meaning: "where to write the results", default: "scale-test-out/<stack>-<time>" },
        json: OUTPUT_FLAGS.json,
        findings: { meaning: "print only what went wrong (a phase not complete, nodes left empty, a failed cleanup) and the result" },
    },
    exits: {
        0: "every test pod ran and the nodes the test left empty were removed",
        1: "the scale-up or scale-down did not complete in time, or the config is refused",
        3: "could not run: kubeconfig unreadable, cluster unreachable or credentials refused",
    },
    examples: ["npm run scale-test -- --stack scratch --context scratch --pods 20", "npm run scale-test -- --stack scratch --context scratch --json > run.json"],
};

export interface Clock {
    /** Epoch milliseconds. */
    now(): number;
    sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

export type Signal = "SIGINT" | "SIGTERM";

export interface ScaleTestDeps {
    kubeConfig?: () => KubeConfig;
    clock?: Clock;
    /** Progress lines (stderr by default). */
    progress?: (line: string) => void;
    /** Where Ctrl-C comes from (the process by default). */
    signals?: { on(signal: Signal, listener: () => void): unknown; off(signal: Signal, listener: () => void): unknown };
    dir?: string;
    /** How long each Kubernetes request, watch and the credential plugin may take (ops/deadlines.ts; tests: milliseconds). */
    deadlines?: Partial<Deadlines>;
}

export async function scaleTest(argv: string[], deps: ScaleTestDeps = {}): Promise<CommandResult> {
    const raw = rawFlags(argv);
    const line = parseCommandLine(argv, SCALE_TEST);
    if (isResult(line)) return inForm(line, raw.json, "scale-test", raw.stack, { usageToo: true });
    const mode = outputMode(line);
    return inForm(await scaleTestEntry(line, deps, mode), mode.json, "scale-test", valueOf(line, "stack"), { usageToo: true });
}

async function scaleTestEntry(line: CommandLine, deps: ScaleTestDeps, mode: { json: boolean; findingsOnly: boolean }): Promise<CommandResult> {
    const context = valueOf(line, "context");
    if (!context) return usage("--context is required: the kubeconfig context of the stack's cluster", SCALE_TEST);
    const badStack = stackFlagProblem(valueOf(line, "stack"), deps.dir ?? PROJECT_DIR);
    if (badStack) return usage(badStack, SCALE_TEST);
    const { runScaleTest } = await import("./scaleTestRun.ts");
    return runScaleTest(line, deps, mode, context);
}

if (import.meta.main) runMain(() => scaleTest(process.argv.slice(2)));
