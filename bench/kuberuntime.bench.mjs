// kuberuntime benchmarks. Needs the private containerd (as root):
//   npm run build && source scripts/containerd/env.sh && bash scripts/containerd/up.sh
//   node scripts/bench.mjs kuberuntime
// - kuberuntime.syncPod.ratio: syncPod of a new one-container pod against the raw CRI call
//   sequence it makes (RunPodSandbox, PodSandboxStatus, ImageStatus, CreateContainer,
//   StartContainer) with identical configs, medians of alternating runs in the same process.
// - kuberuntime.syncPod110.ratio: the same for 110 pods, 10 at a time.
// - kuberuntime.computePodActions.perSec: computePodActions over a 3-container running pod.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import {
  computePodActions,
  generateContainerConfig,
  hashContainer,
  KubeGenericRuntimeManager,
  newCrashLoopBackOff,
} from '@kubelet-kit/kuberuntime';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error(
    'kuberuntime bench: KUBELET_KIT_CRI_ENDPOINT is not set; start scripts/containerd/up.sh first',
  );
  process.exit(1);
}
const BUSYBOX = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-kuberuntime-bench-'));
const rs = new RuntimeServiceClient({ endpoint });
const is = new ImageServiceClient({ endpoint });
const manager = new KubeGenericRuntimeManager({
  runtimeService: new RuntimeServiceClient({ endpoint }),
  imageService: new ImageServiceClient({ endpoint }),
  rootDirectory: path.join(work, 'root'),
  podLogsRootDirectory: path.join(work, 'logs'),
  nodeName: 'bench',
});
const backOff = newCrashLoopBackOff();
const run = Math.random().toString(16).slice(2, 8);
let seq = 0;

function pod() {
  seq++;
  return {
    metadata: { name: `bench-${run}-${seq}`, namespace: 'kuberuntime-bench', uid: `krb-${run}-${seq}` },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'c', image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  };
}

const emptyStatus = (p) => ({
  id: p.metadata.uid,
  name: p.metadata.name,
  namespace: p.metadata.namespace,
  ips: [],
  containerStatuses: [],
  sandboxStatuses: [],
  timestamp: Date.now(),
});

async function viaManager(p) {
  const t0 = performance.now();
  const r = await manager.syncPod({ pod: p, podStatus: emptyStatus(p), pullSecrets: [], backOff });
  const ms = performance.now() - t0;
  const failed = r.syncResults.filter((x) => x.error);
  if (failed.length) throw new Error(`syncPod failed: ${JSON.stringify(failed)}`);
  return ms;
}

/** The configs syncPod would send, made beforehand (untimed) with the same generators. */
async function rawConfigs(p) {
  const sandboxConfig = manager.generatePodSandboxConfig(p, 0);
  fs.mkdirSync(sandboxConfig.logDirectory, { recursive: true });
  const image = await is.imageStatus({ image: { image: BUSYBOX } });
  const { config } = await generateContainerConfig(p, p.spec.containers[0], {
    containerType: 'container',
    restartCount: 0,
    imageRef: image.image.id,
    imageUser: { username: image.image.username, ...(image.image.uid ? { uid: image.image.uid.value } : {}) },
    env: { nodeName: 'bench', podIP: '', podIPs: [], hostIPs: [] },
    volumes: new Map(),
    podDir: path.join(work, 'root', 'pods', p.metadata.uid),
    podLogsRootDirectory: path.join(work, 'logs'),
    memoryCapacity: os.totalmem(),
  });
  return { sandboxConfig, config };
}

async function viaRaw(cfg) {
  const t0 = performance.now();
  const { podSandboxId } = await rs.runPodSandbox({ config: cfg.sandboxConfig });
  await rs.podSandboxStatus({ podSandboxId });
  await is.imageStatus({ image: { image: BUSYBOX } });
  const { containerId } = await rs.createContainer({
    podSandboxId,
    config: cfg.config,
    sandboxConfig: cfg.sandboxConfig,
  });
  await rs.startContainer({ containerId });
  return performance.now() - t0;
}

async function cleanup() {
  const { items } = await rs.listPodSandbox({});
  await Promise.all(
    items
      .filter((s) => s.metadata?.namespace === 'kuberuntime-bench')
      .map(async (s) => {
        await rs.stopPodSandbox({ podSandboxId: s.id }).catch(() => {});
        await rs.removePodSandbox({ podSandboxId: s.id }).catch(() => {});
      }),
  );
}

