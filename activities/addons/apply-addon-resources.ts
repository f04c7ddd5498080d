import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../src/errors';
import type { AddonResource, ResourceSetStrategy } from '../../src/contract/resource-set';
import { ObjectWriter } from '../../src/kube/object-apply';
import { clusterAdminKubeconfig } from '../secrets/cluster-secrets-lookup';

export interface AppliedResource {
  kind: AddonResource['kind'];
  name: string;
  hash: string;
  applied: boolean;
  /** The first object the workload apiserver refused, and why. */
  message?: string;
}

/**
 * Applies a ClusterResourceSet's resources to one workload cluster, in order, each resource's objects in the
 * order Cluster API creates them (src/api/load-addons.ts). A resource stops at its first refused object and
 * the next resource goes on, as Cluster API does; an unreachable apiserver fails the activity (retried).
 * Idempotent: ApplyOnce creates what is missing, Reconcile applies the same fields again.
 */
export async function applyAddonResources(input: {
  namespace: string;
  cluster: string;
  strategy: ResourceSetStrategy;
  resources: AddonResource[];
}): Promise<AppliedResource[]> {
  const writer = new ObjectWriter(await clusterAdminKubeconfig(input.namespace, input.cluster));
  const mode = input.strategy === 'Reconcile' ? 'apply' : 'create';
  const out: AppliedResource[] = [];
  for (const r of input.resources) {
    let message: string | undefined;
    for (const o of r.objects) {
      const outcome = await writer.write(o, mode).catch((err: Error) => {
        throw ApplicationFailure.create({
          message: `cluster ${input.namespace}/${input.cluster}: ${o.kind} ${o.metadata.name} of ${r.kind} ${r.name}: ${err.message}`,
          type: ErrorType.WorkloadApiUnavailable,
          nonRetryable: false,
          cause: err,
        });
      });
      Context.current().heartbeat();
      if (!outcome.ok) {
        message = `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}: ${outcome.message}`;
        break;
      }
    }
    out.push({ kind: r.kind, name: r.name, hash: r.hash, applied: !message, ...(message ? { message } : {}) });
  }
  return out;
}
