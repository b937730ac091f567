// Cron schedules as robfig/cron v3's ParseStandard reads them (Karpenter v1.14.1 calls it in pkg/apis/v1/nodepool.go
// Budget.IsActive, with "TZ=UTC" prefixed at :416): five fields or a descriptor, names case-insensitive. One parser
// for config validation's messages and for the disruption budgets' model.

/** The descriptors ParseStandard accepts (robfig/cron parser.go parseDescriptor, case-sensitive), as five fields. */
export const CRON_DESCRIPTORS: Record<string, string> = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
};

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
/** Bounds of each field (robfig/cron spec.go seconds..dow, less seconds). */
const FIELDS: { name: string; min: number; max: number; names?: string[] }[] = [
    { name: "minute", min: 0, max: 59 },
    { name: "hour", min: 0, max: 23 },
    { name: "day of month", min: 1, max: 31 },
    { name: "month", min: 1, max: 12, names: MONTHS },
    { name: "day of week", min: 0, max: 6, names: DAYS },
];

export interface Cron {
    fields: Set<number>[];
    /** Day of month or day of week is `*` (or `?`): then both must match, else either (robfig/cron spec.go dayMatches). */
    dayStar: boolean;
}

/**
 * One field (0 minute ... 4 day of week): a comma list of *, ?, n or n-m, each with an optional /step. The values it
 * matches, or why it is wrong in words that name the field and what it allows.
 */
function parseCronField(expr: string, index: number): Set<number> | string {
    const f = FIELDS[index];
    const allowed = `${f.min}-${f.max}${f.names ? ` or ${f.names[0]}-${f.names[f.names.length - 1]}` : ""}`;
    const value = (v: string) => {
        const i = f.names?.indexOf(v.toLowerCase()) ?? -1;
        if (i >= 0) return i + (f.name === "month" ? 1 : 0);
        return /^[0-9]+$/.test(v) ? Number(v) : NaN;
    };
    const out = new Set<number>();
    for (const part of expr.split(",")) {
        const m = /^(\*|\?|[^-/]+)(?:-([^/]+))?(?:\/(.+))?$/.exec(part);
        if (!m) return `the ${f.name} field "${expr}" is not a number, range or list (allowed: ${allowed})`;
        const [, start, end, step] = m;
        if (step !== undefined && !(/^[0-9]+$/.test(step) && Number(step) > 0)) return `the ${f.name} field "${expr}" has step "${step}": a step must be a whole number above 0`;
        let lo = f.min;
        let hi = f.max;
        if (start === "*" || start === "?") {
            if (end !== undefined) return `the ${f.name} field "${expr}" is not a number, range or list (allowed: ${allowed})`;
        } else {
            for (const v of [start, end].filter((x): x is string => x !== undefined)) {
                const n = value(v);
                if (!(n >= f.min && n <= f.max)) return `the ${f.name} field "${expr}" has ${v}: it must be ${allowed}`;
            }
            lo = value(start);
            // "5/15" runs from 5 to the end of the range, as in robfig/cron getRange.
            hi = end !== undefined ? value(end) : step !== undefined ? f.max : lo;
            if (hi < lo) return `the ${f.name} field "${expr}" runs backwards: ${start} is after ${end}`;
        }
        for (let v = lo; v <= hi; v += step ? Number(step) : 1) out.add(v);
    }
    return out;
}

/** A schedule's fields, or why it does not parse (the number of fields, or the first wrong field). */
export function parseCron(schedule: string): Cron | string {
    const parts = (CRON_DESCRIPTORS[schedule.trim()] ?? schedule.trim()).split(/\s+/);
    if (parts.length !== 5) return `it has ${parts.length} field${parts.length === 1 ? "" : "s"}`;
    const fields: Set<number>[] = [];
    for (let i = 0; i < 5; i++) {
        const set = parseCronField(parts[i], i);
        if (typeof set === "string") return set;
        fields.push(set);
    }
    const star = (s: string) => s === "*" || s === "?" || s.startsWith("*/");
    return { fields, dayStar: star(parts[2]) || star(parts[4]) };
}
