// docs/configuration.md from the config schema that validates the stack files (stacks/config.ts): every key, its
// default and what it allows, and the warnings an acknowledgment may name (stacks/warnings.ts). `npm run docs:config`
// writes it; tests/configReference.spec.ts fails when the two differ.
import { isDeepStrictEqual } from "util";
import { capacitySchema, stackSchema } from "./config.ts";
import type { Optional, Schema } from "./schema.ts";
import { UNACKNOWLEDGEABLE, WARNINGS } from "./warnings.ts";

interface Row {
    key: string;
    required: boolean;
    fallback: unknown;
    allowed: string;
    /** An object whose keys' rows show each of its default's values: its own default is not repeated. */
    defaultsBelow?: boolean;
}

/** Sibling objects of one shape, shown as one table with a column per key (the alarm rules). */
interface Group {
    fields: string[];
    /** Each member's key and its fields' rows, in `fields` order. */
    members: { key: string; rows: Row[] }[];
}

const optionalOf = (schema: Schema<unknown>) => ("optional" in schema ? (schema as Optional<unknown>) : undefined);
const fieldsOf = (schema: Schema<unknown>) => schema.parts?.fields;
const isLeaf = (schema: Schema<unknown>) => !fieldsOf(schema) && !schema.parts?.item?.parts?.fields && !schema.parts?.values?.parts?.fields;

/** An optional object whose keys are all leaves with defaults of their own: a member of a group when it has siblings of its shape. */
const groupShape = (schema: Schema<unknown>) => {
    const fields = fieldsOf(schema);
    if (!optionalOf(schema) || !fields) return undefined;
    return Object.values(fields).every((f) => isLeaf(f) && optionalOf(f)?.fallback !== undefined) ? Object.keys(fields).join(",") : undefined;
};
/** At least this many siblings of one shape make a group; fewer stay rows. */
const GROUP_MIN = 3;

/** An object's default is left out when each of its keys' rows shows that key's default. */
function childrenShowDefault(fallback: unknown, children: Row[]): boolean {
    if (!fallback || typeof fallback !== "object" || Array.isArray(fallback)) return false;
    return Object.entries(fallback).every(([k, v]) => children.some((r) => r.key.endsWith(`.${k}`) && !r.required && isDeepStrictEqual(r.fallback, v)));
}

