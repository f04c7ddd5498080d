import type { Logger } from 'pino';
import type { ClusterModel } from '../api/model';
import { RejectedError, type CaptClient } from '../client/capt-client';
import { clusterChangeProblems } from '../spec-rules/cluster-rules';
import { formatSpecProblems } from '../spec-rules/spec-problem';
import type { AdmissionRequest } from './admission-review';
import { checkAdmission, needsReview, resourceSetRefusal, reviewedKinds } from './admission-rules';
import { readObjects } from './cluster-documents';
import type { ManagementClient } from './management-client';

export interface AdmissionOptions {
  api: ManagementClient;
  client: CaptClient;
  log: Logger;
  /** The Kubernetes versions the local provider can run here, as the bridge checks them. */
  kubernetesVersions?: string[];
}

/**
 * The admission webhook's decision: refused with the message `capt apply` gives (and the bridge would write
 * on the Cluster), or allowed. The objects are checked as the bridge loads them; a change to a running
 * cluster is asked of its workflow as `capt apply --dry-run` asks it.
 */
export class Admission {
  constructor(private readonly o: AdmissionOptions) {}

  /** capt's refusal of the request; undefined allows it. */
  async refusal(request: AdmissionRequest): Promise<string | undefined> {
    if (request.object?.kind === 'ClusterResourceSet') return resourceSetRefusal(request);
    if (!needsReview(request)) return undefined;
    const namespace = request.object!.metadata.namespace;
    const objects = await readObjects(this.o.api, reviewedKinds, namespace);
    const check = checkAdmission(request, objects, this.o.kubernetesVersions);
    if (check.refusal) return check.refusal;
    if (check.unchecked)
      this.o.log.warn(
        { object: `${request.object!.kind} ${namespace}/${request.object!.metadata.name}`, unchecked: check.unchecked },
        'admission: Clusters past the load budget are left for the bridge to check as it applies them',
      );
    for (const { next, previous } of check.clusters) {
      const refusal = await this.changeRefusal(next, previous);
      if (refusal) return refusal;
    }
    return undefined;
  }

  /**
   * What `capt apply --dry-run` says of `next`. A cluster no workflow runs yet (the bridge applies within a
   * pass), or a Temporal out of reach, is checked against its stored objects' model with the same rules.
   */
  private async changeRefusal(next: ClusterModel, previous: ClusterModel | undefined): Promise<string | undefined> {
    try {
      const [cluster] = await this.o.client.apply([next], {
        dryRun: true,
        kubernetesVersions: this.o.kubernetesVersions,
      });
      if (cluster?.outcome !== 'created') return undefined;
    } catch (err) {
      if (err instanceof RejectedError) return err.message;
      this.o.log.warn(
        { err, cluster: `${next.namespace}/${next.name}` },
        'admission: asked the stored objects instead',
      );
    }
    const problems = previous ? clusterChangeProblems(previous, next) : [];
    return problems.length ? formatSpecProblems(problems) : undefined;
  }
}
