// Every AWS call the live commands make, as one kind of call: SDK v3 clients with a deadline for the connection, for
// a silent connection and for the whole call (the SDK's retries included), answers read up to a bound, throttling
// retried with a growing wait, and each failure told by its own error code in one line that names the call. Callers
// check each answer's fields before they read them (`need`): an empty or cut answer is never read as "none".
import { Readable, Transform } from "stream";
import { type Deadlines, seconds } from "./deadlines.ts";
import type { AwsClientConfig } from "./preflight.ts";

/** What a failed call was, by the error's own code (not its HTTP status). */
export type AwsFailure = "denied" | "expired" | "wrong-credentials" | "no-credentials" | "throttled" | "deadline" | "unreachable" | "malformed" | "too-large" | "http";

/** A call that failed; its message is the one line to show, naming the call. */
export class AwsCallError extends Error {
    readonly kind: AwsFailure;
    /** The service's error code (its `name`), when it answered one. */
    readonly code?: string;

    constructor(kind: AwsFailure, message: string, code?: string) {
        super(message);
        this.kind = kind;
        this.code = code;
    }
}

/** The credentials' session ended (STS: ExpiredToken; JSON services: ExpiredTokenException; EC2: RequestExpired). */
const EXPIRED = ["ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"];
/** AWS does not know the access key, or the secret does not match it. */
const WRONG = ["SignatureDoesNotMatch", "InvalidClientTokenId", "UnrecognizedClientException", "InvalidSignatureException", "AuthFailure", "IncompleteSignature", "InvalidAccessKeyId", "MissingAuthenticationToken"];
/** The credentials are good and lack the action (JSON services send AccessDeniedException with HTTP 400). */
const DENIED = ["AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError", "AuthorizationErrorException"];
/** Rate limits, as each protocol names them (the SDK's own list: @smithy/service-error-classification THROTTLING_ERROR_CODES, less LimitExceededException, which Logs Insights uses for its 30 concurrent queries). */
const THROTTLED = ["Throttling", "ThrottlingException", "ThrottledException", "TooManyRequestsException", "RequestLimitExceeded", "RequestThrottled", "RequestThrottledException", "SlowDown", "EC2ThrottledException", "BandwidthLimitExceeded", "ProvisionedThroughputExceededException", "PriorRequestNotComplete"];

/**
 * The IAM action of each API operation not authorized by its own name: SQS's batch operations. "You cannot set
 * permissions explicitly for SendMessageBatch, DeleteMessageBatch, or ChangeMessageVisibilityBatch. Instead, setting
 * permissions for SendMessage, DeleteMessage, or ChangeMessageVisibility sets permissions for the corresponding batch
 * versions" (Amazon SQS Developer Guide, "Amazon SQS batch actions"; the Service Authorization Reference lists no
 * sqs:*Batch action).
 */
const IAM_ACTION: Record<string, string> = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
};

interface SdkError {
    name?: string;
    message?: string;
    Code?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
    $response?: { statusCode?: number; headers?: Record<string, string> };
    cause?: { code?: string; message?: string };
}

const codeOf = (e: SdkError) => e?.name ?? e?.Code ?? "error";

export const isThrottled = (e: unknown) => {
    const err = e as SdkError;
    return THROTTLED.includes(err?.name ?? "") || THROTTLED.includes(err?.Code ?? "") || err?.$metadata?.httpStatusCode === 429;
};

/** The SDK's clients for `region`, with the connection and silence deadlines (its request handler's own settings). */
export function awsClientConfig(region: string, config: AwsClientConfig, d: Deadlines) {
    // throwOnRequestTimeout: newer handlers (@smithy/node-http-handler 4) only warn on requestTimeout without it.
    return { region, ...config, requestHandler: config.requestHandler ?? { connectionTimeout: d.awsConnectMs, requestTimeout: d.awsRequestMs, throwOnRequestTimeout: true } };
}

