import { makeContinueAsNewFunc, setWorkflowOptions, workflowInfo, type Workflow } from '@temporalio/workflow';

/**
 * capt's workflows are pinned: a run finishes on the build of capt it started on, whatever
 * `capt upgrade workers` makes current meanwhile. They move to a newer build only at continue-as-new.
 */
export const pinToBuild = (workflow: Workflow) => setWorkflowOptions({ versioningBehavior: 'PINNED' }, workflow);

/**
 * Continue-as-new onto the deployment's target build: the new run's first task goes to the current (or
 * ramping) build, which pins it from then on. Servers older than 1.30 keep the run on its own build.
 */
export function continueAsNewOnTargetBuild<F extends Workflow>(...args: Parameters<F>): Promise<never> {
  return makeContinueAsNewFunc<F>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(...args);
}

/**
 * An owner continues as new when its history is long, and as soon as a newer build became its target
 * (Temporal 1.30.2 and newer say so at the owner's next workflow task), so a cluster's owners follow an
 * upgrade of capt within one message or timer.
 */
export const ownerContinueAsNewDue = () =>
  workflowInfo().continueAsNewSuggested || workflowInfo().targetWorkerDeploymentVersionChanged;

/**
 * An owner's workflow task timeout: a task that must replay the owner's whole history (after its cache entry was
 * evicted, or a failed task) applies thousands of machine reports; at 5,000 workers on a loaded host that took
 * longer than Temporal's default 10 s, so every retry timed out and the owner never moved again (bench/README.md,
 * "One MachineDeployment of 5,000 workers"). Its continued runs keep it: the server carries a run's timeout over.
 */
export const ownerWorkflowTaskTimeout = '60 seconds';
