import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from './kube-client';

/** How old a shared list may be: every machine waiting on its Node reads the same one. */
const maxAgeMs = 1000;

const lists = new Map<string, { at: number; nodes: Promise<V1Node[]> }>();

/**
 * A cluster's Nodes, listed at most once a second per worker process however many machines wait on
 * them: 1000 machines each listing 1000 Nodes every second would be a million Nodes a second.
 */
export function sharedNodeList(key: string, client: KubeClient): Promise<V1Node[]> {
  const cached = lists.get(key);
  if (cached && Date.now() - cached.at < maxAgeMs) return cached.nodes;
  const nodes = client.listNodes();
  lists.set(key, { at: Date.now(), nodes });
  // A failed list is not kept: the next caller tries again.
  nodes.catch(() => lists.get(key)?.nodes === nodes && lists.delete(key));
  return nodes;
}
