import { noopLogger } from '@kubelet-kit/core';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeletMetrics, KubeletServer } from '../src/index.js';

let server: KubeletServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function start(healthy: boolean) {
  const metrics = new KubeletMetrics(new Registry());
  metrics.runningPods.set(3);
  server = new KubeletServer({
    port: 0,
    pods: () => [{ metadata: { name: 'web-node1', namespace: 'default' }, status: { phase: 'Running' } }],
    healthChecks: [{ name: 'pleg', check: () => (healthy ? undefined : 'pleg was last seen active 4m ago') }],
    registry: metrics.registry,
    logger: noopLogger,
  });
  const addr = await server.start();
  return `http://127.0.0.1:${addr.port}`;
}

describe('KubeletServer', () => {
  it('serves /pods as a v1 PodList', async () => {
    const base = await start(true);
    const res = await fetch(`${base}/pods`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { kind: string; items: Array<{ metadata: { name: string } }> };
    expect(body.kind).toBe('PodList');
    expect(body.items.map((p) => p.metadata.name)).toEqual(['web-node1']);
  });

  it('answers /healthz ok, and 500 naming the failed check', async () => {
    const ok = await start(true);
    expect(await (await fetch(`${ok}/healthz`)).text()).toBe('ok');
    await server!.stop();
    const bad = await start(false);
    const res = await fetch(`${bad}/healthz`);
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('[-]pleg failed: pleg was last seen active 4m ago');
  });

  it('exposes metrics under upstream names', async () => {
    const base = await start(true);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain('kubelet_running_pods 3');
    expect(text).toContain('# TYPE kubelet_pod_worker_duration_seconds histogram');
  });

  it('404s unknown paths and refuses writes', async () => {
    const base = await start(true);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/pods`, { method: 'POST' })).status).toBe(405);
  });
});
