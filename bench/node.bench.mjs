// The node agent end to end on containerd: 110 pods (one busybox `sleep` container each, pod
// networking) from manifests written into the watched directory of a running `kubelet-kit run`
// until all are Running in its /pods, against the raw CRI floor measured in the same run with
// the same sandbox and container configs (RunPodSandbox + CreateContainer + StartContainer per
// pod through the CRI client) at several concurrencies; then the agent's RSS and CPU with the
// 110 pods running.
//
// Needs the private containerd (`source scripts/containerd/env.sh && bash scripts/containerd/up.sh`)
// and `npm run build`. The agent kills every runtime pod that no source of its own wants, so this
// refuses to run while the runtime holds pods of others (e2e tests, a demo) unless
// NODE_BENCH_ALLOW_FOREIGN_PODS=1. On a shared machine, give it a containerd of its own first:
//   export KUBELET_KIT_TEST_ROOT=/var/lib/kubelet-kit-bench KUBELET_KIT_RUN_DIR=/run/kubelet-kit-bench \
//     KUBELET_KIT_CNI_BRIDGE=kkbench0 KUBELET_KIT_POD_SUBNET=10.245.0.0/16
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && node scripts/bench.mjs node
// Takes about 10 minutes (much of it removing pods between phases); NODE_BENCH_ROUNDS (default 8)
// sets how many agent phases, each between two floor phases, follow the floor's concurrency sweep.
// A single round's ratio moves by several per cent with what else the shared machine runs, so
// ratioBest is the median of the rounds' ratios (their mean is in the note).
// NODE_BENCH_ROUNDS=0 skips the floor and the rounds: only the footprint measures
// (node.rssIdle.mib, node.rss110.mib, node.cpu110.cores), in about two minutes.
import fs from 'node:fs';
import path from 'node:path';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { decodeStaticPods } from '@kubelet-kit/pod-config';
import { commandNodeFlags, startAgent } from './support/agent-process.mjs';
import { buildFloorConfigs, removeSandboxes, runFloor } from './support/cri-floor.mjs';
import {
  bareNodeRss,
  builtinsNodeRss,
  formatMedianRss,
  formatRss,
  medianRss,
  rssParts,
} from './support/memory.mjs';
import { sleepPodManifest } from './support/pods.mjs';
import { cpuSeconds } from './support/proc.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const N = Number(process.env.NODE_BENCH_PODS ?? 110);
const concurrencies = [4, 8, 16, 32].filter((c) => c < N);
const cpuWindowMs = Number(process.env.NODE_BENCH_CPU_WINDOW_MS ?? 20_000);
const settleMs = 5_000;
const roundsWanted = Number(process.env.NODE_BENCH_ROUNDS ?? 8);
const nodeName = 'kkbench';
const nodeIP = '127.0.0.1';

