// A mocha root hook (.mocharc.json requires this file): the temporary directories of the whole run are removed when
// it ends, whichever tests made them.
import { removeTempDirs } from "./opsHelpers.ts";

export const mochaHooks = {
    afterAll(): void {
        removeTempDirs();
    },
};
