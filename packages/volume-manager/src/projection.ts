import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { KeyToPath, ObjectGetter, Pod, Volume } from '@kubelet-kit/core';
import { AtomicWriter, DATA_DIR_NAME, type FileProjection } from './atomic-writer.js';
import { memoryVolumeSize, setEmptyDirOwnership, setUpDir, setUpTmpfsDir, tearDownDir } from './empty-dir.js';
import { podVolumeOwnership, setVolumeOwnership } from './volume-linux.js';
import { type VolumeHost, type VolumePlugin, VolumeSetUpError, type VolumeSpec } from './volume-plugin.js';

/**
 * The API default of `defaultMode` for configMap, secret, downwardAPI and projected volumes.
 *
 * @public
 */
export const DEFAULT_PROJECTION_MODE = 0o644;

/**
 * A projected payload: relative path → file.
 *
 * @public
 */
export type Payload = Map<string, FileProjection>;

/**
 * Byte data of a key, from a string map (`data`) or a base64 map.
 *
 * @public
 */
export interface KeyedData {
  /** Already decoded. */
  readonly get: (key: string) => Uint8Array | string | undefined;
  /** Every key, for a projection without items. */
  readonly keys: () => Iterable<string>;
}

/**
 * Builds a payload from keyed data as upstream's configmap/secret `MakePayload`: every key when
 * there are no items; otherwise each item's key to its path with its mode, where a missing key
 * is skipped when `optional` and an error (`<what> references non-existent <kind> key`) otherwise.
 *
 * @public
 */
