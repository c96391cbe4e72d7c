// Runs one pod through @kubelet-kit/kuberuntime alone (no pod workers, no status manager):
// a sync every second, printing the pod's containers whenever they change, then kills the pod
// and garbage-collects what it left.
//
//   npm run build
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh   # as root
//   node examples/runtime-only/main.mjs [pod.yaml] [seconds]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  convertPodStatusToRunningPod,
  KubeGenericRuntimeManager,
  newCrashLoopBackOff,
} from '@kubelet-kit/kuberuntime';
import YAML from 'yaml';

const here = path.dirname(new URL(import.meta.url).pathname);
const file = process.argv[2] ?? path.join(here, 'pod.yaml');
const seconds = Number(process.argv[3] ?? 30);
const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT ?? 'unix:///run/kubelet-kit-test/containerd.sock';
const pod = YAML.parse(fs.readFileSync(file, 'utf8'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-runtime-only-'));

// Garbage collection asks which pods are gone: ours, once the demo is over.
let finished = false;
const gone = (uid) => finished && uid === pod.metadata.uid;
const manager = new KubeGenericRuntimeManager({
  endpoint,
  podStateProvider: { shouldPodContentBeRemoved: gone, shouldPodRuntimeBeRemoved: gone },
  rootDirectory: path.join(work, 'root'),
  podLogsRootDirectory: path.join(work, 'logs'),
  recorder: { event: (_ref, type, reason, message) => console.log(`  event ${type} ${reason}: ${message}`) },
});
// Short backoff so the demo shows a few restarts.
const backOff = newCrashLoopBackOff({ initialMs: 2_000, maxMs: 8_000 });
const ids = { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace };

let last = '';
function show(status) {
  const lines = status.containerStatuses.map(
    (c) =>
      `  ${c.name.padEnd(8)} ${c.state.padEnd(8)} restarts=${c.restartCount}` +
      (c.state === 'exited'
        ? ` exit=${c.exitCode} ${c.reason}${c.message ? ` "${c.message.trim()}"` : ''}`
        : ''),
  );
  const text = `sandbox ${status.sandboxStatuses[0]?.state ?? 'none'} ip=${status.ips[0] ?? '-'}\n${lines.join('\n')}`;
  if (text !== last) console.log(`[${new Date().toISOString()}] ${text}`);
  last = text;
}

const stopAt = Date.now() + seconds * 1000;
try {
  while (Date.now() < stopAt) {
    const podStatus = await manager.getPodStatus(ids);
    show(podStatus);
    const result = await manager.syncPod({ pod, podStatus, pullSecrets: [], backOff });
    for (const r of result.syncResults) {
      if (r.error) console.log(`  ${r.action} ${r.target}: ${r.error} ${r.message}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
} finally {
  const status = await manager.getPodStatus(ids);
  const killed = await manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(status) });
  console.log(
    'killPod:',
    killed.syncResults.map((r) => `${r.action}(${r.target})${r.error ? ` ${r.error}` : ''}`).join(', '),
  );
  show(await manager.getPodStatus(ids));
  finished = true;
  await manager.garbageCollect({
    policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 },
    allSourcesReady: true,
    evictNonDeletedPods: true,
  });
  const left = await manager.getPodStatus(ids);
  console.log(
    `after GC: ${left.containerStatuses.length} containers, ${left.sandboxStatuses.length} sandboxes`,
  );
  manager.close();
  fs.rmSync(work, { recursive: true, force: true });
}
