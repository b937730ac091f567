// Every warning the config can raise, by id. A warning is config that Pulumi, AWS and Karpenter accept but that costs
// something; each says what it costs and what to do, and is reported once per run: by `pulumi preview`/`up` through
// Pulumi's log, by `npm run plan` in its summary. A stack file may acknowledge a known, accepted one
// (notify-karpenter:acknowledged, with the reason), which is then quiet.
import { NODE_POOL_WARNINGS } from "../components/models/nodePool.ts";

/** Each warning's id and what it means; the ids `notify-karpenter:acknowledged` may name. */
export const WARNINGS: Record<string, string> = {
    ...NODE_POOL_WARNINGS,
    "capacity-section": "the capacity section (read by npm run capacity only) has a problem",
    "admission-warn-mode": "placement.admission.mode is warn: the admission policy admits misplaced pods",
    "burst-task-outlasts-spot-notice": "a burst worker's tasks need a longer grace than a spot interruption's notice leaves: an interruption kills them mid-run",
    "latest-ami": "nodePool.ami.alias follows every new AMI (@latest with allowLatestAmi): each release drifts every node",
    "acknowledged-unused": "an acknowledgment names a warning this config no longer raises",
};

/** The warnings an acknowledgment may not quiet: they are about acknowledgments themselves. */
export const UNACKNOWLEDGEABLE = ["acknowledged-unused"];

export const WARNING_IDS = Object.keys(WARNINGS).filter((id) => !UNACKNOWLEDGEABLE.includes(id));

/** How a warning is printed: its id first, so that the line says what to acknowledge. */
export const warningLine = (w: { id: string; message: string }) => `[${w.id}] ${w.message}`;
