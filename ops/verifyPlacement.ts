// `npm run verify-placement`: only burst Celery pods and the node agents may run on ephemeral nodes.
// With --context it checks what runs on a live cluster; with --manifests it checks rendered manifests (helm template,
// kustomize build) with the scheduler's filters against nodes modelled from the stack's own NodePool.
// Exit codes: 0 nothing misplaced, 1 findings, 2 usage, 3 could not check (cluster unreachable, credentials refused,
// manifests unreadable or empty), so CI can tell a placement problem from a broken check.
// This file reads the flags and answers --help and usage errors alone; the check (ops/verifyPlacementRun.ts) is
// loaded then.
import type { Deadlines } from "./deadlines.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import { type Command, type CommandResult, OUTPUT_FLAGS, inForm, isResult, parseCommandLine, rawFlags, runMain, usage, valueOf } from "../cli/args.ts";
import { PROJECT_DIR, stackFlagProblem } from "../stacks/stackNames.ts";

export const VERIFY_PLACEMENT: Command = {
    usage: [
        "npm run verify-placement -- --stack <name> --context <kubecontext> [--json] [--findings]",
        "npm run verify-placement -- --stack <name> --manifests <file, directory or -> [--namespace <name>] [--json] [--findings]",
    ],
    summary: [
        "Checks that only burst Celery pods and the node agents run on (or could run on) ephemeral nodes: on a live cluster",
        "(--context), or in rendered manifests such as helm template output (--manifests), judged with the scheduler's",
        "filters against nodes modelled from the stack's own NodePool.",
    ].join("\n"),
    flags: {
        stack: { value: "<name>", meaning: "the stack whose NodePool and placement rules to check against", default: "required" },
        context: { value: "<kubecontext>", meaning: "check the pods running on this kubeconfig context's cluster (the stack's cluster only)" },
        manifests: { value: "<file, directory or ->", meaning: "check rendered YAML manifests: a file, every .yaml/.yml under a directory, or - for standard input" },
        namespace: {
            value: "<name>",
            meaning: "with --manifests: the namespace of objects that name none (a DaemonSet named like a placement.nodeDaemonSets entry takes that entry's)",
            default: "default",
        },
        json: OUTPUT_FLAGS.json,
        findings: { meaning: "print only the findings: WARN, FAIL and NOT CHECKED lines, the chart fields and the verdict" },
    },
    exits: {
        0: "nothing is (or could be) misplaced",
        1: "findings: a pod that may not be on ephemeral nodes is or could be there, or a burst pod runs on stable nodes; or the stack's config is refused",
        3: "could not check: cluster unreachable, credentials refused, kubeconfig or manifests unreadable, no manifests, or (without findings) a pod template it cannot judge",
    },
    examples: [
        "npm run verify-placement -- --stack staging --context staging",
        "helm template notify-celery ./charts/notify-celery | npm run verify-placement -- --stack staging --manifests -",
        "npm run verify-placement -- --stack staging --manifests plan-out/staging/manifests.yaml --json --findings",
    ],
};

export interface VerifyDeps {
    /** The kubeconfig for --context; the default reads ~/.kube/config or $KUBECONFIG. */
    kubeConfig?: () => KubeConfig;
    /** Where the stack files are. */
    dir?: string;
    /** What `--manifests -` reads (standard input by default, read to its end). */
    stdin?: () => Promise<string>;
    /** How long each Kubernetes request and the credential plugin may take (ops/deadlines.ts; tests: milliseconds). */
    deadlines?: Partial<Deadlines>;
}

export async function verifyPlacement(argv: string[], deps: VerifyDeps = {}): Promise<CommandResult> {
    const raw = rawFlags(argv);
    return inForm(await verifyPlacementEntry(argv, deps), raw.json, "verify-placement", raw.stack, { usageToo: true });
}

async function verifyPlacementEntry(argv: string[], deps: VerifyDeps): Promise<CommandResult> {
    const line = parseCommandLine(argv, VERIFY_PLACEMENT);
    if (isResult(line)) return line;
    const [context, manifests, namespace] = [valueOf(line, "context"), valueOf(line, "manifests"), valueOf(line, "namespace")];
    if ((context === undefined) === (manifests === undefined)) return usage("give exactly one of --context (a live cluster) and --manifests (rendered files)", VERIFY_PLACEMENT);
    if (namespace !== undefined && manifests === undefined) return usage("--namespace only applies to --manifests", VERIFY_PLACEMENT);
    if (manifests === "-" && !deps.stdin && process.stdin.isTTY) {
        return usage("--manifests -: standard input is a terminal; pipe rendered manifests into it (helm template ... | npm run verify-placement -- ...)", VERIFY_PLACEMENT);
    }
    // A namespace is a DNS-1123 label (Kubernetes' apimachinery validation): lowercase letters, digits and -, at most 63.
    if (namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
        return usage(`--namespace must be a Kubernetes namespace name (lowercase letters, digits and -, at most 63 characters) (got "${namespace}")`, VERIFY_PLACEMENT);
    }
    const badStack = stackFlagProblem(valueOf(line, "stack"), deps.dir ?? PROJECT_DIR);
    if (badStack) return usage(badStack, VERIFY_PLACEMENT);
    const { runVerifyPlacement } = await import("./verifyPlacementRun.ts");
    return runVerifyPlacement(line, deps, context, manifests, namespace);
}

if (import.meta.main) runMain(() => verifyPlacement(process.argv.slice(2)));
