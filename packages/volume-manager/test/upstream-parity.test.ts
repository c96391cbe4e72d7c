// Cases where upstream's Go code (pkg/volume/...) decides something a straightforward port would
// get differently; each test names the upstream function it follows.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Container, Pod, Volume } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import {
  AtomicWriter,
  AtomicWriterError,
  ConfigMapPlugin,
  DownwardAPIPlugin,
  EmptyDirPlugin,
  extractContainerResourceValue,
  type FileProjection,
  HostPathPlugin,
  memoryVolumeSize,
  ProjectedPlugin,
  SecretPlugin,
  type VolumeHost,
  validatePath,
} from '@kubelet-kit/volume-manager';
import { FakeMounter, FakeObjectGetter, FakeTokenGetter } from '@kubelet-kit/volume-manager/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makePod, mode, readText, tempDir } from './helpers.js';

let root: string;
let getter: FakeObjectGetter;
let mounter: FakeMounter;

const GiB = 2 ** 30;
const MiB = 2 ** 20;

function host(overrides: Partial<VolumeHost> = {}): VolumeHost {
  return {
    logger: new InMemoryLogger(),
    clock: new FakeClock(),
    mounter,
    objectGetter: getter,
    nodeAllocatable: () => ({ cpu: 4, memory: 8 * GiB, pods: 110, ephemeralStorage: 100 * GiB }),
    ...overrides,
  };
}

function spec(pod: Pod, volume: Volume) {
  return { pod, volume, podVolumeDir: path.join(root, 'vol', volume.name) };
}

const visible = async (dir: string) => (await fs.readdir(dir)).filter((e) => !e.startsWith('..')).sort();

beforeEach(async () => {
  root = await tempDir('parity-');
  getter = new FakeObjectGetter();
  mounter = new FakeMounter();
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('AtomicWriter (atomic_writer.go)', () => {
  // validatePath compares len() of Go strings: bytes, not characters.
  it.each([
    ['a 255-byte element', 'é'.repeat(127), true],
    ['a 256-byte element of 128 characters', 'é'.repeat(128), false],
    ['a path over 4096 bytes but under 4096 characters', Array(18).fill('é'.repeat(120)).join('/'), false],
  ])('validatePath counts bytes: %s', (_name, p, valid) => {
    if (valid) expect(() => validatePath(p)).not.toThrow();
    else expect(() => validatePath(p)).toThrow(AtomicWriterError);
  });

  it('writePayloadToDir sets only the permission bits of a mode (os.FileMode)', async () => {
    const dir = path.join(root, 'aw');
    await fs.mkdir(dir);
    const writer = new AtomicWriter({ targetDir: dir });
    await writer.write(new Map<string, FileProjection>([['run', { data: 'x', mode: 0o4755 }]]));
    expect(await mode(path.join(dir, 'run'))).toBe(0o755);
  });
});

describe('configMap and secret MakePayload', () => {
  const pod = makePod({ namespace: 'ns' });

  it('a key named like an Object member is missing when the map lacks it', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a' } });
    const plugin = new ConfigMapPlugin({ host: host() });
    const items = [
      { key: 'a', path: 'a' },
      { key: 'constructor', path: 'c' },
    ];
    await expect(plugin.setUp(spec(pod, { name: 'v', configMap: { name: 'cfg', items } }))).rejects.toThrow(
      'configmap references non-existent config key: constructor',
    );
    const s = spec(pod, { name: 'v2', configMap: { name: 'cfg', items, optional: true } });
    await plugin.setUp(s);
    expect(await visible(s.podVolumeDir)).toEqual(['a']);
  });

  it('secret MakePayload: the missing-key error has no kind prefix', async () => {
    getter.setSecret({
      metadata: { name: 's', namespace: 'ns' },
      data: { a: Buffer.from('a').toString('base64') },
    });
    const plugin = new SecretPlugin({ host: host() });
    await expect(
      plugin.setUp(
        spec(pod, { name: 'x', secret: { secretName: 's', items: [{ key: 'toString', path: 't' }] } }),
      ),
    ).rejects.toMatchObject({ message: 'references non-existent secret key: toString' });
  });

  it('the wrapped memory emptyDir of a secret is sized like any memory emptyDir (calculateEmptyDirMemorySize)', async () => {
    getter.setSecret({ metadata: { name: 's', namespace: 'ns' }, data: { a: 'YQ==' } });
    const plugin = new SecretPlugin({ host: host() });
    const limited = makePod({
      namespace: 'ns',
      containers: [{ name: 'c', image: 'x', resources: { limits: { memory: '32Mi' } } }],
    });
    await plugin.setUp(spec(limited, { name: 's1', secret: { secretName: 's' } }));
    await plugin.setUp(spec(pod, { name: 's2', secret: { secretName: 's' } }));
    expect(mounter.mounts.map((m) => m.options)).toEqual([`size=${32 * MiB}`, `size=${8 * GiB}`]);
  });

  it('the fsGroup ownership change covers the volume root, not only the data directory', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a' } });
    const gid = process.getgid?.() ?? 0;
    const grouped = makePod({ namespace: 'ns', securityContext: { fsGroup: gid } });
    const s = spec(grouped, { name: 'v', configMap: { name: 'cfg' } });
    await new ConfigMapPlugin({ host: host() }).setUp(s);
    const st = await fs.stat(s.podVolumeDir);
    expect(st.gid).toBe(gid);
    expect(st.mode & 0o7777).toBe(0o2777);
    expect(await mode(path.join(s.podVolumeDir, 'a'))).toBe(0o644);
  });
});

