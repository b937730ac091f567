// Every count and figure README.md and docs/ quote from a command's output, held to what the command prints now
// (issue 23, item 2): resources planned per stack and per component, alarms, metric filters, policies, protected
// resources, the stack diff, the capacity model's figures, the bad-input count, preflight's timeout. Each test is
// named after the file, line and number, and says what the command prints now; a changed program or config fails
// here until the docs say the same. Measurements (how long a plan or the suite took) are not kept in the docs.
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { pathToFileURL } from "url";
import { capacity } from "../ops/capacityCli.ts";
import { capacityInputs, capacityReport } from "../ops/capacity.ts";
import { MAX_TASK_WINDOW_HOURS, TASK_WINDOW_HOURS } from "../ops/preflight.ts";
import { REACH_TIMEOUT_MS, TASK_QUERY_TIMING } from "../ops/preflightChecks.ts";
import { DEADLINES } from "../ops/deadlines.ts";
import { plan } from "../plan/cli.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { stackConfig } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";

type Value = string | number;

/** What the commands print now, gathered once. */
interface Outputs {
    /** `npm run plan -- --stack <s> --json`, with the summary.txt and preview.json it wrote. */
    plan: Record<string, { json: any; summaryTxt: string; preview: any }>;
    /** `npm run plan -- --diff staging production`. */
    diff: string;
    /** `npm run capacity -- --stack <s> --json`, and its text. */
    capacity: Record<string, { json: any; text: string }>;
    /** What tests/badInput.spec.ts prints: "bad inputs: N (...)". */
    badInputs: number;
}

/** A number or a figure a doc quotes, where it is, and how to get it from the commands. */
interface Claim {
    file: string;
    /** Matches the claim exactly once; each capture group is one number (digits, or a word such as "five"). */
    pattern: RegExp;
    /** What the numbers are, in a few words. */
    what: string;
    /** The command that prints them. */
    command: string;
    now: (o: Outputs) => Value[];
}

const STACKS = ["staging", "production", "scratch"] as const;

const plans = (s: string) => `npm run plan -- --stack ${s}`;
const capacities = (s: string) => `npm run capacity -- --stack ${s}`;
/** Resources of a short type (`MetricAlarm`) in one stack's plan, over every component. */
const ofType = (o: Outputs, stack: string, type: string) => o.plan[stack].json.resources.byComponent.reduce((n: number, c: any) => n + (c.types[type] ?? 0), 0);
/** A component's resources (`KarpenterController`) in one stack's plan. */
const inComponent = (o: Outputs, stack: string, component: string, type?: string) => {
    const c = o.plan[stack].json.resources.byComponent.find((x: any) => x.component.split(" ")[0] === component);
    return c ? (type ? (c.types[type] ?? 0) : c.total) : 0;
};
const usd = (n: number, digits = 2) => n.toFixed(digits);
const cap = (o: Outputs, stack: string) => o.capacity[stack].json;

