import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, test } from 'vitest';
import { messageCodec } from '../src/codec.js';
import { wireMessages } from '../src/generated/wire-types.js';
import { type WireField, WireKind } from '../src/wire.js';

// The table-driven codec against protobufjs' reflection of the same proto, for every message
// type: the same bytes for the same object, and the same object for the same bytes as
// protobufjs' toObject with the options the CRI clients used (int64 and enums as numbers, every
// scalar, list and map present, absent sub-messages left out).

const reference = protobuf.loadSync(fileURLToPath(new URL('../proto/runtime/v1/api.proto', import.meta.url)));
const referenceType = (name: string) => reference.lookupType(`runtime.v1.${name.replaceAll('_', '.')}`);
const toObjectOptions = { longs: Number, enums: Number, defaults: true, arrays: true, objects: true };

/** Bytes as arrays and null sub-messages dropped, so both sides compare as plain data. */
function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) return [...value];
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = normalize(v);
    return out;
  }
  return value;
}

const text = fc.string({ unit: 'binary', maxLength: 12 });

function scalar(kind: number): fc.Arbitrary<unknown> {
  switch (kind) {
    case WireKind.double:
      // -0 is written (Go writes it, its bits are not the default's); protobufjs leaves it out.
      return fc.double().filter((d) => !Object.is(d, -0));
    case WireKind.int32:
    case WireKind.enum:
      return fc.oneof(fc.integer({ min: -3, max: 5 }), fc.integer());
    case WireKind.int64:
      return fc.oneof(fc.integer({ min: -3, max: 5 }), fc.maxSafeInteger(), fc.constant(-(2 ** 53 - 1)));
    case WireKind.uint32:
      return fc.oneof(fc.nat(5), fc.nat({ max: 2 ** 32 - 1 }));
    case WireKind.uint64:
      return fc.oneof(fc.nat(5), fc.maxSafeNat());
    case WireKind.bool:
      return fc.boolean();
    case WireKind.string:
      return text;
    case WireKind.bytes:
      return fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b));
    default:
      throw new Error(`no arbitrary for kind ${kind}`);
  }
}

const memo = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

/** A message of `name` with any of its fields set, sub-messages down to `depth`. */
function message(name: string, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const key = `${name}/${depth}`;
  const cached = memo.get(key);
  if (cached) return cached;
  const fields = wireMessages[name] ?? [];
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [field, , kind, repeated, type] of fields as readonly WireField[]) {
    let one: fc.Arbitrary<unknown>;
    if (kind === WireKind.stringMap) {
      model[field] = fc.dictionary(
        text.filter((k) => k !== '__proto__'),
        text,
        { maxKeys: 3 },
      );
      continue;
    }
    if (kind === WireKind.message) {
      if (depth === 0) continue;
      one = message(type as string, depth - 1);
    } else one = scalar(kind);
    model[field] = repeated ? fc.array(one, { maxLength: 3 }) : one;
  }
  const arb = fc.record(model, { requiredKeys: [] });
  memo.set(key, arb);
  return arb;
}

describe('the wire codec agrees with protobufjs for every CRI message', () => {
  for (const name of Object.keys(wireMessages)) {
    // Its env values are text for callers and bytes on the wire (KeyValue.value): codec.ts
    // converts them above this layer, tested in streams-and-coverage.test.ts.
    if (name === 'CreateContainerRequest') continue;
    test(name, () => {
      const codec = messageCodec<Record<string, unknown>>(name);
      const type = referenceType(name);
      fc.assert(
        fc.property(message(name, 3), (value) => {
          const wire = codec.encode(value);
          const expected = Buffer.from(type.encode(type.fromObject(value)).finish());
          expect(wire.equals(expected)).toBe(true);
          const decoded = codec.decode(wire);
          expect(normalize(decoded)).toEqual(normalize(type.toObject(type.decode(wire), toObjectOptions)));
        }),
        { numRuns: 25 },
      );
    });
  }
});

describe('the wire codec', () => {
  const sandbox = messageCodec<{
    id: string;
    labels: Record<string, string>;
    metadata?: { name: string; attempt: number };
  }>('PodSandbox');

  test('a map key "__proto__" is an entry, not the prototype', () => {
    const back = sandbox.decode(sandbox.encode({ labels: JSON.parse('{"__proto__":"x","a":"b"}') }));
    expect(Object.getPrototypeOf(back.labels)).toBe(Object.prototype);
    expect(Object.keys(back.labels)).toEqual(['__proto__', 'a']);
    expect(Object.getOwnPropertyDescriptor(back.labels, '__proto__')?.value).toBe('x');
  });

  test('a sub-message given twice is merged; an unknown field and a field of another wire type are skipped', () => {
    // metadata (2) { name (1) "a" }, metadata (2) { attempt (4) 3 }, field 99 varint, id (1) as a varint.
    const wire = Buffer.from([
      0x12, 0x03, 0x0a, 0x01, 0x61, 0x12, 0x02, 0x20, 0x03, 0x98, 0x06, 0x01, 0x08, 0x05,
    ]);
    const back = sandbox.decode(wire);
    expect(back.metadata).toMatchObject({ name: 'a', attempt: 3 });
    expect(back.id).toBe('');
  });

  test('a sub-message longer than its parent is an error', () => {
    // ContainerStatusResponse.status (1), length 2, holding a string of length 5.
    const status = messageCodec('ContainerStatusResponse');
    expect(() => status.decode(Buffer.from([0x0a, 0x02, 0x0a, 0x05, 0x61, 0x61, 0x61, 0x61, 0x61]))).toThrow(
      RangeError,
    );
  });

  test('field number 0 is an error', () => {
    expect(() => sandbox.decode(Buffer.from([0x00, 0x01]))).toThrow(/field number 0/);
  });

  test('a double of -0 is written, as Go writes it; 0 is not', () => {
    const psi = messageCodec<{ Avg10: number }>('PsiData');
    expect(psi.encode({ Avg10: 0 })).toHaveLength(0);
    expect(Object.is(psi.decode(psi.encode({ Avg10: -0 })).Avg10, -0)).toBe(true);
  });

  test('wrong shapes name the field', () => {
    expect(() => sandbox.encode({ metadata: 'x' })).toThrow(
      '.runtime.v1.PodSandbox.metadata: object expected',
    );
    expect(() => messageCodec('DNSConfig').encode({ servers: 'x' })).toThrow(
      '.runtime.v1.DNSConfig.servers: array expected',
    );
    expect(() => sandbox.encode('x')).toThrow(TypeError);
  });

  test('an enum given by name is written as its number; an unknown name is left out', () => {
    const filter = messageCodec<{ state?: { state: number } }>('ContainerFilter');
    expect(filter.decode(filter.encode({ state: { state: 'CONTAINER_EXITED' } })).state?.state).toBe(2);
    expect(filter.decode(filter.encode({ state: { state: 'NOPE' } })).state?.state).toBe(0);
  });
});
