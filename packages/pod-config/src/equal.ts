/**
 * Deep equality of JSON-like values (upstream `reflect.DeepEqual` on API objects): a member set
 * to undefined counts as absent, as an unset pointer in Go; an empty object or array is not the
 * same as an absent one, as a nil map is not an empty one in Go.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  let countA = 0;
  for (const key in ra) {
    const va = ra[key];
    if (va === undefined) continue;
    countA++;
    if (!deepEqual(va, rb[key])) return false;
  }
  let countB = 0;
  for (const key in rb) if (rb[key] !== undefined) countB++;
  return countA === countB;
}
