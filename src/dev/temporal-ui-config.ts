import { stringify } from 'yaml';

/**
 * The config file of Temporal's Web UI server (`server --root DIR --config . --env ui start` reads
 * DIR/ui.yaml): the UI on 127.0.0.1:`port`, talking to the frontend at `temporalAddress`; with a codec
 * endpoint, the browser sends payloads there to show them decrypted.
 */
export function temporalUiConfigYaml(o: { port: number; temporalAddress: string; codecEndpoint?: string }): string {
  return stringify({
    host: '127.0.0.1',
    port: o.port,
    temporalGrpcAddress: o.temporalAddress,
    enableUi: true,
    defaultNamespace: 'default',
    // No sign-in on loopback: the session cookie need not be https-only.
    cors: { cookieInsecure: true },
    // Offline here, and an operator's UI should not call out.
    disableNewsFetch: true,
    notifyOnNewVersion: false,
    hideLogs: true,
    // The browser sends the codec server's cookie (set by its /login) only with credentials included.
    ...(o.codecEndpoint ? { codec: { endpoint: o.codecEndpoint, includeCredentials: true } } : {}),
  });
}
