import { UsageError } from './read-sources';

/** `capt generate cluster --flavor`: the template's variants, as clusterctl names them, by control-plane size. */
const flavors: Record<string, { controlPlane: number; says: string }> = {
  development: { controlPlane: 1, says: '1 control-plane machine' },
  ha: { controlPlane: 3, says: '3 control-plane machines, or any odd number from 3' },
};

/** The control-plane machine count for a flavor (development when none), refusing a count the flavor contradicts. */
export function controlPlaneMachineCount(flavor = 'development', explicit?: string): string {
  const chosen = flavors[flavor];
  const known = Object.entries(flavors)
    .map(([name, f]) => `${name} (${f.says})`)
    .join(', ');
  if (!chosen) throw new UsageError(`--flavor ${flavor}: no such flavor; flavors are ${known}`);
  if (explicit === undefined) return String(chosen.controlPlane);
  const n = Number(explicit);
  if (flavor === 'ha' && !(Number.isInteger(n) && n >= 3 && n % 2 === 1)) {
    throw new UsageError(
      `--control-plane-machine-count ${explicit} contradicts --flavor ha: use an odd number from 3, or --flavor development`,
    );
  }
  return explicit;
}
