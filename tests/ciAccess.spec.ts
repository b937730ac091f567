// The plan's ci-access/ files (plan/ciAccess.ts): Terraform for GC Notify's notification-terraform, parsed with
// HashiCorp's own HCL parser (@cdktf/hcl2json, its Go hcl library built to WebAssembly) and read back, and laid out as
// `terraform fmt` lays it out (@cdktf/hcl-tools: hclwrite's Format, which `terraform fmt` runs): the two GitHub OIDC
// roles, trusted for this repository's environments only, with three-hour sessions; their policies statement for
// statement as plan/ciAccess.ts builds them, each well under IAM's size limit; the VPN secrets; the aws-auth mappings
// and the access entries. The preview policy against every AWS call is in tests/preflight.spec.ts (it runs preflight
// against the fake AWS).
import { expect } from "chai";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { plan } from "../plan/cli.ts";
import {
    CI_ACCESS_DIR,
    IAM_POLICY_CHARACTERS,
    MAX_SESSION_SECONDS,
    POLICY_CHARACTERS_BUDGET,
    PREVIEW_GROUP,
    type PolicyDocument,
    type PolicyStatement,
    REPOSITORY,
    ciAccessFileNames,
    ciEnvironments,
    ciPolicies,
    ciRoleNames,
    environmentSubject,
    previewPolicy,
    upPolicy,
} from "../plan/ciAccess.ts";
import { policyAllows } from "../ops/preflightChecks.ts";
import { PLACEHOLDERS } from "../plan/offlineRuntime.ts";
import { PROJECT_DIR } from "../stacks/stackNames.ts";
import { buildStack, stackConfig } from "./helpers.ts";
import { hcl, terraformFmt } from "./hclTools.ts";

const STACKS = ["staging", "production"];
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "ci-access-"));

const one = (blocks: any, id: string) => {
    expect(blocks, `no block ${id}`).to.have.property(id);
    return blocks[id][0];
};

/** An aws_iam_policy_document's statements as IAM's JSON (what its `.json` renders). */
function statementsOf(doc: any): PolicyStatement[] {
    return doc.statement.map((s: any) => ({
        Sid: s.sid,
        Effect: s.effect,
        Action: s.actions,
        Resource: s.resources,
        ...(s.condition ? { Condition: Object.fromEntries(s.condition.map((c: any) => [c.test, { [c.variable]: c.values }])) } : {}),
    }));
}

