import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Pod, Volume } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import {
  ConfigMapPlugin,
  checkHostPathType,
  DownwardAPIPlugin,
  EmptyDirPlugin,
  extractContainerResourceValue,
  formatMap,
  HostPathPlugin,
  MountError,
  ProjectedPlugin,
  SecretPlugin,
  SystemMounter,
  type VolumeHost,
  type VolumePlugin,
} from '@kubelet-kit/volume-manager';
import { FakeMounter, FakeObjectGetter, FakeTokenGetter } from '@kubelet-kit/volume-manager/testing';
import { afterEach, beforeEach, describe, expect, it, type TestContext } from 'vitest';
import { makePod, mode, readText, tempDir } from './helpers.js';

let root: string;
let getter: FakeObjectGetter;
let mounter: FakeMounter;
let logger: InMemoryLogger;

function host(overrides: Partial<VolumeHost> = {}): VolumeHost {
  return {
    logger,
    clock: new FakeClock(),
    mounter,
    objectGetter: getter,
    nodeAllocatable: () => ({ cpu: 4, memory: 8 * 2 ** 30, pods: 110, ephemeralStorage: 100 * 2 ** 30 }),
    ...overrides,
  };
}

function spec(pod: Pod, volume: Volume) {
  return { pod, volume, podVolumeDir: path.join(root, 'vol', volume.name) };
}

