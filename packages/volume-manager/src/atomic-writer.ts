import { Buffer } from 'node:buffer';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { type Clock, type Logger, noopLogger, RealClock } from '@kubelet-kit/core';

/**
 * One file of a projected payload (upstream `volumeutil.FileProjection`).
 *
 * @public
 */
export interface FileProjection {
  readonly data: Uint8Array | string;
  /** The exact permission bits the file gets (the umask does not apply). */
  readonly mode: number;
  /** When set, the file is chowned to this user. */
  readonly fsUser?: number;
}

/**
 * Applies ownership or permissions to the new data directory before it becomes visible.
 *
 * @public
 */
export type SetPerms = (subPath: string) => Promise<void>;

/**
 * Thrown for an invalid payload path or a failed write.
 *
 * @public
 */
export class AtomicWriterError extends Error {
  readonly code: 'InvalidPath' | 'TargetNotFound' | 'WriteFailed';
  constructor(code: AtomicWriterError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AtomicWriterError';
    this.code = code;
  }
}

/**
 * The name of the symlink to the current timestamped data directory.
 *
 * @public
 */
export const DATA_DIR_NAME = '..data';
const newDataDirName = '..data_tmp';
const maxPathLength = 4096;
const maxFileNameLength = 255;

/**
 * Checks one payload path as upstream's `validatePath`: not empty, relative, at most 4096
 * characters, no `..` element, no element over 255 characters, and a first element that does
 * not start with `..` (so `.dotfiles` are fine). Throws {@link AtomicWriterError}.
 *
 * @public
 */
export function validatePath(targetPath: string): void {
  if (targetPath === '') throw invalid(targetPath, 'must not be empty');
  if (path.posix.isAbsolute(targetPath)) throw invalid(targetPath, 'must be relative path');
  // Go measures the lengths in bytes (as the kernel's limits do), not UTF-16 code units.
  if (Buffer.byteLength(targetPath, 'utf8') > maxPathLength) {
    throw invalid(targetPath, `must be less than or equal to ${maxPathLength} characters`);
  }
  const items = targetPath.split('/');
  for (const item of items) {
    if (item === '..') throw invalid(targetPath, "must not contain '..'");
    if (Buffer.byteLength(item, 'utf8') > maxFileNameLength) {
      throw invalid(
        targetPath,
        `must not contain path components longer than ${maxFileNameLength} characters`,
      );
    }
  }
  const first = items[0] ?? '';
  if (first.length > 2 && first.startsWith('..')) throw invalid(targetPath, "must not start with '..'");
}

function invalid(p: string, why: string): AtomicWriterError {
  return new AtomicWriterError('InvalidPath', `invalid path ${JSON.stringify(p)}: ${why}`);
}

/** Like Go's `filepath.Clean` for a relative path: no empty or `.` elements, no trailing slash. */
function cleanPath(p: string): string {
  const cleaned = path.posix.normalize(p).replace(/\/+$/, '');
  return cleaned === '' ? '.' : cleaned;
}

/**
 * Options of {@link AtomicWriter}.
 *
 * @public
 */
export interface AtomicWriterOptions {
  /** The volume directory; it must exist. */
  readonly targetDir: string;
  /** Added to log lines (upstream's logContext), e.g. the pod and volume. */
  readonly logContext?: string;
  readonly logger?: Logger;
  /** Names the timestamped data directories. */
  readonly clock?: Clock;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

function toBuffer(data: Uint8Array | string): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
}

/**
 * Writes a set of files into a volume directory so that readers see either the old set or the
 * new one, never a mix (upstream `pkg/volume/util/atomic_writer.go`). The files live in a
 * timestamped directory `..<time>.<random>`; the `..data` symlink points at the current one and
 * is replaced with a rename; each top-level entry the user sees is a symlink through `..data`.
 *
 * Callers must not run two writes to the same target directory at once.
 *
 * @public
 */
export class AtomicWriter {
  readonly targetDir: string;
  readonly #logger: Logger;
  readonly #clock: Clock;

  constructor(options: AtomicWriterOptions) {
    this.targetDir = options.targetDir;
    const logger = options.logger ?? noopLogger;
    this.#logger = options.logContext ? logger.child({ volume: options.logContext }) : logger;
    this.#clock = options.clock ?? new RealClock();
  }

