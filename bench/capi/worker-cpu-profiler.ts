import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { profilerSignal } from './profiler-signal';

/**
 * Preloaded into the capt worker (NODE_OPTIONS=--require) by the side-by-side bench's --cpu-profile:
 * profilerSignal starts V8's CPU profiler on the main thread (activities, the SDK's plumbing) and on
 * every worker thread (where workflows run), the next one stops it and writes one .cpuprofile per thread
 * into CAPT_BENCH_PROFILE_DIR, then `<n>.done`. The worker's own node children inherit NODE_OPTIONS: in them
 * this file does nothing.
 */
type Params = Record<string, unknown>;

const dir = process.env.CAPT_BENCH_PROFILE_DIR;
if (dir && process.argv[1]?.endsWith('worker-main.js')) installProfiler(dir);

function installProfiler(dir: string): void {
  const session = new Session();
  session.connect();
  const threads = new Map<string, string>();
  const replies = new Map<number, (result: Params | undefined) => void>();
  let nextId = 1;
  const post = (method: string, params?: Params) =>
    new Promise<Params>((resolve, reject) => {
      session.post(method, params, (err, result) => (err ? reject(err) : resolve((result ?? {}) as Params)));
    });
  const postToThread = (sessionId: string, method: string) =>
    new Promise<Params | undefined>((resolve) => {
      const id = nextId++;
      replies.set(id, resolve);
      post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) }).catch(() =>
        resolve(undefined),
      );
    });
  session.on(
    'NodeWorker.attachedToWorker',
    ({ params }: { params: { sessionId: string; workerInfo: { title: string } } }) => {
      threads.set(params.sessionId, params.workerInfo.title);
    },
  );
  session.on('NodeWorker.detachedFromWorker', ({ params }: { params: { sessionId: string } }) =>
    threads.delete(params.sessionId),
  );
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }: { params: { message: string } }) => {
    const reply = JSON.parse(params.message) as { id?: number; result?: Params };
    if (reply.id === undefined) return;
    replies.get(reply.id)?.(reply.result);
    replies.delete(reply.id);
  });
  void post('NodeWorker.enable', { waitForDebuggerOnStart: false });

  let profiling = false;
  let run = 0;
  const everyThread = async (method: string) => {
    const main = await post(method);
    const others = await Promise.all(
      [...threads].map(async ([sessionId, title]) => [title, await postToThread(sessionId, method)] as const),
    );
    return [['main', main] as const, ...others];
  };
  const toggle = async () => {
    if (!profiling) {
      profiling = true;
      await everyThread('Profiler.enable');
      await everyThread('Profiler.start');
      return;
    }
    profiling = false;
    run += 1;
    for (const [title, result] of await everyThread('Profiler.stop')) {
      if (result?.profile)
        writeFileSync(
          join(dir, `${run}-${title.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '')}.cpuprofile`),
          JSON.stringify(result.profile),
        );
    }
    writeFileSync(join(dir, `${run}.done`), '');
  };
  process.on(profilerSignal, () => void toggle());
}
