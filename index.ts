// Entry point for `pulumi up`: read and validate this stack's config once, then build the stack from it.
import { loadConfig } from "./stacks/programConfig.ts";
import { createStack } from "./stacks/createStack.ts";

export default createStack(loadConfig());
