// The agent as a node of a cluster: `kubelet-kit run --kubeconfig` on containerd against the
// in-memory API server of `@kubelet-kit/apiserver/testing`, counting the agent's writes in the
// server's request log.
//  - cluster.writesPerPodStart: the API writes (POST, PUT, PATCH, DELETE) about one pod, from
//    its creation until it has run 5 s, for a one-container pod (mean over several pods started
//    one at a time). Upstream's kubelet makes 5 for such a pod: 2 pods/status patches (Pending
//    with ContainerCreating; Running and Ready after the PLEG sees the container) and 3 events
//    (Pulled, Created, Started).
//  - cluster.idleWritesPerMin: the agent's API writes per minute once 110 pods run and nothing
//    changes (upstream: the Lease every 10 s, 6 a minute, and the Node status report every 5 min,
//    0.2 a minute; nothing for unchanged pods).
//  - cluster.rss110.mib: the agent's RSS with the 110 pods running in cluster mode (the standalone
//    figure is node.rss110.mib, from node.bench.mjs); cluster.rssIdle.mib: the same 5-15 s after the
//    Node is Ready, before any pod (the standalone figure is node.rssIdle.mib).
//
// Needs the private containerd and `npm run build`; like node.bench.mjs it refuses to run while
// the runtime holds pods of others (NODE_BENCH_ALLOW_FOREIGN_PODS=1 overrides), see its header
// for giving it a containerd of its own.
import fs from 'node:fs';
import path from 'node:path';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { startAgent } from './support/agent-process.mjs';
import { removeSandboxes } from './support/cri-floor.mjs';
import { formatMedianRss, medianRss } from './support/memory.mjs';
import { sleepPodManifest } from './support/pods.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const N = Number(process.env.CLUSTER_BENCH_PODS ?? 110);
const startSamples = Number(process.env.CLUSTER_BENCH_START_SAMPLES ?? 5);
const idleWindowMs = Number(process.env.CLUSTER_BENCH_IDLE_MS ?? 60_000);
const nodeName = 'kkcluster';
const upstreamWritesPerPodStart = 5;
const upstreamIdleWritesPerMin = 6.2;

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error('cluster.bench: KUBELET_KIT_CRI_ENDPOINT is not set; start the private containerd first');
  process.exit(1);
}
const log = (msg) => console.error(`cluster.bench: ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 2) => Number(x.toFixed(digits));
const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 120_000 });
const ours = (s) => s.metadata?.name?.endsWith(`-${nodeName}`);
const isWrite = (r) => r.method !== 'GET' && r.userAgent.startsWith('kubelet/');

/** The pod, named so that the leftover clean-up by name suffix finds its sandbox. */
function clusterPod(i, prefix) {
  const pod = sleepPodManifest(i, `${prefix}-${nodeName}`);
  pod.metadata.name = `${prefix}-${i}-${nodeName}`;
  pod.spec.nodeName = nodeName;
  return pod;
}

/** Writes about the pod: its own object (status, deletion) and events that name it. */
function writesAbout(requests, name) {
  return requests.filter(
    (r) =>
      isWrite(r) &&
      (r.path.startsWith(`/api/v1/namespaces/default/pods/${name}`) ||
        (r.path.endsWith('/events') && r.body?.involvedObject?.name === name) ||
        r.path.includes(`/events/${name}.`)),
  );
}

const work = benchWorkDir('kk-cluster-bench-');
const manifestDir = path.join(work, 'manifests');
fs.mkdirSync(manifestDir);
const api = new FakeApiServer();
let agent;
try {
  const foreign = (await runtime.listPodSandbox({})).items.filter((s) => !ours(s));
  if (foreign.length && process.env.NODE_BENCH_ALLOW_FOREIGN_PODS !== '1') {
    throw new Error(
      `the runtime at ${endpoint} holds ${foreign.length} pod sandboxes of others, which the agent would kill; ` +
        'give the benchmark a containerd of its own (see bench/node.bench.mjs) or set NODE_BENCH_ALLOW_FOREIGN_PODS=1',
    );
  }
  await removeSandboxes(runtime, ours);
  await api.start();
  const kubeconfig = api.writeKubeconfig(path.join(work, 'kubeconfig'));
  agent = await startAgent({
    endpoint,
    manifestDir,
    rootDir: path.join(work, 'root'),
    nodeName,
    // As a cluster's node: with cluster DNS (without it every ClusterFirst pod gets a
    // MissingClusterDNS warning event, upstream's too).
    args: ['--kubeconfig', kubeconfig, '--cluster-dns', '10.96.0.10', '--cluster-domain', 'cluster.local'],
  });
  const running = (name) =>
    api.waitFor(
      'Pod',
      'default',
      name,
      (p) =>
        p?.status?.phase === 'Running' &&
        p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      120_000,
    );
  await api.waitFor(
    'Node',
    undefined,
    nodeName,
    (n) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    60_000,
  );
  await sleep(5_000);
  const idleParts = await medianRss(agent.pid, 10_000);
  log(`idle: ${formatMedianRss(idleParts)}`);

  // --- writes per pod start -------------------------------------------------------------------
  // One warm-up pod, then pods one at a time, each given 5 s after it is Running.
  const perPod = [];
  for (let i = 0; i <= startSamples; i++) {
    const pod = clusterPod(i, 'start');
    api.clearRequests();
    api.create(pod);
    await running(pod.metadata.name);
    await sleep(5_000);
    const writes = writesAbout(api.requests, pod.metadata.name);
    if (i > 0) perPod.push(writes.length);
    log(
      `pod ${pod.metadata.name}: ${writes.length} writes (${writes.map((w) => `${w.method} ${w.path.split('/').slice(-2).join('/')}${w.body?.reason ? ` ${w.body.reason}` : ''}`).join(', ')})`,
    );
  }
  const writesPerPodStart = perPod.reduce((a, b) => a + b, 0) / perPod.length;

  // --- 110 idle pods ----------------------------------------------------------------------------
  for (let i = 0; i < N - startSamples - 1; i++) api.create(clusterPod(i, 'idle'));
  for (const p of api.list('Pod', 'default'))
    if (p.spec?.nodeName === nodeName) await running(p.metadata.name);
  log(`${api.list('Pod', 'default').length} pods Running; settling`);
  await sleep(15_000);
  api.clearRequests();
  // RSS sampled through the idle window.
  const parts = await medianRss(agent.pid, idleWindowMs);
  const idle = api.requests.filter(isWrite);
  const idlePerMin = (idle.length * 60_000) / idleWindowMs;
  const kinds = {};
  for (const r of idle) {
    const k = `${r.method} ${r.path.replace(nodeName, '<node>').replace(/pods\/[^/]+/, 'pods/<pod>')}`;
    kinds[k] = (kinds[k] ?? 0) + 1;
  }
  log(`idle writes in ${idleWindowMs / 1000} s: ${JSON.stringify(kinds)}`);
  const rss = parts.rss * 2 ** 20;
  log(`${N} pods: ${formatMedianRss(parts)}`);

  console.log(
    JSON.stringify([
      {
        name: 'cluster.writesPerPodStart',
        value: round(writesPerPodStart),
        unit: 'writes',
        target: upstreamWritesPerPodStart,
        note: `mean of ${perPod.length} one-container pods (${perPod.join(', ')}); upstream: 2 status patches and 3 events`,
      },
      {
        name: 'cluster.idleWritesPerMin',
        value: round(idlePerMin),
        unit: 'writes/min',
        target: upstreamIdleWritesPerMin,
        note: `${N} idle pods; ${JSON.stringify(kinds)}`,
      },
      {
        name: 'cluster.rss110.mib',
        value: round(rss / 2 ** 20, 1),
        unit: 'MiB',
        target: 64,
        note: `${N} pods running, cluster mode: ${formatMedianRss(parts)}`,
      },
      {
        name: 'cluster.rssIdle.mib',
        value: round(idleParts.rss, 1),
        unit: 'MiB',
        target: 50,
        note: `5–15 s after the Node is Ready, no pods, cluster mode: ${formatMedianRss(idleParts)}`,
      },
    ]),
  );
} finally {
  await agent?.kill('SIGTERM').catch(() => {});
  await api.stop().catch(() => {});
  await removeSandboxes(runtime, ours).catch((err) => log(`clean-up failed: ${err.message}`));
  runtime.close();
  fs.rmSync(work, { recursive: true, force: true });
}
