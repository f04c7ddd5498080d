import { parse, stringify } from 'yaml';
import type { KeyPair } from './certificates';

/** A kubeconfig with embedded credentials, in the shape kubeadm writes and every kubectl accepts. */
export function kubeconfig(opts: {
  clusterName: string;
  server: string;
  caCert: string;
  user: string;
  credentials: KeyPair;
}): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const context = `${opts.user}@${opts.clusterName}`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: opts.clusterName, cluster: { server: opts.server, 'certificate-authority-data': b64(opts.caCert) } },
    ],
    users: [
      {
        name: opts.user,
        user: { 'client-certificate-data': b64(opts.credentials.cert), 'client-key-data': b64(opts.credentials.key) },
      },
    ],
    contexts: [{ name: context, context: { cluster: opts.clusterName, user: opts.user } }],
    'current-context': context,
    preferences: {},
  });
}

/** The server, CA and client credentials of a kubeconfig's current context, for direct HTTPS calls. */
export function kubeconfigCredentials(text: string): { server: string; ca: string; cert: string; key: string } {
  const conf = parse(text) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string; user: string } }[];
    clusters: { name: string; cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { name: string; user: { 'client-certificate-data': string; 'client-key-data': string } }[];
  };
  const context = conf.contexts.find((c) => c.name === conf['current-context'])?.context;
  const cluster = conf.clusters.find((c) => c.name === context?.cluster)?.cluster;
  const user = conf.users.find((u) => u.name === context?.user)?.user;
  if (!cluster || !user) throw new Error(`kubeconfig has no usable current context '${conf['current-context']}'`);
  const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return {
    server: cluster.server,
    ca: decode(cluster['certificate-authority-data']),
    cert: decode(user['client-certificate-data']),
    key: decode(user['client-key-data']),
  };
}
