// Every command reads its flags with the one parser in cli/args.ts: --help everywhere, and the same usage errors.
import { expect } from "chai";
import { spawnSync } from "child_process";
import * as fs from "fs";
import { getCompileCacheDir } from "module";
import * as path from "path";
import { CACHE_DIR, type Command, type CommandResult, OUTPUT_FLAGS, didYouMean, helpText, parseCommandLine } from "../cli/args.ts";
import { SCHEMA_VERSION } from "../cli/output.ts";
import { CACHED_NODE_ENV, tempDir } from "./opsHelpers.ts";
import { CAPACITY, capacity } from "../ops/capacityCli.ts";
import { PREFLIGHT, preflight } from "../ops/preflight.ts";
import { DRILL, drill } from "../ops/drill.ts";
import { SCALE_TEST, scaleTest } from "../ops/scaleTest.ts";
import { VERIFY_PLACEMENT, verifyPlacement } from "../ops/verifyPlacement.ts";
import { PLAN, plan } from "../plan/cli.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { LINT_WORKFLOWS, lintWorkflowsCommand } from "../scripts/lint-workflows.ts";
import { DOCS_CONFIG, docsConfig } from "../scripts/config-reference.ts";
import { GENERATE_KARPENTER, generateKarpenter } from "../scripts/generate-karpenter-schema.ts";
import { BENCHMARK, benchmark, childrenCpuSeconds, figures, commands as npmCommands, ratioText } from "../scripts/benchmark.ts";

const commands: [string, Command, (argv: string[]) => Promise<CommandResult>][] = [
    ["plan", PLAN, (argv) => plan(argv)],
    ["capacity", CAPACITY, (argv) => capacity(argv)],
    ["verify-placement", VERIFY_PLACEMENT, (argv) => verifyPlacement(argv)],
    ["scale-test", SCALE_TEST, (argv) => scaleTest(argv)],
    ["preflight", PREFLIGHT, (argv) => preflight(argv)],
    ["drill", DRILL, (argv) => drill(argv)],
    ["lint:workflows", LINT_WORKFLOWS, (argv) => lintWorkflowsCommand(argv)],
    ["docs:config", DOCS_CONFIG, (argv) => docsConfig(argv)],
    ["generate:karpenter", GENERATE_KARPENTER, (argv) => generateKarpenter(argv)],
    ["benchmark", BENCHMARK, (argv) => benchmark(argv)],
];