describe("CI access for GC Notify's Terraform (npm run plan: ci-access/)", function () {
    this.timeout(60000);
    const out: Record<string, string> = {};
    const files = (stack: string, f: string) => fs.readFileSync(path.join(out[stack], CI_ACCESS_DIR, f), "utf8");

    before(async () => {
        for (const stack of [...STACKS, "scratch"]) {
            out[stack] = tempDir();
            const r = await plan(["--stack", stack, "--out", out[stack]]);
            expect(r.exitCode, r.output).to.equal(0);
        }
    });
    after(() => {
        for (const dir of Object.values(out)) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("writes ci-access/ for staging and production (GC Notify's existing clusters), none for scratch's own cluster, and says so", async () => {
        const drill = (stack: string): string[] => (stackConfig(stack).drill.enabled ? [] : [ciAccessFileNames(stack).drillPolicy]);
        for (const stack of STACKS) expect(fs.readdirSync(path.join(out[stack], CI_ACCESS_DIR)).sort()).to.deep.equal(Object.values(ciAccessFileNames(stack)).filter((f) => !drill(stack).includes(f)).sort());
        expect(fs.existsSync(path.join(out.scratch, CI_ACCESS_DIR))).to.equal(false);
        // A stack that moved to a created cluster leaves no earlier ci-access files behind (those an earlier plan
        // wrote, by its record); a file of someone else's there stays.
        const dir = tempDir();
        try {
            expect((await plan(["--stack", "staging", "--out", dir])).exitCode).to.equal(0);
            fs.writeFileSync(path.join(dir, CI_ACCESS_DIR, "notes.md"), "mine");
            expect((await plan(["--stack", "scratch", "--out", dir])).exitCode).to.equal(0);
            expect(fs.readdirSync(path.join(dir, CI_ACCESS_DIR))).to.deep.equal(["notes.md"]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
        const r = await plan(["--stack", "staging", "--out", out.staging]);
        expect(r.output).to.include("ci-access/: CI's GitHub OIDC roles and their cluster access, for GC Notify's Terraform (its README.md)");
        expect(r.output).to.not.include("warning: ci-access");
    });

    it("names the files GC Notify's repository takes for their stack, so both stacks' files fit in one folder of notification-terraform (MW2-F11)", () => {
        const [staging, production] = STACKS.map((s) => ciAccessFileNames(s));
        for (const kind of ["roles", "awsAuth", "accessEntries"] as const) {
            expect(staging[kind]).to.not.equal(production[kind]);
            expect(staging[kind]).to.match(/^notify-karpenter-staging-/);
        }
    });

    it("writes every Terraform file as terraform fmt does, so notification-terraform's `terragrunt run-all fmt --check` passes (EN2-F8, MW2-F2)", async () => {
        for (const stack of STACKS) {
            const f = ciAccessFileNames(stack);
            for (const name of [f.roles, f.accessEntries]) expect(await terraformFmt(files(stack, name)), `${stack} ${name}`).to.equal(files(stack, name));
            // The aws-auth lines where they go: one more argument of concat() in aws/aws-auth/aws-auth.tf.
            const inConcat = `module "eks" {\n  aws_auth_roles = concat(\n    [],\n${files(stack, f.awsAuth)}  )\n}\n`;
            expect(await terraformFmt(inConcat), `${stack} ${f.awsAuth} in concat()`).to.equal(inConcat);
        }
        // The formatter is the real one: it realigns what the generator used to write.
        const misaligned = `data "x" "y" {\n  statement {\n    sid       = "A"\n    effect    = "Allow"\n    actions   = [\n      "a",\n      "b",\n    ]\n    resources = ["*"]\n  }\n}\n`;
        expect(await terraformFmt(misaligned)).to.include('    sid    = "A"\n    effect = "Allow"\n    actions = [\n');
    });

    it("keeps every policy well under IAM's 6,144 characters, whitespace not counted, with the account and region filled in (EN2-F9)", () => {
        for (const stack of STACKS) {
            const cfg = stackConfig(stack);
            const p = ciPolicies(cfg, recordings[stack]);
            const docs = { preview: p.preview, up: p.up, ...(p.drill ? { drill: p.drill } : {}) };
            expect(Object.keys(docs), stack).to.deep.equal(cfg.drill.enabled ? ["preview", "up", "drill"] : ["preview", "up"]);
            for (const [kind, doc] of Object.entries(docs)) {
                const size = JSON.stringify(doc).replaceAll("${var.account_id}", "123456789012").replaceAll("${var.region}", cfg.cluster.region).replace(/\s/g, "").length;
                expect(size, `${stack} ${kind}: ${size} of IAM's ${IAM_POLICY_CHARACTERS}`).to.be.below(POLICY_CHARACTERS_BUDGET);
            }
        }
    });

    const recordings: Record<string, Awaited<ReturnType<typeof buildStack>>> = {};
    before(async () => {
        for (const stack of STACKS) recordings[stack] = await buildStack(stack);
    });

    for (const stack of STACKS) {
        describe(stack, () => {
            const names = ciRoleNames(stack);
            const id = (n: string) => n.replace(/-/g, "_");
            const when = `\${var.env == "${stack}" ? 1 : 0}`;
            let roles: any;
            let rec: Awaited<ReturnType<typeof buildStack>>;
            const f = ciAccessFileNames(stack);
            before(async () => {
                roles = await hcl(f.roles, files(stack, f.roles));
                rec = recordings[stack];
            });

            it("two roles, each only for this stack's GC Notify environment, with sessions of two hours or more", () => {
                for (const kind of ["preview", "up"] as const) {
                    const role = one(roles.resource.aws_iam_role, id(names[kind]));
                    expect(role.name).to.equal(names[kind]);
                    expect(role.count).to.equal(when);
                    expect(role.provider).to.equal("${aws.core_services}");
                    expect(role.max_session_duration).to.equal(MAX_SESSION_SECONDS);
                    expect(role.max_session_duration).to.be.at.least(7200);
                    expect(role.assume_role_policy).to.equal(`\${data.aws_iam_policy_document.${id(names[kind])}_trust[0].json}`);
                }
            });

            it(`each role trusts ${REPOSITORY}'s jobs in its environments only, through the account's GitHub OIDC provider`, () => {
                const envs = ciEnvironments(stack);
                expect(envs.preview).to.deep.equal([`${stack}-preview`, `${stack}-drift`]);
                expect(envs.up).to.deep.equal([stack]);
                for (const kind of ["preview", "up"] as const) {
                    const [s] = one(roles.data.aws_iam_policy_document, `${id(names[kind])}_trust`).statement;
                    expect(s.actions).to.deep.equal(["sts:AssumeRoleWithWebIdentity"]);
                    expect(s.principals).to.deep.equal([{ type: "Federated", identifiers: ["arn:aws:iam::${var.account_id}:oidc-provider/token.actions.githubusercontent.com"] }]);
                    expect(s.condition).to.deep.equal([
                        { test: "StringEquals", variable: "token.actions.githubusercontent.com:aud", values: ["sts.amazonaws.com"] },
                        { test: "StringEquals", variable: "token.actions.githubusercontent.com:sub", values: envs[kind].map(environmentSubject) },
                    ]);
                    for (const sub of s.condition[1].values) expect(sub).to.match(new RegExp(`^repo:${REPOSITORY}:environment:${stack}(-[a-z-]+)?$`));
                }
            });

            it("the policies are plan/ciAccess.ts's statement for statement, and the up role holds them all (the drill's too, where the stack has it)", () => {
                const cfg = stackConfig(stack);
                const recording = { resources: rec.resources, calls: rec.calls };
                const up = upPolicy(cfg, recording);
                const drillName = `notify-karpenter-${stack}-drill`;
                const policyNames = { preview: names.preview, up: names.up, drill: drillName };
                const expected: Record<string, PolicyDocument> = { preview: previewPolicy(cfg, recording), up: up.policy, ...(up.drill ? { drill: up.drill } : {}) };
                expect(Boolean(up.drill), "a drill policy exactly where the drill is on").to.equal(cfg.drill.enabled);
                const file = { preview: f.previewPolicy, up: f.upPolicy, drill: f.drillPolicy };
                for (const kind of Object.keys(expected) as ("preview" | "up" | "drill")[]) {
                    expect(statementsOf(one(roles.data.aws_iam_policy_document, id(policyNames[kind])))).to.deep.equal(expected[kind].Statement);
                    expect(JSON.parse(files(stack, file[kind]))).to.deep.equal(expected[kind]);
                    const policy = one(roles.resource.aws_iam_policy, id(policyNames[kind]));
                    expect(policy).to.include({ name: policyNames[kind], policy: `\${data.aws_iam_policy_document.${id(policyNames[kind])}[0].json}`, count: when });
                }
                const attachments = Object.values(roles.resource.aws_iam_role_policy_attachment).map((a: any) => `${a[0].role} <- ${a[0].policy_arn}`);
                const role = (k: "preview" | "up") => `\${aws_iam_role.${id(names[k])}[0].name}`;
                const pol = (k: "preview" | "up" | "drill") => `\${aws_iam_policy.${id(policyNames[k])}[0].arn}`;
                const upHolds = ["preview", "up", ...(up.drill ? ["drill"] : [])] as ("preview" | "up" | "drill")[];
                expect(attachments.sort()).to.deep.equal([`${role("preview")} <- ${pol("preview")}`, ...upHolds.map((k) => `${role("up")} <- ${pol(k)}`)].sort());
            });

            it("keeps this repository's GHA_VPN_* secrets of the stack's environment in step with aws/eks's gha_vpn_* outputs, as manifest-secrets.tf does for notification-manifests (EN2-F16)", () => {
                const repoId = id(`notify-karpenter-${stack}`);
                expect(one(roles.data.github_repository, repoId)).to.include({ name: "notify-karpenter", count: when });
                const secrets = roles.resource.github_actions_secret;
                expect(Object.keys(secrets).sort()).to.deep.equal(["gha_vpn_cert", "gha_vpn_id", "gha_vpn_key"].map((s) => `${repoId}_${s}`));
                expect(one(secrets, `${repoId}_gha_vpn_cert`)).to.deep.include({
                    count: when,
                    repository: `\${data.github_repository.${repoId}[0].name}`,
                    secret_name: "GHA_VPN_CERT_${upper(var.env)}",
                    plaintext_value: "${var.gha_vpn_certificate}",
                    destroy_on_drift: false,
                });
                // The workflows pass exactly these names on (GHA_VPN_CERT_STAGING, ...).
                const main = fs.readFileSync(path.join(PROJECT_DIR, ".github", "workflows", "main.yml"), "utf8");
                for (const s of ["ID", "CERT", "KEY"]) expect(main).to.include(`secrets.GHA_VPN_${s}_${stack.toUpperCase()}`);
            });

            it("aws-auth: the up role to system:masters as the helmfile apply roles, the preview role to the read-only group (CONFIG_MAP)", async () => {
                const snippet = files(stack, f.awsAuth);
                // It parses where it goes: one more argument of concat() in aws/aws-auth/aws-auth.tf's aws_auth_roles.
                const inConcat = await hcl("aws-auth.tf", `module "eks" {\n  aws_auth_roles = concat(\n    [],\n${snippet}  )\n}\n`);
                expect(inConcat.module.eks[0].aws_auth_roles).to.include(`var.env == "${stack}" ? [`);
                const list = /\? (\[[\s\S]*\]) : \[\],/.exec(snippet)![1];
                const entries = (await hcl("list.tf", `locals {\n  roles = ${list}\n}\n`)).locals[0].roles;
                expect(entries).to.deep.equal([
                    { rolearn: `arn:aws:iam::\${var.account_id}:role/${names.up}`, username: names.up, groups: ["system:masters"] },
                    { rolearn: `arn:aws:iam::\${var.account_id}:role/${names.preview}`, username: names.preview, groups: [PREVIEW_GROUP] },
                ]);
            });

            it("access entries (modes API and API_AND_CONFIG_MAP): cluster admin for the up role, the read-only group for the preview role", async () => {
                const tf = await hcl(f.accessEntries, files(stack, f.accessEntries));
                const cluster = "${aws_eks_cluster.notification-canada-ca-eks-cluster.name}";
                const up = one(tf.resource.aws_eks_access_entry, id(names.up));
                const preview = one(tf.resource.aws_eks_access_entry, id(names.preview));
                expect(up).to.include({ cluster_name: cluster, principal_arn: `arn:aws:iam::\${var.account_id}:role/${names.up}`, type: "STANDARD", count: when });
                expect(preview).to.include({ cluster_name: cluster, principal_arn: `arn:aws:iam::\${var.account_id}:role/${names.preview}`, type: "STANDARD" });
                expect(preview.kubernetes_groups).to.deep.equal([PREVIEW_GROUP]);
                expect(Object.keys(tf.resource.aws_eks_access_policy_association)).to.deep.equal([id(names.up)]);
                const admin = one(tf.resource.aws_eks_access_policy_association, id(names.up));
                expect(admin).to.include({ policy_arn: "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy", principal_arn: `\${aws_eks_access_entry.${id(names.up)}[0].principal_arn}` });
                expect(admin.access_scope).to.deep.equal([{ type: "cluster" }]);
            });

            it("the up policy lets it create each AWS resource the plan has, on that resource's name, and nothing of another name", () => {
                const cfg = stackConfig(stack);
                const recording = { resources: rec.resources, calls: rec.calls };
                const up = upPolicy(cfg, recording);
                expect(up.unknown, "AWS resource types without a deploy statement in plan/ciAccess.ts").to.deep.equal([]);
                const both = { Version: "2012-10-17", Statement: [...previewPolicy(cfg, recording).Statement, ...up.policy.Statement, ...(up.drill?.Statement ?? [])] };
                const region = cfg.cluster.region;
                const fill = (doc: PolicyDocument) => JSON.parse(JSON.stringify(doc).replaceAll("${var.account_id}", PLACEHOLDERS.accountId).replaceAll("${var.region}", region));
                const policy = fill(both as PolicyDocument);
                const acct = PLACEHOLDERS.accountId;
                const allowed = (action: string, resource: string, context?: Record<string, string>) => policyAllows(policy, { action, resource, context }, { conditions: "evaluate" });
                const requests = (r: any): [string, string, Record<string, string>?][] => {
                    const i = r.inputs;
                    switch (r.type) {
                        case "aws:iam/role:Role": return [["iam:CreateRole", `arn:aws:iam::${acct}:role/${i.name}`], ["iam:TagRole", `arn:aws:iam::${acct}:role/${i.name}`]];
                        case "aws:iam/policy:Policy": return [["iam:CreatePolicy", `arn:aws:iam::${acct}:policy/${i.name}`], ["iam:CreatePolicyVersion", `arn:aws:iam::${acct}:policy/${i.name}`]];
                        case "aws:iam/rolePolicyAttachment:RolePolicyAttachment": return [["iam:AttachRolePolicy", `arn:aws:iam::${acct}:role/${i.role}`, { "iam:PolicyARN": i.policyArn }]];
                        case "aws:sqs/queue:Queue": return [["sqs:CreateQueue", `arn:aws:sqs:${region}:${acct}:${i.name}`], ["sqs:TagQueue", `arn:aws:sqs:${region}:${acct}:${i.name}`]];
                        case "aws:sqs/queuePolicy:QueuePolicy": return [["sqs:SetQueueAttributes", `arn:aws:sqs:${region}:${acct}:${String(i.queueUrl).split("/").pop()}`]];
                        case "aws:cloudwatch/eventRule:EventRule": return [["events:PutRule", `arn:aws:events:${region}:${acct}:rule/${i.name}`], ["events:TagResource", `arn:aws:events:${region}:${acct}:rule/${i.name}`]];
                        case "aws:cloudwatch/eventTarget:EventTarget": return [["events:PutTargets", `arn:aws:events:${region}:${acct}:rule/${i.rule}`]];
                        case "aws:cloudwatch/metricAlarm:MetricAlarm": return [["cloudwatch:PutMetricAlarm", `arn:aws:cloudwatch:${region}:${acct}:alarm:${i.name}`], ["cloudwatch:TagResource", `arn:aws:cloudwatch:${region}:${acct}:alarm:${i.name}`]];
                        case "aws:cloudwatch/dashboard:Dashboard": return [["cloudwatch:PutDashboard", `arn:aws:cloudwatch::${acct}:dashboard/${i.dashboardName}`]];
                        case "aws:cloudwatch/logMetricFilter:LogMetricFilter": return [["logs:PutMetricFilter", `arn:aws:logs:${region}:${acct}:log-group:${i.logGroupName}:*`]];
                        case "aws:eks/podIdentityAssociation:PodIdentityAssociation":
                            return [
                                ["eks:CreatePodIdentityAssociation", `arn:aws:eks:${region}:${acct}:cluster/${i.clusterName}`],
                                ["iam:PassRole", i.roleArn, { "iam:PassedToService": "pods.eks.amazonaws.com" }],
                            ];
                        case "aws:iam/rolePolicy:RolePolicy": return [["iam:PutRolePolicy", `arn:aws:iam::${acct}:role/${i.role}`]];
                        case "aws:cloudwatch/logGroup:LogGroup": return [["logs:CreateLogGroup", `arn:aws:logs:${region}:${acct}:log-group:${i.name}`], ["logs:TagResource", `arn:aws:logs:${region}:${acct}:log-group:${i.name}`]];
                        case "aws:fis/experimentTemplate:ExperimentTemplate":
                            return [
                                ["fis:CreateExperimentTemplate", `arn:aws:fis:${region}:${acct}:experiment-template/EXT1a2b3c4d5e6f7`],
                                ["fis:CreateExperimentTemplate", `arn:aws:fis:${region}:${acct}:action/aws:ec2:send-spot-instance-interruptions`],
                                ["fis:TagResource", `arn:aws:fis:${region}:${acct}:experiment-template/EXT1a2b3c4d5e6f7`],
                                ["iam:PassRole", i.roleArn, { "iam:PassedToService": "fis.amazonaws.com" }],
                            ];
                        default: throw new Error(`no create request for ${r.type} in this test`);
                    }
                };
                const aws = rec.resources.filter((r) => r.custom && r.type.startsWith("aws:"));
                expect(aws.length).to.be.above(40);
                for (const r of aws) for (const [action, resource, context] of requests(r)) expect(allowed(action, resource, context), `${r.type} ${r.name}: ${action} on ${resource}`).to.equal(true);
                // Only its own names, only its own policies, and the controller's role only to Pod Identity.
                const prefix = cfg.controller.namePrefix ?? cfg.cluster.name;
                const ownRole = `arn:aws:iam::${acct}:role/${prefix}-karpenter`;
                expect(allowed("iam:CreateRole", `arn:aws:iam::${acct}:role/notification-terraform-apply`)).to.equal(false);
                expect(allowed("iam:AttachRolePolicy", ownRole, { "iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess" })).to.equal(false);
                expect(allowed("iam:AttachRolePolicy", `arn:aws:iam::${acct}:role/eks-worker-role`, { "iam:PolicyARN": `arn:aws:iam::${acct}:policy/${prefix}-karpenter-interruption` })).to.equal(false);
                expect(allowed("iam:PassRole", ownRole, { "iam:PassedToService": "ec2.amazonaws.com" })).to.equal(false);
                // The drill's experiment role goes to FIS only, and no other role does.
                expect(allowed("iam:PassRole", `arn:aws:iam::${acct}:role/${prefix}-fis-drill`, { "iam:PassedToService": "ec2.amazonaws.com" })).to.equal(false);
                expect(allowed("iam:PassRole", ownRole, { "iam:PassedToService": "fis.amazonaws.com" })).to.equal(false);
                expect(allowed("cloudwatch:DeleteAlarms", `arn:aws:cloudwatch:${region}:${acct}:alarm:load-balancer-1-500-error-1-minute-warning`)).to.equal(false);
                expect(allowed("sqs:DeleteQueue", `arn:aws:sqs:${region}:${acct}:eks-notification-canada-cadelivery-receipts`)).to.equal(false);
            });
        });
    }

    it("the workflows give each role only jobs of its kind: previews (and drift) the preview role's environments, up the up role's", () => {
        const dir = path.join(PROJECT_DIR, ".github", "workflows");
        const literals = (v: unknown): string[] => {
            const text = String(v);
            if (!text.includes("${{")) return [text];
            // ${{ vars.X == 'true' && 'a' || 'b' }}: the environments it can name.
            return [...text.matchAll(/'([^']+)'/g)].map((m) => m[1]).filter((s) => s !== "true" && s !== "false");
        };
        let calls = 0;
        for (const file of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
            const wf = parseYaml(fs.readFileSync(path.join(dir, file), "utf8"));
            for (const [job, j] of Object.entries<any>(wf.jobs ?? {})) {
                if (j.uses !== "./.github/workflows/pulumi.yml") continue;
                const matrix: string[] = j.strategy?.matrix?.stack ?? [undefined];
                for (const m of matrix) {
                    const sub = (v: unknown) => String(v).replace(/\$\{\{\s*matrix\.stack\s*\}\}/g, m ?? "");
                    const stack = sub(j.with.stack);
                    const kind = j.with.command === "up" ? "up" : "preview";
                    for (const environment of literals(sub(j.with.environment))) {
                        calls++;
                        expect(ciEnvironments(stack)[kind], `${file} job ${job}: ${j.with.command} ${stack} in ${environment}`).to.include(environment);
                    }
                }
            }
        }
        expect(calls).to.be.at.least(6);
        // The session CI asks for fits in the roles' MaxSessionDuration (STS refuses a longer one).
        const pulumiYml = fs.readFileSync(path.join(dir, "pulumi.yml"), "utf8");
        const asked = Number(/role-duration-seconds:\s*([0-9]+)/.exec(pulumiYml)?.[1] ?? 3600);
        expect(asked).to.be.at.most(MAX_SESSION_SECONDS);
    });

    it("the parser refuses broken Terraform, so the files above parse because they are well formed", async () => {
        const good = files("staging", ciAccessFileNames("staging").roles);
        await hcl("ok.tf", good);
        let error = "";
        await hcl("broken.tf", good.replace("max_session_duration =", "max_session_duration")).catch((e) => (error = String(e)));
        expect(error).to.match(/broken\.tf:[0-9]+/);
    });
});
