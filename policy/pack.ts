// The policy pack that `pulumi preview --policy-pack policy` runs. Constructing a PolicyPack starts serving it to the
// engine, so this is the only file that does; everything else imports the policies from ./policies.
import { PolicyPack } from "@pulumi/policy";
import { policies } from "./policies.ts";

new PolicyPack("notify-karpenter", { policies, enforcementLevel: "mandatory" });
