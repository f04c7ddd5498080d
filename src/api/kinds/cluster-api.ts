import { defaultNodeStartupTimeoutSeconds, type HealthCheckSpec } from '../../contract/health-check';
import { z } from 'zod';
import { parseClusterCidr } from '../../contract/ipv4-cidr';
import type { MachineTemplateFields } from '../../contract/machine';
import {
  dnsName,
  duration,
  labelsAndAnnotations,
  machineTaints,
  fromV1beta1Ref,
  fromV1beta2Ref,
  intOrPercent,
  kubernetesVersion,
  metadata,
  refV1beta1,
  refV1beta2,
  seconds,
  type Ref,
} from './common';
import { machineMaxAgeField, machineMaxAgeParses } from './machine-max-age';
import { inPlaceUpdatesField, inPlaceUpdatesParses } from './in-place-updates';

/** Cluster, Machine, MachineDeployment and MachineHealthCheck (cluster.x-k8s.io v1beta1 and v1beta2), normalised. */
const cidrBlocks = z
  .object({
    cidrBlocks: z
      .array(
        z.string().superRefine((cidr, ctx) => {
          const parsed = parseClusterCidr(cidr);
          if (typeof parsed === 'string')
            ctx.addIssue({ code: 'custom', message: `${JSON.stringify(cidr.slice(0, 40))} ${parsed}` });
        }),
      )
      .min(1)
      .max(1, 'capt runs single-stack IPv4 clusters: give one CIDR block'),
  })
  .strict();
const clusterNetwork = z
  .object({
    services: cidrBlocks.optional(),
    pods: cidrBlocks.optional(),
    serviceDomain: dnsName.optional(),
    // Every local machine serves its apiserver on 6443; another port would be accepted and not honoured.
    apiServerPort: z
      .literal(6443, 'capt machines serve the apiserver on port 6443: remove apiServerPort or set it to 6443')
      .optional(),
  })
  .strict();

export interface ClusterDoc {
  controlPlaneRef?: Ref;
  infrastructureRef?: Ref;
  serviceSubnet?: string;
  podSubnet?: string;
  serviceDomain?: string;
  paused: boolean;
}

export const clusterV1beta1 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('Cluster'),
    metadata,
    spec: z
      .object({
        clusterNetwork: clusterNetwork.optional(),
        controlPlaneRef: refV1beta1.optional(),
        infrastructureRef: refV1beta1.optional(),
        paused: z.boolean().optional(),
        controlPlaneEndpoint: z.looseObject({}).optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): ClusterDoc => ({
    controlPlaneRef: d.spec.controlPlaneRef && fromV1beta1Ref(d.spec.controlPlaneRef),
    infrastructureRef: d.spec.infrastructureRef && fromV1beta1Ref(d.spec.infrastructureRef),
    serviceSubnet: d.spec.clusterNetwork?.services?.cidrBlocks[0],
    podSubnet: d.spec.clusterNetwork?.pods?.cidrBlocks[0],
    serviceDomain: d.spec.clusterNetwork?.serviceDomain,
    paused: d.spec.paused ?? false,
  }));

export const clusterV1beta2 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('Cluster'),
    metadata,
    spec: z
      .object({
        clusterNetwork: clusterNetwork.optional(),
        controlPlaneRef: refV1beta2.optional(),
        infrastructureRef: refV1beta2.optional(),
        paused: z.boolean().optional(),
        controlPlaneEndpoint: z.looseObject({}).optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): ClusterDoc => ({
    controlPlaneRef: d.spec.controlPlaneRef && fromV1beta2Ref(d.spec.controlPlaneRef),
    infrastructureRef: d.spec.infrastructureRef && fromV1beta2Ref(d.spec.infrastructureRef),
    serviceSubnet: d.spec.clusterNetwork?.services?.cidrBlocks[0],
    podSubnet: d.spec.clusterNetwork?.pods?.cidrBlocks[0],
    serviceDomain: d.spec.clusterNetwork?.serviceDomain,
    paused: d.spec.paused ?? false,
  }));

/** The machine template both Machines and MachineDeployments carry: the fields each machine gets, and what it is made from. */
export interface MachineTemplateDoc extends MachineTemplateFields {
  clusterName: string;
  version: string;
  bootstrapRef?: Ref;
  infrastructureRef: Ref;
  minReadySeconds?: number;
  /** Bootstrap data made elsewhere, and an existing machine to adopt: capt does neither, so the loader refuses them. */
  dataSecretName?: string;
  providerID?: string;
}

