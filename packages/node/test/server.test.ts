import { noopLogger } from '@kubelet-kit/core';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer } from '../src/server.js';

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
    // healthz's handleRootHealth: the unauthenticated root withholds the reason.
    expect(await res.text()).toBe(
      '[+]ping ok\n[+]log ok\n[-]pleg failed: reason withheld\nhealthz check failed\n',
    );
  });

  it('lists ping and log before the agent checks in verbose /healthz', async () => {
    const base = await start(true);
    const res = await fetch(`${base}/healthz?verbose`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('[+]ping ok\n[+]log ok\n[+]pleg ok\nhealthz check passed\n');
  });

  it('gives the reason at /healthz/<check> (healthz adaptCheckToHandler)', async () => {
    const base = await start(false);
    const res = await fetch(`${base}/healthz/pleg`);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('internal server error: pleg was last seen active 4m ago\n');
    expect(await (await fetch(`${base}/healthz/ping`)).text()).toBe('ok');
    expect((await fetch(`${base}/healthz/nope`)).status).toBe(404);
  });

  it('skips the checks named by ?exclude, and warns of unknown ones', async () => {
    const base = await start(false);
    const res = await fetch(`${base}/healthz?exclude=pleg&exclude=nope&verbose`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      '[+]ping ok\n[+]log ok\n[+]pleg excluded: ok\n' +
        'warn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n',
    );
  });

  it('exposes metrics under upstream names', async () => {
    const base = await start(true);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain('kubelet_running_pods 3');
    expect(text).toContain('# TYPE kubelet_pod_worker_duration_seconds histogram');
  });

  it('uses upstream help text and buckets (pkg/kubelet/metrics)', async () => {
    const metrics = new KubeletMetrics(new Registry());
    metrics.podStartDuration.observe(1);
    metrics.podWorkerDuration.labels('sync').observe(1);
    metrics.plegRelistDuration.observe(1);
    const text = await metrics.registry.metrics();
    const help = (name: string) => text.split('\n').find((l) => l.startsWith(`# HELP ${name} `));
    const buckets = (name: string) =>
      [...text.matchAll(new RegExp(`^${name}_bucket\\{.*le="([^"]+)"`, 'gm'))].map((m) => m[1]);
    expect(help('kubelet_pod_worker_duration_seconds')).toBe(
      '# HELP kubelet_pod_worker_duration_seconds [ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
    );
    expect(help('kubelet_pleg_relist_duration_seconds')).toBe(
      '# HELP kubelet_pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.',
    );
    expect(help('kubelet_running_pods')).toBe(
      '# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox',
    );
    // PodStartDuration's buckets run to an hour.
    expect(buckets('kubelet_pod_start_duration_seconds').slice(-4)).toEqual(['1800', '2700', '3600', '+Inf']);
    // prometheus.DefBuckets, ending at 10 s.
    const def = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'];
    expect(buckets('kubelet_pod_worker_duration_seconds')).toEqual(def);
    expect(buckets('kubelet_pleg_relist_duration_seconds')).toEqual(def);
  });

  it('404s unknown paths and refuses writes', async () => {
    const base = await start(true);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/pods`, { method: 'POST' })).status).toBe(405);
  });
});
