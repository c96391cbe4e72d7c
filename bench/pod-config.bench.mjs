// PodConfig throughput and memory: 10,000 pods through the merge, consumed as an async iterable.
// Run with `node --expose-gc bench/pod-config.bench.mjs` after building @kubelet-kit/pod-config.
import { PodConfig, setPodDefaults } from '@kubelet-kit/pod-config';

const N = 10_000;

function makePod(i, image = 'registry.example/app:1.0') {
  return setPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `pod-${i}`,
      namespace: `ns-${i % 50}`,
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
      labels: { app: `app-${i % 100}`, tier: 'backend' },
      annotations: { 'example.com/owner': 'team-a' },
    },
    spec: {
      nodeName: 'node-1',
      containers: [
        {
          name: 'app',
          image,
          ports: [{ name: 'http', containerPort: 8080 }],
          env: [{ name: 'MODE', value: 'prod' }],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
          readinessProbe: { httpGet: { path: '/ready', port: 'http' } },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  });
}

async function throughput() {
  const config = new PodConfig({ mode: 'incremental' });
  const sink = config.channel('api');
  const pods = Array.from({ length: N }, (_, i) => makePod(i));
  const changed = pods.map((_, i) => makePod(i, 'registry.example/app:2.0'));
  const withStatus = changed.map((p) => ({ ...p, status: { phase: 'Running' } }));
  const total = N * 4;
  let received = 0;
  const consumer = (async () => {
    for await (const update of config.updates()) {
      received += update.pods.length;
      if (received >= total) break;
    }
  })();
  const start = performance.now();
  // Each source update carries one pod: ADD, UPDATE (spec), RECONCILE (status only), REMOVE.
  for (const p of pods) await sink({ op: 'ADD', pods: [p], source: 'api' });
  for (const p of changed) await sink({ op: 'UPDATE', pods: [p], source: 'api' });
  for (const p of withStatus) await sink({ op: 'UPDATE', pods: [p], source: 'api' });
  for (const p of pods) await sink({ op: 'REMOVE', pods: [p], source: 'api' });
  await consumer;
  const seconds = (performance.now() - start) / 1000;
  if (received !== total) throw new Error(`received ${received} of ${total}`);
  return total / seconds;
}

async function setThroughput() {
  const config = new PodConfig({ mode: 'incremental', bufferUpdates: false });
  const sink = config.channel('file');
  const pods = Array.from({ length: N }, (_, i) => makePod(i));
  const start = performance.now();
  await sink({ op: 'SET', pods, source: 'file' });
  // An unchanged full SET, as a file source re-lists every 20 s.
  await sink({ op: 'SET', pods, source: 'file' });
  return (2 * N) / ((performance.now() - start) / 1000);
}

function gc() {
  if (!globalThis.gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) globalThis.gc();
}

async function bytesPerPod() {
  gc();
  const before = process.memoryUsage().heapUsed;
  const config = new PodConfig({ mode: 'incremental', bufferUpdates: false });
  const sink = config.channel('api');
  await sink({ op: 'SET', pods: Array.from({ length: N }, (_, i) => makePod(i)), source: 'api' });
  gc();
  const after = process.memoryUsage().heapUsed;
  if (config.mergedState().length !== N) throw new Error('pods missing');
  return (after - before) / N;
}

await throughput(); // warm-up
const perSec = await throughput();
const setPerSec = await setThroughput();
const perPod = await bytesPerPod();
console.error(
  `pod-config bench: ${Math.round(perSec)} single-pod updates/s, ${Math.round(setPerSec)} pods/s in full SETs, ${Math.round(perPod)} B/pod`,
);
console.log(
  JSON.stringify([
    {
      name: 'podConfig.updates.perSec',
      value: Math.round(perSec),
      unit: 'updates/s',
      note: `${N} pods x ADD, UPDATE, RECONCILE, REMOVE, one pod per update, consumed as an async iterable`,
    },
    {
      name: 'podConfig.set.podsPerSec',
      value: Math.round(setPerSec),
      unit: 'pods/s',
      note: `a SET of ${N} pods, then the same SET again`,
    },
    {
      name: 'podConfig.bytesPerPod',
      value: Math.round(perPod),
      unit: 'B',
      note: `heap delta after gc / ${N} stored pods`,
    },
  ]),
);
