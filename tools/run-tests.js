#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner, one process per file, in lanes
// (CAPT_TEST_LANES, default 2): the tests mostly wait on real servers, so two files at a time keep a
// 2-core machine busy without crowding it. Each lane claims its own loopback block, so local machines of
// files running side by side never race for an address. A file's output is printed whole when it ends.
// Extra arguments filter by path.
const { readdirSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');
const { spawn } = require('node:child_process');

const root = join(__dirname, '..', 'dist', 'test');
const files = [];
(function walk(dir) {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (entry.endsWith('.test.js')) files.push(path);
  }
})(root);
const filters = process.argv.slice(2);
const selected = files.filter((f) => filters.length === 0 || filters.some((p) => relative(root, f).includes(p)));
if (selected.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(2);
}
// The longest files first, so the lanes end together.
const longest = ['cluster/control-plane-upgrade', 'machine-deployment/', 'cluster/control-plane.test', 'machine/machine-durability', 'e2e/cli'];
const rank = (f) => { const i = longest.findIndex((p) => relative(root, f).includes(p)); return i < 0 ? longest.length : i; };
const queue = [...selected].sort((a, b) => rank(a) - rank(b));
const lanes = Math.max(1, Math.min(Number(process.env.CAPT_TEST_LANES ?? 2) || 1, queue.length));
const totals = { tests: 0, pass: 0, fail: 0 };
let failedFiles = 0;

function runFile(file, lane) {
  return new Promise((resolve) => {
    // Lane n of N claims its own slice of 127.1.0.1 - 127.254.255.254.
    const size = Math.floor(254 / lanes);
    const env = { ...process.env, CAPT_LOCAL_ADDRESSES: `127.${1 + size * lane}.0.1-127.${size * (lane + 1)}.255.254` };
    const child = spawn(process.execPath, ['--enable-source-maps', '--test', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('close', (code) => {
      const text = Buffer.concat(chunks).toString();
      process.stdout.write(`# file ${relative(root, file)} (lane ${lane}, exit ${code})\n${text}`);
      for (const key of Object.keys(totals)) totals[key] += Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      if (code !== 0) failedFiles++;
      resolve();
    });
  });
}

async function lane(n) {
  for (let file = queue.shift(); file; file = queue.shift()) await runFile(file, n);
}

void Promise.all(Array.from({ length: lanes }, (_, n) => lane(n))).then(() => {
  console.log(`# all files: tests ${totals.tests}, pass ${totals.pass}, fail ${totals.fail}, files failed ${failedFiles}`);
  console.log(`${totals.pass} passed, ${totals.fail} failed`);
  process.exit(totals.fail > 0 || failedFiles > 0 ? 1 : 0);
});
