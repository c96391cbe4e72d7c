// A minimal OpenAPI v3 (/openapi/v3 and one document per group-version): the paths of every
// served resource with the query parameters of their write operations. kubectl (1.27+) reads
// these to learn that the server takes `fieldValidation` and then validates server-side; the
// schemas themselves are not served (kubectl explain does not work).
import { apiVersionOf, RESOURCES, type ResourceInfo } from './resources.js';

const gvPath = (info: ResourceInfo) => (info.group ? `apis/${info.group}/${info.version}` : 'api/v1');

/** @internal */
export function openapiV3Index(): unknown {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const info of RESOURCES) {
    const p = gvPath(info);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=kubelet-kit-testing` };
  }
  return { paths };
}

const param = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });

function operation(info: ResourceInfo, verb: string, action: string, write: boolean): unknown {
  return {
    operationId: `${verb}${info.kind}`,
    parameters: write ? [param('dryRun'), param('fieldManager'), param('fieldValidation')] : [],
    responses: { '200': { description: 'OK' } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: info.group, version: info.version, kind: info.kind },
  };
}

/** The document of `api/v1` or `apis/<group>/<version>`, or undefined. @internal */
export function openapiV3Document(path: string): unknown | undefined {
  const infos = RESOURCES.filter((i) => gvPath(i) === path);
  if (infos.length === 0) return undefined;
  const paths: Record<string, unknown> = {};
  for (const info of infos) {
    const base = `/${path}${info.namespaced ? '/namespaces/{namespace}' : ''}/${info.plural}`;
    paths[base] = {
      get: operation(info, 'list', 'list', false),
      post: operation(info, 'create', 'post', true),
    };
    paths[`${base}/{name}`] = {
      get: operation(info, 'read', 'get', false),
      put: operation(info, 'replace', 'put', true),
      patch: operation(info, 'patch', 'patch', true),
      delete: operation(info, 'delete', 'delete', false),
    };
    if (info.statusSubresource) {
      paths[`${base}/{name}/status`] = {
        get: operation(info, 'read', 'get', false),
        put: operation(info, 'replace', 'put', true),
        patch: operation(info, 'patch', 'patch', true),
      };
    }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.34.0' },
    paths,
    components: {
      schemas: Object.fromEntries(
        infos.map((i) => [`io.k8s.${apiVersionOf(i)}.${i.kind}`, { type: 'object' }]),
      ),
    },
  };
}

function protoString(field: number, s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([Buffer.from([(field << 3) | 2, b.length]), b]);
}

/**
 * An OpenAPI v2 document with no definitions, in gnostic's protobuf encoding (swagger = 1,
 * info = 2 with title = 1 and version = 2, paths = 8), as kubectl before 1.27 fetches it to
 * validate `apply`: it finds no schema for any kind and so validates nothing, where a 404
 * would fail the command. @internal
 */
export function openapiV2Protobuf(): Buffer {
  const info = Buffer.concat([protoString(1, 'Kubernetes'), protoString(2, 'v1.34.0')]);
  return Buffer.concat([
    protoString(1, '2.0'),
    Buffer.from([(2 << 3) | 2, info.length]),
    info,
    Buffer.from([(8 << 3) | 2, 0]),
  ]);
}

/** The same document as JSON. @internal */
export function openapiV2Json(): unknown {
  return { swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.34.0' }, paths: {} };
}
