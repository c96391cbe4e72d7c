import { execFileSync } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Subpath } from '@kubelet-kit/core';
import {
  cleanSubPaths,
  type Mounter,
  parseMountInfo,
  SafeSubpather,
  SubPathError,
  SystemMounter,
} from '@kubelet-kit/volume-manager';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { safeOpen } from '../src/subpath.js';
import { mode, tempDir } from './helpers.js';

// Upstream subpath_linux_test.go (TestSafeMakeDir, TestSafeOpen, TestBindSubPath,
// TestCleanSubPaths), against the real file system; the bind mounts need root.

const isRoot = process.getuid?.() === 0;

let root: string;
let vol: string;
let outside: string;
let podDir: string;

function mountsUnder(dir: string): string[] {
  return parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8'))
    .map((m) => m.mountPoint)
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
}

beforeEach(async () => {
  root = await fs.realpath(await tempDir('subpath-'));
  vol = path.join(root, 'vol');
  outside = path.join(root, 'outside');
  podDir = path.join(root, 'pods', 'uid1');
  await fs.mkdir(path.join(vol, 'a/b'), { recursive: true });
  await fs.mkdir(outside);
  await fs.mkdir(podDir, { recursive: true });
  await fs.writeFile(path.join(vol, 'a/file'), 'in-volume');
  await fs.writeFile(path.join(outside, 'secret'), 'host');
});

afterEach(async () => {
  // Never rm -rf through a mount: unmount whatever a failed test left, deepest first.
  for (const m of mountsUnder(root).reverse()) execFileSync('umount', [m]);
  expect(mountsUnder(root)).toEqual([]);
  await fs.rm(root, { recursive: true, force: true });
});

function subpath(sub: string, index = 0, containerName = 'c'): Subpath {
  return {
    volumeMountIndex: index,
    path: path.join(vol, sub),
    volumeName: 'data',
    volumePath: vol,
    podDir,
    containerName,
  };
}

const target = (index = 0, containerName = 'c') =>
  path.join(podDir, 'volume-subpaths', 'data', containerName, String(index));

describe('safeMakeDir (upstream doSafeMakeDir)', () => {
  const sp = new SafeSubpather({ mounter: new SystemMounter() });

  // Upstream makeMounts passes the volume's own mode, which SafeMakeDir sets exactly on the
  // last directory it creates; the others are made under the umask.
  it.each([
    ['0777', 0o777],
    ['0750', 0o750],
  ])('creates a missing subPath with the mode of the volume (%s)', async (_n, volMode) => {
    const old = process.umask(0o022);
    try {
      await sp.safeMakeDir('new/deeper', vol, volMode);
    } finally {
      process.umask(old);
    }
    const p = path.join(vol, 'new/deeper');
    expect((await fs.stat(p)).isDirectory()).toBe(true);
    expect(await mode(p)).toBe(volMode);
    expect(await mode(path.join(vol, 'new'))).toBe(volMode & ~0o022);
  });

  it('resolves links in the volume path itself, which the kubelet trusts', async () => {
    await fs.symlink(vol, path.join(root, 'vol-link'));
    await sp.safeMakeDir('via/link', path.join(root, 'vol-link'), 0o755);
    expect((await fs.stat(path.join(vol, 'via/link'))).isDirectory()).toBe(true);
  });

  it('creates below a symlink that stays inside the volume', async () => {
    await fs.symlink('a', path.join(vol, 'inner'));
    await sp.safeMakeDir('inner/made', vol, 0o755);
    expect((await fs.stat(path.join(vol, 'a/made'))).isDirectory()).toBe(true);
  });

  it.each([
    ['first', 'escape/x', 'escape'],
    ['middle', 'a/escape/x', 'a/escape'],
    ['last', 'a/b/escape/x/y', 'a/b/escape'],
  ])('creates nothing through a symlink out of the volume (%s element)', async (_n, sub, link) => {
    await fs.symlink(outside, path.join(vol, link));
    await expect(sp.safeMakeDir(sub, vol, 0o777)).rejects.toThrow(/outside of allowed base/);
    expect(await fs.readdir(outside)).toEqual(['secret']);
  });

  it('does not create the target of a dangling symlink', async () => {
    await fs.symlink(path.join(outside, 'nope'), path.join(vol, 'dangling'));
    await expect(sp.safeMakeDir('dangling', vol, 0o777)).rejects.toBeInstanceOf(SubPathError);
    await expect(sp.safeMakeDir('dangling/x', vol, 0o777)).rejects.toBeInstanceOf(SubPathError);
    expect(await fs.readdir(outside)).toEqual(['secret']);
  });

  it('refuses a path outside the base and a file in the way', async () => {
    await expect(sp.safeMakeDir('../outside/x', vol, 0o777)).rejects.toThrow(/outside of allowed base/);
    await expect(sp.safeMakeDir('a/file', vol, 0o777)).rejects.toThrow(/not a directory/);
  });
});

