import type { Json } from './capi-crds';

/**
 * The ClusterRoles an operator binds in a tenant's namespace (a RoleBinding, so they grant nothing elsewhere),
 * as Cluster API's users give teams its kinds: derived from the CRDs capt serves, so a kind added there is
 * covered here. Status is read-only: the bridge writes it, and a tenant must not fake a cluster's Available.
 */

/** Manages Cluster API's objects in the namespace it is bound in, scales them, and reads their kubeconfig Secrets. */
export const tenantRole = 'capt-tenant';
/** Reads Cluster API's objects in the namespace it is bound in; no Secrets (a cluster's kubeconfig is its admin key). */
export const tenantViewRole = 'capt-tenant-view';

const read = ['get', 'list', 'watch'];
const write = ['create', 'update', 'patch', 'delete', 'deletecollection'];

interface CrdSpec {
  group: string;
  scope: string;
  names: { plural: string };
  versions: { served: boolean; subresources?: { scale?: unknown; status?: unknown } }[];
}

interface ServedKind {
  group: string;
  plural: string;
  scale: boolean;
  status: boolean;
}

/** The namespaced kinds of the CRDs (a cluster-scoped one cannot be granted by a RoleBinding), by group. */
function servedKinds(crds: Json[]): Map<string, ServedKind[]> {
  const byGroup = new Map<string, ServedKind[]>();
  for (const crd of crds) {
    const spec = crd.spec as CrdSpec;
    if (spec.scope !== 'Namespaced') continue;
    const served = spec.versions.filter((v) => v.served);
    const kind = {
      group: spec.group,
      plural: spec.names.plural,
      scale: served.some((v) => v.subresources?.scale),
      status: served.some((v) => v.subresources?.status),
    };
    byGroup.set(spec.group, [...(byGroup.get(spec.group) ?? []), kind]);
  }
  return byGroup;
}

const rule = (group: string, resources: string[], verbs: string[]) =>
  resources.length ? [{ apiGroups: [group], resources: resources.sort(), verbs }] : [];

/** Per group: the kinds (with `verbs`), their status (read) and, when `scaleVerbs` is given, their scale subresource. */
function kindRules(crds: Json[], verbs: string[], scaleVerbs?: string[]): Json[] {
  return [...servedKinds(crds)]
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([group, kinds]) => [
      ...rule(
        group,
        kinds.map((k) => k.plural),
        verbs,
      ),
      ...rule(
        group,
        kinds.filter((k) => k.status).map((k) => `${k.plural}/status`),
        read,
      ),
      ...(scaleVerbs
        ? rule(
            group,
            kinds.filter((k) => k.scale).map((k) => `${k.plural}/scale`),
            scaleVerbs,
          )
        : []),
    ]);
}

/** What `kubectl describe` and a tenant looking at its own quota read, in both roles. */
const namespaceReads: Json[] = [
  { apiGroups: [''], resources: ['events', 'resourcequotas'], verbs: read },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: read },
];

const clusterRole = (name: string, rules: Json[]): Json => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name },
  rules,
});

/** capt-tenant and capt-tenant-view over the kinds of `crds`. */
export function tenantClusterRoles(crds: Json[]): Json[] {
  return [
    clusterRole(tenantRole, [
      ...kindRules(crds, [...read, ...write], ['get', 'update', 'patch']),
      // RBAC cannot name Secrets by pattern: `<cluster>-kubeconfig` is read as any Secret of the namespace.
      { apiGroups: [''], resources: ['secrets'], verbs: read },
      ...namespaceReads,
    ]),
    clusterRole(tenantViewRole, [...kindRules(crds, read), ...namespaceReads]),
  ];
}

/** What `capt dev start` and `capt init` say once the roles are applied. */
export const tenantRolesApplied = (roles: string[]) =>
  `tenant ClusterRoles applied: ${roles.join(', ')} (bind one in a tenant's namespace with kubectl create rolebinding)`;
