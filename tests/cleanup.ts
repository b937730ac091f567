// A mocha root hook (.mocharc.json requires this file): the temporary directories of the whole run are removed when
// it ends, whichever tests made them.
import { CACHE_DIR } from "../cli/args.ts";
import { removeTempDirs } from "./opsHelpers.ts";

// Node processes the tests start (a command's entry, the Celery stand-in) load from the compile cache that every npm
// script preloads (cli/compileCache.mjs), as `npm run <command>` does: without it each strips its TypeScript again.
process.env.NODE_COMPILE_CACHE ??= CACHE_DIR;

export const mochaHooks = {
    afterAll(): void {
        removeTempDirs();
    },
};
