// What CloudWatch Logs counts for a metric filter pattern, so tests can run the stack's patterns on real log lines.
// The syntax is AWS's: CloudWatch Logs User Guide, "Filter pattern syntax for metric filters, subscription filters,
// filter log events, and Live Tail" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html),
// and its page "Using filter patterns to match terms in JSON log events"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/matching-terms-json-log-events.html).

/** CloudWatch's limit on a metric filter pattern. */
export const MAX_FILTER_PATTERN = 1024;

/**
 * Whether CloudWatch Logs would count `event` for `pattern`: a JSON pattern (`{ $.a.b = "x" && ... }`) or a term
 * pattern (quoted terms are case-sensitive substrings; `?` terms are alternatives, plain terms are all required).
 * Throws on a pattern this evaluator cannot read.
 */
export function filterPatternMatches(pattern: string, event: string): boolean {
    return pattern.trim().startsWith("{") ? jsonPatternMatches(pattern, event) : termPatternMatches(pattern, event);
}

function termPatternMatches(pattern: string, event: string): boolean {
    const terms = [...pattern.matchAll(/(\?)?"([^"]*)"/g)].map((m) => ({ optional: m[1] === "?", text: m[2] }));
    if (terms.length === 0) throw new Error(`not a term filter pattern: ${pattern}`);
    const optional = terms.filter((t) => t.optional);
    const required = terms.filter((t) => !t.optional);
    if (optional.length > 0 && required.length > 0) throw new Error(`mixes ?-terms and plain terms: ${pattern}`);
    return optional.length > 0 ? optional.some((t) => event.includes(t.text)) : required.every((t) => event.includes(t.text));
}

// ---- JSON patterns ----------------------------------------------------------------------------------------------

type Path = (string | number)[];
type Value = { kind: "string"; text: string } | { kind: "number"; n: number };
type Expr =
    | { op: "and" | "or"; left: Expr; right: Expr }
    | { op: "compare"; path: Path; cmp: "=" | "!=" | "<" | ">" | "<=" | ">="; value: Value }
    | { op: "is"; path: Path; what: "NULL" | "TRUE" | "FALSE" | "NOT EXISTS" };

/** The parsed pattern; throws an Error naming the position of the first thing it cannot read. */
export function parseJsonPattern(pattern: string): Expr {
    const p = new Parser(pattern);
    p.expect("{");
    const expr = p.or();
    p.expect("}");
    p.end();
    return expr;
}

/** Whether a JSON log event matches a JSON pattern; an event that is not a JSON object never matches. */
export function jsonPatternMatches(pattern: string, event: string): boolean {
    const expr = parseJsonPattern(pattern);
    let doc: unknown;
    try {
        doc = JSON.parse(event);
    } catch {
        return false;
    }
    return doc !== null && typeof doc === "object" && evaluate(expr, doc);
}

const MISSING = Symbol("missing");

function select(doc: unknown, path: Path): unknown {
    let v: unknown = doc;
    for (const step of path) {
        if (v === null || typeof v !== "object") return MISSING;
        const next = typeof step === "number" ? (Array.isArray(v) ? v[step] : undefined) : Array.isArray(v) ? undefined : (v as Record<string, unknown>)[step];
        if (next === undefined) return MISSING;
        v = next;
    }
    return v;
}

