import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AddonResource, ResourceSetModel, ResourceSetStatus } from './resource-set';

/** The set's status: its resources by name and hash (never their content), each cluster's binding, its condition. */
export const resourceSetStatusQuery = defineQuery<ResourceSetStatus>('resourceSetStatus');

/**
 * A change from `capt apply`: the set itself (absent when only its ConfigMaps or Secrets changed) and the content
 * of the resources given. Refused (nothing changes) if the selector or strategy changes, as Cluster API's webhook
 * refuses, or if a resource the set names would be unknown.
 */
export const applyResourceSetUpdate = defineUpdate<
  ResourceSetStatus,
  [{ set?: ResourceSetModel; resources: AddonResource[] }]
>('applyResourceSet');

/** `capt delete clusterresourceset`: the workflow ends; what it applied stays in the clusters, as Cluster API leaves it. */
export const deleteResourceSetUpdate = defineUpdate<ResourceSetStatus, []>('deleteResourceSet');
