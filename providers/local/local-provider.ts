import { access, chown, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MachineCertificatesPage } from '../../src/contract/certificates';
import { inPlaceUpdateUnsupported, unsupportedVersion } from '../../src/errors';
import type { InPlaceCapability } from '../../src/contract/in-place';
import { compareVersions } from '../../src/contract/upgrade-plan';
import { availableKubernetesVersions, toolPaths } from '../../src/tools';
import type {
  BootstrapCheck,
  ClusterInfraSpec,
  ClusterInfraStatus,
  InfrastructureProvider,
  InPlaceMachineUpdate,
  MachineInfraSpec,
  MachineInfraStatus,
  MachineRef,
} from '../provider';
import { claimAddress, releaseAddress } from './addresses';
import {
  renderCloudInitScript,
  scriptInMachine,
  stepOutputInMachine,
  type BootstrapReport,
} from './cloud-init/cloud-init-script';
import { kubeadmShim } from './kubeadm/kubeadm-shim';
import {
  agentJoinPort,
  bootstrapReportPath,
  clusterDir,
  clusterKubeconfigPath,
  clusterRunDir,
  endpointPoolPath,
  machineDir,
  machineHostDir,
  machineRecordPath,
  machineRoot,
  machinesDir,
  namespaceDir,
  sandboxProcess,
  sentinelPath,
  type LocalClusterRecord,
  type LocalMachineRecord,
} from './layout';
import { clusterMachineCertificates } from './machine-certificates';
import { clearFault, currentFaults, injectFault, type MachineFault } from './machine-faults';
import type { MachineMetadata } from './machine-metadata';
import { readMachineFile, readMachineJson } from './machine-files';
import { guardMachineNetwork } from './machine-network';
import { atMachinePriority, machineHostId, prepareMachineRoot, sandboxed, toolPathInMachine } from './machine-sandbox';
import { readJson, writeFileAtomic, writeJsonAtomic } from '../../src/util/files';
import { adminKubeconfig } from '../../src/secrets/cluster-secrets';
import { isListening } from '../../src/util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../../src/util/processes';
import { standardPorts } from './control-plane-components';
import type { EndpointPool } from './load-balancer';

/** LocalMachineTemplate spec knobs. */
export interface LocalMachineTemplateSpec {
  /** Simulated boot time before cloud-init runs. */
  bootDelaySeconds?: number;
  /** The machine fails its bootstrap, for testing remediation and failure reporting. */
  failBootstrap?: boolean;
}

const apiserverPort = 6443;

/**
 * Every machine's kubelet runs in the cluster agent and takes new arguments where it runs, as a kubelet restart
 * would; a worker's also takes a newer version (`kubeadm upgrade node`). A control-plane machine's version is
 * replaced (its apiserver and etcd member are real processes of one version; a new member joins first).
 */
