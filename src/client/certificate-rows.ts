import type { CertificateInventoryPage } from '../contract/certificates';

/** One line of `capt get certificates`: a cluster's (no machine) or a machine's certificate, or a file that is none. */
export interface CertificateRow {
  namespace: string;
  cluster: string;
  machine?: string;
  certificate: string;
  subject?: string;
  notAfter?: string;
  /** Why there is no expiry to show: the machine's file is not a certificate. */
  problem?: string;
}

/** A page of one cluster's inventory as rows. */
export function certificateRows(namespace: string, cluster: string, page: CertificateInventoryPage): CertificateRow[] {
  const of = { namespace, cluster };
  return [
    ...page.authorities.map((c) => ({ ...of, certificate: c.name, subject: c.subject, notAfter: c.notAfter })),
    ...page.machines.flatMap((m) => [
      ...m.certificates.map((c) => ({
        ...of,
        machine: m.machine,
        certificate: c.name,
        subject: c.subject,
        notAfter: c.notAfter,
      })),
      ...m.unreadable.map((name) => ({ ...of, machine: m.machine, certificate: name, problem: 'not a certificate' })),
    ]),
  ];
}

/** What needs an operator first: files that are no certificate, then the soonest to expire; ties by place and name. */
export function soonestFirst(a: CertificateRow, b: CertificateRow): number {
  const key = (r: CertificateRow) => [
    r.problem ? '0' : '1',
    r.notAfter ?? '',
    r.namespace,
    r.cluster,
    r.machine ?? '',
    r.certificate,
  ];
  const [ka, kb] = [key(a), key(b)];
  const i = ka.findIndex((v, j) => v !== kb[j]);
  return i < 0 ? 0 : ka[i]! < kb[i]! ? -1 : 1;
}

/** What a rotation replaces: each owner's machines holding a certificate that expires before `limitMs`. */
export interface CertificateRotation {
  /** `kubeadmcontrolplane/NAME` or `machinedeployment/NAME` -> its machines that need it, by name. */
  owners: Map<string, string[]>;
  /** Machines of no owner: nothing rolls them out (delete and apply them again). */
  standalone: string[];
  /** The cluster's own (CAs, capt's admin certificate): no rollout renews them. */
  authorities: CertificateRow[];
}

/** Groups a cluster's rows whose certificates expire before `limitMs` by the owner that can replace each machine. */
export function certificateRotation(
  rows: CertificateRow[],
  machineLabels: Map<string, Record<string, string>>,
  limitMs: number,
): CertificateRotation {
  const rotation: CertificateRotation = { owners: new Map(), standalone: [], authorities: [] };
  for (const r of rows) {
    if (r.notAfter === undefined || Date.parse(r.notAfter) >= limitMs) continue;
    if (r.machine === undefined) {
      rotation.authorities.push(r);
      continue;
    }
    const labels = machineLabels.get(r.machine) ?? {};
    const controlPlane = labels['cluster.x-k8s.io/control-plane-name'];
    const deployment = labels['cluster.x-k8s.io/deployment-name'];
    const owner = controlPlane
      ? `kubeadmcontrolplane/${controlPlane}`
      : deployment
        ? `machinedeployment/${deployment}`
        : undefined;
    if (!owner) {
      if (!rotation.standalone.includes(r.machine)) rotation.standalone.push(r.machine);
      continue;
    }
    const machines = rotation.owners.get(owner) ?? [];
    if (!machines.includes(r.machine)) machines.push(r.machine);
    rotation.owners.set(owner, machines);
  }
  return rotation;
}
