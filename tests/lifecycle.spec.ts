// Resource options, rollout order and the lookups that fail a preview: what decides whether a first `up`, a
// mistaken `destroy` or a later chart deploy hurts the live clusters. Asserted where reviewers see them: preview.json.
import { expect } from "chai";
import * as aws from "@pulumi/aws";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CeleryWorkloadPlacement } from "../components/celeryWorkloadPlacement.ts";
import { batches } from "../components/models/celeryPlacement.ts";
import { plan } from "../plan/cli.ts";
import { type InvokeAnswer, InvokeFailure, PLACEHOLDERS, PreviewError, duplicateUrnMessage, runOffline } from "../plan/offlineRuntime.ts";
import { PROJECT } from "../stacks/stackNames.ts";
import { placementArgs } from "../stacks/componentArgs.ts";
import { loadConfig } from "../stacks/programConfig.ts";
import { createStack } from "../stacks/createStack.ts";
import { BURST_DEPLOYMENTS, buildStack, configErrorOf, patchSections, stackConfig } from "./helpers.ts";

const ALL_STACKS = ["staging", "production", "scratch"] as const;
const PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass";
const RELEASE = "kubernetes:helm.sh/v3:Release";
const BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding";

type Step = { urn: string; newState: Record<string, any> };

/** The steps of each stack's preview.json and the summary `npm run plan` prints, planned once for this file. */
let planning: Promise<Record<string, { steps: Step[]; output: string }>> | undefined;
function plannedStacks() {
    planning ??= (async () => {
        const planned: Record<string, { steps: Step[]; output: string }> = {};
        for (const stack of ALL_STACKS) {
            const out = fs.mkdtempSync(path.join(os.tmpdir(), "lifecycle-"));
            try {
                const result = await plan(["--stack", stack, "--out", out]);
                expect(result.exitCode, result.output).to.equal(0);
                // The full listing (summary.txt, or --verbose) names each resource; the printed summary only counts them.
                planned[stack] = { steps: JSON.parse(fs.readFileSync(path.join(out, "preview.json"), "utf8")).steps, output: fs.readFileSync(path.join(out, "summary.txt"), "utf8") };
            } finally {
                fs.rmSync(out, { recursive: true, force: true });
            }
        }
        return planned;
    })();
    return planning;
}
let planned: Awaited<ReturnType<typeof plannedStacks>>;
async function loadPlans(this: Mocha.Context) {
    this.timeout(60_000);
    planned = await plannedStacks();
}

const byType = (steps: Step[], type: string) => steps.filter((s) => s.newState.type === type);
const named = (steps: Step[], type: string, name: string) => steps.find((s) => s.newState.type === type && s.urn.endsWith(`::${name}`))!.newState;
/** The five options `pulumi preview --json` shows in newState, plus deleteBeforeReplace, as recorded. */
const optionsOf = (s: Record<string, any>) =>
    Object.fromEntries(["protect", "retainOnDelete", "deleteBeforeReplace", "replaceOnChanges", "ignoreChanges", "customTimeouts"].filter((k) => k in s).map((k) => [k, s[k]]));

