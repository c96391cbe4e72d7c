// The static pod UID hash (upstream `pkg/util/hash.DeepHashObject` fed to `fnv.New128a`).
// Go's DeepHashObject prints the object with go-spew; we hash a canonical JSON form instead, so
// the hash is deterministic and stable across runs but not byte-identical to upstream's.

// The 128-bit state is eight 16-bit limbs, least significant first: every product and carry
// stays an exact small integer, where BigInt arithmetic allocated two numbers per input byte.
const fnv128Offset = [0xc58d, 0x6295, 0x2175, 0x62b8, 0x0142, 0x07bb, 0x272e, 0x6c62];
// The FNV-128 prime is 2^88 + 0x13b.
const primeLow = 0x13b;
const encoder = new TextEncoder();

/** An incremental FNV-1a 128-bit hash (upstream `hash/fnv.New128a`). */
export class Fnv128a {
  readonly #h = Uint32Array.from(fnv128Offset);

  write(data: string | Uint8Array): this {
    const bytes = typeof data === 'string' ? encoder.encode(data) : data;
    const h = this.#h;
    let h0 = h[0]!;
    let h1 = h[1]!;
    let h2 = h[2]!;
    let h3 = h[3]!;
    let h4 = h[4]!;
    let h5 = h[5]!;
    let h6 = h[6]!;
    let h7 = h[7]!;
    for (let i = 0; i < bytes.length; i++) {
      h0 ^= bytes[i]!;
      // h * 2^88 + h * 0x13b, mod 2^128: 88 bits is five limbs and 8 bits, so only the three
      // low limbs, shifted, reach the product.
      const t0 = h0 * primeLow;
      const t1 = h1 * primeLow + (t0 >>> 16);
      const t2 = h2 * primeLow + (t1 >>> 16);
      const t3 = h3 * primeLow + (t2 >>> 16);
      const t4 = h4 * primeLow + (t3 >>> 16);
      const t5 = h5 * primeLow + (t4 >>> 16) + ((h0 << 8) & 0xffff);
      const t6 = h6 * primeLow + (t5 >>> 16) + (h0 >>> 8) + ((h1 << 8) & 0xffff);
      const t7 = h7 * primeLow + (t6 >>> 16) + (h1 >>> 8) + ((h2 << 8) & 0xffff);
      h0 = t0 & 0xffff;
      h1 = t1 & 0xffff;
      h2 = t2 & 0xffff;
      h3 = t3 & 0xffff;
      h4 = t4 & 0xffff;
      h5 = t5 & 0xffff;
      h6 = t6 & 0xffff;
      h7 = t7 & 0xffff;
    }
    h[0] = h0;
    h[1] = h1;
    h[2] = h2;
    h[3] = h3;
    h[4] = h4;
    h[5] = h5;
    h[6] = h6;
    h[7] = h7;
    return this;
  }

  /** Lowercase hex of the 16-byte digest. */
  hex(): string {
    let out = '';
    for (let i = 7; i >= 0; i--) out += this.#h[i]!.toString(16).padStart(4, '0');
    return out;
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