describe('downwardAPI (downwardapi.go, fieldpath, resource helpers)', () => {
  it('is set up on a memory-backed emptyDir, as secrets are', async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const s = spec(makePod(), {
      name: 'info',
      downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] },
    });
    await plugin.setUp(s);
    expect(mounter.calls).toEqual([`mount ${s.podVolumeDir}`]);
    expect(await readText(path.join(s.podVolumeDir, 'name'))).toBe('pod-1');
  });

  it("a label subscript naming an Object member gives '' when the label is absent", async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const s = spec(makePod({ labels: { app: 'x' } }), {
      name: 'l',
      downwardAPI: { items: [{ path: 'c', fieldRef: { fieldPath: "metadata.labels['constructor']" } }] },
    });
    await plugin.setUp(s);
    expect(await readText(path.join(s.podVolumeDir, 'c'))).toBe('');
  });

  // MergeContainerResourceLimits replaces a limit that is unset *or zero*; requests stay.
  it.each([
    ['limits.cpu', { limits: { cpu: '0' } }, '4'],
    ['limits.memory', { limits: { memory: '0' } }, String(8 * GiB)],
    ['requests.cpu', { requests: { cpu: '0' } }, '0'],
  ])('a zero %s', (resource, resources, want) => {
    const alloc = { cpu: 4, memory: 8 * GiB, pods: 110, ephemeralStorage: GiB };
    expect(extractContainerResourceValue({ resource }, { name: 'c', resources }, alloc)).toBe(want);
  });

  it('item errors are aggregated (utilerrors.NewAggregate): deduplicated, in brackets', async () => {
    const plugin = new DownwardAPIPlugin({ host: host() });
    const s = spec(makePod(), {
      name: 'bad',
      downwardAPI: {
        items: [
          { path: 'a', fieldRef: { fieldPath: 'status.podIP' } },
          { path: 'b', fieldRef: { fieldPath: 'status.podIP' } },
          { path: 'c', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } },
        ],
      },
    });
    await expect(plugin.setUp(s)).rejects.toThrow(
      '[unsupported fieldPath: status.podIP, container nope not found]',
    );
  });
});