const machineSpecV1beta1 = z
  .object({
    clusterName: dnsName,
    version: kubernetesVersion,
    bootstrap: z.object({ configRef: refV1beta1.optional(), dataSecretName: z.string().optional() }).strict(),
    infrastructureRef: refV1beta1,
    failureDomain: z.string().optional(),
    providerID: z.string().optional(),
    nodeDrainTimeout: duration.optional(),
    nodeVolumeDetachTimeout: duration.optional(),
    nodeDeletionTimeout: duration.optional(),
    taints: machineTaints.optional(),
  })
  .strict();

const machineSpecV1beta2 = z
  .object({
    clusterName: dnsName,
    version: kubernetesVersion,
    bootstrap: z.object({ configRef: refV1beta2.optional(), dataSecretName: z.string().optional() }).strict(),
    infrastructureRef: refV1beta2,
    failureDomain: z.string().optional(),
    providerID: z.string().optional(),
    minReadySeconds: seconds.optional(),
    taints: machineTaints.optional(),
    deletion: z
      .object({
        nodeDrainTimeoutSeconds: seconds.optional(),
        nodeVolumeDetachTimeoutSeconds: seconds.optional(),
        nodeDeletionTimeoutSeconds: seconds.optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

const templateV1beta1 = (
  spec: z.infer<typeof machineSpecV1beta1>,
  meta?: z.infer<typeof labelsAndAnnotations>,
): MachineTemplateDoc => ({
  clusterName: spec.clusterName,
  version: spec.version,
  bootstrapRef: spec.bootstrap.configRef && fromV1beta1Ref(spec.bootstrap.configRef),
  infrastructureRef: fromV1beta1Ref(spec.infrastructureRef),
  failureDomain: spec.failureDomain,
  labels: meta?.labels ?? {},
  annotations: meta?.annotations ?? {},
  dataSecretName: spec.bootstrap.dataSecretName,
  providerID: spec.providerID,
  nodeDrainTimeoutSeconds: spec.nodeDrainTimeout,
  nodeVolumeDetachTimeoutSeconds: spec.nodeVolumeDetachTimeout,
  nodeDeletionTimeoutSeconds: spec.nodeDeletionTimeout,
  ...(spec.taints ? { taints: spec.taints } : {}),
});

const templateV1beta2 = (
  spec: z.infer<typeof machineSpecV1beta2>,
  meta?: z.infer<typeof labelsAndAnnotations>,
): MachineTemplateDoc => ({
  clusterName: spec.clusterName,
  version: spec.version,
  bootstrapRef: spec.bootstrap.configRef && fromV1beta2Ref(spec.bootstrap.configRef),
  infrastructureRef: fromV1beta2Ref(spec.infrastructureRef),
  failureDomain: spec.failureDomain,
  labels: meta?.labels ?? {},
  annotations: meta?.annotations ?? {},
  dataSecretName: spec.bootstrap.dataSecretName,
  providerID: spec.providerID,
  nodeDrainTimeoutSeconds: spec.deletion?.nodeDrainTimeoutSeconds,
  nodeVolumeDetachTimeoutSeconds: spec.deletion?.nodeVolumeDetachTimeoutSeconds,
  nodeDeletionTimeoutSeconds: spec.deletion?.nodeDeletionTimeoutSeconds,
  minReadySeconds: spec.minReadySeconds,
  ...(spec.taints ? { taints: spec.taints } : {}),
});

export const machineV1beta1 = z
  .object({ apiVersion: z.string(), kind: z.literal('Machine'), metadata, spec: machineSpecV1beta1 })
  .strict()
  .transform((d) => templateV1beta1(d.spec, d.metadata));
export const machineV1beta2 = z
  .object({ apiVersion: z.string(), kind: z.literal('Machine'), metadata, spec: machineSpecV1beta2 })
  .strict()
  .transform((d) => templateV1beta2(d.spec, d.metadata));

export type DeletionOrder = 'Random' | 'Newest' | 'Oldest';

export interface MachineDeploymentDoc {
  clusterName: string;
  replicas: number;
  template: MachineTemplateDoc;
  strategy: {
    type: 'RollingUpdate' | 'OnDelete';
    maxSurge: number | string;
    maxUnavailable: number | string;
    deletionOrder: DeletionOrder;
  };
  minReadySeconds: number;
  revisionHistoryLimit: number;
  paused: boolean;
  rolloutAfter?: string;
  /** Machines older than this are replaced within the rollout's bounds (the machine-max-age annotation). */
  machineMaxAgeSeconds?: number;
  /** False: every rollout replaces machines, even where the provider could update them in place (src/contract/in-place.ts). */
  inPlaceUpdates?: false;
}

// Its bounds are a spec rule (src/spec-rules), shared with the scale validator.
const replicas = z.number();
/** A MachineDeployment's selector: capt's own labels select its machines, so one the template's labels do not satisfy is refused. */
const deploymentSelector = z.object({ matchLabels: z.record(z.string(), z.string()).nullable().optional() }).strict();
type SelectedDeployment = {
  metadata: { name?: unknown };
  spec: {
    clusterName: string;
    selector?: z.infer<typeof deploymentSelector>;
    template: { metadata?: { labels?: Record<string, string> } };
  };
};
function selectorMatchesTemplate(d: SelectedDeployment, ctx: z.RefinementCtx): void {
  const own: Record<string, unknown> = {
    ...d.spec.template.metadata?.labels,
    'cluster.x-k8s.io/cluster-name': d.spec.clusterName,
    'cluster.x-k8s.io/deployment-name': d.metadata.name,
  };
  for (const [key, value] of Object.entries(d.spec.selector?.matchLabels ?? {}))
    if (own[key] !== value)
      ctx.addIssue({
        code: 'custom',
        path: ['spec', 'selector', 'matchLabels', key],
        message: `selects ${key}=${value}, which its machines would not carry: add it to spec.template.metadata.labels or drop it from the selector`,
      });
}
const deletionOrder = z.enum(['Random', 'Newest', 'Oldest']);
const rollingUpdateV1beta1 = z
  .object({
    maxSurge: intOrPercent.optional(),
    maxUnavailable: intOrPercent.optional(),
    deletePolicy: deletionOrder.optional(),
  })
  .strict();

export const machineDeploymentV1beta1 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('MachineDeployment'),
    metadata,
    spec: z
      .object({
        clusterName: dnsName,
        replicas: replicas.optional(),
        selector: deploymentSelector.optional(),
        template: z.object({ metadata: labelsAndAnnotations.optional(), spec: machineSpecV1beta1 }).strict(),
        strategy: z
          .object({
            type: z.enum(['RollingUpdate', 'OnDelete']).optional(),
            rollingUpdate: rollingUpdateV1beta1.optional(),
          })
          .strict()
          .optional(),
        minReadySeconds: seconds.optional(),
        revisionHistoryLimit: z.number().int().min(0).optional(),
        paused: z.boolean().optional(),
        rolloutAfter: z.iso.datetime().optional(),
        progressDeadlineSeconds: z.number().int().optional(),
      })
      .strict(),
  })
  .strict()
  .superRefine(selectorMatchesTemplate)
  .superRefine(machineMaxAgeParses)
  .superRefine(inPlaceUpdatesParses)
  .transform((d): MachineDeploymentDoc => ({
    clusterName: d.spec.clusterName,
    replicas: d.spec.replicas ?? 1,
    template: templateV1beta1(d.spec.template.spec, d.spec.template.metadata),
    strategy: {
      type: d.spec.strategy?.type ?? 'RollingUpdate',
      maxSurge: d.spec.strategy?.rollingUpdate?.maxSurge ?? 1,
      maxUnavailable: d.spec.strategy?.rollingUpdate?.maxUnavailable ?? 0,
      deletionOrder: d.spec.strategy?.rollingUpdate?.deletePolicy ?? 'Random',
    },
    minReadySeconds: d.spec.minReadySeconds ?? 0,
    revisionHistoryLimit: d.spec.revisionHistoryLimit ?? 10,
    paused: d.spec.paused ?? false,
    rolloutAfter: d.spec.rolloutAfter,
    ...machineMaxAgeField(d),
    ...inPlaceUpdatesField(d),
  }));

export const machineDeploymentV1beta2 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('MachineDeployment'),
    metadata,
    spec: z
      .object({
        clusterName: dnsName,
        replicas: replicas.optional(),
        selector: deploymentSelector.optional(),
        template: z.object({ metadata: labelsAndAnnotations.optional(), spec: machineSpecV1beta2 }).strict(),
        rollout: z
          .object({
            after: z.iso.datetime().optional(),
            strategy: z
              .object({
                type: z.enum(['RollingUpdate', 'OnDelete']).optional(),
                rollingUpdate: z
                  .object({ maxSurge: intOrPercent.optional(), maxUnavailable: intOrPercent.optional() })
                  .strict()
                  .optional(),
              })
              .strict()
              .optional(),
          })
          .strict()
          .optional(),
        deletion: z.object({ order: deletionOrder.optional() }).strict().optional(),
        paused: z.boolean().optional(),
      })
      .strict(),
  })
  .strict()
  .superRefine(selectorMatchesTemplate)
  .superRefine(machineMaxAgeParses)
  .superRefine(inPlaceUpdatesParses)
  .transform((d): MachineDeploymentDoc => ({
    clusterName: d.spec.clusterName,
    replicas: d.spec.replicas ?? 1,
    template: templateV1beta2(d.spec.template.spec, d.spec.template.metadata),
    strategy: {
      type: d.spec.rollout?.strategy?.type ?? 'RollingUpdate',
      maxSurge: d.spec.rollout?.strategy?.rollingUpdate?.maxSurge ?? 1,
      maxUnavailable: d.spec.rollout?.strategy?.rollingUpdate?.maxUnavailable ?? 0,
      deletionOrder: d.spec.deletion?.order ?? 'Random',
    },
    minReadySeconds: d.spec.template.spec.minReadySeconds ?? 0,
    revisionHistoryLimit: 10,
    paused: d.spec.paused ?? false,
    rolloutAfter: d.spec.rollout?.after,
    ...machineMaxAgeField(d),
    ...inPlaceUpdatesField(d),
  }));

