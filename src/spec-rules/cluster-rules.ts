import type { ClusterModel } from '../api/model';
import { cidrsOverlap, parseClusterCidr } from '../contract/ipv4-cidr';
import { clusterFailureDomains } from '../contract/provider-offers';
import { oldestVersion } from '../contract/upgrade-plan';
import {
  newerMinor,
  topologyVersionChangeProblems,
  upgradeUnderWayProblems,
  versionChangeProblems,
} from './kubernetes-version';
import {
  controlPlaneProblems,
  controlPlaneSubject,
  machineDeploymentProblems,
  machineDeploymentSubject,
} from './owner-rules';
import { healthCheckProblems } from './health-check-rules';
import { standaloneMachineChangeProblems, standaloneMachineProblems } from './machine-rules';
import { problem, type SpecProblem, type SpecSubject } from './spec-problem';

/**
 * The rules of a whole cluster: the manifest loader checks a new cluster with `clusterProblems`, and the
 * cluster workflow's update validator checks an apply to a running one with `clusterChangeProblems`.
 */

const clusterSubject = (model: ClusterModel): SpecSubject => ({
  kind: 'Cluster',
  namespace: model.namespace,
  name: model.name,
});

/** MachineDeployments of one cluster: each is a workflow and a record in the cluster's state, which stays small. */
export const maxMachineDeployments = 100;
/** Machines of a cluster's own (outside any owner), likewise. */
export const maxStandaloneMachines = 100;
/** Kubernetes' limit on a label value: these names are label values on every machine and Node. */
const labelValueLength = 63;

function sizeProblems(model: ClusterModel): SpecProblem[] {
  const out: SpecProblem[] = [];
  const named = [
    [clusterSubject(model), model.name],
    [controlPlaneSubject(model.namespace, model.controlPlane.name), model.controlPlane.name],
    ...model.machineDeployments.map((md) => [machineDeploymentSubject(model.namespace, md.name), md.name] as const),
  ] as const;
  for (const [subject, name] of named) {
    if (name.length > labelValueLength)
      out.push(
        problem(
          subject,
          'metadata.name',
          `the name is ${name.length} characters; its machines carry it as a label value, which Kubernetes limits to ${labelValueLength}`,
          `use a name of at most ${labelValueLength} characters`,
        ),
      );
  }
  if (model.machineDeployments.length > maxMachineDeployments) {
    out.push(
      problem(
        clusterSubject(model),
        'spec',
        `${model.machineDeployments.length} MachineDeployments, more than the ${maxMachineDeployments} one cluster takes`,
        'use fewer, larger MachineDeployments, or more clusters',
      ),
    );
  }
  const [services, pods] = [parseClusterCidr(model.serviceSubnet), parseClusterCidr(model.podSubnet)];
  if (typeof services !== 'string' && typeof pods !== 'string' && cidrsOverlap(services, pods)) {
    out.push(
      problem(
        clusterSubject(model),
        networkFields.podSubnet,
        `the pod network ${model.podSubnet} overlaps the service network ${model.serviceSubnet}`,
        'give pods and Services disjoint ranges, e.g. 10.244.0.0/16 and 10.96.0.0/12',
      ),
    );
  }
  if ((model.machines?.length ?? 0) > maxStandaloneMachines) {
    out.push(
      problem(
        clusterSubject(model),
        'spec',
        `${model.machines!.length} Machines of its own, more than the ${maxStandaloneMachines} one cluster takes`,
        'put workers in a MachineDeployment',
      ),
    );
  }
  return out;
}

