import type { Pod, PodStats, PodStatus, Summary } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { EvictionManager, type EvictionManagerOptions } from '../src/eviction-manager.js';
import { parseThresholdConfig } from '../src/helpers.js';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;

function pod(
  name: string,
  spec: Partial<NonNullable<Pod['spec']>> = {},
  annotations?: Record<string, string>,
): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...(annotations ? { annotations } : {}) },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
  };
}

const guaranteed = (name: string) =>
  pod(name, {
    containers: [
      {
        name: 'c',
        image: 'busybox',
        resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
      },
    ],
  });

function podStats(
  name: string,
  o: {
    ws?: number;
    volumes?: Record<string, number>;
    rootfs?: number;
    logs?: number;
    ephemeral?: number;
  } = {},
): PodStats {
  return {
    podRef: { name, namespace: 'default', uid: `uid-${name}` },
    startTime: 't0',
    containers: [
      {
        name: 'c',
        startTime: 't0',
        memory: { time: 't', workingSetBytes: o.ws ?? 0 },
        rootfs: { time: 't', usedBytes: o.rootfs ?? 0 },
        logs: { time: 't', usedBytes: o.logs ?? 0 },
      },
    ],
    memory: { time: 't', workingSetBytes: o.ws ?? 0 },
    volume: Object.entries(o.volumes ?? {}).map(([n, usedBytes]) => ({ name: n, time: 't', usedBytes })),
    ...(o.ephemeral !== undefined ? { 'ephemeral-storage': { time: 't', usedBytes: o.ephemeral } } : {}),
  };
}

interface Harness {
  manager: EvictionManager;
  clock: FakeClock;
  killed: Array<{ pod: string; grace: number; status: PodStatus }>;
  events: string[];
  reclaims: string[];
  setNode(n: { memAvailable?: number; fsAvailable?: number }): void;
  setPods(...s: PodStats[]): void;
}

function harness(
  pods: Pod[],
  o: Partial<EvictionManagerOptions> & { hard?: Record<string, string>; reclaimFrees?: number } = {},
): Harness {
  const clock = new FakeClock();
  let memAvailable = 4 * Gi;
  let fsAvailable = 50 * Gi;
  let podStatsList: PodStats[] = [];
  let tick = 0;
  const killed: Harness['killed'] = [];
  const events: string[] = [];
  const reclaims: string[] = [];
  const summary = async (): Promise<Summary> => {
    const time = `t${tick++}`;
    return {
      node: {
        nodeName: 'n',
        startTime: 't0',
        memory: { time, availableBytes: memAvailable, workingSetBytes: 8 * Gi - memAvailable },
        fs: { time, availableBytes: fsAvailable, capacityBytes: 100 * Gi, inodesFree: 1e6, inodes: 2e6 },
        runtime: {
          imageFs: {
            time,
            availableBytes: fsAvailable,
            capacityBytes: 100 * Gi,
            inodesFree: 1e6,
            inodes: 2e6,
          },
        },
      },
      pods: podStatsList,
    };
  };
  const alive = new Set(pods);
  const manager = new EvictionManager({
    thresholds: parseThresholdConfig({
      evictionHard: o.hard ?? { 'memory.available': '1Gi', 'nodefs.available': '10Gi' },
    }),
    pressureTransitionPeriodMs: 30_000,
    summary,
    hasDedicatedImageFs: async () => false,
    activePods: () => [...alive],
    killPod: async (r) => {
      const status: PodStatus = {};
      r.statusFn(status);
      killed.push({ pod: r.pod.metadata?.name ?? '', grace: r.gracePeriodOverride, status });
      alive.delete(r.pod);
    },
    reclaimers: {
      deleteAllUnusedContainers: async () => {
        reclaims.push('containers');
      },
      deleteUnusedImages: async () => {
        reclaims.push('images');
        fsAvailable += o.reclaimFrees ?? 0;
      },
    },
    events: {
      nodeEvent: (reason, message) => events.push(`node ${reason}: ${message}`),
      podEvent: (p, reason, message) => events.push(`${p.metadata?.name} ${reason}: ${message}`),
    },
    clock,
    ...o,
  });
  return {
    manager,
    clock,
    killed,
    events,
    reclaims,
    setNode: (n) => {
      if (n.memAvailable !== undefined) memAvailable = n.memAvailable;
      if (n.fsAvailable !== undefined) fsAvailable = n.fsAvailable;
    },
    setPods: (...s) => {
      podStatsList = s;
    },
  };
}

