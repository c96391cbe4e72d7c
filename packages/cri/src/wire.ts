import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs/minimal.js';
import { WireKind, wireEnums, wireMessages } from './generated/wire-types.js';

export { WireKind };

// CRI messages between plain objects and protobuf's wire format, by the tables scripts/gen.mjs
// writes from the proto. protobufjs' generated classes did this in two steps each way (plain
// object → class instance → bytes, bytes → instance → plain object) and were 0.86 MB of the
// agent's bundle, which V8 keeps as source text; the tables are 21 kB. Semantics as those
// classes had them with the options the codec used: int64 as numbers, enums as numbers, every
// scalar, list and map present on a decoded message, absent sub-messages left out; fields at
// their default value are not written, and unknown fields are skipped.

/**
 * One field of a message table: name, number, kind, repeated (1) or not (0), and the nested
 * message's or enum's name.
 * @internal
 */
export type WireField = readonly [name: string, number: number, kind: number, repeated: 0 | 1, type?: string];

/** @internal */
export type WireMessages = Readonly<Record<string, readonly WireField[]>>;

/** @internal */
export type WireEnums = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** The wire type a field's values are written with (2 for packed lists too). */
const wireTypeOf = (kind: number): number =>
  kind === WireKind.double
    ? 1
    : kind === WireKind.string ||
        kind === WireKind.bytes ||
        kind === WireKind.message ||
        kind === WireKind.stringMap
      ? 2
      : 0;

/** A field, resolved. */
class Field {
  /** The tag of one value (of one item, for a list). */
  readonly tag: number;
  readonly wireType: number;
  /** Numbers in a list are written packed, as proto3 does by default, under this tag. */
  readonly packed: boolean;
  readonly packedTag: number;
  /** The message type of a message field, resolved on first use. */
  #message: MessageType | undefined;

  constructor(
    readonly owner: string,
    readonly name: string,
    readonly number: number,
    readonly kind: number,
    readonly repeated: boolean,
    readonly typeName: string | undefined,
    readonly enumValues: Readonly<Record<string, number>> | undefined,
  ) {
    this.wireType = wireTypeOf(kind);
    this.tag = ((number << 3) | this.wireType) >>> 0;
    this.packed = repeated && this.wireType !== 2;
    this.packedTag = ((number << 3) | 2) >>> 0;
  }

  get message(): MessageType {
    this.#message ??= messageType(this.typeName as string);
    return this.#message;
  }
}

/** A message's fields, in number order and by number. */
export class MessageType {
  readonly fields: readonly Field[];
  readonly byNumber: readonly (Field | undefined)[];

  constructor(
    readonly name: string,
    table: readonly WireField[],
  ) {
    const fields = table.map(
      ([field, number, kind, repeated, type]) =>
        new Field(
          name,
          field,
          number,
          kind,
          repeated === 1,
          type,
          kind === WireKind.enum && type ? wireEnums[type] : undefined,
        ),
    );
    // Written in field number order, as Go and protobufjs write them.
    fields.sort((a, b) => a.number - b.number);
    const byNumber: (Field | undefined)[] = [];
    for (const f of fields) byNumber[f.number] = f;
    // Holes would make the array slow to index; an unknown number reads as undefined anyway.
    for (let i = 0; i < byNumber.length; i++) byNumber[i] ??= undefined;
    this.fields = fields;
    this.byNumber = byNumber;
  }
}

const types = new Map<string, MessageType>();

/** The type of `runtime.v1.<name>` (nested types as `Parent_Child`), or undefined. */
export function findMessageType(name: string): MessageType | undefined {
  let type = types.get(name);
  if (!type) {
    const table = Object.hasOwn(wireMessages, name) ? wireMessages[name] : undefined;
    if (!table) return undefined;
    type = new MessageType(name, table);
    types.set(name, type);
  }
  return type;
}

function messageType(name: string): MessageType {
  const type = findMessageType(name);
  if (!type) throw new Error(`unknown CRI message type ${name}`);
  return type;
}

/**
 * Buffer's own decoder, as protobufjs' reader calls it (`toString` adds argument handling).
 * @internal
 */
export type SliceableBuffer = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * protobufjs' Buffer reader, with proto3 strings decoded by Buffer's native UTF-8 decoder and
 * checked only when that gives U+FFFD (protobufjs checks in JavaScript, a byte at a time), and
 * 64-bit varints read as numbers.
 */
export class CriReader extends protobuf.BufferReader {
  override stringVerify(): string {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw new RangeError(`index out of range: ${start} + ${length} > ${this.len}`);
    this.pos = end;
    const text = (this.buf as SliceableBuffer).utf8Slice(start, end);
    // Invalid UTF-8 decodes to U+FFFD: only then is the (slower) check worth making. A proto3
    // string must be valid UTF-8.
    if (text.includes('\uFFFD') && !isUtf8(this.buf.subarray(start, end))) {
      throw new Error('invalid UTF-8 in a string field');
    }
    return text;
  }

