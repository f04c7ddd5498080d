import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

const runner = join(__dirname, '../../../tools/run-tests.js');

/**
 * Runs tools/run-tests.js (with `filters`) over test files written for the occasion (other files, such as source
 * maps, are written as given); returns its exit code and closing line.
 */
function runOver(
  files: Record<string, string>,
  env: Record<string, string> = {},
  filters: string[] = [],
): { code: number | null; last: string; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'capt-runner-'));
  try {
    for (const [name, body] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(
        join(dir, name),
        name.endsWith('.test.js') ? `const { test } = require('node:test');\n${body}\n` : body,
      );
    }
    // Without NODE_TEST_CONTEXT: the runner's files must report as under CI, not to this test process.
    const { NODE_TEST_CONTEXT: _context, ...outer } = process.env;
    const r = spawnSync(process.execPath, [runner, ...filters], {
      env: { ...outer, CAPT_TEST_ROOT: dir, CAPT_TEST_LANES: '1', ...env },
      encoding: 'utf8',
    });
    const lines = r.stdout.trim().split('\n');
    return { code: r.status, last: lines.at(-1)!, output: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the runner counts a test that timed out (cancelled) as failed, and its closing line agrees with its exit code', () => {
  const r = runOver({
    'a.test.js': `test('ok', () => {});\ntest('slow', { timeout: 50 }, () => new Promise((r) => setTimeout(r, 2000)));`,
  });
  assert.equal(r.last, '1 passed, 1 failed');
  assert.equal(r.code, 1);
});

test('a file that hangs is stopped after its timeout and named as failed; a passing file is not', () => {
  const r = runOver(
    {
      'hang.test.js': `test('hangs', () => new Promise(() => setInterval(() => {}, 1000)));`,
      'fine.test.js': `test('fine', () => {});`,
    },
    { CAPT_TEST_FILE_TIMEOUT_MINUTES: '0.03' },
  );
  assert.equal(r.code, 1);
  assert.match(r.output, /# failed file hang\.test\.js: stopped after 0\.03 min/);
  assert.match(r.last, /^1 passed, [1-9]\d* failed$/);
});

test('all passing: exit 0 and no failure counted', () => {
  const r = runOver({ 'fine.test.js': `test('fine', () => {});` });
  assert.deepEqual([r.code, r.last], [0, '1 passed, 0 failed']);
});

test('files run on the dev server but the worker upgrade, which runs on PostgreSQL; CAPT_TEST_TEMPORAL runs each file once on the Temporal it names', () => {
  const says = `test('temporal', () => console.log('# on', process.env.CAPT_TEST_TEMPORAL ?? 'dev'));`;
  const files = { 'upgrade/worker-upgrade.test.js': says, 'machine/other.test.js': says };
  const mixed = runOver(files);
  assert.equal(mixed.last, '2 passed, 0 failed');
  assert.match(mixed.output, /# file upgrade\/worker-upgrade\.test\.js \[postgres\][^\n]*\n[^]*?# on postgres/);
  assert.match(mixed.output, /# file machine\/other\.test\.js \(lane[^\n]*\n[^]*?# on dev/);
  const one = runOver(files, { CAPT_TEST_TEMPORAL: 'postgres' });
  assert.equal(one.last, '2 passed, 0 failed');
  assert.equal(one.output.match(/# on postgres/g)?.length, 2);
});

test('each lane gets its own loopback block and port range, disjoint from the other lanes', () => {
  // Each file waits until all three run at once (lanes start 4 s apart), so every lane takes one.
  const barrier = mkdtempSync(join(tmpdir(), 'capt-lanes-'));
  const file = join(barrier, 'lanes');
  const says = `test('lane', async () => {
    const { appendFileSync, readFileSync } = require('node:fs');
    appendFileSync(${JSON.stringify(file)}, process.env.CAPT_LOCAL_ADDRESSES + ' ' + process.env.CAPT_PORT_RANGE + '\\n');
    while (readFileSync(${JSON.stringify(file)}, 'utf8').trim().split('\\n').length < 3)
      await new Promise((r) => setTimeout(r, 100));
  });`;
  try {
    const r = runOver({ 'a.test.js': says, 'b.test.js': says, 'c.test.js': says }, { CAPT_TEST_LANES: '3' });
    assert.equal(r.last, '3 passed, 0 failed');
    const lanes = readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(new Set(lanes.map((l) => l.split(' ')[0])).size, 3, lanes.join('; '));
    const ranges = lanes.map((l) => l.split(' ')[1].split('-').map(Number)).sort((a, b) => a[0] - b[0]);
    ranges.forEach(([low, high], i) => {
      assert.ok(low >= 10_000 && low <= high && high <= 32_767, `${low}-${high}`);
      if (i > 0) assert.ok(low > ranges[i - 1][1], `lane ranges overlap: ${lanes.join('; ')}`);
    });
  } finally {
    rmSync(barrier, { recursive: true, force: true });
  }
});

test('skipped and todo tests show in the closing line, told apart on the line before it', () => {
  const r = runOver({
    'a.test.js': [
      `test('ok', () => {});`,
      `test('skipped', { skip: true }, () => {});`,
      `test.todo('todo');`,
      `test('todo that fails', { todo: true }, () => { throw new Error('not yet'); });`,
    ].join('\n'),
  });
  assert.deepEqual([r.code, r.last], [0, '1 passed, 0 failed, 3 skipped']);
  assert.match(r.output, /^# all files: tests 4, pass 1, fail 0, cancelled 0, skipped 1, todo 2, /m);
});

test('a compiled test whose source is gone (deleted or renamed since the last build) is named and not run', () => {
  // What tsc leaves: a map beside each compiled file naming its source.
  const map = (source: string) => JSON.stringify({ version: 3, sourceRoot: '', sources: [source], mappings: '' });
  const r = runOver({
    'unit/kept.test.js': `test('kept', () => {});`,
    'unit/kept.test.js.map': map('../src/kept.test.ts'),
    'src/kept.test.ts': '',
    'unit/gone.test.js': `test('gone', () => { throw new Error('a stale file ran'); });`,
    'unit/gone.test.js.map': map('../src/gone.test.ts'),
  });
  assert.deepEqual([r.code, r.last], [0, '1 passed, 0 failed']);
  assert.match(
    r.output,
    /^# not run, left by an earlier build: unit\/gone\.test\.js \(\S*src\/gone\.test\.ts is gone\)$/m,
  );
  assert.doesNotMatch(r.output, /# file unit\/gone/);
});

test('a file under heavy/ runs only when a filter names it', () => {
  const files = { 'a.test.js': `test('a', () => {});`, 'heavy/long.test.js': `test('long', () => {});` };
  const all = runOver(files);
  assert.equal(all.last, '1 passed, 0 failed');
  assert.doesNotMatch(all.output, /heavy/);
  const named = runOver(files, {}, ['heavy/long']);
  assert.equal(named.last, '1 passed, 0 failed');
  assert.match(named.output, /# file heavy\/long\.test\.js/);
});
