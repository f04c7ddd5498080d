import { installedProviders } from './start-workers';

/**
 * What one worker process serves, from `capt worker --serve` (CAPT_WORKER_SERVES): `core` (the capt-core and
 * capt-owners queues) and/or provider names. Core workers can then run on several hosts while each provider's
 * worker stays on the host that holds its machines.
 */
export function workerServes(value: string | undefined): { core: boolean; providers: string[] } {
  const providers = installedProviders().map((p) => p.name);
  if (value === undefined || value.trim() === '') return { core: true, providers };
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = parts.filter((p) => p !== 'core' && !providers.includes(p));
  if (unknown.length > 0 || parts.length === 0) {
    throw new Error(
      `--serve ${value}: ${unknown.length ? `'${unknown.join("', '")}' is` : 'nothing is'} not something a worker serves; name core and/or providers (${providers.join(', ')}), comma-separated, e.g. --serve core or --serve local`,
    );
  }
  return { core: parts.includes('core'), providers: parts.filter((p) => p !== 'core') };
}
