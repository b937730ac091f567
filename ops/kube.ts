// The few Kubernetes API calls the cluster commands make, over @kubernetes/client-node 2.x (the official client: it
// reads kubeconfig contexts and EKS exec credentials). It is an ES module, which Node 22+ require()s from CommonJS.
import * as k8s from "@kubernetes/client-node";
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { type Deadlines, seconds } from "./deadlines.ts";

export type KubeConfig = k8s.KubeConfig;
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

/** Anything the API returns, read loosely: the commands use a handful of fields. */
export interface KubeObject {
    metadata: {
        name: string;
        namespace?: string;
        labels?: Record<string, string>;
        creationTimestamp?: string | Date;
        deletionTimestamp?: string | Date;
        resourceVersion?: string;
        ownerReferences?: { kind: string; name: string }[];
        /** Who set which fields (server-side apply managers, Helm, EKS...). */
        managedFields?: { manager?: string; operation?: string }[];
    };
    spec?: any;
    status?: any;
    /** A PriorityClass's value and preemption policy; a Secret's data. */
    value?: number;
    preemptionPolicy?: string;
    data?: Record<string, string>;
}

export interface Cluster {
    listNodes(labelSelector?: string): Promise<KubeObject[]>;
    listPods(labelSelector?: string): Promise<KubeObject[]>;
    createNamespace(name: string, labels: Record<string, string>): Promise<void>;
    deleteNamespace(name: string): Promise<void>;
    namespaceExists(name: string): Promise<boolean>;
    createDeployment(namespace: string, deployment: object): Promise<void>;
    scaleDeployment(namespace: string, name: string, replicas: number): Promise<void>;
    /**
     * Streams changes to the objects at `path` (such as /api/v1/nodes); `onEnd` gets the error, or nothing when
     * the server closed the stream. Returns a function that stops watching.
     */
    watch(path: string, query: Record<string, string>, onEvent: (type: WatchEventType, object: KubeObject) => void, onEnd: (err?: Error) => void): Promise<() => void>;
}

/**
 * The watches of one command run, and why it must stop: a stream the server ends is resumed from the last
 * resourceVersion seen (with bookmarks, so that version stays fresh); an ERROR event, a failed stream or a failed
 * resume records the first reason, which the run's loop reads. `stopAll` ends every watch, a late one included.
 */
export class WatchSet {
    stopReason: string | undefined;
    private stopping = false;
    private readonly stops: (() => void)[] = [];

    private readonly cluster: Cluster;

    constructor(cluster: Cluster) {
        this.cluster = cluster;
    }

    /** Records why the run must stop, unless a reason is already there. */
    stop(reason: string): void {
        this.stopReason ??= reason;
    }

    async watch(what: string, url: string, query: Record<string, string>, onEvent: (type: WatchEventType, o: KubeObject) => void): Promise<void> {
        let version: string | undefined;
        const start = async (): Promise<void> => {
            const stop = await this.cluster.watch(
                url,
                { ...query, ...(version ? { resourceVersion: version } : {}), allowWatchBookmarks: "true" },
                (type, o) => {
                    if (type === "ERROR") return this.stop(`the ${what} watch failed: ${(o as { message?: string }).message ?? JSON.stringify(o)}`);
                    version = o.metadata?.resourceVersion ?? version;
                    if (type !== "BOOKMARK") onEvent(type, o);
                },
                (err) => {
                    if (this.stopping || this.stopReason) return;
                    if (err) this.stop(`the ${what} watch failed: ${err.message}`);
                    else start().catch((e: Error) => this.stop(`the ${what} watch could not resume: ${e.message}`));
                },
            );
            if (this.stopping) stop();
            else this.stops.push(stop);
        };
        await start();
    }

    stopAll(): void {
        this.stopping = true;
        this.stops.forEach((stop) => stop());
    }
}

/**
 * The kubeconfig of $KUBECONFIG or ~/.kube/config. Throws when there is none: client-node's loadFromDefault then
 * falls back to a made-up context of http://localhost:8080, which would read as "another cluster".
 */
