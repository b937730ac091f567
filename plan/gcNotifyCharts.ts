// One owner per field. GC Notify's Helm releases and this program's patches set fields of the same pod templates,
// and Helm 3 puts back every field its chart renders at each upgrade (a three-way merge). So for every field a patch
// sets, the chart must render the same value: the plan writes, per GC Notify release, a values file that makes it
// so, by the charts' own values keys. The patches stay, as guards that agree with the charts. A field the chart does
// not render (the burst Deployments' tolerations, affinity and labels) has one owner already: the patch.
//
// Every key below is read from cds-snc/notification-manifests at GC_NOTIFY_MANIFESTS (helmfile/helmfile.yaml.gotmpl
// for the releases, the chart or override named beside each) and checked by rendering the charts with a real Helm
// (docs/migration.md, step 1).
import { stringify } from "yaml";
import { type CeleryWorkloadPlacementArgs, burstPodTemplate, daemonSetPodTemplate, stablePodTemplate, startupTaintFor, waitsFor } from "../components/models/celeryPlacement.ts";
import { type Taint, type Toleration, tolerates } from "../components/models/scheduling.ts";

export const GC_NOTIFY_MANIFESTS = "cds-snc/notification-manifests@609853e2";

/** The pod-template fields a patch sets; `labels` are the template's metadata.labels, the others its spec's. */
export type Field = "labels" | "nodeSelector" | "affinity" | "tolerations" | "priorityClassName" | "terminationGracePeriodSeconds" | "containers" | "preStop";

/**
 * How a chart renders one field: from a values key, hardcoded in a template, or not at all (the patch owns it). A
 * key with `templateChange` is one the chart gets from a template change the plan hands over: until GC Notify makes
 * it, the chart ignores the key and renders its hardcoded value.
 */
export type FieldSource = { key: string[]; templateChange?: string } | { fixed: unknown; where: string } | { absent: string };

export interface ChartWorkload {
    release: string;
    kind: "Deployment" | "DaemonSet";
    namespace: string;
    name: string;
    fields: Partial<Record<Field, FieldSource>>;
    /** The chart's own PodDisruptionBudget switch for this workload. */
    budgetKey?: string[];
    /** Values the workload's name needs (a fullnameOverride). */
    requires?: Record<string, unknown>;
}

const NOTIFY = "notification-canada-ca";
const key = (...k: string[]): FieldSource => ({ key: k });
const absent = (where: string): FieldSource => ({ absent: where });

/** The preStop command notify-celery renders for every worker, with no values key (templates/deployment.yaml:72-78). */
export const GC_NOTIFY_PRESTOP = ["/bin/bash", "-c", "/app/scripts/run_celery_exit.sh"];

/** Where the plan writes the template change that lets notify-celery render each worker's preStop from its values. */
export const CELERY_PRESTOP_TEMPLATE_FILE = "gc-notify-handover/celery-shutdown.md";

/**
 * The change to charts/notify-celery/templates/deployment.yaml:75-78 (`command:` and its three items): the worker's
 * preStop from `nodes.<key>.deployment.preStopCommand`, today's script when a node has none. Checked by rendering
 * the chart at 609853e2 with it (docs/celery-shutdown.md).
 */
export const CELERY_PRESTOP_TEMPLATE = [
    "                command:",
    '                {{- toYaml (default (list "/bin/bash" "-c" "/app/scripts/run_celery_exit.sh") $node.deployment.preStopCommand) | nindent 16 }}',
].join("\n");

/**
 * notify-celery's `nodes` entries by Deployment suffix (charts/notify-celery/values.yaml: `nodes.<key>.name`). Two
 * keys differ from their names; a key that is not there adds an entry the templates cannot render (MW-W5).
 */
const CELERY_NODES: Record<string, string> = {
    beat: "beat",
    "core-tasks-static": "core-tasks-static",
    "email-send-static": "email-send-static",
    "sms-send-static": "sms-send-static",
    "sms-dedicated-static": "sms-dedicated-static",
    "generate-reports-static": "generate-reports-static",
    "core-tasks-burst": "core-tasks-burst",
    "delivery-receipts-burst": "delivery-receipts-burst",
    "email-send-burst": "email-burst",
    "sms-send-burst": "sms-burst",
    "nightly-burst": "nightly-burst",
    "periodic-static": "periodic-static",
    "periodic-burst": "periodic-burst",
};

