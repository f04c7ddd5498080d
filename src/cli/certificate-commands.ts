import { certificateRotation } from '../client/certificate-rows';
import type { OwnerKind } from '../client/capt-client';
import { durationMs, out, rolloutStatus, withClient, type Action } from './cluster-commands';
import { UsageError } from './read-sources';
import { certificatesTable } from './render';

const dayMs = 86_400_000;

/**
 * `capt rotate certificates CLUSTER`: each owner with machines whose certificates expire within `--within` days
 * replaces those machines, and no other, within its rollout's bounds; the new machines get new certificates.
 */
export const rotateCertificates: Action = ([name], values) => {
  const ns = values.namespace!;
  const days = Number(values.within);
  if (!/^\d+$/.test(values.within ?? '') || days < 1)
    throw new UsageError(`--within ${values.within}: expected a whole number of days, at least 1 (e.g. --within 30)`);
  return withClient(async (client) => {
    const rows = await client.certificates(ns, name!);
    const labels = new Map(
      (await client.listMachines(ns)).filter((m) => m.cluster === name).map((m) => [m.name, m.labels]),
    );
    const { owners, standalone, authorities } = certificateRotation(rows, labels, Date.now() + days * dayMs);
    if (authorities.length)
      out(
        `not rotated: the cluster's own certificates that expire within ${days} days (capt renews no CA, nor does Cluster API):\n${certificatesTable(authorities, false)}`,
      );
    for (const machine of standalone)
      out(`not rotated: machine ${machine} has no owner to replace it; delete it and apply its manifest again`);
    if (owners.size === 0) {
      out(`no owner of cluster ${ns}/${name} has a machine whose certificates expire within ${days} days`);
      return 0;
    }
    for (const [ref, machines] of owners) {
      const which = `${machines.length} machine(s) with certificates expiring within ${days} days: ${machines.join(', ')}`;
      if (values.dryRun) {
        out(`${ref} would replace ${which}`);
        continue;
      }
      const [kind, owner] = ref.split('/') as [OwnerKind, string];
      await client.replaceMachines(kind, ns, owner, machines);
      out(`${ref} replacing ${which}`);
    }
    if (!values.wait || values.dryRun) return 0;
    let code = 0;
    for (const ref of owners.keys()) {
      const [kind, owner] = ref.split('/') as [OwnerKind, string];
      code ||= await rolloutStatus(client, kind, ns, owner, true, durationMs(values.timeout!));
    }
    return code;
  });
};
