import type { PodStatus } from '@kubelet-kit/core';
import { deepCopy } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  canBeDeleted,
  checkContainerStateTransition,
  isPodStatusByKubeletEqual,
  mergePodStatus,
  normalizeStatus,
  updateLastTransitionTime,
} from '../src/index.js';
import { failed, podWith, running, spec, succeeded, waiting } from './helpers.js';

const NOW = '2026-01-01T00:10:00Z';
const EARLIER = '2026-01-01T00:00:00Z';
const pod = podWith(spec('Always', ['a']));

function base(): PodStatus {
  return {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: EARLIER },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER },
    ],
  };
}

// upstream TestMergePodStatus
describe('mergePodStatus', () => {
  it('no change', () => {
    expect(mergePodStatus(pod, base(), base(), false, NOW)).toEqual(base());
  });

  it('adds DisruptionTarget when transitioning into a failed phase', () => {
    const next: PodStatus = {
      ...base(),
      phase: 'Failed',
      conditions: [
        ...base().conditions!,
        {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          lastTransitionTime: EARLIER,
        },
      ],
    };
    const merged = mergePodStatus(pod, base(), next, false, NOW);
    expect(merged.phase).toBe('Failed');
    expect(merged.conditions).toEqual([
      { type: 'Ready', status: 'False', reason: 'PodFailed', lastTransitionTime: NOW },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER },
      { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', lastTransitionTime: NOW },
      { type: 'ContainersReady', status: 'False', reason: 'PodFailed', lastTransitionTime: NOW },
    ]);
  });

  it("doesn't add DisruptionTarget or the failed phase while containers may still run", () => {
    const old = { ...base(), reason: 'r', message: 'm' };
    const next: PodStatus = {
      ...base(),
      phase: 'Failed',
      reason: 'Evicted',
      conditions: [...base().conditions!, { type: 'DisruptionTarget', status: 'True' }],
    };
    const merged = mergePodStatus(pod, old, next, true, NOW);
    expect(merged).toEqual(old);
  });

  it('preserves a DisruptionTarget the API has', () => {
    const old = {
      ...base(),
      conditions: [...base().conditions!, { type: 'DisruptionTarget', status: 'True' }],
    };
    expect(mergePodStatus(pod, old, base(), false, NOW).conditions).toEqual([
      { type: 'DisruptionTarget', status: 'True' },
      ...base().conditions!,
    ]);
  });

  it("doesn't override DisruptionTarget when remaining in the running phase", () => {
    const old = {
      ...base(),
      conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }],
    };
    const next = {
      ...base(),
      conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }],
    };
    expect(mergePodStatus(pod, old, next, false, NOW).conditions).toEqual([
      { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' },
    ]);
  });

  it('overrides DisruptionTarget when transitioning into a failed phase', () => {
    const old = {
      ...base(),
      conditions: [
        ...base().conditions!,
        { type: 'DisruptionTarget', status: 'True', reason: 'EvictedByEvictionAPI' },
      ],
    };
    const next: PodStatus = {
      ...base(),
      phase: 'Failed',
      conditions: [
        ...base().conditions!,
        { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' },
      ],
    };
    const merged = mergePodStatus(pod, old, next, false, NOW);
    expect(merged.phase).toBe('Failed');
    expect(merged.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      // the new one replaces the API's in place
      ['DisruptionTarget', 'True', 'TerminationByKubelet'],
      ['Ready', 'False', 'PodFailed'],
      ['PodScheduled', 'True', undefined],
      ['ContainersReady', 'False', 'PodFailed'],
    ]);
  });

  it('takes the new reason and message with the failed phase once no container runs', () => {
    const old = { ...base(), reason: 'Unknown', message: 'Message' };
    const next = { ...base(), phase: 'Failed', reason: 'Evicted', message: 'Was Evicted' };
    const merged = mergePodStatus(pod, old, next, false, NOW);
    expect([merged.phase, merged.reason, merged.message]).toEqual(['Failed', 'Evicted', 'Was Evicted']);
    expect(merged.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PodFailed',
    });
  });

  it('takes readiness changes and ignores changes of conditions the kubelet does not own', () => {
    const old = { ...base(), conditions: [...base().conditions!, { type: 'example.com/c', status: 'True' }] };
    const next: PodStatus = {
      ...base(),
      conditions: [
        { type: 'Ready', status: 'False', lastTransitionTime: NOW },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER },
        { type: 'example.com/c', status: 'False' },
      ],
    };
    expect(mergePodStatus(pod, old, next, false, NOW).conditions).toEqual([
      { type: 'example.com/c', status: 'True' },
      { type: 'Ready', status: 'False', lastTransitionTime: NOW },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER },
    ]);
  });

  it('keeps resourceClaimStatuses from the API', () => {
    const old = { ...base(), resourceClaimStatuses: [{ name: 'c', resourceClaimName: 'x' }] };
    expect(mergePodStatus(pod, old, base(), false, NOW).resourceClaimStatuses).toEqual(
      old.resourceClaimStatuses,
    );
  });
});

