import { managedResources, type ManagedKind } from './management-client';

/** The apiserver's wait for an answer; the webhook decides within 4 s (admission-webhook.ts). */
const timeoutSeconds = 5;

/**
 * One webhook of a configuration: the apiserver asks `url` about every create and update of `kinds` at
 * v1beta2 (deletions are never refused nor defaulted). failurePolicy Ignore: see each configuration.
 */
export function admissionWebhook(name: string, url: string, caBundle: string, kinds: readonly ManagedKind[]) {
  const plurals = new Map<string, string[]>();
  for (const kind of kinds) {
    const { group, plural } = managedResources[kind];
    plurals.set(group, [...(plurals.get(group) ?? []), plural]);
  }
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
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    timeoutSeconds,
    admissionReviewVersions: ['v1'],
  };
}
