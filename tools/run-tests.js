#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner, one process per file, in lanes
// (CAPT_TEST_LANES, default 3): the tests mostly wait on real servers (two lanes left a third of a 2-core
// machine idle), so three files at a time keep it busy. Each lane claims its own loopback block and port range, so
// local machines and servers of files running side by side never race for an address or a port. A file's output
// is printed whole when it ends. Extra arguments filter by path.
const { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join, relative, resolve } = require('node:path');
const { spawn } = require('node:child_process');

// CAPT_TEST_ROOT points the runner at other compiled tests (the runner's own test does).
const root = process.env.CAPT_TEST_ROOT ?? join(__dirname, '..', 'dist', 'test');
const files = [];
(function walk(dir) {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (entry.endsWith('.test.js')) files.push(path);
  }
})(root);
const filters = process.argv.slice(2);
// Files under heavy/ are proofs too long for CI's 20 minutes: they run only when a filter names them
// (docs/development.md gives their commands and recorded runs).
const matching = files.filter((f) =>
  filters.length === 0 ? !relative(root, f).startsWith('heavy/') : filters.some((p) => relative(root, f).includes(p)),
);
// tsc writes a source map beside each compiled file (tsconfig's sourceMap). A compiled test whose source was
// deleted or renamed since an earlier build is still in dist/, and is not run; a file without a map is.
function missingSource(file) {
  if (!existsSync(`${file}.map`)) return undefined;
  const map = JSON.parse(readFileSync(`${file}.map`, 'utf8'));
  const source = resolve(dirname(file), map.sourceRoot ?? '', map.sources[0]);
  return existsSync(source) ? undefined : source;
}
const stale = matching.map((f) => [f, missingSource(f)]).filter(([, source]) => source);
if (stale.length > 0) {
  const named = stale.map(([f, source]) => `${relative(root, f)} (${relative(process.cwd(), source)} is gone)`);
  console.log(`# not run, left by an earlier build: ${named.join(', ')}`);
}
const selected = matching.filter((f) => !stale.some(([s]) => s === f));
if (selected.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(2);
}
// Real-stack files run on the dev server unless CAPT_TEST_TEMPORAL names one Temporal for every file
// (test/fixtures/temporal.ts reads it). Those that CI once ran a second time on the production topology (the cluster
// lifecycle with the server and PostgreSQL killed, the MachineDeployment rollout, the management API's lifecycle) are
// documented commands (docs/development.md) with their recorded runs: CI's 20 minutes.
// These need the production topology's server whatever CAPT_TEST_TEMPORAL says: upgrade/worker-upgrade
// moves owners to a new build at continue-as-new, which the dev server's Temporal (1.29.1) cannot.
const onlyOnPostgres = ['upgrade/worker-upgrade'];
const runs = selected.map((file) => ({
  file,
  temporal: onlyOnPostgres.some((p) => relative(root, file).includes(p)) ? 'postgres' : process.env.CAPT_TEST_TEMPORAL,
}));
// Each file's seconds in the last full run (the runner prints them at its close; update them when they change), so
// the longest files start first and the lanes end together. A name matches every path that contains it; a file not
// named here counts as short and starts last.
const lastSeconds = {
  'cluster/machine-health-check.test': 170,
  'machine-deployment/machine-deployment-rollout.test': 145,
  'cluster/cluster-health.test': 133,
  'machine-deployment/scheduled-replacement.test': 124,
  'management-api/bridge.test': 110,
  'cluster/control-plane-upgrade.test': 109,
  'upgrade/worker-upgrade.test': 106,
  'e2e/cli.test': 98,
  'fault/temporal-nodes.test': 97,
  'addons/cluster-resource-set.test': 95,
  'e2e/dev-stack.test': 94,
  'cluster/control-plane.test': 85,
  'machine/machine-durability.test': 78,
  'local-provider/machine-faults.test': 76,
  'management-api/control-plane-undo.test': 73,
  'cluster/owner-recovery.test': 72,
  'management-api/health-check-report.test': 70,
  'machine-deployment/machine-deployment-scale.test': 66,
  'management-api/init-webhooks.test': 58,
  'management-api/topology.test': 54,
  'management-api/capi-e2e-framework.test': 54,
  'management-api/admission-webhook.test': 53,
  'machine/machine-deletion.test': 50,
  'fault/temporal-restart.test': 50,
  'machine/machine-lifecycle.test': 43,
  'e2e/codec.test': 38,
  'e2e/certificates.test': 34,
  'cluster/stateless-core-workers.test': 32,
  'management-api/management-api.test': 31,
  'smoke/workflow-against-kube.test': 30,
  'management-api/tenancy.test': 29,
  'api/hostile-input.test': 25,
  'machine-deployment/in-place-update.test': 23,
  'management-api/conversion-webhook.test': 22,
  'management-api/defaulting-webhook.test': 22,
  'local-provider/machine-sandbox.test': 21,
  'local-provider/local-provider.test': 21,
  'smoke/kube-control-plane.test': 16,
  'smoke/node-watch.test': 15,
  'management-api/bridge-lease.test': 14,
};
const seconds = (f) => Object.entries(lastSeconds).find(([p]) => relative(root, f).includes(p))?.[1] ?? 0;
const queue = runs.sort((a, b) => seconds(b.file) - seconds(a.file));
const lanes = Math.max(1, Math.min(Number(process.env.CAPT_TEST_LANES ?? 3) || 1, queue.length));
// A file that hangs is stopped after this long and counted as failed, so CI never stalls on one.
const fileTimeoutMs = Number(process.env.CAPT_TEST_FILE_TIMEOUT_MINUTES ?? 30) * 60_000;
const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
const failedFiles = [];
/** Each file's wall time, printed as it ends and again, longest first, at the close: CI's budget is spent here. */
const fileSeconds = [];

