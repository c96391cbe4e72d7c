// Volume ownership by fsGroup (upstream pkg/volume/volume_linux.go and its _test.go tables), on
// real files: the tests run as root, so chown works.

import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Pod, Volume } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import {
  ConfigMapPlugin,
  DownwardAPIPlugin,
  EmptyDirPlugin,
  type FSGroupChangePolicy,
  HostPathPlugin,
  ProjectedPlugin,
  podVolumeOwnership,
  SecretPlugin,
  setVolumeOwnership,
  type VolumeHost,
  VolumeSetUpError,
} from '@kubelet-kit/volume-manager';
import { FakeMounter, FakeObjectGetter } from '@kubelet-kit/volume-manager/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skipPermissionChange, VOLUME_OWNERSHIP_WARNING_MS } from '../src/volume-linux.js';
import { makePod, tempDir } from './helpers.js';

const rwMask = 0o660;
const execMask = 0o110;
const setgid = 0o2000;
const fsGroup = 3000;

let root: string;

beforeEach(async () => {
  root = await tempDir('ownership-');
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const lstat = (p: string) => fs.lstat(p);
const perm = async (p: string) => (await fs.lstat(p)).mode & 0o7777;
const gid = async (p: string) => (await fs.lstat(p)).gid;

/** upstream verifyDirectoryPermission: group rwx (r-x read-only) as a subset, and setgid. */
async function hasDirectoryPermission(p: string, readOnly: boolean): Promise<boolean> {
  const m = await perm(p);
  const wanted = (readOnly ? 0o440 : rwMask) | execMask;
  return (m & wanted) === wanted && (m & setgid) !== 0;
}

describe('skipPermissionChange (TestSkipPermissionChange)', () => {
  const cases: Array<{
    description: string;
    policy?: FSGroupChangePolicy;
    gidOwnerMatch?: boolean;
    permissionMatch?: boolean;
    sgidMatch?: boolean;
    skip: boolean;
  }> = [
    { description: 'skippermission=false, policy=nil', skip: false },
    { description: 'skippermission=false, policy=always', policy: 'Always', skip: false },
    {
      description: 'skippermission=false, policy=always, gidmatch=true',
      policy: 'Always',
      gidOwnerMatch: true,
      skip: false,
    },
    { description: 'skippermission=false, policy=nil, gidmatch=true', gidOwnerMatch: true, skip: false },
    {
      description: 'skippermission=false, policy=onrootmismatch, gidmatch=false',
      policy: 'OnRootMismatch',
      gidOwnerMatch: false,
      skip: false,
    },
    {
      description: 'skippermission=false, policy=onrootmismatch, gidmatch=true, permmatch=false',
      policy: 'OnRootMismatch',
      gidOwnerMatch: true,
      permissionMatch: false,
      skip: false,
    },
    {
      description: 'skippermission=false, policy=onrootmismatch, gidmatch=true, permmatch=true',
      policy: 'OnRootMismatch',
      gidOwnerMatch: true,
      permissionMatch: true,
      skip: false,
    },
    {
      description:
        'skippermission=false, policy=onrootmismatch, gidmatch=true, permmatch=true, sgidmatch=true',
      policy: 'OnRootMismatch',
      gidOwnerMatch: true,
      permissionMatch: true,
      sgidMatch: true,
      skip: true,
    },
  ];
  it.each(cases)('$description', async (c) => {
    const info = await lstat(root);
    const expectedGid = c.gidOwnerMatch ? info.gid : info.gid + 3000;
    let mask = rwMask;
    if (c.permissionMatch) mask |= execMask;
    const current = info.mode & 0o7777;
    await fs.chmod(root, c.sgidMatch ? current | mask | setgid : (current & ~setgid) | mask);
    expect(await skipPermissionChange(root, expectedGid, c.policy, false)).toBe(c.skip);
  });

  it('a read-only volume needs only r-x for the group at its root', async () => {
    const info = await lstat(root);
    await fs.chmod(root, 0o2750);
    expect(await skipPermissionChange(root, info.gid, 'OnRootMismatch', true)).toBe(true);
    expect(await skipPermissionChange(root, info.gid, 'OnRootMismatch', false)).toBe(false);
  });

  it('a root that is missing or no directory is always changed', async () => {
    const file = path.join(root, 'f');
    await fs.writeFile(file, '');
    await fs.chmod(file, 0o2770);
    const g = (await lstat(file)).gid;
    expect(await skipPermissionChange(file, g, 'OnRootMismatch', false)).toBe(false);
    expect(await skipPermissionChange(path.join(root, 'missing'), g, 'OnRootMismatch', false)).toBe(false);
  });
});

describe('setVolumeOwnership modes (TestSetVolumeOwnershipMode)', () => {
  const expectedMask = rwMask | setgid | execMask;
  const cases: Array<{
    description: string;
    policy: FSGroupChangePolicy;
    setup: (p: string) => Promise<void>;
    rogueDirFixed: boolean;
  }> = [
    {
      description: 'featuregate=on, fsgroupchangepolicy=always',
      policy: 'Always',
      setup: async (p) => {
        const m = await perm(p);
        await fs.chmod(p, m | expectedMask);
        // A subdirectory with invalid permissions.
        await fs.mkdir(path.join(p, 'roguedir'));
        await fs.chmod(path.join(p, 'roguedir'), m & ~setgid);
      },
      rogueDirFixed: true,
    },
    {
      description: 'featuregate=on, fsgroupchangepolicy=onrootmismatch,rootdir=validperm',
      policy: 'OnRootMismatch',
      setup: async (p) => {
        await fs.chmod(p, (await perm(p)) | expectedMask);
        await fs.mkdir(path.join(p, 'roguedir'));
        await fs.chmod(path.join(p, 'roguedir'), rwMask);
      },
      rogueDirFixed: false,
    },
    {
      description: 'featuregate=on, fsgroupchangepolicy=onrootmismatch,rootdir=invalidperm',
      policy: 'OnRootMismatch',
      setup: async (p) => {
        await fs.chmod(p, 0o770);
        await fs.mkdir(path.join(p, 'roguedir'));
        await fs.chmod(path.join(p, 'roguedir'), rwMask);
      },
      rogueDirFixed: true,
    },
  ];
  it.each(cases)('$description', async (c) => {
    const expectedGid = (await lstat(root)).gid;
    await c.setup(root);
    await setVolumeOwnership({
      dir: root,
      fsGroup: expectedGid,
      fsGroupChangePolicy: c.policy,
      readOnly: false,
    });
    expect(await hasDirectoryPermission(path.join(root, 'roguedir'), false)).toBe(c.rogueDirFixed);
  });
});

describe('setVolumeOwnership owner (TestSetVolumeOwnershipOwner)', () => {
  const uid = process.getuid?.() ?? 0;
  const currentGid = process.getgid?.() ?? 0;

  it('fsGroup=nil leaves the file as it was', async () => {
    const file = path.join(root, 'file.txt');
    await fs.writeFile(file, '', { mode: 0o755 });
    await setVolumeOwnership({
      dir: root,
      fsGroup: undefined,
      fsGroupChangePolicy: 'Always',
      readOnly: false,
    });
    expect(await lstat(file)).toMatchObject({ uid, gid: currentGid });
  });

  it('*fsGroup=3000 gives the file the group and keeps its owner', async () => {
    const file = path.join(root, 'file.txt');
    await fs.writeFile(file, '', { mode: 0o755 });
    await setVolumeOwnership({ dir: root, fsGroup, fsGroupChangePolicy: 'Always', readOnly: false });
    expect(await lstat(file)).toMatchObject({ uid, gid: fsGroup });
  });

  it('symlink: the link itself gets the group', async () => {
    const file = path.join(root, 'file.txt');
    await fs.writeFile(file, '', { mode: 0o755 });
    await fs.symlink(file, path.join(root, 'file_link.txt'));
    await setVolumeOwnership({ dir: root, fsGroup, fsGroupChangePolicy: 'Always', readOnly: false });
    expect(await lstat(path.join(root, 'file_link.txt'))).toMatchObject({ uid, gid: fsGroup });
  });
});

describe('setVolumeOwnership (changeFilePermission, walkDeep)', () => {
  let vol: string;
  let outside: string;

  beforeEach(async () => {
    vol = path.join(root, 'vol');
    outside = path.join(root, 'host');
    await fs.mkdir(vol);
    await fs.mkdir(outside);
  });

  it('adds group rw to files and rwx plus setgid to directories, keeping the other bits', async () => {
    await fs.chmod(vol, 0o777);
    await fs.mkdir(path.join(vol, 'sub'));
    await fs.chmod(path.join(vol, 'sub'), 0o700);
    await fs.writeFile(path.join(vol, 'sub', 'private'), 'x');
    await fs.chmod(path.join(vol, 'sub', 'private'), 0o400);
    await fs.writeFile(path.join(vol, 'shared'), 'x');
    await fs.chmod(path.join(vol, 'shared'), 0o644);
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false });
    expect(await perm(vol)).toBe(0o2777);
    expect(await perm(path.join(vol, 'sub'))).toBe(0o2770);
    expect(await perm(path.join(vol, 'sub', 'private'))).toBe(0o660);
    expect(await perm(path.join(vol, 'shared'))).toBe(0o664);
    for (const p of [
      vol,
      path.join(vol, 'sub'),
      path.join(vol, 'sub', 'private'),
      path.join(vol, 'shared'),
    ]) {
      expect(await gid(p)).toBe(fsGroup);
    }
  });

  it('gives a read-only volume group read (r-x for directories) only', async () => {
    await fs.chmod(vol, 0o755);
    await fs.writeFile(path.join(vol, 'key'), 'x');
    await fs.chmod(path.join(vol, 'key'), 0o400);
    await fs.mkdir(path.join(vol, 'd'));
    await fs.chmod(path.join(vol, 'd'), 0o700);
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: true });
    expect(await perm(vol)).toBe(0o2755);
    expect(await perm(path.join(vol, 'key'))).toBe(0o440);
    expect(await perm(path.join(vol, 'd'))).toBe(0o2750);
    expect(await gid(path.join(vol, 'key'))).toBe(fsGroup);
  });

  it('keeps the setuid bit of an executable, which the chown clears', async () => {
    const exe = path.join(vol, 'tool');
    await fs.writeFile(exe, '#!/bin/sh\n');
    await fs.chmod(exe, 0o4755);
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false });
    expect(await perm(exe)).toBe(0o4775);
    expect(await gid(exe)).toBe(fsGroup);
  });

  it('does not chown or chmod the target of a symlink to a host file outside the volume', async () => {
    const hostFile = path.join(outside, 'shadow');
    await fs.writeFile(hostFile, 'secret');
    await fs.chmod(hostFile, 0o600);
    const before = await lstat(hostFile);
    await fs.symlink(hostFile, path.join(vol, 'evil'));
    // Relative, and through a directory link, too.
    await fs.symlink('../host/shadow', path.join(vol, 'evil-relative'));
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false });
    const after = await lstat(hostFile);
    expect({ gid: after.gid, mode: after.mode }).toEqual({ gid: before.gid, mode: before.mode });
    // The links themselves were visited.
    expect(await gid(path.join(vol, 'evil'))).toBe(fsGroup);
    expect(await gid(path.join(vol, 'evil-relative'))).toBe(fsGroup);
  });

  it('does not enter a symlink to a host directory', async () => {
    const hostDir = path.join(outside, 'etc');
    await fs.mkdir(hostDir);
    await fs.chmod(hostDir, 0o700);
    await fs.writeFile(path.join(hostDir, 'passwd'), 'root:x:0:0');
    await fs.chmod(path.join(hostDir, 'passwd'), 0o600);
    const dirBefore = await lstat(hostDir);
    const fileBefore = await lstat(path.join(hostDir, 'passwd'));
    await fs.symlink(hostDir, path.join(vol, 'etc'));
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false });
    const dirAfter = await lstat(hostDir);
    const fileAfter = await lstat(path.join(hostDir, 'passwd'));
    expect([dirAfter.gid, dirAfter.mode, fileAfter.gid, fileAfter.mode]).toEqual([
      dirBefore.gid,
      dirBefore.mode,
      fileBefore.gid,
      fileBefore.mode,
    ]);
  });

  it('a root that is a symlink gets the group on the link only, as upstream walkDeep', async () => {
    const link = path.join(root, 'link-root');
    await fs.symlink(outside, link);
    const before = await lstat(outside);
    await setVolumeOwnership({ dir: link, fsGroup, readOnly: false });
    expect(await gid(link)).toBe(fsGroup);
    const after = await lstat(outside);
    expect([after.gid, after.mode]).toEqual([before.gid, before.mode]);
  });

  it('changes a FIFO without opening it for reading (which would block)', async () => {
    const fifo = path.join(vol, 'pipe');
    execFileSync('mkfifo', ['-m', '0600', fifo]);
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false });
    expect(await perm(fifo)).toBe(0o660);
    expect(await gid(fifo)).toBe(fsGroup);
  });

  it('fails when the volume directory does not exist', async () => {
    await expect(
      setVolumeOwnership({ dir: path.join(root, 'missing'), fsGroup, readOnly: false }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('with OnRootMismatch leaves a volume whose root fits alone, and changes one whose root does not', async () => {
    await fs.writeFile(path.join(vol, 'f'), 'x');
    await fs.chmod(path.join(vol, 'f'), 0o600);
    await fs.chown(vol, -1, fsGroup);
    await fs.chmod(vol, 0o2770);
    await setVolumeOwnership({ dir: vol, fsGroup, fsGroupChangePolicy: 'OnRootMismatch', readOnly: false });
    expect(await gid(path.join(vol, 'f'))).not.toBe(fsGroup);
    expect(await perm(path.join(vol, 'f'))).toBe(0o600);
    await setVolumeOwnership({
      dir: vol,
      fsGroup: fsGroup + 1,
      fsGroupChangePolicy: 'OnRootMismatch',
      readOnly: false,
    });
    expect(await gid(path.join(vol, 'f'))).toBe(fsGroup + 1);
    expect(await perm(path.join(vol, 'f'))).toBe(0o660);
  });

  it('warns when the change runs for 30 s, and not after it finished', async () => {
    const clock = new FakeClock();
    const logger = new InMemoryLogger();
    await fs.writeFile(path.join(vol, 'f'), 'x');
    const run = setVolumeOwnership({ dir: vol, fsGroup, readOnly: false, clock, logger });
    clock.advance(VOLUME_OWNERSHIP_WARNING_MS - 1);
    expect(logger.records.filter((r) => r.level === 'warn')).toHaveLength(0);
    clock.advance(1);
    await run;
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => r.message)).toEqual([
      `Setting volume ownership for ${vol} and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699`,
    ]);
    await setVolumeOwnership({ dir: vol, fsGroup, readOnly: false, clock, logger });
    clock.advance(10 * VOLUME_OWNERSHIP_WARNING_MS);
    expect(logger.records.filter((r) => r.level === 'warn')).toHaveLength(1);
  });
});

