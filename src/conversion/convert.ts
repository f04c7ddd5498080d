import {
  conversionDataAnnotation,
  differences,
  readConversionData,
  restoreFields,
  type ConversionData,
} from './conversion-data';
import {
  clusterMoves,
  machineDeploymentMoves,
  machineHealthCheckMoves,
  machineMoves,
  machineSetMoves,
} from './cluster-api-core';
import { applyMoves, type Direction, type Move } from './field-moves';
import { isObject, type Json } from './json-tree';
import {
  kubeadmConfigMoves,
  kubeadmConfigTemplateMoves,
  kubeadmControlPlaneMoves,
  kubeadmControlPlaneTemplateMoves,
} from './kubeadm';
import { pruneToSchema, type Schema } from './schema-prune';

/**
 * One object from v1beta1 to v1beta2 or back, losslessly: the kind's moves, the target version's schema (what it
 * cannot hold is pruned, as the apiserver would), and the conversion data that keeps what was pruned or came
 * back different. Pure: the schemas are given, nothing is read.
 */

export const conversionVersions = ['v1beta1', 'v1beta2'] as const;
export type ConversionVersion = (typeof conversionVersions)[number];

/** The kinds capt converts, by API group: Cluster API's kinds a capt cluster is made of. */
export const convertedKinds: Record<string, Record<string, Move[]>> = {
  'cluster.x-k8s.io': {
    Cluster: clusterMoves,
    Machine: machineMoves,
    MachineSet: machineSetMoves,
    MachineDeployment: machineDeploymentMoves,
    MachineHealthCheck: machineHealthCheckMoves,
  },
  'bootstrap.cluster.x-k8s.io': {
    KubeadmConfig: kubeadmConfigMoves,
    KubeadmConfigTemplate: kubeadmConfigTemplateMoves,
  },
  'controlplane.cluster.x-k8s.io': {
    KubeadmControlPlane: kubeadmControlPlaneMoves,
    KubeadmControlPlaneTemplate: kubeadmControlPlaneTemplateMoves,
  },
};

/** Each converted kind's schema per version, keyed `group/Kind`. */
export type ConversionSchemas = Map<string, Partial<Record<ConversionVersion, Schema>>>;

interface CrdShape {
  spec: { group: string; names: { kind: string }; versions: { name: string; schema?: { openAPIV3Schema?: Schema } }[] };
}

/** The schemas of the converted kinds, from their CustomResourceDefinitions (as setup copied them from Cluster API). */
export function conversionSchemas(crds: Json[]): ConversionSchemas {
  const schemas: ConversionSchemas = new Map();
  for (const crd of crds as unknown as CrdShape[]) {
    const { group, names } = crd.spec;
    if (!convertedKinds[group]?.[names.kind]) continue;
    const byVersion: Partial<Record<ConversionVersion, Schema>> = {};
    for (const version of crd.spec.versions)
      if ((conversionVersions as readonly string[]).includes(version.name) && version.schema?.openAPIV3Schema)
        byVersion[version.name as ConversionVersion] = version.schema.openAPIV3Schema;
    schemas.set(`${group}/${names.kind}`, byVersion);
  }
  return schemas;
}

/** An object capt cannot convert: the ConversionReview fails with this message. */
export class ConversionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConversionError';
  }
}

function splitApiVersion(apiVersion: unknown, what: string): { group: string; version: ConversionVersion } {
  const [group, version, extra] = typeof apiVersion === 'string' ? apiVersion.split('/') : [];
  if (!group || !version || extra !== undefined)
    throw new ConversionError(`${what} must be GROUP/VERSION, got ${JSON.stringify(apiVersion)}`);
  if (!(conversionVersions as readonly string[]).includes(version))
    throw new ConversionError(`${what} ${apiVersion}: capt converts between ${conversionVersions.join(' and ')} only`);
  return { group, version: version as ConversionVersion };
}

type Metadata = { name?: string; namespace?: string; annotations?: Record<string, string> };

/** `object` with its annotations replaced (none left: no `annotations: {}` is made). */
function withAnnotations(object: Json, annotations: Record<string, string>): Json {
  const metadata = { ...((object.metadata ?? {}) as Metadata) };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  else delete metadata.annotations;
  return { ...object, metadata };
}

/** The moves of one direction, then the target's schema: what the target version holds of `object`. */
function plainConversion(
  object: Json,
  moves: Move[],
  direction: Direction,
  target: { apiVersion: string; schema: Schema },
): Json {
  const namespace = (object.metadata as Metadata | undefined)?.namespace;
  const moved = applyMoves(moves, object, direction, { namespace });
  return pruneToSchema({ ...moved, apiVersion: target.apiVersion }, target.schema).object;
}

/**
 * `object` (v1beta1 or v1beta2 of a converted kind) in `desiredApiVersion`. The conversion data an earlier
 * conversion left on it restores what it kept; what this one cannot carry is kept in turn, so a round trip
 * in either direction gives back the object exactly.
 */
export function convertObject(object: Json, desiredApiVersion: string, schemas: ConversionSchemas): Json {
  if (!isObject(object.metadata)) throw new ConversionError('an object to convert needs metadata');
  const source = splitApiVersion(object.apiVersion, 'the object apiVersion');
  const desired = splitApiVersion(desiredApiVersion, 'desiredAPIVersion');
  const kind = object.kind;
  if (source.group !== desired.group)
    throw new ConversionError(`cannot convert ${object.apiVersion} to another group (${desiredApiVersion})`);
  const moves = typeof kind === 'string' ? convertedKinds[source.group]?.[kind] : undefined;
  if (!moves) throw new ConversionError(`capt does not convert ${JSON.stringify(kind)} of ${source.group}`);
  if (source.version === desired.version) return object;
  const schema = schemas.get(`${source.group}/${kind}`);
  const [fromSchema, toSchema] = [schema?.[source.version], schema?.[desired.version]];
  if (!fromSchema || !toSchema)
    throw new ConversionError(`no schema of ${kind} ${source.version} and ${desired.version}: is its CRD installed?`);

  const annotations = { ...(object.metadata as Metadata).annotations };
  const kept = readConversionData(annotations);
  if (kept) delete annotations[conversionDataAnnotation];
  const plain = withAnnotations(object, annotations);
  const direction: Direction = desired.version === 'v1beta2' ? 'up' : 'down';
  const converted = plainConversion(plain, moves, direction, { apiVersion: desiredApiVersion, schema: toSchema });
  if (kept?.restores === desired.version) restoreFields(converted, kept.fields);

  // What the converted object gives back, compared with the source: the difference is kept on it.
  const back = plainConversion(converted, moves, direction === 'up' ? 'down' : 'up', {
    apiVersion: object.apiVersion as string,
    schema: fromSchema,
  });
  const fields = differences(plain, back);
  if (fields.length === 0) return converted;
  const data: ConversionData = { restores: source.version, fields };
  return withAnnotations(converted, {
    ...(converted.metadata as Metadata).annotations,
    [conversionDataAnnotation]: JSON.stringify(data),
  });
}
