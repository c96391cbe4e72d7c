import type { RuntimePodStatus } from '@kubelet-kit/core';
import { newNamedPod, newRunningPod } from '@kubelet-kit/pod-workers/testing';
import { describe, expect, test } from 'vitest';
import { at, deferred, harness, T0, untilAborted, withDeletion, withPhase } from './helpers.js';

const exitedStatus: RuntimePodStatus = {
  id: '1',
  name: 'done-pod',
  namespace: 'ns',
  ips: [],
  containerStatuses: [],
  sandboxStatuses: [],
  timestamp: T0,
};

// Upstream TestUpdatePod, on a fake clock the test moves by hand instead of the
// time-incrementing workers: each case checks the podSyncStatus fields it leaves.
describe('TestUpdatePod', () => {
  test('a new pod is recorded and started', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'running-pod');
    h.workers.updatePod({ updateType: 'create', pod });
    h.clock.advance(2000);
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      fullname: 'running-pod_ns',
      syncedAt: at(0),
      startedAt: at(2),
      terminatingAt: undefined,
      terminatedAt: undefined,
      working: false,
      pendingUpdate: undefined,
      activeUpdate: { updateType: 'sync', pod },
      restartRequested: false,
    });
    expect(h.syncer.historyOf('1')).toEqual(['syncPod:create']);
    expect(h.workers.isPodKnownTerminated('1')).toBe(false);
  });

  test('a new pod is recorded and started unless it is a duplicate of an existing terminating pod UID', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'running-pod');
    h.workers.updatePod({ updateType: 'create', pod });
    h.clock.advance(2000);
    await h.drain();
    h.workers.updatePod({ updateType: 'kill', pod });
    const relabeled = { ...pod, metadata: { ...pod.metadata, labels: { updated: 'value' } } };
    h.workers.updatePod({ updateType: 'create', pod: relabeled });
    await h.drain();
    const status = h.workers.getPodSyncStatus('1');
    expect(status).toMatchObject({
      syncedAt: at(2 - 2),
      startedAt: at(2),
      terminatingAt: at(2),
      terminatedAt: at(2),
      gracePeriod: 30,
      startedTerminating: true,
      restartRequested: true,
      finished: true,
      activeUpdate: { pod, killPodOptions: { podTerminationGracePeriodSecondsOverride: 30 } },
    });
    // The dropped create never reached a worker.
    expect(h.syncer.calls.every((c) => c.pod?.metadata?.labels === undefined)).toBe(true);
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
  });

  test('a new pod is recorded and started and running pod is ignored', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'running-pod');
    h.workers.updatePod({ updateType: 'create', pod, runningPod: newRunningPod('1', 'ns', 'orphaned-pod') });
    await h.drain();
    const status = h.workers.getPodSyncStatus('1');
    expect(status?.fullname).toBe('running-pod_ns');
    expect(status?.activeUpdate?.runningPod).toBeUndefined();
    expect(status?.activeUpdate?.pod).toBe(pod);
    expect(h.syncer.historyOf('1')).toEqual(['syncPod:create']);
  });

  test('a running pod is terminated when an update contains a deletionTimestamp', async () => {
    const h = harness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('1', 'ns', 'running-pod') });
    await h.drain();
    h.clock.advance(2000);
    const deleted = withDeletion(newNamedPod('1', 'ns', 'running-pod'), 15);
    h.workers.updatePod({ updateType: 'update', pod: deleted });
    h.clock.advance(2000);
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      terminatingAt: at(2),
      terminatedAt: at(4),
      gracePeriod: 15,
      startedTerminating: true,
      finished: true,
      deleted: true,
      evicted: false,
      activeUpdate: { pod: deleted, killPodOptions: { podTerminationGracePeriodSecondsOverride: 15 } },
    });
    expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);
    expect(h.syncer.callsFor('1')[1]?.gracePeriod).toBe(15);
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(true);
  });

  test('a running pod is terminated when an eviction is requested', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'running-pod');
    h.workers.updatePod({ updateType: 'create', pod });
    await h.drain();
    h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { evict: true } });
    // An evicted pod's content may go even before its containers stopped.
    expect(h.workers.shouldPodContentBeRemoved('1')).toBe(true);
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      gracePeriod: 30,
      startedTerminating: true,
      finished: true,
      evicted: true,
      deleted: false,
      activeUpdate: { pod, killPodOptions: { evict: true, podTerminationGracePeriodSecondsOverride: 30 } },
    });
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
  });

  test('a pod that is terminal and has never started must be terminated if the runtime does not have a cached terminal state', async () => {
    const h = harness();
    const pod = withPhase(newNamedPod('1', 'ns', 'done-pod'), 'Succeeded');
    h.cache.set('1', undefined, new Error('No such pod'));
    h.workers.updatePod({ updateType: 'create', pod });
    h.cache.set('1', exitedStatus);
    h.clock.advance(2000);
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      fullname: 'done-pod_ns',
      syncedAt: at(0),
      terminatingAt: at(0),
      startedAt: at(2),
      terminatedAt: at(2),
      gracePeriod: 30,
      startedTerminating: true,
      finished: true,
      activeUpdate: { pod, killPodOptions: { podTerminationGracePeriodSecondsOverride: 30 } },
    });
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
  });

  test('a pod that is terminal and has never started advances to finished if the runtime has a cached terminal state', async () => {
    const h = harness();
    const pod = withPhase(newNamedPod('1', 'ns', 'done-pod'), 'Succeeded');
    h.cache.set('1', exitedStatus);
    h.workers.updatePod({ updateType: 'create', pod });
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      syncedAt: at(0),
      terminatingAt: at(0),
      terminatedAt: at(0),
      startedAt: undefined,
      pendingUpdate: { updateType: 'create', pod },
      finished: false,
      startedTerminating: true,
      working: true,
    });
    // Already known terminated, so admission does not count it, before any sync ran.
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
    h.clock.advance(2000);
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      terminatedAt: at(0),
      startedAt: at(2),
      finished: true,
      restartRequested: false,
      activeUpdate: { updateType: 'sync', pod },
    });
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatedPod']);
  });

  test('an orphaned running pod we have not seen is marked terminating and advances to finished and then is removed', async () => {
    const h = harness();
    const runningPod = newRunningPod('1', 'ns', 'orphaned-pod');
    h.workers.updatePod({ updateType: 'kill', runningPod });
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({
      fullname: 'orphaned-pod_ns',
      syncedAt: at(0),
      terminatingAt: at(0),
      pendingUpdate: {
        updateType: 'kill',
        runningPod,
        killPodOptions: { podTerminationGracePeriodSecondsOverride: 1 },
      },
      gracePeriod: 1,
      deleted: true,
      observedRuntime: true,
      working: true,
    });
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toBeUndefined();
    expect(h.workers.isPodKnownTerminated('1')).toBe(false);
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingRuntimePod']);
  });

  test('an orphaned running pod with a non-kill update type does nothing', async () => {
    const h = harness();
    h.workers.updatePod({ updateType: 'create', runningPod: newRunningPod('1', 'ns', 'orphaned-pod') });
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toBeUndefined();
    expect(h.syncer.calls).toEqual([]);
  });
});

