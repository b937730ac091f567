// The modules form no import circle: each layer (components, stacks, plan and ops) imports only downwards.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { PROJECT_DIR } from "../plan/offlineRuntime.ts";

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

describe("module structure", () => {
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
