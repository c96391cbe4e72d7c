import { newNamedPod, newRunningPod } from '@kubelet-kit/pod-workers/testing';
import { describe, expect, test } from 'vitest';
import { deferred, harness, untilAborted, withDeletion } from './helpers.js';

test('TestSyncKnownPods: queries before and after the first sync, and purging of terminated workers', async () => {
  const h = harness();
  const w = h.workers;
  const numPods = 20;
  for (let i = 0; i < numPods; i++) {
    w.updatePod({ updateType: 'update', pod: newNamedPod(String(i), 'ns', 'name') });
  }
  await h.drain();
  expect(w.knownPodUIDs()).toHaveLength(numPods);

  const desired = new Set(['2', '14']);
  for (let i = 0; i < numPods; i++) {
    if (desired.has(String(i))) continue;
    let pod = newNamedPod(String(i), 'ns', 'name');
    if (i % 2 === 0) pod = withDeletion(pod);
    w.updatePod({ updateType: 'kill', pod });
  }
  await h.drain();

  expect(w.shouldPodContainersBeTerminating('0')).toBe(true);
  expect(w.shouldPodContainersBeTerminating('1')).toBe(true);
  expect(w.shouldPodContainersBeTerminating('2')).toBe(false);
  expect(w.isPodTerminationRequested('0')).toBe(true);
  expect(w.isPodTerminationRequested('2')).toBe(false);
  expect(w.couldHaveRunningContainers('0')).toBe(false);
  expect(w.couldHaveRunningContainers('1')).toBe(false);
  expect(w.couldHaveRunningContainers('2')).toBe(true);
  expect(w.shouldPodContentBeRemoved('0')).toBe(true); // deleted and terminated
  expect(w.shouldPodContentBeRemoved('1')).toBe(false); // terminated, not deleted
  expect(w.shouldPodContentBeRemoved('2')).toBe(false); // running
  expect(w.shouldPodRuntimeBeRemoved('1')).toBe(true);
  expect(w.shouldPodRuntimeBeRemoved('2')).toBe(false);
  expect(w.shouldPodBeFinished('1')).toBe(true);
  expect(w.shouldPodBeFinished('2')).toBe(false);

  // unknown UIDs before the first sync: they might still be running
  expect(w.shouldPodContainersBeTerminating('abc')).toBe(false);
  expect(w.couldHaveRunningContainers('abc')).toBe(true);
  expect(w.shouldPodContentBeRemoved('abc')).toBe(false);
  expect(w.shouldPodRuntimeBeRemoved('abc')).toBe(false);
  expect(w.shouldPodBeFinished('abc')).toBe(false);
  expect(w.isPodKnownTerminated('abc')).toBe(false);

  const known = w.syncKnownPods([newNamedPod('2', 'ns', 'name'), newNamedPod('14', 'ns', 'name')]);
  expect([...known.keys()].sort()).toEqual(['14', '2']);
  expect(w.knownPodUIDs().sort()).toEqual(['14', '2']);
  expect(w.isPodTerminationRequested('2')).toBe(false);

  // unknown UIDs after the first sync: known not to run
  expect(w.shouldPodContainersBeTerminating('abc')).toBe(true);
  expect(w.couldHaveRunningContainers('abc')).toBe(false);
  expect(w.shouldPodContentBeRemoved('abc')).toBe(true);
  expect(w.shouldPodRuntimeBeRemoved('abc')).toBe(true);
  expect(w.shouldPodBeFinished('abc')).toBe(true);
  expect(w.isPodKnownTerminated('abc')).toBe(false);

  // workers that are not terminated stay, and are driven to completion as orphans
  w.syncKnownPods([]);
  await h.drain();
  expect(w.knownPodUIDs().sort()).toEqual(['14', '2']);
  expect(h.syncer.historyOf('2')).toEqual(['syncPod:update', 'syncTerminatingPod', 'syncTerminatedPod']);
  expect(w.getPodSyncStatus('2')).toMatchObject({ deleted: true, finished: true, gracePeriod: 30 });
  expect(w.shouldPodContentBeRemoved('2')).toBe(true);

  // once terminated, the next housekeeping forgets them
  w.syncKnownPods([]);
  expect(w.knownPodUIDs()).toEqual([]);
  await w.whenIdle();
});

