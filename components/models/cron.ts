// Cron schedules exactly as robfig/cron v3.0.1's ParseStandard reads them (parser.go, spec.go of that tag; Debian's
// golang-github-robfig-cron-dev 3.0.1 ships the same two files), for the two readers of this project's schedules:
//   - "budget": Karpenter v1.14.1 reads a NodePool budget's schedule with cron.ParseStandard("TZ=UTC " + schedule)
//     (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go:416), after the API server matched it to the CRD's pattern;
//   - "cronjob": Kubernetes' CronJob (the night recycler, timeZone Etc/UTC): the API server requires
//     cron.ParseStandard(schedule) to succeed and no "TZ" in it (pkg/apis/batch/validation validateScheduleFormat),
//     and the controller reads "TZ=Etc/UTC " + schedule.
// A schedule is accepted only where its reader accepts it, and its fire times are robfig's (tests/cronDifferential.spec.ts
// holds both against robfig itself). One parser for config validation's messages and for the budgets' model.
// References below are to robfig/cron v3.0.1 parser.go and spec.go.

/** The descriptors ParseStandard accepts (parser.go:366-421, exact and case-sensitive), as five fields with the same bits. */
export const CRON_DESCRIPTORS: Record<string, string> = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
};

/**
 * The NodePool CRD's pattern for budgets[].schedule (karpenter.sh_nodepools.yaml; components/karpenter/generated/crds.ts
 * has it from the CRD and a test holds the two equal). The API server matches it with Go's regexp, where `.` is any
 * character but a line feed and `\s` is one of tab, line feed, form feed, carriage return and space. Its first branch
 * is anchored only at the start and its second only at the end: "@daily" followed by anything matches, and so does
 * anything ending in five runs split by four such spaces. Budget schedules are what both this and ParseStandard accept.
 */
export const KARPENTER_SCHEDULE_PATTERN = String.raw`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`;

/** Who reads the schedule (see the top of this file). */
export type CronReader = "budget" | "cronjob";

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
/** Bounds and names of each field (spec.go:21-49, less seconds). */
const FIELDS: { name: string; min: number; max: number; names?: string[] }[] = [
    { name: "minute", min: 0, max: 59 },
    { name: "hour", min: 0, max: 23 },
    { name: "day of month", min: 1, max: 31 },
    { name: "month", min: 1, max: 12, names: MONTHS },
    { name: "day of week", min: 0, max: 6, names: DAYS },
];

export interface Cron {
    /** The values each field matches (minute, hour, day of month, month, day of week); a field may match none. */
    fields: Set<number>[];
    /**
     * robfig's star bit of the day-of-month and day-of-week fields: set by a part that is `*` or `?` (parser.go:262-266)
     * unless its step is above 1 (:297-299), ORed over the comma list (:244). When either is set a day must match both
     * fields, else either (spec.go:184-187): `0 13 *\/2 * mon` fires on odd days and on Mondays, `0 13 *,15 * mon` on Mondays.
     */
    domStar: boolean;
    dowStar: boolean;
}

/** Whether the schedule fires on a UTC calendar day (`d` at any time of it): the month, then spec.go dayMatches. */
export function cronFiresOnDay(c: Cron, d: Date): boolean {
    if (!c.fields[3].has(d.getUTCMonth() + 1)) return false;
    const domMatch = c.fields[2].has(d.getUTCDate());
    const dowMatch = c.fields[4].has(d.getUTCDay());
    return c.domStar || c.dowStar ? domMatch && dowMatch : domMatch || dowMatch;
}

/** Go's unicode.IsSpace, which strings.Fields and strings.TrimSpace split and trim on (not JavaScript's \s). */
const GO_SPACE = "\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
const goFields = (s: string) => s.split(new RegExp(`[${GO_SPACE}]+`)).filter((f) => f !== "");
const goTrimSpace = (s: string) => s.replace(new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, "g"), "");

