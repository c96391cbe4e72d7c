// Volume manager: time to mount a pod with a 10-item configMap volume, and to re-project an
// update of that configMap into the mounted volume (ReprocessPod through WaitForAttachAndMount);
// and a burst: 10,000 pods with an emptyDir volume each, all waited on as they appear (every API
// pod has a token volume), beside the directories made directly (issue #28: flat cost per pod).
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BasicVolumeManager } from '@kubelet-kit/volume-manager';
import { FakeObjectGetter } from '@kubelet-kit/volume-manager/testing';
import { benchWorkDir } from './support/work-dir.mjs';

const ROUNDS = 30;
const root = await fs.mkdtemp(path.join(os.tmpdir(), 'vm-bench-'));
const getter = new FakeObjectGetter();
const pods = [];
const vm = new BasicVolumeManager({ rootDirectory: root, getPods: () => pods, objectGetter: getter });
vm.start();

const keys = Array.from({ length: 10 }, (_, i) => `key-${i}`);
function configMap(name, version) {
  return {
    metadata: { name, namespace: 'bench' },
    data: Object.fromEntries(keys.map((k) => [k, `${k}=${version}\n`.repeat(20)])),
  };
}
function pod(i) {
  return {
    metadata: { uid: `uid-${i}`, name: `pod-${i}`, namespace: 'bench' },
    spec: {
      containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'config', mountPath: '/config' }] }],
      volumes: [
        {
          name: 'config',
          configMap: {
            name: `cm-${i}`,
            items: keys.map((k, j) => ({ key: k, path: `dir${j % 3}/${k}`, mode: 0o440 })),
          },
        },
      ],
    },
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const mountTimes = [];
const updateTimes = [];
for (let i = 0; i < ROUNDS; i++) {
  const p = pod(i);
  getter.setConfigMap(configMap(`cm-${i}`, 1));
  pods.push(p);
  const t0 = performance.now();
  await vm.waitForAttachAndMount(p);
  mountTimes.push(performance.now() - t0);

  // Item 9 (key-9) lives in dir0 (9 % 3).
  const file = path.join(vm.getMountedVolumesForPod(`uid-${i}`).get('config').hostPath, 'dir0', 'key-9');
  const want = 'key-9=2\n'.repeat(20);
  getter.setConfigMap(configMap(`cm-${i}`, 2));
  const t1 = performance.now();
  await vm.waitForAttachAndMount(p);
  // The re-projection lands shortly after the wait; poll the file the container would read.
  for (;;) {
    const text = await fs.readFile(file, 'utf8').catch(() => '');
    if (text === want) break;
    await new Promise((r) => setImmediate(r));
  }
  updateTimes.push(performance.now() - t1);
}

await vm.stop();
await fs.rm(root, { recursive: true, force: true });

const BURST = Number(process.env.VOLUME_BENCH_BURST ?? 10_000);
const emptyDirPod = (i) => ({
  metadata: { uid: `burst-${i}`, name: `burst-${i}`, namespace: 'bench' },
  spec: {
    containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'scratch', mountPath: '/s' }] }],
    volumes: [{ name: 'scratch', emptyDir: {} }],
  },
});
// The floor: the emptyDir plugin's own work, each pod's volume directory made (mode 0777, as
// upstream's), all at once. Both roots stay until the end, each in a block group of its own (see
// work-dir.mjs): a root made where the other's 40,000 directories were just deleted is slow.
const burstWork = benchWorkDir('vm-bench-burst-');
async function burstFloor(label) {
  const floorRoot = await fs.mkdtemp(path.join(burstWork, `floor-${label}-`));
  const start = performance.now();
  await Promise.all(
    Array.from({ length: BURST }, async (_, i) => {
      const dir = path.join(floorRoot, 'pods', `burst-${i}`, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
      await fs.mkdir(dir, { recursive: true });
      await fs.chmod(dir, 0o777);
    }),
  );
  return (performance.now() - start) / 1000;
}
// Before and after the burst; the faster of the two is the floor (this disk's speed drifts).
const floorBefore = await burstFloor('before');

const burstRoot = await fs.mkdtemp(path.join(burstWork, 'agent-'));
const burstPods = [];
const burstVm = new BasicVolumeManager({ rootDirectory: burstRoot, getPods: () => burstPods });
burstVm.start();
for (let i = 0; i < BURST; i++) burstPods.push(emptyDirPod(i));
const t = performance.now();
await Promise.all(burstPods.map((p) => burstVm.waitForAttachAndMount(p)));
const burstSeconds = (performance.now() - t) / 1000;
await burstVm.stop();
const floorAfter = await burstFloor('after');
const burstFloorSeconds = Math.min(floorBefore, floorAfter);
await fs.rm(burstWork, { recursive: true, force: true });

console.log(
  JSON.stringify([
    {
      name: 'volume.burst10k.seconds',
      value: Number(burstSeconds.toFixed(2)),
      unit: 's',
      note: `${BURST} pods with an emptyDir volume each, all waited on (WaitForAttachAndMount) as they appear; their directories made directly, all at once, just before and just after: ${floorBefore.toFixed(2)} s and ${floorAfter.toFixed(2)} s`,
    },
    {
      name: 'volume.burst10k.ratio',
      value: Number((burstSeconds / burstFloorSeconds).toFixed(2)),
      unit: 'x',
      note: 'the burst over the faster of its two floors, the same directories made directly',
    },
    { name: 'volume.mount10.ms', value: Number(median(mountTimes).toFixed(2)), unit: 'ms', target: 200 },
    { name: 'volume.update10.ms', value: Number(median(updateTimes).toFixed(2)), unit: 'ms', target: 200 },
  ]),
);
