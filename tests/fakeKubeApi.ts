// An in-process Kubernetes API for the cluster commands' tests. It serves the few endpoints they use (list and watch
// pods, nodes and NodeClaims; delete and merge-patch a NodeClaim; create and delete a namespace; create a ServiceAccount
// and a PodDisruptionBudget; list Events; create and scale a Deployment) over real HTTP on
// 127.0.0.1, so the real @kubernetes/client-node code runs against it. Scaling the Deployment starts a scripted
// sequence of watch events, released by a fake clock rather than wall time, so a test replays a 30-minute scale test
// in milliseconds and every time it reads is exact.
import * as http from "http";
import { LoopbackServer, hugeAnswer } from "./loopbackServer.ts";
import { KubeConfig } from "@kubernetes/client-node";

export type Resource = "pods" | "nodes" | "nodeclaims";
export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One step of a script, `at` seconds after the scale request that started it. */
export type Step =
    | { at: number; resource: Resource; type: EventType; object: any }
    /** The watch streams of `resource` end: "close" as the API server does after its timeout, "error" with an ERROR event. */
    | { at: number; resource: Resource; end: "close" | "error" };

export const iso = (ms: number) => new Date(ms).toISOString();

/** A clock that moves only when the code under test sleeps, and lets the fake API deliver what is due first. */
export class FakeClock {
    private listeners: ((now: number) => Promise<void>)[] = [];

    private t: number;

    constructor(t = Date.UTC(2026, 10, 30, 5, 10, 0)) {
        this.t = t;
    }

    now(): number {
        return this.t;
    }

    async sleep(ms: number): Promise<void> {
        this.t += ms;
        for (const l of this.listeners) await l(this.t);
    }

    onAdvance(listener: (now: number) => Promise<void>): void {
        this.listeners.push(listener);
    }
}

export interface FakeKubeApiOptions {
    nodes?: any[];
    pods?: any[];
    nodeclaims?: any[];
    /** The script to run when the Deployment is scaled to `replicas` (called at the request, with the clock's time). */
    onScale?: (replicas: number, namespace: string, now: number) => Step[];
    /** The script to run when a Deployment is created (called at the request, with the clock's time). */
    onCreateDeployment?: (namespace: string, deployment: any, now: number) => Step[];
    /** Answer the Deployment create with this HTTP status instead of 201. */
    createDeploymentStatus?: number;
    /** Answer every list and watch of pods, nodes and NodeClaims (and of `collections`) with this HTTP status (401, 403...) instead of 200; read once a request. */
    listStatus?: number;
    /**
     * Read-only lists served as they are, by list path (such as /apis/apps/v1/namespaces/x/daemonsets), filtered by
     * an equality labelSelector. A path that is not here answers 404, as for a CRD that is not installed.
     */
    collections?: Record<string, any[]>;
    /** Answer 401 to a request without `Authorization: Bearer <token>`, as the API server does. */
    token?: string;
    /** Answer every pod PATCH with this HTTP status (403, as for a refused admission) instead of applying it. */
    patchStatus?: number;
    /** Called as a pod PATCH arrives, before the fake looks at it: the pod deleted meanwhile (`remove`), say. */
    beforePodPatch?: (namespace: string, name: string) => void;
    /** Lists asked with `limit` answer at most this many items a page, with a `continue` token, as the API server does. */
    pageSize?: number;
    /** Answer every NodeClaim DELETE with this HTTP status (403, as for RBAC or a refused admission) instead of applying it. */
    deleteStatus?: number;
    /**
     * What Karpenter does with a deleted NodeClaim (cluster-scoped, finalized): it keeps its deletionTimestamp while its
     * node drains, then it and its node (status.nodeName) go `goneAfterSeconds` later on the fake clock (never when
     * undefined); `add` are NodeClaims created at the deletion, such as the replacement the provisioner launches.
     */
    onNodeClaimDelete?: (nodeClaim: any) => { goneAfterSeconds?: number; add?: any[] };
    /** Called as a NodeClaim DELETE arrives, before the fake looks at it: a controller changing the object meanwhile, say. */
    beforeNodeClaimDelete?: (name: string) => void;
    /** Called as a NodeClaim PATCH arrives, before the fake looks at it: a controller changing the object meanwhile, say. */
    beforeNodeClaimPatch?: (name: string, body: any) => void;
    /** What a controller does once a NodeClaim was patched (Karpenter taking a NodeClaim marked drifted, say). */
    onNodeClaimPatch?: (nodeClaim: any) => void;
    /** Answer every NodeClaim PATCH with this HTTP status (403, as for RBAC or a refused admission) instead of applying it. */
    nodeClaimPatchStatus?: number;
    /**
     * core/v1 Events the cluster holds (GET /api/v1/events, filtered by an equality fieldSelector on their fields, such
     * as involvedObject.kind=NodeClaim,reason=SpotInterrupted). The array is read at each request: a test may add to it.
     */
    events?: any[];
    /**
     * Accept connections and never answer, as an endpoint behind a route this machine does not have looks from the
     * client (a private EKS endpoint without the VPN: the SYN goes unanswered until the client gives up).
     */
    unresponsive?: boolean;
    /**
     * What a request meets instead of its answer, asked at each request (undefined: it is answered): the ways a
     * network and a server fail that the commands must survive.
     */
    fault?: (method: string, path: string, watch: boolean) => KubeFault | undefined;
    /** A list path neither the resources nor `collections` serve answers an empty List (not 404), as a cluster without such objects. */
    emptyLists?: boolean;
    /** A watch asked with allowWatchBookmarks gets a BOOKMARK this often (real milliseconds), as the API server sends them. */
    bookmarkEveryMs?: number;
}

