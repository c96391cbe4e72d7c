import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryOfflineStore, type OfflineStore, type Pod, type PodUpdate } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { PodSourceError, PodValidationError, setPodDefaults } from '@kubelet-kit/pod-config';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiserverSource, type ApiserverSourceOptions } from '../src/index.js';

// A small API server speaking the real list/watch wire protocol for pods: a PodList with a
// resourceVersion, then a chunked stream of newline-delimited JSON watch events, replayed from
// the requested resourceVersion, with 410 Gone for compacted versions.

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface LoggedEvent {
  readonly rv: number;
  readonly type: EventType;
  readonly object: Pod;
}

interface WatchConn {
  readonly res: ServerResponse;
  readonly node: string;
  readonly query: URLSearchParams;
  readonly silent: boolean;
}

class FakeApiServer {
  readonly server: Server;
  readonly pods = new Map<string, Pod>();
  readonly log: LoggedEvent[] = [];
  readonly watchers = new Set<WatchConn>();
  readonly requests: Array<{ path: string; query: URLSearchParams; auth: string | undefined }> = [];
  rv = 10;
  /** Watches from a resourceVersion below this get 410 Gone. */
  compactedBelow = 0;
  /** How a too-old watch is refused: an ERROR event (as kube-apiserver does) or an HTTP 410. */
  goneAs: 'event' | 'http' = 'event';
  /** The next N lists fail with 500. */
  failLists = 0;
  /** Lists get no answer at all (a server that accepts connections but does not serve). */
  hangLists = false;
  /** New watches get headers but no events at all (a watch that went silent). */
  silentWatches = false;
  lists = 0;
  watches = 0;

  constructor() {
    this.server = createServer((req, res) => this.#handle(req, res));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Changes a pod as the API would: a new resourceVersion, an event to every watcher. */
  apply(type: EventType, pod: Pod): number {
    const rv = ++this.rv;
    const object = structuredClone(pod);
    object.metadata = { ...object.metadata, resourceVersion: String(rv) };
    const key = `${object.metadata.namespace}/${object.metadata.name}`;
    if (type === 'DELETED') this.pods.delete(key);
    else this.pods.set(key, object);
    this.log.push({ rv, type, object });
    for (const w of this.watchers) {
      if (!w.silent && object.spec?.nodeName === w.node) this.#send(w.res, { type, object });
    }
    return rv;
  }

  bookmark(): number {
    const rv = ++this.rv;
    for (const w of this.watchers) {
      if (!w.silent) {
        this.#send(w.res, {
          type: 'BOOKMARK',
          object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } },
        });
      }
    }
    return rv;
  }

  /** Cuts every watch connection without a proper end, optionally halfway through a line. */
  disconnectWatches(midLine = false): void {
    for (const w of this.watchers) {
      if (midLine) w.res.write('{"type":"ADDED","object":{"kind":"Po');
      w.res.socket?.destroy();
    }
    this.watchers.clear();
  }

  /** Ends every watch normally, as the server does when timeoutSeconds runs out. */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  #send(res: ServerResponse, event: unknown): void {
    res.write(`${JSON.stringify(event)}\n`);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push({ path: url.pathname, query: url.searchParams, auth: req.headers.authorization });
    if (url.pathname !== '/api/v1/pods') {
      res.writeHead(404).end();
      return;
    }
    const selector = url.searchParams.get('fieldSelector') ?? '';
    const node = selector.startsWith('spec.nodeName=') ? selector.slice('spec.nodeName='.length) : '';
    if (url.searchParams.get('watch') === 'true') this.#watch(url.searchParams, node, res);
    else this.#list(node, res);
  }

  #list(node: string, res: ServerResponse): void {
    this.lists++;
    if (this.hangLists) return;
    if (this.failLists > 0) {
      this.failLists--;
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: 500,
          message: 'etcd down',
        }),
      );
      return;
    }
    const items = [...this.pods.values()]
      .filter((p) => p.spec?.nodeName === node)
      .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.rv) },
        items,
      }),
    );
  }

  #watch(query: URLSearchParams, node: string, res: ServerResponse): void {
    this.watches++;
    const from = Number(query.get('resourceVersion') ?? '0');
    if (from < this.compactedBelow) {
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: `too old resource version: ${from} (${this.compactedBelow})`,
        reason: 'Expired',
        code: 410,
      };
      if (this.goneAs === 'http') {
        res.writeHead(410, { 'content-type': 'application/json' }).end(JSON.stringify(status));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      }
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    const conn: WatchConn = { res, node, query, silent: this.silentWatches };
    this.watchers.add(conn);
    res.on('close', () => this.watchers.delete(conn));
    if (conn.silent) return;
    for (const e of this.log) {
      if (e.rv > from && e.object.spec?.nodeName === node)
        this.#send(res, { type: e.type, object: e.object });
    }
  }
}