export function loadKubeConfig(env = process.env, home = os.homedir()): KubeConfig {
    const files = env.KUBECONFIG ? env.KUBECONFIG.split(path.delimiter).filter(Boolean) : [path.join(home, ".kube", "config")];
    if (!env.KUBERNETES_SERVICE_HOST && !files.some((f) => fs.existsSync(f))) {
        throw new Error(`no kubeconfig (${files.join(", ")} not found): run aws eks update-kubeconfig --name <cluster> --alias <context>`);
    }
    const kc = new k8s.KubeConfig();
    kc.loadFromDefault();
    if (!kc.getCurrentContext() && kc.getContexts().length === 0) throw new Error(`the kubeconfig (${files.join(", ")}) has no context`);
    return kc;
}

/** The EKS cluster a kubeconfig cluster entry is: its name, its ARN (aws eks update-kubeconfig) or eksctl's name.region.eksctl.io. */
export function namesCluster(entry: string, clusterName: string): boolean {
    return entry === clusterName || entry.endsWith(`:cluster/${clusterName}`) || entry.startsWith(`${clusterName}.`);
}

/** What a kubeconfig context says of the cluster it reaches, each fact with where it was read. */
export interface ContextIdentity {
    /** The kubeconfig's cluster entry. */
    entry: string;
    server?: string;
    names: { name: string; from: string }[];
    regions: { region: string; from: string }[];
    accounts: { account: string; from: string }[];
}

const REGION = "[a-z]{2}(?:-[a-z]+)+-\\d";

/**
 * The EKS cluster a context reaches, as the kubeconfig tells it: the cluster entry's name, an ARN
 * (arn:aws:eks:<region>:<account>:cluster/<name>, as aws eks update-kubeconfig names it) or eksctl's
 * <name>.<region>.eksctl.io; the server's host (<id>.<zone>.<region>.eks.amazonaws.com); and the credential plugin's
 * arguments and environment (aws eks get-token --region R --cluster-name N [--role-arn arn:aws:iam::<account>:...],
 * aws-iam-authenticator token -i N, AWS_REGION).
 */
export function contextIdentity(kc: KubeConfig, context: string): ContextIdentity | undefined {
    const ctx = kc.getContextObject(context);
    if (!ctx) return undefined;
    const out: ContextIdentity = { entry: ctx.cluster, names: [], regions: [], accounts: [] };
    const arn = new RegExp(`^arn:aws[a-z-]*:eks:(${REGION}):(\\d{12}):cluster/(.+)$`).exec(ctx.cluster);
    const eksctl = new RegExp(`^(.+)\\.(${REGION})\\.eksctl\\.io$`).exec(ctx.cluster);
    if (arn) {
        out.names.push({ name: arn[3], from: "the context's cluster ARN" });
        out.regions.push({ region: arn[1], from: "the context's cluster ARN" });
        out.accounts.push({ account: arn[2], from: "the context's cluster ARN" });
    } else if (eksctl) {
        out.names.push({ name: eksctl[1], from: "the context's eksctl cluster name" });
        out.regions.push({ region: eksctl[2], from: "the context's eksctl cluster name" });
    } else out.names.push({ name: ctx.cluster, from: "the context's cluster name" });
    out.server = kc.getCluster(ctx.cluster)?.server;
    const host = /^https?:\/\/([^/:]+)/.exec(out.server ?? "")?.[1] ?? "";
    const endpoint = new RegExp(`\\.(${REGION})\\.eks\\.amazonaws\\.com(?:\\.cn)?$`).exec(host);
    if (endpoint) out.regions.push({ region: endpoint[1], from: `its server ${host}` });
    const exec = execOf(kc.getUser(ctx.user));
    if (exec) {
        const args: string[] = Array.isArray(exec.args) ? exec.args.map(String) : [];
        const flag = (...names: string[]) => {
            for (let i = 0; i < args.length; i++) {
                for (const n of names) {
                    if (args[i] === n && i + 1 < args.length) return args[i + 1];
                    if (args[i].startsWith(`${n}=`)) return args[i].slice(n.length + 1);
                }
            }
            return undefined;
        };
        const plugin = `its credential plugin (${pluginName(exec)})`;
        // aws eks get-token's flags, and aws-iam-authenticator token's (-i cluster ID, -r role).
        const iamAuthenticator = path.basename(String(exec.command)) === "aws-iam-authenticator";
        const name = iamAuthenticator ? flag("-i", "--cluster-id") : flag("--cluster-name");
        if (name) out.names.push({ name, from: plugin });
        const env = new Map<string, string>((Array.isArray(exec.env) ? exec.env : []).map((e: { name: string; value: string }) => [e.name, String(e.value)]));
        const region = flag("--region") ?? env.get("AWS_REGION") ?? env.get("AWS_DEFAULT_REGION");
        if (region) out.regions.push({ region, from: plugin });
        const role = /^arn:aws[a-z-]*:iam::(\d{12}):/.exec((iamAuthenticator ? flag("-r", "--role") : flag("--role-arn")) ?? "");
        if (role) out.accounts.push({ account: role[1], from: `${plugin}'s role` });
    }
    return out;
}

