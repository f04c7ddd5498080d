#!/usr/bin/env node
// Runs every compiled test file under dist/test with node's test runner, one file at a time: each file
// starts real servers, and a 2-core machine runs them best in turn. Extra arguments filter by path.
const { readdirSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');
const { spawnSync } = require('node:child_process');

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
const result = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=1', ...selected], { stdio: 'inherit' });
process.exit(result.status ?? 1);
