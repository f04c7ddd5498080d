import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { captHome } from '../../src/config/capt-home';

test('CAPT_HOME names capt’s home; unset or empty, it is ~/.capt (never the current directory)', () => {
  const saved = process.env.CAPT_HOME;
  try {
    process.env.CAPT_HOME = '/srv/capt';
    assert.equal(captHome(), '/srv/capt');
    process.env.CAPT_HOME = '';
    assert.equal(captHome(), join(homedir(), '.capt'));
    delete process.env.CAPT_HOME;
    assert.equal(captHome(), join(homedir(), '.capt'));
  } finally {
    if (saved === undefined) delete process.env.CAPT_HOME;
    else process.env.CAPT_HOME = saved;
  }
});