/** `*` matches any run of characters; everything else is literal. */
function wildcard(text: string): RegExp {
    return new RegExp(`^${text.split("*").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "s");
}

function evaluate(e: Expr, doc: unknown): boolean {
    switch (e.op) {
        case "and":
            return evaluate(e.left, doc) && evaluate(e.right, doc);
        case "or":
            return evaluate(e.left, doc) || evaluate(e.right, doc);
        case "is": {
            const v = select(doc, e.path);
            if (e.what === "NOT EXISTS") return v === MISSING;
            return v === { NULL: null, TRUE: true, FALSE: false }[e.what];
        }
        case "compare": {
            const v = select(doc, e.path);
            // A comparison on a field the event lacks (or that holds an object) is false, with = and != alike.
            if (v === MISSING || v === null || typeof v === "object") return false;
            if (e.value.kind === "number") {
                if (typeof v !== "number") return false;
                const n = e.value.n;
                return { "=": v === n, "!=": v !== n, "<": v < n, ">": v > n, "<=": v <= n, ">=": v >= n }[e.cmp];
            }
            const matches = wildcard(e.value.text).test(String(v));
            return e.cmp === "=" ? matches : !matches;
        }
    }
}

class Parser {
    private i = 0;
    private readonly s: string;
    constructor(s: string) {
        this.s = s;
    }

    private fail(what: string): never {
        throw new Error(`filter pattern: expected ${what} at character ${this.i + 1} of ${JSON.stringify(this.s)}`);
    }
    private skip() {
        while (/\s/.test(this.s[this.i] ?? "")) this.i++;
    }
    private peek(token: string): boolean {
        this.skip();
        return this.s.startsWith(token, this.i);
    }
    expect(token: string) {
        if (!this.peek(token)) this.fail(`"${token}"`);
        this.i += token.length;
    }
    end() {
        this.skip();
        if (this.i < this.s.length) this.fail("the end of the pattern");
    }

    or(): Expr {
        let left = this.and();
        while (this.peek("||")) {
            this.i += 2;
            left = { op: "or", left, right: this.and() };
        }
        return left;
    }
    private and(): Expr {
        let left = this.unary();
        while (this.peek("&&")) {
            this.i += 2;
            left = { op: "and", left, right: this.unary() };
        }
        return left;
    }
    private unary(): Expr {
        if (this.peek("(")) {
            this.i++;
            const inner = this.or();
            this.expect(")");
            return inner;
        }
        const path = this.selector();
        for (const what of ["IS NULL", "IS TRUE", "IS FALSE", "NOT EXISTS"] as const) {
            if (this.peek(what)) {
                this.i += what.length;
                return { op: "is", path, what: what === "NOT EXISTS" ? what : (what.slice(3) as "NULL" | "TRUE" | "FALSE") };
            }
        }
        const cmp = (["!=", "<=", ">=", "=", "<", ">"] as const).find((c) => this.peek(c));
        if (!cmp) this.fail("a comparison (=, !=, <, >, <=, >=), IS NULL, IS TRUE, IS FALSE or NOT EXISTS");
        this.i += cmp.length;
        const value = this.value();
        if (value.kind === "string" && !["=", "!="].includes(cmp)) this.fail(`a number after ${cmp}`);
        return { op: "compare", path, cmp, value };
    }
    /** `$.a.b[0]['c.d']`: names, array indexes and quoted names. */
    private selector(): Path {
        this.expect("$");
        const path: Path = [];
        for (;;) {
            const rest = this.s.slice(this.i);
            const name = /^\.([A-Za-z0-9_@-]+)/.exec(rest);
            const index = /^\[([0-9]+)\]/.exec(rest);
            const quoted = /^\.?\['([^']*)'\]/.exec(rest);
            const m = name ?? index ?? quoted;
            if (!m) break;
            path.push(index ? Number(m[1]) : m[1]);
            this.i += m[0].length;
        }
        if (path.length === 0) this.fail("a field after $");
        return path;
    }
    /** A quoted string, a number, or a bare word (which may hold * wildcards). */
    private value(): Value {
        this.skip();
        if (this.s[this.i] === '"') {
            const m = /^"((?:[^"\\]|\\.)*)"/.exec(this.s.slice(this.i));
            if (!m) this.fail("a closing double quote");
            this.i += m[0].length;
            return { kind: "string", text: m[1].replace(/\\(.)/g, "$1") };
        }
        const m = /^[^\s()&|}]+/.exec(this.s.slice(this.i));
        if (!m) this.fail("a value");
        this.i += m[0].length;
        return /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(m[0]) ? { kind: "number", n: Number(m[0]) } : { kind: "string", text: m[0] };
    }
}