/** Every rule of a cluster's desired state, its control plane's and its MachineDeployments'. */
export function clusterProblems(model: ClusterModel): SpecProblem[] {
  const { namespace, controlPlane } = model;
  const out = [...sizeProblems(model), ...controlPlaneProblems(namespace, controlPlane)];
  for (const m of model.machines ?? []) out.push(...standaloneMachineProblems(namespace, m.name, m.template));
  for (const check of [controlPlane.healthCheck, ...model.machineDeployments.map((md) => md.healthCheck)])
    if (check) out.push(...healthCheckProblems(namespace, check));
  const domains = clusterFailureDomains(model.infrastructure.spec).map((d) => d.name);
  const domainProblem = (subject: SpecSubject, path: string, failureDomain: string | undefined) =>
    failureDomain !== undefined && !domains.includes(failureDomain)
      ? [
          problem(
            subject,
            path,
            `failure domain ${failureDomain} is not one the ${model.infrastructure.kind} declares`,
            domains.length
              ? `use one of ${domains.join(', ')}, or declare it in the ${model.infrastructure.kind}'s spec.failureDomains`
              : `declare it in the ${model.infrastructure.kind}'s spec.failureDomains (a name, and controlPlane: true for control-plane machines), or remove the field`,
          ),
        ]
      : [];
  for (const m of model.machines ?? [])
    out.push(
      ...domainProblem({ kind: 'Machine', namespace, name: m.name }, 'spec.failureDomain', m.template.failureDomain),
    );
  for (const md of model.machineDeployments) {
    const subject = machineDeploymentSubject(namespace, md.name);
    out.push(...machineDeploymentProblems(namespace, md));
    const { failureDomain, version } = md.template;
    out.push(...domainProblem(subject, 'spec.template.spec.failureDomain', failureDomain));
    if (newerMinor(version, controlPlane.version)) {
      out.push(
        problem(
          subject,
          'spec.template.spec.version',
          `workers at ${version} would be newer than the control plane at ${controlPlane.version}`,
          'upgrade the control plane first; kubelets may not be newer than the apiserver',
          'UnsupportedVersion',
        ),
      );
    }
  }
  return out;
}

const networkFields = {
  serviceSubnet: 'spec.clusterNetwork.services.cidrBlocks',
  podSubnet: 'spec.clusterNetwork.pods.cidrBlocks',
  serviceDomain: 'spec.clusterNetwork.serviceDomain',
} as const;

/**
 * What an apply may not do to a running cluster, then every rule of the new state. `runningVersion` is the
 * control plane's version now (an undo may have moved it off the last applied one); `stepsLeft`, the versions a
 * chained upgrade has still to give the control plane.
 */
export function clusterChangeProblems(
  current: ClusterModel,
  next: ClusterModel,
  runningVersion = current.controlPlane.version,
  stepsLeft: readonly string[] = [],
): SpecProblem[] {
  const cluster = clusterSubject(current);
  const out: SpecProblem[] = [];
  if (next.provider !== current.provider) {
    out.push(
      problem(
        cluster,
        'spec.infrastructureRef.kind',
        `the provider cannot change (${current.provider} -> ${next.provider})`,
        'create a new cluster on the other provider',
      ),
    );
  }
  if (next.controlPlane.name !== current.controlPlane.name) {
    out.push(
      problem(
        cluster,
        'spec.controlPlaneRef.name',
        `the control plane cannot be replaced (${current.controlPlane.name} -> ${next.controlPlane.name})`,
        `keep ${current.controlPlane.name} and change its spec instead`,
      ),
    );
  }
  // kubeadm fixes the cluster's networks at init: a change would reach new machines only, splitting the cluster.
  for (const [field, path] of Object.entries(networkFields) as [keyof typeof networkFields, string][]) {
    if (current[field] !== undefined && next[field] !== current[field]) {
      out.push(
        problem(
          cluster,
          path,
          `clusterNetwork cannot change on a running cluster (${field} ${current[field]} -> ${next[field]})`,
          `keep ${current[field]}, or create a new cluster for another network`,
        ),
      );
    }
  }
  out.push(
    ...(next.topology
      ? topologyVersionChangeProblems(
          clusterSubject(next),
          runningVersion,
          next.controlPlane.version,
          next.topology.kubernetesVersions,
          oldestVersion(current.machineDeployments.map((md) => md.template.version)),
        )
      : versionChangeProblems(
          controlPlaneSubject(next.namespace, next.controlPlane.name),
          'spec.version',
          runningVersion,
          next.controlPlane.version,
        )),
    ...upgradeUnderWayProblems(
      clusterSubject(next),
      current.controlPlane.version,
      next.controlPlane.version,
      stepsLeft,
    ),
  );
  const domains = (m: ClusterModel) => JSON.stringify(clusterFailureDomains(m.infrastructure.spec));
  if (domains(next) !== domains(current))
    out.push(
      problem(
        { kind: next.infrastructure.kind, namespace: next.namespace, name: next.infrastructure.name },
        'spec.failureDomains',
        'the failure domains cannot change on a running cluster: its machines were placed by them',
        `keep ${
          clusterFailureDomains(current.infrastructure.spec)
            .map((d) => d.name)
            .join(', ') || 'none'
        }, or create a new cluster for other domains`,
      ),
    );
  for (const m of next.machines ?? []) {
    const was = current.machines?.find((c) => c.name === m.name);
    if (was) out.push(...standaloneMachineChangeProblems(next.namespace, m.name, was.template, m.template));
  }
  return [...out, ...clusterProblems(next)];
}
