// Provider-independent activities, served on the capt-core task queue.
export { createBootstrapData } from './bootstrap/bootstrap-data';
export {
  requestInPlaceUpdates,
  requestMachineInPlaceUpdate,
  requestMachineDeletions,
  startMachineWorkflows,
} from './machine/machine-fan-out';
export { deliverMachineReport } from './machine/machine-reports';
export { countClusterMachines, listOwnedMachines, workflowStates } from './machine/owned-machines';
export { deleteNode, drainNode, syncNode, waitForNode, waitForVolumeDetach } from './machine/node-activities';
export { removeEtcdMember } from './etcd/etcd-activities';
export { certifyClusterAdmin, createClusterSecrets } from './bootstrap/cluster-secrets';
export { controlPlanePreflight } from './control-plane/preflight';
export { controlPlaneCertificateExpiry } from './control-plane/certificate-expiry';
export { watchNodeHealth } from './kube/node-health-watch';
export { checkClusterHealth } from './health/cluster-health';
export { clusterCertificateAuthorities } from './certificates/cluster-certificate-authorities';
export { maintenanceWindowAt } from './owner/maintenance-window';
export { applyAddonResources } from './addons/apply-addon-resources';
export { matchResourceSetClusters } from './addons/resource-set-clusters';
