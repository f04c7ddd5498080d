import { ListWatch, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { kubeApiConfiguration } from '../kube/kube-client';
import type { ObjectsByKind } from './cluster-documents';
import { ManagementClient, type ApiObject, type ManagedKind } from './management-client';

/**
 * Whether resourceVersion `seen` is `written` or later. Kubernetes' resourceVersions are etcd revisions here, so
 * a later one is a larger number; were they not numbers, only the same one counts.
 */
function atOrAfter(seen: string | undefined, written: string): boolean {
  if (!seen) return false;
  const [a, b] = [Number(seen), Number(written)];
  return seen === written || (Number.isSafeInteger(a) && Number.isSafeInteger(b) && a >= b);
}

/** After a failed watch (the apiserver restarting), the next attempt waits this long. */
const retryMs = 1000;
/** A write the watch has not shown after this long is no longer waited for. */
const expectationMs = 10_000;

type Informer = {
  kind: ManagedKind;
  watch: ListWatch<KubernetesObject>;
  synced: boolean;
  failures: number;
  retry?: NodeJS.Timeout;
};

/**
 * The management API's objects of the bridge's kinds, kept current by one list and then one watch per kind
 * (client-node's ListWatch): a pass reads memory. Listing every kind on every pass cost the management
 * apiserver 0.07 CPU-seconds per machine replaced in a 1000-machine rollout (every Machine, every 2 s), as
 * much as the workload cluster's own apiserver. A watch may be a moment behind the bridge's own writes, so a
 * pass reads only once the watches show them (see objects()).
 */
export class ObjectCache {
  private readonly informers: Informer[];
  private stopped = false;
  /** This bridge's own writes the watches have not shown yet: `kind/namespace/name` -> resourceVersion (or gone). */
  private readonly expected = new Map<string, { version: string | undefined; at: number }>();

  constructor(
    kubeconfig: string,
    api: ManagementClient,
    kinds: readonly ManagedKind[],
    private readonly log: Logger,
  ) {
    const { kc } = kubeApiConfiguration(kubeconfig);
    api.written = (kind, namespace, name, resourceVersion) =>
      this.expected.set(`${kind}/${namespace}/${name}`, { version: resourceVersion, at: Date.now() });
    this.informers = kinds.map((kind) => {
      const list = async () => {
        const got = await api.listWithVersion(kind);
        return { ...got, items: got.items as KubernetesObject[] };
      };
      const informer: Informer = {
        kind,
        watch: new ListWatch<KubernetesObject>(ManagementClient.watchPath(kind), new Watch(kc), list, false),
        synced: false,
        failures: 0,
      };
      informer.watch.on('error', (err: unknown) => this.failed(informer, err));
      return informer;
    });
  }

  /** Lists and watches every kind; resolves once each has listed (or failed, and will try again). */
  async start(): Promise<void> {
    await Promise.all(this.informers.map((i) => this.startOne(i)));
  }

  private async startOne(informer: Informer): Promise<void> {
    if (this.stopped) return;
    const failures = informer.failures;
    try {
      // A failed list is reported to the error handler, not thrown: synced only if none came.
      await informer.watch.start();
      if (informer.failures === failures) informer.synced = true;
    } catch (err) {
      this.failed(informer, err);
    }
  }

  private failed(informer: Informer, err: unknown): void {
    informer.failures++;
    informer.synced = false;
    if (this.stopped) return;
    this.log.warn({ err, kind: informer.kind }, 'bridge: watch of the management API failed; listing again');
    clearTimeout(informer.retry);
    informer.retry = setTimeout(() => void this.startOne(informer), retryMs);
  }

  /**
   * Every object of every kind as the watches know them, once they show this bridge's own writes: a pass that
   * read an object older than its last write (its annotation of the applied manifest, say) would act on a state
   * that no longer is. Undefined while any kind is not listed (the pass lists them itself); 'behind' when a write
   * has not come back within `waitMs`, and the pass waits for the next: listing every kind then, as a busy
   * bridge's watches fell behind, was most of the management apiserver's reads in a rollout.
   */
  async objects(waitMs = 2000): Promise<ObjectsByKind | 'behind' | undefined> {
    for (const deadline = Date.now() + waitMs; ; await sleep(20)) {
      if (!this.informers.every((i) => i.synced)) return undefined;
      if (this.caughtUp()) break;
      if (Date.now() > deadline) return 'behind';
    }
    return Object.fromEntries(this.informers.map((i) => [i.kind, i.watch.list() as unknown as ApiObject[]]));
  }

  /** Whether the (listed) watches show every write of this bridge's still expected. */
  private caughtUp(): boolean {
    for (const [key, { version, at }] of this.expected) {
      const [kind, namespace, name] = key.split('/') as [ManagedKind, string, string];
      const watch = this.informers.find((i) => i.kind === kind)!.watch;
      const seen = watch.get(name, namespace)?.metadata?.resourceVersion;
      // A watch past the write shows it or a later state: a write that removed the last finalizer of an object
      // being deleted leaves nothing to see, and waiting to see it held every pass of a rollout for seconds.
      const shown =
        version === undefined
          ? seen === undefined
          : atOrAfter(seen, version) || atOrAfter(watch.latestResourceVersion(), version);
      // One another writer overtook (an object made again after it was deleted) is not waited for forever.
      if (!shown && Date.now() - at < expectationMs) return false;
      this.expected.delete(key);
    }
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const i of this.informers) clearTimeout(i.retry);
    await Promise.all(this.informers.map((i) => i.watch.stop()));
  }
}