// Upstream Test_removeTerminatedWorker, reached through real flows rather than injected state.
describe('removeTerminatedWorker through syncKnownPods', () => {
  test('finished worker: removed', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'p');
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.drain();
    expect(h.workers.syncKnownPods([]).has('1')).toBe(false);
    expect(h.workers.getPodSyncStatus('1')).toBeUndefined();
  });

  test('finished worker still desired: kept until it is orphaned or restarted', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'p');
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.drain();
    expect(h.workers.syncKnownPods([pod]).get('1')).toEqual({
      state: 'terminated',
      orphan: false,
      hasConfig: true,
      static: false,
    });
    // updates to a finished UID are ignored until it is purged
    h.workers.updatePod({ updateType: 'update', pod });
    await h.drain();
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  });

  test('waiting-to-start worker that is still desired: kept', async () => {
    const h = harness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('a', 'ns', 'p', true) });
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('b', 'ns', 'p', true) });
    await h.drain();
    const known = h.workers.syncKnownPods([
      newNamedPod('a', 'ns', 'p', true),
      newNamedPod('b', 'ns', 'p', true),
    ]);
    expect(known.get('b')).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: true });
  });

  test('orphaned started worker: kept, terminating with the spec grace period', async () => {
    const h = harness();
    const pod = newNamedPod('1', 'ns', 'p');
    h.workers.updatePod({ updateType: 'create', pod });
    await h.drain();
    const known = h.workers.syncKnownPods([]);
    expect(known.get('1')).toEqual({ state: 'terminating', orphan: true, hasConfig: true, static: false });
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({ deleted: true, gracePeriod: 30, working: true });
    expect(h.workers.getPodSyncStatus('1')?.pendingUpdate?.pod).toBe(pod);
    await h.drain();
    expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);
  });

  // Upstream replays activeUpdate, which carries no kill options for a pod that was never
  // killed: syncTerminatingPod gets no grace period and the syncer falls back to the pod's own.
  test('orphaned started worker: its terminating sync gets no grace period override', async () => {
    const h = harness();
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('1', 'ns', 'p') });
    await h.drain();
    h.workers.syncKnownPods([]);
    await h.drain();
    const terminating = h.syncer.callsFor('1').find((c) => c.kind === 'syncTerminatingPod');
    expect(terminating?.gracePeriod).toBeUndefined();
    expect(h.workers.getPodSyncStatus('1')?.gracePeriod).toBe(30);
  });

  // Upstream "orphaned terminated worker": housekeeping replays the last update, so a worker
  // whose syncTerminatedPod failed is retried although no caller sends it updates any more.
  test('orphaned terminated worker: kept, and its failed syncTerminatedPod is retried', async () => {
    let failures = 1;
    const h = harness({
      hook: (c) => {
        if (c.kind === 'syncTerminatedPod' && failures-- > 0) throw new Error('volumes still mounted');
        return undefined;
      },
    });
    const pod = newNamedPod('1', 'ns', 'p');
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.drain();
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({ finished: false, working: false });
    expect(h.workers.isPodKnownTerminated('1')).toBe(true);
    const known = h.workers.syncKnownPods([]);
    expect(known.get('1')).toEqual({ state: 'terminated', orphan: true, hasConfig: true, static: false });
    expect(h.workers.getPodSyncStatus('1')).toMatchObject({ working: true, pendingUpdate: { pod } });
    await h.drain();
    expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod', 'syncTerminatedPod']);
    expect(h.workers.syncKnownPods([]).has('1')).toBe(false);
  });

  test('orphaned terminating worker with a pending update: the pending update is kept', async () => {
    const gate = deferred();
    const h = harness({
      hook: (c) => (c.kind === 'syncTerminatingPod' ? gate.promise.then(() => undefined) : undefined),
    });
    const pod = newNamedPod('1', 'ns', 'v1');
    h.workers.updatePod({ updateType: 'create', pod });
    await h.drain();
    h.workers.updatePod({ updateType: 'kill', pod });
    await h.clock.tick(0);
    const newer = newNamedPod('1', 'ns', 'v2');
    h.workers.updatePod({ updateType: 'update', pod: newer });
    h.workers.syncKnownPods([]);
    expect(h.workers.getPodSyncStatus('1')?.pendingUpdate?.pod).toBe(newer);
    gate.resolve();
    await h.drain();
    expect(h.syncer.callsFor('1').at(-1)).toMatchObject({ kind: 'syncTerminatedPod', pod: newer });
  });

  test('orphaned runtime pod that is still terminating: kept until the runtime kill completes', async () => {
    const h = harness({
      hook: (c) => (c.kind === 'syncTerminatingRuntimePod' ? untilAborted(c.signal) : undefined),
    });
    h.workers.updatePod({ updateType: 'kill', runningPod: newRunningPod('1', 'ns', 'r') });
    await h.clock.tick(0);
    const known = h.workers.syncKnownPods([]);
    expect(known.get('1')).toEqual({ state: 'terminating', orphan: true, hasConfig: false, static: false });
  });
});

