// An in-process AWS endpoint for preflight's tests: the real SDK v3 clients, pointed at it with `endpoint` and static
// credentials, send their real requests (serialized and signed) and parse answers shaped as each service's protocol
// and the AWS API reference document them. The service is read from the SigV4 credential scope of each request.
// clientConfig() hands the requests over in process (`transport`); a test that plants a fault on the way (a hang, a
// slow or trickling answer, a huge one) or stops the endpoint before it asks gets HTTP on 127.0.0.1, where the SDK's
// own timeouts act.
// - EC2 (ec2 query, XML): https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_<Action>.html and
//   .../APIReference/errors-overview.html (<Response><Errors><Error>).
// - IAM, SNS, STS (awsQuery, XML <Action>Response/<Action>Result, errors <ErrorResponse><Error>):
//   https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html, API_GetPolicy.html;
//   https://docs.aws.amazon.com/sns/latest/api/API_GetTopicAttributes.html, API_ListSubscriptionsByTopic.html;
//   https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html.
// - SQS (JSON 1.0, X-Amz-Target AmazonSQS.*): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueUrl.html, API_ListQueueTags.html.
// - KMS, CloudWatch Logs, EventBridge (JSON 1.1, X-Amz-Target TrentService.*, Logs_20140328.*, AWSEvents.*):
//   https://docs.aws.amazon.com/kms/latest/APIReference/API_DescribeKey.html, API_GetKeyPolicy.html;
//   https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_DescribeLogGroups.html, API_FilterLogEvents.html;
//   Logs Insights: API_StartQuery.html (startTime and endTime in epoch seconds; ResourceNotFoundException for a
//   missing group, LimitExceededException past 30 concurrent queries, MalformedQueryException), API_GetQueryResults.html
//   (status Scheduled, Running, Complete, Failed, Cancelled, Timeout; results as rows of {field, value}, all strings;
//   statistics), API_StopQuery.html ({success}); queries run on the group's events by a small Logs Insights engine
//   (insightsQuery: the commands preflight's query uses, anything else refused as malformed).
//   https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_DescribeRule.html, API_ListTagsForResource.html.
// - EKS (REST JSON, error type in x-amzn-ErrorType): https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html, API_DescribeAddon.html,
//   API_ListAddons.html (GET /clusters/<name>/addons?maxResults&nextToken: {addons: [names], nextToken}, botocore eks 2017-11-01);
// - FIS (REST JSON, botocore fis 2020-12-01; error type in x-amzn-ErrorType, body {message}; timestamps as epoch
//   seconds): GET /experimentTemplates (ListExperimentTemplates), GET /experimentTemplates/<id>, POST /experiments
//   (StartExperiment), GET /experiments/<id>, DELETE /experiments/<id> (StopExperiment), GET
//   /experiments/<id>/resolvedTargets; https://docs.aws.amazon.com/fis/latest/APIReference/API_StartExperiment.html.
//   An experiment's state follows the fake clock through a scripted timeline (FakeFis).
// - EC2 DescribeInstances (ec2 query): reservationSet/instancesSet with instanceState and reason
//   (StateTransitionReason), botocore ec2 2016-11-15 Instance; an instance's state follows the fake clock.
// - SQS's messages (JSON 1.0, AmazonSQS.*): CreateQueue, ReceiveMessage,
//   GetQueueAttributes, DeleteQueue, with MD5OfMessageBody / MD5OfBody as the SDK checks them; visibility timeouts
//   on the fake clock. SendMessageBatch and DeleteMessageBatch (botocore sqs 2012-11-05; API_SendMessageBatch.html,
//   API_DeleteMessageBatch.html, API_BatchResultErrorEntry.html): 1 to 10 entries with distinct Ids of at most 80
//   letters, digits, - and _ (else EmptyBatchRequest, TooManyEntriesInBatchRequest, BatchEntryIdsNotDistinct,
//   InvalidBatchEntryId, the whole call refused), each entry answered on its own in Successful or Failed; authorized
//   by sqs:SendMessage and sqs:DeleteMessage (authorizingAction).
// - CloudWatch (JSON 1.0 with the awsQuery error compatibility the v3 client uses, X-Amz-Target
//   GraniteServiceVersion20100801.*, signing name monitoring): DescribeAlarms, GetMetricData.
//   DescribeCluster's resourcesVpcConfig (endpointPublicAccess, endpointPrivateAccess, publicAccessCidrs) and
//   accessConfig.authenticationMode (API, API_AND_CONFIG_MAP, CONFIG_MAP), botocore eks 2017-11-01 VpcConfigResponse
//   and AccessConfigResponse.
import * as crypto from "crypto";
import * as http from "http";
import { Readable } from "stream";
import { LoopbackServer, hugeAnswer } from "./loopbackServer.ts";
import { filterPatternMatches } from "../components/models/filterPattern.ts";

export type Tags = Record<string, string>;

export interface FakeAwsState {
    account: string;
    /**
     * Endpoint access and authentication mode default to GC Notify's: private only (notification-terraform
     * aws/eks/eks.tf endpoint_public_access = false) and CONFIG_MAP (no access_config: the aws-auth ConfigMap).
     */
    clusters: Record<string, FakeCluster>;
    /** "<cluster>/<addon>" */
    addons: Record<string, { status: string; addonVersion: string }>;
    /** ListAddons answers at most this many names a page (the API's default and most is 100), with a nextToken. */
    addonPageSize?: number;
    /** Log groups and their events (messages are Fluent Bit's JSON records; the stream, the container's name by default). */
    logGroups: Record<string, { timestamp: number; message: string; logStream?: string }[]>;
    /** Logs Insights: GetQueryResults answers Running this many times before the query ends (Infinity: never), and how it ends. */
    insights?: { runningPolls?: number; outcome?: "Complete" | "Failed" | "Cancelled" | "Timeout"; limitExceeded?: boolean };
    /**
     * Empty FilterLogEvents pages (with a nextToken) to answer before the events: the API reference says a call may
     * return no events and a token while it keeps searching a large group.
     */
    emptyLogPages?: number;
    /** FilterLogEvents answers at most this many events a page (the API's most is 10 000), with a nextToken. */
    logPageSize?: number;
    /** EC2 instances DescribeInstances knows, by ID: running until `goneAt` (epoch ms on the state's clock), then `state`. */
    instances?: Record<string, { goneAt?: number; state?: string; reason?: string }>;
    images: { ImageId: string; State: string; Architecture: string; Name: string }[];
    subnets: { SubnetId: string; AvailabilityZone: string; Tags: Tags }[];
    securityGroups: { GroupId: string; Tags: Tags }[];
    offerings: { type: string; zone: string }[];
    instanceTypes: { type: string; architectures: string[] }[];
    roles: Record<string, Tags>;
    policies: Record<string, Tags>;
    queues: Record<string, Tags>;
    rules: Record<string, Tags>;
    /** By ARN: attributes (KmsMasterKeyId...) and the SubscriptionArn of each subscription ("PendingConfirmation" when unconfirmed). */
    topics: Record<string, { attributes: Record<string, string>; subscriptions: string[] }>;
    /** By key ID, ARN or alias name. */
    keys: Record<string, { KeyId: string; KeyManager: "AWS" | "CUSTOMER"; policy: string }>;
    /** "service:Action" calls answered 403 (access denied), as the service words it; a batch call is denied by its single action's entry (authorizingAction). */
    deny?: string[];
    /**
     * SQS batch calls: how SQS fails one entry on its own, in a 200 answer's Failed list (undefined: the entry is done as
     * asked). Called with the "sqs:Action" and the entry as sent.
     */
    entryFault?: (action: string, entry: any) => EntryFault | undefined;
    /**
     * What the next calls of a "service:Action" meet instead of their answer, one fault a call, in order (the call
     * after the last is answered): the ways a network and a server fail that the commands must survive.
     */
    faults?: Record<string, Fault[]>;
    /** The clock of FIS experiments, queue visibility and timestamps (epoch ms); Date.now by default. */
    now?: () => number;
    fis?: FakeFis;
    /** SQS queues with messages, by name (CreateQueue adds one). */
    sqs?: Record<string, FakeQueue>;
    /** CloudWatch: alarm states by name, and the data GetMetricData answers for a query's metric. */
    cloudwatch?: { alarms: Record<string, "OK" | "ALARM" | "INSUFFICIENT_DATA">; metric?: (metricName: string, dimensions: Record<string, string>) => { timestamp: number; value: number }[] };
}

