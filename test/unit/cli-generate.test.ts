import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const cli = join(__dirname, '../../src/cli/main.js');
const generate = (...args: string[]) =>
  promisify(execFile)(process.execPath, [cli, 'generate', 'cluster', 'gen', ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
const controlPlaneReplicas = (yaml: string) => /kind: KubeadmControlPlane[\s\S]*?replicas: (\d+)/.exec(yaml)?.[1];

test('capt generate cluster --flavor: development has 1 control-plane machine, ha 3; contradictions and unknown flavors are refused', async () => {
  assert.equal(controlPlaneReplicas((await generate()).stdout), '1');
  assert.equal(controlPlaneReplicas((await generate('--flavor', 'development')).stdout), '1');
  assert.equal(controlPlaneReplicas((await generate('--flavor', 'ha')).stdout), '3');
  assert.equal(
    controlPlaneReplicas((await generate('--flavor', 'ha', '--control-plane-machine-count', '5')).stdout),
    '5',
  );
  const contradicted = await generate('--flavor', 'ha', '--control-plane-machine-count', '1');
  assert.equal(contradicted.code, 2);
  assert.match(
    contradicted.stderr,
    /--control-plane-machine-count 1 contradicts --flavor ha: use an odd number from 3/,
  );
  const unknown = await generate('--flavor', 'huge');
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /--flavor huge: no such flavor; flavors are development \(1 control-plane machine\), ha/,
  );
});
