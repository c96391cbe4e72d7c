import type { Pod, PodStatus } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { ActiveDeadlineHandler } from '../src/active-deadline.js';

const T0 = Date.UTC(2026, 5, 1);

function pod(uid: string, deadlineSeconds: number | undefined, startTime?: number): Pod {
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: [{ name: 'main', image: 'busybox' }],
      ...(deadlineSeconds !== undefined ? { activeDeadlineSeconds: deadlineSeconds } : {}),
    },
    status: startTime !== undefined ? { phase: 'Running', startTime: new Date(startTime).toISOString() } : {},
  };
}

function handler(statuses: Map<string, PodStatus> = new Map()) {
  const clock = new FakeClock(T0);
  const recorder = new InMemoryEventRecorder();
  const h = new ActiveDeadlineHandler({ clock, recorder, podStatus: (uid) => statuses.get(uid) });
  return { clock, recorder, h };
}

describe('ActiveDeadlineHandler.shouldSync', () => {
  it('is true once the pod has run activeDeadlineSeconds since its start time, not before', () => {
    const { clock, h } = handler();
    const p = pod('a', 10, T0);
    expect(h.shouldSync(p)).toBe(false);
    clock.advance(9_999);
    expect(h.shouldSync(p)).toBe(false);
    clock.advance(1);
    expect(h.shouldSync(p)).toBe(true);
  });

  it('is false without a deadline or without a start time', () => {
    const { clock, h } = handler();
    clock.advance(3_600_000);
    expect(h.shouldSync(pod('a', undefined, T0))).toBe(false);
    expect(h.shouldSync(pod('b', 1))).toBe(false);
  });

  it("takes the start time the status manager holds over the pod's own", () => {
    const statuses = new Map<string, PodStatus>([['a', { startTime: new Date(T0 + 60_000).toISOString() }]]);
    const { clock, h } = handler(statuses);
    clock.advance(30_000);
    // The pod says it started at T0 (30 s ago), the status manager a minute from T0.
    expect(h.shouldSync(pod('a', 10, T0))).toBe(false);
  });
});

describe('ActiveDeadlineHandler.shouldEvict', () => {
  it('fails a pod past its deadline with DeadlineExceeded and an event about it', () => {
    const { clock, recorder, h } = handler();
    const p = pod('a', 1, T0);
    expect(h.shouldEvict(p)).toBeUndefined();
    expect(recorder.events).toEqual([]);
    clock.advance(1000);
    expect(h.shouldEvict(p)).toEqual({
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    });
    expect(recorder.events.map((e) => [e.object, e.type, e.reason])).toEqual([
      [{ kind: 'Pod', namespace: 'default', name: 'a', uid: 'a' }, 'Normal', 'DeadlineExceeded'],
    ]);
  });
});

describe('ActiveDeadlineHandler.podsToSync', () => {
  it('returns the tracked pods past their deadline, but those due anyway', () => {
    const { clock, h } = handler();
    const pods = new Map([
      ['past', pod('past', 1, T0)],
      ['due', pod('due', 1, T0)],
      ['young', pod('young', 3600, T0)],
    ]);
    for (const p of pods.values()) h.track(p);
    clock.advance(5000);
    expect(h.podsToSync((uid) => pods.get(uid), new Set(['due']))).toEqual(['past']);
  });

  it('tracks only pods whose latest spec has a deadline, and forgets pods that are gone', () => {
    const { clock, h } = handler();
    expect(h.size).toBe(0);
    h.track(pod('a', 1, T0));
    h.track(pod('b', 1, T0));
    expect(h.size).toBe(2);
    // An update without the deadline stops the tracking.
    h.track(pod('b', undefined, T0));
    expect(h.size).toBe(1);
    clock.advance(5000);
    expect(h.podsToSync(() => undefined, new Set())).toEqual([]);
    expect(h.size).toBe(0);
  });
});