/** The stack's cluster, as the context must reach it. */
export interface StackCluster {
    name: string;
    region: string;
}

/**
 * Switches `kc` to `context`; a string says why not: no such context, or a cluster other than the stack's by its
 * name, its region, or its account (the caller's, when the command knows it: the drill and preflight ask STS; the
 * context's own facts must agree in any case). Every cluster command checks its --context here.
 */
export function useContext(kc: KubeConfig, context: string, cluster: StackCluster, caller?: { account: string }): string | undefined {
    const id = contextIdentity(kc, context);
    if (!id) return `--context: no context "${context}" in the kubeconfig; its contexts are ${kc.getContexts().map((c) => c.name).join(", ") || "none"}`;
    const it = `--context ${context} is cluster "${id.entry}" (${id.server ?? "no server"})`;
    const refusing = "refusing to touch it";
    if (!namesCluster(id.entry, cluster.name)) return `${it}, not the stack's cluster ${cluster.name} (notify-karpenter:cluster.name); ${refusing}`;
    const otherName = id.names.find((n) => n.name !== cluster.name);
    if (otherName) return `${it}, but ${otherName.from} names cluster ${otherName.name}, not the stack's cluster ${cluster.name} (notify-karpenter:cluster.name); ${refusing}`;
    const otherRegion = id.regions.find((r) => r.region !== cluster.region);
    if (otherRegion) {
        return `${it}, in ${otherRegion.region} (${otherRegion.from}), not the stack's cluster ${cluster.name} in ${cluster.region} (notify-karpenter:cluster.region): a cluster of the same name in another region; ${refusing}`;
    }
    const [first, ...rest] = id.accounts;
    const disagrees = rest.find((a) => a.account !== first.account);
    if (first && disagrees) return `${it}: ${first.from} says account ${first.account}, ${disagrees.from} says account ${disagrees.account}; ${refusing}`;
    if (first && caller && first.account !== caller.account) {
        return `${it}, of account ${first.account} (${first.from}), but the AWS credentials are account ${caller.account} (sts:GetCallerIdentity): a cluster of the same name in another account, or the wrong credentials; ${refusing}`;
    }
    kc.setCurrentContext(context);
    return undefined;
}

/** A failed Kubernetes request, named: what was asked, and why it got no usable answer, in one line. */
export class KubeCallError extends Error {
    /** The HTTP status when the server answered one (401, 403...). */
    readonly code?: number;
    readonly kind: "http" | "deadline" | "no-route" | "credentials" | "malformed" | "too-large";
    readonly cause?: unknown;

    constructor(kind: KubeCallError["kind"], message: string, code?: number, cause?: unknown) {
        super(message);
        this.kind = kind;
        this.code = code;
        this.cause = cause;
    }
}

/** The kubeconfig's credential plugin failed, did not answer in time, or answered no credential. */
export class CredentialPluginError extends Error {}

/** An answer larger than any this program reads. */
class AnswerTooLarge extends Error {}

