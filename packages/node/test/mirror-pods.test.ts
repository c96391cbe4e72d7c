import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MirrorClient, Pod } from '@kubelet-kit/core';
import { InMemoryLogger } from '@kubelet-kit/core/testing';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import { afterEach, describe, expect, it } from 'vitest';
import { deleteOrphanedMirrorPods, tryReconcileMirrorPods } from '../src/mirror-pods.js';
import {
  apiPod,
  emptyStatus,
  fakeMirrorClient,
  type MirrorCall,
  mirrorOf,
  setup,
  staticPod,
} from './kubelet-harness.js';

describe('mirror pods (tryReconcileMirrorPods, deleteOrphanedMirrorPods)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const sync = async (
    mirror: Pod | undefined,
    calls: MirrorCall[],
    pod = staticPod('etcd-node-a', 'static-9'),
  ) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-handlers-'));
    dirs.push(root);
    const { kubelet } = setup(110, [], { mirrorClient: fakeMirrorClient(calls), rootDirectory: root });
    const signal = new AbortController().signal;
    await kubelet.syncPod({ signal }, 'sync', pod, mirror, emptyStatus.status!);
  };

  it('creates the missing mirror pod of a static pod, and none for a pod from the API server', async () => {
    const calls: MirrorCall[] = [];
    await sync(undefined, calls);
    expect(calls).toEqual([{ op: 'create', name: 'etcd-node-a' }]);
    calls.length = 0;
    await sync(undefined, calls, apiPod('web', 'uid-web', { phase: 'Pending' }));
    expect(calls).toEqual([]);
  });

  it('leaves a matching mirror alone', async () => {
    const calls: MirrorCall[] = [];
    const pod = staticPod('etcd-node-a', 'static-9');
    await sync(mirrorOf(pod, 'mirror-9'), calls, pod);
    expect(calls).toEqual([]);
  });

  it('replaces a mirror of another version of the pod, or one being deleted, by UID', async () => {
    const calls: MirrorCall[] = [];
    const pod = staticPod('etcd-node-a', 'static-9');
    const stale = mirrorOf(staticPod('etcd-node-a', 'static-8'), 'mirror-8');
    await sync(stale, calls, pod);
    expect(calls).toEqual([
      { op: 'delete', name: 'etcd-node-a_default', uid: 'mirror-8' },
      { op: 'create', name: 'etcd-node-a' },
    ]);
    calls.length = 0;
    const deleting = mirrorOf(pod, 'mirror-10');
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: '2026-06-01T00:00:00Z' };
    await sync(deleting, calls, pod);
    expect(calls.map((c) => c.op)).toEqual(['delete', 'create']);
  });

  it('deletes an orphaned mirror pod in housekeeping', async () => {
    const calls: MirrorCall[] = [];
    const { kubelet } = setup(110, [], { mirrorClient: fakeMirrorClient(calls) });
    kubelet.handlePodAdditions([mirrorOf(staticPod('gone-node-a', 'static-7'), 'mirror-7')]);
    await kubelet.handlePodCleanups();
    expect(calls).toEqual([{ op: 'delete', name: 'gone-node-a_default', uid: undefined }]);
  });
});

describe('tryReconcileMirrorPods', () => {
  const failing = (calls: string[], fail: { create?: boolean; delete?: boolean }): MirrorClient => ({
    async createMirrorPod(pod) {
      calls.push(`create ${pod.metadata?.name}`);
      if (fail.create) throw new Error('create refused');
    },
    async deleteMirrorPod(fullName) {
      calls.push(`delete ${fullName}`);
      if (fail.delete) throw new Error('delete refused');
      return true;
    },
  });

  it('makes no new mirror while the stale one could not be deleted, and logs why', async () => {
    const calls: string[] = [];
    const log = new InMemoryLogger();
    const pod = staticPod('etcd-node-a', 'static-9');
    const stale = mirrorOf(staticPod('etcd-node-a', 'static-8'), 'mirror-8');
    await tryReconcileMirrorPods(failing(calls, { delete: true }), log, pod, stale);
    expect(calls).toEqual(['delete etcd-node-a_default']);
    expect(log.records.filter((r) => r.level === 'error').map((r) => r.message)).toEqual([
      'failed deleting mirror pod',
    ]);
  });

  it('logs a failed creation and resolves (the next sync tries again)', async () => {
    const calls: string[] = [];
    const log = new InMemoryLogger();
    await tryReconcileMirrorPods(
      failing(calls, { create: true }),
      log,
      staticPod('etcd-node-a', 's'),
      undefined,
    );
    expect(calls).toEqual(['create etcd-node-a']);
    expect(log.records.map((r) => [r.level, r.message, r.fields.err])).toEqual([
      ['error', 'failed creating a mirror pod', 'Error: create refused'],
    ]);
  });

  it('leaves a pod that is not static alone, whatever mirror it is given', async () => {
    const calls: MirrorCall[] = [];
    const pod: Pod = apiPod('web', 'uid-web', { phase: 'Running' });
    await tryReconcileMirrorPods(fakeMirrorClient(calls), new InMemoryLogger(), pod, mirrorOf(pod, 'm'));
    expect(calls).toEqual([]);
  });
});

describe('deleteOrphanedMirrorPods', () => {
  it('deletes orphaned mirrors unless their static pod is still terminating', async () => {
    const podManager = new BasicPodManager();
    podManager.addPod(mirrorOf(staticPod('gone-node-a', 'static-1'), 'mirror-1'));
    podManager.addPod(mirrorOf(staticPod('stopping-node-a', 'static-2'), 'mirror-2'));
    const calls: MirrorCall[] = [];
    await deleteOrphanedMirrorPods(fakeMirrorClient(calls), new InMemoryLogger(), podManager, {
      isPodForMirrorPodTerminatingByFullName: (fullName) => fullName === 'stopping-node-a_default',
    });
    expect(calls).toEqual([{ op: 'delete', name: 'gone-node-a_default', uid: undefined }]);
  });
});
