// The CRDs' CEL rules (x-kubernetes-validations), evaluated as the API server does: each rule at its place in the
// schema, `self` the value there, after defaulting, reported with the rule's message at the value's path. The
// evaluator is @marcbachmann/cel-js with the Kubernetes library functions the rules call that standard CEL lacks.
import { type ASTNode, Environment } from "@marcbachmann/cel-js";

/** One rule of a CRD, as x-kubernetes-validations declares it (ValidationRule in k8s.io/apiextensions-apiserver). */
export interface CelRule {
    rule: string;
    message?: string;
    messageExpression?: string;
    fieldPath?: string;
    reason?: string;
}

/**
 * Standard CEL plus the Kubernetes library functions the rules need: `find` from the regex library
 * (k8s.io/apiserver/pkg/cel/library/regex.go: the first match, or "" when none). `split` comes with cel-js, as in
 * cel-go's strings extension. `oldSelf` is declared so transition rules parse; they are not evaluated (see below).
 */
const env = new Environment({ homogeneousAggregateLiterals: false })
    .registerVariable("self", "dyn")
    .registerVariable("oldSelf", "dyn")
    .registerFunction("string.find(string): string", (s: string, re: string) => new RegExp(re).exec(s)?.[0] ?? "");

type Program = ReturnType<Environment["parse"]>;
const programs = new Map<string, Program>();
function program(expression: string): Program {
    if (!programs.has(expression)) programs.set(expression, env.parse(expression));
    return programs.get(expression)!;
}

/** Whether the expression type-checks in this environment: false names a function the environment lacks. */
export function celCheck(expression: string): { valid: boolean; error?: string } {
    const r = env.check(expression);
    return { valid: r.valid, error: r.error?.message.split("\n")[0] };
}

/**
 * A transition rule compares with the stored object (`oldSelf`). Objects this program renders are checked as on
 * create, where the API server skips transition rules (there is no old object), so they are skipped here too.
 */
export function isTransitionRule(expression: string): boolean {
    const refers = (n: unknown): boolean =>
        Array.isArray(n) ? n.some(refers) : typeof n === "object" && n !== null && "op" in n ? ((n as ASTNode).op === "id" && (n as ASTNode).args === "oldSelf") || refers((n as ASTNode).args) : false;
    return refers(program(expression).ast);
}

/** `base` followed by `keys`: `.name` for a field, `[key]` for a map key that is not a plain name, `[i]` for an item. */
export function fieldPath(base: string, keys: (string | number)[]): string {
    return keys.reduce<string>((p, k) => (typeof k === "number" || /^[0-9]+$/.test(k) ? `${p}[${k}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${p}.${k}` : `${p}[${k}]`), base);
}

/**
 * The value as CEL sees it under this schema: integers are CEL ints (BigInt in cel-js), so `x.deviceIndex == 0`
 * and `size() >= x.minValues` compare ints as in Kubernetes.
 */
function celValue(schema: Record<string, any>, value: unknown): unknown {
    if (typeof value === "number" && Number.isInteger(value) && (schema.type === "integer" || schema["x-kubernetes-int-or-string"])) return BigInt(value);
    if (Array.isArray(value)) return value.map((x) => celValue(schema.items ?? {}, x));
    if (typeof value === "object" && value !== null) {
        return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, celValue(schema.properties?.[k] ?? (typeof schema.additionalProperties === "object" ? schema.additionalProperties : {}), x)]));
    }
    return value;
}

interface Issue {
    path: string;
    message: string;
}

/** Every CEL rule of `schema` and its children that `value` breaks, with the rule's message at the value's path. */
export function celIssues(schema: Record<string, any>, value: unknown, path: string): Issue[] {
    const issues: Issue[] = [];
    (function walk(s: Record<string, any>, v: unknown, p: string) {
        if (v === undefined || v === null) return;
        for (const rule of (s["x-kubernetes-validations"] ?? []) as CelRule[]) {
            if (isTransitionRule(rule.rule)) continue;
            const failure = evaluateRule(rule, v);
            if (failure) issues.push({ path: rule.fieldPath ? `${p}${rule.fieldPath}` : p, message: failure });
        }
        if (Array.isArray(v)) return v.forEach((x, i) => walk(s.items ?? {}, x, fieldPath(p, [i])));
        if (typeof v !== "object") return;
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
            const child = s.properties?.[k] ?? (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
            if (child) walk(child, x, fieldPath(p, [k]));
        }
    })(schema, celValue(schema, value), path);
    return issues;
}

/**
 * Undefined when the rule holds; else its message: `messageExpression`'s result, falling back to `message` when that
 * fails, then to "failed rule: <rule>" (the ValidationRule field docs, k8s.io/apiextensions-apiserver
 * pkg/apis/apiextensions/v1/types_jsonschema.go). A rule that cannot be evaluated (say `int()` of a word) rejects the
 * object, as it does in the API server.
 */
function evaluateRule(rule: CelRule, self: unknown): string | undefined {
    const message = () => {
        if (rule.messageExpression) {
            try {
                const m = program(rule.messageExpression)({ self });
                if (typeof m === "string" && m.trim() !== "") return m;
            } catch {
                // the static message below, as the API server does
            }
        }
        return rule.message ?? `failed rule: ${rule.rule}`;
    };
    try {
        return program(rule.rule)({ self }) === true ? undefined : message();
    } catch (e) {
        return `${message()} (the rule could not be evaluated: ${(e as Error).message.split("\n")[0]})`;
    }
}