function pod(name: string, node = 'node-a', image = 'busybox'): Pod {
  return setPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { nodeName: node, containers: [{ name: 'c', image }] },
    status: { phase: 'Pending' },
  });
}

function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server, skipTLSVerify: true }],
    users: [{ name: 'kubelet', token: 'node-token' }],
    contexts: [{ name: 'local', cluster: 'local', user: 'kubelet' }],
    currentContext: 'local',
  });
  return kc;
}

const names = (u: PodUpdate | undefined) => (u?.pods ?? []).map((p) => p.metadata?.name ?? '').sort();

interface Harness {
  api: FakeApiServer;
  source: ApiserverSource;
  clock: FakeClock;
  updates: PodUpdate[];
  errors: Error[];
  recorder: InMemoryEventRecorder;
  last(): PodUpdate | undefined;
}

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

async function setup(
  seed: (api: FakeApiServer) => void = () => {},
  options: Partial<ApiserverSourceOptions> = {},
): Promise<Harness> {
  const api = new FakeApiServer();
  seed(api);
  const url = await api.listen();
  const clock = new FakeClock();
  const updates: PodUpdate[] = [];
  const errors: Error[] = [];
  const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
  const source = new ApiserverSource({
    kubeConfig: kubeConfigFor(url),
    nodeName: 'node-a',
    clock,
    recorder,
    onError: (e) => errors.push(e),
    random: () => 0,
    // Large unless a test is about it, so advancing the fake clock for backoffs never trips it.
    watchStalenessTimeoutMs: 1e9,
    ...options,
  });
  cleanups.push(async () => {
    await source.stop();
    await api.close();
  });
  return { api, source, clock, updates, errors, recorder, last: () => updates.at(-1) };
}

function start(h: Harness, sink?: (u: PodUpdate) => void | Promise<void>): void {
  h.source.start(
    sink ??
      ((u) => {
        h.updates.push(u);
      }),
  );
}

/** Waits for real I/O (the local server, sockets); time-based behaviour uses the fake clock. */
const until = (check: () => void) => vi.waitFor(check, { timeout: 5_000, interval: 5 });

/** Fires the source's backoff timers until `check` passes. */
const advanceUntil = (h: Harness, check: () => void) =>
  vi.waitFor(
    () => {
      h.clock.advance(1_000);
      check();
    },
    { timeout: 5_000, interval: 5 },
  );

