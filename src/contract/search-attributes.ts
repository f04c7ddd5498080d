import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { coarsePhase, type MachinePhase, type MachineSpec } from './machine';

// What an operator filters on in the Temporal UI: `CaptCluster = "prod" AND CaptPhase = "Failed"`.
export const CaptKind = defineSearchAttributeKey('CaptKind', SearchAttributeType.KEYWORD);
export const CaptCluster = defineSearchAttributeKey('CaptCluster', SearchAttributeType.KEYWORD);
export const CaptNamespace = defineSearchAttributeKey('CaptNamespace', SearchAttributeType.KEYWORD);
export const CaptPhase = defineSearchAttributeKey('CaptPhase', SearchAttributeType.KEYWORD);
export const CaptKubernetesVersion = defineSearchAttributeKey('CaptKubernetesVersion', SearchAttributeType.KEYWORD);
export const CaptProvider = defineSearchAttributeKey('CaptProvider', SearchAttributeType.KEYWORD);
/** Machines only: their NodeHealthy condition (True or False), as the cluster's Node watch last saw it. */
export const CaptNodeHealthy = defineSearchAttributeKey('CaptNodeHealthy', SearchAttributeType.KEYWORD);

export const captSearchAttributes = [
  CaptKind,
  CaptCluster,
  CaptNamespace,
  CaptPhase,
  CaptKubernetesVersion,
  CaptProvider,
  CaptNodeHealthy,
];

/** Every capt attribute of one workflow, in one list: what a start sets and an upsert replaces. */
export function captAttributes(a: {
  kind: string;
  namespace: string;
  cluster: string;
  phase: string;
  version: string;
  provider: string;
}): SearchAttributePair[] {
  return [
    { key: CaptKind, value: a.kind },
    { key: CaptNamespace, value: a.namespace },
    { key: CaptCluster, value: a.cluster },
    { key: CaptPhase, value: a.phase },
    { key: CaptKubernetesVersion, value: a.version },
    { key: CaptProvider, value: a.provider },
  ];
}

/** A machine's attributes; CaptPhase carries the coarse phase (Provisioning until Running). */
export const machineSearchAttributes = (
  spec: MachineSpec,
  phase: MachinePhase,
  nodeHealthy = 'False',
): SearchAttributePair[] => [
  ...captAttributes({
    kind: 'Machine',
    namespace: spec.namespace,
    cluster: spec.cluster,
    phase: coarsePhase(phase),
    version: spec.version,
    provider: spec.provider,
  }),
  { key: CaptNodeHealthy, value: nodeHealthy },
];

/** `--search-attribute Name=Keyword` arguments for `temporal server start-dev`. */
export function devServerSearchAttributeArgs(): string[] {
  return captSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]);
}