/** The socket errors of a connection that never got an answer (Node's fetch wraps them: "fetch failed", with the cause). */
const NO_ROUTE = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_SOCKET"]);

/** Runs one request named `what` ("list pods"); any failure is a KubeCallError saying what happened to it. */
export async function kubeCall<T>(what: string, fn: () => Promise<T>, d: Deadlines): Promise<T> {
    try {
        return await fn();
    } catch (e) {
        throw kubeError(what, e, d);
    }
}

/** A Kubernetes client failure of `what`, by what it was: an HTTP status, no answer in time, no route, a bad answer. */
export function kubeError(what: string, e: unknown, d: Deadlines): KubeCallError {
    if (e instanceof KubeCallError) return e;
    const err = e as { code?: unknown; statusCode?: number; name?: string; message?: string; body?: unknown; cause?: { code?: string; message?: string; name?: string } };
    // Before the status: an aborted fetch's DOMException carries a numeric code of its own (TIMEOUT_ERR, 23).
    if (err?.name === "TimeoutError" || err?.cause?.name === "TimeoutError") return new KubeCallError("deadline", `${what}: no answer within ${seconds(d.kubeRequestMs)}`, undefined, e);
    if (e instanceof CredentialPluginError) return new KubeCallError("credentials", e.message, undefined, e);
    if (e instanceof AnswerTooLarge || err?.cause instanceof AnswerTooLarge) return new KubeCallError("too-large", `${what}: the answer passed ${d.maxAnswerBytes / 1e6} MB, far more than any answer of this request: refused unread`, undefined, e);
    // The generated clients' ApiException (code), and client-node's Watch's error for a status other than 200 (statusCode).
    const status = e instanceof k8s.ApiException ? err.code : err?.statusCode;
    if (typeof status === "number") {
        const said = serverMessage(err.body);
        return new KubeCallError("http", `${what}: HTTP ${status}${said ? ` (${said})` : ""}`, status, e);
    }
    if (err?.message === "fetch failed" || NO_ROUTE.has(err?.cause?.code ?? "")) {
        const cause = err?.cause?.message && !String(err.message).includes(err.cause.message) ? `: ${err.cause.message}` : "";
        return new KubeCallError("no-route", `${what}: ${err.message}${cause}`, undefined, e);
    }
    // The client's own parse and deserialize failures: the body is no Kubernetes JSON (a proxy's page, a cut answer).
    return new KubeCallError("malformed", `${what}: the answer is not the API server's (${String(err?.message ?? e).split("\n")[0]}): is the kubeconfig's server the cluster's API endpoint?`, undefined, e);
}

/** The API server's own words in an error body (a Status's message), when there are any. */
function serverMessage(body: unknown): string | undefined {
    if (typeof body !== "string" || !body.trim()) return undefined;
    try {
        const status = JSON.parse(body);
        return typeof status?.message === "string" ? status.message.slice(0, 300) : undefined;
    } catch {
        return undefined;
    }
}

/** A list's items, each an object with a name: what every list answer holds, checked before it is read. */
export function listItems(what: string, answer: unknown): KubeObject[] {
    const items = (answer as { items?: unknown })?.items;
    if (!Array.isArray(items)) throw new KubeCallError("malformed", `${what}: the answer has no items list: cannot check (an empty or cut answer is not read as "none")`);
    const bad = items.find((o) => typeof (o as KubeObject)?.metadata?.name !== "string");
    if (bad !== undefined) throw new KubeCallError("malformed", `${what}: the answer holds an object without metadata.name (${JSON.stringify(bad)?.slice(0, 120)}): cannot check`);
    return items as KubeObject[];
}

// ---- Requests with deadlines.

type ExecSpec = { command: string; args?: string[]; env?: { name: string; value: string }[] };

/** The user's exec credential plugin, as the kubeconfig gives it (or as timedCredentials keeps it). */
function execOf(user: k8s.User | null | undefined): ExecSpec | undefined {
    if (!user) return undefined;
    return (user.exec as ExecSpec | undefined) ?? (user.authProvider?.config?.exec as ExecSpec | undefined) ?? TIMED.get(user);
}

