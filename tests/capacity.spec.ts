import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parseStackConfig } from "../stacks/config";
import { CapacityInputs, capacityInputs, capacityReport, costs, chosenType, limitCheck, rampUp, typeFits } from "../ops/capacity";
import { capacity } from "../ops/capacityCli";
import { parse, stringify } from "yaml";
import { PROJECT_DIR } from "../plan/offlineRuntime";
import { STACKS, rawConfig, stackConfig } from "./helpers";
import { readSeries, tempDir } from "./opsHelpers";

/** Round numbers a reader can check by hand: no reservations, 1-cpu pods, one HPA adding 4 pods a minute. */
const base = (): CapacityInputs => ({
    instanceTypes: ["c7i.xlarge"],
    kubelet: {},
    pod: { cpu: 1, memoryGiB: 1 },
    daemonsets: { cpu: 0, memoryGiB: 0 },
    baselinePods: 4,
    peakPods: 16,
    headroomPods: 0,
    limits: { cpu: 100, memoryGiB: 1000 },
    hpa: { pods: 4, periodSeconds: 60, stabilizationSeconds: 60, deployments: 1 },
    batchIdleSeconds: 1,
    batchMaxSeconds: 10,
    nodeLaunchSeconds: 100,
    emptyNodeSeconds: 1800,
    consolidationPolicy: "WhenEmpty",
    expireAfterSeconds: 24 * 3600,
    burstHoursPerDay: 2,
    prices: { asOf: "2026-11-01", currency: "USD", region: "ca-central-1", onDemandHourly: { "c7i.xlarge": 0.2, "m7i.xlarge": 0.25, "r7i.xlarge": 0.3 } },
    spotDiscount: 0.5,
});

const row = (p: { t: number; desired: number; running: number; nodes: number; launching: number }) => [p.t, p.desired, p.running, p.nodes, p.launching];

