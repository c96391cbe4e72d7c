// The static pod UID hash (upstream `pkg/util/hash.DeepHashObject` fed to `fnv.New128a`).
// Go's DeepHashObject prints the object with go-spew; we hash a canonical JSON form instead, so
// the hash is deterministic and stable across runs but not byte-identical to upstream's.

const fnv128Offset = 0x6c62272e07bb014262b821756295c58dn;
const fnv128Prime = 0x0000000001000000000000000000013bn;
const mask128 = (1n << 128n) - 1n;

/** An incremental FNV-1a 128-bit hash (upstream `hash/fnv.New128a`). */
export class Fnv128a {
  #state = fnv128Offset;

  write(data: string | Uint8Array): this {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    let h = this.#state;
    for (const byte of bytes) {
      h ^= BigInt(byte);
      h = (h * fnv128Prime) & mask128;
    }
    this.#state = h;
    return this;
  }

  /** Lowercase hex of the 16-byte digest. */
  hex(): string {
    return this.#state.toString(16).padStart(32, '0');
  }
}

/**
 * JSON with object keys sorted and undefined members dropped, so two equal pods always give the
 * same bytes whatever the key order of their manifests.
 */
export function canonicalJSON(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) {
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJSON(v))).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const v = record[key];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJSON(v)}`);
  }
  return `{${parts.join(',')}}`;
}
