/** Workflow IDs an operator can guess: one spelling, used by workflows, client, CLI and tests alike. */
export const clusterWorkflowId = (namespace: string, name: string) => `cluster/${namespace}/${name}`;
export const controlPlaneWorkflowId = (namespace: string, name: string) => `kcp/${namespace}/${name}`;
export const machineDeploymentWorkflowId = (namespace: string, name: string) => `md/${namespace}/${name}`;
/** A control plane's or MachineDeployment's workflow, by the kind an OwnerSummary names. */
export const ownerWorkflowId = (kind: 'KubeadmControlPlane' | 'MachineDeployment', namespace: string, name: string) =>
  (kind === 'MachineDeployment' ? machineDeploymentWorkflowId : controlPlaneWorkflowId)(namespace, name);
export const machineWorkflowId = (namespace: string, name: string) => `machine/${namespace}/${name}`;
/** One `capt health cluster` check; `id` tells the checks of a cluster apart. */
export const clusterHealthWorkflowId = (namespace: string, cluster: string, id: string) =>
  `health/${namespace}/${cluster}/${id}`;
/** One page of one `capt get certificates` for a cluster; `id` tells the requests and pages apart. */
export const certificateInventoryWorkflowId = (namespace: string, cluster: string, id: string) =>
  `certificates/${namespace}/${cluster}/${id}`;

/** The machine workflow's type name, for starting it by name where the workflow itself cannot be imported. */
export const machineWorkflowType = 'machineWorkflow';
/** A ClusterResourceSet's workflow. */
export const resourceSetWorkflowId = (namespace: string, name: string) => `crs/${namespace}/${name}`;
