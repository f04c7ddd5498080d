import { ApplicationFailure } from '@temporalio/common';
import { leaderId, listMembers, moveLeader, removeMember, type EtcdMember } from '../../src/etcd/etcd-client';
import { etcdClientTLS } from './etcd-credentials';

/** etcd membership as the control plane manages it. Addresses are the control-plane machines' own. */
export interface EtcdTarget {
  namespace: string;
  cluster: string;
  /** Addresses of control-plane machines whose etcd may answer. */
  addresses: string[];
}

async function firstAnswering(
  target: EtcdTarget,
  tls: Awaited<ReturnType<typeof etcdClientTLS>>,
): Promise<{ endpoint: string; members: EtcdMember[] }> {
  const errors: string[] = [];
  for (const ip of target.addresses) {
    const endpoint = `https://${ip}:2379`;
    try {
      return { endpoint, members: await listMembers(endpoint, tls) };
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  throw ApplicationFailure.create({
    message: `no etcd member answered: ${errors.join('; ')}`,
    type: 'EtcdUnavailable',
  });
}

/**
 * Takes a machine's member out of etcd: leadership moves off it first if it leads, and removal only
 * happens when the remaining members keep quorum. A member already gone is success.
 */
export async function removeEtcdMember(
  target: EtcdTarget & { memberName: string; memberAddress: string },
): Promise<void> {
  const tls = await etcdClientTLS(target.namespace, target.cluster);
  const others = { ...target, addresses: target.addresses.filter((a) => a !== target.memberAddress) };
  const { endpoint, members } = await firstAnswering(others, tls);
  const leaving = members.find((m) => m.name === target.memberName);
  if (!leaving) return;
  if (members.length - 1 < 1)
    throw ApplicationFailure.nonRetryable(
      `removing ${target.memberName} would leave etcd with no members`,
      'QuorumLost',
    );
  const leader = await leaderId(endpoint, tls);
  if (leader === leaving.id) {
    const successor = members.find((m) => m.id !== leaving.id)!;
    await moveLeader(`https://${target.memberAddress}:2379`, successor.id, tls);
  }
  await removeMember(endpoint, leaving.id, tls);
}
