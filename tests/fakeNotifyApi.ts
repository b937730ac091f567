// An in-process GC Notify API for the drill's end-to-end check, answering as notification-api 72e3ae1e does:
// POST /v2/notifications/{email,sms} (201 with the notification's id, app/v2/notifications/post_notifications.py),
// GET /v2/notifications/{id} (200 with its status, or 404 {result, message}, get_notifications.py:23-33), errors as
// {status_code, errors: [{error, message}]} (app/v2/errors.py), and the key in `Authorization: ApiKey-v1 <key>`
// (app/authentication/auth.py). A test-key notification goes created → sending → delivered on the test's clock.
import * as crypto from "crypto";
import * as http from "http";
import { LoopbackServer } from "./loopbackServer.ts";

export interface FakeNotifyOptions {
    /** The one key the API takes. */
    key: string;
    now: () => number;
    /** Seconds from the POST to `sending`, then to `delivered` (a beat tick and three queue hops, about 10-20 s). */
    sendingAfter?: number;
    deliveredAfter?: number;
    /** The nth notifications (1-based) that never leave `sending`, as one whose receipt never comes. */
    stuck?: number[];
}

export class FakeNotifyApi extends LoopbackServer {
    /** "METHOD path" of every request, and every Authorization header received. */
    readonly requests: string[] = [];
    readonly authorizations: string[] = [];
    readonly notifications: { id: string; created: number; body: any; type: string }[] = [];
    private readonly o: FakeNotifyOptions;

    constructor(o: FakeNotifyOptions) {
        super();
        this.o = o;
    }

    protected handle(req: http.IncomingMessage, res: http.ServerResponse): void {
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
            const p = new URL(req.url ?? "/", "http://x").pathname;
            this.requests.push(`${req.method} ${p}`);
            this.authorizations.push(String(req.headers.authorization ?? ""));
            const reply = (code: number, o: object) => {
                res.writeHead(code, { "Content-Type": "application/json" });
                res.end(JSON.stringify(o));
            };
            if (req.headers.authorization !== `ApiKey-v1 ${this.o.key}`) return reply(403, { status_code: 403, errors: [{ error: "AuthError", message: "Invalid token: API key not found" }] });
            const post = /^\/v2\/notifications\/(email|sms)$/.exec(p);
            if (post && req.method === "POST") {
                const b = JSON.parse(body || "{}");
                const missing = ["template_id", post[1] === "email" ? "email_address" : "phone_number"].filter((k) => !b[k]);
                if (missing.length) return reply(400, { status_code: 400, errors: missing.map((k) => ({ error: "ValidationError", message: `${k} is a required property` })) });
                const id = crypto.randomUUID();
                this.notifications.push({ id, created: this.o.now(), body: b, type: post[1] });
                return reply(201, { id, reference: b.reference ?? null, content: { body: "drill", subject: "drill" }, uri: `${this.url}/v2/notifications/${id}`, template: { id: b.template_id, version: 1, uri: "" }, scheduled_for: null });
            }
            const get = /^\/v2\/notifications\/([^/]+)$/.exec(p);
            if (get && req.method === "GET") {
                const i = this.notifications.findIndex((n) => n.id === get[1]);
                if (i < 0) return reply(404, { result: "error", message: "Notification not found in database" });
                const n = this.notifications[i];
                const age = (this.o.now() - n.created) / 1000;
                const status = this.o.stuck?.includes(i + 1) ? (age >= (this.o.sendingAfter ?? 10) ? "sending" : "created") : age >= (this.o.deliveredAfter ?? 20) ? "delivered" : age >= (this.o.sendingAfter ?? 10) ? "sending" : "created";
                return reply(200, { id: n.id, status, type: n.type, reference: n.body.reference ?? null, template: { id: n.body.template_id } });
            }
            reply(404, { status_code: 404, errors: [{ error: "NotFound", message: `the fake does not serve ${req.method} ${p}` }] });
        });
    }
}
