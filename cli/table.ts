// Plain text for terminal reports: tables with columns padded to their widest cell, numbers right-aligned; counts.

export function table(header: string[], rows: (string | number)[][], indent = "  "): string[] {
    const cells = [header, ...rows.map((r) => r.map(String))];
    const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
    const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === "number" || /^[0-9.,]+( \(.*\))?$/.test(String(r[i]))));
    return cells.map((r) => indent + r.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join("  ").trimEnd());
}

/** "1 node", "3 nodes". */
export const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
