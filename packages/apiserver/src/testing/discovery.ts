// Legacy (unaggregated) discovery documents, which every kubectl since 1.20 reads: /api,
// /api/v1, /apis, /apis/<group>/<version>. kubectl asks for aggregated discovery first and
// falls back to these when the answer is a plain APIVersions / APIGroupList.
import { RESOURCES, type ResourceInfo, verbsOf } from './resources.js';
import { REVIEW_RESOURCES } from './reviews.js';

/** The version the server reports at /version. @internal */
export const SERVER_VERSION = {
  major: '1',
  minor: '34',
  gitVersion: 'v1.34.0-kubelet-kit-testing',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.24.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const groups = () => [
  ...new Set([
    ...RESOURCES.filter((r) => r.group !== '').map((r) => r.group),
    ...REVIEW_RESOURCES.map((r) => r.group),
  ]),
];

/** @internal */
export function apiVersions(serverAddress: string): unknown {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** @internal */
export function apiGroup(group: string): Record<string, unknown> | undefined {
  const info = RESOURCES.find((r) => r.group === group) ?? REVIEW_RESOURCES.find((r) => r.group === group);
  if (!info) return undefined;
  const v = { groupVersion: `${info.group}/${info.version}`, version: info.version };
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions: [v], preferredVersion: v };
}

/** @internal */
export function apiGroupList(): unknown {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups().map((g) => {
      const { kind: _k, apiVersion: _a, ...rest } = apiGroup(g) ?? {};
      return rest;
    }),
  };
}

function entries(info: ResourceInfo): unknown[] {
  const main = {
    name: info.plural,
    singularName: info.singular,
    namespaced: info.namespaced,
    kind: info.kind,
    verbs: verbsOf(info),
    ...(info.shortNames.length ? { shortNames: info.shortNames } : {}),
    ...(info.categories ? { categories: info.categories } : {}),
    storageVersionHash: Buffer.from(`${info.group}/${info.plural}`).toString('base64').slice(0, 11),
  };
  const subs: unknown[] = [];
  if (info.statusSubresource) {
    subs.push({
      name: `${info.plural}/status`,
      singularName: '',
      namespaced: info.namespaced,
      kind: info.kind,
      verbs: ['get', 'patch', 'update'],
    });
  }
  for (const s of info.subresources) {
    subs.push({
      name: `${info.plural}/${s.name}`,
      singularName: '',
      namespaced: info.namespaced,
      kind: s.kind,
      verbs: s.verbs,
      ...(s.name === 'token' ? { group: 'authentication.k8s.io', version: 'v1' } : {}),
    });
  }
  return [main, ...subs];
}

/** @internal */
export function apiResourceList(group: string, version: string): unknown | undefined {
  const infos = RESOURCES.filter((r) => r.group === group && r.version === version);
  // The create-only review resources (TokenReview, SubjectAccessReview).
  const reviews = REVIEW_RESOURCES.filter((r) => r.group === group && r.version === version).map((r) => ({
    name: r.name,
    singularName: r.name.slice(0, -1),
    namespaced: false,
    kind: r.kind,
    verbs: ['create'],
  }));
  if (infos.length === 0 && reviews.length === 0) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: [...infos.flatMap(entries), ...reviews],
  };
}
