import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { clusterSecrets } from '../../activities/secrets/cluster-secrets-lookup';
import type { ClusterSecrets, ClusterSecretsAnswer } from '../../src/contract/cluster-secrets';
import { ErrorType } from '../../src/errors';

// Pure unit test of the cache's rules; the real query path runs in test/cluster/stateless-core-workers.
const secrets = { bootstrapToken: 'abcdef.0123456789abcdef' } as ClusterSecrets;

/** A client whose cluster workflows answer with `answer()`, counting the queries asked of them. */
function answering(answer: (id: string) => Promise<ClusterSecretsAnswer | undefined>) {
  const asked: string[] = [];
  const client = {
    workflow: { getHandle: (id: string) => ({ query: () => (asked.push(id), answer(id)) }) },
    withAbortSignal: <R>(_signal: AbortSignal, fn: () => R) => fn(),
  } as unknown as Client;
  return { asked, env: new MockActivityEnvironment(undefined, { client }) };
}

const lookup = (env: MockActivityEnvironment, cluster: string, fresh = false): Promise<ClusterSecretsAnswer> =>
  env.run(() => clusterSecrets('default', cluster, { fresh }));

test('lookups share a query in flight and reuse its answer; `fresh` never takes a settled one', async () => {
  const { asked, env } = answering(async () => ({ endpoint: '127.1.0.1:6443', deleting: false, secrets }));
  const [a, b] = await Promise.all([lookup(env, 'shared'), lookup(env, 'shared', true)]);
  assert.equal(a.secrets.bootstrapToken, secrets.bootstrapToken);
  assert.equal(b, a);
  assert.equal(asked.length, 1, 'two concurrent lookups, one query');
  await lookup(env, 'shared');
  assert.equal(asked.length, 1, 'a recent answer serves');
  await lookup(env, 'shared', true);
  assert.equal(asked.length, 2, 'fresh asks again');
  assert.deepEqual(asked, ['cluster/default/shared', 'cluster/default/shared']);
});

test('the answer of a cluster being deleted is not kept', async () => {
  const { asked, env } = answering(async () => ({ endpoint: '127.1.0.2:6443', deleting: true, secrets }));
  await lookup(env, 'leaving');
  await lookup(env, 'leaving');
  assert.equal(asked.length, 2);
});

test('a cluster workflow that is missing, fails to answer or has no secrets yet: a retryable ClusterSecretsUnavailable, not kept', async () => {
  const failures: Record<string, () => Promise<ClusterSecretsAnswer | undefined>> = {
    'cluster/default/gone': () =>
      Promise.reject(new WorkflowNotFoundError('not found', 'cluster/default/gone', undefined)),
    'cluster/default/silent': () => Promise.reject(new Error('query timed out')),
    'cluster/default/new': async () => undefined,
  };
  const { asked, env } = answering((id) => failures[id]!());
  for (const [cluster, why] of [
    ['gone', /does not exist/],
    ['silent', /did not answer \(query timed out\)/],
    ['new', /has no secrets yet/],
  ] as const) {
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        lookup(env, cluster),
        (err: unknown) =>
          err instanceof ApplicationFailure &&
          err.type === ErrorType.ClusterSecretsUnavailable &&
          !err.nonRetryable &&
          why.test(err.message),
      );
    }
  }
  assert.equal(asked.length, 6, 'every failed lookup asks again');
});
