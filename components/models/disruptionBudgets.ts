// A pure model of how Karpenter v1.14.1 reads a NodePool's disruption budgets over time, and of the daily windows
// they must protect: sending hours and GC Notify's nightly batch. Used by config validation (budgets that forbid
// Underutilized and Drifted throughout both windows, an expireAfter that never lands a node in sending hours, whatever
// minute it was launched), by the recycler's schedule and by the capacity model (when nodes kept after a burst go).
import { type CronReader, cronFiresOnDay, parseCron } from "./cron.ts";
import type { DisruptionBudget } from "./nodePool.ts";

export type DisruptionReason = "Underutilized" | "Empty" | "Drifted";

/**
 * Hours of every day when work runs on the burst nodes, in a time zone: sending hours, the nightly batch. Budgets (in
 * UTC) must cover them in summer and winter time.
 */
export interface DailyWindow {
    /** "08:00": local start. */
    start: string;
    /** "18:00": local end (exclusive); across midnight when not after the start. */
    end: string;
    /** IANA time zone, such as America/Toronto (Eastern: EST UTC-5 in winter, EDT UTC-4 in summer). */
    timeZone: string;
}

const MINUTE = 60_000;
const DAY_MINUTES = 1440;

/** "11h", "30m", "1h30m" (the CRD's budget duration pattern) in minutes. */
function durationMinutes(d: string): number {
    return [...d.matchAll(/([0-9]+)([hm])/g)].reduce((sum, [, n, u]) => sum + Number(n) * (u === "h" ? 60 : 1), 0);
}

/** "0" and "0%" allow no disruption; percentages round up (nodepool.go:396), so any other value allows one. */
const allowsNone = (b: DisruptionBudget) => /^0+%?$/.test(b.nodes);

/**
 * The minutes of a span (UTC, from `from`) in which Karpenter allows no disruption for `reason`: some active
 * budget that applies to it (no reasons, or the reason listed; nodepool.go:364-376, the most restrictive wins)
 * allows 0 nodes. A budget is active from each schedule hit for its duration (nodepool.go:412-425); one without a
 * schedule always. Budgets whose schedule does not parse are ignored here (config validation refuses them). Schedules
 * are read as `reader` reads them (components/models/cron.ts): the recycler's CronJob walks its runs through here too.
 */
