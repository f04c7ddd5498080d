import { stringify } from 'yaml';

/**
 * What an apiserver needs to present a client certificate to admission webhooks: kube-apiserver's
 * `--admission-control-config-file` names an AdmissionConfiguration, whose ValidatingAdmissionWebhook and
 * MutatingAdmissionWebhook plugins each read a kubeconfig; a webhook called at https://HOST:PORT gets the
 * credentials of the user named `HOST:PORT` there (`*` for any webhook). CRD conversion calls never carry
 * them: the apiserver calls conversion webhooks with no credentials of its own.
 */

/** A kubeconfig of one user, `user`, with the client certificate and key files. */
export function webhookClientKubeconfig(user: string, certFile: string, keyFile: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    users: [{ name: user, user: { 'client-certificate': certFile, 'client-key': keyFile } }],
  });
}

/** An AdmissionConfiguration that has both webhook plugins read `kubeconfigFile` (an absolute path). */
export function admissionConfiguration(kubeconfigFile: string): string {
  const configuration = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfigFile,
  };
  // Written out twice, not as a YAML alias: an operator may merge it into a file of their own.
  return stringify(
    {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({ name, configuration })),
    },
    { aliasDuplicateObjects: false },
  );
}
