import protobuf from 'protobufjs/minimal.js';
import {
  CriReader,
  decodeMessage,
  encodeMessage,
  findMessageType,
  type MessageType,
  type SliceableBuffer,
} from './wire.js';

/** Encodes and decodes one CRI message type between plain objects and the wire. */
export interface MessageCodec<T> {
  encode(value: unknown): Buffer;
  decode(buffer: Uint8Array): T;
}

const cache = new Map<string, MessageCodec<unknown>>();

/** Returns the codec of `runtime.v1.<typeName>`. */
export function messageCodec<T>(typeName: string): MessageCodec<T> {
  const cached = cache.get(typeName);
  if (cached) return cached as MessageCodec<T>;
  const type = findMessageType(typeName);
  if (!type) throw new Error(`unknown CRI message type ${typeName}`);
  const toWire = wireConversions[typeName];
  const fromWire = plainConversions[typeName];
  const codec: MessageCodec<unknown> = {
    encode(value) {
      const plain = toWire ? toWire(value) : value;
      if (plain != null && typeof plain !== 'object')
        throw new TypeError(`.runtime.v1.${typeName}: object expected`);
      const writer = protobuf.Writer.create();
      encodeMessage(writer, type, (plain ?? {}) as Record<string, unknown>);
      return asBuffer(writer.finish());
    },
    decode(buffer) {
      const buf = asBuffer(buffer);
      const object = decodeMessage(new CriReader(buf), type, buf.length);
      return fromWire ? fromWire(object) : object;
    },
  };
  cache.set(typeName, codec);
  return codec as MessageCodec<T>;
}

/** The list responses whose items {@link ListResponseDecoder} reuses: field 1, repeated, the only field. */
const reusableLists: Record<
  string,
  { field: string; itemType: string; mapFields: ReadonlySet<number> } | undefined
> = {
  // labels = 8, annotations = 9
  ListContainersResponse: { field: 'containers', itemType: 'Container', mapFields: new Set([8, 9]) },
  // labels = 5, annotations = 6
  ListPodSandboxResponse: { field: 'items', itemType: 'PodSandbox', mapFields: new Set([5, 6]) },
};

/** Requests whose last response a {@link ListResponseDecoder} keeps (the relist's `{}` among them). */
const keptRequests = 4;

interface ReusedItem {
  /** The response that held the item's bytes last, and where. */
  buf: Buffer;
  start: number;
  end: number;
  value: object;
  /** The decode that saw it last, and its place in that response. */
  seen: number;
  index: number;
}

/** The last response to one request: its items by id, and in order. */
interface KeptResponse {
  readonly byId: Map<string, ReusedItem>;
  order: ReusedItem[];
}

/**
 * Whether the item at `buf[start, end)` encodes the same message as `item`: the same bytes, or
 * the same fields with the entries of its map fields in another order. Go's marshaller writes
 * map entries in random order (containerd's labels and annotations differ in order from one
 * list to the next), so byte equality alone would decode every item of a real runtime's list.
 */
function sameItem(
  item: ReusedItem,
  buf: Buffer,
  start: number,
  end: number,
  mapFields: ReadonlySet<number>,
  work: FieldComparison,
): boolean {
  // A reordering keeps the length.
  if (item.end - item.start !== end - start) return false;
  if (buf.compare(item.buf, item.start, item.end, start, end) === 0) return true;
  return sameFieldsAnyMapOrder(item.buf, item.start, item.end, buf, start, end, mapFields, work);
}

/** Map entries of one item beyond which the order-free comparison (quadratic) is not tried. */
const maxComparedMapEntries = 64;

/** (field number, start, end) triples, in a typed array kept from one use to the next. */
class FieldTable {
  data = new Int32Array(3 * 32);
  length = 0;

  push(field: number, start: number, end: number): void {
    if (this.length + 3 > this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length] = field;
    this.data[this.length + 1] = start;
    this.data[this.length + 2] = end;
    this.length += 3;
  }
}

/**
 * The tables {@link sameFieldsAnyMapOrder} fills, kept by each list decoder from one comparison
 * to the next. On containerd every item of every relist goes through the order-free comparison
 * (its maps come in a new order each time), and new arrays for each made two thirds of all an
 * idle agent allocated with 110 pods.
 * @internal
 */
