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
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RealClock } from '@kubelet-kit/core';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
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
