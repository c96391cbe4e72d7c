import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type CachedPodStatus,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  FakeClock,
  type MirrorClient,
  type Pod,
  type PodStatus,
  type PodStatusCache,
  type Runtime,
  type RuntimePod,
  type Subpath,
  type Subpather,
} from '@kubelet-kit/core';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import type { PodWorkerSync, UpdatePodOptions } from '@kubelet-kit/pod-workers';
import { afterEach, describe, expect, it } from 'vitest';
import type { PlegView, PodConfigView, ProbeManagerView, StatusManagerView } from '../src/index.js';
import { Kubelet } from '../src/index.js';

// The config handlers (upstream HandlePodAdditions and HandlePodReconcile) on a Kubelet that is
// never started: what they hand the pod workers, and what status they write.

const emptyStatus: CachedPodStatus = {
  status: {
    id: '',
    name: '',
    namespace: '',
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [],
    timestamp: 0,
  },
  error: undefined,
  modified: 0,
};
const podCache: PodStatusCache = {
  get: () => emptyStatus,
  getNewerThan: async () => emptyStatus,
};

interface MirrorCall {
  readonly op: 'create' | 'delete';
  readonly name: string;
  readonly uid?: string | undefined;
}

function fakeMirrorClient(calls: MirrorCall[]): MirrorClient {
  return {
    async createMirrorPod(pod) {
      calls.push({ op: 'create', name: pod.metadata?.name ?? '' });
    },
    async deleteMirrorPod(fullName, uid) {
      calls.push({ op: 'delete', name: fullName, uid });
      return true;
    },
  };
}

function setup(
  maxPods = 110,
  runtimePods: RuntimePod[] = [],
  extra: {
    mirrorClient?: MirrorClient;
    rootDirectory?: string;
    runtimeErrors?: () => string | undefined;
    subpather?: Subpather;
  } = {},
) {
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const podManager = new BasicPodManager();
  const written: Array<{ uid: string; status: PodStatus }> = [];
  const statusManager: StatusManagerView = {
    start() {},
    stop() {},
    getPodStatus: () => undefined,
    getPodPhase: () => undefined,
    setPodStatus(pod, status) {
      written.push({ uid: pod.metadata?.uid ?? '', status });
    },
    setContainerReadiness() {},
    setContainerStartup() {},
    terminatePod() {},
    removeOrphanedStatuses() {},
  };
  const podConfig: PodConfigView = {
    async *updates() {},
    seenAllSources: () => true,
    start() {},
    async stop() {},
  };
  const pleg: PlegView = {
    start() {},
    stop() {},
    watch: () => () => {},
    healthy: () => ({ healthy: true }),
  };
  const probedUids: Array<ReadonlySet<string>> = [];
  const probeManager: ProbeManagerView = {
    start() {},
    async stop() {},
    addPod() {},
    removePod() {},
    cleanupPods(uids) {
      probedUids.push(new Set(uids));
    },
    stopLivenessAndStartup() {},
    updatePodStatus() {},
    onResult: () => () => {},
  };
  const kubelet = new Kubelet({
    nodeName: 'node-a',
    rootDirectory: extra.rootDirectory ?? '/nonexistent/kubelet-kit-handlers-test',
    nodeIPs: ['192.0.2.10'],
    allocatable: { cpu: 4, memory: 8 * 2 ** 30, pods: maxPods },
    // Housekeeping lists the runtime's pods and may collect garbage; nothing else is called.
    runtime: {
      getPods: async () => runtimePods,
      garbageCollect: async () => {},
      syncPod: async () => ({ syncResults: [] }),
    } as unknown as Runtime,
    ...extra,
    probeManager,
    podConfig,
    podManager,
    statusManager,
    pleg,
    podCache,
    clock,
  });
  const updates: UpdatePodOptions[] = [];
  kubelet.podWorkers.updatePod = (options: UpdatePodOptions) => {
    updates.push(options);
  };
  return { kubelet, podManager, updates, written, probedUids, clock };
}

function staticPod(name: string, uid: string): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid,
      annotations: { [ConfigHashAnnotationKey]: uid, [ConfigSourceAnnotationKey]: 'file' },
    },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase: 'Pending' },
  };
}

function mirrorOf(pod: Pod, uid: string): Pod {
  return {
    metadata: {
      name: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
      uid,
      annotations: {
        [ConfigHashAnnotationKey]: pod.metadata?.uid ?? '',
        [ConfigMirrorAnnotationKey]: pod.metadata?.uid ?? '',
        [ConfigSourceAnnotationKey]: 'api',
      },
    },
    spec: pod.spec ?? { containers: [] },
  };
}

