import { isDeepStrictEqual } from 'node:util';
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { KubeClient, kubeApiConfiguration, mergePatch, translate } from '../kube/kube-client';
import { groups } from '../api/kind-registry';

/** RFC 6902's add (which replaces what is there) and replace. */
export type JsonPatchOperation = { op: 'add' | 'replace'; path: string; value: unknown };

/** An object of the management API as read: what the bridge uses of it. */
export interface ApiObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export interface ApiObjectList {
  items: ApiObject[];
  metadata?: { resourceVersion?: string };
}

const addonsGroup = 'addons.cluster.x-k8s.io';

/** The kinds the bridge reads and writes, each at the version the management API stores (v1beta2). */
export const managedResources = {
  Cluster: { group: groups.core, plural: 'clusters' },
  KubeadmControlPlane: { group: groups.controlPlane, plural: 'kubeadmcontrolplanes' },
  MachineDeployment: { group: groups.core, plural: 'machinedeployments' },
  MachineHealthCheck: { group: groups.core, plural: 'machinehealthchecks' },
  Machine: { group: groups.core, plural: 'machines' },
  MachineSet: { group: groups.core, plural: 'machinesets' },
  KubeadmConfig: { group: groups.bootstrap, plural: 'kubeadmconfigs' },
  KubeadmConfigTemplate: { group: groups.bootstrap, plural: 'kubeadmconfigtemplates' },
  LocalCluster: { group: groups.infrastructure, plural: 'localclusters' },
  LocalMachineTemplate: { group: groups.infrastructure, plural: 'localmachinetemplates' },
  LocalMachine: { group: groups.infrastructure, plural: 'localmachines' },
  // What a Cluster with spec.topology is made from.
  ClusterClass: { group: groups.core, plural: 'clusterclasses' },
  KubeadmControlPlaneTemplate: { group: groups.controlPlane, plural: 'kubeadmcontrolplanetemplates' },
  LocalClusterTemplate: { group: groups.infrastructure, plural: 'localclustertemplates' },
  // Addons: each set is handed to its workflow, and its bindings written back (resource-set-door.ts).
  ClusterResourceSet: { group: addonsGroup, plural: 'clusterresourcesets' },
  ClusterResourceSetBinding: { group: addonsGroup, plural: 'clusterresourcesetbindings' },
} as const;
export type ManagedKind = keyof typeof managedResources;
const version = 'v1beta2';

const resource = (kind: ManagedKind) => ({ ...managedResources[kind], version });
const gone = (err: unknown) => err instanceof ApiException && err.code === 404;

/** Cluster API's objects in the management API (any Kubernetes API with its CRDs installed). */
export class ManagementClient {
  private readonly api: CustomObjectsApi;
  /** Core kinds (Secrets) through the same client capt uses for workload clusters. */
  readonly core: KubeClient;

  /**
   * Told of every write, with the resourceVersion it made (undefined: the object is gone), so a cache of these
   * objects can tell when it has caught up with this client's own writes.
   */
  written?: (kind: ManagedKind, namespace: string, name: string, resourceVersion: string | undefined) => void;

  constructor(kubeconfig: string) {
    this.api = new CustomObjectsApi(kubeApiConfiguration(kubeconfig).configuration);
    this.core = new KubeClient(kubeconfig);
  }

  private wrote(kind: ManagedKind, answer: unknown): ApiObject {
    const o = answer as ApiObject;
    this.written?.(kind, o.metadata.namespace, o.metadata.name, o.metadata.resourceVersion);
    return o;
  }

  /** Every object of `kind`, in `namespace` or in every namespace. */
  async list(kind: ManagedKind, namespace?: string): Promise<ApiObject[]> {
    return (await this.listWithVersion(kind, namespace)).items;
  }

  /** The list with its resourceVersion, where a watch of the same objects starts. */
  async listWithVersion(kind: ManagedKind, namespace?: string): Promise<ApiObjectList> {
    try {
      return (await (namespace === undefined
        ? this.api.listClusterCustomObject(resource(kind))
        : this.api.listNamespacedCustomObject({ ...resource(kind), namespace }))) as ApiObjectList;
    } catch (err) {
      translate(err, `listing ${managedResources[kind].plural}`);
    }
  }

  /** The path that watches every object of `kind`. */
  static watchPath(kind: ManagedKind): string {
    const { group, plural } = managedResources[kind];
    return `/apis/${group}/${version}/${plural}`;
  }