describe('ApiserverSource', () => {
  it('lists the node’s pods, sends a SET, then watches from the list’s resourceVersion', async () => {
    const h = await setup((api) => {
      api.apply('ADDED', pod('a'));
      api.apply('ADDED', pod('b'));
      api.apply('ADDED', pod('elsewhere', 'node-b'));
    });
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));

    expect(h.updates).toHaveLength(1);
    expect(h.updates[0]).toMatchObject({ op: 'SET', source: 'api' });
    expect(names(h.updates[0])).toEqual(['a', 'b']);
    // Wire JSON, not the generated client's Date objects; apiVersion/kind filled in.
    const a = h.updates[0]?.pods.find((p) => p.metadata?.name === 'a');
    expect(a?.metadata?.creationTimestamp).toBe('2026-01-01T00:00:00Z');
    expect(a).toMatchObject({ apiVersion: 'v1', kind: 'Pod' });

    const [list, watch] = h.api.requests;
    expect(list?.query.get('fieldSelector')).toBe('spec.nodeName=node-a');
    expect(list?.query.get('watch')).toBeNull();
    expect(list?.auth).toBe('Bearer node-token');
    expect(watch?.query.get('watch')).toBe('true');
    expect(watch?.query.get('resourceVersion')).toBe('13');
    expect(watch?.query.get('allowWatchBookmarks')).toBe('true');
    expect(watch?.query.get('fieldSelector')).toBe('spec.nodeName=node-a');
    expect(Number(watch?.query.get('timeoutSeconds'))).toBeGreaterThanOrEqual(300);
    expect(watch?.auth).toBe('Bearer node-token');
    expect(h.source.resourceVersion).toBe('13');
  });

  it('turns ADDED, MODIFIED and DELETED watch events into SETs of the whole store', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));

    h.api.apply('ADDED', pod('b'));
    await until(() => expect(names(h.last())).toEqual(['a', 'b']));

    const changed = pod('a');
    changed.metadata = { ...changed.metadata, labels: { tier: 'web' } };
    h.api.apply('MODIFIED', changed);
    await until(() =>
      expect(h.last()?.pods.find((p) => p.metadata?.name === 'a')?.metadata?.labels).toEqual({ tier: 'web' }),
    );

    h.api.apply('DELETED', pod('b'));
    await until(() => expect(names(h.last())).toEqual(['a']));
    expect(h.updates.every((u) => u.op === 'SET' && u.source === 'api')).toBe(true);
    expect(h.updates).toHaveLength(4);
    expect(h.source.resourceVersion).toBe(String(h.api.rv));
    expect(h.source.stats()).toMatchObject({ lists: 1, watches: 1, sets: 4 });
  });

  it('sends an empty SET when the first list is empty (TestNewSourceApiserverInitialEmptySendsEmptyPodUpdate)', async () => {
    const h = await setup();
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    expect(h.updates).toEqual([{ op: 'SET', pods: [], source: 'api' }]);
  });

  it('keeps pods of the same name in two namespaces apart (TestNewSourceApiserver_TwoNamespacesSameName)', async () => {
    const inNamespace = (namespace: string): Pod => {
      const p = pod('p');
      p.metadata = { ...p.metadata, namespace, uid: `uid-${namespace}` };
      return p;
    };
    const h = await setup((api) => {
      api.apply('ADDED', inNamespace('one'));
      api.apply('ADDED', inNamespace('two'));
    });
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    expect(h.updates[0]?.pods.map((p) => p.metadata?.namespace).sort()).toEqual(['one', 'two']);
    h.api.apply('DELETED', inNamespace('one'));
    await until(() => expect(h.updates).toHaveLength(2));
    expect(h.last()?.pods.map((p) => p.metadata?.namespace)).toEqual(['two']);
  });

  it('hands out copies: a consumer mutating a pod does not change the next SET', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    const first = h.updates[0]?.pods[0];
    if (first?.metadata) first.metadata.annotations = { mutated: 'yes' };
    h.api.apply('ADDED', pod('b'));
    await until(() => expect(h.updates).toHaveLength(2));
    expect(h.last()?.pods.find((p) => p.metadata?.name === 'a')?.metadata?.annotations).toBeUndefined();
  });

  it('bookmarks move the resourceVersion on without sending anything', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    const rv = h.api.bookmark();
    await until(() => expect(h.source.resourceVersion).toBe(String(rv)));
    expect(h.updates).toHaveLength(1);
    expect(h.source.stats().bookmarks).toBe(1);

    // The next watch resumes from the bookmark.
    h.api.disconnectWatches();
    await advanceUntil(h, () => expect(h.api.watches).toBe(2));
    expect(h.api.requests.at(-1)?.query.get('resourceVersion')).toBe(String(rv));
    expect(h.api.lists).toBe(1);
  });

  it('reconnects after an abrupt disconnect (even mid-line) with backoff, from the last resourceVersion', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    h.api.apply('ADDED', pod('b'));
    await until(() => expect(names(h.last())).toEqual(['a', 'b']));
    const seen = h.source.resourceVersion;

    h.api.disconnectWatches(true);
    await until(() => expect(h.source.stats().watchErrors).toBe(1));
    // Changes while disconnected are replayed by the next watch.
    h.api.apply('ADDED', pod('c'));
    h.api.apply('DELETED', pod('a'));
    // Nothing reconnects before the backoff delay has passed on the clock.
    expect(h.api.watches).toBe(1);
    await advanceUntil(h, () => expect(h.api.watches).toBe(2));
    expect(h.api.requests.at(-1)?.query.get('resourceVersion')).toBe(seen);
    await until(() => expect(names(h.last())).toEqual(['b', 'c']));
    expect(h.api.lists).toBe(1);
    expect(h.errors.filter((e) => e instanceof PodSourceError && e.code === 'WatchFailed')).toHaveLength(1);
    expect(h.source.stats().watchErrors).toBe(1);
  });

  it('resumes at once when the server ends a watch normally', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    h.api.apply('ADDED', pod('b'));
    await until(() => expect(names(h.last())).toEqual(['a', 'b']));
    h.api.endWatches();
    // No clock advance: a normal end (timeoutSeconds) is not a failure.
    await until(() => expect(h.api.watches).toBe(2));
    expect(h.api.requests.at(-1)?.query.get('resourceVersion')).toBe(String(h.api.rv));
    expect(h.api.lists).toBe(1);
  });

  it.each(['event', 'http'] as const)(
    'relists on 410 Gone (as an %s) and sends a SET of the fresh list',
    async (goneAs) => {
      const h = await setup((api) => {
        api.apply('ADDED', pod('a'));
        api.goneAs = goneAs;
      });
      start(h);
      await until(() => expect(h.api.watchers.size).toBe(1));
      const oldRv = Number(h.source.resourceVersion);

      // While the watch is down, history moves on and is compacted past what the source saw.
      h.api.disconnectWatches();
      h.api.apply('ADDED', pod('b'));
      h.api.apply('DELETED', pod('a'));
      h.api.compactedBelow = h.api.rv;
      await advanceUntil(h, () => expect(h.api.lists).toBe(2));
      await until(() => expect(h.api.watchers.size).toBe(1));

      expect(h.api.watches).toBe(3);
      const watchRvs = h.api.requests
        .filter((r) => r.query.get('watch') === 'true')
        .map((r) => Number(r.query.get('resourceVersion')));
      // The refused watch asked for the old version; the one after the relist for the new one.
      expect(watchRvs.slice(1)).toEqual([oldRv, h.api.rv]);
      expect(names(h.last())).toEqual(['b']);
      expect(h.last()?.op).toBe('SET');
      const expired = h.errors.find((e) => e instanceof PodSourceError && e.code === 'Expired');
      expect(expired?.message).toContain('410');
      expect(h.source.stats().expired).toBe(1);

      // And it keeps watching from the fresh list.
      h.api.apply('ADDED', pod('c'));
      await until(() => expect(names(h.last())).toEqual(['b', 'c']));
    },
  );

  it('backs off when even a fresh list’s resourceVersion is refused, instead of spinning', async () => {
    const h = await setup((api) => {
      api.apply('ADDED', pod('a'));
      api.compactedBelow = Number.POSITIVE_INFINITY;
    });
    start(h);
    // The first 410 relists at once; the second waits the backoff.
    await until(() => expect(h.api.watches).toBe(2));
    await until(() => expect(h.source.stats().expired).toBe(2));
    await h.clock.tick(0);
    expect(h.api.lists).toBe(2);
    h.clock.advance(799);
    await h.clock.tick(0);
    expect(h.api.lists).toBe(2);
    h.clock.advance(1);
    await until(() => expect(h.api.lists).toBe(3));
    expect(h.updates.every((u) => u.op === 'SET' && names(u).join() === 'a')).toBe(true);
  });

  it('restarts a watch that went silent, once the staleness timeout passes on the clock', async () => {
    const h = await setup(
      (api) => {
        api.apply('ADDED', pod('a'));
        api.silentWatches = true;
      },
      { watchStalenessTimeoutMs: 60_000 },
    );
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    h.api.apply('ADDED', pod('b'));
    expect(names(h.last())).toEqual(['a']);

    h.api.silentWatches = false;
    h.clock.advance(59_999);
    expect(h.api.watches).toBe(1);
    h.clock.advance(1);
    await until(() => expect(h.source.stats().staleWatches).toBe(1));
    await advanceUntil(h, () => expect(h.api.watches).toBe(2));
    await until(() => expect(names(h.last())).toEqual(['a', 'b']));
    // The silent connection was closed, not leaked.
    await until(() => expect(h.api.watchers.size).toBe(1));
    expect(h.api.requests.at(-1)?.query.get('resourceVersion')).toBe('11');
    expect(h.errors.some((e) => e instanceof PodSourceError && e.code === 'WatchStale')).toBe(true);
    expect(h.api.lists).toBe(1);
  });

  it('an event resets the staleness watchdog', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')), { watchStalenessTimeoutMs: 60_000 });
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    h.clock.advance(50_000);
    const rv = h.api.bookmark();
    await until(() => expect(h.source.resourceVersion).toBe(String(rv)));
    // tick (not advance) lets a fired watchdog's continuation run before the check.
    await h.clock.tick(50_000);
    await h.clock.tick(0);
    expect(h.source.stats().staleWatches).toBe(0);
    expect(h.api.watches).toBe(1);
    h.clock.advance(10_000);
    await until(() => expect(h.source.stats().staleWatches).toBe(1));
  });

  it('retries a failed list with backoff, reporting the error', async () => {
    const h = await setup((api) => {
      api.apply('ADDED', pod('a'));
      api.failLists = 2;
    });
    start(h);
    await until(() => expect(h.api.lists).toBe(1));
    await until(() => expect(h.errors).toHaveLength(1));
    expect(h.updates).toHaveLength(0);
    const err = h.errors[0] as PodSourceError;
    expect(err).toBeInstanceOf(PodSourceError);
    expect(err.code).toBe('ListFailed');
    expect(err.source).toBe('api');
    // The first retry waits the initial 800 ms backoff, the second 1600 ms.
    h.clock.advance(799);
    await until(() => expect(h.clock.pendingTimers).toBe(1));
    expect(h.api.lists).toBe(1);
    h.clock.advance(1);
    await until(() => expect(h.api.lists).toBe(2));
    await until(() => expect(h.errors).toHaveLength(2));
    h.clock.advance(1599);
    expect(h.api.lists).toBe(2);
    h.clock.advance(1);
    await until(() => expect(names(h.last())).toEqual(['a']));
    expect(h.api.lists).toBe(3);
  });

  it('leaves out invalid pods, reporting source, pod and field, and keeps the valid ones', async () => {
    const h = await setup((api) => {
      api.apply('ADDED', pod('good'));
      api.apply('ADDED', pod('bad', 'node-a', ''));
    });
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    expect(names(h.updates[0])).toEqual(['good']);
    const invalid = h.errors.find((e) => e instanceof PodValidationError) as PodValidationError;
    expect(invalid.source).toBe('api');
    expect(invalid.object).toEqual({ namespace: 'default', name: 'bad' });
    expect(invalid.field).toBe('spec.containers[0].image');
    expect(h.recorder.events).toMatchObject([
      { reason: 'FailedValidation', type: 'Warning', object: { kind: 'Pod', name: 'bad' } },
    ]);

    // Reported once per version; a fixed version enters the stream.
    h.api.apply('ADDED', pod('other'));
    await until(() => expect(names(h.last())).toEqual(['good', 'other']));
    expect(h.errors.filter((e) => e instanceof PodValidationError)).toHaveLength(1);
    h.api.apply('MODIFIED', pod('bad'));
    await until(() => expect(names(h.last())).toEqual(['bad', 'good', 'other']));
  });

  it('coalesces changes that arrive while the sink is busy into one SET of the latest state', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    let release!: () => void;
    let calls = 0;
    start(h, (u) => {
      calls++;
      h.updates.push(u);
      if (calls === 2) return new Promise<void>((r) => (release = r));
    });
    await until(() => expect(h.api.watchers.size).toBe(1));
    for (const n of ['b', 'c', 'd', 'e']) h.api.apply('ADDED', pod(n));
    await until(() => expect(h.source.resourceVersion).toBe(String(h.api.rv)));
    expect(h.updates).toHaveLength(2);
    release();
    await until(() => expect(h.updates).toHaveLength(3));
    expect(names(h.last())).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('stop() closes the watch and nothing is sent afterwards', async () => {
    const h = await setup((api) => api.apply('ADDED', pod('a')));
    start(h);
    await until(() => expect(h.api.watchers.size).toBe(1));
    await h.source.stop();
    await until(() => expect(h.api.watchers.size).toBe(0));
    h.api.apply('ADDED', pod('b'));
    h.clock.advance(60_000);
    expect(h.updates).toHaveLength(1);
    expect(h.clock.pendingTimers).toBe(0);
    expect(() => h.source.start(() => {})).toThrow(/already started/);
  });
});