/** charts/notify-celery/templates/deployment.yaml (and deployment-beat.yaml) render these from `nodes.<key>.deployment`. */
function celeryWorkload(name: string, node: string): ChartWorkload {
    const d = (field: string) => key("nodes", node, "deployment", field);
    const notRendered = absent("charts/notify-celery/templates/deployment.yaml renders no tolerations, affinity or extra pod labels");
    return {
        release: "notify-celery",
        kind: "Deployment",
        namespace: NOTIFY,
        name: `notify-celery-${name}`,
        fields: {
            nodeSelector: d("nodeSelector"),
            priorityClassName: d("priorityClassName"),
            terminationGracePeriodSeconds: d("terminationGracePeriodSeconds"),
            tolerations: notRendered,
            affinity: notRendered,
            labels: notRendered,
            // The worker container's preStop: hardcoded as run_celery_exit.sh, which SIGKILLs the worker about 10 s after
            // SIGTERM, until the template renders this key (CELERY_PRESTOP_TEMPLATE).
            preStop: { ...d("preStopCommand"), templateChange: CELERY_PRESTOP_TEMPLATE_FILE },
        },
        budgetKey: ["nodes", node, "pdb", "pdbEnabled"],
    };
}

/** The web charts render nodeSelector and affinity from top-level keys (charts/<chart>/templates/deployment.yaml). */
function webWorkload(release: string, priority: FieldSource): ChartWorkload {
    return { release, kind: "Deployment", namespace: NOTIFY, name: release, fields: { nodeSelector: key("nodeSelector"), affinity: key("affinity"), priorityClassName: priority } };
}

const agent = (release: string, namespace: string, name: string, fields: ChartWorkload["fields"], requires?: Record<string, unknown>): ChartWorkload => ({ release, kind: "DaemonSet", namespace, name, fields, requires });

/** Every GC Notify workload the stacks patch, with how its chart renders each field the patch sets. */
export const GC_NOTIFY_WORKLOADS: ChartWorkload[] = [
    ...Object.entries(CELERY_NODES).map(([name, node]) => celeryWorkload(name, node)),
    // notify-api and notify-admin put priorityClassName on the Deployment's spec (templates/deployment.yaml:11), where
    // the API server drops it: their pods get none from the chart.
    webWorkload("notify-api", absent("charts/notify-api/templates/deployment.yaml:11 renders it outside the pod template")),
    webWorkload("notify-admin", absent("charts/notify-admin/templates/deployment.yaml:11 renders it outside the pod template")),
    webWorkload("notify-document-download", absent("charts/notify-document-download/templates/deployment.yaml renders none")),
    webWorkload("notify-documentation", key("priorityClassName")),
    // fluent/fluent-bit 0.48.5, overrides/system/fluentbit-agent.yaml.gotmpl.
    agent("fb-agent", "amazon-cloudwatch", "fb-agent-fluent-bit", { tolerations: key("tolerations"), priorityClassName: key("priorityClassName") }),
    // charts/aws-cloudwatch/templates/cwagent-daemonset.yaml: tolerations from values; priority and resources fixed.
    agent("aws-cloudwatch-agent", "amazon-cloudwatch", "aws-cloudwatch-agent", {
        tolerations: key("tolerations"),
        priorityClassName: { fixed: "system-node-critical", where: "charts/aws-cloudwatch/templates/cwagent-daemonset.yaml:15" },
        containers: {
            fixed: [{ name: "cloudwatch-agent", resources: { limits: { cpu: "300m", memory: "300Mi" }, requests: { cpu: "300m", memory: "300Mi" } } }],
            where: "charts/aws-cloudwatch/templates/cwagent-daemonset.yaml:33-39",
        },
    }),
    // secrets-store-csi-driver-provider-aws 3.1.0 and its subchart secrets-store-csi-driver 1.6.0,
    // overrides/system/aws-secrets.yaml.gotmpl. The provider's default name makes a startup taint key too long.
    agent("aws-secrets-provider", "kube-system", "secrets-provider-aws", { tolerations: key("tolerations"), priorityClassName: key("priorityClassName") }, { fullnameOverride: "secrets-provider-aws" }),
    agent("aws-secrets-provider", "kube-system", "secrets-store-csi-driver", {
        tolerations: key("secrets-store-csi-driver", "linux", "tolerations"),
        priorityClassName: key("secrets-store-csi-driver", "linux", "priorityClassName"),
    }),
    // vmware-tanzu/velero 11.1.1, overrides/system/velero.yaml.gotmpl.
    agent("velero", "velero", "node-agent", { tolerations: key("nodeAgent", "tolerations"), priorityClassName: key("nodeAgent", "priorityClassName") }),
    // falcosecurity/falco 8.0.1, overrides/system/falco.yaml.gotmpl.
    agent("falco", "falco", "falco", { tolerations: key("tolerations"), priorityClassName: key("podPriorityClassName") }),
    // SigNoz k8s-infra 0.15.1, overrides/system/signoz-k8s.yaml.gotmpl.
    agent("signoz-k8s", "signoz", "signoz-k8s-k8s-infra-otel-agent", { tolerations: key("otelAgent", "tolerations"), priorityClassName: key("otelAgent", "priorityClassName") }),
    // okgolove/aws-xray 4.0.8, overrides/system/xray-daemon.yaml.gotmpl.
    agent("xray-daemon", "xray", "xray-daemon-aws-xray", { tolerations: key("tolerations"), priorityClassName: key("priorityClassName") }),
];

