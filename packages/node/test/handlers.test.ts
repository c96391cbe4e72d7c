import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kubelet-kit/core';
import { afterEach, describe, expect, it } from 'vitest';
import { apiPod, emptyStatus, mirrorOf, setup, staticPod } from './kubelet-harness.js';

// The config handlers (upstream HandlePodAdditions and HandlePodReconcile) on a Kubelet that is
// never started: what they hand the pod workers, and what status they write.

describe('handlePodAdditions', () => {
  it("sends a mirror pod's arrival to its static pod's worker as an update carrying the mirror", () => {
    const { kubelet, updates } = setup();
    const pod = staticPod('etcd-node-a', 'static-1');
    kubelet.handlePodAdditions([pod]);
    expect(updates.map((u) => u.updateType)).toEqual(['create']);
    const mirror = mirrorOf(pod, 'mirror-1');
    kubelet.handlePodAdditions([mirror]);
    expect(updates).toHaveLength(2);
    expect(updates[1]?.updateType).toBe('update');
    expect(updates[1]?.pod?.metadata?.uid).toBe('static-1');
    expect(updates[1]?.mirrorPod?.metadata?.uid).toBe('mirror-1');
  });

  it('leaves a mirror pod with no static pod alone', () => {
    const { kubelet, updates, written } = setup();
    kubelet.handlePodAdditions([mirrorOf(staticPod('gone-node-a', 'static-2'), 'mirror-2')]);
    expect(updates).toEqual([]);
    expect(written).toEqual([]);
  });

  it('does not admit again a pod that arrives already finished: its worker gets it, its status stays', () => {
    // max pods 1 with one pod running: a new pod would be rejected with OutOfpods.
    const { kubelet, updates, written } = setup(1);
    kubelet.handlePodAdditions([apiPod('running', 'uid-run', { phase: 'Running' })]);
    kubelet.handlePodAdditions([apiPod('done', 'uid-done', { phase: 'Succeeded' })]);
    expect(written).toEqual([]);
    expect(updates.map((u) => [u.pod?.metadata?.uid, u.updateType])).toEqual([
      ['uid-run', 'create'],
      ['uid-done', 'create'],
    ]);
    // A pod that is not finished is still admitted, and rejected here.
    kubelet.handlePodAdditions([apiPod('late', 'uid-late', { phase: 'Pending' })]);
    expect(written.map((w) => [w.uid, w.status.phase, w.status.reason])).toEqual([
      ['uid-late', 'Failed', 'OutOfpods'],
    ]);
    expect(updates).toHaveLength(2);
  });
});

describe('handlePodReconcile', () => {
  const readyTrue = { type: 'Ready', status: 'True' as const };

  it('updates the pod manager but syncs no pod without readiness gates', () => {
    const { kubelet, podManager, updates } = setup();
    kubelet.handlePodReconcile([apiPod('web', 'uid-web', { phase: 'Running', conditions: [readyTrue] })]);
    expect(updates).toEqual([]);
    expect(podManager.getPodByUID('uid-web')?.status?.phase).toBe('Running');
  });

  it('syncs a pod whose Ready condition disagrees with its readiness gate', () => {
    const { kubelet, updates } = setup();
    const containerStatuses = [
      {
        name: 'main',
        image: 'busybox',
        imageID: '',
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: '2026-06-01T00:00:00Z' } },
      },
    ];
    // The gate's condition went False, but the pod still says Ready True: reconcile it.
    kubelet.handlePodReconcile([
      apiPod(
        'gated',
        'uid-gated',
        {
          phase: 'Running',
          containerStatuses,
          conditions: [readyTrue, { type: 'example.com/lb', status: 'False' }],
        },
        'example.com/lb',
      ),
    ]);
    expect(updates.map((u) => [u.pod?.metadata?.uid, u.updateType])).toEqual([['uid-gated', 'sync']]);
    // Gate True and Ready True agree: nothing to do.
    kubelet.handlePodReconcile([
      apiPod(
        'agreed',
        'uid-agreed',
        {
          phase: 'Running',
          containerStatuses,
          conditions: [readyTrue, { type: 'example.com/lb', status: 'True' }],
        },
        'example.com/lb',
      ),
    ]);
    expect(updates).toHaveLength(1);
  });

  it('reconciles a mirror pod as its static pod', () => {
    const { kubelet, updates } = setup();
    const pod: Pod = {
      ...staticPod('gated-node-a', 'static-3'),
      spec: { containers: [{ name: 'main', image: 'busybox' }], readinessGates: [{ conditionType: 'x/y' }] },
      // Ready True though the gate's condition is missing.
      status: { phase: 'Running', conditions: [readyTrue] },
    };
    kubelet.handlePodAdditions([pod]);
    updates.length = 0;
    kubelet.handlePodReconcile([mirrorOf(pod, 'mirror-3')]);
    expect(updates.map((u) => [u.pod?.metadata?.uid, u.updateType, u.mirrorPod?.metadata?.uid])).toEqual([
      ['static-3', 'sync', 'mirror-3'],
    ]);
  });
});

