// Helpers for the ops command tests: read a chart back, make temporary output directories, check a script's ConfigMap.
import { expect } from "chai";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CACHE_DIR } from "../cli/args.ts";

/**
 * The environment for a Node process a test starts from one of the project's own files: the compile cache every npm
 * script preloads (cli/compileCache.mjs), so that it does not strip its TypeScript again (about 0.3 CPU s each). Not
 * for an entry in a temporary directory: the cache keys its entries by path, and would keep one for every run.
 */
export const CACHED_NODE_ENV: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: CACHE_DIR };

export interface ChartSeries {
    /** The title of the panel the series is in. */
    panel: string;
    name: string;
    values: [number, number][];
    pixels: [number, number][];
}

/** Every <polyline data-series> of a chart, with its panel, its data values and its drawn points. */
export function readSeries(svg: string): ChartSeries[] {
    const pairs = (s: string) => s.trim().split(/\s+/).map((p) => p.split(",").map(Number) as [number, number]);
    const text = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
    return svg.split(/(?=<svg data-panel=)/).flatMap((part) => {
        const panel = /^<svg data-panel="([^"]*)"/.exec(part)?.[1];
        if (panel === undefined) return [];
        return [...part.matchAll(/<polyline data-series="([^"]*)" data-values="([^"]*)" points="([^"]*)"/g)].map((m) => ({ panel: text(panel), name: text(m[1]), values: pairs(m[2]), pixels: pairs(m[3]) }));
    });
}

let root: string | undefined;

/** A new temporary directory, under one root per test run that tests/cleanup.ts removes when the run ends. */
export function tempDir(prefix = "ops-"): string {
    root ??= fs.mkdtempSync(path.join(os.tmpdir(), "notify-karpenter-tests-"));
    return fs.mkdtempSync(path.join(root, prefix));
}

/** Removes every directory tempDir made. */
export function removeTempDirs(): void {
    if (root) fs.rmSync(root, { recursive: true, force: true });
    root = undefined;
}

/** The ConfigMaps (as JSON) already started as a pod would: every stack ships the same files, so one start each tells. */
const started = new Set<string>();

/**
 * An in-cluster script's ConfigMap, checked as the pod sees it: it carries the script and the API client it requires,
 * byte for byte, and mounted alone (as /app is) the script starts: without settings it says so and exits 2.
 */
export function expectScriptConfigMap(data: Record<string, string>, script: string): void {
    const components = path.join(import.meta.dirname, "..", "components", "inCluster");
    const files = [script, "inClusterApi.js"];
    expect(data).to.deep.equal(Object.fromEntries(files.map((f) => [f, fs.readFileSync(path.join(components, f), "utf8")])));
    const key = JSON.stringify([script, data]);
    if (started.has(key)) return;
    const mounted = tempDir("configmap-");
    for (const [file, text] of Object.entries(data)) fs.writeFileSync(path.join(mounted, file), text);
    const run = spawnSync(process.execPath, [path.join(mounted, script)], { env: {}, encoding: "utf8", timeout: 10000 });
    expect([run.status, JSON.parse(run.stdout).msg]).to.deep.equal([2, "bad settings"]);
    started.add(key);
}