/** The GC Notify releases a values file can be written for, in the helmfile's names. */
export const GC_NOTIFY_RELEASES = [...new Set(GC_NOTIFY_WORKLOADS.map((w) => w.release))];

/** One workload the stack patches, and the value of each field its patch sets (null: a nodeSelector key removed). */
export interface PatchedWorkload {
    kind: "Deployment" | "DaemonSet";
    namespace: string;
    name: string;
    role: "burst" | "stable" | "agent";
    fields: Partial<Record<Field, unknown>>;
}

/** The nodeSelector key GC Notify's chart puts on burst workers (charts/notify-celery/values.yaml:145-146 and others). */
export const CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type";

/** What each patch sets, from the same functions the component builds its patches with. */
export function patchedWorkloads(a: CeleryWorkloadPlacementArgs): PatchedWorkload[] {
    const burst = a.burst.deployments.map((d): PatchedWorkload => {
        const { containers, ...spec } = burstPodTemplate(a, d).spec;
        const labels = burstPodTemplate(a, d).metadata.labels;
        // The patch leaves nodeSelector to the chart (it sets none): the chart must drop its capacity-type key.
        return { kind: "Deployment", namespace: a.namespace, name: d.name, role: "burst", fields: { labels, ...spec, preStop: containers[0].lifecycle.preStop.exec.command, nodeSelector: { [CAPACITY_TYPE_KEY]: null } } };
    });
    const stable = a.stableDeployments.map((name): PatchedWorkload => ({ kind: "Deployment", namespace: a.namespace, name, role: "stable", fields: { ...stablePodTemplate(a).spec } }));
    const agents = a.nodeDaemonSets
        .filter((ds) => !ds.addOn)
        .map((ds): PatchedWorkload => ({ kind: "DaemonSet", namespace: ds.namespace, name: ds.name, role: "agent", fields: { ...daemonSetPodTemplate(a, ds).spec } }));
    return [...burst, ...stable, ...agents];
}

const chartWorkloadOf = (w: { kind: string; namespace: string; name: string }) => GC_NOTIFY_WORKLOADS.find((c) => c.kind === w.kind && c.namespace === w.namespace && c.name === w.name);

/** Sets `value` at `path` in `values`, creating the maps on the way. */
function setIn(values: Record<string, any>, path: string[], value: unknown): void {
    const last = path[path.length - 1];
    const parent = path.slice(0, -1).reduce((m, k) => (m[k] ??= {}), values);
    parent[last] = value;
}

