// The config keys a stack file may hold outside the project's own sections (read at pulumi/pulumi v3.259.0, the newest
// tag mirrored here; the pin is 3.276.0): the namespaces any command here reads, and the pulumi: keys the CLI and the
// engine read. A key in any other namespace (notifykarpenter:lifecycle, a typo) would be read by nothing, and its
// section silently take its defaults, so it is refused.
export const CONFIG_KEY_NAMESPACES = ["aws", "notify-karpenter", "pulumi"];

/** pkg/cmd/pulumi/autonaming/config.go:90, sdk/go/common/workspace/project.go:1390, the engine's disable-default-providers. */
export const PULUMI_CONFIG_KEYS = ["pulumi:autonaming", "pulumi:disable-default-providers", "pulumi:tags"];

/** The keys of `flat` (namespace:name) in no namespace read here, or pulumi: keys nothing reads. */
export function foreignConfigKeys(flat: Record<string, unknown>): string[] {
    return Object.keys(flat).filter((k) => {
        const [namespace] = k.split(":");
        return !CONFIG_KEY_NAMESPACES.includes(namespace) || (namespace === "pulumi" && !PULUMI_CONFIG_KEYS.includes(k));
    });
}
