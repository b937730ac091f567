// What GC Notify's burst Celery workers' own logs say of their tasks, read back from CloudWatch Logs after the drill
// (their pods are gone by then). A pure reading of Fluent Bit's records, then the reads themselves (FilterLogEvents,
// paginated, with a deadline).
//
// Where the lines are: GC Notify's Fluent Bit tails /var/log/containers/notify-celery* and ships each record to the log
// group /aws/containerinsights/<cluster>/application, one stream per container name, with the kubernetes filter's
// metadata (kubernetes.pod_name...) beside the line (notification-manifests 609853e2
// helmfile/overrides/system/fluentbit-agent.yaml.gotmpl, celery-log.conf: its INPUT, FILTER and OUTPUT). The line is in
// `log`: that input's multiline parser keeps the container runtime's prefix (`<time> stdout F `) and Merge_Log finds no
// JSON in it; for a record that was JSON, the kubernetes filter puts the parsed object in `log_processed`.
//
// What a line says: Celery 5.6.3 at INFO logs `Task <name>[<id>] received` when a worker takes a message
// (celery/worker/strategy.py:161, celery/app/trace.py:53-55), and one line per outcome, each `Task <name>[<id>] ...`:
// `succeeded in <s>s: <value>` (trace.py:58-60), `raised expected|raised unexpected|INTERNAL ERROR: <exc>` (:63-70),
// `ignored` (:73-75), `<exc>` when rejected (:78-80), `retry: <exc>` (:83-85). GC Notify's workers run --loglevel=INFO.
import type { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { MAX_FILTER_PATTERN } from "../components/models/filterPattern.ts";
import type { Clock } from "./scaleTest.ts";

/**
 * The longest visibility timeout of the queues GC Notify's burst workers read (310 s, notification-api 72e3ae1e
 * app/config.py:418-423; notification-terraform c446304c aws/common/sqs.tf): a message received and never acknowledged by a killed
 * worker is another worker's within it.
 */
export const GC_NOTIFY_LONGEST_VISIBILITY_SECONDS = 310;

export interface TaskLine {
    name: string;
    id: string;
    /** "received", or what ended it: succeeded, raised..., ignored, retry... */
    outcome: string;
}

/** Every `Task <name>[<id>] <rest>` in a log text (a record may hold several lines). */
export function taskLines(text: string): TaskLine[] {
    return [...text.matchAll(/Task (\S+?)\[([^\]\s]+)\] ([^\n]*)/g)].map((m) => ({ name: m[1], id: m[2], outcome: m[3].startsWith("received") ? "received" : m[3].split(/[\s:]/)[0] }));
}

/** A Fluent Bit record as CloudWatch Logs holds it: the pod it came from and its text (the runtime's prefix removed). */
export function fluentBitRecord(message: string): { pod?: string; text: string } {
    let r: any;
    try {
        r = JSON.parse(message);
    } catch {
        return { text: message };
    }
    const processed = r?.log_processed;
    const text = [typeof r?.log === "string" ? r.log.replace(/^\S+ (stdout|stderr) [FP] /gm, "") : "", typeof processed === "string" ? processed : typeof processed?.message === "string" ? processed.message : ""].join("\n");
    return { pod: r?.kubernetes?.pod_name, text };
}

/** One displaced worker's tasks as its log tells them. */
export interface PodTasks {
    pod: string;
    /** When it was evicted: a line at or after it shows its log reached CloudWatch past its shutdown. */
    evicted: number;
    lines: number;
    /** Its latest line's time. */
    last?: number;
    received: Map<string, string>;
    ended: Set<string>;
    /** Received by another worker after this one exited: never acknowledged here, so SQS gave it again. */
    redelivered: Set<string>;
}

export interface LiveTasks {
    group: string;
    pods: PodTasks[];
    /** Why the logs could not be read (an API error); the check fails with it. */
    error?: string;
}

/** The tasks a pod received and saw no outcome of before its container exited. */
export const unfinished = (p: PodTasks) => [...p.received.keys()].filter((id) => !p.ended.has(id));
/** Its log reached CloudWatch past its eviction, so a missing outcome is not a line still on its way. */
export const complete = (p: PodTasks) => p.last !== undefined && p.last >= p.evicted;

/** Adds one FilterLogEvents event to the pods it concerns. */
export function addEvent(pods: PodTasks[], e: { timestamp?: number; message?: string }): void {
    const r = fluentBitRecord(e.message ?? "");
    const p = pods.find((x) => x.pod === r.pod);
    if (!p) return;
    p.lines++;
    if (e.timestamp !== undefined) p.last = Math.max(p.last ?? 0, e.timestamp);
    for (const t of taskLines(r.text)) {
        if (t.outcome === "received") p.received.set(t.id, t.name);
        else p.ended.add(t.id);
    }
}

// ---- Reading them.

/** Filter patterns of at most CloudWatch's length, each matching any of `terms`. */
export function patterns(terms: string[], one: (t: string) => string, join: string, wrap: (body: string) => string): string[] {
    const out: string[] = [];
    let current: string[] = [];
    for (const t of terms) {
        if (current.length && wrap([...current, one(t)].join(join)).length > MAX_FILTER_PATTERN) {
            out.push(wrap(current.join(join)));
            current = [];
        }
        current.push(one(t));
    }
    if (current.length) out.push(wrap(current.join(join)));
    return out;
}

/** How the caller makes an AWS call (its deadlines, throttling and errors): the answer, or the error naming `what`. */
export type AwsCaller = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/** Every event of `group` in [from, to] that `pattern` matches, page by page; throws when `deadline` passes first. */
export async function filterLogEvents(logs: CloudWatchLogsClient, call: AwsCaller, clock: Clock, q: { group: string; pattern: string; from: number; to: number; deadline: number }, each: (e: { timestamp?: number; message?: string }) => void): Promise<void> {
    let token: string | undefined;
    const what = `logs:FilterLogEvents ${q.group}`;
    // Loaded here, as the drill loads its clients: not for a command that stops at a refusal.
    const { FilterLogEventsCommand } = await import("@aws-sdk/client-cloudwatch-logs");
    do {
        if (clock.now() > q.deadline) throw new Error(`FilterLogEvents on ${q.group} did not finish by its deadline`);
        const page = await call(what, () => logs.send(new FilterLogEventsCommand({ logGroupName: q.group, filterPattern: q.pattern, startTime: q.from, endTime: q.to, nextToken: token })));
        // An answer without its events list is no "nothing logged".
        if (!Array.isArray(page.events)) throw new Error(`${what} answered without events: cannot check (an empty or cut answer is not read as "none")`);
        for (const e of page.events) each(e);
        token = page.nextToken;
    } while (token);
}
