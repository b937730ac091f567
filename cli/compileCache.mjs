// Preloaded by every npm script (node --import ./cli/compileCache.mjs): Node keeps what a command loads, its own
// TypeScript stripped and every module's V8 code, in node_modules/.cache. JavaScript, so that the command's first
// TypeScript file already comes from the cache: the stripper (amaro) then never loads, which alone cost a run about
// a fifth of a second. runMain (cli/args.ts) enables the same cache for a command run as `node <entry>.ts`.
import { enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";

enableCompileCache(fileURLToPath(new URL("../node_modules/.cache/notify-karpenter", import.meta.url)));
