import { request } from 'node:https';

/**
 * etcd's cluster API through its JSON gateway (/v3/...), over mutual TLS with an etcd-CA client cert.
 * Member IDs are uint64 and travel as decimal strings, so they are kept as strings.
 */
export interface EtcdTLS {
  ca: string;
  cert: string;
  key: string;
}

export interface EtcdMember {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
}

export class EtcdError extends Error {
  constructor(
    message: string,
    readonly endpoint: string,
  ) {
    super(message);
    this.name = 'EtcdError';
  }
}

function post<T>(endpoint: string, path: string, body: object, tls: EtcdTLS): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${endpoint}${path}`,
      { method: 'POST', ...tls, timeout: 5000, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if (res.statusCode !== 200)
            return reject(
              new EtcdError(`etcd ${path} at ${endpoint}: HTTP ${res.statusCode} ${text.slice(0, 300)}`, endpoint),
            );
          resolve(JSON.parse(text) as T);
        });
      },
    );
    req.on('timeout', () => req.destroy(new EtcdError(`etcd ${path} at ${endpoint}: no answer within 5 s`, endpoint)));
    req.on('error', (err) =>
      reject(err instanceof EtcdError ? err : new EtcdError(`etcd ${path} at ${endpoint}: ${err.message}`, endpoint)),
    );
    req.end(JSON.stringify(body));
  });
}

interface RawMember {
  ID?: string;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
}

const toMember = (m: RawMember): EtcdMember => ({
  id: m.ID ?? '0',
  name: m.name ?? '',
  peerURLs: m.peerURLs ?? [],
  clientURLs: m.clientURLs ?? [],
});

export async function listMembers(endpoint: string, tls: EtcdTLS): Promise<EtcdMember[]> {
  const res = await post<{ members?: RawMember[] }>(endpoint, '/v3/cluster/member/list', { linearizable: true }, tls);
  return (res.members ?? []).map(toMember);
}

/**
 * Adds a member by its peer URL as a learner, as kubeadm does: a learner does not count towards quorum, so
 * the cluster keeps answering until the new member has started and caught up (see promoteMember). An
 * existing member with that URL is returned instead (idempotent).
 */
export async function addLearner(
  endpoint: string,
  peerURL: string,
  tls: EtcdTLS,
): Promise<{ member: EtcdMember; members: EtcdMember[] }> {
  const existing = (await listMembers(endpoint, tls)).find((m) => m.peerURLs.includes(peerURL));
  if (existing) return { member: existing, members: await listMembers(endpoint, tls) };
  const res = await post<{ member: RawMember; members: RawMember[] }>(
    endpoint,
    '/v3/cluster/member/add',
    { peerURLs: [peerURL], isLearner: true },
    tls,
  );
  return { member: toMember(res.member), members: res.members.map(toMember) };
}

/**
 * Makes learner `id` a voting member. Until it is in sync with the leader etcd refuses (EtcdError
 * "...which is in sync with leader"; retry); a member that votes already is left as it is.
 */
export async function promoteMember(endpoint: string, id: string, tls: EtcdTLS): Promise<void> {
  try {
    await post(endpoint, '/v3/cluster/member/promote', { ID: id }, tls);
  } catch (err) {
    if (/can only promote a learner member(?! which)/.test((err as Error).message)) return;
    throw err;
  }
}

/** Removing a member that is already gone succeeds. */
export async function removeMember(endpoint: string, id: string, tls: EtcdTLS): Promise<void> {
  if (!(await listMembers(endpoint, tls)).some((m) => m.id === id)) return;
  await post(endpoint, '/v3/cluster/member/remove', { ID: id }, tls);
}

/** One member's own view, as `etcdctl endpoint status` shows it. */
export interface EtcdEndpointStatus {
  memberId: string;
  /** The leader's member ID as this member sees it; '0' when it knows none. */
  leader: string;
  dbSizeBytes: number;
  dbSizeInUseBytes: number;
  /** Alarms and other errors the member reports (e.g. "NOSPACE"). */
  errors: string[];
}

export async function endpointStatus(endpoint: string, tls: EtcdTLS): Promise<EtcdEndpointStatus> {
  const res = await post<{
    header?: { member_id?: string };
    leader?: string;
    dbSize?: string;
    dbSizeInUse?: string;
    errors?: string[];
  }>(endpoint, '/v3/maintenance/status', {}, tls);
  return {
    memberId: res.header?.member_id ?? '0',
    leader: res.leader ?? '0',
    dbSizeBytes: Number(res.dbSize ?? 0),
    dbSizeInUseBytes: Number(res.dbSizeInUse ?? 0),
    errors: res.errors ?? [],
  };
}

/** The member ID of the current leader, as seen by `endpoint`. */
export async function leaderId(endpoint: string, tls: EtcdTLS): Promise<string> {
  return (await endpointStatus(endpoint, tls)).leader;
}

/** Asks the leader (which `endpoint` must be) to hand leadership to `targetId`. */
export async function moveLeader(endpoint: string, targetId: string, tls: EtcdTLS): Promise<void> {
  await post(endpoint, '/v3/maintenance/transfer-leadership', { targetID: targetId }, tls);
}

/** The raw value stored under `key`, as the apiserver wrote it (undefined when there is none). */
export async function getValue(endpoint: string, key: string, tls: EtcdTLS): Promise<Buffer | undefined> {
  const res = await post<{ kvs?: { value?: string }[] }>(
    endpoint,
    '/v3/kv/range',
    { key: Buffer.from(key).toString('base64') },
    tls,
  );
  const value = res.kvs?.[0]?.value;
  return value === undefined ? undefined : Buffer.from(value, 'base64');
}
