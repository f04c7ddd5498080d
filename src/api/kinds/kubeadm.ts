import type { RemediationStrategy } from '../../contract/health-check';
import { z } from 'zod';
import type { KubeadmConfigSpec } from '../../contract/kubeadm-config-spec';
import type { DeletionTimeouts } from '../../contract/machine';
import {
  duration,
  labelsAndAnnotations,
  fromV1beta1Ref,
  fromV1beta2Ref,
  intOrPercent,
  kubernetesVersion,
  metadata,
  refV1beta1,
  refV1beta2,
  seconds,
  taint,
  type Ref,
} from './common';

/** KubeadmConfig, KubeadmConfigTemplate and KubeadmControlPlane in v1beta1 and v1beta2, normalised to one model. */
const kubeletArgsMap = z.record(z.string(), z.string());
const kubeletArgsList = z.array(z.object({ name: z.string(), value: z.string() }).strict());

const nodeRegistration = (args: z.ZodType) =>
  z
    .object({
      name: z.string().optional(),
      criSocket: z.string().optional(),
      taints: z.array(taint).optional(),
      kubeletExtraArgs: args.optional(),
      ignorePreflightErrors: z.array(z.string()).optional(),
      imagePullPolicy: z.string().optional(),
    })
    .strict();

const file = z
  .object({
    path: z.string().startsWith('/', 'must be an absolute path'),
    // A machine's files belong to its root, so other owners would be dropped: refused instead.
    owner: z
      .enum(['root', 'root:root'], {
        message:
          'files are written as root: an owner other than root (root:root) is not carried out; chown it in postKubeadmCommands',
      })
      .optional(),
    permissions: z
      .string()
      .regex(/^0?[0-7]{3,4}$/, 'must be an octal mode like 0644')
      .optional(),
    encoding: z
      .enum(['base64'], {
        message: "only base64 encoding is decoded by capt's providers: give the content plain or base64, not gzip",
      })
      .optional(),
    append: z.boolean().optional(),
    content: z.string(),
  })
  .strict();

const user = z
  .object({
    name: z.string(),
    gecos: z.string().optional(),
    groups: z.string().optional(),
    homeDir: z.string().optional(),
    shell: z.string().optional(),
    passwd: z.string().optional(),
    primaryGroup: z.string().optional(),
    lockPassword: z.boolean().optional(),
    sudo: z.string().optional(),
    sshAuthorizedKeys: z.array(z.string()).optional(),
  })
  .strict();

const specShape = (args: z.ZodType) => ({
  // Only what capt carries out: any other field of kubeadm's ClusterConfiguration is refused by name, never dropped.
  clusterConfiguration: z
    .object({
      networking: z
        .object({
          serviceSubnet: z.string().optional(),
          podSubnet: z.string().optional(),
          dnsDomain: z.string().optional(),
        })
        .strict()
        .optional(),
      apiServer: z
        .object({
          certSANs: z
            .array(z.string().regex(/^[A-Za-z0-9.:*-]{1,253}$/, 'a DNS name or an IP address'))
            .max(100)
            .optional(),
        })
        .strict()
        .optional(),
    })
    .strict()
    .optional(),
  initConfiguration: z.looseObject({ nodeRegistration: nodeRegistration(args).optional() }).optional(),
  joinConfiguration: z.looseObject({ nodeRegistration: nodeRegistration(args).optional() }).optional(),
  files: z.array(file).optional(),
  preKubeadmCommands: z.array(z.string()).optional(),
  postKubeadmCommands: z.array(z.string()).optional(),
  users: z
    .array(user)
    .max(
      0,
      "users are not created by capt's providers: create them in preKubeadmCommands (useradd) or remove the field",
    )
    .optional(),
  format: z.literal('cloud-config', { message: "only 'cloud-config' is supported by capt's providers" }).optional(),
  verbosity: z.number().int().optional(),
  ntp: z
    .looseObject({})
    .refine(
      () => false,
      "ntp is not configured by capt's providers (a local machine keeps the host's clock): remove the field",
    )
    .optional(),
});

export const kubeadmConfigSpecV1beta1 = z.object(specShape(kubeletArgsMap)).strict();
export const kubeadmConfigSpecV1beta2 = z.object(specShape(kubeletArgsList)).strict();

/** A spec many machines share (a template, a control plane's): one Node name for all of them would make them one Node. */
const sharedSpec = <
  T extends z.ZodType<{
    initConfiguration?: { nodeRegistration?: { name?: string } };
    joinConfiguration?: { nodeRegistration?: { name?: string } };
  }>,
>(
  spec: T,
) =>
  spec.superRefine((s, ctx) => {
    for (const phase of ['initConfiguration', 'joinConfiguration'] as const) {
      if (s[phase]?.nodeRegistration?.name !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [phase, 'nodeRegistration', 'name'],
          message:
            "every machine made from this spec would get the same Node name; remove it (each machine's Node is named after the machine)",
        });
      }
    }
  });

