import { isDeepStrictEqual } from 'node:util';
import { groups } from '../api/kind-registry';
import { MachinePhase, type Condition, type MachineStatus } from '../contract/machine';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import { apiConditions, type PreviousStatus } from './cluster-status-out';
import { annotationsDigest, mirroredAnnotationsAnnotation } from './machine-annotations-door';
import type { ApiObject } from './management-client';

/** On a Machine object the bridge made: the report of the machine it shows, so an unchanged one is not read again. */
export const reportSequenceAnnotation = 'capt.cluster.x-k8s.io/report-sequence';
/** The label keys the bridge wrote on a Machine: those the machine no longer has are removed, others' labels kept. */
export const mirroredLabelsAnnotation = 'capt.cluster.x-k8s.io/mirrored-labels';

/** `map` as a merge patch that also removes the keys `gone` (a merge patch keeps what it does not name). */
export const withRemoved = (map: Record<string, string> = {}, gone: string[]): Record<string, string | null> => ({
  ...map,
  ...Object.fromEntries(gone.map((k) => [k, null])),
});

/** The labels the bridge wrote on `o` that `labels` no longer has: a merge patch removes them by name. */
export const labelsGone = (o: ApiObject, labels: Record<string, string>): string[] =>
  (o.metadata.annotations?.[mirroredLabelsAnnotation] ?? '').split(',').filter((k) => k && !(k in labels));
/** Cluster API's finalizer on a Machine: the object stays, with its deletion timestamp, until the machine is gone. */
export const machineFinalizer = 'machine.cluster.x-k8s.io';
/** Cluster API's label naming a Machine's MachineSet. */
export const machineSetNameLabel = 'cluster.x-k8s.io/set-name';
const templateHashLabel = 'machine-template-hash';

type MachineSetRecord = NonNullable<OwnerStatus['machineSets']>[number];

/** A label selector as the API writes one (`key=value`, a bare key for an empty value). */
export const labelSelector = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => (v ? `${k}=${v}` : k))
    .join(',');

/** An owner reference that makes `owner` the controller of the object (kube's garbage collector follows it). */
export const controllerRef = (owner: ApiObject) => ({
  apiVersion: owner.apiVersion,
  kind: owner.kind,
  name: owner.metadata.name,
  uid: owner.metadata.uid!,
  controller: true,
  blockOwnerDeletion: true,
});

/**
 * A MachineDeployment's MachineSet as Cluster API's MachineDeployment controller (and the defaults of its webhooks)
 * makes it: its labels and its template's are the deployment's template labels, its selector the deployment's, each
 * with the template hash, the deployment's name and the cluster's, so the deployment's selector finds its sets and
 * each set's selector its machines (Cluster API's e2e framework lists them so).
 */
export function machineSetObject(deployment: ApiObject, set: MachineSetRecord, cluster: string): ApiObject {
  const { selector, template } = deployment.spec as {
    selector?: { matchLabels?: Record<string, string> | null };
    template?: { metadata?: { labels?: Record<string, string> }; spec?: object };
  };
  const own = {
    'cluster.x-k8s.io/cluster-name': cluster,
    'cluster.x-k8s.io/deployment-name': deployment.metadata.name,
    [templateHashLabel]: set.hash,
  };
  const labels = { ...template?.metadata?.labels, ...own };
  // Cluster API's webhook selects by the deployment's name when the deployment names no labels of its own.
  const named = selector?.matchLabels && Object.keys(selector.matchLabels).length > 0;
  const selected = named ? selector.matchLabels : { 'cluster.x-k8s.io/deployment-name': deployment.metadata.name };
  return {
    apiVersion: `${groups.core}/v1beta2`,
    kind: 'MachineSet',
    metadata: {
      name: set.name,
      namespace: deployment.metadata.namespace,
      labels,
      ownerReferences: [controllerRef(deployment)],
    },
    spec: {
      clusterName: cluster,
      replicas: set.machines,
      selector: {
        matchLabels: { ...selected, 'cluster.x-k8s.io/cluster-name': cluster, [templateHashLabel]: set.hash },
      },
      template: { metadata: { labels }, spec: { ...template?.spec, version: set.version } },
    },
  };
}

/**
 * A deployment's template labels change in place (Cluster API propagates them): the patch that brings a set's
 * labels, and its template's, to `desired`'s, or undefined when they are there already.
 */
export function machineSetLabelsPatch(existing: ApiObject, desired: ApiObject): object | undefined {
  const want = desired.metadata.labels ?? {};
  if (isDeepStrictEqual(existing.metadata.labels ?? {}, want)) return undefined;
  const labels = withRemoved(
    want,
    Object.keys(existing.metadata.labels ?? {}).filter((k) => !(k in want)),
  );
  return { metadata: { labels }, spec: { template: { metadata: { labels } } } };
}

export function machineSetStatus(set: MachineSetRecord, selector: string): Record<string, unknown> {
  return { selector, replicas: set.machines, readyReplicas: set.ready, upToDateReplicas: set.machines };
}

