import { spawn } from 'node:child_process';
import { hostNotReady } from '../../src/errors';
import { firstMachineHostId, lastMachineHostId } from './machine-sandbox';

/** The loopback block local machines and clusters take their addresses from (addresses.ts keeps to it). */
const machineAddresses = '127.1.0.0-127.254.255.255';
const table = 'capt_machines';

/**
 * The host's firewall for local machines: a machine shares the host's network, so its sockets (owned by its
 * host id) may open connections only to the machines' and clusters' own addresses. Temporal, the codec
 * server, the Web UI and PostgreSQL (on 127.0.0.1) and every other address are refused; answers on
 * connections the host opened to a machine pass. One table, replaced whole in one nft transaction.
 */
export const machineNetworkRules = () => `table inet ${table}
delete table inet ${table}
table inet ${table} {
  chain output {
    type filter hook output priority 0; policy accept;
    meta skuid ${firstMachineHostId}-${lastMachineHostId} ct state established,related accept
    meta skuid ${firstMachineHostId}-${lastMachineHostId} ip daddr ${machineAddresses} accept
    meta skuid ${firstMachineHostId}-${lastMachineHostId} reject
  }
}
`;

function nft(rules: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('nft', ['-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(stderr.trim() || `nft exited with status ${code}`)),
    );
    child.stdin.end(rules);
  });
}

let guarded: Promise<void> | undefined;

/** Installs the rules once per process, before the first machine boots; a failure is tried again on the next boot. */
export function guardMachineNetwork(): Promise<void> {
  guarded ??= nft(machineNetworkRules()).catch((err: Error) => {
    guarded = undefined;
    throw hostNotReady(
      `this host cannot keep local machines off its own services (nft: ${err.message}); install Debian's nftables package and run capt's local provider worker as root`,
      err,
    );
  });
  return guarded;
}
