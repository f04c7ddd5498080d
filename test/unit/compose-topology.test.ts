import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { captSearchAttributes } from '../../src/contract/search-attributes';
import { temporalDatabases } from '../../src/dev/temporal-schema';

// docker-compose.yml is only validated on this machine (no Docker engine): these keep it the same
// topology as `capt dev start --persistence postgres` as either side changes.
const root = join(__dirname, '../../..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, { image?: string; command?: string[]; ports?: string[] }>;
};
const setup = readFileSync(join(root, 'tools/setup.sh'), 'utf8');
const pinned = (name: string) =>
  /^\S+=v(\S+)$/m.exec(setup.split('\n').find((line) => line.startsWith(`${name}=`)) ?? '')?.[1];

test('the compose file runs the server, schema tool and Web UI versions setup builds', () => {
  const server = pinned('temporal_server_version');
  const ui = pinned('temporal_ui_version');
  assert.ok(server && ui, 'setup.sh pins both versions');
  assert.equal(compose.services.temporal!.image, `temporalio/server:${server}`);
  assert.equal(compose.services.schema!.image, `temporalio/admin-tools:${server}`);
  assert.equal(compose.services.namespace!.image, `temporalio/admin-tools:${server}`);
  assert.equal(compose.services['temporal-ui']!.image, `temporalio/ui:${ui}`);
});

test('the compose file makes the same databases with the same embedded schemas, and registers every capt search attribute', () => {
  const schema = compose.services.schema!.command!.join(' ');
  for (const { database, schema: name } of temporalDatabases)
    assert.ok(schema.includes(`${database}:${name}`), `${database} with ${name}`);
  for (const step of ['create-database', 'setup-schema -v 0.0', 'update-schema --schema-name'])
    assert.ok(schema.includes(step), step);
  const registered = /for name in ([^;]+); do/.exec(compose.services.namespace!.command!.join(' '))?.[1]?.split(/\s+/);
  assert.deepEqual(
    registered,
    captSearchAttributes.map((key) => key.name),
  );
});

// Whoever reaches Temporal's frontend administers every cluster: nothing is published beyond the host's loopback.
test('the compose file publishes every port on the host loopback only', () => {
  const published = Object.entries(compose.services).flatMap(([name, s]) => (s.ports ?? []).map((p) => `${name} ${p}`));
  assert.ok(
    published.some((p) => p.startsWith('temporal ')),
    "Temporal's frontend is published",
  );
  for (const entry of published) assert.match(entry, /^\S+ 127\.0\.0\.1:\d+:\d+$/, entry);
});
