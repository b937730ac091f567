// The v1.14.1 NodePool and EC2NodeClass `spec` schemas, in our own compact form: types, enums, patterns, limits and
// required fields, without descriptions or defaults. tests/reference.spec.ts rebuilds this from the official CRDs
// in CI and fails on any difference, so a Karpenter upgrade cannot leave it stale.

export interface StructuralSchema {
    type?: "object" | "array" | "string" | "integer" | "boolean" | "int-or-string";
    properties?: Record<string, StructuralSchema>;
    additionalProperties?: StructuralSchema;
    items?: StructuralSchema;
    required?: string[];
    enum?: string[];
    pattern?: string;
    maxLength?: number;
    maxItems?: number;
    minItems?: number;
    minimum?: number;
    maximum?: number;
}

export const NODEPOOL_SPEC: StructuralSchema = {
    type: "object",
    required: ["template"],
    properties: {
        disruption: {
            type: "object",
            required: ["consolidateAfter"],
            properties: {
                budgets: {
                    type: "array",
                    maxItems: 50,
                    items: {
                        type: "object",
                        required: ["nodes"],
                        properties: {
                            duration: { type: "string", pattern: "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$" },
                            nodes: { type: "string", pattern: "^((100|[0-9]{1,2})%|[0-9]+)$" },
                            reasons: {
                                type: "array",
                                maxItems: 50,
                                items: { type: "string", enum: ["Underutilized","Empty","Drifted"] },
                            },
                            schedule: { type: "string", pattern: "^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$" },
                        },
                    },
                },
                consolidateAfter: { type: "string", pattern: "^(([0-9]+(s|m|h))+|Never)$" },
                consolidationPolicy: { type: "string", enum: ["WhenEmpty","WhenEmptyOrUnderutilized","Balanced"] },
            },
        },
        limits: {
            type: "object",
            additionalProperties: { type: "int-or-string", pattern: "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$" },
        },
        replicas: { type: "integer", minimum: 0 },
        template: {
            type: "object",
            required: ["spec"],
            properties: {
                metadata: {
                    type: "object",
                    properties: {
                        annotations: {
                            type: "object",
                            additionalProperties: { type: "string" },
                        },
                        labels: {
                            type: "object",
                            additionalProperties: { type: "string", pattern: "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", maxLength: 63 },
                        },
                    },
                },
                spec: {
                    type: "object",
                    required: ["nodeClassRef","requirements"],
                    properties: {
                        expireAfter: { type: "string", pattern: "^(([0-9]+(s|m|h))+|Never)$" },
                        nodeClassRef: {
                            type: "object",
                            required: ["group","kind","name"],
                            properties: {
                                group: { type: "string", pattern: "^[^/]*$" },
                                kind: { type: "string" },
                                name: { type: "string" },
                            },
                        },
                        requirements: {
                            type: "array",
                            maxItems: 100,
                            items: {
                                type: "object",
                                required: ["key","operator"],
                                properties: {
                                    key: { type: "string", pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$", maxLength: 316 },
                                    minValues: { type: "integer", minimum: 1, maximum: 50 },
                                    operator: { type: "string", enum: ["Gte","Lte","In","NotIn","Exists","DoesNotExist","Gt","Lt"] },
                                    values: {
                                        type: "array",
                                        pattern: "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                                        maxLength: 63,
                                        items: { type: "string" },
                                    },
                                },
                            },
                        },
                        startupTaints: {
                            type: "array",
                            items: {
                                type: "object",
                                required: ["effect","key"],
                                properties: {
                                    effect: { type: "string", enum: ["NoSchedule","PreferNoSchedule","NoExecute"] },
                                    key: { type: "string", pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$" },
                                    timeAdded: { type: "string" },
                                    value: { type: "string", pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$" },
                                },
                            },
                        },
                        taints: {
                            type: "array",
                            items: {
                                type: "object",
                                required: ["effect","key"],
                                properties: {
                                    effect: { type: "string", enum: ["NoSchedule","PreferNoSchedule","NoExecute"] },
                                    key: { type: "string", pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$" },
                                    timeAdded: { type: "string" },
                                    value: { type: "string", pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$" },
                                },
                            },
                        },
                        terminationGracePeriod: { type: "string", pattern: "^([0-9]+(s|m|h))+$" },
                    },
                },
            },
        },
        weight: { type: "integer", minimum: 1, maximum: 100 },
    },
};

export const EC2NODECLASS_SPEC: StructuralSchema = {
    type: "object",
    required: ["amiSelectorTerms","securityGroupSelectorTerms","subnetSelectorTerms"],
    properties: {
        amiFamily: { type: "string", enum: ["AL2","AL2023","Bottlerocket","Custom","Windows2019","Windows2022","Windows2025"] },
        amiSelectorTerms: {
            type: "array",
            maxItems: 30,
            minItems: 1,
            items: {
                type: "object",
                properties: {
                    alias: { type: "string", maxLength: 30 },
                    id: { type: "string", pattern: "ami-[0-9a-z]+" },
                    name: { type: "string" },
                    owner: { type: "string" },
                    ssmParameter: { type: "string" },
                    tags: {
                        type: "object",
                        additionalProperties: { type: "string" },
                    },
                },
            },
        },
        associatePublicIPAddress: { type: "boolean" },
        blockDeviceMappings: {
            type: "array",
            maxItems: 50,
            items: {
                type: "object",
                properties: {
                    deviceName: { type: "string" },
                    ebs: {
                        type: "object",
                        properties: {
                            deleteOnTermination: { type: "boolean" },
                            encrypted: { type: "boolean" },
                            iops: { type: "integer" },
                            kmsKeyID: { type: "string" },
                            snapshotID: { type: "string" },
                            throughput: { type: "integer" },
                            volumeInitializationRate: { type: "integer", minimum: 100, maximum: 300 },
                            volumeSize: { type: "string", pattern: "^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$" },
                            volumeType: { type: "string", enum: ["standard","io1","io2","gp2","sc1","st1","gp3"] },
                        },
                    },
                    rootVolume: { type: "boolean" },
                },
            },
        },
        capacityReservationSelectorTerms: {
            type: "array",
            maxItems: 30,
            items: {
                type: "object",
                properties: {
                    id: { type: "string", pattern: "^cr-[0-9a-z]+$" },
                    instanceMatchCriteria: { type: "string", enum: ["open","targeted"] },
                    ownerID: { type: "string", pattern: "^[0-9]{12}$" },
                    tags: {
                        type: "object",
                        additionalProperties: { type: "string" },
                    },
                },
            },
        },
        connectionTracking: {
            type: "object",
            properties: {
                tcpEstablishedTimeout: { type: "integer", minimum: 60, maximum: 432000 },
                udpStreamTimeout: { type: "integer", minimum: 60, maximum: 180 },
                udpTimeout: { type: "integer", minimum: 30, maximum: 60 },
            },
        },
        context: { type: "string" },
        cpuOptions: {
            type: "object",
            properties: {
                nestedVirtualization: { type: "string", enum: ["enabled","disabled"] },
            },
        },
        detailedMonitoring: { type: "boolean" },
        instanceProfile: { type: "string" },
        instanceStorePolicy: { type: "string", enum: ["RAID0"] },
        ipPrefixCount: { type: "integer", minimum: 0 },
        kubelet: {
            type: "object",
            properties: {
                clusterDNS: {
                    type: "array",
                    items: { type: "string" },
                },
                cpuCFSQuota: { type: "boolean" },
                evictionHard: {
                    type: "object",
                    additionalProperties: { type: "string", pattern: "^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?)$" },
                },
                evictionMaxPodGracePeriod: { type: "integer" },
                evictionSoft: {
                    type: "object",
                    additionalProperties: { type: "string", pattern: "^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?)$" },
                },
                evictionSoftGracePeriod: {
                    type: "object",
                    additionalProperties: { type: "string" },
                },
                imageGCHighThresholdPercent: { type: "integer", minimum: 0, maximum: 100 },
                imageGCLowThresholdPercent: { type: "integer", minimum: 0, maximum: 100 },
                kubeReserved: {
                    type: "object",
                    additionalProperties: { type: "string", pattern: "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$" },
                },
                maxPods: { type: "integer", minimum: 0 },
                podsPerCore: { type: "integer", minimum: 0 },
                systemReserved: {
                    type: "object",
                    additionalProperties: { type: "string", pattern: "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$" },
                },
            },
        },
        metadataOptions: {
            type: "object",
            properties: {
                httpEndpoint: { type: "string", enum: ["enabled","disabled"] },
                httpProtocolIPv6: { type: "string", enum: ["enabled","disabled"] },
                httpPutResponseHopLimit: { type: "integer", minimum: 1, maximum: 64 },
                httpTokens: { type: "string", enum: ["required","optional"] },
            },
        },
        networkInterfaces: {
            type: "array",
            maxItems: 150,
            items: {
                type: "object",
                required: ["deviceIndex","interfaceType","networkCardIndex"],
                properties: {
                    deviceIndex: { type: "integer", minimum: 0 },
                    interfaceType: { type: "string", enum: ["interface","efa-only"] },
                    networkCardIndex: { type: "integer", minimum: 0 },
                },
            },
        },
        placementGroupSelector: {
            type: "object",
            properties: {
                id: { type: "string", pattern: "^pg-[0-9a-z]+$" },
                name: { type: "string" },
            },
        },
        role: { type: "string" },
        securityGroupSelectorTerms: {
            type: "array",
            maxItems: 30,
            items: {
                type: "object",
                properties: {
                    id: { type: "string", pattern: "sg-[0-9a-z]+" },
                    name: { type: "string" },
                    tags: {
                        type: "object",
                        additionalProperties: { type: "string" },
                    },
                },
            },
        },
        subnetSelectorTerms: {
            type: "array",
            maxItems: 30,
            items: {
                type: "object",
                properties: {
                    id: { type: "string", pattern: "subnet-[0-9a-z]+" },
                    tags: {
                        type: "object",
                        additionalProperties: { type: "string" },
                    },
                },
            },
        },
        tags: {
            type: "object",
            additionalProperties: { type: "string" },
        },
        userData: { type: "string" },
    },
};
