/**
 * capt's scheduled repave, Cluster API's proposed machine expiry (#10946), as an annotation so that it
 * survives the management API's CRD schemas: a MachineDeployment replaces its machines older than this.
 */
export const machineMaxAgeAnnotation = 'capt.cluster.x-k8s.io/machine-max-age';

/** The shortest max age: a machine must boot and serve a while before its replacement is due, or a repave never ends. */
export const minMachineMaxAgeSeconds = 30;

/** When a machine made at `createdAt` is due for replacement. */
export const repaveDueMs = (createdAt: string, maxAgeSeconds: number) => Date.parse(createdAt) + maxAgeSeconds * 1000;
