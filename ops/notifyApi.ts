// The drill's optional end-to-end check (docs/drill.md): notifications sent through GC Notify's API with a test API key
// while the node goes, each followed until GC Notify gives it a final status. What it covers, from notification-api
// 72e3ae1e: POST /v2/notifications/{email,sms} puts the notification in the Redis inbox
// (app/v2/notifications/post_notifications.py:440-454); beat-inbox-* on periodic-tasks (app/config.py:473-502) queues
// save-* on a database queue (app/celery/scheduled_tasks.py:282-387); save-* stores it and queues deliver_* on
// research-mode-tasks (a test key's queue, app/notifications/process_notifications.py:261-264, 301-303), whose fake
// provider answer is a receipt on research-mode-tasks again (app/celery/research_mode_tasks.py:35-59). Only core-tasks consumes research-mode-tasks and the
// database queues (static on on-demand, burst on spot; scripts/run_celery_core_tasks.sh:12-15), periodic-tasks is
// periodic's (scripts/run_celery_periodic.sh:9; core-tasks' too in production):
// so this proves those workers carry notifications through an interruption, not the send-email, send-sms or
// delivery-receipts workers, and it cannot tell a burst pod's work from a static pod's.
//
// The key comes from the environment only (NOTIFY_API_KEY), is sent only in the Authorization header, and never
// printed. A pure core (what is final, what to refuse) and a small client (fetch, with a timeout per request).

/** GC Notify's final statuses (notification-api 72e3ae1e app/models.py:1697-1702). */
export const FINAL_STATUSES = ["delivered", "permanent-failure", "technical-failure", "temporary-failure"];
/**
 * Addresses GC Notify answers without storing anything (app/config.py:633-639, post_notifications.py:435-436): GET
 * then answers 404, so they prove nothing.
 */
export const SIMULATED_RECIPIENTS = ["simulate-delivered@notification.canada.ca", "simulate-delivered-2@notification.canada.ca", "simulate-delivered-3@notification.canada.ca", "+16132532222", "+16132532223", "+16132532224"];
/** GC Notify's API key prefix (app/config.py:203); the service id and the secret follow (app/authentication/auth.py). */
const KEY_PREFIX = "gcntfy-";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** At most this many notifications a drill. */
export const MAX_NOTIFICATIONS = 100;

export interface NotifyTarget {
    /** The API's base URL, such as https://api.staging.notification.cdssandbox.xyz */
    api: string;
    templateId: string;
    /** An email address (POST .../email) or a phone number (POST .../sms). */
    to: string;
    key: string;
}

/** Every way the end-to-end inputs are wrong, each naming the flag or variable; [] when fine. Never echoes the key. */
export function notifyTargetProblems(t: Partial<NotifyTarget>): string[] {
    const problems: string[] = [];
    if (!t.key) problems.push("NOTIFY_API_KEY must hold a GC Notify test API key (from the environment only, never a flag or config)");
    else if (!t.key.startsWith(KEY_PREFIX) || t.key.length < KEY_PREFIX.length + 73) problems.push(`NOTIFY_API_KEY is not a GC Notify API key (${KEY_PREFIX}<name>-<service id>-<secret>)`);
    if (!t.api) problems.push("--notify-api (or NOTIFY_API_URL) must give GC Notify's API base URL");
    else if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(t.api)) problems.push(`--notify-api must be an http(s) URL (got "${t.api}")`);
    if (!t.templateId) problems.push("--notify-template (or NOTIFY_TEMPLATE_ID) must give the template to send");
    else if (!UUID.test(t.templateId)) problems.push(`--notify-template must be a template id (a UUID) (got "${t.templateId}")`);
    if (!t.to) problems.push("--notify-to (or NOTIFY_TO) must give the email address or phone number to send to");
    else if (SIMULATED_RECIPIENTS.includes(t.to.includes("@") ? t.to.toLowerCase() : t.to.replace(/[\s().-]/g, ""))) problems.push(`--notify-to ${t.to} is one of GC Notify's simulated recipients: nothing is stored for them (GET answers 404), so they prove nothing; use any other address with the test key`);
    return problems;
}

export const notificationType = (to: string) => (to.includes("@") ? "email" : "sms");

/** One notification: sent when, and each status GC Notify gave it. */
export interface NotificationRecord {
    id: string;
    sent: number;
    status?: string;
    /** When it was first seen final. */
    final?: number;
}

export const isFinal = (n: NotificationRecord) => n.status !== undefined && FINAL_STATUSES.includes(n.status);

/** An answer GC Notify's API gave that the drill cannot go on with: its status and what it said. */
export class NotifyApiError extends Error {
    readonly status: number;
    constructor(status: number, message: string) {
        super(message);
        this.status = status;
    }
}

const REQUEST_TIMEOUT_MS = 30_000;

/** POST and GET with the key in the Authorization header (`ApiKey-v1 <key>`, app/authentication/auth.py AUTH_TYPES). */
export class NotifyClient {
    private readonly t: NotifyTarget;

    constructor(t: NotifyTarget) {
        this.t = t;
    }

    private async request(method: "GET" | "POST", path: string, body?: object): Promise<any> {
        const url = `${this.t.api.replace(/\/+$/, "")}${path}`;
        let res: Response;
        try {
            res = await fetch(url, {
                method,
                headers: { Authorization: `ApiKey-v1 ${this.t.key}`, "Content-Type": "application/json", Accept: "application/json" },
                body: body ? JSON.stringify(body) : undefined,
                signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
            });
        } catch (e) {
            throw new NotifyApiError(0, `${method} ${path}: ${(e as Error).message}${(e as any).cause?.code ? ` (${(e as any).cause.code})` : ""}`);
        }
        const text = await res.text();
        let json: any;
        try {
            json = JSON.parse(text);
        } catch {
            json = undefined;
        }
        if (!res.ok) {
            // v2 errors: {status_code, errors: [{error, message}]}; a 404 of GET: {result, message}.
            const said = json?.errors?.map((e: any) => `${e.error}: ${e.message}`).join("; ") ?? json?.message ?? text.slice(0, 200);
            throw new NotifyApiError(res.status, `${method} ${path}: HTTP ${res.status} ${said}`);
        }
        return json;
    }

    /** POST /v2/notifications/{email|sms}: the new notification's id. */
    async send(reference: string): Promise<string> {
        const type = notificationType(this.t.to);
        const r = await this.request("POST", `/v2/notifications/${type}`, { [type === "email" ? "email_address" : "phone_number"]: this.t.to, template_id: this.t.templateId, reference });
        if (typeof r?.id !== "string") throw new NotifyApiError(201, `POST /v2/notifications/${type}: no id in the answer`);
        return r.id;
    }

    /** GET /v2/notifications/{id}: its status. */
    async status(id: string): Promise<string> {
        const r = await this.request("GET", `/v2/notifications/${encodeURIComponent(id)}`);
        // An answer without a status is no status: it is asked again, and the check names what came back.
        if (typeof r?.status !== "string") throw new NotifyApiError(200, `GET /v2/notifications/${id}: no status in the answer`);
        return r.status;
    }
}
