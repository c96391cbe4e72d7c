// The three patch types of the API server: JSON merge patch (RFC 7386), JSON patch (RFC 6902)
// and enough of strategic merge patch (apimachinery's strategicpatch) for the objects the
// kubelet writes: lists merged by their merge keys, `$patch: delete|replace|merge`,
// `$setElementOrder/…`, `$deleteFromPrimitiveList/…` and `$retainKeys` tolerated.
import { badRequest, StatusError } from './status.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386. @internal */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/'))
    throw badRequest(
      `the server rejected our request due to an error in our request: invalid JSON pointer ${path}`,
    );
  return path.slice(1).split('/').map(unescapePointer);
}

function jsonPatchError(msg: string): StatusError {
  // Upstream answers a failed JSON patch operation with 422 Invalid, reason Invalid.
  return new StatusError(422, 'Invalid', msg);
}

/** RFC 6902 over a copy of `doc`. @internal */
export function jsonPatch(doc: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) throw badRequest('json patch must be an array of operations');
  let root: Json = structuredClone(doc);
  const parentOf = (parts: string[]): [Json, string] => {
    let cur: Json = root;
    for (const p of parts.slice(0, -1)) {
      const next: Json | undefined = Array.isArray(cur) ? cur[Number(p)] : isObject(cur) ? cur[p] : undefined;
      if (next === undefined) throw jsonPatchError(`doc is missing path: "/${parts.join('/')}"`);
      cur = next;
    }
    return [cur, parts[parts.length - 1] ?? ''];
  };
  const get = (path: string): Json => {
    let cur: Json = root;
    for (const p of pointer(path)) {
      const next: Json | undefined = Array.isArray(cur) ? cur[Number(p)] : isObject(cur) ? cur[p] : undefined;
      if (next === undefined) throw jsonPatchError(`doc is missing path: "${path}"`);
      cur = next;
    }
    return cur;
  };
  const remove = (path: string): Json => {
    const parts = pointer(path);
    const [parent, key] = parentOf(parts);
    if (Array.isArray(parent)) {
      const i = Number(key);
      if (!(i >= 0 && i < parent.length)) throw jsonPatchError(`doc is missing path: "${path}"`);
      return parent.splice(i, 1)[0] as Json;
    }
    if (!isObject(parent) || !(key in parent)) throw jsonPatchError(`doc is missing path: "${path}"`);
    const v = parent[key] as Json;
    delete parent[key];
    return v;
  };
  const add = (path: string, value: Json, replace: boolean) => {
    const parts = pointer(path);
    if (parts.length === 0) {
      root = value;
      return;
    }
    const [parent, key] = parentOf(parts);
    if (Array.isArray(parent)) {
      const i = key === '-' ? parent.length : Number(key);
      if (!(i >= 0 && i <= parent.length)) throw jsonPatchError(`unable to access invalid index: ${key}`);
      if (replace) parent[i] = value;
      else parent.splice(i, 0, value);
    } else if (isObject(parent)) {
      if (replace && !(key in parent)) throw jsonPatchError(`doc is missing key: ${path}`);
      parent[key] = value;
    } else throw jsonPatchError(`doc is missing path: "${path}"`);
  };
  for (const op of ops as JsonObject[]) {
    const path = String(op.path ?? '');
    switch (op.op) {
      case 'add':
        add(path, structuredClone(op.value as Json), false);
        break;
      case 'remove':
        remove(path);
        break;
      case 'replace':
        if (pointer(path).length === 0) root = structuredClone(op.value as Json);
        else add(path, structuredClone(op.value as Json), true);
        break;
      case 'move':
        add(path, remove(String(op.from)), false);
        break;
      case 'copy':
        add(path, structuredClone(get(String(op.from))), false);
        break;
      case 'test':
        if (JSON.stringify(get(path)) !== JSON.stringify(op.value)) {
          throw jsonPatchError(`testing value ${path} failed: test failed`);
        }
        break;
      default:
        throw badRequest(`Unexpected kind: ${String(op.op)}`);
    }
  }
  return root;
}

