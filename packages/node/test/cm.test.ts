import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Container, noopLogger, type Pod } from '@kubelet-kit/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CgroupManager, toSystemd } from '../src/cm/cgroup-manager.js';
import { ContainerManager } from '../src/cm/container-manager.js';
import {
  cpuSharesToCpuWeight,
  milliCPUToQuota,
  milliCPUToShares,
  resourceConfigForPod,
} from '../src/cm/helpers.js';

type Res = { requests?: Record<string, string>; limits?: Record<string, string> };

function pod(
  containers: Res[],
  extra: { uid?: string; init?: Res[]; overhead?: Record<string, string> } = {},
): Pod {
  const c = (r: Res, i: number): Container => ({ name: `c${i}`, image: 'x', resources: r });
  return {
    metadata: { name: 'p', namespace: 'default', uid: extra.uid ?? '1234-5678' },
    spec: {
      containers: containers.map(c),
      ...(extra.init ? { initContainers: extra.init.map(c) } : {}),
      ...(extra.overhead ? { overhead: extra.overhead } : {}),
    },
  } as Pod;
}

const mi = 1024 * 1024;

// Upstream helpers_linux_test.go TestResourceConfigForPod.
describe('resourceConfigForPod', () => {
  const cases: [string, Pod, { enforceCPULimits?: boolean; cpuPeriod?: number }, object][] = [
    ['besteffort', pod([{}]), {}, { cpuShares: 2 }],
    ['burstable-no-limits', pod([{ requests: { cpu: '100m', memory: '100Mi' } }]), {}, { cpuShares: 102 }],
    [
      'burstable-with-limits',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } }]),
      {},
      { cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memory: 200 * mi },
    ],
    [
      'burstable-with-limits-no-cpu-enforcement',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } }]),
      { enforceCPULimits: false },
      { cpuShares: 102, cpuQuota: -1, cpuPeriod: 100000, memory: 200 * mi },
    ],
    [
      'burstable-partial-limits',
      pod([
        { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } },
        { requests: { cpu: '100m', memory: '100Mi' } },
      ]),
      {},
      { cpuShares: 204 },
    ],
    [
      'burstable-with-limits-with-tuned-quota',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } }]),
      { cpuPeriod: 5000 },
      { cpuShares: 102, cpuQuota: 1000, cpuPeriod: 5000, memory: 200 * mi },
    ],
    [
      'guaranteed',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } }]),
      {},
      { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memory: 100 * mi },
    ],
    [
      'guaranteed-no-cpu-enforcement',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } }]),
      { enforceCPULimits: false },
      { cpuShares: 102, cpuQuota: -1, cpuPeriod: 100000, memory: 100 * mi },
    ],
    [
      'guaranteed-with-tuned-quota',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } }]),
      { cpuPeriod: 5000 },
      { cpuShares: 102, cpuQuota: 1000, cpuPeriod: 5000, memory: 100 * mi },
    ],
    [
      'burstable-partial-limits-with-init-containers',
      pod(
        [
          { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } },
          { requests: { cpu: '100m', memory: '100Mi' } },
        ],
        {
          init: [
            { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } },
            { requests: { cpu: '100m', memory: '100Mi' } },
          ],
        },
      ),
      {},
      { cpuShares: 204 },
    ],
    [
      'guaranteed with overhead',
      pod([{ requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } }], {
        overhead: { cpu: '10m', memory: '10Mi' },
      }),
      {},
      { cpuShares: 112, cpuQuota: 11000, cpuPeriod: 100000, memory: 110 * mi },
    ],
  ];
  for (const [name, p, opts, want] of cases) {
    it(name, () => expect(resourceConfigForPod(p, opts)).toEqual(want));
  }

  it('uses pod-level resources when the pod has them', () => {
    const base = pod([{}, {}]);
    const p = {
      ...base,
      spec: {
        ...base.spec,
        resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
      },
      // The class is still the containers' (kuberuntime's QoS ignores pod-level resources).
      status: { qosClass: 'Burstable' },
    } as Pod;
    expect(resourceConfigForPod(p)).toEqual({
      cpuShares: 512,
      cpuQuota: 100000,
      cpuPeriod: 100000,
      memory: 1024 * mi,
    });
  });

  it('sets pids.max from --pod-max-pids', () => {
    expect(resourceConfigForPod(pod([{}]), { podPidsLimit: 100 })).toEqual({ cpuShares: 2, pidsLimit: 100 });
  });
});

