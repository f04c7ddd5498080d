import { Context, heartbeat } from '@temporalio/activity';
import { readFile } from 'node:fs/promises';
import { KubeClient } from '../../src/kube/kube-client';

const client = async (kubeconfigFile: string) => new KubeClient(await readFile(kubeconfigFile, 'utf8'));

/** Activities of the smoke workflow: real writes to a real apiserver, slow enough to be interrupted. */
export async function ensureNamespace(kubeconfig: string, namespace: string): Promise<string> {
  const ns = await (await client(kubeconfig)).ensureNamespace(namespace);
  return ns.metadata!.uid!;
}

/**
 * Writes `entries` one key at a time, `pauseMs` apart, heartbeating the count written so far; a retry
 * after the worker died resumes from that count instead of starting over.
 */
export async function writeConfigMapSlowly(
  kubeconfig: string,
  namespace: string,
  name: string,
  entries: [string, string][],
  pauseMs: number,
): Promise<{ resumedFrom: number }> {
  const kube = await client(kubeconfig);
  const resumedFrom = (Context.current().info.heartbeatDetails as number | undefined) ?? 0;
  for (let i = resumedFrom; i < entries.length; i++) {
    const [key, value] = entries[i]!;
    await kube.setConfigMapKey(namespace, name, key, value);
    heartbeat(i + 1);
    await Context.current().sleep(pauseMs);
  }
  return { resumedFrom };
}

export async function readConfigMap(
  kubeconfig: string,
  namespace: string,
  name: string,
): Promise<Record<string, string>> {
  const cm = await (await client(kubeconfig)).getConfigMap(namespace, name);
  return cm.data ?? {};
}
