// How long the live commands (preflight, the drill, scale-test, verify-placement) wait on the network, and how much
// they read of one answer. Every AWS call, every Kubernetes request and watch, and the kubeconfig's credential plugin
// has its own deadline here, so that an endpoint that accepts and never answers, or answers and then stops, ends the
// command with a line naming the call instead of a hang. A light module (no SDK): the entries and the docs' tests read it.

export interface Deadlines {
    /** AWS: for a connection to be made (the SDK's connectionTimeout). */
    awsConnectMs: number;
    /** AWS: for a connection to be silent before the SDK gives the attempt up (its requestTimeout, a socket timeout). */
    awsRequestMs: number;
    /** AWS: for one call, the SDK's own retries included, before it is abandoned. */
    awsCallMs: number;
    /** Kubernetes: for one request, from sending it to the last byte of its answer. */
    kubeRequestMs: number;
    /** Kubernetes: for a watch to give an event, a bookmark or its end; past it the watch is dead. */
    watchIdleMs: number;
    /** Kubernetes: the seconds after which the API server is asked to end a watch (timeoutSeconds); it is then resumed. */
    watchServerSeconds: number;
    /** The kubeconfig's exec credential plugin (aws eks get-token): for it to print its credential and exit. */
    execMs: number;
    /** The most an answer may hold (AWS, Kubernetes, a credential plugin's output) before it is refused unread. */
    maxAnswerBytes: number;
    /** A throttled AWS call (Throttling, ThrottlingException...) is tried this many times in all. */
    throttleAttempts: number;
    /** The wait before its first retry, doubled before each next one. */
    throttleFirstDelayMs: number;
}

export const DEADLINES: Deadlines = {
    awsConnectMs: 5_000,
    awsRequestMs: 20_000,
    awsCallMs: 60_000,
    kubeRequestMs: 30_000,
    // The API server is asked to end each watch after 4 minutes; 5 minutes without an event, a bookmark or that end
    // is a connection or a server that stopped answering.
    watchIdleMs: 300_000,
    watchServerSeconds: 240,
    execMs: 30_000,
    maxAnswerBytes: 256_000_000,
    throttleAttempts: 5,
    throttleFirstDelayMs: 1_000,
};

/** The deadlines a command runs with: the defaults, with what a test (or a caller) changes. */
export const deadlinesOf = (given: Partial<Deadlines> = {}): Deadlines => ({ ...DEADLINES, ...given });

/** A duration in seconds as the messages say it: "30 s", "0.05 s". */
export const seconds = (ms: number) => `${ms / 1000} s`;
