import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const dbg = require("@pulumi/pulumi/runtime/debuggable.js");
if (process.env.STUB) dbg.debuggablePromise = (p: any) => p;
const { runPlan } = await import("./plan/planRun.ts");
const c0 = process.cpuUsage();
const r = await runPlan({ stack: "staging", verbose: false, json: false, findingsOnly: false } as any, "/tmp/po", process.cwd());
const u = process.cpuUsage(c0);
console.log(process.env.STUB ? "stub" : "orig", (u.user + u.system) / 1000);