/** How messages name a plugin: "aws eks get-token", "aws-iam-authenticator token". */
function pluginName(exec: ExecSpec): string {
    const args = (exec.args ?? []).map(String);
    const words = args.filter((a, i) => !a.startsWith("-") && !(i > 0 && args[i - 1].startsWith("-") && !args[i - 1].includes("=")));
    return [path.basename(String(exec.command)), ...words.slice(0, 2)].join(" ");
}

/** The exec plugins timedCredentials took over, by the user object that had them. */
const TIMED = new WeakMap<object, ExecSpec>();
const TIMED_CONFIGS = new WeakSet<KubeConfig>();

/**
 * Runs the kubeconfig's exec credential plugins itself (client.authentication.k8s.io ExecCredential: the command, its
 * args and env; stdout one JSON object with status.token, or a client certificate), with their own deadline and
 * messages: client-node waits for a plugin for ever, and a hung `aws eks get-token` then looks like an endpoint that
 * does not answer. A credential is kept until a minute before its expirationTimestamp; one run serves the requests that
 * wait for it.
 */
export function timedCredentials(kc: KubeConfig, d: Deadlines): void {
    if (TIMED_CONFIGS.has(kc)) return;
    TIMED_CONFIGS.add(kc);
    const cache = new Map<string, { token?: string; cert?: string; key?: string; until: number }>();
    const running = new Map<string, Promise<{ token?: string; cert?: string; key?: string; until: number }>>();
    kc.users = kc.users.map((user) => {
        const exec = user.exec as ExecSpec | undefined;
        if (!exec) return user;
        const taken = { ...user, exec: undefined };
        TIMED.set(taken, exec);
        return taken;
    });
    kc.addAuthenticator({
        isAuthProvider: (user) => TIMED.has(user),
        applyAuthentication: async (user, opts) => {
            const held = cache.get(user.name);
            const credential = held && held.until > Date.now() ? held : await (running.get(user.name) ?? startPlugin(user));
            const o = opts as { headers?: Record<string, string>; cert?: string; key?: string };
            if (credential.cert) o.cert = credential.cert;
            if (credential.key) o.key = credential.key;
            if (credential.token) (o.headers ??= {}).Authorization = `Bearer ${credential.token}`;
        },
    });
    function startPlugin(user: k8s.User) {
        const p = runPlugin(TIMED.get(user)!, user.name, d).finally(() => running.delete(user.name));
        running.set(user.name, p);
        return p.then((c) => (cache.set(user.name, c), c));
    }
}

/** One run of an exec credential plugin, with its deadline; the credential, or a CredentialPluginError saying why not. */
function runPlugin(exec: ExecSpec, userName: string, d: Deadlines): Promise<{ token?: string; cert?: string; key?: string; until: number }> {
    const name = pluginName(exec);
    const where = `the kubeconfig's credential plugin for user ${userName}`;
    return new Promise((resolve, reject) => {
        const env = { ...process.env, ...Object.fromEntries((exec.env ?? []).map((e) => [e.name, String(e.value)])) };
        let stdout = "";
        let stderr = "";
        let settled = false;
        const done = (e: Error | undefined, value?: { token?: string; cert?: string; key?: string; until: number }) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            if (e) reject(e);
            else resolve(value!);
        };
        const child = spawn(exec.command, (exec.args ?? []).map(String), { env, stdio: ["ignore", "pipe", "pipe"] });
        const timer = setTimeout(() => {
            child.kill("SIGKILL");
            done(new CredentialPluginError(`${name} did not answer in ${seconds(d.execMs)} (${where}): it may be waiting for a login (aws sso login) or for the network; run it alone to see`));
        }, d.execMs);
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
            stdout += chunk;
            if (stdout.length > d.maxAnswerBytes) {
                child.kill("SIGKILL");
                done(new CredentialPluginError(`${name} printed more than ${d.maxAnswerBytes / 1e6} MB (${where}): that is no credential`));
            }
        });
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
        child.on("error", (e) => done(new CredentialPluginError(`${name} could not start (${where}): ${e.message}`)));
        child.on("close", (code, signal) => {
            if (code !== 0) {
                const said = stderr.trim().split("\n").filter(Boolean).slice(-3).join(" / ");
                return done(new CredentialPluginError(`${name} failed (${where}, exit ${code ?? signal}): ${said || "it said nothing on standard error"}`));
            }
            let status: { token?: unknown; clientCertificateData?: unknown; clientKeyData?: unknown; expirationTimestamp?: unknown } | undefined;
            try {
                status = JSON.parse(stdout)?.status;
            } catch {
                return done(new CredentialPluginError(`${name} printed no ExecCredential JSON (${where}): ${JSON.stringify(stdout.trim().slice(0, 80))}`));
            }
            const token = typeof status?.token === "string" && status.token ? status.token : undefined;
            const cert = typeof status?.clientCertificateData === "string" ? status.clientCertificateData : undefined;
            const key = typeof status?.clientKeyData === "string" ? status.clientKeyData : undefined;
            if (!token && !(cert && key)) return done(new CredentialPluginError(`${name} answered no token and no client certificate (${where}): its ExecCredential has no status.token`));
            const expires = typeof status?.expirationTimestamp === "string" ? Date.parse(status.expirationTimestamp) : NaN;
            done(undefined, { token, cert, key, until: Number.isNaN(expires) ? Infinity : expires - 60_000 });
        });
    });
}

