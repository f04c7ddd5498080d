import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { captDynamicConfig } from '../../src/dev/temporal-dynamic-config';
import {
  historyShards,
  maxServicePort,
  temporalDynamicConfigYaml,
  temporalServerConfigYaml,
  temporalServices,
  type ServicePorts,
} from '../../src/dev/temporal-server-config';
import { freePortBetween } from '../../src/util/free-port';

test('the server config puts every service on loopback and both stores in PostgreSQL', () => {
  const ports = Object.fromEntries(
    temporalServices.map((s, i) => [s, { grpc: 20_000 + i, membership: 21_000 + i }]),
  ) as ServicePorts;
  const config = parse(
    temporalServerConfigYaml({
      ports,
      postgres: { port: 5433, user: 'temporal', password: 'pw' },
      dynamicConfigFile: '/x/dc.yaml',
    }),
  );
  assert.equal(config.persistence.numHistoryShards, historyShards);
  for (const store of Object.values(config.persistence.datastores) as {
    sql: { pluginName: string; connectAddr: string };
  }[]) {
    assert.deepEqual([store.sql.pluginName, store.sql.connectAddr], ['postgres12', '127.0.0.1:5433']);
  }
  assert.deepEqual(config.services.history.rpc, { grpcPort: 20_001, membershipPort: 21_001, bindOnLocalHost: true });
  assert.equal(config.clusterMetadata.clusterInformation.active.rpcAddress, '127.0.0.1:20000');
  assert.equal(config.dynamicConfigClient.filepath, '/x/dc.yaml');
});

test('the dynamic config file holds what the dev server gets by flags', () => {
  const file = parse(temporalDynamicConfigYaml());
  assert.deepEqual(
    Object.fromEntries(Object.entries(file).map(([k, v]) => [k, (v as { value: unknown }[])[0]!.value])),
    captDynamicConfig,
  );
});

test("service ports are picked below 32768, where the schema's smallint keeps them", async () => {
  for (let i = 0; i < 20; i++) {
    const port = await freePortBetween(10_000, maxServicePort);
    assert.ok(port >= 10_000 && port <= maxServicePort, String(port));
  }
});