function apiPod(name: string, uid: string, status: PodStatus, readinessGate?: string): Pod {
  return {
    metadata: { name, namespace: 'default', uid, annotations: { [ConfigSourceAnnotationKey]: 'api' } },
    spec: {
      containers: [{ name: 'main', image: 'busybox' }],
      ...(readinessGate ? { readinessGates: [{ conditionType: readinessGate }] } : {}),
    },
    status,
  };
}

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

describe('handlePodCleanups', () => {
  const runtimePod = (uid: string): RuntimePod =>
    ({
      id: uid,
      name: uid,
      namespace: 'default',
      createdAt: 0,
      containers: [
        { id: { type: 'containerd', id: `c-${uid}` }, name: 'main', image: 'busybox', state: 'running' },
      ],
      sandboxes: [],
    }) as unknown as RuntimePod;
  const worker = (state: PodWorkerSync['state'], orphan: boolean): PodWorkerSync => ({
    state,
    orphan,
    hasConfig: true,
    static: false,
  });

  it('probes only pods whose worker may still run them', async () => {
    const { kubelet, probedUids } = setup();
    kubelet.handlePodAdditions([
      apiPod('a', 'uid-a', { phase: 'Running' }),
      apiPod('b', 'uid-b', { phase: 'Running' }),
    ]);
    kubelet.podWorkers.syncKnownPods = () =>
      new Map([
        ['uid-a', worker('sync', false)],
        ['uid-b', worker('terminated', false)],
        ['uid-c', worker('terminating', true)],
      ]);
    await kubelet.handlePodCleanups();
    expect([...(probedUids.at(-1) ?? [])].sort()).toEqual(['uid-a', 'uid-c']);
  });

  it('kills running containers of a pod no source wants even when its worker is done, not of a wanted one', async () => {
    const { kubelet, updates } = setup(110, [
      runtimePod('uid-gone'),
      runtimePod('uid-wanted'),
      runtimePod('uid-busy'),
    ]);
    kubelet.handlePodAdditions([apiPod('wanted', 'uid-wanted', { phase: 'Succeeded' })]);
    updates.length = 0;
    kubelet.podWorkers.syncKnownPods = () =>
      new Map([
        ['uid-gone', worker('terminated', true)],
        ['uid-wanted', worker('terminated', false)],
        ['uid-busy', worker('terminating', true)],
      ]);
    await kubelet.handlePodCleanups();
    expect(updates.map((u) => [u.updateType, u.runningPod?.id])).toEqual([['kill', 'uid-gone']]);
  });
});

describe('orphaned pod directories (upstream cleanupOrphanedPodDirs)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  /** A pod directory whose volumes are gone but whose subPath bind targets are still there. */
  const orphanDir = () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-orphan-'));
    dirs.push(root);
    const target = path.join(root, 'pods', 'uid-gone', 'volume-subpaths', 'data', 'main', '0');
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(target, 'behind-the-mount'), '');
    return { root, podDir: path.join(root, 'pods', 'uid-gone') };
  };

  /** Removes the bind targets of a volume as unmounting would; records the calls. */
  const unmounting = (calls: string[], fail = false): Subpather => ({
    async safeMakeDir() {},
    async prepareSafeSubpath(sp: Subpath) {
      return sp.path;
    },
    async cleanSubPaths(podDir, volumeName) {
      calls.push(`${path.basename(podDir)}/${volumeName}`);
      if (fail) throw new Error('umount: target is busy');
      fs.rmSync(path.join(podDir, 'volume-subpaths'), { recursive: true });
    },
  });

  it('cleans the subPaths of an orphaned pod before removing its directory', async () => {
    const { root, podDir } = orphanDir();
    const calls: string[] = [];
    const { kubelet } = setup(110, [], { rootDirectory: root, subpather: unmounting(calls) });
    await kubelet.handlePodCleanups();
    expect(calls).toEqual(['uid-gone/data']);
    expect(fs.existsSync(podDir)).toBe(false);
  });

  it('keeps the directory while subPaths could not be cleaned, or with no subpather', async () => {
    const { root, podDir } = orphanDir();
    const calls: string[] = [];
    await setup(110, [], {
      rootDirectory: root,
      subpather: unmounting(calls, true),
    }).kubelet.handlePodCleanups();
    await setup(110, [], { rootDirectory: root }).kubelet.handlePodCleanups();
    expect(calls).toEqual(['uid-gone/data']);
    // Nothing behind what may still be a bind mount was deleted.
    expect(fs.readdirSync(path.join(podDir, 'volume-subpaths/data/main/0'))).toEqual(['behind-the-mount']);
  });
});

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
