import type { ManifestLocation, ManifestProblem } from '../manifest-error';
import type { TopologyModel } from '../model';
import { renderTopology, type KubeObject, type RenderedTopology } from './render-topology';
import { topologyNames } from './topology-names';
import { parseVersion } from '../../contract/upgrade-plan';

/** A manifest document as YAML gave it, before its kind's schema reads it. */
export interface RawDocument {
  raw: {
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: {
      name?: unknown;
      namespace?: unknown;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    };
    spec?: Record<string, unknown>;
  };
  loc: ManifestLocation;
  /** On a Cluster made from a topology: what the cluster keeps of it. */
  topology?: TopologyModel;
  /** On an object made from a Cluster's topology (not the Cluster itself): the management API shows it as made. */
  madeFromTopology?: boolean;
}

/** Kinds that only a ClusterClass uses: capt reads them through the Cluster whose topology names the class. */
const classOnlyKind = (kind: string) => kind === 'ClusterClass' || /ClusterTemplate$|ControlPlaneTemplate$/.test(kind);

const nameOf = (d: RawDocument) => (typeof d.raw.metadata?.name === 'string' ? d.raw.metadata.name : '');
const namespaceOf = (d: RawDocument) =>
  typeof d.raw.metadata?.namespace === 'string' ? d.raw.metadata.namespace : 'default';
const kindOf = (d: RawDocument) => (typeof d.raw.kind === 'string' ? d.raw.kind : '');
/** Where a document's problems point: its place in the file, its kind and name. */
const locate = (d: RawDocument): ManifestLocation => ({ ...d.loc, kind: kindOf(d), name: nameOf(d) });

