// The capacity and cost model of a stack, once ops/capacityCli.ts has read the flags: the report, its files and JSON.
import * as path from "path";
import { VM_MEMORY_OVERHEAD, instanceShape } from "../components/models/nodePool.ts";
import type { StackConfig } from "../stacks/config.ts";
import { MODEL_YEAR, utcClock } from "../components/models/disruptionBudgets.ts";
import { type CapacityReport, type Daily, type PolicyDay, capacityInputs, capacityReport } from "./capacity.ts";
import { type CommandResult, EXIT, isResult, usage, valueOf } from "../cli/args.ts";
import { loadStack } from "../stacks/validatedConfig.ts";
import { jsonText } from "../cli/output.ts";
import { outFilesProblem, writeFiles } from "../cli/outDir.ts";
import { toCsv } from "../cli/csv.ts";
import { lineChart, steps } from "../cli/svg.ts";
import { plural, table } from "../cli/table.ts";
import type { CommandLine } from "../cli/args.ts";
import { CAPACITY } from "./capacityCli.ts";

/** The files capacity writes into --out. */
const CAPACITY_FILES = ["ramp.svg", "ramp.csv"];

/** The model, once ops/capacityCli.ts has read the flags. */
export async function model(line: CommandLine, dir: string, findingsOnly: boolean, json: boolean): Promise<CommandResult> {
    const cfg = loadStack(valueOf(line, "stack"), CAPACITY, dir);
    if (isResult(cfg)) return cfg;
    const badOut = outFilesProblem(valueOf(line, "out") ?? path.join("capacity-out", cfg.stack), CAPACITY_FILES, { command: "capacity" });
    if (badOut) return usage(badOut, CAPACITY);
    if (cfg.capacityProblems.length) {
        return { exitCode: EXIT.findings, output: [`${cfg.stack}: the capacity section cannot be modelled:`, ...cfg.capacityProblems.map((i) => `  notify-karpenter:${i.path} ${i.message}`)].join("\n") };
    }
    const inputs = capacityInputs(cfg);
    if (!inputs) return { exitCode: EXIT.findings, output: `${cfg.stack}: notify-karpenter:capacity is not set in Pulumi.${cfg.stack}.yaml; the model needs it (see docs/capacity.md)` };
    const report = capacityReport(inputs);
    if (typeof report === "string") return { exitCode: EXIT.findings, output: `${cfg.stack}: ${report}` };

    const out = valueOf(line, "out") ?? path.join("capacity-out", cfg.stack);
    const r = report.ramp.points;
    const unwritable = writeFiles(
        out,
        {
            "ramp.svg": rampChart(cfg.stack, report),
            "ramp.csv": toCsv(["t_seconds", "desired_pods", "running_pods", "ready_nodes", "launching_nodes"], r.map((p) => [p.t, p.desired, p.running, p.nodes, p.launching])),
        },
        "--out",
        { command: "capacity", stack: cfg.stack },
    );
    if (unwritable) return { exitCode: EXIT.cannotCheck, output: unwritable };
    const files = [path.join(out, "ramp.svg"), path.join(out, "ramp.csv")];
    const enough = report.limits.chosenOk && report.limits.shortTypes.length === 0;
    const exitCode = enough ? EXIT.ok : EXIT.findings;
    const findings = capacityFindings(cfg, report);
    if (json) return { exitCode, format: "json", output: jsonText("capacity", capacityJson(cfg, report, exitCode, findings, files)) };
    if (findingsOnly) {
        const verdict = findings.some((f) => f.status === "fail") ? "FAILED: the NodePool limits fall short of the peak" : `OK: the limits allow the peak${findings.length ? ` (${plural(findings.length, "warning")})` : ""}`;
        return { exitCode, output: [`Capacity of stack ${cfg.stack}: findings only`, ...findings.map((f) => `${f.status.toUpperCase().padEnd(4)}  ${f.message}`), verdict].join("\n") };
    }
    const lines = [...render(cfg, report), "", `Wrote ${files.join(" and ")}`];
    return { exitCode, output: lines.join("\n") };
}

