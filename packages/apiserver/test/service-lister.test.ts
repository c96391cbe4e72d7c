import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryOfflineStore, type Service } from '@kubelet-kit/core';
import { advanceUntil, FakeClock } from '@kubelet-kit/core/testing';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverServiceLister } from '../src/index.js';

// The API-server Service lister against a local HTTP server speaking the list/watch protocol of
// /api/v1/services. (No real API server runs on these machines.)

function svc(namespace: string, name: string, clusterIP: string, rv = '1'): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace, name, resourceVersion: rv },
    spec: { clusterIP, ports: [{ port: 80 }] },
  };
}

function fakeApiserver(initial: Service[]) {
  const state = {
    services: [...initial],
    rv: 10,
    /** Status codes the next lists answer with, first first. */
    listFailures: [] as number[],
    lists: [] as URL[],
    watches: [] as URL[],
    watchers: [] as http.ServerResponse[],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method !== 'GET' || url.pathname !== '/api/v1/services') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
      return;
    }
    if (url.searchParams.get('watch') === 'true') {
      state.watches.push(url);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      state.watchers.push(res);
      return;
    }
    state.lists.push(url);
    const failure = state.listFailures.shift();
    if (failure !== undefined) {
      res.writeHead(failure, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: failure, message: 'boom' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    // The server applies the field selector; list items come without apiVersion and kind.
    const items = state.services
      .filter(
        (s) =>
          url.searchParams.get('fieldSelector') !== 'spec.clusterIP!=None' || s.spec?.clusterIP !== 'None',
      )
      .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    res.end(
      JSON.stringify({
        kind: 'ServiceList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(state.rv) },
        items,
      }),
    );
  });
  const send = (type: string, object: unknown) => {
    for (const w of state.watchers) w.write(`${JSON.stringify({ type, object })}\n`);
  };
  return { server, state, send };
}

const names = (services: readonly Service[]) => services.map((s) => s.metadata?.name).sort();

