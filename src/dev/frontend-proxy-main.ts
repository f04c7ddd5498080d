import { FrontendProxy } from './frontend-proxy';

/**
 * `node frontend-proxy-main.js LISTEN FRONTEND...` (host:port each): the topology's frontend proxy as its own
 * process, which the topology starts detached and stops by its pid record. Prints `listening` once it is.
 */
async function main(): Promise<void> {
  const [listen, ...frontends] = process.argv.slice(2);
  const [host, port] = (listen ?? '').split(':');
  if (!host || !port || !frontends.length) {
    console.error('usage: frontend-proxy-main.js HOST:PORT FRONTEND_HOST:PORT...');
    process.exit(2);
  }
  const proxy = new FrontendProxy(frontends);
  await proxy.listen(host, Number(port));
  console.log(`listening on ${listen}, forwarding to ${frontends.join(', ')}`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.once(signal, () => void proxy.close().then(() => process.exit(0)));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