/** Every {kind, name} a class refers to (templateRef in v1beta2, ref in v1beta1), wherever it sits. */
export function classReferences(
  value: unknown,
  path: string,
  out: { kind: string; name: string; path: string }[] = [],
) {
  if (Array.isArray(value)) value.forEach((v, i) => classReferences(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object')
    for (const [key, v] of Object.entries(value)) {
      const here = path ? `${path}.${key}` : key;
      const ref = v as { kind?: unknown; name?: unknown };
      if ((key === 'templateRef' || key === 'ref') && typeof ref?.kind === 'string' && typeof ref.name === 'string')
        out.push({ kind: ref.kind, name: ref.name, path: here });
      else classReferences(v, here, out);
    }
  return out;
}

/**
 * Where a class asks for its own names (v1beta2 `naming`, v1beta1 `namingStrategy`): Cluster API's names draw
 * random characters, which capt replaces with deterministic ones, so a template of names would not be honoured.
 */
function namingTemplates(clusterClass: RawDocument): string[] {
  const spec = (clusterClass.raw.spec ?? {}) as {
    infrastructure?: { naming?: unknown };
    infrastructureNamingStrategy?: unknown;
    controlPlane?: { naming?: unknown; namingStrategy?: unknown };
    workers?: { machineDeployments?: { naming?: unknown; namingStrategy?: unknown }[] };
  };
  const found = (value: unknown, path: string) => (value !== undefined ? [path] : []);
  return [
    ...found(spec.infrastructure?.naming, 'spec.infrastructure.naming'),
    ...found(spec.infrastructureNamingStrategy, 'spec.infrastructureNamingStrategy'),
    ...found(spec.controlPlane?.naming, 'spec.controlPlane.naming'),
    ...found(spec.controlPlane?.namingStrategy, 'spec.controlPlane.namingStrategy'),
    ...(Array.isArray(spec.workers?.machineDeployments) ? spec.workers.machineDeployments : []).flatMap((md, i) => [
      ...found(md?.naming, `spec.workers.machineDeployments[${i}].naming`),
      ...found(md?.namingStrategy, `spec.workers.machineDeployments[${i}].namingStrategy`),
    ]),
  ];
}

/**
 * Replaces each Cluster with spec.topology (and the ClusterClass and templates it uses) by the objects Cluster
 * API's topology controller would make of them: the Cluster with its references, the infrastructure cluster,
 * the KubeadmControlPlane, the MachineDeployments with their templates and the MachineHealthChecks, named
 * deterministically. Those are then read like any written manifest.
 */
export function expandTopologies(docs: RawDocument[], problems: ManifestProblem[]): RawDocument[] {
  const topologyClusters = docs.filter((d) => kindOf(d) === 'Cluster' && d.raw.spec?.topology !== undefined);
  const consumed = new Set<RawDocument>();
  const made: RawDocument[] = [];
  for (const cluster of topologyClusters) {
    consumed.add(cluster);
    const group = topologyGroup(cluster, docs, problems);
    if (!group) continue;
    group.forEach((d) => consumed.add(d));
    const rendered = renderTopology(group.map((d) => withNamespace(d) as KubeObject));
    if ('errors' in rendered) {
      for (const e of rendered.errors) {
        const at = group.find((d) => kindOf(d) === e.kind && nameOf(d) === e.name) ?? cluster;
        problems.push({
          ...locate(at),
          path: e.field || undefined,
          message: e.message,
          hint:
            e.hint ??
            "change the field named as the message says: capt checks classes, variables and patches with Cluster API's own webhooks and topology code",
        });
      }
      continue;
    }
    made.push(
      ...topologyDocuments(cluster, group, rendered).map((d) =>
        d.raw.kind === 'Cluster' ? d : { ...d, madeFromTopology: true },
      ),
    );
  }
  for (const d of docs.filter((x) => classOnlyKind(kindOf(x)) && !consumed.has(x)))
    problems.push({
      ...locate(d),
      // Missing is its Cluster: the management API's objects arrive one by one, a class before the Clusters of it.
      missing: true,
      message: `${kindOf(d)} ${nameOf(d)} is used by no Cluster's topology in these manifests`,
      hint: 'capt keeps no classes of its own: apply the ClusterClass and its templates with the Clusters whose spec.topology names them, or remove it',
    });
  // A class no Cluster uses has been reported above; its kinds are read only through a topology.
  return [...docs.filter((d) => !consumed.has(d) && !classOnlyKind(kindOf(d))), ...made];
}

const withNamespace = (d: RawDocument) => ({
  ...d.raw,
  metadata: { ...d.raw.metadata, namespace: namespaceOf(d) },
});

/** The Cluster, its class and every template the class names; undefined (with problems) when one is missing. */
function topologyGroup(
  cluster: RawDocument,
  docs: RawDocument[],
  problems: ManifestProblem[],
): RawDocument[] | undefined {
  const topology = cluster.raw.spec!.topology as {
    classRef?: { name?: unknown; namespace?: unknown };
    class?: unknown;
    classNamespace?: unknown;
  } | null;
  const v1beta1 = String(cluster.raw.apiVersion).endsWith('/v1beta1');
  const className = v1beta1 ? topology?.class : topology?.classRef?.name;
  const classNamespace = (v1beta1 ? topology?.classNamespace : topology?.classRef?.namespace) ?? namespaceOf(cluster);
  const classPath = v1beta1 ? 'spec.topology.class' : 'spec.topology.classRef.name';
  if (typeof className !== 'string' || className === '') {
    problems.push({
      ...locate(cluster),
      path: classPath,
      message: `${classPath} is required in a Cluster with spec.topology`,
      hint: 'name the ClusterClass this cluster is made from',
    });
    return undefined;
  }
  const clusterClass = docs.find(
    (d) => kindOf(d) === 'ClusterClass' && nameOf(d) === className && namespaceOf(d) === classNamespace,
  );
  if (!clusterClass) {
    problems.push({
      ...locate(cluster),
      path: classPath,
      missing: true,
      message: `ClusterClass ${String(classNamespace)}/${className} is not in the manifests`,
      hint: 'capt keeps no classes of its own: apply the ClusterClass and its templates with the Cluster',
    });
    return undefined;
  }
  const naming = namingTemplates(clusterClass);
  for (const path of naming)
    problems.push({
      ...locate(clusterClass),
      path,
      message: 'naming templates are not carried out: capt names the objects of a topology itself, deterministically',
      hint: 'remove it; the names capt gives are in docs/topology.md',
    });
  const versions = clusterClass.raw.spec?.kubernetesVersions;
  const unrunnable = (Array.isArray(versions) ? versions : [])
    .map((v, i) => ({ v, i }))
    .filter(({ v }) => typeof v !== 'string' || !parseVersion(v));
  for (const { v, i } of unrunnable)
    problems.push({
      ...locate(clusterClass),
      path: `spec.kubernetesVersions[${i}]`,
      message: `${JSON.stringify(v)} is not a version capt can run: a chained upgrade gives each listed version to machines, which take vX.Y.Z (no pre-release or build metadata)`,
      hint: 'list released Kubernetes versions such as v1.36.3',
    });
  if (naming.length || unrunnable.length) return undefined;
  const templates: RawDocument[] = [];
  let complete = true;
  for (const ref of classReferences(clusterClass.raw.spec, 'spec')) {
    const template = docs.find(
      (d) => kindOf(d) === ref.kind && nameOf(d) === ref.name && namespaceOf(d) === namespaceOf(clusterClass),
    );
    if (template) {
      if (!templates.includes(template)) templates.push(template);
      continue;
    }
    complete = false;
    problems.push({
      ...locate(clusterClass),
      path: `${ref.path}.name`,
      missing: true,
      message: `${ref.kind} ${namespaceOf(clusterClass)}/${ref.name} is not in the manifests`,
      hint: `add the ${ref.kind} named ${ref.name} beside the ClusterClass, or fix the reference`,
    });
  }
  return complete ? [cluster, clusterClass, ...templates] : undefined;
}

/** The objects Cluster API's topology code made, renamed and with their references following the names. */
function topologyDocuments(cluster: RawDocument, group: RawDocument[], r: RenderedTopology): RawDocument[] {
  const names = topologyNames(namespaceOf(cluster), nameOf(cluster));
  // A cloned template's problems point at the template it was cloned from, which the user wrote; the rest's at
  // the Cluster, whose topology they were made from.
  const clonedFrom = (o: KubeObject) =>
    group.find((d) => d !== cluster && nameOf(d) === o.metadata.annotations?.['cluster.x-k8s.io/cloned-from-name']);
  const doc = (o: KubeObject, name: string, spec = o.spec, template = false): RawDocument => {
    const source = template ? clonedFrom(o) : undefined;
    return {
      raw: {
        apiVersion: o.apiVersion,
        kind: o.kind,
        metadata: {
          name,
          namespace: namespaceOf(cluster),
          ...(o.metadata.labels && { labels: o.metadata.labels }),
          ...(o.metadata.annotations && { annotations: o.metadata.annotations }),
        },
        spec,
      },
      loc: source
        ? locate(source)
        : { ...cluster.loc, kind: o.kind, name: `${name} (made from the Cluster's topology)` },
    };
  };
  const cloned = (o: KubeObject, name: string) => doc(o, name, o.spec, true);
  // A health check's problems point at the healthCheck it was made from: the topology's own, else its class's
  // (v1beta2 only: v1beta1 names those fields otherwise, and its problems stay at the Cluster).
  const clusterClass = group.find((d) => kindOf(d) === 'ClusterClass')!;
  const topology = (cluster.raw.spec?.topology ?? {}) as {
    controlPlane?: { healthCheck?: unknown };
    workers?: { machineDeployments?: { name?: unknown; class?: unknown; healthCheck?: unknown }[] };
  };
  const classWorkers = ((clusterClass.raw.spec?.workers ?? {}) as { machineDeployments?: { class?: unknown }[] })
    .machineDeployments;
  const healthCheckDoc = (o: KubeObject, name: string, inTopology: string | undefined, inClass: string | undefined) => {
    const [source, base] = inTopology ? [cluster, inTopology] : [clusterClass, inClass];
    const made = doc(o, name);
    if (!base || !String(source.raw.apiVersion).endsWith('/v1beta2')) return made;
    const paths = ['checks', 'remediation'].map((f) => ({ from: `spec.${f}`, to: `${base}.${f}` }));
    return { ...made, loc: { ...made.loc, reroot: { at: locate(source), paths } } };
  };
  const ref = (o: KubeObject, name: string) => ({ apiGroup: o.apiVersion.split('/')[0], kind: o.kind, name });
  const out: RawDocument[] = [];

  const infraName = names.infrastructureCluster();
  out.push(cloned(r.infrastructureCluster, infraName));
  const cp = r.controlPlane;
  const kcpName = names.controlPlane();
  const cpInfra = cp.infrastructureMachineTemplate;
  const cpInfraName = cpInfra && names.controlPlaneTemplate(cpInfra.spec);
  if (cpInfra) out.push(cloned(cpInfra, cpInfraName!));
  const kcpSpec = structuredClone(cp.object.spec ?? {}) as {
    machineTemplate?: { spec?: { infrastructureRef?: unknown } };
  };
  if (cpInfra) ((kcpSpec.machineTemplate ??= {}).spec ??= {}).infrastructureRef = ref(cpInfra, cpInfraName!);
  out.push(doc(cp.object, kcpName, kcpSpec));
  if (cp.machineHealthCheck)
    out.push(
      healthCheckDoc(
        cp.machineHealthCheck,
        kcpName,
        topology.controlPlane?.healthCheck ? 'spec.topology.controlPlane.healthCheck' : undefined,
        'spec.controlPlane.healthCheck',
      ),
    );

  const { topology: _topology, ...clusterSpec } = r.cluster.spec ?? {};
  out.push({
    raw: {
      apiVersion: r.cluster.apiVersion,
      kind: 'Cluster',
      metadata: cluster.raw.metadata,
      spec: {
        ...clusterSpec,
        infrastructureRef: ref(r.infrastructureCluster, infraName),
        controlPlaneRef: ref(cp.object, kcpName),
      },
    },
    loc: locate(cluster),
    topology: topologyModel(cluster, clusterClass, names),
  });

  for (const md of r.machineDeployments) {
    const mdName = names.machineDeployment(md.topologyName);
    const bootstrapName = names.machineDeploymentTemplate(md.topologyName, md.bootstrapTemplate.spec);
    const infraTemplateName = names.machineDeploymentTemplate(md.topologyName, md.infrastructureMachineTemplate.spec);
    out.push(cloned(md.bootstrapTemplate, bootstrapName), cloned(md.infrastructureMachineTemplate, infraTemplateName));
    const spec = structuredClone(md.object.spec ?? {}) as {
      template?: { spec?: { bootstrap?: { configRef?: unknown }; infrastructureRef?: unknown } };
    };
    const machineSpec = ((spec.template ??= {}).spec ??= {});
    machineSpec.bootstrap = { ...machineSpec.bootstrap, configRef: ref(md.bootstrapTemplate, bootstrapName) };
    machineSpec.infrastructureRef = ref(md.infrastructureMachineTemplate, infraTemplateName);
    out.push(doc(md.object, mdName, spec));
    if (md.machineHealthCheck) {
      const written = topology.workers?.machineDeployments ?? [];
      const i = written.findIndex((w) => w.name === md.topologyName);
      const j = classWorkers?.findIndex((c) => c.class === written[i]?.class) ?? -1;
      out.push(
        healthCheckDoc(
          md.machineHealthCheck,
          mdName,
          written[i]?.healthCheck ? `spec.topology.workers.machineDeployments[${i}].healthCheck` : undefined,
          j >= 0 ? `spec.workers.machineDeployments[${j}].healthCheck` : undefined,
        ),
      );
    }
  }
  return out;
}

const upgradeConcurrencyAnnotation = 'topology.cluster.x-k8s.io/upgrade-concurrency';
const deferUpgradeAnnotation = 'topology.cluster.x-k8s.io/defer-upgrade';
const holdUpgradeSequenceAnnotation = 'topology.cluster.x-k8s.io/hold-upgrade-sequence';

/**
 * The class's name and Kubernetes versions, and the upgrade order of the workers, from the Cluster's annotations
 * and its topology's.
 */
function topologyModel(
  cluster: RawDocument,
  clusterClass: RawDocument,
  names: ReturnType<typeof topologyNames>,
): TopologyModel {
  // Cluster API's ClusterClass webhook has checked the list: ordered, no minor skipped; capt's versions are vX.Y.Z.
  const versions = clusterClass.raw.spec?.kubernetesVersions as string[] | undefined;
  // Cluster API's Cluster webhook has checked it is a whole number, 1 or more.
  const concurrency = Number(cluster.raw.metadata?.annotations?.[upgradeConcurrencyAnnotation] ?? 1);
  const written = (cluster.raw.spec?.topology as { workers?: { machineDeployments?: unknown } } | undefined)?.workers
    ?.machineDeployments as { name?: unknown; metadata?: { annotations?: Record<string, string> } }[] | undefined;
  return {
    class: nameOf(clusterClass),
    ...(versions?.length ? { kubernetesVersions: versions } : {}),
    upgradeConcurrency: concurrency,
    // Topology order is the order the Cluster lists them in; the renderer gives them sorted by name.
    // Cluster API rendered each of them (a topology it could not render was refused).
    machineDeployments: (written ?? []).map((md) => {
      const topologyName = String(md.name);
      const annotations = md.metadata?.annotations ?? {};
      return {
        name: names.machineDeployment(topologyName),
        topologyName,
        deferUpgrade: deferUpgradeAnnotation in annotations,
        holdUpgradeSequence: holdUpgradeSequenceAnnotation in annotations,
      };
    }),
  };
}