/** What the model finds wrong: limits short of the peak (the exit code's), and what costs more than it should. */
export function capacityFindings(cfg: StackConfig, report: CapacityReport): { status: "warn" | "fail"; message: string }[] {
    const c = report.costs;
    const over = (100 * (c.configured.daily.karpenter - c.backToBaseline.daily.karpenter)) / c.backToBaseline.daily.karpenter;
    return [
        ...(report.limits.chosenOk && report.limits.shortTypes.length === 0 ? [] : [{ status: "fail" as const, message: limitsLine(report) }]),
        ...(over > GOAL_PERCENT ? [{ status: "warn" as const, message: `the configured policy costs ${Math.round(over)} % more a day than back to baseline 30 minutes after a burst: the goal is within ${GOAL_PERCENT} %` }] : []),
        ...(c.expiry?.inSendingHours ? [{ status: "warn" as const, message: `expiry wave: ${plural(c.expiry.nodes, "node")} of one burst expire together at ${utcClock(c.expiry.atUtc)} UTC, inside sending hours on some days, regardless of budgets` }] : []),
        ...(report.unknownTypes.length ? [{ status: "warn" as const, message: `not modelled (unknown shape): ${report.unknownTypes.join(", ")}` }] : []),
    ];
}

/** The report as JSON (docs/json-output.md, capacity). Money in the prices' currency, unrounded; times in seconds. */
function capacityJson(cfg: StackConfig, report: CapacityReport, exitCode: number, findings: ReturnType<typeof capacityFindings>, files: string[]) {
    const { inputs: m, chosen, limits, ramp, costs: c } = report;
    const day = (d: PolicyDay) => ({
        perDay: d.daily.karpenter,
        peakHours: d.peakHours,
        keptHours: d.keptHours,
        baselineHours: d.baselineHours,
        keptNodeHours: d.keptNodeHours,
        keptNodesGo: d.releaseUtc === undefined ? null : { utc: utcClock(d.releaseUtc), by: d.releasedBy },
        recyclingPerDay: d.recycling?.daily ?? 0,
    });
    const over = (100 * (c.configured.daily.karpenter - c.backToBaseline.daily.karpenter)) / c.backToBaseline.daily.karpenter;
    return {
        stack: cfg.stack,
        cluster: cfg.cluster.name,
        exitCode,
        currency: m.prices.currency,
        pricesAsOf: m.prices.asOf,
        modelledType: chosen.type,
        instanceTypes: [...report.fits]
            .sort((a, b) => a.spotPerPod - b.spotPerPod || a.type.localeCompare(b.type))
            .map((f) => ({
                type: f.type,
                vcpu: f.capacity.cpu,
                memoryGiB: instanceShape(f.type)!.memoryGiB,
                podsPerNode: f.podsPerNode,
                boundBy: f.boundBy,
                onDemandHourly: f.onDemandHourly,
                spotHourly: f.spotHourly,
                spotPerPodHourly: f.podsPerNode > 0 ? f.spotPerPod : null,
                peakNodes: Number.isFinite(f.peakNodes) ? f.peakNodes : null,
                limitNodes: f.limitNodes,
            })),
        notModelled: report.unknownTypes,
        peak: { burstPods: m.peakPods, headroomPods: m.headroomPods, nodes: chosen.peakNodes, podsPerNode: chosen.podsPerNode },
        limits: { cpu: cfg.nodePool.limits.cpu, memory: cfg.nodePool.limits.memory, allowedNodes: chosen.limitNodes, enough: limits.chosenOk && limits.shortTypes.length === 0, shortTypes: limits.shortTypes, needed: limits.needed },
        ramp: { hpaPeakAtSeconds: ramp.hpaPeakAt, allRunningAtSeconds: ramp.peakAt ?? null, points: ramp.points },
        hourly: {
            baseline: { burstPods: m.baselinePods, headroomPods: m.headroomPods, nodes: c.baseline.nodes, cost: c.baseline.hourly },
            peak: { burstPods: m.peakPods, headroomPods: m.headroomPods, nodes: c.peak.nodes, cost: c.peak.hourly },
            afterBurst: { burstPods: m.baselinePods, headroomPods: m.headroomPods, nodes: c.afterBurst.nodes, cost: c.afterBurst.hourly },
            static: { burstPods: m.peakPods, type: c.static.type, nodes: c.static.nodes, cost: c.static.hourly },
        },
        daily: {
            date: c.configured.date,
            configured: day(c.configured),
            whenEmpty: day(c.whenEmpty),
            backToBaseline: day(c.backToBaseline),
            nightlyBatchPerDay: c.configured.daily.karpenter - c.withoutNightlyBatch.daily.karpenter,
            static: c.configured.daily.static,
            saving: c.configured.daily.saving,
            savingPercent: c.configured.daily.savingPercent,
        },
        goal: { withinPercent: GOAL_PERCENT, overPercent: over, met: over <= GOAL_PERCENT },
        expiry: c.expiry ? { nodes: c.expiry.nodes, utc: utcClock(c.expiry.atUtc), inSendingHours: c.expiry.inSendingHours } : null,
        findings,
        files,
    };
}

