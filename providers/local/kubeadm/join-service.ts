import { createServer, type Server, type Socket } from 'node:net';
import type { KubeletRegistration } from '../layout';
import { bootstrapKubeletClient } from './kubelet-tls-bootstrap';
import { joinWorker } from './worker-join';

/**
 * Worker joins, served by the cluster agent for the `kubeadm` of its machines (kubeadm-shim.ts): a node
 * process per join spent ~0.2 s of CPU starting and loading kubeadm's code, the agent has it loaded.
 *
 * Request: NUL-terminated fields: the argument count, the arguments, the machine's metadata.json, the
 * --config file's content. Answer: the exit code, the kubelet registration (JSON on one line, empty on
 * failure), then kubeadm's output; on success then `kubelet-client-follows`, and once the cluster signed the
 * kubelet's TLS bootstrap request, `kubelet-client ` and its certificate and key (PEM, base64, one line), or
 * `kubelet-client-failed ` and why. The shim keeps that in the background: the machine boots on meanwhile.
 */
const maxRequestBytes = 1 << 20;

export function serveWorkerJoins(
  host: string,
  port: number,
  clusterCA: () => Promise<string>,
  allowBootstrap: () => Promise<void>,
): Promise<Server> {
  const server = createServer((socket) => receive(socket, { clusterCA, allowBootstrap }));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

interface JoinContext {
  clusterCA: () => Promise<string>;
  allowBootstrap: () => Promise<void>;
}

function receive(socket: Socket, context: JoinContext): void {
  const chunks: Buffer[] = [];
  let size = 0;
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    if (size > maxRequestBytes) return void socket.destroy();
    const fields = Buffer.concat(chunks).toString('utf8').split('\0');
    const argc = Number(fields[0]);
    // Complete once argc + 3 fields are terminated: the last split element is what follows the final NUL.
    if (!Number.isInteger(argc) || fields.length < argc + 4) return;
    socket.removeAllListeners('data');
    void answer(socket, fields.slice(1, argc + 1), fields[argc + 1]!, fields[argc + 2]!, context);
  });
}

async function answer(
  socket: Socket,
  args: string[],
  metadata: string,
  config: string,
  { clusterCA, allowBootstrap }: JoinContext,
): Promise<void> {
  let registration: KubeletRegistration;
  let caCert: string;
  try {
    if (args[0] !== 'join' || args.includes('--control-plane')) throw new Error('only worker joins are served here');
    caCert = await clusterCA();
    registration = await joinWorker(config, metadata, caCert);
  } catch (err) {
    if (!socket.destroyed) socket.end(`1\n\nkubeadm: ${(err as Error).message}\n`);
    return;
  }
  if (socket.destroyed) return;
  socket.write(
    `0\n${JSON.stringify(registration)}\nkubeadm join: node ${registration.nodeName} ready\n${certificateFollows}\n`,
  );
  let last: string;
  try {
    const pair = await bootstrapKubeletClient(config, caCert, registration.nodeName, allowBootstrap);
    last = `kubelet-client ${Buffer.from(pair.cert + pair.key).toString('base64')}\n`;
  } catch (err) {
    last = `kubelet-client-failed ${(err as Error).message.replace(/\s+/g, ' ').slice(0, 500)}\n`;
  }
  if (!socket.destroyed) socket.end(last);
}

/** The line after which the shim reads the kubelet's certificate in the background (kubeadm-shim.ts). */
export const certificateFollows = 'kubelet-client-follows';