beforeEach(async () => {
  root = await tempDir('plugins-');
  getter = new FakeObjectGetter();
  mounter = new FakeMounter();
  logger = new InMemoryLogger();
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('hostPath type checks', () => {
  let sock: net.Server;
  let sockPath: string;
  beforeEach(async () => {
    sockPath = path.join(root, 'sock');
    sock = net.createServer();
    await new Promise<void>((resolve) => sock.listen(sockPath, resolve));
    await fs.writeFile(path.join(root, 'file'), 'x');
    await fs.mkdir(path.join(root, 'dir'));
  });
  afterEach(() => new Promise<void>((resolve) => sock.close(() => resolve())));

  const cases: [string, string, string, RegExp | undefined][] = [
    ['empty type, missing path', 'missing', '', undefined],
    ['DirectoryOrCreate on dir', 'dir', 'DirectoryOrCreate', undefined],
    ['DirectoryOrCreate on file', 'file', 'DirectoryOrCreate', /is not a directory/],
    ['Directory on dir', 'dir', 'Directory', undefined],
    ['Directory missing', 'missing', 'Directory', /is not a directory/],
    ['Directory on file', 'file', 'Directory', /is not a directory/],
    ['FileOrCreate on file', 'file', 'FileOrCreate', undefined],
    ['FileOrCreate on dir', 'dir', 'FileOrCreate', /is not a file/],
    ['File on file', 'file', 'File', undefined],
    ['File missing', 'missing', 'File', /is not a file/],
    ['File on dir', 'dir', 'File', /is not a file/],
    ['Socket on socket', 'sock', 'Socket', undefined],
    ['Socket on file', 'file', 'Socket', /is not a socket file/],
    ['CharDevice on /dev/null', '/dev/null', 'CharDevice', undefined],
    ['CharDevice on file', 'file', 'CharDevice', /is not a character device/],
    ['BlockDevice on file', 'file', 'BlockDevice', /is not a block device/],
    ['BlockDevice on /dev/null', '/dev/null', 'BlockDevice', /is not a block device/],
    ['unknown type', 'file', 'Weird', /unknown type/],
  ];
  it.each(cases)('%s', async (_n, rel, type, error) => {
    const p = rel.startsWith('/') ? rel : path.join(root, rel);
    if (error) await expect(checkHostPathType(p, type)).rejects.toThrow(error);
    else await expect(checkHostPathType(p, type)).resolves.toBeUndefined();
  });

  it('BlockDevice accepts a block device', async (ctx) => {
    const devs = await fs.readdir('/dev');
    let block: string | undefined;
    for (const d of devs) {
      const st = await fs.stat(path.join('/dev', d)).catch(() => undefined);
      if (st?.isBlockDevice()) {
        block = path.join('/dev', d);
        break;
      }
    }
    if (!block) ctx.skip(true, 'no block device in /dev');
    await expect(checkHostPathType(block!, 'BlockDevice')).resolves.toBeUndefined();
  });

  it('DirectoryOrCreate creates the directory with mode 0755', async () => {
    const p = path.join(root, 'new/deep');
    await checkHostPathType(p, 'DirectoryOrCreate');
    expect((await fs.stat(p)).isDirectory()).toBe(true);
    expect(await mode(p)).toBe(0o755);
  });

  it('FileOrCreate creates an empty file but not its parent directory', async () => {
    const p = path.join(root, 'newfile');
    await checkHostPathType(p, 'FileOrCreate');
    expect(await readText(p)).toBe('');
    await expect(checkHostPathType(path.join(root, 'nodir/file'), 'FileOrCreate')).rejects.toThrow();
  });

  it('the policy hook can deny a path, and allowed paths get the type check', async () => {
    const asked: string[] = [];
    const plugin = new HostPathPlugin({
      host: host({
        hostPathPolicy: ({ path: p, type }) => {
          asked.push(`${p}:${type}`);
          return p.startsWith(root) ? { allowed: true } : { allowed: false, reason: 'outside the sandbox' };
        },
      }),
    });
    const pod = makePod();
    const denied: Volume = { name: 'etc', hostPath: { path: '/etc', type: 'Directory' } };
    await expect(plugin.setUp(spec(pod, denied))).rejects.toMatchObject({
      code: 'HostPathDenied',
      message: expect.stringContaining('outside the sandbox'),
    });
    const ok: Volume = { name: 'ok', hostPath: { path: path.join(root, 'f2'), type: 'FileOrCreate' } };
    await plugin.setUp(spec(pod, ok));
    expect(plugin.getPath(spec(pod, ok))).toBe(path.join(root, 'f2'));
    expect(asked).toEqual(['/etc:Directory', `${path.join(root, 'f2')}:FileOrCreate`]);
    await expect(fs.stat(path.join(root, 'f2'))).resolves.toBeDefined();
  });
});

describe('configMap volumes', () => {
  const pod = makePod({ namespace: 'ns' });
  beforeEach(() => {
    getter.setConfigMap({
      metadata: { name: 'cfg', namespace: 'ns' },
      data: { 'game.properties': 'lives=3', 'ui.properties': 'color=blue', '.hidden': 'h' },
      binaryData: { 'logo.bin': Buffer.from([0, 1, 2, 255]).toString('base64') },
    });
  });
  const plugin = () => new ConfigMapPlugin({ host: host() });

  it('projects every data and binaryData key with the default mode 0644 when there are no items', async () => {
    const s = spec(pod, { name: 'v', configMap: { name: 'cfg' } });
    await plugin().setUp(s);
    const dir = s.podVolumeDir;
    expect(await readText(path.join(dir, 'game.properties'))).toBe('lives=3');
    expect(await readText(path.join(dir, '.hidden'))).toBe('h');
    expect([...(await fs.readFile(path.join(dir, 'logo.bin')))]).toEqual([0, 1, 2, 255]);
    expect(await mode(path.join(dir, 'ui.properties'))).toBe(0o644);
    expect(await mode(dir)).toBe(0o777);
    expect((await fs.readdir(dir)).filter((e) => !e.startsWith('..')).sort()).toEqual([
      '.hidden',
      'game.properties',
      'logo.bin',
      'ui.properties',
    ]);
  });

  it('projects items to their paths with defaultMode and per-item modes', async () => {
    const s = spec(pod, {
      name: 'v',
      configMap: {
        name: 'cfg',
        defaultMode: 0o400,
        items: [
          { key: 'game.properties', path: 'conf/game' },
          { key: 'ui.properties', path: 'ui', mode: 0o640 },
          { key: 'logo.bin', path: 'bin/logo' },
        ],
      },
    });
    await plugin().setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'conf/game'))).toBe('lives=3');
    expect(await mode(path.join(s.podVolumeDir, 'conf/game'))).toBe(0o400);
    expect(await mode(path.join(s.podVolumeDir, 'ui'))).toBe(0o640);
    expect((await fs.readdir(s.podVolumeDir)).filter((e) => !e.startsWith('..')).sort()).toEqual([
      'bin',
      'conf',
      'ui',
    ]);
  });

  it('fails on a missing key unless optional, which skips it', async () => {
    const items = [
      { key: 'game.properties', path: 'game' },
      { key: 'nope', path: 'nope' },
    ];
    await expect(plugin().setUp(spec(pod, { name: 'v', configMap: { name: 'cfg', items } }))).rejects.toThrow(
      'configmap references non-existent config key: nope',
    );
    const s = spec(pod, { name: 'v2', configMap: { name: 'cfg', items, optional: true } });
    await plugin().setUp(s);
    expect((await fs.readdir(s.podVolumeDir)).filter((e) => !e.startsWith('..'))).toEqual(['game']);
  });

  it('fails on a missing configMap unless optional, which gives an empty volume', async () => {
    const missing = spec(pod, { name: 'v', configMap: { name: 'gone' } });
    await expect(plugin().setUp(missing)).rejects.toThrow('configmaps "gone" not found');
    await expect(fs.stat(missing.podVolumeDir)).rejects.toThrow();
    const s = spec(pod, { name: 'v2', configMap: { name: 'gone', optional: true } });
    await plugin().setUp(s);
    expect((await fs.readdir(s.podVolumeDir)).filter((e) => !e.startsWith('..'))).toEqual([]);
  });

  it('a second set-up re-projects a changed configMap and drops removed keys', async () => {
    const s = spec(pod, { name: 'v', configMap: { name: 'cfg' } });
    await plugin().setUp(s);
    getter.setConfigMap({
      metadata: { name: 'cfg', namespace: 'ns' },
      data: { 'game.properties': 'lives=4' },
    });
    await plugin().setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'game.properties'))).toBe('lives=4');
    await expect(fs.stat(path.join(s.podVolumeDir, 'ui.properties'))).rejects.toThrow();
  });

  it('reads from the pod namespace only', async () => {
    const other = makePod({ namespace: 'other' });
    await expect(plugin().setUp(spec(other, { name: 'v', configMap: { name: 'cfg' } }))).rejects.toThrow(
      /not found/,
    );
  });
});

