import { clipMessage, type MachineComponentsHealth, type ProbeResult } from '../../src/contract/cluster-health';
import { httpsGet } from '../../src/util/https-probe';

/** kubeadm's ports for the static components, which every control-plane machine serves on its own address. */
const ports = { apiserver: 6443, controllerManager: 10257, scheduler: 10259 };

/**
 * One anonymous GET of a health endpoint (kubeadm's RBAC lets anyone read /readyz, /livez and /healthz):
 * ok on 200, otherwise the checks it names as failed ("[-]etcd failed"), its status, or why it did not answer.
 */
export async function probe(url: string, timeoutMs = 3000): Promise<ProbeResult> {
  try {
    const { status, body } = await httpsGet(url, { insecure: true }, timeoutMs);
    if (status === 200) return { ok: true };
    const failed = body
      .split('\n')
      .filter((line) => line.startsWith('[-]'))
      .map((line) => line.slice(3).trim());
    return {
      ok: false,
      detail: clipMessage(`HTTP ${status}${failed.length ? `: ${failed.join(', ')}` : body ? `: ${body.trim()}` : ''}`),
    };
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    return { ok: false, detail: code === 'ECONNREFUSED' ? 'connection refused (not running)' : clipMessage(message) };
  }
}

/** kube-apiserver's /readyz through the control-plane endpoint, as clients reach it. */
export const endpointReadyz = (endpoint: string) => probe(`https://${endpoint}/readyz`);

/** kube-apiserver's /readyz and the controller-manager's and scheduler's /healthz on one control-plane machine. */
export async function machineComponents(machine: { name: string; address?: string }): Promise<MachineComponentsHealth> {
  const at = (port: number, path: string): Promise<ProbeResult> =>
    machine.address
      ? probe(`https://${machine.address}:${port}${path}`)
      : Promise.resolve({ ok: false, detail: 'the machine has no address yet' });
  const [apiserver, controllerManager, scheduler] = await Promise.all([
    at(ports.apiserver, '/readyz'),
    at(ports.controllerManager, '/healthz'),
    at(ports.scheduler, '/healthz'),
  ]);
  return { machine: machine.name, address: machine.address, apiserver, controllerManager, scheduler };
}
