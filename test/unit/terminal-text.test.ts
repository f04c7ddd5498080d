import assert from 'node:assert/strict';
import { test } from 'node:test';
import { terminalSafe } from '../../src/util/terminal-text';

test('text from clusters and machines loses what a terminal would act on, and keeps its lines', () => {
  assert.equal(
    terminalSafe('\x1b[31mred\x1b[0m and \x1b[2J\x1b[Hcleared'),
    'red and cleared',
    'CSI: colours, clearing, cursor moves',
  );
  assert.equal(
    terminalSafe('\x1b]0;pwned title\x07after \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\'),
    'after link',
    'OSC: window titles and hyperlinks',
  );
  assert.equal(terminalSafe('ok\rFAKE'), 'ok?FAKE', 'a carriage return cannot overwrite the line');
  assert.equal(terminalSafe('a\x00b\x07c\x7fd\u009be'), 'a?b?c?d?e', 'NUL, bell, DEL and C1 controls');
  assert.equal(terminalSafe('abc\u202edcba'), 'abc?dcba', 'no bidirectional override');
  assert.equal(terminalSafe('line 1\n\tline 2'), 'line 1\n\tline 2', 'newlines and tabs stay');
  assert.equal(terminalSafe('naïve — 日本'), 'naïve — 日本', 'printable text stays whole');
});
