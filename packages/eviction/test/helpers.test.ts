import type { Pod, PodStats, Summary } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  EvictionConfigError,
  evictionMessage,
  formatQuantity,
  makeSignalObservations,
  parseThresholdConfig,
  rankDiskPressureFunc,
  rankMemoryPressure,
  rankPIDPressure,
  resourceRequest,
  sortByEvictionPriority,
  thresholdsMet,
} from '../src/helpers.js';
import type { StatsFunc, Threshold } from '../src/types.js';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;

describe('parseThresholdConfig (upstream TestParseThresholdConfig)', () => {
  it('parses hard and soft thresholds with grace periods and minimum reclaims', () => {
    const got = parseThresholdConfig({
      evictionHard: { 'memory.available': '150Mi', 'nodefs.available': '10%' },
      evictionSoft: { 'memory.available': '300Mi' },
      evictionSoftGracePeriodMs: { 'memory.available': 30_000 },
      evictionMinimumReclaim: { 'memory.available': '0', 'nodefs.available': '500Mi' },
    });
    expect(got).toEqual([
      {
        signal: 'memory.available',
        value: { quantity: 150 * Mi, binary: true },
        gracePeriodMs: 0,
        minReclaim: { quantity: 0, binary: false },
      },
      {
        signal: 'nodefs.available',
        value: { percentage: Math.fround(10) / 100 },
        gracePeriodMs: 0,
        minReclaim: { quantity: 500 * Mi, binary: true },
      },
      {
        signal: 'memory.available',
        value: { quantity: 300 * Mi, binary: true },
        gracePeriodMs: 30_000,
        minReclaim: { quantity: 0, binary: false },
      },
    ]);
  });

  it('adds allocatableMemory.available for a hard memory threshold when pods are enforced', () => {
    const got = parseThresholdConfig({
      enforceNodeAllocatable: ['pods'],
      evictionHard: { 'memory.available': '150Mi' },
      evictionSoft: { 'memory.available': '300Mi' },
      evictionSoftGracePeriodMs: { 'memory.available': 30_000 },
    });
    expect(got.map((t) => `${t.signal}:${t.gracePeriodMs}`)).toEqual([
      'memory.available:0',
      'memory.available:30000',
      'allocatableMemory.available:0',
    ]);
  });

  it('ignores 0% and 100%', () => {
    expect(
      parseThresholdConfig({ evictionHard: { 'memory.available': '0%', 'nodefs.available': '100%' } }),
    ).toEqual([]);
  });

  it.each([
    [{ evictionHard: { 'mem.available': '1Gi' } }, 'unsupported eviction signal mem.available'],
    [{ evictionHard: { 'memory.available': '-150Mi' } }, 'must be positive'],
    [{ evictionHard: { 'memory.available': '0' } }, 'must be positive'],
    [{ evictionHard: { 'memory.available': '150%' } }, 'must be <= 100%'],
    [{ evictionHard: { 'memory.available': '-15%' } }, 'must be >= 0%'],
    [{ evictionHard: { 'memory.available': 'lots' } }, 'invalid quantity'],
    [
      { evictionSoft: { 'memory.available': '150Mi' } },
      'grace period must be specified for the soft eviction threshold memory.available',
    ],
    [{ evictionSoftGracePeriodMs: { 'memory.available': -1 } }, 'must be non-negative'],
    [{ evictionMinimumReclaim: { 'memory.available': '-300Mi' } }, 'negative eviction minimum reclaim'],
    [{ evictionMinimumReclaim: { 'memory.available': '0%' } }, 'must be positive'],
  ])('rejects %j', (config, message) => {
    expect(() => parseThresholdConfig(config)).toThrow(EvictionConfigError);
    expect(() => parseThresholdConfig(config)).toThrow(message);
  });
});

describe('formatQuantity (resource.Quantity.String)', () => {
  it.each([
    [100 * Mi, true, '100Mi'],
    [1536, true, '1536'],
    [3072, true, '3Ki'],
    [1.5 * Gi, true, '1536Mi'],
    [512, true, '512'],
    [0, true, '0'],
    [5000, false, '5k'],
    [123456, false, '123456'],
    [2_000_000, false, '2M'],
  ])('%d (binary %s) → %s', (v, binary, want) => {
    expect(formatQuantity(v, binary)).toBe(want);
  });
});

