import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import type { KubeadmConfigSpec } from '../contract/kubeadm-config-spec';
import type { ClusterDoc, HealthCheckDoc, MachineDeploymentDoc, MachineTemplateDoc } from './kinds/cluster-api';
import { controlPlaneMachineLabels, machineDeploymentMachineLabels } from '../contract/machine-labels';
import type { Ref } from './kinds/common';
import { toKubeadmConfigSpec, type ControlPlaneDoc } from './kinds/kubeadm';
import { configuredComponents } from '../contract/control-plane-flags';
import { componentFlagProblems } from './component-flags';
import {
  fieldPath,
  groups,
  installedKindsSummary,
  kinds,
  providerKinds,
  providerOfKind,
  supportedVersions,
  type Version,
} from './kind-registry';
import { ManifestError, type ManifestLocation, type ManifestProblem } from './manifest-error';
import type {
  BootstrapTemplate,
  ClusterModel,
  InfrastructureTemplate,
  MachineTemplateModel,
  TopologyModel,
} from './model';
import { fromEnvironment, substituteVariables } from './variables';
import { clusterNetworkDefaults } from '../contract/cluster-network';
import { pausedAnnotation } from '../contract/cluster';
import { clusterProblems } from '../spec-rules/cluster-rules';
import { expandTopologies, type RawDocument } from './topology/expand-topology';
import { clusterResourceSetV1beta1, clusterResourceSetV1beta2, configMap, secret } from './kinds/addons';
import { loadAddons, type AddonDocument, type Addons } from './load-addons';
import type { SpecProblem } from '../spec-rules/spec-problem';
import { parseMaintenanceWindow } from './maintenance-window';
import {
  maintenanceWindowAnnotation,
  rolloutInWindowAnnotation,
  type MaintenanceWindow,
} from '../contract/maintenance-window';

export interface ManifestSource {
  /** Shown in errors: a path, or `-` for standard input. */
  file: string;
  text: string;
}

interface Parsed {
  kind: string;
  namespace: string;
  name: string;
  /** The API version the document is written in (infrastructure kinds: v1beta2, they keep one shape). */
  version: Version;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  loc: ManifestLocation;
  value: unknown;
  /** A Cluster made from a ClusterClass: what it keeps of its topology. */
  topology?: TopologyModel;
}

type Raw = RawDocument['raw'];

/** A field path; a key that is not a plain name (a label key with a newline, say) is quoted, so none reaches a terminal raw. */
function issuePath(path: PropertyKey[]): string {
  const segment = (p: PropertyKey) =>
    /^[A-Za-z0-9_./-]+$/.test(String(p)) ? String(p) : JSON.stringify(String(p).slice(0, 80));
  return path.reduce<string>(
    (out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${segment(p)}` : segment(p)),
    '',
  );
}

function zodProblems(error: z.ZodError, loc: ManifestLocation, apiVersion: string): ManifestProblem[] {
  return error.issues.map((issue) => {
    const base = issuePath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const keys = (issue as { keys: string[] }).keys;
      return {
        ...loc,
        path: keys.map((k) => (base ? `${base}.${k}` : k)).join(', '),
        message: `unknown field${keys.length > 1 ? 's' : ''} ${keys.map((k) => `'${k}'`).join(', ')}`,
        hint: `check the spelling and the field's place against ${loc.kind} ${apiVersion}`,
      };
    }
    return {
      ...loc,
      path: base || undefined,
      message: issue.message,
      hint: issue.code === 'invalid_type' ? `fix the value's type at ${base}` : undefined,
    };
  });
}

/** A cluster is a handful of documents; a thousand is already a fleet, and more is not one apply. */
export const maxDocuments = 1000;
/** One cluster's model travels as a workflow's input, and Temporal refuses a payload over 2 MiB: half of it, with room to grow. */
export const maxModelBytes = 1 << 20;

/**
 * Parses, validates and resolves Cluster API manifests into one model per cluster. Throws ManifestError listing
 * every problem. With `kubernetesVersions` (what the provider on this host can run), other versions are refused
 * here rather than when a machine is created, and so are control-plane flags its binaries do not have.
 */
