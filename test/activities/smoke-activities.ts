import { Context, heartbeat } from '@temporalio/activity';
import { KubeClient } from '../../src/kube/kube-client';
import { getSecret, type SecretRef } from '../../src/secrets/secret-store';

/** Activities of the smoke workflow: real writes to a real apiserver, slow enough to be interrupted. */
export async function ensureNamespace(kubeconfig: SecretRef, namespace: string): Promise<string> {
  const ns = await new KubeClient(await getSecret(kubeconfig)).ensureNamespace(namespace);
  return ns.metadata!.uid!;
}

/**
 * Writes `entries` one key at a time, `pauseMs` apart, heartbeating the count written so far; a retry
 * after the worker died resumes from that count instead of starting over.
 */
export async function writeConfigMapSlowly(kubeconfig: SecretRef, namespace: string, name: string, entries: [string, string][], pauseMs: number): Promise<{ resumedFrom: number }> {
  const client = new KubeClient(await getSecret(kubeconfig));
  const resumedFrom = (Context.current().info.heartbeatDetails as number | undefined) ?? 0;
  for (let i = resumedFrom; i < entries.length; i++) {
    const [key, value] = entries[i]!;
    await client.setConfigMapKey(namespace, name, key, value);
    heartbeat(i + 1);
    await Context.current().sleep(pauseMs);
  }
  return { resumedFrom };
}

export async function readConfigMap(kubeconfig: SecretRef, namespace: string, name: string): Promise<Record<string, string>> {
  const cm = await new KubeClient(await getSecret(kubeconfig)).getConfigMap(namespace, name);
  return cm.data ?? {};
}