describe('projected (projected.go collectData)', () => {
  it('tries every source and reports all failures together', async () => {
    getter.setConfigMap({ metadata: { name: 'ok', namespace: 'ns' }, data: { a: 'a' } });
    const plugin = new ProjectedPlugin({ host: host() });
    const s = spec(makePod(), {
      name: 'p',
      projected: {
        sources: [
          { secret: { name: 'gone-s' } },
          { configMap: { name: 'ok' } },
          { configMap: { name: 'gone-c' } },
        ],
      },
    });
    await expect(plugin.setUp(s)).rejects.toThrow(
      '[secrets "gone-s" not found, configmaps "gone-c" not found]',
    );
    expect(getter.reads).toBe(3);
  });

  it('with an fsGroup the token starts at 0600 and ends 0640; without, it takes defaultMode', async () => {
    getter.setConfigMap({ metadata: { name: 'ca', namespace: 'ns' }, data: { 'ca.crt': 'pem' } });
    const plugin = new ProjectedPlugin({ host: host({ tokenGetter: new FakeTokenGetter() }) });
    const volume: Volume = {
      name: 'kube-api-access',
      projected: { sources: [{ serviceAccountToken: { path: 'token' } }, { configMap: { name: 'ca' } }] },
    };
    const gid = process.getgid?.() ?? 0;
    const grouped = spec(makePod({ securityContext: { fsGroup: gid } }), volume);
    await plugin.setUp(grouped);
    expect(await mode(path.join(grouped.podVolumeDir, 'token'))).toBe(0o640);
    expect(await mode(path.join(grouped.podVolumeDir, 'ca.crt'))).toBe(0o644);
    const plain = spec(makePod({ uid: 'u2' }), { ...volume, name: 'plain' });
    await plugin.setUp(plain);
    expect(await mode(path.join(plain.podVolumeDir, 'token'))).toBe(0o644);
  });
});

describe('emptyDir medium Memory size (calculateEmptyDirMemorySize over ResourceConfigForPod)', () => {
  const limit = (memory: string) => ({ limits: { memory } });
  const cases: [string, Partial<Pod['spec']>, number][] = [
    [
      'a pod limit above node allocatable gives node allocatable',
      { containers: [{ name: 'c', image: 'x', resources: limit('16Gi') }] },
      8 * GiB,
    ],
    [
      'an init container without a memory limit leaves the pod unlimited',
      {
        initContainers: [{ name: 'i', image: 'x' }],
        containers: [{ name: 'c', image: 'x', resources: limit('32Mi') }],
      },
      8 * GiB,
    ],
    [
      'a larger init container limit is the pod limit',
      {
        initContainers: [{ name: 'i', image: 'x', resources: limit('64Mi') }],
        containers: [{ name: 'c', image: 'x', resources: limit('32Mi') }],
      },
      64 * MiB,
    ],
    [
      'sidecars add to the containers',
      {
        initContainers: [{ name: 's', image: 'x', restartPolicy: 'Always', resources: limit('16Mi') }],
        containers: [{ name: 'c', image: 'x', resources: limit('32Mi') }],
      },
      48 * MiB,
    ],
    [
      'the pod overhead is added',
      { overhead: { memory: '8Mi' }, containers: [{ name: 'c', image: 'x', resources: limit('32Mi') }] },
      40 * MiB,
    ],
  ];
  it.each(cases)('%s', async (_name, podSpec, size) => {
    const plugin = new EmptyDirPlugin({ host: host() });
    await plugin.setUp(spec(makePod(podSpec), { name: 'm', emptyDir: { medium: 'Memory' } }));
    expect(mounter.mounts.map((m) => m.options)).toEqual([`size=${size}`]);
  });
});

describe('hostPath SetUp (ValidatePathNoBacksteps)', () => {
  it("refuses a path with a '..' element before any policy sees it", async () => {
    const asked: string[] = [];
    const plugin = new HostPathPlugin({
      host: host({
        hostPathPolicy: ({ path: p }) => {
          asked.push(p);
          return { allowed: p.startsWith('/srv/') };
        },
      }),
    });
    await expect(
      plugin.setUp(spec(makePod(), { name: 'h', hostPath: { path: '/srv/../etc', type: 'Directory' } })),
    ).rejects.toMatchObject({
      code: 'InvalidHostPath',
      message: "invalid HostPath `/srv/../etc`: must not contain '..'",
    });
    expect(asked).toEqual([]);
  });
});

