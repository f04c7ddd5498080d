import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { startAdmissionWebhook } from '../../src/bridge/admission-webhook';
import { callersOf, type ServingPlan } from '../../src/bridge/bridge-webhooks';
import { parse } from 'yaml';
import { admissionConfiguration, webhookClientKubeconfig } from '../../src/management-api/webhook-client-config';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { clientAuthorityProblem, keepOrIssueWebhookClient } from '../../src/pki/webhook-client';
import { ephemeralWebhookServing } from '../../src/pki/webhook-serving';
import { postToWebhook } from '../fixtures/webhook-post';

// Real certificates (openssl, as capt makes them) and a real HTTPS server on loopback: who the webhooks answer.
test("with a client CA, the admission paths answer only its certificates (401 without one, 403 with another CA's); conversion and the insecure opt-out answer anyone", async () => {
  const apiserver = await keepOrIssueWebhookClient(undefined);
  const stranger = await issueCertificate(await createCertificateAuthority('other'), {
    commonName: 'kube-apiserver-webhook-client',
    usage: 'client',
  });
  const serving = await ephemeralWebhookServing('127.0.0.1');
  const routes = {
    '/validate': async () => ({ answered: 'validate' }),
    '/convert': async () => ({ answered: 'convert' }),
  };
  const log = pino({ level: 'silent' });
  const checked = await startAdmissionWebhook({
    host: '127.0.0.1',
    port: 0,
    serving,
    routes,
    clientCa: apiserver.ca.cert,
    anyCaller: ['/convert'],
    log,
  });
  const open = await startAdmissionWebhook({ host: '127.0.0.1', port: 0, serving, routes, log });
  try {
    const caBundle = Buffer.from(serving.caBundle).toString('base64');
    const post = async (base: string, path: string, client?: { cert: string; key: string }) => {
      const r = await postToWebhook({ url: `${base}${path}`, caBundle }, '{}', client);
      return [r.status, JSON.parse(r.body).message ?? JSON.parse(r.body).answered];
    };
    assert.deepEqual(await post(checked.url, '/validate', apiserver.client), [200, 'validate']);
    assert.deepEqual(await post(checked.url, '/validate'), [
      401,
      'only the apiserver may call this webhook: present the client certificate capt issued it',
    ]);
    const [status, message] = await post(checked.url, '/validate', stranger);
    assert.equal(status, 403);
    assert.match(
      message,
      /^only the apiserver may call this webhook: this client certificate was not issued by its authority \(/,
    );
    assert.equal(checked.refused(), 2);
    assert.equal(checked.answered('/validate'), 1, 'refusals are not answers');
    assert.deepEqual(
      await post(checked.url, '/convert'),
      [200, 'convert'],
      'the apiserver converts without credentials',
    );
    assert.deepEqual(await post(open.url, '/validate'), [200, 'validate']);
    assert.deepEqual(await post(open.url, '/validate', stranger), [200, 'validate']);
  } finally {
    await checked.close();
    await open.close();
  }
});

test("the apiserver's client certificate is kept while it serves, renewed under its kept CA, and made anew with a CA that cannot be kept", async () => {
  const first = await keepOrIssueWebhookClient(undefined);
  assert.equal(first.renewed, 'a new client CA and client certificate');
  assert.equal(clientAuthorityProblem(first.ca.cert), undefined);
  assert.equal(clientAuthorityProblem(first.client.cert), 'it is not a certificate authority');
  assert.match(clientAuthorityProblem('garbage')!, /^it is not a PEM certificate/);
  const kept = await keepOrIssueWebhookClient({ ca: first.ca, client: first.client });
  assert.equal(kept.renewed, undefined);
  assert.deepEqual({ ca: kept.ca, client: kept.client }, { ca: first.ca, client: first.client });
  const ending = await issueCertificate(first.ca, { commonName: 'c', usage: 'client', days: 10 });
  const renewed = await keepOrIssueWebhookClient({ ca: first.ca, client: ending });
  assert.match(renewed.renewed!, /^a new client certificate under the kept CA \(the previous one: it expires on /);
  assert.equal(renewed.ca, first.ca);
  const other = await keepOrIssueWebhookClient(undefined);
  const foreign = await keepOrIssueWebhookClient({ ca: first.ca, client: other.client });
  assert.equal(
    foreign.renewed,
    'a new client certificate under the kept CA (the previous one: its CA did not sign it)',
  );
  const lost = await keepOrIssueWebhookClient({ ca: { cert: first.ca.cert, key: '' }, client: first.client });
  assert.match(lost.renewed!, /^a new client CA \(the previous one: it is not a PEM certificate and key/);
  assert.notEqual(lost.ca.cert, first.ca.cert);
});

test('the apiserver reads its webhook client certificate through an AdmissionConfiguration of both webhook plugins and a kubeconfig user per webhook address', () => {
  assert.deepEqual(parse(webhookClientKubeconfig('10.0.0.5:9443', '/p/c.crt', '/p/c.key')), {
    apiVersion: 'v1',
    kind: 'Config',
    users: [{ name: '10.0.0.5:9443', user: { 'client-certificate': '/p/c.crt', 'client-key': '/p/c.key' } }],
  });
  const configuration = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: '/p/kubeconfig',
  };
  const text = admissionConfiguration('/p/kubeconfig');
  assert.doesNotMatch(text, /[&*]a\d/, 'no YAML alias: an operator may merge it into a file of their own');
  assert.deepEqual(parse(text), {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [
      { name: 'ValidatingAdmissionWebhook', configuration },
      { name: 'MutatingAdmissionWebhook', configuration },
    ],
  });
});

test('the bridge answers any caller only when told so, with a warning; a Secret without a client CA is refused, saying how to make one', async () => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  const plan: ServingPlan = { host: '127.0.0.1', port: 9443, certificate: await ephemeralWebhookServing('127.0.0.1') };
  assert.equal(callersOf({ port: 0, anyCaller: true }, plan, log), undefined);
  assert.equal(lines.length, 1);
  assert.deepEqual((({ level, msg }) => ({ level, msg }))(JSON.parse(lines[0]!) as { level: number; msg: string }), {
    level: 40,
    msg: 'the webhooks answer any caller that reaches them, not only the apiserver (--insecure-webhook-any-caller): publish their port to the apiserver alone',
  });
  assert.equal(callersOf({ port: 0 }, { ...plan, clientCa: 'PEM' }, log), 'PEM');
  const secret = { namespace: 'capt-system', name: 'capt-webhook-serving' };
  assert.throws(() => callersOf({ secret }, { ...plan, url: 'https://10.0.0.5:9443' }, log), {
    message:
      'Secret capt-system/capt-webhook-serving has no client-ca.crt (it was made by a capt init before the webhooks checked their caller): run capt init --kubeconfig FILE --webhook-url https://10.0.0.5:9443 again and give the apiserver the client certificate it adds, or start the bridge with --insecure-webhook-any-caller',
  });
  assert.equal(lines.length, 1, 'no warning when callers are checked');
});
