import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ConfigMap, InMemoryOfflineStore, type Secret } from '@kubelet-kit/core';
import { advanceUntil, FakeClock } from '@kubelet-kit/core/testing';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { objectTtlFromNode, WatchingObjectGetter } from '../src/index.js';

// The watch-based ConfigMap/Secret getter against a local HTTP server speaking list, watch and
// get of /api/v1/namespaces/<ns>/{configmaps,secrets} with `metadata.name=` field selectors.

type Obj = ConfigMap | Secret;

function cm(name: string, data: Record<string, string>, rv: string, immutable?: boolean): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'ns', name, resourceVersion: rv },
    data,
    ...(immutable ? { immutable } : {}),
  };
}

function fakeApiserver() {
  const state = {
    /** `<resource>/<name>` → object, all in namespace ns. */
    objects: new Map<string, Obj>(),
    rv: 10,
    /** Answer lists (not gets) with this status while set. */
    listStatus: undefined as number | undefined,
    requests: [] as string[],
    /** Open watches with their resource and name. */
    watchers: [] as { resource: string; name: string; res: http.ServerResponse }[],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    state.requests.push(`${req.method} ${url.pathname}${url.search}`);
    const m = /^\/api\/v1\/namespaces\/ns\/(configmaps|secrets)(?:\/([^/]+))?$/.exec(url.pathname);
    const json = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!m || req.method !== 'GET') return json(404, { kind: 'Status', code: 404, reason: 'NotFound' });
    const [, resource, getName] = m as unknown as [string, string, string | undefined];
    if (getName) {
      const obj = state.objects.get(`${resource}/${getName}`);
      return obj ? json(200, obj) : json(404, { kind: 'Status', code: 404, reason: 'NotFound' });
    }
    const selector = url.searchParams.get('fieldSelector') ?? '';
    const name = selector.startsWith('metadata.name=') ? selector.slice('metadata.name='.length) : '';
    if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      state.watchers.push({ resource, name, res });
      res.on('close', () => {
        state.watchers = state.watchers.filter((w) => w.res !== res);
      });
      return;
    }
    if (state.listStatus !== undefined) {
      return json(state.listStatus, { kind: 'Status', code: state.listStatus, message: 'forbidden' });
    }
    const obj = state.objects.get(`${resource}/${name}`);
    const items = obj ? [(({ apiVersion: _a, kind: _k, ...rest }) => rest)(obj)] : [];
    json(200, {
      kind: resource === 'configmaps' ? 'ConfigMapList' : 'SecretList',
      apiVersion: 'v1',
      metadata: { resourceVersion: String(state.rv) },
      items,
    });
  });
  /** Changes an object and tells the watches of it. */
  const send = (resource: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: Obj) => {
    const name = obj.metadata?.name ?? '';
    if (type === 'DELETED') state.objects.delete(`${resource}/${name}`);
    else state.objects.set(`${resource}/${name}`, obj);
    for (const w of state.watchers) {
      if (w.resource === resource && w.name === name)
        w.res.write(`${JSON.stringify({ type, object: obj })}\n`);
    }
  };
  return { server, state, send };
}

