import { controllerOwnerKinds, topologyOwnedLabel } from './cluster-documents';
import { managedResources, type ManagedKind } from './management-client';

/** The apiserver's wait for an answer; the webhook decides within 4 s (admission-webhook.ts). */
const timeoutSeconds = 5;

/**
 * The objects both webhooks pass unread (defaulting-route.ts, admission-rules.ts) are not sent at all: one on its
 * way out, one the bridge made for a MachineSet or control plane, and one it made of a Cluster's topology. Each write of the bridge's own Machines
 * waited 80-100 ms for the two calls in a 300-machine rollout, about five writes per machine.
 */
const owners = controllerOwnerKinds.map((k) => `'${k}'`).join(', ');
const notTheBridgesOwn = {
  name: 'not-made-by-capt',
  expression:
    `!has(object.metadata.deletionTimestamp) && !(has(object.metadata.ownerReferences) && ` +
    `object.metadata.ownerReferences.exists(r, r.kind in [${owners}])) && ` +
    `!(has(object.metadata.labels) && '${topologyOwnedLabel}' in object.metadata.labels)`,
};

/**
 * One webhook of a configuration: the apiserver asks `url` about every create and update of `kinds` (and of
 * the `others` resources) at v1beta2 (deletions are never refused nor defaulted). failurePolicy Ignore: see each
 * configuration.
 */
export function admissionWebhook(
  name: string,
  url: string,
  caBundle: string,
  kinds: readonly ManagedKind[],
  others: readonly { group: string; plural: string }[] = [],
) {
  const plurals = new Map<string, string[]>();
  for (const { group, plural } of [...kinds.map((kind) => managedResources[kind]), ...others])
    plurals.set(group, [...(plurals.get(group) ?? []), plural]);
  return {
    name,
    clientConfig: { url, caBundle: Buffer.from(caBundle).toString('base64') },
    rules: [...plurals].map(([group, resources]) => ({
      apiGroups: [group],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources,
      scope: 'Namespaced',
    })),
    // Objects written in another served version reach the webhook converted to v1beta2.
    matchPolicy: 'Equivalent',
    matchConditions: [notTheBridgesOwn],
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    timeoutSeconds,
    admissionReviewVersions: ['v1'],
  };
}
