import assert from 'node:assert/strict';
import { test } from 'node:test';
import { issueCertificate } from '../../src/pki/certificates';
import {
  authorityProblem,
  issueWebhookServing,
  newWebhookAuthority,
  servingProblem,
} from '../../src/pki/webhook-serving';
import { hostAndPort, parseWebhookUrl } from '../../src/management-api/webhook-url';

// Real certificates, made with openssl as init makes them: what init keeps and what it replaces.
test('a serving certificate is kept for the host it names, under its CA, outside its renewal margin; otherwise init says why not', async () => {
  const ca = await newWebhookAuthority();
  assert.equal(authorityProblem(ca), undefined);
  const byIp = await issueWebhookServing(ca, '10.0.0.5');
  assert.equal(servingProblem(byIp, ca.cert, '10.0.0.5', true), undefined);
  assert.equal(servingProblem(byIp, ca.cert, '10.0.0.6', true), 'it does not name 10.0.0.6 (IP Address:10.0.0.5)');
  const byName = await issueWebhookServing(ca, 'capt-webhook.example.com');
  assert.equal(servingProblem(byName, ca.cert, 'capt-webhook.example.com', true), undefined);
  assert.match(servingProblem(byName, ca.cert, 'other.example.com', true)!, /^it does not name other\.example\.com/);

  const other = await newWebhookAuthority();
  assert.equal(servingProblem(byIp, other.cert, '10.0.0.5', true), 'its CA did not sign it');
  assert.equal(
    servingProblem({ ...byIp, key: byName.key }, ca.cert, '10.0.0.5', true),
    "its key is not the certificate's",
  );
  assert.match(
    servingProblem({ ...byIp, cert: 'garbage' }, ca.cert, '10.0.0.5', true)!,
    /^it is not a PEM certificate/,
  );

  // Ten days left: init renews it (within 30 days of its end), a bridge still serves it.
  const ending = await issueCertificate(ca, {
    commonName: 'capt-webhook',
    ipAddresses: ['10.0.0.5'],
    usage: 'server',
    days: 10,
  });
  assert.match(servingProblem(ending, ca.cert, '10.0.0.5', true)!, /^it expires on \d{4}-\d\d-\d\d$/);
  assert.equal(servingProblem(ending, ca.cert, '10.0.0.5', false), undefined);
  // An authority must outlive a serving certificate issued now (a year and the margin), and be an authority.
  assert.match(authorityProblem(byIp)!, /^it expires on \d{4}-\d\d-\d\d$/);
  const longLeaf = await issueCertificate(ca, { commonName: 'not-a-ca', usage: 'server', days: 3650 });
  assert.equal(authorityProblem(longLeaf), 'it is not a certificate authority');
});

test('--webhook-url takes https://HOST:PORT only, and says what is wrong with anything else', () => {
  assert.deepEqual(parseWebhookUrl('https://10.0.0.5:9443'), {
    url: 'https://10.0.0.5:9443',
    host: '10.0.0.5',
    port: 9443,
  });
  assert.deepEqual(parseWebhookUrl('https://[FD00::5]:9443/'), {
    url: 'https://[fd00::5]:9443',
    host: 'fd00::5',
    port: 9443,
  });
  assert.deepEqual(parseWebhookUrl('https://Capt.Example.com:443'), {
    url: 'https://capt.example.com:443',
    host: 'capt.example.com',
    port: 443,
  });
  const refused: [string, string][] = [
    ['10.0.0.5:9443', 'not a URL: expected https://HOST:PORT, e.g. https://10.0.0.5:9443'],
    ['http://10.0.0.5:9443', 'http: the apiserver calls webhooks over https only; use https://HOST:PORT'],
    [
      'https://10.0.0.5:9443/x',
      '/x: no path, query or fragment; capt serves /mutate, /validate and /convert under https://HOST:PORT',
    ],
    [
      'https://10.0.0.5:9443?a=b',
      '?a=b: no path, query or fragment; capt serves /mutate, /validate and /convert under https://HOST:PORT',
    ],
    ['https://u:p@10.0.0.5:9443', 'no user or password: Kubernetes does not take them in a webhook URL'],
    ['https://10.0.0.5', 'no port: write 10.0.0.5:PORT'],
    ['https://10.0.0.5:0', 'port 0: expected 1 to 65535'],
    ['https://10.0.0.5:65536', 'port 65536: expected 1 to 65535'],
    // The URL parser would read this as 1.2.0.3: a certificate would then name another host than the one written.
    ['https://1.2.3:9443', '1.2.3: not an IP address or a DNS name'],
    ['https://under_score:9443', 'under_score: not an IP address or a DNS name'],
    ['https://[10.0.0.5]:9443', '10.0.0.5: not an IPv6 address'],
    ['https://:9443', 'an empty host: not an IP address or a DNS name'],
  ];
  for (const [text, message] of refused) assert.throws(() => parseWebhookUrl(text), { message }, text);
  assert.deepEqual(hostAndPort('0.0.0.0:9443', false), { host: '0.0.0.0', port: 9443, authority: '0.0.0.0:9443' });
  assert.throws(() => hostAndPort('capt.example.com:9443', false), {
    message: 'capt.example.com: not an IP address of this host, e.g. 0.0.0.0:9443',
  });
});