describe('secret volumes', () => {
  const pod = makePod({ namespace: 'ns' });
  beforeEach(() => {
    getter.setSecret({
      metadata: { name: 's', namespace: 'ns' },
      data: {
        user: Buffer.from('admin').toString('base64'),
        pass: Buffer.from('hunter2').toString('base64'),
      },
    });
  });

  it('decodes data onto a tmpfs, with items and modes', async () => {
    const plugin = new SecretPlugin({ host: host() });
    const s = spec(pod, {
      name: 'sec',
      secret: {
        secretName: 's',
        defaultMode: 0o400,
        items: [
          { key: 'pass', path: 'p/pass', mode: 0o600 },
          { key: 'user', path: 'user' },
        ],
      },
    });
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'p/pass'))).toBe('hunter2');
    expect(await mode(path.join(s.podVolumeDir, 'p/pass'))).toBe(0o600);
    expect(await mode(path.join(s.podVolumeDir, 'user'))).toBe(0o400);
    expect(mounter.calls).toEqual([`mount ${s.podVolumeDir}`]);
    // A second set-up does not mount again.
    await plugin.setUp(s);
    expect(mounter.calls).toHaveLength(1);
    await plugin.tearDown(s.podVolumeDir);
    expect(mounter.calls).toEqual([`mount ${s.podVolumeDir}`, `umount ${s.podVolumeDir}`]);
    await expect(fs.stat(s.podVolumeDir)).rejects.toThrow();
  });

  it('falls back to a directory, and says so, when tmpfs cannot be mounted', async () => {
    mounter.mountError = new MountError('mount: permission denied', true);
    const plugin = new SecretPlugin({ host: host() });
    const s = spec(pod, { name: 'sec', secret: { secretName: 's' } });
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'user'))).toBe('admin');
    expect(logger.records.some((r) => r.level === 'warn' && /tmpfs mount failed/.test(r.message))).toBe(true);
  });

  it("reports a missing key with upstream's secret wording, and accepts stringData", async () => {
    const plugin = new SecretPlugin({ host: host() });
    await expect(
      plugin.setUp(spec(pod, { name: 'x', secret: { secretName: 's', items: [{ key: 'k', path: 'k' }] } })),
    ).rejects.toMatchObject({ message: 'references non-existent secret key: k' });
    getter.setSecret({ metadata: { name: 'sd', namespace: 'ns' }, stringData: { plain: 'text' } });
    const s = spec(pod, { name: 'y', secret: { secretName: 'sd' } });
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'plain'))).toBe('text');
  });
});

