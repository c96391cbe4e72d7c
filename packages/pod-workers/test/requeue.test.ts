import { ContainerReasons, NetworkNotReadyError, PodSyncError } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { BasicWorkQueue } from '@kubelet-kit/pod-workers';
import { newNamedPod } from '@kubelet-kit/pod-workers/testing';
import { describe, expect, test } from 'vitest';
import { at, type Deferred, deferred, harness, T0 } from './helpers.js';

test('BasicWorkQueue: items come out once due, and a later enqueue replaces the due time', () => {
  const clock = new FakeClock(T0);
  const q = new BasicWorkQueue({ clock });
  q.enqueue('a', 1000);
  q.enqueue('b', 5000);
  q.enqueue('a', 3000);
  clock.advance(1000);
  expect(q.getWork()).toEqual([]);
  clock.advance(2000);
  expect(q.getWork()).toEqual(['a']);
  expect(q.getWork()).toEqual([]);
  clock.advance(2000);
  expect(q.getWork()).toEqual(['b']);
  expect(q.size).toBe(0);
});

describe('completeWork requeue delays', () => {
  const cases: { desc: string; error?: unknown; random: number; delay: number }[] = [
    { desc: 'success: the resync interval', random: 0, delay: 60_000 },
    {
      desc: 'success: the resync interval with the most jitter',
      random: 0.999,
      delay: 60_000 + 0.999 * 0.5 * 60_000,
    },
    { desc: 'error: the backoff period', error: new Error('boom'), random: 0, delay: 10_000 },
    { desc: 'error: the backoff period, jittered', error: new Error('boom'), random: 0.5, delay: 12_500 },
    {
      desc: 'network not ready: the 1 s transient backoff',
      error: new NetworkNotReadyError('cni config uninitialized'),
      random: 0,
      delay: 1000,
    },
    {
      desc: 'a CrashLoopBackOff result is not an error: the resync interval',
      error: new PodSyncError([
        {
          action: 'StartContainer',
          target: 'c',
          error: ContainerReasons.CrashLoopBackOff,
          message: 'back-off',
        },
      ]),
      random: 0,
      delay: 60_000,
    },
    {
      desc: 'an image pull failure is an error: the backoff period',
      error: new PodSyncError([
        { action: 'StartContainer', target: 'c', error: ContainerReasons.ErrImagePull, message: 'x' },
      ]),
      random: 0,
      delay: 10_000,
    },
  ];
  for (const tc of cases) {
    test(tc.desc, async () => {
      const h = harness({
        random: () => tc.random,
        hook: () => {
          if (tc.error !== undefined) throw tc.error;
          return undefined;
        },
      });
      h.workers.updatePod({ updateType: 'create', pod: newNamedPod('1', 'ns', 'p') });
      await h.drain();
      expect(h.queue.dueTime('1')).toBe(T0 + tc.delay);
      expect(h.workers.getPodSyncStatus('1')?.working).toBe(false);
    });
  }

  test('phase transitions requeue at once', async () => {
    const h = harness({ hook: () => ({ isTerminal: true }) });
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod('1', 'ns', 'p') });
    await h.drain();
    expect(h.queue.dueTime('1')).toBe(T0);
    expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);
  });
});

test('workers never resync themselves: the due pod waits for the caller', async () => {
  const h = harness();
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  await h.clock.tick(120_000);
  expect(h.syncer.calls).toHaveLength(1);
  expect(h.queue.getWork()).toEqual(['1']);
  h.workers.updatePod({ updateType: 'sync', pod });
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncPod:sync']);
});