describe('podVolumeOwnership (MounterArgs from the pod security context)', () => {
  it('reads fsGroup and fsGroupChangePolicy', () => {
    expect(
      podVolumeOwnership(
        makePod({ securityContext: { fsGroup: 4004, fsGroupChangePolicy: 'OnRootMismatch' } }),
      ),
    ).toEqual({ fsGroup: 4004, fsGroupChangePolicy: 'OnRootMismatch' });
    expect(podVolumeOwnership(makePod())).toEqual({ fsGroup: undefined, fsGroupChangePolicy: undefined });
  });

  it.each([
    [
      { fsGroup: -1 },
      'pod ns/pod-1: spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive',
    ],
    [
      { fsGroup: 1.5 },
      'pod ns/pod-1: spec.securityContext.fsGroup: Invalid value: 1.5: must be between 0 and 2147483647, inclusive',
    ],
    [
      { fsGroupChangePolicy: 'Sometimes' },
      'pod ns/pod-1: spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"',
    ],
  ])('refuses %j', (securityContext, message) => {
    expect(() => podVolumeOwnership(makePod({ securityContext }))).toThrow(
      expect.objectContaining({ name: 'VolumeSetUpError', message }),
    );
    expect(() => podVolumeOwnership(makePod({ securityContext }))).toThrow(VolumeSetUpError);
  });
});

