/** Certificates capt issues to machines are valid this long (kubeadm's default for leaf certificates). */
export const machineCertificateDays = 365;

/** A certificate by kubeadm's name for it (as `kubeadm certs check-expiration` lists them), its subject and its end. */
export interface CertificateExpiry {
  name: string;
  subject: string;
  notAfter: string;
}

/**
 * The certificates one machine holds. A machine writes its own files, so a file there that is no certificate is
 * named in `unreadable` rather than trusted or dropped.
 */
export interface MachineCertificates {
  machine: string;
  certificates: CertificateExpiry[];
  unreadable: string[];
}

/** A cluster's machines by name, one page: `next` is the name the next page starts after. */
export interface MachineCertificatesPage {
  machines: MachineCertificates[];
  next?: string;
}

/** Machines per page: about 1 KB each, so a page stays far below Temporal's 2 MiB payload limit. */
export const machineCertificatesPageSize = 200;

export interface CertificateInventoryInput {
  namespace: string;
  cluster: string;
  provider: string;
  /** The page after this machine's name; none for the first, which also carries the cluster's authorities. */
  after?: string;
}

/** One page of `capt get certificates` for a cluster: its CAs and capt's admin certificate (first page only), and machines. */
export interface CertificateInventoryPage extends MachineCertificatesPage {
  authorities: CertificateExpiry[];
}
