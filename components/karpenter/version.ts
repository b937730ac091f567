/** The Karpenter release this program's IAM policy, Helm values and object schema were written against. */
export const KARPENTER_VERSION = "1.14.1";