/** The cost goal: the configured policy's day within this many percent of back to baseline 30 minutes after a burst. */
const GOAL_PERCENT = 15;

/** The report as a platform engineer reads it: per-type table, peak and limits, ramp-up, cost. */
export function render(cfg: StackConfig, report: CapacityReport): string[] {
    const { inputs: m, chosen, ramp, costs: c } = report;
    const check = cfg.nodePool.capacityCheck!;
    const p = cfg.nodePool;
    const money = (n: number) => `${m.prices.currency} ${n.toFixed(2)}`;
    const reserved = [p.kubeReserved && `kubeReserved ${fmtMap(p.kubeReserved)}`, p.systemReserved && `systemReserved ${fmtMap(p.systemReserved)}`, p.evictionHard && `evictionHard ${fmtMap(p.evictionHard)}`];
    const lines = [
        `Capacity of stack ${cfg.stack} (${cfg.cluster.name}), modelled from config`,
        "",
        `One burst Celery pod requests ${check.celeryPodCpu} cpu, ${check.celeryPodMemory}; the daemonsets ${check.daemonsetCpu} cpu, ${check.daemonsetMemory} per node.`,
        `Allocatable is the node less ${VM_MEMORY_OVERHEAD * 100} % of memory (Karpenter's VM overhead) and ${reserved.filter(Boolean).join(", ") || "no kubelet reservations"}.`,
        `Prices: on-demand Linux, ${m.prices.region}, ${m.prices.currency} per hour, as of ${m.prices.asOf} (an approximate snapshot; see docs/configuring.md, capacity). Spot: on-demand less ${Math.round(m.spotDiscount * 100)} %.`,
        "",
        ...table(
            ["  type", "vCPU", "GiB", "alloc cpu", "alloc GiB", "pod cpu", "pod GiB", "pods/node", "on-demand", "spot", "spot/pod", "peak nodes", "limit nodes"],
            [...report.fits].sort((a, b) => a.spotPerPod - b.spotPerPod || a.type.localeCompare(b.type)).map((f) => [
                `${f === chosen ? "*" : " "} ${f.type}`,
                f.capacity.cpu,
                instanceShape(f.type)!.memoryGiB,
                fixed(f.allocatable.cpu),
                fixed(f.allocatable.memoryGiB),
                fixed(f.forPods.cpu),
                fixed(f.forPods.memoryGiB),
                `${f.podsPerNode} (${f.boundBy})`,
                fixed(f.onDemandHourly, 4),
                fixed(f.spotHourly, 4),
                f.podsPerNode > 0 ? fixed(f.spotPerPod, 4) : "-",
                Number.isFinite(f.peakNodes) ? f.peakNodes : "-",
                f.limitNodes,
            ]),
            "",
        ),
        `  alloc: after kubelet reservations; pod: left for Celery pods after the daemonsets; spot/pod: spot price per pod and hour;`,
        `  peak nodes: for ${m.peakPods} pods + ${m.headroomPods} headroom; limit nodes: the most the NodePool limits (cpu ${p.limits.cpu}, memory ${p.limits.memory}) allow.`,
        ...(report.unknownTypes.length ? [`  Not modelled (unknown shape): ${report.unknownTypes.join(", ")}.`] : []),
        "",
        `Karpenter's type, as modelled: ${chosen.type} (*), the lowest spot price per pod. Karpenter asks EC2 for every approved type that fits and`,
        `EC2's price-capacity-optimized choice decides, so real nodes mix types; the rows above show each one.`,
        "",
        `Peak: ${m.peakPods} burst pods + ${m.headroomPods} headroom need ${chosen.peakNodes} nodes of ${chosen.type} (${chosen.podsPerNode} pods each).`,
        limitsLine(report),
        "",
        `Ramp-up, modelled: the HPAs add ${m.hpa.pods * m.hpa.deployments} pods per ${m.hpa.periodSeconds} s (${m.hpa.pods} pods x ${m.hpa.deployments} Deployments) after ${m.hpa.stabilizationSeconds} s of stabilization;`,
        `${m.headroomPods} headroom pods; Karpenter batches ${m.batchIdleSeconds} s idle / ${m.batchMaxSeconds} s max; a new node takes ${m.nodeLaunchSeconds} s to take pods. t=0: the burst begins.`,
        ...table(
            ["t (s)", "desired pods", "running pods", "pending", "ready nodes", "launching"],
            ramp.points.map((x) => [x.t, x.desired, x.running, x.desired - x.running, x.nodes, x.launching]),
        ),
        ramp.peakAt === undefined
            ? `The HPAs ask for ${m.peakPods} pods at t=${ramp.hpaPeakAt} s, but only ${ramp.points[ramp.points.length - 1].running} ever run: the NodePool limits stop Karpenter.`
            : `The HPAs ask for ${m.peakPods} pods at t=${ramp.hpaPeakAt} s; all run at t=${ramp.peakAt} s (new nodes add ${ramp.peakAt - ramp.hpaPeakAt} s).`,
        "",
        `Cost per hour of the burst capacity (the stable node group costs the same either way):`,
        ...table(
            ["", "pods", "nodes", "per hour"],
            [
                ["baseline, Karpenter spot", `${m.baselinePods} + ${m.headroomPods} headroom`, `${c.baseline.nodes} x ${chosen.type}`, money(c.baseline.hourly)],
                ["peak, Karpenter spot", `${m.peakPods} + ${m.headroomPods} headroom`, `${c.peak.nodes} x ${chosen.type}`, money(c.peak.hourly)],
                [`after a burst, until released`, `${m.baselinePods} + ${m.headroomPods} headroom`, `${c.afterBurst.nodes} x ${chosen.type}`, money(c.afterBurst.hourly)],
                ["static on-demand group for the peak", `${m.peakPods}`, `${c.static.nodes} x ${c.static.type}`, money(c.static.hourly)],
            ],
        ),
        `After a burst only empty nodes go until the nodes are released (consolidation, once the budgets allow Underutilized,`,
        ...(m.scaleDownOrdered
            ? [
                  `or expiry): the burst pods carry a deletion cost by node age (placement.burst.scaleDownOrder), so the HPAs' scale-down`,
                  `empties the newest nodes first: the ${m.baselinePods} pods that remain stay on the nodes the baseline ran on, and the ${m.headroomPods} headroom`,
                  `pods re-created during the burst gather on as few nodes as they fill: ${plural(c.afterBurst.nodes, "node")} in all.`,
              ]
            : [
                  `or expiry): the HPAs' scale-down deletes pods from the most crowded nodes first, so the ${m.baselinePods + m.headroomPods} pods that remain can hold up to`,
                  `${plural(c.afterBurst.nodes, "node")} (one pod each${c.afterBurst.nodes === c.peak.nodes ? ": every node of the peak" : ""}).`,
              ]),
        "",
        ...policyLines(cfg, report, money),
    ];
    return lines;
}

