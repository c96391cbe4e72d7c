import { promises as fs } from 'node:fs';
import { isPodLevelResourcesSet, type Pod, parseQuantity, podLimits, type Volume } from '@kubelet-kit/core';
import { podVolumeOwnership, setVolumeOwnership } from './volume-linux.js';
import type { VolumeHost, VolumePlugin, VolumeSpec } from './volume-plugin.js';

/**
 * The plugin name of emptyDir volumes.
 *
 * @public
 */
export const EMPTY_DIR_PLUGIN_NAME = 'kubernetes.io/empty-dir';

/**
 * The pod's memory limit as its cgroup gets it (upstream `ResourceConfigForPod`, which
 * `calculateEmptyDirMemorySize` calls so the tmpfs and the cgroup agree): the pod's limits
 * (upstream `PodLimits`: pod-level resources, sidecars, overhead), but only when every container
 * and init container limits memory or the pod sets a memory limit itself.
 */
function podMemoryLimit(pod: Pod): number | undefined {
  let declared = true;
  const limits = podLimits(pod, {
    containerFn: (list) => {
      if (list.memory === undefined || parseQuantity(list.memory) === 0) declared = false;
    },
  });
  const podLevel = pod.spec?.resources?.limits?.memory;
  if (isPodLevelResourcesSet(pod) && podLevel !== undefined && parseQuantity(podLevel) !== 0) declared = true;
  return declared ? (limits.memory ?? 0) : undefined;
}

/**
 * The tmpfs size of a memory-backed emptyDir (upstream `calculateEmptyDirMemorySize`, with
 * SizeMemoryBackedVolumes GA): node allocatable memory, lowered to the pod's memory limit and
 * then to `sizeLimit` when those are positive and not larger.
 *
 * @public
 */
export function memoryVolumeSize(host: VolumeHost, pod: Pod, sizeLimit: string | number | undefined): number {
  let size = host.nodeAllocatable().memory;
  const podLimit = podMemoryLimit(pod);
  if (podLimit !== undefined && podLimit > 0 && podLimit <= size) size = podLimit;
  const limit = sizeLimit === undefined ? 0 : parseQuantity(sizeLimit);
  if (limit > 0 && limit <= size) size = limit;
  // Quantity.Value() rounds up.
  return Math.ceil(size);
}

/**
 * Creates `dir` with mode 0777, as upstream's `setupDir`: the mode is set explicitly only when
 * the permission bits differ (a umask), so the setgid bit of an fsGroup stays.
 */
export async function setUpDir(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o777 });
  const st = await fs.lstat(dir);
  if ((st.mode & 0o777) !== 0o777) await fs.chmod(dir, 0o777);
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
  // The directory beneath is prepared first; a tmpfs root keeps its own mode (1777), which
  // upstream never changes after mounting.
  await setUpDir(dir);
  // Upstream setupTmpfs: already a tmpfs mount point, nothing to do. A stat and a statfs, not
  // the host's whole mount table, on every set-up (each pod sync re-projects API data volumes).
  const { medium, isMountPoint } = await host.mounter.getMountMedium(dir);
  if (isMountPoint && medium === 'Memory') return true;
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

/**
 * The ownership step of upstream's emptyDir `SetUpAt`: with an fsGroup the directory gets the
 * group, group read-write and setgid. Upstream passes no change policy (the pod's
 * `fsGroupChangePolicy` does not apply to emptyDir) and ignores a failure, which is logged here.
 */
export async function setEmptyDirOwnership(
  host: VolumeHost,
  dir: string,
  fsGroup: number | undefined,
): Promise<void> {
  try {
    await setVolumeOwnership({ dir, fsGroup, readOnly: false, logger: host.logger, clock: host.clock });
  } catch (err) {
    host.logger.warn({ dir, fsGroup, err: String(err) }, 'setting volume ownership failed');
  }
}

/**
 * Unmounts `dir` while it is a mount point, then removes it (upstream emptyDir `TearDownAt`:
 * nothing to do for a missing directory, `GetMountMedium` says whether to unmount).
 */
export async function tearDownDir(host: VolumeHost, dir: string, signal?: AbortSignal): Promise<void> {
  // Bounded: a directory mounted over several times needs one umount each.
  for (let i = 0; i < 8 && (await isMountPoint(host, dir)); i++) await host.mounter.unmount(dir, signal);
  await fs.rm(dir, { recursive: true, force: true });
}

async function isMountPoint(host: VolumeHost, dir: string): Promise<boolean> {
  try {
    return (await host.mounter.getMountMedium(dir)).isMountPoint;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * emptyDir (upstream `pkg/volume/emptydir`): a directory, or a tmpfs with `medium: Memory`.
 *
 * @public
 */
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
    const { fsGroup } = podVolumeOwnership(spec.pod);
    if (source.medium === 'Memory') {
      const size = memoryVolumeSize(this.#host, spec.pod, source.sizeLimit);
      await setUpTmpfsDir(this.#host, dir, size, false, signal);
    } else if (source.medium === undefined || source.medium === '') {
      // Every user of the pod may write here, as upstream.
      await setUpDir(dir);
    } else {
      throw new Error(`unknown storage medium ${JSON.stringify(source.medium)}`);
    }
    // Once, as upstream's ready file makes it: the reconciler sets an emptyDir up only while it
    // is not mounted, before any container of the pod runs.
    await setEmptyDirOwnership(this.#host, dir, fsGroup);
  }

  tearDown(podVolumeDir: string, signal?: AbortSignal): Promise<void> {
    return tearDownDir(this.#host, podVolumeDir, signal);
  }
}
