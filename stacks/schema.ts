// A small validator for stack config. Every rule knows how to describe what it accepts, so every error reads
// "<key path> must be <what is allowed> (got <value>)". A library such as zod reports *why* a value failed
// ("too small") but not the whole allowed range, which is what a platform engineer needs at 2 a.m.
import { CRON_DESCRIPTORS, type CronReader, parseCron } from "../components/models/cron.ts";
import { closest, lookalikeNote } from "../cli/text.ts";

/** One way a config value is wrong; `path` is the dotted key path below the project namespace. */
export interface Issue {
    path: string;
    message: string;
}

export interface Schema<T> {
    /** What the rule accepts, phrased to follow "must be": "an integer from 1 to 10". */
    readonly expected: string;
    /** Returns the parsed value; pushes an issue for each problem found (and returns a best-effort value). */
    parse(value: unknown, path: string, issues: Issue[]): T;
    /** What the rule is made of, for the generated configuration reference: an object's fields, a list's item, a map's values. */
    readonly parts?: { fields?: Record<string, Schema<unknown>>; item?: Schema<unknown>; values?: Schema<unknown> };
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

/**
 * A value as an error message shows it: JSON, and where it holds a character outside printable ASCII (a Cyrillic
 * letter that looks like a Latin one, a no-break space, a curly quote), which one, since the two look alike.
 */
export function got(value: unknown): string {
    if (value === undefined) return "nothing";
    const text = JSON.stringify(value);
    const note = lookalikeNote(typeof value === "string" ? value : text);
    return note ? `${text}, whose ${note}` : text;
}



/** Whether year y, month m (1-12) and day d name a day of the calendar: 2026-13-01 and 2026-02-30 do not. */
export function isCalendarDate(y: number, m: number, d: number): boolean {
    const date = new Date(Date.UTC(y, m - 1, d));
    return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** A value `pulumi config set --secret` wrote: `{secure: <ciphertext>}`, which only the Pulumi CLI can decrypt. */
function isSecureValue(v: unknown): boolean {
    return isPlainObject(v) && Object.keys(v).length === 1 && typeof v.secure === "string";
}

/** What to say of an encrypted value where plain config is expected. */
const SECURE_VALUE_MESSAGE =
    "is an encrypted value (secure:), set with pulumi config set --secret: nothing in this config is a secret, and npm run plan and the other commands read the stack file without decrypting it; set it in plain text (pulumi config set --path without --secret)";

function mismatch(path: string, expected: string, value: unknown): Issue {
    if (isSecureValue(value)) return { path, message: `${SECURE_VALUE_MESSAGE}; it must be ${expected}` };
    return { path, message: `must be ${expected} (got ${got(value)})` };
}

/** A value that `accepts` approves; `expected` says in words what it approves. */
export function leaf<T>(expected: string, accepts: (v: unknown) => boolean): Schema<T> {
    return {
        expected,
        parse(value, path, issues) {
            if (!accepts(value)) issues.push(mismatch(path, expected, value));
            return value as T;
        },
    };
}

export function integer(min: number, max: number): Schema<number> {
    return leaf(`an integer from ${min} to ${max}`, (v) => Number.isInteger(v) && (v as number) >= min && (v as number) <= max);
}

export function number(min: number, max: number): Schema<number> {
    return leaf(`a number from ${min} to ${max}`, (v) => typeof v === "number" && Number.isFinite(v) && v >= min && v <= max);
}

export function boolean(): Schema<boolean> {
    return leaf("true or false", (v) => typeof v === "boolean");
}

/** A string matching `pattern`; `expected` says in words what the pattern means. */
export function text(expected: string, pattern: RegExp = /^.+$/, maxLength = 1024): Schema<string> {
    return leaf(expected, (v) => typeof v === "string" && v.length <= maxLength && pattern.test(v));
}

export function oneOf<const T extends readonly (string | number | boolean)[]>(...values: T): Schema<T[number]> {
    const expected = values.length === 1 ? JSON.stringify(values[0]) : `one of ${values.map((v) => JSON.stringify(v)).join(", ")}`;
    return leaf(expected, (v) => values.includes(v as T[number]));
}

/**
 * A list. `unique` refuses an item that repeats an earlier one; `uniqueBy` refuses one whose key (a Deployment's
 * name, a DaemonSet's namespace/name) repeats, since two resources with one name collide in the engine.
 */
export function list<T>(item: Schema<T>, opts: { min?: number; max?: number; unique?: boolean; uniqueBy?: (v: T) => string } = {}): Schema<T[]> {
    const { min = 0, max = 1000, uniqueBy } = opts;
    const unique = opts.unique || uniqueBy !== undefined;
    const size = min === max ? `${min}` : max >= 1000 ? `at least ${min}` : `${min} to ${max}`;
    const expected = `a list of ${size} ${unique ? "distinct " : ""}items, each ${item.expected}`;
    return {
        expected,
        parts: { item },
        parse(value, path, issues) {
            if (!Array.isArray(value) || value.length < min || value.length > max) {
                issues.push(mismatch(path, expected, value));
                return [];
            }
            const out = value.map((v, i) => item.parse(v, `${path}[${i}]`, issues));
            if (unique) {
                const seen = new Map<string, number>();
                out.forEach((v, i) => {
                    const k = uniqueBy ? uniqueBy(v) : JSON.stringify(v);
                    const first = seen.get(k);
                    if (first !== undefined) issues.push({ path: `${path}[${i}]`, message: `repeats ${k} (already at ${path}[${first}]); items must be distinct` });
                    else seen.set(k, i);
                });
            }
            return out;
        },
    };
}

/** A map with free-form keys, such as tags or a nodeSelector. */
export function record<T>(keyExpected: string, keyPattern: RegExp, value: Schema<T>, maxEntries = 50): Schema<Record<string, T>> {
    const expected = `a map of up to ${maxEntries} entries whose keys are ${keyExpected} and values ${value.expected}`;
    return {
        expected,
        parts: { values: value },
        parse(v, path, issues) {
            if (!isPlainObject(v) || isSecureValue(v) || Object.keys(v).length > maxEntries) {
                issues.push(mismatch(path, expected, v));
                return {};
            }
            const out: Record<string, T> = {};
            for (const [k, item] of Object.entries(v)) {
                if (!keyPattern.test(k)) {
                    const odd = lookalikeNote(k);
                    issues.push({ path: `${path}.${k}`, message: `is not a valid key${odd ? ` (its ${odd})` : ""}: keys must be ${keyExpected}` });
                }
                out[k] = value.parse(item, `${path}.${k}`, issues);
            }
            return out;
        },
    };
}

/** Marks a field optional. With a default, the parsed type is never undefined. */
export interface Optional<T> extends Schema<T> {
    readonly optional: true;
    /** The value an absent key takes (undefined: none). */
    readonly fallback?: unknown;
}

export function optional<T>(schema: Schema<T>): Optional<T | undefined>;
export function optional<T>(schema: Schema<T>, fallback: T): Optional<T>;
export function optional<T>(schema: Schema<T>, fallback?: T): Optional<T | undefined> {
    return {
        optional: true,
        fallback,
        parts: schema.parts,
        expected: schema.expected,
        parse(value, path, issues) {
            if (value === undefined || value === null) return fallback;
            return schema.parse(value, path, issues);
        },
    };
}

type Shape = Record<string, Schema<unknown>>;
export type ObjectOf<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

/**
 * A strict object: a missing required key, an unknown key (with the closest known key suggested) and a wrong
 * value are all reported. `check` runs only when every field parsed, for rules that span fields.
 */
export function object<S extends Shape>(shape: S, check?: (v: ObjectOf<S>, path: string) => Issue[]): Schema<ObjectOf<S>> {
    const keys = Object.keys(shape);
    const expected = `an object with the keys ${keys.join(", ")}`;
    return {
        expected,
        parts: { fields: shape },
        parse(value, path, issues) {
            if (!isPlainObject(value) || isSecureValue(value)) {
                issues.push(mismatch(path, expected, value));
                return {} as ObjectOf<S>;
            }
            const before = issues.length;
            for (const k of Object.keys(value).filter((k) => !(k in shape))) {
                const near = closest(k, keys);
                const odd = lookalikeNote(k);
                issues.push({
                    path: join(path, k),
                    message: `is not a known key${odd ? `: its ${odd}` : ""}${near ? ` (did you mean "${near}"?)` : ""}; known keys are ${keys.join(", ")}`,
                });
            }
            const out: Record<string, unknown> = {};
            for (const [k, schema] of Object.entries(shape)) {
                const v = (value as Record<string, unknown>)[k];
                if (v === undefined && !("optional" in schema)) {
                    issues.push({ path: join(path, k), message: `is required: it must be ${schema.expected}` });
                    continue;
                }
                out[k] = schema.parse(v, join(path, k), issues);
            }
            if (check && issues.length === before) issues.push(...check(out as ObjectOf<S>, path));
            return out as ObjectOf<S>;
        },
    };
}

export function join(path: string, key: string): string {
    return path ? `${path}.${key}` : key;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}



/**
 * The longest duration Kubernetes and Karpenter can read: Go's time.Duration is an int64 of nanoseconds, at most
 * 2562047h47m16.854775807s (292 years); time.ParseDuration refuses anything longer, so the object would not be read.
 */
const GO_MAX_DURATION_SECONDS = 2562047 * 3600 + 47 * 60 + 16;
const tooLong = (value: string) => `must be at most 2562047h: Kubernetes and Karpenter read durations as Go's time.Duration, whose longest is 2562047h47m16s (292 years), and a longer one fails to parse, so the object is not read (got ${got(value)})`;

// Shapes shared by several config sections.
const durationText = text("a duration such as 30s, 15m or 24h", /^([0-9]+(s|m|h))+$/, 32);
export const duration: Schema<string> = {
    expected: durationText.expected,
    parse(value, path, issues) {
        const before = issues.length;
        const v = durationText.parse(value, path, issues);
        if (issues.length === before && durationSeconds(v) > GO_MAX_DURATION_SECONDS) issues.push({ path, message: tooLong(v) });
        return v;
    },
};

/** Seconds in a duration such as 1h30m or 90s. */
export function durationSeconds(d: string): number {
    const unit: Record<string, number> = { s: 1, m: 60, h: 3600 };
    return [...d.matchAll(/([0-9]+)([smh])/g)].reduce((sum, [, n, u]) => sum + Number(n) * unit[u], 0);
}

/**
 * A duration of `units` (Karpenter's patterns: s, m and h; budgets only h and m) of at least `minSeconds`, or
 * "Never" when `never` is true. Karpenter accepts 0s everywhere; the minimum is what makes sense here, and `why`
 * says why.
 */
export function durationAtLeast(minSeconds: number, why: string, opts: { never?: boolean; units?: "smh" | "hm" } = {}): Schema<string> {
    const units = opts.units ?? "smh";
    const pattern = units === "hm" ? /^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$/ : /^([0-9]+(s|m|h))+$/;
    const min = minSeconds % 3600 === 0 ? `${minSeconds / 3600}h` : minSeconds % 60 === 0 ? `${minSeconds / 60}m` : `${minSeconds}s`;
    const example = units === "hm" ? "30m, 10h or 1h30m" : "90s, 30m or 24h";
    const expected = `a duration of at least ${min} such as ${example}${opts.never ? ", or Never" : ""}`;
    return {
        expected,
        parse(value, path, issues) {
            if (opts.never && value === "Never") return value;
            if (typeof value !== "string" || value.length > 32 || !pattern.test(value)) issues.push(mismatch(path, expected, value));
            else if (durationSeconds(value) < minSeconds) issues.push({ path, message: `must be at least ${min}: ${why} (got ${got(value)})` });
            else if (durationSeconds(value) > GO_MAX_DURATION_SECONDS) issues.push({ path, message: tooLong(value) });
            return value as string;
        },
    };
}

/**
 * A standard five-field cron schedule in UTC, or one of its @ descriptors, checked field by field as `reader` reads it
 * (components/models/cron.ts: a NodePool budget's, or the recycler CronJob's).
 */
export function cron(reader: CronReader): Schema<string> {
    const expected = `a cron schedule in UTC of five fields (minute hour day-of-month month day-of-week) such as "0 13 * * mon-fri", or one of ${Object.keys(CRON_DESCRIPTORS).join(", ")}`;
    return {
        expected,
        parse(value, path, issues) {
            if (typeof value !== "string" || value.length > 100) {
                issues.push(mismatch(path, expected, value));
                return value as string;
            }
            const parsed = parseCron(value, reader);
            if (typeof parsed === "string") {
                // The shape of the whole (field count, descriptor) names what is expected; a field's own problem names the field.
                const whole = parsed.startsWith("it ");
                issues.push({ path, message: whole ? `must be ${expected}: ${parsed} (got ${got(value)})` : `must be a cron schedule in UTC: ${parsed} (got ${got(value)})` });
            }
            return value;
        },
    };
}
export const k8sName = text("a Kubernetes name (lowercase letters, digits and -, at most 63 characters)", /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 63);
export const labelKey = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
export const labelValue = text("a label value (letters, digits, -, _ and ., at most 63 characters)", /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/, 63);
export const quantity = text("a Kubernetes quantity such as 500m, 1, 1Gi or 512Mi", /^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti)?$/, 32);
