import { promises as fs } from 'node:fs';
import path from 'node:path';
import { resolveSubPath, SubPathError } from '@kubelet-kit/volume-manager';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mode, tempDir } from './helpers.js';

let vol: string;
let outside: string;

beforeEach(async () => {
  vol = await fs.realpath(await tempDir('subpath-vol-'));
  outside = await fs.realpath(await tempDir('subpath-out-'));
  await fs.mkdir(path.join(vol, 'a/b'), { recursive: true });
  await fs.writeFile(path.join(vol, 'a/file'), 'x');
});

afterEach(async () => {
  await fs.rm(vol, { recursive: true, force: true });
  await fs.rm(outside, { recursive: true, force: true });
});

describe('resolveSubPath', () => {
  it('resolves existing directories and files inside the volume', async () => {
    expect(await resolveSubPath(vol, 'a/b')).toBe(path.join(vol, 'a/b'));
    expect(await resolveSubPath(vol, 'a/file')).toBe(path.join(vol, 'a/file'));
    expect(await resolveSubPath(vol, './a//b/')).toBe(path.join(vol, 'a/b'));
  });

  // Upstream makeMounts passes the volume's own mode to SafeMakeDir, which creates each missing
  // directory with it (under the umask) and then sets it exactly on the last one.
  it.each([
    ['0777', 0o777],
    ['0750', 0o750],
  ])('creates a missing subPath with the mode of the volume (%s)', async (_n, volMode) => {
    await fs.chmod(vol, volMode);
    const old = process.umask(0o022);
    let p: string;
    try {
      p = await resolveSubPath(vol, 'new/deeper');
    } finally {
      process.umask(old);
    }
    expect(p).toBe(path.join(vol, 'new/deeper'));
    expect((await fs.stat(p)).isDirectory()).toBe(true);
    expect(await mode(p)).toBe(volMode);
    expect(await mode(path.join(vol, 'new'))).toBe(volMode & ~0o022);
  });

  const invalid: [string, string][] = [
    ['absolute', '/etc'],
    ['dotdot', '../x'],
    ['inner dotdot', 'a/../../x'],
    ['trailing dotdot', 'a/..'],
    ['empty', ''],
  ];
  it.each(invalid)('refuses %s', async (_n, sub) => {
    await expect(resolveSubPath(vol, sub)).rejects.toBeInstanceOf(SubPathError);
  });

  it('follows a symlink that stays inside the volume', async () => {
    await fs.symlink('a/b', path.join(vol, 'inner'));
    await fs.symlink(path.join(vol, 'a'), path.join(vol, 'abs-inner'));
    expect(await resolveSubPath(vol, 'inner')).toBe(path.join(vol, 'a/b'));
    expect(await resolveSubPath(vol, 'abs-inner/b')).toBe(path.join(vol, 'a/b'));
  });

  it('refuses symlinks a container planted to escape the volume', async () => {
    await fs.symlink(outside, path.join(vol, 'escape'));
    await fs.symlink('../../..', path.join(vol, 'a/b/up'));
    await fs.symlink('/etc/passwd', path.join(vol, 'passwd'));
    await expect(resolveSubPath(vol, 'escape')).rejects.toThrow(/outside of the volume/);
    await expect(resolveSubPath(vol, 'escape/newdir')).rejects.toThrow(/outside of the volume/);
    await expect(resolveSubPath(vol, 'a/b/up')).rejects.toThrow(/outside of the volume/);
    await expect(resolveSubPath(vol, 'passwd')).rejects.toThrow(/outside of the volume/);
    // Nothing was created outside.
    expect(await fs.readdir(outside)).toEqual([]);
  });

  it('refuses a dangling symlink rather than creating its target', async () => {
    await fs.symlink(path.join(outside, 'nope'), path.join(vol, 'dangling'));
    await expect(resolveSubPath(vol, 'dangling')).rejects.toThrow(SubPathError);
    expect(await fs.readdir(outside)).toEqual([]);
  });
});
