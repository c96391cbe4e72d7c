import { newNamedPod } from '@kubelet-kit/pod-workers/testing';
import { expect, test } from 'vitest';
import { harness } from './helpers.js';

const staticPod = (uid: string) => newNamedPod(uid, 'test1', 'pod1', true);

// Upstream TestStaticPodExclusion, step by step (less the held-channel delivery, which has no
// counterpart without goroutines).
test('TestStaticPodExclusion: static pods with one full name start one at a time, in arrival order', async () => {
  const h = harness();
  const w = h.workers;
  const names = (uid: string) => h.syncer.callsFor(uid).map((c) => `${c.kind}:${c.updateType ?? ''}`);

  // a normal and a static pod with the same name both run
  w.updatePod({ updateType: 'update', pod: newNamedPod('1-normal', 'test1', 'pod1') });
  w.updatePod({ updateType: 'update', pod: staticPod('2-static') });
  await h.drain();
  expect(names('1-normal')).toEqual(['syncPod:update']);
  expect(names('2-static')).toEqual(['syncPod:update']);
  expect(w.staticPodStartState()).toEqual({ started: { pod1_test1: '2-static' }, waiting: {} });

  // a second and third static pod wait, in order, and are queued for a retry
  h.queue.getWork();
  w.updatePod({ updateType: 'update', pod: staticPod('3-static') });
  w.updatePod({ updateType: 'update', pod: staticPod('4-static') });
  await h.drain();
  expect(names('3-static')).toEqual([]);
  expect(names('4-static')).toEqual([]);
  expect(w.staticPodStartState()).toEqual({
    started: { pod1_test1: '2-static' },
    waiting: { pod1_test1: ['3-static', '4-static'] },
  });
  expect(h.queue.dueTime('3-static')).toBe(h.clock.now() + 10_000);
  expect(h.queue.dueTime('4-static')).toBe(h.clock.now() + 10_000);
  expect(w.getPodSyncStatus('3-static')).toMatchObject({ working: false, startedAt: undefined });
  expect(w.getPodSyncStatus('3-static')?.pendingUpdate?.pod?.metadata?.uid).toBe('3-static');

  // a retry of 3-static still waits while 2-static runs
  h.clock.advance(10_000);
  expect(h.queue.getWork().sort()).toEqual(['3-static', '4-static']);
  w.updatePod({ updateType: 'update', pod: staticPod('3-static') });
  await h.drain();
  expect(names('3-static')).toEqual([]);
  expect(h.queue.dueTime('3-static')).toBe(h.clock.now() + 10_000);

  // killing 3-static before it started finishes it without any sync call
  h.queue.getWork();
  h.clock.advance(10_000);
  h.queue.getWork();
  w.updatePod({ updateType: 'kill', pod: staticPod('3-static') });
  await h.drain();
  expect(names('3-static')).toEqual([]);
  expect(w.getPodSyncStatus('3-static')).toMatchObject({ finished: true, working: false });
  expect(w.isPodKnownTerminated('3-static')).toBe(true);
  expect(h.queue.getWork()).toEqual([]);
  expect(w.staticPodStartState()).toEqual({
    started: { pod1_test1: '2-static' },
    waiting: { pod1_test1: ['3-static', '4-static'] },
  });

  // terminating 2-static frees the slot
  expect(w.isPodForMirrorPodTerminatingByFullName('pod1_test1')).toBe(false);
  w.updatePod({ updateType: 'kill', pod: staticPod('2-static') });
  expect(w.isPodForMirrorPodTerminatingByFullName('pod1_test1')).toBe(true);
  await h.drain();
  expect(w.isPodKnownTerminated('2-static')).toBe(true);
  expect(w.isPodForMirrorPodTerminatingByFullName('pod1_test1')).toBe(false);
  expect(w.staticPodStartState().started).toEqual({});
  // the first live waiter (3-static was killed) is due at once, not after its 10 s backoff
  expect(h.queue.dueTime('4-static')).toBe(h.clock.now());
  expect(h.queue.dueTime('3-static')).toBeUndefined();

  // the next periodic sync of 4-static starts it: 3-static was pruned as terminating
  w.updatePod({ updateType: 'update', pod: staticPod('4-static') });
  await h.drain();
  expect(names('4-static')).toEqual(['syncPod:update']);
  expect(w.staticPodStartState()).toEqual({ started: { pod1_test1: '4-static' }, waiting: {} });

  let state = w.syncKnownPods(['1-normal', '2-static', '3-static', '4-static'].map((u) => staticPod(u)));
  await h.drain();
  expect(Object.fromEntries(state)).toEqual({
    '1-normal': { state: 'sync', orphan: false, hasConfig: true, static: false },
    '2-static': { state: 'terminated', orphan: false, hasConfig: true, static: true },
    '3-static': { state: 'terminated', orphan: false, hasConfig: false, static: false },
    '4-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
  });
  expect(w.getPodSyncStatus('3-static')).toMatchObject({ finished: true, working: false });

  // dropping 3-static from the config forgets it
  state = w.syncKnownPods(['1-normal', '2-static', '4-static'].map((u) => staticPod(u)));
  await h.drain();
  expect([...state.keys()].sort()).toEqual(['1-normal', '2-static', '4-static']);
  expect(w.getPodSyncStatus('3-static')).toBeUndefined();

  // three more static pods; the started one is killed and re-created with its UID
  for (const uid of ['7-static', '8-static', '9-static'])
    w.updatePod({ updateType: 'update', pod: staticPod(uid) });
  await h.drain();
  w.updatePod({ updateType: 'kill', pod: staticPod('4-static') });
  await h.drain();
  w.updatePod({ updateType: 'create', pod: staticPod('4-static') });
  await h.drain();
  expect(w.getPodSyncStatus('4-static')?.restartRequested).toBe(true);
  expect(w.staticPodStartState()).toEqual({
    started: {},
    waiting: { pod1_test1: ['7-static', '8-static', '9-static'] },
  });

  // 8 cannot jump the line even when it is synced first
  w.updatePod({ updateType: 'update', pod: staticPod('8-static') });
  await h.drain();
  expect(names('7-static')).toEqual([]);
  expect(names('8-static')).toEqual([]);
  expect(names('9-static')).toEqual([]);
  expect(w.staticPodStartState().waiting).toEqual({ pod1_test1: ['7-static', '8-static', '9-static'] });

  // killing 7-static (never started) lets 8-static go next
  w.updatePod({ updateType: 'kill', pod: staticPod('7-static') });
  await h.drain();
  expect(names('7-static')).toEqual([]);
  w.updatePod({ updateType: 'update', pod: staticPod('8-static') });
  await h.drain();
  expect(names('8-static')).toEqual(['syncPod:update']);
  expect(w.staticPodStartState()).toEqual({
    started: { pod1_test1: '8-static' },
    waiting: { pod1_test1: ['9-static'] },
  });

  // everything but 8-static undesired: the running orphan starts terminating, finished ones go
  state = w.syncKnownPods([staticPod('8-static')]);
  expect(Object.fromEntries(state)).toEqual({
    '1-normal': { state: 'terminating', orphan: true, hasConfig: true, static: false },
    '8-static': { state: 'sync', orphan: false, hasConfig: true, static: true },
  });
  await h.drain();
  expect(names('1-normal')).toEqual(['syncPod:update', 'syncTerminatingPod:', 'syncTerminatedPod:']);
  // 9-static never started and is orphaned: removed without a sync
  expect(w.getPodSyncStatus('9-static')).toBeUndefined();
  expect(names('9-static')).toEqual([]);
});