const CLAIMS: Claim[] = [
    {
        file: "docs/configuration-notes.md",
        pattern: /It feeds (\d+) bad inputs \(the count it prints/,
        what: "bad inputs",
        command: "npm test (tests/badInput.spec.ts)",
        now: (o) => [o.badInputs],
    },
    // The scratch stack file's comments on its limits (the issue found them stale once).
    {
        file: "Pulumi.scratch.yaml",
        pattern: /# At most (\w+) 4-vCPU spot nodes\./,
        what: "4-vCPU nodes the cpu limit allows",
        command: capacities("scratch"),
        now: (o) => [Math.min(...cap(o, "scratch").instanceTypes.filter((t: any) => t.vcpu === 4).map((t: any) => t.limitNodes))],
    },
    {
        file: "Pulumi.scratch.yaml",
        pattern: /# With (\d+) headroom pods, (\d+) nodes of the smallest approved shape \((\d+) Celery pods each\) within the cpu limit of (\d+)\./,
        what: "headroom pods, and the peak in nodes of the smallest shape",
        command: capacities("scratch"),
        now: (o) => {
            const c = cap(o, "scratch");
            const smallest = [...c.instanceTypes].sort((a: any, b: any) => a.podsPerNode - b.podsPerNode)[0];
            return [c.peak.headroomPods, Math.ceil((c.peak.burstPods + c.peak.headroomPods) / smallest.podsPerNode), smallest.podsPerNode, Number(c.limits.cpu)];
        },
    },
    // docs/architecture.md
    {
        file: "docs/architecture.md",
        pattern: /with the (\w+) managed policies of the v1\.14\.1 reference template \((\d+) distinct actions/,
        what: "the controller's policies and their distinct actions",
        command: `${plans("staging")} (preview.json)`,
        now: (o) => {
            const policies = o.plan.staging.preview.steps.filter((s: any) => s.newState.type === "aws:iam/policy:Policy");
            const actions = new Set(policies.flatMap((s: any) => JSON.parse(s.newState.inputs.policy).Statement.flatMap((st: any) => [].concat(st.Action))));
            return [inComponent(o, "staging", "KarpenterController", "Policy"), actions.size];
        },
    },
    { file: "docs/architecture.md", pattern: /and the (\w+) EventBridge rules that feed it/, what: "EventBridge rules", command: plans("staging"), now: (o) => [inComponent(o, "staging", "KarpenterController", "EventRule")] },
    {
        file: "docs/architecture.md",
        pattern: /one `FailedInvocations` alarm per EventBridge rule \((\w+)\)/,
        what: "EventBridge rules",
        command: plans("staging"),
        now: (o) => [inComponent(o, "staging", "KarpenterController", "EventRule")],
    },
    {
        file: "docs/architecture.md",
        pattern: /Staging and production have (\d+) each, scratch (\d+) \(no burst Deployments/,
        what: "alarms: staging and production, scratch",
        command: `${plans("staging")}, ${plans("production")}, ${plans("scratch")}`,
        now: (o) => {
            const [staging, production] = [ofType(o, "staging", "MetricAlarm"), ofType(o, "production", "MetricAlarm")];
            return [staging === production ? staging : `${staging} and ${production}`, ofType(o, "scratch", "MetricAlarm")];
        },
    },
    {
        file: "docs/architecture.md",
        pattern: /metric filters with JSON patterns on the controller's log lines: (\w+) in staging and production \((\w+) failure classes and the log heartbeat\), (\w+) in scratch/,
        what: "metric filters: staging, its failure classes, scratch",
        command: `${plans("staging")}, ${plans("scratch")}`,
        now: (o) => [ofType(o, "staging", "LogMetricFilter"), ofType(o, "staging", "LogMetricFilter") - 1, ofType(o, "scratch", "LogMetricFilter")],
    },
    {
        file: "docs/architecture.md",
        pattern:
            /Staging plans (\d+) resources: (\d+) in `KarpenterController`, (\d+) in `KarpenterAlarms`, (\d+) in\s+`EphemeralNodePool`, (\d+) in `CeleryWorkloadPlacement` \((\d+) DaemonSet patches for the (\w+) agents less the EBS\s+add-on, (\d+) Deployment patches for (\d+) burst and (\d+) stable Deployments, (\d+) PodDisruptionBudgets\), (\d+) in\s+`BurstScaleDownOrder`, (\d+) in `NodeRecycler` and (\d+) in `PreviewReadAccess`; scratch plans (\d+)/,
        what: "resources per stack and per component",
        command: `${plans("staging")}, ${plans("scratch")}`,
        now: (o) => {
            const p = stackConfig("staging").placement;
            const c = (name: string, type?: string) => inComponent(o, "staging", name, type);
            return [
                o.plan.staging.json.resources.total,
                c("KarpenterController"),
                c("KarpenterAlarms"),
                c("EphemeralNodePool"),
                c("CeleryWorkloadPlacement"),
                c("CeleryWorkloadPlacement", "DaemonSetPatch"),
                p.nodeDaemonSets.length,
                c("CeleryWorkloadPlacement", "DeploymentPatch"),
                p.burst.deployments.length,
                p.stableDeployments.length,
                c("CeleryWorkloadPlacement", "PodDisruptionBudget"),
                c("BurstScaleDownOrder"),
                c("NodeRecycler"),
                c("PreviewReadAccess"),
                o.plan.scratch.json.resources.total,
            ];
        },
    },
    {
        file: "docs/architecture.md",
        pattern: /Production plans (\d+): the same less the (\d+) of `SpotInterruptionDrill`/,
        what: "production's resources, and the drill's in staging",
        command: `${plans("production")}, ${plans("staging")}`,
        now: (o) => [o.plan.production.json.resources.total, inComponent(o, "staging", "SpotInterruptionDrill")],
    },
    // docs/alarms.md's thresholds, "default (both stacks)": each rule's alarm as the plan lists it in summary.txt.
    ...(
        [
            ["unschedulablePods", "karpenter-unschedulable-pods"],
            ["launchFailures", "karpenter-launch-failures"],
            ["lifecycleErrors", "karpenter-nodeclaim-lifecycle-errors"],
            ["nodePoolNotReady", "karpenter-nodepool-not-ready"],
            ["logHeartbeat", "karpenter-log-heartbeat"],
            ["heartbeat", "karpenter-metrics-heartbeat"],
            ["nodeClaimNotInitialized`, `nodeNotReady", "karpenter-nodeclaim-not-initialized"],
            ["nodePoolLimit", "karpenter-nodepool-near-limit"],
        ] as const
    ).map(
        ([rule, alarm]): Claim => ({
            file: "docs/alarms.md",
            pattern: new RegExp(`^\\| \`${rule}\` \\| (\\d+) s, \\**(\\d+) of (\\d+)\\**[^,|]*, \\**(<|>=) (\\d+)`, "m"),
            what: `${rule.split("`")[0]}: period, datapoints of periods, comparison, threshold`,
            command: `${plans("staging")}, ${plans("production")} (summary.txt)`,
            now: (o) => {
                const of = (stack: string) => {
                    const line = o.plan[stack].summaryTxt.split("\n").find((l) => l.includes(`-${alarm}: `));
                    const m = line && / (<|>=) ([0-9.]+) in (\d+) of (\d+) x (\d+)s,/.exec(line);
                    return m ? [Number(m[5]), Number(m[3]), Number(m[4]), m[1], Number(m[2])] : [`no alarm ${alarm} in ${stack}'s plan`];
                };
                const [staging, production] = [of("staging"), of("production")];
                return staging.map((v, i) => (v === production[i] ? v : `${v} (production: ${production[i]})`));
            },
        }),
    ),
    // docs/guardrails.md
    { file: "docs/guardrails.md", pattern: /It prints `Policy pack: (\d+) policies, no\s+violations`/, what: "policies in the pack", command: plans("staging"), now: (o) => [o.plan.staging.json.policy.policies] },
    {
        file: "docs/guardrails.md",
        pattern: /true in production only\) protects (\w+) resources: the (\w+) PriorityClasses/,
        what: "protected resources in production, PriorityClasses among them",
        command: `${plans("production")} (summary.txt)`,
        now: (o) => {
            const protectedLines = o.plan.production.summaryTxt.split("\n").filter((l) => /\[protected/.test(l));
            return [protectedLines.length, protectedLines.filter((l) => /^ {2}PriorityClass /.test(l)).length];
        },
    },
    // docs/development.md
    {
        file: "docs/development.md",
        pattern: /The (\w+) components \(`karpenterController\.ts`/,
        what: "the program's components",
        command: "npm run plan -- --stack <each stack> (Resources by component)",
        now: (o) => [new Set(STACKS.flatMap((s) => o.plan[s].json.resources.byComponent.map((c: any) => c.component)).filter((c) => c !== "(top level)")).size],
    },
    // docs/scratch.md
    { file: "docs/scratch.md", pattern: /a (\d+)-CPU pool limit/, what: "scratch's NodePool cpu limit", command: plans("scratch"), now: (o) => [o.plan.scratch.json.nodePool.limits.cpu] },
    { file: "docs/scratch.md", pattern: /The scratch stack keeps (\d+) headroom pods/, what: "scratch's headroom pods", command: capacities("scratch"), now: (o) => [cap(o, "scratch").peak.headroomPods] },
    { file: "docs/scratch.md", pattern: /\| (\d+) alarms \(`npm run plan -- --stack scratch`/, what: "scratch's alarms", command: plans("scratch"), now: (o) => [ofType(o, "scratch", "MetricAlarm")] },
    {
        file: "docs/scratch.md",
        pattern: /one while idle, for the (\d+) headroom pods .* and the (\d+)-CPU limit allows (\w+) \|/,
        what: "scratch's headroom pods, cpu limit, and the nodes it allows",
        command: capacities("scratch"),
        now: (o) => [cap(o, "scratch").peak.headroomPods, Number(cap(o, "scratch").limits.cpu), cap(o, "scratch").limits.allowedNodes],
    },
    // docs/configuring.md (scale-test.md's example summaries: tests/scaleTest.spec.ts)
    {
        file: "docs/configuring.md",
        pattern: /\*\*Headroom\*\* \(`placement\.headroom\.pods`\): (\d+) in staging, (\d+) in production \(one HPA step\), (\d+) in scratch/,
        what: "headroom pods: staging, production, scratch",
        command: STACKS.map(capacities).join(", "),
        now: (o) => STACKS.map((s) => cap(o, s).peak.headroomPods),
    },
    // docs/preflight.md
    {
        file: "docs/preflight.md",
        pattern: /nothing\s+within (\d+) seconds, which is what a private address off the VPN looks like/,
        what: "how long preflight waits for the API server",
        command: "npm run preflight (REACH_TIMEOUT_MS)",
        now: () => [REACH_TIMEOUT_MS / 1000],
    },
    { file: "docs/preflight.md", pattern: /is unreachable \(no answer within (\d+) s\)/, what: "how long preflight waits, as it prints it", command: "npm run preflight", now: () => [REACH_TIMEOUT_MS / 1000] },
    {
        file: "docs/preflight.md",
        pattern: /`--task-window <hours>`: how many hours of logs task-durations reads, (\d+) to (\d+) \(default (\d+)\)/,
        what: "task-durations' window: least, most, default",
        command: "npm run preflight -- --help",
        now: () => [1, MAX_TASK_WINDOW_HOURS, TASK_WINDOW_HOURS],
    },
    {
        file: "docs/preflight.md",
        pattern: /`GetQueryResults` every second, for\s+at most (\d+) minutes/,
        what: "how long task-durations waits for its query (TASK_QUERY_TIMING)",
        command: "npm run preflight",
        now: () => [TASK_QUERY_TIMING.deadlineMs / 60_000],
    },
    // The live commands' deadlines (ops/deadlines.ts), where docs/json-output.md ("Networks, answers and clusters") lists them, and scale-test.md's watches.
    {
        file: "docs/json-output.md",
        pattern: /\| an AWS connection \| (\d+) s \|[^\n]*\n\| an AWS connection that goes silent \| (\d+) s \|[^\n]*\n\| an AWS call, the SDK's own retries included \| (\d+) s \| `iam:GetRole <name>: no answer within (\d+) s/,
        what: "AWS deadlines: connection, silence, the whole call (twice)",
        command: "ops/deadlines.ts DEADLINES",
        now: () => [DEADLINES.awsConnectMs / 1000, DEADLINES.awsRequestMs / 1000, DEADLINES.awsCallMs / 1000, DEADLINES.awsCallMs / 1000],
    },
    {
        file: "docs/json-output.md",
        pattern: /\| a Kubernetes request, to the last byte of its answer \| (\d+) s \| `list pods: no answer within (\d+) s` \|/,
        what: "a Kubernetes request's deadline",
        command: "ops/deadlines.ts DEADLINES",
        now: () => [DEADLINES.kubeRequestMs / 1000, DEADLINES.kubeRequestMs / 1000],
    },
    {
        file: "docs/json-output.md",
        pattern: /the API server is asked to end each after (\d+) s; it is then resumed\) \| (\d+) s \| `the nodes watch failed: watch \/api\/v1\/nodes \(\.\.\.\): no event, bookmark or end for (\d+) s`/,
        what: "watches: the server's end, the deadline without an event (twice)",
        command: "ops/deadlines.ts DEADLINES",
        now: () => [DEADLINES.watchServerSeconds, DEADLINES.watchIdleMs / 1000, DEADLINES.watchIdleMs / 1000],
    },
    {
        file: "docs/json-output.md",
        pattern: /run by the command itself \| (\d+) s \| `aws eks get-token did not answer in (\d+) s/,
        what: "the credential plugin's deadline",
        command: "ops/deadlines.ts DEADLINES",
        now: () => [DEADLINES.execMs / 1000, DEADLINES.execMs / 1000],
    },
    {
        file: "docs/json-output.md",
        pattern: /Preflight's first cluster request has (\d+) s \(\[preflight\.md\]\(preflight\.md\)\)\. An answer is read up to (\d+) MB as it\s+arrives, and refused past that \(`the answer passed (\d+) MB/,
        what: "preflight's first request; the largest answer read (twice)",
        command: "ops/deadlines.ts DEADLINES, REACH_TIMEOUT_MS",
        now: () => [REACH_TIMEOUT_MS / 1000, DEADLINES.maxAnswerBytes / 1e6, DEADLINES.maxAnswerBytes / 1e6],
    },
    {
        file: "docs/json-output.md",
        pattern: /is tried (\d+) times in all, waiting (\d+), (\d+), (\d+) and (\d+) s\s+between tries, then said: `fis:ListExperimentTemplates: HTTP 429 ThrottlingException: Rate exceeded: throttled (\d+)\s+times, over (\d+) s of waiting/,
        what: "throttling: tries, the waits, as the line says them",
        command: "ops/deadlines.ts DEADLINES",
        now: () => {
            const waits = Array.from({ length: DEADLINES.throttleAttempts - 1 }, (_, i) => (DEADLINES.throttleFirstDelayMs * 2 ** i) / 1000);
            return [DEADLINES.throttleAttempts, ...waits, DEADLINES.throttleAttempts, waits.reduce((a, b) => a + b, 0)];
        },
    },
    {
        file: "docs/scale-test.md",
        pattern: /server closes \(asked after (\d+) s\) resume\s+from the last resource version; a watch error, a watch silent for (\d+) s/,
        what: "scale-test: the watches' end and deadline",
        command: "ops/deadlines.ts DEADLINES",
        now: () => [DEADLINES.watchServerSeconds, DEADLINES.watchIdleMs / 1000],
    },
    // docs/capacity.md: the figures table, one row per stack, and how production's are made up
    ...STACKS.map(
        (s): Claim => ({
            file: "docs/capacity.md",
            pattern:
                s === "scratch"
                    ? /^\| scratch \((\S+) spot, consolidateAfter (\w+)\) \| (\d+) \/ (\d+) \/ (\d+) \| USD ([0-9.]+) \| USD ([0-9.]+) \| USD ([0-9.]+) \| USD ([0-9.]+) \| ([0-9.]+) \|$/m
                    : new RegExp(`^\\| ${s} \\((\\S+) spot, USD ([0-9.]+)/h\\) \\| (\\d+) / (\\d+) / (\\d+) \\| \\*\\*USD ([0-9.]+)\\*\\*${s === "production" ? " \\(kept until ([0-9:]+) UTC\\)" : ""} \\| USD ([0-9.]+) \\| USD ([0-9.]+) \\| USD ([0-9.]+) \\| ([0-9.]+) \\|$`, "m"),
            what: `${s}'s row: type, ${s === "scratch" ? "consolidateAfter" : "spot price"}, nodes, the policies' days, static, kept node-hours`,
            command: `${capacities(s)} (--json)`,
            now: (o) => {
                const c = cap(o, s);
                const d = c.daily;
                const head = [c.modelledType, s === "scratch" ? stackConfig(s).nodePool.consolidateAfter : Number(c.instanceTypes.find((t: any) => t.type === c.modelledType).spotHourly.toFixed(5))];
                const nodes = [c.hourly.baseline.nodes, c.hourly.peak.nodes, c.hourly.afterBurst.nodes];
                const days = [usd(d.configured.perDay), ...(s === "production" ? [d.configured.keptNodesGo?.utc ?? "never"] : []), usd(d.whenEmpty.perDay), usd(d.backToBaseline.perDay), usd(d.static), d.configured.keptNodeHours];
                return [...head, ...nodes, ...days];
            },
        }),
    ),
    {
        file: "docs/capacity.md",
        pattern: /the costliest day is (\S+), a day of GC Notify's quarterly tasks in\s+EDT: .* The peak lasts ([0-9.]+) h .* the (\d+)\s+remaining burst pods stay on the (\d+) baseline nodes and the (\d+) headroom pods hold (\d+) more, (\d+) nodes until ([0-9:]+) UTC,\s+which is ([0-9.]+) h; the baseline holds the other (\d+) h/s,
        what: "production's costliest day, hours and nodes",
        command: `${capacities("production")} (--json)`,
        now: (o) => {
            const c = cap(o, "production");
            const day = c.daily.configured;
            return [c.daily.date, day.peakHours, c.hourly.afterBurst.burstPods, c.hourly.baseline.nodes, c.peak.headroomPods, c.hourly.afterBurst.nodes - c.hourly.baseline.nodes, c.hourly.afterBurst.nodes, day.keptNodesGo.utc, day.keptHours, day.baselineHours];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /([0-9.]+) × ([0-9.]+) \+ ([0-9.]+) × ([0-9.]+) \+ ([0-9.]+) × (\d+) = ([0-9.]+), plus\s+recycling: (\d+) baseline nodes every (\d+) days, each paid twice for (\d+) s \((\d+) s launch, (\d+) s drain at most\), ([0-9.]+)\s+node-hours at\s+([0-9.]+), USD ([0-9.]+), so USD ([0-9.]+) \(([0-9.]+); staging ([0-9.]+) to ([0-9.]+)\)/,
        what: "production's configured day by hand, with recycling",
        command: `${capacities("production")} (--json), ${capacities("staging")}`,
        now: (o) => {
            const c = cap(o, "production");
            const day = c.daily.configured;
            const m = capacityInputs(stackConfig("production"))!;
            const spot = c.instanceTypes.find((t: any) => t.type === c.modelledType).spotHourly;
            const recycled = day.recyclingPerDay;
            const staging = cap(o, "staging").daily.configured;
            return [
                Number(c.hourly.peak.cost.toFixed(5)),
                day.peakHours,
                Number(c.hourly.afterBurst.cost.toFixed(5)),
                day.keptHours,
                Number(c.hourly.baseline.cost.toFixed(5)),
                day.baselineHours,
                (day.perDay - recycled).toFixed(4),
                c.hourly.baseline.nodes,
                m.recycle!.maxAgeDays,
                m.nodeLaunchSeconds + m.drainSeconds,
                m.nodeLaunchSeconds,
                m.drainSeconds,
                (recycled / spot).toFixed(4),
                Number(spot.toFixed(5)),
                recycled.toFixed(4),
                day.perDay.toFixed(4),
                usd(day.perDay),
                (staging.perDay - staging.recyclingPerDay).toFixed(4),
                staging.perDay.toFixed(4),
            ];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /keeps the (\d+) nodes until the next burst: ([0-9.]+) × ([0-9.]+) \+ ([0-9.]+) × ([0-9.]+) = ([0-9.]+)\s+\(all (\d+) recycled: ([0-9.]+)\)\. Back to baseline is ([0-9.]+) × ([0-9.]+) \+ ([0-9.]+) × ([0-9.]+) = ([0-9.]+) \(([0-9.]+) with recycling\)\. No\s+node expires\. A node stuck just after a run waits at most (\d+) h for the next one: up to USD ([0-9.]+) once/,
        what: "production's WhenEmpty and back-to-baseline days by hand, and a stuck node",
        command: `${capacities("production")} (--json)`,
        now: (o) => {
            const c = cap(o, "production");
            const [we, bb] = [c.daily.whenEmpty, c.daily.backToBaseline];
            const stuck = /waits at most\s+([0-9.]+) h for the next run: up to USD ([0-9.]+) once/.exec(o.capacity.production.text)!;
            return [
                c.hourly.afterBurst.nodes,
                Number(c.hourly.peak.cost.toFixed(5)),
                we.peakHours,
                Number(c.hourly.afterBurst.cost.toFixed(5)),
                we.keptHours,
                usd(we.perDay - we.recyclingPerDay),
                c.hourly.afterBurst.nodes,
                we.perDay.toFixed(4),
                Number(c.hourly.peak.cost.toFixed(5)),
                bb.peakHours,
                Number(c.hourly.baseline.cost.toFixed(5)),
                bb.baselineHours,
                usd(bb.perDay - bb.recyclingPerDay),
                bb.perDay.toFixed(4),
                Number(stuck[1]),
                stuck[2],
            ];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /\*\*The nightly batch costs USD ([0-9.]+) a day in production and in staging\*\* on the modelled day: .* their kept nodes go at ([0-9:]+) UTC, .* opens at ([0-9:]+) UTC\. .* it waits ([0-9.]+) h, until ([0-9:]+) UTC, up to USD\s+([0-9.]+) in production and USD ([0-9.]+) in staging/s,
        what: "the nightly batch's cost a day (the same in both stacks), and a node it leaves underutilized",
        command: `${capacities("production")} (--json), ${capacities("staging")} (Nightly batch line)`,
        now: (o) => {
            const [p, st] = [cap(o, "production").daily, cap(o, "staging").daily];
            const nightly = (stack: string) => /Nightly batch \(nodePool\.nightlyBatch, ([0-9:]+)-([0-9:]+) [^)]*\):[\s\S]*?waits up to ([0-9.]+) h: up to USD ([0-9.]+) a node/.exec(o.capacity[stack].text)!;
            const [np, ns] = [nightly("production"), nightly("staging")];
            return [
                p.nightlyBatchPerDay === st.nightlyBatchPerDay ? usd(p.nightlyBatchPerDay) : `${usd(p.nightlyBatchPerDay)} (staging ${usd(st.nightlyBatchPerDay)})`,
                p.configured.keptNodesGo.utc,
                np[1],
                Number(np[3]),
                np[2],
                np[4],
                ns[4],
            ];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /Production models (\d+) % above it \(([0-9.]+)\s+against ([0-9.]+)\) and staging (\d+) % \(([0-9.]+) against ([0-9.]+)\)/,
        what: "the goal: production and staging against back to baseline",
        command: `${capacities("production")}, ${capacities("staging")} (Goal line)`,
        now: (o) => ["production", "staging"].flatMap((s) => [Math.round(cap(o, s).goal.overPercent), usd(cap(o, s).daily.configured.perDay), usd(cap(o, s).daily.backToBaseline.perDay)]),
    },
    {
        file: "docs/capacity.md",
        pattern: /The margin is less than one more node\s+kept all afternoon \(([0-9.]+) node-hours\)/,
        what: "production's margin in node-hours",
        command: `${capacities("production")} (Margin line)`,
        now: (o) => {
            const m = /Margin: it allows ([0-9.]+) kept node-hours a day, the model keeps ([0-9.]+)/.exec(o.capacity.production.text)!;
            return [(Number(m[1]) - Number(m[2])).toFixed(1)];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /in production one node more than modelled, kept all afternoon, adds USD ([0-9.]+) a day and misses the goal \((\d+) % above\s+back to baseline\)/,
        what: "one node more in production: its cost, and the day against back to baseline",
        command: `${capacities("production")} (Margin line)`,
        now: (o) => {
            const added = Number(/one node more for the [0-9.]+ kept hours adds USD ([0-9.]+)/.exec(o.capacity.production.text)![1]);
            const d = cap(o, "production").daily;
            return [usd(added), Math.round((100 * (d.configured.perDay + added - d.backToBaseline.perDay)) / d.backToBaseline.perDay)];
        },
    },
    {
        file: "docs/capacity.md",
        pattern: /the (\d+) remaining pods can hold all (\d+) peak\s+nodes until ([0-9:]+) UTC: production models USD ([0-9.]+) \((\d+) % above\), `WhenEmpty` USD ([0-9.]+) \(([0-9.]+), and its (\d+) nodes\s+recycled every (\d+) days\), staging USD ([0-9.]+)/,
        what: "without the scale-down order: production's and staging's days",
        command: "npm run capacity's model without placement.burst.scaleDownOrder",
        now: () => {
            const unordered = (s: string) => {
                const r = capacityReport({ ...capacityInputs(stackConfig(s))!, scaleDownOrdered: false });
                if (typeof r === "string") throw new Error(r);
                return r;
            };
            const [p, st] = [unordered("production"), unordered("staging")];
            const c = p.costs;
            return [
                p.inputs.baselinePods + p.inputs.headroomPods,
                c.afterBurst.nodes,
                // A release past midnight (25:00 in the model's day) reads as the clock does.
                c.configured.releaseUtc === undefined ? "never" : `${String(Math.floor((c.configured.releaseUtc % 1440) / 60)).padStart(2, "0")}:${String(c.configured.releaseUtc % 60).padStart(2, "0")}`,
                usd(c.configured.daily.karpenter),
                Math.round((100 * (c.configured.daily.karpenter - c.backToBaseline.daily.karpenter)) / c.backToBaseline.daily.karpenter),
                usd(c.whenEmpty.daily.karpenter),
                usd(c.whenEmpty.daily.karpenter - (c.whenEmpty.recycling?.daily ?? 0)),
                c.afterBurst.nodes,
                p.inputs.recycle!.maxAgeDays,
                usd(st.costs.configured.daily.karpenter),
            ];
        },
    },
];

/** Number words the docs use for small counts. */
const WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"];

/** Whether the doc's text says the value: the same word or digits, the same number (12.30 is 12.3), the same text. */
function says(doc: string, value: Value): boolean {
    const word = WORDS.indexOf(doc.toLowerCase());
    const asNumber = word >= 0 ? word : /^-?[0-9]+(\.[0-9]+)?$/.test(doc) ? Number(doc) : undefined;
    if (typeof value === "number" || (typeof value === "string" && /^-?[0-9]+(\.[0-9]+)?$/.test(value) && asNumber !== undefined)) {
        // A figure given to fewer places than the command's is the command's, rounded: 12.33 for 12.3286.
        if (asNumber === undefined) return false;
        const v = Number(value);
        const places = (doc.split(".")[1] ?? "").length;
        return typeof value === "string" ? doc === value || asNumber === v : Number(v.toFixed(places)) === asNumber;
    }
    return doc === String(value);
}

/** The 1-based line of an offset in a text. */
const lineAt = (text: string, offset: number) => text.slice(0, offset).split("\n").length;

/** Runs the `it` that prints "bad inputs: N" in tests/badInput.spec.ts, with mocha's globals stood in, and reads N. */
async function badInputCount(): Promise<number> {
    const file = path.join(import.meta.dirname, "badInput.spec.ts");
    const g = globalThis as any;
    const names = ["describe", "it", "before", "after", "beforeEach", "afterEach", "context", "specify"];
    const saved = Object.fromEntries(names.map((n) => [n, g[n]]));
    const tests: { title: string; fn: () => unknown }[] = [];
    const suite = Object.assign((_t: string, fn: () => void) => fn(), { skip: () => undefined, only: (_t: string, fn: () => void) => fn() });
    const test = Object.assign((title: string, fn: () => unknown) => tests.push({ title, fn }), { skip: () => undefined, only: (title: string, fn: () => unknown) => tests.push({ title, fn }) });
    Object.assign(g, { describe: suite, context: suite, it: test, specify: test, before: () => undefined, after: () => undefined, beforeEach: () => undefined, afterEach: () => undefined });
    try {
        // A fresh instance of the module (ES modules are cached by URL), evaluated against the stand-ins.
        await import(`${pathToFileURL(file).href}?count=${Date.now()}`);
    } finally {
        Object.assign(g, saved);
    }
    const counting = tests.find((t) => t.fn.toString().includes("bad inputs:"));
    if (!counting) throw new Error('tests/badInput.spec.ts has no test that prints "bad inputs: N" any more');
    const printed: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => printed.push(args.join(" "));
    try {
        counting.fn();
    } finally {
        console.log = log;
    }
    const n = /bad inputs: (\d+)/.exec(printed.join("\n"))?.[1];
    if (n === undefined) throw new Error(`tests/badInput.spec.ts's count printed ${JSON.stringify(printed)}`);
    return Number(n);
}

describe("numbers in the docs are what the commands print (README.md, docs/)", function () {
    this.timeout(60_000);
    let outputs: Outputs | undefined;
    /** Runs the commands once for every test below. */
    async function gather(): Promise<Outputs> {
        if (outputs) return outputs;
        const o: Outputs = { plan: {}, diff: "", capacity: {}, badInputs: await badInputCount() };
        for (const s of STACKS) {
            const out = tempDir(`docs-${s}-`);
            const r = await plan(["--stack", s, "--out", out, "--json"]);
            if (r.exitCode !== 0) throw new Error(`npm run plan -- --stack ${s} exits ${r.exitCode}:\n${r.output}`);
            o.plan[s] = { json: JSON.parse(r.output), summaryTxt: fs.readFileSync(path.join(out, "summary.txt"), "utf8"), preview: JSON.parse(fs.readFileSync(path.join(out, "preview.json"), "utf8")) };
            const capOut = tempDir(`docs-capacity-${s}-`);
            o.capacity[s] = { json: JSON.parse((await capacity(["--stack", s, "--out", capOut, "--json"])).output), text: (await capacity(["--stack", s, "--out", capOut])).output };
        }
        o.diff = (await plan(["--diff", "staging", "production"])).output;
        outputs = o;
        return o;
    }

    for (const claim of CLAIMS) {
        const text = fs.readFileSync(path.join(PROJECT_DIR, claim.file), "utf8");
        const flags = claim.pattern.flags.includes("g") ? claim.pattern.flags : `${claim.pattern.flags}g`;
        const matches = [...text.matchAll(new RegExp(claim.pattern.source, flags))];
        if (matches.length !== 1) {
            it(`${claim.file}: ${claim.what}: the sentence that quotes them (${matches.length === 0 ? "gone" : `${matches.length} times`}) is found once`, () => {
                expect.fail(`${claim.file}: ${matches.length === 0 ? "no longer has" : "has more than one"} text matching ${claim.pattern} (${claim.what}, from ${claim.command}): say it again with the number the command prints, or change this test with it`);
            });
            continue;
        }
        const [m] = matches;
        const line = lineAt(text, m.index!);
        const quoted = m.slice(1);
        it(`${claim.file}:${line}: ${quoted.join(", ")} (${claim.what})`, async function () {
            const now = claim.now(await gather());
            expect(now.length, `${claim.file}:${line}: the test compares ${quoted.length} numbers with ${now.length}`).to.equal(quoted.length);
            const wrong = quoted.map((q, i) => [q, now[i]] as const).filter(([q, v]) => !says(q, v));
            this.test!.title += wrong.length ? `; ${claim.command} prints ${now.join(", ")} now` : ` = what ${claim.command} prints now`;
            expect(wrong, `${claim.file}:${line} says ${wrong.map(([q]) => q).join(", ")} (${claim.what}); ${claim.command} prints ${wrong.map(([, v]) => v).join(", ")} now`).to.deep.equal([]);
        });
    }

    it("docs/guardrails.md: the stack diff example's lines are what npm run plan -- --diff staging production prints now, in order", async function () {
        const file = "docs/guardrails.md";
        const text = fs.readFileSync(path.join(PROJECT_DIR, file), "utf8");
        const block = /```\n(Stack diff staging → production[\s\S]*?)```/.exec(text);
        expect(block, `${file}: the stack diff example is gone`).to.not.equal(null);
        const first = lineAt(text, block!.index) + 1;
        const printed = (await gather()).diff.split("\n");
        let at = 0;
        const missing: string[] = [];
        block![1].trimEnd().split("\n").forEach((l, i) => {
            if (l.trim() === "..." || l.trim() === "") return;
            const found = printed.indexOf(l, at);
            if (found < 0) missing.push(`${file}:${first + i}: "${l}"`);
            else at = found + 1;
        });
        this.test!.title = `${file}:${first}: the stack diff example (${printed.at(-1)} now)`;
        expect(missing, `lines of the example npm run plan -- --diff staging production no longer prints (in this order); it prints now:\n${printed.filter((l) => /×|only in one stack/.test(l)).slice(0, 12).join("\n")}`).to.deep.equal([]);
    });

    it("no doc quotes a measurement that changes from run to run (a test count and time, a plan's time)", () => {
        const measured = [/\b\d+ passed, \d+ failed, \d+ skipped\b/, /\btook [0-9.]+ s\b/, /`npm test` ended with/];
        const files = ["README.md", ...fs.readdirSync(path.join(PROJECT_DIR, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
        const found = files.flatMap((f) => {
            const text = fs.readFileSync(path.join(PROJECT_DIR, f), "utf8");
            return measured.flatMap((p) => [...text.matchAll(new RegExp(p.source, "g"))].map((m) => `${f}:${lineAt(text, m.index!)}: "${m[0]}"`));
        });
        expect(found, "each run prints its own: the docs say how to measure instead").to.deep.equal([]);
    });
});
