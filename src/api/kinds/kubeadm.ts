import type { RemediationStrategy } from '../../contract/health-check';
import { z } from 'zod';
import {
  hostPathTypes,
  type ControlPlaneComponentConfig,
  type KubeadmConfigSpec,
} from '../../contract/kubeadm-config-spec';
import {
  configuredComponents,
  flagNamePattern,
  reservedMountPaths,
  wiredFlags,
  type ComponentField,
} from '../../contract/control-plane-flags';
import type { DeletionTimeouts, MachineTaint } from '../../contract/machine';
import { maxPods, maxPodsRange } from '../../contract/kubelet-max-pods';
import {
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
  taint,
  type Ref,
} from './common';
import { machineMaxAgeField, machineMaxAgeParses } from './machine-max-age';
import { inPlaceUpdatesField, inPlaceUpdatesParses } from './in-place-updates';

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
    .strict()
    .superRefine(refuseBadMaxPods);

/** A `max-pods` the kubelet could not run with is refused here, not found when a machine's kubelet fails to start. */
function refuseBadMaxPods(r: { kubeletExtraArgs?: unknown }, ctx: z.RefinementCtx) {
  const args = r.kubeletExtraArgs as LooseArgs | undefined;
  const index = Array.isArray(args) ? args.findIndex((a) => a.name === 'max-pods') : -1;
  const value = Array.isArray(args) ? args[index]?.value : args?.['max-pods'];
  if (value === undefined || maxPods(value) !== undefined) return;
  ctx.addIssue({
    code: 'custom',
    path: ['kubeletExtraArgs', ...(index >= 0 ? [index, 'value'] : ['max-pods'])],
    message: `max-pods ${JSON.stringify(value)} is not a whole number from ${maxPodsRange.min} to ${maxPodsRange.max}: give the Node's pod capacity (the kubelet's default is 110), or remove it`,
  });
}

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

const flagName = z
  .string()
  .regex(flagNamePattern, "a flag's name without its leading dashes, such as 'v' or 'audit-log-path'");
const flagValue = z
  .string()
  .max(4096)
  .regex(/^[^\0\n\r]*$/, 'a flag value is one line: no newline or NUL');
/** v1beta1 (and kubeadm v1beta3) give a component's flags as a map, v1beta2 as a list: each flag once either way. */
const componentArgsMap = z.record(flagName, flagValue);
const componentArgsList = z
  .array(z.object({ name: flagName, value: flagValue }).strict())
  .max(100)
  .superRefine((list, ctx) =>
    list.forEach((arg, i) => {
      if (list.findIndex((a) => a.name === arg.name) < i)
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: `flag '${arg.name}' is given twice; capt passes each flag once: join list values with commas in one entry`,
        });
    }),
  );

const machinePath = z
  .string()
  .startsWith('/', 'must be an absolute path')
  .max(1024)
  .refine((p) => !p.split('/').includes('..'), "a path may not contain '..'");
const hostPathMount = z
  .object({
    name: z.string().min(1).max(253),
    hostPath: machinePath,
    mountPath: machinePath.refine(
      (p) => !reservedMountPaths.some((r) => p === r || p.startsWith(`${r}/`)),
      `a volume may not be mounted on ${reservedMountPaths.join(', ')} or below: a local machine's own tools and kernel files are there`,
    ),
    readOnly: z.boolean().optional(),
    pathType: z
      .enum(['', ...hostPathTypes], {
        message: `one of ${hostPathTypes.join(', ')} (or empty): a local machine has no devices or sockets of its own to mount`,
      })
      .optional(),
  })
  .strict();

const componentShape = (args: z.ZodType) => ({
  extraArgs: args.optional(),
  extraVolumes: z.array(hostPathMount).max(20).optional(),
});

type LooseArgs = Record<string, string> | { name: string; value: string }[] | undefined;
const argsMap = (args: LooseArgs) =>
  Array.isArray(args) ? Object.fromEntries(args.map((a) => [a.name, a.value])) : args;