describe('normalizeStatus', () => {
  it('truncates times to seconds, sorts statuses, and cuts terminated messages to their budget', () => {
    const p = podWith(spec('Never', ['b', 'a'], ['i2', 'i1']));
    const status: PodStatus = {
      startTime: '2026-01-01T00:00:01.987654Z',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:02.5Z' }],
      containerStatuses: [
        {
          ...failed('b'),
          state: {
            terminated: { exitCode: 1, message: 'x'.repeat(5000), finishedAt: '2026-01-01T00:00:03.1Z' },
          },
        },
        { ...running('a'), state: { running: { startedAt: '2026-01-01T00:00:04.9Z' } } },
      ],
      initContainerStatuses: [succeeded('i1'), succeeded('i2')],
    };
    normalizeStatus(p, status);
    expect(status.startTime).toBe('2026-01-01T00:00:01Z');
    expect(status.conditions?.[0]?.lastTransitionTime).toBe('2026-01-01T00:00:02Z');
    expect(status.containerStatuses?.map((c) => c.name)).toEqual(['a', 'b']);
    expect(status.containerStatuses?.[0]?.state?.running?.startedAt).toBe('2026-01-01T00:00:04Z');
    expect(status.containerStatuses?.[1]?.state?.terminated?.message).toHaveLength(12288 / 4);
    expect(status.containerStatuses?.[1]?.state?.terminated?.finishedAt).toBe('2026-01-01T00:00:03Z');
    expect(status.initContainerStatuses?.map((c) => c.name)).toEqual(['i2', 'i1']);
  });

  // upstream normalizeStatus: ephemeral containers share the message budget too.
  it('counts ephemeral containers when sharing the terminated message budget', () => {
    const p = podWith({
      ...spec('Always', ['a']),
      ephemeralContainers: [{ name: 'debug', image: 'busybox' }],
    });
    const status: PodStatus = {
      containerStatuses: [
        { ...failed('a'), state: { terminated: { exitCode: 1, message: 'x'.repeat(8000) } } },
      ],
    };
    normalizeStatus(p, status);
    expect(status.containerStatuses?.[0]?.state?.terminated?.message).toHaveLength(12288 / 2);
  });
});

describe('isPodStatusByKubeletEqual', () => {
  it('ignores transition times of kubelet conditions and conditions it does not own', () => {
    const a = base();
    const b: PodStatus = {
      ...base(),
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: NOW },
        { type: 'PodScheduled', status: 'True' },
      ],
    };
    expect(isPodStatusByKubeletEqual(a, b)).toBe(true);
    expect(
      isPodStatusByKubeletEqual(a, { ...b, conditions: [...b.conditions!, { type: 'x', status: 'True' }] }),
    ).toBe(true);
  });

  it('sees a changed reason, message, phase or container status', () => {
    const a = base();
    expect(
      isPodStatusByKubeletEqual(a, {
        ...a,
        conditions: [{ type: 'Ready', status: 'True', reason: 'r' }, a.conditions![1]!],
      }),
    ).toBe(false);
    expect(isPodStatusByKubeletEqual(a, { ...a, phase: 'Failed' })).toBe(false);
    expect(isPodStatusByKubeletEqual(a, { ...a, containerStatuses: [running('a')] })).toBe(false);
  });

  it('treats a missing list and an empty one alike', () => {
    expect(isPodStatusByKubeletEqual({ ...base(), containerStatuses: [] }, base())).toBe(true);
  });
});

