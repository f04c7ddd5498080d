import { clipMessage, type EtcdHealth, type EtcdMemberHealth } from '../../src/contract/cluster-health';
import { endpointStatus, listMembers, type EtcdMember, type EtcdTLS } from '../../src/etcd/etcd-client';

const etcdClientPort = 2379;

/** The member list from the first control-plane machine whose etcd answers, with why each one before it did not. */
async function memberList(
  machines: { name: string; address?: string }[],
  tls: EtcdTLS,
): Promise<{ members?: EtcdMember[]; errors: Map<string, string> }> {
  const errors = new Map<string, string>();
  for (const m of machines) {
    if (!m.address) {
      errors.set(m.name, 'the machine has no address yet');
      continue;
    }
    try {
      return { members: await listMembers(`https://${m.address}:${etcdClientPort}`, tls), errors };
    } catch (err) {
      errors.set(m.name, (err as Error).message);
    }
  }
  return { errors };
}

/**
 * Stacked etcd as KubeadmControlPlane checks it: every member answers its status without alarms, there is
 * a leader, and the members are exactly the control-plane machines.
 */
export async function etcdHealth(machines: { name: string; address?: string }[], tls: EtcdTLS): Promise<EtcdHealth> {
  const names = machines.map((m) => m.name).sort();
  const { members, errors } = await memberList(machines, tls);
  if (!members) {
    // No member list: each machine's member is reported by the machine's name (kubeadm names members so), with why it did not answer.
    const silent = machines.map((m): EtcdMemberHealth => ({
      name: m.name,
      id: '',
      healthy: false,
      detail: clipMessage(`does not answer (${errors.get(m.name)})`),
    }));
    const error = machines.length
      ? 'no etcd member answered the member list'
      : 'the control plane has no running machine';
    return { error, members: silent, machines: names, membersMatchMachines: false };
  }
  const statuses = await Promise.all(
    members.map(async (m) => {
      const url = m.clientURLs[0];
      if (!url) return { error: 'has no client URL (a member added that never started)' };
      return endpointStatus(url, tls).then(
        (status) => ({ status }),
        (err: Error) => ({ error: err.message }),
      );
    }),
  );
  const leader = statuses.flatMap((s) => ('status' in s && s.status.leader !== '0' ? [s.status.leader] : []))[0];
  const health = members.map((m, i): EtcdMemberHealth => {
    const s = statuses[i]!;
    const base = { name: m.name || '(unstarted)', id: m.id, clientURL: m.clientURLs[0], leader: m.id === leader };
    if ('error' in s) return { ...base, healthy: false, detail: clipMessage(s.error) };
    const alarms = s.status.errors.length ? s.status.errors.join(', ') : undefined;
    return {
      ...base,
      healthy: !alarms,
      detail: alarms,
      dbSizeBytes: s.status.dbSizeBytes,
      dbSizeInUseBytes: s.status.dbSizeInUseBytes,
    };
  });
  const memberNames = members.map((m) => m.name).sort();
  return {
    members: health,
    leader: health.find((m) => m.leader)?.name,
    machines: names,
    membersMatchMachines: JSON.stringify(memberNames) === JSON.stringify(names),
  };
}