describe('ApiserverSource with an offline store', () => {
  const stored = (name: string, rv = '5'): Pod => {
    const p = pod(name);
    p.metadata = { ...p.metadata, resourceVersion: rv };
    return p;
  };
  const storedKeys = async (store: OfflineStore, kind: 'Pod' | 'PodStatus') =>
    (await store.list(kind)).map((e) => e.key).sort();

  it('serves the stored pods, with their last statuses, when the first list fails', async () => {
    const store = new InMemoryOfflineStore();
    await store.put('Pod', 'default/a', stored('a'));
    await store.put('Pod', 'default/b', stored('b'));
    await store.put('PodStatus', 'uid-a', { phase: 'Running', podIP: '10.0.0.7' });
    await store.put('PodStatus', 'uid-b', { phase: 'Running' });
    // On the server, b was deleted while the agent was away.
    const h = await setup(
      (api) => {
        api.apply('ADDED', pod('a'));
        api.failLists = 1;
      },
      { store },
    );
    start(h);
    await until(() => expect(names(h.last())).toEqual(['a', 'b']));
    const a = h.last()!.pods.find((p) => p.metadata?.name === 'a')!;
    // The status the agent last sent, not the Pending one the pod was stored with.
    expect(a.status).toMatchObject({ phase: 'Running', podIP: '10.0.0.7' });
    expect(a.kind).toBe('Pod');
    expect(h.source.stats().servedFromStore).toBe(2);
    expect(h.errors.map((e) => (e as PodSourceError).code)).toEqual(['ListFailed']);

    // The list that succeeds replaces what the store served: b goes, and leaves the store.
    h.clock.advance(800);
    await until(() => expect(names(h.last())).toEqual(['a']));
    await until(async () => expect(await storedKeys(store, 'Pod')).toEqual(['default/a']));
    await until(async () => expect(await storedKeys(store, 'PodStatus')).toEqual(['uid-a']));
  });

  it('serves the stored pods once the first list has taken offlineAfterMs (default 10 s)', async () => {
    const store = new InMemoryOfflineStore();
    await store.put('Pod', 'default/a', stored('a'));
    const h = await setup(
      (api) => {
        api.hangLists = true;
      },
      { store },
    );
    start(h);
    await until(() => expect(h.api.lists).toBe(1));
    h.clock.advance(9_999);
    await new Promise((r) => setImmediate(r));
    expect(h.updates).toHaveLength(0);
    h.clock.advance(1);
    await until(() => expect(names(h.last())).toEqual(['a']));
  });

  it('sends nothing from an empty store: an empty SET would let the cleanup kill what runs', async () => {
    const store = new InMemoryOfflineStore();
    const h = await setup(
      (api) => {
        api.failLists = 1;
      },
      { store },
    );
    start(h);
    await until(() => expect(h.errors).toHaveLength(1));
    h.clock.advance(10_000);
    await new Promise((r) => setImmediate(r));
    expect(h.updates).toHaveLength(0);
    expect(h.source.stats().servedFromStore).toBe(0);
  });

  it('never serves the store when the first list succeeds, and drops the stale pods from it', async () => {
    const store = new InMemoryOfflineStore();
    await store.put('Pod', 'default/stale', stored('stale'));
    await store.put('PodStatus', 'uid-stale', { phase: 'Running' });
    const h = await setup((api) => api.apply('ADDED', pod('a')), { store });
    start(h);
    await until(() => expect(names(h.last())).toEqual(['a']));
    h.clock.advance(10_000);
    await until(async () => expect(await storedKeys(store, 'Pod')).toEqual(['default/a']));
    expect(await storedKeys(store, 'PodStatus')).toEqual([]);
    expect(h.updates.every((u) => !names(u).includes('stale'))).toBe(true);
    expect(h.source.stats().servedFromStore).toBe(0);
  });

  it('writes watched pods through: added, modified, deleted (with their stored status)', async () => {
    const store = new InMemoryOfflineStore();
    const h = await setup((api) => api.apply('ADDED', pod('a')), { store });
    start(h);
    await until(async () => expect(await storedKeys(store, 'Pod')).toEqual(['default/a']));
    await store.put('PodStatus', 'uid-a', { phase: 'Running' });
    const rv = h.api.apply('ADDED', pod('b'));
    await until(async () => expect(await storedKeys(store, 'Pod')).toEqual(['default/a', 'default/b']));
    expect((await store.get<Pod>('Pod', 'default/b'))?.metadata?.resourceVersion).toBe(String(rv));
    const changed = h.api.apply('MODIFIED', pod('b', 'node-a', 'nginx'));
    await until(async () =>
      expect((await store.get<Pod>('Pod', 'default/b'))?.metadata?.resourceVersion).toBe(String(changed)),
    );
    expect((await store.get<Pod>('Pod', 'default/b'))?.spec?.containers[0]?.image).toBe('nginx');
    h.api.apply('DELETED', pod('a'));
    await until(async () => expect(await storedKeys(store, 'Pod')).toEqual(['default/b']));
    expect(await storedKeys(store, 'PodStatus')).toEqual([]);
  });

  it('goes on without the store when the store fails', async () => {
    const broken: OfflineStore = {
      get: async () => {
        throw new Error('disk gone');
      },
      list: async () => {
        throw new Error('disk gone');
      },
      put: async () => {
        throw new Error('disk gone');
      },
      delete: async () => {
        throw new Error('disk gone');
      },
    };
    const h = await setup(
      (api) => {
        api.apply('ADDED', pod('a'));
        api.failLists = 1;
      },
      { store: broken },
    );
    start(h);
    await until(() => expect(h.errors).toHaveLength(1));
    h.clock.advance(800);
    await until(() => expect(names(h.last())).toEqual(['a']));
    expect(h.updates).toHaveLength(1);
  });
});
