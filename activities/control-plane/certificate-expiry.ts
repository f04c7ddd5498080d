import { connect } from 'node:tls';

/** When the serving certificate of each machine's kube-apiserver expires, read from the TLS handshake. */
export async function controlPlaneCertificateExpiry(input: {
  machines: { name: string; address: string }[];
}): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const m of input.machines) {
    const notAfter = await servingCertificateNotAfter(m.address, 6443).catch(() => undefined);
    if (notAfter) out[m.name] = notAfter;
  }
  return out;
}

function servingCertificateNotAfter(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // Only the certificate's dates are read; nothing is trusted or sent.
    const socket = connect({ host, port, rejectUnauthorized: false, timeout: 2000 }, () => {
      const validTo = socket.getPeerCertificate().valid_to;
      socket.destroy();
      if (validTo) resolve(new Date(validTo).toISOString());
      else reject(new Error(`${host}:${port} presented no certificate`));
    });
    socket.on('timeout', () =>
      socket.destroy(new Error(`${host}:${port} did not finish the TLS handshake within 2 s`)),
    );
    socket.on('error', reject);
  });
}
