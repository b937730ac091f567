// Shared test helpers: build a stack offline from its real stack file, with optional config changes.
import { expect } from "chai";
import { ConfigError, type StackConfig, configSections } from "../stacks/config.ts";
import { loadConfig } from "../stacks/programConfig.ts";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { createStack } from "../stacks/createStack.ts";
import { PROJECT } from "../stacks/stackNames.ts";
import { type RecordedResource, runOffline } from "../plan/offlineRuntime.ts";
import { readStackConfig } from "../stacks/stackFile.ts";

export const STACKS = ["staging", "production"] as const;

/** GC Notify's burst Celery Deployments, as both stack files list them under placement.burst.deployments. */
export const BURST_DEPLOYMENTS = [
    "notify-celery-core-tasks-burst",
    "notify-celery-delivery-receipts-burst",
    "notify-celery-email-send-burst",
    "notify-celery-sms-send-burst",
    "notify-celery-periodic-burst",
];

/** A config section from the stack file (`controller`, `cluster`, ...), parsed. */
export function section(stack: string, key: string): Record<string, any> {
    return JSON.parse(readStackConfig(stack)[`${PROJECT}:${key}`] ?? "{}");
}

/** Config overrides that merge `patch` into the stack file's sections; a patch value of undefined removes a key. */
export function patchSections(stack: string, patches: Record<string, Record<string, unknown>>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, patch] of Object.entries(patches)) {
        const merged: Record<string, unknown> = { ...section(stack, key), ...patch };
        for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
        out[`${PROJECT}:${key}`] = merged;
    }
    return out;
}

/** Runs the whole program for a stack under the recording mocks. */
export function buildStack(stack: string, patches: Record<string, Record<string, unknown>> = {}) {
    return runOffline(stack, () => createStack(loadConfig()), { overrides: patchSections(stack, patches), reuseAs: "createStack" });
}

/** The config error a stack's program throws with the given changes, as text ("" when it builds). */
export async function configErrorOf(stack: string, overrides: Record<string, unknown>): Promise<string> {
    try {
        await runOffline(stack, () => loadConfig(), { overrides });
        return "";
    } catch (e) {
        return (e as Error).message;
    }
}

export const parseJson = (s: string) => JSON.parse(s);

/** Custom resources only (no components, no providers). */
export function customResources(resources: RecordedResource[]): RecordedResource[] {
    return resources.filter((r) => r.custom && !r.type.startsWith("pulumi:providers:"));
}

/** The stack file's config sections, parsed, with `patch` merged into section `key` (undefined values removed). */
export function rawConfig(stack: string, key?: string, patch: Record<string, unknown> = {}): Record<string, unknown> {
    const raw = configSections(readStackConfig(stack), PROJECT);
    if (key) {
        const merged: Record<string, unknown> = { ...(raw[key] as object), ...patch };
        for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
        raw[key] = merged;
    }
    return raw;
}

/** A stack's validated config, straight from its stack file. */
export function stackConfig(stack: string): StackConfig {
    return parseStackConfig(stack, rawConfig(stack));
}

/** The message of the ConfigError `fn` throws; fails the test if it throws nothing or something else. */
export function errorOf(fn: () => unknown): string {
    try {
        fn();
    } catch (e) {
        expect(e).to.be.instanceOf(ConfigError);
        return (e as Error).message;
    }
    throw new Error("expected a ConfigError");
}
