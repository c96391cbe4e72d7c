import { promises as fs } from 'node:fs';
import { type Pod, parseQuantity, type Volume } from '@kubelet-kit/core';
import type { VolumeHost, VolumePlugin, VolumeSpec } from './volume-plugin.js';

/** The plugin name of emptyDir volumes. */
export const EMPTY_DIR_PLUGIN_NAME = 'kubernetes.io/empty-dir';

/**
 * The sum of the pod's container memory limits when every container has one; undefined
 * otherwise (upstream `calculateEmptyDirMemorySize` then falls back to node allocatable).
 */
function podMemoryLimit(pod: Pod): number | undefined {
  let total = 0;
  for (const c of pod.spec?.containers ?? []) {
    const limit = c.resources?.limits?.memory;
    if (limit === undefined) return undefined;
    total += parseQuantity(limit);
  }
  return total > 0 ? total : undefined;
}

/** The tmpfs size of a memory-backed emptyDir: its sizeLimit, capped by the pod's memory limit. */
export function memoryVolumeSize(host: VolumeHost, pod: Pod, sizeLimit: string | number | undefined): number {
  const podLimit = podMemoryLimit(pod) ?? host.nodeAllocatable().memory;
  const limit = sizeLimit === undefined ? 0 : parseQuantity(sizeLimit);
  return Math.floor(limit > 0 ? Math.min(limit, podLimit) : podLimit);
}

/**
 * Makes `dir` a tmpfs mount unless it already is one, so a set-up after an agent restart never
 * mounts twice. Returns false, leaving a plain directory, when `fallbackToDir` and the host
 * refuses the mount.
 */
export async function setUpTmpfsDir(
  host: VolumeHost,
  dir: string,
  sizeBytes: number | undefined,
  fallbackToDir: boolean,
  signal?: AbortSignal,
): Promise<boolean> {
  await fs.mkdir(dir, { recursive: true, mode: 0o750 });
  const existing = await host.mounter.getMount(dir);
  if (existing?.fsType === 'tmpfs') return true;
  try {
    await host.mounter.mountTmpfs(dir, {
      ...(sizeBytes ? { sizeBytes } : {}),
      ...(signal ? { signal } : {}),
    });
    return true;
  } catch (err) {
    if (!fallbackToDir) throw err;
    host.logger.warn({ dir, err: String(err) }, 'tmpfs mount failed; using a plain directory instead');
    return false;
  }
}

/** Unmounts `dir` while it is a mount point, then removes it. */
export async function tearDownDir(host: VolumeHost, dir: string, signal?: AbortSignal): Promise<void> {
  // Bounded: a directory mounted over several times needs one umount each.
  for (let i = 0; i < 8 && (await host.mounter.getMount(dir)); i++) await host.mounter.unmount(dir, signal);
  await fs.rm(dir, { recursive: true, force: true });
}

/** emptyDir (upstream `pkg/volume/emptydir`): a directory, or a tmpfs with `medium: Memory`. */
export class EmptyDirPlugin implements VolumePlugin {
  readonly name = EMPTY_DIR_PLUGIN_NAME;
  readonly requiresRemount = false;
  readonly readOnly = false;
  readonly usesPodVolumeDir = true;
  readonly #host: VolumeHost;

  constructor(options: { host: VolumeHost }) {
    this.#host = options.host;
  }

  canSupport(volume: Volume): boolean {
    return volume.emptyDir !== undefined;
  }

  getPath(spec: VolumeSpec): string {
    return spec.podVolumeDir;
  }

  async setUp(spec: VolumeSpec, signal?: AbortSignal): Promise<void> {
    const source = spec.volume.emptyDir ?? {};
    const dir = spec.podVolumeDir;
    if (source.medium === 'Memory') {
      const size = memoryVolumeSize(this.#host, spec.pod, source.sizeLimit);
      await setUpTmpfsDir(this.#host, dir, size, false, signal);
    } else if (source.medium === undefined || source.medium === '') {
      await fs.mkdir(dir, { recursive: true });
    } else {
      throw new Error(`unknown storage medium ${JSON.stringify(source.medium)}`);
    }
    // Every user of the pod may write here, as upstream.
    await fs.chmod(dir, 0o777);
  }

  tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void> {
    return tearDownDir(this.#host, podVolumeDir, signal);
  }
}