export class FieldComparison {
  readonly a = new FieldTable();
  readonly b = new FieldTable();
  readonly aEntries = new FieldTable();
  readonly bEntries = new FieldTable();
  readonly used = new Uint8Array(maxComparedMapEntries);
  readonly aHashes = new Int32Array(maxComparedMapEntries);
  readonly bHashes = new Int32Array(maxComparedMapEntries);
  /** The last varint read. */
  value = 0;
}

/**
 * Field by field: each field outside `mapFields` has the same bytes at the same place among
 * those fields; the entries of each map field are the same, in any order.
 * @internal
 */
export function sameFieldsAnyMapOrder(
  a: Buffer,
  aStart: number,
  aEnd: number,
  b: Buffer,
  bStart: number,
  bEnd: number,
  mapFields: ReadonlySet<number>,
  work: FieldComparison = new FieldComparison(),
): boolean {
  if (!fieldRanges(a, aStart, aEnd, work.a, work) || !fieldRanges(b, bStart, bEnd, work.b, work))
    return false;
  const n = work.a.length;
  if (n !== work.b.length) return false;
  const af = work.a.data;
  const bf = work.b.data;
  const aEntries = work.aEntries;
  const bEntries = work.bEntries;
  aEntries.length = 0;
  bEntries.length = 0;
  let ai = 0;
  let bi = 0;
  for (;;) {
    while (ai < n && mapFields.has(af[ai] as number)) {
      aEntries.push(af[ai] as number, af[ai + 1] as number, af[ai + 2] as number);
      ai += 3;
    }
    while (bi < n && mapFields.has(bf[bi] as number)) {
      bEntries.push(bf[bi] as number, bf[bi + 1] as number, bf[bi + 2] as number);
      bi += 3;
    }
    if (ai >= n || bi >= n) break;
    const aLen = (af[ai + 2] as number) - (af[ai + 1] as number);
    const bLen = (bf[bi + 2] as number) - (bf[bi + 1] as number);
    if (aLen !== bLen || b.compare(a, af[ai + 1], af[ai + 2], bf[bi + 1], bf[bi + 2]) !== 0) return false;
    ai += 3;
    bi += 3;
  }
  const entries = aEntries.length;
  if (ai < n || bi < n || entries !== bEntries.length) return false;
  if (entries / 3 > maxComparedMapEntries) return false;
  const ae = aEntries.data;
  const be = bEntries.data;
  // Each entry's hash first, so that a candidate is compared byte for byte only when it is
  // likely the one: the keys of labels and annotations share long prefixes.
  const aHashes = work.aHashes;
  const bHashes = work.bHashes;
  for (let i = 0, u = 0; i < entries; i += 3, u++) {
    aHashes[u] = bytesHash(a, ae[i + 1] as number, ae[i + 2] as number);
    bHashes[u] = bytesHash(b, be[i + 1] as number, be[i + 2] as number);
  }
  // Each entry of b matches one entry of a not matched yet (same field, same bytes).
  const used = work.used;
  used.fill(0, 0, entries / 3);
  for (let j = 0, v = 0; j < entries; j += 3, v++) {
    const len = (be[j + 2] as number) - (be[j + 1] as number);
    const hash = bHashes[v];
    let found = false;
    for (let i = 0, u = 0; i < entries; i += 3, u++) {
      if (used[u] || aHashes[u] !== hash || ae[i] !== be[j]) continue;
      if ((ae[i + 2] as number) - (ae[i + 1] as number) !== len) continue;
      if (!sameBytes(a, ae[i + 1] as number, b, be[j + 1] as number, len)) continue;
      used[u] = 1;
      found = true;
      break;
    }
    if (!found) return false;
  }
  return true;
}

/** FNV-1a of `buf[start, end)`: a filter only, equal entries are still compared byte for byte. */
function bytesHash(buf: Buffer, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let k = start; k < end; k++) hash = Math.imul(hash ^ (buf[k] as number), 0x01000193);
  return hash;
}