/** FIS: experiment templates as GetExperimentTemplate answers them, and how an experiment unfolds. */
export interface FakeFis {
    templates: { id: string; tags: Tags; template: object }[];
    /** Seconds after StartExperiment at which each state begins; an absent one is never reached. */
    timeline: { running: number; actionStart: number; actionEnd?: number; completed?: number; failed?: { at: number; reason: string } };
    /** The instances the target resolves to (IDs). */
    instances: string[];
    /** Called at StartExperiment (with the clock's time): the test's cue to script the cluster's side. */
    onStart?: (experimentId: string, now: number) => void;
    /** Every experiment started, by ID: when, and when a StopExperiment came. */
    experiments?: Record<string, { templateId: string; started: number; stopped?: number; tags: Tags }>;
}

/** A request as the SDK's clients hand it to their request handler (@smithy/protocol-http HttpRequest). */
interface SdkRequest {
    method: string;
    path: string;
    query?: Record<string, string | string[] | null>;
    headers: Record<string, string>;
    body?: unknown;
}

/** A query string's escaping, as the SDK's HTTP handler builds it (@smithy/querystring-builder, @smithy/util-uri-escape). */
const escapeUri = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Faults whose point is the connection's timing: they go over HTTP, where the SDK's deadlines act. */
const SOCKET_FAULTS: Fault["kind"][] = ["hang", "slow", "trickle", "huge"];

/**
 * hang: the request is read and never answered; trickle: 200, then a byte every 10 ms, never ending; slow: the real
 * answer after `ms`; garbage: 200 with a proxy's HTML page; empty: 200 with no body; huge: 200 with `bytes` of body;
 * error: the service's own error (in its protocol's form) with this status and code.
 */
export type Fault = { kind: "hang" } | { kind: "trickle" } | { kind: "slow"; ms: number } | { kind: "garbage" } | { kind: "empty" } | { kind: "huge"; bytes: number } | { kind: "error"; status: number; code: string; message: string };

/** An entry of an SQS batch call that failed (BatchResultErrorEntry: Code, Message, SenderFault). */
export interface EntryFault {
    code: string;
    message: string;
    senderFault: boolean;
}

/**
 * The IAM actions that authorize requests not named after one: SQS's batch calls. "You cannot set permissions
 * explicitly for SendMessageBatch, DeleteMessageBatch, or ChangeMessageVisibilityBatch. Instead, setting permissions for
 * SendMessage, DeleteMessage, or ChangeMessageVisibility sets permissions for the corresponding batch versions" (Amazon
 * SQS Developer Guide, "Amazon SQS batch actions"; the Service Authorization Reference's actions for Amazon SQS list
 * no batch action). Written here apart from ops/awsCalls.ts's IAM_ACTION on purpose: the fake says what AWS does, and
 * the drill's tests hold the command's messages and docs/drill.md to it.
 */
const AUTHORIZED_BY: Record<string, string> = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
};
/** The IAM action a request ("service:Action", as `requests` holds it) needs. */
export const authorizingAction = (request: string) => AUTHORIZED_BY[request] ?? request;

/** How each protocol words an error and what its answers are (for faults). */
type Protocol = "query" | "ec2" | "json" | "rest";

export interface FakeQueue {
    attributes: Record<string, string>;
    tags?: Tags;
    messages: { id: string; body: string; handle?: string; visibleAt: number; receives: number }[];
    deleted?: boolean;
}

export interface FakeCluster {
    version: string;
    status: string;
    endpointPublicAccess?: boolean;
    endpointPrivateAccess?: boolean;
    /** EKS answers ["0.0.0.0/0"] when none were set. */
    publicAccessCidrs?: string[];
    authenticationMode?: "API" | "API_AND_CONFIG_MAP" | "CONFIG_MAP";
}

export class FakeAwsApi extends LoopbackServer {
    /** "service:Action" of every request, in order. */
    readonly requests: string[] = [];
    /** The state each fis:GetExperiment answered, in order. */
    readonly experimentStates: string[] = [];
    /** Each FIS answer of 200 as sent, by action: the tests hold them to FIS's API model. */
    readonly fisAnswers: { action: string; body: unknown }[] = [];
    /** Logs Insights queries started, by ID: the query string, its answer, and how often its results were asked for. */
    readonly queries: Record<string, { input: any; answer: InsightsAnswer; polls: number; stopped: boolean }> = {};

    readonly state: FakeAwsState;

    constructor(state: FakeAwsState) {
        super();
        this.state = state;
    }

    /**
     * What preflight's SDK clients take to talk to this endpoint. The settings the SDK would otherwise look up in the
     * environment and the shared config files for each client (a thrown and caught error per setting unset) are
     * given as their defaults: the clients behave the same, at less cost per client.
     */
    clientConfig() {
        // A stopped endpoint refuses connections, and a fault on the way needs one.
        const http = !this.listening || Object.values(this.state.faults ?? {}).some((faults) => faults.some((f) => SOCKET_FAULTS.includes(f.kind)));
        return {
            ...(http ? {} : { requestHandler: this.transport }),
            endpoint: this.url,
            credentials: { accessKeyId: "AKIDFAKE", secretAccessKey: "fake" },
            maxAttempts: 1,
            defaultsMode: "legacy" as const,
            retryMode: "standard",
            useFipsEndpoint: false,
            useDualstackEndpoint: false,
            authSchemePreference: [] as string[],
        };
    }