/** extraArgs may add flags and replace kubeadm's defaults, but not the ones capt wires the machine with. */
function refuseWiredFlags(config: Partial<Record<ComponentField, { extraArgs?: unknown }>>, ctx: z.RefinementCtx) {
  for (const [field, component] of configuredComponents) {
    const args = config[field]?.extraArgs as LooseArgs;
    for (const name of Object.keys(argsMap(args) ?? {}).filter((n) => wiredFlags[component].includes(n)))
      ctx.addIssue({
        code: 'custom',
        path: [field, 'extraArgs', Array.isArray(args) ? args.findIndex((a) => a.name === name) : name],
        message: `--${name} of ${component} is set by capt from the machine and the Cluster (its address, ports, certificates and networks); remove it`,
      });
  }
}

const specShape = (args: z.ZodType, componentArgs: z.ZodType) => ({
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
          ...componentShape(componentArgs),
          certSANs: z
            .array(z.string().regex(/^[A-Za-z0-9.:*-]{1,253}$/, 'a DNS name or an IP address'))
            .max(100)
            .optional(),
        })
        .strict()
        .optional(),
      // A local machine runs the version's binaries, never images: only kubeadm's default registry means anything.
      imageRepository: z
        .literal('', {
          message:
            "a local machine runs the Kubernetes version's binaries, not images, so no registry is used: remove imageRepository",
        })
        .optional(),
      dns: z
        .looseObject({})
        .refine(
          () => false,
          'a local cluster runs no CoreDNS (its workers are simulated kubelets that run no pods): remove dns',
        )
        .optional(),
      controllerManager: z.object(componentShape(componentArgs)).strict().optional(),
      scheduler: z.object(componentShape(componentArgs)).strict().optional(),
    })
    .strict()
    .superRefine(refuseWiredFlags)
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

export const kubeadmConfigSpecV1beta1 = z.object(specShape(kubeletArgsMap, componentArgsMap)).strict();
export const kubeadmConfigSpecV1beta2 = z.object(specShape(kubeletArgsList, componentArgsList)).strict();

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
  | { name?: string; taints?: { key: string; value?: string; effect: string }[]; kubeletExtraArgs?: LooseArgs }
  | undefined;

function registration(r: LooseRegistration) {
  if (!r) return undefined;
  const args = argsMap(r.kubeletExtraArgs);
  return {
    ...(r.name ? { name: r.name } : {}),
    ...(r.taints ? { taints: r.taints } : {}),
    ...(args ? { kubeletExtraArgs: args } : {}),
  };
}

type LooseComponent = { extraArgs?: LooseArgs; extraVolumes?: z.infer<typeof hostPathMount>[] } | undefined;

/** A component's flags as a map and its volumes without the empty pathType (kubeadm's "check nothing"). */
function component(c: LooseComponent): ControlPlaneComponentConfig | undefined {
  const args = argsMap(c?.extraArgs);
  const volumes = c?.extraVolumes?.map(({ pathType, ...v }) => (pathType ? { ...v, pathType } : v));
  if (!args && !volumes) return undefined;
  return { ...(args ? { extraArgs: args } : {}), ...(volumes ? { extraVolumes: volumes } : {}) };
}

type ClusterConfiguration = NonNullable<KubeadmConfigSpec['clusterConfiguration']>;

function clusterConfiguration(
  c: z.infer<typeof kubeadmConfigSpecV1beta2>['clusterConfiguration'] | undefined,
): ClusterConfiguration | undefined {
  if (!c) return undefined;
  const n = c.networking;
  const apiServer = {
    ...component(c.apiServer as LooseComponent),
    ...(c.apiServer?.certSANs ? { certSANs: c.apiServer.certSANs } : {}),
  };
  const out: ClusterConfiguration = {
    ...(n
      ? {
          networking: {
            ...(n.serviceSubnet ? { serviceSubnet: n.serviceSubnet } : {}),
            ...(n.podSubnet ? { podSubnet: n.podSubnet } : {}),
            ...(n.dnsDomain ? { dnsDomain: n.dnsDomain } : {}),
          },
        }
      : {}),
    ...(Object.keys(apiServer).length ? { apiServer } : {}),
  };
  for (const field of ['controllerManager', 'scheduler'] as const) {
    const config = component(c[field] as LooseComponent);
    if (config) out[field] = config;
  }
  return Object.keys(out).length ? out : undefined;
}

