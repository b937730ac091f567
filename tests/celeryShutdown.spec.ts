// When a node goes, a burst Celery worker gets SIGTERM at once and finishes what it holds before anything kills it.
// The hooks run for real (bash, as the kubelet runs a preStop exec) against tests/celeryStandIn.ts, a process that
// stands in for the worker: GC Notify's own hook as its chart renders it, and the program's hook as the patch leaves
// the chart's Deployment.
import { expect } from "chai";
import { type ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { type BurstDeployment, DRAIN_SLACK_SECONDS, HOOK_MARGIN_SECONDS, burstGraceSeconds, burstPodTemplate, celeryPreStop } from "../components/models/celeryPlacement.ts";
import { GC_NOTIFY_PRESTOP } from "../plan/gcNotifyCharts.ts";
import { burstDeployments, placementArgs } from "../stacks/componentArgs.ts";
import { stackConfig } from "./helpers.ts";
import { CACHED_NODE_ENV, tempDir } from "./opsHelpers.ts";

const STAND_IN = path.join(import.meta.dirname, "celeryStandIn.ts");
/** GC Notify's /app/scripts/run_celery_exit.sh as it treats the worker (the drill's model of it says what it is). */
const GC_NOTIFY_EXIT = path.join(import.meta.dirname, "..", "ops", "gcNotifyRunCeleryExit.sh");
const RENDERED = process.env.GC_NOTIFY_RENDERED_DIR;
const STACKS = ["staging", "production"] as const;

interface Drain {
    /** `<ms> <event>` lines of the stand-in: ready, task-start i, task-done i, sigterm, exit. */
    events: Map<string, number>;
    /** How the stand-in ended: its exit code, or the signal that killed it. */
    worker: { code: number | null; signal: NodeJS.Signals | null };
    hook: { code: number | null; log: string };
}

const exited = (p: ChildProcess) => new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => p.on("exit", (code, signal) => resolve({ code, signal })));

/**
 * A worker holding tasks of these lengths (seconds) on `threads` threads, and a preStop `command` started as they
 * begin: the node starts draining just as the tasks start. Resolves once both have ended.
 */
async function drain(command: string[], tasks: number[], threads = 4, extraEnv: Record<string, string> = {}, workerCommand?: string[]): Promise<Drain> {
    const dir = tempDir("celery-drain-");
    const pidfile = path.join(dir, "celery.pid");
    const eventsFile = path.join(dir, "events");
    const hookLog = path.join(dir, "hook.log");
    fs.writeFileSync(eventsFile, "");
    const worker = spawn(process.execPath, [...(workerCommand ?? [STAND_IN]), pidfile, eventsFile, String(threads), tasks.join(",")], { stdio: "ignore", env: workerCommand ? process.env : CACHED_NODE_ENV });
    const workerEnd = exited(worker);
    while (!fs.existsSync(pidfile) || fs.readFileSync(pidfile, "utf8") === "") await new Promise((r) => setTimeout(r, 20));
    const [file, ...args] = command;
    const hook = spawn(file, args, { env: { PATH: process.env.PATH, CELERY_PIDFILE: pidfile, CELERY_PRESTOP_LOG: hookLog, ...extraEnv }, stdio: "ignore" });
    const [w, h] = await Promise.all([workerEnd, exited(hook)]);
    const events = new Map(
        fs
            .readFileSync(eventsFile, "utf8")
            .trim()
            .split("\n")
            .map((l) => l.split(" "))
            .map(([ms, ...event]) => [event.join(" "), Number(ms)] as [string, number]),
    );
    return { events, worker: w, hook: { code: h.code, log: fs.existsSync(hookLog) ? fs.readFileSync(hookLog, "utf8") : "" } };
}

/** Each stack's notify-celery.yaml as GC Notify's chart renders it (notification-manifests 609853e2), read once. */
const renderedCelery = new Map<string, any[]>();

/** GC Notify's notify-celery Deployment of this name as its chart renders it. */
function renderedDeployment(stack: string, name: string): any {
    let docs = renderedCelery.get(stack);
    if (!docs) renderedCelery.set(stack, (docs = parseAllDocuments(fs.readFileSync(path.join(RENDERED!, stack, "notify-celery.yaml"), "utf8")).map((d) => d.toJS())));
    const d = docs.find((o) => o?.kind === "Deployment" && o.metadata?.name === name);
    if (!d) throw new Error(`${stack}/notify-celery.yaml renders no Deployment ${name}`);
    return d;
}

