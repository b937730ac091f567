// The checked-in Karpenter schema module (components/karpenter/generated/crds.ts) from Karpenter's own CRD files: each
// CRD is checked to be Karpenter's before anything is written (npm run generate:karpenter, scripts/generate-karpenter-schema.ts).
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { isTransitionRule } from "./cel.ts";
import { InputFileError, readInputFile } from "../../cli/inputFile.ts";
import { KARPENTER_VERSION } from "./version.ts";

/** The CRD files read, by the kind they define. */
export const CRD_FILES = { NodePool: "karpenter.sh_nodepools.yaml", EC2NodeClass: "karpenter.k8s.aws_ec2nodeclasses.yaml" } as const;

/** The CRD files are about 100 KB each. */
const CRD_FILE_MAX_BYTES = 5_000_000;

/**
 * What makes a CRD file Karpenter's: its name, group, cluster scope and stored version v1 (aws/karpenter-provider-aws
 * v1.14.1 pkg/apis/crds/), CEL rules, and a `spec` schema declaring every field the program renders
 * (components/models/nodePool.ts renderNodePool). A CRD of the right kind name alone, such as a two-line stand-in,
 * would otherwise become the module every NodePool is checked against, and check nothing.
 */
const EXPECTED_CRDS = {
    NodePool: {
        name: "nodepools.karpenter.sh",
        group: "karpenter.sh",
        version: "v1",
        fields: [
            "template.metadata.labels",
            "template.spec.nodeClassRef.group",
            "template.spec.nodeClassRef.kind",
            "template.spec.nodeClassRef.name",
            "template.spec.requirements[].key",
            "template.spec.requirements[].operator",
            "template.spec.requirements[].values",
            "template.spec.taints[].key",
            "template.spec.taints[].value",
            "template.spec.taints[].effect",
            "template.spec.startupTaints",
            "template.spec.expireAfter",
            "template.spec.terminationGracePeriod",
            "disruption.consolidationPolicy",
            "disruption.consolidateAfter",
            "disruption.budgets[].nodes",
            "disruption.budgets[].reasons",
            "disruption.budgets[].schedule",
            "disruption.budgets[].duration",
            "limits",
            "weight",
        ],
    },
    EC2NodeClass: {
        name: "ec2nodeclasses.karpenter.k8s.aws",
        group: "karpenter.k8s.aws",
        version: "v1",
        fields: [
            "role",
            "amiFamily",
            "amiSelectorTerms[].alias",
            "amiSelectorTerms[].id",
            "subnetSelectorTerms[].id",
            "subnetSelectorTerms[].tags",
            "securityGroupSelectorTerms[].id",
            "securityGroupSelectorTerms[].tags",
            "metadataOptions.httpEndpoint",
            "metadataOptions.httpProtocolIPv6",
            "metadataOptions.httpPutResponseHopLimit",
            "metadataOptions.httpTokens",
            "blockDeviceMappings[].deviceName",
            "blockDeviceMappings[].rootVolume",
            "blockDeviceMappings[].ebs.volumeSize",
            "blockDeviceMappings[].ebs.volumeType",
            "blockDeviceMappings[].ebs.encrypted",
            "blockDeviceMappings[].ebs.deleteOnTermination",
            "kubelet.kubeReserved",
            "kubelet.systemReserved",
            "kubelet.evictionHard",
            "tags",
        ],
    },
} as const;

/** The fields of `fields` (dotted, [] for a list's items) that `schema` (an OpenAPI v3 object schema) does not declare. */
function undeclared(schema: any, fields: readonly string[]): string[] {
    return fields.filter((field) => {
        let at = schema;
        for (const part of field.split(".")) {
            const [name, items] = [part.replace(/\[\]$/, ""), part.endsWith("[]")];
            at = at?.properties?.[name];
            if (items) at = at?.items;
            if (typeof at !== "object" || at === null) return true;
        }
        return false;
    });
}

