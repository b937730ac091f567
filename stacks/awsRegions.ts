// The AWS Regions, and the Availability Zones of the stack's region and its neighbours, as a dated table. Offline
// config validation can only know what is written here; preflight asks EC2 (DescribeAvailabilityZones) live.
//
// Source: AWS documentation, "AWS Regions" and "AWS Availability Zones" (docs.aws.amazon.com/global-infrastructure/
// latest/regions/), as of 2026-11. Zone names map to zone IDs per account, but the letters an account sees are
// these: ca-central-1 has no ca-central-1c (its zones are cac1-az1, cac1-az2 and cac1-az4); us-west-1 shows each
// account two of its three letters.
import { type Issue, got } from "./schema.ts";

const REGIONS_AS_OF = "2026-11";

/** Zone letters of the regions GC Notify runs in or next to; other known regions are checked by name only. */
const ZONES: Record<string, string> = {
    "ca-central-1": "abd",
    "ca-west-1": "abc",
    "us-east-1": "abcdef",
    "us-east-2": "abc",
    "us-west-1": "abc",
    "us-west-2": "abcd",
};

const OTHER_REGIONS = [
    "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
    "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
    "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3",
    "il-central-1", "me-central-1", "me-south-1", "mx-central-1", "sa-east-1",
    "us-gov-east-1", "us-gov-west-1", "cn-north-1", "cn-northwest-1",
];

const KNOWN_REGIONS: string[] = [...Object.keys(ZONES), ...OTHER_REGIONS];

/** Why `region` is not an AWS region, or undefined. */
export function regionProblem(region: string): string | undefined {
    if (KNOWN_REGIONS.includes(region)) return undefined;
    const near = KNOWN_REGIONS.filter((r) => r.split("-")[0] === region.split("-")[0]);
    return `must be an AWS region (got ${got(region)}): ${near.length ? `the ${region.split("-")[0]} regions are ${near.join(", ")}` : `such as ${Object.keys(ZONES).join(", ")}`} (table of ${REGIONS_AS_OF} in stacks/awsRegions.ts)`;
}

/** The zones of `region` this table knows, or undefined for a region whose zones it does not list. */
function zonesOf(region: string): string[] | undefined {
    return ZONES[region] === undefined ? undefined : [...ZONES[region]].map((letter) => `${region}${letter}`);
}

/** Each zone of `zones` (at `path`) that is not a zone of `region`. */
export function zoneProblems(zones: string[], region: string, path: string): Issue[] {
    const known = zonesOf(region);
    return zones.flatMap((z, i) => {
        const ok = known ? known.includes(z) : z.startsWith(region) && /^[a-z]$/.test(z.slice(region.length));
        if (ok) return [];
        const allowed = known ? `one of ${known.join(", ")}` : `a zone of ${region} such as ${region}a`;
        const why = z.startsWith(region) ? `${region} has no zone ${z}` : `${z} is not in the cluster's region ${region}`;
        return [{ path: `${path}[${i}]`, message: `must be ${allowed}: ${why} (table of ${REGIONS_AS_OF} in stacks/awsRegions.ts; preflight checks live)` }];
    });
}
