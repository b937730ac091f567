// Checks a NodePool or EC2NodeClass the way the API server would, before Pulumi ever sees it: the CRD's structural
// schema through ajv (unknown fields included: the API server silently prunes them, which is how GC Notify lost its
// whole disruption policy), then the CRD's own CEL rules, each reported with the CRD's own message. Both come from
// the generated module (scripts/generate-karpenter-schema.ts), so nothing here re-types a rule.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import standalone from "ajv/dist/standalone/index.js";
import { CACHE_DIR } from "../../cli/args.ts";
import { celIssues, fieldPath } from "./cel.ts";
import { CRDS, type GeneratedCrd } from "./generated/crds.ts";

export interface KarpenterObject {
    apiVersion: string;
    kind: string;
    metadata: { name: string; [k: string]: unknown };
    spec: Record<string, any>;
}

/** One problem: the field path inside the object and what is wrong there. */
export interface SchemaIssue {
    path: string;
    message: string;
}

/**
 * Every schema and CEL problem of `obj`; empty when the API server would accept it unchanged. `crds` is the generated
 * module's (tests pass one generated from other CRD files).
 */
export function validateKarpenterObject(obj: KarpenterObject, crds: Record<string, GeneratedCrd> = CRDS): SchemaIssue[] {
    const crd = crds[obj.kind];
    if (!crd) return [{ path: "kind", message: `must be one of ${Object.keys(crds).join(", ")} (got ${JSON.stringify(obj.kind)})` }];
    const issues: SchemaIssue[] = [];
    if (obj.apiVersion !== crd.apiVersion) issues.push({ path: "apiVersion", message: `must be ${crd.apiVersion} (got ${JSON.stringify(obj.apiVersion)})` });
    if (typeof obj.metadata?.name !== "string" || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(obj.metadata.name) || obj.metadata.name.length > 253) {
        issues.push({ path: "metadata.name", message: `must be a DNS subdomain name (got ${JSON.stringify(obj.metadata?.name)})` });
    }
    // The API server defaults before it validates, and CEL sees the defaulted object; ajv's useDefaults does the same on a copy.
    const spec = structuredClone(obj.spec);
    const validate = validator(crd);
    if (!validate(spec)) issues.push(...(validate.errors ?? []).filter((e) => !e.schemaPath.includes("/anyOf/")).map((e) => schemaIssue(e, crd)));
    // CEL rules assume a structurally valid object, as the API server's do.
    if (issues.length === 0) issues.push(...celIssues(crd.spec, spec, "spec"));
    return issues;
}

const compiled = new WeakMap<GeneratedCrd, ValidateFunction>();
const AJV_OPTIONS: Options = {
    allErrors: true,
    verbose: true,
    useDefaults: true,
    // An unknown keyword still fails the compile (strictSchema); int-or-string's pattern beside anyOf is by design.
    strictTypes: false,
    allowUnionTypes: true,
    // Compiled on every plan and preview: the generated schemas are checked against JSON Schema's meta-schema by the
    // tests (tests/karpenterCrd.spec.ts), and ajv's optimizing pass saves nothing on two objects a run.
    validateSchema: false,
    // The source, for the cache below.
    code: { optimize: false, source: true },
    // Kubernetes' integer formats bound nothing a JSON number does not; date-time is RFC 3339.
    formats: { int32: true, int64: true, "date-time": /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i },
};
const ajv = new Ajv(AJV_OPTIONS);

function validator(crd: GeneratedCrd): ValidateFunction {
    if (!compiled.has(crd)) compiled.set(crd, compileCached(toJsonSchema(crd.spec)));
    return compiled.get(crd)!;
}

/**
 * ajv's validator for `schema`, kept as ajv's standalone code beside Node's compile cache (cli/compileCache.mjs):
 * compiling the two CRD schemas cost every plan and preview about a tenth of a second. The file is named after the
 * hash of ajv's version, its options and the schema, so a changed CRD or ajv compiles anew; an unreadable or
 * unwritable cache only costs the compile.
 */
export function compileCached(schema: Record<string, unknown>, dir = VALIDATOR_CACHE): ValidateFunction {
    const text = JSON.stringify([AJV_VERSION, AJV_OPTIONS, schema], (_, v) => (v instanceof RegExp ? String(v) : v));
    const key = crypto.createHash("sha256").update(text).digest("hex");
    const file = path.join(dir, `ajv-${key.slice(0, 32)}.cjs`);
    try {
        return require(file) as ValidateFunction;
    } catch {
        const validate = ajv.compile(schema);
        try {
            fs.mkdirSync(dir, { recursive: true });
            const temp = `${file}.${process.pid}.tmp`;
            // ajv's runtime helpers by their full path, so that the file loads wherever the cache is.
            const code = standalone.default(ajv, validate).replace(/require\("(ajv\/dist\/runtime\/[\w-]+)"\)/g, (_, m: string) => `require(${JSON.stringify(require.resolve(m))})`);
            fs.writeFileSync(temp, code);
            fs.renameSync(temp, file);
        } catch {
            // A read-only checkout plans as well, only slower.
        }
        return validate;
    }
}

