// Shared test helpers: build a stack offline from its real stack file, with optional config changes.
import { loadConfig } from "../stacks/config";
import { createStack } from "../stacks/createStack";
import { PROJECT, RecordedResource, readStackConfig, runOffline } from "../plan/offlineRuntime";

export const STACKS = ["staging", "production"] as const;

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
    return runOffline(stack, () => createStack(loadConfig()), { overrides: patchSections(stack, patches) });
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
