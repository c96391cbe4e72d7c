// End to end: @kubelet-kit/kuberuntime alone against the private containerd of scripts/containerd.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh     (as root)
//   npx vitest run --project e2e test/e2e/kuberuntime.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Backoff, Pod, PodSyncResult, RuntimePodStatus } from '@kubelet-kit/core';
import {
  convertPodStatusToRunningPod,
  KubeGenericRuntimeManager,
  newCrashLoopBackOff,
} from '@kubelet-kit/kuberuntime';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const endpoint = process.env.KUBELET_KIT_CRI_ENDPOINT;
const BUSYBOX = process.env.KUBELET_KIT_BUSYBOX_IMAGE ?? 'localhost/kubelet-kit/busybox:1.0';
const runId = randomBytes(4).toString('hex');

let work: string;
let manager: KubeGenericRuntimeManager;
const created: Pod[] = [];
const removed = new Set<string>();

function newManager(): KubeGenericRuntimeManager {
  return new KubeGenericRuntimeManager({
    endpoint: endpoint!,
    rootDirectory: path.join(work, 'root'),
    podLogsRootDirectory: path.join(work, 'logs'),
    nodeName: 'kuberuntime-e2e',
    podStateProvider: {
      shouldPodContentBeRemoved: (uid) => removed.has(uid),
      shouldPodRuntimeBeRemoved: (uid) => removed.has(uid),
    },
  });
}

let seq = 0;
function makePod(name: string, spec: Pod['spec']): Pod {
  seq++;
  const pod: Pod = {
    metadata: { name: `${name}-${runId}`, namespace: 'kuberuntime-e2e', uid: `kre2e-${runId}-${seq}` },
    spec: { terminationGracePeriodSeconds: 2, ...spec } as Pod['spec'],
  };
  created.push(pod);
  return pod;
}

