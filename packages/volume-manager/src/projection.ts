import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { KeyToPath, Pod, Volume } from '@kubelet-kit/core';
import { AtomicWriter, type FileProjection } from './atomic-writer.js';
import { setUpTmpfsDir, tearDownDir } from './empty-dir.js';
import type { VolumeHost, VolumePlugin, VolumeSpec } from './volume-plugin.js';

/** The API default of `defaultMode` for configMap, secret, downwardAPI and projected volumes. */
export const DEFAULT_PROJECTION_MODE = 0o644;

/** A projected payload: relative path → file. */
export type Payload = Map<string, FileProjection>;

/** Byte data of a key, from a string map (`data`) or a base64 map. */
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
      throw new Error(
        `${what} references non-existent ${what === 'configmap' ? 'config' : 'secret'} key: ${item.key}`,
      );
    }
    payload.set(item.path, { data: value, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/** Decodes a base64 map (Secret `data`, ConfigMap `binaryData`). */
export function base64Get(
  map: Readonly<Record<string, string>> | undefined,
  key: string,
): Uint8Array | undefined {
  const v = map?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64');
}

/**
 * Gives the pod's fsGroup group ownership of the new data directory, with group read (and for
 * directories execute and setgid) added, as upstream's `SetVolumeOwnership` for read-only volumes.
 */
async function setVolumeOwnership(dir: string, fsGroup: number): Promise<void> {
  const walk = async (p: string): Promise<void> => {
    const st = await fs.lstat(p);
    if (st.isSymbolicLink()) return;
    await fs.chown(p, st.uid, fsGroup);
    let mode = (st.mode & 0o7777) | 0o440;
    if (st.isDirectory()) mode |= 0o2000 | 0o110;
    await fs.chmod(p, mode);
    if (st.isDirectory()) for (const e of await fs.readdir(p)) await walk(path.join(p, e));
  };
  await walk(dir);
}

/**
 * The shared half of the API data volumes (configMap, secret, downwardAPI, projected): a wrapped
 * emptyDir (tmpfs for secrets) holding an {@link AtomicWriter} projection, re-projected on each
 * set-up.
 */
export abstract class ProjectionPlugin implements VolumePlugin {
  abstract readonly name: string;
  readonly requiresRemount = true;
  readonly readOnly = true;
  readonly usesPodVolumeDir = true;
  protected readonly host: VolumeHost;
  /** Whether the content lives on tmpfs (secrets, and projected volumes holding secrets or tokens). */
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
    // The payload first: a volume whose source is missing is not created at all.
    const payload = await this.makePayload(spec.pod, spec.volume, signal);
    const dir = spec.podVolumeDir;
    const memory =
      typeof this.memoryBacked === 'function' ? this.memoryBacked(spec.volume) : this.memoryBacked;
    if (memory) await setUpTmpfsDir(this.host, dir, undefined, true, signal);
    else await fs.mkdir(dir, { recursive: true });
    await fs.chmod(dir, 0o777);
    const writer = new AtomicWriter({
      targetDir: dir,
      logContext: `${spec.pod.metadata?.namespace}/${spec.pod.metadata?.name}/${spec.volume.name}`,
      logger: this.host.logger,
      clock: this.host.clock,
    });
    const fsGroup = spec.pod.spec?.securityContext?.fsGroup;
    await writer.write(
      payload,
      fsGroup === undefined ? undefined : (sub) => setVolumeOwnership(path.join(dir, sub), fsGroup),
    );
  }

  tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void> {
    return tearDownDir(this.host, podVolumeDir, signal);
  }
}
