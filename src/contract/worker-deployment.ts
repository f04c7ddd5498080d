/** The worker deployment every capt worker joins: each build of capt is one version of it. */
export const captDeploymentName = 'capt';

/** A build as Temporal's TemporalWorkerDeploymentVersion search attribute names it. */
export const deploymentVersionValue = (buildId: string) => `${captDeploymentName}:${buildId}`;