describe('nested mount points (MakeNestedMountpoints)', () => {
  it('creates, inside a read-only API data volume, the directories other volumes mount on', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { 'app.conf': 'x' } });
    const pod = makePod({
      containers: [
        {
          name: 'c',
          image: 'x',
          volumeMounts: [
            { name: 'config', mountPath: '/etc/app/' },
            { name: 'certs', mountPath: '/etc/app/tls' },
            { name: 'deeper', mountPath: '/etc/app/tls/ca' },
            { name: 'elsewhere', mountPath: '/etc/application' },
          ],
        },
      ],
    });
    const s = spec(pod, { name: 'config', configMap: { name: 'cfg' } });
    await new ConfigMapPlugin({ host: host() }).setUp(s);
    expect(await visible(s.podVolumeDir)).toEqual(['app.conf', 'tls']);
    expect((await fs.lstat(path.join(s.podVolumeDir, 'tls'))).isDirectory()).toBe(true);
    await expect(fs.stat(path.join(s.podVolumeDir, 'tls/ca'))).rejects.toThrow();
  });

  it('refuses a relative mount path that climbs out', async () => {
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { a: 'a' } });
    const pod = makePod({
      containers: [{ name: 'c', image: 'x', volumeMounts: [{ name: 'config', mountPath: '../x' }] }],
    });
    await expect(
      new ConfigMapPlugin({ host: host() }).setUp(spec(pod, { name: 'config', configMap: { name: 'cfg' } })),
    ).rejects.toThrow('Invalid container mount point ../x');
  });
});

describe('calculateEmptyDirMemorySize (empty_dir.go)', () => {
  const at16Gi = (overrides: Partial<VolumeHost> = {}) =>
    host({ nodeAllocatable: () => ({ cpu: 4, memory: 16 * GiB, pods: 110 }), ...overrides });
  const withContainers = (...containers: Container[]): Pod => ({
    metadata: { uid: 'u' },
    spec: { containers },
  });
  const limited = (memory: string) => ({ name: 'c', resources: { limits: { memory } } });

  // Upstream's table, less SizeMemoryBackedVolumesDisabled: the gate is GA and locked on.
  const cases: [string, Pod, string, number][] = [
    ['EmptyDirLocalLimit', withContainers(limited('10Gi')), '1Gi', GiB],
    ['PodLocalLimit', withContainers(limited('10Gi')), '0', 10 * GiB],
    [
      'NodeAllocatableLimit',
      withContainers({ name: 'c', resources: { requests: { memory: '10Gi' } } }),
      '0',
      16 * GiB,
    ],
    // The same pod memory limit the pod's cgroup gets (ResourceConfigForPod):
    ['a sizeLimit above the pod limit', withContainers(limited('2Gi')), '4Gi', 2 * GiB],
    ['a pod limit above node allocatable', withContainers(limited('32Gi')), '0', 16 * GiB],
    ['one container without a memory limit', withContainers(limited('2Gi'), { name: 'd' }), '0', 16 * GiB],
    [
      'a pod-level memory limit',
      {
        spec: { containers: [{ name: 'c' }, { name: 'd' }], resources: { limits: { memory: '3Gi' } } },
      },
      '0',
      3 * GiB,
    ],
    [
      'a pod-level memory limit with a sizeLimit under it',
      { spec: { containers: [{ name: 'c' }], resources: { limits: { memory: '3Gi' } } } },
      '512Mi',
      512 * MiB,
    ],
    [
      'init containers, sidecars and overhead',
      {
        spec: {
          containers: [limited('1Gi')],
          initContainers: [
            { ...limited('1Gi'), name: 's', restartPolicy: 'Always' },
            { ...limited('3Gi'), name: 'i' },
          ],
          overhead: { memory: '128Mi' },
        },
      },
      '0',
      4 * GiB + 128 * MiB,
    ],
    [
      'an init container without a memory limit',
      { spec: { containers: [limited('1Gi')], initContainers: [{ name: 'i' }] } },
      '0',
      16 * GiB,
    ],
  ];

  it.each(cases)('%s', (_name, pod, sizeLimit, expected) => {
    expect(memoryVolumeSize(at16Gi(), pod, sizeLimit)).toBe(expected);
  });

  it('mounts the tmpfs with that size', async () => {
    const plugin = new EmptyDirPlugin({ host: at16Gi() });
    const pod: Pod = {
      metadata: { uid: 'u' },
      spec: { containers: [{ name: 'c' }], resources: { limits: { memory: '3Gi' } } },
    };
    await plugin.setUp(spec(pod, { name: 'mem', emptyDir: { medium: 'Memory' } }));
    expect(mounter.mounts.map((m) => m.options)).toEqual([`size=${3 * GiB}`]);
  });
});