    /**
     * The SDK's request handler without a socket: each request, as the client serialized and signed it, goes to the
     * handler the HTTP server calls, and the answer comes back as an HTTP response with a streamed body. Loopback TCP
     * cost each call about 0.4 ms of CPU on these machines, half of it the kernel's, over some 8,000 calls a run.
     */
    private readonly transport = {
        metadata: { handlerProtocol: "http/1.1" },
        handle: (request: SdkRequest) =>
            new Promise<{ response: { statusCode: number; headers: Record<string, string>; body: Readable } }>((resolve) => {
                const query = Object.keys(request.query ?? {})
                    .sort()
                    .flatMap((k) => {
                        const v = request.query![k];
                        return Array.isArray(v) ? v.map((x) => `${escapeUri(k)}=${escapeUri(x)}`) : [typeof v === "string" ? `${escapeUri(k)}=${escapeUri(v)}` : escapeUri(k)];
                    });
                // A view of the SDK's bytes: Buffer.from(bytes) would read its JSON bodies through valueOf, which the SDK warns of.
                const bytes = request.body as string | Uint8Array | undefined;
                const body = bytes === undefined ? [] : [typeof bytes === "string" ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
                const req = Object.assign(Readable.from(body), {
                    method: request.method,
                    url: `${request.path}${query.length ? `?${query.join("&")}` : ""}`,
                    headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v])),
                });
                let statusCode = 200;
                let headers: Record<string, string> = {};
                // What the answers other than the faults use of a ServerResponse: a head, then the whole body.
                const res = {
                    writeHead(status: number, head: Record<string, string> = {}) {
                        statusCode = status;
                        headers = Object.fromEntries(Object.entries(head).map(([k, v]) => [k.toLowerCase(), String(v)]));
                        return res;
                    },
                    end(body?: string | Buffer) {
                        resolve({ response: { statusCode, headers, body: Readable.from(body === undefined ? [] : [Buffer.from(body)]) } });
                        return res;
                    },
                };
                this.handle(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
            }),
        updateHttpClientConfig: () => undefined,
        httpHandlerConfigs: () => ({}),
        destroy: () => undefined,
    };

    protected handle(req: http.IncomingMessage, res: http.ServerResponse): void {
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
            // Authorization: AWS4-HMAC-SHA256 Credential=AKID/20261201/ca-central-1/<service>/aws4_request, ...
            const service = /Credential=[^/]+\/[^/]+\/[^/]+\/([^/]+)\//.exec(req.headers.authorization ?? "")?.[1] ?? "?";
            const target = req.headers["x-amz-target"] as string | undefined;
            try {
                if (service === "eks") return this.eks(req.method ?? "GET", new URL(req.url ?? "/", "http://x"), res);
                if (service === "fis") return this.fis(req.method ?? "GET", new URL(req.url ?? "/", "http://x"), JSON.parse(body || "{}"), res);
                if (target) return this.json(service, target.split(".")[1], JSON.parse(body || "{}"), res);
                return this.query(service, new URLSearchParams(body), res);
            } catch (e) {
                res.writeHead(500).end(String(e));
            }
        });
    }

    private denied(service: string, action: string): boolean {
        this.requests.push(`${service}:${action}`);
        return (this.state.deny ?? []).includes(authorizingAction(`${service}:${action}`));
    }

    /** Answers with the next planted fault of service:action, if any (true: answered, or left hanging). */
    private fault(service: string, action: string, protocol: Protocol, res: http.ServerResponse): boolean {
        const f = this.state.faults?.[`${service}:${action}`]?.shift();
        if (!f) return false;
        const type = protocol === "json" || protocol === "rest" ? "application/x-amz-json-1.1" : "text/xml";
        switch (f.kind) {
            case "hang":
                return true;
            case "slow": {
                // The answer as it would be, held back: its head and body go out `ms` later, in order.
                const [head, end] = [res.writeHead.bind(res), res.end.bind(res)];
                (res as any).writeHead = (...a: any[]) => (setTimeout(() => (head as any)(...a), f.ms), res);
                (res as any).end = (...a: any[]) => (setTimeout(() => (end as any)(...a), f.ms), res);
                return false;
            }
            case "trickle": {
                res.writeHead(200, { "Content-Type": type });
                const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 10);
                res.on("close", () => clearInterval(timer));
                return true;
            }
            case "garbage":
                res.writeHead(200, { "Content-Type": "text/html" });
                res.end("<html><head><title>Proxy Authorization Required</title></head><body>Sign in to continue</body></html>");
                return true;
            case "empty":
                res.writeHead(200, { "Content-Type": type, "x-amzn-RequestId": "req-1" });
                res.end();
                return true;
            case "huge": {
                hugeAnswer(res, type, f.bytes);
                return true;
            }
            case "error": {
                const xmlns = "https://iam.amazonaws.com/doc/2010-05-08/";
                if (protocol === "query") {
                    res.writeHead(f.status, { "Content-Type": "text/xml" });
                    res.end(`<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>${f.code}</Code><Message>${esc(f.message)}</Message></Error><RequestId>req-1</RequestId></ErrorResponse>`);
                } else if (protocol === "ec2") {
                    res.writeHead(f.status, { "Content-Type": "text/xml" });
                    res.end(`<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>${f.code}</Code><Message>${esc(f.message)}</Message></Error></Errors><RequestID>req-1</RequestID></Response>`);
                } else if (protocol === "json") {
                    res.writeHead(f.status, { "Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": "req-1" });
                    res.end(JSON.stringify({ __type: f.code, message: f.message }));
                } else restError(res, f.status, f.code, f.message);
                return true;
            }
        }
    }

    // ---- EKS: REST JSON
    private eks(method: string, url: URL, res: http.ServerResponse): void {
        const path = url.pathname;
        const m = /^\/clusters\/([^/]+)(\/addons(?:\/([^/]+))?)?$/.exec(path);
        const action = m?.[3] ? "DescribeAddon" : m?.[2] ? "ListAddons" : "DescribeCluster";
        if (this.denied("eks", action)) return restError(res, 403, "AccessDeniedException", `User is not authorized to perform: eks:${action}`);
        if (this.fault("eks", action, "rest", res)) return;
        if (!m || method !== "GET") return restError(res, 404, "NotFoundException", `no route ${method} ${path}`);
        const [cluster, addon] = [decodeURIComponent(m[1]), m[3] && decodeURIComponent(m[3])];
        const c = this.state.clusters[cluster];
        if (!c) return restError(res, 404, "ResourceNotFoundException", `No cluster found for name: ${cluster}.`);
        if (action === "ListAddons") return this.listAddons(cluster, url.searchParams, res);
        if (addon) {
            const a = this.state.addons[`${cluster}/${addon}`];
            if (!a) return restError(res, 404, "ResourceNotFoundException", `No addon: ${addon} found in cluster: ${cluster}`);
            return jsonReply(res, 200, { addon: { addonName: addon, clusterName: cluster, status: a.status, addonVersion: a.addonVersion, addonArn: `arn:aws:eks:ca-central-1:${this.state.account}:addon/${cluster}/${addon}/x` } });
        }
        const vpc = {
            subnetIds: ["subnet-00", "subnet-01"],
            securityGroupIds: ["sg-01"],
            clusterSecurityGroupId: "sg-0cluster",
            vpcId: "vpc-1",
            endpointPublicAccess: c.endpointPublicAccess ?? false,
            endpointPrivateAccess: c.endpointPrivateAccess ?? true,
            publicAccessCidrs: c.publicAccessCidrs ?? ["0.0.0.0/0"],
        };
        jsonReply(res, 200, {
            cluster: {
                name: cluster,
                arn: `arn:aws:eks:ca-central-1:${this.state.account}:cluster/${cluster}`,
                version: c.version,
                status: c.status,
                platformVersion: "eks.1",
                resourcesVpcConfig: vpc,
                accessConfig: { authenticationMode: c.authenticationMode ?? "CONFIG_MAP" },
            },
        });
    }

    /** A page of the cluster's add-on names: at most maxResults (1-100, default 100), and a nextToken while more remain. */
    private listAddons(cluster: string, query: URLSearchParams, res: http.ServerResponse): void {
        const names = Object.keys(this.state.addons).filter((k) => k.startsWith(`${cluster}/`)).map((k) => k.slice(cluster.length + 1));
        const max = Number(query.get("maxResults") ?? 100);
        if (!Number.isInteger(max) || max < 1 || max > 100) return restError(res, 400, "InvalidParameterException", "maxResults must be between 1 and 100");
        const from = Number(query.get("nextToken") ?? 0);
        const to = from + Math.min(max, this.state.addonPageSize ?? 100);
        jsonReply(res, 200, { addons: names.slice(from, to), ...(to < names.length ? { nextToken: String(to) } : {}) });
    }

    // ---- SQS (JSON 1.0), KMS, CloudWatch Logs, EventBridge (JSON 1.1)
    private json(service: string, action: string, input: any, res: http.ServerResponse): void {
        const s = this.state;
        const fail = (type: string, message: string, queryError?: string) => {
            res.writeHead(400, { "Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": "req-1", ...(queryError ? { "x-amzn-query-error": queryError } : {}) });
            res.end(JSON.stringify({ __type: type, message }));
        };
        if (this.denied(service, action)) return fail("AccessDeniedException", `User is not authorized to perform: ${authorizingAction(`${service}:${action}`)}`);
        if (this.fault(service, action, "json", res)) return;
        const ok = (body: object) => jsonReply(res, 200, body);
        switch (`${service}:${action}`) {
            case "sqs:GetQueueUrl":
                return s.queues[input.QueueName] || this.queue(input.QueueName)
                    ? ok({ QueueUrl: `https://sqs.ca-central-1.amazonaws.com/${s.account}/${input.QueueName}` })
                    : fail("com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue;Sender");
            case "sqs:CreateQueue": {
                const q = (s.sqs ??= {});
                q[input.QueueName] = { attributes: { VisibilityTimeout: "30", ...(input.Attributes ?? {}) }, tags: input.tags, messages: [] };
                return ok({ QueueUrl: queueUrl(s.account, input.QueueName) });
            }
            case "sqs:SendMessageBatch":
            case "sqs:DeleteMessageBatch": {
                const q = this.queue(input.QueueUrl);
                if (!q) return fail("com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue;Sender");
                const entries: any[] = input.Entries ?? [];
                const refused = batchProblem(entries);
                if (refused) return fail(`com.amazonaws.sqs#${refused.code}`, refused.message, `AWS.SimpleQueueService.${refused.code};Sender`);
                const Successful: object[] = [];
                const Failed: object[] = [];
                for (const e of entries) {
                    const f = s.entryFault?.(`${service}:${action}`, e);
                    if (f) Failed.push({ Id: e.Id, SenderFault: f.senderFault, Code: f.code, Message: f.message });
                    else if (action === "DeleteMessageBatch") {
                        q.messages = q.messages.filter((m) => m.handle !== e.ReceiptHandle);
                        Successful.push({ Id: e.Id });
                    } else {
                        const id = crypto.randomUUID();
                        q.messages.push({ id, body: e.MessageBody, visibleAt: 0, receives: 0 });
                        Successful.push({ Id: e.Id, MessageId: id, MD5OfMessageBody: md5(e.MessageBody) });
                    }
                }
                return ok({ Successful, Failed });
            }
            case "sqs:ReceiveMessage": {
                const q = this.queue(input.QueueUrl);
                if (!q) return fail("com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue;Sender");
                const now = this.now();
                const visibility = Number(input.VisibilityTimeout ?? q.attributes.VisibilityTimeout) * 1000;
                const taken = q.messages.filter((m) => m.visibleAt <= now).slice(0, input.MaxNumberOfMessages ?? 1);
                for (const m of taken) Object.assign(m, { handle: crypto.randomUUID(), visibleAt: now + visibility, receives: m.receives + 1 });
                return ok(taken.length ? { Messages: taken.map((m) => ({ MessageId: m.id, ReceiptHandle: m.handle, MD5OfBody: md5(m.body), Body: m.body })) } : {});
            }
            case "sqs:GetQueueAttributes": {
                const q = this.queue(input.QueueUrl);
                if (!q) return fail("com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue;Sender");
                const now = this.now();
                const all: Record<string, string> = {
                    ...q.attributes,
                    ApproximateNumberOfMessages: String(q.messages.filter((m) => m.visibleAt <= now).length),
                    ApproximateNumberOfMessagesNotVisible: String(q.messages.filter((m) => m.visibleAt > now).length),
                };
                // Only the attributes asked for ("All": every one; none asked: none answered).
                const names: string[] = input.AttributeNames ?? [];
                return ok({ Attributes: Object.fromEntries(Object.entries(all).filter(([k]) => names.includes("All") || names.includes(k))) });
            }
            case "sqs:DeleteQueue": {
                const q = this.queue(input.QueueUrl);
                if (!q) return fail("com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue;Sender");
                q.deleted = true;
                return ok({});
            }
            case "monitoring:DescribeAlarms": {
                const alarms = s.cloudwatch?.alarms ?? {};
                const names: string[] = input.AlarmNames ?? Object.keys(alarms);
                return ok({
                    MetricAlarms: names.filter((n) => alarms[n]).map((n) => ({ AlarmName: n, AlarmArn: `arn:aws:cloudwatch:ca-central-1:${s.account}:alarm:${n}`, StateValue: alarms[n], StateReason: `Threshold Crossed: fake ${alarms[n]}`, StateUpdatedTimestamp: 1700000000 })),
                    CompositeAlarms: [],
                });
            }
            case "monitoring:GetMetricData": {
                const [from, to] = [Number(input.StartTime) * 1000, Number(input.EndTime) * 1000];
                return ok({
                    MetricDataResults: (input.MetricDataQueries ?? []).map((q: any) => {
                        const m = q.MetricStat.Metric;
                        const dims = Object.fromEntries((m.Dimensions ?? []).map((d: any) => [d.Name, d.Value]));
                        const points = (s.cloudwatch?.metric?.(m.MetricName, dims) ?? []).filter((p) => p.timestamp >= from && p.timestamp < to);
                        return { Id: q.Id, Label: m.MetricName, Timestamps: points.map((p) => p.timestamp / 1000), Values: points.map((p) => p.value), StatusCode: "Complete" };
                    }),
                    Messages: [],
                });
            }
            case "sqs:ListQueueTags":
                return ok({ Tags: s.queues[String(input.QueueUrl).split("/").pop()!] ?? this.queue(input.QueueUrl)?.tags ?? {} });
            case "kms:DescribeKey": {
                const k = s.keys[input.KeyId];
                if (!k) return fail("NotFoundException", `Key '${input.KeyId}' does not exist`);
                return ok({ KeyMetadata: { KeyId: k.KeyId, Arn: `arn:aws:kms:ca-central-1:${s.account}:key/${k.KeyId}`, AWSAccountId: s.account, KeyManager: k.KeyManager, KeyState: "Enabled", Enabled: true, KeyUsage: "ENCRYPT_DECRYPT" } });
            }
            case "kms:GetKeyPolicy": {
                const k = s.keys[input.KeyId];
                return k ? ok({ Policy: k.policy, PolicyName: "default" }) : fail("NotFoundException", `Key '${input.KeyId}' does not exist`);
            }
            case "logs:DescribeLogGroups":
                return ok({
                    logGroups: Object.keys(s.logGroups)
                        .filter((g) => g.startsWith(input.logGroupNamePrefix ?? ""))
                        .map((g) => ({ logGroupName: g, arn: `arn:aws:logs:ca-central-1:${s.account}:log-group:${g}:*`, creationTime: 1700000000000, storedBytes: 0 })),
                });
            case "logs:FilterLogEvents": {
                // https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html: events of
                // the group (or of logStreamNames, or of streams named logStreamNamePrefix*, not both) in [startTime,
                // endTime] that filterPattern matches, in time order, at most `limit` (10 000) a page, then a nextToken.
                const events = s.logGroups[input.logGroupName];
                if (!events) return fail("ResourceNotFoundException", "The specified log group does not exist.");
                if (input.logStreamNames && input.logStreamNamePrefix) return fail("InvalidParameterException", "logStreamNames and logStreamNamePrefix are mutually exclusive");
                const [kind, n] = String(input.nextToken ?? "empty:0").split(":");
                if (kind === "empty" && Number(n) < (s.emptyLogPages ?? 0)) return ok({ events: [], searchedLogStreams: [], nextToken: `empty:${Number(n) + 1}` });
                const from = kind === "from" ? Number(n) : 0;
                const stream = (e: { logStream?: string }) => e.logStream ?? "karpenter-abc_karpenter_controller";
                const hits = events
                    .map((e, i) => ({ ...e, i }))
                    .filter((e) => e.timestamp >= (input.startTime ?? 0) && e.timestamp <= (input.endTime ?? Infinity))
                    .filter((e) => (!input.logStreamNames || input.logStreamNames.includes(stream(e))) && (!input.logStreamNamePrefix || stream(e).startsWith(input.logStreamNamePrefix)))
                    .filter((e) => !input.filterPattern || filterPatternMatches(input.filterPattern, e.message))
                    .sort((a, b) => a.timestamp - b.timestamp || a.i - b.i);
                const size = Math.min(input.limit ?? 10000, s.logPageSize ?? 10000);
                const page = hits.slice(from, from + size);
                return ok({
                    events: page.map((e) => ({ logStreamName: stream(e), timestamp: e.timestamp, message: e.message, ingestionTime: e.timestamp, eventId: String(e.i) })),
                    searchedLogStreams: [],
                    ...(from + size < hits.length ? { nextToken: `from:${from + size}` } : {}),
                });
            }
            case "logs:StartQuery": {
                const events = s.logGroups[input.logGroupName];
                if (!events) return fail("ResourceNotFoundException", `Log group '${input.logGroupName}' does not exist for account ID '${s.account}'`);
                if (s.insights?.limitExceeded) return fail("LimitExceededException", "Account maximum query concurrency limit of [30] reached.");
                if (!(input.startTime < input.endTime)) return fail("InvalidParameterException", "End time should not be before the start time");
                const inRange = events.filter((e) => e.timestamp >= input.startTime * 1000 && e.timestamp <= input.endTime * 1000);
                const answer = insightsQuery(String(input.queryString), inRange);
                if (typeof answer === "string") return fail("MalformedQueryException", answer);
                const queryId = crypto.randomUUID();
                this.queries[queryId] = { input, answer, polls: 0, stopped: false };
                return ok({ queryId });
            }
            case "logs:GetQueryResults": {
                const q = this.queries[input.queryId];
                if (!q) return fail("ResourceNotFoundException", `Query ${input.queryId} does not exist`);
                const running = !q.stopped && q.polls++ < (s.insights?.runningPolls ?? 0);
                const status = q.stopped ? "Cancelled" : running ? "Running" : (s.insights?.outcome ?? "Complete");
                const rows = status === "Complete" ? q.answer.rows.slice(0, q.input.limit ?? 10000) : [];
                return ok({ status, results: rows.map((r) => Object.entries(r).map(([field, value]) => ({ field, value }))), statistics: q.answer.statistics });
            }
            case "logs:StopQuery": {
                const q = this.queries[input.queryId];
                if (!q) return fail("ResourceNotFoundException", `Query ${input.queryId} does not exist`);
                const running = !q.stopped && q.polls <= (s.insights?.runningPolls ?? 0);
                q.stopped ||= running;
                return ok({ success: running });
            }
            case "events:DescribeRule":
                return s.rules[input.Name]
                    ? ok({ Name: input.Name, Arn: `arn:aws:events:ca-central-1:${s.account}:rule/${input.Name}`, State: "ENABLED", EventBusName: "default" })
                    : fail("ResourceNotFoundException", `Rule ${input.Name} does not exist on EventBus default.`);
            case "events:ListTagsForResource":
                return ok({ Tags: Object.entries(s.rules[String(input.ResourceARN).split("/").pop()!] ?? {}).map(([Key, Value]) => ({ Key, Value })) });
        }
        fail("UnknownOperationException", `the fake does not serve ${service}:${action}`);
    }

    private now(): number {
        return (this.state.now ?? Date.now)();
    }

    /** The queue a QueueUrl (or a queue name) names (undefined when absent or deleted). */
    private queue(url: string): FakeQueue | undefined {
        const q = this.state.sqs?.[String(url).split("/").pop()!];
        return q && !q.deleted ? q : undefined;
    }

    // ---- FIS: REST JSON
    private fis(method: string, url: URL, input: any, res: http.ServerResponse): void {
        const f = this.state.fis ?? { templates: [], timeline: { running: 1, actionStart: 2 }, instances: [] };
        const experiments = (f.experiments ??= {});
        const p = url.pathname;
        const m = /^\/(experimentTemplates|experiments)(?:\/([^/]+))?(\/resolvedTargets)?$/.exec(p);
        const action = !m
            ? "?"
            : m[1] === "experimentTemplates"
              ? (m[2] ? "GetExperimentTemplate" : "ListExperimentTemplates")
              : m[3]
                ? "ListExperimentResolvedTargets"
                : !m[2]
                  ? (method === "POST" ? "StartExperiment" : "ListExperiments")
                  : method === "DELETE"
                    ? "StopExperiment"
                    : "GetExperiment";
        if (this.denied("fis", action)) return restError(res, 403, "AccessDeniedException", `User is not authorized to perform: fis:${action}`);
        if (this.fault("fis", action, "rest", res)) return;
        const id = m?.[2] && decodeURIComponent(m[2]);
        const answer = (body: object) => {
            this.fisAnswers.push({ action, body });
            jsonReply(res, 200, body);
        };
        const seconds = (ms: number) => ms / 1000;
        const experiment = (eid: string) => {
            const e = experiments[eid];
            const t = this.now();
            const at = (s: number | undefined) => (s === undefined ? undefined : e.started + s * 1000);
            const tl = f.timeline;
            const passed = (s: number | undefined) => s !== undefined && at(s)! <= t;
            const stoppedAt = e.stopped;
            const ended = stoppedAt ?? (passed(tl.failed?.at) ? at(tl.failed!.at) : passed(tl.completed) ? at(tl.completed) : undefined);
            const status = stoppedAt !== undefined ? (t >= stoppedAt + 1000 ? "stopped" : "stopping") : passed(tl.failed?.at) ? "failed" : passed(tl.completed) ? "completed" : passed(tl.running) ? "running" : "initiating";
            const reason = status === "stopped" ? "Experiment stopped by user" : status === "failed" ? tl.failed!.reason : status === "completed" ? "Experiment completed." : undefined;
            const actionStart = passed(tl.actionStart) && (stoppedAt === undefined || at(tl.actionStart)! < stoppedAt) ? at(tl.actionStart) : undefined;
            const actionEnd = actionStart !== undefined ? (passed(tl.actionEnd) && (stoppedAt === undefined || at(tl.actionEnd)! < stoppedAt) ? at(tl.actionEnd) : stoppedAt) : undefined;
            const actionStatus = actionEnd !== undefined ? (stoppedAt !== undefined && actionEnd === stoppedAt ? "stopped" : "completed") : actionStart !== undefined ? "running" : stoppedAt !== undefined ? "cancelled" : "pending";
            const template = f.templates.find((x) => x.id === e.templateId)!.template as any;
            return {
                id: eid,
                arn: `arn:aws:fis:ca-central-1:${this.state.account}:experiment/${eid}`,
                experimentTemplateId: e.templateId,
                roleArn: template.roleArn,
                state: { status, ...(reason ? { reason } : {}) },
                targets: template.targets,
                actions: Object.fromEntries(
                    Object.entries(template.actions ?? {}).map(([name, a]: [string, any]) => [
                        name,
                        { ...a, state: { status: actionStatus }, ...(actionStart !== undefined ? { startTime: seconds(actionStart) } : {}), ...(actionEnd !== undefined ? { endTime: seconds(actionEnd) } : {}) },
                    ]),
                ),
                stopConditions: template.stopConditions,
                creationTime: seconds(e.started),
                startTime: seconds(e.started),
                ...(ended !== undefined && (status === "stopped" || status === "completed" || status === "failed") ? { endTime: seconds(ended) } : {}),
                tags: e.tags,
            };
        };
        switch (action) {
            case "ListExperimentTemplates": {
                const from = Number(url.searchParams.get("nextToken") ?? 0);
                const page = f.templates.slice(from, from + 2);
                return answer({
                    experimentTemplates: page.map((x) => ({ id: x.id, arn: `arn:aws:fis:ca-central-1:${this.state.account}:experiment-template/${x.id}`, description: (x.template as any).description, creationTime: 1700000000, tags: x.tags })),
                    ...(from + 2 < f.templates.length ? { nextToken: String(from + 2) } : {}),
                });
            }
            case "GetExperimentTemplate": {
                const x = f.templates.find((t) => t.id === id);
                return x ? answer({ experimentTemplate: { id: x.id, ...x.template, tags: x.tags } }) : restError(res, 404, "ResourceNotFoundException", `Experiment template ${id} not found.`);
            }
            case "StartExperiment": {
                if (!input.clientToken) return restError(res, 400, "ValidationException", "clientToken is required");
                if (!f.templates.some((t) => t.id === input.experimentTemplateId)) return restError(res, 404, "ResourceNotFoundException", `Experiment template ${input.experimentTemplateId} not found.`);
                const eid = `EXP${Object.keys(experiments).length + 1}abcdef`;
                experiments[eid] = { templateId: input.experimentTemplateId, started: this.now(), tags: input.tags ?? {} };
                f.onStart?.(eid, this.now());
                return answer({ experiment: experiment(eid) });
            }
            case "GetExperiment":
            case "StopExperiment": {
                if (!id || !experiments[id]) return restError(res, 404, "ResourceNotFoundException", `Experiment ${id} not found.`);
                if (action === "StopExperiment") {
                    const status = experiment(id).state.status;
                    if (["completed", "stopped", "failed"].includes(status)) return restError(res, 400, "ValidationException", `Experiment ${id} is ${status} and cannot be stopped.`);
                    experiments[id].stopped ??= this.now();
                }
                if (action === "GetExperiment") this.experimentStates.push(experiment(id).state.status);
                return answer({ experiment: experiment(id) });
            }
            case "ListExperimentResolvedTargets": {
                if (!id || !experiments[id]) return restError(res, 404, "ResourceNotFoundException", `Experiment ${id} not found.`);
                const resolved = experiment(id).state.status !== "initiating";
                // The API reference leaves targetInformation's keys open (a map of strings); the instance's ARN is one value.
                return answer({
                    resolvedTargets: resolved
                        ? f.instances.map((i) => ({ resourceType: "aws:ec2:spot-instance", targetName: Object.keys((f.templates[0].template as any).targets ?? {})[0], targetInformation: { identifier: `arn:aws:ec2:ca-central-1:${this.state.account}:instance/${i}` } }))
                        : [],
                });
            }
        }
        restError(res, 404, "UnknownOperationException", `the fake does not serve ${method} ${p}`);
    }

    // ---- EC2 (ec2 query), IAM, SNS, STS (awsQuery): form-encoded requests, XML answers
    private query(service: string, params: URLSearchParams, res: http.ServerResponse): void {
        const s = this.state;
        const action = params.get("Action") ?? "?";
        const ec2 = service === "ec2";
        const xmlns = { ec2: "http://ec2.amazonaws.com/doc/2016-11-15/", iam: "https://iam.amazonaws.com/doc/2010-05-08/", sns: "http://sns.amazonaws.com/doc/2010-03-31/", sts: "https://sts.amazonaws.com/doc/2011-06-15/" }[service];
        const fail = (status: number, code: string, message: string) => {
            res.writeHead(status, { "Content-Type": "text/xml" });
            res.end(
                ec2
                    ? `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>${code}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>req-1</RequestID></Response>`
                    : `<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${esc(message)}</Message></Error><RequestId>req-1</RequestId></ErrorResponse>`,
            );
        };
        if (this.denied(service, action)) {
            const code = ec2 ? "UnauthorizedOperation" : service === "sns" ? "AuthorizationError" : "AccessDenied";
            return fail(403, code, `User is not authorized to perform: ${service}:${action}`);
        }
        if (this.fault(service, action, ec2 ? "ec2" : "query", res)) return;
        // EC2 wraps everything in <ActionResponse> with a requestId; awsQuery in <ActionResponse><ActionResult>.
        const ok = (inner: string) => {
            res.writeHead(200, { "Content-Type": "text/xml" });
            res.end(
                ec2
                    ? `<?xml version="1.0" encoding="UTF-8"?><${action}Response xmlns="${xmlns}"><requestId>req-1</requestId>${inner}</${action}Response>`
                    : `<${action}Response xmlns="${xmlns}"><${action}Result>${inner}</${action}Result><ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata></${action}Response>`,
            );
        };
        const filters = ec2Filters(params);
        const ec2Tags = (t: Tags) => `<tagSet>${Object.entries(t).map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`).join("")}</tagSet>`;
        const tagged = (t: Tags) => Object.entries(filters).every(([name, values]) => !name.startsWith("tag:") || values.includes(t[name.slice(4)]));
        const members = (t: Tags) => `<Tags>${Object.entries(t).map(([k, v]) => `<member><Key>${esc(k)}</Key><Value>${esc(v)}</Value></member>`).join("")}</Tags>`;
        switch (`${service}:${action}`) {
            case "sts:GetCallerIdentity":
                return ok(`<Arn>arn:aws:sts::${s.account}:assumed-role/Admin/tester</Arn><UserId>AROAFAKE:tester</UserId><Account>${s.account}</Account>`);
            case "ec2:DescribeImages": {
                const ids = listParam(params, "ImageId");
                const found = s.images.filter((i) => ids.includes(i.ImageId));
                // EC2 refuses an unknown image ID instead of answering an empty set.
                if (found.length < ids.length) return fail(400, "InvalidAMIID.NotFound", `The image id '[${ids.join(", ")}]' does not exist`);
                return ok(`<imagesSet>${found.map((i) => `<item><imageId>${i.ImageId}</imageId><imageState>${i.State}</imageState><architecture>${i.Architecture}</architecture><name>${esc(i.Name)}</name><imageType>machine</imageType><platformDetails>Linux/UNIX</platformDetails></item>`).join("")}</imagesSet>`);
            }
            case "ec2:DescribeSubnets": {
                const ids = listParam(params, "SubnetId");
                const found = s.subnets.filter((x) => (ids.length ? ids.includes(x.SubnetId) : tagged(x.Tags)));
                // EC2 refuses the whole call over one unknown ID (EC2 API Reference, "Error codes": InvalidSubnetID.NotFound).
                const unknown = ids.find((id) => !s.subnets.some((x) => x.SubnetId === id));
                if (unknown) return fail(400, "InvalidSubnetID.NotFound", `The subnet ID '${unknown}' does not exist`);
                return ok(`<subnetSet>${found.map((x) => `<item><subnetId>${x.SubnetId}</subnetId><availabilityZone>${x.AvailabilityZone}</availabilityZone><vpcId>vpc-1</vpcId><state>available</state>${ec2Tags(x.Tags)}</item>`).join("")}</subnetSet>`);
            }
            case "ec2:DescribeSecurityGroups": {
                const ids = listParam(params, "GroupId");
                const found = s.securityGroups.filter((x) => (ids.length ? ids.includes(x.GroupId) : tagged(x.Tags)));
                // Likewise InvalidGroup.NotFound.
                const unknown = ids.find((id) => !s.securityGroups.some((x) => x.GroupId === id));
                if (unknown) return fail(400, "InvalidGroup.NotFound", `The security group '${unknown}' does not exist`);
                return ok(`<securityGroupInfo>${found.map((x) => `<item><groupId>${x.GroupId}</groupId><groupName>${x.GroupId}</groupName><vpcId>vpc-1</vpcId>${ec2Tags(x.Tags)}</item>`).join("")}</securityGroupInfo>`);
            }
            case "ec2:DescribeInstanceTypeOfferings": {
                const found = s.offerings.filter((o) => (filters["instance-type"] ?? [o.type]).includes(o.type) && (filters.location ?? [o.zone]).includes(o.zone));
                return ok(`<instanceTypeOfferingSet>${found.map((o) => `<item><instanceType>${o.type}</instanceType><locationType>availability-zone</locationType><location>${o.zone}</location></item>`).join("")}</instanceTypeOfferingSet>`);
            }
            case "ec2:DescribeInstances": {
                // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html: an unknown ID
                // refuses the call (InvalidInstanceID.NotFound); a terminated instance is listed for about an hour.
                const ids = listParam(params, "InstanceId");
                const unknown = ids.find((id) => !s.instances?.[id]);
                if (unknown) return fail(400, "InvalidInstanceID.NotFound", `The instance ID '${unknown}' does not exist`);
                const states: Record<string, number> = { running: 16, "shutting-down": 32, terminated: 48, stopping: 64, stopped: 80 };
                const items = ids.map((id) => {
                    const i = s.instances![id];
                    const gone = i.goneAt !== undefined && this.now() >= i.goneAt;
                    const state = gone ? (i.state ?? "terminated") : "running";
                    const reason = gone ? (i.reason ?? `User initiated (${new Date(i.goneAt!).toISOString().slice(0, 19).replace("T", " ")} GMT)`) : "";
                    return `<item><instanceId>${id}</instanceId><instanceState><code>${states[state] ?? 0}</code><name>${state}</name></instanceState><reason>${esc(reason)}</reason><instanceLifecycle>spot</instanceLifecycle></item>`;
                });
                return ok(`<reservationSet>${items.map((x) => `<item><reservationId>r-1</reservationId><ownerId>${s.account}</ownerId><instancesSet>${x}</instancesSet></item>`).join("")}</reservationSet>`);
            }
            case "ec2:DescribeInstanceTypes": {
                const found = s.instanceTypes.filter((t) => (filters["instance-type"] ?? [t.type]).includes(t.type));
                return ok(`<instanceTypeSet>${found.map((t) => `<item><instanceType>${t.type}</instanceType><processorInfo><supportedArchitectures>${t.architectures.map((a) => `<item>${a}</item>`).join("")}</supportedArchitectures></processorInfo></item>`).join("")}</instanceTypeSet>`);
            }
            case "iam:GetRole": {
                const name = params.get("RoleName")!;
                const tags = s.roles[name];
                if (!tags) return fail(404, "NoSuchEntity", `The role with name ${name} cannot be found.`);
                return ok(`<Role><Path>/</Path><RoleName>${esc(name)}</RoleName><RoleId>AROAFAKE</RoleId><Arn>arn:aws:iam::${s.account}:role/${esc(name)}</Arn><CreateDate>2026-01-01T00:00:00Z</CreateDate>${members(tags)}</Role>`);
            }
            case "iam:GetPolicy": {
                const arn = params.get("PolicyArn")!;
                const name = arn.split("/").pop()!;
                const tags = s.policies[name];
                if (!tags) return fail(404, "NoSuchEntity", `Policy ${arn} does not exist or is not attachable.`);
                return ok(`<Policy><PolicyName>${esc(name)}</PolicyName><PolicyId>ANPAFAKE</PolicyId><Arn>${esc(arn)}</Arn><Path>/</Path><DefaultVersionId>v1</DefaultVersionId><AttachmentCount>1</AttachmentCount><IsAttachable>true</IsAttachable><CreateDate>2026-01-01T00:00:00Z</CreateDate><UpdateDate>2026-01-01T00:00:00Z</UpdateDate>${members(tags)}</Policy>`);
            }
            case "sns:GetTopicAttributes": {
                const t = s.topics[params.get("TopicArn")!];
                if (!t) return fail(404, "NotFound", "Topic does not exist");
                return ok(`<Attributes>${Object.entries({ TopicArn: params.get("TopicArn")!, Owner: s.account, ...t.attributes }).map(([k, v]) => `<entry><key>${k}</key><value>${esc(v)}</value></entry>`).join("")}</Attributes>`);
            }
            case "sns:ListSubscriptionsByTopic": {
                const arn = params.get("TopicArn")!;
                const t = s.topics[arn];
                if (!t) return fail(404, "NotFound", "Topic does not exist");
                return ok(`<Subscriptions>${t.subscriptions.map((sub) => `<member><TopicArn>${esc(arn)}</TopicArn><Protocol>email</Protocol><SubscriptionArn>${esc(sub)}</SubscriptionArn><Owner>${s.account}</Owner><Endpoint>ops@example.com</Endpoint></member>`).join("")}</Subscriptions>`);
            }
        }
        fail(400, "InvalidAction", `the fake does not serve ${service}:${action}`);
    }
}

/** `Name.1`, `Name.2`... (EC2's list serialization of ImageIds, SubnetIds...). */
function listParam(params: URLSearchParams, name: string): string[] {
    return [...params.entries()].filter(([k]) => new RegExp(`^${name}\\.[0-9]+$`).test(k)).map(([, v]) => v);
}

/** `Filter.N.Name` and `Filter.N.Value.M`, by name. */
function ec2Filters(params: URLSearchParams): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [k, name] of params.entries()) {
        const m = /^Filter\.([0-9]+)\.Name$/.exec(k);
        if (m) out[name] = listParam(params, `Filter\\.${m[1]}\\.Value`);
    }
    return out;
}

/** A JSON filter pattern of `$.a.b = "v"` terms joined by &&, as CloudWatch Logs evaluates it on JSON events. */
function jsonReply(res: http.ServerResponse, code: number, body: object): void {
    res.writeHead(code, { "Content-Type": "application/json", "x-amzn-RequestId": "req-1" });
    res.end(JSON.stringify(body));
}

function restError(res: http.ServerResponse, code: number, type: string, message: string): void {
    res.writeHead(code, { "Content-Type": "application/json", "x-amzn-ErrorType": type, "x-amzn-RequestId": "req-1" });
    res.end(JSON.stringify({ message }));
}

/** A Logs Insights query's rows (every value a string, as GetQueryResults answers) and its statistics. */
export interface InsightsAnswer {
    rows: Record<string, string>[];
    statistics: { recordsMatched: number; recordsScanned: number; bytesScanned: number };
}

/**
 * Runs a Logs Insights query (CloudWatch Logs User Guide, "CloudWatch Logs Insights language query syntax") on log
 * events, for the commands preflight's query uses: `filter` (terms joined by `and`: `<field> like /re/`, `<field> in
 * [...]`, `ispresent(<field>)`), `parse <field> /re/` (named groups become fields; the first match), `fields
 * coalesce(...) as <name>`, `stats max(<field>) as <name>, count(*) as <name> by <field>, ...`, `limit <n>`. Fields:
 * @message, @logStream, @timestamp and the JSON event's, flattened with dots. Anything else is malformed (the message).
 */
export function insightsQuery(query: string, events: { timestamp: number; message: string; logStream?: string }[]): InsightsAnswer | string {
    const flatten = (v: unknown, prefix: string, out: Record<string, string>) => {
        if (v && typeof v === "object" && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, out);
        else if (prefix) out[prefix] = typeof v === "string" ? v : JSON.stringify(v);
        return out;
    };
    let records = events.map((e) => {
        let json: unknown;
        try {
            json = JSON.parse(e.message);
        } catch {
            json = undefined;
        }
        return { ...flatten(json, "", {}), "@message": e.message, "@logStream": e.logStream ?? "stream", "@timestamp": String(e.timestamp) } as Record<string, string | undefined>;
    });
    const statistics = { recordsMatched: 0, recordsScanned: events.length, bytesScanned: events.reduce((n, e) => n + Buffer.byteLength(e.message), 0) };
    const regex = (text: string) => {
        const m = /^\/(.*)\/$/.exec(text.trim());
        return m ? new RegExp(m[1]) : undefined;
    };
    const term = (t: string): ((r: Record<string, string | undefined>) => boolean) | string => {
        let m = /^ispresent\(([\w.@]+)\)$/.exec(t);
        if (m) return (r) => r[m![1]] !== undefined;
        m = /^([\w.@]+) like (\/.*\/)$/.exec(t);
        if (m) {
            const [field, re] = [m[1], regex(m[2])!];
            return (r) => r[field] !== undefined && re.test(r[field]!);
        }
        m = /^([\w.@]+) (<|<=|>|>=) ([0-9]+)$/.exec(t);
        if (m) {
            const [field, op, n] = [m[1], m[2], Number(m[3])];
            const compare = { "<": (a: number) => a < n, "<=": (a: number) => a <= n, ">": (a: number) => a > n, ">=": (a: number) => a >= n }[op]!;
            return (r) => r[field] !== undefined && compare(Number(r[field]));
        }
        m = /^([\w.@]+) in (\[.*\])$/.exec(t);
        if (m) {
            const [field, list] = [m[1], JSON.parse(m[2]) as string[]];
            return (r) => list.includes(r[field] as string);
        }
        return `unknown filter term: ${t}`;
    };
    let stats: Record<string, string>[] | undefined;
    for (const command of query.split(/\n\s*\|\s*/)) {
        const [, verb, rest] = /^(\w+)\s+([\s\S]*)$/.exec(command.trim()) ?? [];
        if (stats && verb !== "limit") return `only limit may follow stats here: ${command}`;
        if (verb === "filter") {
            // Either terms joined by "and", or by "or" (not both: the query needs no more).
            const or = rest.includes(" or ");
            const terms = rest.split(or ? " or " : " and ").map(term);
            const bad = terms.find((t) => typeof t === "string");
            if (bad) return bad as string;
            const tests = terms as ((r: Record<string, string | undefined>) => boolean)[];
            records = records.filter((r) => (or ? tests.some((t) => t(r)) : tests.every((t) => t(r))));
        } else if (verb === "parse") {
            const [, field, pattern] = /^([\w.@]+) (\/.*\/)$/.exec(rest) ?? [];
            const re = pattern && regex(pattern);
            if (!re) return `parse needs a field and a /regular expression/: ${command}`;
            records = records.map((r) => ({ ...r, ...(re.exec(r[field] ?? "")?.groups ?? {}) }));
        } else if (verb === "fields" && /^toMillis\(@timestamp\) % [0-9]+ as \w+$/.test(rest)) {
            const [, n, name] = /^toMillis\(@timestamp\) % ([0-9]+) as (\w+)$/.exec(rest)!;
            records = records.map((r) => ({ ...r, [name]: String(Number(r["@timestamp"]) % Number(n)) }));
        } else if (verb === "fields") {
            const [, args, name] = /^coalesce\(([^)]*)\) as (\w+)$/.exec(rest) ?? [];
            if (!args) return `fields supports coalesce(...) as <name> here: ${command}`;
            const from = args.split(",").map((a) => a.trim());
            records = records.map((r) => ({ ...r, [name]: from.map((f) => r[f]).find((v) => v !== undefined) }));
        } else if (verb === "stats") {
            const [, aggs, by] = /^(.*) by (.*)$/.exec(rest) ?? [];
            if (!aggs) return `stats needs "by": ${command}`;
            const keys = by.split(",").map((k) => k.trim());
            const functions = aggs.split(",").map((a) => /^(max|count)\(([\w.@]+|\*)\) as (\w+)$/.exec(a.trim()));
            if (functions.some((f) => !f)) return `unknown stats function: ${aggs}`;
            statistics.recordsMatched = records.length;
            const groups = new Map<string, Record<string, string | undefined>[]>();
            for (const r of records.filter((r) => keys.every((k) => r[k] !== undefined))) {
                const key = JSON.stringify(keys.map((k) => r[k]));
                groups.set(key, [...(groups.get(key) ?? []), r]);
            }
            stats = [...groups.values()].map((rs) => ({
                ...Object.fromEntries(keys.map((k) => [k, rs[0][k]!])),
                ...Object.fromEntries(functions.map((f) => [f![3], f![1] === "count" ? String(rs.length) : String(Math.max(...rs.map((r) => Number(r[f![2]]))))])),
            }));
        } else if (verb === "limit") {
            if (!/^[0-9]+$/.test(rest) || Number(rest) > 10000) return `limit takes a number up to 10000: ${command}`;
            const n = Number(rest);
            if (stats) stats = stats.slice(0, n);
            else records = records.slice(0, n);
        } else return `unknown command: ${command}`;
    }
    if (!stats) return "this fake answers stats queries only";
    return { rows: stats, statistics };
}

/**
 * Why SQS refuses a whole batch call, by its error code (botocore sqs 2012-11-05 SendMessageBatch and DeleteMessageBatch
 * errors; the Id's rule from SendMessageBatchRequestEntry.Id), or undefined.
 */
function batchProblem(entries: { Id?: string }[]): { code: string; message: string } | undefined {
    if (entries.length === 0) return { code: "EmptyBatchRequest", message: "There should be at least one batch entry in the request." };
    if (entries.length > 10) return { code: "TooManyEntriesInBatchRequest", message: `Maximum number of entries per request are 10. You have sent ${entries.length}.` };
    const bad = entries.find((e) => !/^[A-Za-z0-9_-]{1,80}$/.test(e.Id ?? ""));
    if (bad) return { code: "InvalidBatchEntryId", message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long." };
    const twice = entries.find((e, i) => entries.findIndex((x) => x.Id === e.Id) !== i);
    if (twice) return { code: "BatchEntryIdsNotDistinct", message: `Id ${twice.Id} repeated.` };
    return undefined;
}

const queueUrl = (account: string, name: string) => `https://sqs.ca-central-1.amazonaws.com/${account}/${name}`;
const md5 = (s: string) => crypto.createHash("md5").update(s, "utf8").digest("hex");

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