/** The agent's kubelet_runtime_operations_total, by operation. */
async function runtimeOperations(baseUrl) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const ops = {};
  for (const m of text.matchAll(/^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\d+)$/gm)) {
    ops[m[1]] = Number(m[2]);
  }
  return ops;
}

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'node.bench: KUBELET_KIT_CRI_ENDPOINT is not set; start the private containerd first: ' +
      'source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
  );
  process.exit(1);
}
const log = (msg) => console.error(`node.bench: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 3) => Number(x.toFixed(digits));

const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 120_000 });
const imageService = new ImageServiceClient({ endpoint });
const ours = (s) => s.metadata?.name?.endsWith(`-${nodeName}`);

// The agent's roots and the floor's log root each in a block group of their own (see work-dir.mjs).
const work = benchWorkDir('kk-node-bench-');
const manifestDir = path.join(work, 'manifests');
const stagingDir = path.join(work, 'staging');
fs.mkdirSync(manifestDir);
fs.mkdirSync(stagingDir);

let agent;
try {
  const foreign = (await runtime.listPodSandbox({})).items.filter((s) => !ours(s));
  if (foreign.length && process.env.NODE_BENCH_ALLOW_FOREIGN_PODS !== '1') {
    throw new Error(
      `the runtime at ${endpoint} holds ${foreign.length} pod sandboxes of others, which the agent ` +
        'would kill; give the benchmark a containerd of its own (see the comment at the top of ' +
        'bench/node.bench.mjs) or set NODE_BENCH_ALLOW_FOREIGN_PODS=1',
    );
  }
  const leftovers = await removeSandboxes(runtime, ours);
  if (leftovers) log(`removed ${leftovers} leftover sandboxes of an earlier run`);

  // The manifests, and the pods the agent's file source decodes from them (same names, UIDs).
  const manifests = new Map();
  const pods = [];
  for (let i = 0; i < N; i++) {
    const name = `bench-${String(i).padStart(3, '0')}.json`;
    const text = JSON.stringify(sleepPodManifest(i));
    manifests.set(name, text);
    pods.push(...decodeStaticPods(text, { nodeName, source: 'file', file: path.join(manifestDir, name) }));
  }

  // --- the floor ------------------------------------------------------------------------------
  // Its own root directory: the agent reads restart counts from the log directories.
  const configs = await buildFloorConfigs({
    pods,
    imageService,
    rootDir: path.join(work, 'floor-root'),
    nodeName,
    nodeIPs: [nodeIP],
  });
  // One warm-up pod so the first measured phase does not pay for cold caches.
  await runFloor(runtime, configs.slice(0, 1), 1);
  await removeSandboxes(runtime, ours);
  const floorPhase = async (c, label) => {
    const seconds = await runFloor(runtime, configs, c);
    log(`${label}: ${N} pods with ${c} in flight: ${seconds.toFixed(2)} s`);
    await removeSandboxes(runtime, ours);
    return seconds;
  };
  const sweep = new Map();
  if (roundsWanted > 0)
    for (const c of [...concurrencies, N]) sweep.set(c, await floorPhase(c, 'floor sweep'));
  else sweep.set(N, 0);
  const bestAt = [...sweep].sort((x, y) => x[1] - y[1])[0][0];

  // --- the agent ------------------------------------------------------------------------------
  const agentPhase = async (r, measureResources) => {
    fs.rmSync(manifestDir, { recursive: true, force: true });
    fs.mkdirSync(manifestDir);
    for (const [name, text] of manifests) fs.writeFileSync(path.join(stagingDir, name), text);
    // Woken by the agent's log line for the last container started (no polling delay).
    let started = 0;
    let onAllStarted = () => {};
    const allStartedLogged = new Promise((resolve) => {
      onAllStarted = resolve;
    });
    agent = await startAgent({
      endpoint,
      manifestDir,
      rootDir: path.join(work, `agent-root-${r}`),
      nodeName,
      args: ['--node-ip', nodeIP],
      // The "Started container" events: when the CRI work of each pod ended.
      mayKeep: (line) => line.includes('"event":"Started"'),
      keep: (e) => {
        if (e.event !== 'Started') return false;
        started++;
        if (started === N) onAllStarted();
        return true;
      },
    });
    // Let the first listing, relist and housekeeping pass.
    await sleep(3000);
    // The footprint phase gives start-up's garbage a little longer to go.
    if (measureResources) await sleep(2000);
    const idleParts = measureResources ? await medianRss(agent.pid, 10_000) : rssParts(agent.pid);
    const idleRss = idleParts.rss * 2 ** 20;
    const startEpochMs = Date.now();
    const start = performance.now();
    for (const name of manifests.keys()) {
      fs.renameSync(path.join(stagingDir, name), path.join(manifestDir, name));
    }
    const deadline = start + 10 * 60_000;
    // Each /pods answer costs the agent (and this process) a copy of every pod and status, and on
    // a saturated machine that CPU slows the pods down: wait for the agent's log to say every
    // container started (or a minute), then ask often (the Running phase follows within a relist).
    await Promise.race([allStartedLogged, new Promise((r) => setTimeout(r, 60_000).unref())]);
    for (;;) {
      const running = (await agent.pods()).filter((p) => p.status?.phase === 'Running').length;
      if (running === N) break;
      if (performance.now() > deadline) throw new Error(`only ${running}/${N} pods Running after 10 minutes`);
      await sleep(started >= N ? 20 : 200);
    }
    const seconds = (performance.now() - start) / 1000;
    // Where the time went: the last container started (the CRI work), then the PLEG saw it and
    // the status reached /pods.
    const lastStartSeconds = Math.max(...agent.kept.map((e) => e.time)) / 1000 - startEpochMs / 1000;
    log(
      `${typeof r === 'number' ? `round ${r}` : r} agent: ${N} pods Running in /pods after ${seconds.toFixed(2)} s ` +
        `(last container started at ${lastStartSeconds.toFixed(2)} s)`,
    );
    const rpcs = await runtimeOperations(agent.baseUrl);
    const result = { seconds, lastStartSeconds, rpcs, idleRss, idleParts };
    if (measureResources) {
      log(`agent: CRI calls until all Running: ${JSON.stringify(rpcs)}`);
      await sleep(settleMs);
      const cpu0 = cpuSeconds(agent.pid);
      const t0 = performance.now();
      // RSS sampled through the CPU window (a second's reading costs nothing measurable).
      const sampled = await medianRss(agent.pid, cpuWindowMs);
      const cpu1 = cpuSeconds(agent.pid);
      result.windowS = (performance.now() - t0) / 1000;
      result.cores = (cpu1 - cpu0) / result.windowS;
      result.parts = sampled;
      result.rss = sampled.rss * 2 ** 20;
      const stillRunning = (await agent.pods()).filter((p) => p.status?.phase === 'Running').length;
      log(
        `agent: ${(result.rss / 2 ** 20).toFixed(1)} MiB RSS (${(idleRss / 2 ** 20).toFixed(1)} MiB idle), ` +
          `${result.cores.toFixed(3)} cores, ${stillRunning} Running`,
      );
    }
    if (agent.problems.length) {
      log(
        `agent logged ${agent.problems.length} warnings/errors, first: ${JSON.stringify(agent.problems[0])}`,
      );
    }
    await agent.kill();
    agent = undefined;
    await removeSandboxes(runtime, ours);
    return result;
  };

  // --- rounds: the agent between two floors at the floor's best concurrency ------------------
  // The machine's speed drifts by several per cent within minutes (shared 2-core machines). Each
  // agent phase runs between two floor phases at the best concurrency, one just before and one
  // just after it (a round's "after" is the next round's "before"): a round's ratio is the
  // agent's time over the mean of those two, so a drift in either direction favours neither.
  // The floor with all pods in flight runs once before the rounds and once after. The agent's
  // RSS and CPU come from one more agent phase after that, so that its settle and measuring
  // window do not stand between a round's phases.
  const floorAllTimes = [];
  if (bestAt !== N && roundsWanted > 0) floorAllTimes.push(await floorPhase(N, 'before the rounds, floor'));
  const floorBestTimes = roundsWanted > 0 ? [await floorPhase(bestAt, 'round 1 floor before')] : [];
  const rounds = [];
  for (let r = 1; r <= roundsWanted; r++) {
    const a = await agentPhase(r, false);
    floorBestTimes.push(await floorPhase(bestAt, `round ${r} floor after`));
    const floorBefore = floorBestTimes[r - 1];
    const floorAfter = floorBestTimes[r];
    rounds.push({
      floorBefore,
      floorAfter,
      floorBest: (floorBefore + floorAfter) / 2,
      agent: a.seconds,
      lastStart: a.lastStartSeconds,
      rpcs: a.rpcs,
    });
  }
  if (bestAt !== N && roundsWanted > 0) floorAllTimes.push(await floorPhase(N, 'after the rounds, floor'));
  else floorAllTimes.push(...floorBestTimes);
  const last = await agentPhase('resources', true);
  const bare = await bareNodeRss();
  const builtins = await builtinsNodeRss(commandNodeFlags());
  const mean = (xs) => xs.reduce((x, y) => x + y, 0) / xs.length;
  const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const roundRatios = rounds.map((r) => r.agent / r.floorBest);
  const floorAll = mean(floorAllTimes);
  const roundsNote =
    `sweep ${[...sweep].map(([c, t]) => `${c === N ? 'all' : c}:${t.toFixed(2)}s`).join(' ')}; ` +
    rounds
      .map(
        (r, i) =>
          `round ${i + 1}: agent ${r.agent.toFixed(2)}s (last container started at ${r.lastStart.toFixed(2)}s), ` +
          `floor ${bestAt} in flight before ${r.floorBefore.toFixed(2)}s and after ${r.floorAfter.toFixed(2)}s`,
      )
      .join('; ') +
    `; floor all in flight ${floorAllTimes.map((t) => `${t.toFixed(2)}s`).join(', ')}`;
  const footprintNote =
    `a bare node (\`node -e\`, waiting) on this machine: ${formatRss(bare)}, one that loads only ` +
    `the built-in modules the agent uses (http2, tls, crypto, zlib, …): ${formatRss(builtins)}; ` +
    "anon is the process's own memory, file the pages of the node binary it maps";
  const footprint = [
    {
      name: 'node.rssIdle.mib',
      value: round(last.idleRss / 2 ** 20, 1),
      unit: 'MiB',
      target: 50,
      note: `VmRSS 5–15 s after start, no pods: ${formatMedianRss(last.idleParts)}; ${footprintNote}`,
    },
    {
      name: 'node.rss110.mib',
      value: round(last.rss / 2 ** 20, 1),
      unit: 'MiB',
      target: 64,
      note: `VmRSS with ${N} pods running: ${formatMedianRss(last.parts)}; ${footprintNote}`,
    },
    {
      name: 'node.cpu110.cores',
      value: round(last.cores),
      unit: 'cores',
      target: 0.02,
      note: `agent CPU over ${Math.round(last.windowS)} s with ${N} pods running`,
    },
  ];
  const roundMeasures = () => [
    {
      name: 'node.pods110.ratioBest',
      value: round(median(roundRatios)),
      unit: 'ratio',
      target: 1.05,
      note:
        `agent / mean of the floors at its best concurrency (${bestAt} in flight) just before and ` +
        `just after it, median of ${rounds.length} rounds (mean ${mean(roundRatios).toFixed(3)}; ` +
        `each: ${roundRatios.map((x) => x.toFixed(3)).join(', ')}); ${roundsNote}`,
    },
    {
      name: 'node.pods110.ratioAllInFlight',
      value: round(mean(rounds.map((r) => r.agent)) / floorAll),
      unit: 'ratio',
      target: 1,
      note:
        `target < 1: the agent's mean time over the mean of the floor with all ${N} in flight ` +
        `(before and after the rounds)`,
    },
    {
      name: 'node.pods110.seconds',
      value: round(mean(rounds.map((r) => r.agent)), 2),
      unit: 's',
      note:
        `mean of ${rounds.length} rounds; CRI calls until all Running (last round): ` +
        Object.entries(rounds.at(-1).rpcs)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
    },
  ];
  console.log(JSON.stringify(roundsWanted > 0 ? [...roundMeasures(), ...footprint] : footprint));
} finally {
  if (agent) await agent.kill();
  await removeSandboxes(runtime, ours).catch((err) => log(`clean-up failed: ${err.message}`));
  runtime.close();
  imageService.close();
  fs.rmSync(work, { recursive: true, force: true });
}
