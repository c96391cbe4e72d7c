import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';

/**
 * One line of `/proc/self/mountinfo`.
 *
 * @public
 */
export interface MountInfo {
  readonly mountPoint: string;
  readonly fsType: string;
  readonly source: string;
  readonly options: string;
}

/**
 * The medium of a directory's filesystem, as upstream's `GetMountMedium` names it: `Memory` for
 * tmpfs, `HugePages` for hugetlbfs, `''` (the default medium) for anything else.
 *
 * @public
 */
export type MountMedium = 'Memory' | 'HugePages' | '';

/**
 * What {@link Mounter.getMountMedium} found.
 *
 * @public
 */
export interface MountMediumInfo {
  /** What statfs says the directory's filesystem is. */
  readonly medium: MountMedium;
  /** Whether the directory is (likely) a mount point: upstream `!IsLikelyNotMountPoint`. */
  readonly isMountPoint: boolean;
}

/**
 * What the volume plugins need from the host's mount table (upstream `mount.Interface`).
 *
 * @public
 */
export interface Mounter {
  /** Mounts a tmpfs at `target`, limited to `sizeBytes` when given. */
  mountTmpfs(
    target: string,
    options: { readonly sizeBytes?: number; readonly signal?: AbortSignal },
  ): Promise<void>;
  /**
   * Bind-mounts `source` at `target` without mount(8) resolving either path first
   * (`--no-canonicalize`): a `/proc/<pid>/fd/<n>` source mounts the inode that fd holds.
   */
  bindMount(source: string, target: string, signal?: AbortSignal): Promise<void>;
  unmount(target: string, signal?: AbortSignal): Promise<void>;
  /** The mount table. */
  list(): Promise<readonly MountInfo[]>;
  /**
   * The mount whose mount point is exactly `target` (after resolving symlinks), if any. Reads the
   * whole table: for when a mount's source or options matter, not for a check on every sync.
   */
  getMount(target: string): Promise<MountInfo | undefined>;
  /**
   * The medium of `target`'s filesystem and whether `target` is a mount point, without the mount
   * table (upstream emptyDir's `GetMountMedium`): statfs's magic, and `IsLikelyNotMountPoint`'s
   * stat of the directory against its parent (a different device is a mount point; a bind mount
   * within one filesystem is not seen). Rejects when `target` does not exist.
   */
  getMountMedium(target: string): Promise<MountMediumInfo>;
}

/** statfs(2) magics (linux/magic.h) of the media upstream tells apart. */
const TMPFS_MAGIC = 0x01021994;
const HUGETLBFS_MAGIC = 0x958458f6;

/** The medium a statfs magic stands for. */
export function mountMediumOfFsType(type: number | bigint): MountMedium {
  const t = Number(type);
  if (t === TMPFS_MAGIC) return 'Memory';
  if (t === HUGETLBFS_MAGIC) return 'HugePages';
  return '';
}

/**
 * Upstream `IsLikelyNotMountPoint` (k8s.io/mount-utils, Linux), negated: `target` (symlinks
 * followed) lies on another device than its parent directory. Two stats instead of reading and
 * parsing `/proc/self/mountinfo`, which grows with every mount on the host.
 */
export async function isLikelyMountPoint(target: string): Promise<boolean> {
  const clean = target.length > 1 ? target.replace(/\/+$/, '') : target;
  const [self, parent] = await Promise.all([fs.stat(clean), fs.stat(path.dirname(clean))]);
  return self.dev !== parent.dev;
}

/**
 * Thrown when `mount` or `umount` fails; `permissionDenied` when the host refused us.
 *
 * @public
 */
export class MountError extends Error {
  readonly code = 'MountFailed';
  readonly permissionDenied: boolean;
  constructor(message: string, permissionDenied: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MountError';
    this.permissionDenied = permissionDenied;
  }
}

/** Decodes the octal escapes (`\040` for a space) mountinfo uses in paths. */
function unescapeMountPath(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/**
 * Parses `/proc/self/mountinfo` text.
 *
 * @public
 */
export function parseMountInfo(text: string): MountInfo[] {
  const mounts: MountInfo[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    const mountPoint = left[4];
    const fsType = right[0];
    if (mountPoint === undefined || fsType === undefined) continue;
    mounts.push({
      mountPoint: unescapeMountPath(mountPoint),
      fsType,
      source: unescapeMountPath(right[1] ?? ''),
      options: `${left[5] ?? ''},${right[2] ?? ''}`,
    });
  }
  return mounts;
}

/**
 * Options of {@link SystemMounter}.
 *
 * @public
 */
export interface SystemMounterOptions {
  /** Defaults to `mount`. */
  readonly mountCommand?: string;
  /** Defaults to `umount`. */
  readonly umountCommand?: string;
  /** Defaults to `/proc/self/mountinfo`. */
  readonly mountInfoPath?: string;
  /** Bound on each command (ms); default 30 s. */
  readonly timeoutMs?: number;
}

/**
 * A {@link Mounter} that runs the host's `mount` and `umount`, reads `/proc/self/mountinfo` for
 * the table, and stat/statfs for {@link Mounter.getMountMedium}.
 *
 * @public
 */
export class SystemMounter implements Mounter {
  readonly #mount: string;
  readonly #umount: string;
  readonly #mountInfo: string;
  readonly #timeoutMs: number;

  constructor(options: SystemMounterOptions = {}) {
    this.#mount = options.mountCommand ?? 'mount';
    this.#umount = options.umountCommand ?? 'umount';
    this.#mountInfo = options.mountInfoPath ?? '/proc/self/mountinfo';
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async mountTmpfs(
    target: string,
    options: { readonly sizeBytes?: number; readonly signal?: AbortSignal } = {},
  ): Promise<void> {
    const args = ['-t', 'tmpfs'];
    if (options.sizeBytes !== undefined && options.sizeBytes > 0)
      args.push('-o', `size=${options.sizeBytes}`);
    args.push('tmpfs', target);
    await this.#run(this.#mount, args, options.signal);
  }

  async bindMount(source: string, target: string, signal?: AbortSignal): Promise<void> {
    await this.#run(this.#mount, ['--no-canonicalize', '--bind', source, target], signal);
  }

  async unmount(target: string, signal?: AbortSignal): Promise<void> {
    await this.#run(this.#umount, [target], signal);
  }

  async list(): Promise<readonly MountInfo[]> {
    return parseMountInfo(await fs.readFile(this.#mountInfo, 'utf8'));
  }

  async getMount(target: string): Promise<MountInfo | undefined> {
    let real: string;
    try {
      real = await fs.realpath(target);
    } catch {
      return undefined;
    }
    const mounts = await this.list();
    // The last entry wins when mounts are stacked on one point.
    return mounts.filter((m) => path.resolve(m.mountPoint) === real).at(-1);
  }

  async getMountMedium(target: string): Promise<MountMediumInfo> {
    const [isMountPoint, st] = await Promise.all([isLikelyMountPoint(target), fs.statfs(target)]);
    return { medium: mountMediumOfFsType(st.type), isMountPoint };
  }

  #run(command: string, args: string[], signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      execFile(
        command,
        args,
        { timeout: this.#timeoutMs, ...(signal ? { signal } : {}) },
        (err, _stdout, stderr) => {
          if (!err) return resolve();
          const text = `${stderr}`.trim() || err.message;
          const denied = /permission denied|must be superuser|only root|not permitted|EPERM/i.test(text);
          reject(
            new MountError(`${command} ${args.join(' ')} failed: ${text}`, denied, {
              cause: err,
            }),
          );
        },
      );
    });
  }
}
