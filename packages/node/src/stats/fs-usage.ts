import fs from 'node:fs/promises';
import path from 'node:path';

/** A filesystem's capacity, as statfs(2) tells it (upstream `fs.Info`). @internal */
export interface FsInfo {
  readonly capacityBytes: number;
  readonly availableBytes: number;
  readonly usedBytes: number;
  readonly inodes: number;
  readonly inodesFree: number;
}

/** statfs of the filesystem holding `dir`; undefined when it does not exist. @internal */
export async function fsInfo(dir: string): Promise<FsInfo | undefined> {
  try {
    const s = await fs.statfs(dir);
    return {
      capacityBytes: s.blocks * s.bsize,
      // Upstream reports what an unprivileged writer can use (bavail), not bfree.
      availableBytes: s.bavail * s.bsize,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodes: s.files,
      inodesFree: s.ffree,
    };
  } catch {
    return undefined;
  }
}

/** A directory tree's usage (upstream `fs.DiskUsage`, as `du`: allocated blocks, and inodes). @internal */
export interface DiskUsage {
  readonly bytes: number;
  readonly inodes: number;
}

/**
 * Walks `root` without following symlinks and sums allocated blocks (512-byte units, as du) and
 * inodes, counting a hard-linked inode once. Entries vanishing during the walk are skipped, since
 * a pod writes while it is measured. Undefined when `root` itself is missing.
 *
 * @internal
 */
export async function diskUsage(root: string): Promise<DiskUsage | undefined> {
  const seen = new Set<string>();
  let bytes = 0;
  let inodes = 0;
  const visit = async (p: string): Promise<boolean> => {
    let st: import('node:fs').BigIntStats;
    try {
      st = await fs.lstat(p, { bigint: true });
    } catch {
      return false;
    }
    const key = `${st.dev}:${st.ino}`;
    if (!seen.has(key)) {
      seen.add(key);
      inodes++;
      bytes += Number(st.blocks) * 512;
    }
    if (st.isDirectory()) {
      let names: string[];
      try {
        names = await fs.readdir(p);
      } catch {
        return true;
      }
      for (const n of names) await visit(path.join(p, n));
    }
    return true;
  };
  return (await visit(root)) ? { bytes, inodes } : undefined;
}