describe('conversions', () => {
  it('MilliCPUToShares, MilliCPUToQuota and CpuSharesToCpuWeight as upstream', () => {
    expect(milliCPUToShares(0)).toBe(2);
    expect(milliCPUToShares(1)).toBe(2);
    expect(milliCPUToShares(1000)).toBe(1024);
    expect(milliCPUToShares(1e9)).toBe(262144);
    expect(milliCPUToQuota(0, 100000)).toBe(0);
    expect(milliCPUToQuota(5, 100000)).toBe(1000);
    expect(milliCPUToQuota(250, 100000)).toBe(25000);
    expect(cpuSharesToCpuWeight(2)).toBe(1);
    expect(cpuSharesToCpuWeight(1024)).toBe(39);
    expect(cpuSharesToCpuWeight(262144)).toBe(10000);
  });
});

describe('systemd names', () => {
  it('nests slices and escapes dashes, as upstream ToSystemd', () => {
    expect(toSystemd([])).toBe('/');
    expect(toSystemd(['kubepods'])).toBe('/kubepods.slice');
    expect(toSystemd(['kubepods', 'burstable', 'pod1234-5678'])).toBe(
      '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice',
    );
  });
});

/** A fake v1 hierarchy: one directory per controller, as /sys/fs/cgroup here. */
function fakeV1(root: string): void {
  for (const s of ['cpu', 'cpuacct', 'memory', 'pids']) fs.mkdirSync(path.join(root, s), { recursive: true });
}

function fakeV2(root: string): void {
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids');
  fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '');
}

const amounts = {
  capacity: { cpuMilli: 4000, memory: 8 * 1024 * mi, pids: 4194304 },
  allocatable: { cpuMilli: 3500, memory: 7 * 1024 * mi, pids: 4194000 },
};