  /**
   * Projects `payload` (relative path → file) into the target directory. Returns whether a new
   * data directory was written: nothing is written when every file already has the same bytes
   * (modes are not compared, as upstream) and no file has to go; the user-visible links are
   * still re-created then.
   */
  async write(payload: ReadonlyMap<string, FileProjection>, setPerms?: SetPerms): Promise<boolean> {
    const clean = new Map<string, FileProjection>();
    for (const [key, file] of payload) {
      validatePath(key);
      clean.set(cleanPath(key), file);
    }
    try {
      const st = await fs.stat(this.targetDir);
      if (!st.isDirectory()) throw new Error('not a directory');
    } catch (err) {
      throw new AtomicWriterError('TargetNotFound', `target directory ${this.targetDir} does not exist`, {
        cause: err,
      });
    }

    const dataDirPath = path.join(this.targetDir, DATA_DIR_NAME);
    const oldTsDir = await this.#currentTsDir(dataDirPath);
    const oldTsPath = oldTsDir === undefined ? undefined : path.join(this.targetDir, oldTsDir);

    let pathsToRemove = new Set<string>();
    let shouldWrite = true;
    if (oldTsPath !== undefined) {
      pathsToRemove = await this.#pathsToRemove(oldTsPath, clean);
      shouldWrite = await this.#shouldWritePayload(oldTsPath, clean);
    }

    if (shouldWrite || pathsToRemove.size > 0) {
      const tsDir = await this.#newTimestampDir();
      const tsDirName = path.basename(tsDir);
      try {
        await this.#writePayload(tsDir, clean);
        if (setPerms) await setPerms(tsDirName);
        const tmpLink = path.join(this.targetDir, newDataDirName);
        await fs.rm(tmpLink, { force: true });
        await fs.symlink(tsDirName, tmpLink);
        try {
          await fs.rename(tmpLink, dataDirPath);
        } catch (err) {
          await fs.rm(tmpLink, { force: true });
          throw err;
        }
      } catch (err) {
        await fs.rm(tsDir, { recursive: true, force: true });
        throw new AtomicWriterError(
          'WriteFailed',
          `failed to write payload to ${this.targetDir}: ${String(err)}`,
          {
            cause: err,
          },
        );
      }
      this.#logger.debug({ dir: tsDirName }, 'performed write of new data');
    }

    await this.#createUserVisibleFiles(clean);
    await this.#removeUserVisiblePaths(pathsToRemove);
    if (oldTsPath !== undefined && (shouldWrite || pathsToRemove.size > 0)) {
      await fs.rm(oldTsPath, { recursive: true, force: true });
    }
    return shouldWrite || pathsToRemove.size > 0;
  }

  /** The timestamped directory `..data` points at, or undefined on the first write. */
  async #currentTsDir(dataDirPath: string): Promise<string | undefined> {
    let target: string;
    try {
      target = await fs.readlink(dataDirPath);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw new AtomicWriterError('WriteFailed', `cannot read ${dataDirPath}: ${String(err)}`, {
        cause: err,
      });
    }
    // Only ever follow a link we could have made: a sibling named `..<something>`.
    if (!target.startsWith('..') || target.includes('/') || target === '..') {
      this.#logger.warn({ target }, 'ignoring unexpected ..data link target');
      return undefined;
    }
    try {
      const st = await fs.lstat(path.join(this.targetDir, target));
      return st.isDirectory() ? target : undefined;
    } catch {
      return undefined;
    }
  }

  async #pathsToRemove(
    oldTsPath: string,
    payload: ReadonlyMap<string, FileProjection>,
  ): Promise<Set<string>> {
    const existing = new Set<string>();
    const walk = async (dir: string, rel: string): Promise<void> => {
      for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
        const relPath = rel === '' ? entry.name : `${rel}/${entry.name}`;
        existing.add(relPath);
        if (entry.isDirectory()) await walk(path.join(dir, entry.name), relPath);
      }
    };
    await walk(oldTsPath, '');
    for (const p of payload.keys()) {
      // A new file keeps itself and every parent directory.
      for (let cur = p; cur !== '.' && cur !== ''; cur = path.posix.dirname(cur)) existing.delete(cur);
    }
    return existing;
  }

  async #shouldWritePayload(
    oldTsPath: string,
    payload: ReadonlyMap<string, FileProjection>,
  ): Promise<boolean> {
    for (const [p, file] of payload) {
      const full = path.join(oldTsPath, p);
      try {
        const st = await fs.lstat(full);
        // A data directory only ever holds files we wrote; anything else is replaced.
        if (!st.isFile()) return true;
        const current = await fs.readFile(full);
        if (!current.equals(toBuffer(file.data))) return true;
      } catch (err) {
        if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return true;
        throw err;
      }
    }
    return false;
  }

  async #newTimestampDir(): Promise<string> {
    const d = new Date(this.#clock.now());
    const ts = `${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_${pad(d.getUTCHours())}_${pad(
      d.getUTCMinutes(),
    )}_${pad(d.getUTCSeconds())}`;
    const dir = await fs.mkdtemp(path.join(this.targetDir, `..${ts}.`));
    await fs.chmod(dir, 0o755);
    return dir;
  }

  async #writePayload(tsDir: string, payload: ReadonlyMap<string, FileProjection>): Promise<void> {
    const made = new Set<string>([tsDir]);
    for (const [p, file] of payload) {
      const full = path.join(tsDir, p);
      const parent = path.dirname(full);
      if (!made.has(parent)) {
        await fs.mkdir(parent, { recursive: true, mode: 0o777 });
        made.add(parent);
      }
      // Only the permission bits: Go's os.FileMode keeps setuid/setgid/sticky elsewhere, so
      // upstream never sets them from a projection mode.
      const perm = file.mode & 0o777;
      await fs.writeFile(full, toBuffer(file.data), { mode: perm });
      // Set after writing so the umask does not apply.
      await fs.chmod(full, perm);
      if (file.fsUser !== undefined) await fs.chown(full, file.fsUser, -1);
    }
  }

  async #createUserVisibleFiles(payload: ReadonlyMap<string, FileProjection>): Promise<void> {
    const tops = new Set<string>();
    for (const p of payload.keys()) tops.add(p.split('/')[0] ?? p);
    for (const top of tops) {
      const visible = path.join(this.targetDir, top);
      try {
        await fs.lstat(visible);
        continue;
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
      await fs.symlink(path.posix.join(DATA_DIR_NAME, top), visible);
    }
  }

  async #removeUserVisiblePaths(paths: ReadonlySet<string>): Promise<void> {
    for (const p of paths) {
      // Nested paths go with the old data directory; only top-level links are ours to remove.
      if (p.includes('/')) continue;
      const visible = path.join(this.targetDir, p);
      try {
        const st = await fs.lstat(visible);
        if (st.isSymbolicLink()) await fs.unlink(visible);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
  }
}