/** Retries a measurement that another user of the shared runtime disturbed (a sandbox removed under us). */
async function retrying(fn, attempts = 3) {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts) throw err;
      console.error(`kuberuntime bench: retrying after ${err.message}`);
      await cleanup();
    }
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function pool(items, limit, fn) {
  const out = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

try {
  await cleanup();
  // Warm-up: runtime name, image cache, connections.
  await retrying(() => viaManager(pod()));
  await retrying(async () => viaRaw(await rawConfigs(pod())));
  await cleanup();

  const ROUNDS = 15;
  const mTimes = [];
  const rTimes = [];
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so drift in the runtime favours neither.
    const m = () => retrying(() => viaManager(pod()));
    const r = () => retrying(async () => viaRaw(await rawConfigs(pod())));
    if (i % 2 === 0) {
      mTimes.push(await m());
      rTimes.push(await r());
    } else {
      rTimes.push(await r());
      mTimes.push(await m());
    }
    await cleanup();
  }
  const ratio1 = median(mTimes) / median(rTimes);

  const N = 110;
  const CONCURRENCY = 10;
  // Two rounds each, in the order raw, manager, manager, raw, so drift favours neither.
  const round110 = (kind) => retrying(() => once110(kind));
  const once110 = async (kind) => {
    const items = [];
    for (let i = 0; i < N; i++) items.push(kind === 'raw' ? await rawConfigs(pod()) : pod());
    const t = performance.now();
    await pool(items, CONCURRENCY, (x) => (kind === 'raw' ? viaRaw(x) : viaManager(x)));
    const ms = performance.now() - t;
    console.error(`kuberuntime bench: 110 pods via ${kind}: ${ms.toFixed(0)} ms`);
    await cleanup();
    return ms;
  };
  let raw110 = await round110('raw');
  let mgr110 = await round110('manager');
  mgr110 += await round110('manager');
  raw110 += await round110('raw');
  const ratio110 = mgr110 / raw110;

  // computePodActions over a running 3-container pod.
  const p = pod();
  p.spec.containers = ['a', 'b', 'c'].map((name) => ({ name, image: BUSYBOX }));
  const status = {
    ...emptyStatus(p),
    ips: ['10.0.0.1'],
    sandboxStatuses: [
      {
        id: 'sb',
        name: p.metadata.name,
        namespace: p.metadata.namespace,
        uid: p.metadata.uid,
        attempt: 0,
        state: 'ready',
        createdAt: 1,
        ips: ['10.0.0.1'],
        hostNetwork: false,
        labels: {},
        annotations: {},
      },
    ],
    containerStatuses: p.spec.containers.map((c, i) => ({
      id: { type: 'containerd', id: `id${i}` },
      name: c.name,
      state: 'running',
      createdAt: 2,
      startedAt: 2,
      finishedAt: 0,
      exitCode: 0,
      image: c.image,
      imageId: '',
      hash: hashContainer(c),
      restartCount: 0,
      reason: '',
      message: '',
    })),
  };
  const probes = { liveness: { get: () => 'Success' }, startup: { get: () => 'Success' } };
  let calls = 0;
  const end = performance.now() + 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) computePodActions(p, status, probes);
    calls += 1000;
  }
  const perSec = calls;

  console.error(
    `kuberuntime bench: 1 pod median ${median(mTimes).toFixed(1)} ms vs raw ${median(rTimes).toFixed(1)} ms; ` +
      `110 pods ${mgr110.toFixed(0)} ms vs raw ${raw110.toFixed(0)} ms; computePodActions ${perSec}/s`,
  );
  console.log(
    JSON.stringify([
      {
        name: 'kuberuntime.syncPod.ratio',
        value: Number(ratio1.toFixed(3)),
        unit: 'x',
        target: 1.05,
        note: `median of ${ROUNDS}: syncPod ${median(mTimes).toFixed(1)} ms / raw CRI ${median(rTimes).toFixed(1)} ms`,
      },
      {
        name: 'kuberuntime.syncPod110.ratio',
        value: Number(ratio110.toFixed(3)),
        unit: 'x',
        target: 1.05,
        note: `110 pods, ${CONCURRENCY} at a time, 2 rounds each: ${mgr110.toFixed(0)} ms / raw ${raw110.toFixed(0)} ms`,
      },
      {
        name: 'kuberuntime.computePodActions.perSec',
        value: perSec,
        unit: 'calls/s',
        note: '3 running containers, probes Success',
      },
    ]),
  );
} finally {
  await cleanup().catch(() => {});
  rs.close();
  is.close();
  manager.close();
  fs.rmSync(work, { recursive: true, force: true });
}
