import type { Container, Pod, RuntimeContainerStatus, RuntimePodStatus } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { hashContainer } from '../src/index.js';
import { checkCase, runCase } from './pod-actions-check.js';
import { basicCases, initCases, type Scenario, sidecarCases } from './pod-actions-table.js';

function allContainers(pod: Pod): Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

/** Builds the runtime status straight from the scenario (the CRI-backed run is in manager tests). */
function directStatus(scenario: Scenario, pod: Pod): RuntimePodStatus {
  const t0 = Date.UTC(2026, 0, 1);
  const specs = new Map(allContainers(pod).map((c) => [c.name, c]));
  const containerStatuses: RuntimeContainerStatus[] = scenario.containers.map((s, i) => {
    const spec = specs.get(s.name)!;
    return {
      id: { type: 'containerd', id: `${s.name}-${i}` },
      name: s.name,
      state: s.state,
      createdAt: t0 + i * 1000,
      startedAt: s.state === 'created' ? 0 : t0 + i * 1000,
      finishedAt: s.state === 'exited' ? t0 + i * 1000 + 500 : 0,
      exitCode: s.exitCode ?? 0,
      image: spec.image ?? '',
      imageId: '',
      hash: hashContainer(spec),
      restartCount: 0,
      reason: s.reason ?? '',
      message: '',
    };
  });
  containerStatuses.reverse();
  return {
    id: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: pod.metadata!.namespace!,
    ips: [],
    containerStatuses,
    sandboxStatuses: scenario.sandboxes.map((s, i) => ({
      id: `sandbox-${i}`,
      name: pod.metadata!.name!,
      namespace: pod.metadata!.namespace!,
      uid: pod.metadata!.uid!,
      attempt: s.attempt,
      state: s.ready ? 'ready' : 'notready',
      createdAt: t0 - i,
      ips: s.ip === false ? [] : ['10.0.0.1'],
      hostNetwork: false,
      labels: {},
      annotations: {},
    })),
    timestamp: t0,
  };
}

describe.each([
  ['TestComputePodActions', basicCases],
  ['TestComputePodActionsWithInitContainers', initCases],
  ['TestComputePodActionsWithRestartableInitContainers', sidecarCases],
])('%s (direct statuses)', (_, cases) => {
  it.each(cases.map((tc) => [tc.name, tc] as const))('%s', (_name, tc) => {
    const pod = structuredClone(tc.scenario.pod);
    const status = directStatus(tc.scenario, pod);
    tc.scenario.mutatePodAfter?.(pod);
    checkCase(tc, status, runCase(tc, status, pod));
  });
});

describe('computePodActions details', () => {
  it('has at least 40 table cases', () => {
    expect(basicCases.length + initCases.length + sidecarCases.length).toBeGreaterThanOrEqual(40);
  });

  it('gives kill messages and reasons as upstream', () => {
    const tc = basicCases.find(
      (c) => c.name === 'Kill and recreate the container if the liveness check has failed',
    )!;
    const pod = structuredClone(tc.scenario.pod);
    const status = directStatus(tc.scenario, pod);
    const [info] = [...runCase(tc, status, pod).containersToKill.values()];
    expect(info).toMatchObject({
      name: 'foo2',
      reason: 'LivenessProbe',
      message: 'Container foo2 failed liveness probe, will be restarted',
    });
  });

  it('does not restart a pod being deleted', () => {
    const tc = basicCases[2]!;
    const base = structuredClone(tc.scenario.pod);
    const pod: Pod = { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    const status = directStatus(tc.scenario, pod);
    expect(runCase(tc, status, pod).containersToStart).toEqual([]);
  });

  it('a changed hash on a non-image field does not restart (only name and image are hashed)', () => {
    const tc = basicCases[0]!;
    const pod = structuredClone(tc.scenario.pod);
    const status = directStatus(tc.scenario, pod);
    pod.spec!.containers[0]!.env = [{ name: 'A', value: 'b' }];
    pod.spec!.containers[0]!.resources = { limits: { cpu: '1' } };
    const actions = runCase(tc, status, pod);
    expect(actions.containersToKill.size).toBe(0);
    expect(actions.containersToStart).toEqual([]);
  });
});
