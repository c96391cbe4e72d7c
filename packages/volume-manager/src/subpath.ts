import { constants as C, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Logger, Subpath, Subpather } from '@kubelet-kit/core';
import { noopLogger } from '@kubelet-kit/core';
import type { Mounter } from './mount.js';

// Safe subPath mounts (upstream `pkg/volume/util/subpath/subpath_linux.go`, CVE-2017-1002101).
// Node has no openat(2); opening `/proc/self/fd/<dirfd>/<name>` is the same call: the kernel
// jumps through the magic link to the open directory and looks up `name` in it, and
// O_NOFOLLOW applies to `name` alone.

/**
 * Thrown when a subPath cannot be bound safely; the runtime reports CreateContainerConfigError.
 *
 * @public
 */
export class SubPathError extends Error {
  readonly code = 'CreateContainerConfigError';
  constructor(message: string) {
    super(message);
    this.name = 'SubPathError';
  }
}

/** Linux O_PATH (Node does not export it): an fd naming an inode, usable only as a path. */
const O_PATH = 0o10000000;
/** Upstream's `openFDFlags`: never follows the element, never opens a FIFO or device for real. */
const openFlags = O_PATH | C.O_NOFOLLOW;
/**
 * The directory under a pod's directory that holds the bind targets (upstream `containerSubPathDirectoryName`).
 *
 * @public
 */
export const containerSubPathDirectoryName = 'volume-subpaths';

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Upstream `mount.PathWithinBase`. */
function pathWithinBase(fullPath: string, basePath: string): boolean {
  const rel = path.relative(basePath, fullPath);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !path.isAbsolute(rel));
}

function fdPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** The elements of `pathname` below `base`; both clean and absolute. */
function segmentsBelow(pathname: string, base: string): string[] {
  const rel = path.relative(base, pathname);
  return rel === '' ? [] : rel.split('/');
}

/**
 * Upstream `doSafeOpen`: opens `pathname` below `base` one element at a time, refusing every
 * symlink, each relative to its parent's fd. Returns an O_PATH handle. `base` must be free of
 * symlinks (the caller resolved it).
 */
export async function safeOpen(pathname: string, base: string): Promise<fs.FileHandle> {
  const clean = path.resolve(pathname);
  const cleanBase = path.resolve(base);
  if (!pathWithinBase(clean, cleanBase))
    throw new SubPathError(`path ${clean} is outside of allowed base ${cleanBase}`);
  const segments = segmentsBelow(clean, cleanBase);
  let parent: fs.FileHandle;
  try {
    parent = await fs.open(cleanBase, openFlags | C.O_DIRECTORY);
  } catch (err) {
    throw new SubPathError(`cannot open directory ${cleanBase}: ${errnoOf(err) ?? String(err)}`);
  }
  let current = cleanBase;
  try {
    for (const [i, seg] of segments.entries()) {
      current = path.join(current, seg);
      const last = i === segments.length - 1;
      // Intermediate elements must be directories; the last one may be anything but a link
      // (O_NONBLOCK: a FIFO never blocks, even were O_PATH not honoured).
      const flags = openFlags | (last ? C.O_NONBLOCK : C.O_DIRECTORY);
      let child: fs.FileHandle;
      try {
        child = await fs.open(fdPath(parent.fd, seg), flags);
      } catch (err) {
        throw new SubPathError(`cannot open ${current}: ${errnoOf(err) ?? String(err)}`);
      }
      await parent.close();
      parent = child;
      // O_PATH|O_NOFOLLOW opens a symlink itself rather than failing: refuse it here.
      if ((await child.stat()).isSymbolicLink())
        throw new SubPathError(`unexpected symlink found ${current}`);
    }
    return parent;
  } catch (err) {
    await parent.close().catch(() => {});
    throw err;
  }
}

/**
 * Upstream `findExistingPrefix`: the longest existing prefix of `pathname` below `base` and the
 * elements still to create. Symlinks are followed here; the caller checks the result.
 */
async function findExistingPrefix(base: string, pathname: string): Promise<[string, string[]]> {
  const dirs = segmentsBelow(pathname, base);
  let fd = await fs.open(base, O_PATH);
  let current = base;
  try {
    for (const [i, dir] of dirs.entries()) {
      let child: fs.FileHandle;
      try {
        child = await fs.open(fdPath(fd.fd, dir), O_PATH);
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return [current, dirs.slice(i)];
        throw err;
      }
      await fd.close();
      fd = child;
      current = path.join(current, dir);
    }
    return [pathname, []];
  } finally {
    await fd.close().catch(() => {});
  }
}

