// The modules form no import circle, and each layer imports only from itself and the layers below.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { PROJECT_DIR } from "../stacks/stackNames.ts";

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