export interface GcNotifyValues {
    /** Release name to its values, ready for one more `-f`. */
    values: Record<string, Record<string, unknown>>;
    /** Fields no values key can set: the chart hardcodes a different value, or no GC Notify chart is known. */
    notes: string[];
}

/** The values that make each GC Notify chart render every field the stack's patches set, as the patch sets it. */
export function gcNotifyValues(a: CeleryWorkloadPlacementArgs): GcNotifyValues {
    const values: Record<string, Record<string, any>> = {};
    const notes: string[] = [];
    for (const w of patchedWorkloads(a)) {
        const chart = chartWorkloadOf(w);
        if (!chart) {
            notes.push(`${w.kind} ${w.namespace}/${w.name}: no GC Notify chart renders it (${GC_NOTIFY_MANIFESTS}), so no values are written for it`);
            continue;
        }
        const release = (values[chart.release] ??= {});
        Object.assign(release, chart.requires ?? {});
        for (const [field, value] of Object.entries(w.fields) as [Field, unknown][]) {
            const source = chart.fields[field];
            if (source && "key" in source) setIn(release, source.key, value);
            if (source && "key" in source && source.templateChange) {
                const note = `${chart.release} ${field}: the chart renders its own until GC Notify makes the template change in ${source.templateChange}; until then each release of ${chart.release} puts it back`;
                if (!notes.includes(note)) notes.push(note);
            }
            if (source && "fixed" in source && !sameValue(source.fixed, value)) {
                notes.push(`${w.kind} ${w.namespace}/${w.name} ${field}: the chart hardcodes ${JSON.stringify(source.fixed)} (${source.where}) and the stack sets ${JSON.stringify(value)}; change the template or the stack, or each release of ${chart.release} undoes the patch`);
            }
        }
        // Two budgets over one pod block every eviction: the stack's <deployment>-ephemeral budget replaces the chart's.
        if (w.role === "burst" && chart.budgetKey) setIn(release, chart.budgetKey, false);
    }
    return { values, notes };
}

/** The values files, by path under the plan directory, each with a header that says what it is and how to use it. */
export function gcNotifyValuesFiles(stack: string, a: CeleryWorkloadPlacementArgs): Record<string, string> {
    const { values } = gcNotifyValues(a);
    return Object.fromEntries(
        Object.entries(values).map(([release, v]) => [
            valuesFilePath(release),
            [
                `# Generated by \`npm run plan -- --stack ${stack}\` (notify-karpenter plan/gcNotifyCharts.ts): do not edit by hand.`,
                `# GC Notify's helmfile release "${release}", keys of ${GC_NOTIFY_MANIFESTS}: add this file as the release's last`,
                `# values file for this environment, so the chart renders every field the stack's patches set exactly as they`,
                `# set it, and a Helm release and a pulumi up never undo each other (docs/migration.md, step 1).`,
                // Each environment's files go in in its own step 1, when its first up is scheduled (MW2-F3).
                `# Copy it to helmfile/${valuesFileDestination(stack, release)} in ${stack}'s own step 1, never before.`,
                stringify(v, { lineWidth: 0, aliasDuplicateObjects: false }).trimEnd(),
                "",
            ].join("\n"),
        ]),
    );
}

export const valuesFilePath = (release: string) => `gc-notify-values/${release}.yaml`;

/** Where the runbook puts a stack's values file in notification-manifests, under helmfile/: one folder per environment. */
export const valuesFileDestination = (stack: string, release: string) => `overrides/karpenter/${stack}/${release}.yaml`;

/** Where a chart (rendered or live) and the stack's patches set one field differently. */
export interface ChartDifference {
    object: string;
    field: string;
    chart: unknown;
    stack: unknown;
    /** The release and the values key that fixes it; undefined when the chart hardcodes the field or is unknown. */
    release?: string;
    valuesPath?: string[];
    /** valuesPath as a dotted key, a key with a dot or slash quoted. */
    valuesKey?: string;
    /** New ephemeral nodes cannot become usable while the difference stands (a waited-for agent kept off). */
    blocksCapacity: boolean;
    /** A node going kills a running Celery task while it stands: a burst worker's preStop, or a shorter grace. */
    killsTasks: boolean;
    /** The key takes effect only after this template change (a file the plan writes). */
    templateChange?: string;
}

