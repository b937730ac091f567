// Runs the real program under Pulumi's mock runtime: no Pulumi CLI, AWS account or Kubernetes API needed.
// Both the offline plan (`npm run plan`) and the tests use it, so what the tests check is what the plan shows.
import * as pulumi from "@pulumi/pulumi";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks.js";
import * as settings from "@pulumi/pulumi/runtime/settings.js";
import { collectConfigWarnings } from "../stacks/programConfig.ts";
import { readStackConfig } from "../stacks/stackFile.ts";
import { PROJECT } from "../stacks/stackNames.ts";

// Internal to the SDK (runtime/settings.js) and absent from its typings, but the only way to know that every
// registration has finished; @pulumi/pulumi is pinned, so it cannot move under us.
const { setMockOptions, waitForRPCs } = settings as typeof settings & { waitForRPCs(): Promise<void> };


/**
 * Stand-ins for what only AWS knows. They are documented in docs/architecture.md, and they look like real values so
 * that the plan reads naturally: AWS's documentation account, an example endpoint and OIDC issuer.
 */
export const PLACEHOLDERS = {
    partition: "aws",
    accountId: "123456789012",
    clusterEndpoint: (region: string) => `https://EXAMPLED539D4633E53DE1B71EXAMPLE.gr7.${region}.eks.amazonaws.com`,
    oidcIssuer: (region: string) => `https://oidc.eks.${region}.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE`,
    certificateAuthority: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCnBsYWNlaG9sZGVyCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K",
    clusterSecurityGroupId: "sg-0123456789abcdef0",
    podIdentityAgentVersion: "v1.3.8-eksbuild.2",
    /** What the cluster lookup answers; the program refuses clusters below 1.30. */
    kubernetesVersion: "1.34",
    vpcId: "vpc-0123456789abcdef0",
    /** One subnet per zone: subnet-0a… private, subnet-0b… public. */
    subnetIds: (type: "private" | "public", zones: number) => Array.from({ length: zones }, (_, i) => `subnet-0${type === "private" ? "a" : "b"}${String(i + 1).padStart(15, "0")}`),
};

/** One resource the program registered, with what `pulumi preview --json` would show for it. */
export interface RecordedResource {
    urn: string;
    type: string;
    name: string;
    custom: boolean;
    /** A component built by its package's provider (awsx, eks): the mocks see it once, without its children. */
    remote: boolean;
    /** The parent's URN ("" for top-level resources). */
    parent: string;
    /** The provider reference (`<provider urn>::<id>`), "" when none was given. */
    provider: string;
    /** For components: the provider reference handed to them for each package (remote ones use no others). */
    providers: Record<string, string>;
    /** URNs this resource depends on: dependsOn plus every resource whose output feeds an input. */
    dependencies: string[];
    inputs: Record<string, any>;
    /** The resource options the engine keeps in its state (and `deleteBeforeReplace`, which it acts on). */
    options: ResourceOptionsRecord;
}

/**
 * Resource options as `pulumi preview --json` shows them in `newState` (pulumi/pulumi sdk/go/common/apitype/core.go
 * ResourceV3: protect, customTimeouts in seconds, retainOnDelete, ignoreChanges, replaceOnChanges; all omitempty).
 * ResourceV3 has no deleteBeforeReplace: the engine uses it when it plans a replacement and does not store it.
 */
export interface ResourceOptionsRecord {
    protect?: boolean;
    retainOnDelete?: boolean;
    deleteBeforeReplace?: boolean;
    replaceOnChanges?: string[];
    ignoreChanges?: string[];
    customTimeouts?: { create?: number; update?: number; delete?: number };
}

/** The engine's message for a second registration of one URN (pulumi/pulumi sdk/go/common/diag/errors.go:33). */
export const duplicateUrnMessage = (urn: string) => `Duplicate resource URN '${urn}'; try giving it a unique name`;

/** An invoke answer that fails the lookup, as the provider would (for example "no AMI matched"). */
export class InvokeFailure extends Error {}

/** What the engine would report as the preview's error: a duplicate URN, a failed lookup, the program's own error. */
export class PreviewError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "PreviewError";
    }
}

