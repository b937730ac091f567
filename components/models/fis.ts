// What AWS Fault Injection Service allows: the drill (components/spotInterruptionDrill.ts, ops/drill.ts) keeps within it.

/**
 * EC2's quota on spot instances one aws:ec2:send-spot-instance-interruptions experiment targets by tags: 5 (EC2 User
 * Guide, "Initiate a Spot Instance interruption", Quotas). The drill never asks for more.
 */
export const MAX_DRILL_NODES = 5;
