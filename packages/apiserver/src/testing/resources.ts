// The resources the in-memory API server serves, with what discovery says of each (upstream's
// names, short names and verbs, as `kubectl api-resources` shows them on a v1.34 cluster).

/** One served resource. @internal */
export interface ResourceInfo {
  /** API group, '' for the core group. */
  readonly group: string;
  readonly version: string;
  /** Plural, as in the URL: `pods`. */
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  /** Subresources kept in the store (`status`), not the proxied ones. */
  readonly statusSubresource: boolean;
  /** Field selector labels the real server accepts, beyond metadata.name and metadata.namespace. */
  readonly fields: readonly string[];
  /** Whether PUT of a missing object creates it (upstream AllowCreateOnUpdate). */
  readonly createOnUpdate: boolean;
  /** Whether DELETE answers with the deleted object rather than a Success Status. */
  readonly returnDeletedObject: boolean;
  /** Extra subresources discovery lists (proxy, token, …), with their verbs. */
  readonly subresources: readonly { name: string; kind: string; verbs: readonly string[] }[];
  readonly categories?: readonly string[];
}

const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function r(p: Partial<ResourceInfo> & Pick<ResourceInfo, 'plural' | 'kind' | 'namespaced'>): ResourceInfo {
  return {
    group: '',
    version: 'v1',
    singular: p.kind.toLowerCase(),
    shortNames: [],
    statusSubresource: false,
    fields: [],
    createOnUpdate: false,
    returnDeletedObject: false,
    subresources: [],
    ...p,
  };
}

/** Every resource served, in discovery order. @internal */
export const RESOURCES: readonly ResourceInfo[] = [
  r({
    plural: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
    shortNames: ['cm'],
  }),
  r({ plural: 'endpoints', kind: 'Endpoints', singular: 'endpoints', namespaced: true, shortNames: ['ep'] }),
  r({
    plural: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    createOnUpdate: true,
    fields: [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ],
  }),
  r({
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    statusSubresource: true,
    fields: ['status.phase'],
    returnDeletedObject: true,
  }),
  r({
    plural: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    statusSubresource: true,
    fields: ['spec.unschedulable'],
    subresources: [
      { name: 'proxy', kind: 'NodeProxyOptions', verbs: ['create', 'delete', 'get', 'patch', 'update'] },
    ],
  }),
  r({
    plural: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    statusSubresource: true,
    returnDeletedObject: true,
    categories: ['all'],
    fields: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    subresources: [
      { name: 'attach', kind: 'PodAttachOptions', verbs: ['create', 'get'] },
      { name: 'ephemeralcontainers', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
      { name: 'exec', kind: 'PodExecOptions', verbs: ['create', 'get'] },
      { name: 'log', kind: 'Pod', verbs: ['get'] },
      { name: 'portforward', kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
    ],
  }),
  r({
    plural: 'secrets',
    kind: 'Secret',
    namespaced: true,
    fields: ['type'],
  }),
  r({
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
    subresources: [{ name: 'token', kind: 'TokenRequest', verbs: ['create'] }],
  }),
  r({
    plural: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    statusSubresource: true,
    returnDeletedObject: true,
    categories: ['all'],
    fields: ['spec.clusterIP', 'spec.type'],
  }),
  r({ group: 'coordination.k8s.io', plural: 'leases', kind: 'Lease', namespaced: true }),
  r({ group: 'node.k8s.io', plural: 'runtimeclasses', kind: 'RuntimeClass', namespaced: false }),
];

/** The apiVersion string of a resource's objects. @internal */
export function apiVersionOf(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** `pods` or `leases.coordination.k8s.io`, as error messages name a resource. @internal */
export function qualifiedName(info: ResourceInfo): string {
  return info.group ? `${info.plural}.${info.group}` : info.plural;
}

/** Resource by group and plural. @internal */
export function findResource(group: string, version: string, plural: string): ResourceInfo | undefined {
  return RESOURCES.find((x) => x.group === group && x.version === version && x.plural === plural);
}

/** Resource by apiVersion and kind (for objects handed to the helpers). @internal */
export function resourceOfKind(apiVersionOrKind: string, kind?: string): ResourceInfo | undefined {
  if (kind === undefined) {
    const k = apiVersionOrKind.toLowerCase();
    return RESOURCES.find(
      (x) => x.kind.toLowerCase() === k || x.plural === k || x.shortNames.includes(k) || x.singular === k,
    );
  }
  return RESOURCES.find((x) => apiVersionOf(x) === apiVersionOrKind && x.kind === kind);
}

/** The discovery verbs of a resource. @internal */
export function verbsOf(_info: ResourceInfo): readonly string[] {
  return verbs;
}