describe("every command's flags (util.parseArgs)", () => {
    for (const [name, command, run] of commands) {
        describe(`npm run ${name}`, () => {
            it("--help and -h print usage, every flag with its meaning and default, the exit codes and an example, and exit 0", async () => {
                for (const flag of ["--help", "-h"]) {
                    const r = await run(["--stack", "staging", flag]);
                    expect(r).to.deep.equal({ exitCode: 0, output: helpText(command) });
                }
                const help = helpText(command);
                expect(help).to.match(new RegExp(`^usage: npm run ${name}`));
                for (const [flag, f] of Object.entries(command.flags)) {
                    expect(help).to.include(`--${flag}${f.value ? ` ${f.value}` : ""}`);
                    expect(help).to.include(f.meaning);
                    if (f.default && f.default !== "required") expect(help).to.include(`default: ${f.default}`);
                }
                expect(help).to.match(/\nExit codes:\n  0  .+\n(  1  .+\n)?  2  usage: .+\n/);
                expect(help).to.match(/\nExamples?:\n  npm run /);
            });

            it("an unknown flag is a usage error naming it (exit 2)", async () => {
                const r = await run(["--bogus", "x"]);
                expect(r.exitCode).to.equal(2);
                expect(r.output.split("\n")[0]).to.match(/^unknown flag --bogus: the (flags are --|only flag is --help)/);
                expect(r.output).to.match(/\n\(--help lists every flag\)$/);
            });

            const valued = Object.entries(command.flags).find(([, f]) => f.value);
            if (valued) {
                const [flag, f] = valued;
                it(`a missing value (--${flag} without one) and a repeated flag are usage errors naming the flag (exit 2)`, async () => {
                    for (const argv of [[`--${flag}`], [`--${flag}`, "--help-me"]]) {
                        const r = await run(argv);
                        expect(r.exitCode).to.equal(2);
                        expect(r.output.split("\n")[0]).to.equal(`--${flag} needs a value: ${f.value}`);
                    }
                    const twice = await run([`--${flag}`, "a", `--${flag}=b`]);
                    expect(twice.exitCode).to.equal(2);
                    expect(twice.output.split("\n")[0]).to.equal(`--${flag} is given twice`);
                });
            }
        });
    }

    it("a bare argument is a usage error, and a switch that takes no value refuses one", async () => {
        expect((await capacity(["staging"])).output.split("\n")[0]).to.equal('unexpected argument "staging": the flags are --stack, --out, --json, --findings');
        expect((await lintWorkflowsCommand(["--help=yes"])).exitCode).to.equal(0);
        const withSwitch: Command = { usage: ["x"], summary: "x", flags: { verbose: { meaning: "more" } }, exits: { 0: "ok" }, examples: ["npm run x"] };
        expect(parseCommandLine(["--verbose=yes"], withSwitch)).to.deep.include({ exitCode: 2, output: "--verbose takes no value\nusage: x\n(--help lists every flag)" });
        expect(parseCommandLine(["--verbose"], withSwitch)).to.deep.equal({ flags: { verbose: true }, positionals: [] });
        // A name that every object has is no flag either.
        expect(parseCommandLine(["--constructor"], withSwitch)).to.deep.include({ exitCode: 2 });
    });

    it("--json and --findings: every command with a report takes both, --json with the one meaning, and prints JSON with the schema version", async () => {
        for (const command of [PLAN, CAPACITY, VERIFY_PLACEMENT, SCALE_TEST, PREFLIGHT]) {
            expect(command.flags.json, command.usage[0]).to.deep.equal(OUTPUT_FLAGS.json);
            expect(command.flags.findings?.meaning, command.usage[0]).to.match(/^print only /);
            expect(command.usage.join(" "), command.usage[0]).to.include("--json").and.to.include("--findings");
        }
        const r = await capacity(["--stack", "staging", "--out", tempDir(), "--json"]);
        expect(JSON.parse(r.output)).to.deep.include({ schemaVersion: SCHEMA_VERSION, command: "capacity" });
    });

    it("a repeatable flag takes each value, comma-joined; a name off by a letter or two gets a did-you-mean", () => {
        const listed: Command = { usage: ["x"], summary: "x", flags: { only: { value: "<a,...>", meaning: "some", repeatable: true } }, exits: { 0: "ok" }, examples: ["npm run x"] };
        expect(parseCommandLine(["--only", "a,b", "--only=c"], listed)).to.deep.equal({ flags: { only: "a,b,c" }, positionals: [] });
        expect(didYouMean("subnet", ["ami", "subnets"])).to.equal(" (did you mean subnets?)");
        expect(didYouMean("amis-and-more", ["ami", "subnets"])).to.equal("");
    });

    it("as a process, colours OK, WARN and FAIL when FORCE_COLOR asks even into a pipe, and never JSON", function () {
        this.timeout(30000);
        const out = tempDir();
        const run = (env: Record<string, string>, ...argv: string[]) =>
            spawnSync(process.execPath, [path.join(PROJECT_DIR, "ops", "capacityCli.ts"), "--out", out, ...argv], { cwd: PROJECT_DIR, encoding: "utf8", env: { ...CACHED_NODE_ENV, ...env } });
        const coloured = run({ FORCE_COLOR: "1" }, "--stack", "production", "--findings");
        expect([coloured.status, coloured.stdout]).to.deep.equal([0, "Capacity of stack production: findings only\n\u001b[32mOK\u001b[39m: the limits allow the peak\n"]);
        // JSON goes to standard output, uncoloured, whatever the exit code: a usage error shows it without a model run.
        const json = run({ FORCE_COLOR: "1" }, "--stack", "production", "--stack", "staging", "--json");
        expect([json.status, json.stderr, json.stdout.includes("\u001b[")]).to.deep.equal([2, "", false]);
        expect(JSON.parse(json.stdout)).to.deep.include({ schemaVersion: SCHEMA_VERSION, command: "capacity", exitCode: 2 });
    });

    it("as a process: --help goes to standard output with exit 0, a usage error to standard error with exit 2, on Node 22 or later", function () {
        this.timeout(30000);
        const run = (...argv: string[]) => spawnSync(process.execPath, [path.join(PROJECT_DIR, "ops", "capacityCli.ts"), ...argv], { cwd: PROJECT_DIR, encoding: "utf8", env: CACHED_NODE_ENV });
        const help = run("--help");
        expect([help.status, help.stdout.trim(), help.stderr]).to.deep.equal([0, helpText(CAPACITY), ""]);
        const bad = run("--stack", "staging", "--stack", "production");
        expect([bad.status, bad.stdout, bad.stderr.split("\n")[0]]).to.deep.equal([2, "", "--stack is given twice"]);
        expect(Number(process.versions.node.split(".")[0])).to.be.at.least(22);
    });

    it("as a process: a command run as `node <entry>.ts` compiles into the project's cache (runMain), the directory the npm scripts' preload uses", function () {
        this.timeout(30000);
        const entry = path.join(tempDir("cache-"), "cacheDir.ts");
        fs.writeFileSync(entry, `import { getCompileCacheDir } from "module";\nimport { runMain } from ${JSON.stringify(path.join(PROJECT_DIR, "cli", "args.ts"))};\nrunMain(async () => ({ exitCode: 0, output: getCompileCacheDir() ?? "none" }));\n`);
        const { NODE_COMPILE_CACHE: _, ...env } = process.env;
        const r = spawnSync(process.execPath, [entry], { cwd: PROJECT_DIR, encoding: "utf8", env });
        expect(r.stdout.startsWith(`${CACHE_DIR}${path.sep}`), `${r.stdout}${r.stderr}`).to.equal(true);
        // This process: mocha preloads cli/compileCache.mjs (.mocharc.json), as every npm script does.
        expect(getCompileCacheDir()?.startsWith(`${CACHE_DIR}${path.sep}`), getCompileCacheDir()).to.equal(true);
    });

    it("as a process: a fault of the command itself is one line on standard error and exit 3, never a stack trace", function () {
        this.timeout(30000);
        const entry = path.join(tempDir("fault-"), "faulty.ts");
        fs.writeFileSync(entry, `import { runMain } from ${JSON.stringify(path.join(PROJECT_DIR, "cli", "args.ts"))};\nrunMain(async () => { throw new TypeError("x.y is undefined\\n    at somewhere (file.ts:1:1)"); });\n`);
        const r = spawnSync(process.execPath, [entry], { cwd: PROJECT_DIR, encoding: "utf8" });
        expect([r.status, r.stdout, r.stderr]).to.deep.equal([3, "", "faulty.ts: an error in the command itself, please report it: x.y is undefined\n"]);
    });
});

