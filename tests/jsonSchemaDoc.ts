// The JSON reports' documented schema (docs/json-output.md): the tests hold each command's --json output to its table.
import * as fs from "fs";
import * as path from "path";
import { PROJECT_DIR } from "../stacks/stackNames.ts";

/**
 * The fields of `npm run <command> --json`, in order: the three every object starts with (the first table of "JSON
 * output"), then the first table under the heading that names `npm run <command>`.
 */
export function documentedFields(command: string): string[] {
    const sections = fs.readFileSync(path.join(PROJECT_DIR, "docs", "json-output.md"), "utf8").split(/^## /m);
    const fields = (start: string, what: string) => {
        const section = sections.find((s) => s.startsWith(start));
        if (!section) throw new Error(`docs/json-output.md has no section for ${what}`);
        const table = section.split("\n\n").find((block) => block.startsWith("| field |"));
        if (!table) throw new Error(`docs/json-output.md: the section for ${what} has no field table`);
        return [...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
    };
    return [...fields("JSON output", "the fields every report starts with"), ...fields(`\`npm run ${command} `, `npm run ${command}`)];
}
