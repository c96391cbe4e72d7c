import type { Node, NodeCondition, NodeStatus } from '@kubelet-kit/core';

// Upstream `nodeutil.PatchNodeStatus` computes a two-way strategic merge patch between the Node
// it read and the Node with the new status (`preparePatchBytesforNodeStatus`). This is the part
// of strategic merge a Node status needs: maps merged key by key (null deletes), `conditions`
// merged by `type`, `addresses` replaced whole, every other list replaced whole.

type Json = unknown;
type JsonObject = Record<string, Json>;

function isObject(v: Json): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep equality of JSON values (key order ignored). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}

/** Lists merged element by element on this key (their `patchMergeKey`), by field name. */
const mergeKeys: Readonly<Record<string, string>> = { conditions: 'type' };

function diffObject(from: JsonObject, to: JsonObject, path: string): JsonObject | undefined {
  const patch: JsonObject = {};
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const old = from[k];
    if (jsonEqual(old, v)) continue;
    if (isObject(v) && isObject(old)) {
      const sub = diffObject(old, v, `${path}.${k}`);
      if (sub) patch[k] = sub;
    } else if (Array.isArray(v) && Array.isArray(old) && mergeKeys[k] && path === '.status') {
      const sub = diffMergeList(old, v, mergeKeys[k]!);
      if (sub) patch[k] = sub;
    } else if (
      Array.isArray(v) &&
      k === 'addresses' &&
      path === '.status' &&
      Array.isArray(old) &&
      old.length > 0
    ) {
      // Upstream's fix-up: addresses carry a merge key in the schema but must be replaced whole.
      patch[k] = [...v, { $patch: 'replace' }];
    } else {
      patch[k] = v;
    }
  }
  for (const [k, v] of Object.entries(from)) {
    if (v !== undefined && to[k] === undefined) patch[k] = null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function diffMergeList(from: readonly Json[], to: readonly Json[], key: string): Json[] | undefined {
  const byKey = new Map<Json, JsonObject>();
  for (const e of from) if (isObject(e)) byKey.set(e[key], e);
  const out: Json[] = [];
  const seen = new Set<Json>();
  for (const e of to) {
    if (!isObject(e)) continue;
    seen.add(e[key]);
    const old = byKey.get(e[key]);
    if (!old) {
      out.push(e);
      continue;
    }
    const sub = diffObject(old, e, '');
    if (sub) out.push({ [key]: e[key], ...sub });
  }
  for (const [k] of byKey) if (!seen.has(k)) out.push({ $patch: 'delete', [key]: k });
  return out.length > 0 ? out : undefined;
}

/**
 * The strategic merge patch of `nodes/<name>/status` that turns `original` into `modified`:
 * the spec is left out (the status subresource ignores it), metadata and status differences go
 * in. Undefined when nothing differs.
 *
 * @public
 */
export function createNodeStatusPatch(original: Node, modified: Node): Record<string, unknown> | undefined {
  const from = JSON.parse(
    JSON.stringify({ metadata: original.metadata ?? {}, status: original.status ?? {} }),
  );
  const to = JSON.parse(JSON.stringify({ metadata: modified.metadata ?? {}, status: modified.status ?? {} }));
  const patch: JsonObject = {};
  const meta = diffObject(from.metadata, to.metadata, '.metadata');
  if (meta) patch.metadata = meta;
  const st = diffObject(from.status, to.status, '.status');
  if (st) patch.status = st;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function conditionsHaveChanged(a: readonly NodeCondition[], b: readonly NodeCondition[]): boolean {
  if (a.length !== b.length) return true;
  const strip = (list: readonly NodeCondition[]) =>
    [...list]
      .sort((x, y) => (x.type < y.type ? -1 : x.type > y.type ? 1 : 0))
      .map(({ lastHeartbeatTime: _, ...rest }) => rest);
  return !jsonEqual(strip(a), strip(b));
}

/**
 * Upstream `nodeStatusHasChanged`: whether two statuses differ other than in the conditions'
 * heartbeat times.
 *
 * @public
 */
export function nodeStatusHasChanged(
  original: NodeStatus | undefined,
  next: NodeStatus | undefined,
): boolean {
  if (original === undefined && next === undefined) return false;
  if (original === undefined || next === undefined) return true;
  if (conditionsHaveChanged(original.conditions ?? [], next.conditions ?? [])) return true;
  const { conditions: _a, ...restA } = original;
  const { conditions: _b, ...restB } = next;
  return !jsonEqual(JSON.parse(JSON.stringify(restA)), JSON.parse(JSON.stringify(restB)));
}