interface KubeObject {
    kind?: string;
    metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
    spec?: any;
}

const dotted = (path: string[]) => path.map((k) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k))).join(".");

/**
 * Whether the stack's value names only some keys of a map: pod labels (a granular map), and the burst workers'
 * nodeSelector, where the patch sets nothing and only requires keys gone (null). A stable patch's nodeSelector is
 * the whole map: PodSpec.nodeSelector is `x-kubernetes-map-type: atomic` (Kubernetes 1.34 OpenAPI), so the patch
 * replaces it whole and each chart key it lacks comes back with the chart's next release (Helm merges map keys).
 */
const keyed = (field: Field, stack: unknown) => field === "labels" || (field === "nodeSelector" && Object.values(stack as object).includes(null));

/** The chart's value of a field as it matters to the comparison: only the containers and labels the patch names. */
function chartValue(field: Field, template: any, stackValue: unknown): unknown {
    // Keys and containers' resources the chart does not render are the patch's alone (Helm's merge leaves what its
    // chart never set): only what the chart renders is compared. An empty map renders nothing either.
    if (field === "labels") return pick(template?.metadata?.labels, stackValue);
    if (field === "nodeSelector") {
        const map = template?.spec?.nodeSelector;
        if (map && Object.keys(map).length === 0) return undefined;
        return keyed(field, stackValue) ? pick(map, stackValue) : map;
    }
    if (field === "preStop") return preStopOf(template);
    if (field === "containers") {
        const named = (stackValue as { name: string }[]).map((c) => c.name);
        const containers = (template?.spec?.containers ?? []) as { name: string; resources?: unknown }[];
        return containers.filter((c) => named.includes(c.name) && c.resources !== undefined).map((c) => ({ name: c.name, resources: c.resources }));
    }
    return template?.spec?.[field];
}

/** The command of the first container's exec preStop: a Celery worker's pod has one container. */
const preStopOf = (template: any): unknown => (template?.spec?.containers ?? []).find((c: any) => c?.lifecycle?.preStop)?.lifecycle.preStop.exec?.command;

/** The entries of `map` under the keys of `wanted` that `map` has. */
function pick(map: Record<string, unknown> | undefined, wanted: unknown): Record<string, unknown> | undefined {
    if (map === undefined || map === null) return undefined;
    return Object.fromEntries(Object.keys(wanted as object).filter((k) => k in map).map((k) => [k, map[k]]));
}

/** The stack's value cut to what the chart's value was compared on: the map keys and containers the chart renders. */
function comparable(field: Field, chart: unknown, stack: unknown): unknown {
    if (keyed(field, stack)) return pick(stack as Record<string, unknown>, chart ?? {});
    if (field === "containers") return (stack as { name: string }[]).filter((c) => (chart as { name: string }[]).some((x) => x.name === c.name));
    return stack;
}

const sameValue = (a: unknown, b: unknown) => canonical(a) === canonical(b);

/** JSON with keys sorted and quantities as written, so map order never makes a difference. */
function canonical(v: unknown): string {
    if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
    if (v && typeof v === "object") return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`).join(",")}}`;
    return JSON.stringify(v ?? null);
}

/** The taints a waited-for agent must tolerate on a new ephemeral node: the ephemeral taint and every startup taint. */
function newNodeTaints(a: CeleryWorkloadPlacementArgs): Taint[] {
    return [{ key: a.ephemeralKey, value: "true", effect: "NoSchedule" }, ...a.nodeDaemonSets.filter(waitsFor).map(startupTaintFor)];
}

/**
 * Every field the stack's patches set that these objects (helm template output, or the live cluster) set to
 * another value, and every chart budget over burst pods. A field the objects do not set is no difference: the
 * patch owns it alone. A rendered `null` is a value: Helm's merge deletes the patch's field with it.
 */