describe('downwardAPI volumes', () => {
  it('formats labels and annotations as sorted key="value" lines', () => {
    expect(formatMap({ b: '2', a: 'x"y', c: '' })).toBe('a="x\\"y"\nb="2"\nc=""');
    expect(formatMap(undefined)).toBe('');
  });

  it('projects metadata fields and follows label changes on the next set-up', async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const volume: Volume = {
      name: 'podinfo',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' }, mode: 0o400 },
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
          { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } },
          { path: 'meta/uid', fieldRef: { fieldPath: 'metadata.uid' } },
          { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
        ],
      },
    };
    const pod = makePod({
      uid: 'u-42',
      name: 'web',
      namespace: 'prod',
      labels: { tier: 'front', app: 'shop' },
    });
    pod.metadata!.annotations = { 'build/sha': 'abc' };
    const s = spec(pod, volume);
    await plugin.setUp(s);
    const dir = s.podVolumeDir;
    expect(await readText(path.join(dir, 'labels'))).toBe('app="shop"\ntier="front"');
    expect(await readText(path.join(dir, 'annotations'))).toBe('build/sha="abc"');
    expect(await mode(path.join(dir, 'annotations'))).toBe(0o400);
    expect(await mode(path.join(dir, 'labels'))).toBe(0o644);
    expect(await readText(path.join(dir, 'name'))).toBe('web');
    expect(await readText(path.join(dir, 'ns'))).toBe('prod');
    expect(await readText(path.join(dir, 'meta/uid'))).toBe('u-42');
    expect(await readText(path.join(dir, 'tier'))).toBe('front');

    const relabelled = makePod({ uid: 'u-42', name: 'web', namespace: 'prod', labels: { tier: 'back' } });
    await plugin.setUp({ ...s, pod: relabelled });
    expect(await readText(path.join(dir, 'labels'))).toBe('tier="back"');
  });

  it('rejects unsupported field paths', async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const s = spec(makePod(), {
      name: 'x',
      downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] },
    });
    await expect(plugin.setUp(s)).rejects.toThrow('unsupported fieldPath: status.podIP');
  });

  const alloc = { cpu: 4, memory: 8 * 2 ** 30, pods: 110, ephemeralStorage: 2 ** 30 };
  const container = {
    name: 'c',
    image: 'x',
    resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '100m', memory: '32Mi' } },
  };
  const resourceCases: [string, string, string | undefined, string][] = [
    ['limits.cpu default divisor rounds up', 'limits.cpu', undefined, '1'],
    ['limits.cpu in millicores', 'limits.cpu', '1m', '250'],
    ['limits.memory in Mi', 'limits.memory', '1Mi', '64'],
    ['limits.memory in bytes', 'limits.memory', undefined, String(64 * 2 ** 20)],
    ['requests.cpu in millicores', 'requests.cpu', '1m', '100'],
    ['requests.memory in Mi', 'requests.memory', '1Mi', '32'],
    ['unset limit falls back to allocatable', 'limits.ephemeral-storage', '1Mi', '1024'],
  ];
  it.each(resourceCases)('resourceFieldRef: %s', (_n, resource, divisor, want) => {
    expect(
      extractContainerResourceValue({ resource, ...(divisor ? { divisor } : {}) }, container, alloc),
    ).toBe(want);
  });

  it('resourceFieldRef items name their container', async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const pod = makePod({ containers: [{ name: 'a', image: 'x' }, container] });
    const s = spec(pod, {
      name: 'res',
      downwardAPI: {
        items: [
          {
            path: 'mem',
            resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' },
          },
        ],
      },
    });
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'mem'))).toBe('64');
  });
});

