// When the node recycler (components/nodeRecycler.ts) may start a run: outside every protected window, while the
// budgets allow Karpenter to replace nodes, and early enough that a node marked or deleted at the start drains before
// the next window. Walked over the model year (components/models/disruptionBudgets.ts), without Pulumi.
import { type DailyWindow, type DisruptionReason, MODEL_YEAR, SPAN_DAYS, SPAN_FROM, forbiddenInSpan, forbiddenMinutes, localInstant, windowMinutes } from "./disruptionBudgets.ts";
import { type DisruptionBudget } from "./nodePool.ts";

/**
 * How long a mark stays for Karpenter to begin deleting the NodeClaim before the recycler withdraws it: a pass of its
 * disruption loop (every 10 s when idle, kubernetes-sigs/karpenter v1.14.1 pkg/controllers/disruption/controller.go:71,
 * 182), then a replacement launched and initialized, two minutes or so (capacity.nodeLaunchSeconds).
 */
export const MARK_SECONDS = 900;

/**
 * How long a drift command Karpenter started before the withdrawal may still wait for its replacement before it deletes
 * the old NodeClaim: its retry duration, 80 ms per queued command but at least 10 minutes, after which it gives up
 * (pkg/controllers/disruption/queue.go:62-68, 87-93, 189-195); longer only with over 7,500 commands queued.
 */
export const COMMAND_SECONDS = 600;

/** A daily window the recycler keeps out of, by the nodePool key that sets it: sendingHours, nightlyBatch. */
export type ProtectedWindow = DailyWindow & { name: string };

/** How long before a protected window a run must stop marking: the mark, a command still in flight, the drain. */
export const markClearanceSeconds = (drainSeconds: number) => MARK_SECONDS + COMMAND_SECONDS + drainSeconds;

const DAY = 1440;

export interface RecycleWindow {
    /** Why the schedule does not fit, or undefined. */
    problem?: string;
    /** The shortest time, over the model year, from a run's start to the next protected window (minutes). */
    shortestMinutes: number;
    /** The longest time between two runs' starts (minutes): how long a node that gets stuck just after a run waits. */
    longestGapMinutes: number;
}

const memo = new Map<string, RecycleWindow>();

/**
 * Whether every run of `schedule` (UTC, robfig/cron as Kubernetes' CronJob controller and Karpenter's budgets read
 * it, components/models/cron.ts) in the model year starts outside every protected window, in EST and EDT alike; in a minute
 * the budgets allow Drifted and Underutilized disruption (the window in which Karpenter itself replaces nodes); and at
 * least `clearanceMinutes` before the next protected window begins, so that what it starts there drains before it.
 */
export function recycleWindow(schedule: string, windows: ProtectedWindow[], budgets: DisruptionBudget[], clearanceMinutes: number): RecycleWindow {
    const key = JSON.stringify([schedule, windows, budgets, clearanceMinutes]);
    let w = memo.get(key);
    if (!w) memo.set(key, (w = findRecycleWindow(schedule, windows, budgets, clearanceMinutes)));
    return w;
}

function findRecycleWindow(schedule: string, windows: ProtectedWindow[], budgets: DisruptionBudget[], clearanceMinutes: number): RecycleWindow {
    // A one-minute budget on the schedule marks exactly the minutes a run starts.
    // Over the model year and the next, for the gap after the year's last run.
    const runs = forbiddenMinutes([{ nodes: "0", schedule, duration: "1m" }], "Drifted", SPAN_FROM, SPAN_DAYS + 366, "cronjob");
    const inside = windows.map((w) => windowMinutes(w));
    const forbidden: [DisruptionReason, Uint8Array][] = (["Drifted", "Underutilized"] as const).map((r) => [r, forbiddenInSpan(budgets, r)]);
    // The next protected minute from `t` (Infinity past the last one), and whose it is.
    const nextProtected = (t: number) =>
        inside.reduce((best, w, i) => {
            const at = w.indexOf(1, t);
            return at >= 0 && at < best.at ? { at, window: i } : best;
        }, { at: Infinity, window: -1 });
    const nameAt = (t: number) => windows[nextProtected(t).window]?.name;
    const windowOf = (name: string) => windows.find((x) => x.name === name)!;
    const named = (name: string) => `${name} (${windowOf(name).start}-${windowOf(name).end} ${windowOf(name).timeZone})`;
    // Local in the window a problem names, else in the first (sending hours).
    const when = (t: number, w: DailyWindow = windows[0]) => localInstant(t, w.timeZone);
    let shortest = Infinity;
    let longest = 0;
    let last: number | undefined;
    // Runs in the model year itself; the span's two days either side only serve the windows around them.
    for (let t = runs.indexOf(1, 2 * DAY); t >= 0 && t < (SPAN_DAYS - 2) * DAY; t = runs.indexOf(1, t + 1)) {
        const next = nextProtected(t).at - t;
        if (next === 0) return { problem: `must start runs outside ${named(nameAt(t))}: a run starts on ${when(t, windowOf(nameAt(t)))}`, shortestMinutes: 0, longestGapMinutes: 0 };
        const blocked = forbidden.filter(([, f]) => f[t]).map(([r]) => r);
        if (blocked.length) {
            return {
                problem: `must start runs when the budgets allow Drifted and Underutilized disruption, as Karpenter replaces nodes only then: a run starts on ${when(t)}, when a budget allows no ${blocked.join(" or ")} disruption (nodes "0")`,
                shortestMinutes: 0,
                longestGapMinutes: 0,
            };
        }
        if (next < clearanceMinutes) {
            return {
                problem: `must start runs at least ${clearanceMinutes} minutes before ${named(nameAt(t))} begin (nodePool.terminationGracePeriod, and ${(MARK_SECONDS + COMMAND_SECONDS) / 60} minutes for Karpenter to replace a node marked drifted), so that a node marked or deleted at the start drains before them: a run starts on ${when(t, windowOf(nameAt(t)))}, ${next} minutes before`,
                shortestMinutes: next,
                longestGapMinutes: 0,
            };
        }
        shortest = Math.min(shortest, next);
        if (last !== undefined) longest = Math.max(longest, t - last);
        last = t;
    }
    if (shortest === Infinity || last === undefined) return { problem: `never starts a run in ${MODEL_YEAR}`, shortestMinutes: 0, longestGapMinutes: 0 };
    // From the year's last run to the next one.
    const following = runs.indexOf(1, last + 1);
    longest = Math.max(longest, following < 0 ? Infinity : following - last);
    return { shortestMinutes: shortest, longestGapMinutes: longest };
}
