/**
 * The labels every machine of an owner carries (Cluster API's names), beside its template's own: what a
 * MachineHealthCheck's selector is matched against. Where a template's label has one of these keys, capt's
 * wins. A MachineDeployment's machines also carry their MachineSet's name, which differs between revisions.
 */
export const controlPlaneMachineLabels = (
  cluster: string,
  controlPlane: string,
  templateLabels: Record<string, string> = {},
): Record<string, string> => ({
  ...templateLabels,
  'cluster.x-k8s.io/control-plane': '',
  'cluster.x-k8s.io/control-plane-name': controlPlane,
  'cluster.x-k8s.io/cluster-name': cluster,
});

export const machineDeploymentMachineLabels = (
  cluster: string,
  deployment: string,
  templateLabels: Record<string, string> = {},
): Record<string, string> => ({
  ...templateLabels,
  'cluster.x-k8s.io/deployment-name': deployment,
  'cluster.x-k8s.io/cluster-name': cluster,
});
