// components/models/cron.ts against robfig/cron v3.0.1 itself (tests/cron-oracle/main.go, built offline from Debian's
// golang-github-robfig-cron-dev): a seeded corpus of schedules, each read as a NodePool budget and as the recycler's
// CronJob, must be refused by both or accepted by both with the same fire times over 2026 (UTC, to the minute). Then
// named cases for each rule where cron.ts once differed, with robfig's line (v3.0.1 parser.go, spec.go).
import { expect } from "chai";
import { ChildProcess, spawn, spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { forbiddenMinutes } from "../components/models/disruptionBudgets.ts";
import { CRON_DESCRIPTORS, type Cron, type CronReader, KARPENTER_SCHEDULE_PATTERN, cronFiresOnDay, parseCron } from "../components/models/cron.ts";
import { CRDS } from "../components/karpenter/generated/crds.ts";
import { CACHE_DIR } from "../cli/args.ts";

const INSTALL = "apt-get install -y golang-go golang-github-robfig-cron-dev";
const START = Date.UTC(2026, 0, 1);
const DAY_MS = 86_400_000;
const READERS: CronReader[] = ["budget", "cronjob"];

/** Where Debian puts robfig/cron v3's source (GOPATH layout), if it is there. */
function robfigSource(): string | undefined {
    for (const dir of ["/usr/share/gocode/src/github.com/robfig/cron/v3", "/usr/share/gocode/src/github.com/robfig/cron"]) {
        const mod = path.join(dir, "go.mod");
        if (fs.existsSync(path.join(dir, "parser.go")) && fs.existsSync(mod) && /^module github\.com\/robfig\/cron\/v3\b/m.test(fs.readFileSync(mod, "utf8"))) return dir;
    }
    return undefined;
}

/** A seeded PRNG (mulberry32): the corpus is the same on every run and every machine. */
function prng(seed: number): () => number {
    return () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const BOUNDS = [
    [0, 59],
    [0, 23],
    [1, 31],
    [1, 12],
    [0, 6],
];
const NAMES: (string[] | undefined)[] = [undefined, undefined, undefined, ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]];

/**
 * `n` schedules: five fields of lists, ranges, steps, names in mixed case, `*` and `?` in every field (the day fields
 * hardest), some out of range or malformed; descriptors in any case, with spaces around them, and `@every`; other
 * separators (tabs, line breaks, vertical tabs, no-break and em spaces); wrong field counts and time zone prefixes.
 * Minutes and hours are mostly sparse, so that a year of fire times stays cheap for the oracle.
 */
export function cronCorpus(n: number, seed = 29): string[] {
    const rnd = prng(seed);
    const chance = (p: number) => rnd() < p;
    const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const mixedCase = (s: string) => [...s].map((c) => (chance(0.3) ? c.toUpperCase() : c)).join("");
    /** `v` as written: a number, or for months and days often a name in mixed case. */
    const show = (i: number, v: number): string => {
        const names = NAMES[i];
        return names && chance(0.4) ? mixedCase(names[v - (i === 3 ? 1 : 0)]) : String(v);
    };
    const value = (i: number): string => {
        const [min, max] = BOUNDS[i];
        if (chance(0.03)) return pick([String(min - 1), String(max + 1), String(max + 7), "x", "", `+${int(min, max)}`, `0${int(min, max)}`, "99999999999999999999", "fr\u0130", "SuN", "1.5"]);
        return show(i, int(min, max));
    };
    /** A range, mostly the right way round. */
    const range = (i: number): string => {
        const [min, max] = BOUNDS[i];
        if (chance(0.15)) return `${value(i)}-${value(i)}`;
        const lo = int(min, max);
        return `${show(i, lo)}-${show(i, int(lo, max))}`;
    };
    const step = (): string => (chance(0.03) ? pick(["0", "-1", "x", "", "+2", "02", "9223372036854775807", "9223372036854775808"]) : String(pick([1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 45, 61])));
    const part = (i: number): string => {
        const r = rnd();
        if (r < 0.2) return pick(["*", "*", "?"]);
        if (r < 0.32) return `${pick(["*", "*", "?"])}/${step()}`;
        if (r < 0.55) return value(i);
        if (r < 0.75) return range(i);
        if (r < 0.86) return `${range(i)}/${step()}`;
        if (r < 0.94) return `${value(i)}/${step()}`;
        return pick([`*-${value(i)}`, `?-${value(i)}/${step()}`, `${value(i)}-${value(i)}-${value(i)}`, `*/${step()}/${step()}`, `/${step()}`, `${value(i)}-`, `-${value(i)}`, "*-", `${value(i)}/`]);
    };
    /** A field of any shape; for minutes and hours when `sparse`, mostly one value or a short list. */
    const field = (i: number, sparse: boolean): string => {
        if (sparse) {
            const [min, max] = BOUNDS[i];
            return chance(0.7) ? String(int(min, max)) : pick([`${int(min, max)},${int(min, max)}`, `*/${pick([15, 20, 30, 45])}`, `${int(min, max)}-${int(min, max)}`, `${int(min, max)}/${pick([10, 20, 30])}`]);
        }
        const count = chance(0.7) ? 1 : chance(0.7) ? 2 : int(3, 4);
        const parts = Array.from({ length: count }, () => part(i));
        if (chance(0.02)) return pick([",", ",,", `,${parts[0]}`, `${parts[0]},`, parts.join(",,")]);
        return parts.join(",");
    };
    const SEPARATORS = [" ", " ", " ", " ", " ", " ", "  ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u2003", "\u0085", "\ufeff", " \n"];
    const around = () => (chance(0.9) ? "" : pick([" ", "  ", "\t", "\n", "\v", "\u00a0", " ".repeat(9), "\ufeff"]));
    const descriptors = [...Object.keys(CRON_DESCRIPTORS), "@every 1h", "@every 90m", "@reboot", "@fortnightly", "@every", "@every 1h" + " ".repeat(9), "@every 2h30m" + "\t".repeat(8), "@daily * * * *", "@hourlyish"];
    const out: string[] = [];
    while (out.length < n) {
        const r = rnd();
        if (r < 0.04) {
            const d = pick(descriptors);
            out.push(`${around()}${chance(0.2) ? mixedCase(d) : d}${around()}`);
            continue;
        }
        // Dense minutes or hours (up to 60 x 24 a day) with fewer days, so that a year of fire times stays cheap for the oracle.
        const plan = rnd();
        let fields = [field(0, plan < 0.84), field(1, plan < 0.76 || (plan >= 0.84 && plan < 0.92)), field(2, false), field(3, false), field(4, false)];
        if (plan >= 0.92 && chance(0.8)) fields[3] = show(3, int(1, 12));
        if (chance(0.01)) fields = fields.slice(0, int(0, 4));
        if (chance(0.01)) fields.push(field(int(0, 4), false));
        if (chance(0.01)) fields.unshift(pick(["TZ=UTC", "CRON_TZ=UTC", "TZ=America/Toronto", "TZ=Nowhere/Atlantis"]));
        const joint = chance(0.9) ? () => " " : () => pick(SEPARATORS);
        out.push(around() + fields.map((f, i) => (i === 0 ? f : joint() + f)).join("") + around());
    }
    return out;
}

/** FNV-1a 32 over each minute as 4 little-endian bytes: the oracle's hash (Go hash/fnv New32a). */
function fnv(h: number, m: number): number {
    for (let k = 0; k < 4; k++) h = Math.imul(h ^ ((m >>> (8 * k)) & 0xff), 0x01000193);
    return h;
}

/**
 * cron.ts's fire times over 2026 in the oracle's encoding: whole days by cronFiresOnDay, then hours and minutes. Once
 * per schedule as parsed (both readers, and many spellings, come to the same fields), as the oracle walks each once.
 */
const firesByFields = new Map<string, string>();
function firesOf(c: Cron): string {
    const key = `${c.fields.map((f) => [...f].join(",")).join(" ")} ${c.domStar} ${c.dowStar}`;
    let fires = firesByFields.get(key);
    if (fires === undefined) firesByFields.set(key, (fires = walkFires(c)));
    return fires;
}

function walkFires(c: Cron): string {
    const minutes = [...c.fields[0]].sort((a, b) => a - b);
    const hours = [...c.fields[1]].sort((a, b) => a - b);
    let h = 0x811c9dc5;
    let count = 0;
    let first = -1;
    let last = -1;
    for (let day = 0; day < 365; day++) {
        if (!cronFiresOnDay(c, new Date(START + day * DAY_MS))) continue;
        for (const hour of hours) {
            for (const minute of minutes) {
                const m = day * 1440 + hour * 60 + minute;
                h = fnv(h, m);
                if (first < 0) first = m;
                last = m;
                count++;
            }
        }
    }
    return `fires ${count} ${first} ${last} ${(h >>> 0).toString(16).padStart(8, "0")}`;
}

/** The same encoding from the budget model itself: the minutes a one-minute budget on the schedule is active. */
function firesOfModel(schedule: string, reader: CronReader): string {
    const active = forbiddenMinutes([{ nodes: "0", schedule, duration: "1m" }], "Drifted", new Date(START), 365, reader);
    let h = 0x811c9dc5;
    let count = 0;
    let first = -1;
    let last = -1;
    for (let m = active.indexOf(1); m >= 0; m = active.indexOf(1, m + 1)) {
        h = fnv(h, m);
        if (first < 0) first = m;
        last = m;
        count++;
    }
    return `fires ${count} ${first} ${last} ${(h >>> 0).toString(16).padStart(8, "0")}`;
}

/**
 * Go's build cache, kept between runs beside Node's (cli/compileCache.mjs): built with a fresh one, the oracle compiles
 * Go's standard library again, about 1.1 CPU s against 0.25. Content-addressed: a changed source or Go builds afresh.
 * The GOPATH stays in one place too: Go keys a package's build by its directory, so a new one each run compiled
 * robfig/cron and the oracle again (1.0 CPU s a build against 0.55).
 */
const GO_BUILD_CACHE = path.join(CACHE_DIR, "go-build");
const GOPATH = path.join(CACHE_DIR, "cron-oracle-gopath");
/**
 * robfig's answers for a corpus, kept by the sha256 of all they depend on: the oracle's source, robfig/cron's, Go's
 * version and the environment Go builds and runs it in, the pattern and the corpus. The oracle is a pure function of
 * these, so a rerun with nothing changed reads its answers (about 3 CPU s less, the build included); any change runs
 * it again. cron.ts's side is computed on every run.
 */
const ORACLE_ANSWERS = path.join(CACHE_DIR, "cron-oracle-answers");
const ORACLE_SOURCE = path.join(import.meta.dirname, "cron-oracle", "main.go");

function answersFile(robfig: string, goVersion: string, input: string): string {
    const hash = createHash("sha256");
    const goFiles = fs.readdirSync(robfig).filter((f) => f.endsWith(".go")).sort();
    for (const [name, file] of [["main.go", ORACLE_SOURCE], ...goFiles.map((f) => [f, path.join(robfig, f)])]) hash.update(`${name}\0`).update(fs.readFileSync(file)).update("\0");
    const goEnv = ["GOOS", "GOARCH", "GODEBUG", "ZONEINFO"].map((k) => `${k}=${process.env[k] ?? ""}`).join("\0");
    hash.update(`${goVersion}\0${goEnv}\0${KARPENTER_SCHEDULE_PATTERN}\0${input}`);
    return path.join(ORACLE_ANSWERS, `${hash.digest("hex")}.jsonl`);
}

describe("cron.ts against robfig/cron v3.0.1 (tests/cron-oracle, Go)", function () {
    let dir: string | undefined;
    let oracle: string | undefined;
    let answers: string;
    /** The kept answers, read once they are found (so that the cache may be cleared while the spec runs). */
    let kept: string | undefined;
    const corpus = cronCorpus(12_000);
    const input = corpus.map((s) => JSON.stringify(s)).join("\n") + "\n";

    before(function () {
        this.timeout(120_000);
        const go = spawnSync("go", ["version"], { encoding: "utf8", env: { ...process.env, GOTOOLCHAIN: "local" } });
        const source = robfigSource();
        if (go.status !== 0 || !source) {
            console.log(`      skipped: ${go.status !== 0 ? "no go" : "no robfig/cron v3 source"} on this machine; for the differential test: ${INSTALL}`);
            this.skip();
        }
        // Debian's package is upstream v3.0.1 (parser.go and spec.go are byte for byte the tag's); another version is not Karpenter's.
        const version = spawnSync("dpkg-query", ["-W", "-f", "${Version}", "golang-github-robfig-cron-dev"], { encoding: "utf8" });
        if (version.status === 0 && !/^3\.0\.1(-|$)/.test(version.stdout)) throw new Error(`golang-github-robfig-cron-dev is ${version.stdout}, not 3.0.1 (the robfig/cron Karpenter v1.14.1 vendors)`);
        answers = answersFile(source!, go.stdout, input);
        if (fs.existsSync(answers)) {
            kept = fs.readFileSync(answers, "utf8");
            // Cut short (a crash before the rename reached the disk): run the oracle again.
            if (kept.split("\n").length === corpus.length + 1) return;
            kept = undefined;
        }
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "cron-oracle-"));
        // GOPATH mode, offline: a GOPATH whose github.com/robfig/cron/v3 is Debian's source.
        const robfig = path.join(GOPATH, "src/github.com/robfig/cron/v3");
        fs.mkdirSync(path.dirname(robfig), { recursive: true });
        // Replaced in one step (a rename over the old link), so that another run's build never finds it missing.
        const link = `${robfig}.${process.pid}`;
        fs.symlinkSync(source!, link);
        fs.renameSync(link, robfig);
        oracle = path.join(dir, "oracle");
        const env = { ...process.env, GO111MODULE: "off", GOPATH, GOCACHE: GO_BUILD_CACHE, GOPROXY: "off", GOFLAGS: "", GOTOOLCHAIN: "local", CGO_ENABLED: "0" };
        const build = spawnSync("go", ["build", "-o", oracle, ORACLE_SOURCE], { env, encoding: "utf8" });
        if (build.status !== 0) throw new Error(`building tests/cron-oracle failed:\n${build.stderr}`);
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** robfig's answer to each schedule of the corpus: the oracle's output, run now or kept from a run on the same inputs. */
    async function robfigAnswers(): Promise<string> {
        if (kept !== undefined) return kept;
        const child: ChildProcess = spawn(oracle!, [KARPENTER_SCHEDULE_PATTERN], { stdio: ["pipe", "pipe", "pipe"] });
        const stdout: Buffer[] = [];
        const stderr: Buffer[] = [];
        child.stdout!.on("data", (b: Buffer) => stdout.push(b));
        child.stderr!.on("data", (b: Buffer) => stderr.push(b));
        const done = new Promise<number | null>((resolve, reject) => {
            child.on("error", reject);
            child.on("close", resolve);
        });
        child.stdin!.end(input);
        const code = await done;
        expect(code, Buffer.concat(stderr).toString()).to.equal(0);
        const out = Buffer.concat(stdout).toString();
        // Written whole, then renamed: a concurrent run reads all of it or none.
        fs.mkdirSync(ORACLE_ANSWERS, { recursive: true });
        fs.writeFileSync(`${answers}.${process.pid}`, out);
        fs.renameSync(`${answers}.${process.pid}`, answers);
        return out;
    }

    it("agrees on 12,000 seeded schedules, as a budget and as a CronJob: both refuse, or both fire at the same minutes through 2026", async function () {
        this.timeout(120_000);
        expect(new Set(corpus).size).to.be.greaterThan(10_000);
        // When it runs, the oracle runs on the other core while cron.ts reads the corpus.
        const robfig = robfigAnswers();
        const ours = corpus.map((s) =>
            READERS.map((reader) => {
                const c = parseCron(s, reader);
                return typeof c === "string" ? { result: "refused", why: c } : { result: firesOf(c), why: "" };
            }),
        );
        const theirs = (await robfig).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<CronReader, string>);
        expect(theirs).to.have.length(corpus.length);

        const differences: string[] = [];
        const tally: Record<string, number> = {};
        const count = (k: string) => (tally[k] = (tally[k] ?? 0) + 1);
        corpus.forEach((s, i) =>
            READERS.forEach((reader, r) => {
                const robfig = theirs[i][reader];
                const mine = ours[i][r];
                if (robfig.startsWith("every ")) {
                    // On purpose: cron.ts refuses "@every" (components/models/cron.ts parseCron), which robfig reads as a fixed delay.
                    count(`${reader}: robfig's @every, refused on purpose`);
                    if (mine.result !== "refused" || !mine.why.includes('"@every"')) differences.push(`${JSON.stringify(s)} as ${reader}: robfig ${robfig}, cron.ts ${mine.result}`);
                    return;
                }
                const want = robfig.startsWith("refused") ? "refused" : robfig;
                count(`${reader}: ${want === "refused" ? "both refuse" : "both fire"}`);
                if (mine.result !== want) differences.push(`${JSON.stringify(s)} as ${reader}: robfig ${robfig}; cron.ts ${mine.result}${mine.why ? ` (${mine.why})` : ""}`);
            }),
        );
        console.log(`      ${corpus.length} schedules: ${Object.entries(tally).sort().map(([k, v]) => `${k} ${v}`).join(", ")}`);
        expect(differences.slice(0, 20), `${differences.length} differences`).to.deep.equal([]);
        // The corpus is not lopsided: plenty of each outcome, for each reader.
        for (const reader of READERS) {
            expect(tally[`${reader}: both fire`], reader).to.be.greaterThan(5000);
            expect(tally[`${reader}: both refuse`], reader).to.be.greaterThan(1000);
        }
        expect(tally["budget: robfig's @every, refused on purpose"]).to.be.greaterThan(0);

        // The budget model (forbiddenMinutes, which config validation and the recycler's window use) marks the same minutes.
        let modelled = 0;
        for (let i = 0; i < corpus.length && modelled < 150; i += 7) {
            for (const [r, reader] of READERS.entries()) {
                if (!theirs[i][reader].startsWith("fires")) continue;
                expect(firesOfModel(corpus[i], reader), `${JSON.stringify(corpus[i])} as ${reader}`).to.equal(theirs[i][reader]);
                if (r === 0) modelled++;
            }
        }
        expect(modelled).to.equal(150);
    });
});

