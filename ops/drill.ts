// `npm run drill -- --stack <s> --context <ctx> [--nodes N] [--workload synthetic|live] [--profile ...] [--hook ...]
// [--notifications N ...] [--out dir] [--production]`: interrupts real spot nodes of the pool on purpose, through the
// stack's AWS FIS experiment template (components/spotInterruptionDrill.ts), and proves from the APIs' own timestamps
// what happened to the work on them: Karpenter's reaction to the notice, each displaced Celery pod's shutdown within
// its grace and its replacement, and the tasks: numbered messages of a synthetic worker that runs as GC Notify runs
// Celery (lost: deleted, never completed), or, live, GC Notify's own workers' log lines (received, never ended and never
// received again). Optionally, notifications through GC Notify's API with a test key. docs/drill.md says how to read it.
//
// A pure core (DrillRecord: what the APIs said; checks(): the verdict; the report's files) behind a thin shell that
// refuses unsafe starts, starts and follows the experiment, and stops it and removes what it created however it ends.
//
// This file reads the flags and answers --help and the usage errors they show alone; the drill (ops/drillRun.ts, with
// the AWS SDKs) is loaded only then.
import type { KubeConfig } from "@kubernetes/client-node";
import { type Command, type CommandLine, type CommandResult, OUTPUT_FLAGS, inForm, isResult, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import { MAX_DRILL_NODES } from "../components/models/fis.ts";
import { PROJECT_DIR, stackFlagProblem } from "../stacks/stackNames.ts";
import { MAX_NOTIFICATIONS } from "./notifyApi.ts";
import type { AwsClientConfig } from "./preflight.ts";
import type { Deadlines } from "./deadlines.ts";
import type { Clock } from "./scaleTest.ts";

export const DRILL: Command = {
    usage: [
        "npm run drill -- --stack <name> --context <kubecontext> [--nodes <N>] [--workload synthetic|live] [--profile gc-notify|late-ack] [--hook notify-karpenter|gc-notify]",
        "                 [--notifications <N> --notify-api <url> --notify-template <id> --notify-to <address>] [--out <dir>] [--production] [--json]",
    ],
    summary: [
        "Interrupts real spot nodes of the stack's NodePool through its AWS FIS experiment template (drill.enabled), and",
        "follows the interruption through the APIs' own timestamps: the notice, Karpenter's reaction, each displaced Celery",
        "pod's shutdown and its replacement, the instance gone (EC2), and the tasks: a synthetic worker's messages, or GC",
        "Notify's workers' log lines. Refuses to start while a stop-condition alarm is in ALARM or no ephemeral node runs.",
        "Writes a timeline (CSV, SVG), the displaced pods, the messages or notifications and a summary; stops the experiment",
        "and removes what it created however it ends (docs/drill.md).",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose template, cluster and pool to drill", default: "required" },
        context: { value: "<kubecontext>", meaning: "the kubeconfig context of the stack's cluster; another cluster is refused", default: "required" },
        nodes: { value: "<N>", meaning: `how many nodes you expect to lose; the template may take no more (1 to ${MAX_DRILL_NODES}, drill.nodes at most)`, default: "drill.nodes" },
        workload: { value: "synthetic|live", meaning: "synthetic: worker pods of the drill's own on numbered messages; live: GC Notify's burst workers, their logs and queue depths", default: "drill.workload" },
        profile: { value: "gc-notify|late-ack", meaning: "the synthetic worker: as GC Notify runs Celery (early acknowledgement, prefetch, the preStop), or acknowledging late", default: "drill.synthetic.profile" },
        hook: { value: "notify-karpenter|gc-notify", meaning: "the preStop hook the gc-notify synthetic workers run: the program's, or GC Notify's own (SIGKILL after about 10 s) to reproduce the loss", default: "notify-karpenter" },
        notifications: { value: "<N>", meaning: `also send N (1 to ${MAX_NOTIFICATIONS}) notifications through GC Notify's API with the test key in NOTIFY_API_KEY and follow each to a final status` },
        "notify-api": { value: "<url>", meaning: "GC Notify's API base URL, with --notifications", default: "NOTIFY_API_URL" },
        "notify-template": { value: "<id>", meaning: "the template to send, with --notifications", default: "NOTIFY_TEMPLATE_ID" },
        "notify-to": { value: "<address>", meaning: "the email address or phone number to send to (not a simulated one), with --notifications", default: "NOTIFY_TO" },
        out: { value: "<dir>", meaning: "where to write the results", default: "drill-out/<stack>-<time>" },
        production: { meaning: "required to drill the production stack" },
        json: OUTPUT_FLAGS.json,
    },
    exits: {
        0: "the drill ran and every check passed",
        1: "a check failed (a task lost, a pod killed early, a pod not replaced in time...), or the drill was refused before it started",
        3: "could not run: kubeconfig unreadable, the cluster or an AWS endpoint unreachable, credentials refused (HTTP 401/403)",
    },
    examples: [
        "npm run drill -- --stack scratch --context scratch",
        "npm run drill -- --stack scratch --context scratch --hook gc-notify",
        "npm run drill -- --stack staging --context staging --workload live --notifications 10 --notify-to drill@example.com",
        "npm run drill -- --stack scratch --context scratch --json > drill.json",
    ],
};

export type Signal = "SIGINT" | "SIGTERM";

export interface DrillDeps {
    kubeConfig?: () => KubeConfig;
    /** SDK client settings (tests: the fake endpoint and static credentials); the default credential chain otherwise. */
    aws?: AwsClientConfig;
    clock?: Clock;
    progress?: (line: string) => void;
    signals?: { on(signal: Signal, listener: () => void): unknown; off(signal: Signal, listener: () => void): unknown };
    dir?: string;
    /** Where NOTIFY_API_KEY and the other NOTIFY_* variables come from: process.env by default. */
    env?: Record<string, string | undefined>;
    /** How long each AWS call, Kubernetes request and watch, and the credential plugin may take (ops/deadlines.ts; tests: milliseconds). */
    deadlines?: Partial<Deadlines>;
}

export async function drill(argv: string[], deps: DrillDeps = {}): Promise<CommandResult> {
    const raw = rawFlags(argv);
    const line = parseCommandLine(argv, DRILL);
    if (isResult(line)) return inForm(line, raw.json, "drill", raw.stack, { usageToo: true });
    const json = line.flags.json === true;
    return inForm(await drillEntry(line, deps, json), json, "drill", valueOf(line, "stack"), { usageToo: true });
}

/** The usage errors the flags alone show; then the drill, loaded now. */
async function drillEntry(line: CommandLine, deps: DrillDeps, json: boolean): Promise<CommandResult> {
    const context = valueOf(line, "context");
    if (!context) return usage("--context is required: the kubeconfig context of the stack's cluster", DRILL);
    const badStack = stackFlagProblem(valueOf(line, "stack"), deps.dir ?? PROJECT_DIR);
    if (badStack) return usage(badStack, DRILL);
    const { runDrill } = await import("./drillRun.ts");
    return runDrill(line, deps, context, json);
}

if (import.meta.main) runMain(() => drill(process.argv.slice(2)));
