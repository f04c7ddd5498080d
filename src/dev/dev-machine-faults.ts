import { captHome } from '../config/capt-home';
import { dnsNameRule, isDnsName } from '../util/checked-paths';
import { LocalProvider } from '../../providers/local/local-provider';
import { MachineFaultError, type MachineFault } from '../../providers/local/machine-faults';
import type { MachineRef } from '../../providers/provider';

/**
 * `capt dev break|repair machine`: failures on purpose on the local machines of this host (the dev stack's),
 * found by namespace and name as `capt get machines` lists them.
 */
export interface MachineFaultOutcome {
  ref: MachineRef;
  /** What is broken on the machine afterwards. */
  faults: MachineFault[];
}

async function located(provider: LocalProvider, namespace: string, name: string): Promise<MachineRef> {
  for (const [what, value] of [
    ['namespace', namespace],
    ['machine name', name],
  ] as const) {
    if (!isDnsName(value))
      throw new MachineFaultError(
        `${what} ${JSON.stringify(value.slice(0, 80))} ${dnsNameRule}; \`capt get machines -A\` lists the machines`,
        'Refused',
      );
  }
  const ref = await provider.findMachine(namespace, name);
  if (!ref) {
    throw new MachineFaultError(
      `no local machine ${namespace}/${name} on this host (CAPT_HOME ${captHome()}): \`capt get machines -A\` lists the machines; ` +
        'run this on the host of the dev stack, with its CAPT_HOME, and pass -n for another namespace',
      'NotFound',
    );
  }
  return ref;
}

/** Breaks (`fault` stopped) or repairs (`fault` undone; `all`: everything) a machine of this host. */
export async function changeDevMachine(
  action: 'break' | 'repair',
  namespace: string,
  name: string,
  fault: MachineFault,
): Promise<MachineFaultOutcome> {
  const provider = new LocalProvider();
  const ref = await located(provider, namespace, name);
  await (action === 'break' ? provider.breakMachine(ref, fault) : provider.repairMachine(ref, fault));
  return { ref, faults: await provider.machineFaults(ref) };
}