describe("npm run benchmark (docs/development.md's figures)", () => {
    it("times every npm script that runs a command, each preloading the compile cache, and reads bash's times for the children's CPU", () => {
        const listed = npmCommands();
        expect(listed.map((c) => c.name)).to.include.members(commands.filter(([name]) => name !== "benchmark").map(([name]) => name));
        for (const { name, entry } of listed) expect(fs.existsSync(path.join(PROJECT_DIR, entry)), `${name}: ${entry}`).to.equal(true);
        const scripts: Record<string, string> = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8")).scripts;
        for (const { name, entry, nodeFlags } of [...listed, { name: "benchmark", entry: "scripts/benchmark.ts", nodeFlags: "" }]) expect(scripts[name]).to.equal(`node ${nodeFlags}--import ./cli/compileCache.mjs ${entry}`);
        // Only the plan tunes V8 (docs/development.md, "How a command starts").
        expect(listed.filter((c) => c.nodeFlags).map((c) => [c.name, c.nodeFlags])).to.deep.equal([["plan", "--single-threaded --max-opt=1 --max-semi-space-size=4 "]]);
        // Each figure runs its command as its npm script does, and the plan's floor with the plan's own flags.
        const timed = Object.fromEntries(figures(false, "/tmp/plans").map((f) => [f.what, f.command]));
        const plan = "node --single-threaded --max-opt=1 --max-semi-space-size=4 --import ./cli/compileCache.mjs";
        expect(timed["plan --help"]).to.equal(`${plan} plan/cli.ts --help`);
        expect(timed["plan --stack staging"]).to.match(new RegExp(`^${plan} plan/cli\\.ts --stack staging --out "\\$\\(mktemp -d -p "/tmp/plans"\\)"$`));
        expect(timed["Node loading the plan's packages"]).to.match(new RegExp(`^${plan} --input-type=module -e 'await import\\("@pulumi/pulumi"\\);`));
        expect(timed["capacity --help"]).to.equal("node --import ./cli/compileCache.mjs ops/capacityCli.ts --help");
        expect(figures(true, "/tmp/plans").at(-1)).to.deep.equal({ what: "npm test", command: "npm test" });
        expect(childrenCpuSeconds("0m0.004s 0m0.002s\n1m2.500s 0m0.250s\n")).to.equal(62.75);
        // A ratio just over a target shows as over it.
        expect(ratioText(1.76, 1.15)).to.equal("1.53x");
    });

    it("--rounds takes a whole number from 1 to 99", async () => {
        expect((await benchmark(["--rounds", "0"])).output.split("\n")[0]).to.equal('--rounds: must be a whole number from 1 to 99 (got "0")');
    });
});

describe("kubeconfig loading (preflight, verify-placement, scale-test)", () => {
    it("says there is no kubeconfig instead of falling back to client-node's made-up localhost context", async () => {
        const { loadKubeConfig } = await import("../ops/kube.ts");
        const missing = path.join(PROJECT_DIR, "no-such-dir", "config");
        expect(() => loadKubeConfig({ KUBECONFIG: missing }, "/nowhere")).to.throw(`no kubeconfig (${missing} not found): run aws eks update-kubeconfig --name <cluster> --alias <context>`);
        expect(() => loadKubeConfig({}, "/nowhere")).to.throw("no kubeconfig (/nowhere/.kube/config not found)");
    });
});
