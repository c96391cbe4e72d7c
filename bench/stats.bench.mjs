// Stats collection benchmark. Needs the private containerd (as root):
//   npm run build && source scripts/containerd/env.sh && bash scripts/containerd/up.sh
//   node --expose-gc scripts/bench.mjs stats
// 110 pods (the default maxPods) × 1 busybox container are made straight through the CRI, then
// the agent's summary provider (CriStatsProvider: ListPodSandbox, ListContainers and
// ListPodSandboxStats, or ListContainerStats summed per sandbox on containerd 1.6) is timed
// against the raw ListContainerStats + ListPodSandboxStats made at once through the same client,
// alternating in one run:
// - stats.collect110.ms: median listPodStats (what /stats/summary and eviction read);
// - stats.collect110.criFloor.ms: median of the raw calls;
// - stats.collect110.ratio: the two medians divided.
// Then the eviction manager's cycle on the same pods (eviction.cycle110.ms): synchronize() reading a
// summary of the provider's pod stats under a met memory.available threshold, so every cycle
// observes, ranks the 110 pods and evicts one (the kill is a no-op); eviction.cycle110.ratio is it
// over the median listPodStats of the same run (what the manager adds to reading the stats).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RealClock } from '@kubelet-kit/core';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { EvictionManager, parseThresholdConfig } from '@kubelet-kit/eviction';
import { CpuUsageCache } from '../packages/node/dist/stats/cpu-usage-cache.js';
import { CriStatsProvider } from '../packages/node/dist/stats/cri-stats-provider.js';
import { buildFloorConfigs, removeSandboxes, runFloor } from './support/cri-floor.mjs';
import { busyboxImage } from './support/pods.mjs';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error('stats bench: KUBELET_KIT_CRI_ENDPOINT is not set; start scripts/containerd/up.sh first');
  process.exit(1);
}
const PODS = 110;
const ROUNDS = 40;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-stats-bench-'));
const rs = new RuntimeServiceClient({ endpoint });
const is = new ImageServiceClient({ endpoint });
const run = Math.random().toString(16).slice(2, 8);
const namespace = `stats-bench-${run}`;
const mine = (s) => s.metadata?.namespace === namespace;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const gc = () => globalThis.gc?.();
const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const pods = Array.from({ length: PODS }, (_, i) => ({
  metadata: { name: `p${i}`, namespace, uid: `stb-${run}-${i}` },
  spec: {
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 0,
    containers: [{ name: 'c', image: busyboxImage, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
  },
}));
const clock = new RealClock();
const provider = new CriStatsProvider({
  runtimeService: rs,
  imageService: is,
  getPods: () => pods,
  getMountedVolumesForPod: () => new Map(),
  podLogsDirectory: path.join(work, 'root', 'logs', 'pods'),
  cpuUsage: new CpuUsageCache(clock),
  clock,
  logger: silent,
});
// ListPodSandboxStats fails on containerd 1.6 for sandboxes without a cgroup parent; the floor
// counts what the runtime answers, as the provider does.
const rawStats = () =>
  Promise.all([rs.listContainerStats({}), rs.listPodSandboxStats({}).catch(() => undefined)]);

try {
  const configs = await buildFloorConfigs({
    pods,
    imageService: is,
    rootDir: path.join(work, 'root'),
    nodeName: 'stats-bench',
    nodeIPs: ['127.0.0.1'],
  });
  for (const { sandboxConfig } of configs) fs.mkdirSync(sandboxConfig.logDirectory, { recursive: true });
  const made = await runFloor(rs, configs, 8);
  console.error(`stats bench: made ${PODS} pods in ${made.toFixed(1)} s`);

  for (let i = 0; i < 5; i++) {
    await provider.listPodStats();
    await rawStats();
  }
  const seen = (await provider.listPodStats()).filter((p) => p.podRef.namespace === namespace).length;
  if (seen !== PODS) throw new Error(`provider reported ${seen} of ${PODS} pods`);
  const collectMs = [];
  const floorMs = [];
  for (let i = 0; i < ROUNDS; i++) {
    gc();
    let t = performance.now();
    await provider.listPodStats();
    collectMs.push(performance.now() - t);
    gc();
    t = performance.now();
    await rawStats();
    floorMs.push(performance.now() - t);
  }
  const collect = median(collectMs);
  const floor = median(floorMs);
  const ratio = collect / floor;

  // The eviction manager's cycle over the same stats, always under memory pressure.
  let evictions = 0;
  const summary = async () => {
    const now = new Date().toISOString();
    return {
      node: {
        nodeName: 'stats-bench',
        startTime: now,
        memory: { time: now, availableBytes: 50 * 2 ** 20, workingSetBytes: 8 * 2 ** 30 },
      },
      pods: await provider.listPodStats(),
    };
  };
  const manager = new EvictionManager({
    thresholds: parseThresholdConfig({ evictionHard: { 'memory.available': '100Mi' } }),
    summary,
    hasDedicatedImageFs: async () => false,
    activePods: () => pods,
    killPod: async ({ statusFn }) => {
      statusFn({});
      evictions++;
    },
    clock,
    logger: silent,
  });
  for (let i = 0; i < 3; i++) await manager.synchronize();
  const cycleMs = [];
  for (let i = 0; i < ROUNDS; i++) {
    gc();
    const t = performance.now();
    await manager.synchronize();
    cycleMs.push(performance.now() - t);
  }
  if (evictions < ROUNDS) throw new Error(`eviction bench: ${evictions} evictions in ${ROUNDS + 3} cycles`);
  const cycle = median(cycleMs);
  // The manager's own part: the same cycle over stats read once beforehand.
  const fixed = await summary();
  const own = new EvictionManager({
    thresholds: parseThresholdConfig({ evictionHard: { 'memory.available': '100Mi' } }),
    summary: async () => ({
      ...fixed,
      node: { ...fixed.node, memory: { ...fixed.node.memory, time: new Date().toISOString() } },
    }),
    hasDedicatedImageFs: async () => false,
    activePods: () => pods,
    killPod: async ({ statusFn }) => statusFn({}),
    clock,
    logger: silent,
  });
  const ownMs = [];
  for (let i = 0; i < ROUNDS * 5; i++) {
    const t = performance.now();
    await own.synchronize();
    ownMs.push(performance.now() - t);
  }
  const ownCycle = median(ownMs);
  console.error(
    `stats bench: eviction cycle ${cycle.toFixed(2)} ms (×${(cycle / collect).toFixed(2)} listPodStats)`,
  );
  console.error(
    `stats bench: listPodStats ${collect.toFixed(2)} ms vs raw ${floor.toFixed(2)} ms (×${ratio.toFixed(2)})`,
  );
  console.log(
    JSON.stringify([
      {
        name: 'stats.collect110.ratio',
        value: Number(ratio.toFixed(2)),
        unit: 'x',
        note: `median listPodStats / median raw ListContainerStats+ListPodSandboxStats, ${PODS} pods on containerd`,
      },
      {
        name: 'stats.collect110.ms',
        value: Number(collect.toFixed(2)),
        unit: 'ms',
        note: `median of ${ROUNDS} CriStatsProvider.listPodStats, ${PODS} pods × 1 container`,
      },
      {
        name: 'eviction.cycle110.ms',
        value: Number(cycle.toFixed(2)),
        unit: 'ms',
        note: `median of ${ROUNDS} EvictionManager.synchronize() with ${PODS} pods under memory pressure (observe, rank, evict one), stats from listPodStats on containerd; ×${(cycle / collect).toFixed(2)} the median listPodStats alone`,
      },
      {
        name: 'eviction.cycle110.managerOnly.ms',
        value: Number(ownCycle.toFixed(3)),
        unit: 'ms',
        note: `median of ${ROUNDS * 5} cycles over stats read once beforehand: thresholds, ranking of ${PODS} pods, the eviction message`,
      },
      {
        name: 'eviction.cycle110.ratio',
        value: Number((cycle / collect).toFixed(2)),
        unit: 'x',
        note: 'median eviction cycle / median listPodStats, same run: what the manager adds to reading the stats',
      },
      {
        name: 'stats.collect110.criFloor.ms',
        value: Number(floor.toFixed(2)),
        unit: 'ms',
        note: 'ListContainerStats + ListPodSandboxStats at once, same client, alternating',
      },
    ]),
  );
} finally {
  await removeSandboxes(rs, mine).catch((err) => console.error(`stats bench: cleanup: ${err}`));
  rs.close();
  is.close();
  fs.rmSync(work, { recursive: true, force: true });
}