describe.skipIf(!isRoot)('prepareSafeSubpath (upstream doBindSubPath)', () => {
  const mounter = new SystemMounter();
  const sp = new SafeSubpather({ mounter });

  it('bind-mounts a directory onto an empty directory under volume-subpaths', async () => {
    const got = await sp.prepareSafeSubpath(subpath('a/b', 3));
    expect(got).toBe(target(3));
    expect(mountsUnder(podDir)).toEqual([target(3)]);
    await fs.writeFile(path.join(got, 'through'), 'x');
    expect(await fs.readFile(path.join(vol, 'a/b/through'), 'utf8')).toBe('x');
  });

  it('bind-mounts a file onto an empty file', async () => {
    const got = await sp.prepareSafeSubpath(subpath('a/file'));
    expect((await fs.lstat(got)).isFile()).toBe(true);
    expect(await fs.readFile(got, 'utf8')).toBe('in-volume');
  });

  it('follows a symlink that stays inside the volume', async () => {
    await fs.symlink('a/b', path.join(vol, 'inner'));
    const got = await sp.prepareSafeSubpath(subpath('inner'));
    const [st, want] = await Promise.all([fs.stat(got), fs.stat(path.join(vol, 'a/b'))]);
    expect(st.ino).toBe(want.ino);
  });

  it.each([
    ['first', 'escape', 'escape'],
    ['middle', 'a/escape/secret', 'a/escape'],
    ['last', 'a/b/escape', 'a/b/escape'],
  ])('refuses a symlink out of the volume (%s element) and mounts nothing', async (_n, sub, link) => {
    await fs.symlink(outside, path.join(vol, link));
    await expect(sp.prepareSafeSubpath(subpath(sub))).rejects.toThrow(/not within volume path/);
    expect(mountsUnder(root)).toEqual([]);
  });

  it('refuses a symlink to / and a relative one climbing out', async () => {
    await fs.symlink('/', path.join(vol, 'root'));
    await fs.symlink('../../..', path.join(vol, 'a/b/up'));
    await expect(sp.prepareSafeSubpath(subpath('root'))).rejects.toBeInstanceOf(SubPathError);
    await expect(sp.prepareSafeSubpath(subpath('a/b/up'))).rejects.toBeInstanceOf(SubPathError);
    expect(mountsUnder(root)).toEqual([]);
  });

  it('refuses a dangling symlink and a path with ..', async () => {
    await fs.symlink(path.join(outside, 'nope'), path.join(vol, 'dangling'));
    await expect(sp.prepareSafeSubpath(subpath('dangling'))).rejects.toThrow(/error resolving symlinks/);
    await expect(sp.prepareSafeSubpath(subpath('../outside'))).rejects.toThrow(/not within volume path/);
    expect(mountsUnder(root)).toEqual([]);
  });

  it('opens a FIFO without blocking', async () => {
    execFileSync('mkfifo', [path.join(vol, 'fifo')]);
    const got = await sp.prepareSafeSubpath(subpath('fifo'));
    expect((await fs.lstat(got)).isFIFO()).toBe(true);
  });

  it('reuses the mount of a restarted container and replaces a mount of something else', async () => {
    const first = await sp.prepareSafeSubpath(subpath('a/b'));
    expect(await sp.prepareSafeSubpath(subpath('a/b'))).toBe(first);
    expect(mountsUnder(podDir)).toEqual([first]);
    // The same target now asked for another directory: the stale mount goes.
    await fs.mkdir(path.join(vol, 'other'));
    await fs.writeFile(path.join(vol, 'other/mark'), '');
    await sp.prepareSafeSubpath(subpath('other'));
    expect(mountsUnder(podDir)).toEqual([first]);
    expect(await fs.readdir(first)).toEqual(['mark']);
  });

  // The race upstream closes: the path is swapped for a link to the host after it was opened.
  // mount(8) must mount the opened inode, not resolve the path again.
  it('mounts what it opened even when the path becomes a symlink before the mount', async () => {
    const swapping: Mounter = {
      list: () => mounter.list(),
      getMount: (t) => mounter.getMount(t),
      getMountMedium: (t) => mounter.getMountMedium(t),
      unmount: (t) => mounter.unmount(t),
      mountTmpfs: (t, o) => mounter.mountTmpfs(t, o),
      bindMount: async (source, t) => {
        await fs.rename(path.join(vol, 'a/b'), path.join(vol, 'a/moved'));
        await fs.symlink(outside, path.join(vol, 'a/b'));
        await mounter.bindMount(source, t);
      },
    };
    await fs.writeFile(path.join(vol, 'a/b/mark'), '');
    const got = await new SafeSubpather({ mounter: swapping }).prepareSafeSubpath(subpath('a/b'));
    expect(await fs.readdir(got)).toEqual(['mark']);
  });

  it('leaves no target when a subPath is refused', async () => {
    await fs.symlink(outside, path.join(vol, 'a/b/escape'));
    await expect(sp.prepareSafeSubpath(subpath('a/b/escape'))).rejects.toBeInstanceOf(SubPathError);
    await expect(fs.access(path.join(podDir, 'volume-subpaths'))).rejects.toThrow();
  });
});

