// The generated Karpenter module and its evaluation: every CEL rule runs in our environment, the transition rules are
// the ones skipped, and a changed CRD regenerates into a module whose new rule the validator applies. Runs without
// the reference files: the CRDs written here are built from the checked-in module.
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import { stringify } from "yaml";
import { type CelRule, celCheck, isTransitionRule } from "../components/karpenter/cel.ts";
import { CRDS, type GeneratedCrd, KARPENTER_CRD_VERSION } from "../components/karpenter/generated/crds.ts";
import { compileCached, type KarpenterObject, toJsonSchema, validateKarpenterObject } from "../components/karpenter/validate.ts";
import { renderNodePool } from "../components/models/nodePool.ts";
import { nodePoolArgs } from "../stacks/componentArgs.ts";
import { KARPENTER_VERSION } from "../components/karpenter/version.ts";
import { CRD_FILES } from "../components/karpenter/generate.ts";
import { generateKarpenter } from "../scripts/generate-karpenter-schema.ts";
import { stackConfig } from "./helpers.ts";
import { tempDir } from "./opsHelpers.ts";
const require = createRequire(import.meta.url);

/** Every rule of a schema with the place it sits, as `spec.a.b[].c` (`{}` for a map's values). */
function rulesOf(schema: Record<string, any>, at = "spec"): { at: string; rule: CelRule }[] {
    const children: [string, any][] = [
        ...Object.entries(schema.properties ?? {}).map(([k, s]): [string, any] => [`${at}.${k}`, s]),
        ...(schema.items ? [[`${at}[]`, schema.items] as [string, any]] : []),
        ...(typeof schema.additionalProperties === "object" ? [[`${at}{}`, schema.additionalProperties] as [string, any]] : []),
    ];
    return [...(schema["x-kubernetes-validations"] ?? []).map((rule: CelRule) => ({ at, rule })), ...children.flatMap(([p, s]) => rulesOf(s, p))];
}

/** A CustomResourceDefinition holding `crd`'s spec schema, as the CRD files lay it out. */
function crdDocument(crd: GeneratedCrd): Record<string, unknown> {
    const [group, version] = crd.apiVersion.split("/");
    return {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: { NodePool: "nodepools", EC2NodeClass: "ec2nodeclasses" }[crd.kind] + `.${group}` },
        spec: { group, names: { kind: crd.kind }, scope: "Cluster", versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: crd.spec } } } }] },
    };
}

const staging = () => JSON.parse(JSON.stringify(renderNodePool(nodePoolArgs(stackConfig("staging"), "eks-worker-role"), "eks-worker-role"))) as { nodeClass: KarpenterObject; nodePool: KarpenterObject };

