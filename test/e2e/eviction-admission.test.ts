// End to end: admission under resource pressure, on the private containerd against the in-memory
// API server. A `memory.available` hard threshold above any machine's memory keeps the node under
// memory pressure from the first eviction cycle on: the Node reports MemoryPressure, a BestEffort
// pod is refused with upstream's reason and message, a BestEffort pod that tolerates the
// memory-pressure taint and a Burstable pod (cpu request only: the threshold leaves no allocatable
// memory) are admitted, and, the node being under pressure, the eviction manager then evicts what
// runs, one pod per cycle, with upstream's memory message.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/eviction-admission.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeApiServer, type KubeObject } from '@kubelet-kit/apiserver/testing';
import type { Node, Pod } from '@kubelet-kit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, busybox, removeNodePods, startAgent, waitFor } from './support/agent-process.js';

const nodeName = `e2e-evadm-${randomBytes(3).toString('hex')}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

function apiPod(name: string, extra: { resources?: object; tolerations?: object[] } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      ...(extra.tolerations ? { tolerations: extra.tolerations } : {}),
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', sleeper],
          ...(extra.resources ? { resources: extra.resources } : {}),
        },
      ],
    },
  };
}

describe('admission and eviction under memory pressure', () => {
  let dir: string;
  let api: FakeApiServer;
  let agent: AgentProcess | undefined;
  const statusOf = (name: string) => api.get<Pod & KubeObject>('Pod', 'default', name)?.status;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-evadm-e2e-'));
    api = new FakeApiServer({ kubeletScheme: 'http' });
    await api.start();
    const kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    fs.mkdirSync(path.join(dir, 'manifests'));
    agent = await startAgent({
      nodeName,
      manifestDir: path.join(dir, 'manifests'),
      rootDir: path.join(dir, 'root'),
      args: [
        '--kubeconfig',
        kubeconfig,
        '--eviction-hard',
        'memory.available<1000Ti',
        '--eviction-monitoring-period',
        '1s',
        '--node-status-update-frequency',
        '1s',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.stop();
    await removeNodePods(nodeName);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports MemoryPressure on the Node', async () => {
    const condition = await waitFor(
      'MemoryPressure True',
      async () => {
        const node = api.get<Node & KubeObject>('Node', undefined, nodeName);
        const c = node?.status?.conditions?.find((x) => x.type === 'MemoryPressure');
        return c?.status === 'True' ? c : undefined;
      },
      30_000,
    );
    expect(condition).toMatchObject({
      reason: 'KubeletHasInsufficientMemory',
      message: 'kubelet has insufficient memory available',
    });
  }, 60_000);

  it('refuses a BestEffort pod, admits a tolerating one and a Burstable one, then evicts them', async () => {
    api.create(apiPod('besteffort') as never);
    const refused = await waitFor('besteffort refused', async () => {
      const s = statusOf('besteffort');
      return s?.phase === 'Failed' ? s : undefined;
    });
    expect(refused).toMatchObject({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'Pod was rejected: The node had condition: [MemoryPressure]. ',
    });
    api.create(
      apiPod('tolerant', {
        tolerations: [
          { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
        ],
      }) as never,
    );
    api.create(apiPod('burstable', { resources: { requests: { cpu: '10m' } } }) as never);
    // Admitted pods are run, then evicted under the pressure: one per cycle, memory's message.
    for (const name of ['tolerant', 'burstable']) {
      const s = await waitFor(
        `${name} evicted`,
        async () => {
          const st = statusOf(name);
          return st?.reason === 'Evicted' && st.phase === 'Failed' ? st : undefined;
        },
        60_000,
      ).catch((err: unknown) => {
        console.log(
          agent!.logs
            .filter((l) => l.component === 'eviction')
            .map((l) => JSON.stringify(l))
            .join('\n'),
        );
        console.log(JSON.stringify(statusOf(name)));
        throw err;
      });
      expect(s?.message).toMatch(
        /^The node was low on resource: memory\. Threshold quantity: 1000Ti, available: \d+(Ki|Mi|Gi)?\. /,
      );
      expect(s?.message).not.toMatch(/^Pod was rejected/);
      expect(s?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({
        status: 'True',
        reason: 'TerminationByKubelet',
      });
    }
    const events = api.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(
      'Event',
      'default',
    );
    expect(events.some((e) => e.reason === 'Evicted' && e.involvedObject?.name === 'burstable')).toBe(true);
  }, 120_000);
});