describe('volumes in the pod lifecycle (FakeVolumeManager)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const withVolume = (uid: string): Pod => ({
    ...apiPod('web', uid, { phase: 'Pending' }),
    spec: { containers: [{ name: 'main', image: 'busybox' }], volumes: [{ name: 'data', emptyDir: {} }] },
  });
  const kubeletIn = () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-handlers-'));
    dirs.push(root);
    return setup(110, [], { rootDirectory: root });
  };
  const signal = new AbortController().signal;

  it("waits for the pod's volumes to be mounted before syncing it", async () => {
    const { kubelet, volumeManager } = kubeletIn();
    await kubelet.syncPod({ signal }, 'create', withVolume('uid-v1'), undefined, emptyStatus.status!);
    expect(volumeManager.calls).toEqual(['wait uid-v1']);
    expect(volumeManager.getMountedVolumesForPod('uid-v1').has('data')).toBe(true);
  });

  it('does not ask the volume manager about a pod that declares no volume', async () => {
    const { kubelet, volumeManager } = kubeletIn();
    const pod = apiPod('plain', 'uid-v0', { phase: 'Pending' });
    await kubelet.syncPod({ signal }, 'create', pod, undefined, emptyStatus.status!);
    await kubelet.syncPod({ signal }, 'create', withVolume('uid-v4'), undefined, emptyStatus.status!);
    expect(volumeManager.calls).toEqual(['wait uid-v4']);
  });

  it('fails the sync with a FailedMount event when a volume cannot be mounted', async () => {
    const { kubelet, volumeManager, recorder } = kubeletIn();
    volumeManager.failing.add('data');
    await expect(
      kubelet.syncPod({ signal }, 'create', withVolume('uid-v2'), undefined, emptyStatus.status!),
    ).rejects.toThrow('unmounted volumes=[data]');
    expect(recorder.events.map((e) => [e.object.uid, e.type, e.reason, e.message])).toEqual([
      [
        'uid-v2',
        'Warning',
        'FailedMount',
        'Unable to attach or mount volumes: unmounted volumes=[data]: timed out waiting for the condition',
      ],
    ]);
  });

  it('waits for the volumes to be unmounted once the pod is terminated', async () => {
    const { kubelet, volumeManager } = kubeletIn();
    const pod = withVolume('uid-v3');
    await kubelet.syncPod({ signal }, 'create', pod, undefined, emptyStatus.status!);
    await kubelet.syncTerminatedPod({ signal }, pod, emptyStatus.status!);
    expect(volumeManager.calls).toEqual(['wait uid-v3', 'unmount uid-v3']);
    expect(volumeManager.getMountedVolumesForPod('uid-v3').size).toBe(0);
  });
});

describe('syncLoopHealthCheck', () => {
  it('is healthy while the sync tick runs, and unhealthy once it has not for over 5 minutes', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-handlers-'));
    const { kubelet, clock } = setup(110, [], { rootDirectory: root });
    try {
      expect(kubelet.syncLoopHealthCheck()).toBeUndefined();
      await kubelet.start();
      clock.advance(1000);
      expect(kubelet.syncLoopHealthCheck()).toBeUndefined();
      // The clock jumps with no tick in between: as if the loop were stuck.
      clock.setTime(clock.now() + 5 * 60_000);
      expect(kubelet.syncLoopHealthCheck()).toBeUndefined();
      clock.setTime(clock.now() + 1);
      expect(kubelet.syncLoopHealthCheck()).toBe('sync Loop took longer than expected');
      clock.advance(1000);
      expect(kubelet.syncLoopHealthCheck()).toBeUndefined();
    } finally {
      await kubelet.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('runtime errors (upstream runtimeState in syncLoop)', () => {
  it('skips sync rounds while the runtime reports an error, and syncs again once it is back', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-handlers-'));
    let runtimeError: string | undefined;
    const { kubelet, updates, clock } = setup(110, [], {
      rootDirectory: root,
      runtimeErrors: () => runtimeError,
    });
    try {
      // A pod past its active deadline is synced at every round of the sync tick.
      const base = staticPod('a', 'uid-a');
      const pod: Pod = {
        ...base,
        spec: { ...base.spec!, activeDeadlineSeconds: 1 },
        status: { phase: 'Running', startTime: new Date(clock.now() - 3_600_000).toISOString() },
      };
      await kubelet.start();
      kubelet.handlePodAdditions([pod]);
      const syncs = () => updates.filter((u) => u.updateType === 'sync').length;
      await clock.tick(1000);
      expect(syncs()).toBe(1);

      runtimeError = 'container runtime is down';
      await clock.tick(5000);
      expect(syncs()).toBe(1);

      runtimeError = undefined;
      await clock.tick(1000);
      expect(syncs()).toBe(2);
    } finally {
      await kubelet.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
