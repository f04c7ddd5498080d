import type { ListWatch, V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../../src/kube/kube-client';

/** A watch nobody has used for this long is stopped: its cluster may be gone. */
const idleStopMs = 30_000;
/** After a failed watch (apiserver restarting, cluster going away), the next attempt waits this long. */
const retryMs = 1000;
/** The waiters' key for any Node's change (no providerID is empty). */
const anyNode = '';

/**
 * A cluster's Nodes by providerID, kept current by one watch per cluster and worker process, however many
 * machines wait on their Node: polling a full list per waiter (or even once a second) costs the apiserver
 * and the worker a thousand Nodes a second at a thousand machines, for a handful of changes.
 */
export class NodeWatch {
  private readonly byProviderID = new Map<string, V1Node>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly watch: ListWatch<V1Node>;
  private holders = 0;
  private idleTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private running = false;
  private listed = false;
  /** Why the last watch attempt failed, for a waiter's progress report. */
  lastError?: string;

  constructor(
    client: KubeClient,
    private readonly onStopped: () => void,
  ) {
    this.watch = client.watchNodes({
      change: (node) => {
        this.lastError = undefined;
        const id = node.spec?.providerID;
        if (!id) return;
        this.byProviderID.set(id, node);
        this.wake(id);
      },
      deleted: (node) => {
        const id = node.spec?.providerID;
        if (id && this.byProviderID.get(id)?.metadata?.name === node.metadata?.name) this.byProviderID.delete(id);
        if (id) this.wake(id);
      },
      error: (err) => this.failed(err),
    });
  }

  /** Marks a waiter; the returned function releases it. The watch runs while anyone holds it. */
  hold(): () => void {
    this.holders++;
    clearTimeout(this.idleTimer);
    if (!this.running) this.start();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holders === 0) this.idleTimer = setTimeout(() => this.stop(), idleStopMs).unref();
    };
  }

  node(providerID: string): V1Node | undefined {
    return this.byProviderID.get(providerID);
  }

  /** Every Node seen (with a providerID), as the watch knows them now. */
  nodes(): V1Node[] {
    return [...this.byProviderID.values()];
  }

  /** True once the watch has listed the Nodes and is following their changes. */
  get synced(): boolean {
    return this.running && this.lastError === undefined && this.listed;
  }

  /** Resolves at the next change of any Node, or after `ms`. */
  anyChange(ms: number): Promise<void> {
    return this.changeOf(anyNode, ms);
  }

  /** Resolves at the next change of the Node with this providerID, or after `ms`. */
  changeOf(providerID: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(providerID) ?? new Set();
      this.waiters.set(providerID, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0 && this.waiters.get(providerID) === set) this.waiters.delete(providerID);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  private wake(providerID: string): void {
    for (const done of [...(this.waiters.get(providerID) ?? []), ...(this.waiters.get(anyNode) ?? [])]) done();
  }

  private start(): void {
    clearTimeout(this.retryTimer);
    if (this.running) return;
    this.running = true;
    this.watch.start().then(
      () => (this.listed = true),
      (err: unknown) => this.failed(err),
    );
  }

  /** The watch ended with an error: say why to the waiters, and try again while anyone waits. */
  private failed(err: unknown): void {
    this.lastError = (err as Error)?.message ?? String(err);
    this.running = false;
    this.listed = false;
    if (this.holders > 0) this.retryTimer = setTimeout(() => this.start(), retryMs);
  }

  private stop(): void {
    clearTimeout(this.retryTimer);
    this.running = false;
    this.listed = false;
    void this.watch.stop();
    this.onStopped();
  }
}

const watches = new Map<string, { client: KubeClient; watch: NodeWatch }>();

/** The Node watch of a cluster (`namespace/cluster`) through `client`; a new client (new credentials) gets a new watch. */
export function nodeWatch(key: string, client: KubeClient): NodeWatch {
  const known = watches.get(key);
  if (known?.client === client) return known.watch;
  const watch = new NodeWatch(client, () => watches.get(key)?.watch === watch && watches.delete(key));
  watches.set(key, { client, watch });
  return watch;
}