  /** A base-128 varint of up to 64 bits, as a number (exact up to 2^53). */
  varint64(unsigned: boolean): number {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (;;) {
      if (pos >= this.len) throw new RangeError(`index out of range: ${pos} + 1 > ${this.len}`);
      const byte = buf[pos++] as number;
      if (shift < 28) lo |= (byte & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (byte & 0x0f) << 28;
        hi |= (byte & 0x7f) >>> 4;
      } else if (shift <= 63)
        hi |= (byte & 0x7f) << (shift - 32); // the 10th byte: bit 63 only
      else throw new Error('invalid varint encoding');
      if (byte < 0x80) break;
      shift += 7;
    }
    this.pos = pos;
    lo >>>= 0;
    hi >>>= 0;
    if (!unsigned && hi >>> 31) {
      // Two's complement negative.
      const nlo = (~lo + 1) >>> 0;
      let nhi = ~hi >>> 0;
      if (nlo === 0) nhi = (nhi + 1) >>> 0;
      return -(nhi * 2 ** 32 + nlo);
    }
    return hi * 2 ** 32 + lo;
  }
}

/** A new message of `type` with every scalar, list and map at its default. */
function emptyMessage(type: MessageType): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of type.fields) {
    if (f.kind === WireKind.message && !f.repeated) continue;
    out[f.name] = f.repeated ? [] : defaultValue(f.kind);
  }
  return out;
}

function defaultValue(kind: number): unknown {
  switch (kind) {
    case WireKind.string:
      return '';
    case WireKind.bool:
      return false;
    case WireKind.bytes:
      return Buffer.alloc(0);
    case WireKind.stringMap:
      return {};
    default:
      return 0;
  }
}

/** One scalar value of `kind` at the reader. */
function readScalar(r: CriReader, kind: number): unknown {
  switch (kind) {
    case WireKind.double:
      return r.double();
    case WireKind.int32:
    case WireKind.enum:
      return r.int32();
    case WireKind.int64:
      return r.varint64(false);
    case WireKind.uint32:
      return r.uint32();
    case WireKind.uint64:
      return r.varint64(true);
    case WireKind.bool:
      return r.bool();
    case WireKind.string:
      return r.stringVerify();
    default:
      return r.bytes();
  }
}

/** The end of a length-delimited value starting at the reader, checked against the message's. */
function delimitedEnd(r: CriReader, end: number): number {
  const length = r.uint32();
  const valueEnd = r.pos + length;
  if (valueEnd > end) throw new RangeError(`index out of range: ${r.pos} + ${length} > ${end}`);
  return valueEnd;
}

/**
 * Decodes the message of `type` at `r.pos` up to `end` into `into` (a sub-message given twice is
 * merged, as protobuf does), or a new message.
 * @internal
 */
export function decodeMessage(
  r: CriReader,
  type: MessageType,
  end: number,
  into?: Record<string, unknown>,
): Record<string, unknown> {
  const out = into ?? emptyMessage(type);
  const byNumber = type.byNumber;
  // Reads of the message's fields stop at its end, not at the buffer's.
  const outerLen = r.len;
  r.len = end;
  while (r.pos < end) {
    const tag = r.uint32();
    const number = tag >>> 3;
    if (number === 0) throw new Error(`illegal tag: field number 0 at offset ${r.pos}`);
    const wireType = tag & 7;
    const f = number < byNumber.length ? byNumber[number] : undefined;
    if (f === undefined || (wireType !== f.wireType && !(f.packed && wireType === 2))) {
      // An unknown field, or a known one of another wire type: skipped, as protobufjs does.
      r.skipType(wireType);
      continue;
    }
    const kind = f.kind;
    if (kind === WireKind.message) {
      const valueEnd = delimitedEnd(r, end);
      if (f.repeated) {
        (out[f.name] as unknown[]).push(decodeMessage(r, f.message, valueEnd));
      } else {
        out[f.name] = decodeMessage(
          r,
          f.message,
          valueEnd,
          out[f.name] as Record<string, unknown> | undefined,
        );
      }
    } else if (kind === WireKind.stringMap) {
      decodeMapEntry(r, delimitedEnd(r, end), out[f.name] as Record<string, string>);
    } else if (!f.repeated) {
      out[f.name] = readScalar(r, kind);
    } else if (wireType === 2 && f.packed) {
      const listEnd = delimitedEnd(r, end);
      const list = out[f.name] as unknown[];
      r.len = listEnd;
      while (r.pos < listEnd) list.push(readScalar(r, kind));
      r.len = end;
    } else {
      (out[f.name] as unknown[]).push(readScalar(r, kind));
    }
  }
  r.len = outerLen;
  return out;
}

