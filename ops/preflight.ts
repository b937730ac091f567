// `npm run preflight`: read-only checks of the live AWS account and cluster that a stack's first (and every) `pulumi
// up` relies on, and that preview cannot see. This file reads the flags and answers --help and usage errors alone;
// the checks (ops/preflightChecks.ts: a pure core behind a thin shell of SDK and Kubernetes reads) are loaded only
// once the flags are good.
// Exit codes: 0 no FAIL, 1 a FAIL (or a refused config), 2 usage, 3 could not check (no credentials, access denied,
// an endpoint unreachable).
import type { KubeConfig } from "@kubernetes/client-node";
import { type Command, type CommandLine, type CommandResult, OUTPUT_FLAGS, didYouMean, inForm, isResult, outputMode, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import type { Deadlines } from "./deadlines.ts";
import { PROJECT_DIR, stackFlagProblem } from "../stacks/stackNames.ts";

/** Every check, in the order of the report. */
export const CHECKS: [string, string][] = [
    ["cluster-version", "the EKS cluster exists and runs Kubernetes 1.30 or later (ValidatingAdmissionPolicy v1)"],
    ["cluster-access", "the API endpoint is reached the way cluster.access says (client-vpn, vpc-runner, public); the authentication mode"],
    ["pod-identity-agent", "the eks-pod-identity-agent add-on is active (when controller.identity is pod-identity)"],
    ["helm-releases", "no Helm release karpenter-crd, karpenter, karpenter-nodepool, priority-classes or nidhogg that this stack did not make"],
    ["priority-classes", "existing PriorityClasses have the configured value and preemptionPolicy (both immutable)"],
    ["owned-objects", "no PodDisruptionBudget, NodePool, EC2NodeClass or Deployment with a name this program creates, managed by another tool; no other budget over burst pods"],
    ["patch-targets", "every patched Deployment and DaemonSet exists, and each guaranteed.container is its DaemonSet's first"],
    ["daemonset-managers", "who else manages each patched DaemonSet (an EKS add-on: use its configurationValues); each addOn is an add-on of the cluster"],
    ["chart-fields", "no field the stack's patches set holds a chart's other value live (each release of the chart puts it back)"],
    ["celery-shutdown", "each burst worker has the program's preStop hook and a grace long enough to finish the tasks it holds"],
    ["queue-visibility", "each burst worker's SQS queues exist and hide a held message for as long as a drain can make it wait"],
    ["task-durations", "no burst worker's task took longer than its longestTaskSeconds in the logs of the last day (Logs Insights)"],
    ["mutating-webhooks", "the mutating webhooks that match pod updates in the burst namespace (with the scale-down order: a change to the annotator's patch makes its policy refuse it)"],
    ["log-group", "the controller's log group exists and has Karpenter lines from the last day"],
    ["ami", "the pinned AMI exists, is x86_64 (amd64) and Amazon Linux 2023"],
    ["subnets", "a karpenter.sh/discovery subnet in every configured zone (or the configured subnets)"],
    ["security-groups", "karpenter.sh/discovery security groups exist (or the configured ones)"],
    ["instance-types", "each approved instance type exists, is x86_64 and is offered in every configured zone"],
    ["spot-service-linked-role", "the account's EC2 spot service-linked role exists, or the stack creates it (not both)"],
    ["aws-names", "the IAM roles and policies, SQS queue and EventBridge rules the stack creates are free or this stack's"],
    ["alarm-topics", "alarm topics exist in the stack's region with a confirmed subscription; their KMS key lets CloudWatch use it"],
    ["stable-nodes", "untainted stable nodes span two zones or more, and have room for the first rollout's surge"],
];

/**
 * Which of preflight's two halves of reads each check needs: the AWS account's (SDK calls), the cluster's (Kubernetes
 * lists), or both. A check whose half could not be read is NOT RUN; the other half's checks still run. A check
 * missing here needs both.
 */
export const CHECK_NEEDS: Record<string, "aws" | "cluster" | "both"> = {
    "cluster-version": "aws",
    "cluster-access": "both",
    "pod-identity-agent": "aws",
    "helm-releases": "cluster",
    "priority-classes": "cluster",
    "owned-objects": "cluster",
    "patch-targets": "cluster",
    "daemonset-managers": "both",
    "chart-fields": "cluster",
    "celery-shutdown": "cluster",
    "queue-visibility": "aws",
    "task-durations": "aws",
    "mutating-webhooks": "cluster",
    "log-group": "aws",
    ami: "aws",
    subnets: "aws",
    "security-groups": "aws",
    "instance-types": "aws",
    "spot-service-linked-role": "aws",
    "aws-names": "aws",
    "alarm-topics": "aws",
    "stable-nodes": "cluster",
};

export const needsOf = (check: string) => CHECK_NEEDS[check] ?? "both";

export const needsAws = (check: string) => needsOf(check) !== "cluster";

export const needsCluster = (check: string) => needsOf(check) !== "aws";

/** The task-durations check's window, by default and at most (a week: Logs Insights bills per GB scanned). */
export const TASK_WINDOW_HOURS = 24;

export const MAX_TASK_WINDOW_HOURS = 168;

export const PREFLIGHT: Command = {
    usage: ["npm run preflight -- --stack <name> [--context <kubecontext>] [--only <check,...>] [--profile <name>] [--region <region>] [--task-window <hours>] [--json] [--findings]"],
    summary: [
        "Read-only checks of the live AWS account (the default credential chain, the stack's region) and the cluster that",
        "`pulumi up` relies on. One line per check: OK, WARN or FAIL with what to do (docs/preflight.md). When the cluster",
        "or AWS cannot be read, the other half's checks still run and the rest are NOT RUN (exit 3).",
        "",
        "Checks (AWS: the account's reads; cluster: the Kubernetes API's; both):",
        ...CHECKS.map(([id, what]) => `  ${id.padEnd(25)} ${`(${needsOf(id)})`.padEnd(10)}${what}`),
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose config to check the account and cluster against", default: "required" },
        context: { value: "<kubecontext>", meaning: "the kubeconfig context of the stack's cluster (another cluster is refused)", default: "the current context" },
        only: {
            value: "<check,...>",
            meaning: "run only these checks (repeat the flag or separate them with commas); a selection that needs no cluster read does not load the kubeconfig or reach the cluster, one that needs no AWS read makes no AWS call",
            default: "every check",
            repeatable: true,
        },
        profile: { value: "<name>", meaning: "the AWS profile (shared config and credentials files) the SDK clients use", default: "the default credential chain (AWS_PROFILE, environment, SSO, instance or web identity)" },
        region: { value: "<region>", meaning: "the AWS region to read; it must be the stack's cluster.region (another is refused)", default: "notify-karpenter:cluster.region" },
        "task-window": {
            value: "<hours>",
            meaning: `the hours of logs the task-durations check reads, 1 to ${MAX_TASK_WINDOW_HOURS} (Logs Insights bills per GB it scans: a longer window costs more)`,
            default: String(TASK_WINDOW_HOURS),
        },
        json: OUTPUT_FLAGS.json,
        findings: { meaning: "print only the findings: WARN, FAIL and NOT RUN lines, and the verdict" },
    },
    exits: {
        0: "no check failed (warnings may remain)",
        1: "a check failed: fix what its line says before `pulumi up`; or the stack's config is refused",
        3: "could not check: no AWS credentials, access denied (HTTP 401/403), an endpoint or the cluster unreachable (one line: which access step is missing), kubeconfig unreadable; the half that could be read is still checked and printed",
    },
    examples: [
        "npm run preflight -- --stack staging",
        "npm run preflight -- --stack production --context production --profile notify-production",
        "npm run preflight -- --stack staging --only ami,subnets,instance-types",
        "npm run preflight -- --stack staging --json --findings",
        "npm run preflight -- --stack production --only task-durations --task-window 168",
    ],
};

/**
 * SDK client settings: the region always; --profile a shared-config profile; tests add an endpoint, static credentials
 * and one attempt, and may give the SDK a request handler of their own instead of Node's HTTP client (an in-process
 * fake's; the deadlines of awsClientConfig then do not apply).
 */
export type AwsClientConfig = { endpoint?: string; credentials?: { accessKeyId: string; secretAccessKey: string }; maxAttempts?: number; profile?: string; requestHandler?: object };

/** How often task-durations asks for its query's results, and how long it waits for them before it stops the query. */
export interface QueryTiming {
    pollMs: number;
    deadlineMs: number;
}

export interface PreflightDeps {
    kubeConfig?: () => KubeConfig;
    /** How long the API server has to answer the first request before preflight calls it unreachable. */
    reachTimeoutMs?: number;
    /** SDK client settings (tests: the fake endpoint and static credentials); the default credential chain otherwise. */
    aws?: AwsClientConfig;
    dir?: string;
    now?: () => number;
    /** How often task-durations polls its query, and its deadline (TASK_QUERY_TIMING by default). */
    taskQuery?: QueryTiming;
    /** How long each AWS call, Kubernetes request and credential plugin may take (ops/deadlines.ts; tests: milliseconds). */
    deadlines?: Partial<Deadlines>;
}

export async function preflight(argv: string[], deps: PreflightDeps = {}): Promise<CommandResult> {
    const raw = rawFlags(argv);
    const line = parseCommandLine(argv, PREFLIGHT);
    if (isResult(line)) return inForm(line, raw.json, "preflight", raw.stack, { usageToo: true });
    const mode = outputMode(line);
    return inForm(await preflightEntry(line, deps, mode), mode.json, "preflight", valueOf(line, "stack"), { usageToo: true });
}

/** The usage errors the flags alone show; then the checks, loaded now. */
async function preflightEntry(line: CommandLine, deps: PreflightDeps, mode: { json: boolean; findingsOnly: boolean }): Promise<CommandResult> {
    const only = selectedChecks(valueOf(line, "only"));
    if (typeof only === "string") return usage(only, PREFLIGHT);
    const badStack = stackFlagProblem(valueOf(line, "stack"), deps.dir ?? PROJECT_DIR);
    if (badStack) return usage(badStack, PREFLIGHT);
    const { runPreflight } = await import("./preflightChecks.ts");
    return runPreflight(line, deps, mode, only);
}

/** The checks --only names (comma-separated, the flag repeatable), in report order; or the usage error naming the unknown one. */
export function selectedChecks(only: string | undefined): string[] | string | undefined {
    if (only === undefined) return undefined;
    const ids = CHECKS.map(([id]) => id);
    const asked = only.split(",").map((c) => c.trim());
    for (const c of asked) {
        if (c === "") return `--only needs check names separated by commas (got "${only}"): the checks are ${ids.join(", ")}`;
        if (!ids.includes(c)) return `--only: unknown check "${c}"${didYouMean(c, ids)}: the checks are ${ids.join(", ")}`;
    }
    return ids.filter((id) => asked.includes(id));
}

if (import.meta.main) runMain(() => preflight(process.argv.slice(2)));