/**
 * An API client of `Api` for `kc`'s current context whose requests each have the request deadline (sending to the
 * last byte of the answer; the credential plugin has its own, before it) and whose answers are read up to the bound.
 */
export function apiClient<T>(kc: KubeConfig, Api: new (config: k8s.Configuration) => T, d: Deadlines): T {
    timedCredentials(kc, d);
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error(`the kubeconfig's context ${kc.getCurrentContext()} names no cluster`);
    const config = k8s.createConfiguration({
        baseServer: new k8s.ServerConfiguration(cluster.server, {}),
        authMethods: { default: kc },
        promiseMiddleware: [
            {
                pre: async (request) => {
                    request.setSignal(AbortSignal.timeout(d.kubeRequestMs));
                    return request;
                },
                post: async (response) => new k8s.ResponseContext(response.httpStatusCode, response.headers, boundedBody(response.body, d.maxAnswerBytes)),
            },
        ],
    });
    return new Api(config);
}

/** A response body read up to `max` bytes: past it the read stops and fails, never holding the rest. */
function boundedBody(body: k8s.ResponseBody, max: number): k8s.ResponseBody {
    const read = async (): Promise<Buffer> => {
        const stream = body.stream();
        if (!stream) return body.binary();
        const chunks: Uint8Array[] = [];
        let bytes = 0;
        const reader = stream.getReader();
        for (;;) {
            const { done, value } = await reader.read();
            if (done) return Buffer.concat(chunks);
            bytes += value.length;
            if (bytes > max) {
                await reader.cancel().catch(() => undefined);
                throw new AnswerTooLarge(`the answer passed ${max / 1e6} MB`);
            }
            chunks.push(value);
        }
    };
    let once: Promise<Buffer> | undefined;
    const bytes = () => (once ??= read());
    return { binary: bytes, text: async () => (await bytes()).toString("utf8"), stream: () => null };
}