// What the resolution checked may be swapped for a link before the open: the open must refuse
// it, at every position, whatever the link points to.
describe('safeOpen (upstream doSafeOpen)', () => {
  it.each([
    ['first', 'x', 'x'],
    ['middle', 'a/x/b', 'a/x'],
    ['last', 'a/b/x', 'a/b/x'],
  ])('refuses a symlink as the %s element', async (_n, sub, link) => {
    await fs.symlink(path.join(vol, 'a'), path.join(vol, link));
    await expect(safeOpen(path.join(vol, sub), vol)).rejects.toThrow(/symlink|ENOTDIR|ELOOP/);
  });

  it('opens files and directories inside the base and refuses a path outside it', async () => {
    for (const p of ['a', 'a/b', 'a/file']) {
      const h = await safeOpen(path.join(vol, p), vol);
      expect(await fs.readlink(`/proc/self/fd/${h.fd}`)).toBe(path.join(vol, p));
      await h.close();
    }
    await expect(safeOpen(outside, vol)).rejects.toThrow(/outside of allowed base/);
    await expect(safeOpen(path.join(vol, 'a/file/x'), vol)).rejects.toThrow(/ENOTDIR/);
  });
});

describe.skipIf(!isRoot)('cleanSubPaths (upstream doCleanSubPaths)', () => {
  const mounter = new SystemMounter();
  const sp = new SafeSubpather({ mounter });

  it('unmounts and removes every bind target of the volume, never the files behind it', async () => {
    await sp.prepareSafeSubpath(subpath('a/b', 0, 'c1'));
    await sp.prepareSafeSubpath(subpath('a/file', 1, 'c1'));
    await sp.prepareSafeSubpath(subpath('a', 0, 'c2'));
    await fs.writeFile(path.join(vol, 'a/b/keep'), '');
    await cleanSubPaths(mounter, podDir, 'data');
    expect(mountsUnder(root)).toEqual([]);
    await expect(fs.access(path.join(podDir, 'volume-subpaths'))).rejects.toThrow();
    expect((await fs.readdir(path.join(vol, 'a/b'))).sort()).toEqual(['keep']);
    expect(await fs.readFile(path.join(vol, 'a/file'), 'utf8')).toBe('in-volume');
  });

  it('keeps the pod directory of another volume and is a no-op without one', async () => {
    await sp.prepareSafeSubpath(subpath('a/b'));
    await sp.prepareSafeSubpath({ ...subpath('a'), volumeName: 'other' });
    await cleanSubPaths(mounter, podDir, 'data');
    await cleanSubPaths(mounter, podDir, 'never');
    expect(await fs.readdir(path.join(podDir, 'volume-subpaths'))).toEqual(['other']);
    expect(mountsUnder(podDir)).toEqual([path.join(podDir, 'volume-subpaths/other/c/0')]);
  });

  it('refuses to remove a target that is not empty instead of recursing into it', async () => {
    const t = target(0);
    await fs.mkdir(t, { recursive: true });
    await fs.writeFile(path.join(t, 'stray'), '');
    await expect(cleanSubPaths(mounter, podDir, 'data')).rejects.toThrow(/ENOTEMPTY/);
    expect(await fs.readdir(t)).toEqual(['stray']);
  });
});