function runFile({ file, temporal }, lane) {
  return new Promise((resolve) => {
    // Lane n of N claims its own slice of 127.1.0.1 - 127.254.255.254 and of the ports 10000 - 32767.
    const size = Math.floor(254 / lanes);
    const ports = Math.floor((32_767 - 10_000 + 1) / lanes);
    const env = {
      ...process.env,
      CAPT_LOCAL_ADDRESSES: `127.${1 + size * lane}.0.1-127.${size * (lane + 1)}.255.254`,
      CAPT_PORT_RANGE: `${10_000 + ports * lane}-${10_000 + ports * (lane + 1) - 1}`,
      ...(temporal ? { CAPT_TEST_TEMPORAL: temporal } : {}),
    };
    const child = spawn(process.execPath, ['--enable-source-maps', '--test', file], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks = [];
    const startedAt = Date.now();
    let timedOut = false;
    // SIGTERM lets the file's after() hooks stop its servers and machines; SIGKILL if they hang too.
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 60_000).unref();
    }, fileTimeoutMs);
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString();
      const name = `${relative(root, file)}${temporal ? ` [${temporal}]` : ''}`;
      const seconds = Math.round((Date.now() - startedAt) / 1000);
      fileSeconds.push({ name, seconds });
      process.stdout.write(`# file ${name} (lane ${lane}, exit ${code ?? signal}, ${seconds} s)\n${text}`);
      const counts = {};
      for (const key of Object.keys(totals))
        counts[key] = Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      for (const key of Object.keys(totals)) totals[key] += counts[key];
      if (timedOut)
        failedFiles.push(`${name}: stopped after ${fileTimeoutMs / 60_000} min (CAPT_TEST_FILE_TIMEOUT_MINUTES)`);
      // A file that failed without a failed test (a hook, a crash) still counts as one failure.
      else if (code !== 0 && counts.fail + counts.cancelled === 0)
        failedFiles.push(`${name}: exit ${code ?? signal} with no failed test`);
      resolve();
    });
  });
}

// Lane n starts n * 4 s after the first: each file first starts a Temporal, whose readiness the SDK waits 5 s for,
// and three at once beside lint once missed it (CI at 8438b80).
async function lane(n) {
  await new Promise((r) => setTimeout(r, n * 4000));
  for (let run = queue.shift(); run; run = queue.shift()) await runFile(run, n);
}

/**
 * The machine harness's workflow bundle, made once for the run rather than once per file (two seconds of a core
 * each): its path goes to every file in CAPT_TEST_HARNESS_BUNDLE. Not made for a run of unit tests alone.
 */
async function harnessBundle() {
  const fixtures = join(root, 'fixtures', 'temporal.js');
  if (!existsSync(fixtures) || runs.every((r) => relative(root, r.file).startsWith('unit'))) return undefined;
  const { bundle } = require(fixtures);
  const dir = mkdtempSync(join(tmpdir(), 'capt-test-bundle-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'workflow-bundle.js');
  writeFileSync(path, (await bundle(require.resolve(join(root, 'workflows', 'harness-workflows')))).code);
  return path;
}

void harnessBundle()
  .then((path) => {
    if (path) process.env.CAPT_TEST_HARNESS_BUNDLE = path;
    return Promise.all(Array.from({ length: lanes }, (_, n) => lane(n)));
  })
  .then(() => {
    // Cancelled tests (a test's own timeout, or its file stopped) are failures, and so is a file that failed whole.
    const failed = totals.fail + totals.cancelled + failedFiles.length;
    for (const f of failedFiles) console.log(`# failed file ${f}`);
    const byTime = fileSeconds.sort((a, b) => b.seconds - a.seconds);
    console.log(`# file times, longest first: ${byTime.map((f) => `${f.name} ${f.seconds} s`).join(', ')}`);
    console.log(
      `# all files: tests ${totals.tests}, pass ${totals.pass}, fail ${totals.fail}, cancelled ${totals.cancelled}, skipped ${totals.skipped}, todo ${totals.todo}, files failed whole ${failedFiles.length}`,
    );
    // Skipped and todo tests are neither passed nor failed (node counts a todo test's failure as neither), so
    // the closing line names them together; the line above tells them apart.
    const notRun = totals.skipped + totals.todo;
    console.log(`${totals.pass} passed, ${failed} failed${notRun > 0 ? `, ${notRun} skipped` : ''}`);
    process.exit(failed > 0 ? 1 : 0);
  });