test('TestUpdatePodForRuntimePod: only a kill of a runtime pod syncs it, once', async () => {
  const h = harness();
  const runningPod = newRunningPod('1', 'test', '1');
  h.workers.updatePod({ updateType: 'create', runningPod });
  await h.drain();
  expect(h.syncer.calls).toHaveLength(0);
  h.workers.updatePod({ updateType: 'kill', runningPod });
  await h.drain();
  expect(h.syncer.calls).toHaveLength(1);
  expect(h.syncer.calls[0]).toMatchObject({ kind: 'syncTerminatingRuntimePod', runningPod });
});

test('TestUpdatePodForTerminatedRuntimePod: a runtime kill of a terminated pod is ignored', async () => {
  const gate = deferred();
  const h = harness({
    hook: (c) => (c.kind === 'syncTerminatedPod' ? gate.promise.then(() => undefined) : undefined),
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  await h.clock.tick(0);
  expect(h.workers.isPodKnownTerminated('1')).toBe(true);
  const before = h.syncer.calls.length;
  h.workers.updatePod({ updateType: 'kill', runningPod: newRunningPod('1', 'ns', 'p') });
  gate.resolve();
  await h.drain();
  expect(h.syncer.calls).toHaveLength(before);
  expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  // The runtime sighting is remembered, but the finished worker is not driven again.
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({ observedRuntime: true, finished: true });
});

test('TestUpdatePodDoesNotForgetSyncPodKill: create, kill, update in quick succession still terminate', async () => {
  const h = harness();
  for (let i = 0; i < 20; i++) {
    const pod = newNamedPod(String(i), 'ns', String(i));
    h.workers.updatePod({ updateType: 'create', pod });
    h.workers.updatePod({ updateType: 'kill', pod });
    h.workers.updatePod({ updateType: 'update', pod });
  }
  await h.drain();
  for (let i = 0; i < 20; i++) {
    const history = h.syncer.historyOf(String(i));
    expect([
      ['syncTerminatingPod', 'syncTerminatedPod'],
      ['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod'],
    ]).toContainEqual(history);
    expect(h.syncer.callsFor(String(i)).find((c) => c.kind === 'syncTerminatingPod')?.gracePeriod).toBe(30);
  }
});

test('TestUpdatePodParallel: pending updates coalesce and the newest one is always delivered', async () => {
  const h = harness();
  const numPods = 20;
  for (let i = 0; i < numPods; i++) {
    for (let j = i; j < numPods; j++) {
      h.workers.updatePod({ updateType: 'create', pod: newNamedPod(String(j), 'ns', String(i)) });
    }
  }
  await h.drain();
  for (let i = 0; i < numPods; i++) {
    const calls = h.syncer.callsFor(String(i));
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.length).toBeLessThanOrEqual(i + 1);
    expect(calls.at(-1)?.pod?.metadata?.name).toBe(String(i));
  }
});

test('coalescing: updates sent during a sync are delivered once, as the newest', async () => {
  const gate = deferred();
  let first = true;
  const h = harness({
    hook: async (c) => {
      if (c.kind === 'syncPod' && first) {
        first = false;
        await gate.promise;
      }
      return undefined;
    },
  });
  const pod = (name: string) => newNamedPod('1', 'ns', name);
  h.workers.updatePod({ updateType: 'create', pod: pod('v1') });
  await h.clock.tick(0);
  h.workers.updatePod({ updateType: 'update', pod: pod('v2') });
  h.workers.updatePod({ updateType: 'update', pod: pod('v3') });
  h.workers.updatePod({ updateType: 'sync', pod: pod('v4') });
  expect(h.workers.getPodSyncStatus('1')?.pendingUpdate?.pod?.metadata?.name).toBe('v4');
  gate.resolve();
  await h.drain();
  expect(h.syncer.callsFor('1').map((c) => `${c.updateType}:${c.pod?.metadata?.name}`)).toEqual([
    'create:v1',
    'sync:v4',
  ]);
});

test('TestTerminalPhaseTransition: a terminal syncPod result moves the pod to terminated on its own', async () => {
  const terminal = new Set<string>();
  const h = harness({ hook: (c) => ({ isTerminal: terminal.has(c.uid) }) });
  const pod = newNamedPod('1', 'test1', 'pod1');
  h.workers.updatePod({ updateType: 'update', pod });
  await h.drain();
  expect(h.workers.getPodSyncStatus('1')?.terminatedAt).toBeUndefined();
  h.workers.updatePod({ updateType: 'update', pod });
  await h.drain();
  expect(h.workers.isPodTerminationRequested('1')).toBe(false);
  terminal.add('1');
  h.workers.updatePod({ updateType: 'update', pod });
  await h.drain();
  const status = h.workers.getPodSyncStatus('1');
  expect(status?.terminatingAt).toBeDefined();
  expect(status?.terminatedAt).toBeDefined();
  expect(status?.finished).toBe(true);
  // A natural completion is neither a deletion nor an eviction.
  expect(status?.deleted).toBe(false);
  expect(h.syncer.historyOf('1')).toEqual([
    'syncPod:update',
    'syncPod:update',
    'syncPod:update',
    'syncTerminatingPod',
    'syncTerminatedPod',
  ]);
});

// Upstream isPodStatusCacheTerminal: a running container or a READY sandbox in the cached
// status means the terminal pod may still run, so it is not recorded as terminated on first
// sight and must go through syncTerminatingPod.
describe('a terminal pod seen first whose cached runtime status still runs something', () => {
  const sandbox = (state: 'ready' | 'notready') => ({
    id: 's1',
    name: 'done-pod',
    namespace: 'ns',
    uid: '1',
    attempt: 0,
    state,
    createdAt: T0,
    ips: [],
    hostNetwork: false,
    labels: {},
    annotations: {},
  });
  const cases: { desc: string; status: RuntimePodStatus; preTerminated: boolean }[] = [
    {
      desc: 'a ready sandbox',
      status: { ...exitedStatus, sandboxStatuses: [sandbox('ready')] },
      preTerminated: false,
    },
    {
      desc: 'a sandbox that is not ready',
      status: { ...exitedStatus, sandboxStatuses: [sandbox('notready')] },
      preTerminated: true,
    },
  ];
  for (const tc of cases) {
    test(tc.desc, async () => {
      const h = harness();
      const pod = withPhase(newNamedPod('1', 'ns', 'done-pod'), 'Failed');
      h.cache.set('1', tc.status);
      h.workers.updatePod({ updateType: 'create', pod });
      expect(h.workers.isPodKnownTerminated('1')).toBe(tc.preTerminated);
      await h.drain();
      expect(h.syncer.historyOf('1')).toEqual(
        tc.preTerminated ? ['syncTerminatedPod'] : ['syncTerminatingPod', 'syncTerminatedPod'],
      );
    });
  }

  test('a running container', async () => {
    const h = harness();
    const pod = withPhase(newNamedPod('1', 'ns', 'done-pod'), 'Succeeded');
    const running = {
      id: { type: 'containerd', id: 'c1' },
      name: 'c',
      state: 'running',
      createdAt: T0,
      startedAt: T0,
      finishedAt: 0,
      exitCode: 0,
      image: 'busybox',
      imageId: 'sha256:1',
      hash: '0',
      restartCount: 0,
      reason: '',
      message: '',
    } as const;
    h.cache.set('1', { ...exitedStatus, containerStatuses: [running] });
    h.workers.updatePod({ updateType: 'create', pod });
    expect(h.workers.isPodKnownTerminated('1')).toBe(false);
    expect(h.workers.getPodSyncStatus('1')?.terminatingAt).toBe(at(0));
    await h.drain();
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  });
});

// Upstream startPodSync/allowPodStart: a static pod recorded as terminated on first sight
// (kubelet restart, terminal phase, nothing running) may never start, so its worker finishes
// without any sync call, not even syncTerminatedPod.
test('a terminal static pod already stopped in the runtime finishes without a sync', async () => {
  const h = harness();
  const pod = withPhase(newNamedPod('1', 'ns', 'done-pod', true), 'Succeeded');
  h.cache.set('1', exitedStatus);
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  expect(h.syncer.calls).toEqual([]);
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({
    finished: true,
    startedAt: undefined,
    working: false,
  });
  expect(h.workers.staticPodStartState()).toEqual({ started: {}, waiting: { 'done-pod_ns': ['1'] } });
});

// Upstream UpdatePod sets `evicted` only on the transition to terminating, and mergeLastUpdate
// replaces (does not OR) the active kill options' Evict.
test('eviction is decided when termination begins; later kill options replace Evict', async () => {
  const gate = deferred();
  const h = harness({
    hook: (c) => (c.kind === 'syncTerminatingPod' ? gate.promise.then(() => undefined) : undefined),
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { evict: true } });
  await h.clock.tick(0);
  expect(h.workers.getPodSyncStatus('1')?.activeUpdate?.killPodOptions?.evict).toBe(true);
  h.workers.updatePod({ updateType: 'update', pod });
  gate.resolve();
  await h.drain();
  const status = h.workers.getPodSyncStatus('1');
  expect(status?.evicted).toBe(true);
  expect(status?.activeUpdate?.killPodOptions?.evict).toBe(false);

  // a pod already terminating for a deletion does not become evicted
  const h2 = harness({ hook: (c) => (c.kind === 'syncTerminatingPod' ? untilAborted(c.signal) : undefined) });
  const deleted = withDeletion(newNamedPod('2', 'ns', 'q'));
  h2.workers.updatePod({ updateType: 'update', pod: deleted });
  await h2.clock.tick(0);
  h2.workers.updatePod({ updateType: 'kill', pod: deleted, killPodOptions: { evict: true } });
  expect(h2.workers.getPodSyncStatus('2')).toMatchObject({ deleted: true, evicted: false });
  expect(h2.workers.shouldPodContentBeRemoved('2')).toBe(false);
});