export interface Recording {
    resources: RecordedResource[];
    /** Invokes (data-source calls) the mocks had no answer for. */
    unmockedCalls: string[];
    /** The warnings config validation reported, once each (stacks/warnings.ts). */
    warnings: string[];
    /** Every data-source call, with its arguments. */
    calls: { token: string; inputs: Record<string, any> }[];
    byType(type: string): RecordedResource[];
    /** The one resource of `type` whose logical name is `name`; throws when there is none. */
    get(type: string, name: string): RecordedResource;
}

/**
 * Records every registration, with the parent, dependencies and options that the stock MockMonitor drops, and
 * fails what the engine fails: a second registration of one URN, and a lookup whose provider returns an error. A
 * read of an existing resource (`Resource.get`) would not be in the recording, so preview.json and the policy pack
 * would not see it: it fails the run instead. The program makes none; one that does needs it recorded here first.
 */
class RecordingMonitor extends MockMonitor {
    /** What the engine would have reported as errors, in order; the run fails with them. */
    readonly errors: string[] = [];
    private readonly urns = new Set<string>();

    private readonly record: (r: RecordedResource) => void;

    constructor(mocks: pulumi.runtime.Mocks, record: (r: RecordedResource) => void) {
        super(mocks);
        this.record = record;
    }

    /**
     * The stock MockMonitor's registration (runtime/mocks.js registerResource, @pulumi/pulumi 3.276.0), recording as
     * it goes. It reads the request's properties once, and answers with the object the SDK reads from a response
     * (`resp.getObject().toJavaScript()`, runtime/resource.js) rather than a protobuf Struct built only to be taken
     * apart again: every offline build, the plan's and each test's, paid for both.
     */
    async registerResource(req: any, callback: (err: any, resp: any) => void) {
        const urn: string = (this as any).newUrn(req.getParent(), req.getType(), req.getName());
        // The engine's step generator bails on a URN it has seen in this deployment (pkg/resource/deploy/step_generator.go:284).
        if (this.urns.has(urn)) return this.fail(duplicateUrnMessage(urn), callback);
        this.urns.add(urn);
        let inputs: Record<string, any>;
        let answer: { id: string | undefined; state: Record<string, any> };
        try {
            inputs = pulumi.runtime.deserializeProperties(req.getObject());
            const transforms = req.getTransformsList().flatMap((cb: any) => (this as any).transformCallbacks.get(cb.getToken()) ?? []);
            const result = await this.mocks.newResource({ type: req.getType(), name: req.getName(), inputs, provider: req.getProvider(), custom: req.getCustom(), id: req.getImportid(), transforms });
            answer = { id: result.id, state: await pulumi.runtime.serializeProperties("", result.state) };
        } catch (err) {
            return callback(err, undefined);
        }
        this.resources.set(urn, { urn, id: answer.id ?? null, state: answer.state });
        this.record({
            urn,
            type: req.getType(),
            name: req.getName(),
            custom: req.getCustom(),
            remote: req.getRemote(),
            parent: req.getParent(),
            provider: req.getProvider(),
            providers: Object.fromEntries(req.getProvidersMap().toArray()),
            dependencies: req.getDependenciesList(),
            inputs,
            options: optionsOf(req),
        });
        callback(null, {
            getUrn: () => urn,
            getId: () => answer.id || "",
            getObject: () => ({ toJavaScript: () => answer.state }),
            getPropertydependenciesMap: () => undefined,
            getResult: () => 0, // Result.SUCCESS (proto/resource_pb.js)
            getUnknown: () => false,
        });
    }

    async invoke(req: any, callback: (err: any, resp: any) => void) {
        return super.invoke(req, (err: any, resp: any) => {
            // The SDK shows the engine's `details` (runtime/invoke.js); the engine wraps the provider's error like
            // this (pkg/resource/deploy/source_eval.go:1164).
            if (err instanceof InvokeFailure) return this.fail(`invocation of ${req.getTok()} returned an error: ${err.message}`, callback);
            callback(err, resp);
        });
    }

    async readResource(req: any, callback: (err: any, resp: any) => void) {
        this.fail(`${req.getType()} ${req.getName()}: read with .get(), which the offline plan does not record (plan/offlineRuntime.ts)`, callback);
    }

    private fail(message: string, callback: (err: any, resp: any) => void) {
        this.errors.push(message);
        callback(Object.assign(new Error(message), { details: message }), undefined);
    }
}