/** The chart's worker container with the patch applied: containers merge by name, and the patch sets the preStop. */
function patched(rendered: any, patch: ReturnType<typeof burstPodTemplate>): any {
    const container = rendered.spec.template.spec.containers.find((c: any) => c.name === patch.spec.containers[0].name);
    if (!container) return rendered.spec.template.spec.containers[0];
    return { ...container, lifecycle: { ...container.lifecycle, ...patch.spec.containers[0].lifecycle } };
}

/** A preStop command as the container would run it; GC Notify's script lives in its image, so the fixture stands in. */
const runnable = (command: string[]) => (command.join(" ") === GC_NOTIFY_PRESTOP.join(" ") ? ["/bin/bash", GC_NOTIFY_EXIT] : command);

function burstWorkers(stack: string): { d: BurstDeployment; longest: number; preStop: string[] }[] {
    const cfg = stackConfig(stack);
    return burstDeployments(cfg).map((d) => {
        const longest = cfg.placement.burst.deployments.find((x) => x.name === d.name)!.longestTaskSeconds ?? cfg.placement.burst.longestTaskSeconds;
        const patch = burstPodTemplate(placementArgs(cfg), d);
        const container = RENDERED ? patched(renderedDeployment(stack, d.name), patch) : patch.spec.containers[0];
        return { d, longest, preStop: container.lifecycle.preStop.exec.command };
    });
}

/** The burst workers of both stacks whose tasks take under 30 s: those run at full length. */
const shortTaskWorkers = () => STACKS.flatMap((stack) => burstWorkers(stack).filter((w) => w.longest <= 30).map((w) => ({ stack, ...w })));
/** Workers with the same hook and the same longest task are the same experiment. */
const experimentOf = (w: { preStop: string[]; longest: number }) => JSON.stringify([runnable(w.preStop), w.longest]);

/** GC Notify's hook as its chart renders it (staging's email worker), or as plan/gcNotifyCharts.ts models it. */
const gcNotifyHook = (): string[] => (RENDERED ? renderedDeployment("staging", "notify-celery-email-send-burst").spec.template.spec.containers[0].lifecycle.preStop.exec.command : GC_NOTIFY_PRESTOP);

/**
 * The drains the tests below read. They wait on real time (a task of 18 s, GC Notify's hook's 10 s), so all of them
 * start together before the first test, and each test awaits its own: the file takes the longest of them, not their sum.
 */
const experiments = {
    /** Each distinct full-length experiment: a task of the worker's longestTaskSeconds, its hook started as it begins. */
    fullLength: () => Promise.all([...new Map(shortTaskWorkers().map((w) => [experimentOf(w), w])).values()].map(async (w) => [experimentOf(w), await drain(runnable(w.preStop), [w.longest])] as const)).then((r) => new Map(r)),
    /** 4 running and 16 prefetched tasks of 1 s on 4 threads, and the hook of a grace for 1 s tasks. */
    worstCase: () => drain(celeryPreStop(burstGraceSeconds(1, 4)).exec.command, Array(20).fill(1)),
    /** GC Notify's own hook against a 20 s task. */
    gcNotify: () => drain(runnable(gcNotifyHook()), [20]),
    /** A 5 s task and a hook with 1 s to SIGKILL. */
    late: () => drain(celeryPreStop(1 + HOOK_MARGIN_SECONDS).exec.command, [5]),
    /** No pidfile: the worker is `celery -A run_celery.notify_celery worker ...` as ps shows it, a venv's bin/celery. */
    byProcess: () => {
        const bin = path.join(tempDir("celery-bin-"), "bin");
        fs.mkdirSync(bin);
        fs.symlinkSync(STAND_IN, path.join(bin, "celery"));
        return drain(celeryPreStop(30).exec.command, [1], 4, { CELERY_PIDFILE: "/nonexistent/celery.pid" }, [path.join(bin, "celery"), "worker"]);
    },
};
const running = new Map<keyof typeof experiments, Promise<unknown>>();
function experiment<K extends keyof typeof experiments>(name: K): ReturnType<(typeof experiments)[K]> {
    if (!running.has(name)) {
        const p = experiments[name]();
        // A failure is the awaiting test's to report, not an unhandled rejection before it runs.
        p.catch(() => undefined);
        running.set(name, p);
    }
    return running.get(name) as ReturnType<(typeof experiments)[K]>;
}

