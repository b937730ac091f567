// Reading a file a command was given (a stack file, --manifests, a CRD file, docs/configuration.md) without hanging
// or running out of memory: regular files only (a FIFO blocks its reader until a writer comes, /dev/zero never ends,
// a directory cannot be read), at most a given size, read with O_NONBLOCK so that a file swapped for a FIFO after the
// check cannot block either. Each refusal is one line naming the file and what is allowed.
import * as fs from "fs";

/** Why a file cannot be read, in one line; `code` tells a missing file from the rest. */
export class InputFileError extends Error {
    readonly code: "missing" | "not-regular" | "too-large" | "unreadable" | "not-text";
    constructor(message: string, code: InputFileError["code"]) {
        super(message);
        this.code = code;
        this.name = "InputFileError";
    }
}

/** What a path is, in words, when it is not a regular file. */
export function kindOf(stat: fs.Stats): string {
    if (stat.isDirectory()) return "a directory";
    if (stat.isFIFO()) return "a FIFO (named pipe)";
    if (stat.isCharacterDevice()) return "a character device";
    if (stat.isBlockDevice()) return "a block device";
    if (stat.isSocket()) return "a socket";
    return "not a regular file";
}

/** A size in the units people read: 44.0 MB, 512 KB. */
export function sizeText(bytes: number): string {
    return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : bytes >= 1e3 ? `${Math.round(bytes / 1e3)} KB` : `${bytes} bytes`;
}

/**
 * The text of `file`, a regular file of at most `maxBytes` (symbolic links followed), as UTF-8 without a leading
 * byte-order mark (the Pulumi CLI strips it too: sdk/go/common/workspace/loaders.go readFileStripUTF8BOM). Throws an
 * InputFileError whose message starts with `name` (the file as the user gave it).
 */
