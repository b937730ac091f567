import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { judgePods, placementRules, readToEnd } from "../ops/verifyPlacementRun.ts";
import { verifyPlacement } from "../ops/verifyPlacement.ts";
import { spawn, spawnSync } from "child_process";
import { plan } from "../plan/cli.ts";
import { parse, stringify } from "yaml";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { FakeClock, FakeKubeApi } from "./fakeKubeApi.ts";
import { stackConfig } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";
import { documentedFields } from "./jsonSchemaDoc.ts";
import { setProgressSink } from "../cli/output.ts";

const FIXTURES = path.join(import.meta.dirname, "fixtures");

/**
 * GC Notify's releases as Helm renders them (notification-manifests 609853e2), from the shared reference data:
 * nothing rendered from GC Notify's repositories is kept in this repository. CI sets the directory; without it the
 * tests that read them are skipped.
 */
const GC_NOTIFY = process.env.GC_NOTIFY_RENDERED_DIR;
const gcNotify = (file: string, stack = "staging") => path.join(GC_NOTIFY ?? "", stack, file);
const withGcNotify = GC_NOTIFY ? describe : describe.skip;
/** A node agent's DaemonSet of a few kilobytes, with no namespace, as helm template prints one. */
const AGENT_TEXT = ["apiVersion: apps/v1", "kind: DaemonSet", "metadata:", "  name: xray-daemon-aws-xray", "spec:", "  template:", "    metadata:", ...Array.from({ length: 120 }, (_, i) => `      # padding line ${i} so the writer needs many pieces`), "    spec:", "      containers: [{ name: xray, image: amazon/aws-xray-daemon }]", ""].join("\n");
const SUMMARY_FINDINGS = (n: number) => `${n} finding${n === 1 ? "" : "s"}: pod templates that could run on ephemeral nodes (or another NodePool's) but must not or that the API server refuses, a NodePool that clashes with the stack's, or a chart value that blocks burst capacity`;

