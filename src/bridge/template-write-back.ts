import type { Logger } from 'pino';
import { ManifestError } from '../api/manifest-error';
import type { ClusterModel, MachineTemplateModel } from '../api/model';
import type { CaptClient } from '../client/capt-client';
import type { ClusterView } from '../contract/cluster';
import { machineTemplateHash } from '../../workflows/machine-deployment/machine-sets';
import type { ApiObject, ManagementClient } from './management-client';

type TemplateSpec = {
  version?: string;
  failureDomain?: string;
  bootstrap?: { configRef?: { name: string } };
  infrastructureRef?: { name: string };
};

/** What a write-back reads and writes: the cluster's objects and workflows, and `load`, which makes the cluster of its objects with `changed` in place. */
export interface WriteBack {
  api: ManagementClient;
  client: CaptClient;
  log: Logger;
  members: ApiObject[];
  view: ClusterView;
  load: (changed: ApiObject[]) => ClusterModel;
}

/**
 * The fields of a MachineDeployment's template a revision names, as a merge patch (null removes): the rest of
 * it lives in the templates named.
 */
const templatePatchOf = (t: MachineTemplateModel) => ({
  version: t.version,
  failureDomain: t.failureDomain ?? null,
  bootstrap: { configRef: { name: t.bootstrap.name } },
  infrastructureRef: { name: t.infrastructure.name },
});

/**
 * A MachineDeployment whose workflow runs another template than its object names (a `capt rollout undo`):
 * the object is given the template of the revision it runs (version, failure domain and the names of its
 * bootstrap and infrastructure templates), so the objects show what the workflows carry out and the next
 * change made with kubectl does not undo the undo. When the templates those names point at were changed since
 * that revision, the names cannot bring it back: that is logged and the object is left as it is (the next
 * change to it applies its template, as between two kubectl users). Returns the objects it changed, as written.
 */
export async function writeBackTemplates({ api, client, log, members, view, load }: WriteBack): Promise<ApiObject[]> {
  const model = load([]);
  const changed: ApiObject[] = [];
  for (const o of members.filter((m) => m.kind === 'MachineDeployment')) {
    const { namespace, name } = o.metadata;
    const running = view.machineDeployments.find((md) => md.name === name)?.templateHash;
    const desired = model.machineDeployments.find((md) => md.name === name);
    if (!running || !desired || machineTemplateHash(desired.template) === running) continue;
    const current = (await client.rolloutHistory('machinedeployment', namespace, name)).at(-1);
    if (!current) continue;
    const spec = o.spec as { template: { spec: TemplateSpec } };
    const next = {
      ...o,
      spec: {
        ...o.spec,
        template: {
          ...spec.template,
          spec: mergeTemplateSpec(spec.template.spec, current.template as MachineTemplateModel),
        },
      },
    };
    const shown = shownTemplate(load, next);
    if (!shown || machineTemplateHash(shown) !== running) {
      log.warn(
        { machineDeployment: `${namespace}/${name}`, revision: current.revision },
        'bridge: the MachineDeployment runs a revision its object cannot show: the templates it names were changed or deleted since',
      );
      continue;
    }
    await api.patch('MachineDeployment', namespace, name, {
      spec: { template: { spec: templatePatchOf(current.template as MachineTemplateModel) } },
    });
    log.info(
      { machineDeployment: `${namespace}/${name}`, revision: current.revision },
      'bridge: wrote the revision the MachineDeployment runs back to its object',
    );
    changed.push(next);
  }
  return changed;
}

/** The template the MachineDeployment `next` makes, or undefined when the objects cannot make it (a template it names is gone). */
function shownTemplate(
  load: (changed: ApiObject[]) => ClusterModel,
  next: ApiObject,
): MachineTemplateModel | undefined {
  try {
    return load([next]).machineDeployments.find((md) => md.name === next.metadata.name)?.template;
  } catch (err) {
    if (err instanceof ManifestError) return undefined;
    throw err;
  }
}

/** The object's template spec with a revision's fields in place, as the merge patch leaves it. */
function mergeTemplateSpec(spec: TemplateSpec, t: MachineTemplateModel): TemplateSpec {
  const { failureDomain: _, ...rest } = spec;
  return {
    ...rest,
    version: t.version,
    ...(t.failureDomain ? { failureDomain: t.failureDomain } : {}),
    bootstrap: { ...spec.bootstrap, configRef: { ...spec.bootstrap?.configRef, name: t.bootstrap.name } },
    infrastructureRef: { ...spec.infrastructureRef, name: t.infrastructure.name },
  };
}
