import type { PodStatus } from '@kubelet-kit/core';
import { FakeProbeManager } from '@kubelet-kit/prober/testing';
import { describe, expect, it } from 'vitest';
import { containerId, execProbe, podWith, runningStatus, terminatedStatus } from './helpers.js';

describe('FakeProbeManager', () => {
  it('records calls and derives Started/Ready from running state and readiness results', () => {
    const fake = new FakeProbeManager();
    const pod = podWith('Readiness', execProbe());
    fake.addPod(pod);
    expect([...fake.pods.keys()]).toEqual(['pod-uid-1']);
    const status: PodStatus = { containerStatuses: [runningStatus(0, { started: false })] };
    fake.updatePodStatus(pod, status);
    expect(status.containerStatuses![0]).toMatchObject({ started: true, ready: true });
    fake.readinessManager.set(containerId, 'Failure', pod);
    fake.updatePodStatus(pod, status);
    expect(status.containerStatuses![0]!.ready).toBe(false);
    const stopped: PodStatus = { containerStatuses: [terminatedStatus()] };
    fake.updatePodStatus(pod, stopped);
    expect(stopped.containerStatuses![0]).toMatchObject({ started: false, ready: false });
    fake.cleanupPods(new Set());
    expect(fake.pods.size).toBe(0);
    expect(fake.calls.map((c) => c.method)).toEqual([
      'addPod',
      'updatePodStatus',
      'updatePodStatus',
      'updatePodStatus',
      'cleanupPods',
    ]);
  });
});
