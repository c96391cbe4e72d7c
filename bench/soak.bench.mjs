// Soak on containerd: `kubelet-kit run` with 110 static pods, each deleted and re-created in turn
// for 30 minutes, while the agent's RSS and open file descriptors are sampled; then every pod
// file removed and what the agent left behind counted (kubelet-kit issue #28).
//
// Each pod: a busybox `httpd` container with an HTTP readiness probe and a TCP liveness probe
// (every 10 s), a disk emptyDir, a memory emptyDir (a tmpfs mount) and a downwardAPI volume, in
// pod cgroups (--cgroups-per-qos under a --cgroup-root of its own). A re-created pod carries a
// new generation annotation, so it is a new pod (new UID) each time: whatever the agent keeps per
// UID and forgets to drop grows with the churn.
//
// Growth: RSS and fds are sampled every few seconds without forcing anything in the agent (no
// GC, no signal); the first sixth of the churn is warm-up, the baseline is the median of the
// samples in the tenth after it, the end the median of the samples in the last tenth, and growth
// is end over baseline. Strays: after all pod files are removed, the benchmark waits (up to 3
// minutes, the agent's container GC runs every minute) until the agent has removed everything,
// then counts sandboxes and containers in the CRI, mounts under the agent's root directory, pod
// directories, pod log directories and cgroups under the cgroup root.
//
// Re-create time: from the new manifest file to the pod Running in the agent's /pods (polled
// every 100 ms; the agent reports Running after its PLEG relist, every second, sees the
// container), and to the agent's "Started" event; against the raw CRI floor (RunPodSandbox +
// CreateContainer + StartContainer through the CRI client with the configs kuberuntime
// generates for the same pods, with as many in flight as the churn has) measured in the same
// run before the agent starts and after it is gone.
//
// Needs the private containerd (`source scripts/containerd/env.sh && bash scripts/containerd/up.sh`)
// and `npm run build`; the agent kills every runtime pod no source of its own wants, so this
// refuses to run while the runtime holds pods of others. KUBELET_KIT_SOAK_MINUTES (default 30)
// sets the churn's length, KUBELET_KIT_SOAK_PODS (110) the pods, KUBELET_KIT_SOAK_IN_FLIGHT (2)
// how many pods are churned at once. Takes the churn's length plus about 3 minutes.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ImageServiceClient, PodSandboxState, RuntimeServiceClient } from '@kubelet-kit/cri';
import { decodeStaticPods } from '@kubelet-kit/pod-config';
import { startAgent } from './support/agent-process.mjs';
import { buildFloorConfigs, removeSandboxes } from './support/cri-floor.mjs';
import { busyboxImage } from './support/pods.mjs';
import { cpuSeconds, rssBytes } from './support/proc.mjs';
import { benchWorkDir } from './support/work-dir.mjs';

