import type { ControlPlaneModel, MachineDeploymentModel } from '../api/model';
import { machineCertificateDays } from '../contract/certificates';
import type { DeletionTimeouts } from '../contract/machine';
import { problem, type SpecProblem, type SpecSubject } from './spec-problem';
import { machineMaxAgeAnnotation, minMachineMaxAgeSeconds } from '../contract/machine-max-age';

/** The rules of a KubeadmControlPlane's and a MachineDeployment's own spec, whatever cluster they belong to. */

export const controlPlaneSubject = (namespace: string, name: string): SpecSubject => ({
  kind: 'KubeadmControlPlane',
  namespace,
  name,
});
export const machineDeploymentSubject = (namespace: string, name: string): SpecSubject => ({
  kind: 'MachineDeployment',
  namespace,
  name,
});

/** Drain, volume-detach and Node-deletion timeouts under `prefix` (the field holding them). */
export function deletionTimeoutProblems(
  subject: SpecSubject,
  prefix: string,
  timeouts: DeletionTimeouts,
): SpecProblem[] {
  return (['nodeDrainTimeoutSeconds', 'nodeVolumeDetachTimeoutSeconds', 'nodeDeletionTimeoutSeconds'] as const).flatMap(
    (field) => {
      const value = timeouts[field];
      if (value === undefined || (Number.isFinite(value) && value >= 0)) return [];
      return [
        problem(
          subject,
          `${prefix}.${field}`,
          `${field} must be a number of seconds >= 0 (0 means no limit), got ${value}`,
          'use 0 or more seconds',
        ),
      ];
    },
  );
}

/**
 * The most machines one owner runs: Kubernetes documents 5,000 Nodes per cluster. An owner carries its records
 * across continue-as-new in one payload (about 280 bytes a machine, so 10,000 of them with a rollout's surge
 * would pass Temporal's 2 MiB), and its name generator stays bounded (machine names have 16^5 suffixes).
 */
export const maxMachinesPerOwner = 5_000;

const tooMany = (subject: SpecSubject, replicas: number) => [
  problem(
    subject,
    'spec.replicas',
    `${replicas} replicas is more than the ${maxMachinesPerOwner} machines one owner runs`,
    'Kubernetes supports 5,000 Nodes per cluster: use fewer replicas, or more MachineDeployments or clusters',
  ),
];

/** Replicas with stacked etcd: at least one, odd, and 3 or more when a rollout deletes before it creates. */
export function controlPlaneReplicasProblems(
  subject: SpecSubject,
  replicas: number,
  maxSurge: ControlPlaneModel['maxSurge'],
): SpecProblem[] {
  if (!Number.isInteger(replicas) || replicas < 1) {
    return [
      problem(
        subject,
        'spec.replicas',
        `replicas must be a whole number >= 1, got ${replicas}`,
        'a control plane needs machines: use 1, 3 or 5',
      ),
    ];
  }
  if (replicas > maxMachinesPerOwner) return tooMany(subject, replicas);
  if (replicas % 2 === 0)
    return [
      problem(
        subject,
        'spec.replicas',
        `${replicas} replicas cannot keep etcd quorum`,
        'stacked etcd needs an odd count: use 1, 3 or 5',
      ),
    ];
  if (maxSurge === 0 && replicas < 3) {
    return [
      problem(
        subject,
        'spec.rollout.strategy.rollingUpdate.maxSurge',
        `maxSurge 0 (delete before create) needs at least 3 replicas, not ${replicas}`,
        'use maxSurge 1, or 3 or more replicas',
      ),
    ];
  }
  return [];
}