export function chartDifferences(objects: KubeObject[], a: CeleryWorkloadPlacementArgs): ChartDifference[] {
    const differences: ChartDifference[] = [];
    const find = (w: PatchedWorkload) => objects.find((o) => o.kind === w.kind && o.metadata?.name === w.name && (o.metadata?.namespace ?? w.namespace) === w.namespace);
    const agents = new Map(a.nodeDaemonSets.map((d) => [`${d.namespace}/${d.name}`, d]));
    for (const w of patchedWorkloads(a)) {
        const o = find(w);
        if (!o) continue;
        const chart = chartWorkloadOf(w);
        for (const [field, stack] of Object.entries(w.fields) as [Field, unknown][]) {
            const template = o.spec?.template;
            const present = field === "labels" ? template?.metadata?.labels !== undefined : field === "preStop" ? preStopOf(template) !== undefined : field in (template?.spec ?? {});
            if (!present) continue;
            const value = chartValue(field, template, stack);
            if (value === undefined || sameValue(value, comparable(field, value, stack))) continue;
            const source = chart?.fields[field];
            const agent = agents.get(`${w.namespace}/${w.name}`);
            const blocksCapacity = field === "tolerations" && !!agent && waitsFor(agent) && !newNodeTaints(a).every((t) => ((value ?? []) as Toleration[]).some((tol) => tolerates(tol, t)));
            // The hook SIGKILLs 5 s before the grace the patch sets: a chart's own hook, or a shorter grace, cuts a task.
            const killsTasks = w.role === "burst" && (field === "preStop" || (field === "terminationGracePeriodSeconds" && Number(value) < Number(stack)));
            differences.push({
                object: `${w.kind} ${w.namespace}/${w.name}`,
                field: field === "labels" ? "metadata.labels" : field,
                chart: value,
                stack,
                ...(source && "key" in source ? { release: chart!.release, valuesPath: source.key, valuesKey: dotted(source.key), ...(source.templateChange ? { templateChange: source.templateChange } : {}) } : {}),
                blocksCapacity,
                killsTasks,
            });
        }
    }
    return [...differences, ...chartBudgets(objects, a)];
}

/** The charts' own PodDisruptionBudgets over burst pods (the stack's `<deployment>-ephemeral` budgets replace them). */
function chartBudgets(objects: KubeObject[], a: CeleryWorkloadPlacementArgs): ChartDifference[] {
    const burst = new Set(a.burst.deployments.map((d) => d.name));
    const burstLabels = objects
        .filter((o) => o.kind === "Deployment" && burst.has(o.metadata?.name ?? "") && (o.metadata?.namespace ?? a.namespace) === a.namespace)
        .map((o) => ({ name: o.metadata!.name!, labels: (o.spec?.template?.metadata?.labels ?? {}) as Record<string, string> }));
    return objects
        .filter((o) => o.kind === "PodDisruptionBudget" && (o.metadata?.namespace ?? a.namespace) === a.namespace && !(o.metadata?.name ?? "").endsWith("-ephemeral"))
        .flatMap((pdb) => {
            const selector = (pdb.spec?.selector?.matchLabels ?? {}) as Record<string, string>;
            if (Object.keys(selector).length === 0 || pdb.spec?.selector?.matchExpressions) return [];
            const over = burstLabels.find((d) => Object.entries(selector).every(([k, v]) => d.labels[k] === v));
            if (!over) return [];
            const chart = chartWorkloadOf({ kind: "Deployment", namespace: a.namespace, name: over.name });
            return [
                {
                    object: `PodDisruptionBudget ${a.namespace}/${pdb.metadata?.name}`,
                    field: `budget over the pods of burst Deployment ${over.name}`,
                    chart: "enabled",
                    stack: "off (the stack's own budget covers these pods)",
                    ...(chart?.budgetKey ? { release: chart.release, valuesPath: chart.budgetKey, valuesKey: dotted(chart.budgetKey) } : {}),
                    blocksCapacity: false,
                    killsTasks: false,
                },
            ];
        });
}