describe('checkContainerStateTransition', () => {
  const terminated = (exitCode: number) => ({
    containerStatuses: [{ ...failed('a'), state: { terminated: { exitCode } } }],
  });
  it.each([
    { policy: 'Always', exit: 0, next: running('a'), legal: true },
    { policy: 'Never', exit: 0, next: running('a'), legal: false },
    { policy: 'Never', exit: 1, next: waiting('a'), legal: false },
    { policy: 'OnFailure', exit: 0, next: running('a'), legal: false },
    { policy: 'OnFailure', exit: 1, next: running('a'), legal: true },
    { policy: 'Never', exit: 0, next: succeeded('a'), legal: true },
  ] as const)('$policy, exit $exit → $next.state: legal $legal', ({ policy, exit, next, legal }) => {
    const err = checkContainerStateTransition(
      terminated(exit),
      { containerStatuses: [next] },
      spec(policy, ['a']),
    );
    expect(err === undefined).toBe(legal);
  });

  it('applies to regular init containers but not to sidecars', () => {
    const s = spec('Never', ['a'], ['init', { name: 'side', sidecar: true }]);
    const old = { initContainerStatuses: [succeeded('init'), succeeded('side')] };
    expect(checkContainerStateTransition(old, { initContainerStatuses: [running('init')] }, s)).toMatch(
      /init/,
    );
    expect(
      checkContainerStateTransition(old, { initContainerStatuses: [running('side')] }, s),
    ).toBeUndefined();
  });
});

// upstream TestUpdateLastTransitionTime
describe('updateLastTransitionTime', () => {
  it('updates the time when the condition changed', () => {
    const status: PodStatus = { conditions: [{ type: 'Ready', status: 'False' }] };
    updateLastTransitionTime(status, base(), 'Ready', NOW);
    expect(status.conditions?.[0]?.lastTransitionTime).toBe(NOW);
  });

  it('keeps the time when the condition did not change', () => {
    const status: PodStatus = { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: NOW }] };
    updateLastTransitionTime(status, base(), 'Ready', NOW);
    expect(status.conditions?.[0]?.lastTransitionTime).toBe(EARLIER);
  });
});

describe('canBeDeleted', () => {
  const deleting = {
    metadata: { name: 'p', uid: 'u', deletionTimestamp: EARLIER },
    status: { phase: 'Failed' },
  };
  it.each([
    { name: 'terminal, finished, being deleted', pod: deleting, finished: true, want: true },
    { name: 'not finished', pod: deleting, finished: false, want: false },
    { name: 'not terminal', pod: { ...deleting, status: { phase: 'Running' } }, finished: true, want: false },
    { name: 'not being deleted', pod: { ...deleting, metadata: { name: 'p' } }, finished: true, want: false },
    {
      name: 'mirror pod',
      pod: {
        ...deleting,
        metadata: { ...deleting.metadata, annotations: { 'kubernetes.io/config.mirror': 'h' } },
      },
      finished: true,
      want: false,
    },
  ])('$name', ({ pod: p, finished, want }) => {
    expect(canBeDeleted(p, finished)).toBe(want);
  });
});

describe('deepCopy', () => {
  it('copies nested objects and arrays so that changing the copy leaves the original alone', () => {
    const original = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      containerStatuses: [
        { name: 'a', ready: true, restartCount: 2, state: { running: { startedAt: 'x' } } },
      ],
      nothing: null,
    };
    const copy = deepCopy(original);
    expect(copy).toEqual(original);
    expect(copy).not.toBe(original);
    copy.conditions[0]!.status = 'False';
    copy.containerStatuses[0]!.state.running.startedAt = 'y';
    copy.containerStatuses.push({
      name: 'b',
      ready: false,
      restartCount: 0,
      state: { running: { startedAt: 'z' } },
    });
    expect(original.conditions[0]!.status).toBe('True');
    expect(original.containerStatuses).toHaveLength(1);
    expect(original.containerStatuses[0]!.state.running.startedAt).toBe('x');
  });

  it('copies a Date as a Date with the same time', () => {
    const at = new Date('2026-11-29T12:00:00Z');
    const copy = deepCopy({ at });
    expect(copy.at).toBeInstanceOf(Date);
    expect(copy.at).not.toBe(at);
    expect(copy.at.getTime()).toBe(at.getTime());
  });
});