describe("lifecycle options in preview.json", () => {
    const steps: Record<string, Step[]> = {};
    before(async function () {
        await loadPlans.call(this);
        for (const stack of ALL_STACKS) steps[stack] = planned[stack].steps;
    });

    for (const stack of ALL_STACKS) {
        const protect = stack === "production";
        const retain = stack !== "scratch";
        const kept = { ...(protect ? { protect: true } : {}), ...(retain ? { retainOnDelete: true } : {}) };

        it(`${stack}: the priority classes are ${protect ? "protected, " : ""}${retain ? "kept on delete, " : ""}replaced (old one first) when value or preemptionPolicy changes, and adopted through the upsert provider`, () => {
            const classes = byType(steps[stack], PRIORITY_CLASS);
            expect(classes.map((c) => c.newState.inputs.metadata.name)).to.deep.equal(["high-priority", "celery", "celery-headroom"]);
            for (const c of classes) {
                expect(optionsOf(c.newState), c.urn).to.deep.equal({ ...kept, deleteBeforeReplace: true, replaceOnChanges: ["value", "preemptionPolicy"] });
                expect(c.newState.provider).to.match(/::pulumi:providers:kubernetes::kubernetes-adopt-priority-classes::/);
            }
        });

        it(`${stack}: the karpenter-crd release is ${protect ? "protected and " : ""}${retain ? "kept on delete" : "deleted with the stack"}; the controller release is not`, () => {
            const crds = named(steps[stack], RELEASE, "karpenter-crds");
            expect(crds.inputs.name).to.equal("karpenter-crd");
            expect(optionsOf(crds)).to.deep.equal(kept);
            expect(optionsOf(named(steps[stack], RELEASE, "karpenter-chart"))).to.deep.equal({});
        });

        it(`${stack}: only the priority classes use the upsert provider, and the stack's provider refuses upsert even with PULUMI_K8S_UPSERT_EXISTING_OBJECTS set`, () => {
            const providers = byType(steps[stack], "pulumi:providers:kubernetes");
            const upsert = Object.fromEntries(providers.map((p) => [p.urn.split("::").pop(), p.newState.inputs.upsertExistingObjects]));
            expect(upsert).to.deep.equal({ kubernetes: "false", "kubernetes-adopt-priority-classes": "true" });
            const adopters = steps[stack].filter((s) => /kubernetes-adopt-priority-classes::/.test(s.newState.provider ?? ""));
            expect([...new Set(adopters.map((s) => s.newState.type))]).to.deep.equal([PRIORITY_CLASS]);
        });

        it(`${stack}: every fixed-name IAM role and policy is deleted before its replacement is created`, () => {
            // Auto-named ones (a created cluster's node role) get a fresh name, so create-before-delete is fine there.
            const iam = [...byType(steps[stack], "aws:iam/role:Role"), ...byType(steps[stack], "aws:iam/policy:Policy")].filter((r) => r.newState.inputs.name !== undefined);
            expect(iam.length).to.be.at.least(7);
            for (const r of iam) expect(r.newState.deleteBeforeReplace, r.urn).to.equal(true);
        });

        it(`${stack}: rollouts have their own timeouts, the headroom is not awaited, and the controller release waits up to 10 minutes`, () => {
            const s = steps[stack];
            for (const p of byType(s, "kubernetes:apps/v1:DeploymentPatch").filter((p) => /-burst-/.test(p.urn))) {
                expect(p.newState.customTimeouts, p.urn).to.deep.equal({ create: 1200, update: 1200 });
            }
            for (const p of byType(s, "kubernetes:apps/v1:DaemonSetPatch")) expect(p.newState.customTimeouts, p.urn).to.deep.equal({ create: 900, update: 900 });
            expect(named(s, "kubernetes:apps/v1:Deployment", "celery-placement-headroom").inputs.metadata.annotations).to.deep.equal({ "pulumi.com/skipAwait": "true" });
            expect(named(s, RELEASE, "karpenter-chart").inputs.timeout).to.equal(600);
        });
    }

    it("staging and production time out every burst, stable and daemonset patch they have (one per agent that is no EKS add-on)", () => {
        for (const stack of ["staging", "production"]) {
            const patches = byType(steps[stack], "kubernetes:apps/v1:DeploymentPatch");
            const timeoutOf = (name: string) => patches.find((p) => p.newState.inputs.metadata.name === name)!.newState.customTimeouts;
            for (const d of BURST_DEPLOYMENTS) expect(timeoutOf(d), d).to.deep.equal({ create: 1200, update: 1200 });
            // Stable patches roll their Deployments too (the nodepool affinity term changes the pod template).
            for (const d of stackConfig(stack).placement.stableDeployments) expect(timeoutOf(d), d).to.deep.equal({ create: 900, update: 900 });
            const agents = stackConfig(stack).placement.nodeDaemonSets.filter((d) => !d.addOn).map((d) => d.name);
            expect(byType(steps[stack], "kubernetes:apps/v1:DaemonSetPatch").filter((p) => p.newState.customTimeouts).map((p) => p.newState.inputs.metadata.name)).to.have.members(agents);
        }
    });
});

