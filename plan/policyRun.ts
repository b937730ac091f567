// Runs policy-pack policies the way the engine's analyzer does, without the engine: each resource policy on every
// resource, each stack policy once on all of them. The offline plan runs the pack on its recording with it, and the
// policy tests on hand-built resources, so both see exactly what `pulumi preview --policy-pack` would report.
import { createRequire } from "node:module";
import type { EnforcementLevel, Policies, PolicyPackConfig, PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs } from "@pulumi/policy";
import type { RecordedResource } from "./offlineRuntime.ts";
// Modules without types (or an internal of one), loaded as CommonJS.
const require = createRequire(import.meta.url);

// Runtime exports of @pulumi/policy (pinned) that its typings mark internal: the proxy the analyzer wraps every
// resource's properties in, which throws UnknownValueError when a policy reads a value unknown at preview.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { unknownCheckingProxy, UnknownValueError } = require("@pulumi/policy") as {
    unknownCheckingProxy<T extends object>(o: T): T;
    UnknownValueError: new (...args: any[]) => Error;
};

/** A resource as the analyzer sees it. */
export interface PolicyInput {
    type: string;
    name: string;
    urn: string;
    /** Resource policies get the inputs; stack policies get outputs, which offline are the inputs too. */
    props: Record<string, any>;
    parent?: string;
    dependencies?: string[];
}

export interface Violation {
    policy: string;
    enforcementLevel: EnforcementLevel;
    /** The resource in violation; a stack policy may leave it out. */
    urn?: string;
    message: string;
}

export interface PolicyReport {
    violations: Violation[];
    /** Policies that read a value unknown at preview; the engine reports these as advisory and runs them on `up`. */
    unknown: { policy: string; urn?: string; message: string }[];
    /** `<policy> <urn>` for each resource a policy declared itself not applicable to. */
    notApplicable: string[];
}

class NotApplicable extends Error {}

const notApplicable = (reason?: string): never => {
    throw new NotApplicable(reason);
};

const OPTIONS = { protect: false, ignoreChanges: [], aliases: [], customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 }, additionalSecretOutputs: [] };

function isType(type: string, resourceClass: any): boolean {
    return resourceClass?.__pulumiType === type || resourceClass?.isInstance?.({ __pulumiType: type }) === true;
}

/** Evaluates `policies` on `resources` with the pack config, as `pulumi preview --policy-pack-config` would. */
export async function runPolicies(policies: Policies, resources: PolicyInput[], config: PolicyPackConfig = {}, packLevel: EnforcementLevel = "advisory"): Promise<PolicyReport> {
    const report: PolicyReport = { violations: [], unknown: [], notApplicable: [] };
    const stackResources = policyResources(resources);
    for (const p of policies) {
        const policyConfig = config[p.name];
        const { enforcementLevel: configuredLevel, ...settings } = typeof policyConfig === "string" ? { enforcementLevel: policyConfig } : (policyConfig ?? {});
        const enforcementLevel = configuredLevel ?? p.enforcementLevel ?? packLevel;
        if (enforcementLevel === "disabled") continue;
        const getConfig = <T>() => settings as T;
        const run = async (urn: string | undefined, validate: (report: ReportViolation) => unknown) => {
            try {
                await validate((message, violatingUrn) => report.violations.push({ policy: p.name, enforcementLevel, urn: violatingUrn ?? urn, message }));
            } catch (e) {
                if (e instanceof NotApplicable) report.notApplicable.push(`${p.name} ${urn ?? "(stack)"}`);
                else if (e instanceof UnknownValueError) report.unknown.push({ policy: p.name, urn, message: e.message });
                else throw new Error(`policy ${p.name} failed on ${urn ?? "the stack"}: ${(e as Error).message}`);
            }
        };
        if ("validateStack" in p) {
            const args: StackValidationArgs = { resources: stackResources, stackTags: new Map(), getConfig, notApplicable };
            await run(undefined, (r) => p.validateStack(args, r));
            continue;
        }
        for (const validation of [p.validateResource ?? []].flat()) {
            for (const r of resources) {
                const props = unknownCheckingProxy(r.props);
                const args: ResourceValidationArgs = {
                    type: r.type,
                    props,
                    urn: r.urn,
                    name: r.name,
                    opts: { ...OPTIONS, ...(r.parent ? { parent: r.parent } : {}) },
                    stackTags: new Map(),
                    isType: (c) => isType(r.type, c),
                    asType: (c: any) => (isType(r.type, c) ? (props as any) : undefined),
                    getConfig,
                    notApplicable,
                };
                await run(r.urn, (report) => validation(args, report));
            }
        }
    }
    return report;
}

/** The stack view of the resources: parents and dependencies resolved to the resources themselves. */
function policyResources(resources: PolicyInput[]): PolicyResource[] {
    const byUrn = new Map<string, PolicyResource>();
    for (const r of resources) {
        const props = unknownCheckingProxy(r.props);
        byUrn.set(r.urn, {
            type: r.type,
            props,
            urn: r.urn,
            name: r.name,
            opts: { ...OPTIONS, ...(r.parent ? { parent: r.parent } : {}) },
            dependencies: [],
            propertyDependencies: {},
            isType: (c) => isType(r.type, c),
            asType: (c: any) => (isType(r.type, c) ? (props as any) : undefined),
        });
    }
    for (const r of resources) {
        const resource = byUrn.get(r.urn)!;
        resource.parent = r.parent ? byUrn.get(r.parent) : undefined;
        resource.dependencies = (r.dependencies ?? []).map((urn) => byUrn.get(urn)).filter((d): d is PolicyResource => !!d);
    }
    return [...byUrn.values()];
}

/** What the engine would hand the analyzer for a recorded program: every resource, components and providers too. */
export function policyInputs(resources: RecordedResource[]): PolicyInput[] {
    return resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.inputs, parent: r.parent || undefined, dependencies: r.dependencies }));
}

/** One line per violation, mandatory first, for the plan's output. */
export function formatViolations(violations: Violation[], nameOf: (urn?: string) => string): string[] {
    const order = (v: Violation) => (v.enforcementLevel === "mandatory" ? 0 : 1);
    return [...violations].sort((a, b) => order(a) - order(b)).map((v) => `  [${v.enforcementLevel}] ${v.policy}: ${nameOf(v.urn)}\n      ${v.message}`);
}
