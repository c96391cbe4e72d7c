import path from 'node:path';
import type { Mounter, MountInfo } from '../mount.js';

/**
 * A mount table in memory: tmpfs "mounts" are only recorded; directories stay plain.
 *
 * @public
 */
export class FakeMounter implements Mounter {
  readonly mounts: MountInfo[] = [];
  /** Calls, in order, e.g. `mount /x` and `umount /x`. */
  readonly calls: string[] = [];
  /** When set, mountTmpfs fails with this error. */
  mountError: Error | undefined;

  async mountTmpfs(target: string, options: { readonly sizeBytes?: number } = {}): Promise<void> {
    this.calls.push(`mount ${target}`);
    if (this.mountError) throw this.mountError;
    this.mounts.push({
      mountPoint: path.resolve(target),
      fsType: 'tmpfs',
      source: 'tmpfs',
      options: options.sizeBytes ? `size=${options.sizeBytes}` : '',
    });
  }

  async bindMount(source: string, target: string): Promise<void> {
    this.calls.push(`bind ${source} ${target}`);
    if (this.mountError) throw this.mountError;
    this.mounts.push({ mountPoint: path.resolve(target), fsType: 'none', source, options: 'bind' });
  }

  async unmount(target: string): Promise<void> {
    this.calls.push(`umount ${target}`);
    const i = this.mounts.findLastIndex((m) => m.mountPoint === path.resolve(target));
    if (i < 0) throw new Error(`umount: ${target}: not mounted`);
    this.mounts.splice(i, 1);
  }

  async list(): Promise<readonly MountInfo[]> {
    return [...this.mounts];
  }

  async getMount(target: string): Promise<MountInfo | undefined> {
    return this.mounts.findLast((m) => m.mountPoint === path.resolve(target));
  }
}
