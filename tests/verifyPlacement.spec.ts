import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { judgePods, placementRules, verifyPlacement } from "../ops/verifyPlacement";
import { plan } from "../plan/cli";
import { parse, stringify } from "yaml";
import { PROJECT_DIR } from "../plan/offlineRuntime";
import { FakeClock, FakeKubeApi } from "./fakeKubeApi";
import { stackConfig } from "./helpers";
import { tempDir } from "./opsHelpers";

const FIXTURES = path.join(__dirname, "fixtures");

describe("npm run verify-placement --manifests (rendered charts)", () => {
    it("reports the pod templates that could run on ephemeral nodes, with the reason, and exits 1", async () => {
        const file = path.join(FIXTURES, "helm-template-notify.yaml");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", file]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal([
            `Manifests ${file} (1 file, 5 objects, 4 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack staging`,
            "  FAIL  Deployment notification-canada-ca/notify-api: could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints)",
            "  OK    Deployment notification-canada-ca/notify-documentation: kept off: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule",
            "  OK    Deployment notification-canada-ca/notify-celery-email-send-burst: burst Celery pod (notification-canada-ca/celery-burst=true)",
            "  FAIL  CronJob notification-canada-ca/notify-cleanup: could run on ephemeral nodes: it tolerates notification-canada-ca/ephemeral=true:NoSchedule",
            "2 pod templates could run on ephemeral nodes but must not",
        ]);
    });

    it("reads a directory of .yaml and .yml files (and Lists); the stack's node agents are allowed, other daemonsets are not", async () => {
        const dir = path.join(FIXTURES, "rendered");
        const r = await verifyPlacement(["--stack", "production", "--manifests", dir]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")).to.deep.equal([
            `Manifests ${dir} (2 files, 3 objects, 3 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack production`,
            "  OK    DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: allowed daemonset (node agent)",
            "  FAIL  DaemonSet signoz/signoz-otel-agent: could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints)",
            "  OK    DaemonSet kube-system/ebs-csi-node: allowed daemonset (node agent)",
            "1 pod template could run on ephemeral nodes but must not",
        ]);
    });

    it("allows only placement.nodeDaemonSets in kube-system: EKS add-ons are not in rendered charts, so a kube-system DaemonSet there is a chart's", async () => {
        const file = path.join(FIXTURES, "kube-system-daemonsets.yaml");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", file]);
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n").slice(1)).to.deep.equal([
            "  OK    DaemonSet kube-system/ebs-csi-node: allowed daemonset (node agent)",
            "  FAIL  DaemonSet kube-system/kube-proxy: could run on ephemeral nodes: it tolerates every taint (a toleration with operator Exists and no key), even before the node agents are ready (startup taints); a kube-system DaemonSet in manifests is not an EKS add-on: if it is a node agent, add it to placement.nodeDaemonSets",
            "1 pod template could run on ephemeral nodes but must not",
        ]);
    });

    it("passes the stack's own offline plan: its patches keep everything but burst pods and node agents off", async () => {
        const out = tempDir("verify-plan-");
        expect((await plan(["--stack", "production", "--out", out])).exitCode).to.equal(0);
        const r = await verifyPlacement(["--stack", "production", "--manifests", path.join(out, "manifests.yaml")]);
        expect(r.exitCode, r.output).to.equal(0);
        expect(r.output).to.match(/ \d+ objects, 23 pod templates\) /);
        expect(r.output).to.include("  OK    Deployment notification-canada-ca/notify-celery-core-tasks-burst: burst Celery pod (notification-canada-ca/celery-burst=true)");
        expect(r.output).to.include("  OK    DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: allowed daemonset (node agent)");
    });

    it("passes the scratch stack's plan: with no node agents there are no startup taints to start before", async () => {
        const out = tempDir("verify-plan-");
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

    it("reads standard input with --manifests - (helm template ... | npm run verify-placement -- --manifests -)", async () => {
        const yaml = fs.readFileSync(path.join(FIXTURES, "helm-template-notify.yaml"), "utf8");
        const r = await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => yaml });
        expect(r.exitCode).to.equal(1);
        expect(r.output.split("\n")[0]).to.equal("Manifests from standard input (1 file, 5 objects, 4 pod templates) against the ephemeral nodes of NodePool notify-karpenter, stack staging");
    });

    it("puts objects without a namespace in --namespace (helm template without -n), else in default", async () => {
        const file = path.join(FIXTURES, "cloudwatch-agent-no-namespace.yaml");
        const placed = await verifyPlacement(["--stack", "staging", "--manifests", file, "--namespace", "amazon-cloudwatch"]);
        expect(placed.exitCode, placed.output).to.equal(0);
        expect(placed.output).to.include("  OK    DaemonSet amazon-cloudwatch/aws-cloudwatch-agent: allowed daemonset (node agent)");
        const unplaced = await verifyPlacement(["--stack", "staging", "--manifests", file]);
        expect(unplaced.exitCode).to.equal(1);
        expect(unplaced.output).to.include("  FAIL  DaemonSet default/aws-cloudwatch-agent: could run on ephemeral nodes");
    });

    it("flags burst pods that could start before the node agents, and burst pods kept off", async () => {
        const r = await verifyPlacement(["--stack", "staging", "--manifests", path.join(FIXTURES, "burst-mistakes.yaml")]);
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.include(
            "  FAIL  Deployment notification-canada-ca/notify-celery-core-tasks-burst: burst Celery pod that could start before the node agents: it tolerates every taint (a toleration with operator Exists and no key)",
        );
        expect(r.output).to.include(
            "  WARN  Deployment notification-canada-ca/notify-celery-sms-send-burst: burst Celery pod that cannot run on ephemeral nodes: does not tolerate the taint notification-canada-ca/ephemeral=true:NoSchedule; nodeSelector karpenter.sh/capacity-type=on-demand does not match",
        );
    });

    it("exits 3, not 1, when the manifests cannot be checked: invalid YAML, an unreadable file, nothing to read", async () => {
        const dir = tempDir("verify-unreadable-");
        const broken = path.join(dir, "broken.yaml");
        fs.writeFileSync(broken, "kind: Deployment\nmetadata: { name: x\n");
        const invalid = await verifyPlacement(["--stack", "staging", "--manifests", broken]);
        expect(invalid.exitCode).to.equal(3);
        expect(invalid.output).to.match(new RegExp(`^Could not check: ${broken.replace(/[.\/]/g, "\\$&")} is not valid YAML: `));

        // A directory whose name ends in .yaml cannot be read as a file.
        const tree = path.join(dir, "tree");
        fs.mkdirSync(path.join(tree, "chart.yaml"), { recursive: true });
        fs.copyFileSync(path.join(FIXTURES, "helm-template-notify.yaml"), path.join(tree, "a.yaml"));
        const unreadable = await verifyPlacement(["--stack", "staging", "--manifests", tree]);
        expect(unreadable).to.deep.equal({ exitCode: 3, output: `Could not check: could not read ${path.join(tree, "chart.yaml")}: EISDIR: illegal operation on a directory, read` });

        // What a failed `helm template ... |` leaves: empty input is not "nothing misplaced".
        expect(await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => "" })).to.deep.equal({
            exitCode: 3,
            output: "Could not check: no Kubernetes objects in standard input; give the output of helm template or kustomize build",
        });
        const empty = path.join(dir, "empty");
        fs.mkdirSync(empty);
        expect((await verifyPlacement(["--stack", "staging", "--manifests", empty])).output).to.equal(
            `Could not check: no Kubernetes objects in ${empty} (0 YAML files); give the output of helm template or kustomize build`,
        );
        expect((await verifyPlacement(["--stack", "staging", "--manifests", "-"], { stdin: () => { throw new Error("EAGAIN: resource temporarily unavailable, read"); } })).output).to.equal(
            "Could not check: could not read standard input: EAGAIN: resource temporarily unavailable, read",
        );
    });

    it("exits 1 on a refused stack config, as every command does", async () => {
        const dir = tempDir("verify-config-");
        const doc = parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.staging.yaml"), "utf8"));
        doc.config["notify-karpenter:placement"].headroom.pods = -1;
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), stringify(doc));
        const r = await verifyPlacement(["--stack", "staging", "--manifests", path.join(FIXTURES, "helm-template-notify.yaml")], { dir });
        expect(r.exitCode).to.equal(1);
        expect(r.output).to.match(/^invalid config:\nstaging: notify-karpenter:placement\.headroom\.pods /);
    });

    it("usage errors exit 2 and name the flag", async () => {
        expect(await verifyPlacement(["--stack", "staging"])).to.deep.equal({
            exitCode: 2,
            output: "give exactly one of --context (a live cluster) and --manifests (rendered files)\nusage: npm run verify-placement -- --stack <name> --context <kubecontext>\n       npm run verify-placement -- --stack <name> --manifests <file, directory or -> [--namespace <name>]\n(--help lists every flag)",
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
            "  FAIL  notification-canada-ca/notify-documentation-5c-b: ReplicaSet notify-documentation-5c: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent nor an EKS add-on",
            "  FAIL  signoz/signoz-otel-agent-x3: DaemonSet signoz-otel-agent: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent nor an EKS add-on",
            // Only DaemonSets in kube-system are add-ons; other kube-system pods are judged like any pod.
            "  FAIL  kube-system/coredns-5d-x5: ReplicaSet coredns-5d: neither a burst Celery pod (notification-canada-ca/celery-burst=true), a node agent nor an EKS add-on",
            "Burst pods on stable nodes (1):",
            "  FAIL  notification-canada-ca/notify-celery-sms-send-burst-9d-c on ip-10-0-9-9: burst pod on a stable node, although placement.burst.spillToStable is false",
            "FAILED: 3 pods on ephemeral nodes that must not be there, 1 burst pod on stable nodes",
        ]);
        expect(api.requests).to.deep.equal(["GET /api/v1/nodes", "GET /api/v1/pods"]);
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
        [503, "HTTP 503 from the API server"],
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
        expect(down.output).to.match(/^Could not check: could not list the nodes and pods of notification-canada-ca-staging-eks-cluster \(context staging\): fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
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

    it("with spillToStable, burst pods on stable nodes are a warning, not a failure", () => {
        const rules = { ...placementRules(stackConfig("staging")), spillToStable: true };
        const { spilled } = judgePods([pod("notification-canada-ca", "b", "ip-10-0-9-9", { labels: BURST }) as any], new Set(["ip-10-0-1-1"]), rules);
        expect(spilled).to.deep.equal([{ node: "ip-10-0-9-9", status: "warn", subject: "notification-canada-ca/b", reason: "burst pod on a stable node (allowed: placement.burst.spillToStable is true)" }]);
    });
});
