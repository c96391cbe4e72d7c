// The summary API's cost with 110 pods: `kubelet-kit run` on containerd with 110 busybox `sleep`
// pods, then GET /stats/summary (and ?only_cpu_and_memory=true) alternated with the raw CRI
// calls the summary is made of (ListPodSandboxStats, then ListContainerStats as the agent falls
// back to on containerd 1.6, which refuses sandboxes without a cgroup parent) in the same run,
// so a ratio too.
//
// Needs a containerd of its own (the agent kills runtime pods no source of its own wants):
//   export KUBELET_KIT_TEST_ROOT=... KUBELET_KIT_RUN_DIR=... KUBELET_KIT_CNI_BRIDGE=... KUBELET_KIT_POD_SUBNET=...
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && node scripts/bench.mjs stats
import fs from 'node:fs';
import path from 'node:path';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { startAgent } from './support/agent-process.mjs';
import { removeSandboxes } from './support/cri-floor.mjs';
import { sleepPodManifest } from './support/pods.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const N = Number(process.env.STATS_BENCH_PODS ?? 110);
const samples = Number(process.env.STATS_BENCH_SAMPLES ?? 30);
const nodeName = 'kkstatsbench';
const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error('stats.bench: KUBELET_KIT_CRI_ENDPOINT is not set; start a private containerd first');
  process.exit(1);
}
const log = (msg) => console.error(`stats.bench: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x, digits = 2) => Number(x.toFixed(digits));

const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 120_000 });
const ours = (s) => s.metadata?.name?.endsWith(`-${nodeName}`);
const work = benchWorkDir('kk-stats-bench-');
const manifestDir = path.join(work, 'manifests');
fs.mkdirSync(manifestDir);

let agent;
try {
  const foreign = (await runtime.listPodSandbox({})).items.filter((s) => !ours(s));
  if (foreign.length)
    throw new Error(`the runtime at ${endpoint} holds ${foreign.length} sandboxes of others`);
  await removeSandboxes(runtime, ours);
  for (let i = 0; i < N; i++) {
    fs.writeFileSync(path.join(manifestDir, `bench-${i}.json`), JSON.stringify(sleepPodManifest(i)));
  }
  agent = await startAgent({
    endpoint,
    manifestDir,
    rootDir: path.join(work, 'root'),
    nodeName,
    mayKeep: () => false,
  });
  const t0 = performance.now();
  for (;;) {
    const running = (await agent.pods()).filter((p) => p.status?.phase === 'Running').length;
    if (running === N) break;
    if (performance.now() - t0 > 10 * 60_000)
      throw new Error(`only ${running}/${N} pods Running after 10 minutes`);
    await sleep(1000);
  }
  log(`${N} pods Running after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await sleep(5000);

  const timed = async (f) => {
    const s = performance.now();
    await f();
    return performance.now() - s;
  };
  const summary =
    (q = '') =>
    async () => {
      const res = await fetch(`${agent.baseUrl}/stats/summary${q}`);
      if (res.status !== 200) throw new Error(`/stats/summary${q}: ${res.status} ${await res.text()}`);
      const body = await res.json();
      const pods = body.pods.filter((p) => p.podRef.name.endsWith(`-${nodeName}`)).length;
      if (pods !== N) throw new Error(`/stats/summary${q} lists ${pods} pods, not ${N}`);
    };
  const raw = async () => {
    await runtime.listPodSandboxStats({}).catch(() => undefined);
    await runtime.listContainerStats({});
  };
  // Warm-up (the first summary also fills the CPU sample cache).
  await summary()();
  await raw();
  const full = [];
  const cpuMem = [];
  const floor = [];
  for (let i = 0; i < samples; i++) {
    floor.push(await timed(raw));
    full.push(await timed(summary()));
    cpuMem.push(await timed(summary('?only_cpu_and_memory=true')));
  }
  const f = median(full);
  const c = median(cpuMem);
  const r = median(floor);
  log(
    `median of ${samples}: summary ${f.toFixed(1)} ms, cpu+memory ${c.toFixed(1)} ms, raw CRI ${r.toFixed(1)} ms`,
  );
  console.log(
    JSON.stringify([
      {
        name: 'stats.summary110.ms',
        value: round(f),
        unit: 'ms',
        note: `median of ${samples} GET /stats/summary with ${N} pods; raw CRI ${round(r)} ms in the same run`,
      },
      {
        name: 'stats.summary110.ratio',
        value: round(f / r),
        unit: 'x',
        note: 'summary over the raw CRI stats calls',
      },
      {
        name: 'stats.summaryCpuMemory110.ms',
        value: round(c),
        unit: 'ms',
        note: `?only_cpu_and_memory=true (what /metrics/resource costs); ${round(c / r)}x the raw CRI calls`,
      },
    ]),
  );
} finally {
  await agent?.kill();
  await removeSandboxes(runtime, ours).catch(() => {});
  runtime.close();
  fs.rmSync(work, { recursive: true, force: true });
}