/** Both versions' KubeadmConfigSpec -> capt's model (kubeletExtraArgs and components' extraArgs as maps). */
export function toKubeadmConfigSpec(
  spec: z.infer<typeof kubeadmConfigSpecV1beta1> | z.infer<typeof kubeadmConfigSpecV1beta2>,
): KubeadmConfigSpec {
  const init = registration(spec.initConfiguration?.nodeRegistration as LooseRegistration);
  const join = registration(spec.joinConfiguration?.nodeRegistration as LooseRegistration);
  const cluster = clusterConfiguration(
    spec.clusterConfiguration as z.infer<typeof kubeadmConfigSpecV1beta2>['clusterConfiguration'],
  );
  return {
    ...(cluster ? { clusterConfiguration: cluster } : {}),
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
  /** spec.machineTemplate(.spec).taints: on every control-plane machine's Node, changed in place. */
  taints?: MachineTaint[];
  replicas: number;
  version: string;
  kubeadmConfigSpec: KubeadmConfigSpec;
  infrastructureRef: Ref;
  /** 0 or 1 (the spec rules refuse anything else), as given. */
  maxSurge: number | string;
  rolloutAfter?: string;
  certificatesExpiryDays?: number;
  /** Machines older than this are replaced one at a time, as outdated ones (the machine-max-age annotation). */
  machineMaxAgeSeconds?: number;
  /** remediationStrategy (v1beta1) or remediation (v1beta2), in seconds. */
  remediation?: RemediationStrategy;
  /** False: every rollout replaces machines, even where the provider could update them in place (src/contract/in-place.ts). */
  inPlaceUpdates?: false;
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
            taints: machineTaints.optional(),
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
  .superRefine(machineMaxAgeParses)
  .superRefine(inPlaceUpdatesParses)
  .transform((d): ControlPlaneDoc => ({
    ...machineMetadata(d.spec.machineTemplate.metadata),
    replicas: d.spec.replicas ?? 1,
    version: d.spec.version,
    kubeadmConfigSpec: toKubeadmConfigSpec(d.spec.kubeadmConfigSpec),
    infrastructureRef: fromV1beta1Ref(d.spec.machineTemplate.infrastructureRef),
    maxSurge: d.spec.rolloutStrategy?.rollingUpdate?.maxSurge ?? 1,
    rolloutAfter: d.spec.rolloutAfter,
    certificatesExpiryDays: d.spec.rolloutBefore?.certificatesExpiryDays,
    ...machineMaxAgeField(d),
    nodeDrainTimeoutSeconds: d.spec.machineTemplate.nodeDrainTimeout,
    nodeVolumeDetachTimeoutSeconds: d.spec.machineTemplate.nodeVolumeDetachTimeout,
    nodeDeletionTimeoutSeconds: d.spec.machineTemplate.nodeDeletionTimeout,
    ...(d.spec.machineTemplate.taints ? { taints: d.spec.machineTemplate.taints } : {}),
    remediation: d.spec.remediationStrategy && {
      maxRetry: d.spec.remediationStrategy.maxRetry,
      retryPeriodSeconds: d.spec.remediationStrategy.retryPeriod,
      minHealthyPeriodSeconds: d.spec.remediationStrategy.minHealthyPeriod,
    },
    ...inPlaceUpdatesField(d),
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
  .superRefine(machineMaxAgeParses)
  .superRefine(inPlaceUpdatesParses)
  .transform((d): ControlPlaneDoc => ({
    ...machineMetadata(d.spec.machineTemplate.metadata),
    replicas: d.spec.replicas ?? 1,
    version: d.spec.version,
    kubeadmConfigSpec: toKubeadmConfigSpec(d.spec.kubeadmConfigSpec),
    infrastructureRef: fromV1beta2Ref(d.spec.machineTemplate.spec.infrastructureRef),
    maxSurge: d.spec.rollout?.strategy?.rollingUpdate?.maxSurge ?? 1,
    rolloutAfter: d.spec.rollout?.after,
    certificatesExpiryDays: d.spec.rollout?.before?.certificatesExpiryDays,
    ...machineMaxAgeField(d),
    nodeDrainTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeDrainTimeoutSeconds,
    nodeVolumeDetachTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeVolumeDetachTimeoutSeconds,
    nodeDeletionTimeoutSeconds: d.spec.machineTemplate.spec.deletion?.nodeDeletionTimeoutSeconds,
    ...(d.spec.machineTemplate.spec.taints ? { taints: d.spec.machineTemplate.spec.taints } : {}),
    remediation: d.spec.remediation,
    ...inPlaceUpdatesField(d),
  }));