test('restartRequested purge path: a UID killed then created again restarts after housekeeping', async () => {
  const h = harness();
  const pod = newNamedPod('1', 'ns', 'p', true);
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  h.workers.updatePod({ updateType: 'kill', pod });
  h.workers.updatePod({ updateType: 'create', pod });
  expect(h.workers.getPodSyncStatus('1')?.restartRequested).toBe(true);
  await h.drain();
  // the create was dropped: the pod terminated and further creates are ignored
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);

  // housekeeping purges the finished worker although the pod is desired; the caller re-sends
  const known = h.workers.syncKnownPods([pod]);
  expect(known.has('1')).toBe(false);
  expect(h.workers.getPodSyncStatus('1')).toBeUndefined();
  expect(h.workers.staticPodStartState().started).toEqual({});
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual([
    'syncPod:create',
    'syncTerminatingPod',
    'syncTerminatedPod',
    'syncPod:create',
  ]);
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({ restartRequested: false, finished: false });
});

test('restartRequested on a worker that is still terminating: kept until it finishes', async () => {
  const gate = deferred();
  const h = harness({
    hook: (c) => (c.kind === 'syncTerminatingPod' ? gate.promise.then(() => undefined) : undefined),
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  h.workers.updatePod({ updateType: 'create', pod });
  expect(h.workers.syncKnownPods([pod]).get('1')?.state).toBe('terminating');
  gate.resolve();
  await h.drain();
  expect(h.workers.syncKnownPods([pod]).has('1')).toBe(false);
});

// Housekeeping asks every 2 s about every worker: an unchanged worker's answer is the object
// given last time, and a changed one gets a new, right answer.
test('syncKnownPods gives an unchanged worker the same answer object, a changed one a new one', async () => {
  const h = harness();
  const w = h.workers;
  const pod = newNamedPod('1', 'ns', 'p');
  w.updatePod({ updateType: 'update', pod });
  await h.drain();
  const first = w.syncKnownPods([pod]).get('1');
  expect(first).toEqual({ state: 'sync', orphan: false, hasConfig: true, static: false });
  expect(Object.isFrozen(first)).toBe(true);
  expect(w.syncKnownPods([pod]).get('1')).toBe(first);

  w.updatePod({ updateType: 'kill', pod });
  await h.drain();
  const killed = w.syncKnownPods([pod]).get('1');
  expect(killed).not.toBe(first);
  expect(killed).toEqual({ state: 'terminated', orphan: false, hasConfig: true, static: false });
  expect(w.syncKnownPods([pod]).get('1')).toBe(killed);
  await w.whenIdle();
});
