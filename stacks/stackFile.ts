// A stack file read as the Pulumi CLI reads it, or refused where the two readers would differ. The CLI (v3.259.0, the
// newest tag read; the pin is 3.276.0) decodes Pulumi.<stack>.yaml with go-yaml v3.0.1 into Go values
// (sdk/go/common/workspace/loaders.go LoadProjectStackBytes; sdk/go/common/encoding/marshal.go), re-encodes it, and
// decodes each config value again (sdk/go/common/resource/config/object.go unmarshalObject), handing the program
// JSON. This reader uses the yaml package (YAML 1.2's core schema); where go-yaml v3 resolves a plain scalar
// otherwise (its resolve.go keeps YAML 1.1's octal 0755, 0b binary, _ digit separators and timestamps), where the CLI
// refuses the file (a key that is not a string, an infinity JSON cannot hold) or merges maps (<<), the file is
// refused, naming the file, line, column and key.
import * as path from "path";
import { InputFileError, readInputFile } from "../cli/inputFile.ts";
import { lookalikeNote, nearest } from "../cli/text.ts";
import { StackFileError } from "./config.ts";
import { PROJECT, PROJECT_DIR, knownStacks, stackNameProblem } from "./stackNames.ts";
import { isCalendarDate } from "./schema.ts";
import { CONFIG_KEY_NAMESPACES as CONFIG_NAMESPACES, PULUMI_CONFIG_KEYS as PULUMI_KEYS } from "./configKeys.ts";
import { Alias, Document, isAlias, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, Scalar } from "yaml";

/** The top-level keys of a stack file (sdk/go/common/workspace/project.go ProjectStack); the CLI ignores any other. */
const STACK_FILE_KEYS = ["config", "encryptedkey", "encryptionsalt", "environment", "secretsprovider"];
/** Stack files are a few kilobytes; anything near this is not one. */
const STACK_FILE_MAX_BYTES = 1_000_000;
/** Aliases that resolve to a collection, at most (the yaml package's default; an alias bomb needs millions). */
const MAX_ALIAS_COUNT = 100;

/** One problem in a stack file: where it is and what is wrong, as one line. */
export interface StackFileProblem {
    line: number;
    col: number;
    message: string;
}

/** What go-yaml v3.0.1 makes of a plain scalar (resolve.go resolve, with no tag). */
export type GoScalar = { tag: "str"; value: string } | { tag: "bool"; value: boolean } | { tag: "null"; value: null } | { tag: "int"; value: bigint } | { tag: "float"; value: number } | { tag: "timestamp"; value: string } | { tag: "merge"; value: "<<" };

const GO_MAP: Record<string, GoScalar> = {};
for (const [tag, value, words] of [
    ["bool", true, ["true", "True", "TRUE"]],
    ["bool", false, ["false", "False", "FALSE"]],
    ["null", null, ["", "~", "null", "Null", "NULL"]],
    ["float", NaN, [".nan", ".NaN", ".NAN"]],
    ["float", Infinity, [".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"]],
    ["float", -Infinity, ["-.inf", "-.Inf", "-.INF"]],
    ["merge", "<<", ["<<"]],
] as [GoScalar["tag"], unknown, string[]][]) {
    for (const w of words) GO_MAP[w] = { tag, value } as GoScalar;
}

const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** Go's strconv.ParseInt(s, 0, 64), falling back to ParseUint(s, 0, 64): sign, then 0x, 0o, 0b or a leading 0 (octal). */
function goParseInt(s: string): bigint | undefined {
    const m = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]+|[1-9][0-9]*|0)$/.exec(s);
    if (!m) return undefined;
    const digits = m[2];
    const lower = digits.toLowerCase();
    const n = /^0[xob]/.test(lower) ? BigInt(lower) : digits.length > 1 && digits.startsWith("0") ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
    const value = m[1] === "-" ? -n : n;
    if (value >= -(2n ** 63n) && value < 2n ** 63n) return value;
    // ParseUint takes no sign.
    return m[1] === "" && value < 2n ** 64n ? value : undefined;
}

/** Go's time.Parse with go-yaml's allowed formats: a date, or a date and time (resolve.go parseTimestamp). */
function isGoTimestamp(s: string): boolean {
    if (!/^[0-9]{4}-/.test(s)) return false;
    const date = "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}";
    const time = "[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]+)?";
    return new RegExp(`^${date}$|^${date}[Tt]${time}(Z|[-+][0-9]{2}:[0-9]{2})$|^${date} ${time}$`).test(s) && validDate(s);
}