const require = createRequire(import.meta.url);
const AJV_VERSION: string = require("ajv/package.json").version;
const VALIDATOR_CACHE = CACHE_DIR;

/**
 * A Kubernetes structural schema as JSON Schema (draft-07), with the API server's strictness: an object refuses fields
 * it does not declare unless it preserves unknown fields. Kubernetes semantics from k8s.io/apiextensions-apiserver
 * (pkg/apiserver/schema/structural.go; the x-kubernetes-* extensions in apis/apiextensions/v1/types_jsonschema.go).
 */
export function toJsonSchema(s: Record<string, any>): Record<string, any> {
    const out: Record<string, any> = {};
    for (const [k, v] of Object.entries(s)) {
        if (k === "properties") out.properties = Object.fromEntries(Object.entries(v).map(([p, x]) => [p, toJsonSchema(x as Record<string, any>)]));
        else if (k === "items" || k === "not" || (k === "additionalProperties" && typeof v === "object")) out[k] = toJsonSchema(v);
        else if (k === "anyOf" || k === "allOf" || k === "oneOf") out[k] = v.map(toJsonSchema);
        else if (k === "x-kubernetes-list-type") {
            // "atomic" and "map" replace the list whole; "set" refuses duplicates. "map" also refuses duplicate keys,
            // which JSON Schema cannot say: refuse to guess rather than accept what the API server refuses.
            if (v === "set") out.uniqueItems = true;
            else if (v !== "atomic") throw new Error(`x-kubernetes-list-type ${JSON.stringify(v)} is not supported here`);
        } else if (k === "x-kubernetes-int-or-string") {
            out.anyOf ??= [{ type: "integer" }, { type: "string" }];
        } else if (k === "x-kubernetes-embedded-resource") throw new Error("x-kubernetes-embedded-resource is not supported here");
        // CEL rules run in cel.ts; map-type says how a map merges; nullable and preserve-unknown-fields are read below.
        // Any other keyword reaches ajv, whose strict mode refuses what it does not know.
        else if (["nullable", "description", "x-kubernetes-validations", "x-kubernetes-map-type", "x-kubernetes-preserve-unknown-fields"].includes(k)) continue;
        else out[k] = v;
    }
    if (s.nullable && out.type) out.type = [out.type, "null"];
    if (s.type === "object" && s.additionalProperties === undefined && !s["x-kubernetes-preserve-unknown-fields"]) out.additionalProperties = false;
    return out;
}

const got = (v: unknown) => JSON.stringify(v);
const TYPE_NAMES: Record<string, string> = { object: "an object", array: "a list", integer: "an integer", number: "a number", boolean: "true or false", string: "a string" };

/** An ajv error as the API server would word it, at the field's path. */
function schemaIssue(e: ErrorObject, crd: GeneratedCrd): SchemaIssue {
    const path = fieldPath("spec", e.instancePath.split("/").slice(1).map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~")));
    const p = e.params as Record<string, any>;
    switch (e.keyword) {
        case "additionalProperties": {
            const known = Object.keys(e.parentSchema?.properties ?? {});
            const message = `is not a field of the v${crd.karpenterVersion} ${crd.kind} schema, so the API server would silently drop it; fields here are ${known.join(", ") || "none"}`;
            return { path: fieldPath(path, [p.additionalProperty]), message };
        }
        case "required":
            return { path: fieldPath(path, [p.missingProperty]), message: "is required" };
        case "enum":
            return { path, message: `must be one of ${p.allowedValues.join(", ")} (got ${got(e.data)})` };
        case "pattern":
            return { path, message: `must match ${p.pattern} (got ${got(e.data)})` };
        case "type":
            return { path, message: `must be ${[p.type].flat().map((t: string) => TYPE_NAMES[t] ?? t).join(" or ")} (got ${got(e.data)})` };
        case "anyOf":
            return { path, message: `must be an integer or a string (got ${got(e.data)})` };
        case "minimum":
        case "maximum":
            return { path, message: `must be at ${e.keyword === "minimum" ? "least" : "most"} ${p.limit} (got ${got(e.data)})` };
        case "minLength":
        case "maxLength":
            return { path, message: `must be at ${e.keyword === "minLength" ? "least" : "most"} ${p.limit} characters (got ${(e.data as string).length})` };
        case "minItems":
        case "maxItems":
            return { path, message: `must have at ${e.keyword === "minItems" ? "least" : "most"} ${p.limit} items (got ${(e.data as unknown[]).length})` };
        case "minProperties":
        case "maxProperties":
            return { path, message: `must have at ${e.keyword === "minProperties" ? "least" : "most"} ${p.limit} entries (got ${Object.keys(e.data as object).length})` };
        case "uniqueItems":
            return { path, message: `must not repeat a value (items ${p.j} and ${p.i} are equal)` };
        default:
            return { path, message: e.message ?? e.keyword };
    }
}