export function loadManifests(
  sources: ManifestSource[],
  vars: Record<string, string | undefined>,
  kubernetesVersions?: string[],
): ClusterModel[] {
  const { clusters, addons } = loadManifestsWithTopologies(sources, vars, kubernetesVersions);
  const first = addons.resourceSets[0] ?? addons.resources[0];
  if (first)
    throw new ManifestError([
      {
        file: sources.map((s) => s.file).join(', '),
        index: 0,
        name: first.name,
        message: `ClusterResourceSets and the ConfigMaps and Secrets they apply are not taken here`,
        hint: 'apply them with `capt apply -f`',
      },
    ]);
  return clusters;
}

/** An object a Cluster's topology was expanded into, as Cluster API's topology controller would write it. */
export interface MadeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
}

/**
 * loadManifests, with the objects the Clusters' topologies were expanded into (the infrastructure cluster, the
 * control plane, the MachineDeployments, their templates and health checks): the management API shows them.
 */
export function loadManifestsWithTopologies(
  sources: ManifestSource[],
  vars: Record<string, string | undefined>,
  kubernetesVersions?: string[],
): { clusters: ClusterModel[]; made: MadeObject[]; addons: Addons } {
  const problems: ManifestProblem[] = [];
  const addonDocuments: AddonDocument[] = [];
  const documents: RawDocument[] = [];
  for (const source of sources) {
    const count = (source.text.match(/^---/gm) ?? []).length + 1;
    if (count > maxDocuments) {
      problems.push({
        file: source.file,
        index: 0,
        message: `${count} documents, more than the ${maxDocuments} one apply takes`,
        hint: 'a cluster is a handful of documents: apply fewer clusters at once',
      });
      continue;
    }
    const { text, missing } = substituteVariables(source.text, vars);
    for (const name of missing) {
      const hint = fromEnvironment(name)
        ? `set ${name} in the environment, pass --var ${name}=value, or write \${${name}:=default}`
        : `${name} is one of capt's own settings or named like a secret, which manifests never take from the environment; pass --var ${name}=value if the manifest must carry it`;
      problems.push({
        file: source.file,
        index: 0,
        message: `variable \${${name}} is not set and has no default`,
        hint,
      });
    }
    parseAllDocuments(text).forEach((doc, index) => {
      const loc: ManifestLocation = { file: source.file, index };
      if (doc.errors.length)
        return void problems.push({ ...loc, message: `not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}` });
      let raw: Raw | null;
      try {
        raw = doc.toJS() as Raw | null;
      } catch (err) {
        // The YAML library refuses alias bombs here, as it builds the value.
        return void problems.push({ ...loc, message: `not valid YAML: ${(err as Error).message.split('\n')[0]}` });
      }
      if (raw === null || raw === undefined) return;
      documents.push({ raw, loc });
    });
  }
  const parsed: Parsed[] = [];
  const expanded = expandTopologies(documents, problems);
  for (const { raw, loc, topology } of expanded)
    if (!parseAddonDocument(raw, loc, problems, addonDocuments)) parseDocument(raw, loc, problems, parsed, topology);
  const addons = loadAddons(addonDocuments, problems);
  if (!problems.length && parsed.length === 0 && addonDocuments.length === 0)
    problems.push({
      file: sources.map((s) => s.file).join(', '),
      index: 0,
      message: 'no manifests found: every document is empty',
      hint: 'give files with Cluster API objects (apiVersion, kind, metadata, spec)',
    });
  const clusters = problems.length ? [] : resolve(parsed, problems);
  for (const cluster of clusters) {
    if (kubernetesVersions) {
      const files = sources.map((s) => s.file).join(', ');
      problems.push(...versionProblems(cluster, kubernetesVersions, files), ...componentFlagProblems(cluster, files));
    }
    const bytes = Buffer.byteLength(JSON.stringify(cluster));
    if (bytes > maxModelBytes) {
      problems.push({
        file: sources.map((s) => s.file).join(', '),
        index: 0,
        kind: 'Cluster',
        name: cluster.name,
        message: `cluster ${cluster.name} comes to ${bytes} bytes as capt sends it, over ${maxModelBytes >> 10} KiB (Temporal refuses payloads over 2 MiB)`,
        hint: 'make its annotations, labels, files and commands smaller, or move big files to where machines fetch them',
      });
    }
  }
  if (problems.length) throw new ManifestError(problems);
  // The model travels as workflow input: plain JSON, with absent fields absent rather than undefined.
  return {
    clusters: JSON.parse(JSON.stringify(clusters)) as ClusterModel[],
    made: expanded.filter((d) => d.madeFromTopology).map((d) => d.raw as MadeObject),
    addons: JSON.parse(JSON.stringify(addons)) as Addons,
  };
}

