// `npm run generate:karpenter -- --crds <dir> [--out <file>]`: writes components/karpenter/generated/crds.ts from
// Karpenter's official CRDs, the files the karpenter chart ships in crds/ and aws/karpenter-provider-aws keeps at
// pkg/apis/crds/ (the karpenter-crd chart wraps the same schemas in Helm templating). The module holds each kind's
// `spec` schema as the CRD declares it, descriptions left out, with its CEL rules (x-kubernetes-validations) in
// place; components/karpenter/validate.ts checks objects against it. Without --crds, KARPENTER_REFERENCE_DIR names
// the directory. Exit codes as cli/args.ts: 2 for usage, 3 when a CRD file cannot be read.
import * as path from "path";
import { type Command, type CommandResult, EXIT, isResult, parseCommandLine, runMain, usage, valueOf } from "../cli/args.ts";
import { outFileProblem, writeOutFile } from "../cli/outDir.ts";

export const GENERATED_MODULE = path.join(import.meta.dirname, "..", "components", "karpenter", "generated", "crds.ts");
export const GENERATE_KARPENTER: Command = {
    usage: ["npm run generate:karpenter -- [--crds <dir>] [--out <file>]"],
    summary: "Writes the module of Karpenter's NodePool and EC2NodeClass spec schemas and CEL rules from the official CRD files.",
    flags: {
        crds: { value: "<dir>", meaning: "the directory holding karpenter.sh_nodepools.yaml and karpenter.k8s.aws_ec2nodeclasses.yaml", default: "$KARPENTER_REFERENCE_DIR" },
        out: { value: "<file>", meaning: "the module to write", default: "components/karpenter/generated/crds.ts" },
    },
    exits: { 0: "written", 3: "a CRD file could not be read or parsed, or is not Karpenter's NodePool or EC2NodeClass CRD; or --out holds a file the command did not write" },
    examples: ["npm run generate:karpenter -- --crds ./karpenter-crds-1.14.1"],
};

export async function generateKarpenter(argv: string[], env = process.env): Promise<CommandResult> {
    const line = parseCommandLine(argv, GENERATE_KARPENTER);
    if (isResult(line)) return line;
    const dir = valueOf(line, "crds") ?? env.KARPENTER_REFERENCE_DIR;
    if (!dir) return usage("--crds (or KARPENTER_REFERENCE_DIR) must name the directory holding karpenter.sh_nodepools.yaml and karpenter.k8s.aws_ec2nodeclasses.yaml", GENERATE_KARPENTER);
    const out = valueOf(line, "out") ?? GENERATED_MODULE;
    const outProblem = outFileProblem(out, "--out", "components/karpenter/generated/crds.ts");
    if (outProblem) return usage(outProblem, GENERATE_KARPENTER);
    // The CRD reader and the generator (yaml, CEL) only now: --help and usage errors load neither.
    const { GENERATED_MARKER, crdsDirProblem, generateKarpenterModule } = await import("../components/karpenter/generate.ts");
    const crdsProblem = crdsDirProblem(dir, valueOf(line, "crds") !== undefined ? "--crds" : "KARPENTER_REFERENCE_DIR");
    if (crdsProblem) return usage(crdsProblem, GENERATE_KARPENTER);
    let text: string;
    try {
        text = generateKarpenterModule(dir);
    } catch (e) {
        return { exitCode: EXIT.cannotCheck, output: (e as Error).message };
    }
    const unwritable = writeOutFile(out, text, "--out", "components/karpenter/generated/crds.ts", { text: GENERATED_MARKER, by: "npm run generate:karpenter" });
    if (unwritable) return { exitCode: EXIT.cannotCheck, output: unwritable };
    return { exitCode: EXIT.ok, output: `wrote ${out} from ${dir}` };
}

if (import.meta.main) runMain(() => generateKarpenter(process.argv.slice(2)));
