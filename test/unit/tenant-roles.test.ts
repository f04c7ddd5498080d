import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Json } from '../../src/management-api/capi-crds';
import { localProviderCrds } from '../../src/management-api/provider-crds';
import { tenantClusterRoles, tenantRole, tenantViewRole } from '../../src/management-api/tenant-roles';

/** A CRD as Cluster API ships one, reduced to what the roles are derived from. */
const crd = (group: string, plural: string, scope: string, versions: Json[]): Json => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}` },
  spec: { group, scope, names: { plural }, versions },
});

const crds = [
  crd('cluster.x-k8s.io', 'clusters', 'Namespaced', [{ served: true, subresources: { status: {} } }]),
  crd('cluster.x-k8s.io', 'machinedeployments', 'Namespaced', [
    { served: false, subresources: {} },
    { served: true, subresources: { status: {}, scale: {} } },
  ]),
  // Served only in v1beta1 (not served by capt yet): its scale is not granted.
  crd('cluster.x-k8s.io', 'machinepools', 'Namespaced', [
    { served: false, subresources: { scale: {} } },
    { served: true, subresources: { status: {} } },
  ]),
  crd('runtime.cluster.x-k8s.io', 'extensionconfigs', 'Cluster', [{ served: true, subresources: { status: {} } }]),
  ...localProviderCrds(),
];

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** Whether a role's rules allow `verb` on `resource` (with its subresource) of `group`, as RBAC evaluates them. */
function allows(roleName: string, group: string, resource: string, verb: string): boolean {
  const role = tenantClusterRoles(crds).find((r) => (r.metadata as { name: string }).name === roleName)!;
  return (role.rules as Rule[]).some(
    (r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb),
  );
}

test('capt-tenant manages every namespaced kind served, scales through the scale subresource and reads their kubeconfig Secrets', () => {
  for (const verb of ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete'])
    assert.ok(allows(tenantRole, 'cluster.x-k8s.io', 'clusters', verb), `${verb} clusters`);
  for (const resource of ['localclusters', 'localmachines', 'localmachinetemplates'])
    assert.ok(allows(tenantRole, 'infrastructure.cluster.x-k8s.io', resource, 'create'), resource);
  for (const verb of ['get', 'update', 'patch'])
    assert.ok(allows(tenantRole, 'cluster.x-k8s.io', 'machinedeployments/scale', verb), `${verb} scale`);
  assert.ok(!allows(tenantRole, 'cluster.x-k8s.io', 'machinepools/scale', 'update'), 'scale of an unserved version');
  assert.ok(allows(tenantRole, '', 'secrets', 'get'));
  assert.ok(!allows(tenantRole, '', 'secrets', 'create'), 'Secrets are read only');
  assert.ok(allows(tenantRole, '', 'resourcequotas', 'get'), 'a tenant sees its quota');
});

test('no tenant role writes status (the bridge does) or names a cluster-scoped kind (a RoleBinding cannot grant it)', () => {
  for (const role of [tenantRole, tenantViewRole]) {
    assert.ok(allows(role, 'cluster.x-k8s.io', 'clusters/status', 'get'));
    assert.ok(allows(role, 'infrastructure.cluster.x-k8s.io', 'localmachines/status', 'get'));
    for (const verb of ['update', 'patch'])
      assert.ok(!allows(role, 'cluster.x-k8s.io', 'clusters/status', verb), `${role} ${verb} status`);
    assert.ok(!allows(role, 'runtime.cluster.x-k8s.io', 'extensionconfigs', 'get'), `${role} extensionconfigs`);
  }
});

test('capt-tenant-view reads the kinds and writes nothing, Secrets included', () => {
  assert.ok(allows(tenantViewRole, 'cluster.x-k8s.io', 'machinedeployments', 'list'));
  const role = tenantClusterRoles(crds).find((r) => (r.metadata as { name: string }).name === tenantViewRole)!;
  for (const rule of role.rules as Rule[]) assert.deepEqual(rule.verbs, ['get', 'list', 'watch'], rule.resources[0]);
  assert.ok(!allows(tenantViewRole, '', 'secrets', 'get'), 'no Secret: a kubeconfig is its cluster admin key');
});
