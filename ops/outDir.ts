// The output directory of a command (--out): checked before anything runs, so that a path nobody can write fails
// at once with one line instead of a stack trace after the work is done, or a hang (Node 20's recursive mkdir
// never returns on procfs).
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
        return existing === target ? `${flag} ${out}: is a file, not a directory` : `${flag} ${out}: ${existing} is a file, so no directory can be made under it`;
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

/** Creates `out` and writes `files` into it; returns why it could not (one line), or undefined. */
export function writeFiles(out: string, files: Record<string, string>, flag = "--out"): string | undefined {
    const problem = outDirProblem(out, flag);
    if (problem) return problem;
    try {
        fs.mkdirSync(out, { recursive: true });
        for (const [file, text] of Object.entries(files)) {
            fs.mkdirSync(path.dirname(path.join(out, file)), { recursive: true });
            fs.writeFileSync(path.join(out, file), text);
        }
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

/** Writes `text` to `file` after outFileProblem; returns why it could not (one line), or undefined. */
export function writeOutFile(file: string, text: string, flag = "--out", example?: string): string | undefined {
    const problem = outFileProblem(file, flag, example);
    if (problem) return problem;
    try {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, text);
        return undefined;
    } catch (e) {
        const err = e as NodeJS.ErrnoException;
        return `${flag} ${file}: could not write (${err.code ?? err.message})`;
    }
}
