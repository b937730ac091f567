// The in-cluster scripts (the scale-down annotator, the node recycler) run on Node's official image from a ConfigMap,
// with the API client they share beside them, so each ConfigMap carries both files.
import * as fs from "fs";
import * as path from "path";

/** The shared API client every in-cluster script requires as `./inClusterApi.js`. */
export const API_CLIENT = "inClusterApi.js";

/** A ConfigMap's data for one script: the script and the API client, as they are in components/inCluster/. */
export function scriptFiles(script: string): Record<string, string> {
    return Object.fromEntries([script, API_CLIENT].map((file) => [file, fs.readFileSync(path.join(import.meta.dirname, "inCluster", file), "utf8")]));
}