const ids = (pod: Pod) => ({
  uid: pod.metadata!.uid!,
  name: pod.metadata!.name!,
  namespace: pod.metadata!.namespace!,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sh = (script: string) => ({
  image: BUSYBOX,
  imagePullPolicy: 'Never' as const,
  command: ['sh', '-c', script],
});

/** Syncs the pod every `everyMs` until `done(status)` holds; returns every sync result. */
async function syncUntil(
  pod: Pod,
  backOff: Backoff,
  done: (s: RuntimePodStatus) => boolean,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<{ status: RuntimePodStatus; results: PodSyncResult[] }> {
  const results: PodSyncResult[] = [];
  const end = Date.now() + timeoutMs;
  for (;;) {
    const status = await manager.getPodStatus(ids(pod));
    if (done(status)) return { status, results };
    if (Date.now() > end)
      throw new Error(`timed out; last status: ${JSON.stringify(status.containerStatuses, null, 1)}`);
    results.push(await manager.syncPod({ pod, podStatus: status, pullSecrets: [], backOff }));
    await sleep(everyMs);
  }
}

const newest = (s: RuntimePodStatus, name: string) => s.containerStatuses.find((c) => c.name === name);

describe('kuberuntime against containerd', () => {
  beforeAll(() => {
    if (!endpoint) {
      throw new Error(
        'KUBELET_KIT_CRI_ENDPOINT is not set. Start the private containerd first: ' +
          'source scripts/containerd/env.sh && bash scripts/containerd/up.sh',
      );
    }
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-kuberuntime-e2e-'));
    manager = newManager();
  });

  afterAll(async () => {
    if (!manager) return;
    try {
      for (const pod of created) {
        const status = await manager.getPodStatus(ids(pod)).catch(() => undefined);
        if (status)
          await manager
            .killPod({ pod, runningPod: convertPodStatusToRunningPod(status), gracePeriodOverride: 0 })
            .catch(() => {});
        removed.add(pod.metadata!.uid!);
      }
      await manager.garbageCollect({
        policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 },
        allSourcesReady: true,
        evictNonDeletedPods: true,
      });
    } finally {
      manager.close();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });

  test('init containers, then the sidecar, then the main containers, in order of their start times', async () => {
    const pod = makePod('order', {
      restartPolicy: 'Always',
      initContainers: [
        { name: 'init-1', ...sh('sleep 1') },
        { name: 'init-2', ...sh('sleep 1') },
        {
          name: 'sidecar',
          restartPolicy: 'Always',
          ...sh("trap 'exit 0' TERM; while true; do sleep 1; done"),
        },
      ],
      containers: [
        { name: 'main-1', ...sh("trap 'exit 0' TERM; while true; do sleep 1; done") },
        { name: 'main-2', ...sh("trap 'exit 0' TERM; while true; do sleep 1; done") },
      ],
    });
    const { status } = await syncUntil(pod, newCrashLoopBackOff(), (s) =>
      ['main-1', 'main-2', 'sidecar'].every((n) => newest(s, n)?.state === 'running'),
    );
    const c = (n: string) => newest(status, n)!;
    expect(c('init-1')).toMatchObject({ state: 'exited', exitCode: 0 });
    expect(c('init-2')).toMatchObject({ state: 'exited', exitCode: 0 });
    expect(c('init-1').finishedAt).toBeLessThanOrEqual(c('init-2').startedAt);
    expect(c('init-2').finishedAt).toBeLessThanOrEqual(c('sidecar').startedAt);
    expect(c('sidecar').startedAt).toBeLessThanOrEqual(c('main-1').startedAt);
    expect(c('main-1').startedAt).toBeLessThanOrEqual(c('main-2').startedAt);
    expect(status.ips).toHaveLength(1);

    // The managed /etc/hosts names the pod, and exec works through the same manager.
    const hosts = await manager.runInContainer({
      containerId: c('main-1').id.id,
      cmd: ['cat', '/etc/hosts'],
      timeoutMs: 10_000,
    });
    expect(hosts.exitCode).toBe(0);
    expect(Buffer.from(hosts.stdout).toString()).toContain(`${status.ips[0]}\t${pod.metadata!.name}\n`);

    // A second manager, created now, reports the same status from the CRI alone.
    const other = newManager();
    try {
      const again = await other.getPodStatus(ids(pod));
      expect({ ...again, timestamp: 0 }).toEqual({ ...status, timestamp: 0 });
    } finally {
      other.close();
    }
  });

  test('exit codes, restart counts and CrashLoopBackOff delays (cap injected: 1 s → 2 s)', async () => {
    const pod = makePod('crash', {
      restartPolicy: 'Always',
      containers: [{ name: 'crash', ...sh('exit 3') }],
    });
    const backOff = newCrashLoopBackOff({ initialMs: 1000, maxMs: 2000 });
    const { status, results } = await syncUntil(
      pod,
      backOff,
      (s) => (newest(s, 'crash')?.restartCount ?? 0) >= 4 && newest(s, 'crash')?.state === 'exited',
      90_000,
      100,
    );
    const instances = status.containerStatuses.filter((c) => c.name === 'crash').reverse(); // oldest first
    expect(instances.map((c) => c.restartCount)).toEqual(instances.map((_, i) => i));
    for (const c of instances) expect(c).toMatchObject({ state: 'exited', exitCode: 3, reason: 'Error' });
    const waits = results.flatMap((r) => r.syncResults).filter((r) => r.error === 'CrashLoopBackOff');
    expect(waits.length).toBeGreaterThan(0);
    expect(waits[0]!.message).toMatch(/^back-off 1s restarting failed container=crash pod=/);
    expect(waits.some((w) => w.message.startsWith('back-off 2s'))).toBe(true);
    // No backoff is a sync error.
    expect(results.every((r) => r.syncError === undefined)).toBe(true);
    // Delay before each restart: first immediate, then ≥ 1 s, then ≥ 2 s (the cap).
    const gaps = instances.slice(1).map((c, i) => c.startedAt - instances[i]!.finishedAt);
    expect(gaps[0]!).toBeLessThan(1000);
    expect(gaps[1]!).toBeGreaterThanOrEqual(900);
    expect(gaps[2]!).toBeGreaterThanOrEqual(1900);
  });

  test('a failing container under restartPolicy Never ends terminated with its exit code and termination message', async () => {
    const pod = makePod('never', {
      restartPolicy: 'Never',
      containers: [{ name: 'fail', ...sh('echo -n "it went wrong" > /dev/termination-log; exit 7') }],
    });
    const { status, results } = await syncUntil(
      pod,
      newCrashLoopBackOff(),
      (s) => newest(s, 'fail')?.state === 'exited',
    );
    expect(newest(status, 'fail')).toMatchObject({ exitCode: 7, message: 'it went wrong', restartCount: 0 });
    expect(results.flatMap((r) => r.syncResults).filter((r) => r.action === 'StartContainer')).toHaveLength(
      1,
    );
    // Nothing restarts; the next sync stops the sandbox.
    const next = await manager.syncPod({
      pod,
      podStatus: status,
      pullSecrets: [],
      backOff: newCrashLoopBackOff(),
    });
    expect(next.syncResults.map((r) => r.action)).toEqual(['KillPodSandbox']);
    const after = await manager.getPodStatus(ids(pod));
    expect(after.containerStatuses.filter((c) => c.name === 'fail')).toHaveLength(1);
    expect(after.sandboxStatuses[0]!.state).toBe('notready');
  });

  test('localhost/absent:1 with pull policy Never gives ErrImageNeverPull', async () => {
    const pod = makePod('absent', {
      restartPolicy: 'Always',
      containers: [{ name: 'absent', image: 'localhost/absent:1', imagePullPolicy: 'Never' }],
    });
    const status = await manager.getPodStatus(ids(pod));
    const r = await manager.syncPod({
      pod,
      podStatus: status,
      pullSecrets: [],
      backOff: newCrashLoopBackOff(),
    });
    expect(r.syncResults.find((x) => x.action === 'StartContainer')).toMatchObject({
      error: 'ErrImageNeverPull',
      message: 'Container image "localhost/absent:1" is not present with pull policy of Never',
    });
  });

  test('killPod runs preStop and kills a SIGTERM-ignoring container after the grace period, not before', async () => {
    const pod = makePod('grace', {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 4,
      containers: [
        {
          name: 'stubborn',
          ...sh("trap '' TERM; while true; do sleep 1; done"),
          lifecycle: {
            preStop: { exec: { command: ['sh', '-c', 'echo -n prestop-ran > /dev/termination-log'] } },
          },
        },
        { name: 'polite', ...sh("trap 'exit 0' TERM; while true; do sleep 1; done") },
      ],
    });
    const { status } = await syncUntil(pod, newCrashLoopBackOff(), (s) =>
      ['stubborn', 'polite'].every((n) => newest(s, n)?.state === 'running'),
    );
    const start = Date.now();
    const result = await manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(status) });
    const elapsed = Date.now() - start;
    expect(result.syncResults.filter((r) => r.error)).toEqual([]);
    const after = await manager.getPodStatus(ids(pod));
    const stubborn = newest(after, 'stubborn')!;
    const polite = newest(after, 'polite')!;
    expect(stubborn).toMatchObject({ state: 'exited', exitCode: 137, message: 'prestop-ran' });
    expect(polite).toMatchObject({ state: 'exited', exitCode: 0 });
    // SIGKILL came after the 4 s grace period (less the preStop's whole seconds), not before.
    expect(stubborn.finishedAt - start).toBeGreaterThanOrEqual(3000);
    expect(elapsed).toBeGreaterThanOrEqual(3000);
    expect(elapsed).toBeLessThan(12_000);
    expect(polite.finishedAt - start).toBeLessThan(2500);
    expect(after.sandboxStatuses[0]!.state).toBe('notready');
  });
});
