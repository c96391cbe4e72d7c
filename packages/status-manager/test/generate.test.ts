import type { PodCondition, RuntimePodStatus, RuntimeSandboxStatus } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  generateContainersReadyCondition,
  generatePodConditions,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
} from '../src/index.js';
import { failed, podWith, ready, running, spec, started, succeeded, waiting } from './helpers.js';

function pick(c: PodCondition) {
  return { status: c.status, reason: c.reason, message: c.message };
}

describe('generateContainersReadyCondition', () => {
  const pod = podWith(spec('Always', ['1234', '5678'], [{ name: 'sidecar', sidecar: true }, 'init']));
  it.each([
    {
      name: 'unknown statuses',
      statuses: undefined,
      phase: 'Running',
      want: { status: 'False', reason: 'UnknownContainerStatuses' },
    },
    {
      name: 'some containers unknown',
      statuses: [ready(started('sidecar')), ready(running('1234'))],
      phase: 'Running',
      want: {
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unknown status: [5678]',
      },
    },
    {
      name: 'unknown and unready, sidecar counted, regular init ignored',
      statuses: [started('sidecar'), running('1234'), failed('init')],
      phase: 'Running',
      want: {
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unknown status: [5678], containers with unready status: [sidecar 1234]',
      },
    },
    {
      name: 'known but empty statuses of a pod with no containers are ready',
      p: podWith(spec('Always', [])),
      statuses: [],
      phase: 'Running',
      want: { status: 'True' },
    },
    {
      name: 'all ready',
      statuses: [ready(started('sidecar')), ready(running('1234')), ready(running('5678'))],
      phase: 'Running',
      want: { status: 'True' },
    },
    {
      name: 'succeeded with all known',
      statuses: [started('sidecar'), succeeded('1234'), succeeded('5678')],
      phase: 'Succeeded',
      want: { status: 'False', reason: 'PodCompleted' },
    },
    {
      name: 'succeeded with an unknown container is not completed',
      statuses: [ready(started('sidecar')), ready(succeeded('1234'))],
      phase: 'Succeeded',
      want: {
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unknown status: [5678]',
      },
    },
    {
      name: 'failed pod, even with ready containers',
      statuses: [ready(started('sidecar')), ready(running('1234')), ready(running('5678'))],
      phase: 'Failed',
      want: { status: 'False', reason: 'PodFailed' },
    },
  ])('$name', ({ p, statuses, phase, want }) => {
    const c = generateContainersReadyCondition(p ?? pod, statuses, phase);
    expect(c.type).toBe('ContainersReady');
    expect(pick(c)).toEqual({ reason: undefined, message: undefined, ...want });
  });

  it('carries the pod generation as observedGeneration', () => {
    const c = generateContainersReadyCondition(
      podWith(spec('Always', ['a']), { metadata: { name: 'p', uid: 'u', generation: 7 } }),
      [ready(running('a'))],
      'Running',
    );
    expect(c).toEqual({ type: 'ContainersReady', status: 'True', observedGeneration: 7 });
  });

  // upstream: a zero generation is Go's empty value, so the field is omitted.
  it('leaves observedGeneration out for a zero generation', () => {
    const c = generateContainersReadyCondition(
      podWith(spec('Always', ['a']), { metadata: { name: 'p', uid: 'u', generation: 0 } }),
      [ready(running('a'))],
      'Running',
    );
    expect(c).toEqual({ type: 'ContainersReady', status: 'True' });
  });
});

describe('generatePodReadyCondition', () => {
  const gated = podWith({
    ...spec('Always', ['a']),
    readinessGates: [{ conditionType: 'gate1' }, { conditionType: 'gate2' }],
  });
  it.each([
    {
      name: 'copies ContainersReady when it is not True',
      conditions: [],
      statuses: [running('a')],
      want: { status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a]' },
    },
    {
      name: 'missing and non-True readiness gates',
      conditions: [{ type: 'gate2', status: 'False' }],
      statuses: [ready(running('a'))],
      want: {
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message:
          'corresponding condition of pod readiness gate "gate1" does not exist., the status of pod readiness gate "gate2" is not "True", but False',
      },
    },
    {
      name: 'all gates True',
      conditions: [
        { type: 'gate1', status: 'True' },
        { type: 'gate2', status: 'True' },
      ],
      statuses: [ready(running('a'))],
      want: { status: 'True' },
    },
  ])('$name', ({ conditions, statuses, want }) => {
    const c = generatePodReadyCondition(gated, conditions, statuses, 'Running');
    expect(c.type).toBe('Ready');
    expect(pick(c)).toEqual({ reason: undefined, message: undefined, ...want });
  });
});