/** Every key below `schema`, depth first: objects give their fields, lists of objects `key[].field`, maps `key.<name>.field`. */
function rows(schema: Schema<unknown>, key: string, groups: Group[]): Row[] {
    const opt = optionalOf(schema);
    const { fields, item, values } = schema.parts ?? {};
    const nested = fields ? { schema, at: key } : item?.parts?.fields ? { schema: item, at: `${key}[]` } : values?.parts?.fields ? { schema: values, at: `${key}.<name>` } : undefined;
    const allowed = nested ? schema.expected.replace(/an object with the keys [^]*$/, "an object") : schema.expected;
    const own: Row = { key, required: !opt, fallback: opt?.fallback, allowed };
    if (!nested) return key ? [own] : [];
    const entries = Object.entries(nested.schema.parts!.fields!);
    const shapes = entries.map(([, s]) => groupShape(s));
    const grouped = (i: number) => shapes[i] !== undefined && shapes.filter((s) => s === shapes[i]).length >= GROUP_MIN;
    const children: Row[] = [];
    for (const [i, [k, s]] of entries.entries()) {
        const at = nested.at ? `${nested.at}.${k}` : k;
        if (!grouped(i)) {
            children.push(...rows(s, at, groups));
            continue;
        }
        let group = groups.find((g) => g.fields.join(",") === shapes[i]);
        if (!group) groups.push((group = { fields: Object.keys(fieldsOf(s)!), members: [] }));
        group.members.push({ key: at, rows: rows(s, at, []).slice(1) });
    }
    own.defaultsBelow = childrenShowDefault(own.fallback, children);
    return key ? [own, ...children] : children;
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
const json = (v: unknown) => cell(`\`${JSON.stringify(v)}\``);
const defaultCell = (r: Row) => (r.required ? "required" : r.fallback === undefined ? "optional" : r.defaultsBelow ? "its keys' defaults" : json(r.fallback));

/** A group as a paragraph and a table: a row per member, a column per key, each cell that key's default. */
function groupTable(g: Group): string[] {
    const column = (i: number) => g.members.map((m) => m.rows[i]);
    const same = g.fields.map((_, i) => new Set(column(i).map((r) => r.allowed)).size === 1);
    const allowed = g.fields.map((f, i) => `\`${f}\` ${same[i] ? column(i)[0].allowed : "as its column says"}`);
    return [
        `Each key of the next table is optional: an object whose keys are optional too, with the defaults in its row.`,
        `Allowed: ${allowed.join("; ")}.`,
        "",
        `| key | ${g.fields.join(" | ")} |`,
        `| --- |${" --- |".repeat(g.fields.length)}`,
        ...g.members.map((m) => `| \`${m.key}\` | ${m.rows.map((r, i) => (same[i] ? json(r.fallback) : `${json(r.fallback)}: ${cell(r.allowed)}`)).join(" | ")} |`),
        "",
    ];
}

/** The warnings `acknowledged[].warning` may name, with what each means (stacks/warnings.ts). */
function warningsTable(): string[] {
    return [
        "A warning is config that works but costs something: each says what it costs and what to do, once per run, starting",
        "with its id. `acknowledged` quiets one a stack accepts ([configuring.md](configuring.md#acknowledged)). The ids:",
        "",
        "| warning | raised when |",
        "| --- | --- |",
        ...Object.entries(WARNINGS).map(([id, meaning]) => `| \`${id}\` | ${cell(meaning)}${UNACKNOWLEDGEABLE.includes(id) ? " (cannot be acknowledged: remove the acknowledgment)" : ""} |`),
        "",
    ];
}

/** The reference as Markdown: one table per top-level section. */
export function configReference(): string {
    // The capacity section is parsed on its own (it never blocks a deploy); its stack-schema entry is a placeholder.
    const sections = Object.entries(stackSchema.parts!.fields!).map(([name, schema]): [string, Schema<unknown>] => [name, name === "capacity" ? { ...capacitySchema, optional: true } as Schema<unknown> : schema]);
    return [
        "# Configuration reference",
        "",
        "**This page answers:** what may a stack file hold: every key, its default and its allowed values?",
        "",
        "<!-- Generated by `npm run docs:config` from stacks/config.ts; do not edit by hand. tests/configReference.spec.ts fails when it is stale. -->",
        "",
        "Each section is one structured value in the `notify-karpenter` namespace of `Pulumi.<stack>.yaml`",
        "(`notify-karpenter:cluster`, `notify-karpenter:nodePool`, ...). A key is required unless it has a default or says",
        "optional; an object's keys are the rows after it, `[]` is an item of a list, `<name>` a key of your choosing. Rules that span keys (`nodePool.terminationGracePeriod`",
        "at least each burst worker's grace, zones of the cluster's region, budgets that cover sending hours, ...) are",
        "checked too, each message naming the keys: [configuration-notes.md](configuration-notes.md). What each stack",
        "chooses, and why: [configuring.md](configuring.md). `npm run plan -- --stack <name>` shows what a stack file amounts to.",
        "",
        ...sections.flatMap(([name, schema]) => {
            const groups: Group[] = [];
            const table = rows(schema, name, groups);
            return [
                `## ${name}`,
                "",
                "| key | default | allowed |",
                "| --- | --- | --- |",
                ...table.map((r) => `| \`${r.key}\` | ${defaultCell(r)} | ${cell(r.allowed)} |`),
                "",
                ...groups.flatMap(groupTable),
                ...(name === "acknowledged" ? warningsTable() : []),
            ];
        }),
    ].join("\n");
}
