import { constants, promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type Clock, type Logger, noopLogger, type Pod, RealClock } from '@kubelet-kit/core';
import { VolumeSetUpError } from './volume-plugin.js';

// Upstream pkg/volume/volume_linux.go: the bits a volume gets for its fsGroup.
const rwMask = 0o660;
const roMask = 0o440;
const execMask = 0o110;
const setgidBit = 0o2000;

/** Upstream's `firstEventReportDuration`: when a slow ownership change is first reported. */
export const VOLUME_OWNERSHIP_WARNING_MS = 30_000;

/** Linux `O_PATH` (the same on x86-64 and arm64); Node does not export it. */
const O_PATH = 0o10000000;
const openDirFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const openEntryFlags = O_PATH | constants.O_NOFOLLOW;

/**
 * `pod.spec.securityContext.fsGroupChangePolicy`.
 *
 * @public
 */
export type FSGroupChangePolicy = 'Always' | 'OnRootMismatch';

/**
 * What {@link setVolumeOwnership} changes (upstream `NewVolumeOwnership` and `ChangePermissions`).
 *
 * @public
 */
export interface VolumeOwnershipOptions {
  /** The volume directory. */
  readonly dir: string;
  /** The group to give the volume; nothing is done when undefined. */
  readonly fsGroup: number | undefined;
  /** Undefined means `Always`, as upstream; `OnRootMismatch` skips a volume whose root already fits. */
  readonly fsGroupChangePolicy?: FSGroupChangePolicy | undefined;
  /** Whether containers see the volume read-only: group read (`0440`) instead of read-write (`0660`). */
  readonly readOnly: boolean;
  /** Gets chown and chmod failures and the slow-change warning. */
  readonly logger?: Logger;
  /** Times the slow-change warning. */
  readonly clock?: Clock;
}

/**
 * The fsGroup and fsGroupChangePolicy a pod's volumes are set up with (upstream's
 * `MounterArgs.FsGroup` and `FSGroupChangePolicy`, from the pod security context). Throws a
 * {@link VolumeSetUpError} naming the pod and field for values the API server would refuse.
 *
 * @public
 */
export function podVolumeOwnership(pod: Pod): {
  fsGroup: number | undefined;
  fsGroupChangePolicy: FSGroupChangePolicy | undefined;
} {
  const sc = pod.spec?.securityContext;
  const fsGroup = sc?.fsGroup ?? undefined;
  const policy = sc?.fsGroupChangePolicy ?? undefined;
  const who = `pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
  if (fsGroup !== undefined && !(Number.isInteger(fsGroup) && fsGroup >= 0 && fsGroup <= 2147483647)) {
    throw new VolumeSetUpError(
      'FailedMount',
      `${who}: spec.securityContext.fsGroup: Invalid value: ${JSON.stringify(fsGroup)}: must be between 0 and 2147483647, inclusive`,
    );
  }
  if (policy !== undefined && policy !== 'Always' && policy !== 'OnRootMismatch') {
    throw new VolumeSetUpError(
      'FailedMount',
      `${who}: spec.securityContext.fsGroupChangePolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Always", "OnRootMismatch"`,
    );
  }
  return { fsGroup, fsGroupChangePolicy: policy };
}

/**
 * Whether the volume root lacks what an fsGroup gives it (upstream `requiresPermissionChange`):
 * the group, the setgid bit, or the permission bits (`0770`, or `0550` read-only) as a subset of
 * its own. A root that cannot be read, or is no directory, always needs the change.
 */
export async function requiresPermissionChange(
  rootDir: string,
  fsGroup: number,
  readOnly: boolean,
): Promise<boolean> {
  let st: Stats;
  try {
    // Upstream stats the root through a symlink (os.Stat).
    st = await fs.stat(rootDir);
  } catch {
    return true;
  }
  if (st.gid !== fsGroup) return true;
  if (!st.isDirectory()) return true;
  const wanted = (readOnly ? roMask : rwMask) | execMask;
  return (st.mode & wanted) !== wanted || (st.mode & setgidBit) === 0;
}

/**
 * Whether the change can be skipped (upstream `skipPermissionChange`): only with
 * `OnRootMismatch`, and only when the root already fits.
 */
export async function skipPermissionChange(
  dir: string,
  fsGroup: number,
  policy: FSGroupChangePolicy | undefined,
  readOnly: boolean,
): Promise<boolean> {
  if (policy !== 'OnRootMismatch') return false;
  return !(await requiresPermissionChange(dir, fsGroup, readOnly));
}

/**
 * Gives a volume to the pod's fsGroup, as upstream's `SetVolumeOwnership`: every entry gets the
 * group (its owner stays), and everything but symlinks gains group read and write (`0660`, or
 * `0440` read-only); directories also get group execute and setgid, so that files made later
 * inherit the group. Links themselves are regrouped but never followed, and their targets are
 * neither changed nor entered.
 *
 * A failed chown or chmod is logged and the walk goes on; a directory that cannot be read ends
 * it with the error. Unlike upstream, which names each entry by its full path and chmods
 * through it, each directory is held open while its entries are changed (`/proc/self/fd`), so
 * a directory swapped for a symlink during the walk cannot lead it out of the volume.
 *
 * @public
 */