describe('generatePodInitializedCondition', () => {
  const pod = podWith(spec('Always', ['a'], ['init1', { name: 'sidecar', sidecar: true }]));
  it.each([
    {
      name: 'no init containers',
      pod: podWith(spec('Always', ['a'])),
      statuses: undefined,
      phase: 'Pending',
      want: { status: 'True' },
    },
    {
      name: 'unknown statuses',
      pod,
      statuses: undefined,
      phase: 'Pending',
      want: { status: 'False', reason: 'UnknownContainerStatuses' },
    },
    {
      name: 'init running, sidecar unknown',
      pod,
      statuses: [running('init1')],
      phase: 'Pending',
      want: {
        status: 'False',
        reason: 'ContainersNotInitialized',
        message: 'containers with unknown status: [sidecar], containers with incomplete status: [init1]',
      },
    },
    {
      name: 'init done, sidecar running but not started',
      pod,
      statuses: [ready(succeeded('init1')), running('sidecar')],
      phase: 'Pending',
      want: {
        status: 'False',
        reason: 'ContainersNotInitialized',
        message: 'containers with incomplete status: [sidecar]',
      },
    },
    {
      name: 'init done, sidecar started',
      pod,
      statuses: [ready(succeeded('init1')), started('sidecar')],
      phase: 'Pending',
      want: { status: 'True' },
    },
    {
      name: 'a regular container started: initialized even with a restarting sidecar',
      pod,
      statuses: [ready(succeeded('init1')), waiting('sidecar'), running('a')],
      phase: 'Running',
      want: { status: 'True' },
    },
    {
      name: 'a terminated regular container proves initialization',
      pod,
      statuses: [waiting('init1'), waiting('sidecar'), succeeded('a')],
      phase: 'Running',
      want: { status: 'True' },
    },
    {
      name: 'succeeded with all init containers known',
      pod,
      statuses: [succeeded('init1'), succeeded('sidecar'), succeeded('a')],
      phase: 'Succeeded',
      want: { status: 'True', reason: 'PodCompleted' },
    },
  ])('$name', ({ pod: p, statuses, phase, want }) => {
    const c = generatePodInitializedCondition(p, statuses, phase);
    expect(c.type).toBe('Initialized');
    expect(pick(c)).toEqual({ reason: undefined, message: undefined, ...want });
  });
});

function sandbox(over: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return {
    id: 's1',
    name: 'foo',
    namespace: 'new',
    uid: 'uid-foo',
    attempt: 0,
    state: 'ready',
    createdAt: 0,
    ips: ['10.0.0.2'],
    hostNetwork: false,
    labels: {},
    annotations: {},
    ...over,
  };
}

function runtimeStatus(sandboxes: RuntimeSandboxStatus[]): RuntimePodStatus {
  return {
    id: 'uid-foo',
    name: 'foo',
    namespace: 'new',
    ips: [],
    containerStatuses: [],
    sandboxStatuses: sandboxes,
    timestamp: 0,
  };
}

describe('generatePodReadyToStartContainersCondition', () => {
  const pod = podWith(spec('Always', ['a']));
  const hostPod = podWith({ ...spec('Always', ['a']), hostNetwork: true });
  it.each([
    { name: 'no runtime status', p: pod, status: undefined, want: 'False' },
    { name: 'no sandbox', p: pod, status: runtimeStatus([]), want: 'False' },
    { name: 'ready sandbox with an IP', p: pod, status: runtimeStatus([sandbox()]), want: 'True' },
    {
      name: 'newest sandbox not ready',
      p: pod,
      status: runtimeStatus([sandbox({ state: 'notready' })]),
      want: 'False',
    },
    {
      name: 'two ready sandboxes',
      p: pod,
      status: runtimeStatus([sandbox(), sandbox({ id: 's0' })]),
      want: 'False',
    },
    {
      name: 'pod network sandbox without IP',
      p: pod,
      status: runtimeStatus([sandbox({ ips: [] })]),
      want: 'False',
    },
    {
      name: 'host network pod, host network sandbox without IP',
      p: hostPod,
      status: runtimeStatus([sandbox({ ips: [], hostNetwork: true })]),
      want: 'True',
    },
    { name: 'network mode changed', p: hostPod, status: runtimeStatus([sandbox()]), want: 'False' },
  ])('$name', ({ p, status, want }) => {
    const c = generatePodReadyToStartContainersCondition(p, status);
    expect(c).toEqual({ type: 'PodReadyToStartContainers', status: want });
  });
});

describe('generatePodConditions', () => {
  it('orders conditions as upstream and keeps foreign ones and DisruptionTarget', () => {
    const pod = podWith(spec('Always', ['a']), {
      status: {
        conditions: [
          { type: 'example.com/gate', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
    const conditions = generatePodConditions({
      pod,
      phase: 'Running',
      initContainerStatuses: [],
      containerStatuses: [ready(running('a'))],
      runtimeStatus: runtimeStatus([sandbox()]),
      oldStatus: {
        conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }],
      },
    });
    expect(conditions.map((c) => [c.type, c.status])).toEqual([
      ['example.com/gate', 'True'],
      ['DisruptionTarget', 'True'],
      ['PodReadyToStartContainers', 'True'],
      ['Initialized', 'True'],
      ['Ready', 'True'],
      ['ContainersReady', 'True'],
      ['PodScheduled', 'True'],
    ]);
  });

  // upstream generateAPIPodStatus (1.34): PodScheduled carries the pod generation like the
  // generated conditions (PodObservedGenerationTracking, on by default).
  it('gives PodScheduled the pod generation as observedGeneration too', () => {
    const pod = podWith(spec('Always', ['a']), { metadata: { name: 'p', uid: 'u', generation: 3 } });
    const conditions = generatePodConditions({
      pod,
      phase: 'Running',
      initContainerStatuses: [],
      containerStatuses: [ready(running('a'))],
      runtimeStatus: runtimeStatus([sandbox()]),
    });
    expect(conditions.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 3],
      ['Initialized', 3],
      ['Ready', 3],
      ['ContainersReady', 3],
      ['PodScheduled', 3],
    ]);
  });
});
