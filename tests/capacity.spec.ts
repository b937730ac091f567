import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { parseStackConfig } from "../stacks/validatedConfig.ts";
import { type CapacityInputs, capacityInputs, capacityReport, costs, chosenType, limitCheck, rampUp, typeFits } from "../ops/capacity.ts";
import { capacity } from "../ops/capacityCli.ts";
import { parse, stringify } from "yaml";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { STACKS, rawConfig, stackConfig } from "./helpers.ts";
import { readSeries, tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";

/** Round numbers a reader can check by hand: no reservations, 1-cpu pods, one HPA adding 4 pods a minute. */
const base = (): CapacityInputs => ({
    instanceTypes: ["c7i.xlarge"],
    kubelet: {},
    pod: { cpu: 1, memoryGiB: 1 },
    daemonsets: { cpu: 0, memoryGiB: 0 },
    baselinePods: 4,
    peakPods: 16,
    headroomPods: 0,
    scaleDownOrdered: false,
    limits: { cpu: 100, memoryGiB: 1000 },
    hpa: { pods: 4, periodSeconds: 60, stabilizationSeconds: 60, deployments: 1 },
    batchIdleSeconds: 1,
    batchMaxSeconds: 10,
    nodeLaunchSeconds: 100,
    emptyNodeSeconds: 1800,
    consolidationPolicy: "WhenEmpty",
    expireAfterSeconds: 24 * 3600,
    budgets: [],
    sendingHours: { start: "08:00", end: "18:00", timeZone: "America/Toronto" },
    nightlyBatch: { start: "05:00", end: "10:30", timeZone: "Etc/UTC" },
    burstStart: "08:00",
    burstHoursPerDay: 2,
    prices: { asOf: "2026-11-01", currency: "USD", region: "ca-central-1", onDemandHourly: { "c7i.xlarge": 0.2, "m7i.xlarge": 0.25, "r7i.xlarge": 0.3 } },
    spotDiscount: 0.5,
    recycle: undefined,
    drainSeconds: 60,
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
        ["a burst start that is not a local time", { burstStart: "2pm" }, /capacity\.burstStart must be a local time such as 09:30 \(got "2pm"\)/],
        ["a missing launch time", { nodeLaunchSeconds: undefined }, /capacity\.nodeLaunchSeconds is required: it must be an integer from 10 to 1800/],
    ];
    for (const [what, patch, expected] of bad) {
        it(`reports ${what} for npm run capacity, naming the key, without refusing the config`, () => {
            expect(capacityProblemsOf(withCapacity(patch))).to.match(expected);
        });
    }

    it("burstStart places the day's bursts in sendingHours' time zone: 14:00 Eastern keeps production's nodes 3.5 h on the costliest day", () => {
        const cfg = parseStackConfig("production", rawConfig("production", "capacity", { burstStart: "14:00" }));
        const report = capacityReport(capacityInputs(cfg)!);
        if (typeof report === "string") throw new Error(report);
        // 14:00 EDT is 18:00 UTC; 3.5 h of peak to 21:30 UTC; on the costliest day, 1 April, the quarterly tasks' budget
        // follows sending hours' and the window closes at 01:00 UTC.
        expect(report.costs.configured).to.deep.include({ date: "2026-04-01", burstStartUtc: 18 * 60, keptHours: 3.5, releaseUtc: 25 * 60 });
    });

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
        // none of those empties, so they stay until expireAfter (24 h after the burst began: the next burst).
        expect(c.afterBurst).to.deep.equal({ pods: 4, nodes: 4, hourly: 0.5 });
        // 2 h of burst plus 30 min until emptied nodes go, then 21.5 h after the burst: 0.5 x 24 against 1 x 24.
        expect(c.configured).to.deep.include({ peakHours: 2.5, keptHours: 21.5, baselineHours: 0, keptNodeHours: 3 * 21.5, releaseUtc: undefined });
        expect(c.configured.daily.karpenter).to.be.closeTo(12, 1e-9);
        expect(c.configured.daily.saving).to.be.closeTo(12, 1e-9);
        expect(c.configured.daily.savingPercent).to.be.closeTo(50, 1e-9);
        expect(c.whenEmpty.daily.karpenter).to.be.closeTo(12, 1e-9);
        // Back to the baseline 30 min after the burst: 0.125 x 21.5 + 0.5 x 2.5.
        expect(c.backToBaseline).to.deep.include({ peakHours: 2.5, keptHours: 0, baselineHours: 21.5, releasedBy: "consolidation" });
        expect(c.backToBaseline.daily.karpenter).to.be.closeTo(3.9375, 1e-9);
        expect(c.backToBaseline.daily.savingPercent).to.be.closeTo(83.59, 0.01);
        // The 4 kept nodes were launched by the burst at 08:00 Eastern and expire together at the next one.
        expect(c.expiry).to.deep.equal({ nodes: 4, atUtc: 13 * 60, atLocal: 8 * 60, inSendingHours: true });
    });

    it("ordered by node age, a burst leaves the baseline's nodes and the nodes the headroom gathered on", () => {
        // m7i holds 4 pods of 1 cpu: 4 baseline + 2 headroom pods on 2 nodes, 16 + 2 at the peak on 5.
        const m = { ...base(), instanceTypes: ["m7i.xlarge"], baselinePods: 4, headroomPods: 2 };
        const at = (o: Partial<CapacityInputs>) => {
            const fits = typeFits({ ...m, ...o });
            return costs({ ...m, ...o }, fits, chosenType(fits)!).afterBurst.nodes;
        };
        // Unordered, the 6 remaining pods can sit one per node: all 5 of the peak.
        expect(at({ scaleDownOrdered: false })).to.equal(5);
        // Ordered: the survivors stay on the 2 baseline nodes, the 2 headroom pods on 1 more.
        expect(at({ scaleDownOrdered: true })).to.equal(3);
        // No baseline pods: only the headroom's node, which is the baseline (1 node for 2 headroom pods).
        expect(at({ scaleDownOrdered: true, baselinePods: 0 })).to.equal(1);
        // Never more than the peak had.
        expect(at({ scaleDownOrdered: true, baselinePods: 15, peakPods: 16 })).to.equal(5);
    });

    it("WhenEmpty: after a burst, at most one node per remaining pod, until the nodes expire; then the baseline", () => {
        // 2 baseline + 1 headroom pods, expireAfter 12 h; m7i holds 4 pods of 1 cpu, 3 GiB.
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 }, baselinePods: 2, headroomPods: 1, expireAfterSeconds: 12 * 3600 };
        const fits = typeFits(m);
        const c = costs(m, fits, chosenType(fits)!);
        // Baseline: 3 pods on 1 node; peak: 17 pods on 5 nodes; after: the 3 remaining pods on 3 of those 5.
        expect([c.baseline.nodes, c.peak.nodes, c.afterBurst.nodes]).to.deep.equal([1, 5, 3]);
        // Peak 2.5 h; the nodes expire 12 h after the burst began, so 9.5 h after it; 12 h at the baseline.
        expect(c.configured).to.deep.include({ peakHours: 2.5, keptHours: 9.5, baselineHours: 12, releasedBy: "expiry" });
        // 0.625 x 2.5 + 0.375 x 9.5 + 0.125 x 12 = 1.5625 + 3.5625 + 1.5; the static group is 4 m7i on demand, 24 a day.
        expect(c.configured.daily.karpenter).to.be.closeTo(6.625, 1e-9);
        expect(c.configured.daily.savingPercent).to.be.closeTo(72.40, 0.01);
        // Every day costs the same, so the first of 2026 (EST, UTC-5) is shown: the burst at 13:00 UTC, the 3 kept
        // nodes expiring at 01:00 UTC, 20:00 Eastern, outside sending hours (in summer too: 20:00 EDT).
        expect(c.configured).to.deep.include({ date: "2026-01-01", burstStartUtc: 13 * 60, releaseUtc: 25 * 60 });
        expect(c.expiry).to.deep.equal({ nodes: 3, atUtc: 60, atLocal: 20 * 60, inSendingHours: false });
        // expireAfter Never: the spread nodes stay the whole rest of the day, and nothing expires.
        const never = costs({ ...m, expireAfterSeconds: undefined }, fits, chosenType(fits)!);
        expect(never.configured).to.deep.include({ keptHours: 21.5, baselineHours: 0, releaseUtc: undefined });
        expect(never.configured.daily.karpenter).to.be.closeTo(0.625 * 2.5 + 0.375 * 21.5, 1e-9);
        expect(never.expiry).to.equal(undefined);
    });

    it("WhenEmptyOrUnderutilized with Underutilized forbidden 12:00-23:00 UTC: nodes kept until the window closes, longest on summer days", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 } };
        const budgets = [{ nodes: "10%" }, { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" }];
        const fits = typeFits(m);
        const c = costs({ ...m, consolidationPolicy: "WhenEmptyOrUnderutilized", budgets, expireAfterSeconds: undefined }, fits, chosenType(fits)!);
        // EDT (from 8 March 2026): the burst begins at 08:00 EDT = 12:00 UTC, its empty nodes go at 14:30 UTC, and
        // the 4 spread nodes wait for 23:00 UTC: 8.5 h; in winter the burst begins at 13:00 UTC, so 7.5 h.
        expect(c.configured).to.deep.include({ date: "2026-03-08", burstStartUtc: 12 * 60, releaseUtc: 23 * 60, releasedBy: "consolidation" });
        expect(c.configured).to.deep.include({ peakHours: 2.5, keptHours: 8.5, baselineHours: 13, keptNodeHours: 3 * 8.5 });
        // 0.5 x 2.5 + 0.5 x 8.5 + 0.125 x 13.
        expect(c.configured.daily.karpenter).to.be.closeTo(7.125, 1e-9);
        // The same day back to baseline: 0.5 x 2.5 + 0.125 x 21.5, the nodes gone at 14:30 UTC.
        expect(c.backToBaseline).to.deep.include({ date: "2026-03-08", releaseUtc: 14 * 60 + 30 });
        expect(c.backToBaseline.daily.karpenter).to.be.closeTo(3.9375, 1e-9);
        expect(c.expiry).to.equal(undefined);
        // Without the budget it is the back-to-baseline day; a 24 h expiry then drains the 1 surviving node at 08:00 Eastern.
        const free = costs({ ...m, consolidationPolicy: "WhenEmptyOrUnderutilized" }, fits, chosenType(fits)!);
        expect(free.configured.daily.karpenter).to.be.closeTo(3.9375, 1e-9);
        expect(free.expiry).to.deep.include({ nodes: 1, atLocal: 8 * 60, inSendingHours: true });
    });

    it("consolidateAfter Never keeps the peak all day, whatever the policy", () => {
        const m = { ...base(), instanceTypes: ["c7i.xlarge", "m7i.xlarge", "r7i.xlarge"], pod: { cpu: 1, memoryGiB: 3 } };
        const fits = typeFits(m);
        for (const consolidationPolicy of ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] as const) {
            const never = costs({ ...m, consolidationPolicy, emptyNodeSeconds: undefined }, fits, chosenType(fits)!);
            expect(never.configured).to.deep.include({ peakHours: 24, keptHours: 0, baselineHours: 0 });
            expect(never.configured.daily.karpenter).to.be.closeTo(12, 1e-9);
        }
    });

    it("the nightly batch: kept nodes that would go inside it wait for its end, and its cost is the day against Underutilized allowed in it", () => {
        // m7i.xlarge, spot 0.125: 1 baseline node, 4 at the peak, 4 after the burst (unordered), as above.
        const m = { ...base(), instanceTypes: ["m7i.xlarge"], consolidationPolicy: "WhenEmptyOrUnderutilized" as const, expireAfterSeconds: undefined };
        const budgets = [{ nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 12 * * *", duration: "11h" }, { nodes: "0", reasons: ["Underutilized", "Drifted"], schedule: "0 5 * * *", duration: "5h30m" }];
        const fits = typeFits(m);
        // Bursts at 08:00 Eastern end at 10:30 Eastern (peak until 14:30-15:30 UTC); the kept nodes go at 23:00 UTC, before
        // the nightly batch: it costs nothing that day. A node left underutilized at 05:00 UTC waits 5.5 h.
        const day = costs({ ...m, budgets }, fits, chosenType(fits)!);
        expect(day.configured.releaseUtc).to.equal(23 * 60);
        expect(day.withoutNightlyBatch.daily.karpenter).to.be.closeTo(day.configured.daily.karpenter, 1e-12);
        expect(day.nightlyWaitHours).to.equal(5.5);
        // Bursts at 00:30 Eastern (05:30 UTC in winter, 04:30 in summer), 2 h: the peak holds until 08:00 UTC (07:00 in
        // summer), inside the nightly batch, so the 4 kept nodes wait until 10:30 UTC, 2.5 h (3.5 h in summer), where
        // without it they would go at once: 3 x 0.125 more per kept hour, 0.375 x 3.5 = 1.3125 on the costliest day.
        const night = costs({ ...m, budgets, burstStart: "00:30" }, fits, chosenType(fits)!);
        expect(night.configured).to.deep.include({ burstStartUtc: 4 * 60 + 30, releaseUtc: 10 * 60 + 30, keptHours: 3.5 });
        expect(night.withoutNightlyBatch).to.deep.include({ keptHours: 0, releaseUtc: 7 * 60 });
        expect(night.configured.daily.karpenter - night.withoutNightlyBatch.daily.karpenter).to.be.closeTo(0.375 * 3.5, 1e-9);
    });

    it("recycling by hand: the nodes kept from day to day, every maxAgeDays, each paid twice for nodeLaunchSeconds plus the drain", () => {
        // m7i.xlarge: 4 pods of 1 cpu, spot 0.125; 4 baseline pods on 1 node; 16 at the peak on 4; 100 s launch, 80 s drain.
        const m = { ...base(), instanceTypes: ["m7i.xlarge"], drainSeconds: 80, recycle: { maxAgeDays: 4, schedule: "30 23 * * *", longestGapMinutes: 1440 } };
        const fits = typeFits(m);
        const budgets = [{ nodes: "0", reasons: ["Underutilized"], schedule: "0 12 * * *", duration: "11h" }];
        const c = costs({ ...m, consolidationPolicy: "WhenEmptyOrUnderutilized", budgets, expireAfterSeconds: undefined }, fits, chosenType(fits)!);
        // Released at 23:00 UTC: only the baseline's 1 node lives from day to day, replaced every 4 days, 180 s each.
        expect(c.configured.recycling).to.deep.equal({ nodes: 1, perDay: 0.25, overlapSeconds: 180, nodeHoursPerDay: 0.0125, daily: 0.0125 * 0.125 });
        // Without recycling the same day costs exactly that much less.
        const off = costs({ ...m, recycle: undefined, consolidationPolicy: "WhenEmptyOrUnderutilized", budgets, expireAfterSeconds: undefined }, fits, chosenType(fits)!);
        expect(c.configured.daily.karpenter - off.configured.daily.karpenter).to.be.closeTo(0.0125 * 0.125, 1e-12);
        // WhenEmpty without expiry keeps the 4 after-burst nodes until the next burst: all 4 live from day to day.
        expect(c.whenEmpty.recycling).to.deep.include({ nodes: 4, perDay: 1 });
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
            expect(r.output).to.match(/^ {2}after a burst, until released +\d+ \+ \d+ headroom +\d+ x \S+ +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^ {2}configured: WhenEmptyOrUnderutilized, consolidateAfter \d+m, expireAfter Never +[0-9. ]+ 01:00 UTC, consolidation +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^ {2}WhenEmpty, consolidateAfter \d+m, expireAfter Never +[0-9. ]+ at the next burst +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^ {2}back to baseline 30 minutes after a burst +[0-9. ]+ \d\d:\d\d UTC, consolidation +USD \d+\.\d\d$/m);
            expect(r.output).to.match(/^Expiry: none \(expireAfter Never\)/m);
            expect(r.output).to.match(/^ {2}Karpenter USD \d+\.\d\d, static group USD \d+\.\d\d: Karpenter saves USD \d+\.\d\d a day \(\d+ %\)\.$/m);
            expect(r.output).to.match(/^ {2}Goal: within 15 % of back to baseline 30 minutes after a burst \(USD \d+\.\d\d\): \d+ % (more|less), (met|NOT met)\.$/m);

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

    it("production's disruption policy against WhenEmpty and back to baseline, by hand (docs/capacity.md quotes it)", async () => {
        const r = await capacity(["--stack", "production", "--out", tempDir()]);
        const lines = r.output.split("\n");
        const from = lines.findIndex((l) => l.startsWith("Disruption policy, per day"));
        // m6a.2xlarge spot is 0.3852 x 0.4 = 0.15408 an hour: 9 peak nodes 1.38672, 3 kept nodes 0.46224, 2 baseline
        // nodes 0.30816. The burst begins at 08:00 EDT = 12:00 UTC (the costliest day, 1 April: in EDT, and the quarterly
        // tasks' budget follows sending hours' until 01:00 UTC); the peak holds 3.5 h. Scale-down ordered by node age
        // leaves the 12 remaining pods on the 2 baseline nodes and the 6 headroom pods on 1 more, until 01:00 UTC, 9.5 h:
        // 1.38672 x 3.5 + 0.46224 x 9.5 + 0.30816 x 11 = 12.63456. WhenEmpty keeps the 3 until the next burst: 1.38672 x
        // 3.5 + 0.46224 x 20.5 = 14.3294. Back to baseline: 1.38672 x 3.5 + 0.30816 x 20.5 = 11.1708.
        // Recycling by drift: 2 baseline nodes / 7 days, each overlapping its replacement for 120 s of launch and at most
        // the 3600 s terminationGracePeriod of drain: 2 / 7 x 3720 / 3600 = 0.2952 node-h x 0.15408 = USD 0.0455 a day
        // (3 / 7 x 3720 s = 0.4429 node-h, 0.0682, with WhenEmpty): 12.6801, 14.3977, 11.2163.
        // The nightly batch (05:00-10:30 UTC) costs nothing that day: the kept nodes go at 01:00 UTC, before it; a node
        // left underutilized at 05:00 waits 5.5 h: 5.5 x 0.15408 = 0.85.
        expect(lines.slice(from, from + 19)).to.deep.equal([
            "Disruption policy, per day (the costliest of 2026: 2026-04-01): bursts begin at 08:00 America/Toronto (12:00 UTC) and last 3 h;",
            'sending hours 08:00-18:00 America/Toronto; Underutilized forbidden by "0 12 * * *" for 11h, "0 5 * * *" for 5h30m, "0 23 1-3 1,4,7,10 *" for 2h (UTC).',
            "  policy                                                                         peak h  kept h  baseline h  kept node-h  kept nodes go             per day",
            "  configured: WhenEmptyOrUnderutilized, consolidateAfter 30m, expireAfter Never     3.5     9.5          11          9.5  01:00 UTC, consolidation  USD 12.68",
            "  WhenEmpty, consolidateAfter 30m, expireAfter Never                                3.5    20.5           0         20.5  at the next burst         USD 14.40",
            "  back to baseline 30 minutes after a burst                                         3.5       0        20.5            0  15:30 UTC, consolidation  USD 11.22",
            "  peak h: the burst and consolidateAfter; kept h: at the after-burst count; kept node-h: nodes above the baseline x kept h.",
            'Recycling (nodePool.recycle, "0 1 * * *" UTC): the 2 nodes kept from day to day are replaced every 7 days by drift, one at a time,',
            "  0.29 a day; each replacement overlaps its node for at most 3720 s (nodeLaunchSeconds 120 + the drain, at most terminationGracePeriod 3600 s):",
            '  0.2952 node-h, USD 0.0455 a day, in "per day" above. A node that never initializes or goes NotReady waits at most',
            '  24 h for the next run: up to USD 3.70 once, a fault rather than a day\'s cost, not in "per day".',
            "Nightly batch (nodePool.nightlyBatch, 05:00-10:30 Etc/UTC): no Underutilized consolidation then. The day above costs USD 12.68 with it,",
            "  USD 12.68 with Underutilized allowed in it: USD 0.00 a day, as the burst's kept nodes go before it begins. A node the nightly tasks leave",
            '  underutilized waits up to 5.5 h: up to USD 0.85 a node, not in "per day".',
            "Expiry: none (expireAfter Never); drift replaces nodes, and the budgets keep it out of sending hours and the nightly batch.",
            // The static group: 8 on-demand m6a.2xlarge at 0.3852 for 24 h, 73.9584.
            "  Karpenter USD 12.68, static group USD 73.96: Karpenter saves USD 61.28 a day (83 %).",
            // 12.6801 / 11.2163 = 1.131.
            "  Goal: within 15 % of back to baseline 30 minutes after a burst (USD 11.22): 13 % more, met.",
            // 15 % of 11.2163 is 1.6824, 10.92 node-hours at 0.15408; one node more for 9.5 h is 1.4638, which would miss it.
            "  Margin: it allows 10.92 kept node-hours a day, the model keeps 9.5; one node more for the 9.5 kept hours adds USD 1.46 (13 % of back to baseline).",
            "",
        ]);
        expect(r.output).to.include("empties the newest nodes first: the 12 pods that remain stay on the nodes the baseline ran on, and the 6 headroom");
    });

    it("production's figures before and after the node recycler: 2 baseline nodes every 7 days add USD 0.0455 a day", () => {
        const on = capacityReport(capacityInputs(stackConfig("production"))!);
        const off = capacityReport({ ...capacityInputs(stackConfig("production"))!, recycle: undefined });
        if (typeof on === "string" || typeof off === "string") throw new Error("no report");
        // 2 / 7 a day x (120 + 3600) s = 0.2952 node-h at 0.15408: 0.0455.
        expect(on.costs.configured.recycling).to.deep.include({ nodes: 2, overlapSeconds: 3720 });
        const added = (2 / 7) * (3720 / 3600) * 0.15408;
        expect(on.costs.configured.recycling!.daily).to.be.closeTo(added, 1e-12);
        expect(off.costs.configured.recycling).to.equal(undefined);
        // 1.38672 x 3.5 + 0.46224 x 9.5 + 0.30816 x 11 = 12.63456 before, 12.6801 after; back to baseline 11.1708, 11.2163.
        expect(off.costs.configured.daily.karpenter).to.be.closeTo(1.38672 * 3.5 + 0.46224 * 9.5 + 0.30816 * 11, 1e-9);
        expect(on.costs.configured.daily.karpenter).to.be.closeTo(1.38672 * 3.5 + 0.46224 * 9.5 + 0.30816 * 11 + added, 1e-9);
        expect(off.costs.backToBaseline.daily.karpenter).to.be.closeTo(1.38672 * 3.5 + 0.30816 * 20.5, 1e-9);
        expect(on.costs.backToBaseline.daily.karpenter).to.be.closeTo(1.38672 * 3.5 + 0.30816 * 20.5 + added, 1e-9);
        // WhenEmpty keeps its 3 after-burst nodes from day to day, so all 3 are recycled.
        expect(on.costs.whenEmpty.recycling).to.deep.include({ nodes: 3 });
    });

    it("the nightly batch costs production and staging nothing on the modelled day, and a node it leaves underutilized 5.5 h", () => {
        for (const [stack, spot] of [["production", 0.15408], ["staging", 0.07704]] as const) {
            const report = capacityReport(capacityInputs(stackConfig(stack))!);
            if (typeof report === "string") throw new Error(report);
            // The kept nodes go at 01:00 UTC, 4 h before it begins; its own nodes are not modelled (one burst a day).
            expect(report.costs.configured.daily.karpenter - report.costs.withoutNightlyBatch.daily.karpenter, stack).to.equal(0);
            expect(report.costs.nightlyWaitHours * spot, stack).to.be.closeTo(5.5 * spot, 1e-12);
        }
    });

    it("the recycler off: the report says nothing bounds node age", async () => {
        const dir = tempDir();
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8"));
        delete doc.config["notify-karpenter:nodePool"].recycle;
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), stringify(doc, { version: "1.1" }));
        const r = await capacity(["--stack", "staging", "--out", path.join(dir, "out")], dir);
        expect(r.output).to.match(/^Recycling: off \(nodePool\.recycle not set\): nothing bounds node age, and a node that never initializes stays until someone deletes it\.$/m);
    });

    it("without the scale-down order, the survivors hold every node of the peak and the goal is not met", async () => {
        const m = { ...capacityInputs(stackConfig("production"))!, scaleDownOrdered: false };
        const report = capacityReport(m);
        if (typeof report === "string") throw new Error(report);
        // The 18 remaining pods can hold all 9 nodes until 01:00 UTC: 1.38672 x 13 + 0.30816 x 11 = 21.4171, and the 2
        // baseline nodes' recycling 0.0455: 21.46, 91 % above 11.22; WhenEmpty keeps them until the next burst:
        // 1.38672 x 24 = 33.28, and the recycler then replaces all 9 every 7 days: 9 / 7 x 3720 s x 0.15408 = 0.2047
        // more, 33.49.
        expect(report.costs.afterBurst.nodes).to.equal(9);
        expect(report.costs.configured.keptNodeHours).to.equal(66.5);
        expect(report.costs.configured.daily.karpenter).to.be.closeTo(21.46, 0.005);
        expect(report.costs.whenEmpty.daily.karpenter).to.be.closeTo(33.49, 0.005);
    });

    it("staging's configured policy is within 15 % of back to baseline too", async () => {
        const report = capacityReport(capacityInputs(stackConfig("staging"))!);
        if (typeof report === "string") throw new Error(report);
        // m6a.xlarge spot 0.07704: 13 peak nodes 1.00152, 3 baseline nodes + 1 for the 2 headroom pods 0.30816, 3
        // baseline 0.23112, until 01:00 UTC on 1 April: 1.00152 x 3.5 + 0.30816 x 9.5 + 0.23112 x 11 = 8.9752, against
        // 1.00152 x 3.5 + 0.23112 x 20.5 = 8.2433; recycling the 3 baseline nodes adds 3 / 7 x 3720 / 3600 x 0.07704 =
        // 0.0341 to each: 9.01 against 8.28 (9 % more).
        expect(report.costs.afterBurst.nodes).to.equal(4);
        expect(report.costs.configured.daily.karpenter).to.be.closeTo(9.01, 0.005);
        expect(report.costs.backToBaseline.daily.karpenter).to.be.closeTo(8.28, 0.005);
    });

    it("a later burst and the old WhenEmpty with a 24 h expiry: the expiry wave is named, with the whole burst in it", async () => {
        // The config refuses a 24 h expiry (it drains in sending hours), so this feeds the model directly.
        const cfg = stackConfig("production");
        // Without the scale-down order: the whole burst's 9 nodes stay and expire together.
        const m = { ...capacityInputs(cfg)!, scaleDownOrdered: false, consolidationPolicy: "WhenEmpty" as const, expireAfterSeconds: 24 * 3600, burstStart: "14:00" };
        const report = capacityReport(m);
        if (typeof report === "string") throw new Error(report);
        expect(report.costs.expiry).to.deep.equal({ nodes: 9, atUtc: 19 * 60, atLocal: 14 * 60, inSendingHours: true });
        // A burst at 14:00 EDT (18:00 UTC) under the configured policy keeps 9 nodes from 21:30 to 01:00 UTC on the
        // costliest day (1 April, the quarterly tasks' budget): 1.38672 x (3.5 + 3.5) + 0.30816 x 17 = 14.9458, and
        // recycling 0.0455: 14.99.
        const later = capacityReport({ ...capacityInputs(cfg)!, scaleDownOrdered: false, burstStart: "14:00" });
        if (typeof later === "string") throw new Error(later);
        expect(later.costs.configured).to.deep.include({ keptHours: 3.5, releaseUtc: 25 * 60 });
        expect(later.costs.configured.daily.karpenter).to.be.closeTo(14.99, 0.005);
    });

    it("exits 1 when the limits do not allow the peak, and says what would", async () => {
        // A copy of the staging stack file with a 40-cpu limit, in a directory of its own.
        const dir = tempDir();
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8"));
        doc.config["notify-karpenter:nodePool"].limits.cpu = "40";
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), stringify(doc, { version: "1.1" }));
        const r = await capacity(["--stack", "staging", "--out", path.join(dir, "out")], dir);
        expect(r.exitCode).to.equal(1);
        // 40 cpu is 10 nodes of 4 vCPU; c6a.xlarge (4 pods each) needs 16 nodes for 62 pods (64 cpu), r6a.xlarge 13 nodes of 29.6 GiB.
        expect(r.output).to.match(/^NodePool limits allow 10 nodes of m6a\.xlarge \(50 pods\): NOT ENOUGH for 62 pods, not even with m6a\.xlarge\. Limits of cpu 64 and memory 385Gi allow the peak with every approved type\.$/m);
        expect(r.output).to.match(/^The HPAs ask for 60 pods at t=225 s, but only 50 ever run: the NodePool limits stop Karpenter\.$/m);
        // --findings: the finding and the verdict alone; --json: the same finding in the report's list.
        const findings = await capacity(["--stack", "staging", "--out", path.join(dir, "out"), "--findings"], dir);
        expect(findings.exitCode).to.equal(1);
        expect(findings.output.split("\n")).to.deep.equal([
            "Capacity of stack staging: findings only",
            "FAIL  NodePool limits allow 10 nodes of m6a.xlarge (50 pods): NOT ENOUGH for 62 pods, not even with m6a.xlarge. Limits of cpu 64 and memory 385Gi allow the peak with every approved type.",
            "FAILED: the NodePool limits fall short of the peak",
        ]);
        const json = JSON.parse((await capacity(["--stack", "staging", "--out", path.join(dir, "out"), "--json"], dir)).output);
        expect(json.findings).to.deep.equal([{ status: "fail", message: findings.output.split("\n")[1].slice(6) }]);
        expect(json.limits).to.deep.include({ cpu: "40", enough: false, allowedNodes: 10 });
        expect(json.ramp.allRunningAtSeconds).to.equal(null);
    });

    it("--json: the model in the documented schema (docs/json-output.md), the same figures as the text", async () => {
        const out = tempDir();
        const text = await capacity(["--stack", "production", "--out", out]);
        const r = await capacity(["--stack", "production", "--out", out, "--json"]);
        expect(r).to.deep.include({ exitCode: 0, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "cluster", "exitCode", "currency", "pricesAsOf", "modelledType", "instanceTypes", "notModelled", "peak", "limits", "ramp", "hourly", "daily", "goal", "expiry", "findings", "files"]);
        expect(Object.keys(report), "docs/json-output.md's table for capacity").to.deep.equal(documentedFields("capacity"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "capacity", stack: "production", currency: "USD", modelledType: "m6a.2xlarge", findings: [], expiry: null });
        const usd = (n: number) => `USD ${n.toFixed(2)}`;
        for (const [name, day] of [["configured", report.daily.configured], ["WhenEmpty", report.daily.whenEmpty], ["back to baseline", report.daily.backToBaseline]]) {
            expect(text.output, name).to.match(new RegExp(`^  ${name === "configured" ? "configured: " : name === "WhenEmpty" ? "WhenEmpty, " : "back to baseline "}.* ${usd(day.perDay).replace(".", "\\.")}$`, "m"));
        }
        expect(text.output).to.include(`static group ${usd(report.daily.static)}`);
        expect(report.peak).to.deep.equal({ burstPods: 100, headroomPods: 6, nodes: 9, podsPerNode: 13 });
        expect(report.goal).to.deep.include({ withinPercent: 15, met: true });
        expect(report.instanceTypes[0]).to.have.keys("type", "vcpu", "memoryGiB", "podsPerNode", "boundBy", "onDemandHourly", "spotHourly", "spotPerPodHourly", "peakNodes", "limitNodes");
        expect(report.files).to.deep.equal([path.join(out, "ramp.svg"), path.join(out, "ramp.csv")]);
        // No finding: --findings says so in one verdict line.
        expect((await capacity(["--stack", "production", "--out", out, "--findings"])).output).to.equal("Capacity of stack production: findings only\nOK: the limits allow the peak");
    });

    it("refuses bad arguments and unknown stacks with usage, exit 2", async () => {
        expect(await capacity(["--stack", "prod"])).to.deep.include({ exitCode: 2 });
        expect((await capacity(["--stack", "prod"])).output).to.match(/^--stack: unknown stack "prod": known stacks are .*production.*staging; did you mean "production"\?\nusage: npm run capacity/);
        expect((await capacity([])).output).to.match(/^--stack is required/);
        expect((await capacity(["--stack"])).output).to.match(/^--stack needs a value/);
        expect((await capacity(["--stak", "staging"])).output).to.match(/^unknown flag --stak: the flags are --stack, --out, --json, --findings\n/);
    });
});
