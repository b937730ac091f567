// What the commands print beside their report: progress on standard error while something slow runs, colour for
// OK, WARN and FAIL where a terminal shows it, and the JSON form of a report. No dependency: the rules are Node's own.

/** The version of every command's JSON report (docs/json-output.md); a field removed or changed in meaning bumps it. */
export const SCHEMA_VERSION = 1;

/** The environment variables that decide colour. */
export interface ColourEnv {
    NO_COLOR?: string;
    NODE_DISABLE_COLORS?: string;
    FORCE_COLOR?: string;
    TERM?: string;
}

/**
 * Whether to colour what goes to `stream`, as Node decides for its own output (nodejs.org/api/cli.html, FORCE_COLOR;
 * tty.WriteStream.getColorDepth): FORCE_COLOR set to "", 1, 2, 3 or true forces colour even into a pipe, and any other
 * value of it refuses colour; otherwise NO_COLOR or NODE_DISABLE_COLORS (set at all) or TERM=dumb refuses it, and a
 * stream that is not a terminal gets none.
 */
export function colourEnabled(stream: { isTTY?: boolean }, env: ColourEnv = process.env): boolean {
    if (env.FORCE_COLOR !== undefined) return ["", "1", "2", "3", "true"].includes(env.FORCE_COLOR);
    if (env.NO_COLOR !== undefined || env.NODE_DISABLE_COLORS !== undefined || env.TERM === "dumb") return false;
    return stream.isTTY === true;
}

const SGR = { green: 32, yellow: 33, red: 31, magenta: 35 } as const;
const paint = (text: string, colour: keyof typeof SGR) => `\u001b[${SGR[colour]}m${text}\u001b[39m`;

/** The status words the reports start their lines with, and their colours. */
const STATUS: [RegExp, keyof typeof SGR][] = [
    [/^(\s*)(OK)(?=[\s:]|$)/, "green"],
    [/^(\s*)(WARN)(?=\s|$)/, "yellow"],
    [/^(\s*)(FAIL|FAILED)(?=[\s:]|$)/, "red"],
    [/^(\s*)(NOT CHECKED|NOT RUN|Could not check|Could not run)(?=[\s:]|$)/, "magenta"],
    [/^(\s*)(Result: OK)(?=$|\n)/, "green"],
    [/^(\s*)(Result: FAILED)(?=:|$)/, "red"],
];

/** A plain-text report with the status word at the start of each line in its colour; the rest of the line untouched. */
export function colourStatuses(text: string): string {
    return text
        .split("\n")
        .map((line) => {
            for (const [pattern, colour] of STATUS) {
                const m = pattern.exec(line);
                if (m) return `${m[1]}${paint(m[2], colour)}${line.slice(m[0].length)}`;
            }
            return line;
        })
        .join("\n");
}

/** Removes the colour colourStatuses adds (tests, and anything that wants the plain text back). */
export const plainText = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "");

type Sink = (line: string) => void;
let progressSink: Sink | undefined;

/**
 * A progress line for the person waiting ("plan: building stack staging offline"). It goes to standard error when the
 * command runs as a process (runMain), never into the report, and nowhere when a test calls the command in-process.
 */
export function progress(line: string): void {
    progressSink?.(line);
}

/** Where progress lines go (undefined: nowhere); returns the sink it replaced. */
export function setProgressSink(sink: Sink | undefined): Sink | undefined {
    const before = progressSink;
    progressSink = sink;
    return before;
}

/** Seconds since `start` (epoch ms), to a tenth: "3.4 s". */
export const elapsed = (start: number, now = Date.now()) => `${(Math.round((now - start) / 100) / 10).toFixed(1)} s`;

/** A JSON report: one object, two-space indented, with the schema version first. */
export function jsonText(command: string, body: Record<string, unknown>): string {
    return JSON.stringify({ schemaVersion: SCHEMA_VERSION, command, ...body }, null, 2);
}
