// The agent in API server mode against @kubelet-kit/apiserver/testing's in-memory API server
// (real REST/watch semantics, one fake clock for both), containers on the in-memory CRI: a pod
// created through the API runs and its status lands in the stored pod; the agent renews its
// Lease and records events; a graceful API delete ends with the agent's grace-0 delete.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import type { Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import { pump } from './pump.js';

const image = 'localhost/kubelet-kit/busybox:1.0';

describe('agent against the in-memory API server', () => {
  let clock: FakeClock;
  let cri: InMemoryCriServer;
  let api: FakeApiServer;
  let dir: string;
  let agent: Agent | undefined;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    cri = await InMemoryCriServer.start({ images: [image], clock });
    api = new FakeApiServer({ clock });
    await api.start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-fakeapi-'));
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await api.stop();
    await cri.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs an API pod, reports its status, renews its Lease, and finishes a graceful delete', async () => {
    const resolv = path.join(dir, 'resolv.conf');
    fs.writeFileSync(resolv, 'nameserver 192.0.2.53\n');
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: api.writeKubeconfig(path.join(dir, 'kubeconfig')),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
      resolvConf: resolv,
    });
    await agent.start();
    const core = api.makeKubeConfig().makeApiClient(CoreV1Api);
    const body: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        nodeName: 'node-a',
        terminationGracePeriodSeconds: 2,
        containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
      },
    };
    await core.createNamespacedPod({ namespace: 'default', body: body as never });
    const running = await pump(clock, () => {
      const p = api.get<Pod>('pods', 'default', 'web');
      return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
    });
    expect(running.status?.podIP).toMatch(/^10\.88\./);
    const writes = api.requests.filter(
      (r) => r.method !== 'GET' && r.path.startsWith('/api/v1/namespaces/default/pods/web'),
    );
    expect(writes.every((r) => r.status < 300)).toBe(true);

    // The node Lease and the pod's events, stored as the agent wrote them.
    const lease = await pump(clock, () =>
      api.get<{ spec?: { holderIdentity?: string } }>('leases', 'kube-node-lease', 'node-a'),
    );
    expect(lease.spec?.holderIdentity).toBe('node-a');
    const started = await pump(clock, () =>
      api
        .list<{ reason?: string; involvedObject?: { name?: string } } & Record<string, unknown>>(
          'events',
          'default',
        )
        .find((e) => e.reason === 'Started' && e.involvedObject?.name === 'web'),
    );
    expect(started.involvedObject).toMatchObject({ kind: 'Pod', uid: running.metadata?.uid });

    // A graceful delete: the pod stays with a deletionTimestamp until the agent, having
    // stopped it, deletes it with grace 0 and its UID as precondition.
    await core.deleteNamespacedPod({ name: 'web', namespace: 'default' });
    expect(api.get('pods', 'default', 'web')?.metadata?.deletionGracePeriodSeconds).toBe(2);
    await pump(clock, () => api.get('pods', 'default', 'web') === undefined);
    expect(cri.calls('StopPodSandbox').length).toBeGreaterThan(0);
    const final = api.requests.filter(
      (r) => r.method === 'DELETE' && r.path === '/api/v1/namespaces/default/pods/web',
    );
    expect(final.at(-1)?.body).toMatchObject({
      gracePeriodSeconds: 0,
      preconditions: { uid: running.metadata?.uid },
    });
    // No write refused: in particular no event lost to a name shared within one millisecond.
    const bad = api.requests.filter((r) => r.status >= 400 && r.status !== 404);
    expect(bad.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([]);
  });
});