describe("Karpenter CRDs (components/karpenter/generated/crds.ts)", () => {
    it("are the pinned release's (KARPENTER_VERSION), NodePool karpenter.sh/v1 and EC2NodeClass karpenter.k8s.aws/v1", () => {
        expect(KARPENTER_CRD_VERSION).to.equal(KARPENTER_VERSION);
        expect(Object.values(CRDS).map((c) => [c.kind, c.apiVersion])).to.deep.equal([
            ["NodePool", "karpenter.sh/v1"],
            ["EC2NodeClass", "karpenter.k8s.aws/v1"],
        ]);
    });

    for (const crd of Object.values(CRDS)) {
        it(`every ${crd.kind} CEL rule and message expression type-checks here, so none needs a function the evaluator lacks`, () => {
            const rules = rulesOf(crd.spec);
            expect(rules).to.not.be.empty;
            for (const { at, rule } of rules) {
                for (const expression of [rule.rule, rule.messageExpression].filter((x): x is string => x !== undefined)) {
                    expect(celCheck(expression), `${at}: ${expression}`).to.deep.equal({ valid: true, error: undefined });
                }
            }
        });
    }

    it("skips exactly the transition rules (they read oldSelf, which an object being created has not)", () => {
        const transition = Object.values(CRDS).flatMap((c) => rulesOf(c.spec).filter(({ rule }) => isTransitionRule(rule.rule)).map(({ at, rule }) => `${at}: ${rule.message}`));
        expect(transition).to.deep.equal([
            "spec: Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",
            "spec.template.spec.nodeClassRef: nodeClassRef.group is immutable",
            "spec.template.spec.nodeClassRef: nodeClassRef.kind is immutable",
        ]);
    });

    it("validates a copy: the API server's defaults (disruption, metadataOptions) never reach the applied object", () => {
        const { nodeClass, nodePool } = staging();
        delete nodePool.spec.disruption;
        delete nodeClass.spec.metadataOptions;
        const before = JSON.stringify([nodeClass, nodePool]);
        expect([...validateKarpenterObject(nodeClass), ...validateKarpenterObject(nodePool)]).to.deep.equal([]);
        expect(JSON.stringify([nodeClass, nodePool])).to.equal(before);
    });

    it("reads limits as int-or-string quantities, as the CRD declares them", () => {
        const { nodePool } = staging();
        nodePool.spec.limits = { cpu: 400, memory: "1000Gi", "nvidia.com/gpu": 0 };
        expect(validateKarpenterObject(nodePool)).to.deep.equal([]);
        nodePool.spec.limits = { cpu: true, memory: "lots" };
        expect(validateKarpenterObject(nodePool)).to.deep.equal([
            { path: "spec.limits.cpu", message: "must be an integer or a string (got true)" },
            { path: "spec.limits.memory", message: String.raw`must match ^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$ (got "lots")` },
        ]);
    });

    it("converts each CRD into a valid JSON Schema (the validator skips ajv's meta-schema check at run time)", () => {
        const ajv = new Ajv({ strictTypes: false, allowUnionTypes: true });
        for (const crd of Object.values(CRDS)) expect(ajv.validateSchema(toJsonSchema(crd.spec)), `${crd.kind}: ${ajv.errorsText()}`).to.equal(true);
    });

    it("keeps each compiled validator in a cache that answers as a compile does; a damaged or unwritable cache only costs the compile", () => {
        const dir = tempDir("ajv-cache-");
        const { nodePool } = staging();
        nodePool.spec.limits = { cpu: true };
        nodePool.spec.disruption.budgets = [{ nodes: "ten", unknown: 1 }];
        const answer = (validate: ValidateFunction) => {
            const spec = structuredClone(nodePool.spec);
            validate(spec);
            return { spec, errors: validate.errors?.map(({ instancePath, keyword, params, message, parentSchema }) => ({ instancePath, keyword, params, message, parentSchema })) };
        };
        const schema = () => toJsonSchema(CRDS.NodePool.spec);
        const compiled = answer(compileCached(schema(), dir));
        expect(compiled.errors).to.have.length.above(2);
        const [file] = fs.readdirSync(dir);
        expect(file).to.match(/^ajv-[0-9a-f]{32}\.cjs$/);
        const cached = compileCached(schema(), dir);
        expect(cached, "loaded from the file, not compiled").not.to.have.property("schemaEnv");
        expect(answer(cached)).to.deep.equal(compiled);
        // Node keeps a module it loaded: a damaged file is another checkout's.
        const damaged = tempDir("ajv-cache-");
        fs.writeFileSync(path.join(damaged, file), "module.exports = (");
        expect(answer(compileCached(schema(), damaged))).to.deep.equal(compiled);
        expect(answer(require(path.join(damaged, file))), "the damaged file is written anew").to.deep.equal(compiled);
        const blocked = path.join(dir, file, "not-a-directory");
        expect(answer(compileCached(schema(), blocked))).to.deep.equal(compiled);
    });

    it("refuses a schema keyword it cannot honour instead of ignoring it (a future CRD's new extension fails here, not silently)", () => {
        const crd = (spec: Record<string, any>): Record<string, GeneratedCrd> => ({ NodePool: { ...CRDS.NodePool, spec } });
        const { nodePool } = staging();
        expect(() => validateKarpenterObject(nodePool, crd({ type: "object", "x-kubernetes-new-extension": true }))).to.throw('strict mode: unknown keyword: "x-kubernetes-new-extension"');
        const listMap = { type: "object", properties: { template: { type: "array", "x-kubernetes-list-type": "map" } } };
        expect(() => validateKarpenterObject(nodePool, crd(listMap))).to.throw('x-kubernetes-list-type "map" is not supported here');
    });

    describe("upgrading: a changed CRD regenerates into a module the validator follows", () => {
        let dir: string;
        let upgraded: Record<string, GeneratedCrd>;
        before(async () => {
            dir = tempDir("karpenter-crds-");
            const nodePool = structuredClone(CRDS.NodePool);
            const budgets = nodePool.spec.properties.disruption.properties.budgets;
            budgets["x-kubernetes-validations"] = [{ rule: budgets["x-kubernetes-validations"][0].rule, message: "a budget's schedule needs a duration (changed upstream)" }];
            const requirements = nodePool.spec.properties.template.properties.spec.properties.requirements;
            requirements["x-kubernetes-validations"].push({ rule: "self.size() <= 4", messageExpression: "'at most 4 requirements, got ' + string(self.size())" });
            fs.writeFileSync(path.join(dir, CRD_FILES.NodePool), stringify(crdDocument(nodePool)));
            fs.writeFileSync(path.join(dir, CRD_FILES.EC2NodeClass), stringify(crdDocument(CRDS.EC2NodeClass)));
            const out = path.join(dir, "crds.ts");
            expect(await generateKarpenter(["--crds", dir, "--out", out], {})).to.deep.equal({ exitCode: 0, output: `wrote ${out} from ${dir}` });
            upgraded = require(out).CRDS;
        });
        after(() => fs.rmSync(dir, { recursive: true, force: true }));

        it("reports the changed message and evaluates the added rule's messageExpression", () => {
            const { nodePool } = staging();
            delete nodePool.spec.disruption.budgets[1].duration;
            expect(validateKarpenterObject(nodePool, upgraded)).to.have.deep.members([
                { path: "spec.disruption.budgets", message: "a budget's schedule needs a duration (changed upstream)" },
                { path: "spec.template.spec.requirements", message: "at most 4 requirements, got 5" },
            ]);
            expect(validateKarpenterObject(nodePool).map((i) => i.message)).to.deep.equal(["'schedule' must be set with 'duration'"]);
        });

        it("records the source files' checksums in the module's header", () => {
            const text = fs.readFileSync(path.join(dir, "crds.ts"), "utf8");
            expect(text).to.match(/^\/\/ GENERATED by `npm run generate:karpenter`/);
            expect(text).to.match(/NodePool: karpenter\.sh_nodepools\.yaml \(sha256 [0-9a-f]{64}\), 21 rules, 3 of them transition rules/);
        });
    });

    it("the generator names what is missing: no directory is a usage error (2), an unreadable CRD file exit 3", async () => {
        expect(await generateKarpenter([], {})).to.deep.include({ exitCode: 2 });
        expect((await generateKarpenter([], {})).output).to.match(/^--crds \(or KARPENTER_REFERENCE_DIR\) must name the directory holding karpenter\.sh_nodepools\.yaml/);
        const empty = tempDir("karpenter-crds-");
        try {
            const r = await generateKarpenter(["--crds", empty, "--out", path.join(empty, "crds.ts")], {});
            expect(r.exitCode).to.equal(3);
            expect(r.output).to.match(/^\S*karpenter\.sh_nodepools\.yaml: no such file; --crds must be the directory holding karpenter\.sh_nodepools\.yaml and karpenter\.k8s\.aws_ec2nodeclasses\.yaml/);
            expect(fs.existsSync(path.join(empty, "crds.ts"))).to.equal(false);
        } finally {
            fs.rmSync(empty, { recursive: true, force: true });
        }
    });
});