export function makeKeyedPayload(
  what: 'configmap' | 'secret',
  data: KeyedData,
  items: readonly KeyToPath[] | undefined,
  defaultMode: number | undefined,
  optional: boolean,
): Payload {
  if (defaultMode === undefined) throw new Error('no defaultMode used, not even the default value for it');
  const payload: Payload = new Map();
  if (!items || items.length === 0) {
    for (const key of data.keys()) {
      const value = data.get(key);
      if (value !== undefined) payload.set(key, { data: value, mode: defaultMode });
    }
    return payload;
  }
  for (const item of items) {
    const value = data.get(item.key);
    if (value === undefined) {
      if (optional) continue;
      // Upstream's two wordings differ: only the configMap one names the object kind first.
      throw new Error(
        what === 'configmap'
          ? `configmap references non-existent config key: ${item.key}`
          : `references non-existent secret key: ${item.key}`,
      );
    }
    payload.set(item.path, { data: value, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/**
 * Throws the errors collected while building a payload the way upstream's
 * `utilerrors.NewAggregate` reads: nothing for none, the error itself for one, otherwise
 * `[a, b]` with nested aggregates flattened and repeated messages dropped.
 */
export function throwAggregate(errors: readonly unknown[]): void {
  const flat = errors.flatMap((e) => (e instanceof AggregateError ? (e.errors as unknown[]) : [e]));
  if (flat.length === 0) return;
  if (flat.length === 1) throw flat[0];
  const messages = [...new Set(flat.map((e) => (e instanceof Error ? e.message : String(e))))];
  throw new AggregateError(flat, messages.length === 1 ? messages[0] : `[${messages.join(', ')}]`);
}

/** Decodes a base64 map (Secret `data`, ConfigMap `binaryData`). */
export function base64Get(
  map: Readonly<Record<string, string>> | undefined,
  key: string,
): Uint8Array | undefined {
  const v = ownValue(map, key);
  return v === undefined ? undefined : Buffer.from(v, 'base64');
}

/**
 * `map[key]` for an own key only: a key such as `constructor` or `toString` must not find
 * Object.prototype's members (Go maps have no prototype).
 */
export function ownValue<T>(map: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return map !== undefined && Object.hasOwn(map, key) ? map[key] : undefined;
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** Go's `filepath.Clean` for a mount path: normalized, no trailing slash except for `/`. */
function cleanMountPath(p: string): string {
  const n = path.posix.normalize(p);
  return n.length > 1 ? n.replace(/\/+$/, '') : n;
}

/**
 * The directories to create inside a volume for other volumes mounted beneath it in the same
 * container (upstream `getNestedMountpoints`): a read-only API data volume could not get the
 * mount point made later. Only the outermost of nested mount points counts; a mount path that
 * climbs out with `../` is refused.
 */
function nestedMountpoints(volumeName: string, pod: Pod): string[] {
  const out: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const all = (c.volumeMounts ?? []).map((m) => cleanMountPath(m.mountPath)).sort();
    const mine = (c.volumeMounts ?? [])
      .filter((m) => m.name === volumeName)
      .map((m) => cleanMountPath(m.mountPath));
    for (const mp of mine) {
      if (mp.startsWith('../')) throw new Error(`Invalid container mount point ${mp}`);
      const prefix = `${mp}/`;
      let previous = '';
      for (const other of all) {
        if (!other.startsWith(prefix)) continue;
        if (previous !== '' && other.startsWith(previous)) continue;
        previous = `${other}/`;
        out.push(other.slice(prefix.length));
      }
    }
  }
  return out;
}

/**
 * The shared half of the API data volumes (configMap, secret, downwardAPI, projected): a wrapped
 * emptyDir (tmpfs for all but configMaps) holding an {@link AtomicWriter} projection,
 * re-projected on each set-up.
 *
 * @public
 */
export abstract class ProjectionPlugin implements VolumePlugin {
  abstract readonly name: string;
  readonly requiresRemount = true;
  readonly readOnly = true;
  readonly usesPodVolumeDir = true;
  protected readonly host: VolumeHost;
  /** Whether the content lives on tmpfs (secret, downwardAPI and projected volumes). */
  protected abstract readonly memoryBacked: boolean | ((volume: Volume) => boolean);

  constructor(options: { host: VolumeHost }) {
    this.host = options.host;
  }

  abstract canSupport(volume: Volume): boolean;

  /** Builds the volume's payload; throws when the volume cannot be set up. */
  protected abstract makePayload(pod: Pod, volume: Volume, signal?: AbortSignal): Promise<Payload>;

  getPath(spec: VolumeSpec): string {
    return spec.podVolumeDir;
  }

  async setUp(spec: VolumeSpec, signal?: AbortSignal): Promise<void> {
    // Upstream's MounterArgs, checked before anything is made.
    const { fsGroup } = podVolumeOwnership(spec.pod);
    // The payload first: a volume whose source is missing is not created at all.
    const payload = await this.makePayload(spec.pod, spec.volume, signal);
    const dir = spec.podVolumeDir;
    const memory =
      typeof this.memoryBacked === 'function' ? this.memoryBacked(spec.volume) : this.memoryBacked;
    // Upstream's wrapped emptyDir is set up (ownership included) only until its ready file
    // exists, i.e. until the first projection succeeded.
    const firstSetUp = !(await exists(path.join(dir, DATA_DIR_NAME)));
    // The wrapped emptyDir: a memory-backed one is sized like any memory emptyDir without a
    // sizeLimit (the pod's memory limit or node allocatable).
    if (memory) {
      await setUpTmpfsDir(this.host, dir, memoryVolumeSize(this.host, spec.pod, undefined), true, signal);
    } else {
      await setUpDir(dir);
    }
    if (firstSetUp) await setEmptyDirOwnership(this.host, dir, fsGroup);
    for (const sub of nestedMountpoints(spec.volume.name, spec.pod)) {
      await fs.mkdir(path.join(dir, sub), { recursive: true, mode: 0o755 });
    }
    const writer = new AtomicWriter({
      targetDir: dir,
      logContext: `${spec.pod.metadata?.namespace}/${spec.pod.metadata?.name}/${spec.volume.name}`,
      logger: this.host.logger,
      clock: this.host.clock,
    });
    // As upstream, after each new data directory is written and before it becomes visible, the
    // whole volume (root, nested mount points, links of earlier writes) gets the group,
    // read-only style. No change policy, as upstream: with OnRootMismatch an update would skip
    // the new files, since the root already fits.
    const setPerms = async () =>
      setVolumeOwnership({
        dir,
        fsGroup,
        readOnly: this.readOnly,
        logger: this.host.logger,
        clock: this.host.clock,
      });
    await writer.write(payload, fsGroup === undefined ? undefined : setPerms);
  }

  tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void> {
    return tearDownDir(this.host, podVolumeDir, signal);
  }
}

/** Where a configMap or secret volume's object comes from, for {@link objectVolumePayload}. */
interface ObjectVolumeSource<T> {
  /** `configmap` or `secret`: names the payload's checks. */
  readonly what: 'configmap' | 'secret';
  /** The volume type, for the error when there is no getter: `configMap`, `secret`. */
  readonly volumeType: string;
  readonly name: string;
  readonly optional: boolean;
  readonly items: readonly KeyToPath[] | undefined;
  readonly defaultMode: number | undefined;
  /** The agent's object getter, if it has one. */
  readonly getter: ObjectGetter | undefined;
  readonly read: (getter: ObjectGetter) => Promise<T | undefined>;
  readonly data: (object: T) => KeyedData;
}

/**
 * The payload of a configMap or secret volume (upstream's SetUpAt of both plugins): the object
 * read and projected, nothing when an optional one is missing.
 */
export async function objectVolumePayload<T>(source: ObjectVolumeSource<T>): Promise<Payload> {
  const { getter, what, name } = source;
  if (!getter)
    throw new VolumeSetUpError('FailedMount', `no object getter configured for ${source.volumeType} volumes`);
  const object = await source.read(getter);
  if (!object) {
    if (!source.optional)
      throw new VolumeSetUpError('FailedMount', `${what}s ${JSON.stringify(name)} not found`);
    return new Map();
  }
  return makeKeyedPayload(
    what,
    source.data(object),
    source.items,
    source.defaultMode ?? DEFAULT_PROJECTION_MODE,
    source.optional,
  );
}