test('each sync waits for a runtime status newer than the end of the previous sync', async () => {
  const h = harness({
    autoRefresh: false,
    // every sync takes a second of fake time
    hook: async (c) => {
      await h.clock.sleep(1000, c.signal);
      return undefined;
    },
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.clock.tick(0);
  // no relist yet: the worker waits
  expect(h.syncer.calls).toHaveLength(0);
  expect(h.cache.waiting).toBe(1);
  h.cache.updateTime();
  await h.clock.tick(0);
  expect(h.syncer.calls).toHaveLength(1);
  await h.clock.tick(1000);
  await h.drain();
  expect(h.cache.requests[0]).toEqual({ uid: '1', minTime: 0 });

  h.workers.updatePod({ updateType: 'sync', pod });
  await h.clock.tick(0);
  // the cache was refreshed at T0, the sync ended at T0+1: that status is too old
  expect(h.cache.requests[1]).toEqual({ uid: '1', minTime: at(1) });
  expect(h.cache.waiting).toBe(1);
  expect(h.syncer.calls).toHaveLength(1);
  const status = {
    id: '1',
    name: 'p',
    namespace: 'ns',
    ips: ['10.0.0.1'],
    containerStatuses: [],
    sandboxStatuses: [],
    timestamp: at(1),
  };
  h.cache.set('1', status);
  await h.clock.tick(0);
  expect(h.syncer.calls).toHaveLength(2);
  expect(h.syncer.calls[1]?.podStatus).toBe(status);
  await h.clock.tick(1000);
  await h.drain();
  expect(h.queue.dueTime('1')).toBe(at(2) + 60_000);
});

test('a kill while waiting for the status cache cancels the wait', async () => {
  const h = harness({ autoRefresh: false });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.clock.tick(0);
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  expect(h.syncer.calls).toHaveLength(0);
  h.cache.updateTime();
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
});

test('a status cache error emits FailedSync and backs off without calling the syncer', async () => {
  const h = harness();
  h.cache.set('1', undefined, new Error('rpc error: deadline exceeded'));
  h.workers.updatePod({ updateType: 'create', pod: newNamedPod('1', 'ns', 'p') });
  await h.drain();
  expect(h.syncer.calls).toHaveLength(0);
  expect(h.recorder.events).toMatchObject([
    {
      object: { kind: 'Pod', name: 'p', namespace: 'ns', uid: '1' },
      type: 'Warning',
      reason: 'FailedSync',
      message: 'error determining status: rpc error: deadline exceeded',
    },
  ]);
  expect(h.queue.dueTime('1')).toBe(T0 + 10_000);
});

test('different pods sync concurrently, at most maxConcurrentSyncs at once', async () => {
  let running = 0;
  let peak = 0;
  const gates = new Map<string, Deferred>();
  const h = harness({
    maxConcurrentSyncs: 2,
    hook: async (c) => {
      running++;
      peak = Math.max(peak, running);
      const gate = deferred();
      gates.set(c.uid, gate);
      await gate.promise;
      running--;
      return undefined;
    },
  });
  for (let i = 0; i < 5; i++)
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod(String(i), 'ns', `p${i}`) });
  await h.clock.tick(0);
  expect(h.syncer.calls.map((c) => c.uid)).toEqual(['0', '1']);
  gates.get('0')?.resolve();
  await h.clock.tick(0);
  expect(h.syncer.calls.map((c) => c.uid)).toEqual(['0', '1', '2']);
  for (let round = 0; round < 5; round++) {
    for (const g of gates.values()) g.resolve();
    await h.clock.tick(0);
  }
  await h.drain();
  expect(h.syncer.calls).toHaveLength(5);
  expect(peak).toBe(2);
});

test('without a bound all pods sync at once', async () => {
  const gate = deferred();
  const h = harness({ hook: () => gate.promise.then(() => undefined) });
  for (let i = 0; i < 10; i++)
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod(String(i), 'ns', `p${i}`) });
  // Workers start one per turn of the event loop; none of them finishes while the gate holds.
  for (let turn = 0; turn < 20 && h.syncer.calls.length < 10; turn++) await h.clock.tick(0);
  expect(h.syncer.calls).toHaveLength(10);
  gate.resolve();
  await h.drain();
});

test('a burst of 3000 new pods starts every worker once, in the order of the updates', async () => {
  const h = harness();
  const uids = Array.from({ length: 3000 }, (_, i) => String(i));
  for (const uid of uids)
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod(uid, 'ns', `p${uid}`) });
  await h.drain();
  expect(h.syncer.calls.map((c) => c.uid)).toEqual(uids);
});

test('a new worker runs until it waits on I/O before the next one starts', async () => {
  const steps: string[] = [];
  const io = deferred();
  const h = harness({
    hook: async (c) => {
      steps.push(`${c.uid} start`);
      // Promise continuations (what a sync runs between its awaits), then real waiting.
      for (let i = 0; i < 5; i++) await Promise.resolve();
      steps.push(`${c.uid} waits on I/O`);
      await io.promise;
      return undefined;
    },
  });
  for (const uid of ['a', 'b', 'c'])
    h.workers.updatePod({ updateType: 'create', pod: newNamedPod(uid, 'ns', uid) });
  // Nothing starts within the caller's synchronous code.
  expect(steps).toEqual([]);
  for (let turn = 0; turn < 10 && steps.length < 6; turn++) await h.clock.tick(0);
  expect(steps).toEqual([
    'a start',
    'a waits on I/O',
    'b start',
    'b waits on I/O',
    'c start',
    'c waits on I/O',
  ]);
  io.resolve();
  await h.drain();
  expect(h.syncer.calls.map((c) => c.uid)).toEqual(['a', 'b', 'c']);
});

test('pod worker duration metric is observed with the oldest pending start time', async () => {
  const observed: [string, number][] = [];
  const h = harness();
  const { BasicPodWorkers } = await import('@kubelet-kit/pod-workers');
  const workers = new BasicPodWorkers({
    podSyncer: h.syncer,
    podCache: h.cache,
    clock: h.clock,
    metrics: { observePodWorkerDuration: (op, s) => observed.push([op, s]) },
  });
  const pod = newNamedPod('1', 'ns', 'p');
  workers.updatePod({ updateType: 'create', pod, startTime: T0 });
  h.clock.advance(3000);
  workers.updatePod({ updateType: 'update', pod, startTime: at(3) });
  h.clock.advance(1000);
  const { drainWorkers } = await import('@kubelet-kit/pod-workers/testing');
  await drainWorkers(workers, h.clock);
  expect(observed).toEqual([['update', 4]]);
});

