// The JSON reports' documented schema (docs/json-output.md): the tests hold each command's --json output to its table.
import * as fs from "fs";
import * as path from "path";
import { PROJECT_DIR } from "../stacks/stackNames.ts";

/** The fields of the first table under the heading that names `npm run <command>`, in the order the table lists them. */
export function documentedFields(command: string): string[] {
    const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs", "json-output.md"), "utf8");
    const section = doc.split(/^## /m).find((s) => s.startsWith(`\`npm run ${command} `));
    if (!section) throw new Error(`docs/json-output.md has no section for npm run ${command}`);
    const table = section.split("\n\n").find((block) => block.startsWith("| field |"));
    if (!table) throw new Error(`docs/json-output.md: the section for npm run ${command} has no field table`);
    return [...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
}