type LooseRegistration =
  | {
      name?: string;
      taints?: { key: string; value?: string; effect: string }[];
      kubeletExtraArgs?: Record<string, string> | { name: string; value: string }[];
    }
  | undefined;

function registration(r: LooseRegistration) {
  if (!r) return undefined;
  const args = Array.isArray(r.kubeletExtraArgs)
    ? Object.fromEntries(r.kubeletExtraArgs.map((a) => [a.name, a.value]))
    : r.kubeletExtraArgs;
  return {
    ...(r.name ? { name: r.name } : {}),
    ...(r.taints ? { taints: r.taints } : {}),
    ...(args ? { kubeletExtraArgs: args } : {}),
  };
}

/** Both versions' KubeadmConfigSpec -> capt's model (kubeletExtraArgs as a map). */
export function toKubeadmConfigSpec(
  spec: z.infer<typeof kubeadmConfigSpecV1beta1> | z.infer<typeof kubeadmConfigSpecV1beta2>,
): KubeadmConfigSpec {
  const init = registration(spec.initConfiguration?.nodeRegistration as LooseRegistration);
  const join = registration(spec.joinConfiguration?.nodeRegistration as LooseRegistration);
  const networking = spec.clusterConfiguration?.networking;
  const certSANs = spec.clusterConfiguration?.apiServer?.certSANs;
  return {
    ...(networking || certSANs
      ? {
          clusterConfiguration: {
            ...(networking
              ? {
                  networking: {
                    ...(networking.serviceSubnet ? { serviceSubnet: networking.serviceSubnet } : {}),
                    ...(networking.podSubnet ? { podSubnet: networking.podSubnet } : {}),
                    ...(networking.dnsDomain ? { dnsDomain: networking.dnsDomain } : {}),
                  },
                }
              : {}),
            ...(certSANs ? { apiServer: { certSANs } } : {}),
          },
        }
      : {}),
    ...(init ? { initConfiguration: { nodeRegistration: init } } : {}),
    ...(join ? { joinConfiguration: { nodeRegistration: join } } : {}),
    ...(spec.files ? { files: spec.files } : {}),
    ...(spec.preKubeadmCommands ? { preKubeadmCommands: spec.preKubeadmCommands } : {}),
    ...(spec.postKubeadmCommands ? { postKubeadmCommands: spec.postKubeadmCommands } : {}),
    ...(spec.format ? { format: spec.format } : {}),
  };
}

export const kubeadmConfigTemplate = (version: 'v1beta1' | 'v1beta2') =>
  z
    .object({
      apiVersion: z.string(),
      kind: z.literal('KubeadmConfigTemplate'),
      metadata,
      // Cluster API accepts a template with no spec (kubeadm's defaults): so does capt.
      spec: z
        .object({
          template: z
            .object({
              metadata: labelsAndAnnotations.optional(),
              spec: sharedSpec(version === 'v1beta1' ? kubeadmConfigSpecV1beta1 : kubeadmConfigSpecV1beta2).prefault(
                {},
              ),
            })
            .strict()
            .prefault({}),
        })
        .strict()
        .prefault({}),
    })
    .strict();

export const kubeadmConfig = (version: 'v1beta1' | 'v1beta2') =>
  z
    .object({
      apiVersion: z.string(),
      kind: z.literal('KubeadmConfig'),
      metadata,
      spec: (version === 'v1beta1' ? kubeadmConfigSpecV1beta1 : kubeadmConfigSpecV1beta2).prefault({}),
    })
    .strict();

export interface ControlPlaneDoc extends DeletionTimeouts {
  /**
   * spec.machineTemplate.metadata: every control-plane machine carries them beside capt's own, and a change
   * reaches the running machines in place. Absent when the manifest gives none, as in specs written before.
   */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  replicas: number;
  version: string;
  kubeadmConfigSpec: KubeadmConfigSpec;
  infrastructureRef: Ref;
  /** 0 or 1 (the spec rules refuse anything else), as given. */
  maxSurge: number | string;
  rolloutAfter?: string;
  certificatesExpiryDays?: number;
  /** remediationStrategy (v1beta1) or remediation (v1beta2), in seconds. */
  remediation?: RemediationStrategy;
}

// The values' rules (replicas, maxSurge, expiry days) live in src/spec-rules, which the workflows share.
const replicas = z.number();
const certificatesExpiryDays = z.number();

/** Only what the manifest gives: a spec without them stays equal to one written before they were carried. */
const machineMetadata = (m: z.infer<typeof labelsAndAnnotations> | undefined) => ({
  ...(m?.labels ? { labels: m.labels } : {}),
  ...(m?.annotations ? { annotations: m.annotations } : {}),
});