export async function setVolumeOwnership(options: VolumeOwnershipOptions): Promise<void> {
  const { dir, fsGroup, readOnly } = options;
  if (fsGroup === undefined) return;
  const logger = options.logger ?? noopLogger;
  const clock = options.clock ?? new RealClock();
  // Registered before the first await: a fake clock sees it as soon as the call returns.
  const timer = clock.setTimeout(() => {
    logger.warn(
      { path: dir },
      `Setting volume ownership for ${dir} and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699`,
    );
  }, VOLUME_OWNERSHIP_WARNING_MS);
  try {
    if (await skipPermissionChange(dir, fsGroup, options.fsGroupChangePolicy, readOnly)) {
      logger.debug({ path: dir }, 'Skipping permission and ownership change for volume');
      return;
    }
    await new OwnershipWalk(fsGroup, readOnly, logger).root(dir);
  } finally {
    timer.cancel();
  }
}

/** The mode upstream's `changeFilePermission` sets: the current bits (setuid and sticky too) plus the mask. */
function newMode(st: Stats, readOnly: boolean): number {
  let mask = readOnly ? roMask : rwMask;
  if (st.isDirectory()) mask |= setgidBit | execMask;
  return (st.mode & 0o7777) | mask;
}

function fdPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

/** Upstream's `walkDeep`: children before their directory, entries unsorted, links not followed. */
class OwnershipWalk {
  readonly #fsGroup: number;
  readonly #readOnly: boolean;
  readonly #logger: Logger;

  constructor(fsGroup: number, readOnly: boolean, logger: Logger) {
    this.#fsGroup = fsGroup;
    this.#readOnly = readOnly;
    this.#logger = logger;
  }

  async root(dir: string): Promise<void> {
    const st = await fs.lstat(dir);
    if (!st.isDirectory()) {
      // A root that is no directory is changed like any entry, from its parent.
      const parent = await fs.open(path.dirname(dir), openDirFlags);
      try {
        await this.#entry(fdPath(parent), path.basename(dir), st, dir);
      } finally {
        await parent.close();
      }
      return;
    }
    await this.#directory(dir, dir);
  }

  /** Walks the directory at `at` (reached without following a link), then changes it. */
  async #directory(at: string, shown: string): Promise<void> {
    const handle = await fs.open(at, openDirFlags);
    try {
      // Stated through the open descriptor: the directory itself, whatever `at` names by now.
      const st = await handle.stat();
      const here = fdPath(handle);
      for (const name of await fs.readdir(here)) {
        await this.#entry(here, name, await fs.lstat(`${here}/${name}`), `${shown}/${name}`);
      }
      await this.#change(
        shown,
        st,
        () => handle.chown(-1, this.#fsGroup),
        (mode) => handle.chmod(mode),
      );
    } finally {
      await handle.close();
    }
  }

  /** One entry of the directory open at `dirFd`, as `lstat` found it; `shown` names it in logs. */
  async #entry(dirFd: string, name: string, st: Stats, shown: string): Promise<void> {
    const at = `${dirFd}/${name}`;
    if (st.isDirectory()) return this.#directory(at, shown);
    if (st.isSymbolicLink()) {
      // The link gets the group; chmod would go through it to its target, so it is left out.
      await this.#change(shown, st, () => fs.lchown(at, -1, this.#fsGroup));
      return;
    }
    // Held by an O_PATH descriptor: chown and chmod through /proc/self/fd reach this very file,
    // never a link put in its place.
    const handle = await fs.open(at, openEntryFlags);
    try {
      const current = await handle.stat();
      if (current.isSymbolicLink()) {
        await this.#change(shown, current, () => fs.lchown(at, -1, this.#fsGroup));
        return;
      }
      await this.#change(
        shown,
        current,
        () => fs.chown(fdPath(handle), -1, this.#fsGroup),
        (mode) => fs.chmod(fdPath(handle), mode),
      );
    } finally {
      await handle.close();
    }
  }

  /** Upstream's `changeFilePermission`: chown then chmod, each failure logged, not returned. */
  async #change(
    shown: string,
    st: Stats,
    chown: () => Promise<void>,
    chmod?: (mode: number) => Promise<void>,
  ): Promise<void> {
    try {
      await chown();
    } catch (err) {
      this.#logger.error({ path: shown, err: String(err) }, 'Lchown failed');
    }
    if (!chmod) return;
    try {
      // The mode from before the chown: a chown clears setuid and setgid of an executable.
      await chmod(newMode(st, this.#readOnly));
    } catch (err) {
      this.#logger.error({ path: shown, err: String(err) }, 'chmod failed');
    }
  }
}
