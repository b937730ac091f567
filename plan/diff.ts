// Compares the offline plans of two stacks: the resources present in only one of them (there should be none, since
// the stacks run the same code) and every input that differs, so a reviewer sees that they differ only in values.
import type { RecordedResource } from "./offlineRuntime.ts";

export interface StackPlan {
    stack: string;
    resources: RecordedResource[];
    /** What to call this side in the report (a stack name by default; "HEAD", "the working tree" for --diff-against). */
    label?: string;
}

export interface InputDifference {
    path: string;
    /** The value in each stack; undefined when the input is absent there. */
    values: [unknown, unknown];
}

export interface StackDiff {
    /** Each side's label: the stack names, or (--diff-against) the baseline and "the working tree". */
    stacks: [string, string];
    /** Resources (`<type> <name>`) present only in the first, and only in the second stack. */
    onlyIn: [string[], string[]];
    /** Resources present in both whose inputs differ, with each differing input. */
    changed: { resource: string; differences: InputDifference[] }[];
}

/** Resources are matched by URN without the stack: type, parent types and logical name. */
function byIdentity(plan: StackPlan): Map<string, RecordedResource> {
    const prefix = `urn:pulumi:${plan.stack}::`;
    return new Map(plan.resources.map((r) => [r.urn.startsWith(prefix) ? r.urn.slice(prefix.length) : r.urn, r]));
}

const label = (r: RecordedResource) => `${r.type} ${r.name}`;

export function diffStacks(a: StackPlan, b: StackPlan): StackDiff {
    const [left, right] = [byIdentity(a), byIdentity(b)];
    const only = (x: Map<string, RecordedResource>, y: Map<string, RecordedResource>) =>
        [...x].filter(([id]) => !y.has(id)).map(([, r]) => label(r)).sort();
    const changed = [...left]
        .filter(([id]) => right.has(id))
        .map(([id, r]) => ({ resource: label(r), differences: [...inputDifferences(r.inputs, right.get(id)!.inputs), ...optionDifferences(r, a.stack, right.get(id)!, b.stack)] }))
        .filter((c) => c.differences.length > 0)
        .sort((x, y) => x.resource.localeCompare(y.resource));
    return { stacks: [a.label ?? a.stack, b.label ?? b.stack], onlyIn: [only(left, right), only(right, left)], changed };
}

/**
 * Every input whose value differs, by path. JSON held in strings (IAM policies, dashboards) is compared inside;
 * lists of plain values (instance types, alarm names) are compared whole, as sets.
 */
export function inputDifferences(a: Record<string, unknown>, b: Record<string, unknown>): InputDifference[] {
    const [x, y] = [leaves(a), leaves(b)];
    const paths = [...new Set([...x.keys(), ...y.keys()])];
    return paths.filter((p) => JSON.stringify(x.get(p)) !== JSON.stringify(y.get(p))).map((path) => ({ path, values: [x.get(path), y.get(path)] }));
}

/**
 * The resource options that differ, as "[option] protect": what the engine keeps in its state and acts on (protect,
 * retainOnDelete, deleteBeforeReplace, replaceOnChanges, ignoreChanges, customTimeouts in seconds; plan/offlineRuntime.ts
 * ResourceOptionsRecord) and what the resource waits for (dependsOn and the resources whose outputs feed it, by URN
 * without the stack). Inputs alone would say "No change" when production's protect flips.
 */
export function optionDifferences(a: Pick<RecordedResource, "options" | "dependencies">, stackA: string, b: Pick<RecordedResource, "options" | "dependencies">, stackB: string): InputDifference[] {
    const deps = (r: Pick<RecordedResource, "dependencies">, stack: string) => {
        // As "<type> <name>", the way the diff names resources (the URN less its stack, project and parent types).
        const named = (u: string) => {
            const [, , chain, ...name] = u.replace(`urn:pulumi:${stack}::`, "urn:pulumi:_::").split("::");
            return chain === undefined ? u : `${chain.split("$").pop()} ${name.join("::")}`;
        };
        const list = [...new Set((r.dependencies ?? []).map(named))].sort();
        return list.length ? list : undefined;
    };
    const [x, y] = [
        { ...(a.options ?? {}), dependsOn: deps(a, stackA) },
        { ...(b.options ?? {}), dependsOn: deps(b, stackB) },
    ].map((o) => leaves(JSON.parse(JSON.stringify(o)), "[option]"));
    const paths = [...new Set([...x.keys(), ...y.keys()])].filter((p) => p !== "[option]");
    return paths.filter((p) => JSON.stringify(x.get(p)) !== JSON.stringify(y.get(p))).map((p) => ({ path: p.replace(/^\[option\]\./, "[option] "), values: [x.get(p), y.get(p)] }));
}