const addonsGroup = 'addons.cluster.x-k8s.io';

/**
 * A ClusterResourceSet, or a ConfigMap or Secret (the resources such sets apply), parsed into `out`; false for
 * any other document. ClusterResourceSetBinding is Cluster API's record of what was applied: capt keeps it itself.
 */
function parseAddonDocument(raw: Raw, loc: ManifestLocation, problems: ManifestProblem[], out: AddonDocument[]) {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false;
  const kind = raw.kind as unknown;
  if (kind !== 'ClusterResourceSet' && kind !== 'ConfigMap' && kind !== 'Secret') return false;
  const name = typeof raw.metadata?.name === 'string' ? raw.metadata.name : undefined;
  const where = { ...loc, kind, name };
  const apiVersion = raw.apiVersion as unknown;
  const expected = kind === 'ClusterResourceSet' ? [`${addonsGroup}/v1beta2`, `${addonsGroup}/v1beta1`] : ['v1'];
  if (typeof apiVersion !== 'string' || !expected.includes(apiVersion)) {
    problems.push({
      ...where,
      path: 'apiVersion',
      message: `${kind} is not served as ${JSON.stringify(String(apiVersion).slice(0, 100))}`,
      hint: `use apiVersion: ${expected.join(' or ')}`,
    });
    return true;
  }
  const schema =
    kind === 'ConfigMap'
      ? configMap
      : kind === 'Secret'
        ? secret
        : apiVersion.endsWith('v1beta1')
          ? clusterResourceSetV1beta1
          : clusterResourceSetV1beta2;
  const result = schema.safeParse(raw);
  if (!result.success) problems.push(...zodProblems(result.error, where, apiVersion));
  else if (kind === 'ClusterResourceSet' && raw.metadata?.annotations?.[pausedAnnotation] !== undefined)
    problems.push({
      ...where,
      path: `metadata.annotations.${pausedAnnotation}`,
      message: 'capt does not pause a ClusterResourceSet',
      hint: 'remove the annotation; `capt delete clusterresourceset` stops one, and what it applied stays',
    });
  else
    out.push({
      kind,
      name: name!,
      namespace: (raw.metadata?.namespace as string | undefined) ?? 'default',
      loc: where,
      value: result.data,
    });
  return true;
}

function parseDocument(
  raw: Raw,
  loc: ManifestLocation,
  problems: ManifestProblem[],
  out: Parsed[],
  topology?: TopologyModel,
): void {
  if (typeof raw !== 'object' || Array.isArray(raw))
    return void problems.push({ ...loc, message: 'a manifest must be a mapping with apiVersion, kind and metadata' });
  const kind = typeof raw.kind === 'string' ? raw.kind : undefined;
  const name = typeof raw.metadata?.name === 'string' ? raw.metadata.name : undefined;
  const where = { ...loc, kind, name };
  if (typeof raw.apiVersion !== 'string' || !kind)
    return void problems.push({
      ...where,
      path: !kind ? 'kind' : 'apiVersion',
      message: `${!kind ? 'kind' : 'apiVersion'} is missing`,
      hint: 'every manifest needs apiVersion and kind, e.g. apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster',
    });
  if (raw.apiVersion.split('/').length !== 2) {
    return void problems.push({
      ...where,
      path: 'apiVersion',
      message: `apiVersion ${JSON.stringify(raw.apiVersion.slice(0, 100))} is not GROUP/VERSION`,
      hint: 'e.g. apiVersion: cluster.x-k8s.io/v1beta2',
    });
  }
  const [group, version] = raw.apiVersion.split('/') as [string, string];
  let schema: z.ZodType | undefined;
  // Own properties only: a kind such as `constructor` must not find Object's prototype.
  const core = Object.hasOwn(kinds, kind) ? kinds[kind] : undefined;
  const provider = providerOfKind(kind);
  if (core) {
    if (group !== core.group)
      return void problems.push({
        ...where,
        path: 'apiVersion',
        message: `${kind} belongs to ${core.group}, not ${group}`,
        hint: `use apiVersion: ${core.group}/v1beta2`,
      });
    if (!supportedVersions.includes(version as never))
      return void problems.push({
        ...where,
        path: 'apiVersion',
        message: `${raw.apiVersion} is not supported`,
        hint: `use ${core.group}/v1beta1 or ${core.group}/v1beta2`,
      });
    schema = core.schemas[version as 'v1beta1' | 'v1beta2'];
  } else if (provider) {
    if (group !== groups.infrastructure)
      return void problems.push({
        ...where,
        path: 'apiVersion',
        message: `${kind} belongs to ${groups.infrastructure}, not ${group}`,
        hint: `use apiVersion: ${groups.infrastructure}/v1beta2`,
      });
    schema = providerKinds[provider]!.schemas[kind];
  } else {
    const message =
      group === groups.infrastructure
        ? `kind ${kind} is not served by any installed provider`
        : `kind ${kind} (${raw.apiVersion}) is not a kind capt manages`;
    return void problems.push({
      ...where,
      path: 'kind',
      message,
      hint: `installed providers and their kinds: ${installedKindsSummary()}; core kinds: ${Object.keys(kinds).join(', ')}`,
    });
  }
  const result = schema!.safeParse(raw);
  if (!result.success) return void problems.push(...zodProblems(result.error, where, raw.apiVersion));
  out.push({
    kind,
    name: name!,
    namespace: (raw.metadata?.namespace as string | undefined) ?? 'default',
    version: core ? (version as Version) : 'v1beta2',
    labels: raw.metadata?.labels ?? {},
    annotations: raw.metadata?.annotations ?? {},
    loc: where,
    value: result.data,
    ...(topology && { topology }),
  });
}