describe("cron.ts: the rules where it differed from robfig/cron v3.0.1", () => {
    const on = (schedule: string, day: string, reader: CronReader = "budget") => {
        const c = parseCron(schedule, reader);
        if (typeof c === "string") throw new Error(`${schedule}: ${c}`);
        return cronFiresOnDay(c, new Date(`${day}T00:00:00Z`));
    };
    const refused = (schedule: string, reader: CronReader = "budget") => typeof parseCron(schedule, reader) === "string";

    it("a step above 1 clears the star bit (parser.go:297-299), so `0 13 */2 * mon` fires on odd days OR Mondays (spec.go:184-187)", () => {
        expect(parseCron("0 13 */2 * mon")).to.include({ domStar: false, dowStar: false });
        expect(on("0 13 */2 * mon", "2026-01-12")).to.equal(true); // a Monday, an even day
        expect(on("0 13 */2 * mon", "2026-01-03")).to.equal(true); // a Saturday, an odd day
        expect(on("0 13 */2 * mon", "2026-01-06")).to.equal(false); // a Tuesday, an even day
        // A step of 1 keeps it (only `step > 1` clears it): `*/1` is `*`, and the day fields AND.
        expect(on("0 13 */1 * mon", "2026-01-03")).to.equal(false);
        expect(on("0 13 ?/1 * mon", "2026-01-03")).to.equal(false);
    });

    it("the star bit of one list part holds for the field (bits |= bit, parser.go:244), so `0 13 *,15 * mon` fires on Mondays only", () => {
        expect(parseCron("0 13 *,15 * mon")).to.include({ domStar: true, dowStar: false });
        expect(on("0 13 *,15 * mon", "2026-01-15")).to.equal(false); // a Thursday
        expect(on("0 13 *,15 * mon", "2026-01-12")).to.equal(true);
        // The star may be in the day-of-week field: `1,*` ANDs with the day of month.
        expect(on("0 13 15 * 1,*", "2026-01-12")).to.equal(false);
        expect(on("0 13 15 * 1,*", "2026-01-15")).to.equal(true);
    });

    it("`*` or `?` ignores what follows a hyphen (parser.go:262-266): `*-5` is `*`", () => {
        expect(on("0 13 *-5 * mon", "2026-01-15")).to.equal(false);
        expect((parseCron("*-5 * * * *") as Cron).fields[0].size).to.equal(60);
        expect((parseCron("? ? ? ? ?") as Cron).fields[4].size).to.equal(7);
    });

    it("empty list parts are dropped (strings.FieldsFunc, parser.go:238): `1,,2` is 1,2 and `,` matches nothing", () => {
        expect([...(parseCron("1,,2 * * * *") as Cron).fields[0]]).to.deep.equal([1, 2]);
        // A day of month matching nothing, without a star, ORs with the day of week: Mondays.
        expect(on("0 13 , * mon", "2026-01-12")).to.equal(true);
        expect(on("0 13 , * mon", "2026-01-13")).to.equal(false);
    });

    it("numbers are strconv.Atoi's, negatives refused (parser.go:331-341): `+5` and `05` are 5, a step past int64 is refused", () => {
        expect([...(parseCron("+5 05 * * *") as Cron).fields[0]]).to.deep.equal([5]);
        expect([...(parseCron("*/+30 * * * *") as Cron).fields[0]]).to.deep.equal([0, 30]);
        expect([...(parseCron("*/9223372036854775807 * * * *") as Cron).fields[0]]).to.deep.equal([0]);
        expect(parseCron("*/9223372036854775808 * * * *")).to.match(/the minute field .* a step must be a whole number above 0/);
        expect(parseCron("*/-1 * * * *")).to.match(/a step must be a whole number above 0/);
    });

    it("a single value with a step runs to the end (parser.go:293-296), and one past the end is refused (:310-311)", () => {
        expect([...(parseCron("0 0 * * 5/2") as Cron).fields[4]]).to.deep.equal([5]);
        expect(parseCron("60/5 * * * *")).to.equal('the minute field "60/5" has 60: it must be 0-59');
        expect(parseCron("0 13 * * fri-mon")).to.equal('the day of week field "fri-mon" runs backwards: fri is after mon');
        expect(parseCron("0 13 * * 7")).to.equal('the day of week field "7" has 7: it must be 0-6 or sun-sat');
    });

    it("names are lowered with Go's strings.ToLower (parser.go:323): `FRİ` (dotted capital I) is fri", () => {
        expect([...(parseCron("0 13 * * FRİ") as Cron).fields[4]]).to.deep.equal([5]);
        expect([...(parseCron("0 13 * JaN-mAr *") as Cron).fields[3]]).to.deep.equal([1, 2, 3]);
    });

    it("descriptors: exact and case-sensitive (parser.go:366); Karpenter's TZ=UTC prefix trims the schedule (:102), the CronJob's validation does not", () => {
        expect(refused("@daily ")).to.equal(false);
        expect(refused("@daily ", "cronjob")).to.equal(true);
        expect(refused("@Daily")).to.equal(true);
        // " @daily" parses after the trim, but the CRD's pattern wants the @ at the start.
        expect(parseCron(" @daily")).to.match(/Karpenter's NodePool CRD refuses it/);
        expect(parseCron("@fortnightly")).to.match(/not a descriptor/);
        expect(parseCron("@weekly")).to.deep.equal(parseCron("0 0 * * 0"));
    });

    it('"@every" is refused on purpose, though ParseStandard reads it (parser.go:424-431) and trailing spaces get it past the CRD', () => {
        expect(parseCron("@every 1h" + " ".repeat(9))).to.match(/"@every", a delay/);
        expect(parseCron("@every 1h", "cronjob")).to.match(/"@every", a delay/);
    });

    it("fields split on Go's spaces (strings.Fields, parser.go:114); a budget's must also be the CRD pattern's \\s", () => {
        expect(refused("0\v13 * * *", "cronjob")).to.equal(false);
        expect(refused("0\u00a013 * * *", "cronjob")).to.equal(false);
        expect(parseCron("0\v13 * * *")).to.match(/Karpenter's NodePool CRD refuses it/);
        expect(refused("0\t13\n*\r*\f*")).to.equal(false);
        // U+FEFF is JavaScript whitespace, not Go's; U+0085 is Go's, not JavaScript's.
        expect(parseCron("0\ufeff13 * * *", "cronjob")).to.equal("it has 4 fields");
        expect(refused("0\u008513 * * *", "cronjob")).to.equal(false);
        expect(parseCron("TZ=America/Toronto 0 13 * * *")).to.equal("it has 6 fields");
        expect(parseCron("TZ=America/Toronto 0 13 * * *", "cronjob")).to.match(/Kubernetes refuses TZ/);
    });

    it("holds the NodePool CRD's schedule pattern, which the budget reader mirrors", () => {
        const crd = CRDS.NodePool.spec.properties.disruption.properties.budgets.items.properties.schedule.pattern;
        expect(crd).to.equal(KARPENTER_SCHEDULE_PATTERN);
    });
});
