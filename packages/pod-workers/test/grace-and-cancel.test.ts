import { newNamedPod } from '@kubelet-kit/pod-workers/testing';
import { describe, expect, test } from 'vitest';
import { calculateEffectiveGracePeriod, PodSyncCanceledError } from '../src/pod-workers.js';
import { deferred, harness, untilAborted } from './helpers.js';

describe('Test_calculateEffectiveGracePeriod', () => {
  const cases: { desc: string; spec?: number; deletion?: number; override?: number; expected: number }[] = [
    { desc: 'use termination grace period from the spec when no overrides', spec: 30, expected: 30 },
    { desc: 'use pod DeletionGracePeriodSeconds when set', spec: 30, deletion: 5, expected: 5 },
    { desc: 'use grace period override when set', spec: 30, deletion: 5, override: 2, expected: 2 },
    { desc: 'use 1 when pod DeletionGracePeriodSeconds is zero', spec: 30, deletion: 0, expected: 1 },
    { desc: 'use 1 when grace period override is zero', spec: 30, deletion: 5, override: 0, expected: 1 },
    { desc: 'use 1 when nothing is set', expected: 1 },
  ];
  for (const tc of cases) {
    test(tc.desc, () => {
      const pod = newNamedPod('1', 'ns', 'running-pod');
      pod.spec = { containers: [], ...(tc.spec !== undefined && { terminationGracePeriodSeconds: tc.spec }) };
      if (tc.deletion !== undefined)
        pod.metadata = { ...pod.metadata, deletionGracePeriodSeconds: tc.deletion };
      const opts =
        tc.override !== undefined ? { podTerminationGracePeriodSecondsOverride: tc.override } : undefined;
      expect(calculateEffectiveGracePeriod(0, pod, opts)).toEqual({
        gracePeriod: tc.expected,
        shortened: false,
      });
    });
  }

  test('a grace period only shrinks: a longer override keeps the current value', () => {
    const pod = newNamedPod('1', 'ns', 'p');
    expect(calculateEffectiveGracePeriod(10, pod, { podTerminationGracePeriodSecondsOverride: 20 })).toEqual({
      gracePeriod: 10,
      shortened: false,
    });
    expect(calculateEffectiveGracePeriod(10, pod, { podTerminationGracePeriodSecondsOverride: 3 })).toEqual({
      gracePeriod: 3,
      shortened: true,
    });
  });
});

test('kill during syncPod aborts the sync and terminates the pod next', async () => {
  const h = harness({ hook: (c) => (c.kind === 'syncPod' ? untilAborted(c.signal) : undefined) });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.clock.tick(0);
  const syncCall = h.syncer.calls[0];
  expect(syncCall?.signal.aborted).toBe(false);
  h.workers.updatePod({ updateType: 'kill', pod });
  expect(syncCall?.signal.aborted).toBe(true);
  expect(syncCall?.signal.reason).toBeInstanceOf(PodSyncCanceledError);
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);
  // the terminating sync got a fresh, live signal
  expect(h.syncer.calls[1]?.signal.aborted).toBe(false);
  expect(h.workers.getPodSyncStatus('1')?.finished).toBe(true);
});

