import { httpsGet } from '../../src/util/https-probe';
import { listMembers } from '../../src/etcd/etcd-client';
import { etcdClientTLS } from '../etcd/etcd-credentials';

/**
 * The control plane's preflight before every step, as KubeadmControlPlane checks it: every machine's
 * apiserver, controller-manager and scheduler healthy and at the machine's version, and etcd's members
 * exactly the machines. A failing check blocks the step; it is never skipped.
 */
export interface PreflightMachine {
  name: string;
  address: string;
  version: string;
}

export interface PreflightProblem {
  /** The machine whose component is unhealthy; absent for cluster-wide problems. */
  machine?: string;
  message: string;
}

export interface PreflightResult {
  problems: PreflightProblem[];
  members: string[];
  machines: string[];
  apiserverVersions: Record<string, string>;
}

const healthy = async (url: string) =>
  httpsGet(url, { insecure: true }, 2000).then(
    (r) => r.status === 200,
    () => false,
  );

export async function controlPlanePreflight(input: {
  namespace: string;
  cluster: string;
  machines: PreflightMachine[];
}): Promise<PreflightResult> {
  const problems: PreflightProblem[] = [];
  const apiserverVersions: Record<string, string> = {};
  for (const m of input.machines) {
    const problem = (message: string) => problems.push({ machine: m.name, message });
    if (!(await healthy(`https://${m.address}:6443/readyz`))) problem(`kube-apiserver on ${m.name} is not ready`);
    if (!(await healthy(`https://${m.address}:10257/healthz`)))
      problem(`kube-controller-manager on ${m.name} is not healthy`);
    if (!(await healthy(`https://${m.address}:10259/healthz`))) problem(`kube-scheduler on ${m.name} is not healthy`);
    const version = await httpsGet(`https://${m.address}:6443/version`, { insecure: true }, 2000).then(
      (r) => JSON.parse(r.body).gitVersion as string,
      () => 'unknown',
    );
    apiserverVersions[m.name] = version;
    if (version !== m.version) problem(`kube-apiserver on ${m.name} runs ${version}, not ${m.version}`);
  }
  const tls = await etcdClientTLS(input.namespace, input.cluster);
  let members: string[] | undefined;
  for (const m of input.machines) {
    members = await listMembers(`https://${m.address}:2379`, tls).then(
      (list) => list.map((x) => x.name).sort(),
      () => undefined,
    );
    if (members) break;
  }
  const machines = input.machines.map((m) => m.name).sort();
  if (!members) problems.push({ message: 'no etcd member answered' });
  else if (JSON.stringify(members) !== JSON.stringify(machines)) {
    // A difference of one machine is that machine's problem (a member that never joined, or one left over).
    const odd = [...members.filter((x) => !machines.includes(x)), ...machines.filter((x) => !members!.includes(x))];
    problems.push({
      ...(odd.length === 1 ? { machine: odd[0] } : {}),
      message: `etcd members [${members.join(', ')}] are not the machines [${machines.join(', ')}]`,
    });
  }
  return { problems, members: members ?? [], machines, apiserverVersions };
}
