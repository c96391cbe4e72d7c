import { describe, expect, test } from 'vitest';
import { Fnv128a } from '../src/hash.js';

// A BigInt FNV-1a 128, straight from the definition, to check the limb arithmetic against.
function referenceFnv128a(chunks: readonly string[]): string {
  const prime = (1n << 88n) + 0x13bn;
  const mask = (1n << 128n) - 1n;
  let h = 0x6c62272e07bb014262b821756295c58dn;
  for (const chunk of chunks) {
    for (const byte of new TextEncoder().encode(chunk)) h = ((h ^ BigInt(byte)) * prime) & mask;
  }
  return h.toString(16).padStart(32, '0');
}

describe('Fnv128a', () => {
  test('published FNV-1a 128 vectors', () => {
    expect(new Fnv128a().hex()).toBe('6c62272e07bb014262b821756295c58d');
    expect(new Fnv128a().write('a').hex()).toBe('d228cb696f1a8caf78912b704e4a8964');
    expect(new Fnv128a().write('foobar').hex()).toBe('343e1662793c64bf6f0d3597ba446f18');
  });

  test('matches a BigInt reference on random text, in one write or several', () => {
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = 'abcxyz019 {}":,é✓\u{1F600}\u0000\u00ff';
    for (let n = 0; n < 200; n++) {
      const chunks = Array.from({ length: 1 + Math.floor(random() * 3) }, () =>
        Array.from(
          { length: Math.floor(random() * 300) },
          () => [...alphabet][Math.floor(random() * [...alphabet].length)],
        ).join(''),
      );
      const hasher = new Fnv128a();
      for (const chunk of chunks) hasher.write(chunk);
      expect(hasher.hex()).toBe(referenceFnv128a(chunks));
    }
  });

  test('bytes and the same text as a string hash alike', () => {
    const text = 'host:node-1';
    expect(new Fnv128a().write(new TextEncoder().encode(text)).hex()).toBe(new Fnv128a().write(text).hex());
  });
});
