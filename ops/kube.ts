// The few Kubernetes API calls the cluster commands make, over @kubernetes/client-node 2.x (the official client: it
// reads kubeconfig contexts and EKS exec credentials). It is an ES module, which Node 22+ require()s from CommonJS.
import * as k8s from "@kubernetes/client-node";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

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

/** Switches `kc` to `context`; a string says why not (no such context, or another cluster than the stack's). */
export function useContext(kc: KubeConfig, context: string, clusterName: string): string | undefined {
    const ctx = kc.getContextObject(context);
    if (!ctx) return `--context: no context "${context}" in the kubeconfig; its contexts are ${kc.getContexts().map((c) => c.name).join(", ") || "none"}`;
    if (!namesCluster(ctx.cluster, clusterName)) {
        return `--context ${context} is cluster "${ctx.cluster}" (${kc.getCluster(ctx.cluster)?.server ?? "no server"}), not the stack's cluster ${clusterName} (notify-karpenter:cluster.name); refusing to touch it`;
    }
    kc.setCurrentContext(context);
    return undefined;
}

export function clusterOf(kc: KubeConfig): Cluster {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const watcher = new k8s.Watch(kc);
    return {
        listNodes: async (labelSelector) => (await core.listNode({ labelSelector })).items as KubeObject[],
        listPods: async (labelSelector) => (await core.listPodForAllNamespaces({ labelSelector })).items as KubeObject[],
        createNamespace: async (name, labels) => void (await core.createNamespace({ body: { metadata: { name, labels } } })),
        deleteNamespace: async (name) => void (await core.deleteNamespace({ name })),
        namespaceExists: async (name) => {
            try {
                await core.readNamespace({ name });
                return true;
            } catch (e) {
                if ((e as { code?: number }).code === 404) return false;
                throw e;
            }
        },
        createDeployment: async (namespace, body) => void (await apps.createNamespacedDeployment({ namespace, body: body as k8s.V1Deployment })),
        scaleDeployment: async (namespace, name, replicas) => void (await apps.replaceNamespacedDeploymentScale({ name, namespace, body: { metadata: { name, namespace }, spec: { replicas } } })),
        watch: async (path, query, onEvent, onEnd) => {
            const controller = await watcher.watch(path, query, (type, object) => onEvent(type as WatchEventType, object as KubeObject), (err) => onEnd(err ?? undefined));
            return () => controller.abort();
        },
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
 * Read-only lists over the typed APIs (no discovery requests). A Karpenter kind whose CRD is not installed lists as
 * empty: the API server answers 404 for its path.
 */
export function listerOf(kc: KubeConfig): ListObjects {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const policy = kc.makeApiClient(k8s.PolicyV1Api);
    const scheduling = kc.makeApiClient(k8s.SchedulingV1Api);
    const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const crd = async (group: string, plural: string, labelSelector?: string) => {
        try {
            return ((await custom.listClusterCustomObject({ group, version: "v1", plural, labelSelector })) as { items: KubeObject[] }).items;
        } catch (e) {
            if ((e as { code?: number }).code === 404) return [];
            throw e;
        }
    };
    return async (kind, namespace = "", labelSelector) => {
        const q = { namespace, labelSelector };
        const items: unknown[] = await (async () => {
            switch (kind) {
                case "secrets": return (await core.listNamespacedSecret(q)).items;
                case "priorityclasses": return (await scheduling.listPriorityClass({ labelSelector })).items;
                case "poddisruptionbudgets": return (await policy.listNamespacedPodDisruptionBudget(q)).items;
                case "deployments": return (await apps.listNamespacedDeployment(q)).items;
                case "daemonsets": return (await apps.listNamespacedDaemonSet(q)).items;
                case "nodes": return (await core.listNode({ labelSelector })).items;
                case "pods": return (await core.listPodForAllNamespaces({ labelSelector })).items;
                case "namespaces": return (await core.listNamespace({ labelSelector })).items;
                case "mutatingwebhookconfigurations": return (await admission.listMutatingWebhookConfiguration({ labelSelector })).items;
                case "nodepools": return crd("karpenter.sh", "nodepools", labelSelector);
                case "ec2nodeclasses": return crd("karpenter.k8s.aws", "ec2nodeclasses", labelSelector);
            }
        })();
        return items as KubeObject[];
    };
}