function validDate(s: string): boolean {
    const [y, mo, d] = s.slice(0, 10).split(/[-Tt ]/).map(Number);
    return isCalendarDate(y, mo, d);
}

/** go-yaml v3.0.1's reading of an untagged plain scalar (resolve.go:126-298). */
export function goResolve(text: string): GoScalar {
    const first = text === "" ? "N" : text[0];
    const hint = /[+-]/.test(first) ? "S" : /[0-9]/.test(first) ? "D" : /[yYnNtTfFoO~]/.test(first) ? "M" : first === "." ? "." : first === "N" && text === "" ? "N" : "";
    if (hint === "") return { tag: "str", value: text };
    if (text in GO_MAP) return GO_MAP[text];
    if (hint === "." && /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text)) return { tag: "float", value: Number(text) };
    if (hint === "D" || hint === "S") {
        if (isGoTimestamp(text)) return { tag: "timestamp", value: text };
        const plain = text.replace(/_/g, "");
        const int = goParseInt(plain);
        if (int !== undefined) return { tag: "int", value: int };
        if (YAML_STYLE_FLOAT.test(plain)) return { tag: "float", value: Number(plain) };
    }
    return { tag: "str", value: text };
}

/** How a value reads, for messages: "493", "true", "the string \"yes\"". */
function shown(v: unknown): string {
    if (typeof v === "string") return `the string ${JSON.stringify(v)}`;
    if (typeof v === "bigint") return v.toString();
    if (typeof v === "number") return Number.isNaN(v) ? ".nan" : Number.isFinite(v) ? String(v) : v > 0 ? ".inf" : "-.inf";
    return String(v);
}

function sameValue(go: GoScalar, ours: unknown): boolean {
    switch (go.tag) {
        case "int":
            return typeof ours === "number" && Number(go.value) === ours;
        case "float":
            return typeof ours === "number" && (Object.is(go.value, ours) || go.value === ours);
        case "timestamp":
        case "merge":
            return false;
        default:
            return go.value === ours;
    }
}


const didYouMean = (near: string | undefined) => (near ? ` (did you mean "${near}"?)` : "");

/** Every difference between the two readers in the document, at its node, with the key path it is under. */
function readerDifferences(doc: Document, at: (offset: number) => { line: number; col: number }): StackFileProblem[] {
    const problems: StackFileProblem[] = [];
    const report = (node: Node | undefined, message: string) => problems.push({ ...at(node?.range?.[0] ?? 0), message });
    const walk = (node: unknown, key: string) => {
        if (!node || isAlias(node as Alias)) return;
        const n = node as Node;
        const tag = (n as Scalar).tag;
        if (tag && !["tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"].includes(tag)) {
            report(n, `${key}: the YAML tag ${tag.replace("tag:yaml.org,2002:", "!!")} may be read otherwise by the Pulumi CLI (go-yaml v3); remove it and write the value plainly`);
            return;
        }
        if (isMap(n)) {
            for (const pair of n.items) {
                const k = pair.key as Node;
                if (!isScalar(k)) {
                    report(k, `${key}: a map key must be a plain string; the Pulumi CLI refuses any other ("expected only string keys")`);
                    continue;
                }
                const name = String(k.value);
                const child = key === "" ? name : key === "config" ? name : `${key}.${name}`;
                if (k.type === "PLAIN" && !k.tag) {
                    // go-yaml takes any plain << key as a merge (decode.go isMerge), before resolving it.
                    const go: GoScalar = k.source === "<<" ? { tag: "merge", value: "<<" } : goResolve(k.source ?? String(k.value));
                    if (go.tag === "merge") {
                        report(k, `${key || "the file"}: the merge key << is refused: the Pulumi CLI (go-yaml v3) merges the aliased map, and this reader would read a key named "<<"; write the keys out`);
                        continue;
                    }
                    if (go.tag !== "str") {
                        report(k, `${child}: the key ${k.source} is ${{ int: "a number", float: "a number", bool: "a boolean", null: "null", timestamp: "a timestamp" }[go.tag as string]} to the Pulumi CLI (go-yaml v3), which refuses a map whose keys are not all strings ("expected only string keys"); quote it ("${k.source}")`);
                        continue;
                    }
                }
                walk(pair.value, child);
            }
        } else if (isSeq(n)) {
            n.items.forEach((item, i) => walk(item, `${key}[${i}]`));
        } else if (isScalar(n)) {
            const value = n.value;
            if (typeof value === "number" && !Number.isFinite(value)) {
                report(n, `${key}: ${n.source} is not a number JSON can hold: the Pulumi CLI refuses the stack file ("json: unsupported value"); write a number such as 100`);
                return;
            }
            if (n.type !== "PLAIN" || tag) return;
            const go = goResolve(n.source ?? String(value));
            if (go.tag === "float" && !Number.isFinite(go.value)) {
                report(n, `${key}: ${n.source} is not a number JSON can hold: the Pulumi CLI refuses the stack file ("json: unsupported value"); write a number such as 100`);
            } else if (go.tag === "timestamp") {
                report(n, `${key}: ${n.source} is a timestamp to the Pulumi CLI (go-yaml v3), which hands the program "${goTimeString(n.source!)}"; quote it ("${n.source}")`);
            } else if (!sameValue(go, value)) {
                report(n, `${key}: ${n.source} reads as ${shown(go.value)} to the Pulumi CLI (go-yaml v3, which keeps YAML 1.1's octal 0755, 0b binary and _ separators) but as ${shown(value)} here; quote a string ("${n.source}") or write a plain decimal number`);
            }
        }
    };
    walk(doc.contents, "");
    return problems;
}

