import { runtime } from './generated/cri.js';

/** The parts of a protobufjs static message class the codec uses. */
interface StaticMessageClass {
  fromObject(object: Record<string, unknown>): object;
  encode(message: object): { finish(): Uint8Array };
  decode(buffer: Uint8Array): object;
  toObject(message: object, options: Record<string, unknown>): Record<string, unknown>;
}

// int64 as number (callers never see Long), enums as numbers, bytes as Buffer, and every
// scalar/list/map present so response types can declare them as required.
const toObjectOptions = { longs: Number, enums: Number, defaults: true, arrays: true, objects: true };

/** Encodes and decodes one CRI message type between plain objects and the wire. */
export interface MessageCodec<T> {
  encode(value: unknown): Buffer;
  decode(buffer: Uint8Array): T;
}

const classes = runtime.v1 as unknown as Record<string, StaticMessageClass | undefined>;
const cache = new Map<string, MessageCodec<unknown>>();

/** Returns the codec of `runtime.v1.<typeName>`. */
export function messageCodec<T>(typeName: string): MessageCodec<T> {
  const cached = cache.get(typeName);
  if (cached) return cached as MessageCodec<T>;
  const cls = classes[typeName];
  if (!cls) throw new Error(`unknown CRI message type ${typeName}`);
  const toWire = wireConversions[typeName];
  const fromWire = plainConversions[typeName];
  const codec: MessageCodec<unknown> = {
    encode(value) {
      const plain = toWire ? toWire(value) : value;
      return Buffer.from(cls.encode(cls.fromObject((plain ?? {}) as Record<string, unknown>)).finish());
    },
    decode(buffer) {
      const object = dropNulls(cls.toObject(cls.decode(buffer), toObjectOptions));
      return fromWire ? fromWire(object) : object;
    },
  };
  cache.set(typeName, codec);
  return codec as MessageCodec<T>;
}

/** toObject with `defaults` sets absent sub-messages to null; the public types say "absent". */
function dropNulls(value: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (v === null) delete value[key];
    else if (Array.isArray(v)) {
      for (const item of v) if (isPlainObject(item)) dropNulls(item);
    } else if (isPlainObject(v)) dropNulls(v);
  }
  return value;
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