describe("capacity config section", () => {
    const withCapacity = (patch: Record<string, unknown>) => rawConfig("staging", "capacity", patch);
    // The capacity section never refuses the config: its problems are kept for `npm run capacity` (and warnings).
    const capacityProblemsOf = (raw: Record<string, unknown>) => parseStackConfig("staging", raw).capacityProblems.map((i) => `${i.path} ${i.message}`).join("\n");

    it("reads both stack files, with GC Notify's HPA scale-up as the default", () => {
        for (const stack of STACKS) expect(stackConfig(stack).capacity?.hpaScaleUp).to.deep.equal({ pods: 6, periodSeconds: 45, stabilizationSeconds: 90, deployments: 2 });
        const cfg = parseStackConfig("staging", withCapacity({ hpaScaleUp: undefined }));
        expect(cfg.capacity!.hpaScaleUp).to.deep.equal({ pods: 6, periodSeconds: 45, stabilizationSeconds: 90, deployments: 1 });
    });

    it("is optional: the program deploys without it", () => {
        const raw = rawConfig("staging");
        delete raw.capacity;
        expect(parseStackConfig("staging", raw).capacity).to.equal(undefined);
        expect(capacityInputs(parseStackConfig("staging", raw))).to.equal(undefined);
    });

    it("names every approved type without a price, and the key", () => {
        const prices = { ...stackConfig("staging").capacity!.prices };
        const onDemandHourly = { ...prices.onDemandHourly };
        delete onDemandHourly["c7i.xlarge"];
        delete onDemandHourly["r6a.xlarge"];
        expect(capacityProblemsOf(withCapacity({ prices: { ...prices, onDemandHourly } }))).to.equal(
            "capacity.prices.onDemandHourly has no price for c7i.xlarge, r6a.xlarge: every approved instance type of nodePool needs its hourly on-demand price",
        );
    });

    const bad: [string, Record<string, unknown>, RegExp][] = [
        ["prices for another region", { prices: { ...stackConfig("staging").capacity!.prices, region: "us-east-1" } }, /capacity\.prices\.region must be the cluster's region ca-central-1: prices differ by region \(got "us-east-1"\)/],
        ["a negative price", { prices: { ...stackConfig("staging").capacity!.prices, onDemandHourly: { "c7i.xlarge": -1 } } }, /capacity\.prices\.onDemandHourly\.c7i\.xlarge must be a number from 0\.0001 to 1000 \(got -1\)/],
        ["an undated price table", { prices: { ...stackConfig("staging").capacity!.prices, asOf: "November" } }, /capacity\.prices\.asOf must be a date such as 2026-11-01/],
        ["a spot discount as a percentage", { spotDiscount: 60 }, /capacity\.spotDiscount must be a number from 0 to 0\.95 \(got 60\)/],
        ["a baseline above the peak", { baselineCeleryPods: 61 }, /capacity\.baselineCeleryPods must be at most nodePool\.capacityCheck\.peakCeleryPods \(60\) \(got 61\)/],
        ["a misspelled HPA key", { hpaScaleUp: { pod: 6 } }, /capacity\.hpaScaleUp\.pod is not a known key \(did you mean "pods"\?\)/],
        ["a missing launch time", { nodeLaunchSeconds: undefined }, /capacity\.nodeLaunchSeconds is required: it must be an integer from 10 to 1800/],
    ];
    for (const [what, patch, expected] of bad) {
        it(`reports ${what} for npm run capacity, naming the key, without refusing the config`, () => {
            expect(capacityProblemsOf(withCapacity(patch))).to.match(expected);
        });
    }

    it("needs the pod size and peak from nodePool.capacityCheck", () => {
        const raw = rawConfig("staging", "nodePool", { capacityCheck: undefined });
        raw.placement = { ...(raw.placement as object), headroom: { pods: 0 } };
        expect(capacityProblemsOf(raw)).to.match(/^capacity needs nodePool\.capacityCheck/);
    });
});

describe("capacity model", () => {
    it("fits pods per node after the kubelet reservations and daemonsets, with the same formula as the warnings (staging)", () => {
        const fits = typeFits(capacityInputs(stackConfig("staging"))!);
        const m6a = fits.find((f) => f.type === "m6a.xlarge")!;
        // 16 GiB less 7.5 % is 14.8; less 500Mi + 300Mi + 500Mi is 13.53; less the daemonsets' 800Mi is 12.75.
        expect(m6a.allocatable.cpu).to.be.closeTo(3.8, 1e-9);
        expect(m6a.allocatable.memoryGiB).to.be.closeTo(14.8 - 1300 / 1024, 1e-9);
        expect(m6a.forPods.cpu).to.be.closeTo(3.2, 1e-9);
        // 3.2 / 0.55 = 5.8 pods by cpu, 12.75 / 1.22 = 10.4 by memory.
        expect(m6a).to.include({ podsPerNode: 5, boundBy: "cpu", peakNodes: 13 });
        // c6a: 8 GiB less the same is 5.35 GiB, 4.4 pods of 1250Mi.
        expect(fits.find((f) => f.type === "c6a.xlarge")).to.include({ podsPerNode: 4, boundBy: "memory", peakNodes: 16 });
    });

    it("one type: nodes, limits, ramp-up and cost by hand", () => {
        const m = base();
        const [fit] = typeFits(m);
        // c7i.xlarge: 4 cpu and 7.4 GiB for pods, so 4 one-cpu pods; 16 pods need 4 nodes.
        expect(fit).to.include({ podsPerNode: 4, boundBy: "cpu", peakNodes: 4, limitNodes: 25, spotHourly: 0.1, spotPerPod: 0.025 });
        const ramp = rampUp(m, 4, 25);
        // The HPA adds 4 pods at 60, 120 and 180 s; each step's pods wait 1 s of batch and 100 s of launch.
        expect(ramp.points.map(row)).to.deep.equal([
            [0, 4, 4, 1, 0],
            [60, 8, 4, 1, 0],
            [61, 8, 4, 1, 1],
            [120, 12, 4, 1, 1],
            [121, 12, 4, 1, 2],
            [161, 12, 8, 2, 1],
            [180, 16, 8, 2, 1],
            [181, 16, 8, 2, 2],
            [221, 16, 12, 3, 1],
            [281, 16, 16, 4, 0],
        ]);
        expect(ramp).to.include({ hpaPeakAt: 180, peakAt: 281 });
    });

    it("headroom: the first step's pods start at once, and the peak comes one period sooner", () => {
        const on = rampUp({ ...base(), headroomPods: 4 }, 4, 25);
        expect(on.points[0]).to.deep.include({ running: 4, nodes: 2 });
        expect(on.points.find((p) => p.t === 60)).to.deep.include({ desired: 8, running: 8 });
        expect(on.peakAt).to.equal(221);
        const off = rampUp(base(), 4, 25);
        expect(off.points.find((p) => p.t === 60)).to.deep.include({ desired: 8, running: 4 });
        expect(off.peakAt).to.equal(281);
        // Preempted headroom pods are pending too, so Karpenter replaces the room they held.
        expect(on.points[on.points.length - 1]).to.deep.include({ running: 16, nodes: 5, launching: 0 });
    });

    it("several types: the cheapest spot price per pod, and costs by hand", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 } };
        const fits = typeFits(m);
        // c7i holds 2 pods (7.4 GiB / 3), m7i and r7i 4 (cpu): per pod 0.05, 0.03125, 0.0375.
        expect(fits.map((f) => [f.type, f.podsPerNode, f.boundBy, f.spotPerPod])).to.deep.equal([
            ["c7i.xlarge", 2, "memory", 0.05],
            ["m7i.xlarge", 4, "cpu", 0.03125],
            ["r7i.xlarge", 4, "cpu", 0.0375],
        ]);
        const chosen = chosenType(fits)!;
        expect(chosen.type).to.equal("m7i.xlarge");
        const c = costs(m, fits, chosen);
        expect(c.baseline).to.deep.equal({ pods: 4, nodes: 1, hourly: 0.125 });
        expect(c.peak).to.deep.equal({ pods: 16, nodes: 4, hourly: 0.5 });
        expect(c.static).to.deep.equal({ type: "m7i.xlarge", nodes: 4, hourly: 1 });
        // WhenEmpty: the 4 baseline pods that survive the scale-down can sit one per node on all 4 peak nodes, and
        // none of those empties, so they stay until expireAfter (24 h after the burst began: the rest of the day).
        expect(c.afterBurst).to.deep.equal({ pods: 4, nodes: 4, hourly: 0.5 });
        // 2 h of burst plus 30 min until emptied nodes go, then 21.5 h after the burst: 0.5 x 24 against 1 x 24.
        expect([c.peakHoursPerDay, c.afterBurstHoursPerDay, c.baselineHoursPerDay]).to.deep.equal([2.5, 21.5, 0]);
        expect(c.daily.karpenter).to.be.closeTo(12, 1e-9);
        expect(c.daily.saving).to.be.closeTo(12, 1e-9);
        expect(c.daily.savingPercent).to.be.closeTo(50, 1e-9);
        // Were the nodes back to the baseline 30 min after the burst: 0.125 x 21.5 + 0.5 x 2.5.
        expect(c.optimistic!.karpenter).to.be.closeTo(3.9375, 1e-9);
        expect(c.optimistic!.saving).to.be.closeTo(20.0625, 1e-9);
        expect(c.optimistic!.savingPercent).to.be.closeTo(83.59, 0.01);
    });

    it("WhenEmpty: after a burst, at most one node per remaining pod, until the nodes expire; then the baseline", () => {
        // 2 baseline + 1 headroom pods, expireAfter 12 h; m7i holds 4 pods of 1 cpu, 3 GiB.
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 }, baselinePods: 2, headroomPods: 1, expireAfterSeconds: 12 * 3600 };
        const fits = typeFits(m);
        const c = costs(m, fits, chosenType(fits)!);
        // Baseline: 3 pods on 1 node; peak: 17 pods on 5 nodes; after: the 3 remaining pods on 3 of those 5.
        expect([c.baseline.nodes, c.peak.nodes, c.afterBurst.nodes]).to.deep.equal([1, 5, 3]);
        // Peak 2.5 h; the nodes expire 12 h after the burst began, so 9.5 h after it; 12 h at the baseline.
        expect([c.peakHoursPerDay, c.afterBurstHoursPerDay, c.baselineHoursPerDay]).to.deep.equal([2.5, 9.5, 12]);
        // 0.625 x 2.5 + 0.375 x 9.5 + 0.125 x 12 = 1.5625 + 3.5625 + 1.5; the static group is 4 m7i on demand, 24 a day.
        expect(c.daily.karpenter).to.be.closeTo(6.625, 1e-9);
        expect(c.daily.savingPercent).to.be.closeTo(72.40, 0.01);
        // expireAfter Never: the spread nodes stay the whole rest of the day.
        const never = costs({ ...m, expireAfterSeconds: undefined }, fits, chosenType(fits)!);
        expect([never.afterBurstHoursPerDay, never.baselineHoursPerDay]).to.deep.equal([21.5, 0]);
        expect(never.daily.karpenter).to.be.closeTo(0.625 * 2.5 + 0.375 * 21.5, 1e-9);
    });

    it("WhenEmptyOrUnderutilized and Balanced: back to the baseline after consolidateAfter; Never keeps the peak all day", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 } };
        const fits = typeFits(m);
        for (const consolidationPolicy of ["WhenEmptyOrUnderutilized", "Balanced"] as const) {
            const c = costs({ ...m, consolidationPolicy }, fits, chosenType(fits)!);
            expect(c.afterBurst).to.deep.equal(c.baseline);
            expect([c.peakHoursPerDay, c.afterBurstHoursPerDay, c.baselineHoursPerDay]).to.deep.equal([2.5, 0, 21.5]);
            // 0.125 x 21.5 + 0.5 x 2.5, as the optimistic figure above; no second figure.
            expect(c.daily.karpenter).to.be.closeTo(3.9375, 1e-9);
            expect(c.optimistic).to.equal(undefined);
        }
        const never = costs({ ...m, emptyNodeSeconds: undefined }, fits, chosenType(fits)!);
        expect([never.peakHoursPerDay, never.afterBurstHoursPerDay, never.baselineHoursPerDay]).to.deep.equal([24, 0, 0]);
        expect(never.daily.karpenter).to.be.closeTo(12, 1e-9);
    });

    it("limits too low: says so, says what would do, and the ramp stops short", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 }, limits: { cpu: 12, memoryGiB: 1000 } };
        const fits = typeFits(m);
        const chosen = chosenType(fits)!;
        // 12 cpu is 3 nodes of 4 vCPU: 12 pods of m7i, not 16.
        expect(chosen.limitNodes).to.equal(3);
        const check = limitCheck(m, fits, chosen);
        // c7i needs 8 nodes (32 vCPU, 59.2 GiB), r7i 4 nodes (16 vCPU, 118.4 GiB).
        expect(check).to.deep.equal({ chosenOk: false, shortTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], needed: { cpu: 32, memoryGiB: 119 } });
        const ramp = rampUp(m, chosen.podsPerNode, chosen.limitNodes);
        expect(ramp.peakAt).to.equal(undefined);
        expect(ramp.points[ramp.points.length - 1]).to.deep.include({ desired: 16, running: 12, nodes: 3, launching: 0 });
        expect(costs(m, fits, chosen).peak.nodes).to.equal(3);
    });

    it("limits enough for the chosen type but not for another approved type still fail", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 }, limits: { cpu: 100, memoryGiB: 100 } };
        const fits = typeFits(m);
        // r7i: 100 GiB holds 3 nodes of 29.6 GiB, short of 4.
        expect(limitCheck(m, fits, chosenType(fits)!)).to.deep.include({ chosenOk: true, shortTypes: ["r7i.xlarge"] });
    });

    it("no type fits one pod: a clear message", () => {
        expect(capacityReport({ ...base(), pod: { cpu: 5, memoryGiB: 1 } })).to.equal(
            "no approved instance type of known shape fits one burst Celery pod next to the daemonsets (types: c7i.xlarge)",
        );
    });
});

