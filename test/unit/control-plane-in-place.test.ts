import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel, ControlPlaneModel } from '../../src/api/model';
import { inPlaceUpdatesAnnotation, type InPlaceCapability } from '../../src/contract/in-place';
import { MachinePhase } from '../../src/contract/machine';
import { previewApply, type RunningOwners } from '../../workflows/cluster/apply-preview';
import { diffClusterModels } from '../../workflows/cluster/cluster-diff';
import { controlPlaneInPlace } from '../../workflows/control-plane/control-plane-in-place';
import {
  controlPlaneMachineHash,
  templateHash,
  templateOf,
} from '../../workflows/control-plane/control-plane-revisions';
import { machineTemplateHash } from '../../workflows/machine-deployment/machine-sets';
import { newRecord } from '../../workflows/shared/machine-pool';

const quickstart = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
const load = (text = quickstart) =>
  loadManifests([{ file: 'quickstart.yaml', text }], { CLUSTER_NAME: 'q', KUBERNETES_VERSION: 'v1.35.4' })[0]!;
const local: InPlaceCapability = { worker: ['version', 'kubeletExtraArgs'], controlPlane: ['kubeletExtraArgs'] };

/** The control plane with `args` added to its kubelets' arguments in the init or join configuration. */
function withArgs(cp: ControlPlaneModel, from: 'init' | 'join', args: Record<string, string>): ControlPlaneModel {
  const next = structuredClone(cp);
  const section =
    from === 'init' ? next.kubeadmConfigSpec.initConfiguration! : next.kubeadmConfigSpec.joinConfiguration!;
  section.nodeRegistration = {
    ...section.nodeRegistration,
    kubeletExtraArgs: { ...section.nodeRegistration?.kubeletExtraArgs, ...args },
  };
  return next;
}

const verdict = (
  before: ControlPlaneModel,
  after: ControlPlaneModel,
  capability: InPlaceCapability | undefined = local,
) => controlPlaneInPlace(capability, after, { template: templateOf(before) }, { template: templateOf(after) });

test("a control plane takes new kubelet arguments (init's or join's) in place; anything else only by new machines", () => {
  const cp = load().controlPlane;
  assert.deepEqual(verdict(cp, withArgs(cp, 'init', { 'max-pods': '200' })), { inPlace: true });
  assert.deepEqual(verdict(cp, withArgs(cp, 'join', { 'max-pods': '200' })), { inPlace: true });
  const refused = (after: ControlPlaneModel, why: RegExp, capability?: InPlaceCapability) => {
    const v = verdict(cp, after, capability);
    assert.equal(v.inPlace, false);
    assert.match((v as { why: string }).why, why);
  };
  refused(
    withArgs(cp, 'join', { 'node-labels': 'a=b' }),
    /node-labels changed, which a kubelet reads only when it registers/,
  );
  refused({ ...cp, version: 'v1.36.3' }, /replaces control-plane machines to change their version/);
  refused(
    { ...withArgs(cp, 'join', { 'max-pods': '200' }), version: 'v1.36.3' },
    /replaces control-plane machines to change their version/,
  );
  refused(
    { ...cp, kubeadmConfigSpec: { ...cp.kubeadmConfigSpec, preKubeadmCommands: ['echo hi'] } },
    /kubeadmConfigSpec changed beyond the kubelet's arguments/,
  );
  refused(
    { ...cp, infrastructure: { ...cp.infrastructure, spec: { bootDelaySeconds: 1 } } },
    /infrastructure template changed/,
  );
  refused(
    { ...withArgs(cp, 'init', { 'max-pods': '200' }), inPlaceUpdates: false },
    /turned off for this KubeadmControlPlane/,
  );
  refused(withArgs(cp, 'init', { 'max-pods': '200' }), /updates no control-plane machine in place/, {
    worker: ['version', 'kubeletExtraArgs'],
    controlPlane: [],
  });
  assert.deepEqual(
    controlPlaneInPlace(
      undefined,
      cp,
      { template: templateOf(cp) },
      { template: templateOf(withArgs(cp, 'init', { 'max-pods': '200' })) },
    ),
    { inPlace: false, why: 'the provider updates no control-plane machine in place' },
    'a cluster made before providers said what they update in place',
  );
  refused(cp, /nothing that a machine takes in place changed/);
  const restarted = controlPlaneInPlace(
    local,
    cp,
    { template: templateOf(cp) },
    { template: templateOf(withArgs(cp, 'init', { 'max-pods': '200' })), restartedAt: '2026-06-01T00:00:00Z' },
  );
  assert.deepEqual(restarted, { inPlace: false, why: 'a restart asks for new machines' });
});

test(`the dry run names control-plane machines updated in place, and says why when ${inPlaceUpdatesAnnotation} turns it off`, () => {
  const base = load();
  const running = (model: ClusterModel, capability = local): RunningOwners => ({
    controlPlane: {
      version: model.controlPlane.version,
      replicas: 2,
      paused: false,
      inPlace: capability,
      machines: [
        {
          ...newRecord(
            'q-cp-a',
            controlPlaneMachineHash(model.controlPlane, undefined),
            'v1.35.4',
            '2026-06-01T10:00:00Z',
          ),
          phase: MachinePhase.Running,
        },
        {
          ...newRecord(
            'q-cp-b',
            controlPlaneMachineHash(model.controlPlane, undefined),
            'v1.35.4',
            '2026-06-01T10:00:00Z',
          ),
          phase: MachinePhase.Running,
          marked: true,
        },
      ],
    },
    machineDeployments: {},
  });
  const preview = (next: ClusterModel, capability = local) =>
    previewApply(
      base,
      next,
      diffClusterModels(base, next, {
        controlPlane: templateHash(base.controlPlane),
        machineDeployments: { 'q-md-0': machineTemplateHash(base.machineDeployments[0]!.template) },
      }),
      running(base, capability),
      Date.parse('2026-06-01T12:00:00Z'),
    ).controlPlane;
  const next = { ...base, controlPlane: withArgs(base.controlPlane, 'join', { 'max-pods': '200' }) };
  // The machine marked for deletion is replaced, the other updated where it runs.
  assert.deepEqual(preview(next), { replaced: ['q-cp-b'], updatedInPlace: ['q-cp-a'], added: 0, removed: 0 });
  const optedOut = { ...next, controlPlane: { ...next.controlPlane, inPlaceUpdates: false as const } };
  assert.deepEqual(preview(optedOut), {
    replaced: ['q-cp-a', 'q-cp-b'],
    replacedWhy: 'in-place updates are turned off for this KubeadmControlPlane',
    added: 0,
    removed: 0,
  });
});

test(`${inPlaceUpdatesAnnotation} on a KubeadmControlPlane takes "true" or "false", and is refused otherwise where it is written`, () => {
  const annotated = (value: string) =>
    quickstart.replace(
      /(kind: KubeadmControlPlane\nmetadata:\n)/,
      `$1  annotations:\n    ${inPlaceUpdatesAnnotation}: "${value}"\n`,
    );
  assert.equal(load(annotated('false')).controlPlane.inPlaceUpdates, false);
  assert.equal(load(annotated('true')).controlPlane.inPlaceUpdates, undefined, 'the default: no field');
  assert.throws(
    () => load(annotated('maybe')),
    new RegExp(
      `KubeadmControlPlane/q-control-plane at metadata\\.annotations\\.${inPlaceUpdatesAnnotation.replace(/\./g, '\\.')}: "maybe" is not a value it takes`,
    ),
  );
});