describe('projected volumes', () => {
  it('mixes configMap, secret, downwardAPI and a token; a later source overwrites a path', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'from-cm', shared: 'cm' } });
    getter.setSecret({
      metadata: { name: 's', namespace: 'ns' },
      data: {
        b: Buffer.from('from-secret').toString('base64'),
        shared: Buffer.from('secret').toString('base64'),
      },
    });
    const tokenGetter = new FakeTokenGetter({ now: () => 0 });
    const plugin = new ProjectedPlugin({ host: host({ tokenGetter }) });
    const pod = makePod({ namespace: 'ns', labels: { x: 'y' }, serviceAccountName: 'robot' });
    const s = spec(pod, {
      name: 'all',
      projected: {
        defaultMode: 0o440,
        sources: [
          { configMap: { name: 'cfg' } },
          {
            secret: {
              name: 's',
              items: [
                { key: 'b', path: 'b', mode: 0o400 },
                { key: 'shared', path: 'shared' },
              ],
            },
          },
          { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          { serviceAccountToken: { path: 'token', audience: 'vault', expirationSeconds: 600 } },
          { configMap: { name: 'absent', optional: true } },
        ],
      },
    });
    await plugin.setUp(s);
    const dir = s.podVolumeDir;
    expect(await readText(path.join(dir, 'a'))).toBe('from-cm');
    expect(await readText(path.join(dir, 'b'))).toBe('from-secret');
    expect(await mode(path.join(dir, 'b'))).toBe(0o400);
    expect(await readText(path.join(dir, 'shared'))).toBe('secret');
    expect(await mode(path.join(dir, 'a'))).toBe(0o440);
    expect(await readText(path.join(dir, 'labels'))).toBe('x="y"');
    expect(await readText(path.join(dir, 'token'))).toBe('ns/robot/vault/1');
    // Bound to the pod, as upstream's projected plugin asks.
    expect(tokenGetter.requests).toEqual([
      {
        namespace: 'ns',
        serviceAccountName: 'robot',
        spec: {
          audiences: ['vault'],
          expirationSeconds: 600,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'pod-1', uid: 'uid-1' },
        },
      },
    ]);
    expect(mounter.calls).toEqual([`mount ${dir}`]);
  });

  it('fails without a token getter, and on a missing non-optional source', async () => {
    const plugin = new ProjectedPlugin({ host: host() });
    await expect(
      plugin.setUp(
        spec(makePod(), { name: 't', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }),
      ),
    ).rejects.toThrow(/token getter/);
    await expect(
      plugin.setUp(spec(makePod(), { name: 'm', projected: { sources: [{ secret: { name: 'gone' } }] } })),
    ).rejects.toThrow('secrets "gone" not found');
  });
});