/** Past the whole call's deadline: the SDK's own retries could not get an answer in time. */
class CallDeadline extends Error {
    readonly ms: number;
    constructor(ms: number) {
        super(`no answer within ${seconds(ms)}`);
        this.name = "CallDeadline";
        this.ms = ms;
    }
}

/** An answer larger than any this program reads: refused as it streams in, never held whole. */
class AnswerTooLarge extends Error {
    readonly bytes: number;
    constructor(bytes: number) {
        super(`the answer passed ${bytes / 1e6} MB`);
        this.name = "AnswerTooLarge";
        this.bytes = bytes;
    }
}

interface MiddlewareStack {
    add: (middleware: any, options: any) => void;
}

/**
 * Gives a client the whole-call deadline (around the SDK's retries: its own timeouts bound one attempt only), an abort
 * of the request just after it, and the bound on an answer's size (inside the deserializer, on the raw body as it
 * arrives). Returns the client.
 */
export function guarded<C extends { middlewareStack: MiddlewareStack; send: unknown }>(client: C, d: Deadlines): C {
    // The abandoned request is aborted too (its socket closed), a moment after the deadline below has answered.
    const send = (client.send as (...args: unknown[]) => unknown).bind(client);
    const abortAfter = d.awsCallMs + 100;
    (client as { send: unknown }).send = (command: unknown, options?: unknown, cb?: unknown) =>
        typeof options === "function" ? send(command, { abortSignal: AbortSignal.timeout(abortAfter) }, options) : send(command, { abortSignal: AbortSignal.timeout(abortAfter), ...(options as object | undefined) }, cb);
    client.middlewareStack.add(
        (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<never>((_, reject) => {
                timer = setTimeout(() => reject(new CallDeadline(d.awsCallMs)), d.awsCallMs);
            });
            return Promise.race([next(args), late]).finally(() => clearTimeout(timer));
        },
        { step: "initialize", priority: "high", name: "notifyKarpenterCallDeadline" },
    );
    client.middlewareStack.add(
        (next: (args: unknown) => Promise<{ response: { body?: unknown } }>) => async (args: unknown) => {
            const out = await next(args);
            const body = out.response?.body;
            if (body instanceof Readable) out.response.body = body.pipe(bounded(d.maxAnswerBytes, (e) => body.destroy(e)));
            return out;
        },
        { step: "deserialize", priority: "low", name: "notifyKarpenterAnswerBound" },
    );
    return client;
}

/** A pass-through that fails past `max` bytes (and stops the source). */
function bounded(max: number, stop: (e: Error) => void): Transform {
    let bytes = 0;
    return new Transform({
        transform(chunk: Buffer, _encoding, done) {
            bytes += chunk.length;
            if (bytes <= max) return done(null, chunk);
            const e = new AnswerTooLarge(max);
            stop(e);
            done(e);
        },
    });
}

export interface CallOptions {
    deadlines: Deadlines;
    /** Error codes that mean "not there": the call then returns undefined. */
    missing?: string[];
    /** Hears each "not there" answer, with its message and code. */
    onMissing?: (message: string, code: string) => void;
    /** Where the permissions are listed, for an access refusal ("docs/preflight.md lists the read permissions"). */
    permissions: string;
    /** How a throttled call waits before it is tried again (setTimeout by default). */
    sleep?: (ms: number) => Promise<void>;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * One AWS call, `what` naming it ("iam:GetRole KarpenterNodeRole"): a `missing` error is undefined; a throttled call is
 * tried again after 1, 2, 4... s up to throttleAttempts tries in all; any other failure is an AwsCallError whose
 * message says what failed, by the error's own code, in one line.
 */
export async function awsCall<T>(what: string, fn: () => Promise<T>, o: CallOptions): Promise<T | undefined> {
    const d = o.deadlines;
    let wait = d.throttleFirstDelayMs;
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
        try {
            return await fn();
        } catch (e) {
            const err = e as SdkError;
            if (o.missing?.includes(err?.name ?? "") || o.missing?.includes(err?.Code ?? "")) {
                o.onMissing?.(err.message ?? String(err.name), err.name ?? err.Code ?? "");
                return undefined;
            }
            if (isThrottled(e) && attempt < d.throttleAttempts) {
                await (o.sleep ?? pause)(wait);
                waited += wait;
                wait *= 2;
                continue;
            }
            throw awsError(what, e, { attempts: attempt, waitedMs: waited, permissions: o.permissions });
        }
    }
}