describe("npm run capacity", () => {
    for (const stack of STACKS) {
        it(`${stack}: peak nodes, limit sufficiency, the modelled curve and the cost comparison; a chart of the curve`, async () => {
            const out = tempDir();
            const r = await capacity(["--stack", stack, "--out", out]);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output).to.match(/^Peak: \d+ burst pods \+ \d+ headroom need \d+ nodes of [a-z0-9]+\.[0-9]*xlarge \(\d+ pods each\)\.$/m);
            expect(r.output).to.match(/^NodePool limits allow \d+ nodes of .*: enough for the peak, with every approved type\.$/m);
            expect(r.output).to.match(/^The HPAs ask for \d+ pods at t=\d+ s; all run at t=\d+ s/m);
            expect(r.output).to.match(/^ {2}static on-demand group for the peak +\d+ +\d+ x \S+ +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^ {2}after a burst, WhenEmpty +\d+ \+ \d+ headroom +\d+ x \S+ +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^ {2}Karpenter USD \d+\.\d\d, static group USD \d+\.\d\d: Karpenter saves USD \d+\.\d\d a day \(\d+ %\)\.$/m);
            expect(r.output).to.match(/^ {2}Optimistic \(back to the baseline 30m after a burst, as WhenEmptyOrUnderutilized would do\): Karpenter USD \d+\.\d\d, saving USD \d+\.\d\d a day \(\d+ %\)\.$/m);

            const report = capacityReport(capacityInputs(stackConfig(stack))!);
            if (typeof report === "string") throw new Error(report);
            const series = readSeries(fs.readFileSync(path.join(out, "ramp.svg"), "utf8"));
            expect(series.map((s) => s.name)).to.deep.equal(["desired pods", "running pods", "ready nodes"]);
            const running = series[1].values;
            expect(running[0]).to.deep.equal([0, report.inputs.baselinePods]);
            expect(running[running.length - 1][1]).to.equal(report.inputs.peakPods);
            // Steps: x never goes back, and every drawn point is inside the plot.
            for (const s of series) {
                s.values.slice(1).forEach(([x], i) => expect(x).to.be.at.least(s.values[i][0]));
                for (const [x, y] of s.pixels) expect(x >= 60 && x <= 780 && y >= 60 && y <= 370, `${x},${y}`).to.equal(true);
            }
            const csv = fs.readFileSync(path.join(out, "ramp.csv"), "utf8").trim().split("\r\n");
            expect(csv[0]).to.equal("t_seconds,desired_pods,running_pods,ready_nodes,launching_nodes");
            expect(csv.length - 1).to.equal(report.ramp.points.length);
        });
    }

    it("staging's cost, as the README quotes it: WhenEmpty keeps the peak's nodes after a burst", async () => {
        const r = await capacity(["--stack", "staging", "--out", tempDir()]);
        const lines = r.output.split("\n");
        const from = lines.indexOf("Cost per hour of the burst capacity (the stable node group costs the same either way):");
        // m6a.xlarge spot is 0.1926 x 0.4 = 0.07704 an hour. 14 remaining pods can hold all 13 peak nodes, so the
        // day is 13 nodes for 24 h: 24.04 against 12 on-demand m6a.xlarge at 0.1926 for 24 h, 55.47.
        expect(lines.slice(from + 1, from + 11)).to.deep.equal([
            "                                       pods             nodes            per hour",
            "  baseline, Karpenter spot             12 + 2 headroom  3 x m6a.xlarge   USD 0.23",
            "  peak, Karpenter spot                 60 + 2 headroom  13 x m6a.xlarge  USD 1.00",
            "  after a burst, WhenEmpty             12 + 2 headroom  13 x m6a.xlarge  USD 1.00",
            "  static on-demand group for the peak  60               12 x m6a.xlarge  USD 2.31",
            "After a burst, WhenEmpty removes only empty nodes, and the HPAs' scale-down deletes pods from the most crowded nodes first:",
            "the 14 pods that remain can hold up to 13 nodes (one pod each: every node of the peak) until the nodes expire (expireAfter 24h).",
            "Per day: 3.5 h at peak (3 h of bursts plus 30m before emptied nodes go), 20.5 h after a burst, 0 h at baseline:",
            "  Karpenter USD 24.04, static group USD 55.47: Karpenter saves USD 31.43 a day (57 %).",
            // 3 nodes for 20.5 h and 13 for 3.5 h.
            "  Optimistic (back to the baseline 30m after a burst, as WhenEmptyOrUnderutilized would do): Karpenter USD 8.24, saving USD 47.23 a day (85 %).",
        ]);
    });

    it("with WhenEmptyOrUnderutilized: no after-burst row, one line on why, one daily figure", async () => {
        const dir = tempDir();
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.production.yaml"), "utf8"));
        doc.config["notify-karpenter:nodePool"].consolidationPolicy = "WhenEmptyOrUnderutilized";
        fs.writeFileSync(path.join(dir, "Pulumi.production.yaml"), stringify(doc));
        const r = await capacity(["--stack", "production", "--out", path.join(dir, "out")], dir);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).not.to.match(/after a burst, |Optimistic/);
        expect(r.output).to.include(
            [
                "  static on-demand group for the peak  100               8 x m6a.2xlarge  USD 3.08",
                "Per day: 3.5 h at peak (3 h of bursts plus 30m before emptied nodes go), 20.5 h at baseline (WhenEmptyOrUnderutilized consolidates underutilized nodes too):",
                "  Karpenter USD 11.17, static group USD 73.96: Karpenter saves USD 62.79 a day (85 %).",
                "",
            ].join("\n"),
        );
    });

    it("exits 1 when the limits do not allow the peak, and says what would", async () => {
        // A copy of the staging stack file with a 40-cpu limit, in a directory of its own.
        const dir = tempDir();
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8"));
        doc.config["notify-karpenter:nodePool"].limits.cpu = "40";
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), stringify(doc));
        const r = await capacity(["--stack", "staging", "--out", path.join(dir, "out")], dir);
        expect(r.exitCode).to.equal(1);
        // 40 cpu is 10 nodes of 4 vCPU; c6a.xlarge (4 pods each) needs 16 nodes for 62 pods (64 cpu), r6a.xlarge 13 nodes of 29.6 GiB.
        expect(r.output).to.match(/^NodePool limits allow 10 nodes of m6a\.xlarge \(50 pods\): NOT ENOUGH for 62 pods, not even with m6a\.xlarge\. Limits of cpu 64 and memory 385Gi allow the peak with every approved type\.$/m);
        expect(r.output).to.match(/^The HPAs ask for 60 pods at t=225 s, but only 50 ever run: the NodePool limits stop Karpenter\.$/m);
    });

    it("refuses bad arguments and unknown stacks with usage, exit 2", async () => {
        expect(await capacity(["--stack", "prod"])).to.deep.include({ exitCode: 2 });
        expect((await capacity(["--stack", "prod"])).output).to.match(/^--stack: unknown stack "prod": known stacks are .*production.*staging\nusage: npm run capacity/);
        expect((await capacity([])).output).to.match(/^--stack is required/);
        expect((await capacity(["--stack"])).output).to.match(/^--stack needs a value/);
        expect((await capacity(["--stak", "staging"])).output).to.match(/^unknown flag --stak: the flags are --stack, --out\n/);
    });
});
