import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// What an operator filters on in the Temporal UI: `CaptCluster = "prod" AND CaptPhase = "Failed"`.
export const CaptKind = defineSearchAttributeKey('CaptKind', SearchAttributeType.KEYWORD);
export const CaptCluster = defineSearchAttributeKey('CaptCluster', SearchAttributeType.KEYWORD);
export const CaptNamespace = defineSearchAttributeKey('CaptNamespace', SearchAttributeType.KEYWORD);
export const CaptPhase = defineSearchAttributeKey('CaptPhase', SearchAttributeType.KEYWORD);
export const CaptKubernetesVersion = defineSearchAttributeKey('CaptKubernetesVersion', SearchAttributeType.KEYWORD);
export const CaptProvider = defineSearchAttributeKey('CaptProvider', SearchAttributeType.KEYWORD);

export const captSearchAttributes = [CaptKind, CaptCluster, CaptNamespace, CaptPhase, CaptKubernetesVersion, CaptProvider];

/** `--search-attribute Name=Keyword` arguments for `temporal server start-dev`. */
export function devServerSearchAttributeArgs(): string[] {
  return captSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]);
}