/** A MachineHealthCheck: its checks as capt carries them to the owner it selects, and what selects that owner. */
export interface HealthCheckDoc extends Omit<HealthCheckSpec, 'name'> {
  clusterName: string;
  selector: Record<string, string>;
  /** remediationTemplate (v1beta1) or remediation.templateRef (v1beta2): an external remediation capt does not run. */
  externalRemediation: boolean;
}

const range = z
  .string()
  .regex(/^\[\d+-\d+\]$/, 'must look like [1-3]')
  .transform((r) => {
    const [min, max] = r.slice(1, -1).split('-').map(Number) as [number, number];
    return { min, max };
  });

const matchLabels = z.object({ matchLabels: z.record(z.string(), z.string()) }).strict();

const conditionStatus = z.enum(['True', 'False', 'Unknown']);
const conditionV1beta1 = z.object({ type: z.string(), status: conditionStatus, timeout: duration }).strict();
const conditionV1beta2 = z.object({ type: z.string(), status: conditionStatus, timeoutSeconds: seconds }).strict();
const fromV1beta1Condition = (c: z.infer<typeof conditionV1beta1>) => ({
  type: c.type,
  status: c.status,
  timeoutSeconds: c.timeout,
});
/** unhealthyMachineConditions in the model only when given, so a check without them keeps the spec it had before. */
const machineConditions = (list: HealthCheckSpec['unhealthyMachineConditions']) =>
  list?.length ? { unhealthyMachineConditions: list } : {};

