// Every pulumi command in README.md and docs/ names its stack in full, <org>/notify-karpenter/<stack> (MW2-F1).
// A short name (`--stack staging`) resolves in the operator's default organization: the CLI offers to create the
// stack there, or fails with "no stack named 'staging' found" (pulumi/pulumi pkg/cmd/pulumi/stack/io.go,
// RequireStack with OfferNew), and CI, which reads <PULUMI_ORG>/notify-karpenter/<stack>, never sees it.
import { expect } from "chai";
import fs from "node:fs";
import path from "node:path";

const ROOT = path.join(import.meta.dirname, "..");
const DOCS = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** A full stack name: <org>/notify-karpenter/<stack>, the org as a placeholder or a shell variable. */
const FULL = /^"?(<org>|\$\{?[A-Z_]+\}?|[A-Za-z0-9_.-]+)\/notify-karpenter\/[^\s/"]+"?$/;
/** The commands that act on one stack: in a code block each must name it. */
const STACK_COMMANDS = /^(up|preview|destroy|refresh|import|cancel|watch|state|config|stack (init|rm|select|output|export|import|history|tag|change-secrets-provider))\b/;

interface Command {
    file: string;
    line: number;
    text: string;
    /** In a fenced code block (a command to run), not an inline mention in prose. */
    block: boolean;
}

/** The pulumi commands of a Markdown text: each fenced block's lines (joined at a trailing backslash) and inline code. */
export function pulumiCommands(file: string, text: string): Command[] {
    const commands: Command[] = [];
    const lines = text.split("\n");
    let fenced = false;
    for (let i = 0; i < lines.length; i++) {
        if (/^\s*```/.test(lines[i])) {
            fenced = !fenced;
            continue;
        }
        if (fenced) {
            let cmd = lines[i];
            const start = i;
            while (/\\\s*$/.test(cmd) && i + 1 < lines.length) cmd = cmd.replace(/\\\s*$/, " ") + lines[++i];
            // A command where one starts (a line, or after ; && || | $( ), not "pulumi up" in a block's sample output.
            for (const m of cmd.replace(/\s#.*$/, "").matchAll(/(?:^\s*|[;&|(]\s*)pulumi\s+([^;&|)]*)/g)) commands.push({ file, line: start + 1, text: `pulumi ${m[1].trim().replace(/\s+/g, " ")}`, block: true });
        } else {
            for (const m of lines[i].matchAll(/`(pulumi\s+[^`]+)`/g)) commands.push({ file, line: i + 1, text: m[1], block: false });
        }
    }
    return commands;
}

/** Why a command's stack is not named in full, or undefined when it is (or the command names none and need not). */
export function shortStack(c: Command, variables: Map<string, string>): string | undefined {
    const words = c.text.split(/\s+/).slice(1);
    const sub = words.join(" ");
    const named: string[] = [];
    for (let i = 0; i < words.length; i++) {
        const flag = /^(--stack|-s)(=(.*))?$/.exec(words[i]);
        if (flag) named.push(flag[3] ?? words[i + 1] ?? "");
    }
    const positional = /^stack (init|rm|select)\s+([^-\s]\S*)/.exec(sub);
    if (positional) named.push(positional[2]);
    if (named.length === 0) return c.block && STACK_COMMANDS.test(sub) ? "names no stack (the CLI then uses the selected one, whichever that is)" : undefined;
    for (const name of named) {
        const variable = /^"?\$\{?([A-Za-z_]+)\}?"?$/.exec(name);
        const value = variable ? variables.get(variable[1]) : name;
        if (value === undefined) return `names the stack by $${variable![1]}, which the page never sets to a full name`;
        if (!FULL.test(value)) return `names the stack "${name}", not <org>/notify-karpenter/<stack>`;
    }
    return undefined;
}

/** The shell variables a page sets to a full stack name (`S=<org>/notify-karpenter/$STACK`), in code or prose. */
function fullNameVariables(text: string): Map<string, string> {
    return new Map([...text.matchAll(/\b([A-Z_]+)=("?[^\s`"]+\/notify-karpenter\/[^\s`"]+"?)/g)].map((m) => [m[1], m[2]]));
}

describe("pulumi commands in README.md and docs/ name the stack in full (MW2-F1)", () => {
    it("every command that names a stack names <org>/notify-karpenter/<stack>, and every command in a code block that acts on a stack names one", () => {
        const found: string[] = [];
        let count = 0;
        for (const file of DOCS) {
            const text = fs.readFileSync(path.join(ROOT, file), "utf8");
            const variables = fullNameVariables(text);
            for (const c of pulumiCommands(file, text)) {
                count++;
                const why = shortStack(c, variables);
                if (why) found.push(`${c.file}:${c.line}: \`${c.text}\` ${why}`);
            }
        }
        expect(count, "pulumi commands found in the docs").to.be.above(20);
        expect(found).to.deep.equal([]);
    });

    it("catches a short name, with --stack, -s, --stack=, stack init and a variable, and a block command with none", () => {
        const page = [
            "Run `pulumi up --stack staging --refresh` or `pulumi preview -s production`.",
            "```sh",
            "pulumi destroy --stack=staging",
            "pulumi stack init staging",
            "pulumi up --stack \"$T\"",
            "pulumi preview \\",
            "  --stack <org>/notify-karpenter/staging   # full: fine",
            "pulumi up --refresh",
            "```",
            "The first `pulumi up` (prose: no stack needed).",
        ].join("\n");
        const variables = fullNameVariables(page);
        const why = pulumiCommands("page.md", page).map((c) => [c.line, c.text, shortStack(c, variables)]);
        expect(why).to.deep.equal([
            [1, "pulumi up --stack staging --refresh", 'names the stack "staging", not <org>/notify-karpenter/<stack>'],
            [1, "pulumi preview -s production", 'names the stack "production", not <org>/notify-karpenter/<stack>'],
            [3, "pulumi destroy --stack=staging", 'names the stack "staging", not <org>/notify-karpenter/<stack>'],
            [4, "pulumi stack init staging", 'names the stack "staging", not <org>/notify-karpenter/<stack>'],
            [5, 'pulumi up --stack "$T"', "names the stack by $T, which the page never sets to a full name"],
            [6, "pulumi preview --stack <org>/notify-karpenter/staging", undefined],
            [8, "pulumi up --refresh", "names no stack (the CLI then uses the selected one, whichever that is)"],
            [10, "pulumi up", undefined],
        ]);
        const set = "S=<org>/notify-karpenter/$STACK\n```sh\npulumi up --stack \"$S\"\n```";
        expect(pulumiCommands("p.md", set).map((c) => shortStack(c, fullNameVariables(set)))).to.deep.equal([undefined]);
    });
});
