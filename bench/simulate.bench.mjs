// simulate.nodesPerCore: how many nodes of 110 running pods each one core keeps Ready with their
// Leases renewed on time, each node the real agent (simulateNodes, what `kubelet-kit simulate`
// runs) over its own in-memory CRI, against the in-memory API server.
//
// Method: the nodes run in a child process (bench/support/simulate-child.mjs), the API server in
// this one, so that the child's CPU is the nodes' alone. The child grows in levels; at each level
// every new node gets 110 pods bound to it (a one-container `sleep 3600` pod), the level waits
// until every Node is Ready and every pod Running, lets the nodes settle, then watches a window
// of SIMULATE_BENCH_WINDOW_MS (default 30 s: three Lease renewals) in which it samples the
// child's CPU (utime + stime from /proc) and polls every Lease and Node every 250 ms. A level
// holds when every Node stays Ready and no Lease goes longer than its renew interval (10 s of the
// default 40 s duration) plus upstream's 4 % jitter plus 1 s without a renewal. The next level is
// sized from the CPU per node seen so far (up to twice the nodes, aiming at 0.9 cores), until a
// level fails, the child uses a whole core, or the time budget (SIMULATE_BENCH_BUDGET_MS, 4 min
// of levels) is spent. nodesPerCore = the largest level that held / the cores it used. The child
// is one Node.js process: its JavaScript runs on one thread, so a level that needs more than a
// core cannot hold.
//
// No containerd: needs only `npm run build`.
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { cpuSeconds, rssBytes } from './support/proc.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const podsPerNode = Number(process.env.SIMULATE_BENCH_PODS ?? 110);
const windowMs = Number(process.env.SIMULATE_BENCH_WINDOW_MS ?? 30_000);
const budgetMs = Number(process.env.SIMULATE_BENCH_BUDGET_MS ?? 240_000);
const firstLevel = Number(process.env.SIMULATE_BENCH_FIRST ?? 4);
const maxLevel = Number(process.env.SIMULATE_BENCH_MAX ?? 200);
const renewIntervalMs = 10_000; // the default 40 s Lease, renewed every quarter
const lateAfterMs = renewIntervalMs * 1.04 + 1000;
const prefix = 'sim-';
const log = (msg) => console.error(`simulate.bench: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ready = (n) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

function pod(node, i) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p${i}-${node}`, namespace: 'default' },
    spec: {
      nodeName: node,
      containers: [{ name: 'main', image: 'registry.example/app:1', command: ['sleep', '3600'] }],
    },
  };
}