describe('the plugins apply it as upstream SetUp with mounterArgs.FsGroup', () => {
  const GiB = 2 ** 30;
  let getter: FakeObjectGetter;
  let mounter: FakeMounter;
  let clock: FakeClock;

  function host(): VolumeHost {
    return {
      logger: new InMemoryLogger(),
      clock,
      mounter,
      objectGetter: getter,
      nodeAllocatable: () => ({ cpu: 4, memory: 8 * GiB, pods: 110, ephemeralStorage: 100 * GiB }),
    };
  }
  const spec = (pod: Pod, volume: Volume) => ({
    pod,
    volume,
    podVolumeDir: path.join(root, 'vol', volume.name),
  });
  const grouped = (policy?: string) =>
    makePod({
      namespace: 'ns',
      securityContext: { fsGroup: 4004, ...(policy ? { fsGroupChangePolicy: policy } : {}) },
    });

  beforeEach(() => {
    getter = new FakeObjectGetter();
    mounter = new FakeMounter();
    clock = new FakeClock(Date.UTC(2026, 0, 1));
  });

  it.each([
    ['disk', {}],
    ['memory', { medium: 'Memory' }],
  ])('an emptyDir (%s medium) becomes drwxrwsrwx with the group', async (_name, emptyDir) => {
    const s = spec(grouped(), { name: 'scratch', emptyDir });
    await new EmptyDirPlugin({ host: host() }).setUp(s);
    const st = await fs.stat(s.podVolumeDir);
    expect([st.gid, st.mode & 0o7777]).toEqual([4004, 0o2777]);
  });

  it('an emptyDir without fsGroup stays 0777 with the agent group', async () => {
    const s = spec(makePod(), { name: 'scratch', emptyDir: {} });
    await new EmptyDirPlugin({ host: host() }).setUp(s);
    const st = await fs.stat(s.podVolumeDir);
    expect([st.gid, st.mode & 0o7777]).toEqual([process.getgid?.() ?? 0, 0o777]);
  });

  it('a bad fsGroup fails the set-up with the field named, before anything is made', async () => {
    const s = spec(makePod({ securityContext: { fsGroup: -4 } }), { name: 'scratch', emptyDir: {} });
    await expect(new EmptyDirPlugin({ host: host() }).setUp(s)).rejects.toThrow(
      'spec.securityContext.fsGroup: Invalid value: -4',
    );
    await expect(fs.lstat(s.podVolumeDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a hostPath is never chowned', async () => {
    const hostDir = path.join(root, 'host');
    await fs.mkdir(hostDir);
    await fs.chmod(hostDir, 0o755);
    const before = await lstat(hostDir);
    await new HostPathPlugin({ host: host() }).setUp(
      spec(grouped(), { name: 'h', hostPath: { path: hostDir, type: 'Directory' } }),
    );
    const after = await lstat(hostDir);
    expect([after.gid, after.mode]).toEqual([before.gid, before.mode]);
  });

  it('a configMap volume: group-readable files, r-x setgid data directory, across updates', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a1' } });
    const s = spec(grouped(), {
      name: 'cfg',
      configMap: { name: 'cfg', items: [{ key: 'a', path: 'dir/a', mode: 0o400 }] },
    });
    const plugin = new ConfigMapPlugin({ host: host() });
    await plugin.setUp(s);
    const dir = s.podVolumeDir;
    expect([await gid(dir), await perm(dir)]).toEqual([4004, 0o2777]);
    const data1 = await fs.readlink(path.join(dir, '..data'));
    expect([await gid(path.join(dir, data1)), await perm(path.join(dir, data1))]).toEqual([4004, 0o2755]);
    // The payload's own directories are made 0777 less the umask, as upstream's MkdirAll.
    const made = 0o777 & ~process.umask();
    expect([await gid(path.join(dir, data1, 'dir')), await perm(path.join(dir, data1, 'dir'))]).toEqual([
      4004,
      made | 0o2550,
    ]);
    expect([await gid(path.join(dir, 'dir/a')), await perm(path.join(dir, 'dir/a'))]).toEqual([4004, 0o440]);

    // An update writes a new data directory and a new file: both get the group too.
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a2', b: 'b' } });
    await clock.tick(1000);
    await plugin.setUp({
      ...s,
      volume: {
        name: 'cfg',
        configMap: {
          name: 'cfg',
          items: [
            { key: 'a', path: 'dir/a', mode: 0o400 },
            { key: 'b', path: 'b' },
          ],
        },
      },
    });
    const data2 = await fs.readlink(path.join(dir, '..data'));
    expect(data2).not.toBe(data1);
    expect([await gid(path.join(dir, data2)), await perm(path.join(dir, data2))]).toEqual([4004, 0o2755]);
    expect(await fs.readFile(path.join(dir, 'dir/a'), 'utf8')).toBe('a2');
    expect([await gid(path.join(dir, 'dir/a')), await perm(path.join(dir, 'dir/a'))]).toEqual([4004, 0o440]);
    const b = await fs.stat(path.join(dir, 'b'));
    expect([b.gid, b.mode & 0o7777]).toEqual([4004, 0o644]);
  });

  it('with OnRootMismatch an update still gives the new files the group (no policy for API volumes)', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a1' } });
    const s = spec(grouped('OnRootMismatch'), { name: 'cfg', configMap: { name: 'cfg' } });
    const plugin = new ConfigMapPlugin({ host: host() });
    await plugin.setUp(s);
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a1', b: 'b' } });
    await clock.tick(1000);
    await plugin.setUp(s);
    expect(await gid(path.join(s.podVolumeDir, 'b'))).toBe(4004);
  });

  it('with OnRootMismatch an emptyDir is still changed (no policy for emptyDir)', async () => {
    // The root already fits; upstream passes no policy to emptyDir, so the walk runs anyway.
    const s = spec(grouped('OnRootMismatch'), { name: 'scratch', emptyDir: {} });
    await fs.mkdir(s.podVolumeDir, { recursive: true });
    await fs.chown(s.podVolumeDir, -1, 4004);
    await fs.chmod(s.podVolumeDir, 0o2777);
    await fs.writeFile(path.join(s.podVolumeDir, 'left'), 'x');
    await fs.chmod(path.join(s.podVolumeDir, 'left'), 0o600);
    await new EmptyDirPlugin({ host: host() }).setUp(s);
    expect([
      await gid(path.join(s.podVolumeDir, 'left')),
      await perm(path.join(s.podVolumeDir, 'left')),
    ]).toEqual([4004, 0o660]);
  });

  it('a symlink planted in a configMap volume does not carry the update walk to its host target', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a1' } });
    const s = spec(grouped(), { name: 'cfg', configMap: { name: 'cfg' } });
    const plugin = new ConfigMapPlugin({ host: host() });
    await plugin.setUp(s);
    const hostFile = path.join(root, 'shadow');
    await fs.writeFile(hostFile, 'secret');
    await fs.chmod(hostFile, 0o600);
    await fs.symlink(hostFile, path.join(s.podVolumeDir, 'planted'));
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a2' } });
    await clock.tick(1000);
    await plugin.setUp(s);
    expect(await fs.readFile(path.join(s.podVolumeDir, 'a'), 'utf8')).toBe('a2');
    expect([await gid(hostFile), await perm(hostFile)]).toEqual([process.getgid?.() ?? 0, 0o600]);
    expect(await gid(path.join(s.podVolumeDir, 'planted'))).toBe(4004);
  });

  it('a nested mount point directory inside a configMap volume gets the group as well', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a' } });
    const pod = grouped();
    pod.spec!.containers[0]!.volumeMounts = [
      { name: 'cfg', mountPath: '/etc/app' },
      { name: 'scratch', mountPath: '/etc/app/cache' },
    ];
    const s = spec(pod, { name: 'cfg', configMap: { name: 'cfg' } });
    await new ConfigMapPlugin({ host: host() }).setUp(s);
    const sub = path.join(s.podVolumeDir, 'cache');
    expect([await gid(sub), await perm(sub)]).toEqual([4004, 0o2755]);
  });

  it.each([
    ['secret', { secret: { secretName: 's' } }],
    ['downwardAPI', { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }],
    [
      'projected',
      {
        projected: {
          sources: [
            { secret: { name: 's' } },
            { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      },
    ],
  ])('a %s volume gets the group on its root and files', async (_kind, source) => {
    getter.setSecret({ metadata: { name: 's', namespace: 'ns' }, data: { k: 'dg==' } });
    const volume = { name: 'v', ...source } as Volume;
    const s = spec(grouped(), volume);
    const plugin =
      'secret' in source
        ? new SecretPlugin({ host: host() })
        : 'downwardAPI' in source
          ? new DownwardAPIPlugin({ host: host() })
          : new ProjectedPlugin({ host: host() });
    await plugin.setUp(s);
    expect([await gid(s.podVolumeDir), await perm(s.podVolumeDir)]).toEqual([4004, 0o2777]);
    const file = path.join(s.podVolumeDir, 'secret' in source ? 'k' : 'name');
    expect([await gid(file), (await fs.stat(file)).mode & 0o7777]).toEqual([4004, 0o644]);
  });
});