const minutes = Number(process.env.KUBELET_KIT_SOAK_MINUTES ?? 30);
const N = Number(process.env.KUBELET_KIT_SOAK_PODS ?? 110);
const inFlight = Number(process.env.KUBELET_KIT_SOAK_IN_FLIGHT ?? 2);
// Floor pods before and after (the first of the pods' configs): enough for a median.
const floorPods = Math.min(N, Number(process.env.KUBELET_KIT_SOAK_FLOOR_PODS ?? 40));
const churnMs = minutes * 60_000;
const warmupMs = churnMs / 6;
const windowMs = churnMs / 10;
const sampleMs = Math.min(5_000, Math.max(1_000, windowMs / 20));
const nodeName = 'kksoak';
const nodeIP = '127.0.0.1';
const cgroupfs = '/sys/fs/cgroup';
const cgroupRoot = `/kk-soak-${nodeName}`;
const podUidLabel = 'io.kubernetes.pod.uid';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'soak.bench: KUBELET_KIT_CRI_ENDPOINT is not set; start the private containerd first: ' +
      'source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
  );
  process.exit(1);
}
const log = (msg) => console.error(`soak.bench: ${new Date().toISOString().slice(11, 19)} ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 3) => Number(x.toFixed(digits));
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  if (!s.length) return Number.NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs, q) => {
  const s = [...xs].sort((x, y) => x - y);
  if (!s.length) return Number.NaN;
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
};
/** Least-squares slope of y over x. */
const slope = (points) => {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den ? num / den : 0;
};

const runtime = new RuntimeServiceClient({ endpoint, timeoutMs: 120_000 });
const imageService = new ImageServiceClient({ endpoint });
const ours = (s) => s.metadata?.name?.endsWith(`-${nodeName}`);

const work = benchWorkDir('kk-soak-bench-');
const manifestDir = path.join(work, 'manifests');
const stagingDir = path.join(work, 'staging');
const rootDir = path.join(work, 'agent-root');
fs.mkdirSync(manifestDir);
fs.mkdirSync(stagingDir);

/** Pod `i` in its `generation`th incarnation (a v1 Pod manifest). */
function soakPodManifest(i, generation) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `soak-${String(i).padStart(3, '0')}`,
      namespace: 'default',
      annotations: { 'bench.kubelet-kit.dev/generation': String(generation) },
    },
    spec: {
      // busybox httpd as PID 1 ignores SIGTERM: each kill waits the grace period out.
      terminationGracePeriodSeconds: 1,
      // No cluster DNS here: the node's resolv.conf, without a MissingClusterDNS warning per pod.
      dnsPolicy: 'Default',
      containers: [
        {
          name: 'httpd',
          image: busyboxImage,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'echo ok > /www/index.html && exec httpd -f -p 8080 -h /www'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 10 },
          livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 10, initialDelaySeconds: 5 },
          volumeMounts: [
            { name: 'www', mountPath: '/www' },
            { name: 'cache', mountPath: '/cache' },
            { name: 'info', mountPath: '/etc/podinfo' },
          ],
        },
      ],
      volumes: [
        { name: 'www', emptyDir: {} },
        { name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.annotations' } }] },
        },
      ],
    },
  };
}

const fileName = (i) => `soak-${String(i).padStart(3, '0')}.json`;
/** Writes pod `i`'s manifest into the watched directory in one step (staged, then renamed). */
function writePod(i, generation) {
  const text = JSON.stringify(soakPodManifest(i, generation));
  const [pod] = decodeStaticPods(text, {
    nodeName,
    source: 'file',
    file: path.join(manifestDir, fileName(i)),
  });
  fs.writeFileSync(path.join(stagingDir, fileName(i)), text);
  fs.renameSync(path.join(stagingDir, fileName(i)), path.join(manifestDir, fileName(i)));
  return pod;
}

/** Mount points at or under `dir` (this process shares the agent's mount namespace). */
function mountsUnder(dir) {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m) => m && (m === dir || m.startsWith(`${dir}/`)));
}
const entries = (dir) => {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
};
/** Directories under the cgroup root in every hierarchy, but the QoS levels the agent keeps. */
function cgroupsUnderRoot() {
  const found = [];
  const walk = (dir, rel) => {
    let list;
    try {
      list = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      // Removed while we walk: the agent is cleaning up, which is what we wait for.
      if (err.code === 'ENOENT') return;
      throw err;
    }
    for (const e of list) {
      if (!e.isDirectory()) continue;
      const r = `${rel}/${e.name}`;
      if (!/^\/kubepods(\/(burstable|besteffort))?$/.test(r)) found.push(r);
      walk(path.join(dir, e.name), r);
    }
  };
  for (const c of entries(cgroupfs)) {
    const top = path.join(cgroupfs, c, cgroupRoot);
    if (fs.existsSync(top) && !fs.lstatSync(path.join(cgroupfs, c)).isSymbolicLink()) walk(top, '');
  }
  return found;
}
function removeCgroupTree(dir) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) removeCgroupTree(path.join(dir, e.name));
  }
  try {
    fs.rmdirSync(dir);
  } catch {}
}
const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

/** Each pod's RunPodSandbox + CreateContainer + StartContainer time, `concurrency` at once. */
async function floorLatencies(configs, concurrency) {
  let next = 0;
  const times = [];
  const worker = async () => {
    while (next < configs.length) {
      const { sandboxConfig, containers } = configs[next++];
      const t0 = performance.now();
      const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig });
      for (const config of containers) {
        const { containerId } = await runtime.createContainer({ podSandboxId, config, sandboxConfig });
        await runtime.startContainer({ containerId });
      }
      times.push((performance.now() - t0) / 1000);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, configs.length) }, worker));
  return times;
}

let agent;
try {
  const foreign = (await runtime.listPodSandbox({})).items.filter((s) => !ours(s));
  if (foreign.length) {
    throw new Error(
      `the runtime at ${endpoint} holds ${foreign.length} pod sandboxes of others, which the agent ` +
        'would kill; give the benchmark a containerd of its own (see bench/node.bench.mjs)',
    );
  }
  const leftovers = await removeSandboxes(runtime, ours);
  if (leftovers) log(`removed ${leftovers} leftover sandboxes of an earlier run`);
  for (const c of entries(cgroupfs)) removeCgroupTree(path.join(cgroupfs, c, cgroupRoot));

  // --- the floor, before ----------------------------------------------------------------------
  // The same pods without their volumes (the floor makes no volumes).
  const podsForFloor = [];
  for (let i = 0; i < floorPods; i++) {
    const text = JSON.stringify(soakPodManifest(i, 0));
    podsForFloor.push(
      ...decodeStaticPods(text, { nodeName, source: 'file', file: path.join(manifestDir, fileName(i)) }),
    );
  }
  for (const p of podsForFloor) p.spec.volumes = [];
  for (const p of podsForFloor) for (const c of p.spec.containers) c.volumeMounts = [];
  const configs = await buildFloorConfigs({
    pods: podsForFloor,
    imageService,
    rootDir: path.join(work, 'floor-root'),
    nodeName,
    nodeIPs: [nodeIP],
  });
  await floorLatencies(configs.slice(0, 1), 1);
  await removeSandboxes(runtime, ours);
  const floorBefore = await floorLatencies(configs.slice(0, floorPods), inFlight);
  await removeSandboxes(runtime, ours);
  log(`floor before: median ${median(floorBefore).toFixed(3)} s per pod with ${inFlight} in flight`);

  // --- the agent with all pods ----------------------------------------------------------------
  const startedWaiters = new Map();
  agent = await startAgent({
    endpoint,
    manifestDir,
    rootDir,
    nodeName,
    args: [
      '--node-ip',
      nodeIP,
      '--cgroups-per-qos',
      '--cgroup-root',
      cgroupRoot,
      '--image-gc-high-threshold',
      '100',
    ],
    mayKeep: (line) => line.includes('"event":"Started"'),
    // Nothing is kept (the harness must not grow either): a Started event wakes its waiter.
    keep: (e) => {
      if (e.event === 'Started') {
        const name = e.object?.split('/').pop();
        startedWaiters.get(name)?.(e.time);
      }
      return false;
    },
  });
  const pid = agent.pid;
  const generation = new Array(N).fill(0);
  const uids = [];
  for (let i = 0; i < N; i++) uids.push(writePod(i, 0).metadata.uid);

  // One poller of /pods for everyone waiting for a pod to be Running.
  const runningWaiters = new Map();
  let polling = false;
  const poll = async () => {
    if (polling) return;
    polling = true;
    try {
      while (runningWaiters.size) {
        const pods = await agent.pods().catch(() => []);
        const now = performance.now();
        for (const p of pods) {
          if (p.status?.phase !== 'Running') continue;
          const w = runningWaiters.get(p.metadata?.uid);
          if (w) {
            runningWaiters.delete(p.metadata.uid);
            w(now);
          }
        }
        await sleep(100);
      }
    } finally {
      polling = false;
    }
  };
  const waitRunning = (uid, timeoutMs) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        runningWaiters.delete(uid);
        reject(new Error(`pod ${uid} not Running after ${timeoutMs / 1000} s`));
      }, timeoutMs);
      runningWaiters.set(uid, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
      void poll();
    });

  const t0 = performance.now();
  await Promise.all(uids.map((u) => waitRunning(u, 10 * 60_000)));
  log(`all ${N} pods Running after ${((performance.now() - t0) / 1000).toFixed(1)} s; settling`);
  await sleep(Math.min(30_000, warmupMs));

  // --- sampling -------------------------------------------------------------------------------
  const samples = [];
  const sample = () => {
    samples.push({
      t: performance.now() - churnStart,
      rss: rssBytes(pid),
      fds: fdCount(pid),
      mounts: mountsUnder(rootDir).length,
      podDirs: entries(path.join(rootDir, 'pods')).length,
    });
  };
  const churnStart = performance.now();
  const cpu0 = cpuSeconds(pid);
  sample();
  const sampler = setInterval(sample, sampleMs);

  // --- churn ----------------------------------------------------------------------------------
  const cycles = [];
  const failures = [];
  /** Resolves when no sandbox of `uid` is ready any more. */
  const waitSandboxesStopped = async (uid, timeoutMs) => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const { items } = await runtime.listPodSandbox({ filter: { labelSelector: { [podUidLabel]: uid } } });
      if (!items.some((s) => s.state === PodSandboxState.SANDBOX_READY)) return;
      if (performance.now() > deadline)
        throw new Error(`sandbox of ${uid} still ready after ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  };
  const churnOne = async (i) => {
    const name = `soak-${String(i).padStart(3, '0')}-${nodeName}`;
    const tDelete = performance.now();
    // force: a pod whose last cycle failed after its file was removed is simply written again.
    fs.rmSync(path.join(manifestDir, fileName(i)), { force: true });
    await waitSandboxesStopped(uids[i], 120_000);
    const killS = (performance.now() - tDelete) / 1000;
    generation[i]++;
    let startedAt;
    const started = new Promise((resolve) => {
      startedAt = resolve;
    });
    startedWaiters.set(name, (epochMs) => startedAt(epochMs));
    const createEpoch = Date.now();
    const tCreate = performance.now();
    const pod = writePod(i, generation[i]);
    uids[i] = pod.metadata.uid;
    const tRunning = await waitRunning(pod.metadata.uid, 120_000);
    const startedEpoch = await Promise.race([started, sleep(5_000).then(() => undefined)]);
    startedWaiters.delete(name);
    cycles.push({
      t: tCreate - churnStart,
      killS,
      runningS: (tRunning - tCreate) / 1000,
      startedS: startedEpoch === undefined ? Number.NaN : (startedEpoch - createEpoch) / 1000,
    });
  };
  let next = 0;
  // A runtime that died (containerd 1.6.20 once crashed with a concurrent map iteration in
  // ListPodSandbox) fails every cycle at once: stop instead of spinning until the churn's end.
  const maxFailuresInARow = 10;
  let failuresInARow = 0;
  const worker = async () => {
    while (performance.now() - churnStart < churnMs) {
      if (failuresInARow >= maxFailuresInARow)
        throw new Error(
          `churn stopped: ${failuresInARow} re-creations in a row failed; last: ${failures.at(-1)}`,
        );
      const i = next++ % N;
      try {
        await churnOne(i);
        failuresInARow = 0;
      } catch (err) {
        failuresInARow++;
        failures.push(`pod ${i}: ${err.message}`);
        log(`churn of pod ${i} failed: ${err.message}`);
      }
      if (cycles.length % 50 === 0 && cycles.length) {
        const s = samples.at(-1);
        log(
          `${cycles.length} re-creations, ${(s.rss / 2 ** 20).toFixed(1)} MiB RSS, ${s.fds} fds, ` +
            `${s.mounts} mounts, ${s.podDirs} pod dirs`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  clearInterval(sampler);
  sample();
  const churnS = (performance.now() - churnStart) / 1000;
  const cores = (cpuSeconds(pid) - cpu0) / churnS;
  log(`churn done: ${cycles.length} re-creations in ${churnS.toFixed(0)} s, ${failures.length} failed`);
  const runningAtEnd = (await agent.pods()).filter((p) => p.status?.phase === 'Running').length;

  // --- strays ---------------------------------------------------------------------------------
  for (const f of entries(manifestDir)) fs.rmSync(path.join(manifestDir, f));
  const tRemove = performance.now();
  const strays = async () => {
    const sandboxes = (await runtime.listPodSandbox({})).items.length;
    const containers = (await runtime.listContainers({})).containers.length;
    return {
      sandboxes,
      containers,
      mounts: mountsUnder(rootDir),
      podDirs: entries(path.join(rootDir, 'pods')),
      logDirs: entries(path.join(rootDir, 'logs', 'pods')),
      cgroups: cgroupsUnderRoot(),
    };
  };
  const total = (s) =>
    s.sandboxes + s.containers + s.mounts.length + s.podDirs.length + s.logDirs.length + s.cgroups.length;
  let left = await strays();
  while (total(left) > 0 && performance.now() - tRemove < 180_000) {
    await sleep(2_000);
    left = await strays();
  }
  const cleanS = (performance.now() - tRemove) / 1000;
  log(`strays after ${cleanS.toFixed(0)} s: ${JSON.stringify(left).slice(0, 2000)}`);
  const problems = agent.problems;
  await agent.kill('SIGTERM');
  agent = undefined;

  // --- the floor, after -----------------------------------------------------------------------
  await removeSandboxes(runtime, ours);
  const floorAfter = await floorLatencies(configs.slice(0, floorPods), inFlight);
  await removeSandboxes(runtime, ours);
  log(`floor after: median ${median(floorAfter).toFixed(3)} s per pod with ${inFlight} in flight`);

  // --- measures -------------------------------------------------------------------------------
  const inWindow = (from, to) => samples.filter((s) => s.t >= from && s.t <= to);
  const base = inWindow(warmupMs, warmupMs + windowMs);
  const end = inWindow(churnMs - windowMs, Number.POSITIVE_INFINITY);
  const rssBase = median(base.map((s) => s.rss));
  const rssEnd = median(end.map((s) => s.rss));
  const fdBase = median(base.map((s) => s.fds));
  const fdEnd = median(end.map((s) => s.fds));
  const after = samples.filter((s) => s.t >= warmupMs);
  const rssSlopeMiBPerHour = slope(after.map((s) => [s.t / 3_600_000, s.rss / 2 ** 20]));
  const fdSlopePerHour = slope(after.map((s) => [s.t / 3_600_000, s.fds]));
  const floorMedian = median([...floorBefore, ...floorAfter]);
  const running = cycles.map((c) => c.runningS);
  const startedTimes = cycles.map((c) => c.startedS).filter((x) => Number.isFinite(x));
  const kills = cycles.map((c) => c.killS);
  const strayCount = total(left);
  // The agent's warnings and errors by message, most frequent first.
  const byMsg = new Map();
  for (const p of problems) byMsg.set(p.msg, (byMsg.get(p.msg) ?? 0) + 1);
  const problemsNote = [...byMsg]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([m, n]) => `${n}× ${JSON.stringify(String(m).slice(0, 120))}`)
    .join(', ');
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  const windowNote =
    `${minutes} min of churn with ${inFlight} pods at a time (${cycles.length} re-creations of ${N} pods, ` +
    `about ${(cycles.length / N).toFixed(1)} each); samples every ${sampleMs / 1000} s, nothing forced in ` +
    `the agent; baseline = median of the ${base.length} samples from ${(warmupMs / 60_000).toFixed(1)} to ` +
    `${((warmupMs + windowMs) / 60_000).toFixed(1)} min (after warm-up), end = median of the last ` +
    `${end.length} (last ${(windowMs / 60_000).toFixed(1)} min)`;
  const measures = [
    {
      name: 'soak.rssGrowth.pct',
      value: round(((rssEnd - rssBase) / rssBase) * 100, 2),
      unit: '%',
      target: 5,
      note:
        `VmRSS ${mib(rssBase)} MiB at baseline, ${mib(rssEnd)} MiB at the end (min ${mib(Math.min(...after.map((s) => s.rss)))}, ` +
        `max ${mib(Math.max(...after.map((s) => s.rss)))}; least-squares slope after warm-up ` +
        `${rssSlopeMiBPerHour.toFixed(1)} MiB/h); ${windowNote}; agent CPU ${cores.toFixed(3)} cores during the churn`,
    },
    {
      name: 'soak.fdGrowth',
      value: fdEnd - fdBase,
      unit: 'fds',
      target: 10,
      note:
        `open fds (/proc/<pid>/fd) ${fdBase} at baseline, ${fdEnd} at the end (max ` +
        `${Math.max(...after.map((s) => s.fds))}; slope ${fdSlopePerHour.toFixed(1)}/h); same windows`,
    },
    {
      name: 'soak.strays',
      value: strayCount,
      unit: 'count',
      target: 0,
      note:
        `${cleanS.toFixed(0)} s after every pod file was removed: ${left.sandboxes} sandboxes and ` +
        `${left.containers} containers in the CRI, ${left.mounts.length} mounts under the root directory, ` +
        `${left.podDirs.length} pod directories, ${left.logDirs.length} pod log directories, ` +
        `${left.cgroups.length} cgroups under --cgroup-root (the kubepods/QoS levels excepted)`,
    },
    {
      name: 'soak.recreate.ratio',
      value: round(quantile(running, 0.95) / floorMedian, 2),
      unit: 'ratio',
      note:
        `p95 of re-created file → pod Running in /pods (median ${median(running).toFixed(3)} s, p95 ` +
        `${quantile(running, 0.95).toFixed(3)} s, max ${Math.max(...running).toFixed(3)} s over ` +
        `${running.length}; includes the PLEG relist, every 1 s, and the 100 ms poll) over the floor's ` +
        `median (${floorMedian.toFixed(3)} s: RunPodSandbox+CreateContainer+StartContainer, ${inFlight} ` +
        `in flight, ${floorPods} pods before the agent ran, median ${median(floorBefore).toFixed(3)} s, and ${floorPods} ` +
        `after, ${median(floorAfter).toFixed(3)} s); the old pod was stopped first (file removed → ` +
        `sandbox not ready: median ${median(kills).toFixed(2)} s, grace 1 s)`,
    },
    {
      name: 'soak.recreate.startedRatio',
      value: round(quantile(startedTimes, 0.95) / floorMedian, 2),
      unit: 'ratio',
      note:
        `p95 of re-created file → the agent's "Started" event (median ${median(startedTimes).toFixed(3)} s, ` +
        `p95 ${quantile(startedTimes, 0.95).toFixed(3)} s over ${startedTimes.length}; event times are ` +
        `the agent's log's, ms resolution) over the same floor median: the agent's part without the relist`,
    },
    {
      name: 'soak.recreate.notRunning',
      value: failures.length + (N - runningAtEnd),
      unit: 'count',
      target: 0,
      note:
        `re-creations not Running within 2 min (${failures.length}) plus pods not Running when the churn ` +
        `ended (${N - runningAtEnd} of ${N})${failures.length ? `; first: ${failures[0]}` : ''}; ` +
        `${problems.length} warnings/errors logged (the first 200 kept)${problems.length ? `: ${problemsNote}` : ''}`,
    },
  ];
  console.log(JSON.stringify(measures));
} finally {
  if (agent) await agent.kill();
  await removeSandboxes(runtime, ours).catch((err) => log(`clean-up failed: ${err.message}`));
  runtime.close();
  imageService.close();
  for (const m of mountsUnder(rootDir).reverse()) {
    try {
      execFileSync('umount', [m]);
    } catch {}
  }
  for (const c of entries(cgroupfs)) removeCgroupTree(path.join(cgroupfs, c, cgroupRoot));
  fs.rmSync(work, { recursive: true, force: true });
}