describe("lifecycle config", () => {
    before(loadPlans);
    it("marks protected and retained resources in the plan's full listing", () => {
        const { output } = planned.production;
        expect(output).to.include("PriorityClass celery: 10 [protected, kept on delete]");
        expect(output).to.match(/helm karpenter-crd: oci:\/\/public\.ecr\.aws\/karpenter\/karpenter-crd 1\.14\.1 in namespace karpenter \[protected, kept on delete\]/);
        expect(planned.scratch.output).not.to.include("kept on delete");
    });

    for (const [key, value, message] of [
        ["stableBatchSize", 0, "notify-karpenter:lifecycle.stableBatchSize must be an integer from 1 to 50 (got 0)"],
        ["burstPatchTimeout", "20 minutes", 'notify-karpenter:lifecycle.burstPatchTimeout must be a duration of at least 1m such as 90s, 30m or 24h (got "20 minutes")'],
        ["protect", "yes", 'notify-karpenter:lifecycle.protect must be true or false (got "yes")'],
    ] as const) {
        it(`refuses lifecycle.${key}: ${JSON.stringify(value)} in one line naming the key`, async () => {
            const error = await configErrorOf("staging", patchSections("staging", { lifecycle: { [key]: value } }));
            expect(error).to.equal(`staging: ${message}`);
        });
    }
});

describe("rollout order", () => {
    it("patches stable Deployments in batches of stableBatchSize, each batch after the whole previous one", async () => {
        const r = await buildStack("production", { lifecycle: { stableBatchSize: 5 } });
        const stable = r.byType("kubernetes:apps/v1:DeploymentPatch").filter((p) => p.name.startsWith("celery-placement-stable-"));
        expect(batches(stable, 5).map((b) => b.length)).to.deep.equal([5, 5, 2]);
        batches(stable, 5).forEach((batch, i, all) => {
            for (const p of batch) {
                const patchDeps = p.dependencies.filter((d) => /DeploymentPatch::celery-placement-stable-/.test(d));
                expect(patchDeps.sort(), p.name).to.deep.equal(i === 0 ? [] : all[i - 1].map((x) => x.urn).sort());
            }
        });
    });

    it("binds the admission policy only after every patch and the headroom", async () => {
        const r = await buildStack("staging");
        const binding = r.get(BINDING, "celery-placement-admission-binding");
        const rollouts = r.resources.filter((x) => /Patch$/.test(x.type) || x.name === "celery-placement-headroom").filter((x) => x.name !== "celery-placement-nidhogg-priority");
        const agents = stackConfig("staging").placement.nodeDaemonSets.filter((d) => !d.addOn).length;
        expect(rollouts.length).to.equal(5 + 12 + agents + 1);
        expect(binding.dependencies).to.include.members(rollouts.map((x) => x.urn));
    });

    it("installs the controller only after its Pod Identity association", async () => {
        const r = await buildStack("staging");
        const association = r.get("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity");
        expect(r.get(RELEASE, "karpenter-chart").dependencies).to.include(association.urn);
    });
});