const withoutRef = ({ infrastructureRef: _ref, ...rest }: ControlPlaneDoc) => rest;

/**
 * A MachineHealthCheck goes to the one owner whose machines its selector matches, which evaluates it over
 * its own machine records (maxUnhealthy is counted per owner, so a check spanning owners is refused).
 */
type OwnerModel = ClusterModel['controlPlane'] | ClusterModel['machineDeployments'][number];

function attachHealthCheck(p: Parsed, cluster: ClusterModel, problems: ManifestProblem[]): void {
  const doc = p.value as HealthCheckDoc;
  const refuse = (path: string, message: string, hint: string) =>
    problems.push({ ...p.loc, path: fieldPath(p.kind, p.version, path), message, hint });
  if (doc.externalRemediation) {
    return void refuse(
      'spec.remediation.templateRef',
      'external remediation (a remediation template) is not carried out by capt',
      'remove it: the owner of the machine remediates it, as Cluster API does without a template',
    );
  }
  const owners = [
    {
      ref: `KubeadmControlPlane ${cluster.controlPlane.name}`,
      labels: controlPlaneMachineLabels(cluster.name, cluster.controlPlane.name, cluster.controlPlane.labels),
      model: cluster.controlPlane as OwnerModel,
    },
    ...cluster.machineDeployments.map((md) => ({
      ref: `MachineDeployment ${md.name}`,
      labels: machineDeploymentMachineLabels(cluster.name, md.name, md.template.labels),
      model: md as OwnerModel,
    })),
  ];
  const selected = owners.filter((o) => Object.entries(doc.selector).every(([k, v]) => o.labels[k] === v));
  const offered = owners
    .map(
      (o) =>
        `${o.ref}: ${Object.entries(o.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`,
    )
    .join('; ');
  if (selected.length === 0)
    return void refuse(
      'spec.selector.matchLabels',
      `selects no machine of cluster ${cluster.name}`,
      `match the labels of one owner's machines (${offered})`,
    );
  if (selected.length > 1) {
    return void refuse(
      'spec.selector.matchLabels',
      `selects the machines of ${selected.map((o) => o.ref).join(' and ')}; capt counts maxUnhealthy per owner`,
      'write one MachineHealthCheck per control plane or MachineDeployment, e.g. selecting cluster.x-k8s.io/deployment-name',
    );
  }
  const owner = selected[0]!;
  if (owner.model.healthCheck)
    return void refuse(
      'spec.selector.matchLabels',
      `the machines of ${owner.ref} are already checked by MachineHealthCheck ${owner.model.healthCheck.name}`,
      'keep one MachineHealthCheck per owner',
    );
  const { clusterName: _c, selector: _s, externalRemediation: _e, ...checks } = doc;
  owner.model.healthCheck = { name: p.name, ...checks };
}

