// CSV as spreadsheets read it (RFC 4180): a header row, then one row per record; fields with commas, quotes or
// line breaks are quoted.

export function toCsv(header: string[], rows: (string | number | undefined)[][]): string {
    const field = (v: string | number | undefined) => {
        const s = v === undefined ? "" : String(v);
        return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    };
    return [header, ...rows].map((r) => r.map(field).join(",")).join("\r\n") + "\r\n";
}
