import type { Container, Pod } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newContainerAnnotations, newContainerLabels } from '../src/labels.js';
import { type Harness, harness } from './harness.js';
import { checkCase, runCase } from './pod-actions-check.js';
import { basicCases, initCases, sidecarCases, type TableCase } from './pod-actions-table.js';

// The same table, with every runtime state created in the in-memory CRI and read back through
// getPodStatus. States the CRI cannot produce on demand (unknown, a sandbox without an IP) are
// covered by the direct run only.

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.close();
});

function supported(tc: TableCase): boolean {
  return (
    !tc.scenario.containers.some((c) => c.state === 'unknown') &&
    !tc.scenario.sandboxes.some((s) => s.ip === false)
  );
}

let n = 0;

async function materialize(tc: TableCase): Promise<Pod> {
  n++;
  const base = structuredClone(tc.scenario.pod);
  const pod: Pod = { ...base, metadata: { ...base.metadata, name: `table-${n}`, uid: `table-uid-${n}` } };
  const sandboxIds: string[] = [];
  // Oldest first, so the first listed is the newest.
  for (const s of [...tc.scenario.sandboxes].reverse()) {
    const res = await h.rs.runPodSandbox({ config: h.manager.generatePodSandboxConfig(pod, s.attempt) });
    sandboxIds.unshift(res.podSandboxId);
    h.clock.advance(10);
  }
  const specs = new Map<string, Container>(
    [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => [c.name, c]),
  );
  for (const c of tc.scenario.containers) {
    const spec = specs.get(c.name)!;
    const isInit = pod.spec?.initContainers?.some((x) => x.name === c.name) ?? false;
    const { containerId } = await h.rs.createContainer({
      podSandboxId: sandboxIds[0]!,
      config: {
        metadata: { name: c.name, attempt: 0 },
        image: { image: spec.image ?? '' },
        labels: newContainerLabels(spec, pod),
        annotations: newContainerAnnotations(spec, pod, 0, isInit ? 'init' : 'container'),
        logPath: `${c.name}/0.log`,
      },
    });
    if (c.state !== 'created') await h.rs.startContainer({ containerId });
    if (c.state === 'exited')
      h.server.exitContainer(containerId, c.exitCode ?? 0, c.reason ? { reason: c.reason } : {});
    h.clock.advance(10);
  }
  for (const [i, s] of tc.scenario.sandboxes.entries()) {
    if (!s.ready) await h.rs.stopPodSandbox({ podSandboxId: sandboxIds[i]! });
  }
  return pod;
}

describe.each([
  ['TestComputePodActions', basicCases],
  ['TestComputePodActionsWithInitContainers', initCases],
  ['TestComputePodActionsWithRestartableInitContainers', sidecarCases],
])('%s (through the in-memory CRI)', (_, cases) => {
  it.each(cases.filter(supported).map((tc) => [tc.name, tc] as const))('%s', async (_name, tc) => {
    const pod = await materialize(tc);
    const status = await h.status(pod);
    expect(status.sandboxStatuses).toHaveLength(tc.scenario.sandboxes.length);
    expect(status.containerStatuses).toHaveLength(tc.scenario.containers.length);
    tc.scenario.mutatePodAfter?.(pod);
    checkCase(tc, status, runCase(tc, status, pod));
  });
});

describe('table coverage', () => {
  it('runs at least 40 cases through the CRI', () => {
    expect([...basicCases, ...initCases, ...sidecarCases].filter(supported).length).toBeGreaterThanOrEqual(
      40,
    );
  });
});
