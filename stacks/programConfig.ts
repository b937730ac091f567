// The config `pulumi preview` and `up` hand the program (index.ts), validated as every command validates a stack file
// (stacks/validatedConfig.ts), with its warnings on Pulumi's log. The commands read stack files without it, so they
// load no Pulumi; the program's other stacks/ modules (createStack, cluster, lookups) do.
import * as pulumi from "@pulumi/pulumi";
import { type StackConfig, StackFileError, configSections } from "./config.ts";
import { CONFIG_KEY_NAMESPACES, PULUMI_CONFIG_KEYS, foreignConfigKeys } from "./configKeys.ts";
import { parseStackConfig } from "./validatedConfig.ts";
import { warningLine } from "./warnings.ts";

/** Where loadConfig reports warnings; runOffline (plan/offlineRuntime.ts) collects them instead of Pulumi's log. */
let warningSink: (line: string) => void = (line) => void pulumi.log.warn(line);

/** Sends loadConfig's warnings to `sink` until the returned function restores the previous one. */
export function collectConfigWarnings(sink: (line: string) => void): () => void {
    const previous = warningSink;
    warningSink = sink;
    return () => {
        warningSink = previous;
    };
}

/** Reads the current stack's config (all keys in this project's namespace) and validates it; reports its warnings once. */
export function loadConfig(): StackConfig {
    const all = pulumi.runtime.allConfig();
    const foreign = foreignConfigKeys(all);
    if (foreign.length) {
        // The same rule as the stack file reader's (stacks/stackFile.ts), for pulumi preview and up, which see config alone.
        const where = `${CONFIG_KEY_NAMESPACES.join(", ")}; pulumi: keys ${PULUMI_CONFIG_KEYS.join(", ")}`;
        throw new StackFileError(pulumi.getStack(), foreign.map((k) => `${pulumi.getStack()}: ${k} is read by nothing here (namespaces ${where}): a misspelt namespace loses its section without a word`).join("\n"));
    }
    const cfg = parseStackConfig(pulumi.getStack(), configSections(all, pulumi.getProject()), pulumi.getProject());
    for (const w of cfg.warnings) warningSink(warningLine(w));
    return cfg;
}
