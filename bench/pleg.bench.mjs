// PLEG relist benchmark. Needs the private containerd (as root):
//   npm run build && source scripts/containerd/env.sh && bash scripts/containerd/up.sh
//   node --expose-gc scripts/bench.mjs pleg
// 100 pods × 5 busybox containers (500 containers, 100 sandboxes) are made straight through the
// CRI, then a GenericPLEG over KubeGenericRuntimeManager relists them:
// - pleg.relist500.ms: median relist in steady state (nothing changes between relists);
// - pleg.relist500.criFloor.ms: median of the CRI calls such a relist makes (ListPodSandbox and
//   ListContainers, both at once, as getPods does) through the same client, alternating with it;
// - pleg.relist500.changed.ms: median relist after 3 containers (in 3 pods) were stopped, which
//   also reads those 3 pods' statuses; pleg.relist500.changed.criFloor.ms: the same lists plus
//   the calls each changed pod's status read makes (its two label-filtered lists and the changed
//   container's ContainerStatus), made raw.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { KubeGenericRuntimeManager } from '@kubelet-kit/kuberuntime';
import { GenericPLEG } from '@kubelet-kit/pleg';
import { buildFloorConfigs, removeSandboxes, runFloor } from './support/cri-floor.mjs';
import { busyboxImage } from './support/pods.mjs';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
if (!endpoint) {
  console.error('pleg bench: KUBELET_KIT_CRI_ENDPOINT is not set; start scripts/containerd/up.sh first');
  process.exit(1);
}
const PODS = 100;
const CONTAINERS_PER_POD = 5;
const ROUNDS = 60;
const CHANGED_ROUNDS = 12;
const CHANGES = 3;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-pleg-bench-'));
const rs = new RuntimeServiceClient({ endpoint });
const is = new ImageServiceClient({ endpoint });
// PLEG_BENCH_KEEP=<id> (for profiling) keeps the pods afterwards and reuses them when they exist.
const keep = process.env.PLEG_BENCH_KEEP;
const run = keep ?? Math.random().toString(16).slice(2, 8);
const namespace = `pleg-bench-${run}`;
const mine = (s) => s.metadata?.namespace === namespace;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const gc = () => globalThis.gc?.();

function benchPod(i) {
  return {
    metadata: { name: `p${i}`, namespace, uid: `plb-${run}-${i}` },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      containers: Array.from({ length: CONTAINERS_PER_POD }, (_, c) => ({
        name: `c${c}`,
        image: busyboxImage,
        imagePullPolicy: 'Never',
        command: ['sleep', '3600'],
      })),
    },
  };
}

/**
 * The raw calls getPodStatus makes for a pod one of whose containers changed: its sandboxes and
 * containers listed by its UID label, and that container's status (the manager keeps the others'
 * statuses while their state holds).
 */
async function rawPodStatus(uid, changedContainerId) {
  const selector = { 'io.kubernetes.pod.uid': uid };
  await Promise.all([
    rs.listPodSandbox({ filter: { labelSelector: selector } }),
    rs.listContainers({ filter: { labelSelector: selector } }),
  ]);
  await rs.containerStatus({ containerId: changedContainerId });
}

const rawLists = () => Promise.all([rs.listPodSandbox({}), rs.listContainers({})]);

const manager = new KubeGenericRuntimeManager({
  runtimeService: rs,
  imageService: is,
  rootDirectory: path.join(work, 'root'),
  podLogsRootDirectory: path.join(work, 'root', 'logs', 'pods'),
  nodeName: 'pleg-bench',
});
const pleg = new GenericPLEG({ runtime: manager, channelCapacity: 0 });
let events = 0;
pleg.watch(() => events++);

