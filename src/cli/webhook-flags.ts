import type { WebhookServing } from '../bridge/bridge-webhooks';
import { secretRefProblem, type SecretRef } from '../management-api/webhook-serving-secret';
import { hostAndPort, parseWebhookUrl, WebhookAddressError, type WebhookUrl } from '../management-api/webhook-url';
import type { FlagValues } from './flags';
import { UsageError } from './read-sources';

/** A refusal of the address parsers as bad input, naming the flag and its value. */
function asUsage<T>(flag: string, text: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof WebhookAddressError) throw new UsageError(`${flag} ${text}: ${err.message}`);
    throw err;
  }
}

/** `capt init --webhook-url https://HOST:PORT`. */
export const webhookUrlFlag = (text: string): WebhookUrl => asUsage('--webhook-url', text, () => parseWebhookUrl(text));

function secretFlag(text: string): SecretRef {
  const [namespace, name, ...more] = text.split('/');
  const ref = { namespace: namespace ?? '', name: name ?? '' };
  const problem = more.length || name === undefined ? 'expected NAMESPACE/NAME' : secretRefProblem(ref);
  if (problem)
    throw new UsageError(`--webhook-secret ${text}: ${problem}, e.g. capt-system/capt-webhook-serving (capt init's)`);
  return ref;
}

/**
 * `capt bridge`'s webhook flags: `--webhook-secret NS/NAME [--webhook-listen HOST:PORT]` serves what `capt
 * init --webhook-url` registered; with `--webhook-port`, `port` parses it and the bridge registers its own,
 * answering the client certificates `--webhook-client-ca` issued. `--insecure-webhook-any-caller` answers anyone.
 */
export function bridgeWebhookFlags(values: FlagValues, port: (text: string) => number): WebhookServing | undefined {
  const { webhookPort, webhookSecret, webhookListen, webhookClientCa, insecureWebhookAnyCaller } = values;
  const anyCaller = insecureWebhookAnyCaller === true;
  if (webhookPort !== undefined && webhookSecret !== undefined)
    throw new UsageError(
      '--webhook-port and --webhook-secret: choose one (--webhook-port registers webhooks of its own on 127.0.0.1, as capt dev start does; --webhook-secret serves those capt init --webhook-url registered)',
    );
  if (webhookListen !== undefined && webhookSecret === undefined)
    throw new UsageError(
      '--webhook-listen goes with --webhook-secret NAMESPACE/NAME (what capt init --webhook-url made)',
    );
  if (webhookPort === undefined && webhookSecret === undefined && (webhookClientCa !== undefined || anyCaller))
    throw new UsageError(
      `${anyCaller ? '--insecure-webhook-any-caller' : '--webhook-client-ca'} goes with --webhook-port or --webhook-secret`,
    );
  if (webhookClientCa !== undefined && (webhookSecret !== undefined || anyCaller))
    throw new UsageError(
      `--webhook-client-ca goes with --webhook-port alone (${anyCaller ? '--insecure-webhook-any-caller checks no caller' : "--webhook-secret takes the apiserver's client CA from the Secret"})`,
    );
  if (webhookPort !== undefined && webhookClientCa === undefined && !anyCaller)
    throw new UsageError(
      '--webhook-port needs --webhook-client-ca FILE: the CA of the client certificate the apiserver presents to webhooks (its --admission-control-config-file), so that only the apiserver is answered; --insecure-webhook-any-caller answers anyone',
    );
  const callers = anyCaller ? { anyCaller } : {};
  if (webhookPort !== undefined)
    return {
      port: port(webhookPort),
      ...(webhookClientCa === undefined ? {} : { clientCaFile: webhookClientCa }),
      ...callers,
    };
  if (webhookSecret === undefined) return undefined;
  const listen =
    webhookListen === undefined
      ? undefined
      : asUsage('--webhook-listen', webhookListen, () => hostAndPort(webhookListen, false));
  return {
    secret: secretFlag(webhookSecret),
    ...(listen ? { listen: { host: listen.host, port: listen.port } } : {}),
    ...callers,
  };
}
