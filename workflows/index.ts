export { machineWorkflow } from './machine/machine-workflow';
export { controlPlaneWorkflow } from './control-plane/control-plane-workflow';
export { machineDeploymentWorkflow } from './machine-deployment/machine-deployment-workflow';
export { clusterWorkflow } from './cluster/cluster-workflow';
export { clusterHealthWorkflow } from './health/cluster-health-workflow';
export { certificateInventoryWorkflow } from './certificates/certificate-inventory-workflow';
export { clusterResourceSetWorkflow } from './addons/cluster-resource-set-workflow';
