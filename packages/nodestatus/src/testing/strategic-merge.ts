// A strategic merge patch applier good enough for Node objects (what InMemoryNodeApi needs):
// maps merge key by key with null deleting, lists with a merge key (conditions, addresses,
// taints, images are not) merge element by element and honour `$patch: replace` / `delete`,
// other lists are replaced whole. `$setElementOrder/…` and `$retainKeys` directives are ignored.

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Lists that merge by a key in a Node, by field name (core/v1's patchMergeKey tags). */
const nodeMergeKeys: Readonly<Record<string, string>> = {
  conditions: 'type',
  addresses: 'type',
  ownerReferences: 'uid',
};

function mergeList(target: readonly unknown[], patch: readonly unknown[], key: string): unknown[] {
  if (patch.some((e) => isObject(e) && e.$patch === 'replace')) {
    return patch.filter((e) => !(isObject(e) && e.$patch === 'replace'));
  }
  const out = target.map((e) => e);
  for (const e of patch) {
    if (!isObject(e)) continue;
    const i = out.findIndex((t) => isObject(t) && t[key] === e[key]);
    if (e.$patch === 'delete') {
      if (i !== -1) out.splice(i, 1);
      continue;
    }
    if (i === -1) out.push(applyStrategicMergePatch(undefined, e));
    else out[i] = applyStrategicMergePatch(out[i], e);
  }
  return out;
}

/**
 * Applies a strategic merge patch to a JSON object, with the Node's list merge keys.
 *
 * @public
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return rest;
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v) && nodeMergeKeys[k]) {
      out[k] = mergeList(Array.isArray(out[k]) ? (out[k] as unknown[]) : [], v, nodeMergeKeys[k]!);
    } else if (isObject(v)) {
      out[k] = applyStrategicMergePatch(out[k], v);
    } else {
      out[k] = v;
    }
  }
  return out;
}