try {
  const pods = Array.from({ length: PODS }, (_, i) => benchPod(i));
  const configs = await buildFloorConfigs({
    pods,
    imageService: is,
    rootDir: path.join(work, 'root'),
    nodeName: 'pleg-bench',
    nodeIPs: ['127.0.0.1'],
  });
  for (const { sandboxConfig } of configs) fs.mkdirSync(sandboxConfig.logDirectory, { recursive: true });
  const existing = (await rs.listPodSandbox({})).items.filter(mine).length;
  const made = existing === PODS ? 0 : await runFloor(rs, configs, 8);
  const listed = await rawLists();
  const total = listed[1].containers.length;
  console.error(
    `pleg bench: made ${PODS} pods × ${CONTAINERS_PER_POD} containers in ${made.toFixed(1)} s; ` +
      `runtime lists ${listed[0].items.length} sandboxes, ${total} containers`,
  );

  // The first relist reads every pod; then warm both paths.
  await pleg.relist();
  for (let i = 0; i < 10; i++) {
    await pleg.relist();
    await rawLists();
  }

  const relistMs = [];
  const floorMs = [];
  const before = events;
  for (let i = 0; i < ROUNDS; i++) {
    gc();
    let t = performance.now();
    await pleg.relist();
    relistMs.push(performance.now() - t);
    gc();
    t = performance.now();
    await rawLists();
    floorMs.push(performance.now() - t);
  }
  if (events !== before) throw new Error(`steady relists sent ${events - before} events`);

  // A few changes per relist: stop one running container in each of CHANGES pods.
  const changedMs = [];
  const changedFloorMs = [];
  let victim = 0;
  for (let r = 0; r < CHANGED_ROUNDS; r++) {
    const running = (await rs.listContainers({ filter: { state: { state: 1 } } })).containers.filter(
      (c) => c.labels['io.kubernetes.pod.namespace'] === namespace,
    );
    const chosen = [];
    const seenPods = new Set();
    for (const c of running.slice(victim)) {
      const uid = c.labels['io.kubernetes.pod.uid'];
      if (seenPods.has(uid)) continue;
      seenPods.add(uid);
      chosen.push(c);
      if (chosen.length === CHANGES) break;
    }
    victim += 7;
    await Promise.all(chosen.map((c) => rs.stopContainer({ containerId: c.id, timeout: 0 })));
    const sent = events;
    gc();
    let t = performance.now();
    await pleg.relist();
    changedMs.push(performance.now() - t);
    if (events - sent !== chosen.length) throw new Error(`changed relist sent ${events - sent} events`);
    gc();
    t = performance.now();
    await rawLists();
    await Promise.all(chosen.map((c) => rawPodStatus(c.labels['io.kubernetes.pod.uid'], c.id)));
    changedFloorMs.push(performance.now() - t);
  }

  const relist = median(relistMs);
  const floor = median(floorMs);
  const changed = median(changedMs);
  const changedFloor = median(changedFloorMs);
  console.error(
    `pleg bench: relist ${relist.toFixed(2)} ms vs lists ${floor.toFixed(2)} ms (p90 ${relistMs
      .sort((a, b) => a - b)
      [Math.floor(ROUNDS * 0.9)].toFixed(2)} ms); with ${CHANGES} changes ${changed.toFixed(2)} ms ` +
      `vs raw ${changedFloor.toFixed(2)} ms`,
  );
  const shape = `${PODS} pods × ${CONTAINERS_PER_POD} containers on containerd`;
  console.log(
    JSON.stringify([
      {
        name: 'pleg.relist500.ms',
        value: Number(relist.toFixed(2)),
        unit: 'ms',
        target: 20,
        note: `median of ${ROUNDS} steady relists, ${shape}`,
      },
      {
        name: 'pleg.relist500.criFloor.ms',
        value: Number(floor.toFixed(2)),
        unit: 'ms',
        note: `ListPodSandbox + ListContainers at once, same client, alternating with the relists`,
      },
      {
        name: 'pleg.relist500.changed.ms',
        value: Number(changed.toFixed(2)),
        unit: 'ms',
        note: `median of ${CHANGED_ROUNDS} relists each after ${CHANGES} containers in ${CHANGES} pods stopped`,
      },
      {
        name: 'pleg.relist500.changed.criFloor.ms',
        value: Number(changedFloor.toFixed(2)),
        unit: 'ms',
        note: `the lists plus each changed pod's label-filtered lists and the stopped container's status`,
      },
    ]),
  );
} finally {
  pleg.stop();
  if (!keep) await removeSandboxes(rs, mine).catch((err) => console.error(`pleg bench: cleanup: ${err}`));
  manager.close();
  rs.close();
  is.close();
  fs.rmSync(work, { recursive: true, force: true });
}
