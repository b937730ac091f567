// Helpers for the ops command tests: read a chart back, make temporary output directories.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

export interface ChartSeries {
    name: string;
    values: [number, number][];
    pixels: [number, number][];
}

/** Every <polyline data-series> of a chart, with its data values and its drawn points. */
export function readSeries(svg: string): ChartSeries[] {
    const pairs = (s: string) => s.trim().split(/\s+/).map((p) => p.split(",").map(Number) as [number, number]);
    return [...svg.matchAll(/<polyline data-series="([^"]*)" data-values="([^"]*)" points="([^"]*)"/g)].map((m) => ({ name: m[1], values: pairs(m[2]), pixels: pairs(m[3]) }));
}

export function tempDir(prefix = "ops-"): string {
    return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