/** Go's time.Time.String() of a timestamp go-yaml parsed: what the CLI passes for an unquoted date (object.go unmarshalObject). */
function goTimeString(s: string): string {
    const [date, rest] = s.split(/[Tt ]/);
    const [y, m, d] = date.split("-").map(Number);
    const pad = (n: number, w = 2) => String(n).padStart(w, "0");
    if (!rest) return `${pad(y, 4)}-${pad(m)}-${pad(d)} 00:00:00 +0000 UTC`;
    return `${pad(y, 4)}-${pad(m)}-${pad(d)} ${rest.replace(/Z$/, "")}${/Z$|^[^-+]*$/.test(rest) ? " +0000 UTC" : ""}`;
}

/** The keys of the config map that the Pulumi CLI would read otherwise, or that this program never reads. */
function configKeyProblems(doc: Document, at: (offset: number) => { line: number; col: number }, project: string): StackFileProblem[] {
    const problems: StackFileProblem[] = [];
    const top = doc.contents;
    if (!isMap(top)) return problems;
    for (const pair of top.items) {
        const k = pair.key as Node;
        const name = isScalar(k) ? String(k.value) : "";
        if (isScalar(k) && !STACK_FILE_KEYS.includes(name)) {
            const odd = lookalikeNote(name);
            problems.push({ ...at(k.range?.[0] ?? 0), message: `${name}: is not a key of a stack file${odd ? ` (its ${odd})` : ""}${didYouMean(nearest(name, STACK_FILE_KEYS))}; the Pulumi CLI ignores it (keys are ${STACK_FILE_KEYS.join(", ")})` });
        }
    }
    const config = top.get("config", true);
    if (!isMap(config)) return problems;
    const namespaces = CONFIG_NAMESPACES;
    for (const pair of config.items) {
        if (!isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        const where = at(pair.key.range?.[0] ?? 0);
        const colons = key.split(":").length - 1;
        if (colons === 0) {
            problems.push({ ...where, message: `${key}: a config key needs a namespace: write ${project}:${key} (the Pulumi CLI reads a key without one as the project's, which no command here would see)` });
            continue;
        }
        const [namespace, ...rest] = key.split(":");
        const name = rest.join(":");
        if (colons === 2 && rest[0] === "config") {
            problems.push({ ...where, message: `${key}: write ${namespace}:${rest[1]} (the Pulumi CLI reads the old <namespace>:config:<name> form as that key)` });
            continue;
        }
        if (colons > 1) {
            problems.push({ ...where, message: `${key}: the Pulumi CLI refuses this key: configuration keys should be of the form <namespace>:<name>` });
            continue;
        }
        if (!namespaces.includes(namespace)) {
            const near = nearest(namespace, namespaces);
            const odd = lookalikeNote(namespace);
            problems.push({ ...where, message: `${key}: is in the namespace "${namespace}"${odd ? `, whose ${odd}` : ""}, which nothing here reads (namespaces are ${namespaces.join(", ")})${near ? `: did you mean "${near}:${name}"?` : ""}` });
            continue;
        }
        if (namespace === "pulumi" && !PULUMI_KEYS.includes(key)) {
            problems.push({ ...where, message: `${key}: is not a key the Pulumi CLI reads${didYouMean(nearest(key, PULUMI_KEYS))}; pulumi: keys are ${PULUMI_KEYS.join(", ")}` });
            continue;
        }
        if (namespace === project && (pair.value === null || (isScalar(pair.value) && pair.value.value === null))) {
            problems.push({ ...where, message: `${key}: has no value, so every key of the section would take its default (the Pulumi CLI only warns of an empty config value); give the section, or remove the line` });
        }
    }
    return problems;
}

/**
 * The stack file's config, flat, as the CLI hands it to the program (objects as JSON), or the problems that make the
 * two readers disagree. `text` is the file's content; `name` the file as messages name it.
 */
export function parseStackFile(text: string, project: string): { config?: Record<string, string>; problems: StackFileProblem[]; notAMap?: boolean } {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true, lineCounter, version: "1.2", merge: false });
    const at = (offset: number) => lineCounter.linePos(offset);
    const [error] = doc.errors;
    if (error) {
        const [pos] = error.linePos ?? [];
        return { problems: [{ line: pos?.line ?? 1, col: pos?.col ?? 1, message: error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "") }] };
    }
    if (doc.directives?.yaml?.explicit && doc.directives.yaml.version !== "1.2") {
        return { problems: [{ line: 1, col: 1, message: `the %YAML ${doc.directives.yaml.version} directive is refused: the Pulumi CLI reads every stack file with go-yaml v3; remove it` }] };
    }
    let top: unknown;
    try {
        top = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
        if (e instanceof ReferenceError) return { problems: [{ line: 1, col: 1, message: `its YAML aliases expand past ${MAX_ALIAS_COUNT} copies (an alias bomb?): write the values out` }] };
        throw e;
    }
    if (top === null || top === undefined) top = {};
    const config = isPlainMap(top) ? (top.config ?? {}) : undefined;
    if (!isPlainMap(config)) return { problems: [], notAMap: true };
    const problems = [...configKeyProblems(doc, at, project), ...readerDifferences(doc, at)];
    problems.sort((a, b) => a.line - b.line || a.col - b.col);
    if (problems.length) return { problems };
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(config)) flat[k] = typeof v === "string" ? v : JSON.stringify(v);
    return { config: flat, problems };
}

const isPlainMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Reads `Pulumi.<stack>.yaml` the way the CLI hands config to a program: objects JSON-encoded. A file that is not
 * YAML, not a map of `config` keys, not a regular file of at most 1 MB, or that the Pulumi CLI would read otherwise
 * (stacks/stackFile.ts), is a StackFileError naming the file, line and column, one line per problem.
 */
export function readStackConfig(stack: string, dir = PROJECT_DIR): Record<string, string> {
    const file = path.join(dir, `Pulumi.${stack}.yaml`);
    const relative = path.relative(process.cwd(), file);
    const name = relative && !relative.startsWith("..") ? relative : file;
    const nameProblem = stackNameProblem(stack);
    if (nameProblem) throw new StackFileError(stack, `${name}: ${nameProblem}`);
    let text: string;
    try {
        text = readInputFile(file, STACK_FILE_MAX_BYTES, name, "a stack file");
    } catch (e) {
        if (e instanceof InputFileError && e.code === "missing") throw new StackFileError(stack, `no stack file ${name}: known stacks are ${knownStacks(dir).join(", ")}`);
        throw new StackFileError(stack, (e as Error).message);
    }
    const parsed = parsedStackFile(text);
    if (parsed.problems.length) throw new StackFileError(stack, parsed.problems.map((p) => `${name}:${p.line}:${p.col}: ${p.message}`).join("\n"));
    if (!parsed.config) throw new StackFileError(stack, `${name}: must be a YAML map with a "config" map of keys to values, as pulumi config writes it`);
    return { ...parsed.config };
}

/** Stack files by text, parsed: a command reads its stack file more than once (its config, its program, its plan). */
const parsedStackFiles = new Map<string, ReturnType<typeof parseStackFile>>();
function parsedStackFile(text: string): ReturnType<typeof parseStackFile> {
    let parsed = parsedStackFiles.get(text);
    if (!parsed) {
        parsed = parseStackFile(text, PROJECT);
        if (parsedStackFiles.size >= 8) parsedStackFiles.delete(parsedStackFiles.keys().next().value!);
        parsedStackFiles.set(text, parsed);
    }
    return parsed;
}