describe('ContainerManager over a fake cgroupfs', () => {
  let root: string;
  let pods: Pod[];
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'cm-'));
    pods = [];
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const guaranteed = pod(
    [{ requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '250m', memory: '64Mi' } }],
    {
      uid: 'aaaa-1111',
    },
  );
  const burstable = pod([{ requests: { cpu: '100m' }, limits: { memory: '128Mi' } }], { uid: 'bbbb-2222' });
  const bestEffort = pod([{}], { uid: 'cccc-3333' });

  const read = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');

  it('v1, cgroupfs: kubepods at allocatable, QoS cgroups, pod cgroups with their values', () => {
    fakeV1(root);
    const cm = new ContainerManager({
      cgroupMountPoint: root,
      ...amounts,
      activePods: () => pods,
      logger: noopLogger,
    });
    expect(cm.cgroups.version).toBe(1);
    cm.start();
    expect(read('cpu/kubepods/cpu.shares')).toBe('3584');
    expect(read('memory/kubepods/memory.limit_in_bytes')).toBe(String(7 * 1024 * mi));
    expect(read('pids/kubepods/pids.max')).toBe('4194000');
    expect(read('cpu/kubepods/besteffort/cpu.shares')).toBe('2');
    expect(cm.cgroupParent(guaranteed)).toBe('/kubepods/podaaaa-1111');
    expect(cm.cgroupParent(burstable)).toBe('/kubepods/burstable/podbbbb-2222');
    expect(cm.cgroupParent(bestEffort)).toBe('/kubepods/besteffort/podcccc-3333');
    pods = [guaranteed, burstable, bestEffort];
    for (const p of pods) cm.ensurePod(p);
    expect(read('cpu/kubepods/podaaaa-1111/cpu.shares')).toBe('256');
    expect(read('cpu/kubepods/podaaaa-1111/cpu.cfs_quota_us')).toBe('25000');
    expect(read('cpu/kubepods/podaaaa-1111/cpu.cfs_period_us')).toBe('100000');
    expect(read('memory/kubepods/podaaaa-1111/memory.limit_in_bytes')).toBe(String(64 * mi));
    expect(read('cpu/kubepods/burstable/podbbbb-2222/cpu.shares')).toBe('102');
    expect(fs.existsSync(path.join(root, 'cpu/kubepods/burstable/podbbbb-2222/cpu.cfs_quota_us'))).toBe(
      false,
    );
    expect(read('memory/kubepods/burstable/podbbbb-2222/memory.limit_in_bytes')).toBe(String(128 * mi));
    expect(read('cpu/kubepods/besteffort/podcccc-3333/cpu.shares')).toBe('2');
    // Burstable's shares: its pods' requests.
    expect(read('cpu/kubepods/burstable/cpu.shares')).toBe('102');
    expect([...cm.pods.getAllPodsFromCgroups().keys()].sort()).toEqual([
      'aaaa-1111',
      'bbbb-2222',
      'cccc-3333',
    ]);

    // The terminated pod's cgroup goes; an orphan goes unless its worker may still run it.
    pods = [guaranteed, bestEffort];
    cm.destroyPod(burstable);
    expect(fs.existsSync(path.join(root, 'cpu/kubepods/burstable/podbbbb-2222'))).toBe(false);
    expect(fs.existsSync(path.join(root, 'memory/kubepods/burstable/podbbbb-2222'))).toBe(false);
    expect(read('cpu/kubepods/burstable/cpu.shares')).toBe('2');
    cm.cleanupOrphanedPodCgroups(new Set(['aaaa-1111']), (uid) => uid === 'cccc-3333');
    expect(cm.pods.exists(bestEffort)).toBe(true);
    cm.cleanupOrphanedPodCgroups(new Set(['aaaa-1111']), () => false);
    expect(cm.pods.exists(bestEffort)).toBe(false);
    expect(cm.pods.exists(guaranteed)).toBe(true);
  });

  it('an existing pod cgroup is kept as it is (restart adoption)', () => {
    fakeV1(root);
    const cm = new ContainerManager({
      cgroupMountPoint: root,
      ...amounts,
      activePods: () => pods,
      logger: noopLogger,
    });
    cm.start();
    cm.ensurePod(guaranteed);
    fs.writeFileSync(path.join(root, 'cpu/kubepods/podaaaa-1111/cgroup.procs'), '');
    const again = new ContainerManager({
      cgroupMountPoint: root,
      ...amounts,
      activePods: () => pods,
      logger: noopLogger,
    });
    again.start();
    again.ensurePod(guaranteed);
    expect(fs.existsSync(path.join(root, 'cpu/kubepods/podaaaa-1111/cgroup.procs'))).toBe(true);
  });

  it('--enforce-node-allocatable none leaves kubepods at capacity; --cgroup-root goes above it', () => {
    fakeV1(root);
    const cm = new ContainerManager({
      cgroupMountPoint: root,
      cgroupRoot: '/edge',
      enforceNodeAllocatable: [],
      ...amounts,
      activePods: () => pods,
      logger: noopLogger,
    });
    cm.start();
    expect(read('cpu/edge/kubepods/cpu.shares')).toBe('4096');
    expect(read('memory/edge/kubepods/memory.limit_in_bytes')).toBe(String(8 * 1024 * mi));
    expect(cm.cgroupParent(bestEffort)).toBe('/edge/kubepods/besteffort/podcccc-3333');
  });

  it('v2, systemd: slices, cpu.weight, cpu.max, memory.max, pids.max, controllers enabled', () => {
    fakeV2(root);
    const cm = new ContainerManager({
      cgroupMountPoint: root,
      cgroupDriver: 'systemd',
      podPidsLimit: 1024,
      ...amounts,
      activePods: () => pods,
      logger: noopLogger,
    });
    expect(cm.cgroups.version).toBe(2);
    cm.start();
    expect(read('kubepods.slice/cpu.weight')).toBe(String(cpuSharesToCpuWeight(3584)));
    expect(read('kubepods.slice/memory.max')).toBe(String(7 * 1024 * mi));
    expect(read('cgroup.subtree_control')).toBe('+cpu +memory +pids');
    pods = [guaranteed, burstable];
    cm.ensurePod(guaranteed);
    cm.ensurePod(burstable);
    expect(cm.cgroupParent(burstable)).toBe('kubepods-burstable-podbbbb_2222.slice');
    expect(read('kubepods.slice/kubepods-podaaaa_1111.slice/cpu.max')).toBe('25000 100000');
    expect(read('kubepods.slice/kubepods-podaaaa_1111.slice/memory.max')).toBe(String(64 * mi));
    expect(read('kubepods.slice/kubepods-podaaaa_1111.slice/pids.max')).toBe('1024');
    expect(
      read('kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podbbbb_2222.slice/cpu.weight'),
    ).toBe(String(cpuSharesToCpuWeight(102)));
    expect([...cm.pods.getAllPodsFromCgroups().keys()].sort()).toEqual(['aaaa-1111', 'bbbb-2222']);
    cm.cleanupOrphanedPodCgroups(new Set(['aaaa-1111']), () => false);
    expect(cm.pods.exists(burstable)).toBe(false);
  });

  it('reads the version from the mount point', () => {
    fakeV2(root);
    expect(new CgroupManager({ driver: 'cgroupfs', mountPoint: root, logger: noopLogger }).version).toBe(2);
  });
});