/** A `map<string, string>` entry: key field 1, value field 2, either absent for "". */
function decodeMapEntry(r: CriReader, end: number, into: Record<string, string>): void {
  const outerLen = r.len;
  r.len = end;
  let key = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === 0x0a) key = r.stringVerify();
    else if (tag === 0x12) value = r.stringVerify();
    else if (tag >>> 3 === 0) throw new Error(`illegal tag: field number 0 at offset ${r.pos}`);
    else r.skipType(tag & 7);
  }
  r.len = outerLen;
  // A key "__proto__" is an entry like any other, not the object's prototype.
  if (key === '__proto__')
    Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });
  else into[key] = value;
}

/** `value`'s fields as `type`'s, appended to `w`. */
export function encodeMessage(w: protobuf.Writer, type: MessageType, value: Record<string, unknown>): void {
  for (const f of type.fields) {
    const v = value[f.name];
    if (v == null) continue;
    if (f.kind === WireKind.stringMap) {
      if (typeof v !== 'object') throw expected(f, 'object');
      const map = v as Record<string, unknown>;
      for (const key of Object.keys(map)) {
        w.uint32(f.tag).fork().uint32(0x0a).string(key).uint32(0x12).string(String(map[key])).ldelim();
      }
    } else if (f.repeated) {
      if (!Array.isArray(v)) throw expected(f, 'array');
      if (v.length === 0) continue;
      if (f.kind === WireKind.message) {
        for (const item of v) writeMessage(w, f, item);
      } else if (f.packed) {
        w.uint32(f.packedTag).fork();
        for (const item of v) writeScalar(w, f, item, false);
        w.ldelim();
      } else {
        for (const item of v) writeScalar(w, f, item, false);
      }
    } else if (f.kind === WireKind.message) {
      writeMessage(w, f, v);
    } else {
      writeScalar(w, f, v, true);
    }
  }
}

function writeMessage(w: protobuf.Writer, f: Field, v: unknown): void {
  if (typeof v !== 'object' || v === null) throw expected(f, 'object');
  w.uint32(f.tag).fork();
  encodeMessage(w, f.message, v as Record<string, unknown>);
  w.ldelim();
}

/**
 * One scalar, converted as protobufjs' fromObject converted it; a single field's default value
 * is not written (a list's items always are). The tag is written for all but packed items.
 */
function writeScalar(w: protobuf.Writer, f: Field, v: unknown, single: boolean): void {
  const tagged = !f.packed;
  switch (f.kind) {
    case WireKind.double: {
      const n = Number(v);
      // -0 is not the default: its bits differ.
      if (single && Object.is(n, 0)) return;
      if (tagged) w.uint32(f.tag);
      w.double(n);
      return;
    }
    case WireKind.int32:
    case WireKind.enum: {
      let n: number;
      if (f.kind === WireKind.enum && typeof v === 'string') {
        const named = f.enumValues?.[v];
        // A name the enum does not have is left out, as protobufjs' fromObject left it.
        if (named === undefined || !Object.hasOwn(f.enumValues as object, v)) return;
        n = named;
      } else n = Number(v) | 0;
      if (single && n === 0) return;
      if (tagged) w.uint32(f.tag);
      w.int32(n);
      return;
    }
    case WireKind.uint32: {
      const n = Number(v) >>> 0;
      if (single && n === 0) return;
      if (tagged) w.uint32(f.tag);
      w.uint32(n);
      return;
    }
    case WireKind.int64:
    case WireKind.uint64: {
      const n = typeof v === 'number' ? v : Number(v);
      if (single && (n === 0 || Number.isNaN(n))) return;
      if (tagged) w.uint32(f.tag);
      if (f.kind === WireKind.int64) w.int64(n);
      else w.uint64(n);
      return;
    }
    case WireKind.bool: {
      const b = Boolean(v);
      if (single && !b) return;
      if (tagged) w.uint32(f.tag);
      w.bool(b);
      return;
    }
    case WireKind.string: {
      const s = typeof v === 'string' ? v : String(v);
      if (single && s.length === 0) return;
      w.uint32(f.tag).string(s);
      return;
    }
    default: {
      // bytes: a Uint8Array, an array of byte values, or base64 text (protobufjs' forms).
      const bytes =
        v instanceof Uint8Array
          ? v
          : typeof v === 'string'
            ? Buffer.from(v, 'base64')
            : Array.isArray(v)
              ? Buffer.from(v as number[])
              : undefined;
      if (bytes === undefined) throw expected(f, 'bytes');
      if (single && bytes.length === 0) return;
      w.uint32(f.tag).bytes(bytes);
    }
  }
}

function expected(f: Field, what: string): TypeError {
  return new TypeError(`.runtime.v1.${f.owner}.${f.name}: ${what} expected`);
}
