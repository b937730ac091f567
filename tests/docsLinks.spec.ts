// The docs link to each other's sections rather than repeat them (docs/development.md, "Which page owns which fact"):
// a link to a page or heading that moved is a fact lost. Each page also says first which question it answers.
import { expect } from "chai";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { PROJECT_DIR } from "../stacks/stackNames.ts";

const PAGES = ["README.md", ...fs.readdirSync(path.join(PROJECT_DIR, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const read = (file: string) => fs.readFileSync(path.join(PROJECT_DIR, file), "utf8");
/** The text outside fenced code blocks. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, "");

/** GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces as hyphens; repeats get -1, -2. */
function anchorsOf(text: string): Set<string> {
    const seen = new Map<string, number>();
    const anchors = new Set<string>();
    for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
        const slug = heading
            .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
            .toLowerCase()
            .replace(/[^\p{L}\p{N}\s_-]/gu, "")
            .replace(/\s/g, "-");
        const n = seen.get(slug) ?? 0;
        seen.set(slug, n + 1);
        anchors.add(n ? `${slug}-${n}` : slug);
    }
    return anchors;
}

describe("the docs' links and questions", () => {
    it("every relative link in README.md and docs/ names a file that exists, and a heading that exists in it", () => {
        const broken: string[] = [];
        let checked = 0;
        for (const page of PAGES) {
            const text = read(page);
            for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
                if (/^[a-z]+:/.test(target)) continue;
                checked++;
                const [file, anchor] = target.split("#");
                const resolved = file ? path.normalize(path.join(path.dirname(page), file)) : page;
                if (!fs.existsSync(path.join(PROJECT_DIR, resolved))) broken.push(`${page}: ${target} (no file ${resolved})`);
                else if (anchor && resolved.endsWith(".md") && !anchorsOf(read(resolved)).has(anchor)) broken.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
            }
        }
        expect(checked).to.be.greaterThan(100);
        expect(broken).to.deep.equal([]);
    });

    it("every docs page the code, stack files and workflows name exists", () => {
        const tracked = execFileSync("git", ["ls-files", "*.ts", "*.mjs", "*.cjs", "*.js", "*.sh", "*.yaml", "*.yml", ".ci/run"], { cwd: PROJECT_DIR, encoding: "utf8" }).trim().split("\n");
        const missing = tracked.flatMap((f) => [...fs.readFileSync(path.join(PROJECT_DIR, f), "utf8").matchAll(/\bdocs\/([a-z0-9-]+\.md)/g)].filter(([, page]) => !fs.existsSync(path.join(PROJECT_DIR, "docs", page))).map(([m]) => `${f}: ${m}`));
        expect(tracked.length).to.be.greaterThan(50);
        expect([...new Set(missing)]).to.deep.equal([]);
    });

    it("each page says first which question it answers: its title, then a paragraph **This page answers:** <question>?", () => {
        const without = PAGES.filter((page) => !/^# .+\n\n\*\*This page answers:\*\* [^\n]+(\n[^\n]+)*\?\n\n/.test(read(page)));
        expect(without).to.deep.equal([]);
    });

    // Issue 30 asked for well under the 320 KB docs/ had then; a later round left 300.1 KB, each page linking to the
    // facts another page owns. The bound leaves room for a new fact, not for a fact said twice.
    it("docs/ stays under 301 KB: each fact in the page that owns it, linked from the others", () => {
        const bytes = PAGES.filter((p) => p.startsWith("docs/")).reduce((sum, p) => sum + fs.statSync(path.join(PROJECT_DIR, p)).size, 0);
        expect(bytes).to.be.below(301_000);
    });
});