const isValueList = (v: unknown): v is unknown[] => Array.isArray(v) && v.length > 0 && v.every((x) => x === null || typeof x !== "object");

function leaves(value: unknown, path = "", out = new Map<string, unknown>()): Map<string, unknown> {
    if (typeof value === "string" && /^\s*[[{]/.test(value)) {
        const parsed = parseJson(value);
        if (parsed !== undefined) return leaves(parsed, `${path}(json)`, out);
    }
    const entries: [string, unknown][] =
        Array.isArray(value) && !isValueList(value)
            ? value.map((v, i) => [`${path}[${i}]`, v])
            : value !== null && typeof value === "object" && !Array.isArray(value)
              ? Object.entries(value).map(([k, v]) => [/^[A-Za-z_$][\w$]*$/.test(k) ? (path ? `${path}.${k}` : k) : `${path}[${JSON.stringify(k)}]`, v])
              : [];
    if (entries.length === 0) out.set(path, value);
    for (const [p, v] of entries) leaves(v, p, out);
    return out;
}

function parseJson(s: string): unknown {
    try {
        return JSON.parse(s);
    } catch {
        return undefined;
    }
}

const show = (v: unknown) => (v === undefined ? "(absent)" : typeof v === "string" ? v : JSON.stringify(v));

/**
 * The change from one text to the other in whole words: "a-staging-b" to "a-production-b" is "staging →
 * production"; "x-staging-warning" to "x-production-critical" is "staging → production; warning → critical".
 */
function wordEdit(s: string, t: string): string {
    const [x, y] = [s, t].map((v) => v.split(/([^A-Za-z0-9]+)/));
    if (x.length === y.length) return [...new Set(x.flatMap((w, i) => (w === y[i] ? [] : [`${w} → ${y[i]}`])))].join("; ");
    let p = 0;
    while (p < x.length && x[p] === y[p]) p++;
    let q = 0;
    while (q < x.length - p && q < y.length - p && x[x.length - 1 - q] === y[y.length - 1 - q]) q++;
    return `${x.slice(p, x.length - q).join("")} → ${y.slice(p, y.length - q).join("")}`;
}

/** What was taken out of and put into a list of values. */
function listChange(a: unknown, b: unknown): [string[], string[]] {
    const [x, y] = [a, b].map((v) => (Array.isArray(v) ? v.map(show) : v === undefined ? [] : [show(v)]));
    return [x.filter((v) => !y.includes(v)), y.filter((v) => !x.includes(v))];
}

/**
 * Each difference as the edit a reviewer would describe, so that identical edits can be counted. A key that names
 * the stack (an IAM condition key with the cluster name) shows as the same number of inputs gone and added: those
 * are paired in order and read as a renamed key.
 */
export function edits(differences: InputDifference[]): string[] {
    const gone = differences.filter((d) => d.values[1] === undefined);
    const added = differences.filter((d) => d.values[0] === undefined);
    const renamed = gone.length === added.length ? gone.map((d, i) => wordEdit(d.path, added[i].path)) : [...gone, ...added].map((d) => wordEdit(show(d.values[0]), show(d.values[1])));
    const changed = differences
        .filter((d) => d.values[0] !== undefined && d.values[1] !== undefined)
        .flatMap(({ values: [a, b] }) => {
            if (!isValueList(a) && !isValueList(b)) return [wordEdit(show(a), show(b))];
            const [out, into] = listChange(a, b);
            if (out.length === 0 && into.length === 0) return ["(same values, reordered)"];
            return out.length === into.length ? out.map((v, i) => wordEdit(v, into[i])) : [`${out.join(", ") || "(none)"} → ${into.join(", ") || "(none)"}`];
        });
    return [...changed, ...renamed];
}

/** The two values, cut to `width` around where they first differ, so a long shared prefix does not hide the change. */
function excerpts([a, b]: [unknown, unknown], width = 60): [string, string] {
    const [s, t] = [a, b].map(show);
    let same = 0;
    while (same < s.length && s[same] === t[same]) same++;
    const start = same > width / 2 ? same - 10 : 0;
    const cut = (v: string) => (start > 0 ? "…" : "") + (v.length - start > width ? `${v.slice(start, start + width)}…` : v.slice(start));
    return [cut(s), cut(t)];
}

const clip = (s: string, width = 100) => (s.length > width ? `${s.slice(0, width)}…` : s);

function describe(d: InputDifference): string {
    if (!isValueList(d.values[0]) && !isValueList(d.values[1])) return excerpts(d.values).join(" → ");
    const [out, into] = listChange(...d.values);
    return clip([...out.map((v) => `-${v}`), ...into.map((v) => `+${v}`)].join(" ") || "(same values, reordered)");
}

export function renderDiff(d: StackDiff): string {
    const [a, b] = d.stacks;
    return renderComparison(d, {
        title: `Stack diff ${a} → ${b} (offline plans)`,
        only: [`Only in ${a}:`, `Only in ${b}:`],
        summary: summaryLine(d),
    });
}

/** The parts of a comparison that differ between the stack diff and --diff-against: the wording. */
interface Wording {
    title: string;
    /** The headings of the resources only on each side. */
    only: [string, string];
    summary: string;
}

function renderComparison(d: StackDiff, w: Wording): string {
    const [a, b] = d.stacks;
    const lines = [w.title, ""];
    d.onlyIn.forEach((resources, i) => lines.push(`${w.only[i]}${resources.length === 0 ? " none" : ""}`, ...resources.map((r) => `  ${r}`)));

    const counts = new Map<string, number>();
    for (const e of d.changed.flatMap((c) => edits(c.differences))) counts.set(e, (counts.get(e) ?? 0) + 1);
    const ranked = [...counts].sort(([x, m], [y, n]) => n - m || x.localeCompare(y));
    lines.push("", `Changes in values, most frequent first (${a} → ${b}):`, ...(ranked.length ? ranked.map(([e, n]) => `  ${String(n).padStart(4)}×  ${clip(e)}`) : ["  none"]));

    lines.push("", "Inputs and resource options that differ, by resource:", ...(d.changed.length ? [] : ["  none"]));
    for (const c of d.changed) lines.push(`  ${c.resource}`, ...c.differences.map((diff) => `    ${diff.path}: ${describe(diff)}`));
    lines.push("", w.summary);
    return lines.join("\n");
}

/** "251 inputs", or "251 inputs and 10 options" when resource options differ too. */
function differing(d: StackDiff): { total: number; text: string } {
    const all = d.changed.flatMap((c) => c.differences);
    const options = all.filter((x) => x.path.startsWith("[option]")).length;
    const inputs = all.length - options;
    return { total: all.length, text: options ? `${count(inputs, "input")} and ${count(options, "option")}` : count(inputs, "input") };
}

export function summaryLine(d: StackDiff): string {
    const oneSided = d.onlyIn[0].length + d.onlyIn[1].length;
    return `${count(oneSided, "resource")} only in one stack; ${differing(d).text} differ in ${count(d.changed.length, "resource")}`;
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/**
 * What an edit changes in one stack's plan (--diff-against): the resources removed and added, and every input and
 * resource option that differs, from `baseline` (a git ref's stack file, or an earlier plan) to the working tree.
 * `note` says what was compared (which code planned each side).
 */
export function renderChanges(stack: string, d: StackDiff, note: string): string {
    const [a, b] = d.stacks;
    const { total, text } = differing(d);
    const none = d.onlyIn[0].length + d.onlyIn[1].length + total === 0;
    return renderComparison(d, {
        title: `Changes to stack ${stack}: ${a} → ${b} (offline plans; ${note})`,
        only: [`Removed (only in ${a}):`, `Added (only in ${b}):`],
        summary: none
            ? `No change: ${b} plans the same resources with the same inputs and resource options as ${a}`
            : `${count(d.onlyIn[1].length, "resource")} added, ${d.onlyIn[0].length} removed; ${text} differ${total === 1 ? "s" : ""} in ${count(d.changed.length, "resource")}`,
    });
}