/**
 * Merge keys of the lists that strategic merge patch merges (from the `patchMergeKey` tags of
 * k8s.io/api), by field name. A list not named here is replaced whole, as upstream does for
 * lists without a patch strategy (containerStatuses, taints, tolerations, …).
 */
const MERGE_KEYS: Record<string, string | ((items: Json[]) => string)> = {
  conditions: 'type',
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  addresses: 'type',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  ownerReferences: 'uid',
  podIPs: 'ip',
  hostIPs: 'ip',
  resourceClaims: 'name',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  // Container ports merge on containerPort, Service ports on port.
  ports: (items) => (items.some((i) => isObject(i) && 'containerPort' in i) ? 'containerPort' : 'port'),
};

/** Lists of scalars merged as sets (patchStrategy merge on a primitive list). */
const SET_LISTS = new Set(['finalizers']);

function mergeKeyOf(field: string, items: Json[]): string | undefined {
  const k = MERGE_KEYS[field];
  return typeof k === 'function' ? k(items) : k;
}

function smpList(
  field: string,
  target: Json[] | undefined,
  patch: Json[],
  order: Json[] | undefined,
): Json[] {
  const key = mergeKeyOf(field, [...(target ?? []), ...patch]);
  if (SET_LISTS.has(field)) {
    const out = [...(target ?? [])];
    for (const v of patch) if (!out.some((x) => JSON.stringify(x) === JSON.stringify(v))) out.push(v);
    return out;
  }
  if (!key) {
    return patch.filter((p) => !(isObject(p) && p.$patch !== undefined));
  }
  // A `$patch: replace` element replaces the whole list with the rest of the patch.
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace'));
  }
  const out: Json[] = [...(target ?? [])].map((x) => structuredClone(x));
  for (const p of patch) {
    if (!isObject(p)) continue;
    const idx = out.findIndex((x) => isObject(x) && x[key] === p[key]);
    if (p.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMergePatch(out[idx], p);
    else out.push(strategicMergePatch(undefined, p));
  }
  if (order) {
    const rank = (x: Json) => {
      const i = order.findIndex((o) => isObject(o) && isObject(x) && o[key] === x[key]);
      return i < 0 ? order.length : i;
    };
    out.sort((a, b) => rank(a) - rank(b));
  }
  return out;
}

/** Strategic merge patch of `target` by `patch` (maps merged, nulls delete, lists by key). @internal */
export function strategicMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (patch.$patch === 'delete') return {};
  const out: JsonObject = isObject(target) ? { ...target } : {};
  const retain = Array.isArray(patch.$retainKeys) ? new Set(patch.$retainKeys.map(String)) : undefined;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) {
        const drop = new Set(v.map((x) => JSON.stringify(x)));
        out[field] = cur.filter((x) => !drop.has(JSON.stringify(x)));
      }
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    if (Array.isArray(v)) {
      const cur = out[k];
      const order = patch[`$setElementOrder/${k}`];
      out[k] = smpList(k, Array.isArray(cur) ? cur : undefined, v, Array.isArray(order) ? order : undefined);
    } else if (isObject(v)) {
      out[k] = strategicMergePatch(out[k], v);
    } else out[k] = v;
  }
  if (retain) for (const k of Object.keys(out)) if (!retain.has(k)) delete out[k];
  return out;
}

function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

/** The patch content types served. @internal */
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

/** The patch type of a Content-Type header, or undefined for an unsupported one. @internal */
export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  const t = (contentType ?? '').split(';')[0]?.trim();
  if (t === 'application/json-patch+json') return 'json';
  if (t === 'application/merge-patch+json') return 'merge';
  if (t === 'application/strategic-merge-patch+json') return 'strategic';
  if (t === 'application/apply-patch+yaml' || t === 'application/apply-patch+cbor') return 'apply';
  return undefined;
}

/** Applies a patch of `type` to `doc`. @internal */
export function applyPatch(type: PatchType, doc: Json, body: unknown): Json {
  switch (type) {
    case 'json':
      return jsonPatch(doc, body);
    case 'merge':
      return mergePatch(doc, body as Json);
    case 'strategic':
    case 'apply':
      return stripDirectives(strategicMergePatch(doc, body as Json));
  }
}

export type { Json, JsonObject };