const summary = (over: Partial<Summary['node']> = {}, pods: PodStats[] = []): Summary => ({
  node: {
    nodeName: 'n',
    startTime: '2026-01-01T00:00:00Z',
    memory: { time: 't1', availableBytes: 500 * Mi, workingSetBytes: 1500 * Mi },
    fs: { time: 't1', availableBytes: 10 * Gi, capacityBytes: 100 * Gi, inodesFree: 1000, inodes: 10_000 },
    runtime: {
      imageFs: { time: 't1', availableBytes: 40 * Gi, capacityBytes: 200 * Gi, inodesFree: 5, inodes: 100 },
    },
    rlimit: { time: 't1', maxpid: 1000, curproc: 900 },
    ...over,
  },
  pods,
});

describe('makeSignalObservations and thresholdsMet', () => {
  it('observes every signal the summary has', () => {
    const { observations } = makeSignalObservations(summary());
    expect(Object.fromEntries(observations)).toEqual({
      'memory.available': { available: 500 * Mi, capacity: 2000 * Mi, time: 't1' },
      'nodefs.available': { available: 10 * Gi, capacity: 100 * Gi, time: 't1' },
      'nodefs.inodesFree': { available: 1000, capacity: 10_000, time: 't1' },
      'imagefs.available': { available: 40 * Gi, capacity: 200 * Gi, time: 't1' },
      'imagefs.inodesFree': { available: 5, capacity: 100, time: 't1' },
      'pid.available': { available: 100, capacity: 1000, time: 't1' },
    });
  });

  it('meets quantity and percentage thresholds, and holds them until the minimum reclaim', () => {
    const { observations } = makeSignalObservations(summary());
    const [mem, node, image] = parseThresholdConfig({
      evictionHard: { 'memory.available': '400Mi', 'nodefs.available': '11%', 'imagefs.available': '15%' },
      evictionMinimumReclaim: { 'memory.available': '200Mi' },
    }) as [Threshold, Threshold, Threshold];
    expect(thresholdsMet([mem, node, image], observations, false)).toEqual([node]);
    // 400Mi + 200Mi reclaim > 500Mi available: still met while reclaiming.
    expect(thresholdsMet([mem, node, image], observations, true)).toEqual([mem, node]);
  });

  it('skips thresholds whose signal is not observed', () => {
    const { observations } = makeSignalObservations(summary({ rlimit: undefined }));
    const t = parseThresholdConfig({ evictionHard: { 'pid.available': '5000' } });
    expect(thresholdsMet(t, observations, false)).toEqual([]);
  });

  it('ranks memory thresholds first', () => {
    const t = parseThresholdConfig({
      evictionHard: { 'nodefs.available': '1Gi', 'pid.available': '10', 'memory.available': '1Gi' },
    });
    expect(sortByEvictionPriority(t).map((x) => x.signal)).toEqual([
      'memory.available',
      'nodefs.available',
      'pid.available',
    ]);
  });
});

function pod(
  name: string,
  o: {
    priority?: number;
    requests?: Record<string, string>;
    volumes?: Pod['spec'] extends infer S ? (S extends { volumes?: infer V } ? V : never) : never;
  } = {},
): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
      containers: [
        { name: 'c', image: 'busybox', ...(o.requests ? { resources: { requests: o.requests } } : {}) },
      ],
      ...(o.volumes ? { volumes: o.volumes } : {}),
    },
  };
}

function podStats(
  name: string,
  o: { ws?: number; rootfs?: number; logs?: number; volumes?: Record<string, number>; procs?: number },
): PodStats {
  return {
    podRef: { name, namespace: 'default', uid: `uid-${name}` },
    startTime: 't0',
    containers: [
      {
        name: 'c',
        startTime: 't0',
        memory: { time: 't1', workingSetBytes: o.ws ?? 0 },
        rootfs: { time: 't1', usedBytes: o.rootfs ?? 0, inodesUsed: 1 },
        logs: { time: 't1', usedBytes: o.logs ?? 0, inodesUsed: 1 },
      },
    ],
    memory: { time: 't1', workingSetBytes: o.ws ?? 0 },
    volume: Object.entries(o.volumes ?? {}).map(([n, used]) => ({ name: n, time: 't1', usedBytes: used })),
    process_stats: { process_count: o.procs ?? 1 },
  };
}

function statsOf(...s: PodStats[]): StatsFunc {
  return (p) => s.find((x) => x.podRef.uid === p.metadata?.uid);
}

