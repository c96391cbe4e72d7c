import type { PodStatus } from '@kubelet-kit/core';
import { newNamedPod } from '@kubelet-kit/pod-workers/testing';
import { expect, test } from 'vitest';
import { ExceededGracePeriodError, killPodNow } from '../src/kill-pod-now.js';
import { harness, untilAborted } from './helpers.js';

test('TestKillPodNowFunc: the blocking kill resolves after terminating, with the status function and grace 1', async () => {
  const h = harness();
  const kill = killPodNow({ podWorkers: h.workers, recorder: h.recorder, clock: h.clock });
  const pod = newNamedPod('test', 'ns', 'test');
  const statusFn = (status: PodStatus) => {
    status.phase = 'Failed';
    status.reason = 'reason';
    status.message = 'message';
  };
  let resolved = false;
  const done = kill({ pod, isEvicted: false, gracePeriodOverride: 0, statusFn }).then(() => {
    resolved = true;
  });
  await h.clock.tick(0);
  await done;
  expect(resolved).toBe(true);
  await h.drain();
  expect(h.syncer.historyOf('test')).toEqual(['syncTerminatingPod', 'syncTerminatedPod']);
  const terminating = h.syncer.calls[0];
  expect(terminating?.gracePeriod).toBe(1);
  const status: PodStatus = {};
  terminating?.podStatusFn?.(status);
  expect(status).toEqual({ phase: 'Failed', reason: 'reason', message: 'message' });
  expect(h.recorder.events).toEqual([]);
  expect(h.clock.pendingTimers).toBe(0);
});

test('the blocking kill of an evicted pod marks the eviction', async () => {
  const h = harness();
  const kill = killPodNow({ podWorkers: h.workers, recorder: h.recorder, clock: h.clock });
  const pod = newNamedPod('1', 'ns', 'p');
  h.workers.updatePod({ updateType: 'create', pod });
  await h.drain();
  const done = kill({ pod, isEvicted: true });
  await h.drain();
  await done;
  expect(h.workers.getPodSyncStatus('1')).toMatchObject({ evicted: true, gracePeriod: 30, finished: true });
});

test('the blocking kill times out after grace × 1.5 with ExceededGracePeriod', async () => {
  const h = harness({ hook: (c) => (c.kind === 'syncTerminatingPod' ? untilAborted(c.signal) : undefined) });
  const kill = killPodNow({ podWorkers: h.workers, recorder: h.recorder, clock: h.clock });
  const pod = newNamedPod('1', 'ns', 'p');
  let error: unknown;
  const done = kill({ pod, isEvicted: false }).catch((err: unknown) => {
    error = err;
  });
  await h.clock.tick(44_999);
  expect(error).toBeUndefined();
  await h.clock.tick(1);
  await done;
  expect(error).toBeInstanceOf(ExceededGracePeriodError);
  expect((error as ExceededGracePeriodError).code).toBe('ExceededGracePeriod');
  expect(h.recorder.events).toMatchObject([
    {
      type: 'Warning',
      reason: 'ExceededGracePeriod',
      message: 'Container runtime did not kill the pod within specified grace period.',
    },
  ]);
});

test('the blocking kill waits at least 10 s', async () => {
  const h = harness({ hook: (c) => (c.kind === 'syncTerminatingPod' ? untilAborted(c.signal) : undefined) });
  const kill = killPodNow({ podWorkers: h.workers, recorder: h.recorder, clock: h.clock });
  let error: unknown;
  const done = kill({ pod: newNamedPod('1', 'ns', 'p'), isEvicted: false, gracePeriodOverride: 3 }).catch(
    (err: unknown) => {
      error = err;
    },
  );
  await h.clock.tick(9_999);
  expect(error).toBeUndefined();
  await h.clock.tick(1);
  await done;
  expect(error).toBeInstanceOf(ExceededGracePeriodError);
});
