import type {
  ControlPlaneComponentConfig,
  KubeadmConfigSpec,
  NodeRegistrationOptions,
} from '../contract/kubeadm-config-spec';

type Json = Record<string, unknown>;

/** v1beta2's flags: a list of name and value, from capt's map. */
const argsList = (args: Record<string, string> | undefined) =>
  args && Object.entries(args).map(([name, value]) => ({ name, value }));

/** `fields` without its undefined values, or undefined when none is left. */
function defined(fields: Json): Json | undefined {
  const out = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  return Object.keys(out).length ? out : undefined;
}

const component = (c: ControlPlaneComponentConfig | undefined) =>
  c && defined({ extraArgs: argsList(c.extraArgs), extraVolumes: c.extraVolumes });

/** The object's nodeRegistration with capt's fields of it replaced (the others, which capt does not read, kept). */
function nodeRegistration(current: Json | undefined, r: NodeRegistrationOptions | undefined): Json | undefined {
  const { name: _n, taints: _t, kubeletExtraArgs: _k, ...kept } = current ?? {};
  return defined({ ...kept, name: r?.name, taints: r?.taints, kubeletExtraArgs: argsList(r?.kubeletExtraArgs) });
}

function phase(current: Json | undefined, model: { nodeRegistration?: NodeRegistrationOptions } | undefined) {
  const { nodeRegistration: was, ...kept } = current ?? {};
  return defined({ ...kept, nodeRegistration: nodeRegistration(was as Json | undefined, model?.nodeRegistration) });
}

/**
 * capt's model of a KubeadmConfigSpec in v1beta2's form, over the object's own spec: every field capt carries out
 * is the model's, and the few it accepts without reading (verbosity, imageRepository's empty value, a phase's
 * other fields) stay as the object has them. Loading the result gives the model back.
 */
export function kubeadmConfigSpecObject(current: Json, model: KubeadmConfigSpec): Json {
  const c = model.clusterConfiguration;
  const { imageRepository } = (current.clusterConfiguration ?? {}) as Json;
  return (
    defined({
      verbosity: current.verbosity,
      clusterConfiguration: defined({
        imageRepository,
        networking: c?.networking,
        apiServer: c?.apiServer && defined({ ...component(c.apiServer), certSANs: c.apiServer.certSANs }),
        controllerManager: component(c?.controllerManager),
        scheduler: component(c?.scheduler),
      }),
      initConfiguration: phase(current.initConfiguration as Json | undefined, model.initConfiguration),
      joinConfiguration: phase(current.joinConfiguration as Json | undefined, model.joinConfiguration),
      files: model.files,
      preKubeadmCommands: model.preKubeadmCommands,
      postKubeadmCommands: model.postKubeadmCommands,
      users: model.users,
      format: model.format,
    }) ?? {}
  );
}