export function controlPlaneProblems(namespace: string, cp: ControlPlaneModel): SpecProblem[] {
  const subject = controlPlaneSubject(namespace, cp.name);
  const out: SpecProblem[] = [];
  if (cp.maxSurge !== 0 && cp.maxSurge !== 1) {
    out.push(
      problem(
        subject,
        'spec.rollout.strategy.rollingUpdate.maxSurge',
        `maxSurge ${cp.maxSurge}: KubeadmControlPlane supports maxSurge 0 or 1 only`,
        'use 1 (create, then delete) or 0 (delete first; needs 3 or more replicas)',
      ),
    );
  }
  out.push(...controlPlaneReplicasProblems(subject, cp.replicas, cp.maxSurge));
  const days = cp.certificatesExpiryDays;
  const daysPath = 'spec.rollout.before.certificatesExpiryDays';
  if (days !== undefined && (!Number.isInteger(days) || days < 7)) {
    out.push(
      problem(
        subject,
        daysPath,
        `certificatesExpiryDays ${days} must be a whole number of at least 7 days`,
        'use 7 or more days, e.g. 30',
      ),
    );
  } else if (days !== undefined && days >= machineCertificateDays) {
    const why = `the ${machineCertificateDays}-day validity of machine certificates, so every new machine would be replaced at once`;
    out.push(
      problem(
        subject,
        daysPath,
        `certificatesExpiryDays ${days} is not less than ${why}`,
        `use fewer than ${machineCertificateDays} days, e.g. 30`,
      ),
    );
  }
  out.push(...deletionTimeoutProblems(subject, 'spec.machineTemplate.spec.deletion', cp));
  out.push(...machineMaxAgeProblems(subject, cp));
  return out;
}

export function machineDeploymentReplicasProblems(subject: SpecSubject, replicas: number): SpecProblem[] {
  if (Number.isInteger(replicas) && replicas > maxMachinesPerOwner) return tooMany(subject, replicas);
  if (Number.isInteger(replicas) && replicas >= 0) return [];
  return [
    problem(
      subject,
      'spec.replicas',
      `replicas must be a whole number >= 0, got ${replicas}`,
      'use 0 or more machines',
    ),
  ];
}

export function machineDeploymentProblems(namespace: string, md: MachineDeploymentModel): SpecProblem[] {
  const subject = machineDeploymentSubject(namespace, md.name);
  const out = machineDeploymentReplicasProblems(subject, md.replicas);
  // As Cluster API's webhook: only both given as the number 0 is refused; percentages that round to 0 get maxUnavailable 1.
  if (md.strategy.type === 'RollingUpdate' && md.strategy.maxSurge === 0 && md.strategy.maxUnavailable === 0) {
    out.push(
      problem(
        subject,
        'spec.rollout.strategy.rollingUpdate',
        'maxSurge and maxUnavailable are both 0, so a rollout could never progress',
        'set maxSurge to at least 1 (the default) or maxUnavailable to at least 1',
      ),
    );
  }
  out.push(...deletionTimeoutProblems(subject, 'spec.template.spec.deletion', md.template));
  out.push(...machineMaxAgeProblems(subject, md));
  return out;
}

function machineMaxAgeProblems(
  subject: SpecSubject,
  owner: Pick<MachineDeploymentModel, 'machineMaxAgeSeconds'> & { strategy?: MachineDeploymentModel['strategy'] },
): SpecProblem[] {
  const age = owner.machineMaxAgeSeconds;
  if (age === undefined) return [];
  const path = `metadata.annotations[${machineMaxAgeAnnotation}]`;
  if (age < minMachineMaxAgeSeconds)
    return [
      problem(
        subject,
        path,
        `a machine max age of ${age}s would replace machines faster than they boot and serve`,
        `use ${minMachineMaxAgeSeconds}s or more (e.g. 720h), or remove the annotation`,
      ),
    ];
  if (owner.strategy?.type === 'OnDelete')
    return [
      problem(
        subject,
        path,
        'the OnDelete strategy replaces machines only as they are deleted, so no machine would be repaved',
        'use the RollingUpdate strategy, or remove the annotation',
      ),
    ];
  return [];
}