/** Why a parsed CRD file is not Karpenter's `kind` CRD, or undefined when it is. */
function crdProblem(crd: any, kind: keyof typeof EXPECTED_CRDS): string | undefined {
    const want = EXPECTED_CRDS[kind];
    const is = (v: unknown) => JSON.stringify(v ?? null);
    if (crd?.apiVersion !== "apiextensions.k8s.io/v1" || crd?.kind !== "CustomResourceDefinition") return `is ${crd?.kind ? `a ${is(crd.apiVersion)} ${crd.kind}` : "no Kubernetes object"}, not a CustomResourceDefinition (apiextensions.k8s.io/v1)`;
    if (crd.spec?.names?.kind !== kind) return `defines the kind ${is(crd.spec?.names?.kind)}, not ${kind}`;
    if (crd.metadata?.name !== want.name || crd.spec?.group !== want.group) return `is the ${kind} of the group ${is(crd.spec?.group)} (metadata.name ${is(crd.metadata?.name)}), not Karpenter's ${want.group} (${want.name})`;
    if (crd.spec?.scope !== "Cluster") return `has scope ${is(crd.spec?.scope)}; Karpenter's ${kind} is cluster-scoped`;
    const stored = (Array.isArray(crd.spec?.versions) ? crd.spec.versions : []).find((v: any) => v?.storage);
    if (stored?.name !== want.version || stored?.served !== true) return `stores version ${is(stored?.name)}${stored && stored.served !== true ? " without serving it" : ""}; this program writes ${want.group}/${want.version}`;
    const spec = stored.schema?.openAPIV3Schema?.properties?.spec;
    if (typeof spec !== "object" || spec === null) return `has no spec schema (spec.versions[${want.version}].schema.openAPIV3Schema.properties.spec)`;
    const missing = undeclared(spec, want.fields);
    if (missing.length) return `does not declare ${missing.slice(0, 3).map((f) => `spec.${f}`).join(", ")}${missing.length > 3 ? ` and ${missing.length - 3} more` : ""}, which the program sets (components/models/nodePool.ts): it is not Karpenter's ${kind} CRD, or a cut-down copy`;
    if (countRules(spec).rules === 0) return `has no CEL rules (x-kubernetes-validations) in its spec schema, which Karpenter's ${kind} CRD carries`;
    return undefined;
}

/** Why `dir` cannot be the directory of CRD files, in one line naming `flag`. */
export function crdsDirProblem(dir: string, flag: string): string | undefined {
    if (dir.trim() === "") return `${flag} must name the directory holding ${Object.values(CRD_FILES).join(" and ")} (got "")`;
    let stat: fs.Stats;
    try {
        stat = fs.statSync(dir);
    } catch {
        return `${flag} ${dir}: no such directory; it must hold ${Object.values(CRD_FILES).join(" and ")}`;
    }
    return stat.isDirectory() ? undefined : `${flag} ${dir}: is not a directory; it must be the directory holding ${Object.values(CRD_FILES).join(" and ")}`;
}

/** The module's first words: only a file that holds them is the command's to overwrite. */
export const GENERATED_MARKER = "// GENERATED by `npm run generate:karpenter`";

/** A schema without its `description`s, which document but never validate, so an upgrade's diff shows what checks change. */
function withoutDescriptions(schema: any): any {
    if (typeof schema !== "object" || schema === null) return schema;
    const sub: Record<string, (v: any) => any> = {
        properties: (ps) => Object.fromEntries(Object.entries(ps).map(([k, v]) => [k, withoutDescriptions(v)])),
        items: withoutDescriptions,
        additionalProperties: withoutDescriptions,
        not: withoutDescriptions,
        anyOf: (l) => l.map(withoutDescriptions),
        allOf: (l) => l.map(withoutDescriptions),
        oneOf: (l) => l.map(withoutDescriptions),
    };
    return Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "description").map(([k, v]) => [k, sub[k] ? sub[k](v) : v]));
}

