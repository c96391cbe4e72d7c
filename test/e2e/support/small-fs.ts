// A small filesystem of a test's own, for tests that need a disk to fill (eviction under disk
// pressure): an ext4 image in the host's temp folder, loop-mounted, with no blocks reserved for
// root, so what statfs calls available is all there is. Needs root (mkfs, mount).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SmallFsOptions {
  /** Size in MiB (ext4 keeps a few MiB of it for its metadata and journal). */
  readonly sizeMiB: number;
  /** A short word for the temp folder's name. */
  readonly label: string;
}

export interface FsSpace {
  readonly capacityBytes: number;
  readonly availableBytes: number;
  readonly inodesFree: number;
}

export interface SmallFs {
  /** The mount point. */
  readonly path: string;
  /** statfs of the mount point, as the agent's nodefs signal reads it. */
  space(): FsSpace;
  /** Unmounts whatever is mounted below the mount point (pods' tmpfs, overlays), then the fs. */
  destroy(): Promise<void>;
}

/** Mount points at or below `dir`, deepest first (so each unmount leaves its parent unbusy). */
export function mountsBelow(dir: string): string[] {
  const out: string[] = [];
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    // The mount point is field 5, with spaces and the like escaped as octal.
    const mountPoint = line
      .split(' ')[4]
      ?.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    if (mountPoint && (mountPoint === dir || mountPoint.startsWith(`${dir}/`))) out.push(mountPoint);
  }
  return out.sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below `dir`; a busy one lazily, so a test's cleanup never hangs. */
export async function unmountBelow(dir: string): Promise<void> {
  for (const m of mountsBelow(dir)) {
    await run('umount', [m]).catch(() => run('umount', ['-l', m]).catch(() => {}));
  }
}

export async function makeSmallFs(options: SmallFsOptions): Promise<SmallFs> {
  if (process.getuid?.() !== 0) throw new Error('a loop-mounted filesystem needs root');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kk-${options.label}-`));
  const image = path.join(dir, 'fs.img');
  const mountPoint = path.join(dir, 'mnt');
  fs.mkdirSync(mountPoint);
  fs.closeSync(fs.openSync(image, 'w'));
  fs.truncateSync(image, options.sizeMiB * 1024 * 1024);
  // -m 0: no reserved blocks, so "available" is every free block, as on a tmpfs.
  await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-L', options.label.slice(0, 16), image]);
  // commit=1: freed blocks count as available within a second, not the default five.
  await run('mount', ['-o', 'loop,commit=1', image, mountPoint]);
  return {
    path: mountPoint,
    space() {
      const s = fs.statfsSync(mountPoint);
      return {
        capacityBytes: s.blocks * s.bsize,
        availableBytes: s.bavail * s.bsize,
        inodesFree: s.ffree,
      };
    },
    async destroy() {
      await unmountBelow(mountPoint);
      // mount -o loop set autoclear on the loop device: the unmount released it.
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