/** Whether the CRD's pattern matches, read as Go's regexp reads it; linear, without the pattern's backtracking. */
function matchesKarpenterSchedulePattern(s: string): boolean {
    if (/^@(annually|yearly|monthly|weekly|daily|midnight|hourly)/.test(s)) return true;
    // ((.+)\s(.+)\s(.+)\s(.+)\s(.+))$ unanchored at the start: ok[i] when s[i..] is k runs without a line feed split by k-1
    // separators, for k = 1..5; from[i] when some separator at j >= i has ok[j + 1] with no line feed in s[i..j).
    const n = s.length;
    const sep = (c: string) => c === "\t" || c === "\n" || c === "\f" || c === "\r" || c === " ";
    let ok = new Array<boolean>(n + 1).fill(false);
    for (let i = n - 1; i >= 0 && s[i] !== "\n"; i--) ok[i] = true;
    for (let k = 2; k <= 5; k++) {
        const next = new Array<boolean>(n + 1).fill(false);
        let from = false;
        for (let i = n - 1; i >= 0; i--) {
            next[i] = s[i] !== "\n" && from;
            from = (sep(s[i]) && ok[i + 1]) || (s[i] !== "\n" && from);
        }
        ok = next;
    }
    return ok.some((v) => v);
}

const INT64_MAX = 9223372036854775807n;

/** strconv.Atoi then the negative check of mustParseInt (parser.go:331-341): a sign, digits, within int64, not below 0. */
function mustParseInt(s: string): number | undefined {
    if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
    const n = BigInt(s);
    if (n < 0n || n > INT64_MAX) return undefined;
    return n > 1000n ? 1000 : Number(n);
}

/** A name first, lowered as Go's strings.ToLower lowers it (İ is i there), then a number (parser.go:321-328). */
function parseIntOrName(s: string, names: string[] | undefined, offset: number): number | undefined {
    if (names) {
        const i = names.indexOf(s.replace(/[A-Z\u0130]/g, (c) => (c === "\u0130" ? "i" : c.toLowerCase())));
        if (i >= 0) return i + offset;
    }
    return mustParseInt(s);
}

interface Field {
    values: Set<number>;
    star: boolean;
}

/**
 * One field (0 minute ... 4 day of week): getField and getRange (parser.go:236-318). The values it matches and its star
 * bit, or why it is wrong in words that name the field and what it allows.
 */
function parseCronField(expr: string, index: number): Field | string {
    const f = FIELDS[index];
    const allowed = `${f.min}-${f.max}${f.names ? ` or ${f.names[0]}-${f.names[f.names.length - 1]}` : ""}`;
    const shape = `the ${f.name} field "${expr}" is not a number, range or list (allowed: ${allowed})`;
    const out: Field = { values: new Set(), star: false };
    // Empty parts are dropped: "1,,2" is 1,2 and "," matches nothing (strings.FieldsFunc, parser.go:238).
    for (const part of expr.split(",").filter((p) => p !== "")) {
        const rangeAndStep = part.split("/");
        const lowAndHigh = rangeAndStep[0].split("-");
        let lo: number;
        let hi: number;
        let star = false;
        // `*` or `?` is the whole range, whatever follows a hyphen: "*-5" is "*" (parser.go:262-266).
        if (lowAndHigh[0] === "*" || lowAndHigh[0] === "?") {
            [lo, hi, star] = [f.min, f.max, true];
        } else {
            if (lowAndHigh.length > 2) return shape; // too many hyphens (:279-280)
            const values = lowAndHigh.map((v) => parseIntOrName(v, f.names, f.name === "month" ? 1 : 0));
            const bad = values.findIndex((v) => v === undefined);
            if (bad >= 0) return lowAndHigh[bad] === "" ? shape : `the ${f.name} field "${expr}" has ${lowAndHigh[bad]}: it must be ${allowed}`;
            lo = values[0]!;
            hi = values[values.length - 1]!;
        }
        let step = 1;
        if (rangeAndStep.length > 2) return shape; // too many slashes (:300-301)
        if (rangeAndStep.length === 2) {
            const s = mustParseInt(rangeAndStep[1]);
            if (s === undefined || s === 0) return `the ${f.name} field "${expr}" has step "${rangeAndStep[1]}": a step must be a whole number above 0`;
            step = s;
            // "5/15" runs from 5 to the end of the range (:293-296); a step above 1 clears the star bit (:297-299).
            if (lowAndHigh.length === 1) hi = f.max;
            if (step > 1) star = false;
        }
        // The bounds, in robfig's order (:304-315).
        if (lo < f.min) return `the ${f.name} field "${expr}" has ${lowAndHigh[0]}: it must be ${allowed}`;
        if (hi > f.max) return `the ${f.name} field "${expr}" has ${lowAndHigh[lowAndHigh.length - 1]}: it must be ${allowed}`;
        if (lo > hi) {
            // "60/5": a single value past the end is what is wrong, not the direction.
            if (lowAndHigh.length === 1) return `the ${f.name} field "${expr}" has ${lowAndHigh[0]}: it must be ${allowed}`;
            return `the ${f.name} field "${expr}" runs backwards: ${lowAndHigh[0]} is after ${lowAndHigh[1]}`;
        }
        for (let v = lo; v <= hi; v += step) out.values.add(v);
        out.star ||= star; // bits |= bit (:244)
    }
    return out;
}