describe('WatchingObjectGetter', () => {
  let api: ReturnType<typeof fakeApiserver>;
  let kc: KubeConfig;
  let clock: FakeClock;
  let getter: WatchingObjectGetter | undefined;

  beforeEach(async () => {
    api = fakeApiserver();
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'local',
        server: `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
    clock = new FakeClock();
  });

  afterEach(async () => {
    await getter?.stop();
    getter = undefined;
    for (const w of api.state.watchers) w.res.destroy();
    api.server.closeAllConnections();
    await new Promise<void>((r) => api.server.close(() => r()));
  });

  /** Reads while the fake clock moves (the first read may wait for its list). */
  async function read<T>(p: Promise<T>): Promise<T> {
    let done = false;
    const out = p.finally(() => {
      done = true;
    });
    await advanceUntil(clock, () => done, { step: 10 });
    return out;
  }

  it('lists and watches one object by name, serves reads from the watch, follows changes and deletion', async () => {
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v1' }, '5'));
    getter = new WatchingObjectGetter({ kubeConfig: kc, clock });
    const first = await read(getter.getConfigMap('ns', 'cfg'));
    expect(first).toEqual(cm('cfg', { k: 'v1' }, '5'));
    expect(api.state.requests[0]).toBe(
      'GET /api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcfg',
    );
    await advanceUntil(clock, () => api.state.watchers.length === 1);
    const watch = api.state.requests.find((r) => r.includes('watch=true')) ?? '';
    expect(watch).toMatch(/^GET \/api\/v1\/namespaces\/ns\/configmaps\?/);
    const params = new URL(`http://x${watch.slice(4)}`).searchParams;
    expect(params.get('fieldSelector')).toBe('metadata.name=cfg');
    expect(params.get('resourceVersion')).toBe('10');
    expect(params.get('allowWatchBookmarks')).toBe('true');

    api.send('configmaps', 'MODIFIED', cm('cfg', { k: 'v2' }, '11'));
    await advanceUntil(clock, async () => (await getter?.getConfigMap('ns', 'cfg'))?.data?.k === 'v2');
    api.send('configmaps', 'DELETED', cm('cfg', { k: 'v2' }, '12'));
    await advanceUntil(clock, async () => (await getter?.getConfigMap('ns', 'cfg')) === undefined);
    // Reads came from the watch: one list, no GET of the object.
    expect(api.state.requests.filter((r) => !r.includes('watch=true'))).toHaveLength(1);
    expect(getter.stats()).toMatchObject({ watching: 1, watchesStarted: 1, fallbackReads: 0 });
  });

  it('a missing object reads undefined and appears when the watch adds it; secrets too', async () => {
    getter = new WatchingObjectGetter({ kubeConfig: kc, clock });
    expect(await read(getter.getSecret('ns', 'creds'))).toBeUndefined();
    await advanceUntil(clock, () => api.state.watchers.length === 1);
    const secret: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: 'ns', name: 'creds', resourceVersion: '11' },
      data: { p: 'cw==' },
    };
    api.send('secrets', 'ADDED', secret);
    await advanceUntil(clock, async () => (await getter?.getSecret('ns', 'creds'))?.data?.p === 'cw==');
    expect(api.state.watchers[0]?.resource).toBe('secrets');
  });

  it('stops watching an object once it is seen immutable, and keeps serving it', async () => {
    api.state.objects.set('configmaps/frozen', cm('frozen', { k: 'v' }, '5', true));
    getter = new WatchingObjectGetter({ kubeConfig: kc, clock });
    expect((await read(getter.getConfigMap('ns', 'frozen')))?.immutable).toBe(true);
    await advanceUntil(clock, () => api.state.watchers.length === 0 && getter?.stats().watching === 0);
    expect(getter.stats().stoppedImmutable).toBe(1);
    const requests = api.state.requests.length;
    expect((await getter.getConfigMap('ns', 'frozen'))?.data).toEqual({ k: 'v' });
    expect(api.state.requests.length).toBe(requests);
  });

  it('stops a watch not read for maxIdleTime (no pod registration in ObjectGetter), and restarts it on the next read', async () => {
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v1' }, '5'));
    getter = new WatchingObjectGetter({ kubeConfig: kc, clock, maxIdleTimeMs: 5 * 60_000 });
    getter.start();
    await read(getter.getConfigMap('ns', 'cfg'));
    await advanceUntil(clock, () => api.state.watchers.length === 1);
    // Reads within the idle time keep it.
    await clock.tick(4 * 60_000);
    await getter.getConfigMap('ns', 'cfg');
    await clock.tick(4 * 60_000);
    expect(getter.stats().watching).toBe(1);
    await clock.tick(2 * 60_000);
    await advanceUntil(clock, () => api.state.watchers.length === 0);
    expect(getter.stats()).toMatchObject({ watching: 0, stoppedIdle: 1 });
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v3' }, '20'));
    expect((await read(getter.getConfigMap('ns', 'cfg')))?.data).toEqual({ k: 'v3' });
    expect(getter.stats().watchesStarted).toBe(2);
  });

  it('falls back to GETs cached for the TTL while the watch cannot list', async () => {
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v1' }, '5'));
    api.state.listStatus = 403;
    const errors: string[] = [];
    let ttl: number | undefined = 30_000;
    getter = new WatchingObjectGetter({
      kubeConfig: kc,
      clock,
      random: () => 0,
      getTtlMs: () => ttl,
      onError: (e) => errors.push(e.message),
    });
    expect((await read(getter.getConfigMap('ns', 'cfg')))?.data).toEqual({ k: 'v1' });
    expect(errors[0]).toMatch(/^listing ConfigMap ns\/cfg failed/);
    expect(api.state.requests).toContain('GET /api/v1/namespaces/ns/configmaps/cfg');
    const gets = () =>
      api.state.requests.filter((r) => r === 'GET /api/v1/namespaces/ns/configmaps/cfg').length;
    // Within the TTL: the cached GET, no new request.
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v2' }, '6'));
    await clock.tick(20_000);
    expect((await getter.getConfigMap('ns', 'cfg'))?.data).toEqual({ k: 'v1' });
    expect(gets()).toBe(1);
    await clock.tick(11_000);
    expect((await getter.getConfigMap('ns', 'cfg'))?.data).toEqual({ k: 'v2' });
    expect(gets()).toBe(2);
    // No TTL from the Node: 1 min.
    ttl = undefined;
    await clock.tick(31_000);
    expect((await getter.getConfigMap('ns', 'cfg'))?.data).toEqual({ k: 'v2' });
    expect(gets()).toBe(2);
    expect(getter.stats().fallbackReads).toBe(4);
    // Once the watch lists, reads come from it.
    api.state.listStatus = undefined;
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v3' }, '7'));
    await advanceUntil(clock, async () => (await getter?.getConfigMap('ns', 'cfg'))?.data?.k === 'v3', {
      step: 500,
    });
    expect(gets()).toBe(2);
  });
});