describe("npm run verify-placement --manifests (rendered charts)", () => {
    const dirs: string[] = [];
    const scratch = (prefix: string) => {
        const dir = tempDir(prefix);
        dirs.push(dir);
        return dir;
    };
    after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
    /** Checks YAML text given on standard input. */
    const verifyText = (yaml: string, stack = "staging", extra: string[] = [], dir?: string) =>
        verifyPlacement(["--stack", stack, "--manifests", "-", ...extra], { stdin: async () => yaml, ...(dir ? { dir } : {}) });
    /** A copy of a stack file with one placement key changed, in a directory of its own. */
    const stackWith = (change: (placement: any) => void, stack = "staging") => {
        const dir = scratch("verify-config-");
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, `Pulumi.${stack}.yaml`), "utf8"));
        change(doc.config["notify-karpenter:placement"]);
        fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stringify(doc, { version: "1.1" }));
        return dir;
    };

    it("reports the pod templates that could run on ephemeral nodes, or that the admission policy would reject, and exits 1", async () => {
        const file = path.join(FIXTURES, "helm-template-notify.yaml");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", file]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal([
            `Manifests ${file} (1 file, 5 objects, 4 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack staging`,
            // The stable patch sets nodeSelector, not tolerations: the chart's tolerate-all stays, and admission refuses it.
            "  FAIL  Deployment notification-canada-ca/notify-api: stable Deployment: the patch sets nodeSelector eks.amazonaws.com/capacityType: ON_DEMAND but not tolerations, so the chart's stay; the admission policy (deny, namespace notification-canada-ca) would reject its pods: it tolerates every taint (operator Exists, no key) without the label notification-canada-ca/celery-burst=true; the chart must drop that",
            "  OK    Deployment notification-canada-ca/notify-documentation: stable Deployment: the patch sets nodeSelector eks.amazonaws.com/capacityType: ON_DEMAND, priorityClassName high-priority and the node affinity karpenter.sh/nodepool DoesNotExist; kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND does not match; required node affinity does not match",
            "  OK    Deployment notification-canada-ca/notify-celery-email-send-burst: burst Deployment (placement.burst.deployments): the program's patch adds the toleration and required node affinity for notification-canada-ca/ephemeral=true and the label notification-canada-ca/celery-burst=true",
            "  FAIL  CronJob notification-canada-ca/notify-cleanup: the admission policy (deny, namespace notification-canada-ca) would reject its pods: it tolerates the taint notification-canada-ca/ephemeral without the label notification-canada-ca/celery-burst=true; the chart must drop that",
            SUMMARY_FINDINGS(2),
        ]);
    });

    it("--json: one object in the documented schema (docs/json-output.md); --findings leaves the OK lines out, text or JSON", async () => {
        const file = path.join(FIXTURES, "helm-template-notify.yaml");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", file, "--json"]);
        expect(r).to.deep.include({ exitCode: 1, format: "json" });
        const report = JSON.parse(r.output);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "exitCode", "mode", "source", "files", "objects", "podTemplates", "nodePool", "warnings", "notes", "summary", "verdicts", "chartFields", "verdict"]);
        expect(Object.keys(report), "docs/json-output.md's table for verify-placement").to.deep.equal(documentedFields("verify-placement"));
        expect(report).to.deep.include({ schemaVersion: 1, command: "verify-placement", stack: "staging", exitCode: 1, mode: "manifests", source: file, files: 1, objects: 5, podTemplates: 4, nodePool: "notify-karpenter", verdict: SUMMARY_FINDINGS(2) });
        expect(report.summary).to.deep.equal({ ok: 2, warn: 0, fail: 2, unchecked: 0 });
        expect(report.verdicts.map((v: any) => [v.status, v.subject])).to.deep.equal([
            ["fail", "Deployment notification-canada-ca/notify-api"],
            ["ok", "Deployment notification-canada-ca/notify-documentation"],
            ["ok", "Deployment notification-canada-ca/notify-celery-email-send-burst"],
            ["fail", "CronJob notification-canada-ca/notify-cleanup"],
        ]);
        const findings = JSON.parse((await verifyPlacement(["--stack", "staging", "--manifests", file, "--json", "--findings"])).output);
        expect(findings.verdicts.map((v: any) => v.status)).to.deep.equal(["fail", "fail"]);
        expect(findings.summary).to.deep.equal(report.summary);
        const text = await verifyPlacement(["--stack", "staging", "--manifests", file, "--findings"]);
        expect(text.exitCode).to.equal(1);
        expect(text.output.split("\n").map((l) => l.slice(0, 60))).to.deep.equal([
            `Manifests ${file} (1 file, 5 objects, 4 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack staging: findings only (2 OK lines left out)`.slice(0, 60),
            "  FAIL  Deployment notification-canada-ca/notify-api: stable",
            "  FAIL  CronJob notification-canada-ca/notify-cleanup: the a",
            SUMMARY_FINDINGS(2).slice(0, 60),
        ]);
        // What could not be checked is JSON too, with the reason; a usage error stays text.
        const empty = JSON.parse((await verifyText("", "staging", ["--json"])).output);
        expect(empty).to.deep.include({ schemaVersion: 1, command: "verify-placement", stack: "staging", exitCode: 3 });
        expect(empty.error).to.match(/^Could not check: no Kubernetes objects in standard input/);
    });

    it("reads a directory of .yaml and .yml files (and Lists); the stack's node agents are allowed, other daemonsets are not", async () => {
        const dir = path.join(FIXTURES, "rendered");
        const r = await verifyPlacement(["--stack", "production", "--manifests", dir]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal([
            `Manifests ${dir} (2 files, 3 objects, 3 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack production`,
            "  OK    DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: node agent; new ephemeral nodes wait for it (startup taint nidhogg.uswitch.com/amazon-cloudwatch.aws-cloudwatch-agent)",
            "  FAIL  DaemonSet signoz/signoz-otel-agent: could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints)",
            "  OK    DaemonSet kube-system/ebs-csi-node: node agent of the aws-ebs-csi-driver EKS add-on (not patched: set its tolerations in the add-on's configurationValues)",
            // The fixture's agent tolerates every taint; the stack's only the new nodes' (tolerateAll: false, MW2-F7).
            "Fields the charts set otherwise than the stack's patches (1 field; each chart release puts its value back):",
            `  WARN  DaemonSet amazon-cloudwatch/aws-cloudwatch-agent tolerations: chart [{"operator":"Exists"}], stack a list of 5: set tolerations in GC Notify's aws-cloudwatch-agent release (plan-out/production/gc-notify-values/aws-cloudwatch-agent.yaml)`,
            SUMMARY_FINDINGS(1),
        ]);
    });

    it("allows only placement.nodeDaemonSets in kube-system: EKS add-ons are not in rendered charts, so a kube-system DaemonSet there is a chart's", async () => {
        const file = path.join(FIXTURES, "kube-system-daemonsets.yaml");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", file]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n").slice(1)).to.deep.equal([
            "  OK    DaemonSet kube-system/ebs-csi-node: node agent of the aws-ebs-csi-driver EKS add-on (not patched: set its tolerations in the add-on's configurationValues)",
            "  FAIL  DaemonSet kube-system/kube-proxy: could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints); a kube-system DaemonSet in manifests is not an EKS add-on: if it is a node agent, add it to placement.nodeDaemonSets",
            SUMMARY_FINDINGS(1),
        ]);
    });

    it("passes the stack's own offline plan: its patches keep everything but burst pods and node agents off", async () => {
        const out = scratch("verify-plan-");
        expect((await plan(["--stack", "production", "--out", out])).exitCode).to.equal(0);
        const r = await verifyPlacement(["--stack", "production", "--manifests", path.join(out, "manifests.yaml")]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/ \d+ objects, 29 pod templates\) /);
        expect(r.output).to.include(
            "  OK    Deployment notification-canada-ca/notify-celery-core-tasks-burst: burst Deployment (placement.burst.deployments): the program's patch adds the toleration and required node affinity for notification-canada-ca/ephemeral=true and the label notification-canada-ca/celery-burst=true",
        );
        expect(r.output).to.include("  OK    DaemonSet kube-system/secrets-provider-aws: node agent; new ephemeral nodes wait for it (startup taint nidhogg.uswitch.com/kube-system.secrets-provider-aws)");
        expect(r.output).to.include("  OK    DaemonSet falco/falco: node agent, allowed on ephemeral nodes (nodes do not wait for it)");
        expect(r.output).to.include("  OK    Deployment karpenter/burst-scale-down-order: kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule");
        expect(r.output).to.include("  OK    CronJob karpenter/node-recycler: kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND does not match; required node affinity does not match");
    });

    it("passes the scratch stack's plan: with no node agents there are no startup taints to start before", async () => {
        const out = scratch("verify-plan-");
        expect((await plan(["--stack", "scratch", "--out", out])).exitCode).to.equal(0);
        const r = await verifyPlacement(["--stack", "scratch", "--manifests", path.join(out, "manifests.yaml")]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.include("  OK    Deployment default/celery-headroom: burst Celery pod (notification-canada-ca/celery-burst=true)");
    });

    it("exits 0 when only burst pods and node agents can land", async () => {
        const r = await verifyPlacement(["--stack", "staging", "--manifests", path.join(FIXTURES, "rendered", "nested")]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/\nNo pod template other than burst Celery pods and the node agents can run on ephemeral nodes$/);
    });

    describe("standard input", () => {
        // A writer that sends a document in pieces, 50 ms apart: the reader sees an empty non-blocking pipe in between.
        const slowWriter = () =>
            spawn(process.execPath, ["-e", `const parts = ${JSON.stringify(AGENT_TEXT.match(/[^]{1,400}/g))}; let i = 0; const next = () => i < parts.length ? process.stdout.write(parts[i++], () => setTimeout(next, 50)) : process.stdout.end(); next();`], {
                stdio: ["ignore", "pipe", "inherit"],
            });

        it("failed: fs.readFileSync(0) on a non-blocking pipe with no data yet throws EAGAIN (the issue's `could not read standard input: EAGAIN`)", async () => {
            // A writer that sends one piece and then waits: however slow this machine, the reader finds the pipe empty.
            const child = spawn(process.execPath, ["-e", `process.stdout.write(${JSON.stringify(AGENT_TEXT.slice(0, 400))}); setInterval(() => {}, 60_000);`], { stdio: ["ignore", "pipe", "inherit"] });
            await new Promise((resolve) => child.stdout.once("readable", resolve));
            const fd = (child.stdout as any)._handle.fd as number;
            let code = "";
            try {
                // Drains what is there, then finds the pipe empty while the writer still waits.
                fs.readFileSync(fd, "utf8");
            } catch (e) {
                code = (e as NodeJS.ErrnoException).code ?? "";
            }
            child.kill();
            expect(code).to.equal("EAGAIN");
        });

        it("now: reads a slow writer's pipe to its end, then checks it", async () => {
            const child = slowWriter();
            const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => readToEnd(child.stdout) });
            expect(r.output.split("\n").slice(0, 2)).to.deep.equal([
                "Manifests from standard input (1 file, 1 object, 1 pod template) against the ephemeral nodes of NodePool notify-karpenter, stack staging",
                "Note: 1 object named no namespace, put in xray (named like a placement.nodeDaemonSets entry): DaemonSet xray-daemon-aws-xray",
            ]);
        });

        it("refuses a terminal as standard input instead of waiting for typing", async () => {
            const wasTTY = process.stdin.isTTY;
            process.stdin.isTTY = true;
            try {
                const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"]);
                expect(r.exitCode).to.equal(2);
                expect(r.output.split("\n")[0]).to.equal("--manifests -: standard input is a terminal; pipe rendered manifests into it (helm template ... | npm run verify-placement -- ...)");
            } finally {
                process.stdin.isTTY = wasTTY;
            }
        });
    });

    withGcNotify("GC Notify's charts as Helm renders them (notification-manifests 609853e2, GC_NOTIFY_RENDERED_DIR)", () => {
        it("failed: refused the whole file over a duplicate key; now warns naming the file and line, and reads the last value as Helm does", async () => {
            const file = gcNotify("notify-admin.yaml");
            const r = await verifyPlacement(["--stack", "staging", "--manifests", file, "--namespace", "notification-canada-ca"]);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output.split("\n").slice(1, 3)).to.deep.equal([
                `Warning: ${file}:29: duplicate key "annotations" in one mapping; reading the last one, as Helm and kubectl do`,
                "Note: 1 object named no namespace, put in notification-canada-ca (--namespace): Deployment notify-admin",
            ]);
            expect(r.output).to.include("  OK    Deployment notification-canada-ca/notify-admin: stable Deployment: ");
            // The last of two keys is the one judged: here the second tolerations list, which tolerates nothing.
            const dup = "apiVersion: apps/v1\nkind: Job\nmetadata: { name: j, namespace: batch }\nspec:\n  template:\n    spec:\n      tolerations: [{ operator: Exists }]\n      tolerations: []\n      containers: [{ name: c, image: i }]\n";
            const last = await verifyText(dup);
            expect(last.exitCode, last.output).to.equal(0);
            expect(last.output).to.include("Warning: standard input:8: duplicate key \"tolerations\" in one mapping");
            expect(last.output).to.include("  OK    Job batch/j: kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule");
        });

        it("failed: ignored GC Notify's NodePool; now it clashes with the stack's of the same name, and the pods it admits are findings", async () => {
            const pool = gcNotify("karpenter-nodepool.yaml");
            const r = await verifyPlacement(["--stack", "staging", "--manifests", path.dirname(pool), "--namespace", "notification-canada-ca"]);
            expect(r.exitCode).to.equal(1);
            const lines = r.output.split("\n");
            expect(lines).to.include(
                `  FAIL  NodePool notify-karpenter (${pool}:27): has the stack's NodePool name but differs from it (taints: none, the stack's: notification-canada-ca/ephemeral=true:NoSchedule; startup taints: 4, the stack's: 4, not the same keys; requirements on karpenter.k8s.aws/instance-category, karpenter.k8s.aws/instance-cpu, karpenter.k8s.aws/instance-family, karpenter.k8s.aws/instance-generation, node.kubernetes.io/instance-type, topology.kubernetes.io/zone, workload-type; node labels): whatever renders it and this stack would overwrite each other's NodePool; remove it (GC Notify: the karpenter-nodepool release) before pulumi up`,
            );
            // No selector, no toleration: kept off the stack's tainted nodes, admitted by the untainted pool.
            expect(lines).to.include(`  FAIL  Deployment notification-canada-ca/ipv4-geolocate: could run on the nodes of NodePool notify-karpenter (${pool}:27), which this stack does not manage`);
            expect(lines).to.include(`  FAIL  Deployment amazon-cloudwatch/cwagent-prometheus: could run on the nodes of NodePool notify-karpenter (${pool}:27), which this stack does not manage`);
            expect(lines.at(-1)).to.match(/^\d+ findings: pod templates that could run on ephemeral nodes/);
            // A pool of another name is reported as such; only the pods it admits are findings.
            const renamed = fs.readFileSync(pool, "utf8").replace("name: notify-karpenter\n  annotations:\n    kubernetes.io/description: \"NodePool", "name: legacy-spot\n  annotations:\n    kubernetes.io/description: \"NodePool");
            const other = await verifyText(renamed + "\n---\n" + fs.readFileSync(gcNotify("ipv4-geolocate.yaml"), "utf8"));
            expect(other.output.split("\n").slice(1)).to.deep.equal([
                "  WARN  NodePool legacy-spot (standard input:27): another NodePool beside the stack's, with no taint: pods it would admit are findings below",
                "  FAIL  Deployment notification-canada-ca/ipv4-geolocate: could run on the nodes of NodePool legacy-spot (standard input:27), which this stack does not manage",
                SUMMARY_FINDINGS(1),
            ]);
        });

        it("failed: read the burst Deployments as `OK kept off`; now says what the patch changes and that the chart must drop the spot selector; and fails on the chart's 10 s kill and 60 s grace, which lose tasks", async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("notify-celery.yaml")]);
            expect(r.exitCode, r.output).to.equal(1);
            const lines = r.output.split("\n");
            expect(lines).to.include.members([
                "  WARN  Deployment notification-canada-ca/notify-celery-core-tasks-burst: burst Deployment (placement.burst.deployments): as rendered it cannot run on ephemeral nodes (does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule); the program's patch adds the toleration and required node affinity for notification-canada-ca/ephemeral=true and the label notification-canada-ca/celery-burst=true; the chart must drop nodeSelector karpenter.sh/capacity-type: spot (the patch leaves nodeSelector to the chart, and it still applies on top of the patch's node affinity)",
                "  OK    Deployment notification-canada-ca/notify-celery-nightly-burst: stable Deployment: the patch sets nodeSelector eks.amazonaws.com/capacityType: ON_DEMAND, priorityClassName high-priority and the node affinity karpenter.sh/nodepool DoesNotExist; kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND does not match; required node affinity does not match",
                // What Helm would put back at each notify-celery release (MW-M1, MW-M3, MW-W5), by the chart's own key.
                `  WARN  Deployment notification-canada-ca/notify-celery-email-send-burst nodeSelector: chart {"karpenter.sh/capacity-type":"spot"}, stack {"karpenter.sh/capacity-type":null}: set nodes.email-burst.deployment.nodeSelector in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml)`,
                `  WARN  Deployment notification-canada-ca/notify-celery-beat priorityClassName: chart null, stack "high-priority": set nodes.beat.deployment.priorityClassName in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml)`,
                `  WARN  PodDisruptionBudget notification-canada-ca/notify-celery-periodic-burst budget over the pods of burst Deployment notify-celery-periodic-burst: chart "enabled", stack "off (the stack's own budget covers these pods)": set nodes.periodic-burst.pdb.pdbEnabled in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml)`,
                // Issue 27: run_celery_exit.sh kills the worker 10 s after SIGTERM; a key needs the template change.
                `  FAIL  Deployment notification-canada-ca/notify-celery-email-send-burst terminationGracePeriodSeconds: chart 60, stack 100; after a release, a node's departure kills a running Celery task (GC Notify acknowledges tasks as they start, so it is lost): set nodes.email-burst.deployment.terminationGracePeriodSeconds in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml)`,
                `  FAIL  Deployment notification-canada-ca/notify-celery-email-send-burst preStop: chart ["/bin/bash","-c","/app/scripts/run_celery_exit.sh"], stack a list of 5; after a release, a node's departure kills a running Celery task (GC Notify acknowledges tasks as they start, so it is lost): set nodes.email-burst.deployment.preStopCommand in GC Notify's notify-celery release (plan-out/staging/gc-notify-values/notify-celery.yaml), once its chart renders the key (the template change in plan-out/staging/gc-notify-handover/celery-shutdown.md)`,
            ]);
            expect(lines.at(-1)).to.equal(SUMMARY_FINDINGS(10));
        });

        it("a burst Deployment whose chart selector the patch cannot overcome is a finding", async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", path.join(FIXTURES, "burst-mistakes.yaml")]);
            expect(r.exitCode).to.equal(1);
            expect(r.output).to.include(
                "  FAIL  Deployment notification-canada-ca/notify-celery-sms-send-burst: burst Deployment (placement.burst.deployments): as rendered it cannot run on ephemeral nodes (does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; nodeSelector karpenter.sh/capacity-type=on-demand does not match); the program's patch adds the toleration and required node affinity for notification-canada-ca/ephemeral=true and the label notification-canada-ca/celery-burst=true and sets priorityClassName celery, yet it still cannot run on ephemeral nodes: nodeSelector karpenter.sh/capacity-type=on-demand does not match; the chart must drop nodeSelector karpenter.sh/capacity-type: on-demand (the patch leaves nodeSelector to the chart, and it still applies on top of the patch's node affinity)",
            );
            // The patch replaces the chart's tolerate-all (tolerations are atomic), so the pod no longer starts before the agents.
            expect(r.output).to.include(
                "  OK    Deployment notification-canada-ca/notify-celery-core-tasks-burst: burst Deployment (placement.burst.deployments): the program's patch adds the toleration and required node affinity for notification-canada-ca/ephemeral=true and the label notification-canada-ca/celery-burst=true and sets priorityClassName celery",
            );
            // A burst-labelled pod the program does not patch is judged as rendered.
            const early = await verifyText("kind: Deployment\napiVersion: apps/v1\nmetadata: { name: extra-burst, namespace: notification-canada-ca }\nspec:\n  template:\n    metadata: { labels: { notification-canada-ca/celery-burst: \"true\" } }\n    spec: { tolerations: [{ operator: Exists }], containers: [{ name: c, image: i }] }\n");
            expect(early.output).to.include(
                "  FAIL  Deployment notification-canada-ca/extra-burst: burst Celery pod that could start before the node agents: it tolerates every taint (a toleration with operator Exists and no key)",
            );
        });

        it("failed: listed agents that only the patch brings to ephemeral nodes read `allowed`; now a warning says so, and names the fix", async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("xray-daemon.yaml")]);
            expect(r.exitCode, r.output).to.equal(0);
            expect(r.output.split("\n").slice(1, 3)).to.deep.equal([
                "Note: 1 object named no namespace, put in xray (named like a placement.nodeDaemonSets entry): DaemonSet xray-daemon-aws-xray",
                "  WARN  DaemonSet xray/xray-daemon-aws-xray: node agent, allowed on ephemeral nodes (nodes do not wait for it), which reaches ephemeral nodes only through the program's patch: as rendered it does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule. A helm upgrade of its release sets the chart's tolerations again (then it would stop running on ephemeral nodes until the next pulumi up): add a toleration with operator Exists to the chart's values",
            ]);
            // An agent new nodes wait for: losing the patch would keep every new node tainted.
            const waited = stackWith((p) => p.nodeDaemonSets.find((d: any) => d.name === "xray-daemon-aws-xray").waitFor = true);
            const w = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("xray-daemon.yaml")], { dir: waited });
            expect(w.output).to.include(
                "  WARN  DaemonSet xray/xray-daemon-aws-xray: node agent; new ephemeral nodes wait for it (startup taint nidhogg.uswitch.com/xray.xray-daemon-aws-xray), which reaches new ephemeral nodes only through the program's patch: as rendered it does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; does not tolerate the taint nidhogg.uswitch.com/kube-system.secrets-store-csi-driver:NoSchedule;",
            );
            expect(w.output).to.include("(then new ephemeral nodes would stay tainted and burst pods pending until the next pulumi up)");
        });

        it("failed: objects without a namespace landed in default silently; now a note says where each went, and listed agents are found by name", async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("aws-cloudwatch-agent.yaml"), "--namespace", "notification-canada-ca"]);
            expect(r.output.split("\n").slice(1, 3)).to.deep.equal([
                "Note: 1 object named no namespace, put in amazon-cloudwatch (named like a placement.nodeDaemonSets entry): DaemonSet aws-cloudwatch-agent",
                // cwagent-prometheus names its namespace; the CloudWatch agent's only tolerations are GC Notify's nidhogg keys.
                "  WARN  DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: node agent; new ephemeral nodes wait for it (startup taint nidhogg.uswitch.com/amazon-cloudwatch.aws-cloudwatch-agent), which reaches new ephemeral nodes only through the program's patch: as rendered it does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; does not tolerate the taint nidhogg.uswitch.com/kube-system.secrets-store-csi-driver:NoSchedule; does not tolerate the taint nidhogg.uswitch.com/kube-system.secrets-provider-aws:NoSchedule. A helm upgrade of its release sets the chart's tolerations again (then new ephemeral nodes would stay tainted and burst pods pending until the next pulumi up): add a toleration with operator Exists to the chart's values",
            ]);
            // Waited for, its chart's tolerations block burst capacity after the next release of it: a finding.
            expect(r.exitCode).to.equal(1);
            expect(r.output).to.include(
                "  FAIL  DaemonSet amazon-cloudwatch/aws-cloudwatch-agent tolerations: chart a list of 4, stack a list of 5; after a release new ephemeral nodes keep a startup taint this agent does not tolerate, and no burst pod can start: set tolerations in GC Notify's aws-cloudwatch-agent release (plan-out/staging/gc-notify-values/aws-cloudwatch-agent.yaml)",
            );
            const plain = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("notify-admin.yaml")]);
            expect(plain.output).to.include("Note: 1 object named no namespace, put in default (the default without --namespace): Deployment notify-admin");
        });

        it("the secrets provider: its default name is too long for a startup taint; renamed (fullnameOverride) it is the agent nodes wait for", async () => {
            const as = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("aws-secrets-provider.yaml")]);
            expect(as.exitCode).to.equal(1);
            expect(as.output).to.include("  FAIL  DaemonSet kube-system/aws-secrets-provider-secrets-store-csi-driver-provider-aws: could run on ephemeral nodes: it tolerates every taint");
            const renamed = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("aws-secrets-provider-renamed.yaml")]);
            expect(renamed.exitCode, renamed.output).to.equal(0);
            expect(renamed.output.split("\n")).to.include.members([
                "  OK    DaemonSet kube-system/secrets-provider-aws: node agent; new ephemeral nodes wait for it (startup taint nidhogg.uswitch.com/kube-system.secrets-provider-aws)",
                `  WARN  DaemonSet kube-system/secrets-provider-aws priorityClassName: chart "high-priority", stack "system-node-critical": set priorityClassName in GC Notify's aws-secrets-provider release (plan-out/staging/gc-notify-values/aws-secrets-provider.yaml)`,
                `  WARN  DaemonSet kube-system/secrets-store-csi-driver priorityClassName: chart "high-priority", stack "system-node-critical": set secrets-store-csi-driver.linux.priorityClassName in GC Notify's aws-secrets-provider release (plan-out/staging/gc-notify-values/aws-secrets-provider.yaml)`,
                "No pod template other than burst Celery pods and the node agents can run on ephemeral nodes",
            ]);
        });

        it("failed: only DaemonSets could be allowed; now placement.ephemeralAllowed allows any workload, and Helm hooks and test pods are called out", async () => {
            const r = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("aws-secrets-provider.yaml")]);
            expect(r.output).to.include(
                "  OK    Job kube-system/secrets-store-csi-driver-upgrade-crds (Helm hook pre-install,pre-upgrade): allowed by placement.ephemeralAllowed[0] (aws-secrets-provider's pre-install/pre-upgrade hook: applies CRDs for seconds)",
            );
            const none = stackWith((p) => delete p.ephemeralAllowed);
            const refused = await verifyPlacement(["--stack", "staging", "--manifests", gcNotify("aws-secrets-provider.yaml")], { dir: none });
            expect(refused.output).to.include(
                "  FAIL  Job kube-system/secrets-store-csi-driver-keep-crds (Helm hook pre-upgrade): could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints); if it may run there, allow it in placement.ephemeralAllowed",
            );
            // By label: a `helm test` pod.
            const byLabel = stackWith((p) => (p.ephemeralAllowed = [{ labels: { "app.kubernetes.io/component": "smoke-test" }, why: "helm test, runs for seconds" }]));
            const testPod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: api-test\n  namespace: tools\n  labels: { app.kubernetes.io/component: smoke-test }\n  annotations: { helm.sh/hook: test }\nspec: { tolerations: [{ operator: Exists }], containers: [{ name: c, image: i }] }\n";
            const t = await verifyText(testPod, "staging", [], byLabel);
            expect(t.exitCode, t.output).to.equal(0);
            expect(t.output).to.include("  OK    Pod tools/api-test (Helm test pod): allowed by placement.ephemeralAllowed[0] (helm test, runs for seconds)");
            // An allowance does not exempt a pod from the admission policy of the namespace it runs in.
            const inAdmitted = await verifyText(testPod.replace("namespace: tools", "namespace: notification-canada-ca"), "staging", [], byLabel);
            expect(inAdmitted.exitCode).to.equal(1);
            expect(inAdmitted.output).to.include(
                "  FAIL  Pod notification-canada-ca/api-test (Helm test pod): allowed by placement.ephemeralAllowed[0] (helm test, runs for seconds), but the admission policy (deny, namespace notification-canada-ca) would reject its pods: it tolerates every taint (operator Exists, no key) without the label notification-canada-ca/celery-burst=true; the chart must drop that",
            );
        });

        it("failed: templates it could not read counted as nothing (exit 0); now each is `not checked` and the run exits 3, or 1 with a finding", async () => {
            // A kind this check does not know, with a pod spec deep inside (a Ray cluster's worker groups).
            const rollout = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: { name: api, namespace: notification-canada-ca }\nspec:\n  workerGroupSpecs:\n  - template:\n      spec: { tolerations: [{ operator: Exists }], containers: [{ name: c, image: i }] }\n";
            const nullTemplate = "apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: a, namespace: n }\nspec: { template: null }\n";
            const noSpec = "apiVersion: batch/v1\nkind: Job\nmetadata: { name: b, namespace: n }\n";
            const badTolerations = "apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: n }\nspec: { tolerations: { operator: Exists }, containers: [] }\n";
            const badAffinity = "apiVersion: v1\nkind: Pod\nmetadata: { name: q, namespace: n }\nspec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [null] } }, containers: [] }\n";
            const r = await verifyText([rollout, nullTemplate, noSpec, badTolerations, badAffinity].join("---\n"));
            expect(r.exitCode).to.equal(3);
            expect(r.output.split("\n").slice(1)).to.deep.equal([
                "  NOT CHECKED  RayCluster notification-canada-ca/api: not checked: ray.io/v1 RayCluster is not a kind this check knows, yet it holds a pod spec at spec.workerGroupSpecs[0].template.spec: judge its pods live (--context), or ask for the kind to be added (plan/placementCheck.ts TEMPLATE_PATHS)",
                "  NOT CHECKED  Deployment n/a: not checked: spec.template is null",
                "  NOT CHECKED  Job n/b: not checked: no spec",
                "  NOT CHECKED  Pod n/p: not checked: its tolerations are not a list of tolerations",
                "  NOT CHECKED  Pod n/q: not checked: its preferred node affinity is not a list of weighted preferences",
                "5 pod templates not checked (above): the run cannot say nothing is misplaced",
            ]);
            const withFinding = await verifyText([rollout, fs.readFileSync(path.join(FIXTURES, "kube-system-daemonsets.yaml"), "utf8")].join("---\n"));
            expect(withFinding.exitCode).to.equal(1);
            // A Karpenter NodePool's template is not a pod template.
            const pool = await verifyText("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: { name: other }\nspec:\n  template:\n    spec:\n      requirements: []\n      nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: other }\n");
            expect(pool.output).to.not.include("NOT CHECKED");
        });
    });

    it("exits 3, not 1, when the manifests cannot be checked: invalid YAML, an unreadable file, nothing to read", async () => {
        const dir = scratch("verify-unreadable-");
        const broken = path.join(dir, "broken.yaml");
        fs.writeFileSync(broken, "kind: Deployment\nmetadata: { name: x\n");
        const invalid = await verifyPlacement(["--stack", "staging", "--manifests", broken]);
        expect(invalid.exitCode).to.equal(3);
        expect(invalid.output).to.match(new RegExp(`^Could not check: ${broken.replace(/[.\/]/g, "\\$&")}:\\d+ is not valid YAML: `));

        // A FIFO whose name ends in .yaml cannot be read as a file (a directory so named is walked like any other).
        const tree = path.join(dir, "tree");
        fs.mkdirSync(path.join(tree, "chart.yaml"), { recursive: true });
        spawnSync("mkfifo", [path.join(tree, "chart.yaml", "pipe.yaml")]);
        fs.copyFileSync(path.join(FIXTURES, "helm-template-notify.yaml"), path.join(tree, "a.yaml"));
        const unreadable = await verifyPlacement(["--stack", "staging", "--manifests", tree]);
        expect(unreadable).to.deep.equal({ exitCode: 3, output: `Could not check: --manifests ${path.join(tree, "chart.yaml", "pipe.yaml")}: is a FIFO (named pipe); it must be a regular file (rendered manifests)` });

        // What a failed `helm template ... |` leaves: empty input is not "nothing misplaced".
        expect(await verifyText("")).to.deep.equal({
            exitCode: 3,
            output: "Could not check: no Kubernetes objects in standard input; give the output of helm template or kustomize build",
        });
        const empty = path.join(dir, "empty");
        fs.mkdirSync(empty);
        expect((await verifyPlacement(["--stack", "staging", "--manifests", empty])).output).to.equal(
            `Could not check: no Kubernetes objects in ${empty} (0 YAML files); give the output of helm template or kustomize build`,
        );
        const failing = async () => {
            throw new Error("ECONNRESET: read");
        };
        expect((await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: failing })).output).to.equal("Could not check: could not read standard input: ECONNRESET: read");
    });

    it("failed: a file with no workload at all ended `no pod template ... can run on ephemeral nodes`, exit 0; now says no workload was found, exit 3", async () => {
        const services = "apiVersion: v1\nkind: Service\nmetadata: { name: api, namespace: n }\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: c, namespace: n }\n";
        expect(await verifyText(services)).to.deep.equal({
            exitCode: 3,
            output: "Could not check: no workload found in standard input: 2 objects, none a Pod, a workload with a pod template, a NodePool or a chart budget; give the output of helm template or kustomize build",
        });
    });

    it("failed: said `kept off` for a Pod bound to a node by spec.nodeName, which the scheduler never filters; now it is not checked (exit 3)", async () => {
        const bound = "apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: n }\nspec: { nodeName: ip-10-0-1-2.ca-central-1.compute.internal, containers: [{ name: c, image: i }] }\n";
        const r = await verifyText(bound);
        expect(r.exitCode).to.equal(3);
        expect(r.output.split("\n")[1]).to.equal(
            '  NOT CHECKED  Pod n/p: not checked: spec.nodeName binds its pods to node "ip-10-0-1-2.ca-central-1.compute.internal" without the scheduler, so no taint keeps them off an ephemeral node; check that node is not one',
        );
    });

    it("reads 5,000 objects in seconds, not minutes (finding lines by a precomputed index: it was quadratic)", async function () {
        this.timeout(20000);
        const one = (i: number) => `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d${i}, namespace: n }\nspec:\n  template:\n    spec: { containers: [{ name: c, image: i }] }\n`;
        const text = Array.from({ length: 5000 }, (_, i) => one(i)).join("---\n") + "---\n" + one(5000).replace("spec: { containers", "spec: { tolerations: [{ operator: Exists }], containers");
        const started = Date.now();
        const r = await verifyText(text);
        expect(Date.now() - started).to.be.below(6000);
        expect(r.output).to.include("  FAIL  Deployment n/d5000: could run on ephemeral nodes");
    });

    it("exits 1 on a refused stack config, as every command does", async () => {
        const dir = stackWith((p) => (p.headroom.pods = -1));
        const r = await verifyPlacement(["--stack", "staging", "--manifests", path.join(FIXTURES, "helm-template-notify.yaml")], { dir });
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/^invalid config:\nstaging: notify-karpenter:placement\.headroom\.pods /);
    });

    it("usage errors exit 2 and name the flag", async () => {
        expect(await verifyPlacement(["--stack", "staging"])).to.deep.equal({
            exitCode: 2,
            output: "give exactly one of --context (a live cluster) and --manifests (rendered files)\nusage: npm run verify-placement -- --stack <name> --context <kubecontext> [--json] [--findings]\n       npm run verify-placement -- --stack <name> --manifests <file, directory or -> [--namespace <name>] [--json] [--findings]\n(--help lists every flag)",
        });
        expect((await verifyPlacement(["--stack", "staging", "--manifests", "nowhere.yaml"])).output).to.match(/^--manifests: no such file or directory "nowhere\.yaml"/);
        expect((await verifyPlacement(["--stack", "staging", "--context", "x", "--namespace", "y"])).output).to.match(/^--namespace only applies to --manifests/);
        expect((await verifyPlacement(["--manifests", "x"])).output).to.match(/^--stack is required/);
    });
});