describe('ApiserverServiceLister', () => {
  let api: ReturnType<typeof fakeApiserver>;
  let kc: KubeConfig;
  let clock: FakeClock;
  let lister: ApiserverServiceLister | undefined;

  beforeEach(async () => {
    api = fakeApiserver([
      svc('default', 'kubernetes', '10.96.0.1'),
      svc('ns', 'web', '10.96.0.2'),
      svc('ns', 'db', '10.96.0.3'),
      svc('ns', 'headless', 'None'),
    ]);
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    const port = (api.server.address() as AddressInfo).port;
    kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      { name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true },
      { name: 'u' },
    );
    clock = new FakeClock();
  });

  afterEach(async () => {
    await lister?.stop();
    lister = undefined;
    for (const w of api.state.watchers) w.destroy();
    api.server.closeAllConnections();
    await new Promise<void>((r) => api.server.close(() => r()));
  });

  it('is unsynced and empty before the first list, then lists all namespaces but headless services', async () => {
    lister = new ApiserverServiceLister({ kubeConfig: kc, clock });
    expect(lister.hasSynced()).toBe(false);
    expect(lister.list('ns')).toEqual([]);
    lister.start();
    await advanceUntil(clock, () => lister?.hasSynced());
    expect(names(lister.list('ns'))).toEqual(['db', 'web']);
    expect(lister.list('default')).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { namespace: 'default', name: 'kubernetes', resourceVersion: '1' },
        spec: { clusterIP: '10.96.0.1', ports: [{ port: 80 }] },
      },
    ]);
    expect(lister.list('elsewhere')).toEqual([]);
    // Cluster-wide, headless ones left out, in the list and in the watch from its resourceVersion.
    expect(api.state.lists[0]?.searchParams.get('fieldSelector')).toBe('spec.clusterIP!=None');
    await advanceUntil(clock, () => api.state.watches.length > 0);
    expect(api.state.watches[0]?.searchParams.get('fieldSelector')).toBe('spec.clusterIP!=None');
    expect(api.state.watches[0]?.searchParams.get('resourceVersion')).toBe('10');
  });

  it('follows added, modified and deleted services from the watch', async () => {
    lister = new ApiserverServiceLister({ kubeConfig: kc, clock });
    lister.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.send('ADDED', svc('other', 'cache', '10.96.0.9', '11'));
    await advanceUntil(clock, () => lister?.list('other').length === 1);
    api.send('MODIFIED', svc('ns', 'web', '10.96.0.22', '12'));
    await advanceUntil(
      clock,
      () => lister?.list('ns').find((s) => s.metadata?.name === 'web')?.spec?.clusterIP === '10.96.0.22',
    );
    api.send('DELETED', svc('ns', 'db', '10.96.0.3', '13'));
    await advanceUntil(clock, () => lister?.list('ns').length === 1);
    api.send('DELETED', svc('other', 'cache', '10.96.0.9', '14'));
    await advanceUntil(clock, () => lister?.list('other').length === 0);
    expect(names(lister.list('ns'))).toEqual(['web']);
  });

  it('relists after a 410 Gone, replacing what it had', async () => {
    lister = new ApiserverServiceLister({ kubeConfig: kc, clock });
    lister.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.state.services = [svc('ns', 'fresh', '10.96.1.1')];
    api.state.rv = 20;
    api.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    await advanceUntil(clock, () => lister?.list('ns').some((s) => s.metadata?.name === 'fresh'));
    expect(names(lister.list('ns'))).toEqual(['fresh']);
    expect(lister.list('default')).toEqual([]);
    expect(lister.stats().expired).toBe(1);
  });

  it('retries a failed list with backoff and stays unsynced meanwhile', async () => {
    api.state.listFailures.push(500);
    const errors: string[] = [];
    lister = new ApiserverServiceLister({
      kubeConfig: kc,
      clock,
      random: () => 0,
      onError: (e) => errors.push(e.message),
    });
    lister.start();
    await advanceUntil(clock, () => errors.length >= 1);
    expect(lister.hasSynced()).toBe(false);
    expect(errors[0]).toMatch(/^listing Services failed/);
    await advanceUntil(clock, () => lister?.hasSynced(), { step: 100 });
    expect(lister.stats().listErrors).toBe(1);
    expect(names(lister.list('ns'))).toEqual(['db', 'web']);
  });

  it('with a store: serves the Services of the last stored list while the first list fails', async () => {
    const store = new InMemoryOfflineStore();
    lister = new ApiserverServiceLister({ kubeConfig: kc, clock, store });
    lister.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.send('DELETED', svc('ns', 'db', '10.96.0.3', '11'));
    await advanceUntil(clock, () => lister?.list('ns').length === 1);
    await lister.stop(); // flushes the store
    lister = undefined;
    const keys = (await store.list('Service')).map((e) => e.key).sort();
    expect(keys).toEqual(['default/kubernetes', 'ns/web', '~listed']);

    // Restarted, the server failing: the stored ones stand in, and count as synced.
    api.state.listFailures.push(503);
    const errors: string[] = [];
    lister = new ApiserverServiceLister({
      kubeConfig: kc,
      clock,
      store,
      random: () => 0,
      onError: (e) => errors.push(e.message),
    });
    lister.start();
    await advanceUntil(clock, () => lister?.hasSynced(), { step: 0 });
    expect(errors).toHaveLength(1);
    expect(names(lister.list('ns'))).toEqual(['web']);
    // The list that then succeeds replaces them.
    await advanceUntil(clock, () => lister?.list('ns').length === 2, { step: 100 });
    expect(names(lister.list('ns'))).toEqual(['db', 'web']);
  });

  it('with a store that never held a whole list: stays unsynced while the list fails', async () => {
    const store = new InMemoryOfflineStore();
    await store.put('Service', 'ns/partial', svc('ns', 'partial', '10.96.9.9'));
    api.state.listFailures.push(503, 503);
    const errors: string[] = [];
    lister = new ApiserverServiceLister({
      kubeConfig: kc,
      clock,
      store,
      random: () => 0,
      onError: (e) => errors.push(e.message),
    });
    lister.start();
    await advanceUntil(clock, () => errors.length >= 1, { step: 0 });
    expect(lister.hasSynced()).toBe(false);
    expect(lister.list('ns')).toEqual([]);
  });
});
