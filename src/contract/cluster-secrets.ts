/** A PEM certificate and its PEM private key. */
export interface PemKeyPair {
  cert: string;
  key: string;
}

/**
 * A workload cluster's secrets, created once by an activity and kept only in its cluster workflow's state
 * (payloads encrypted by the codec): the CAs kubeadm copies to every control-plane machine, capt's own
 * admin client credentials and the bootstrap token. A few KiB whatever the cluster's size.
 */
export interface ClusterSecrets {
  ca: PemKeyPair;
  etcdCA: PemKeyPair;
  frontProxyCA: PemKeyPair;
  serviceAccount: { privateKey: string; publicKey: string };
  /** A system:masters client certificate signed by `ca`: capt's workers and the provider act with it. */
  admin: PemKeyPair;
  bootstrapToken: string;
}

/** The admin kubeconfig's parts but the endpoint: what a provider needs to act on the workload cluster. */
export interface AdminClientCredentials {
  caCert: string;
  cert: string;
  key: string;
}

/** The cluster workflow's answer to its `clusterSecrets` query, once the secrets exist. */
export interface ClusterSecretsAnswer {
  /** host:port of the control-plane endpoint; empty until the cluster's infrastructure is created. */
  endpoint: string;
  /** Deleting: a cluster of this name created next will have other secrets. */
  deleting: boolean;
  secrets: ClusterSecrets;
}

export const adminClientCredentials = (secrets: ClusterSecrets): AdminClientCredentials => ({
  caCert: secrets.ca.cert,
  ...secrets.admin,
});