/**
 * Whether `a[aStart, aStart + length)` and `b[bStart, bStart + length)` hold the same bytes: a
 * loop, since a map entry is a few dozen bytes and a call of `Buffer.compare` costs more.
 */
function sameBytes(a: Buffer, aStart: number, b: Buffer, bStart: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (a[aStart + k] !== b[bStart + k]) return false;
  return true;
}

/**
 * Fills `out` with the top-level fields of the message at `buf[start, end)` as (field number,
 * start, end) triples, each range its tag and value; false if it does not parse.
 */
function fieldRanges(
  buf: Buffer,
  start: number,
  end: number,
  out: FieldTable,
  varint: { value: number },
): boolean {
  out.length = 0;
  let pos = start;
  while (pos < end) {
    const fieldStart = pos;
    pos = readVarint(buf, pos, end, varint);
    if (pos < 0) return false;
    const tag = varint.value;
    const wireType = tag % 8;
    if (wireType === 0) {
      while (pos < end && (buf[pos] as number) >= 0x80) pos++;
      pos++;
    } else if (wireType === 1) {
      pos += 8;
    } else if (wireType === 5) {
      pos += 4;
    } else if (wireType === 2) {
      pos = readVarint(buf, pos, end, varint);
      if (pos < 0) return false;
      pos += varint.value;
    } else {
      return false;
    }
    if (pos > end) return false;
    out.push(Math.floor(tag / 8), fieldStart, pos);
  }
  return true;
}

/** Reads a varint of up to 32 bits at `pos` into `into.value`; the position after it, or -1. */
function readVarint(buf: Buffer, pos: number, end: number, into: { value: number }): number {
  let value = 0;
  for (let shift = 0; shift <= 28; shift += 7) {
    if (pos >= end) return -1;
    const byte = buf[pos++] as number;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) {
      into.value = value;
      return pos;
    }
  }
  return -1;
}

/**
 * Decodes a list response (ListContainers, ListPodSandbox) and returns, for an item whose bytes
 * are the same as in the last response to the same request, the object decoded then: a relist
 * of 100,000 unchanged containers then decodes none of them, and makes no garbage of them (the
 * list decode and its garbage were the largest costs of a relist that grew with the pod count).
 * An item is compared byte for byte with the one at its place in the last response (runtimes list
 * in a steady order), else with the one of its id (field 1, which encoders write first), so a
 * changed item is decoded afresh. Map entries may come in any order (Go writes them so). Items are frozen, as they are shared between calls.
 * One per connection: it holds the last response of up to {@link keptRequests} requests.
 */
export class ListResponseDecoder<T> {
  readonly #field: string;
  readonly #item: MessageType;
  readonly #mapFields: ReadonlySet<number>;
  readonly #whole: MessageCodec<T>;
  /** By request bytes (latin1), most recent last: the items of its last response. */
  readonly #byRequest = new Map<string, KeptResponse>();
  readonly #comparison = new FieldComparison();
  #decodes = 0;

  private constructor(typeName: string, field: string, itemType: string, mapFields: ReadonlySet<number>) {
    const item = findMessageType(itemType);
    if (!item) throw new Error(`unknown CRI message type ${itemType}`);
    this.#field = field;
    this.#item = item;
    this.#mapFields = mapFields;
    this.#whole = messageCodec<T>(typeName);
  }

  /** The decoder of `runtime.v1.<typeName>`, or undefined when its items are not reused. */
  static of<T>(typeName: string): ListResponseDecoder<T> | undefined {
    const list = reusableLists[typeName];
    return list ? new ListResponseDecoder<T>(typeName, list.field, list.itemType, list.mapFields) : undefined;
  }