export function clusterOf(kc: KubeConfig, d: Deadlines): Cluster {
    const core = apiClient(kc, k8s.CoreV1Api, d);
    const apps = apiClient(kc, k8s.AppsV1Api, d);
    const call = <T>(what: string, fn: () => Promise<T>) => kubeCall(what, fn, d);
    return {
        listNodes: async (labelSelector) => listItems("list nodes", await call("list nodes", () => core.listNode({ labelSelector }))),
        listPods: async (labelSelector) => listItems("list pods", await call("list pods", () => core.listPodForAllNamespaces({ labelSelector }))),
        createNamespace: async (name, labels) => void (await call(`create namespace ${name}`, () => core.createNamespace({ body: { metadata: { name, labels } } }))),
        deleteNamespace: async (name) => void (await call(`delete namespace ${name}`, () => core.deleteNamespace({ name }))),
        namespaceExists: async (name) => {
            try {
                await call(`read namespace ${name}`, () => core.readNamespace({ name }));
                return true;
            } catch (e) {
                if ((e as KubeCallError).code === 404) return false;
                throw e;
            }
        },
        createDeployment: async (namespace, body) => void (await call(`create deployment ${namespace}/${(body as KubeObject).metadata?.name}`, () => apps.createNamespacedDeployment({ namespace, body: body as k8s.V1Deployment }))),
        scaleDeployment: async (namespace, name, replicas) =>
            void (await call(`scale deployment ${namespace}/${name}`, () => apps.replaceNamespacedDeploymentScale({ name, namespace, body: { metadata: { name, namespace }, spec: { replicas } } }))),
        watch: (path, query, onEvent, onEnd) => watchWithDeadlines(kc, path, query, onEvent, onEnd, d),
    };
}

/**
 * A watch with deadlines client-node's Watch lacks: the server is asked to end it after watchServerSeconds (the caller
 * resumes it), the request must be answered within the request deadline, and a stream that gives no event, bookmark
 * or end for watchIdleMs is ended as failed (a silent connection, or a server sending what is no event). An event
 * whose object has no metadata.name ends it too: it would be read as nothing.
 */
async function watchWithDeadlines(kc: KubeConfig, path: string, query: Record<string, string>, onEvent: (type: WatchEventType, object: KubeObject) => void, onEnd: (err?: Error) => void, d: Deadlines): Promise<() => void> {
    timedCredentials(kc, d);
    const what = `watch ${path}${query.labelSelector ? ` (${query.labelSelector})` : ""}`;
    const watcher = new k8s.Watch(kc);
    // client-node's own timer ends a watch that sends no byte for 30 s (a quiet watch included: the API server's
    // bookmarks come about once a minute); ours, on events, comes first. The field is private in its types only.
    (watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = d.watchIdleMs + d.kubeRequestMs;
    let ended = false;
    let controller: AbortController | undefined;
    let idle: NodeJS.Timeout | undefined;
    const end = (err?: Error) => {
        if (ended) return;
        ended = true;
        clearTimeout(idle);
        controller?.abort();
        onEnd(err);
    };
    const progress = () => {
        clearTimeout(idle);
        idle = setTimeout(() => end(new Error(`${what}: no event, bookmark or end for ${seconds(d.watchIdleMs)} (the API server was asked to end it after ${d.watchServerSeconds} s): the connection or the server stopped answering`)), d.watchIdleMs);
        idle.unref?.();
    };
    const answered = watcher.watch(
        path,
        { ...query, timeoutSeconds: String(d.watchServerSeconds) },
        (type, object) => {
            if (ended) return;
            const o = object as KubeObject;
            if (type !== "BOOKMARK" && type !== "ERROR" && typeof o?.metadata?.name !== "string") return end(new Error(`${what}: an event ${type} without metadata.name (${JSON.stringify(object)?.slice(0, 120)})`));
            progress();
            onEvent(type as WatchEventType, o);
        },
        (err) => end(err ? kubeError(what, err, d) : undefined),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new KubeCallError("deadline", `${what}: no answer within ${seconds(d.kubeRequestMs)}`)), d.kubeRequestMs);
    });
    try {
        controller = await Promise.race([answered, late]);
    } catch (e) {
        ended = true;
        // The request may still be answered later: its stream is then stopped at once, and heard by no one.
        answered.then((c) => c.abort(), () => undefined);
        throw kubeError(what, e, d);
    } finally {
        clearTimeout(timer);
    }
    if (ended) controller.abort();
    else progress();
    return () => {
        ended = true;
        clearTimeout(idle);
        controller!.abort();
    };
}

/** A timestamp the client returns (a Date) or a raw one (a string) as epoch milliseconds. */
export function epochMs(t: string | Date | undefined): number | undefined {
    if (t === undefined) return undefined;
    const ms = t instanceof Date ? t.getTime() : Date.parse(t);
    return Number.isNaN(ms) ? undefined : ms;
}