export function forbiddenMinutes(budgets: DisruptionBudget[], reason: DisruptionReason, from: Date, days: number, reader: CronReader = "budget"): Uint8Array {
    const total = days * DAY_MINUTES;
    const out = new Uint8Array(total);
    for (const b of budgets.filter((b) => allowsNone(b) && (!b.reasons || b.reasons.includes(reason)))) {
        if (b.schedule === undefined) return out.fill(1);
        const cron = parseCron(b.schedule, reader);
        if (typeof cron === "string") continue;
        const dur = durationMinutes(b.duration ?? "0m");
        // Hits up to `dur` before the span still cover its start; walk whole days, then the matching hours and minutes.
        const [minutes, hours] = cron.fields;
        for (let day = -Math.ceil(dur / DAY_MINUTES); day < days; day++) {
            if (!cronFiresOnDay(cron, new Date(from.getTime() + day * DAY_MINUTES * MINUTE))) continue;
            for (const hour of hours) {
                for (const minute of minutes) {
                    const t = day * DAY_MINUTES + hour * 60 + minute;
                    if (t + dur > 0 && t < total) out.fill(1, Math.max(0, t), Math.min(total, t + dur));
                }
            }
        }
    }
    return out;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** UTC offset of a time zone, in minutes, at an instant ("America/Toronto" in July: -240). */
function utcOffsetMinutes(timeZone: string, at: Date): number {
    let format = formats.get(timeZone);
    if (!format) {
        format = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" });
        formats.set(timeZone, format);
    }
    const parts = format.formatToParts(at);
    const get = (t: string) => Number(parts.find((p) => p.type === t)!.value);
    return Math.round((Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute")) - Math.floor(at.getTime() / MINUTE) * MINUTE) / MINUTE);
}

const zones = new Map<string, boolean>();
export function isTimeZone(timeZone: string): boolean {
    let known = zones.get(timeZone);
    if (known === undefined) {
        try {
            new Intl.DateTimeFormat("en-US", { timeZone });
            known = true;
        } catch {
            known = false;
        }
        zones.set(timeZone, known);
    }
    return known;
}

const offsets = new Map<string, number>();
const clock = (s: string) => Number(s.slice(0, 2)) * 60 + Number(s.slice(3, 5));

/** A daily window on a local calendar day, as UTC minutes since `from`; DST changes at night, so noon's offset holds all day. */
export function localWindow(h: DailyWindow, day: Date, from: Date): { start: number; end: number; offset: number } {
    const noon = day.getTime() + 12 * 60 * MINUTE;
    const key = `${h.timeZone}|${noon}`;
    let offset = offsets.get(key);
    if (offset === undefined) offsets.set(key, (offset = utcOffsetMinutes(h.timeZone, new Date(noon))));
    const base = (day.getTime() - from.getTime()) / MINUTE - offset;
    const start = clock(h.start);
    const end = clock(h.end) > start ? clock(h.end) : clock(h.end) + DAY_MINUTES;
    return { start: base + start, end: base + end, offset };
}

/** The year the checks walk day by day (2026: EDT from 8 March, EST from 1 November), with two days either side. */
export const MODEL_YEAR = 2026;
export const SPAN_FROM = new Date(Date.UTC(MODEL_YEAR, 0, 1) - 2 * DAY_MINUTES * MINUTE);
export const SPAN_DAYS = 365 + 4;
export const yearDays = (): Date[] => Array.from({ length: 365 }, (_, i) => new Date(Date.UTC(MODEL_YEAR, 0, 1 + i)));

export const utcClock = (minutes: number) => {
    const m = ((Math.round(minutes) % DAY_MINUTES) + DAY_MINUTES) % DAY_MINUTES;
    return `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
};

/**
 * The first instant of the model year, as "2026-03-08 12:30 UTC (08:30 local)", at which the budgets allow
 * `reason` during the window; undefined when they forbid it throughout.
 */
function firstUncovered(budgets: DisruptionBudget[], reason: DisruptionReason, h: DailyWindow): string | undefined {
    const forbidden = forbiddenInSpan(budgets, reason);
    const inside = windowMinutes(h);
    // From each minute inside the window to the next one the budgets leave open, and on to the window's next minute.
    const end = (SPAN_DAYS - 2) * DAY_MINUTES;
    for (let t = inside.indexOf(1, 2 * DAY_MINUTES); t >= 0 && t < end; t = inside.indexOf(1, t)) {
        if (!forbidden[t]) return localInstant(t, h.timeZone);
        t = forbidden.indexOf(0, t);
        if (t < 0) break;
    }
    return undefined;
}

/** Minute `t` (UTC minutes since SPAN_FROM) as "2026-03-08 12:30 UTC (08:30 local)", local in `timeZone`. */
export function localInstant(t: number, timeZone: string): string {
    const at = new Date(SPAN_FROM.getTime() + t * MINUTE);
    return `${at.toISOString().slice(0, 10)} ${utcClock(t)} UTC (${utcClock(t + utcOffsetMinutes(timeZone, at))} local)`;
}

/** Whether minute `t` (UTC minutes since SPAN_FROM) is inside sending hours: its own UTC day's window, or the day before's past midnight. */
function inSendingMinute(t: number, h: DailyWindow): boolean {
    const day = Math.floor(t / DAY_MINUTES);
    return [day - 1, day].some((d) => {
        const w = localWindow(h, new Date(SPAN_FROM.getTime() + d * DAY_MINUTES * MINUTE), SPAN_FROM);
        return t >= w.start && t < w.end;
    });
}

/** Whether a node launched at `launch` (a whole minute) expires inside sending hours, expireAfter later. */
export function expiresInSendingHours(launch: Date, expireAfterMinutes: number, h: DailyWindow): boolean {
    return inSendingMinute(Math.round((launch.getTime() - SPAN_FROM.getTime()) / MINUTE) + expireAfterMinutes, h);
}

/**
 * A node launched at some minute of the model year that expires inside sending hours. Expiry ignores budgets and
 * drains a node expireAfter after its creation (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/
 * expiration/controller.go:71-83), and this pool launches nodes at every hour: bursts in sending hours, spot
 * interruption replacements at any hour, consolidation and the recycler's replacements outside sending hours. So every
 * minute of every day of the year is tried as a launch, in EST and EDT alike (launches walk from local midnight of
 * 1 January). Returns the first clash as text, or undefined when none.
 */
export function expiryInSendingHours(expireAfterMinutes: number, h: DailyWindow): string | undefined {
    const first = localWindow(h, new Date(Date.UTC(MODEL_YEAR, 0, 1)), SPAN_FROM);
    const from = 2 * DAY_MINUTES - first.offset;
    const local = (t: number) => {
        const at = new Date(SPAN_FROM.getTime() + t * MINUTE);
        const shifted = new Date(at.getTime() + utcOffsetMinutes(h.timeZone, at) * MINUTE).toISOString();
        return `${shifted.slice(0, 10)} at ${shifted.slice(11, 16)} local`;
    };
    for (let launch = from; launch < from + 365 * DAY_MINUTES; launch++) {
        if (inSendingMinute(launch + expireAfterMinutes, h)) return `a node launched ${local(launch)} expires ${local(launch + expireAfterMinutes)}`;
    }
    return undefined;
}

const cache = new Map<string, Uint8Array>();
function memo(key: string, make: () => Uint8Array): Uint8Array {
    let v = cache.get(key);
    if (!v) cache.set(key, (v = make()));
    return v;
}

/** forbiddenMinutes over the model year's span, computed once per budget list and reason. */
export function forbiddenInSpan(budgets: DisruptionBudget[], reason: DisruptionReason): Uint8Array {
    return memo(`${reason}|${JSON.stringify(budgets)}`, () => forbiddenMinutes(budgets, reason, SPAN_FROM, SPAN_DAYS));
}

/**
 * The minutes of the model year's span (from SPAN_FROM) inside the window: those whose local time (Intl's zone rules,
 * taken every quarter hour, when offsets change) is in [start, end), as the recycler reads it, so a window at night is
 * right on the nights clocks change too. Computed once per window.
 */
export function windowMinutes(h: DailyWindow): Uint8Array {
    return memo(`window|${JSON.stringify(h)}`, () => {
        const out = new Uint8Array(SPAN_DAYS * DAY_MINUTES);
        const start = clock(h.start);
        const end = clock(h.end);
        const offsetAt = (minute: number) => utcOffsetMinutes(h.timeZone, new Date(SPAN_FROM.getTime() + minute * MINUTE));
        // A zone's offset changes at most once a day: where a day starts and ends on one offset it holds all day, and
        // only the days clocks change are read every quarter hour.
        // Minutes [from, to) of the span read at one offset: the window's local days shifted to UTC, clipped.
        const fillAt = (offset: number, from: number, to: number) => {
            for (let day = Math.floor((from + offset) / DAY_MINUTES) - 1; day * DAY_MINUTES - offset < to; day++) {
                const first = day * DAY_MINUTES + start - offset;
                const last = first + (end > start ? end - start : end + DAY_MINUTES - start);
                out.fill(1, Math.max(from, first), Math.max(from, Math.min(to, last)));
            }
        };
        let dayStart = offsetAt(0);
        for (let d = 0; d < SPAN_DAYS; d++) {
            const dayEnd = offsetAt((d + 1) * DAY_MINUTES);
            if (dayStart === dayEnd) fillAt(dayStart, d * DAY_MINUTES, (d + 1) * DAY_MINUTES);
            else for (let q = d * DAY_MINUTES; q < (d + 1) * DAY_MINUTES; q += 15) fillAt(offsetAt(q), q, q + 15);
            dayStart = dayEnd;
        }
        return out;
    });
}

/**
 * One budget, in UTC, that covers the window on every day of the model year, in either season: from its earliest UTC
 * start to its latest UTC end ({ schedule: "0 12 * * *", duration: "11h" } for 08:00-18:00 America/Toronto).
 */
function coveringBudget(h: DailyWindow): { schedule: string; duration: string } {
    let start = Infinity;
    let end = -Infinity;
    for (const day of yearDays()) {
        const w = localWindow(h, day, SPAN_FROM);
        const midnight = (day.getTime() - SPAN_FROM.getTime()) / MINUTE;
        start = Math.min(start, w.start - midnight);
        end = Math.max(end, w.end - midnight);
    }
    const first = ((start % DAY_MINUTES) + DAY_MINUTES) % DAY_MINUTES;
    const length = end - start;
    const duration = `${Math.floor(length / 60) ? `${Math.floor(length / 60)}h` : ""}${length % 60 ? `${length % 60}m` : ""}`;
    return { schedule: `${first % 60} ${Math.floor(first / 60)} * * *`, duration };
}

/** The daily windows a NodePool's budgets protect, by the nodePool key that sets each, and whose work they protect. */
const PROTECTED: { key: "sendingHours" | "nightlyBatch"; work: string }[] = [
    { key: "sendingHours", work: "running batches" },
    { key: "nightlyBatch", work: "GC Notify's nightly tasks" },
];

/**
 * GC Notify's quarterly tasks, as its Celery beat starts them at 23:00 UTC (Celery's timezone is UTC:
 * notification-api 72e3ae1e app/config.py:424-425, and no TIMEZONE is set by notification-manifests) on periodic-tasks,
 * which the burst workers share (app/config.py:561-609), in the order of the year. Neither task has a time limit: QUARTERLY_MINUTES from each
 * start are kept from disruption (docs/capacity.md).
 */
export const QUARTERLY_RUNS: readonly { task: string; day: number; month: number }[] = [
    { task: "insert-quarter-data-for-annual-limits", day: 1, month: 1 },
    { task: "send-quarterly-email", day: 3, month: 1 },
    { task: "insert-quarter-data-for-annual-limits", day: 1, month: 4 },
    { task: "insert-quarter-data-for-annual-limits", day: 1, month: 7 },
    { task: "send-quarterly-email", day: 2, month: 7 },
    { task: "insert-quarter-data-for-annual-limits", day: 1, month: 10 },
    { task: "send-quarterly-email", day: 2, month: 10 },
];
export const QUARTERLY_MINUTES = 120;
/** The budget that covers them: cron cannot list days per month, so it covers days 1-3 of each of their months. */
const QUARTERLY_BUDGET = '{ nodes: "0", reasons: [Underutilized, Drifted], schedule: "0 23 1-3 1,4,7,10 *", duration: 2h }';

/** For each quarterly run of the model year, the first of its QUARTERLY_MINUTES in which `reason` is allowed. */
export function quarterlyGaps(budgets: DisruptionBudget[], reason: DisruptionReason): { task: string; day: number; month: number; minute: number }[] {
    const forbidden = forbiddenInSpan(budgets, reason);
    return QUARTERLY_RUNS.flatMap((r) => {
        const start = (Date.UTC(MODEL_YEAR, r.month - 1, r.day, 23) - SPAN_FROM.getTime()) / MINUTE;
        const minute = forbidden.subarray(start, start + QUARTERLY_MINUTES).indexOf(0);
        return minute < 0 ? [] : [{ ...r, minute }];
    });
}

/** One problem with a NodePool's disruption settings, keyed by the nodePool key it names. */
export interface DisruptionProblem {
    key: string;
    message: string;
}

/**
 * Disruption settings that would disturb running work: consolidation that may replace a node during sending hours or
 * the nightly batch, an expiry that drains a burst's nodes inside sending hours, drift left unbounded in either window
 * when nothing else rolls nodes.
 */
export function disruptionProblems(p: DisruptionSettings): DisruptionProblem[] {
    const key = JSON.stringify([p.consolidationPolicy, p.consolidateAfter, p.expireAfter, p.budgets, p.sendingHours, p.nightlyBatch]);
    let problems = checked.get(key);
    if (!problems) checked.set(key, (problems = findDisruptionProblems(p)));
    return problems;
}

export interface DisruptionSettings {
    consolidationPolicy: "WhenEmpty" | "WhenEmptyOrUnderutilized" | "Balanced";
    consolidateAfter: string;
    expireAfter: string;
    budgets: DisruptionBudget[];
    sendingHours: DailyWindow;
    /** GC Notify's nightly tasks (notification-api app/config.py beat schedule), which run on the burst workers too. */
    nightlyBatch: DailyWindow;
}

// Config is validated many times per run (program, plan, tests); the year's walk is the same each time.
const checked = new Map<string, DisruptionProblem[]>();

function findDisruptionProblems(p: DisruptionSettings): DisruptionProblem[] {
    const badZones = PROTECTED.filter(({ key }) => !isTimeZone(p[key].timeZone));
    if (badZones.length) return badZones.map(({ key }) => ({ key: `${key}.timeZone`, message: `must be an IANA time zone such as America/Toronto (got "${p[key].timeZone}")` }));
    // Schedules were checked field by field by the config schema (stacks/schema.ts cron()) before this runs; a schedule
    // this parser still cannot read counts as never active below, so coverage fails safe.
    // A schedule without a duration (or the reverse) is the CRD's to refuse (NodePool validation names it).
    if (p.budgets.some((b) => (b.schedule === undefined) !== (b.duration === undefined))) return [];
    const h = p.sendingHours;
    const hours = `sendingHours (${h.start}-${h.end} ${h.timeZone})`;
    const problems: DisruptionProblem[] = [];
    // Consolidation may replace a node under running work; with no expiry, drift is what replaces nodes (the recycler's too).
    const needed: [DisruptionReason, string][] = [
        ...(p.consolidationPolicy !== "WhenEmpty" && p.consolidateAfter !== "Never" ? [["Underutilized", `consolidationPolicy is ${p.consolidationPolicy}`] as [DisruptionReason, string]] : []),
        ...(p.expireAfter === "Never" ? [["Drifted", "expireAfter is Never, so drift (a new AMI, a changed NodePool, the recycler) is what replaces nodes"] as [DisruptionReason, string]] : []),
    ];
    for (const { key, work } of PROTECTED) {
        const w = p[key];
        const gaps = needed.flatMap(([reason, why]) => {
            const gap = firstUncovered(p.budgets, reason, w);
            return gap ? [{ reason, why, gap }] : [];
        });
        if (!gaps.length) continue;
        const cover = coveringBudget(w);
        problems.push({
            key: "budgets",
            message: `must allow no ${gaps.map((g) => g.reason).join(" or ")} disruption (nodes "0") throughout ${key} (${w.start}-${w.end} ${w.timeZone}), since ${gaps.map((g) => g.why).join(", and ")}: it is allowed on ${gaps[0].gap}, which would drain nodes under ${work}; add a budget such as { nodes: "0", reasons: [Underutilized, Drifted], schedule: "${cover.schedule}", duration: ${cover.duration} }, which covers ${w.start}-${w.end} ${w.timeZone} all year`,
        });
    }
    const quarterly = needed.flatMap(([reason, why]) => {
        const gap = quarterlyGaps(p.budgets, reason)[0];
        return gap ? [{ reason, why, gap }] : [];
    });
    if (quarterly.length) {
        const { task, day, month, minute } = quarterly[0].gap;
        const at = new Date(Date.UTC(MODEL_YEAR, month - 1, day, 23, minute)).toISOString().replace("T", " ").slice(0, 16);
        problems.push({
            key: "budgets",
            message: `must allow no ${quarterly.map((g) => g.reason).join(" or ")} disruption (nodes "0") for ${QUARTERLY_MINUTES / 60} h from 23:00 UTC on the days GC Notify's quarterly tasks start (1 January, April, July and October; 2 July and October; 3 January), since ${quarterly.map((g) => g.why).join(", and ")}: it is allowed on ${at} UTC, which would drain nodes under ${task}, whose run Celery has already acknowledged; add a budget such as ${QUARTERLY_BUDGET}`,
        });
    }
    // Refused, not warned: expiry cannot be held back once a node has it, a preview warning goes unread, and the
    // recycler (nodePool.recycle) bounds node age without touching sending hours.
    if (p.expireAfter !== "Never") {
        const clash = expiryInSendingHours(durationMinutes(p.expireAfter.replace(/([0-9]+)s/g, "")), h);
        if (clash) {
            problems.push({
                key: "expireAfter",
                message: `must not expire inside ${hours} a node launched at any minute of the day, since expiry ignores budgets and nodes launch at every hour (bursts, spot replacements, consolidation and recycling at night): with ${p.expireAfter}, ${clash}; use Never, with drift kept out of sending hours by a budget, and bound node age with nodePool.recycle.maxAgeDays, which replaces nodes one at a time outside sending hours and the nightly batch`,
            });
        }
    }
    return problems;
}
