import { defaultings } from '../defaulting/defaults';
import type { ManagedKind } from './management-client';
import { admissionWebhook } from './webhook-configuration';

/** The MutatingWebhookConfiguration's name and its one webhook's. */
export const defaultingConfigurationName = 'capt-defaulting';
export const defaultingWebhookName = 'default.capt.cluster.x-k8s.io';

/**
 * The configuration that has the apiserver ask the defaulting webhook at `url` to fill in Cluster API's
 * defaults on every create and update of the kinds that have them, before the CRD's schema and the
 * validating webhook see the object.
 *
 * failurePolicy Ignore, as the validating webhook: with Fail, every write of these kinds would be refused
 * while the bridge restarts. An object stored without its defaults is still read right: capt's loader
 * assumes the same values when a field is not written, and a MachineDeployment that needs its selector is
 * refused by the CRD's schema instead (`spec.selector: Required value`), never stored wrong.
 * reinvocationPolicy IfNeeded: the defaults are idempotent, so when a later mutating webhook changes the
 * object they are simply filled in again.
 */
export function defaultingConfiguration(url: string, caBundle: string): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: defaultingConfigurationName },
    webhooks: [
      {
        ...admissionWebhook(defaultingWebhookName, url, caBundle, Object.keys(defaultings) as ManagedKind[]),
        reinvocationPolicy: 'IfNeeded',
      },
    ],
  };
}
