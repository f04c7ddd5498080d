export { machineWorkflow } from './machine/machine-workflow';
