import { noopLogger, type Pod } from '@kubelet-kit/core';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer, sameJson } from '../src/server.js';

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

describe('/pods served again from its last serialization', () => {
  async function startWith(pods: () => Pod[]) {
    server = new KubeletServer({
      port: 0,
      pods,
      healthChecks: [],
      registry: new Registry(),
      logger: noopLogger,
    });
    const addr = await server.start();
    return `http://127.0.0.1:${addr.port}/pods`;
  }
  const text = async (url: string) => (await fetch(url)).text();
  const podList = (items: Pod[]) =>
    JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items });

  it('answers what a fresh serialization would, after every kind of change', async () => {
    const pod: Pod = {
      metadata: { name: 'web-node1', namespace: 'default', uid: 'u1' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
      status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
    };
    let pods: Pod[] = [pod];
    const url = await startWith(() => pods);
    expect(await text(url)).toBe(podList(pods));
    expect(await text(url)).toBe(podList(pods));
    // The agent's objects changed in place (the server keeps a copy, not them).
    pod.status!.phase = 'Running';
    expect(JSON.parse(await text(url)).items[0].status.phase).toBe('Running');
    pod.status!.conditions![0]!.status = 'True';
    expect(await text(url)).toBe(podList(pods));
    // A new status object with the same content, then a different one.
    pods = [{ ...pod, status: { ...pod.status, conditions: [{ type: 'Ready', status: 'True' }] } }];
    expect(await text(url)).toBe(podList(pods));
    pods = [{ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] } }];
    expect(await text(url)).toBe(podList(pods));
    // A member added, the same keys in another order, a pod added and removed.
    pods = [{ ...pods[0]!, status: { ...pods[0]!.status, podIP: '10.0.0.7' } }];
    expect(JSON.parse(await text(url)).items[0].status.podIP).toBe('10.0.0.7');
    pods = [{ status: pods[0]!.status, spec: pods[0]!.spec, metadata: pods[0]!.metadata }];
    expect(await text(url)).toBe(podList(pods));
    pods = [...pods, { metadata: { name: 'db-node1', namespace: 'default', uid: 'u2' } }];
    expect(await text(url)).toBe(podList(pods));
    pods = pods.slice(1);
    expect(await text(url)).toBe(podList(pods));
  });
});

describe('sameJson', () => {
  it('is true for values with the same JSON text, key order included', () => {
    expect(sameJson({ a: 1, b: [1, 'x', null, { c: true }] }, { a: 1, b: [1, 'x', null, { c: true }] })).toBe(
      true,
    );
    expect(sameJson(new Date(5), new Date(5))).toBe(true);
    expect(sameJson([], [])).toBe(true);
  });

  it('is false for any difference, and for what it cannot vouch for', () => {
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { a: '1' })).toBe(false);
    expect(sameJson({ a: undefined }, {})).toBe(false);
    expect(sameJson([1, 2], [1, 2, 3])).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson({}, [])).toBe(false);
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson(new Date(5), new Date(6))).toBe(false);
    expect(sameJson(new Date(5), 5)).toBe(false);
    // toJSON, own or inherited, decides the text: never trusted.
    const custom = { toJSON: () => 'x' };
    expect(sameJson(custom, custom)).toBe(false);
    class Quantity {
      constructor(readonly n: number) {}
    }
    expect(sameJson(new Quantity(1), new Quantity(1))).toBe(false);
    expect(sameJson(new Map(), new Map())).toBe(false);
  });
});