/** The failure of `what`, by the error's own code, as one line. */
export function awsError(what: string, e: unknown, ctx: { attempts?: number; waitedMs?: number; permissions: string }): AwsCallError {
    if (e instanceof AwsCallError) return e;
    const err = e as SdkError;
    const code = codeOf(err);
    const status = err?.$metadata?.httpStatusCode;
    const said = `${status ? `HTTP ${status} ` : ""}${code}: ${err?.message ?? e}`;
    if (e instanceof CallDeadline) return new AwsCallError("deadline", `${what}: no answer within ${seconds(e.ms)}, the SDK's retries included: AWS, or the way to it, stopped answering`);
    if (code === "AbortError") return new AwsCallError("deadline", `${what}: no answer in time (the request was aborted at its deadline): AWS, or the way to it, stopped answering`, code);
    if (e instanceof AnswerTooLarge || err?.name === "AnswerTooLarge") {
        return new AwsCallError("too-large", `${what}: the answer passed ${(e as AnswerTooLarge).bytes / 1e6} MB, far more than any answer of this call: refused unread`);
    }
    if (EXPIRED.includes(code)) return new AwsCallError("expired", `${what}: ${said}: the credentials expired: log in again (aws sso login, or a new session) and retry`, code);
    if (WRONG.includes(code)) {
        return new AwsCallError("wrong-credentials", `${what}: ${said}: the credentials are wrong (AWS does not know the access key, or the secret does not match it): check --profile, AWS_PROFILE or the AWS_* variables`, code);
    }
    if (DENIED.includes(code)) {
        const operation = what.split(" ")[0];
        return new AwsCallError("denied", `${what}: ${said} (the credentials lack ${IAM_ACTION[operation] ?? operation}; ${ctx.permissions})`, code);
    }
    if (isThrottled(e)) {
        const tries = ctx.attempts ?? 1;
        return new AwsCallError("throttled", `${what}: ${said}: throttled ${tries === 1 ? "once" : `${tries} times`}${ctx.waitedMs ? `, over ${seconds(ctx.waitedMs)} of waiting` : ""}: AWS limits the rate of these calls in this account and region; retry in a few minutes`, code);
    }
    if (code === "CredentialsProviderError" || /Could not load credentials/i.test(err?.message ?? "")) return new AwsCallError("no-credentials", `${what}: ${code}: ${err?.message}`, code);
    if (code === "TimeoutError") return new AwsCallError("deadline", `${what}: no answer in time (${(err?.message ?? "").replace(/^@smithy\/\S+ - \[ERROR\] /, "")}): AWS, or the way to it, stopped answering`, code);
    // The deserializer's own failures: a body that is not the service's XML or JSON (a proxy's page, a cut answer).
    if (err?.$response && (code === "SyntaxError" || /Deserialization error/.test(err?.message ?? ""))) {
        return new AwsCallError("malformed", `${what}: the answer (HTTP ${err.$response.statusCode ?? "?"}) is not ${what.split(":")[0]}'s: ${code}: ${(err?.message ?? "").split("\n")[0]}; a proxy or another server may be answering`, code);
    }
    if (!status) return new AwsCallError("unreachable", `${what}: ${code}: ${err?.message ?? e}${err?.cause?.code ? ` (${err.cause.code})` : ""}`, code);
    return new AwsCallError("http", `${what}: ${said}`, code);
}

/** A field the caller reads: present, or the call's answer is malformed (never read as "none"). */
export function need<T>(value: T | undefined | null, what: string, field: string): T {
    if (value === undefined || value === null) throw new AwsCallError("malformed", `${what} answered without ${field}: cannot check (an empty or cut answer is not read as "none")`);
    return value;
}
