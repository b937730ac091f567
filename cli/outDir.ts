// The output directory of a command (--out): checked before anything runs, so that a path nobody can write fails
// at once with one line instead of a stack trace after the work is done, or a hang (Node 20's recursive mkdir
// never returns on procfs). A command writes only files it made: each run records the files it wrote and their
// sha256 in the directory (.notify-karpenter-<command>.json), and the next run overwrites or removes a file only
// if that record lists it and it is unchanged; a file of the user's, a FIFO, a device or a link in its place is
// refused before anything is written.
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";

// statfs(2) magic numbers of kernel filesystems that hold no user files (linux/magic.h).
const KERNEL_FILESYSTEMS: Record<number, string> = { 0x9fa0: "proc", 0x62656572: "sysfs", 0x63677270: "cgroup2", 0x27e0eb: "cgroup", 0x64626720: "debugfs", 0x73636673: "securityfs", 0x1cd1: "devpts" };
const KERNEL_DIRS = ["/proc", "/sys", "/dev"];

/** Why `out` cannot hold the command's files, in one line naming `flag`; undefined when it can. Creates nothing. */
export function outDirProblem(out: string, flag = "--out"): string | undefined {
    if (out.trim() === "") return `${flag} must be a directory path (got "")`;
    const target = path.resolve(out);
    const kernelDir = KERNEL_DIRS.find((d) => target === d || target.startsWith(`${d}/`));
    if (kernelDir) return `${flag} ${out}: ${kernelDir} belongs to the kernel and holds no files of ours; choose a directory such as plan-out/<stack>`;
    // The deepest part of the path that exists decides: a directory we may write in, or a file in the way.
    let existing = target;
    while (!fs.existsSync(existing)) existing = path.dirname(existing);
    let stat: fs.Stats;
    try {
        stat = fs.statSync(existing);
    } catch (e) {
        return `${flag} ${out}: cannot read ${existing} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    if (!stat.isDirectory()) {
        const what = stat.isFile() ? "a file" : kindOfPath(stat);
        return existing === target ? `${flag} ${out}: is ${what}, not a directory` : `${flag} ${out}: ${existing} is ${what}, so no directory can be made under it`;
    }
    const fsType = statfsType(existing);
    if (fsType) return `${flag} ${out}: ${existing} is on the kernel's ${fsType} filesystem, which holds no files of ours`;
    try {
        fs.accessSync(existing, fs.constants.W_OK | fs.constants.X_OK);
    } catch {
        return `${flag} ${out}: no permission to write in ${existing}`;
    }
    return undefined;
}

function statfsType(dir: string): string | undefined {
    try {
        return KERNEL_FILESYSTEMS[fs.statfsSync(dir).type];
    } catch {
        return undefined;
    }
}

/** What a command wrote into its output directory: each file's path (relative to it) and sha256. */
export interface OutRecord {
    /** "npm run plan" */
    writtenBy: string;
    stack?: string;
    files: Record<string, string>;
}

/**
 * Which command writes, for the record's name and the messages: `plan` is "npm run plan", .notify-karpenter-plan.json.
 * Without a command (a caller that names none), the record is .notify-karpenter-out.json, "this command".
 */
export interface Writer {
    command?: string;
    stack?: string;
}

/** The record's file name in the output directory. */
export const outRecordName = (command?: string) => `.notify-karpenter-${command ?? "out"}.json`;
/** Who the record says wrote the files, and how messages name the writer. */
const writtenBy = (command?: string) => (command ? `npm run ${command}` : "notify-karpenter");
const writerName = (command?: string) => (command ? `npm run ${command}` : "this command");

export const sha256 = (text: string | Buffer) => crypto.createHash("sha256").update(text).digest("hex");

/** A path a record may name: relative, inside the directory. */
const inside = (f: string) => f !== "" && !path.isAbsolute(f) && !f.split(/[\\/]/).some((p) => p === ".." || p === "");

/** The record an earlier run of `command` left in `out`, or undefined when there is none (or it is not one of ours). */
export function readOutRecord(out: string, command?: string): OutRecord | undefined {
    const file = path.join(out, outRecordName(command));
    try {
        if (!fs.lstatSync(file).isFile() || fs.lstatSync(file).size > 1_000_000) return undefined;
        const record = JSON.parse(fs.readFileSync(file, "utf8"));
        const files = record?.files;
        if (record?.writtenBy !== writtenBy(command) || typeof files !== "object" || files === null) return undefined;
        // Only paths inside the directory: a record cannot name anything above it.
        const own = Object.entries(files).filter(([f, h]) => inside(f) && typeof h === "string");
        return { writtenBy: record.writtenBy, ...(record.stack === undefined ? {} : { stack: String(record.stack) }), files: Object.fromEntries(own) as Record<string, string> };
    } catch {
        return undefined;
    }
}

/**
 * Removes from `out` the files the record says an earlier run wrote, where each is still as written (`keep`: the files
 * about to be written again). Returns what was removed and what was left because it changed since.
 */
export function removeRecordedFiles(out: string, record: OutRecord, keep: string[] = []): { removed: string[]; changed: string[] } {
    const removed: string[] = [];
    const changed: string[] = [];
    const folders = new Set<string>();
    for (const [file, hash] of Object.entries(record.files)) {
        if (keep.includes(file)) continue;
        const full = path.join(out, file);
        let text: Buffer;
        try {
            if (!fs.lstatSync(full).isFile()) continue;
            text = fs.readFileSync(full);
        } catch {
            continue;
        }
        if (sha256(text) !== hash) {
            changed.push(file);
            continue;
        }
        fs.rmSync(full);
        removed.push(file);
        if (path.dirname(file) !== ".") folders.add(path.dirname(file));
    }
    // The folders of the removed files go with them, unless something else is in them.
    for (const folder of [...folders].map((d) => path.join(out, d))) {
        if (fs.existsSync(folder) && fs.lstatSync(folder).isDirectory() && fs.readdirSync(folder).length === 0) fs.rmdirSync(folder);
    }
    return { removed, changed };
}

/**
 * Why `writer` may not write `names` into `out`, in one line naming `flag` and the file; undefined when it may. Each
 * name must be absent, or a regular file the writer's record lists unchanged; its folders real directories. Reads only.
 */
export function outFilesProblem(out: string, names: string[], writer: Writer, flag = "--out"): string | undefined {
    const problem = outDirProblem(out, flag);
    if (problem) return problem;
    if (!fs.existsSync(out)) return undefined;
    const by = writerName(writer.command);
    const recordName = outRecordName(writer.command);
    const record = readOutRecord(out, writer.command);
    const refused: string[] = [];
    for (const name of [...names, recordName]) {
        const parts = name.split("/");
        let at = out;
        for (const [i, part] of parts.entries()) {
            at = path.join(at, part);
            let stat: fs.Stats;
            try {
                stat = fs.lstatSync(at);
            } catch {
                break;
            }
            const last = i === parts.length - 1;
            const shown = parts.slice(0, i + 1).join("/");
            if (stat.isSymbolicLink()) {
                refused.push(`${shown} is a symbolic link (to ${fs.readlinkSync(at)}), which ${by} writes through for no one`);
                break;
            }
            if (!last && !stat.isDirectory()) {
                refused.push(`${shown} is ${stat.isFile() ? "a file" : kindOfPath(stat)}, where ${by} puts a folder`);
                break;
            }
            if (!last) continue;
            if (!stat.isFile()) {
                refused.push(`${shown} is ${stat.isDirectory() ? "a directory" : kindOfPath(stat)}, where ${by} writes a file`);
            } else if (name === recordName) {
                if (!record) refused.push(`${shown} is there and is not a record ${by} wrote`);
            } else if (!record || !(name in record.files)) {
                refused.push(`${shown} is there and ${by} did not write it (${record ? `${recordName} does not list it` : `no ${recordName} says it did`})`);
            } else if (sha256(fs.readFileSync(at)) !== record.files[name]) {
                refused.push(`${shown} was changed since ${by} wrote it`);
            }
        }
    }
    if (refused.length === 0) return undefined;
    const [them, are] = refused.length === 1 ? ["it", "it is as it was"] : ["them", "they are as they were"];
    return `${flag} ${out}: ${refused[0]}${refused.length > 1 ? ` (and ${refused.length - 1} more: ${refused.slice(1).map((r) => r.split(" ")[0]).join(", ")})` : ""}; ${by} writes only files it made, so nothing was written and ${are}: move ${them}, or choose another ${flag}`;
}

/** Writes `text` to `file`, a regular file or none: never through a link, and never blocking on a FIFO put there since. */
function writeRegular(file: string, text: string): void {
    const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, 0o666);
    try {
        if (!fs.fstatSync(fd).isFile()) throw Object.assign(new Error("not a regular file"), { code: "ENOTREG" });
        fs.writeFileSync(fd, text);
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * Creates `out` and writes `files` into it for `writer`, after outFilesProblem, with the record of what it wrote; an
 * earlier run's files that this run does not write again are removed (only where unchanged). Returns why it could
 * not write (one line), or undefined.
 */
export function writeFiles(out: string, files: Record<string, string>, flag = "--out", writer: Writer = {}): string | undefined {
    const problem = outFilesProblem(out, Object.keys(files), writer, flag);
    if (problem) return problem;
    try {
        fs.mkdirSync(out, { recursive: true });
        const earlier = readOutRecord(out, writer.command);
        if (earlier) removeRecordedFiles(out, earlier, Object.keys(files));
        for (const [file, text] of Object.entries(files)) {
            fs.mkdirSync(path.dirname(path.join(out, file)), { recursive: true });
            writeRegular(path.join(out, file), text);
        }
        const record: OutRecord = { writtenBy: writtenBy(writer.command), ...(writer.stack ? { stack: writer.stack } : {}), files: Object.fromEntries(Object.entries(files).map(([f, text]) => [f, sha256(text)])) };
        writeRegular(path.join(out, outRecordName(writer.command)), JSON.stringify(record, null, 2) + "\n");
        return undefined;
    } catch (e) {
        const err = e as NodeJS.ErrnoException;
        return `${flag} ${out}: could not write (${err.code ?? ""}${err.code ? ": " : ""}${err.message.replace(/^[A-Z]+: /, "").split(",")[0]})`;
    }
}

/**
 * Why `file` cannot be written as the command's output file (one line naming `flag`), or undefined: a directory, a
 * FIFO or device in its place, a kernel filesystem, a parent that is a file, or no permission. Creates nothing.
 */
export function outFileProblem(file: string, flag = "--out", example = "out/file.ts"): string | undefined {
    if (file.trim() === "") return `${flag} must be a file path such as ${example} (got "")`;
    const target = path.resolve(file);
    const kernelDir = KERNEL_DIRS.find((d) => target === d || target.startsWith(`${d}/`));
    if (kernelDir) return `${flag} ${file}: ${kernelDir} belongs to the kernel and holds no files of ours; choose a file such as ${example}`;
    let stat: fs.Stats | undefined;
    try {
        if (fs.lstatSync(target).isSymbolicLink()) return `${flag} ${file}: is a symbolic link (to ${fs.readlinkSync(target)}); give the file itself, such as ${example}`;
    } catch {
        // Absent: made below.
    }
    try {
        stat = fs.statSync(target);
    } catch (e) {
        if (!["ENOENT", "ENOTDIR"].includes((e as NodeJS.ErrnoException).code ?? "")) return `${flag} ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    if (stat?.isDirectory()) return `${flag} ${file}: is a directory; give a file path such as ${example}`;
    if (stat && !stat.isFile()) return `${flag} ${file}: is ${kindOfPath(stat)}, not a regular file; give a file path such as ${example}`;
    const parent = outDirProblem(path.dirname(target), flag);
    if (parent) return parent.replace(`${flag} ${path.dirname(target)}: `, `${flag} ${file}: `).replace(/: is a file, not a directory$/, `: ${path.dirname(target)} is a file, so no file can be made under it`);
    if (stat) {
        try {
            fs.accessSync(target, fs.constants.W_OK);
        } catch {
            return `${flag} ${file}: no permission to write it`;
        }
    }
    return undefined;
}

function kindOfPath(stat: fs.Stats): string {
    return stat.isFIFO() ? "a FIFO (named pipe)" : stat.isCharacterDevice() ? "a character device" : stat.isBlockDevice() ? "a block device" : stat.isSocket() ? "a socket" : "not a regular file";
}

/**
 * Writes `text` to `file` after outFileProblem; returns why it could not (one line), or undefined. With `marker`, a
 * file already there is overwritten only if it holds the marker (the generator's "GENERATED by" line) in its first
 * lines: a file the command did not make is never written over.
 */
export function writeOutFile(file: string, text: string, flag = "--out", example?: string, marker?: { text: string; by: string }): string | undefined {
    const problem = outFileProblem(file, flag, example);
    if (problem) return problem;
    if (marker && fs.existsSync(file)) {
        let head = "";
        try {
            const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
            try {
                const buffer = Buffer.alloc(2000);
                head = buffer.subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0)).toString("utf8");
            } finally {
                fs.closeSync(fd);
            }
        } catch (e) {
            return `${flag} ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}), so it may not be ${marker.by}'s to overwrite; nothing was written`;
        }
        if (!head.includes(marker.text)) {
            return `${flag} ${file}: is there and ${marker.by} did not write it (its first lines lack "${marker.text}"): nothing was written, so it is as it was; move it, or choose another ${flag}`;
        }
    }
    try {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        writeRegular(file, text);
        return undefined;
    } catch (e) {
        const err = e as NodeJS.ErrnoException;
        return `${flag} ${file}: could not write (${err.code ?? err.message})`;
    }
}