const work = benchWorkDir('kk-simulate-bench-');
// Validation of every write would make the server, not the nodes, the slow side.
const api = new FakeApiServer({ validate: false });
let child;
const started = performance.now();
try {
  await api.start();
  const kubeconfig = api.writeKubeconfig(path.join(work, 'kubeconfig'));
  child = fork(
    path.join(import.meta.dirname, 'support/simulate-child.mjs'),
    [kubeconfig, path.join(work, 'nodes')],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: ['--max-old-space-size=4096'],
    },
  );
  const replies = [];
  const waiters = [];
  child.on('message', (m) => (waiters.length ? waiters.shift()(m) : replies.push(m)));
  const reply = () =>
    replies.length ? Promise.resolve(replies.shift()) : new Promise((r) => waiters.push(r));
  const ask = (m) => {
    child.send(m);
    return reply();
  };
  await reply(); // ready

  const levels = [];
  let nodes = 0;
  let target = firstLevel;
  for (;;) {
    // --- grow to the target, with 110 pods on each new node ---------------------------------
    const t0 = performance.now();
    const before = nodes;
    const added = await ask({ add: target - nodes });
    for (let n = nodes; n < target; n++)
      for (let i = 0; i < podsPerNode; i++) api.create(pod(`${prefix}${n}`, i));
    nodes = target;
    const names = Array.from({ length: nodes }, (_, n) => `${prefix}${n}`);
    const deadline = performance.now() + 180_000;
    let running = 0;
    for (;;) {
      running = api.list('Pod', 'default').filter((p) => p.status?.phase === 'Running').length;
      const allReady = names.every((n) => ready(api.get('Node', undefined, n)));
      if (allReady && running === nodes * podsPerNode) break;
      if (performance.now() > deadline) break;
      api.clearRequests();
      await sleep(500);
    }
    const upMs = performance.now() - t0;
    if (running < nodes * podsPerNode) {
      levels.push({
        nodes,
        held: false,
        why: `only ${running} of ${nodes * podsPerNode} pods Running after ${(upMs / 1000).toFixed(0)} s`,
      });
      log(levels.at(-1).why);
      break;
    }
    log(
      `${nodes} nodes (${added.startMs.toFixed(0)} ms to start the new ones), ${running} pods Running after ${(upMs / 1000).toFixed(1)} s`,
    );
    await sleep(5_000);

    // --- the window ---------------------------------------------------------------------------
    await ask('window');
    api.clearRequests();
    const lastRenew = new Map(names.map((n) => [n, api.get('Lease', 'kube-node-lease', n)?.spec?.renewTime]));
    const lastSeen = new Map(names.map((n) => [n, performance.now()]));
    let worstGapMs = 0;
    let notReady = 0;
    let requests = 0;
    const cpu0 = cpuSeconds(child.pid);
    const w0 = performance.now();
    while (performance.now() - w0 < windowMs) {
      await sleep(250);
      const now = performance.now();
      for (const n of names) {
        const renew = api.get('Lease', 'kube-node-lease', n)?.spec?.renewTime;
        if (renew !== lastRenew.get(n)) {
          lastRenew.set(n, renew);
          lastSeen.set(n, now);
        }
        worstGapMs = Math.max(worstGapMs, now - lastSeen.get(n));
        if (!ready(api.get('Node', undefined, n))) notReady++;
      }
      requests += api.requests.filter((r) => r.userAgent.startsWith('kubelet/')).length;
      api.clearRequests();
    }
    const elapsed = performance.now() - w0;
    const cores = (cpuSeconds(child.pid) - cpu0) / (elapsed / 1000);
    const rss = rssBytes(child.pid);
    const report = await ask('report');
    const held = worstGapMs <= lateAfterMs && notReady === 0;
    levels.push({
      nodes,
      held,
      cores,
      worstGapMs,
      rssMiB: rss / 2 ** 20,
      requestsPerNodeMin: (requests * 60_000) / elapsed / nodes,
      ...report,
      why: held
        ? ''
        : `${notReady ? `${notReady} NotReady samples; ` : ''}longest time without a Lease renewal ${(worstGapMs / 1000).toFixed(1)} s`,
    });
    log(
      `${nodes} nodes: ${cores.toFixed(3)} cores (${((cores / nodes) * 1000).toFixed(1)} mcores/node), ` +
        `longest without renewal ${(worstGapMs / 1000).toFixed(1)} s, NotReady samples ${notReady}, ` +
        `RSS ${(rss / 2 ** 20).toFixed(0)} MiB, ${((requests * 60_000) / elapsed / nodes).toFixed(1)} API requests/node/min, ` +
        `event-loop delay p99 ${report.loopDelayP99Ms.toFixed(0)} ms max ${report.loopDelayMaxMs.toFixed(0)} ms, ` +
        `${report.problems} warnings${report.firstProblems.length ? ` (${report.firstProblems[0]})` : ''}`,
    );
    if (!held || cores >= 0.95) break;
    // --- the next level -----------------------------------------------------------------------
    const perNode = cores / nodes;
    const next = Math.min(
      maxLevel,
      nodes * 2,
      Math.max(nodes + Math.ceil(nodes / 4), Math.floor(0.9 / perNode)),
    );
    const spent = performance.now() - started;
    // The next level's start and window, projected from this one's.
    const projected = (upMs / (nodes - before)) * (next - nodes) + windowMs + 5_000;
    if (next <= nodes || spent + projected > budgetMs) {
      log(
        `stopping: ${next <= nodes ? 'at the largest level' : `the next level (${next}) would end past the budget`}`,
      );
      break;
    }
    target = next;
  }

  const held = levels.filter((l) => l.held);
  const best = held.at(-1);
  const summary = levels
    .map((l) =>
      l.cores === undefined
        ? `${l.nodes}: ${l.why}`
        : `${l.nodes}: ${l.cores.toFixed(2)} cores, ${(l.worstGapMs / 1000).toFixed(1)} s max renewal gap, ${l.rssMiB.toFixed(0)} MiB${l.held ? '' : ` (failed: ${l.why})`}`,
    )
    .join('; ');
  const stoppedBy = levels.at(-1)?.held ? 'the time budget or a full core' : 'a failed level';
  console.log(
    JSON.stringify([
      {
        name: 'simulate.nodesPerCore',
        value: best ? Math.round(best.nodes / best.cores) : 0,
        unit: 'nodes',
        note:
          `nodes of ${podsPerNode} running pods per core of the simulating process: ${best ? `${best.nodes} nodes held on ${best.cores.toFixed(2)} cores` : 'no level held'} ` +
          `(Ready throughout, no Lease longer than ${(lateAfterMs / 1000).toFixed(1)} s without renewal, ${windowMs / 1000} s windows; stopped by ${stoppedBy}); ` +
          `${best ? `${best.requestsPerNodeMin.toFixed(1)} API requests/node/min, event-loop delay p99 ${best.loopDelayP99Ms.toFixed(0)} ms; ` : ''}levels ${summary}`,
      },
    ]),
  );
} finally {
  if (child && child.exitCode === null) {
    child.send('stop');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(30_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  await api.stop().catch(() => {});
  fs.rmSync(work, { recursive: true, force: true });
}
