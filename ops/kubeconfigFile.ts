// The kubeconfig files, checked before the Kubernetes client reads them: client-node reads whatever it is given and
// says little ("EISDIR", or a YAML error about a binary file's first bytes). Each file of $KUBECONFIG (or
// ~/.kube/config) that exists must be a regular UTF-8 text file of at most 10 MB holding a YAML map, as
// `aws eks update-kubeconfig` writes it; a refusal is one line naming the file, what it is, and what is allowed.
import * as os from "os";
import * as path from "path";
import * as fs from "fs";
import { parseDocument } from "yaml";
import { InputFileError, readInputFile } from "../cli/inputFile.ts";
import { type KubeConfig, loadKubeConfig } from "./kube.ts";

/** A kubeconfig is a few kilobytes, one per cluster; anything near this is not one. */
const KUBECONFIG_MAX_BYTES = 10_000_000;

/** The files the client reads, as loadKubeConfig finds them: $KUBECONFIG's list, or ~/.kube/config. */
export function kubeconfigFiles(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): { file: string; name: string }[] {
    return env.KUBECONFIG
        ? env.KUBECONFIG.split(path.delimiter)
              .filter(Boolean)
              .map((file) => ({ file, name: `kubeconfig ${file} (from $KUBECONFIG)` }))
        : [{ file: path.join(home, ".kube", "config"), name: `kubeconfig ${path.join(home, ".kube", "config")}` }];
}

/** Why a kubeconfig file that exists cannot be one, in one line; undefined when every one can. */
export function kubeconfigProblem(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string | undefined {
    for (const { file, name } of kubeconfigFiles(env, home)) {
        // A missing file in the list is skipped, as kubectl skips it; loadKubeConfig says when none exists.
        if (!fs.existsSync(file)) continue;
        let text: string;
        try {
            text = readInputFile(file, KUBECONFIG_MAX_BYTES, name, "a kubeconfig");
        } catch (e) {
            return e instanceof InputFileError ? e.message : `${name}: cannot read it (${(e as Error).message})`;
        }
        const doc = parseDocument(text);
        const error = doc.errors[0];
        if (error) return `${name}: is not valid YAML (${error.message.split("\n")[0]}); a kubeconfig is the YAML that aws eks update-kubeconfig writes`;
        const value = doc.toJS();
        if (value !== null && (typeof value !== "object" || Array.isArray(value))) {
            return `${name}: is ${Array.isArray(value) ? "a YAML list" : `the ${typeof value} ${JSON.stringify(value).slice(0, 40)}`}; a kubeconfig is a YAML map of clusters, contexts and users, as aws eks update-kubeconfig writes it`;
        }
    }
    return undefined;
}

/** loadKubeConfig, after the files are known to be kubeconfigs; throws an Error whose message is the one line. */
export function checkedKubeConfig(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): KubeConfig {
    const problem = kubeconfigProblem(env, home);
    if (problem) throw new Error(problem);
    return loadKubeConfig(env, home);
}
