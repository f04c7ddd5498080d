import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { failureConverterPath } from '../codec/data-converter';

const captRoot = join(__dirname, '../../..');

/** capt's version, from its package.json. */
export function captVersion(): string {
  return (JSON.parse(readFileSync(join(captRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * capt's workflow bundle. Webpack names each module by its path from its context, the working directory
 * unless set: rooted at capt's own directory, the same code bundles the same from wherever it is started.
 */
export function bundleCaptWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    failureConverterPath,
    webpackConfigHook: (config) => ({ ...config, context: captRoot }),
  });
}

/** The inline source map names files by absolute path, which says nothing about the code. */
const withoutSourceMap = (code: string) => code.replace(/\n\/\/# sourceMappingURL=.*$/s, '');

/**
 * The build id of a workflow bundle: capt's version and a short hash of the bundle's code. Workflow code
 * that changes is a new build; the same code in every process of an installation is the same build.
 */
export function buildIdOf(bundleCode: string): string {
  return `${captVersion()}-${createHash('sha256').update(withoutSourceMap(bundleCode)).digest('hex').slice(0, 12)}`;
}
