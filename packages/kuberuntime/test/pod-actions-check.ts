import type { Pod, ProbeResult, ProbeResultsReader, RuntimePodStatus } from '@kubelet-kit/core';
import { expect } from 'vitest';
import { computePodActions, type PodActions } from '../src/index.js';
import type { TableCase } from './pod-actions-table.js';

/** A probe view: Success for every container unless the scenario says otherwise. */
export function probeReader(
  status: RuntimePodStatus,
  overrides: Readonly<Record<string, ProbeResult | 'none'>> | undefined,
): ProbeResultsReader {
  const byId = new Map<string, ProbeResult | undefined>();
  for (const s of status.containerStatuses) {
    const o = overrides?.[s.name];
    byId.set(`${s.id.type}://${s.id.id}`, o === 'none' ? undefined : (o ?? 'Success'));
  }
  return { get: (id) => byId.get(id) };
}

/** Asserts `actions` against the case's expectation; shared with the CRI-backed run. */
export function checkCase(tc: TableCase, status: RuntimePodStatus, actions: PodActions): void {
  const e = tc.expected;
  const names = [...actions.containersToKill.values()].map((k) => k.name).sort();
  expect({
    killPod: actions.killPod,
    createSandbox: actions.createSandbox,
    sandboxId: actions.sandboxId,
    attempt: actions.attempt,
    initContainersToStart: actions.initContainersToStart,
    containersToStart: actions.containersToStart,
    containersToKill: names,
  }).toEqual({
    killPod: e.killPod ?? false,
    createSandbox: e.createSandbox ?? false,
    sandboxId: e.keepSandboxId ? (status.sandboxStatuses[0]?.id ?? '') : '',
    attempt: e.attempt ?? 0,
    initContainersToStart: e.initContainersToStart ?? [],
    containersToStart: e.containersToStart ?? [],
    containersToKill: [...(e.containersToKill ?? [])].sort(),
  });
  // Every kill names a container of the status, by its runtime ID.
  for (const [key, info] of actions.containersToKill) {
    expect(
      status.containerStatuses.some((s) => `${s.id.type}://${s.id.id}` === key && s.name === info.name),
    ).toBe(true);
  }
}

export function runCase(tc: TableCase, status: RuntimePodStatus, pod: Pod): PodActions {
  return computePodActions(pod, status, {
    liveness: probeReader(status, tc.scenario.liveness),
    startup: probeReader(status, tc.scenario.startup),
  });
}
