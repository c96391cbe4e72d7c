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

/**
 * A deep copy of a JSON-like value, several times faster than `structuredClone` for API
 * objects; anything that is not a plain object or array (a Date, a Buffer) goes through
 * `structuredClone`. Undefined members are kept as they are.
 */
export function deepCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = deepCopy(value[i]);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value as Record<string, unknown>)) {
    const copy = deepCopy((value as Record<string, unknown>)[key]);
    // A parsed `__proto__` member is data; assigning it would set the copy's prototype.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[key] = copy;
  }
  return out as T;
}