export const kubeadmControlPlaneV1beta1 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('KubeadmControlPlane'),
    metadata,
    spec: z
      .object({
        replicas: replicas.optional(),
        version: kubernetesVersion,
        machineTemplate: z
          .object({
            metadata: labelsAndAnnotations.optional(),
            infrastructureRef: refV1beta1,
            nodeDrainTimeout: duration.optional(),
            nodeVolumeDetachTimeout: duration.optional(),
            nodeDeletionTimeout: duration.optional(),
          })
          .strict(),
        kubeadmConfigSpec: sharedSpec(kubeadmConfigSpecV1beta1),
        rolloutAfter: z.iso.datetime().optional(),
        rolloutBefore: z.object({ certificatesExpiryDays: certificatesExpiryDays.optional() }).strict().optional(),
        rolloutStrategy: z
          .object({
            type: z.literal('RollingUpdate').optional(),
            rollingUpdate: z.object({ maxSurge: intOrPercent.optional() }).strict().optional(),
          })
          .strict()
          .optional(),
        remediationStrategy: z
          .object({
            maxRetry: z.number().int().min(0).optional(),
            retryPeriod: duration.optional(),
            minHealthyPeriod: duration.optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): ControlPlaneDoc => ({
    ...machineMetadata(d.spec.machineTemplate.metadata),
    replicas: d.spec.replicas ?? 1,
    version: d.spec.version,
    kubeadmConfigSpec: toKubeadmConfigSpec(d.spec.kubeadmConfigSpec),
    infrastructureRef: fromV1beta1Ref(d.spec.machineTemplate.infrastructureRef),
    maxSurge: d.spec.rolloutStrategy?.rollingUpdate?.maxSurge ?? 1,
    rolloutAfter: d.spec.rolloutAfter,
    certificatesExpiryDays: d.spec.rolloutBefore?.certificatesExpiryDays,
    nodeDrainTimeoutSeconds: d.spec.machineTemplate.nodeDrainTimeout,
    nodeVolumeDetachTimeoutSeconds: d.spec.machineTemplate.nodeVolumeDetachTimeout,
    nodeDeletionTimeoutSeconds: d.spec.machineTemplate.nodeDeletionTimeout,
    remediation: d.spec.remediationStrategy && {
      maxRetry: d.spec.remediationStrategy.maxRetry,
      retryPeriodSeconds: d.spec.remediationStrategy.retryPeriod,
      minHealthyPeriodSeconds: d.spec.remediationStrategy.minHealthyPeriod,
    },
  }));

export const kubeadmControlPlaneV1beta2 = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('KubeadmControlPlane'),
    metadata,
    spec: z
      .object({
        replicas: replicas.optional(),
        version: kubernetesVersion,
        machineTemplate: z
          .object({
            metadata: labelsAndAnnotations.optional(),
            spec: z
              .object({
                infrastructureRef: refV1beta2,
                deletion: z
                  .object({
                    nodeDrainTimeoutSeconds: seconds.optional(),
                    nodeVolumeDetachTimeoutSeconds: seconds.optional(),
                    nodeDeletionTimeoutSeconds: seconds.optional(),
                  })
                  .strict()
                  .optional(),
              })
              .strict(),
          })
          .strict(),
        // Optional in v1beta2 (kubeadm's defaults), required in v1beta1.
        kubeadmConfigSpec: sharedSpec(kubeadmConfigSpecV1beta2).prefault({}),
        rollout: z
          .object({
            after: z.iso.datetime().optional(),
            before: z.object({ certificatesExpiryDays: certificatesExpiryDays.optional() }).strict().optional(),
            strategy: z
              .object({
                type: z.literal('RollingUpdate').optional(),
                rollingUpdate: z.object({ maxSurge: intOrPercent.optional() }).strict().optional(),
              })
              .strict()
              .optional(),
          })
          .strict()
          .optional(),
        remediation: z
          .object({
            maxRetry: z.number().int().min(0).optional(),
            retryPeriodSeconds: seconds.optional(),
            minHealthyPeriodSeconds: seconds.optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
  })
  .strict()
  .transform((d): ControlPlaneDoc => ({
    ...machineMetadata(d.spec.machineTemplate.metadata),
    replicas: d.spec.replicas ?? 1,
    version: d.spec.version,
    kubeadmConfigSpec: toKubeadmConfigSpec(d.spec.kubeadmConfigSpec),
    infrastructureRef: fromV1beta2Ref(d.spec.machineTemplate.spec.infrastructureRef),
    maxSurge: d.spec.rollout?.strategy?.rollingUpdate?.maxSurge ?? 1,
    rolloutAfter: d.spec.rollout?.after,
    certificatesExpiryDays: d.spec.rollout?.before?.certificatesExpiryDays,
    nodeDrainTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeDrainTimeoutSeconds,
    nodeVolumeDetachTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeVolumeDetachTimeoutSeconds,
    nodeDeletionTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeDeletionTimeoutSeconds,
    remediation: d.spec.remediation,
  }));