// Upstream UpdatePod keeps the pending update's StartTime only when it is before the new
// update's; nothing is before a zero StartTime, so an update without one (the kubelet's
// deletePod kill) drops the pending start time and its processing is not observed.
test('pod worker duration: an update without a start time drops the pending one', async () => {
  const observed: [string, number][] = [];
  const h = harness();
  const { BasicPodWorkers } = await import('@kubelet-kit/pod-workers');
  const workers = new BasicPodWorkers({
    podSyncer: h.syncer,
    podCache: h.cache,
    clock: h.clock,
    metrics: { observePodWorkerDuration: (op, s) => observed.push([op, s]) },
  });
  const pod = newNamedPod('1', 'ns', 'p');
  workers.updatePod({ updateType: 'create', pod, startTime: T0 });
  workers.updatePod({ updateType: 'kill', pod });
  expect(workers.getPodSyncStatus('1')?.pendingUpdate?.startTime).toBeUndefined();
  h.clock.advance(2000);
  const { drainWorkers } = await import('@kubelet-kit/pod-workers/testing');
  await drainWorkers(workers, h.clock);
  expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  expect(observed).toEqual([]);
});

test('a failed sync is logged with the pod UID; a cancelled one is not an error', async () => {
  const { InMemoryLogger } = await import('@kubelet-kit/core/testing');
  const { BasicPodWorkers } = await import('@kubelet-kit/pod-workers');
  const { drainWorkers } = await import('@kubelet-kit/pod-workers/testing');
  const { untilAborted } = await import('./helpers.js');
  const logger = new InMemoryLogger();
  const h = harness();
  h.syncer.hook = (c) => {
    if (c.uid === 'bad') throw new Error('boom');
    if (c.uid === 'slow' && c.kind === 'syncPod') return untilAborted(c.signal);
    return undefined;
  };
  const workers = new BasicPodWorkers({ podSyncer: h.syncer, podCache: h.cache, clock: h.clock, logger });
  workers.updatePod({ updateType: 'create', pod: newNamedPod('bad', 'ns', 'b') });
  workers.updatePod({ updateType: 'create', pod: newNamedPod('slow', 'ns', 's') });
  await h.clock.tick(0);
  workers.updatePod({ updateType: 'kill', pod: newNamedPod('slow', 'ns', 's') });
  await drainWorkers(workers, h.clock);
  const errors = logger.records.filter((r) => r.level === 'error');
  expect(errors).toMatchObject([
    { message: 'Error syncing pod, skipping', fields: { podUID: 'bad', err: 'boom' } },
  ]);
  expect(logger.records.some((r) => r.message === 'Sync exited with context cancellation error')).toBe(true);
});

test('a kill of a pod waiting for a sync slot cancels the wait and the kill takes the next slot', async () => {
  const gate = deferred();
  const h = harness({
    maxConcurrentSyncs: 1,
    hook: (c) => (c.uid === 'busy' ? gate.promise.then(() => undefined) : undefined),
  });
  h.workers.updatePod({ updateType: 'create', pod: newNamedPod('busy', 'ns', 'busy') });
  await h.clock.tick(0);
  const waiting = newNamedPod('waiting', 'ns', 'w');
  h.workers.updatePod({ updateType: 'create', pod: waiting });
  await h.clock.tick(0);
  expect(h.syncer.historyOf('waiting')).toEqual([]);
  h.workers.updatePod({ updateType: 'kill', pod: waiting });
  await h.clock.tick(0);
  // the create never ran; the kill waits behind the busy sync
  expect(h.syncer.historyOf('waiting')).toEqual([]);
  gate.resolve();
  await h.drain();
  expect(h.syncer.historyOf('waiting')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  await h.workers.whenIdle();
});

test('BasicWorkQueue: due items come out by due time, each once, whatever the enqueue order', () => {
  const clock = new FakeClock(T0);
  const q = new BasicWorkQueue({ clock });
  const delays = [50, 10, 40, 10, 30, 20, 60, 0];
  for (const [i, d] of delays.entries()) q.enqueue(`p${i}`, d);
  q.enqueue('p6', 5); // superseded: p6 now due at 5, not 60
  q.enqueue('p1', 45); // superseded: later than before
  clock.advance(35);
  expect(q.getWork()).toEqual(['p7', 'p6', 'p3', 'p5', 'p4']);
  expect(q.dueTime('p1')).toBe(T0 + 45);
  clock.advance(100);
  expect(q.getWork()).toEqual(['p2', 'p1', 'p0']);
  expect(q.size).toBe(0);
  expect(q.getWork()).toEqual([]);
});

test('BasicWorkQueue: superseded entries stay bounded by the live ones', () => {
  const clock = new FakeClock(T0);
  const q = new BasicWorkQueue({ clock });
  for (let round = 0; round < 50; round++) for (let i = 0; i < 100; i++) q.enqueue(`p${i}`, 1000 + round);
  expect(q.size).toBe(100);
  expect(q.heapSize).toBeLessThanOrEqual(2 * 100 + 1024);
  clock.advance(1049);
  const due = q.getWork();
  expect(new Set(due).size).toBe(100);
  expect(due).toHaveLength(100);
  expect(q.heapSize).toBe(0);
});
