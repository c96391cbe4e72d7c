import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuntimeClass, RuntimeClassGetter } from '@kubelet-kit/core';
import { advanceUntil, FakeClock } from '@kubelet-kit/core/testing';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverRuntimeClassList } from '../src/index.js';

// The API-server RuntimeClass getter against a local HTTP server speaking the list/watch
// protocol of /apis/node.k8s.io/v1/runtimeclasses. (No real API server runs on these machines.)

function rc(name: string, handler: string, rv = '1'): RuntimeClass {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name, resourceVersion: rv },
    handler,
  };
}

/** A fallback list, as node's `LocalRuntimeClassList` over `--runtime-classes` files. */
function localList(classes: RuntimeClass[]): RuntimeClassGetter {
  const byName = new Map(classes.map((c) => [c.metadata?.name ?? '', c]));
  return { getRuntimeClass: (name) => byName.get(name) };
}

function fakeApiserver(initial: RuntimeClass[]) {
  const state = {
    classes: [...initial],
    rv: 10,
    /** Status codes the next lists answer with, first first. */
    listFailures: [] as number[],
    lists: [] as URL[],
    watches: [] as URL[],
    watchers: [] as http.ServerResponse[],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method !== 'GET' || url.pathname !== '/apis/node.k8s.io/v1/runtimeclasses') {
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
    // List items come without apiVersion and kind, as from a real server.
    const items = state.classes.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    res.end(
      JSON.stringify({
        kind: 'RuntimeClassList',
        apiVersion: 'node.k8s.io/v1',
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

describe('ApiserverRuntimeClassList', () => {
  let api: ReturnType<typeof fakeApiserver>;
  let kc: KubeConfig;
  let clock: FakeClock;
  let list: ApiserverRuntimeClassList | undefined;

  beforeEach(async () => {
    api = fakeApiserver([rc('gvisor', 'runsc'), rc('shared', 'from-api')]);
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
    await list?.stop();
    list = undefined;
    for (const w of api.state.watchers) w.destroy();
    api.server.closeAllConnections();
    await new Promise<void>((r) => api.server.close(() => r()));
  });

  it('knows nothing before the first list, then the served classes by name', async () => {
    list = new ApiserverRuntimeClassList({
      kubeConfig: kc,
      clock,
      fallback: localList([rc('local-only', 'kata'), rc('shared', 'from-file')]),
    });
    // Not synced yet: even a served name (and a fallback one) is not found.
    expect(list.getRuntimeClass('gvisor')).toBeUndefined();
    expect(list.getRuntimeClass('local-only')).toBeUndefined();
    list.start();
    await advanceUntil(clock, () => list?.synced);
    expect(list.getRuntimeClass('gvisor')).toMatchObject({
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'gvisor' },
      handler: 'runsc',
    });
    // The API server wins over the files; the files fill in what it lacks.
    expect(list.getRuntimeClass('shared')?.handler).toBe('from-api');
    expect(list.getRuntimeClass('local-only')?.handler).toBe('kata');
    expect(list.getRuntimeClass('x')).toBeUndefined();
    expect(list.names).toEqual(['gvisor', 'shared']);
    // The watch starts from the list's resourceVersion.
    await advanceUntil(clock, () => api.state.watches.length > 0);
    expect(api.state.watches[0]?.searchParams.get('resourceVersion')).toBe('10');
  });

  it('follows added, modified and deleted classes from the watch', async () => {
    list = new ApiserverRuntimeClassList({ kubeConfig: kc, clock });
    list.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.send('ADDED', rc('kata', 'kata-qemu', '11'));
    await advanceUntil(clock, () => list?.getRuntimeClass('kata'));
    expect(list.getRuntimeClass('kata')?.handler).toBe('kata-qemu');
    api.send('MODIFIED', rc('gvisor', 'runsc-debug', '12'));
    await advanceUntil(clock, () => list?.getRuntimeClass('gvisor')?.handler === 'runsc-debug');
    api.send('DELETED', rc('shared', 'from-api', '13'));
    await advanceUntil(clock, () => list?.getRuntimeClass('shared') === undefined);
    expect(list.names).toEqual(['gvisor', 'kata']);
  });

  it('relists after a 410 Gone on the watch', async () => {
    list = new ApiserverRuntimeClassList({ kubeConfig: kc, clock });
    list.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.state.classes = [rc('fresh', 'runc')];
    api.state.rv = 20;
    api.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    await advanceUntil(clock, () => list?.getRuntimeClass('fresh'));
    expect(list.getRuntimeClass('gvisor')).toBeUndefined();
    expect(list.stats().expired).toBe(1);
    expect(api.state.lists).toHaveLength(2);
    await advanceUntil(clock, () => api.state.watches.length > 1);
    expect(api.state.watches[1]?.searchParams.get('resourceVersion')).toBe('20');
  });

  it('retries a failed list with backoff and stays unsynced meanwhile', async () => {
    api.state.listFailures.push(500, 503);
    const errors: string[] = [];
    list = new ApiserverRuntimeClassList({
      kubeConfig: kc,
      clock,
      random: () => 0,
      onError: (e) => errors.push(e.message),
    });
    list.start();
    await advanceUntil(clock, () => api.state.lists.length >= 1 && errors.length >= 1);
    expect(list.synced).toBe(false);
    expect(list.getRuntimeClass('gvisor')).toBeUndefined();
    expect(errors[0]).toMatch(/^listing RuntimeClasses failed/);
    const firstFailure = clock.now();
    await advanceUntil(clock, () => list?.synced, { step: 100 });
    expect(list.getRuntimeClass('gvisor')?.handler).toBe('runsc');
    expect(list.stats().listErrors).toBe(2);
    // 800 ms, then 1600 ms, before the third list.
    expect(clock.now() - firstFailure).toBeGreaterThanOrEqual(2400);
  });

  it('stop ends the watch and the loop', async () => {
    list = new ApiserverRuntimeClassList({ kubeConfig: kc, clock });
    list.start();
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    const watcher = api.state.watchers[0];
    const closed = new Promise<void>((r) => watcher?.on('close', () => r()));
    await list.stop();
    await closed;
    const lists = api.state.lists.length;
    await clock.tick(60_000);
    expect(api.state.lists).toHaveLength(lists);
    expect(api.state.watches).toHaveLength(1);
  });
});