test('static pods with different full names start independently', async () => {
  const h = harness();
  h.workers.updatePod({ updateType: 'create', pod: newNamedPod('a', 'ns', 'one', true) });
  h.workers.updatePod({ updateType: 'create', pod: newNamedPod('b', 'ns', 'two', true) });
  await h.drain();
  expect(h.syncer.historyOf('a')).toEqual(['syncPod:create']);
  expect(h.syncer.historyOf('b')).toEqual(['syncPod:create']);
  expect(h.workers.staticPodStartState().started).toEqual({ one_ns: 'a', two_ns: 'b' });
});

test('a waiting static pod removed from the config releases its place without a sync', async () => {
  const h = harness();
  h.workers.updatePod({ updateType: 'create', pod: staticPod('a') });
  h.workers.updatePod({ updateType: 'create', pod: staticPod('b') });
  h.workers.updatePod({ updateType: 'create', pod: staticPod('c') });
  await h.drain();
  // b is orphaned before it ever started: it goes, and c is next in line
  h.workers.syncKnownPods([staticPod('a'), staticPod('c')]);
  expect(h.workers.getPodSyncStatus('b')).toBeUndefined();
  h.workers.updatePod({ updateType: 'kill', pod: staticPod('a') });
  await h.drain();
  h.workers.updatePod({ updateType: 'sync', pod: staticPod('c') });
  await h.drain();
  expect(h.syncer.historyOf('b')).toEqual([]);
  expect(h.syncer.historyOf('c')).toEqual(['syncPod:sync']);
  expect(h.workers.staticPodStartState()).toEqual({ started: { pod1_test1: 'c' }, waiting: {} });
});
