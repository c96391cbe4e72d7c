import { promises as fs } from 'node:fs';
import path from 'node:path';
import { MountError, type Mounter, SystemMounter } from '@kubelet-kit/volume-manager';
import { FakeMounter } from '@kubelet-kit/volume-manager/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

let root: string;

beforeEach(async () => {
  root = await tempDir('mount-');
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** Mounts a tmpfs on `dir`, or skips the test where the host refuses. */
async function mountOrSkip(
  mounter: Mounter,
  dir: string,
  skip: (cond: boolean, note: string) => void,
): Promise<void> {
  try {
    await mounter.mountTmpfs(dir, { sizeBytes: 1 << 20 });
  } catch (err) {
    if (err instanceof MountError && err.permissionDenied)
      skip(true, `tmpfs needs privileges here: ${err.message}`);
    throw err;
  }
}

describe('SystemMounter.getMountMedium (upstream GetMountMedium without the mount table)', () => {
  it('tells a tmpfs mount point from a plain directory and from a directory inside the tmpfs', async (ctx) => {
    // No table to read: a table lookup would fail the test instead of answering.
    const mounter = new SystemMounter({ mountInfoPath: path.join(root, 'no-such-mountinfo') });
    const real = new SystemMounter();
    const dir = path.join(root, 'mem');
    await fs.mkdir(dir);
    expect((await mounter.getMountMedium(dir)).isMountPoint).toBe(false);
    await mountOrSkip(real, dir, ctx.skip);
    try {
      expect(await mounter.getMountMedium(dir)).toEqual({ medium: 'Memory', isMountPoint: true });
      // A trailing slash names the same directory.
      expect(await mounter.getMountMedium(`${dir}/`)).toEqual({ medium: 'Memory', isMountPoint: true });
      await fs.mkdir(path.join(dir, 'inner'));
      expect(await mounter.getMountMedium(path.join(dir, 'inner'))).toEqual({
        medium: 'Memory',
        isMountPoint: false,
      });
    } finally {
      await real.unmount(dir);
    }
    expect((await mounter.getMountMedium(dir)).isMountPoint).toBe(false);
  });

  it('rejects a directory that does not exist, as the fake does', async () => {
    const missing = path.join(root, 'missing');
    await expect(new SystemMounter().getMountMedium(missing)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(new FakeMounter().getMountMedium(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('FakeMounter.getMountMedium', () => {
  it('answers from its table: the newest mount on the directory decides', async () => {
    const fake = new FakeMounter();
    const dir = path.join(root, 'd');
    await fs.mkdir(dir);
    expect(await fake.getMountMedium(dir)).toEqual({ medium: '', isMountPoint: false });
    await fake.mountTmpfs(dir);
    expect(await fake.getMountMedium(dir)).toEqual({ medium: 'Memory', isMountPoint: true });
    await fake.bindMount('/elsewhere', dir);
    expect(await fake.getMountMedium(dir)).toEqual({ medium: '', isMountPoint: true });
    await fake.unmount(dir);
    await fake.unmount(dir);
    expect(await fake.getMountMedium(dir)).toEqual({ medium: '', isMountPoint: false });
  });
});