const localInPlace: InPlaceCapability = { worker: ['version', 'kubeletExtraArgs'], controlPlane: ['kubeletExtraArgs'] };

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

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
    await writeFileAtomic(
      clusterKubeconfigPath(dir),
      adminKubeconfig(spec.name, endpoint, spec.adminCredentials),
      0o600,
    );
    // The agent runs the cluster's kubelets, which stand in for other hosts as its machines do: at their priority.
    await startDetached({
      name: 'cluster-agent',
      ...atMachinePriority(process.execPath, [join(__dirname, 'cluster-agent-main.js'), dir]),
      stateDir: clusterRunDir(dir),
    });
    return { ready: true, endpoint: record.endpoint, inPlace: localInPlace };
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

  machineCertificates(
    namespace: string,
    cluster: string,
    after: string | undefined,
    limit: number,
  ): Promise<MachineCertificatesPage> {
    return clusterMachineCertificates(namespace, cluster, after, limit);
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
      throw unsupportedVersion(
        `Kubernetes ${spec.version} is not available on the local provider: it can run ${versions.join(', ')}. Set spec.version to one of them.`,
      );
    }
    const cdir = clusterDir(spec.namespace, spec.cluster);
    const cluster = await readJson<LocalClusterRecord>(join(cdir, 'cluster.json'));
    if (!cluster) {
      throw unsupportedVersion(
        `local cluster ${spec.namespace}/${spec.cluster} does not exist; create its cluster infrastructure first`,
      );
    }
    const mdir = machineDir(cdir, spec.name);
    const existing = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    const template = spec.template as LocalMachineTemplateSpec;
    const ip = existing?.ip ?? (await claimAddress(`machine/${spec.namespace}/${spec.cluster}/${spec.name}`));
    const record: LocalMachineRecord = existing ?? {
      namespace: spec.namespace,
      cluster: spec.cluster,
      name: spec.name,
      role: spec.role,
      ip,
      providerID: `local://${spec.namespace}/${spec.cluster}/${spec.name}`,
      version: spec.version,
      power: 'on',
      bootDelaySeconds: template.bootDelaySeconds ?? 0,
      failBootstrap: template.failBootstrap ?? false,
      createdAt: new Date().toISOString(),
      hostId: machineHostId(ip),
    };
    if (!existing) {
      const root = machineRoot(mdir);
      // A root left by a create that died before its record was written is laid out again from nothing.
      await rm(root, { recursive: true, force: true });
      await prepareMachineRoot(root, record.hostId!);
      const metadata: MachineMetadata = {
        name: spec.name,
        ip: record.ip,
        providerID: record.providerID,
        kubernetesVersion: spec.version,
        kubernetesBin: toolPathInMachine(kubernetesBin),
        etcdBinary: toolPathInMachine(toolPaths().etcd),
      };
      // The host writes these before the machine first runs, into folders only it has touched; the machine may read them as its root.
      const owned = async (path: string, content: string, mode: number) => {
        await writeFile(join(root, path), content, { mode, flag: 'wx' });
        await chown(join(root, path), record.hostId!, record.hostId!);
      };
      await owned('run/capt/metadata.json', JSON.stringify(metadata), 0o644);
      const userData = spec.bootstrapData;
      await owned('var/lib/cloud/instance/user-data.txt', userData, 0o600);
      // Like cloud-init, the user-data becomes a script; it holds the user-data's secrets too.
      await owned(scriptInMachine, renderCloudInitScript(userData, record), 0o700);
      await owned('run/capt/bin/kubeadm', kubeadmShim({ host: cluster.endpoint.host, port: agentJoinPort }), 0o755);
      // The record goes last: its presence means the machine is fully laid out.
      await writeJsonAtomic(machineRecordPath(mdir), record);
    }
    await this.boot(mdir, record);
    return this.status(record);
  }

  /** Starts cloud-init once per machine life: never again after it has reported, so kubeadm never runs twice. */
  private async boot(mdir: string, record: LocalMachineRecord): Promise<void> {
    if (await exists(bootstrapReportPath(mdir))) return;
    if (record.hostId === undefined)
      throw new Error(
        `machine ${record.name} was laid out by a capt without user-namespace sandboxes; delete it and create it again`,
      );
    await guardMachineNetwork();
    const { command, args, env } = await sandboxed(machineRoot(mdir), record.hostId, ['/bin/sh', scriptInMachine]);
    await startDetached({
      name: sandboxProcess,
      command,
      args,
      env,
      inheritEnv: false,
      stateDir: machineHostDir(mdir),
    });
  }

  private status(record: LocalMachineRecord): MachineInfraStatus {
    return { providerID: record.providerID, addresses: [record.ip], power: record.power, createdAt: record.createdAt };
  }

  async describeMachine(ref: MachineRef): Promise<MachineInfraStatus | undefined> {
    const record = await readJson<LocalMachineRecord>(
      machineRecordPath(machineDir(clusterDir(ref.namespace, ref.cluster), ref.name)),
    );
    return record && this.status(record);
  }

  /**
   * Stops every process of the machine: its sandbox's PID 1 takes them all with it (machine-sandbox.ts). A
   * machine laid out before sandboxes had their own user and PID namespaces has its processes recorded in
   * its root, as host pids: they are stopped from there, once.
   */
  private async stopMachineProcesses(mdir: string, record: LocalMachineRecord | undefined): Promise<void> {
    await stopProcess(machineHostDir(mdir), sandboxProcess);
    if (record && record.hostId === undefined) {
      const runDir = join(machineRoot(mdir), 'run/capt');
      const names = (await readdir(runDir).catch(() => [] as string[]))
        .filter((f) => f.endsWith('.pid'))
        .map((f) => f.slice(0, -4));
      await Promise.all(names.map((name) => stopProcess(runDir, name)));
    }
  }

  async deleteMachine(ref: MachineRef): Promise<void> {
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    await rm(machineRecordPath(mdir), { force: true });
    await this.stopMachineProcesses(mdir, record);
    // The address goes back to the pool only once nothing listens on it any more.
    if (record) await portsClosed(record.ip);
    await releaseAddress(`machine/${ref.namespace}/${ref.cluster}/${ref.name}`);
    await rm(mdir, { recursive: true, force: true });
  }

  async updateMachineInPlace(ref: InPlaceMachineUpdate): Promise<void> {
    const can = localInPlace[ref.role === 'worker' ? 'worker' : 'controlPlane'];
    if (ref.kubeletExtraArgs && !can.includes('kubeletExtraArgs'))
      throw inPlaceUpdateUnsupported(`the local provider gives no ${ref.role} machine new kubelet arguments in place`);
    if (!toolPaths().kubernetes[ref.version])
      throw unsupportedVersion(
        `Kubernetes ${ref.version} is not available on the local provider: it can run ${this.kubernetesVersions().join(', ')}`,
      );
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    if (!record) throw inPlaceUpdateUnsupported(`machine ${ref.name} does not exist on the local provider`);
    const args = ref.kubeletExtraArgs && { kubeletExtraArgs: ref.kubeletExtraArgs };
    if (record.version === ref.version && (!args || isDeepStrictEqual(record.kubeletExtraArgs, args.kubeletExtraArgs)))
      return;
    if (compareVersions(ref.version, record.version) < 0)
      throw inPlaceUpdateUnsupported(
        `machine ${ref.name} runs ${record.version}: a kubelet is never downgraded in place`,
      );
    if (ref.version !== record.version && !can.includes('version'))
      throw inPlaceUpdateUnsupported(
        `the local provider replaces a ${ref.role} machine to change its version (${record.version} to ${ref.version})`,
      );
    // The cluster agent serves the machine's kubelet from this record: it reports the new version (and what the new
    // arguments change, such as max-pods) at once.
    await writeJsonAtomic(machineRecordPath(mdir), { ...record, version: ref.version, ...args });
  }

  async detachFromEndpoint(ref: MachineRef): Promise<void> {
    const dir = clusterDir(ref.namespace, ref.cluster);
    const mdir = machineDir(dir, ref.name);
    const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
    if (!record) return;
    if (!record.detached) await writeJsonAtomic(machineRecordPath(mdir), { ...record, detached: true });
    await endpointLeft(endpointPoolPath(dir), `${record.ip}:6443`);
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
    for (const cluster of await readdir(namespaceDir(namespace)).catch(() => [] as string[])) {
      if (await exists(machineRecordPath(machineDir(clusterDir(namespace, cluster), name))))
        return { namespace, cluster, name };
    }
    return undefined;
  }

  async checkBootstrap(ref: MachineRef): Promise<BootstrapCheck> {
    const mdir = machineDir(clusterDir(ref.namespace, ref.cluster), ref.name);
    // The report first: the sentinel is written before the report says finished, so reading them the
    // other way round could see neither the sentinel nor a running script and call a success a failure.
    const hostId = (await readJson<LocalMachineRecord>(machineRecordPath(mdir)))?.hostId;
    const report = await readMachineJson<BootstrapReport>(bootstrapReportPath(mdir), hostId);
    if ((await readMachineFile(sentinelPath(mdir), hostId, 64)) !== undefined) return { state: 'succeeded' };
    if (report?.state === 'failed') {
      const output = (await readMachineFile(join(machineRoot(mdir), stepOutputInMachine), hostId, 4000)) ?? '';
      return {
        state: 'failed',
        command: String(report.command ?? '').slice(0, 1000),
        exitCode: Number(report.exitCode ?? 1),
        output,
      };
    }
    if (report?.state === 'finished') {
      return {
        state: 'failed',
        command: '(runcmd)',
        exitCode: 0,
        output: 'every command succeeded but none wrote /run/cluster-api/bootstrap-success.complete',
      };
    }
    const running = await runningPid(machineHostDir(mdir), sandboxProcess);
    // A script that ended between the reads has written its report by now: the next check reads it.
    const ended = !running && !(await readMachineJson<BootstrapReport>(bootstrapReportPath(mdir), hostId));
    if (!report && ended && (await exists(machineRecordPath(mdir)))) {
      return {
        state: 'failed',
        command: '(cloud-init)',
        exitCode: 1,
        output: await logTail(machineHostDir(mdir), sandboxProcess),
      };
    }
    return { state: 'pending', detail: report ? 'cloud-init is running' : 'machine is booting' };
  }
}

/**
 * Waits until the cluster agent's load balancer has taken `backend` out of service and closed its kept-alive
 * connections (it drains them between requests within a check, 0.5 s). A watch is closed only after 10 s, and
 * an agent that publishes no pool says nothing: both are given up on after 3 s, the drain's usual bound.
 */
async function endpointLeft(poolPath: string, backend: string): Promise<void> {
  for (const deadline = Date.now() + 3_000; Date.now() < deadline; await sleep(50)) {
    const pool = await readJson<EndpointPool>(poolPath);
    if (pool && !pool.inService.includes(backend) && !pool.leaving[backend]) return;
  }
}

/** Waits until no control-plane port on `ip` accepts connections; a port still open after 30 s is an error worth a retry. */
async function portsClosed(ip: string): Promise<void> {
  const ports = Object.values(standardPorts);
  for (const deadline = Date.now() + 30_000; ;) {
    const open = (await Promise.all(ports.map(async (p) => ((await isListening(ip, p, 500)) ? p : undefined)))).filter(
      (p) => p !== undefined,
    );
    if (open.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `${ip} still accepts connections on port ${open.join(', ')} after its machine's processes were stopped`,
      );
    await sleep(200);
  }
}