describe("a burst Celery worker when its node goes (the preStop hook, run against a stand-in worker)", function () {
    this.timeout(90_000);

    before(() => {
        for (const name of Object.keys(experiments) as (keyof typeof experiments)[]) experiment(name);
    });

    // That the grace fits Karpenter's terminationGracePeriod is config's to refuse (tests/placement.spec.ts, nodePool.spec.ts).
    it("each burst worker's grace outlasts every task it may hold by the drain's slack, and its hook kills only after that", () => {
        for (const stack of STACKS) {
            const cfg = stackConfig(stack);
            for (const { d, longest, preStop } of burstWorkers(stack)) {
                const toKill = Number(preStop.at(-1));
                const drain = (cfg.placement.burst.prefetchMultiplier + 1) * longest;
                expect(toKill, `${stack} ${d.name}: SIGKILL ${toKill} s after the hook starts`).to.equal(d.terminationGracePeriodSeconds - HOOK_MARGIN_SECONDS);
                expect(toKill - drain, `${stack} ${d.name}: slack after ${drain} s of tasks`).to.equal(DRAIN_SLACK_SECONDS);
            }
        }
    });

    it(`${RENDERED ? "as GC Notify's chart renders each Deployment, with the patch" : "with the patch's preStop"}: a task of its longestTaskSeconds, begun as the node starts draining, finishes; the worker gets SIGTERM within seconds and exits by itself (both stacks, every worker whose tasks take under 30 s, at full length)`, async () => {
        const runs = shortTaskWorkers();
        expect(runs.length, "the burst workers of both stacks with short tasks").to.be.at.least(7);
        const byExperiment = await experiment("fullLength");
        for (const run of runs) {
            const { stack, d, longest } = run;
            const res = byExperiment.get(experimentOf(run))!;
            const what = `${stack} ${d.name}`;
            // Within a second on an idle machine; the bound leaves room for a busy one.
            expect(res.events.get("sigterm"), `${what}: SIGTERM`).to.be.below(3000);
            expect(res.events.get("task-done 0"), `${what}: the ${longest} s task`).to.be.within(longest * 1000, longest * 1000 + 2000);
            expect(res.worker, `${what}: the worker exits by itself`).to.deep.equal({ code: 0, signal: null });
            expect(res.events.get("exit")).to.be.at.least(res.events.get("task-done 0")!);
            expect(res.hook.code, `${what}: the hook`).to.equal(0);
            expect(res.hook.log).to.match(/exited after \d+ s/);
        }
    });

    // The hook waits for the worker, whatever the tasks' length: 1 s tasks show it as 18 s ones would, in a third of the time.
    it("the worst case, shortened: 4 running and 16 prefetched tasks on 4 threads run 5 in a row each, and the hook waits for all of them (burstGraceSeconds of 1 s tasks)", async () => {
        const res = await experiment("worstCase");
        expect([...res.events.keys()].filter((e) => e.startsWith("task-done")).length).to.equal(20);
        expect(res.events.get("exit")).to.be.within(5_000, 7_000);
        expect(res.worker).to.deep.equal({ code: 0, signal: null });
    });

    it("GC Notify's own hook, as its chart renders it, kills a 20 s task at about 10 s: the task never finishes, and with early acknowledgement it is lost", async () => {
        // With GC Notify's renders, the hook is the chart's own command, and the program's copy of it must be that command.
        if (RENDERED) expect(gcNotifyHook()).to.deep.equal(GC_NOTIFY_PRESTOP);
        const res = await experiment("gcNotify");
        expect(res.events.get("sigterm")).to.be.below(3000);
        expect(res.events.has("task-done 0")).to.equal(false);
        expect(res.worker.signal).to.equal("SIGKILL");
    });

    it("kills a worker still running when its time is up, and says so; finds the worker by its process when the pidfile is gone; exits 0 when none runs", async () => {
        const late = await experiment("late");
        expect([late.worker.signal, late.hook.code, late.events.has("task-done 0")]).to.deep.equal(["SIGKILL", 0, false]);
        expect(late.hook.log).to.match(/SIGKILL to Celery worker \d+: still running after 1 s/);

        const found = await experiment("byProcess");
        expect([found.worker, found.hook.code, found.events.has("task-done 0")]).to.deep.equal([{ code: 0, signal: null }, 0, true]);

        const none = spawn("/bin/bash", ["-c", celeryPreStop(30).exec.command[2], "celery-prestop", "25"], { env: { PATH: process.env.PATH, CELERY_PIDFILE: "/nonexistent/celery.pid", CELERY_PRESTOP_LOG: "/dev/null" }, stdio: "ignore" });
        expect((await exited(none)).code).to.equal(0);
    });
});