/** The objects preflight reads (read-only), by what they are. */
export type ReadKind =
    | "secrets"
    | "priorityclasses"
    | "poddisruptionbudgets"
    | "deployments"
    | "daemonsets"
    | "nodepools"
    | "ec2nodeclasses"
    | "nodes"
    | "pods"
    | "namespaces"
    | "mutatingwebhookconfigurations";

/** Lists objects of a kind: in `namespace` for namespaced kinds (every namespace for pods), with an optional label selector. */
export type ListObjects = (kind: ReadKind, namespace?: string, labelSelector?: string) => Promise<KubeObject[]>;

/**
 * Read-only lists over the typed APIs (no discovery requests), each with the request deadline and its answer
 * checked. A Karpenter kind whose CRD is not installed lists as empty: the API server answers 404 for its path.
 */
export function listerOf(kc: KubeConfig, d: Deadlines): ListObjects {
    const core = apiClient(kc, k8s.CoreV1Api, d);
    const apps = apiClient(kc, k8s.AppsV1Api, d);
    const policy = apiClient(kc, k8s.PolicyV1Api, d);
    const scheduling = apiClient(kc, k8s.SchedulingV1Api, d);
    const admission = apiClient(kc, k8s.AdmissionregistrationV1Api, d);
    const custom = apiClient(kc, k8s.CustomObjectsApi, d);
    const crd = async (what: string, group: string, plural: string, labelSelector?: string) => {
        try {
            return await kubeCall(what, () => custom.listClusterCustomObject({ group, version: "v1", plural, labelSelector }), d);
        } catch (e) {
            if ((e as KubeCallError).code === 404) return { items: [] };
            throw e;
        }
    };
    return async (kind, namespace = "", labelSelector) => {
        const q = { namespace, labelSelector };
        const what = `list ${kind}${namespace ? ` in ${namespace}` : ""}${labelSelector ? ` (${labelSelector})` : ""}`;
        const answer: unknown = await kubeCall(
            what,
            async () => {
                switch (kind) {
                    case "secrets": return core.listNamespacedSecret(q);
                    case "priorityclasses": return scheduling.listPriorityClass({ labelSelector });
                    case "poddisruptionbudgets": return policy.listNamespacedPodDisruptionBudget(q);
                    case "deployments": return apps.listNamespacedDeployment(q);
                    case "daemonsets": return apps.listNamespacedDaemonSet(q);
                    case "nodes": return core.listNode({ labelSelector });
                    case "pods": return core.listPodForAllNamespaces({ labelSelector });
                    case "namespaces": return core.listNamespace({ labelSelector });
                    case "mutatingwebhookconfigurations": return admission.listMutatingWebhookConfiguration({ labelSelector });
                    case "nodepools": return crd(what, "karpenter.sh", "nodepools", labelSelector);
                    case "ec2nodeclasses": return crd(what, "karpenter.k8s.aws", "ec2nodeclasses", labelSelector);
                }
            },
            d,
        );
        return listItems(what, answer);
    };
}
/** An API client error in one line: HTTP refusals by status, connection failures by their reason. */
export function apiError(e: unknown): string {
    const err = e as { code?: number | string; message?: string };
    if (err?.code === 401) return "HTTP 401 Unauthorized: the API server refused the credentials (expired token or SSO session? aws eks update-kubeconfig, aws sso login)";
    if (err?.code === 403) return "HTTP 403 Forbidden: the user may not list nodes and pods in all namespaces";
    // A request of ops/kube.ts says what it asked and what came back (no answer in time, a bad answer, a plugin's failure).
    if (e instanceof KubeCallError) return e.message;
    // The client's message for other statuses says no more than the status.
    if (typeof err?.code === "number") return `HTTP ${err.code} from the API server`;
    // client-node 2.x calls fetch, whose error says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND,
    // a certificate) is its cause.
    const cause = (e as { cause?: unknown })?.cause;
    return cause ? `${messageOf(e)}: ${messageOf(cause)}` : messageOf(e);
}
const messageOf = (e: unknown) => (e as Error)?.message ?? String(e);