/**
 * hang: the request is read and never answered; trickle: 200, then a byte every 10 ms, never ending; garbage: 200 with
 * a proxy's HTML page; huge: 200 with `bytes` of JSON-looking body; no-items: 200 with a List without items; nameless:
 * 200 with a List holding an object without metadata; silent: 200 and then nothing (a watch that never sends an event);
 * bad-event: a watch whose one event's object has no metadata.
 */
export type KubeFault = { kind: "hang" | "trickle" | "garbage" | "no-items" | "nameless" | "silent" | "bad-event" } | { kind: "huge"; bytes: number };

interface Watcher {
    resource: Resource;
    namespace?: string;
    selector: Record<string, string | undefined>;
    res: http.ServerResponse;
}

const PATHS: [RegExp, Resource, boolean][] = [
    [/^\/api\/v1\/nodes$/, "nodes", false],
    [/^\/api\/v1\/pods$/, "pods", false],
    [/^\/api\/v1\/namespaces\/([^/]+)\/pods$/, "pods", true],
    [/^\/apis\/karpenter\.sh\/v1\/nodeclaims$/, "nodeclaims", false],
];

export class FakeKubeApi extends LoopbackServer {
    /** "METHOD /path" of every request, in order. */
    readonly requests: string[] = [];
    readonly namespaces = new Set<string>();
    private readonly objects: Record<Resource, Map<string, any>> = { pods: new Map(), nodes: new Map(), nodeclaims: new Map() };
    private readonly history: { version: number; resource: Resource; type: EventType; object: any }[] = [];
    private watchers: Watcher[] = [];
    private pending: (Step & { due: number })[] = [];
    private version = 100;

    private readonly clock: FakeClock;
    private readonly opts: FakeKubeApiOptions;

    constructor(clock: FakeClock, opts: FakeKubeApiOptions = {}) {
        super();
        this.clock = clock;
        this.opts = opts;
        for (const r of ["pods", "nodes", "nodeclaims"] as const) for (const o of opts[r] ?? []) this.objects[r].set(key(o), this.versioned(o));
        clock.onAdvance((now) => this.release(now));
    }

