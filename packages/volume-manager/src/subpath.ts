import { promises as fs } from 'node:fs';
import path from 'node:path';

/** Thrown when a subPath is invalid or would leave its volume. */
export class SubPathError extends Error {
  readonly code = 'CreateContainerConfigError';
  constructor(message: string) {
    super(message);
    this.name = 'SubPathError';
  }
}

function within(base: string, p: string): boolean {
  return p === base || p.startsWith(base.endsWith('/') ? base : `${base}/`);
}

/**
 * The host path to bind-mount for a container's `subPath` of a volume (upstream
 * `hostutil`/`subpath.SafeMakeDir` plus `PrepareSafeSubpath`). Refuses absolute paths and any
 * `..` element, walks the path one element at a time and refuses every symlink that resolves
 * outside the volume (a container may plant one), and creates missing directories without
 * following links, with the volume's permission bits (the last one exactly, the others under the
 * umask, as upstream's `SafeMakeDir`). Returns the resolved path.
 *
 * The check and the runtime's bind mount are two steps, so a container that swaps a directory
 * for a symlink in between can still race it; upstream closes that gap by mounting an open file
 * descriptor, which Node cannot do.
 */
export async function resolveSubPath(volumeHostPath: string, subPath: string): Promise<string> {
  if (subPath === '') throw new SubPathError('subPath must not be empty');
  if (path.posix.isAbsolute(subPath))
    throw new SubPathError(`subPath ${JSON.stringify(subPath)} must not be absolute`);
  const parts = subPath.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..'))
    throw new SubPathError(`subPath ${JSON.stringify(subPath)} must not contain '..'`);
  const base = await fs.realpath(volumeHostPath);
  // Upstream gives new subPath directories the volume's mode (an emptyDir's 0777), so a
  // container user other than root can write there.
  const perm = (await fs.stat(base)).mode & 0o777;
  let created: string | undefined;
  let current = base;
  for (const part of parts) {
    const next = path.join(current, part);
    let st: Awaited<ReturnType<typeof fs.lstat>> | undefined;
    try {
      st = await fs.lstat(next);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (st === undefined) {
      // mkdir never follows a link at the last element; an EEXIST race sends us round again.
      try {
        await fs.mkdir(next, { mode: perm });
        created = next;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      st = await fs.lstat(next);
    }
    if (st.isSymbolicLink()) {
      let resolved: string;
      try {
        resolved = await fs.realpath(next);
      } catch {
        throw new SubPathError(`subPath ${JSON.stringify(subPath)}: ${part} is a dangling symlink`);
      }
      if (!within(base, resolved)) {
        throw new SubPathError(
          `subPath ${JSON.stringify(subPath)} is outside of the volume ${volumeHostPath}`,
        );
      }
      current = resolved;
    } else {
      current = next;
    }
  }
  // A last check over the whole path, after the walk.
  const final = await fs.realpath(current);
  if (!within(base, final)) {
    throw new SubPathError(`subPath ${JSON.stringify(subPath)} is outside of the volume ${volumeHostPath}`);
  }
  // The umask applied to mkdir; the directory the container gets has the exact mode.
  if (created === final) await fs.chmod(final, perm);
  return final;
}