export function readInputFile(file: string, maxBytes: number, name = file, what = "a file"): string {
    let stat: fs.Stats;
    try {
        stat = fs.statSync(file);
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") throw new InputFileError(`${name}: no such file`, "missing");
        throw new InputFileError(`${name}: cannot read it (${code ?? (e as Error).message})`, "unreadable");
    }
    if (!stat.isFile()) throw new InputFileError(`${name}: is ${kindOf(stat)}; it must be a regular file (${what})`, "not-regular");
    if (stat.size > maxBytes) throw new InputFileError(`${name}: is ${sizeText(stat.size)}; ${what} may be at most ${sizeText(maxBytes)}`, "too-large");
    let fd: number;
    try {
        fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
        throw new InputFileError(`${name}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, "unreadable");
    }
    try {
        const opened = fs.fstatSync(fd);
        if (!opened.isFile()) throw new InputFileError(`${name}: is ${kindOf(opened)}; it must be a regular file (${what})`, "not-regular");
        // Read up to one byte past the cap: a file that grew, or one whose size the kernel does not report (procfs),
        // is refused rather than read without end.
        const buffer = Buffer.alloc(Math.min(maxBytes + 1, Math.max(opened.size + 1, 64 * 1024)));
        let chunks: Buffer[] = [];
        let total = 0;
        for (;;) {
            const n = fs.readSync(fd, buffer, 0, buffer.length, null);
            if (n === 0) break;
            chunks.push(Buffer.from(buffer.subarray(0, n)));
            total += n;
            if (total > maxBytes) throw new InputFileError(`${name}: is more than ${sizeText(maxBytes)}; ${what} may be at most ${sizeText(maxBytes)}`, "too-large");
        }
        const bytes = Buffer.concat(chunks, total);
        chunks = [];
        const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
        const body = bytes.subarray(start);
        const problem = encodingProblem(body);
        if (problem) throw new InputFileError(`${name}: ${problem}; ${what} must be UTF-8 text: save it as UTF-8`, "not-text");
        return body.toString("utf8");
    } catch (e) {
        if (e instanceof InputFileError) throw e;
        throw new InputFileError(`${name}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, "unreadable");
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * A stream read to its end, refused past `maxBytes`, or when it sends nothing for `idleMs` without ending (a pipe whose
 * writer never closes it, such as `tail -f`, would otherwise hold the command for ever).
 */
export async function readStream(stream: NodeJS.ReadableStream, maxBytes: number, idleMs: number, name: string): Promise<string> {
    const chunks: Buffer[] = [];
    let total = 0;
    return new Promise<string>((resolve, reject) => {
        let timer: NodeJS.Timeout;
        const finish = (error?: Error) => {
            clearTimeout(timer);
            stream.removeListener("data", onData);
            stream.removeListener("end", onEnd);
            stream.removeListener("error", onError);
            if (error) {
                (stream as NodeJS.ReadableStream & { pause?: () => void }).pause?.();
                reject(error);
            } else {
                const bytes = Buffer.concat(chunks);
                const problem = encodingProblem(bytes);
                if (problem) reject(new InputFileError(`${name} ${problem}; it must be UTF-8 text`, "not-text"));
                else resolve(bytes.toString("utf8"));
            }
        };
        const arm = () => {
            clearTimeout(timer);
            timer = setTimeout(() => finish(new InputFileError(`${name} sent nothing for ${+(idleMs / 1000).toFixed(2)} s and did not end: pipe the whole output of a command that ends (helm template ... |)`, "unreadable")), idleMs);
            timer.unref?.();
        };
        const onData = (chunk: Buffer | string) => {
            const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
            total += b.length;
            if (total > maxBytes) return finish(new InputFileError(`${name} is more than ${sizeText(maxBytes)}; it may be at most ${sizeText(maxBytes)}`, "too-large"));
            chunks.push(b);
            arm();
        };
        const onEnd = () => finish();
        const onError = (e: Error) => finish(new InputFileError(`${name}: cannot read it (${(e as NodeJS.ErrnoException).code ?? e.message})`, "unreadable"));
        stream.on("data", onData);
        stream.on("end", onEnd);
        stream.on("error", onError);
        arm();
    });
}

/**
 * Why bytes are not UTF-8 text, in words that say what they are instead: UTF-16 or UTF-32 (what Windows PowerShell's
 * `>` writes), binary (a NUL byte), or text in another encoding (Windows-1252, Latin-1), naming the first byte that is
 * not UTF-8 and where. Undefined for UTF-8. The Pulumi CLI's YAML reader (go-yaml v3) refuses invalid UTF-8 too.
 */
export function encodingProblem(bytes: Uint8Array): string | undefined {
    const starts = (...b: number[]) => b.every((x, i) => bytes[i] === x);
    if (starts(0xff, 0xfe, 0, 0) || starts(0, 0, 0xfe, 0xff)) return "is UTF-32 text (it starts with a UTF-32 byte-order mark)";
    if (starts(0xff, 0xfe) || starts(0xfe, 0xff)) {
        return `is UTF-16 text (it starts with the byte-order mark ${hex(bytes[0])} ${hex(bytes[1])}, as Windows PowerShell's > and Out-File write; Out-File -Encoding utf8 writes UTF-8)`;
    }
    const nul = bytes.indexOf(0);
    if (nul >= 0) {
        // ASCII text in UTF-16 without a byte-order mark: every other byte is 0.
        const sample = bytes.subarray(0, Math.min(bytes.length, 200));
        const zeros = [0, 1].map((parity) => sample.filter((b, i) => i % 2 === parity && b === 0).length);
        if (sample.length >= 4 && Math.max(...zeros) >= sample.length / 2 - 1) return "is UTF-16 text without a byte-order mark (every other byte is 0)";
        return `is binary, not text: it holds a NUL byte at line ${lineAndColumn(bytes, nul).line}`;
    }
    const bad = firstInvalidUtf8(bytes);
    if (bad < 0) return undefined;
    const { line, column } = lineAndColumn(bytes, bad);
    const legacy = new TextDecoder("windows-1252").decode(bytes.subarray(bad, bad + 1));
    return `is not UTF-8: the byte ${hex(bytes[bad])} at line ${line}, column ${column} starts no UTF-8 character (in Windows-1252 or Latin-1 it is ${JSON.stringify(legacy)})`;
}

const hex = (b: number) => `0x${b.toString(16).toUpperCase().padStart(2, "0")}`;

function lineAndColumn(bytes: Uint8Array, offset: number): { line: number; column: number } {
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < offset; i++) {
        if (bytes[i] === 0x0a) {
            line++;
            lineStart = i + 1;
        }
    }
    return { line, column: Buffer.from(bytes.subarray(lineStart, offset)).toString("utf8").length + 1 };
}

/** The offset of the first byte that starts no valid UTF-8 sequence (RFC 3629: no overlongs, no surrogates), or -1. */
function firstInvalidUtf8(b: Uint8Array): number {
    let i = 0;
    while (i < b.length) {
        const c = b[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        // The length of the sequence and the range its second byte must be in.
        const [n, lo, hi] = c >= 0xc2 && c <= 0xdf ? [1, 0x80, 0xbf] : c === 0xe0 ? [2, 0xa0, 0xbf] : c === 0xed ? [2, 0x80, 0x9f] : c >= 0xe1 && c <= 0xef ? [2, 0x80, 0xbf] : c === 0xf0 ? [3, 0x90, 0xbf] : c === 0xf4 ? [3, 0x80, 0x8f] : c >= 0xf1 && c <= 0xf3 ? [3, 0x80, 0xbf] : [0, 0, 0];
        if (n === 0 || i + n >= b.length) return i;
        if (b[i + 1] < lo || b[i + 1] > hi) return i;
        for (let k = 2; k <= n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return i;
        i += n + 1;
    }
    return -1;
}