/** The disruption policy's day beside WhenEmpty and "back to the baseline 30 minutes after a burst", the expiry wave and the goal. */
function policyLines(cfg: StackConfig, r: CapacityReport, money: (n: number) => string): string[] {
    const { inputs: m, costs: c } = r;
    const p = cfg.nodePool;
    const h = (hours: number) => `${Number(hours.toFixed(2))}`;
    const at = (d: PolicyDay) =>
        d.releaseUtc === undefined ? "at the next burst" : `${utcClock(d.releaseUtc)} UTC, ${d.releasedBy}`;
    const row = (name: string, d: PolicyDay) => [name, h(d.peakHours), h(d.keptHours), h(d.baselineHours), h(d.keptNodeHours), at(d), money(d.daily.karpenter)];
    const over = (100 * (c.configured.daily.karpenter - c.backToBaseline.daily.karpenter)) / c.backToBaseline.daily.karpenter;
    const expiry = c.expiry;
    const allowedNodeHours = (0.15 * c.backToBaseline.daily.karpenter) / r.chosen.spotHourly;
    const budgets = p.budgets.filter((b) => b.nodes.replace("%", "") === "0" && (!b.reasons || b.reasons.includes("Underutilized")));
    return [
        `Disruption policy, per day (the costliest of ${MODEL_YEAR}: ${c.configured.date}): bursts begin at ${m.burstStart} ${m.sendingHours.timeZone} (${utcClock(c.configured.burstStartUtc)} UTC) and last ${m.burstHoursPerDay} h;`,
        `sending hours ${m.sendingHours.start}-${m.sendingHours.end} ${m.sendingHours.timeZone}; Underutilized forbidden by ${budgets.length ? budgets.map((b) => `"${b.schedule ?? "always"}" for ${b.duration ?? "ever"}`).join(", ") : "no budget"} (UTC).`,
        ...table(
            ["policy", "peak h", "kept h", "baseline h", "kept node-h", "kept nodes go", "per day"],
            [
                row(`configured: ${p.consolidationPolicy}, consolidateAfter ${p.consolidateAfter}, expireAfter ${p.expireAfter}`, c.configured),
                row(`WhenEmpty, consolidateAfter ${p.consolidateAfter}, expireAfter ${p.expireAfter}`, c.whenEmpty),
                row(`back to baseline 30 minutes after a burst`, c.backToBaseline),
            ],
        ),
        `  peak h: the burst and consolidateAfter; kept h: at the after-burst count; kept node-h: nodes above the baseline x kept h.`,
        ...recyclingLines(r, money),
        ...nightlyLines(r, money),
        expiry === undefined
            ? `Expiry: none (expireAfter Never); drift replaces nodes, and the budgets keep it out of sending hours and the nightly batch.`
            : `Expiry wave: ${plural(expiry.nodes, "node")} of one burst expire together at ${utcClock(expiry.atUtc)} UTC (${utcClock(expiry.atLocal)} local), regardless of budgets; ` +
              (expiry.inSendingHours ? "INSIDE sending hours on some days." : "outside sending hours."),
        `  Karpenter ${money(c.configured.daily.karpenter)}, static group ${money(c.configured.daily.static)}: Karpenter ${saving(c.configured.daily, money)}.`,
        `  Goal: within 15 % of back to baseline 30 minutes after a burst (${money(c.backToBaseline.daily.karpenter)}): ${over >= 0 ? `${Math.round(over)} % more` : `${Math.round(-over)} % less`}, ${over <= 15 ? "met" : "NOT met"}.`,
        ...(over <= 15
            ? [
                  // The kept count is a model (docs/capacity.md); say what one node more than modelled would do.
                  `  Margin: it allows ${h(allowedNodeHours)} kept node-hours a day, the model keeps ${h(c.configured.keptNodeHours)}; one node more for the ${h(c.configured.keptHours)} kept hours adds ${money(r.chosen.spotHourly * c.configured.keptHours)} (${Math.round((100 * r.chosen.spotHourly * c.configured.keptHours) / c.backToBaseline.daily.karpenter)} % of back to baseline).`,
              ]
            : [`  It allows ${h(allowedNodeHours)} kept node-hours a day, not ${h(c.configured.keptNodeHours)}: bursts ending nearer the end of the budget window, or fewer nodes kept after one.`]),
    ];
}