/**
 * Upstream `doSafeMakeDir`: creates the missing directories of `pathname` below `base` one at a
 * time, each relative to its parent's fd and reopened without following links, so nobody can
 * turn one into a symlink under us. Mode `perm`, exactly on the last one (mkdir is under the
 * umask).
 */
export async function safeMakeDir(pathname: string, base: string, perm: number): Promise<void> {
  if (!pathWithinBase(pathname, base))
    throw new SubPathError(`path ${pathname} is outside of allowed base ${base}`);
  try {
    const st = await fs.stat(pathname);
    // It can be outside the base through a link, but there is no race-free check (upstream).
    if (st.isDirectory()) return;
    throw new SubPathError(`mkdir ${pathname}: not a directory`);
  } catch (err) {
    if (err instanceof SubPathError) throw err;
  }
  const [existingPath, toCreate] = await findExistingPrefix(base, pathname);
  let fullExistingPath: string;
  try {
    fullExistingPath = await fs.realpath(existingPath);
  } catch (err) {
    throw new SubPathError(`error opening directory ${existingPath}: ${errnoOf(err) ?? String(err)}`);
  }
  if (!pathWithinBase(fullExistingPath, base))
    throw new SubPathError(`path ${fullExistingPath} is outside of allowed base ${base}`);
  let parent = await safeOpen(fullExistingPath, base);
  let current = fullExistingPath;
  try {
    for (const dir of toCreate) {
      current = path.join(current, dir);
      try {
        await fs.mkdir(fdPath(parent.fd, dir), { mode: perm });
      } catch (err) {
        throw new SubPathError(`cannot create directory ${current}: ${errnoOf(err) ?? String(err)}`);
      }
      let child: fs.FileHandle;
      try {
        child = await fs.open(fdPath(parent.fd, dir), openFlags | C.O_DIRECTORY);
      } catch (err) {
        // Replaced by a link or a file between mkdir and open.
        throw new SubPathError(`cannot open ${current}: ${errnoOf(err) ?? String(err)}`);
      }
      await parent.close();
      parent = child;
    }
    // chmod through the fd's magic link acts on the directory we created, whatever its path now.
    if (toCreate.length > 0) await fs.chmod(fdPath(parent.fd), perm & 0o7777);
  } finally {
    await parent.close().catch(() => {});
  }
}

/**
 * Upstream `getSubpathBindTarget`: the container name is a DNS label, safe as a file name.
 *
 * @public
 */
export function getSubpathBindTarget(subpath: Subpath): string {
  return path.join(
    subpath.podDir,
    containerSubPathDirectoryName,
    subpath.volumeName,
    subpath.containerName,
    String(subpath.volumeMountIndex),
  );
}

/**
 * Options of {@link SafeSubpather}.
 *
 * @public
 */
export interface SafeSubpatherOptions {
  readonly mounter: Mounter;
  readonly logger?: Logger;
  /** The pid whose `/proc/<pid>/fd` holds the opened subPaths; default this process. */
  readonly pid?: number;
}

/**
 * The `Subpather` of a kubelet running on the host (upstream `subpath.New` on Linux).
 * Needs root: it bind-mounts.
 *
 * @public
 */
export class SafeSubpather implements Subpather {
  readonly #mounter: Mounter;
  readonly #log: Logger;
  readonly #pid: number;

  constructor(options: SafeSubpatherOptions) {
    this.#mounter = options.mounter;
    this.#log = options.logger ?? noopLogger;
    this.#pid = options.pid ?? process.pid;
  }

  /** Upstream `SafeMakeDir`: the base's own links are resolved first, as it is trusted. */
  async safeMakeDir(subdir: string, base: string, perm: number): Promise<void> {
    let realBase: string;
    try {
      realBase = await fs.realpath(base);
    } catch (err) {
      throw new SubPathError(`error resolving symlinks in ${base}: ${errnoOf(err) ?? String(err)}`);
    }
    await safeMakeDir(path.join(realBase, subdir), realBase, perm);
  }

