import type { MachineCertificatesPage } from '../src/contract/certificates';
import { heartbeating, pollWithHeartbeat } from '../src/util/heartbeat-poll';
import type { BootstrapDataRequest } from '../src/contract/bootstrap-request';
import type {
  BootstrapCheck,
  BootstrappedMachineSpec,
  ClusterInfraSpec,
  InfrastructureProvider,
  MachineInfraSpec,
  MachineInfraStatus,
  MachineRef,
} from './provider';

/**
 * The activities every provider serves on its own task queue (`provider-<name>`), built from its
 * InfrastructureProvider. Names are the same for every provider, so workflows pick a provider by queue.
 * `renderBootstrapData` is capt's bootstrap renderer, given by the worker that serves the queue (providers do not
 * import activities).
 */
export function providerActivities(
  provider: InfrastructureProvider,
  renderBootstrapData: (request: BootstrapDataRequest) => Promise<string>,
) {
  return {
    // Each heartbeats while it works, so a worker that dies mid-call is noticed in seconds, not at the timeout.
    async createClusterInfrastructure(spec: ClusterInfraSpec) {
      return heartbeating(() => provider.createCluster(spec));
    },
    async deleteClusterInfrastructure(namespace: string, name: string): Promise<void> {
      await heartbeating(() => provider.deleteCluster(namespace, name));
    },
    async createMachineInfrastructure(spec: MachineInfraSpec) {
      return heartbeating(() => provider.createMachine(spec));
    },
    async describeMachineInfrastructure(ref: MachineRef) {
      return heartbeating(() => provider.describeMachine(ref));
    },
    async deleteMachineInfrastructure(ref: MachineRef): Promise<void> {
      await heartbeating(() => provider.deleteMachine(ref));
    },
    async countMachineInfrastructure(namespace: string, cluster: string): Promise<number> {
      return provider.countMachines(namespace, cluster);
    },
    async machineCertificates(input: {
      namespace: string;
      cluster: string;
      after?: string;
      limit: number;
    }): Promise<MachineCertificatesPage> {
      return heartbeating(() => provider.machineCertificates(input.namespace, input.cluster, input.after, input.limit));
    },
    async updateMachineInPlace(ref: Parameters<InfrastructureProvider['updateMachineInPlace']>[0]): Promise<void> {
      await heartbeating(() => provider.updateMachineInPlace(ref));
    },
    async detachFromEndpoint(ref: MachineRef): Promise<void> {
      await heartbeating(() => provider.detachFromEndpoint(ref));
    },
    /**
     * Waits (heartbeating) for the bootstrap success sentinel. Past `timeoutSeconds` with no sentinel the
     * bootstrap counts as failed, as Cluster API says: no silent retry.
     */
    async waitForBootstrap(ref: MachineRef, timeoutSeconds: number): Promise<BootstrapCheck> {
      return bootstrapOutcome(provider, ref, timeoutSeconds);
    },
    /**
     * Creates the machine (get-or-create) and waits for its bootstrap success sentinel, as Cluster API's Docker
     * provider calls a machine's infrastructure ready only once it bootstrapped: one activity, one workflow task
     * fewer per machine than the two calls above.
     */
    async provisionMachineInfrastructure(spec: MachineInfraSpec, bootstrapTimeoutSeconds: number) {
      return provision(provider, spec, bootstrapTimeoutSeconds);
    },
    /**
     * provisionMachineInfrastructure with the bootstrap data rendered here rather than handed in: the user-data (a
     * token, and a control-plane machine's CA keys) enters no history, neither as a local activity's result nor as
     * this call's input, and the machine makes no local activity and activation for it.
     */
    async provisionBootstrappedMachine(spec: BootstrappedMachineSpec, bootstrapTimeoutSeconds: number) {
      const { bootstrap, ...machine } = spec;
      const bootstrapData = await heartbeating(() => renderBootstrapData(bootstrap));
      return provision(provider, { ...machine, bootstrapData }, bootstrapTimeoutSeconds);
    },
  };
}

/** Creates the machine (get-or-create), then waits for its bootstrap success sentinel. */
async function provision(
  provider: InfrastructureProvider,
  spec: MachineInfraSpec,
  bootstrapTimeoutSeconds: number,
): Promise<MachineInfraStatus & { bootstrap: BootstrapCheck }> {
  const infra = await heartbeating(() => provider.createMachine(spec));
  return { ...infra, bootstrap: await bootstrapOutcome(provider, spec, bootstrapTimeoutSeconds) };
}

/** The sentinel's verdict, polled (heartbeating) until it is there or `timeoutSeconds` passed: then failed. */
async function bootstrapOutcome(
  provider: InfrastructureProvider,
  machine: MachineRef,
  timeoutSeconds: number,
): Promise<BootstrapCheck> {
  const ref = { namespace: machine.namespace, cluster: machine.cluster, name: machine.name };
  let last: BootstrapCheck = { state: 'pending', detail: 'not checked yet' };
  const outcome = await pollWithHeartbeat(
    async () => {
      last = await provider.checkBootstrap(ref);
      return last.state === 'pending' ? undefined : last;
    },
    // A check reads a few small files; a short interval starts every machine's next step sooner.
    { intervalMs: 250, deadline: Date.now() + timeoutSeconds * 1000, progress: () => last },
  );
  const seen = last as BootstrapCheck;
  return (
    outcome ?? {
      state: 'failed',
      command: '(bootstrap timeout)',
      exitCode: 1,
      output: `no bootstrap success sentinel within ${timeoutSeconds}s; last state: ${seen.state === 'pending' ? seen.detail : seen.state}`,
    }
  );
}

export type ProviderActivities = ReturnType<typeof providerActivities>;