/** What the node recycler replaces and costs under the configured policy, or that it is off. */
function recyclingLines(r: CapacityReport, money: (n: number) => string): string[] {
    const { inputs: m, costs: c } = r;
    const rc = c.configured.recycling;
    if (!m.recycle || !rc) return [`Recycling: off (nodePool.recycle not set): nothing bounds node age, and a node that never initializes stays until someone deletes it.`];
    const precise = (n: number) => `${m.prices.currency} ${n.toFixed(4)}`;
    const waitHours = m.recycle.longestGapMinutes / 60;
    return [
        `Recycling (nodePool.recycle, "${m.recycle.schedule}" UTC): the ${plural(rc.nodes, "node")} kept from day to day ${rc.nodes === 1 ? "is" : "are"} replaced every ${m.recycle.maxAgeDays} days by drift, one at a time,`,
        `  ${Number(rc.perDay.toFixed(2))} a day; each replacement overlaps its node for at most ${rc.overlapSeconds} s (nodeLaunchSeconds ${m.nodeLaunchSeconds} + the drain, at most terminationGracePeriod ${m.drainSeconds} s):`,
        `  ${Number(rc.nodeHoursPerDay.toFixed(4))} node-h, ${precise(rc.daily)} a day, in "per day" above. A node that never initializes or goes NotReady waits at most`,
        `  ${Number(waitHours.toFixed(2))} h for the next run: up to ${money(waitHours * r.chosen.spotHourly)} once, a fault rather than a day's cost, not in "per day".`,
    ];
}