/**
 * A schedule's fields as `reader` reads it (a NodePool budget by default), or why that reader refuses it: the number
 * of fields, the first wrong field, or the descriptor, pattern or time zone rule it breaks.
 */
export function parseCron(schedule: string, reader: CronReader = "budget"): Cron | string {
    // Karpenter prefixes "TZ=UTC ", so Parse trims the rest of its spaces (parser.go:95-103); the CronJob's validation
    // parses the schedule as it is, and Kubernetes refuses "TZ" in it when timeZone is set.
    if (reader === "cronjob" && schedule.includes("TZ")) return `it names a time zone (TZ): the CronJob's timeZone is Etc/UTC, and Kubernetes refuses TZ in its schedule`;
    const spec = reader === "budget" ? goTrimSpace(schedule) : schedule;
    let parts: string[];
    if (spec.startsWith("@")) {
        // Descriptors (parser.go:106-111, 364-434): exactly one of the seven, or "@every <duration>".
        if (spec.startsWith("@every ")) {
            // Refused on purpose: a ConstantDelaySchedule fires a fixed delay after whenever it is asked (constantdelay.go),
            // so a budget would be always or never active and a CronJob's runs would not keep to a time of day. Karpenter's
            // CRD refuses it anyway unless trailing spaces pad it to five runs.
            return `it is "@every", a delay from whenever the schedule is read rather than times of day: use five fields or one of ${Object.keys(CRON_DESCRIPTORS).join(", ")}`;
        }
        const fields = CRON_DESCRIPTORS[spec];
        if (fields === undefined) return `it is not a descriptor robfig/cron knows (exactly, with nothing around it)`;
        parts = fields.split(" ");
    } else {
        parts = goFields(spec);
        if (parts.length !== 5) return `it has ${parts.length} field${parts.length === 1 ? "" : "s"}`;
    }
    const fields: Field[] = [];
    for (let i = 0; i < 5; i++) {
        const field = parseCronField(parts[i], i);
        if (typeof field === "string") return field;
        fields.push(field);
    }
    if (reader === "budget" && !matchesKarpenterSchedulePattern(schedule)) {
        return `Karpenter's NodePool CRD refuses it: its pattern wants a descriptor at the very start, or five fields split by spaces, tabs or line breaks`;
    }
    return { fields: fields.map((f) => f.values), domStar: fields[2].star, dowStar: fields[4].star };
}
