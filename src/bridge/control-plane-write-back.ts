import { ManifestError } from '../api/manifest-error';
import type { ClusterModel } from '../api/model';
import { waitingToStart, type ClusterView } from '../contract/cluster';
import { templateHash, type ControlPlaneRevision } from '../../workflows/control-plane/control-plane-revisions';
import { kubeadmConfigSpecObject } from './kubeadm-spec-object';
import type { ApiObject } from './management-client';
import type { WriteBack } from './template-write-back';

/**
 * The control plane runs another template than the objects make, with no change to it still on its way: a
 * `capt rollout undo` moved it back.
 */
export function controlPlaneUndone(model: ClusterModel, view: ClusterView): boolean {
  const running = view.controlPlane?.templateHash;
  const onItsWay = view.pending.some((p) => p.kind === 'KubeadmControlPlane' && waitingToStart(p));
  return !!running && !onItsWay && running !== templateHash(model.controlPlane);
}

/**
 * After a control plane's undo, nothing else waits but the workers held for the version it left: the objects may
 * then show what runs (the held MachineDeployments' objects the version their machines kept).
 */
export const onlyHeldForControlPlane = (view: ClusterView) =>
  view.pending.filter(waitingToStart).every((p) => p.reason === 'HeldForControlPlane');

type ControlPlaneSpec = {
  version: string;
  kubeadmConfigSpec?: Record<string, unknown>;
  machineTemplate: { spec: { infrastructureRef: { name: string } } };
};

/** The KubeadmControlPlane object with the revision's template in place (version, kubeadmConfigSpec, infrastructure template). */
function withRevision(o: ApiObject, template: ControlPlaneRevision['template']): ApiObject {
  const spec = o.spec as ControlPlaneSpec;
  const machineTemplate = spec.machineTemplate;
  return {
    ...o,
    spec: {
      ...o.spec,
      version: template.version,
      kubeadmConfigSpec: kubeadmConfigSpecObject(spec.kubeadmConfigSpec ?? {}, template.kubeadmConfigSpec),
      machineTemplate: {
        ...machineTemplate,
        spec: {
          ...machineTemplate.spec,
          infrastructureRef: { ...machineTemplate.spec.infrastructureRef, name: template.infrastructure.name },
        },
      },
    },
  };
}

/**
 * The control plane's object given the revision its workflow runs after an undo: its version, kubeadmConfigSpec
 * (the revision holds it whole) and infrastructure template's name, so the objects show what the workflows carry
 * out and the next change made with kubectl does not undo the undo. `load` makes the cluster of the objects with
 * the changed ones in place. When they cannot make that revision (its infrastructure template was changed or
 * deleted since), that is logged and the object left as it is.
 */
export async function writeBackControlPlane({ api, client, log, members, view, load }: WriteBack): Promise<void> {
  const o = members.find((m) => m.kind === 'KubeadmControlPlane' && m.metadata.name === view.controlPlane?.name);
  if (!o || !view.controlPlane) return;
  const { namespace, name } = o.metadata;
  const current = (await client.rolloutHistory('kubeadmcontrolplane', namespace, name)).at(-1);
  if (!current) return;
  const next = withRevision(o, current.template as ControlPlaneRevision['template']);
  let shown: string | undefined;
  try {
    shown = templateHash(load([next]).controlPlane);
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
  }
  if (shown !== view.controlPlane.templateHash) {
    log.warn(
      { controlPlane: `${namespace}/${name}`, revision: current.revision },
      'bridge: the control plane runs a revision its object cannot show: the template it names was changed or deleted since',
    );
    return;
  }
  // Not a replace: the object's resourceVersion moves with every status the bridge writes.
  const spec = next.spec as ControlPlaneSpec;
  await api.jsonPatch('KubeadmControlPlane', namespace, name, [
    { op: 'replace', path: '/spec/version', value: spec.version },
    { op: 'add', path: '/spec/kubeadmConfigSpec', value: spec.kubeadmConfigSpec },
    {
      op: 'replace',
      path: '/spec/machineTemplate/spec/infrastructureRef/name',
      value: spec.machineTemplate.spec.infrastructureRef.name,
    },
  ]);
  log.info(
    { controlPlane: `${namespace}/${name}`, revision: current.revision },
    'bridge: wrote the revision the control plane runs back to its object',
  );
}
