import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { test } from 'node:test';
import { FrontendProxy } from '../../src/dev/frontend-proxy';
import { freePort } from '../../src/util/free-port';

/** A frontend stand-in that answers each line with its name and the line. */
async function echo(name: string): Promise<Server> {
  const server = createServer((s) => s.on('data', (d) => s.write(`${name}:${d}`)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}
const address = (s: Server) => `127.0.0.1:${(s.address() as AddressInfo).port}`;

/** Opens a connection through the proxy, sends one line, returns the answer ('' when the proxy closes it). */
async function ask(port: number, line: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.write(line);
  let answer = '';
  socket.on('data', (d) => {
    answer += d;
    socket.end();
  });
  await once(socket, 'close');
  return answer;
}

test('the frontend proxy forwards round robin, skips a frontend that refuses connections, and closes when none answers', async () => {
  const [a, b] = [await echo('a'), await echo('b')];
  const dead = `127.0.0.1:${await freePort()}`;
  const proxy = new FrontendProxy([address(a), dead, address(b)]);
  const port = await freePort();
  await proxy.listen('127.0.0.1', port);
  try {
    const answers = [await ask(port, 'x'), await ask(port, 'y'), await ask(port, 'z')];
    assert.deepEqual(answers, ['a:x', 'b:y', 'a:z'], 'the dead frontend is skipped for the next');
    a.close();
    b.close();
    await Promise.all([once(a, 'close'), once(b, 'close')]);
    assert.equal(await ask(port, 'w'), '', 'no frontend up: the connection is closed');
  } finally {
    await proxy.close();
  }
});
