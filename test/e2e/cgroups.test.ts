// End to end: pod and QoS cgroups on real cgroups (kubelet-kit issue #27), on a private
// containerd (cgroupfs driver, cgroup v1 on these machines):
//   npm run build && npx vitest run --project e2e test/e2e/cgroups.test.ts
// A Guaranteed, a Burstable and a BestEffort static pod each run in their pod cgroup under a
// --cgroup-root of the test's own (so no other agent's pods are touched), with upstream's
// values; a pod cgroup of no pod is removed by housekeeping; a restarted agent keeps the pods.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { ContainerState, RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  criEndpoint,
  podNamed,
  removeNodePods,
  runtimeState,
  startAgent,
  waitFor,
} from './support/agent-process.js';

const cgroupfs = '/sys/fs/cgroup';
const v2 = fs.existsSync(path.join(cgroupfs, 'cgroup.controllers'));
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const mi = 1024 * 1024;

function manifest(name: string, resources: object): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: 'main', image: busybox, imagePullPolicy: 'Never', command: ['sh', '-c', sleeper], resources },
      ],
    },
  });
}

/** Removes a cgroup tree deepest first (rmdir only: a cgroup directory has no ordinary files). */
function removeCgroupTree(dir: string): void {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) removeCgroupTree(path.join(dir, e.name));
  }
  try {
    fs.rmdirSync(dir);
  } catch {}
}

