import type { V1Node } from '@kubernetes/client-node';
import type { KubeletApi } from './kube-api';

/** An event of a watch of Nodes, as the apiserver streams it (an ERROR carries a Status: 410 when too old to resume). */
interface NodeEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: V1Node;
}

/**
 * The cluster's Nodes as they change, for the simulated kubelets. A real kubelet reads its Node every 10 s and posts
 * its status at once when it differs, as when the node lifecycle controller marked it Unknown because its informer
 * fell behind the lease renewals of a loaded host; these post status every 5 minutes, and such a Node stayed
 * NotReady that long (16 of 1000 in a benchmark's scale-up). Each call watches for a minute from where the last
 * stopped.
 */
export class NodeWatch {
  private resourceVersion = '';

  constructor(private readonly api: KubeletApi) {}

  async once(onNode: (node: V1Node) => void): Promise<void> {
    const from = this.resourceVersion ? `&resourceVersion=${encodeURIComponent(this.resourceVersion)}` : '';
    await this.api.stream(`/api/v1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=60${from}`, (line) => {
      const event = JSON.parse(line) as NodeEvent;
      if (event.type === 'ERROR') {
        // Start over from the current Nodes (each one is seen again, as ADDED).
        this.resourceVersion = '';
        return;
      }
      this.resourceVersion = event.object.metadata?.resourceVersion ?? this.resourceVersion;
      if (event.type === 'ADDED' || event.type === 'MODIFIED') onNode(event.object);
    });
  }
}