export const machineHealthCheckV1beta1 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('MachineHealthCheck'),
    metadata,
    spec: z
      .object({
        clusterName: dnsName,
        selector: matchLabels,
        unhealthyConditions: z.array(conditionV1beta1).optional(),
        unhealthyMachineConditions: z.array(conditionV1beta1).optional(),
        nodeStartupTimeout: duration.optional(),
        maxUnhealthy: intOrPercent.optional(),
        unhealthyRange: range.optional(),
        remediationTemplate: z.looseObject({}).optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): HealthCheckDoc => ({
    clusterName: d.spec.clusterName,
    selector: d.spec.selector.matchLabels,
    unhealthyNodeConditions: (d.spec.unhealthyConditions ?? []).map(fromV1beta1Condition),
    ...machineConditions(d.spec.unhealthyMachineConditions?.map(fromV1beta1Condition)),
    nodeStartupTimeoutSeconds: d.spec.nodeStartupTimeout ?? defaultNodeStartupTimeoutSeconds,
    maxUnhealthy: d.spec.maxUnhealthy,
    unhealthyRange: d.spec.unhealthyRange,
    externalRemediation: d.spec.remediationTemplate !== undefined,
  }));

export const machineHealthCheckV1beta2 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('MachineHealthCheck'),
    metadata,
    spec: z
      .object({
        clusterName: dnsName,
        selector: matchLabels,
        checks: z
          .object({
            nodeStartupTimeoutSeconds: seconds.optional(),
            unhealthyNodeConditions: z.array(conditionV1beta2).optional(),
            unhealthyMachineConditions: z.array(conditionV1beta2).optional(),
          })
          .strict()
          .optional(),
        remediation: z
          .object({
            triggerIf: z
              .object({ unhealthyLessThanOrEqualTo: intOrPercent.optional(), unhealthyInRange: range.optional() })
              .strict()
              .optional(),
            templateRef: z.looseObject({}).optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): HealthCheckDoc => ({
    clusterName: d.spec.clusterName,
    selector: d.spec.selector.matchLabels,
    unhealthyNodeConditions: d.spec.checks?.unhealthyNodeConditions ?? [],
    ...machineConditions(d.spec.checks?.unhealthyMachineConditions),
    nodeStartupTimeoutSeconds: d.spec.checks?.nodeStartupTimeoutSeconds ?? defaultNodeStartupTimeoutSeconds,
    maxUnhealthy: d.spec.remediation?.triggerIf?.unhealthyLessThanOrEqualTo,
    unhealthyRange: d.spec.remediation?.triggerIf?.unhealthyInRange,
    externalRemediation: d.spec.remediation?.templateRef !== undefined,
  }));