describe('EvictionManager', () => {
  it('under memory pressure evicts the BestEffort pod over its request, not the Guaranteed one', async () => {
    const h = harness([guaranteed('g'), pod('be')]);
    h.setPods(podStats('g', { ws: 900 * Mi }), podStats('be', { ws: 300 * Mi }));
    h.setNode({ memAvailable: 800 * Mi });
    const evicted = await h.manager.synchronize();
    expect(evicted.map((p) => p.metadata?.name)).toEqual(['be']);
    expect(h.killed).toHaveLength(1);
    expect(h.killed[0]?.grace).toBe(1);
    expect(h.killed[0]?.status).toMatchObject({
      phase: 'Failed',
      reason: 'Evicted',
      message:
        'The node was low on resource: memory. Threshold quantity: 1Gi, available: 800Mi. ' +
        'Container c was using 300Mi, request is 0, has larger consumption of memory. ',
      conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }],
    });
    expect(h.events).toContain('node EvictionThresholdMet: Attempting to reclaim memory');
    expect(h.manager.isUnderMemoryPressure()).toBe(true);
    expect(h.manager.isUnderDiskPressure()).toBe(false);
    // Memory pressure needs no node-level reclaim.
    expect(h.reclaims).toEqual([]);
  });

  it('evicts at most one pod per cycle', async () => {
    const h = harness([pod('a'), pod('b')]);
    h.setPods(podStats('a', { ws: 100 * Mi }), podStats('b', { ws: 200 * Mi }));
    h.setNode({ memAvailable: 100 * Mi });
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['b']);
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['a']);
  });

  it('never evicts a critical pod', async () => {
    const staticPod = pod('static', {}, { 'kubernetes.io/config.source': 'file' });
    const h = harness([staticPod]);
    h.setPods(podStats('static', { ws: Gi }));
    h.setNode({ memAvailable: 100 * Mi });
    expect(await h.manager.synchronize()).toEqual([]);
    expect(h.killed).toEqual([]);
  });

  it('under disk pressure collects containers and images first, and stops there if that was enough', async () => {
    const h = harness([pod('be')], { reclaimFrees: 20 * Gi });
    h.setPods(podStats('be', { volumes: { scratch: Gi } }));
    h.setNode({ fsAvailable: 5 * Gi });
    expect(await h.manager.synchronize()).toEqual([]);
    expect(h.reclaims).toEqual(['containers', 'images']);
    expect(h.killed).toEqual([]);
    expect(h.manager.isUnderDiskPressure()).toBe(true);
  });

  it('under disk pressure evicts the BestEffort pod before the Burstable one within its request', async () => {
    const be = pod('be', { volumes: [{ name: 'scratch', emptyDir: {} }] });
    const burstable = pod('burstable', {
      containers: [{ name: 'c', image: 'busybox', resources: { requests: { 'ephemeral-storage': '2Gi' } } }],
      volumes: [{ name: 'scratch', emptyDir: {} }],
    });
    const h = harness([burstable, be]);
    h.setPods(
      podStats('burstable', { volumes: { scratch: Gi } }),
      podStats('be', { volumes: { scratch: 100 * Mi } }),
    );
    h.setNode({ fsAvailable: 5 * Gi });
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['be']);
    expect(h.killed[0]?.status.message).toBe(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. ',
    );
  });

  it('with a dedicated image filesystem, nodefs pressure reclaims nothing at node level', async () => {
    const h = harness([pod('be')], {
      hasDedicatedImageFs: async () => true,
      hard: { 'nodefs.available': '10Gi' },
    });
    h.setPods(podStats('be', { logs: Gi }));
    h.setNode({ fsAvailable: 5 * Gi });
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['be']);
    expect(h.reclaims).toEqual([]);
  });

  it('keeps a pressure condition for the transition period after the last observation', async () => {
    const h = harness([]);
    h.setNode({ memAvailable: 100 * Mi });
    await h.manager.synchronize();
    expect(h.manager.isUnderMemoryPressure()).toBe(true);
    h.setNode({ memAvailable: 4 * Gi });
    h.clock.advance(29_000);
    await h.manager.synchronize();
    expect(h.manager.isUnderMemoryPressure()).toBe(true);
    h.clock.advance(1_000);
    await h.manager.synchronize();
    expect(h.manager.isUnderMemoryPressure()).toBe(false);
  });

  it('a soft threshold evicts only after its grace period, with the max pod grace period', async () => {
    const h = harness([pod('be', { terminationGracePeriodSeconds: 30 })], {
      thresholds: parseThresholdConfig({
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriodMs: { 'memory.available': 60_000 },
      }),
      maxPodGracePeriodSeconds: 10,
    });
    h.setPods(podStats('be', { ws: 300 * Mi }));
    h.setNode({ memAvailable: 500 * Mi });
    expect(await h.manager.synchronize()).toEqual([]);
    // The condition is reported at once; the eviction waits for the grace period.
    expect(h.manager.isUnderMemoryPressure()).toBe(true);
    h.clock.advance(59_000);
    expect(await h.manager.synchronize()).toEqual([]);
    h.clock.advance(1_000);
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['be']);
    expect(h.killed[0]?.grace).toBe(10);
  });

  it('evicts a pod whose emptyDir exceeds its sizeLimit, with grace 0 and no pressure', async () => {
    const p = pod('writer', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }] });
    const h = harness([p, pod('quiet')]);
    h.setPods(podStats('writer', { volumes: { scratch: 2 * Mi } }), podStats('quiet'));
    expect((await h.manager.synchronize()).map((x) => x.metadata?.name)).toEqual(['writer']);
    expect(h.killed[0]).toMatchObject({
      grace: 0,
      status: {
        phase: 'Failed',
        reason: 'Evicted',
        message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
      },
    });
    expect(h.killed[0]?.status.conditions).toBeUndefined();
    expect(h.events).toContain(
      'writer Evicted: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
    );
  });

  it('evicts a container past its ephemeral-storage limit (rootfs counts without a dedicated imagefs)', async () => {
    const p = pod('big', {
      containers: [{ name: 'c', image: 'busybox', resources: { limits: { 'ephemeral-storage': '10Mi' } } }],
    });
    const h = harness([p]);
    h.setPods(podStats('big', { rootfs: 8 * Mi, logs: 3 * Mi }));
    await h.manager.synchronize();
    expect(h.killed[0]?.status.message).toBe(
      'Container c exceeded its local ephemeral storage limit "10Mi". ',
    );
  });

  it('evicts a pod past its pods ephemeral-storage total', async () => {
    const p = pod('sum', {
      containers: [
        { name: 'c', image: 'busybox', resources: { limits: { 'ephemeral-storage': '10Mi' } } },
        { name: 'd', image: 'busybox', resources: { limits: { 'ephemeral-storage': '10Mi' } } },
      ],
    });
    const h = harness([p]);
    h.setPods(podStats('sum', { ephemeral: 21 * Mi }));
    await h.manager.synchronize();
    expect(h.killed[0]?.status.message).toBe(
      'Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ',
    );
  });

  it('local storage eviction can be turned off', async () => {
    const p = pod('writer', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }] });
    const h = harness([p], { localStorageCapacityIsolation: false });
    h.setPods(podStats('writer', { volumes: { scratch: 2 * Mi } }));
    expect(await h.manager.synchronize()).toEqual([]);
  });

  describe('admit (upstream TestAdmit)', () => {
    it('admits everything without pressure', () => {
      const h = harness([]);
      expect(h.manager.admit(pod('be'))).toEqual({ admit: true });
    });

    it('under memory pressure refuses BestEffort pods only, unless they tolerate the taint', async () => {
      const h = harness([]);
      h.setNode({ memAvailable: 100 * Mi });
      await h.manager.synchronize();
      expect(h.manager.admit(pod('be'))).toEqual({
        admit: false,
        reason: 'Evicted',
        message: 'The node had condition: [MemoryPressure]. ',
      });
      expect(h.manager.admit(guaranteed('g')).admit).toBe(true);
      const tolerant = pod('tolerant', {
        tolerations: [
          { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
        ],
      });
      expect(h.manager.admit(tolerant).admit).toBe(true);
      const other = pod('other', {
        tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }],
      });
      expect(h.manager.admit(other).admit).toBe(false);
    });

    it('under disk pressure refuses every pod but critical ones', async () => {
      const h = harness([]);
      h.setNode({ fsAvailable: Gi });
      await h.manager.synchronize();
      expect(h.manager.admit(guaranteed('g'))).toEqual({
        admit: false,
        reason: 'Evicted',
        message: 'The node had condition: [DiskPressure]. ',
      });
      expect(h.manager.admit(pod('static', {}, { 'kubernetes.io/config.source': 'file' })).admit).toBe(true);
    });
  });

  it('reads only the node figures while nothing acts, the pods stats when a threshold does', async () => {
    const reads: string[] = [];
    let mem = 4 * Gi;
    const node = (time: string) => ({
      nodeName: 'n',
      startTime: 't0',
      memory: { time, availableBytes: mem, workingSetBytes: Gi },
    });
    const h = harness([pod('a'), pod('b')], {
      nodeSummary: async () => {
        reads.push('node');
        return { node: node(`t${reads.length}`), pods: [] };
      },
      summary: async () => {
        reads.push('full');
        return {
          node: node(`t${reads.length}`),
          pods: [podStats('a', { ws: 100 * Mi }), podStats('b', { ws: 200 * Mi })],
        };
      },
    });
    expect(await h.manager.synchronize()).toEqual([]);
    expect(reads).toEqual(['node']);
    mem = 100 * Mi;
    // Under pressure the pods are ranked from their stats: b uses more.
    expect((await h.manager.synchronize()).map((p) => p.metadata?.name)).toEqual(['b']);
    expect(reads).toEqual(['node', 'node', 'full']);
  });

  it('a pod with a local storage limit makes every cycle read the pods stats', async () => {
    let nodeReads = 0;
    const p = pod('writer', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }] });
    const h = harness([p], {
      nodeSummary: async () => {
        nodeReads++;
        return { node: { nodeName: 'n', startTime: 't0' }, pods: [] };
      },
    });
    h.setPods(podStats('writer', { volumes: { scratch: 2 * Mi } }));
    expect((await h.manager.synchronize()).map((x) => x.metadata?.name)).toEqual(['writer']);
    expect(nodeReads).toBe(0);
  });

  it('start() runs a cycle every period and waits for an evicted pod to be cleaned up', async () => {
    let cleaned = false;
    const h = harness([pod('a'), pod('b')], { podCleanedUp: () => cleaned });
    h.setPods(podStats('a', { ws: 100 * Mi }), podStats('b', { ws: 200 * Mi }));
    h.setNode({ memAvailable: 100 * Mi });
    h.manager.start(1_000);
    await h.clock.tick(0);
    expect(h.killed.map((k) => k.pod)).toEqual(['b']);
    // Not cleaned up yet: no second eviction while it waits (up to 30 s).
    await h.clock.tick(5_000);
    expect(h.killed.map((k) => k.pod)).toEqual(['b']);
    cleaned = true;
    await h.clock.tick(1_000);
    await h.clock.tick(0);
    expect(h.killed.map((k) => k.pod)).toEqual(['b', 'a']);
    h.manager.stop();
  });
});