  /** Decodes the response to `request` (the request's encoded bytes). */
  decode(buffer: Uint8Array, request: Uint8Array): T {
    const buf = asBuffer(buffer);
    const key = asBuffer(request).toString('latin1');
    let kept = this.#byRequest.get(key);
    if (kept) this.#byRequest.delete(key);
    else kept = { byId: new Map(), order: [] };
    const seen = ++this.#decodes;
    const items = this.#items(buf, kept, seen);
    this.#byRequest.set(key, kept);
    if (this.#byRequest.size > keptRequests) this.#evict(kept);
    if (!items) return this.#whole.decode(buffer);
    if (kept.byId.size > items.length) {
      for (const [id, item] of kept.byId) if (item.seen !== seen) kept.byId.delete(id);
    }
    return { [this.#field]: items } as T;
  }

  /**
   * Drops the kept response with the fewest items (the oldest of those), never `current`: one
   * pod's lists (getPodStatus filters by pod UID, a new filter each time) must not push out the
   * relist's full listing.
   */
  #evict(current: KeptResponse): void {
    let smallest: string | undefined;
    let size = Number.POSITIVE_INFINITY;
    for (const [key, kept] of this.#byRequest) {
      if (kept !== current && kept.order.length < size) {
        smallest = key;
        size = kept.order.length;
      }
    }
    if (smallest !== undefined) this.#byRequest.delete(smallest);
  }

  /** The items, or undefined when the response has a field other than the list (decoded whole). */
  #items(buf: Buffer, kept: KeptResponse, seen: number): object[] | undefined {
    const reader = new CriReader(buf);
    const items: object[] = [];
    const last = kept.order;
    const order: ReusedItem[] = [];
    /** Where in the last response the next item is expected. */
    let cursor = 0;
    while (reader.pos < reader.len) {
      // Field 1, length-delimited.
      if (reader.uint32() !== 0x0a) return undefined;
      const length = reader.uint32();
      const start = reader.pos;
      const end = start + length;
      if (end > reader.len) throw new RangeError(`index out of range: ${start} + ${length} > ${reader.len}`);
      let old: ReusedItem | undefined = last[cursor];
      if (!old || old.seen === seen || !sameItem(old, buf, start, end, this.#mapFields, this.#comparison)) {
        const id = buf[start] === 0x0a ? itemId(reader, end) : undefined;
        old = id === undefined ? undefined : kept.byId.get(id);
        if (old && (old.seen === seen || !sameItem(old, buf, start, end, this.#mapFields, this.#comparison)))
          old = undefined;
        if (!old) {
          reader.pos = start;
          const value = deepFreeze(decodeMessage(reader, this.#item, end));
          old = { buf, start, end, value, seen, index: order.length };
          if (id !== undefined) kept.byId.set(id, old);
        }
      }
      if (old.seen !== seen) {
        // Reused: the next item is expected after it.
        cursor = old.index + 1;
        old.buf = buf;
        old.start = start;
        old.end = end;
        old.seen = seen;
      }
      old.index = order.length;
      order.push(old);
      reader.pos = end;
      items.push(old.value);
    }
    kept.order = order;
    return items;
  }
}

/** The id (field 1, a string) at the start of an item ending at `end`, or undefined. */
function itemId(reader: CriReader, end: number): string | undefined {
  reader.pos++;
  const length = reader.uint32();
  const start = reader.pos;
  if (start + length > end) return undefined;
  return (reader.buf as SliceableBuffer).utf8Slice(start, start + length);
}

function deepFreeze<T extends object>(value: T): T {
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null && !ArrayBuffer.isView(v)) deepFreeze(v);
  }
  return Object.freeze(value);
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !Array.isArray(v);
}

// KeyValue.value (container env) is `bytes` on the wire since cri-api 1.36 but strings for
// callers. protobufjs would read a JS string as base64, so convert explicitly.
type Conversion = (value: unknown) => unknown;

function mapEnvs(value: unknown, convert: (v: unknown) => unknown): unknown {
  if (!isPlainObject(value) || !isPlainObject(value.config) || !Array.isArray(value.config.envs))
    return value;
  return {
    ...value,
    config: {
      ...value.config,
      envs: value.config.envs.map((kv: unknown) =>
        isPlainObject(kv) ? { ...kv, value: convert(kv.value) } : kv,
      ),
    },
  };
}

const wireConversions: Record<string, Conversion | undefined> = {
  CreateContainerRequest: (value) =>
    mapEnvs(value, (v) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v)),
};

const plainConversions: Record<string, Conversion | undefined> = {
  CreateContainerRequest: (value) =>
    mapEnvs(value, (v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : (v ?? ''))),
};
