import { access, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { unsupportedVersion } from '../../src/errors';
import { availableKubernetesVersions, toolPaths } from '../../src/tools';
import type {
  BootstrapCheck, ClusterInfraSpec, ClusterInfraStatus, InfrastructureProvider, MachineInfraSpec, MachineInfraStatus, MachineRef,
} from '../provider';
import { claimAddress, releaseAddress } from './addresses';
import { renderCloudInitScript, scriptInMachine, stepOutputInMachine, type BootstrapReport } from './cloud-init/cloud-init-script';
import { kubeadmShim } from './kubeadm/kubeadm-shim';
import {
  agentJoinPort, bootstrapReportPath, clusterDir, clusterKubeconfigPath, clusterRunDir, localRoot, machineDir, machineRecordPath, machineRoot, machineRunDir, machinesDir, sentinelPath,
  type LocalClusterRecord, type LocalMachineRecord,
} from './layout';
import { clearFault, currentFaults, injectFault, type MachineFault } from './machine-faults';
import type { MachineMetadata } from './machine-metadata';
import { prepareMachineRoot, sandboxed } from './machine-sandbox';
import { readJson, writeFileAtomic, writeJsonAtomic } from '../../src/util/files';
import { adminKubeconfig } from '../../src/secrets/cluster-secrets';
import { isListening } from '../../src/util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../../src/util/processes';
import { standardPorts } from './control-plane-components';

/** LocalMachineTemplate spec knobs. */
export interface LocalMachineTemplateSpec {
  /** Simulated boot time before cloud-init runs. */
  bootDelaySeconds?: number;
  /** The machine fails its bootstrap, for testing remediation and failure reporting. */
  failBootstrap?: boolean;
}

const apiserverPort = 6443;

const exists = (path: string) => access(path).then(() => true, () => false);

/**
 * The embedded provider: real control planes as processes on this host. A cluster is a loopback
 * endpoint served by its cluster agent (load balancer + simulated kubelets); a machine is a root folder,
 * a loopback address and the processes its bootstrap data starts inside its sandbox.
 */
export class LocalProvider implements InfrastructureProvider {
  readonly name = 'local';

  kubernetesVersions(): string[] {
    return availableKubernetesVersions();
  }

  async createCluster(spec: ClusterInfraSpec): Promise<ClusterInfraStatus> {
    const dir = clusterDir(spec.namespace, spec.name);
    let record = await readJson<LocalClusterRecord>(join(dir, 'cluster.json'));
    if (!record) {
      const host = await claimAddress(`cluster/${spec.namespace}/${spec.name}`);
      record = { namespace: spec.namespace, name: spec.name, endpoint: { host, port: apiserverPort } };
      await mkdir(machinesDir(dir), { recursive: true });
      await writeJsonAtomic(join(dir, 'cluster.json'), record);
    }
    // Written on every call (the same content): the agent reads it here, on the host that holds the cluster.
    const endpoint = `${record.endpoint.host}:${record.endpoint.port}`;
    await writeFileAtomic(clusterKubeconfigPath(dir), adminKubeconfig(spec.name, endpoint, spec.adminCredentials), 0o600);
    await startDetached({ name: 'cluster-agent', command: process.execPath, args: [join(__dirname, 'cluster-agent-main.js'), dir], stateDir: clusterRunDir(dir) });
    return { ready: true, endpoint: record.endpoint };
  }

  async describeCluster(namespace: string, name: string): Promise<ClusterInfraStatus | undefined> {
    const dir = clusterDir(namespace, name);
    const record = await readJson<LocalClusterRecord>(join(dir, 'cluster.json'));
    if (!record) return undefined;
    return { ready: (await runningPid(clusterRunDir(dir), 'cluster-agent')) !== undefined, endpoint: record.endpoint };
  }

  async countMachines(namespace: string, cluster: string): Promise<number> {
    return (await readdir(machinesDir(clusterDir(namespace, cluster))).catch(() => [] as string[])).length;
  }

  async deleteCluster(namespace: string, name: string): Promise<void> {
    const dir = clusterDir(namespace, name);
    for (const machine of await readdir(machinesDir(dir)).catch(() => [] as string[])) {
      await this.deleteMachine({ namespace, cluster: name, name: machine });
    }
    await rm(join(dir, 'cluster.json'), { force: true });
    await stopProcess(clusterRunDir(dir), 'cluster-agent');
    await releaseAddress(`cluster/${namespace}/${name}`);
    await rm(dir, { recursive: true, force: true });
  }

  async createMachine(spec: MachineInfraSpec): Promise<MachineInfraStatus> {
    const versions = this.kubernetesVersions();
    const kubernetesBin = toolPaths().kubernetes[spec.version];
    if (!kubernetesBin) {
      throw unsupportedVersion(`Kubernetes ${spec.version} is not available on the local provider: it can run ${versions.join(', ')}. Set spec.version to one of them.`);
    }
    const cdir = clusterDir(spec.namespace, spec.cluster);
    const cluster = await readJson<LocalClusterRecord>(join(cdir, 'cluster.json'));
    if (!cluster) {
      throw unsupportedVersion(`local cluster ${spec.namespace}/${spec.cluster} does not exist; create its cluster infrastructure first`);
    }
    const mdir = machineDir(cdir, spec.name);
    const existing = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    const template = spec.template as LocalMachineTemplateSpec;
    const record: LocalMachineRecord = existing ?? {
      namespace: spec.namespace, cluster: spec.cluster, name: spec.name, role: spec.role,
      ip: await claimAddress(`machine/${spec.namespace}/${spec.cluster}/${spec.name}`),
      providerID: `local://${spec.namespace}/${spec.cluster}/${spec.name}`,
      version: spec.version, power: 'on', bootDelaySeconds: template.bootDelaySeconds ?? 0, failBootstrap: template.failBootstrap ?? false,
      createdAt: new Date().toISOString(),
    };
    if (!existing) {
      const root = machineRoot(mdir);
      await prepareMachineRoot(root);
      const metadata: MachineMetadata = {
        name: spec.name, ip: record.ip, providerID: record.providerID, kubernetesVersion: spec.version, kubernetesBin, etcdBinary: toolPaths().etcd,
      };
      await writeJsonAtomic(join(root, 'run/capt/metadata.json'), metadata);
      const userData = spec.bootstrapData;
      await writeFile(join(root, 'var/lib/cloud/instance/user-data.txt'), userData, { mode: 0o600 });
      // Like cloud-init, the user-data becomes a script; it holds the user-data's secrets too.
      await writeFile(join(root, scriptInMachine), renderCloudInitScript(userData, record), { mode: 0o700 });
      await writeFile(join(root, 'run/capt/bin/kubeadm'), kubeadmShim({ host: cluster.endpoint.host, port: agentJoinPort }), { mode: 0o755 });
      // The record goes last: its presence means the machine is fully laid out.
      await writeJsonAtomic(machineRecordPath(mdir), record);
    }
    await this.boot(mdir);
    return this.status(record);
  }

  /** Starts cloud-init once per machine life: never again after it has reported, so kubeadm never runs twice. */
  private async boot(mdir: string): Promise<void> {
    if (await exists(bootstrapReportPath(mdir))) return;
    const { command, args } = await sandboxed(machineRoot(mdir), ['/bin/sh', scriptInMachine]);
    await startDetached({ name: 'cloud-init', command, args, stateDir: machineRunDir(mdir) });
  }

  private status(record: LocalMachineRecord): MachineInfraStatus {
    return { providerID: record.providerID, addresses: [record.ip], power: record.power, createdAt: record.createdAt };
  }

  async describeMachine(ref: MachineRef): Promise<MachineInfraStatus | undefined> {
    const record = await readJson<LocalMachineRecord>(machineRecordPath(machineDir(clusterDir(ref.namespace, ref.cluster), ref.name)));
    return record && this.status(record);
  }

  /** Stops every process of the machine, its sandbox included. */
  private async stopMachineProcesses(mdir: string): Promise<void> {
    const runDir = machineRunDir(mdir);
    const names = (await readdir(runDir).catch(() => [] as string[])).filter((f) => f.endsWith('.pid')).map((f) => f.slice(0, -4));
    await Promise.all(names.map((name) => stopProcess(runDir, name)));
  }

  async deleteMachine(ref: MachineRef): Promise<void> {
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    await rm(machineRecordPath(mdir), { force: true });
    await this.stopMachineProcesses(mdir);
    // The address goes back to the pool only once nothing listens on it any more.
    if (record) await portsClosed(record.ip);
    await releaseAddress(`machine/${ref.namespace}/${ref.cluster}/${ref.name}`);
    await rm(mdir, { recursive: true, force: true });
  }

  async detachFromEndpoint(ref: MachineRef): Promise<void> {
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    if (record && !record.detached) await writeJsonAtomic(machineRecordPath(mdir), { ...record, detached: true });
  }

  /** Tests and demos: stops part of a machine, or all of it, to simulate a failure (machine-faults.ts). */
  async breakMachine(ref: MachineRef, fault: MachineFault): Promise<void> {
    await injectFault(machineDir(clusterDir(ref.namespace, ref.cluster), ref.name), ref.name, fault);
  }

  /** Undoes `breakMachine`; without a fault, everything broken on the machine. */
  async repairMachine(ref: MachineRef, fault: MachineFault = 'all'): Promise<void> {
    await clearFault(machineDir(clusterDir(ref.namespace, ref.cluster), ref.name), ref.name, fault);
  }

  async machineFaults(ref: MachineRef): Promise<MachineFault[]> {
    return currentFaults(machineDir(clusterDir(ref.namespace, ref.cluster), ref.name), ref.name);
  }

  /** The local machine of that name in the namespace, whichever cluster it belongs to (names are unique in a namespace). */
  async findMachine(namespace: string, name: string): Promise<MachineRef | undefined> {
    for (const cluster of await readdir(join(localRoot(), namespace)).catch(() => [] as string[])) {
      if (await exists(machineRecordPath(machineDir(clusterDir(namespace, cluster), name)))) return { namespace, cluster, name };
    }
    return undefined;
  }

  async checkBootstrap(ref: MachineRef): Promise<BootstrapCheck> {
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    // The report first: the sentinel is written before the report says finished, so reading them the
    // other way round could see neither the sentinel nor a running script and call a success a failure.
    const report = await readJson<BootstrapReport>(bootstrapReportPath(mdir));
    if (await exists(sentinelPath(mdir))) return { state: 'succeeded' };
    if (report?.state === 'failed') {
      const output = await readFile(join(machineRoot(mdir), stepOutputInMachine), 'utf8').catch(() => '');
      return { state: 'failed', command: report.command ?? '', exitCode: report.exitCode ?? 1, output: output.slice(-4000) };
    }
    if (report?.state === 'finished') {
      return { state: 'failed', command: '(runcmd)', exitCode: 0, output: 'every command succeeded but none wrote /run/cluster-api/bootstrap-success.complete' };
    }
    const running = await runningPid(machineRunDir(mdir), 'cloud-init');
    // A script that ended between the reads has written its report by now: the next check reads it.
    const ended = !running && !(await readJson<BootstrapReport>(bootstrapReportPath(mdir)));
    if (!report && ended && (await exists(machineRecordPath(mdir)))) {
      return { state: 'failed', command: '(cloud-init)', exitCode: 1, output: await logTail(machineRunDir(mdir), 'cloud-init') };
    }
    return { state: 'pending', detail: report ? 'cloud-init is running' : 'machine is booting' };
  }
}

/** Waits until no control-plane port on `ip` accepts connections; a port still open after 30 s is an error worth a retry. */
async function portsClosed(ip: string): Promise<void> {
  const ports = Object.values(standardPorts);
  for (const deadline = Date.now() + 30_000; ;) {
    const open = (await Promise.all(ports.map(async (p) => ((await isListening(ip, p, 500)) ? p : undefined)))).filter((p) => p !== undefined);
    if (open.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${ip} still accepts connections on port ${open.join(', ')} after its machine's processes were stopped`);
    await sleep(200);
  }
}