describe.skipIf(v2)('pod cgroups on cgroup v1, cgroupfs driver', () => {
  const nodeName = `cg-${randomBytes(3).toString('hex')}`;
  const cgroupRoot = `/kk-e2e-${nodeName}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cgroups-'));
  const manifests = path.join(dir, 'manifests');
  const root = path.join(dir, 'root');
  const args = ['--cgroups-per-qos', '--cgroup-root', cgroupRoot, '--pod-max-pids', '100'];
  let agent: AgentProcess | undefined;
  let runtime: RuntimeServiceClient;
  const podName = (n: string) => `${n}-${nodeName}`;
  const read = (controller: string, rel: string) =>
    fs.readFileSync(path.join(cgroupfs, controller, cgroupRoot, rel), 'utf8').trim();

  beforeAll(async () => {
    runtime = new RuntimeServiceClient({ endpoint: criEndpoint(), timeoutMs: 60_000 });
    fs.mkdirSync(manifests, { recursive: true });
    fs.writeFileSync(
      path.join(manifests, 'guaranteed.json'),
      manifest('guaranteed', {
        requests: { cpu: '250m', memory: '64Mi' },
        limits: { cpu: '250m', memory: '64Mi' },
      }),
    );
    fs.writeFileSync(
      path.join(manifests, 'burstable.json'),
      manifest('burstable', { requests: { cpu: '100m' }, limits: { memory: '128Mi' } }),
    );
    fs.writeFileSync(path.join(manifests, 'besteffort.json'), manifest('besteffort', {}));
    agent = await startAgent({ nodeName, manifestDir: manifests, rootDir: root, args });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await removeNodePods(nodeName);
    runtime?.close();
    // The runtime made container cgroups in every hierarchy.
    for (const c of fs.readdirSync(cgroupfs)) removeCgroupTree(path.join(cgroupfs, c, cgroupRoot));
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  async function runningPods(): Promise<Pod[]> {
    return waitFor(
      'three pods Running',
      async () => {
        const pods = await agent!.pods();
        const all = ['guaranteed', 'burstable', 'besteffort'].map((n) => podNamed(pods, podName(n)));
        return all.every((p) => p?.status?.containerStatuses?.[0]?.ready) ? (all as Pod[]) : undefined;
      },
      90_000,
    );
  }

  /** The cgroup (cpu controller's path) of the pod's container process, from /proc/<pid>/cgroup. */
  async function containerCgroup(pod: Pod): Promise<string> {
    const id = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '');
    const status = await runtime.containerStatus({ containerId: id, verbose: true });
    const pid = (JSON.parse(status.info.info ?? '{}') as { pid?: number }).pid;
    expect(pid).toBeGreaterThan(0);
    const line = fs
      .readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => /^\d+:[^:]*\bcpu\b[^:]*:/.test(l));
    return line?.split(':')[2] ?? '';
  }

  it('runs each QoS class in its pod cgroup with upstream values', async () => {
    const [guaranteed, burstable, besteffort] = await runningPods();
    const uid = (p: Pod | undefined) => p?.metadata?.uid ?? '';
    const gPath = `kubepods/pod${uid(guaranteed)}`;
    const bPath = `kubepods/burstable/pod${uid(burstable)}`;
    const ePath = `kubepods/besteffort/pod${uid(besteffort)}`;
    expect(await containerCgroup(guaranteed!)).toMatch(new RegExp(`^${cgroupRoot}/${gPath}/`));
    expect(await containerCgroup(burstable!)).toMatch(new RegExp(`^${cgroupRoot}/${bPath}/`));
    expect(await containerCgroup(besteffort!)).toMatch(new RegExp(`^${cgroupRoot}/${ePath}/`));

    expect(read('cpu', `${gPath}/cpu.shares`)).toBe('256');
    expect(read('cpu', `${gPath}/cpu.cfs_quota_us`)).toBe('25000');
    expect(read('cpu', `${gPath}/cpu.cfs_period_us`)).toBe('100000');
    expect(read('memory', `${gPath}/memory.limit_in_bytes`)).toBe(String(64 * mi));
    expect(read('pids', `${gPath}/pids.max`)).toBe('100');
    expect(read('cpu', `${bPath}/cpu.shares`)).toBe('102');
    expect(read('cpu', `${bPath}/cpu.cfs_quota_us`)).toBe('-1');
    expect(read('memory', `${bPath}/memory.limit_in_bytes`)).toBe(String(128 * mi));
    expect(read('cpu', `${ePath}/cpu.shares`)).toBe('2');
    expect(read('cpu', `${ePath}/cpu.cfs_quota_us`)).toBe('-1');
    // QoS cgroups: burstable has its pods' requests, besteffort the minimum.
    expect(read('cpu', 'kubepods/burstable/cpu.shares')).toBe('102');
    expect(read('cpu', 'kubepods/besteffort/cpu.shares')).toBe('2');
    // kubepods: the node's cores (nothing reserved).
    expect(read('cpu', 'kubepods/cpu.shares')).toBe(String(os.cpus().length * 1024));
  }, 120_000);

  it('removes a pod cgroup of no pod in housekeeping', async () => {
    const orphan = `kubepods/besteffort/pod${randomUUID()}`;
    // A process left in it (upstream kills them before removing the cgroup).
    const left = spawn('sleep', ['300'], { stdio: 'ignore' });
    for (const c of ['cpu', 'memory']) {
      fs.mkdirSync(path.join(cgroupfs, c, cgroupRoot, orphan));
      fs.writeFileSync(path.join(cgroupfs, c, cgroupRoot, orphan, 'cgroup.procs'), String(left.pid));
    }
    const killed = new Promise<string | null>((resolve) =>
      left.once('exit', (_code, signal) => resolve(signal)),
    );
    await waitFor(
      'the orphaned pod cgroup removed',
      async () => (fs.existsSync(path.join(cgroupfs, 'cpu', cgroupRoot, orphan)) ? undefined : true),
      30_000,
    );
    expect(fs.existsSync(path.join(cgroupfs, 'memory', cgroupRoot, orphan))).toBe(false);
    expect(await killed).toBe('SIGKILL');
  }, 60_000);

  it('keeps the pods and their cgroups across an agent restart', async () => {
    const before = (await runtimeState(nodeName)).containers
      .filter((c) => c.state === ContainerState.CONTAINER_RUNNING)
      .map((c) => c.id)
      .sort();
    expect(before).toHaveLength(3);
    await agent!.stop();
    agent = await startAgent({ nodeName, manifestDir: manifests, rootDir: root, args });
    const pods = await runningPods();
    // A few housekeeping rounds: nothing of the running pods is removed.
    await new Promise((r) => setTimeout(r, 5000));
    const after = (await runtimeState(nodeName)).containers
      .filter((c) => c.state === ContainerState.CONTAINER_RUNNING)
      .map((c) => c.id)
      .sort();
    expect(after).toEqual(before);
    for (const p of pods) expect(await containerCgroup(p)).toContain(`pod${p.metadata?.uid}`);
  }, 120_000);

  it('removes the pod cgroup once its pod is gone', async () => {
    const pods = await agent!.pods();
    const burstable = podNamed(pods, podName('burstable'));
    fs.rmSync(path.join(manifests, 'burstable.json'));
    const cg = path.join(cgroupfs, 'cpu', cgroupRoot, `kubepods/burstable/pod${burstable?.metadata?.uid}`);
    await waitFor('the removed pod cgroup gone', async () => (fs.existsSync(cg) ? undefined : true), 60_000);
    expect(read('cpu', 'kubepods/burstable/cpu.shares')).toBe('2');
    // Gone from every hierarchy, also those where only the runtime made cgroups.
    for (const c of fs.readdirSync(cgroupfs)) {
      const p = path.join(cgroupfs, c, cgroupRoot, `kubepods/burstable/pod${burstable?.metadata?.uid}`);
      expect(fs.existsSync(p), p).toBe(false);
    }
  }, 90_000);
});
