// The whole pipeline without containerd: a programmatic source (StaticPodSource) → PodConfig →
// pod workers → kuberuntime → CRI (the in-memory CRI server, in a process of its own), with the
// PLEG and status manager, at increasing pod counts up to 100,000. Measures pods per second from
// setting the manifests until every pod is Running (counted by kubelet_pod_start_duration_seconds),
// with how long the first pod took to show Running in the note, and the heap + external memory
// per pod with all of them running; for issue #28, pods per second at 10,000 pods and how the
// agent's CPU per pod grows from 1,000 to 100,000 pods. Each count runs in a fresh process; the
// whole run is bounded (~25 minutes, PIPELINE_BENCH_BUDGET_MS): a count that would not fit is
// skipped and said so in the note.
import { fork, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { benchWorkDir } from './support/work-dir.mjs';

const levels = (process.env.PIPELINE_BENCH_LEVELS ?? '1000,10000,30000,100000').split(',').map(Number);
const budgetMs = Number(process.env.PIPELINE_BENCH_BUDGET_MS ?? 1_500_000);
const log = (msg) => console.error(`pipeline.bench: ${msg}`);
// The floor under the pipeline's throughput: the five CRI calls the agent makes for each pod
// (counted on the in-memory CRI at a level's end) with requests of the agent's shape, as many at
// once as the benchmark lets the agent create pods, and nothing else.
const floorMethods = [
  'RunPodSandbox',
  'PodSandboxStatus',
  'CreateContainer',
  'StartContainer',
  'ContainerStatus',
];
const floorConcurrency = Number(process.env.PIPELINE_BENCH_CREATIONS ?? 256);

if (process.argv[2] === '--level') {
  await runLevel(Number(process.argv[3]), Number(process.argv[4]), process.argv[5]);
} else if (process.argv[2] === '--floor') {
  await runFloor(Number(process.argv[3]), Number(process.argv[4]));
} else {
  await orchestrate();
}

async function orchestrate() {
  const started = performance.now();
  // Every level's agent root stays until the run ends: a level's many thousand deleted files
  // would make the next level's new inodes slow to allocate on ext4 (see work-dir.mjs).
  const work = benchWorkDir('kk-pipeline-bench-');
  try {
    await runLevels(started, work);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function runLevels(started, work) {
  const done = [];
  const skipped = [];
  for (const n of levels) {
    const elapsed = performance.now() - started;
    const left = budgetMs - elapsed;
    // Project this count's time from the last one (superlinear growth taken from the last two).
    const last = done.at(-1);
    const prev = done.at(-2);
    let projectedMs = 0;
    if (last) {
      const growth =
        prev && last.seconds > prev.seconds
          ? Math.log(last.seconds / prev.seconds) / Math.log(last.n / prev.n)
          : 1;
      projectedMs = last.totalMs * (n / last.n) ** Math.max(1, growth);
    }
    if (projectedMs > left) {
      skipped.push(
        `${n} (projected ${(projectedMs / 1000).toFixed(0)} s, ${(left / 1000).toFixed(0)} s left)`,
      );
      continue;
    }
    const t = performance.now();
    const run = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        '--max-old-space-size=8192',
        import.meta.filename,
        '--level',
        String(n),
        String(Math.max(left, 10_000)),
        work,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * 1024 * 1024 },
    );
    const totalMs = performance.now() - t;
    let result;
    try {
      result = JSON.parse((run.stdout ?? '').trim().split('\n').at(-1) ?? '');
    } catch {
      throw new Error(`level ${n} failed (exit ${run.status}): ${run.stdout}`);
    }
    log(
      `${n} pods: ${result.running} Running in ${result.seconds.toFixed(2)} s (${(result.running / result.seconds).toFixed(0)} pods/s), ` +
        `the first after ${result.firstRunningSeconds?.toFixed(2) ?? '-'} s, ` +
        `${result.cpuMsPerPod.toFixed(2)} CPU ms/pod, ${result.bytesPerPod.toFixed(0)} B/pod heap+external, ${(result.rssPerPod / 1024).toFixed(1)} KiB/pod RSS, ` +
        `PLEG relists ${result.relists} (mean ${result.relistMeanMs.toFixed(0)} ms), ` +
        `${result.problems} warnings/errors${result.firstProblem ? ` (first: ${result.firstProblem}; by message: ${JSON.stringify(result.problemKinds)})` : ''}`,
    );
    done.push({ n, totalMs, ...result });
    if (result.running < n) {
      skipped.push(
        `${n} only reached ${result.running} Running before the time ran out` +
          (result.firstProblem ? ` (first error: ${result.firstProblem.slice(0, 240)})` : ''),
      );
      break;
    }
  }
  const complete = done.filter((d) => d.running === d.n);
  const top = complete.at(-1) ?? done.at(-1);
  if (!top) throw new Error('no level ran');
  const levelsNote = done
    .map(
      (d) =>
        `${d.n}: ${(d.running / d.seconds).toFixed(0)}/s ${d.bytesPerPod.toFixed(0)} B ${d.cpuMsPerPod.toFixed(1)} CPU ms/pod, first Running after ${d.firstRunningSeconds?.toFixed(1) ?? '-'} s`,
    )
    .join('; ');
  const note = `at ${top.n} pods; ${levelsNote}${skipped.length ? `; stopped early: ${skipped.join('; ')}` : ''}`;
  const measures = [
    { name: 'pipeline.pods.perSec', value: Math.round(top.running / top.seconds), unit: 'pods/s', note },
    {
      name: 'pipeline.bytesPerPod',
      value: Math.round(top.bytesPerPod),
      unit: 'B',
      note: `heap+external after GC with ${top.n} pods Running, over a baseline; RSS ${(top.rssPerPod / 1024).toFixed(1)} KiB/pod`,
    },
  ];
  // Issue #28: throughput at 10,000 pods, and how the agent's CPU per pod grows from 1,000 to
  // 100,000 pods (flat would be 1). Only levels whose every pod reached Running count.
  const at = (n) => complete.find((d) => d.n === n);
  const tenK = at(10_000);
  if (tenK) {
    const floor = criFloor(10_000);
    measures.push({
      name: 'pipeline.pods.perSec10k.criFloor',
      value: Math.round(floor.perSec),
      unit: 'pods/s',
      note:
        `the CRI calls the pipeline makes per pod (${floorMethods.join(', ')}) alone, for 10000 pods, ` +
        `${floorConcurrency} at once, from one client to the same in-memory CRI process: ${floor.seconds.toFixed(1)} s, ` +
        `${floor.cpuMsPerPod.toFixed(2)} client CPU ms/pod; the pipeline reached ${((tenK.running / tenK.seconds / floor.perSec) * 100).toFixed(0)} % of it`,
    });
    measures.push({
      name: 'pipeline.pods.perSec10k',
      value: Math.round(tenK.running / tenK.seconds),
      unit: 'pods/s',
      target: 1000,
      note: `${tenK.seconds.toFixed(1)} s for 10000 pods, ${tenK.cpuMsPerPod.toFixed(2)} CPU ms/pod, PLEG relists ${tenK.relists} (mean ${tenK.relistMeanMs.toFixed(0)} ms)`,
    });
  }
  const small = at(1_000);
  const large = at(100_000);
  if (small && large) {
    measures.push({
      name: 'pipeline.cpuMsPerPod.growth',
      value: Number((large.cpuMsPerPod / small.cpuMsPerPod).toFixed(2)),
      unit: 'x',
      target: 1.3,
      note: `agent CPU ms per pod (user+system, the in-memory CRI's process not counted): ${done.map((d) => `${d.n}: ${d.cpuMsPerPod.toFixed(2)}`).join(', ')}`,
    });
  }
  console.log(JSON.stringify(measures));
}

function criFloor(n) {
  const run = spawnSync(
    process.execPath,
    [import.meta.filename, '--floor', String(n), String(floorConcurrency)],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    return JSON.parse((run.stdout ?? '').trim().split('\n').at(-1) ?? '');
  } catch {
    throw new Error(`the CRI floor failed (exit ${run.status}): ${run.stdout}`);
  }
}

async function runFloor(n, concurrency) {
  const { RuntimeServiceClient } = await import('@kubelet-kit/cri');
  const { busyboxImage } = await import('./support/pods.mjs');
  const server = fork(path.join(import.meta.dirname, 'support/cri-server-child.mjs'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { endpoint } = await new Promise((resolve) => server.once('message', resolve));
  const runtime = new RuntimeServiceClient({ endpoint, maxMessageBytes: 1024 * 2 ** 20 });
  await runtime.version();
  const onePod = async (i) => {
    const uid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const name = `bench-${i}`;
    const labels = {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': uid,
    };
    const config = {
      metadata: { name, namespace: 'default', uid, attempt: 0 },
      hostname: name,
      logDirectory: `/var/log/pods/default_${name}_${uid}`,
      dnsConfig: { servers: ['10.0.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
      labels,
      annotations: {
        'kubernetes.io/config.source': 'api',
        'kubernetes.io/config.seen': new Date().toISOString(),
      },
      linux: {
        cgroupParent: `/kubepods/besteffort/pod${uid}`,
        securityContext: { namespaceOptions: {}, seccompProfilePath: 'runtime/default' },
      },
    };
    const { podSandboxId } = await runtime.runPodSandbox({ config, runtimeHandler: '' });
    await runtime.podSandboxStatus({ podSandboxId });
    const { containerId } = await runtime.createContainer({
      podSandboxId,
      sandboxConfig: config,
      config: {
        metadata: { name: 'sleep', attempt: 0 },
        image: { image: busyboxImage },
        command: ['sleep', '3600'],
        logPath: 'sleep/0.log',
        labels: { ...labels, 'io.kubernetes.container.name': 'sleep' },
        annotations: {
          'io.kubernetes.container.hash': '5f3c0f1e',
          'io.kubernetes.container.restartCount': '0',
          'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
          'io.kubernetes.pod.terminationGracePeriod': '1',
        },
        envs: [{ key: 'KUBERNETES_SERVICE_HOST', value: '10.0.0.1' }],
        mounts: [
          { containerPath: '/etc/hosts', hostPath: `/var/lib/kubelet/pods/${uid}/etc-hosts` },
          {
            containerPath: '/dev/termination-log',
            hostPath: `/var/lib/kubelet/pods/${uid}/containers/sleep/0a1b2c3d`,
          },
        ],
        linux: {
          resources: {},
          securityContext: {
            namespaceOptions: {},
            maskedPaths: ['/proc/kcore'],
            readonlyPaths: ['/proc/bus'],
          },
        },
      },
    });
    await runtime.startContainer({ containerId });
    await runtime.containerStatus({ containerId });
  };
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await onePod(next++);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  runtime.close();
  server.send('close');
  await new Promise((r) => server.once('exit', r));
  console.log(
    JSON.stringify({ n, seconds, perSec: n / seconds, cpuMsPerPod: (cpu.user + cpu.system) / 1000 / n }),
  );
  process.exit(0);
}

function memory() {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { bytes: m.heapUsed + m.external, rss: m.rss };
}

/** How many pods reached Running (kubelet_pod_start_duration_seconds counts each pod once). */
async function startedPods(metrics) {
  const { values } = await metrics.podStartDuration.get();
  return values.find((v) => v.metricName === 'kubelet_pod_start_duration_seconds_count')?.value ?? 0;
}

async function runLevel(n, timeoutMs, workDir) {
  const { StaticPodSource } = await import('@kubelet-kit/pod-config');
  const { createAgent } = await import('@kubelet-kit/node');
  const { sleepPodManifest } = await import('./support/pods.mjs');

  const server = fork(path.join(import.meta.dirname, 'support/cri-server-child.mjs'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { endpoint } = await new Promise((resolve) => server.once('message', resolve));
  // Under the run's chattr +T work directory (each level's root in a block group of its own), or
  // one of its own when the level runs alone.
  const ownRoot = !workDir;
  const rootDirectory = workDir
    ? fs.mkdtempSync(path.join(workDir, `level-${n}-`))
    : benchWorkDir('kk-pipeline-bench-');
  let problems = 0;
  let firstProblem;
  // Kinds of warnings and errors by message, for the note: a benchmark that logs one per pod
  // measures that, not the pipeline.
  const problemKinds = new Map();
  const problem = (fields, msg) => {
    problems++;
    const kind = String(typeof fields === 'string' ? fields : (msg ?? '')).slice(0, 80);
    problemKinds.set(kind, (problemKinds.get(kind) ?? 0) + 1);
    firstProblem ??= `${msg ?? ''} ${JSON.stringify(fields)}`.slice(0, 300);
  };
  const noop = () => {};
  const logger = { debug: noop, info: noop, warn: problem, error: problem, child: () => logger };
  const nodeName = 'pipeline';
  const manifests = Array.from({ length: n }, (_, i) => sleepPodManifest(i));

  const base = memory();
  const source = new StaticPodSource({ nodeName, logger });
  // The agent's default is no bound on concurrent syncs; PIPELINE_BENCH_MAX_SYNCS sets one.
  const maxConcurrentSyncs = Number(process.env.PIPELINE_BENCH_MAX_SYNCS ?? 0);
  // The bound on sandboxes created at once protects a real runtime (default 16); the in-memory
  // CRI answers in microseconds, and at 16 the pipeline would measure round-trip latency, not
  // its own throughput.
  const maxConcurrentPodCreations = Number(process.env.PIPELINE_BENCH_CREATIONS ?? 256);
  // The agent as `kubelet-kit run` builds it, with a programmatic source instead of files.
  const agent = createAgent({
    runtimeEndpoint: endpoint,
    rootDirectory,
    nodeName,
    nodeIPs: ['127.0.0.1'],
    maxPods: n + 10,
    port: 0,
    sources: [source],
    logger,
    ...(maxConcurrentSyncs ? { maxConcurrentSyncs } : {}),
    maxConcurrentPodCreations,
    // A full listing of 100,000 pods is far beyond upstream's 16 MiB CRI message limit.
    maxCriMessageBytes: 1024 * 2 ** 20,
  });
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  for (const m of manifests) source.set(m);
  await agent.start();
  const deadline = start + timeoutMs;
  let running = 0;
  let lastReport = start;
  // How long the first pod took to show Running: its next sync takes its turn after the first
  // syncs of the pods queued before it (see the pod-workers README).
  let firstRunningSeconds;
  while (performance.now() < deadline) {
    running = await startedPods(agent.metrics);
    if (running > 0) firstRunningSeconds ??= (performance.now() - start) / 1000;
    if (running >= n) break;
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      log(`${n} pods: ${running} Running after ${((lastReport - start) / 1000).toFixed(0)} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  manifests.length = 0;
  const loaded = memory();
  const relist = (await agent.metrics.plegRelistDuration.get()).values;
  const sum = relist.find((v) => v.metricName.endsWith('_sum'))?.value ?? 0;
  const count = relist.find((v) => v.metricName.endsWith('_count'))?.value ?? 0;
  const result = {
    n,
    running,
    seconds,
    firstRunningSeconds,
    bytesPerPod: (loaded.bytes - base.bytes) / n,
    rssPerPod: (loaded.rss - base.rss) / n,
    cpuMsPerPod: (cpu.user + cpu.system) / 1000 / n,
    relists: count,
    relistMeanMs: count ? (sum / count) * 1000 : 0,
    problems,
    firstProblem,
    problemKinds: [...problemKinds].sort((a, b) => b[1] - a[1]).slice(0, 5),
  };
  await agent.stop().catch(() => {});
  server.send('close');
  await new Promise((r) => server.once('exit', r));
  if (ownRoot) fs.rmSync(rootDirectory, { recursive: true, force: true });
  console.log(JSON.stringify(result));
  process.exit(0);
}