/** A registration's options, with only what is set, as the engine's JSON leaves out empty values. */
function optionsOf(req: any): ResourceOptionsRecord {
    const t = req.getCustomtimeouts();
    const seconds = (d: string) => (d ? goDurationSeconds(d) : undefined);
    const timeouts = t ? { create: seconds(t.getCreate()), update: seconds(t.getUpdate()), delete: seconds(t.getDelete()) } : {};
    const o: ResourceOptionsRecord = {
        protect: req.getProtect() || undefined,
        retainOnDelete: req.getRetainondelete() || undefined,
        deleteBeforeReplace: req.getDeletebeforereplace() || undefined,
        replaceOnChanges: req.getReplaceonchangesList().length ? req.getReplaceonchangesList() : undefined,
        ignoreChanges: req.getIgnorechangesList().length ? req.getIgnorechangesList() : undefined,
        customTimeouts: Object.values(timeouts).some((v) => v !== undefined) ? JSON.parse(JSON.stringify(timeouts)) : undefined,
    };
    return JSON.parse(JSON.stringify(o));
}

/** Seconds in a Go duration string as the SDK sends custom timeouts ("10m", "1h30m", "90s"). */
function goDurationSeconds(d: string): number {
    const unit: Record<string, number> = { h: 3600, m: 60, s: 1 };
    return [...d.matchAll(/([0-9.]+)(h|m|s)/g)].reduce((sum, [, n, u]) => sum + Number(n) * unit[u], 0);
}





export interface OfflineRunOptions {
    /** Config values that replace the stack file's, keyed like the file (`notify-karpenter:controller`). */
    overrides?: Record<string, unknown>;
    /** Where the stack files are. @default the project directory */
    dir?: string;
    /**
     * Run as `pulumi preview` does for a new stack: outputs a resource computes on create (ARNs, URLs, IDs) are
     * unknown, so nothing may depend on their values. @default false (every output known, as after `up`)
     */
    preview?: boolean;
    /** Answers that replace the table's for some lookups, keyed by token; throw InvokeFailure to fail one. */
    invokes?: Record<string, InvokeAnswer>;
    /**
     * A name for `program` when its recording depends on the stack's config alone ("createStack"). A later run under
     * the same name, with the same stack, config and mode, returns the first run's recording, its data frozen,
     * instead of building it again: the tests build GC Notify's unchanged stacks dozens of times, and a diff against
     * a ref whose stack file is unchanged builds it once. Runs with `invokes` are never reused.
     */
    reuseAs?: string;
}

export type InvokeAnswer = (inputs: any, region: string) => Record<string, unknown>;

/**
 * Installs recording mocks and the stack's config, runs `program`, and waits until every resource is registered.
 * A throw from the program (bad config) propagates before anything is registered.
 */
export async function runOffline<T>(stack: string, program: () => T, opts: OfflineRunOptions = {}): Promise<Recording & { outputs: T }> {
    const config = readStackConfig(stack, opts.dir);
    for (const [k, v] of Object.entries(opts.overrides ?? {})) {
        if (v === undefined) delete config[k];
        else config[k] = typeof v === "string" ? v : JSON.stringify(v);
    }
    if (opts.reuseAs === undefined || opts.invokes !== undefined) return record(stack, config, program, opts);
    const key = JSON.stringify([opts.reuseAs, stack, config, opts.preview ?? false]);
    const reused = recordings.get(key);
    // Most recently used last: a hit moves to the end, and the first entry is the one to let go.
    recordings.delete(key);
    if (reused) {
        recordings.set(key, reused);
        return reused as Recording & { outputs: T };
    }
    const recording = await record(stack, config, program, opts);
    // Its data only: the outputs are the program's own objects, which share the config's defaults with later runs.
    for (const data of [recording.resources, recording.unmockedCalls, recording.warnings, recording.calls]) deepFreeze(data);
    recordings.set(key, recording);
    if (recordings.size > KEPT_RECORDINGS) recordings.delete(recordings.keys().next().value!);
    return recording;
}

/**
 * Recordings of runs named by `reuseAs`, by name, stack, config and mode, the most recently used last. Bounded, since
 * each holds its build's objects: 32 keep every repeat of the test suite (108 builds, as with no bound; 117 with 8),
 * and its workers peak no higher than without reuse (0.7-0.8 GB against 0.6-1.1).
 */
