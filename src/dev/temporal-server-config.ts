import { stringify } from 'yaml';
import { captDynamicConfig } from './temporal-dynamic-config';

/** Temporal's four services, each with a gRPC and a membership (ringpop) port. */
export const temporalServices = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof temporalServices)[number];
export type ServicePorts = Record<TemporalService, { grpc: number; membership: number }>;

/** Temporal's SQL stores keep a service's port in a smallint column (cluster_membership.rpc_port). */
export const maxServicePort = 32767;

export interface TemporalServerConfigInput {
  ports: ServicePorts;
  postgres: { port: number; user: string; password: string };
  /** The dynamic config file (temporalDynamicConfigYaml) the server polls. */
  dynamicConfigFile: string;
}

/**
 * History shards: fixed when the schema is first used, never changed after. Four keep a 2-core host's
 * start-up and shard acquisition after a restart short; a production cluster sizes this to its hosts.
 */
export const historyShards = 4;

const datastore = (database: string, pg: TemporalServerConfigInput['postgres'], maxConns: number) => ({
  sql: {
    pluginName: 'postgres12',
    databaseName: database,
    connectAddr: `127.0.0.1:${pg.port}`,
    connectProtocol: 'tcp',
    user: pg.user,
    password: pg.password,
    maxConns,
    maxIdleConns: maxConns,
    maxConnLifetime: '1h',
  },
});

/** The YAML for `server --config-file FILE start`: every service on loopback, PostgreSQL for both stores. */
export function temporalServerConfigYaml(input: TemporalServerConfigInput): string {
  const frontend = `127.0.0.1:${input.ports.frontend.grpc}`;
  return stringify({
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: historyShards,
      datastores: {
        'postgres-default': datastore('temporal', input.postgres, 20),
        'postgres-visibility': datastore('temporal_visibility', input.postgres, 5),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: Object.fromEntries(
      temporalServices.map((service) => [
        service,
        {
          rpc: {
            grpcPort: input.ports[service].grpc,
            membershipPort: input.ports[service].membership,
            bindOnLocalHost: true,
          },
        },
      ]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: frontend },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    // The worker service's system workflows (schedules, batches) reach the frontend through this.
    publicClient: { hostPort: frontend },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  });
}

/** captDynamicConfig in the file format the server polls: each key a list of constrained values. */
export function temporalDynamicConfigYaml(): string {
  return stringify(
    Object.fromEntries(Object.entries(captDynamicConfig).map(([key, value]) => [key, [{ value, constraints: {} }]])),
  );
}
