// docs/configuration.md is generated from the config schema; these tests keep the two from drifting apart.
import { expect } from "chai";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { REFERENCE_FILE, configReference, docsConfig } from "../scripts/config-reference.ts";
import { rawConfig } from "./helpers.ts";

/** Every key path a stack file sets, in the reference's notation (`[]` for list items). */
function keysOf(value: unknown, at: string): string[] {
    if (Array.isArray(value)) return [at, ...value.filter((v) => v && typeof v === "object").flatMap((v) => keysOf(v, `${at}[]`).slice(1))];
    if (value && typeof value === "object") return [at, ...Object.entries(value).flatMap(([k, v]) => keysOf(v, at ? `${at}.${k}` : k))];
    return [at];
}

describe("configuration reference (docs/configuration.md)", () => {
    it("is what the config schema generates: run npm run docs:config after changing stacks/config.ts", () => {
        expect(fs.readFileSync(REFERENCE_FILE, "utf8")).to.equal(configReference());
    });

    for (const stack of ["staging", "production", "scratch"]) {
        it(`lists every key the ${stack} stack file sets`, () => {
            const documented = new Set([...configReference().matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1].replace(/\.<name>/g, "")));
            const raw = rawConfig(stack);
            // Keys under a map of free-form names (tags, selectors, resource maps) are the user's own.
            const maps = [...configReference().matchAll(/^\| `([^`]+)` \| [^|]+ \| a map of /gm)].map((m) => m[1]);
            const set = keysOf(raw, "").filter((k) => k && !maps.some((m) => k.startsWith(`${m}.`)));
            expect(set.filter((k) => !documented.has(k) && !documented.has(k.replace(/\.[^.]+$/, "")))).to.deep.equal([]);
        });
    }

    it("--check says when the file is stale and writes nothing", async () => {
        const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "config-ref-")), "configuration.md");
        try {
            fs.writeFileSync(file, "old\n");
            const r = await docsConfig(["--check"], file);
            expect(r.exitCode).to.equal(1);
            expect(r.output).to.match(/configuration\.md differs from the config schema: run npm run docs:config$/);
            expect(fs.readFileSync(file, "utf8")).to.equal("old\n");
            expect((await docsConfig([], file)).exitCode).to.equal(0);
            expect((await docsConfig(["--check"], file)).exitCode).to.equal(0);
        } finally {
            fs.rmSync(path.dirname(file), { recursive: true, force: true });
        }
    });
});
