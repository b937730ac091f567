// The CloudWatch agent file `npm run plan` writes: what to merge into GC Notify's cwagent-prometheus so Karpenter's
// metrics reach CloudWatch, where the metrics heartbeat, the NodePool-limit, spot-interruption and stuck-node alarms
// read them.
import { cloudwatchAgentKarpenterConfig } from "../components/models/karpenterSignals.ts";
import type { StackConfig } from "../stacks/config.ts";

/** The chart's `controller.metrics.port` default (aws/karpenter-provider-aws v1.14.1 charts/karpenter/values.yaml:167); the program leaves it. */
const METRICS_PORT = 8080;

/** `cwagent-prometheus-karpenter.json`: the scrape job and EMF declarations for this stack's controller. */
export function cloudwatchAgentFile(cfg: StackConfig): string {
    // The chart names its Service after the release, "karpenter" (KarpenterController.deploymentName).
    const config = cloudwatchAgentKarpenterConfig({
        clusterName: cfg.cluster.name,
        namespace: cfg.controller.namespace,
        service: "karpenter",
        port: METRICS_PORT,
        nodePoolName: cfg.nodePool.name,
    });
    const merge = {
        "prometheus.yaml (ConfigMap prometheus-config)": "append scrape_configs[0] to scrape_configs",
        "cwagentconfig.json (ConfigMap prometheus-cwagentconfig)": "append metric_declaration to logs.metrics_collected.prometheus.emf_processor.metric_declaration",
    };
    return JSON.stringify({ merge, ...config }, null, 2) + "\n";
}