describe("the offline runtime, closer to the engine", () => {
    before(loadPlans);
    it("refuses a second resource with one URN as the engine does (a node daemonset listed twice, past config validation)", async () => {
        const cfg = stackConfig("staging");
        const args = placementArgs(cfg);
        const twice = { ...args, nodeDaemonSets: [args.nodeDaemonSets[0], args.nodeDaemonSets[0]] };
        const run = runOffline("staging", () => new CeleryWorkloadPlacement("celery-placement", twice));
        const urn = `urn:pulumi:staging::${PROJECT}::notify-karpenter:index:CeleryWorkloadPlacement$kubernetes:apps/v1:DaemonSetPatch::celery-placement-agent-${args.nodeDaemonSets[0].name}`;
        const error = await run.then(() => undefined, (e) => e);
        expect(error).to.be.instanceOf(PreviewError);
        expect(error.message).to.equal(duplicateUrnMessage(urn));
        expect(error.message).to.equal(`Duplicate resource URN '${urn}'; try giving it a unique name`);
    });

    it("fails a read of an existing resource (.get), which the recording would leave out of preview.json and the policy pack", async () => {
        const error = await runOffline("staging", () => aws.sqs.Queue.get("existing", "https://sqs.ca-central-1.amazonaws.com/123456789012/q")).then(() => undefined, (e) => e);
        expect(error).to.be.instanceOf(PreviewError);
        expect(error.message).to.equal("aws:sqs/queue:Queue existing: read with .get(), which the offline plan does not record (plan/offlineRuntime.ts)");
    });

    it("builds a program named by reuseAs once per stack, config and mode: a repeat gets the first recording, frozen", async () => {
        let builds = 0;
        const program = () => {
            builds++;
            return { queue: new aws.sqs.Queue("q", { name: loadConfig().cluster.name }) };
        };
        const run = (stack: string, opts: Parameters<typeof runOffline>[2] = {}) => runOffline(stack, program, { reuseAs: "reuse test", ...opts });
        const first = await run("staging");
        expect(await run("staging")).to.equal(first);
        expect(builds).to.equal(1);
        // Its data cannot change under the next reader; the program's own objects (its outputs) are left alone.
        expect(() => (first.get("aws:sqs/queue:Queue", "q").inputs.name = "changed")).to.throw(TypeError);
        expect(() => first.resources.pop()).to.throw(TypeError);
        expect(() => first.calls.push(first.calls[0])).to.throw(TypeError);
        expect(Object.isFrozen(first.outputs)).to.equal(false);
        // Another stack, config or mode, lookups of its own, or no name: built again.
        await run("production");
        await run("staging", { overrides: patchSections("staging", { controller: { logLevel: "debug" } }) });
        await run("staging", { preview: true });
        await run("staging", { invokes: {} });
        await runOffline("staging", program);
        expect(builds).to.equal(6);
        expect(await run("staging")).to.equal(first);
        expect(builds).to.equal(6);
    });

    it("keeps the 32 recordings used last: the one used longest ago is built again", async () => {
        let builds = 0;
        const program = () => {
            builds++;
            return new aws.sqs.Queue("q", {});
        };
        const run = (n: number) => runOffline("staging", program, { reuseAs: "bound test", overrides: { "test:n": String(n) } });
        for (let n = 0; n < 33; n++) await run(n);
        expect(builds).to.equal(33);
        // 0 went when 32 came; 1, used again, moves past 2, which goes when 0 comes back.
        await run(1);
        expect(builds).to.equal(33);
        await run(0);
        expect(builds).to.equal(34);
        await run(1);
        expect(builds).to.equal(34);
        await run(2);
        expect(builds).to.equal(35);
    });

    for (const stack of ALL_STACKS) {
        it(`${stack}: registers the same resources under preview semantics, where outputs of new resources are unknown`, async function () {
            this.timeout(30_000);
            const known = planned[stack].steps.slice(1);
            const preview = await runOffline(stack, () => createStack(loadConfig()), { preview: true });
            expect(preview.unmockedCalls).to.deep.equal([]);
            expect(preview.resources.map((r) => r.urn).sort()).to.deep.equal(known.map((s) => s.urn).sort());
            // Nothing waited on a value only `up` knows: the queue's policy needs the queue's ARN, unknown here.
            const queuePolicy = preview.get("aws:sqs/queuePolicy:QueuePolicy", "karpenter-interruption-queue-policy");
            expect(queuePolicy.inputs.policy).to.deep.equal({ __pulumiUnknown: true });
            const burst = preview.get(PRIORITY_CLASS, "celery-placement-priority-burst");
            expect(optionsOf(named(known, PRIORITY_CLASS, "celery-placement-priority-burst"))).to.deep.equal(burst.options);
        });
    }
});