describe('emptyDir volumes', () => {
  it('a default emptyDir is a directory everyone may write', async () => {
    const plugin = new EmptyDirPlugin({ host: host() });
    const s = spec(makePod(), { name: 'scratch', emptyDir: {} });
    await plugin.setUp(s);
    expect(await mode(s.podVolumeDir)).toBe(0o777);
    expect(mounter.calls).toEqual([]);
    await fs.writeFile(path.join(s.podVolumeDir, 'x'), 'x');
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'x'))).toBe('x');
    await plugin.tearDown(s.podVolumeDir);
    await expect(fs.stat(s.podVolumeDir)).rejects.toThrow();
  });

  it('medium Memory sizes the tmpfs from sizeLimit, capped by the pod memory limit', async () => {
    const plugin = new EmptyDirPlugin({ host: host() });
    const pod = makePod({
      containers: [{ name: 'c', image: 'x', resources: { limits: { memory: '32Mi' } } }],
    });
    await plugin.setUp(spec(pod, { name: 'm1', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }));
    await plugin.setUp(spec(pod, { name: 'm2', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }));
    await plugin.setUp(spec(makePod(), { name: 'm3', emptyDir: { medium: 'Memory' } }));
    expect(mounter.mounts.map((m) => m.options)).toEqual([
      `size=${16 * 2 ** 20}`,
      `size=${32 * 2 ** 20}`,
      `size=${8 * 2 ** 30}`,
    ]);
  });

  /** Sets a memory emptyDir up; skips the test where mounting a tmpfs needs privileges it lacks. */
  async function setUpOrSkipWithoutTmpfs(
    plugin: EmptyDirPlugin,
    s: ReturnType<typeof spec>,
    ctx: TestContext,
  ): Promise<void> {
    try {
      await plugin.setUp(s);
    } catch (err) {
      if (err instanceof MountError && err.permissionDenied)
        ctx.skip(true, `tmpfs needs privileges here: ${err.message}`);
      throw err;
    }
  }

  it('medium Memory is a real tmpfs mount, never mounted twice, and unmounted on tear-down', async (ctx) => {
    const real = new SystemMounter();
    const plugin = new EmptyDirPlugin({ host: host({ mounter: real }) });
    const s = spec(makePod(), { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } });
    await setUpOrSkipWithoutTmpfs(plugin, s, ctx);
    try {
      const mount = await real.getMount(s.podVolumeDir);
      expect(mount?.fsType).toBe('tmpfs');
      expect(mount?.options).toMatch(/size=4096k/);
      // Upstream prepares the directory before mounting and never chmods the tmpfs root after.
      expect(await mode(s.podVolumeDir)).toBe(0o1777);
      await fs.writeFile(path.join(s.podVolumeDir, 'x'), 'x');
      await plugin.setUp(s);
      const realDir = await fs.realpath(s.podVolumeDir);
      expect((await real.list()).filter((m) => m.mountPoint === realDir)).toHaveLength(1);
      expect(await readText(path.join(s.podVolumeDir, 'x'))).toBe('x');
    } finally {
      await plugin.tearDown(s.podVolumeDir);
    }
    expect(await real.getMount(s.podVolumeDir)).toBeUndefined();
    await expect(fs.stat(s.podVolumeDir)).rejects.toThrow();
  });

  // Each pod sync sets API data volumes up again: the check must not read the host's whole
  // mount table (issue #28's garbage), so this mounter has none to read.
  it('sets a memory emptyDir up twice and tears it down without reading the mount table', async (ctx) => {
    const tableless = new SystemMounter({ mountInfoPath: path.join(root, 'no-such-mountinfo') });
    const real = new SystemMounter();
    const plugin = new EmptyDirPlugin({ host: host({ mounter: tableless }) });
    const s = spec(makePod(), { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } });
    await setUpOrSkipWithoutTmpfs(plugin, s, ctx);
    const realDir = await fs.realpath(s.podVolumeDir);
    try {
      await plugin.setUp(s);
      expect((await real.list()).filter((m) => m.mountPoint === realDir)).toHaveLength(1);
    } finally {
      await plugin.tearDown(s.podVolumeDir);
    }
    expect((await real.list()).filter((m) => m.mountPoint === realDir)).toEqual([]);
    await expect(fs.stat(s.podVolumeDir)).rejects.toThrow();
  });

  it('tear-down unmounts every tmpfs stacked on the directory', async (ctx) => {
    const real = new SystemMounter();
    const plugin = new EmptyDirPlugin({ host: host({ mounter: real }) });
    const s = spec(makePod(), { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } });
    await setUpOrSkipWithoutTmpfs(plugin, s, ctx);
    const realDir = await fs.realpath(s.podVolumeDir);
    try {
      await real.mountTmpfs(s.podVolumeDir, { sizeBytes: 1 << 20 });
      expect((await real.list()).filter((m) => m.mountPoint === realDir)).toHaveLength(2);
      await plugin.tearDown(s.podVolumeDir);
      expect((await real.list()).filter((m) => m.mountPoint === realDir)).toEqual([]);
      await expect(fs.stat(s.podVolumeDir)).rejects.toThrow();
    } finally {
      for (let i = 0; i < 4 && (await real.getMount(realDir)); i++)
        await real.unmount(realDir).catch(() => {});
    }
  });

  it('tear-down of a directory that is already gone does nothing', async () => {
    const plugin = new EmptyDirPlugin({ host: host() });
    await plugin.tearDown(path.join(root, 'vol', 'never-made'));
    expect(mounter.calls).toEqual([]);
  });
});

describe('plugin selection', () => {
  it('each built-in plugin supports exactly its own source', () => {
    const h = host();
    const plugins: VolumePlugin[] = [
      new EmptyDirPlugin({ host: h }),
      new HostPathPlugin({ host: h }),
      new ConfigMapPlugin({ host: h }),
      new SecretPlugin({ host: h }),
      new DownwardAPIPlugin({ host: h }),
      new ProjectedPlugin({ host: h }),
    ];
    const volumes: Volume[] = [
      { name: 'a', emptyDir: {} },
      { name: 'b', hostPath: { path: '/x' } },
      { name: 'c', configMap: { name: 'x' } },
      { name: 'd', secret: { secretName: 'x' } },
      { name: 'e', downwardAPI: {} },
      { name: 'f', projected: { sources: [] } },
    ];
    const matrix = volumes.map((v) => plugins.filter((p) => p.canSupport(v)).map((p) => p.name));
    expect(matrix).toEqual([
      ['kubernetes.io/empty-dir'],
      ['kubernetes.io/host-path'],
      ['kubernetes.io/configmap'],
      ['kubernetes.io/secret'],
      ['kubernetes.io/downward-api'],
      ['kubernetes.io/projected'],
    ]);
  });
});
