import { z } from 'zod';
import { localCluster, localClusterTemplate, localMachine, localMachineTemplate } from '../api/kinds/local-provider';
import type { Json } from './capi-crds';

/**
 * capt's infrastructure kinds as CRDs. Each spec schema is derived from the zod schema capt parses the kind
 * with, so the apiserver accepts what `capt apply` accepts; the status follows Cluster API's v1beta2
 * infrastructure contract (initialization.provisioned, conditions, and a machine's addresses).
 */

const group = 'infrastructure.cluster.x-k8s.io';
const version = 'v1beta2';

/** Keywords a CRD's structural schema takes; zod's JSON Schema has more (additionalProperties: false, const, propertyNames). */
const kept = ['type', 'description', 'default', 'minimum', 'maximum', 'pattern', 'maxLength', 'enum', 'required'];

/** A JSON Schema of zod's, as a structural schema: unknown fields are pruned by the apiserver (and refused by kubectl's strict validation). */
function structural(schema: Json): Json {
  const out: Json = {};
  for (const key of kept) if (schema[key] !== undefined) out[key] = schema[key];
  if (schema.const !== undefined) out.enum = [schema.const];
  // zod bounds an integer by Number.MAX_SAFE_INTEGER; an int64 field needs no such bound.
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  const properties = schema.properties as Record<string, Json> | undefined;
  if (properties)
    out.properties = Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, structural(s)]));
  if (schema.items) out.items = structural(schema.items as Json);
  return out;
}

/** The spec schema of a kind's zod schema, as its input (before defaults and transforms). */
const specSchema = (schema: z.ZodType): Json =>
  structural((z.toJSONSchema(schema, { io: 'input' }).properties as { spec: Json }).spec);

/** metav1.Condition, as Cluster API's v1beta2 conditions are. */
const conditions: Json = {
  type: 'array',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  maxItems: 32,
  items: {
    type: 'object',
    required: ['type', 'status', 'lastTransitionTime', 'reason'],
    properties: {
      type: { type: 'string', maxLength: 316 },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
      observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
      lastTransitionTime: { type: 'string', format: 'date-time' },
      reason: { type: 'string', maxLength: 1024 },
      message: { type: 'string', maxLength: 32768 },
    },
  },
};

const initialization: Json = {
  type: 'object',
  description: 'Cluster API v1beta2 contract: provisioned is true once the infrastructure is ready.',
  properties: { provisioned: { type: 'boolean' } },
};

const addresses: Json = {
  type: 'array',
  maxItems: 32,
  items: {
    type: 'object',
    required: ['type', 'address'],
    properties: {
      type: { type: 'string', enum: ['Hostname', 'ExternalIP', 'InternalIP', 'ExternalDNS', 'InternalDNS'] },
      address: { type: 'string', maxLength: 256 },
    },
  },
};

interface ProviderKind {
  kind: string;
  plural: string;
  schema: z.ZodType;
  status?: Json;
}

const kinds: ProviderKind[] = [
  { kind: 'LocalCluster', plural: 'localclusters', schema: localCluster, status: { initialization, conditions } },
  {
    kind: 'LocalMachine',
    plural: 'localmachines',
    schema: localMachine,
    status: { initialization, conditions, addresses },
  },
  // A template has no status in Cluster API's contract.
  { kind: 'LocalMachineTemplate', plural: 'localmachinetemplates', schema: localMachineTemplate },
  { kind: 'LocalClusterTemplate', plural: 'localclustertemplates', schema: localClusterTemplate },
];

/** The CRDs of capt's local provider, labelled as Cluster API's contract asks of an infrastructure provider. */
export function localProviderCrds(): Json[] {
  return kinds.map(({ kind, plural, schema, status }) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${group}`,
      labels: { 'cluster.x-k8s.io/provider': 'infrastructure-local', [`cluster.x-k8s.io/${version}`]: version },
    },
    spec: {
      group,
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        categories: ['cluster-api'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          ...(status ? { subresources: { status: {} } } : {}),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `capt's ${kind} (local provider).`,
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: specSchema(schema),
                ...(status ? { status: { type: 'object', properties: status } } : {}),
              },
            },
          },
        },
      ],
    },
  }));
}