describe('ranking (upstream TestOrderedby*)', () => {
  it('memory: above requests first, then lower priority, then usage over request', () => {
    const below = pod('below-request', { requests: { memory: '500Mi' } });
    const highPrioAbove = pod('high-prio-above', { priority: 100, requests: { memory: '100Mi' } });
    const lowPrioAbove = pod('low-prio-above', { requests: { memory: '100Mi' } });
    const bigAbove = pod('big-above');
    const pods = [below, highPrioAbove, lowPrioAbove, bigAbove];
    rankMemoryPressure(
      pods,
      statsOf(
        podStats('below-request', { ws: 400 * Mi }),
        podStats('high-prio-above', { ws: 900 * Mi }),
        podStats('low-prio-above', { ws: 200 * Mi }),
        podStats('big-above', { ws: 300 * Mi }),
      ),
    );
    expect(pods.map((p) => p.metadata?.name)).toEqual([
      'big-above',
      'low-prio-above',
      'high-prio-above',
      'below-request',
    ]);
  });

  it('a pod without stats goes first', () => {
    const pods = [pod('a'), pod('no-stats')];
    rankMemoryPressure(pods, statsOf(podStats('a', { ws: Gi })));
    expect(pods[0]?.metadata?.name).toBe('no-stats');
  });

  it('disk: BestEffort over its (zero) request before a Burstable within its request', () => {
    const bestEffort = pod('best-effort', { volumes: [{ name: 'scratch', emptyDir: {} }] });
    const burstable = pod('burstable', {
      requests: { 'ephemeral-storage': '1Gi' },
      volumes: [{ name: 'scratch', emptyDir: {} }],
    });
    const pods = [burstable, bestEffort];
    const rank = rankDiskPressureFunc(['images', 'root', 'logs', 'localVolumeSource'], 'ephemeral-storage');
    rank(
      pods,
      statsOf(
        podStats('burstable', { volumes: { scratch: 800 * Mi } }),
        podStats('best-effort', { volumes: { scratch: 10 * Mi } }),
      ),
    );
    expect(pods.map((p) => p.metadata?.name)).toEqual(['best-effort', 'burstable']);
  });

  it('disk with a dedicated imagefs: nodefs counts only logs and local volumes', () => {
    const a = pod('rootfs-heavy');
    const b = pod('logs-heavy');
    const pods = [a, b];
    rankDiskPressureFunc(['logs', 'localVolumeSource'], 'ephemeral-storage')(
      pods,
      statsOf(podStats('rootfs-heavy', { rootfs: Gi }), podStats('logs-heavy', { logs: 10 * Mi })),
    );
    expect(pods.map((p) => p.metadata?.name)).toEqual(['logs-heavy', 'rootfs-heavy']);
  });

  it('pid: lower priority first, then most processes', () => {
    const pods = [pod('few'), pod('many'), pod('important', { priority: 10 })];
    rankPIDPressure(
      pods,
      statsOf(
        podStats('few', { procs: 2 }),
        podStats('many', { procs: 50 }),
        podStats('important', { procs: 500 }),
      ),
    );
    expect(pods.map((p) => p.metadata?.name)).toEqual(['many', 'few', 'important']);
  });
});

describe('resourceRequest (GetResourceRequestQuantity)', () => {
  it('sums containers, takes a larger init container, adds overhead only to a non-zero total', () => {
    const p: Pod = {
      spec: {
        containers: [
          { name: 'a', resources: { requests: { memory: '100Mi' } } },
          { name: 'b', resources: { requests: { memory: '50Mi' } } },
        ],
        initContainers: [{ name: 'i', resources: { requests: { memory: '200Mi' } } }],
        overhead: { memory: '10Mi', cpu: '1' },
      },
    };
    expect(resourceRequest(p, 'memory')).toBe(210 * Mi);
    expect(resourceRequest(p, 'cpu')).toBe(0);
  });
});

describe('evictionMessage', () => {
  it('names the resource, the threshold, what was available and the offending container', () => {
    const p = pod('hog', { requests: { memory: '100Mi' } });
    const { observations } = makeSignalObservations(summary());
    const t = parseThresholdConfig({ evictionHard: { 'memory.available': '600Mi' } });
    const got = evictionMessage('memory', p, statsOf(podStats('hog', { ws: 300 * Mi })), t, observations);
    expect(got.message).toBe(
      'The node was low on resource: memory. Threshold quantity: 600Mi, available: 500Mi. ' +
        'Container c was using 300Mi, request is 100Mi, has larger consumption of memory. ',
    );
    expect(got.annotations).toEqual({
      offending_containers: 'c',
      offending_containers_usage: '300Mi',
      starved_resource: 'memory',
    });
  });

  it('prints a percentage threshold against the capacity', () => {
    const { observations } = makeSignalObservations(summary());
    const t = parseThresholdConfig({ evictionHard: { 'nodefs.available': '50%' } });
    const got = evictionMessage('ephemeral-storage', pod('x'), statsOf(), t, observations);
    expect(got.message).toBe(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 50Gi, available: 10Gi. ',
    );
  });
});