test('an update that is not a kill does not cancel an in-flight sync', async () => {
  const gate = deferred();
  let first = true;
  const h = harness({
    hook: async () => {
      if (first) {
        first = false;
        await gate.promise;
      }
      return undefined;
    },
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.clock.tick(0);
  h.workers.updatePod({ updateType: 'update', pod });
  expect(h.syncer.calls[0]?.signal.aborted).toBe(false);
  gate.resolve();
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncPod:create', 'syncPod:update']);
});

test('grace shortening: a shorter kill aborts syncTerminatingPod and retries with the shorter period', async () => {
  const h = harness({
    hook: (c) =>
      c.kind === 'syncTerminatingPod' && c.gracePeriod !== 1 ? untilAborted(c.signal) : undefined,
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  expect(h.syncer.calls.at(-1)).toMatchObject({ kind: 'syncTerminatingPod', gracePeriod: 30 });
  const first = h.syncer.calls.at(-1);

  // a longer override neither lengthens the period nor cancels
  h.workers.updatePod({
    updateType: 'kill',
    pod,
    killPodOptions: { podTerminationGracePeriodSecondsOverride: 60 },
  });
  expect(first?.signal.aborted).toBe(false);
  expect(h.workers.getPodSyncStatus('1')?.gracePeriod).toBe(30);
  await h.clock.tick(0);

  h.workers.updatePod({
    updateType: 'kill',
    pod,
    killPodOptions: { podTerminationGracePeriodSecondsOverride: 5 },
  });
  expect(first?.signal.aborted).toBe(true);
  await h.clock.tick(0);
  await h.clock.tick(0);
  const second = h.syncer.calls.at(-1);
  expect(second).toMatchObject({ kind: 'syncTerminatingPod', gracePeriod: 5 });

  // an override of 0 is clamped to the 1 s minimum
  h.workers.updatePod({
    updateType: 'kill',
    pod,
    killPodOptions: { podTerminationGracePeriodSecondsOverride: 0 },
  });
  expect(second?.signal.aborted).toBe(true);
  await h.drain();
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({ gracePeriod: 1, finished: true });
  const grace = h.syncer
    .callsFor('1')
    .filter((c) => c.kind === 'syncTerminatingPod')
    .map((c) => c.gracePeriod);
  expect(grace).toEqual([30, 5, 1]);
});

test('a deletion grace period from the API shortens termination too', async () => {
  const h = harness({
    hook: (c) =>
      c.kind === 'syncTerminatingPod' && c.gracePeriod === 30 ? untilAborted(c.signal) : undefined,
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  const deleted = {
    ...pod,
    metadata: { ...pod.metadata, deletionTimestamp: 'x', deletionGracePeriodSeconds: 2 },
  };
  h.workers.updatePod({ updateType: 'update', pod: deleted });
  await h.drain();
  const calls = h.syncer.callsFor('1');
  expect(calls.map((c) => c.gracePeriod)).toEqual([30, 2, undefined]);
  // deletion only flags a pod that was not terminating yet
  expect(h.workers.getPodSyncStatus('1')?.deleted).toBe(false);
  expect(calls[2]).toMatchObject({ kind: 'syncTerminatedPod', pod: deleted });
});

test('kill callbacks: called once the pod is terminated, or at once when the kill cannot apply', async () => {
  const gate = deferred();
  const h = harness({
    hook: (c) => (c.kind === 'syncTerminatingPod' ? gate.promise.then(() => undefined) : undefined),
  });
  const pod = newNamedPod('1', 'ns', 'p');
  let updateCompleted = 0;
  // options on an update of a running pod are meaningless: completed at once, dropped
  h.workers.updatePod({
    updateType: 'update',
    pod,
    killPodOptions: { onCompleted: () => updateCompleted++ },
  });
  expect(updateCompleted).toBe(1);
  await h.drain();

  const done: string[] = [];
  const statusFn = (s: { reason?: string }) => {
    s.reason = 'Evicted';
  };
  h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onCompleted: () => done.push('a') } });
  h.workers.updatePod({
    updateType: 'kill',
    pod,
    killPodOptions: { onCompleted: () => done.push('b'), podStatusFunc: statusFn },
  });
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({
    notifyPostTerminating: 2,
    statusPostTerminating: [statusFn],
  });
  await h.clock.tick(0);
  expect(done).toEqual([]);
  expect(h.syncer.calls.at(-1)?.podStatusFn).toBe(statusFn);
  expect(h.workers.shouldPodContainersBeTerminating('1')).toBe(true);
  gate.resolve();
  await h.drain();
  expect(done).toEqual(['a', 'b']);
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({
    notifyPostTerminating: 0,
    statusPostTerminating: [],
  });

  // once terminated, a kill completes at once
  h.workers.updatePod({ updateType: 'kill', pod, killPodOptions: { onCompleted: () => done.push('c') } });
  expect(done).toEqual(['a', 'b', 'c']);
});

test('a failing syncTerminatingPod is retried by the next update and the kill is not lost', async () => {
  let failures = 1;
  const h = harness({
    hook: (c) => {
      if (c.kind === 'syncTerminatingPod' && failures > 0) {
        failures--;
        throw new Error('CRI violation');
      }
      return undefined;
    },
  });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'kill', pod });
  await h.drain();
  expect(h.workers.isPodKnownTerminated('1')).toBe(false);
  expect(h.queue.dueTime('1')).toBe(h.clock.now() + 10_000);
  // the kubelet's sync tick replays a plain sync; the worker still terminates
  h.clock.advance(10_000);
  expect(h.queue.getWork()).toEqual(['1']);
  h.workers.updatePod({ updateType: 'sync', pod });
  await h.drain();
  expect(h.syncer.historyOf('1')).toEqual(['syncTerminatingPod', 'syncTerminatingPod', 'syncTerminatedPod']);
});

test('shutdown: the signal aborts syncs in flight, and later updates are ignored', async () => {
  const { BasicPodWorkers } = await import('@kubelet-kit/pod-workers');
  const h = harness({ hook: (c) => untilAborted(c.signal) });
  const shutdown = new AbortController();
  const workers = new BasicPodWorkers({
    podSyncer: h.syncer,
    podCache: h.cache,
    clock: h.clock,
    signal: shutdown.signal,
  });
  const pod = newNamedPod('1', 'ns', 'p');
  workers.updatePod({ updateType: 'create', pod });
  await h.clock.tick(0);
  expect(h.syncer.calls).toHaveLength(1);
  shutdown.abort(new Error('shutting down'));
  expect(h.syncer.calls[0]?.signal.aborted).toBe(true);
  await workers.whenIdle();
  workers.updatePod({ updateType: 'kill', pod });
  await h.clock.tick(0);
  await workers.whenIdle();
  expect(h.syncer.calls).toHaveLength(1);
  expect(workers.isPodTerminationRequested('1')).toBe(false);
});
