// The machine harness's workers: capt's workflows and the stand-in for its base cluster's workflow.
export * from '../../workflows';
export { clusterSecretsStandIn } from './cluster-secrets-stand-in';
