import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Mounter, MountInfo, MountMediumInfo } from '../mount.js';

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

  /**
   * From the recorded table: the newest mount on `target` decides. Like the system's, rejects
   * (ENOENT) when `target` does not exist; a directory no fake mount covers is the default medium.
   */
  async getMountMedium(target: string): Promise<MountMediumInfo> {
    await fs.stat(target);
    const mount = await this.getMount(target);
    if (!mount) return { medium: '', isMountPoint: false };
    const medium = mount.fsType === 'tmpfs' ? 'Memory' : mount.fsType === 'hugetlbfs' ? 'HugePages' : '';
    return { medium, isMountPoint: true };
  }
}