const pod = (namespace: string, name: string, nodeName: string, extra: { labels?: Record<string, string>; owner?: [string, string] } = {}) => ({
    metadata: {
        name,
        namespace,
        labels: extra.labels,
        ownerReferences: extra.owner ? [{ apiVersion: "apps/v1", kind: extra.owner[0], name: extra.owner[1], uid: "u" }] : undefined,
    },
    spec: { nodeName },
    status: { phase: "Running" },
});
const node = (name: string, ephemeral: boolean) => ({
    metadata: { name, labels: ephemeral ? { "notification-canada-ca/ephemeral": "true", "node.kubernetes.io/instance-type": "m6a.xlarge", "karpenter.sh/capacity-type": "spot" } : { "eks.amazonaws.com/capacityType": "ON_DEMAND" } },
});
const BURST = { "notification-canada-ca/celery-burst": "true" };

describe("npm run verify-placement --context (live cluster, fake API)", () => {
    let api: FakeKubeApi;
    afterEach(async () => api && (await api.stop()));

    const live = async (pods: object[]) => {
        api = await new FakeKubeApi(new FakeClock(), { nodes: [node("ip-10-0-1-1", true), node("ip-10-0-1-2", true), node("ip-10-0-9-9", false)], pods }).start();
        return verifyPlacement(["--stack", "staging", "--context", "staging"], { kubeConfig: () => api.kubeConfig() });
    };

    it("lists every pod on an ephemeral node, fails on the ones that may not be there and on burst pods on stable nodes", async () => {
        const r = await live([
            pod("notification-canada-ca", "notify-celery-email-send-burst-7c-a", "ip-10-0-1-1", { labels: BURST, owner: ["ReplicaSet", "notify-celery-email-send-burst-7c"] }),
            pod("amazon-cloudwatch", "aws-cloudwatch-agent-x1", "ip-10-0-1-1", { owner: ["DaemonSet", "aws-cloudwatch-agent"] }),
            pod("kube-system", "kube-proxy-x2", "ip-10-0-1-1", { owner: ["DaemonSet", "kube-proxy"] }),
            pod("kube-system", "ebs-csi-node-x4", "ip-10-0-1-1", { owner: ["DaemonSet", "ebs-csi-node"] }),
            pod("notification-canada-ca", "notify-documentation-5c-b", "ip-10-0-1-2", { owner: ["ReplicaSet", "notify-documentation-5c"] }),
            pod("signoz", "signoz-otel-agent-x3", "ip-10-0-1-2", { owner: ["DaemonSet", "signoz-otel-agent"] }),
            pod("kube-system", "coredns-5d-x5", "ip-10-0-1-2", { owner: ["ReplicaSet", "coredns-5d"] }),
            pod("notification-canada-ca", "notify-celery-sms-send-burst-9d-c", "ip-10-0-9-9", { labels: BURST, owner: ["ReplicaSet", "notify-celery-sms-send-burst-9d"] }),
            pod("notification-canada-ca", "notify-api-1", "ip-10-0-9-9", { owner: ["ReplicaSet", "notify-api-6b"] }),
        ]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal([
            "Pods on the ephemeral nodes of notification-canada-ca-staging-eks-cluster (context staging): 2 nodes, 7 pods",
            "ip-10-0-1-1 (m6a.xlarge, spot):",
            "  OK    notification-canada-ca/notify-celery-email-send-burst-7c-a: burst Celery pod",
            "  OK    amazon-cloudwatch/aws-cloudwatch-agent-x1: daemonset amazon-cloudwatch/aws-cloudwatch-agent",
            "  OK    kube-system/kube-proxy-x2: EKS add-on (kube-system DaemonSet)",
            "  OK    kube-system/ebs-csi-node-x4: daemonset kube-system/ebs-csi-node",
            "ip-10-0-1-2 (m6a.xlarge, spot):",
            "  FAIL  notification-canada-ca/notify-documentation-5c-b: ReplicaSet notify-documentation-5c: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent, an EKS add-on nor in placement.ephemeralAllowed",
            "  FAIL  signoz/signoz-otel-agent-x3: DaemonSet signoz-otel-agent: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent, an EKS add-on nor in placement.ephemeralAllowed",
            // Only DaemonSets in kube-system are add-ons; other kube-system pods are judged like any pod.
            "  FAIL  kube-system/coredns-5d-x5: ReplicaSet coredns-5d: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent, an EKS add-on nor in placement.ephemeralAllowed",
            "Burst pods on stable nodes (1):",
            "  FAIL  notification-canada-ca/notify-celery-sms-send-burst-9d-c on ip-10-0-9-9: burst pod on a stable node, although placement.burst.spillToStable is false",
            "FAILED: 3 pods on ephemeral nodes that must not be there, 1 burst pod on stable nodes",
        ]);
        expect(api.requests).to.deep.equal(["GET /api/v1/nodes", "GET /api/v1/pods"]);
    });

    it("--json lists each pod's verdict with its node and where it runs; --findings only the failures", async () => {
        const pods = [
            pod("notification-canada-ca", "notify-celery-email-send-burst-7c-a", "ip-10-0-1-1", { labels: BURST, owner: ["ReplicaSet", "notify-celery-email-send-burst-7c"] }),
            pod("notification-canada-ca", "notify-documentation-5c-b", "ip-10-0-1-2", { owner: ["ReplicaSet", "notify-documentation-5c"] }),
            pod("notification-canada-ca", "notify-celery-sms-send-burst-9d-c", "ip-10-0-9-9", { labels: BURST, owner: ["ReplicaSet", "notify-celery-sms-send-burst-9d"] }),
        ];
        api = await new FakeKubeApi(new FakeClock(), { nodes: [node("ip-10-0-1-1", true), node("ip-10-0-1-2", true), node("ip-10-0-9-9", false)], pods }).start();
        const run = (...extra: string[]) => verifyPlacement(["--stack", "staging", "--context", "staging", ...extra], { kubeConfig: () => api.kubeConfig() });
        // While it lists, it says so on standard error (progress), never in the report.
        const progressLines: string[] = [];
        const before = setProgressSink((l) => progressLines.push(l));
        const report = JSON.parse((await run("--json").finally(() => setProgressSink(before))).output);
        expect(progressLines.map((l) => l.replace(/[0-9.]+ s$/, "<t> s"))).to.deep.equal([
            "verify-placement: listing the ephemeral nodes and every pod of notification-canada-ca-staging-eks-cluster (context staging)",
            "verify-placement: listed 2 nodes and 3 pods in <t> s",
        ]);
        expect(Object.keys(report)).to.deep.equal(["schemaVersion", "command", "stack", "exitCode", "mode", "context", "cluster", "ephemeralNodes", "summary", "verdicts", "verdict"]);
        expect(report.ephemeralNodes).to.deep.equal([
            { name: "ip-10-0-1-1", instanceType: "m6a.xlarge", capacityType: "spot" },
            { name: "ip-10-0-1-2", instanceType: "m6a.xlarge", capacityType: "spot" },
        ]);
        expect(report.verdicts.map((v: any) => [v.status, v.subject, v.node, v.on])).to.deep.equal([
            ["ok", "notification-canada-ca/notify-celery-email-send-burst-7c-a", "ip-10-0-1-1", "ephemeral"],
            ["fail", "notification-canada-ca/notify-documentation-5c-b", "ip-10-0-1-2", "ephemeral"],
            ["fail", "notification-canada-ca/notify-celery-sms-send-burst-9d-c", "ip-10-0-9-9", "stable"],
        ]);
        expect(report.summary).to.deep.equal({ ok: 1, warn: 0, fail: 2, unchecked: 0 });
        expect(report.verdict).to.equal("FAILED: 1 pod on ephemeral nodes that must not be there, 1 burst pod on stable nodes");
        const text = await run("--findings");
        expect(text.output.split("\n").map((l) => l.split(":")[0])).to.deep.equal([
            "Pods on the ephemeral nodes of notification-canada-ca-staging-eks-cluster (context staging)",
            "ip-10-0-1-2 (m6a.xlarge, spot)",
            "  FAIL  notification-canada-ca/notify-documentation-5c-b",
            "Burst pods on stable nodes (1)",
            "  FAIL  notification-canada-ca/notify-celery-sms-send-burst-9d-c on ip-10-0-9-9",
            "FAILED",
        ]);
    });

    it("exits 0 when only burst pods and node agents run there", async () => {
        const r = await live([
            pod("notification-canada-ca", "notify-celery-email-send-burst-7c-a", "ip-10-0-1-1", { labels: BURST }),
            pod("amazon-cloudwatch", "fb-agent-fluent-bit-x1", "ip-10-0-1-2", { owner: ["DaemonSet", "fb-agent-fluent-bit"] }),
            pod("notification-canada-ca", "notify-api-1", "ip-10-0-9-9", { owner: ["ReplicaSet", "notify-api-6b"] }),
        ]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/\nOK: only burst Celery pods and the node agents run on ephemeral nodes$/);
    });

    for (const [code, reason] of [
        [401, "HTTP 401 Unauthorized: the API server refused the credentials (expired token or SSO session? aws eks update-kubeconfig, aws sso login)"],
        [403, "HTTP 403 Forbidden: the user may not list nodes and pods in all namespaces"],
        [503, "list nodes: HTTP 503 (cannot list nodes)"],
    ] as const) {
        it(`exits 3, not 1, when the API answers ${code}: nothing was checked`, async () => {
            api = await new FakeKubeApi(new FakeClock(), { listStatus: code }).start();
            const r = await verifyPlacement(["--stack", "staging", "--context", "staging"], { kubeConfig: () => api.kubeConfig() });
            expect(r).to.deep.equal({ exitCode: 3, output: `Could not check: could not list the nodes and pods of notification-canada-ca-staging-eks-cluster (context staging): ${reason}` });
        });
    }

    it("exits 3 when the cluster is unreachable or the kubeconfig unreadable", async () => {
        api = await new FakeKubeApi(new FakeClock()).start();
        const kc = api.kubeConfig();
        await api.stop();
        const down = await verifyPlacement(["--stack", "staging", "--context", "staging"], { kubeConfig: () => kc });
        expect(down.exitCode).to.equal(3);
        expect(down.output).to.match(/^Could not check: could not list the nodes and pods of notification-canada-ca-staging-eks-cluster \(context staging\): list (nodes|pods): fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
        const unreadable = await verifyPlacement(["--stack", "staging", "--context", "staging"], {
            kubeConfig: () => {
                throw new Error("/root/.kube/config: bad indentation of a mapping entry (3:5)");
            },
        });
        expect(unreadable).to.deep.equal({ exitCode: 3, output: "Could not check: could not load the kubeconfig: /root/.kube/config: bad indentation of a mapping entry (3:5)" });
    });

    it("refuses a context whose cluster is not the stack's", async () => {
        api = await new FakeKubeApi(new FakeClock()).start();
        const r = await verifyPlacement(["--stack", "production", "--context", "staging"], { kubeConfig: () => api.kubeConfig() });
        expect(r.exitCode).to.equal(2);
        expect(r.output).to.match(/^--context staging is cluster "arn:aws:eks:ca-central-1:123456789012:cluster\/notification-canada-ca-staging-eks-cluster" .*not the stack's cluster notification-canada-ca-production-eks-cluster/);
        expect(api.requests).to.deep.equal([]);
    });

    it("allows what placement.ephemeralAllowed names: a Job by its name, a Deployment's pods through their ReplicaSet, pods by label", () => {
        const rules = {
            ...placementRules(stackConfig("staging")),
            allowed: [
                { kind: "Job", namespace: "kube-system", name: "secrets-store-csi-driver-upgrade-crds", why: "CRD hook" },
                { kind: "Deployment", namespace: "tools", name: "smoke", why: "smoke test" },
                { labels: { "app.kubernetes.io/component": "load-test" }, why: "load test" },
            ],
        };
        const { onEphemeral } = judgePods(
            [
                pod("kube-system", "secrets-store-csi-driver-upgrade-crds-x7k2p", "e1", { owner: ["Job", "secrets-store-csi-driver-upgrade-crds"] }),
                pod("tools", "smoke-6d4cf56db6-abcde", "e1", { owner: ["ReplicaSet", "smoke-6d4cf56db6"] }),
                pod("tools", "locust-1", "e1", { labels: { "app.kubernetes.io/component": "load-test" } }),
                pod("tools", "other-1", "e1", { owner: ["ReplicaSet", "other-5c"] }),
            ] as any,
            new Set(["e1"]),
            rules,
        );
        expect(onEphemeral.map((v) => `${v.status} ${v.subject}: ${v.reason}`)).to.deep.equal([
            "ok kube-system/secrets-store-csi-driver-upgrade-crds-x7k2p: allowed by placement.ephemeralAllowed[0] (CRD hook)",
            "ok tools/smoke-6d4cf56db6-abcde: allowed by placement.ephemeralAllowed[1] (smoke test)",
            "ok tools/locust-1: allowed by placement.ephemeralAllowed[2] (load test)",
            "fail tools/other-1: ReplicaSet other-5c: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent, an EKS add-on nor in placement.ephemeralAllowed",
        ]);
    });

    it("with spillToStable, burst pods on stable nodes are a warning, not a failure", () => {
        const rules = { ...placementRules(stackConfig("staging")), spillToStable: true };
        const { spilled } = judgePods([pod("notification-canada-ca", "b", "ip-10-0-9-9", { labels: BURST }) as any], new Set(["ip-10-0-1-1"]), rules);
        expect(spilled).to.deep.equal([{ node: "ip-10-0-9-9", status: "warn", subject: "notification-canada-ca/b", reason: "burst pod on a stable node (allowed: placement.burst.spillToStable is true)" }]);
    });
});

describe("npm run verify-placement: selectors on labels the node model cannot know (found in review)", () => {
    it("never says kept off for a pod that tolerates the taint and selects a label every node has, or a node by name", async () => {
        const pod = (name: string, spec: Record<string, unknown>) => ({
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name, namespace: "monitoring" },
            spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { tolerations: [{ operator: "Exists" }], containers: [{ name: "c", image: "x" }], ...spec } } },
        });
        const term = (e: Record<string, unknown>) => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [e] } } } });
        const docs = [
            pod("region-sel", { nodeSelector: { "topology.kubernetes.io/region": "ca-central-1" } }),
            pod("gen-sel", term({ matchExpressions: [{ key: "karpenter.k8s.aws/instance-generation", operator: "Gt", values: ["4"] }] })),
            pod("host-sel", term({ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "Exists" }] })),
            pod("fields", term({ matchFields: [{ key: "metadata.name", operator: "In", values: ["ip-10-0-1-1"] }] })),
        ];
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: async () => docs.map((d) => JSON.stringify(d)).join("\n---\n") });
        expect(r.exitCode, r.output).to.equal(1);
        for (const name of ["region-sel", "gen-sel", "host-sel", "fields"]) expect(r.output).to.match(new RegExp(`FAIL  Deployment monitoring/${name}: could run on ephemeral nodes`));
    });

    it("reports a template whose matchExpressions is not a list as not checked, and judges the rest of the file", async () => {
        const broken = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "oops", namespace: "monitoring" }, spec: { template: { spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: "oops" }] } } }, containers: [{ name: "c", image: "x" }] } } } };
        const fine = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "fine", namespace: "monitoring" }, spec: { template: { spec: { containers: [{ name: "c", image: "x" }] } } } };
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: async () => `${JSON.stringify(broken)}\n---\n${JSON.stringify(fine)}` });
        expect(r.exitCode, r.output).to.equal(3);
        expect(r.output).to.match(/NOT CHECKED.*oops.*matchExpressions or matchFields is not a list of requirements/);
        expect(r.output).to.match(/OK    Deployment monitoring\/fine/);
    });
});