/** What keeping consolidation out of the nightly batch costs on the configured day, and a node it leaves waiting. */
function nightlyLines(r: CapacityReport, money: (n: number) => string): string[] {
    const { inputs: m, costs: c } = r;
    const n = m.nightlyBatch;
    const cost = c.configured.daily.karpenter - c.withoutNightlyBatch.daily.karpenter;
    const why = cost < 0.005 ? "the burst's kept nodes go before it begins" : "the burst's kept nodes wait for it to end";
    return [
        `Nightly batch (nodePool.nightlyBatch, ${n.start}-${n.end} ${n.timeZone}): no Underutilized consolidation then. The day above costs ${money(c.configured.daily.karpenter)} with it,`,
        `  ${money(c.withoutNightlyBatch.daily.karpenter)} with Underutilized allowed in it: ${money(cost)} a day, as ${why}. A node the nightly tasks leave`,
        `  underutilized waits up to ${Number(c.nightlyWaitHours.toFixed(2))} h: up to ${money(c.nightlyWaitHours * r.chosen.spotHourly)} a node, not in "per day".`,
    ];
}

/** "saves USD 1.00 a day (50 %)", or "costs USD 1.00 a day more (10 %)" when the static group is cheaper; or "saving ...", "costing ...". */
function saving(d: Daily, money: (n: number) => string, form: "saves" | "saving" = "saves"): string {
    const [save, cost] = form === "saves" ? ["saves", "costs"] : ["saving", "costing"];
    return d.saving >= 0 ? `${save} ${money(d.saving)} a day (${Math.round(d.savingPercent)} %)` : `${cost} ${money(-d.saving)} a day more (${Math.round(-d.savingPercent)} %)`;
}

function limitsLine(r: CapacityReport): string {
    const { chosen, limits, inputs: m } = r;
    const allow = `NodePool limits allow ${chosen.limitNodes} nodes of ${chosen.type} (${chosen.limitNodes * chosen.podsPerNode} pods)`;
    if (!limits.chosenOk || limits.shortTypes.length) {
        const which = limits.chosenOk ? `not with ${limits.shortTypes.join(", ")}, which Karpenter may also launch` : `not even with ${chosen.type}`;
        return `${allow}: NOT ENOUGH for ${m.peakPods + m.headroomPods} pods, ${which}. Limits of cpu ${limits.needed.cpu} and memory ${limits.needed.memoryGiB}Gi allow the peak with every approved type.`;
    }
    return `${allow}: enough for the peak, with every approved type.`;
}

function rampChart(stack: string, r: CapacityReport): string {
    // Hold the last values a little, so the final step shows.
    const last = r.ramp.points[r.ramp.points.length - 1];
    const pts = [...r.ramp.points, { ...last, t: last.t + r.inputs.hpa.periodSeconds }];
    return lineChart({
        title: `Modelled burst ramp-up, stack ${stack} (${r.chosen.type})`,
        xLabel: "seconds since the burst began",
        yLabel: "pods / nodes",
        series: [
            { name: "desired pods", points: steps(pts.map((p) => [p.t, p.desired])) },
            { name: "running pods", points: steps(pts.map((p) => [p.t, p.running])) },
            { name: "ready nodes", points: steps(pts.map((p) => [p.t, p.nodes])) },
        ],
    });
}

const fixed = (n: number, digits = 2) => n.toFixed(digits);
const fmtMap = (m: Record<string, string>) => Object.entries(m).map(([k, v]) => `${k} ${v}`).join(", ");