const recordings = new Map<string, Recording & { outputs: unknown }>();
const KEPT_RECORDINGS = 32;

/** Freezes plain objects and arrays all the way down, so that no reader of a shared recording can change it for the next. */
function deepFreeze(value: unknown): void {
    if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return;
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
}

async function record<T>(stack: string, config: Record<string, string>, program: () => T, opts: OfflineRunOptions): Promise<Recording & { outputs: T }> {
    const region = regionOf(config);
    const resources: RecordedResource[] = [];
    const unmockedCalls: string[] = [];
    const calls: Recording["calls"] = [];
    const preview = opts.preview ?? false;
    const mocks: pulumi.runtime.Mocks = {
        // In a preview the engine knows a new resource's inputs only; its ID and computed outputs are unknown.
        newResource: (a) => (preview ? { id: undefined, state: a.inputs } : { id: `${a.name}-id`, state: { ...a.inputs, ...computedOutputs(a, region) } }),
        call: (a) => {
            calls.push({ token: a.token, inputs: a.inputs });
            const answer = opts.invokes?.[a.token] ?? invokeResults[a.token];
            if (!answer) {
                unmockedCalls.push(a.token);
                return {};
            }
            return answer(a.inputs, region);
        },
    };
    await pulumi.runtime.setMocks(mocks, PROJECT, stack, preview);
    const monitor = new RecordingMonitor(mocks, (r) => resources.push(r));
    setMockOptions(monitor, PROJECT, stack, preview);
    pulumi.runtime.setAllConfig(config, []);

    // Pulumi records a source-mapped stack trace for every promise it makes, and mocha lifts the frame limit to
    // Infinity: that alone took most of a build's time. Registration errors keep their messages.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    // What the engine reports as errors also rejects the outputs that depended on them; the run fails with the
    // engine's messages instead, so those rejections are expected here.
    const rejected: unknown[] = [];
    const onRejection = (e: unknown) => rejected.push(e);
    process.on("unhandledRejection", onRejection);
    // The config's warnings go to the recording (npm run plan prints them once, in its summary), not the console.
    const warnings: string[] = [];
    const restoreWarnings = collectConfigWarnings((w) => warnings.push(w));
    let outputs: T;
    try {
        outputs = program();
        await waitForRPCs();
        await new Promise((resolve) => setImmediate(resolve));
    } finally {
        Error.stackTraceLimit = stackTraceLimit;
        process.off("unhandledRejection", onRejection);
        restoreWarnings();
    }
    if (monitor.errors.length > 0) throw new PreviewError(monitor.errors.join("\n"));
    // An error inside an apply reaches the engine through every input that depends on it; the cause is what matters.
    if (rejected.length > 0) throw new PreviewError(String((rejected[0] as Error)?.message ?? rejected[0]).replace(/^(error serializing property "[^"]*": )+/, ""));
    return {
        outputs,
        resources,
        unmockedCalls,
        warnings,
        calls,
        byType: (type) => resources.filter((r) => r.type === type),
        get: (type, name) => {
            const found = resources.find((r) => r.type === type && r.name === name);
            if (!found) throw new Error(`no ${type} named ${name}; have ${resources.filter((r) => r.type === type).map((r) => r.name).join(", ") || "none"}`);
            return found;
        },
    };
}

function regionOf(config: Record<string, string>): string {
    try {
        return JSON.parse(config[`${PROJECT}:cluster`] ?? "{}").region ?? "ca-central-1";
    } catch {
        return "ca-central-1";
    }
}

/**
 * What AWS would compute on create: ARNs, URLs and names, shaped like the real thing. Remote components run
 * nothing under mocks, so the outputs the program reads from them are made up here.
 */
function computedOutputs(a: pulumi.runtime.MockResourceArgs, region: string): Record<string, unknown> {
    const { accountId: acct, partition: p } = PLACEHOLDERS;
    const name = a.inputs.name ?? a.name;
    switch (a.type) {
        case "aws:eks/addon:Addon":
            return { addonVersion: a.inputs.addonVersion ?? PLACEHOLDERS.podIdentityAgentVersion };
        case "awsx:ec2:Vpc": {
            const zones = a.inputs.availabilityZoneNames?.length ?? 3;
            return { vpcId: PLACEHOLDERS.vpcId, privateSubnetIds: PLACEHOLDERS.subnetIds("private", zones), publicSubnetIds: PLACEHOLDERS.subnetIds("public", zones) };
        }
        case "eks:index:Cluster":
            return {
                eksCluster: {
                    name,
                    arn: `arn:${p}:eks:${region}:${acct}:cluster/${name}`,
                    endpoint: PLACEHOLDERS.clusterEndpoint(region),
                    certificateAuthority: { data: PLACEHOLDERS.certificateAuthority },
                    identities: [{ oidcs: [{ issuer: PLACEHOLDERS.oidcIssuer(region) }] }],
                    vpcConfig: { clusterSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId },
                },
            };
        case "aws:sqs/queue:Queue":
            return { name, arn: `arn:${p}:sqs:${region}:${acct}:${name}`, url: `https://sqs.${region}.amazonaws.com/${acct}/${name}` };
        case "aws:iam/role:Role":
            return { name, arn: `arn:${p}:iam::${acct}:role/${name}` };
        case "aws:iam/policy:Policy":
            return { name, arn: `arn:${p}:iam::${acct}:policy/${name}` };
        case "aws:cloudwatch/eventRule:EventRule":
            return { name, arn: `arn:${p}:events:${region}:${acct}:rule/${name}` };
        case "aws:sns/topic:Topic":
            return { name, arn: `arn:${p}:sns:${region}:${acct}:${name}` };
        case "aws:cloudwatch/metricAlarm:MetricAlarm":
            return { name, arn: `arn:${p}:cloudwatch:${region}:${acct}:alarm:${name}` };
        case "aws:cloudwatch/logMetricFilter:LogMetricFilter":
            return { name };
        case "aws:cloudwatch/dashboard:Dashboard":
            return { dashboardArn: `arn:${p}:cloudwatch::${acct}:dashboard/${a.inputs.dashboardName}` };
        case "aws:kms/alias:Alias":
            return { name, arn: `arn:${p}:kms:${region}:${acct}:${name}` };
        case "aws:kms/key:Key":
            return { arn: `arn:${p}:kms:${region}:${acct}:key/${a.name}`, keyId: `${a.name}-key-id` };
        default:
            return a.inputs.name === undefined ? {} : { name };
    }
}

/** Answers for the data sources the program reads. */
const invokeResults: Record<string, InvokeAnswer> = {
    "aws:eks/getCluster:getCluster": (i, region) => ({
        name: i.name,
        id: i.name,
        arn: `arn:${PLACEHOLDERS.partition}:eks:${region}:${PLACEHOLDERS.accountId}:cluster/${i.name}`,
        endpoint: PLACEHOLDERS.clusterEndpoint(region),
        certificateAuthorities: [{ data: PLACEHOLDERS.certificateAuthority }],
        identities: [{ oidcs: [{ issuer: PLACEHOLDERS.oidcIssuer(region) }] }],
        vpcConfig: { clusterSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId },
        version: PLACEHOLDERS.kubernetesVersion,
    }),
    // Found, with the name asked for: the log group Fluent Bit ships the controller's lines to.
    "aws:cloudwatch/getLogGroup:getLogGroup": (i, region) => ({
        id: i.name,
        name: i.name,
        arn: `arn:${PLACEHOLDERS.partition}:logs:${region}:${PLACEHOLDERS.accountId}:log-group:${i.name}`,
    }),
    // Found: one image matching every filter (the provider fails unless exactly one matches).
    "aws:ec2/getAmi:getAmi": (i) => {
        const filter = (name: string) => i.filters?.find((f: { name: string }) => f.name === name)?.values?.[0];
        return { id: filter("image-id"), imageId: filter("image-id"), architecture: filter("architecture") ?? "x86_64", state: "available" };
    },
    "aws:eks/getAddon:getAddon": (i) => ({ id: `${i.clusterName}:${i.addonName}`, clusterName: i.clusterName, addonName: i.addonName, addonVersion: PLACEHOLDERS.podIdentityAgentVersion }),
    "aws:iam/getRole:getRole": (i) => ({
        name: i.name,
        id: i.name,
        arn: `arn:${PLACEHOLDERS.partition}:iam::${PLACEHOLDERS.accountId}:role/${i.name}`,
    }),
};