  /** Merge-patches the object's status; an object deleted meanwhile is left alone. */
  async patchStatus(kind: ManagedKind, namespace: string, name: string, status: Record<string, unknown>) {
    try {
      this.wrote(
        kind,
        await this.api.patchNamespacedCustomObjectStatus(
          { ...resource(kind), namespace, name, body: { status } },
          mergePatch,
        ),
      );
    } catch (err) {
      if (!gone(err)) translate(err, `writing the status of ${kind} ${namespace}/${name}`);
    }
  }

  /** Creates the object; one that exists already is read instead (create is get-or-create). */
  async create(object: ApiObject): Promise<ApiObject> {
    const { namespace, name } = object.metadata;
    const kind = object.kind as ManagedKind;
    try {
      return this.wrote(
        kind,
        await this.api.createNamespacedCustomObject({ ...resource(kind), namespace, body: object }),
      );
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409)) translate(err, `creating ${kind} ${namespace}/${name}`);
    }
    try {
      return (await this.api.getNamespacedCustomObject({ ...resource(kind), namespace, name })) as ApiObject;
    } catch (err) {
      translate(err, `reading ${kind} ${namespace}/${name}`);
    }
  }

  /** Replaces the object (not its status) as it was at `object.metadata.resourceVersion`: a conflict is thrown. */
  async replace(object: ApiObject): Promise<void> {
    const { namespace, name } = object.metadata;
    const kind = object.kind as ManagedKind;
    try {
      this.wrote(
        kind,
        await this.api.replaceNamespacedCustomObject({ ...resource(kind), namespace, name, body: object }),
      );
    } catch (err) {
      translate(err, `replacing ${kind} ${namespace}/${name}`);
    }
  }

  /** Merge-patches the object (not its status). */
  async patch(kind: ManagedKind, namespace: string, name: string, body: object): Promise<void> {
    try {
      this.wrote(
        kind,
        await this.api.patchNamespacedCustomObject({ ...resource(kind), namespace, name, body }, mergePatch),
      );
    } catch (err) {
      if (!gone(err)) translate(err, `patching ${kind} ${namespace}/${name}`);
    }
  }

  /** JSON-patches the object (not its status): each operation sets one path whole, whatever the object holds there. */
  async jsonPatch(kind: ManagedKind, namespace: string, name: string, operations: JsonPatchOperation[]): Promise<void> {
    try {
      // The generated client sends a patch as a JSON patch unless told otherwise.
      this.wrote(
        kind,
        await this.api.patchNamespacedCustomObject({ ...resource(kind), namespace, name, body: operations }),
      );
    } catch (err) {
      translate(err, `patching ${kind} ${namespace}/${name}`);
    }
  }

  /** Deleting what is gone already succeeds. */
  async delete(kind: ManagedKind, namespace: string, name: string): Promise<void> {
    try {
      const deleted = (await this.api.deleteNamespacedCustomObject({
        ...resource(kind),
        namespace,
        name,
      })) as Partial<ApiObject>;
      // An object with finalizers stays, marked; one without is gone (the answer is a Status then).
      if (deleted.kind === kind) this.wrote(kind, deleted);
      else this.written?.(kind, namespace, name, undefined);
    } catch (err) {
      if (!gone(err)) translate(err, `deleting ${kind} ${namespace}/${name}`);
    }
  }

  /** Sets one annotation on the object. */
  async annotate(object: ApiObject, key: string, value: string): Promise<void> {
    const { namespace, name } = object.metadata;
    await this.patch(object.kind as ManagedKind, namespace, name, { metadata: { annotations: { [key]: value } } });
  }

  /** Writes `status` when the object's differs in any of its fields (others are left as they are). */
  async patchStatusIfChanged(object: ApiObject, status: Record<string, unknown>): Promise<void> {
    const current = Object.fromEntries(Object.keys(status).map((k) => [k, object.status?.[k]]));
    if (!isDeepStrictEqual(status, current))
      await this.patchStatus(object.kind as ManagedKind, object.metadata.namespace, object.metadata.name, status);
  }

  /**
   * Sets the object's finalizers, only if it is still at `resourceVersion` (a conflict means another writer
   * changed them: the next pass reads them again).
   */
  async setFinalizers(object: ApiObject, finalizers: string[]): Promise<void> {
    const { namespace, name, resourceVersion } = object.metadata;
    try {
      const written = await this.api.patchNamespacedCustomObject(
        {
          ...resource(object.kind as ManagedKind),
          namespace,
          name,
          body: { metadata: { finalizers, resourceVersion } },
        },
        mergePatch,
      );
      this.wrote(object.kind as ManagedKind, written);
    } catch (err) {
      if (!gone(err)) translate(err, `setting the finalizers of ${object.kind} ${namespace}/${name}`);
    }
  }
}
