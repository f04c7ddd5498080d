import { defaultNodeStartupTimeoutSeconds } from '../contract/health-check';
import { at, labelClusterName, setDefault, type Defaulting } from './plain-object';

/**
 * A MachineHealthCheck as Cluster API's defaulting webhook leaves it: the cluster-name label, and
 * spec.checks.nodeStartupTimeoutSeconds (600, the value capt's loader assumes when it is not written).
 * v1beta2 has no other default here: no unhealthyLessThanOrEqualTo means every machine may be remediated.
 */
export const defaultHealthCheck: Defaulting = (mhc) => {
  const spec = at(mhc, 'spec');
  labelClusterName(at(mhc, 'metadata', 'labels'), spec);
  setDefault(at(spec, 'checks'), 'nodeStartupTimeoutSeconds', defaultNodeStartupTimeoutSeconds);
};
