import type { Condition } from './machine';
import type { LabelSelector } from './label-selector';

/**
 * Cluster API's ClusterResourceSet (addons.cluster.x-k8s.io): the objects held in ConfigMaps and Secrets of its
 * namespace, applied to every Cluster of that namespace its selector matches. capt runs one workflow per set
 * (workflows/addons), which keeps the resources' content and each cluster's binding.
 */
export type ResourceSetStrategy = 'ApplyOnce' | 'Reconcile';
export type ResourceKind = 'ConfigMap' | 'Secret';

/** A Secret a ClusterResourceSet may name must be of this type, as Cluster API requires. */
export const resourceSetSecretType = 'addons.cluster.x-k8s.io/resource-set';

export interface ResourceSetModel {
  namespace: string;
  name: string;
  selector: LabelSelector;
  strategy: ResourceSetStrategy;
  /** In the order they are applied. */
  resources: { kind: ResourceKind; name: string }[];
}

/** One object of a resource, as written in its data (apiVersion, kind, metadata.name at least). */
export type AddonObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
};

/** A ConfigMap's or Secret's content: its objects in the order they are created, and Cluster API's hash of its data. */
export interface AddonResource {
  kind: ResourceKind;
  name: string;
  /** `sha256:` and the hex digest of the data's values in their keys' order, as Cluster API computes it. */
  hash: string;
  objects: AddonObject[];
}

export const resourceKey = (r: { kind: ResourceKind; name: string }) => `${r.kind}/${r.name}`;

/** What a cluster got of one resource, as a ClusterResourceSetBinding's `resources[]` entry. */
export interface BoundResource {
  kind: ResourceKind;
  name: string;
  hash: string;
  applied: boolean;
  lastAppliedTime: string;
  /** Why the last attempt failed: the workload apiserver's words, per object. */
  message?: string;
}

/** A cluster's binding: the cluster as it was when first bound (a new cluster of the same name starts afresh). */
export interface ResourceSetBinding {
  cluster: string;
  clusterCreatedAt: string;
  resources: BoundResource[];
}

/** A cluster of the set's namespace as the set sees it. */
export interface CandidateCluster {
  name: string;
  createdAt: string;
  labels: Record<string, string>;
  /** Its control plane answers: resources are applied only then. */
  initialized: boolean;
  deleting: boolean;
}

export interface ResourceSetStatus {
  namespace: string;
  name: string;
  strategy: ResourceSetStrategy;
  selector: LabelSelector;
  resources: { kind: ResourceKind; name: string; hash?: string; objects?: number }[];
  bindings: ResourceSetBinding[];
  /** ResourcesApplied, as Cluster API's v1beta2 condition (absent while no cluster matches). */
  conditions: Condition[];
  /** Clusters matched but not yet given their resources: their control plane is not up yet. */
  waiting: string[];
  generation: number;
  observedGeneration: number;
  deleting: boolean;
}

/** At most this many clusters are bound per set: its bindings live in its workflow's state. */
export const maxBoundClusters = 1000;
/** A set's resources together, as capt carries them in its workflow: far below Temporal's 2 MiB payloads. */
export const maxResourceBytes = 512 << 10;
