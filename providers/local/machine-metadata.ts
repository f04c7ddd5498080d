/**
 * What a local machine learns about itself at boot, like a cloud's metadata service: written by the
 * provider to /run/capt/metadata.json inside the machine.
 */
export interface MachineMetadata {
  name: string;
  ip: string;
  providerID: string;
  kubernetesVersion: string;
  /** Host paths of this version's binaries; the machine sees the host's filesystem read-only. */
  kubernetesBin: string;
  etcdBinary: string;
}

export const metadataPathInMachine = '/run/capt/metadata.json';
export const stateDirInMachine = '/run/capt';
