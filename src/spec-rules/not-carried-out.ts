/**
 * Kinds capt reads but does not carry out yet: refused with the reason, never accepted and ignored.
 * A kind leaves this table when capt implements it.
 */
export const kindsNotCarriedOut: Record<string, { message: string; hint: string }> = {
  Machine: {
    message: 'a Machine of its own (outside a MachineDeployment or control plane) is not carried out by capt yet',
    hint: 'declare workers with a MachineDeployment (replicas: 1 for a single machine)',
  },
};
