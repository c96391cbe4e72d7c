// Volume manager: time to mount a pod with a 10-item configMap volume, and to re-project an
// update of that configMap into the mounted volume (ReprocessPod through WaitForAttachAndMount).
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BasicVolumeManager } from '@kubelet-kit/volume-manager';
import { FakeObjectGetter } from '@kubelet-kit/volume-manager/testing';

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
      containers: [{ name: 'c', image: 'busybox' }],
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
console.log(
  JSON.stringify([
    { name: 'volume.mount10.ms', value: Number(median(mountTimes).toFixed(2)), unit: 'ms', target: 200 },
    { name: 'volume.update10.ms', value: Number(median(updateTimes).toFixed(2)), unit: 'ms', target: 200 },
  ]),
);