function resolve(parsed: Parsed[], problems: ManifestProblem[]): ClusterModel[] {
  const seen = new Map<string, Parsed>();
  for (const p of parsed) {
    const key = `${p.kind}/${p.namespace}/${p.name}`;
    if (seen.has(key))
      problems.push({
        ...p.loc,
        message: `${p.kind} ${p.namespace}/${p.name} appears twice (first in ${seen.get(key)!.loc.file}, document ${seen.get(key)!.loc.index + 1})`,
        hint: 'remove one of them or rename it',
      });
    seen.set(key, p);
  }
  const find = (owner: Parsed, ref: Ref | undefined, path: string, expected: string[]): Parsed | undefined => {
    if (!ref)
      return void problems.push({
        ...owner.loc,
        path,
        message: `${path} is required`,
        hint: `reference a ${expected.join(' or ')}`,
      });
    if (!expected.includes(ref.kind)) {
      const hint = expected.length === 1 ? `reference a ${expected[0]}` : `reference one of ${expected.join(', ')}`;
      return void problems.push({
        ...owner.loc,
        path: `${path}.kind`,
        message: `${ref.kind} cannot be used here`,
        hint: `${hint}; installed providers: ${installedKindsSummary()}`,
      });
    }
    const target = seen.get(`${ref.kind}/${ref.namespace ?? owner.namespace}/${ref.name}`);
    if (!target) {
      const same = parsed.filter((p) => p.kind === ref.kind).map((p) => `${p.namespace}/${p.name}`);
      problems.push({
        ...owner.loc,
        path: `${path}.name`,
        missing: true,
        message: `${ref.kind} ${ref.namespace ?? owner.namespace}/${ref.name} is not in the manifests`,
        hint: same.length
          ? `defined ${ref.kind}s: ${same.join(', ')}`
          : `add a ${ref.kind} named ${ref.name} or fix the reference`,
      });
    }
    return target;
  };
  const infraTemplateKinds = Object.values(providerKinds).map((p) => p.machineTemplate);
  const infraClusterKinds = Object.values(providerKinds).map((p) => p.cluster);
  const infraMachineKinds = Object.values(providerKinds).map((p) => p.machine);
  const machineTemplate = (
    owner: Parsed,
    t: MachineTemplateDoc,
    path: string,
    bootstrapKind: string,
    infraKinds = infraTemplateKinds,
  ): MachineTemplateModel | undefined => {
    if (t.dataSecretName !== undefined) {
      problems.push({
        ...owner.loc,
        path: fieldPath(owner.kind, owner.version, `${path}.bootstrap.dataSecretName`),
        message: "bootstrap data made elsewhere is not used by capt: it renders each machine's from a kubeadm config",
        hint: `reference a ${bootstrapKind} in bootstrap.configRef instead`,
      });
    }
    if (t.providerID !== undefined) {
      problems.push({
        ...owner.loc,
        path: fieldPath(owner.kind, owner.version, `${path}.providerID`),
        message: 'adopting an existing machine by providerID is not carried out by capt',
        hint: 'remove providerID: capt creates the machine',
      });
    }
    const infra = find(owner, t.infrastructureRef, `${path}.infrastructureRef`, infraKinds);
    const boot = find(owner, t.bootstrapRef, `${path}.bootstrap.configRef`, [bootstrapKind]);
    if (!infra || !boot) return undefined;
    const { bootstrapRef: _b, infrastructureRef: _i, dataSecretName: _d, providerID: _p, ...rest } = t;
    const config =
      boot.kind === 'KubeadmConfigTemplate'
        ? (boot.value as { spec: { template: { spec: Parameters<typeof toKubeadmConfigSpec>[0] } } }).spec.template.spec
        : (boot.value as { spec: Parameters<typeof toKubeadmConfigSpec>[0] }).spec;
    const bootstrap: BootstrapTemplate = {
      kind: boot.kind,
      name: boot.name,
      config: toKubeadmConfigSpec(config) as KubeadmConfigSpec,
    };
    // A worker joins and runs no control-plane component, so their settings would do nothing there.
    for (const [field, component] of configuredComponents) {
      const config = bootstrap.config.clusterConfiguration?.[field];
      if (config?.extraArgs || config?.extraVolumes)
        problems.push({
          ...boot.loc,
          kind: boot.kind,
          name: boot.name,
          path: `${boot.kind === 'KubeadmConfigTemplate' ? 'spec.template.spec' : 'spec'}.clusterConfiguration.${field}`,
          message: `a worker runs no ${component}: its extraArgs and extraVolumes would do nothing`,
          hint: "set them in the KubeadmControlPlane's kubeadmConfigSpec.clusterConfiguration, or remove them",
        });
    }
    const infrastructure: InfrastructureTemplate = {
      kind: infra.kind,
      name: infra.name,
      spec: infra.value as Record<string, unknown>,
    };
    return { ...rest, bootstrap, infrastructure };
  };

  /** The cluster's window for an owner (control plane, MachineDeployment) annotated to roll out only inside it; a problem when it cannot. */
  const windows = new Map<ClusterModel, MaintenanceWindow | string | undefined>();
  const heldForWindow = (p: Parsed, cluster: ClusterModel): MaintenanceWindow | undefined => {
    const held = p.annotations[rolloutInWindowAnnotation];
    if (held === undefined) return undefined;
    const path = `metadata.annotations[${rolloutInWindowAnnotation}]`;
    // A window that does not parse is the Cluster's problem, said once there.
    const window = windows.get(cluster);
    if (held !== 'true')
      problems.push({
        ...p.loc,
        path,
        message: `"${held}" is not a value it takes`,
        hint: 'set it to "true" or remove it',
      });
    else if (window === undefined)
      problems.push({
        ...p.loc,
        path,
        message: `Cluster ${cluster.name} has no maintenance window to wait for`,
        hint: `annotate the Cluster ${maintenanceWindowAnnotation}, e.g. "Sat,Sun 02:00-04:00 Europe/Berlin", or remove this annotation`,
      });
    else if (typeof window !== 'string') return window;
    return undefined;
  };
  const clusters: ClusterModel[] = [];
  for (const c of parsed.filter((p) => p.kind === 'Cluster')) {
    const doc = c.value as ClusterDoc;
    const infra = find(c, doc.infrastructureRef, 'spec.infrastructureRef', infraClusterKinds);
    const cpParsed = find(c, doc.controlPlaneRef, 'spec.controlPlaneRef', ['KubeadmControlPlane']);
    if (!infra || !cpParsed) continue;
    const provider = providerOfKind(infra.kind)!;
    const cp = cpParsed.value as ControlPlaneDoc;
    const cpInfra = find(
      cpParsed,
      cp.infrastructureRef,
      fieldPath(cpParsed.kind, cpParsed.version, 'spec.machineTemplate.spec.infrastructureRef'),
      infraTemplateKinds,
    );
    if (!cpInfra) continue;
    if (providerOfKind(cpInfra.kind) !== provider)
      problems.push({
        ...cpParsed.loc,
        path: fieldPath(cpParsed.kind, cpParsed.version, 'spec.machineTemplate.spec.infrastructureRef.kind'),
        message: `${cpInfra.kind} is from provider ${providerOfKind(cpInfra.kind)}, but the cluster uses ${provider}`,
        hint: `use ${providerKinds[provider]!.machineTemplate}`,
      });
    const windowText = c.annotations[maintenanceWindowAnnotation];
    const window = windowText === undefined ? undefined : parseMaintenanceWindow(windowText);
    if (typeof window === 'string')
      problems.push({
        ...c.loc,
        path: `metadata.annotations[${maintenanceWindowAnnotation}]`,
        message: window,
        hint: 'write it as days, hours and a time zone, e.g. "Sat,Sun 02:00-04:00 Europe/Berlin"',
      });
    const model: ClusterModel = {
      namespace: c.namespace,
      name: c.name,
      labels: c.labels,
      annotations: c.annotations,
      provider,
      infrastructure: { kind: infra.kind, name: infra.name, spec: infra.value as Record<string, unknown> },
      serviceSubnet: doc.serviceSubnet ?? clusterNetworkDefaults.serviceSubnet,
      podSubnet: doc.podSubnet ?? clusterNetworkDefaults.podSubnet,
      serviceDomain: doc.serviceDomain ?? clusterNetworkDefaults.serviceDomain,
      paused: doc.paused || c.annotations[pausedAnnotation] !== undefined,
      controlPlane: {
        ...withoutRef(cp),
        name: cpParsed.name,
        infrastructure: { kind: cpInfra.kind, name: cpInfra.name, spec: cpInfra.value as Record<string, unknown> },
      },
      machineDeployments: [],
      machines: [],
      ...(c.topology && { topology: c.topology }),
    };
    windows.set(model, window);
    const cpWindow = heldForWindow(cpParsed, model);
    if (cpWindow) model.controlPlane.maintenanceWindow = cpWindow;
    clusters.push(model);
  }
  const clusterOf = (p: Parsed, clusterName: string) => {
    const cluster = clusters.find((c) => c.name === clusterName && c.namespace === p.namespace);
    if (
      !cluster &&
      !parsed.some((q) => q.kind === 'Cluster' && q.name === clusterName && q.namespace === p.namespace)
    ) {
      problems.push({
        ...p.loc,
        path: 'spec.clusterName',
        missing: true,
        message: `Cluster ${p.namespace}/${clusterName} is not in the manifests`,
        hint: 'apply the Cluster with its MachineDeployments, or fix clusterName',
      });
    }
    return cluster;
  };
  for (const p of parsed.filter((q) => q.kind === 'MachineDeployment')) {
    const md = p.value as MachineDeploymentDoc;
    const cluster = clusterOf(p, md.clusterName);
    const template = machineTemplate(p, md.template, 'spec.template.spec', 'KubeadmConfigTemplate');
    const window = cluster && heldForWindow(p, cluster);
    if (cluster && template)
      cluster.machineDeployments.push({
        ...md,
        name: p.name,
        template,
        ...(window ? { maintenanceWindow: window } : {}),
      });
  }
  for (const p of parsed.filter((q) => q.kind === 'Machine')) {
    const machine = p.value as MachineTemplateDoc;
    const cluster = clusterOf(p, machine.clusterName);
    if (machine.labels['cluster.x-k8s.io/control-plane'] !== undefined) {
      problems.push({
        ...p.loc,
        path: 'metadata.labels',
        message:
          'a control-plane Machine of its own is not carried out by capt: its control-plane machines come from the KubeadmControlPlane',
        hint: 'scale the KubeadmControlPlane instead',
      });
      continue;
    }
    const template = machineTemplate(p, machine, 'spec', 'KubeadmConfig', infraMachineKinds);
    if (cluster && template) cluster.machines!.push({ name: p.name, template });
  }
  for (const p of parsed.filter((q) => q.kind === 'MachineHealthCheck')) {
    const cluster = clusterOf(p, (p.value as HealthCheckDoc).clusterName);
    if (cluster) attachHealthCheck(p, cluster, problems);
  }
  // The spec rules, shared with the workflows' validators, speak of objects and v1beta2 fields: each problem
  // goes back to its document, in the field names that document's API version uses.
  for (const cluster of clusters) {
    const located = (s: SpecProblem): ManifestProblem => {
      const doc =
        seen.get(`${s.kind}/${s.namespace}/${s.name}`) ?? seen.get(`Cluster/${cluster.namespace}/${cluster.name}`)!;
      return { ...doc.loc, path: fieldPath(doc.kind, doc.version, s.path), message: s.message, hint: s.hint };
    };
    problems.push(...clusterProblems(cluster).map(located));
  }
  return clusters;
}

/** Every version the cluster names (control plane, MachineDeployments, its own Machines) that the provider cannot run. */
function versionProblems(cluster: ClusterModel, available: string[], file: string): ManifestProblem[] {
  const named = [
    { kind: 'KubeadmControlPlane', name: cluster.controlPlane.name, version: cluster.controlPlane.version },
    ...cluster.machineDeployments.map((md) => ({
      kind: 'MachineDeployment',
      name: md.name,
      version: md.template.version,
    })),
    ...(cluster.machines ?? []).map((m) => ({ kind: 'Machine', name: m.name, version: m.template.version })),
  ];
  return named
    .filter((n) => !available.includes(n.version))
    .map((n) => ({
      file,
      index: 0,
      kind: n.kind,
      name: n.name,
      path: n.kind === 'MachineDeployment' ? 'spec.template.spec.version' : 'spec.version',
      message: `Kubernetes ${n.version} is not one the ${cluster.provider} provider can run`,
      hint: `use one of ${available.join(', ')}`,
    }));
}