/** The label selector string of a MachineSet's `spec.selector` (its status and scale subresource show it). */
export const machineSetSelector = (set: ApiObject) =>
  labelSelector((set.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels);

/**
 * A Machine as Cluster API shows it, from its workflow's status: labels, annotations, owner, providerID and
 * version; its bootstrap data and infrastructure are the local provider's, named after it. A MachineSet's machine
 * also carries the set's template hash label, as its MachineSet's template gives it in Cluster API.
 */
export function machineObject(m: MachineStatus, owner: ApiObject, infrastructureKind: string): ApiObject {
  const hash = owner.kind === 'MachineSet' ? owner.metadata.labels?.[templateHashLabel] : undefined;
  const labels = hash ? { ...m.labels, [templateHashLabel]: hash } : m.labels;
  return {
    apiVersion: `${groups.core}/v1beta2`,
    kind: 'Machine',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      labels,
      annotations: {
        ...m.annotations,
        [reportSequenceAnnotation]: String(m.sequence),
        [mirroredAnnotationsAnnotation]: annotationsDigest(m.annotations),
        [mirroredLabelsAnnotation]: Object.keys(labels).sort().join(','),
      },
      ownerReferences: [controllerRef(owner)],
    },
    spec: {
      clusterName: m.cluster,
      version: m.version,
      bootstrap: { dataSecretName: `${m.name}-bootstrap` },
      infrastructureRef: { apiGroup: groups.infrastructure, kind: infrastructureKind, name: m.name },
      ...(m.providerID ? { providerID: m.providerID } : {}),
      ...(m.failureDomain ? { failureDomain: m.failureDomain } : {}),
      ...(m.taints ? { taints: m.taints } : {}),
    },
  };
}

/**
 * A machine still provisioning gets its object once it runs, or this long after it was made, whichever is first:
 * under load most machines run within it, and their objects are made with one read and two writes (made, status)
 * instead of two reads and four (made, status, providerID, status again): most of the management API's work.
 */
export const provisioningUnshownMs = 10_000;

/** Whether the machine `record` tells of is due its Machine object at `now` (ms since the epoch). */
export const machineObjectDue = (record: MachineRecord, now: number) =>
  record.phase !== MachinePhase.Provisioning || Date.parse(record.createdAt) + provisioningUnshownMs <= now;

/**
 * Whether `existing` misses anything of `desired`'s metadata (labels, annotations but the report it shows, its
 * controller) or spec: a report that changes none of them is written to the status alone.
 */
export function machineObjectChanged(existing: ApiObject, desired: ApiObject): boolean {
  const holds = (have: object | undefined, want: object | undefined, besides?: string) =>
    Object.entries(want ?? {}).every(
      ([k, v]) => k === besides || isDeepStrictEqual((have as Record<string, unknown> | undefined)?.[k], v),
    );
  const controllers = (o: ApiObject) => (o.metadata.ownerReferences ?? []).map((r) => r.uid);
  return !(
    holds(existing.metadata.labels, desired.metadata.labels) &&
    holds(existing.metadata.annotations, desired.metadata.annotations, reportSequenceAnnotation) &&
    isDeepStrictEqual(controllers(existing), controllers(desired)) &&
    holds(existing.spec, desired.spec) &&
    !taintsGone(existing, desired)
  );
}

/** The object shows taints its machine no longer has: a merge patch removes them only by naming them null. */
export const taintsGone = (existing: ApiObject, desired: ApiObject) =>
  existing.spec?.taints !== undefined && desired.spec?.taints === undefined;

/**
 * A Machine's status (its Node's nodeInfo as the machine kept it), with the conditions Cluster API v1beta2 adds to
 * a machine's own: Available (Running and Ready), UpToDate (on its owner's current template) and, when a
 * MachineHealthCheck judges it, HealthCheckSucceeded.
 */
export function machineObjectStatus(
  m: MachineStatus,
  upToDate: boolean,
  previous: PreviousStatus | undefined,
  now: string,
  health?: Condition,
) {
  const running = m.phase === 'Running';
  const ready = m.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
  const own: Condition[] = [
    ...m.conditions,
    running && ready
      ? { type: 'Available', status: 'True' }
      : { type: 'Available', status: 'False', reason: 'NotReady', message: `phase ${m.phase}` },
    upToDate
      ? { type: 'UpToDate', status: 'True', reason: 'UpToDate' }
      : { type: 'UpToDate', status: 'False', reason: 'NotUpToDate', message: "not on its owner's current template" },
    ...(health ? [health] : []),
  ];
  return {
    phase: m.phase,
    ...(m.nodeRef ? { nodeRef: { name: m.nodeRef } } : {}),
    ...(m.nodeInfo ? { nodeInfo: m.nodeInfo } : {}),
    addresses: m.addresses.map((address) => ({ type: 'InternalIP', address })),
    ...(m.failureDomain ? { failureDomain: m.failureDomain } : {}),
    initialization: { infrastructureProvisioned: !!m.providerID || running, bootstrapDataSecretCreated: true },
    conditions: apiConditions(own, previous?.conditions, undefined, now),
  };
}
