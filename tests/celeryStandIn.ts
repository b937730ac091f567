// Stands in for GC Notify's Celery worker as a preStop hook meets it (tests/celeryShutdown.spec.ts): one process that
// writes its pidfile, as every run_celery_*.sh asks (--pidfile=/tmp/celery.pid), and runs the tasks it holds on a few
// threads (--pool=threads, --concurrency=4). On SIGTERM it starts a warm shutdown: it takes nothing new, runs every
// task it holds to the end, then exits 0 (celery 5.6.3 celery/apps/worker.py:378-380, concurrency/thread.py:41-43).
// Each event goes to the events file as `<ms since start> <event>`; a SIGKILL leaves the last tasks unfinished there.
//   node tests/celeryStandIn.ts <pidfile> <events file> <threads> <task seconds,...>
import * as fs from "fs";

// Run as `bin/celery worker ...` too, as ps shows GC Notify's worker: the word "worker" is not an argument here.
const [pidfile, events, threadsArg, tasksArg] = process.argv.slice(2).filter((a) => a !== "worker");
const started = Date.now();
const record = (event: string) => fs.appendFileSync(events, `${Date.now() - started} ${event}\n`);
const durations = tasksArg.split(",").filter(Boolean).map(Number);
const threads = Array.from({ length: Number(threadsArg) }, (_, t) => durations.map((d, i) => ({ i, d })).filter((_, i) => i % Number(threadsArg) === t));

let stopping = false;
let running = threads.length;
function finishIfDone(): void {
    if (stopping && running === 0) {
        record("exit");
        fs.rmSync(pidfile, { force: true });
        process.exit(0);
    }
}
async function runThread(tasks: { i: number; d: number }[]): Promise<void> {
    for (const t of tasks) {
        record(`task-start ${t.i}`);
        await new Promise((resolve) => setTimeout(resolve, t.d * 1000));
        record(`task-done ${t.i}`);
    }
    running--;
    finishIfDone();
}

process.on("SIGTERM", () => {
    record("sigterm");
    stopping = true;
    finishIfDone();
});
fs.writeFileSync(pidfile, `${process.pid}\n`);
record("ready");
for (const t of threads) void runThread(t);
// An idle worker waits for messages until it is told to stop.
setInterval(() => undefined, 60_000);