  /** Upstream `doBindSubPath`. */
  async prepareSafeSubpath(subpath: Subpath): Promise<string> {
    // Links are resolved once here (one inside the volume is allowed); the safe open below then
    // refuses any link, so a link swapped in after this check fails the open instead of escaping.
    let volumePath: string;
    let resolved: string;
    try {
      volumePath = await fs.realpath(subpath.volumePath);
    } catch (err) {
      throw new SubPathError(
        `error resolving symlinks in ${JSON.stringify(subpath.volumePath)}: ${String(err)}`,
      );
    }
    try {
      resolved = await fs.realpath(subpath.path);
    } catch (err) {
      throw new SubPathError(`error resolving symlinks in ${JSON.stringify(subpath.path)}: ${String(err)}`);
    }
    if (!pathWithinBase(resolved, volumePath))
      throw new SubPathError(
        `subpath ${JSON.stringify(resolved)} not within volume path ${JSON.stringify(volumePath)}`,
      );
    const handle = await safeOpen(resolved, volumePath).catch((err: unknown) => {
      throw new SubPathError(
        `error opening subpath ${resolved}: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    try {
      const opened = await handle.stat();
      const target = getSubpathBindTarget(subpath);
      if (await this.#prepareTarget(target, opened)) return target;
      try {
        // mount(8) with --no-canonicalize hands the magic link to the kernel as it is, which
        // mounts the inode we opened, whatever its path has become since.
        await this.#mounter.bindMount(`/proc/${this.#pid}/fd/${handle.fd}`, target);
      } catch (err) {
        await cleanSubPath(this.#mounter, target).catch((cleanErr: unknown) =>
          this.#log.warn({ target, err: String(cleanErr) }, 'failed to clean subpath'),
        );
        throw new SubPathError(
          `error mounting ${resolved}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      this.#log.debug({ path: resolved, target }, 'bound subPath');
      return target;
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /**
   * Upstream `prepareSubpathTarget`: true when `target` is already a mount of the same file (a
   * container restart); a mount of anything else is unmounted. Otherwise creates an empty
   * directory or file to mount on.
   */
  async #prepareTarget(
    target: string,
    opened: { dev: number; ino: number; isDirectory(): boolean },
  ): Promise<boolean> {
    if (await isMountPoint(this.#mounter, target)) {
      const st = await fs.lstat(target);
      if (st.dev === opened.dev && st.ino === opened.ino) return true;
      await this.#mounter.unmount(target);
    }
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o750 });
    if (opened.isDirectory()) {
      await fs.mkdir(target, { mode: 0o750 }).catch((err: unknown) => {
        if (errnoOf(err) !== 'EEXIST') throw err;
      });
    } else {
      // A file is enough for any non-directory: the bind mount gives it the source's type.
      await fs.writeFile(target, '', { mode: 0o640, flag: 'a' });
    }
    return false;
  }

  cleanSubPaths(podDir: string, volumeName: string): Promise<void> {
    return cleanSubPaths(this.#mounter, podDir, volumeName);
  }
}

async function isMountPoint(mounter: Mounter, target: string): Promise<boolean> {
  const resolved = path.resolve(target);
  return (await mounter.list()).some((m) => path.resolve(m.mountPoint) === resolved);
}

/**
 * Upstream `mount.CleanupMountPoint` for one bind target: unmounts every mount stacked on it,
 * then removes the empty file or directory. Never recurses: under a mount lies the volume.
 */
async function cleanSubPath(mounter: Mounter, target: string): Promise<void> {
  for (let i = 0; i < 8 && (await isMountPoint(mounter, target)); i++) await mounter.unmount(target);
  if (await isMountPoint(mounter, target)) throw new SubPathError(`${target} is still mounted`);
  let st: Awaited<ReturnType<typeof fs.lstat>>;
  try {
    st = await fs.lstat(target);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  if (st.isDirectory()) await fs.rmdir(target);
  else await fs.unlink(target);
}

/**
 * Upstream `doCleanSubPaths`: unmounts and removes
 * `<podDir>/volume-subpaths/<volume>/<container>/<index>`, then the emptied directories.
 *
 * @public
 */
export async function cleanSubPaths(mounter: Mounter, podDir: string, volumeName: string): Promise<void> {
  const subPathDir = path.join(podDir, containerSubPathDirectoryName, volumeName);
  let containers: string[];
  try {
    containers = await fs.readdir(subPathDir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  for (const container of containers) {
    const containerDir = path.join(subPathDir, container);
    if (!(await fs.lstat(containerDir)).isDirectory()) continue;
    for (const index of await fs.readdir(containerDir))
      await cleanSubPath(mounter, path.join(containerDir, index));
    await fs.rmdir(containerDir);
  }
  await fs.rmdir(subPathDir);
  // The last volume's cleanup removes the whole directory.
  await fs.rmdir(path.join(podDir, containerSubPathDirectoryName)).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOTEMPTY' && errnoOf(err) !== 'EEXIST' && errnoOf(err) !== 'ENOENT') throw err;
  });
}

/**
 * Every volume's {@link cleanSubPaths} of a pod: for pod directories left without a pod.
 *
 * @public
 */
export async function cleanPodSubPaths(subpather: Subpather, podDir: string): Promise<void> {
  let volumes: string[];
  try {
    volumes = await fs.readdir(path.join(podDir, containerSubPathDirectoryName));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  for (const volume of volumes) await subpather.cleanSubPaths(podDir, volume);
}