describe("lookups that fail the preview", () => {
    const staging = (invokes: Record<string, InvokeAnswer>) => runOffline("staging", () => createStack(loadConfig()), { invokes }).then(() => "", (e) => (e instanceof PreviewError ? e.message : `not a PreviewError: ${e}`));
    const cluster = (version: string): InvokeAnswer => (i, region) => ({
        name: i.name,
        arn: `arn:aws:eks:${region}:${PLACEHOLDERS.accountId}:cluster/${i.name}`,
        endpoint: PLACEHOLDERS.clusterEndpoint(region),
        certificateAuthorities: [{ data: PLACEHOLDERS.certificateAuthority }],
        identities: [{ oidcs: [{ issuer: PLACEHOLDERS.oidcIssuer(region) }] }],
        vpcConfig: { clusterSecurityGroupId: PLACEHOLDERS.clusterSecurityGroupId },
        version,
    });

    it("a cluster below Kubernetes 1.30 (no ValidatingAdmissionPolicy v1)", async () => {
        expect(await staging({ "aws:eks/getCluster:getCluster": cluster("1.29") })).to.equal(
            "cluster notification-canada-ca-staging-eks-cluster runs Kubernetes 1.29; notify-karpenter needs 1.30 or later (its admission policy is admissionregistration.k8s.io/v1); upgrade the cluster first",
        );
        expect(await staging({ "aws:eks/getCluster:getCluster": cluster("1.30") })).to.equal("");
    });

    it("a log group that does not exist, for the alarms' metric filter", async () => {
        const missing = () => {
            throw new InvokeFailure("reading CloudWatch Logs Log Group (/aws/containerinsights/notification-canada-ca-staging-eks-cluster/application): couldn't find resource");
        };
        expect(await staging({ "aws:cloudwatch/getLogGroup:getLogGroup": missing })).to.equal(
            "invocation of aws:cloudwatch/getLogGroup:getLogGroup returned an error: reading CloudWatch Logs Log Group (/aws/containerinsights/notification-canada-ca-staging-eks-cluster/application): couldn't find resource",
        );
    });

    it("a pinned AMI that does not exist or is not x86_64, asked for by ID and architecture", async () => {
        let asked: any;
        const none: InvokeAnswer = (i) => {
            asked = i;
            throw new InvokeFailure("Your query returned no results. Please change your search criteria and try again.");
        };
        expect(await staging({ "aws:ec2/getAmi:getAmi": none })).to.equal(
            "invocation of aws:ec2/getAmi:getAmi returned an error: Your query returned no results. Please change your search criteria and try again.",
        );
        expect(asked.filters).to.deep.equal([
            { name: "image-id", values: [stackConfig("staging").nodePool.ami.id] },
            { name: "architecture", values: ["x86_64"] },
        ]);
    });

    it("looks up the log group and the AMI only where the stack relies on them (scratch creates its group and uses an alias)", async () => {
        const r = await runOffline("scratch", () => createStack(loadConfig()));
        expect(r.calls.map((c) => c.token)).not.to.include.members(["aws:cloudwatch/getLogGroup:getLogGroup", "aws:ec2/getAmi:getAmi"]);
        const s = await runOffline("staging", () => createStack(loadConfig()));
        expect(s.calls.map((c) => c.token)).to.include.members(["aws:cloudwatch/getLogGroup:getLogGroup", "aws:ec2/getAmi:getAmi"]);
    });
});
