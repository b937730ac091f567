// The in-cluster scripts' API client, shipped beside each script in its ConfigMap (BurstScaleDownOrder's annotator,
// NodeRecycler's recycler): plain Node.js with no dependencies, as the scripts are.
"use strict";
const fs = require("fs");
const http = require("http");
const https = require("https");

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** No request waits longer: a stalled API server must not hang a pass (or a run) forever. */
const REQUEST_SECONDS = 10;

/**
 * A minimal client for the API server: in the cluster, the service account's token (read at every request, since
 * the kubelet rotates it) and CA; in tests, KUBE_API_URL and KUBE_TOKEN_FILE. Every request settles within
 * REQUEST_SECONDS. A body is sent as JSON, with `contentType` (merge-patch+json for a patch) or application/json.
 */
function apiClient(env) {
    const host = env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_HOST.includes(":") ? `[${env.KUBERNETES_SERVICE_HOST}]` : env.KUBERNETES_SERVICE_HOST;
    const base = new URL(env.KUBE_API_URL || `https://${host}:${env.KUBERNETES_SERVICE_PORT}`);
    const tokenFile = env.KUBE_TOKEN_FILE || `${SERVICE_ACCOUNT_DIR}/token`;
    const ca = base.protocol === "https:" ? fs.readFileSync(env.KUBE_CA_FILE || `${SERVICE_ACCOUNT_DIR}/ca.crt`) : undefined;
    return (method, path, body, contentType = "application/json") =>
        new Promise((resolve, reject) => {
            const what = `${method} ${path.split("?")[0]}`;
            const payload = body === undefined ? undefined : JSON.stringify(body);
            const headers = { Accept: "application/json", Authorization: `Bearer ${fs.readFileSync(tokenFile, "utf8").trim()}` };
            if (payload !== undefined) Object.assign(headers, { "Content-Type": contentType, "Content-Length": Buffer.byteLength(payload) });
            const transport = base.protocol === "https:" ? https : http;
            // Settles exactly once: an answer, an error, a connection cut mid-answer, or the deadline.
            let settled = false;
            const settle = (fn, value) => {
                if (settled) return;
                settled = true;
                clearTimeout(deadline);
                fn(value);
            };
            const req = transport.request(new URL(path, base), { method, headers, ca }, (res) => {
                let text = "";
                res.setEncoding("utf8");
                res.on("data", (chunk) => (text += chunk));
                res.on("error", () => settle(reject, new Error(`${what}: the connection closed mid-answer`)));
                res.on("close", () => {
                    if (!res.complete) return settle(reject, new Error(`${what}: the connection closed mid-answer`));
                    let json;
                    try {
                        json = JSON.parse(text);
                    } catch {
                        json = undefined;
                    }
                    settle(resolve, { status: res.statusCode, json, text });
                });
            });
            const deadline = setTimeout(() => {
                req.destroy();
                settle(reject, new Error(`${what}: no whole answer in ${REQUEST_SECONDS} s`));
            }, REQUEST_SECONDS * 1000);
            req.on("error", (err) => settle(reject, new Error(`${what}: ${err.message}`)));
            req.end(payload);
        });
}

/** The API's message of a failed answer, or its text. */
const message = (res) => (res.json && res.json.message) || res.text;

/** Every item of a list, page by page. */
async function listAll(api, path) {
    const items = [];
    let next = "";
    do {
        const res = await api("GET", `${path}&limit=500${next ? `&continue=${encodeURIComponent(next)}` : ""}`);
        if (res.status !== 200) throw new Error(`GET ${path.split("?")[0]}: HTTP ${res.status} ${message(res)}`);
        if (!res.json || !Array.isArray(res.json.items)) throw new Error(`GET ${path.split("?")[0]}: the answer is not a list`);
        items.push(...res.json.items);
        next = res.json.metadata && res.json.metadata.continue;
    } while (next);
    return items;
}

/** The script's log: one JSON line per event, as Fluent Bit ships container logs, handed to `write`, timed by `now`. */
const logger = (write, now) => (level, msg, fields) => write(JSON.stringify({ time: new Date(now()).toISOString(), level, msg, ...fields }));

/** A sleep's time passing on a timer; what ends it early. */
const timer = (seconds, done) => {
    const t = setTimeout(done, seconds * 1000);
    return () => clearTimeout(t);
};

/**
 * What stops a script that waits between steps (SIGTERM, in the pod): `request()` turns `requested` true and ends the
 * `sleep` under way at once; once requested, a sleep does not wait at all (a stop that lands during a request would
 * otherwise wait out the next whole interval, past the 20 s the process has left). A `pause` is a wait no stop ends:
 * the short ones between requests the script still makes once stopped. `pass(seconds, done)` lets a sleep's time pass
 * and returns what ends it early: a timer, or a test's clock.
 */
function stopper(pass = timer) {
    let wake = () => {};
    const stop = {
        requested: false,
        request: () => {
            stop.requested = true;
            wake();
        },
        sleep: (seconds) =>
            new Promise((resolve) => {
                if (stop.requested) return resolve();
                const cancel = pass(seconds, resolve);
                wake = () => {
                    cancel();
                    resolve();
                };
            }),
        pause: (seconds) => new Promise((resolve) => void pass(seconds, resolve)),
    };
    return stop;
}

/**
 * SIGTERM, for a script's process: `stop` is requested, and the process exits `stopSeconds` later whatever the step
 * under way is doing (the pod's grace is longer).
 */
function stopOnSigterm(stop, stopSeconds) {
    process.on("SIGTERM", () => {
        stop.request();
        setTimeout(() => process.exit(0), stopSeconds * 1000).unref();
    });
}

module.exports = { REQUEST_SECONDS, apiClient, listAll, logger, message, stopOnSigterm, stopper };