/** How many CEL rules the schema holds, and how many of them are transition rules (they read `oldSelf`). */
function countRules(schema: any): { rules: number; transition: number } {
    const own: { rule: string }[] = schema?.["x-kubernetes-validations"] ?? [];
    const children = [...Object.values(schema?.properties ?? {}), schema?.items, typeof schema?.additionalProperties === "object" ? schema.additionalProperties : undefined];
    return children.filter(Boolean).reduce(
        (sum: { rules: number; transition: number }, child) => {
            const c = countRules(child);
            return { rules: sum.rules + c.rules, transition: sum.transition + c.transition };
        },
        { rules: own.length, transition: own.filter((r) => isTransitionRule(r.rule)).length },
    );
}

/** The generated module's text, from the CRD files in `dir`; throws an Error naming the file when one is unreadable. */
export function generateKarpenterModule(dir: string, version = KARPENTER_VERSION): string {
    const kinds = Object.entries(CRD_FILES).map(([kind, file]) => {
        const full = path.join(dir, file);
        // A CRD file is about 100 KB; a FIFO, a device or a huge file in its place is refused, not read.
        let text: string;
        try {
            text = readInputFile(full, CRD_FILE_MAX_BYTES, full, "a CRD file");
        } catch (e) {
            throw new Error(e instanceof InputFileError && e.code === "missing" ? `${full}: no such file; --crds must be the directory holding ${Object.values(CRD_FILES).join(" and ")}, Karpenter v${version}'s own CRD files (aws/karpenter-provider-aws pkg/apis/crds/)` : (e as Error).message);
        }
        let crd: any;
        try {
            crd = parse(text);
        } catch (e) {
            throw new Error(`${full}: is not valid YAML (${(e as Error).message.split("\n")[0].replace(/:$/, "")}); it must be a CustomResourceDefinition as Karpenter ships it`);
        }
        const problem = crdProblem(crd, kind as keyof typeof EXPECTED_CRDS);
        if (problem) throw new Error(`${full}: ${problem}; --crds must hold Karpenter v${version}'s own CRD files (aws/karpenter-provider-aws, tag v${version}, pkg/apis/crds/); nothing was written`);
        const served = crd.spec.versions.find((v: any) => v.storage);
        const spec = served.schema.openAPIV3Schema.properties.spec;
        const sha256 = crypto.createHash("sha256").update(text).digest("hex");
        return { kind, file, sha256, apiVersion: `${crd.spec.group}/${served.name}`, spec: withoutDescriptions(spec), counts: countRules(spec) };
    });
    const header = [
        `${GENERATED_MARKER} (scripts/generate-karpenter-schema.ts): do not edit by hand.`,
        `// Source: Karpenter v${version}'s CRDs (aws/karpenter-provider-aws, tag v${version}, pkg/apis/crds/; the same files`,
        "// the karpenter chart ships in crds/). Each kind's `spec` schema as the CRD declares it, descriptions left out,",
        "// with its CEL rules (x-kubernetes-validations) in place:",
        ...kinds.map((k) => `//   ${k.kind}: ${k.file} (sha256 ${k.sha256}), ${k.counts.rules} rules, ${k.counts.transition} of them transition rules`),
    ];
    const crds = Object.fromEntries(kinds.map(({ kind, file, sha256, apiVersion, spec }) => [kind, { kind, apiVersion, karpenterVersion: version, file, sha256, spec }]));
    return [
        ...header,
        "",
        "/** One kind's CRD: its apiVersion and its `spec` schema (Kubernetes OpenAPI v3, structural). */",
        "export interface GeneratedCrd {",
        "    kind: string;",
        "    apiVersion: string;",
        "    karpenterVersion: string;",
        "    file: string;",
        "    sha256: string;",
        "    spec: Record<string, any>;",
        "}",
        "",
        `export const KARPENTER_CRD_VERSION = ${JSON.stringify(version)};`,
        "",
        `export const CRDS: Record<string, GeneratedCrd> = ${JSON.stringify(crds, null, 4)};`,
        "",
    ].join("\n");
}
