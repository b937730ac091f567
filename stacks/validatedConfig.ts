// A stack's config, validated twice: against the schema (stacks/config.ts), then by rendering the Karpenter objects and
// placement it configures through the same mapping the program deploys (stacks/componentArgs.ts), so what is
// validated is exactly what is deployed. Kept apart from both so that neither imports the other's caller. It also
// gathers the config's warnings (stacks/warnings.ts), less those the stack file acknowledges. It loads no Pulumi:
// the commands read a stack file through it (loadStack); the program reads its config through stacks/programConfig.ts.
import { isDeepStrictEqual } from "util";
import { INTERRUPTION_REACTION_SECONDS, SPOT_NOTICE_SECONDS, SPOT_ROOM_SECONDS, placementProblems } from "../components/models/celeryPlacement.ts";
import { type ConfigWarning, nodePoolFindings, nodePoolProblems } from "../components/models/nodePool.ts";
import { burstDeployments, nodePoolArgs, placementArgs } from "./componentArgs.ts";
import { ConfigError, type StackConfig, capacityWarnings, configSections, parseConfigSchema } from "./config.ts";
import { type Command, type CommandResult, EXIT, usage } from "../cli/args.ts";
import { readStackConfig } from "./stackFile.ts";
import { PROJECT, PROJECT_DIR, stackFlagProblem } from "./stackNames.ts";

/**
 * Configs validated in this process, by stack, project and raw config as JSON: a command validates its stack's config
 * more than once (its flags' checks, its plan, its program), and validation walks a year of minutes. Only a raw config
 * that is plain JSON (no undefined, NaN or Date, which JSON would blur) is kept; each caller gets a copy.
 */
const validated = new Map<string, StackConfig>();

/** A stack's validated config; throws a ConfigError naming the stack and each full key path. */
export function parseStackConfig(stack: string, raw: Record<string, unknown>, project = "notify-karpenter"): StackConfig {
    const key = JSON.stringify([stack, project, raw]);
    const cached = validated.get(key);
    if (cached) return structuredClone(cached);
    const cfg = validateStackConfig(stack, raw, project);
    if (isDeepStrictEqual(JSON.parse(key)[2], raw)) {
        if (validated.size >= 32) validated.delete(validated.keys().next().value!);
        validated.set(key, structuredClone(cfg));
    }
    return cfg;
}

function validateStackConfig(stack: string, raw: Record<string, unknown>, project: string): StackConfig {
    const cfg = parseConfigSchema(stack, raw, project);
    // The Karpenter objects this config renders, checked against the v1.14.1 schema and CEL rules.
    const objectIssues = [
        ...nodePoolProblems(nodePoolArgs(cfg, "node-role")).map((message) => ({ path: "nodePool", message: `would make ${message}` })),
        ...placementProblems(placementArgs(cfg)).map((message) => ({ path: "placement", message })),
    ];
    if (objectIssues.length > 0) throw new ConfigError(stack, objectIssues, project);
    const raised = configWarnings(cfg, project);
    const reasons = new Map(cfg.acknowledged.map((a) => [a.warning, a.reason]));
    const unused = cfg.acknowledged
        .map((a, i) => ({ a, i }))
        .filter(({ a }) => !raised.some((w) => w.id === a.warning))
        .map(({ a, i }): ConfigWarning => ({
            id: "acknowledged-unused",
            message: `${project}:acknowledged[${i}] acknowledges ${a.warning}, which this config does not raise: remove the entry, so that the warning is heard if it comes back`,
        }));
    return {
        ...cfg,
        warnings: [...raised.filter((w) => !reasons.has(w.id)), ...unused],
        quietedWarnings: raised.filter((w) => reasons.has(w.id)).map((w) => ({ ...w, reason: reasons.get(w.id)! })),
    };
}

/** Every warning the config raises, acknowledged or not, in a stable order. */
function configWarnings(cfg: StackConfig, project = "notify-karpenter"): ConfigWarning[] {
    const p = cfg.nodePool;
    return [
        ...nodePoolFindings(nodePoolArgs(cfg, "node-role")),
        ...(cfg.placement.admission.mode === "warn"
            ? [
                  {
                      id: "admission-warn-mode",
                      message: `${project}:placement.admission.mode is warn: the admission policy admits pods that tolerate or select ephemeral nodes, and only audits them, so a misplaced pod can land on a spot node. To act: set deny once the first up has shown no warning (docs/migration.md)`,
                  },
              ]
            : []),
        ...(p.ami.alias?.endsWith("@latest") && p.allowLatestAmi
            ? [
                  {
                      id: "latest-ami",
                      message: `${project}:nodePool.ami.alias ${p.ami.alias} follows every new AMI: each release drifts every node, replaced within the budgets' window. To act: pin a release (al2023@vYYYYMMDD) and move it on purpose`,
                  },
              ]
            : []),
        ...spotNoticeWarnings(cfg, project),
        ...capacityWarnings(cfg, project),
    ];
}

/**
 * Burst workers whose grace outlasts what a spot interruption leaves them: EC2 terminates the instance two minutes
 * after its notice whatever the grace, and GC Notify's Celery acknowledges a task as it starts, so a task still
 * running then is lost. One warning for all of them, naming each.
 */
function spotNoticeWarnings(cfg: StackConfig, project: string): ConfigWarning[] {
    if (!cfg.nodePool.capacityTypes.includes("spot")) return [];
    const over = burstDeployments(cfg).filter((d) => d.terminationGracePeriodSeconds > SPOT_ROOM_SECONDS);
    if (over.length === 0) return [];
    const names = over.map((d) => `${d.name} (${d.terminationGracePeriodSeconds} s)`).join(", ");
    return [
        {
            id: "burst-task-outlasts-spot-notice",
            message: `${project}:placement.burst: ${names} need${over.length === 1 ? "s" : ""} a longer grace period than the ${SPOT_ROOM_SECONDS} s a spot interruption leaves (${SPOT_NOTICE_SECONDS} s notice less ${INTERRUPTION_REACTION_SECONDS} s for Karpenter to evict): a task still running when EC2 takes the node is killed, and with GC Notify's early acknowledgement it is lost unless GC Notify's own recovery runs it again. Consolidation, drift, the recycler and scale-down wait for it. To act: shorter tasks or acks_late upstream (docs/celery-shutdown.md), or acknowledge with the recovery you rely on`,
        },
    ];
}

/** The stack's validated config from `Pulumi.<stack>.yaml`, or the result to return: usage for an unknown stack, `invalidExit` (1 by default) for bad config. */
export function loadStack(stack: string | undefined, command: Command, dir = PROJECT_DIR, invalidExit: number = EXIT.findings): StackConfig | CommandResult {
    const badStack = stackFlagProblem(stack || undefined, dir);
    if (badStack !== undefined || !stack) return usage(badStack ?? "", command);
    try {
        return parseStackConfig(stack, configSections(readStackConfig(stack, dir), PROJECT));
    } catch (e) {
        if (e instanceof ConfigError) return { exitCode: invalidExit, output: `invalid config:\n${e.message}` };
        throw e;
    }
}