describe('WatchingObjectGetter: aborts', () => {
  it('a read waiting for its first list rejects with the signal reason', async () => {
    // A server that never answers the list.
    const server = http.createServer(() => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'local',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
    const clock = new FakeClock();
    const getter = new WatchingObjectGetter({ kubeConfig: kc, clock });
    const abort = new AbortController();
    const read = getter.getConfigMap('ns', 'cfg', abort.signal);
    abort.abort(new Error('pod sync cancelled'));
    await expect(read).rejects.toThrow('pod sync cancelled');
    const stopped = getter.stop();
    server.closeAllConnections();
    await stopped;
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe('objectTtlFromNode', () => {
  it.each([
    [{ metadata: { annotations: { 'node.alpha.kubernetes.io/ttl': '15' } } }, 15_000],
    [{ metadata: { annotations: { 'node.alpha.kubernetes.io/ttl': '0' } } }, 0],
    [{ metadata: { annotations: { 'node.alpha.kubernetes.io/ttl': '-3' } } }, undefined],
    [{ metadata: { annotations: { 'node.alpha.kubernetes.io/ttl': 'soon' } } }, undefined],
    [{ metadata: {} }, undefined],
    [undefined, undefined],
  ])('%j → %s', (node, want) => {
    expect(objectTtlFromNode(node)).toBe(want);
  });
});

describe('WatchingObjectGetter with an offline store', () => {
  const kubeConfigFor = (port: number) => {
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      { name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true },
      { name: 'u' },
    );
    return kc;
  };
  /** A port nothing listens on any more: requests to it are refused. */
  async function closedPort(): Promise<number> {
    const s = http.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    return port;
  }
  async function read<T>(clock: FakeClock, p: Promise<T>): Promise<T> {
    let done = false;
    const out = p.finally(() => {
      done = true;
    });
    await advanceUntil(clock, () => done, { step: 10 });
    return out;
  }

  const getters: WatchingObjectGetter[] = [];
  let api: ReturnType<typeof fakeApiserver>;
  let port: number;
  beforeEach(async () => {
    api = fakeApiserver();
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    port = (api.server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    for (const g of getters.splice(0)) await g.stop();
    for (const w of api.state.watchers) w.res.destroy();
    api.server.closeAllConnections();
    await new Promise<void>((r) => api.server.close(() => r()));
  });

  it('keeps what it read, and serves it while the API server cannot be reached', async () => {
    const store = new InMemoryOfflineStore();
    const clock = new FakeClock();
    api.state.objects.set('configmaps/cfg', cm('cfg', { k: 'v1' }, '5'));
    api.state.objects.set('secrets/db', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: 'ns', name: 'db', resourceVersion: '6' },
      data: { p: 'cw==' },
    });
    const online = new WatchingObjectGetter({ kubeConfig: kubeConfigFor(port), clock, store });
    getters.push(online);
    expect((await read(clock, online.getConfigMap('ns', 'cfg')))?.data).toEqual({ k: 'v1' });
    expect((await read(clock, online.getSecret('ns', 'db')))?.data).toEqual({ p: 'cw==' });
    await vi.waitFor(async () => expect((await store.list('Secret')).map((e) => e.key)).toEqual(['ns/db']));
    expect((await store.list('ConfigMap')).map((e) => e.key)).toEqual(['ns/cfg']);

    // The agent restarted, the server gone: the reads come from the store.
    const clock2 = new FakeClock();
    const offline = new WatchingObjectGetter({
      kubeConfig: kubeConfigFor(await closedPort()),
      clock: clock2,
      store,
      onError: () => {},
    });
    getters.push(offline);
    expect((await read(clock2, offline.getConfigMap('ns', 'cfg')))?.data).toEqual({ k: 'v1' });
    expect((await read(clock2, offline.getSecret('ns', 'db')))?.data).toEqual({ p: 'cw==' });
    expect(offline.stats().storeReads).toBe(2);
    // What the store lacks is still an error, not a made-up undefined.
    const missing = await read(
      clock2,
      offline.getConfigMap('ns', 'other').catch((e: unknown) => e),
    );
    expect(String(missing)).toMatch(/ECONNREFUSED/);
  });

  it('forgets an object the server says is gone', async () => {
    const store = new InMemoryOfflineStore();
    await store.put('ConfigMap', 'ns/cfg', cm('cfg', { k: 'old' }, '1'));
    const clock = new FakeClock();
    const getter = new WatchingObjectGetter({ kubeConfig: kubeConfigFor(port), clock, store });
    getters.push(getter);
    expect(await read(clock, getter.getConfigMap('ns', 'cfg'))).toBeUndefined();
    await vi.waitFor(async () => expect(await store.get('ConfigMap', 'ns/cfg')).toBeUndefined());
    expect(getter.stats().storeReads).toBe(0);
  });
});