    override async stop(): Promise<void> {
        for (const w of this.watchers) w.res.destroy();
        for (const res of this.faulted) res.destroy();
        await super.stop();
    }

    /** A kubeconfig whose context `staging` is the staging EKS cluster (named by its ARN, as aws eks update-kubeconfig does) and `other` another cluster. */
    kubeConfig(): KubeConfig {
        const arn = "arn:aws:eks:ca-central-1:123456789012:cluster/notification-canada-ca-staging-eks-cluster";
        const kc = new KubeConfig();
        kc.loadFromOptions({
            clusters: [
                // client-node refuses plain HTTP unless TLS checks are off; the fake serves HTTP on 127.0.0.1 only.
                { name: arn, server: this.url, skipTLSVerify: true },
                { name: "kind-scratch", server: this.url, skipTLSVerify: true },
            ],
            users: [{ name: "tester", token: "t" }],
            contexts: [
                { name: "staging", cluster: arn, user: "tester" },
                { name: "other", cluster: "kind-scratch", user: "tester" },
            ],
            currentContext: "other",
        });
        return kc;
    }

    private versioned(o: any): any {
        return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.version) } };
    }

    /** Applies the steps that are due, writes them to the watch streams, and returns once the writes are flushed. */
    private async release(now: number): Promise<void> {
        const due = this.pending.filter((s) => s.due <= now);
        if (due.length === 0) return;
        this.pending = this.pending.filter((s) => s.due > now);
        const writes: Promise<void>[] = [];
        for (const step of due) {
            if ("end" in step) {
                for (const w of this.watchers.filter((x) => x.resource === step.resource)) {
                    if (step.end === "error") writes.push(write(w.res, { type: "ERROR", object: { kind: "Status", status: "Failure", code: 500, message: "etcdserver: request timed out" } }));
                    w.res.end();
                }
                this.watchers = this.watchers.filter((x) => x.resource !== step.resource);
                continue;
            }
            const object = this.versioned(step.object);
            if (step.type === "DELETED") this.objects[step.resource].delete(key(object));
            else this.objects[step.resource].set(key(object), object);
            const event = { version: this.version, resource: step.resource, type: step.type, object };
            this.history.push(event);
            for (const w of this.watchers.filter((x) => matches(x, step.resource, object))) writes.push(write(w.res, { type: step.type, object }));
        }
        await Promise.all(writes);
        // Let the client read and parse what was written before the clock moves on.
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 1));
    }

    /** Runs `steps` from now on (their `at` in seconds from now), as a scripted Deployment scale does: what a cluster does after an outside event. */
    schedule(steps: Step[]): void {
        const now = this.clock.now();
        this.pending.push(...steps.map((s) => ({ ...s, due: now + s.at * 1000 })));
    }

    /** ServiceAccounts created, as namespace/name. */
    readonly serviceAccounts: string[] = [];
    /** PodDisruptionBudgets created, as the request's body. */
    readonly budgets: any[] = [];

    /** Creates or replaces an object at once (no watch event), as a controller would: a NodeClaim that initializes, say. */
    put(resource: Resource, object: any): void {
        this.objects[resource].set(key(object), this.versioned(object));
    }

    /** Removes an object at once (no watch event), as a deletion that completes between a list and the next request. */
    remove(resource: Resource, object: any): void {
        this.objects[resource].delete(key(object));
    }

    /** The NodeClaim as the fake holds it now (undefined once gone). */
    nodeClaim(name: string): any {
        return this.objects.nodeclaims.get(`/${name}`);
    }

    /**
     * A DELETE of a NodeClaim with its DeleteOptions: 404 when absent, 409 when a uid or resourceVersion precondition
     * does not hold (the API server's "Precondition failed" / "the object has been modified"), else the finalizer
     * keeps it with a deletionTimestamp until Karpenter is done (`onNodeClaimDelete`).
     */
    private deleteNodeClaim(name: string, body: any, res: http.ServerResponse): void {
        this.opts.beforeNodeClaimDelete?.(name);
        if (this.opts.deleteStatus) return status(res, this.opts.deleteStatus, `nodeclaims.karpenter.sh "${name}" is forbidden`);
        const nc = this.objects.nodeclaims.get(`/${name}`);
        if (!nc) return status(res, 404, `nodeclaims.karpenter.sh "${name}" not found`);
        const pre = body?.preconditions ?? {};
        if (pre.uid !== undefined && pre.uid !== nc.metadata.uid) {
            return status(res, 409, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${nc.metadata.uid}`);
        }
        if (pre.resourceVersion !== undefined && pre.resourceVersion !== nc.metadata.resourceVersion) {
            return status(res, 409, `Operation cannot be fulfilled on nodeclaims.karpenter.sh "${name}": the object has been modified; please apply your changes to the latest version and try again`);
        }
        if (nc.metadata.deletionTimestamp) return reply(res, 200, nc);
        const deleting = this.versioned({ ...nc, metadata: { ...nc.metadata, deletionTimestamp: iso(this.clock.now()) } });
        this.objects.nodeclaims.set(key(deleting), deleting);
        const after = this.opts.onNodeClaimDelete?.(deleting) ?? {};
        for (const o of after.add ?? []) this.objects.nodeclaims.set(key(o), this.versioned(o));
        this.goneAfter(deleting, after.goneAfterSeconds);
        reply(res, 200, deleting);
    }

    /**
     * Karpenter deleting a NodeClaim itself (a drift command once the replacement is Initialized): a deletionTimestamp at
     * once, then it and its node go `goneAfterSeconds` later on the fake clock (never when undefined).
     */
    karpenterDeletes(name: string, goneAfterSeconds?: number): void {
        const nc = this.objects.nodeclaims.get(`/${name}`);
        const deleting = this.versioned({ ...nc, metadata: { ...nc.metadata, deletionTimestamp: iso(this.clock.now()) } });
        this.objects.nodeclaims.set(key(deleting), deleting);
        this.goneAfter(deleting, goneAfterSeconds);
    }

    /** A NodeClaim being deleted, and its node, gone `seconds` from now on the fake clock (never when undefined). */
    private goneAfter(nodeClaim: any, seconds: number | undefined): void {
        if (seconds === undefined) return;
        const node = nodeClaim.status?.nodeName ? [{ at: seconds, resource: "nodes" as const, type: "DELETED" as const, object: { metadata: { name: nodeClaim.status.nodeName } } }] : [];
        this.schedule([{ at: seconds, resource: "nodeclaims", type: "DELETED", object: nodeClaim }, ...node]);
    }

    /**
     * A JSON merge patch of a NodeClaim's metadata.annotations (RFC 7386; null removes a key), as the API server takes
     * it: 415 for another content type, 404 when absent, 409 when the patch's metadata.resourceVersion is not the
     * object's (optimistic concurrency, "the object has been modified").
     */
    private patchNodeClaim(name: string, body: any, contentType: string | undefined, res: http.ServerResponse): void {
        this.opts.beforeNodeClaimPatch?.(name, body);
        if (contentType !== "application/merge-patch+json") return status(res, 415, `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
        if (this.opts.nodeClaimPatchStatus) return status(res, this.opts.nodeClaimPatchStatus, `nodeclaims.karpenter.sh "${name}" is forbidden`);
        const nc = this.objects.nodeclaims.get(`/${name}`);
        if (!nc) return status(res, 404, `nodeclaims.karpenter.sh "${name}" not found`);
        const rv = body?.metadata?.resourceVersion;
        if (rv !== undefined && rv !== nc.metadata.resourceVersion) {
            return status(res, 409, `Operation cannot be fulfilled on nodeclaims.karpenter.sh "${name}": the object has been modified; please apply your changes to the latest version and try again`);
        }
        const annotations = { ...nc.metadata.annotations };
        for (const [k, v] of Object.entries(body?.metadata?.annotations ?? {})) {
            if (v === null) delete annotations[k];
            else annotations[k] = v;
        }
        const patched = this.versioned({ ...nc, metadata: { ...nc.metadata, annotations } });
        this.objects.nodeclaims.set(key(patched), patched);
        this.patches.push({ name, annotations: body?.metadata?.annotations ?? {} });
        reply(res, 200, patched);
        this.opts.onNodeClaimPatch?.(patched);
    }

    /** Every NodeClaim patch applied, in order: the name and the annotations it set. */
    readonly patches: { name: string; annotations: Record<string, unknown> }[] = [];

    /** The pod as the fake holds it now. */
    pod(namespace: string, name: string): any {
        return this.objects.pods.get(`${namespace}/${name}`);
    }

    protected handle(req: http.IncomingMessage, res: http.ServerResponse): void {
        const url = new URL(req.url ?? "/", "http://fake");
        this.requests.push(`${req.method} ${url.pathname}`);
        if (this.opts.unresponsive) return;
        const fault = this.opts.fault?.(req.method ?? "GET", url.pathname, url.searchParams.get("watch") === "true");
        if (fault) return this.answerFault(fault, res);
        let body = "";
        req.on("data", (chunk) => (body += chunk));
        req.on("end", () => {
            if (this.opts.token !== undefined && req.headers.authorization !== `Bearer ${this.opts.token}`) return status(res, 401, "Unauthorized");
            this.route(req.method ?? "GET", url, body ? JSON.parse(body) : undefined, res, req.headers["content-type"]);
        });
    }

    /** What a planted fault answers. */
    private answerFault(f: KubeFault, res: http.ServerResponse): void {
        this.faulted.push(res);
        switch (f.kind) {
            case "hang":
                return;
            case "trickle": {
                res.writeHead(200, { "Content-Type": "application/json" });
                const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 10);
                res.on("close", () => clearInterval(timer));
                return;
            }
            case "garbage":
                res.writeHead(200, { "Content-Type": "text/html" });
                return void res.end("<html><head><title>Proxy Authorization Required</title></head><body>Sign in to continue</body></html>");
            case "huge":
                return hugeAnswer(res, "application/json", f.bytes);
            case "no-items":
                return reply(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.version) } });
            case "nameless":
                return reply(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.version) }, items: [{ kind: "Pod", spec: { nodeName: "n" } }] });
            case "silent":
                res.writeHead(200, { "Content-Type": "application/json" });
                return void res.flushHeaders();
            case "bad-event":
                res.writeHead(200, { "Content-Type": "application/json" });
                return void res.write(JSON.stringify({ type: "ADDED", object: { kind: "Pod", spec: {} } }) + "\n");
        }
    }

    /** Answers a fault left open (hung, silent, trickling): stop() ends them. */
    private readonly faulted: http.ServerResponse[] = [];

    /** A JSON merge patch of a pod's metadata (RFC 7386; null removes a key), as `kubectl annotate` sends. */
    private patchPod(namespace: string, name: string, body: any, contentType: string | undefined, res: http.ServerResponse): void {
        this.opts.beforePodPatch?.(namespace, name);
        if (contentType !== "application/merge-patch+json") return status(res, 415, `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
        const pod = this.objects.pods.get(`${namespace}/${name}`);
        if (!pod) return status(res, 404, `pods "${name}" not found`);
        if (this.opts.patchStatus) return status(res, this.opts.patchStatus, `admission webhook denied the request`);
        const annotations = { ...pod.metadata.annotations };
        for (const [k, v] of Object.entries(body.metadata?.annotations ?? {})) {
            if (v === null) delete annotations[k];
            else annotations[k] = v;
        }
        const patched = this.versioned({ ...pod, metadata: { ...pod.metadata, annotations } });
        this.objects.pods.set(key(patched), patched);
        reply(res, 200, patched);
    }

    private route(method: string, url: URL, body: any, res: http.ServerResponse, contentType?: string): void {
        const p = url.pathname;
        // The API server's version (anyone authenticated may read it: ClusterRole system:public-info-viewer).
        if (p === "/version" && method === "GET") return reply(res, 200, { major: "1", minor: "31", gitVersion: "v1.31.4-eks-2d5f260", platform: "linux/amd64" });
        const podPath = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(p);
        if (podPath && method === "PATCH") return this.patchPod(decodeURIComponent(podPath[1]), decodeURIComponent(podPath[2]), body, contentType, res);
        const nodeClaimPath = /^\/apis\/karpenter\.sh\/v1\/nodeclaims\/([^/]+)$/.exec(p);
        if (nodeClaimPath && method === "DELETE") return this.deleteNodeClaim(decodeURIComponent(nodeClaimPath[1]), body, res);
        if (nodeClaimPath && method === "PATCH") return this.patchNodeClaim(decodeURIComponent(nodeClaimPath[1]), body, contentType, res);
        const ns = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(p)?.[1];
        const deployment = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments(?:\/([^/]+)\/scale)?$/.exec(p);
        if (method === "POST" && p === "/api/v1/namespaces") {
            this.namespaces.add(body.metadata.name);
            return reply(res, 201, body);
        }
        if (ns && method === "GET") return this.namespaces.has(ns) ? reply(res, 200, { metadata: { name: ns } }) : status(res, 404, `namespaces "${ns}" not found`);
        if (ns && method === "DELETE") {
            this.namespaces.delete(ns);
            return reply(res, 200, { kind: "Status", status: "Success" });
        }
        if (deployment && method === "POST" && !deployment[2]) {
            const code = this.opts.createDeploymentStatus ?? 201;
            if (code !== 201) return status(res, code, "admission webhook denied the request");
            this.schedule(this.opts.onCreateDeployment?.(deployment[1], body, this.clock.now()) ?? []);
            return reply(res, 201, body);
        }
        const serviceAccounts = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts$/.exec(p);
        if (serviceAccounts && method === "POST") {
            if (!this.namespaces.has(serviceAccounts[1])) return status(res, 404, `namespaces "${serviceAccounts[1]}" not found`);
            this.serviceAccounts.push(`${serviceAccounts[1]}/${body.metadata.name}`);
            return reply(res, 201, body);
        }
        const budgets = /^\/apis\/policy\/v1\/namespaces\/([^/]+)\/poddisruptionbudgets$/.exec(p);
        if (budgets && method === "POST") {
            if (!this.namespaces.has(budgets[1])) return status(res, 404, `namespaces "${budgets[1]}" not found`);
            this.budgets.push(body);
            return reply(res, 201, body);
        }
        if (p === "/api/v1/events" && method === "GET") {
            // Field selectors on events: equality terms on their fields (the API server's fieldSelector, a=b,c=d).
            const terms = (url.searchParams.get("fieldSelector") ?? "").split(",").filter(Boolean).map((t) => t.split("="));
            const field = (o: any, path: string) => path.split(".").reduce((v, k) => v?.[k], o);
            const items = (this.opts.events ?? []).filter((ev) => terms.every(([k, v]) => String(field(ev, k)) === v));
            return reply(res, 200, { kind: "EventList", apiVersion: "v1", metadata: { resourceVersion: String(this.version) }, items });
        }
        if (deployment && method === "PUT" && deployment[2]) {
            const replicas = body.spec.replicas;
            const now = this.clock.now();
            this.pending.push(...(this.opts.onScale?.(replicas, deployment[1], now) ?? []).map((s) => ({ ...s, due: now + s.at * 1000 })));
            return reply(res, 200, { ...body, status: { replicas } });
        }
        for (const [pattern, resource, namespaced] of PATHS) {
            const m = pattern.exec(p);
            if (!m || method !== "GET") continue;
            // Read once a request: a test may answer it with a getter that fails one list only.
            const refused = this.opts.listStatus;
            if (refused) return status(res, refused, refused === 401 ? "Unauthorized" : `cannot list ${resource}`);
            const selector = parseSelector(url.searchParams.get("labelSelector"));
            const w: Watcher = { resource, namespace: namespaced ? m[1] : undefined, selector, res };
            if (url.searchParams.get("watch") === "true") return this.startWatch(w, url.searchParams.get("resourceVersion"), url.searchParams.get("allowWatchBookmarks") === "true");
            // The one field selector the cluster commands use.
            const phase = /^status\.phase=(\w+)$/.exec(url.searchParams.get("fieldSelector") ?? "")?.[1];
            const items = [...this.objects[resource].values()].filter((o) => matches(w, resource, o) && (phase === undefined || o.status?.phase === phase));
            const from = Number(url.searchParams.get("continue") ?? 0);
            const size = url.searchParams.has("limit") && this.opts.pageSize ? this.opts.pageSize : items.length;
            const more = from + size < items.length ? { continue: String(from + size) } : {};
            return reply(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.version), ...more }, items: items.slice(from, from + size) });
        }
        const collection = method === "GET" ? this.opts.collections?.[p] : undefined;
        if (collection) {
            if (this.opts.listStatus) return status(res, this.opts.listStatus, this.opts.listStatus === 401 ? "Unauthorized" : `cannot list ${p}`);
            const selector = parseSelector(url.searchParams.get("labelSelector"));
            const items = collection.filter((o) => labelsMatch(selector, o));
            return reply(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.version) }, items });
        }
        if (this.opts.emptyLists && method === "GET") return reply(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.version) }, items: [] });
        status(res, 404, `the fake API does not serve ${method} ${p}`);
    }

    /** Without a version: the current objects as ADDED, then changes; with one: every change after it. */
    private startWatch(w: Watcher, since: string | null, bookmarks = false): void {
        w.res.writeHead(200, { "Content-Type": "application/json" });
        w.res.flushHeaders();
        if (bookmarks && this.opts.bookmarkEveryMs) {
            const timer = setInterval(() => void write(w.res, { type: "BOOKMARK", object: { kind: "Bookmark", apiVersion: "v1", metadata: { resourceVersion: String(this.version) } } }), this.opts.bookmarkEveryMs);
            w.res.on("close", () => clearInterval(timer));
        }
        const backlog =
            since === null
                ? [...this.objects[w.resource].values()].filter((o) => matches(w, w.resource, o)).map((object) => ({ type: "ADDED", object }))
                : this.history.filter((e) => e.version > Number(since) && matches(w, e.resource, e.object));
        for (const e of backlog) void write(w.res, { type: e.type, object: e.object });
        this.watchers.push(w);
    }
}

function key(o: any): string {
    return `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}

function matches(w: Watcher, resource: Resource, o: any): boolean {
    if (w.resource !== resource) return false;
    if (w.namespace !== undefined && o.metadata.namespace !== w.namespace) return false;
    return labelsMatch(w.selector, o);
}

function labelsMatch(selector: Record<string, string | undefined>, o: any): boolean {
    return Object.entries(selector).every(([k, v]) => (v === undefined ? o.metadata.labels?.[k] !== undefined : o.metadata.labels?.[k] === v));
}

/** Equality terms (`key=value`) and existence terms (`key`, value undefined). */
function parseSelector(s: string | null): Record<string, string | undefined> {
    return Object.fromEntries((s ?? "").split(",").filter(Boolean).map((term) => [term.split("=")[0], term.includes("=") ? term.split("=")[1] : undefined]));
}

function write(res: http.ServerResponse, event: object): Promise<void> {
    return new Promise((resolve) => res.write(JSON.stringify(event) + "\n", () => resolve()));
}

function reply(res: http.ServerResponse, code: number, body: object): void {
    res.writeHead(code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
}

function status(res: http.ServerResponse, code: number, message: string): void {
    reply(res, code, { kind: "Status", apiVersion: "v1", status: "Failure", message, code });
}
