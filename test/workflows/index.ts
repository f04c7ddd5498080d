export { smokeWorkflow } from './smoke-workflow';
