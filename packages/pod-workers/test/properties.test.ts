import type { SyncPodType } from '@kubelet-kit/core';
import { newNamedPod, type SyncCall } from '@kubelet-kit/pod-workers/testing';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { harness, untilAborted } from './helpers.js';

type Step =
  | { kind: 'update'; uid: string; type: SyncPodType; grace?: number }
  | { kind: 'tick' }
  | { kind: 'housekeeping' };

const uids = ['a', 'b', 'c'];
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('update' as const),
    uid: fc.constantFrom(...uids),
    type: fc.constantFrom<SyncPodType>('create', 'update', 'sync', 'kill'),
    grace: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
  }),
  fc.constant({ kind: 'tick' as const }),
  fc.constant({ kind: 'housekeeping' as const }),
);

// Invariants upstream's design relies on, over random interleavings of updates, time and
// housekeeping, with syncs that take time and honour cancellation.
test('per pod: syncs never overlap, kills are never lost, grace periods only shrink', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
      const inFlight = new Set<string>();
      let overlap = false;
      const h = harness({
        hook: async (c: SyncCall) => {
          if (inFlight.has(c.uid)) overlap = true;
          inFlight.add(c.uid);
          try {
            await Promise.race([h.clock.sleep(500, c.signal), untilAborted(c.signal)]);
          } finally {
            inFlight.delete(c.uid);
          }
          return undefined;
        },
      });
      const killed = new Set<string>();
      for (const step of steps) {
        if (step.kind === 'tick') await h.clock.tick(300);
        else if (step.kind === 'housekeeping') {
          // the kill stays desired until it finished, like the kubelet's pod manager keeps it
          h.workers.syncKnownPods(
            uids
              .filter((u) => !killed.has(u) || !h.workers.shouldPodBeFinished(u))
              .map((u) => newNamedPod(u, 'ns', u)),
          );
        } else {
          if (step.type === 'kill') killed.add(step.uid);
          // after housekeeping purged a finished worker, the UID starts a new life
          else if (!h.workers.getPodSyncStatus(step.uid)) killed.delete(step.uid);
          h.workers.updatePod({
            updateType: step.type,
            pod: newNamedPod(step.uid, 'ns', step.uid),
            ...(step.grace !== undefined && {
              killPodOptions: { podTerminationGracePeriodSecondsOverride: step.grace },
            }),
          });
        }
        await h.clock.tick(0);
      }
      await h.clock.runAll(60_000);
      await h.drain();
      expect(overlap).toBe(false);
      for (const uid of killed) {
        const status = h.workers.getPodSyncStatus(uid);
        // either finished, or purged by housekeeping after finishing
        if (status) expect(status.finished).toBe(true);
      }
      for (const uid of uids) {
        // within one life (up to syncTerminatedPod) the grace period never grows, never below 1
        let previous = Number.POSITIVE_INFINITY;
        for (const c of h.syncer.callsFor(uid)) {
          if (c.kind === 'syncTerminatedPod') previous = Number.POSITIVE_INFINITY;
          if (c.kind !== 'syncTerminatingPod') continue;
          expect(c.gracePeriod).toBeGreaterThanOrEqual(1);
          expect(c.gracePeriod).toBeLessThanOrEqual(previous);
          previous = c.gracePeriod as number;
        }
      }
    }),
    { numRuns: 150 },
  );
});
