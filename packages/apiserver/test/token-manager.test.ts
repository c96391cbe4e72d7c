import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryOfflineStore, type TokenRequest, type TokenRequestSpec } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type RequestServiceAccountToken,
  serviceAccountTokenRequester,
  TOKEN_GC_PERIOD_MS,
  TokenManager,
  TokenRequestError,
} from '../src/index.js';

const HOUR = 3_600_000;

function spec(over: Partial<TokenRequestSpec> = {}, uid = 'pod-uid'): TokenRequestSpec {
  return {
    audiences: ['foo1', 'foo2'],
    expirationSeconds: 3600,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'pod', uid },
    ...over,
  };
}

/** Issues `tok-<n>` valid `lifetimeMs` from now, or fails while `error` is set. */
function fakeRequester(clock: FakeClock, lifetimeMs: number) {
  const state = { count: 0, error: undefined as Error | undefined };
  const request: RequestServiceAccountToken = async (_ns, _name, s) => {
    state.count++;
    if (state.error) throw state.error;
    return {
      spec: { ...s, expirationSeconds: lifetimeMs / 1000 },
      status: {
        token: `tok-${state.count}`,
        expirationTimestamp: new Date(clock.now() + lifetimeMs).toISOString(),
      },
    };
  };
  return { state, request };
}

describe('TokenManager: caching and expiration (upstream TestTokenCachingAndExpiration)', () => {
  const cases: { name: string; lifetimeMs: number; run: (c: Ctx) => Promise<void> }[] = [
    {
      name: 'rotate hour token expires in the last 12 minutes',
      lifetimeMs: HOUR,
      run: async ({ clock, mgr, fake }) => {
        clock.setTime(clock.now() + 50 * 60_000);
        await mgr.getServiceAccountToken('a', 'b', spec());
        expect(fake.state.count).toBe(2);
      },
    },
    {
      name: 'rotate 24 hour token that expires in 40 hours',
      lifetimeMs: 40 * HOUR,
      run: async ({ clock, mgr, fake }) => {
        clock.setTime(clock.now() + 25 * HOUR);
        await mgr.getServiceAccountToken('a', 'b', spec());
        expect(fake.state.count).toBe(2);
      },
    },
    {
      name: "rotate hour token fails, old token is still valid, doesn't error",
      lifetimeMs: HOUR,
      run: async ({ clock, mgr, fake }) => {
        clock.setTime(clock.now() + 50 * 60_000);
        fake.state.error = new Error('err');
        const tr = await mgr.getServiceAccountToken('a', 'b', spec());
        expect(tr.status.token).toBe('tok-1');
      },
    },
    {
      name: 'rotation fails and the old token expired: an error naming the key',
      lifetimeMs: HOUR,
      run: async ({ clock, mgr, fake }) => {
        clock.setTime(clock.now() + 61 * 60_000);
        fake.state.error = new Error('unreachable');
        await expect(mgr.getServiceAccountToken('a', 'b', spec())).rejects.toThrow(
          /^token "b"\/"a"\/\["foo1","foo2"\]\/3600\/.* expired and refresh failed: unreachable$/,
        );
      },
    },
    {
      name: 'another pod UID is another token',
      lifetimeMs: HOUR,
      run: async ({ mgr, fake }) => {
        await mgr.getServiceAccountToken('a', 'b', spec({}, 'other-uid'));
        expect(fake.state.count).toBe(2);
        await mgr.getServiceAccountToken('a', 'b', spec({ audiences: ['x'] }));
        await mgr.getServiceAccountToken('a', 'b', spec({ expirationSeconds: 7200 }));
        expect(fake.state.count).toBe(4);
      },
    },
  ];
  interface Ctx {
    clock: FakeClock;
    mgr: TokenManager;
    fake: ReturnType<typeof fakeRequester>;
  }
  for (const c of cases) {
    it(c.name, async () => {
      const clock = new FakeClock();
      const fake = fakeRequester(clock, c.lifetimeMs);
      const mgr = new TokenManager({ requestToken: fake.request, clock, random: () => 0 });
      await mgr.getServiceAccountToken('a', 'b', spec());
      expect(fake.state.count).toBe(1);
      await mgr.getServiceAccountToken('a', 'b', spec());
      expect(fake.state.count).toBe(1);
      await c.run({ clock, mgr, fake });
    });
  }

  it('a first request that fails is an error, and nothing is cached', async () => {
    const clock = new FakeClock();
    const fake = fakeRequester(clock, HOUR);
    fake.state.error = new Error('forbidden');
    const mgr = new TokenManager({ requestToken: fake.request, clock });
    await expect(mgr.getServiceAccountToken('a', 'b', spec())).rejects.toThrow(
      'failed to fetch token: forbidden',
    );
    expect(mgr.size).toBe(0);
  });

  it('concurrent requests for one key share one call', async () => {
    const clock = new FakeClock();
    const fake = fakeRequester(clock, HOUR);
    const mgr = new TokenManager({ requestToken: fake.request, clock });
    const [a, b] = await Promise.all([
      mgr.getServiceAccountToken('a', 'b', spec()),
      mgr.getServiceAccountToken('a', 'b', spec()),
    ]);
    expect(a.status.token).toBe('tok-1');
    expect(b.status.token).toBe('tok-1');
    expect(fake.state.count).toBe(1);
  });
});

describe('TokenManager.requiresRefresh (upstream TestRequiresRefresh)', () => {
  const start = Date.UTC(2026, 0, 1);
  const min = 60_000;
  const cases: [number, number, boolean][] = [
    [10 * min, 60 * min, false],
    [50 * min, 60 * min, true],
    [25 * HOUR, 60 * HOUR, true],
    [70 * min, 60 * min, true],
    // The clock went back: issued "in the future".
    [-5 * min, 60 * min, true],
  ];
  it.each(cases)('now start+%ims, expiring start+%ims: refresh %s', (now, exp, want) => {
    const clock = new FakeClock(start + now);
    const mgr = new TokenManager({ requestToken: async () => ({}) as TokenRequest, clock, random: () => 0 });
    const tr: TokenRequest = {
      spec: spec({ expirationSeconds: exp / 1000 }),
      status: { token: 't', expirationTimestamp: new Date(start + exp).toISOString() },
    };
    expect(mgr.requiresRefresh(tr)).toBe(want);
  });

  it('the jitter refreshes up to 10 s early', () => {
    const clock = new FakeClock(0);
    const tr: TokenRequest = {
      spec: spec({ expirationSeconds: 1000 }),
      status: { token: 't', expirationTimestamp: new Date(1_000_000).toISOString() },
    };
    // 80 % of 1000 s is 800 s; a jitter of 9 s (whole seconds) refreshes from 791 s on.
    clock.setTime(792_000);
    const early = new TokenManager({ requestToken: async () => tr, clock, random: () => 0.99 });
    const none = new TokenManager({ requestToken: async () => tr, clock, random: () => 0 });
    expect(early.requiresRefresh(tr)).toBe(true);
    expect(none.requiresRefresh(tr)).toBe(false);
  });
});

describe('TokenManager: deletion and clean-up (upstream TestDeleteServiceAccountToken, TestCleanup)', () => {
  const requests = [1, 2, 3, 4].map((i) => ({ ns: `ns-${i}`, name: `sa-${i}`, uid: `uid-${i}` }));
  const cases: { name: string; fail4First: boolean; indices: number[]; del: string[]; left: number[] }[] = [
    { name: 'delete none', fail4First: false, indices: [0, 1, 2], del: [], left: [0, 1, 2] },
    { name: 'delete one', fail4First: false, indices: [0, 1, 2], del: ['uid-1'], left: [1, 2] },
    { name: 'delete two', fail4First: false, indices: [0, 1, 2], del: ['uid-1', 'uid-3'], left: [1] },
    { name: 'delete all', fail4First: false, indices: [0, 1, 2], del: ['uid-1', 'uid-2', 'uid-3'], left: [] },
    {
      name: 'a failed request caches nothing',
      fail4First: true,
      indices: [0, 1, 2, 3],
      del: [],
      left: [0, 1, 2],
    },
    {
      name: 'delete the pod that succeeded after a failure',
      fail4First: true,
      indices: [0, 1, 2, 3, 3],
      del: ['uid-4'],
      left: [0, 1, 2],
    },
    {
      name: 'delete pods not in the cache',
      fail4First: false,
      indices: [0, 1, 2],
      del: ['uid-100'],
      left: [0, 1, 2],
    },
  ];
  it.each(cases)('$name', async ({ fail4First, indices, del, left }) => {
    const clock = new FakeClock();
    let failNext = fail4First;
    const mgr = new TokenManager({
      clock,
      requestToken: async (_ns, _n, s) => {
        if (s.boundObjectRef.uid === 'uid-4' && failNext) {
          failNext = false;
          throw new Error('fail tr');
        }
        return {
          spec: s,
          status: { token: 't', expirationTimestamp: new Date(clock.now() + 10 * HOUR).toISOString() },
        };
      },
    });
    for (const i of indices) {
      const r = requests[i]!;
      await mgr.getServiceAccountToken(r.ns, r.name, spec({}, r.uid)).catch(() => {});
    }
    for (const uid of del) mgr.deleteServiceAccountToken(uid);
    expect(mgr.size).toBe(left.length);
  });

  it('a token whose request outran the deletion of its pod is not cached', async () => {
    const clock = new FakeClock();
    let release: (() => void) | undefined;
    const mgr = new TokenManager({
      clock,
      requestToken: (_ns, _n, s) =>
        new Promise((resolve) => {
          release = () =>
            resolve({
              spec: s,
              status: { token: 't', expirationTimestamp: new Date(clock.now() + HOUR).toISOString() },
            });
        }),
    });
    const pending = mgr.getServiceAccountToken('ns', 'sa', spec());
    mgr.deleteServiceAccountToken('pod-uid');
    release?.();
    await pending;
    expect(mgr.size).toBe(0);
  });

  it('drops expired tokens every minute once started', async () => {
    const clock = new FakeClock();
    const fake = fakeRequester(clock, HOUR);
    const mgr = new TokenManager({ requestToken: fake.request, clock });
    mgr.start();
    await mgr.getServiceAccountToken('a', 'b', spec());
    await clock.tick(HOUR - TOKEN_GC_PERIOD_MS);
    expect(mgr.size).toBe(1);
    await clock.tick(2 * TOKEN_GC_PERIOD_MS);
    expect(mgr.size).toBe(0);
    mgr.stop();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('serviceAccountTokenRequester against a local API server', () => {
  let server: http.Server;
  let kc: KubeConfig;
  const seen: { method: string; url: string; body: unknown }[] = [];
  let answer: { status: number; body: unknown };

  beforeEach(async () => {
    seen.length = 0;
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => {
        raw += c.toString();
      });
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', body: raw ? JSON.parse(raw) : undefined });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'local',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('POSTs a TokenRequest bound to the pod and reads token and expiration from the 201', async () => {
    answer = {
      status: 201,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: [],
          expirationSeconds: 3607,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u1' },
        },
        status: { token: 'eyJ.token', expirationTimestamp: '2026-01-01T01:00:07Z' },
      },
    };
    const request = serviceAccountTokenRequester(kc.makeApiClient(CoreV1Api));
    const tr = await request('ns', 'default', {
      audiences: [],
      expirationSeconds: 3607,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u1' },
    });
    expect(tr.status).toEqual({ token: 'eyJ.token', expirationTimestamp: '2026-01-01T01:00:07.000Z' });
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/api/v1/namespaces/ns/serviceaccounts/default/token',
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            audiences: [],
            expirationSeconds: 3607,
            boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u1' },
          },
        },
      },
    ]);
  });

  it('a 404 and an answer without a token are TokenRequestErrors naming the service account', async () => {
    const request = serviceAccountTokenRequester(async () => kc.makeApiClient(CoreV1Api));
    answer = {
      status: 404,
      body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'serviceaccounts "robot" not found' },
    };
    const err = await request('ns', 'robot', spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRequestError);
    expect((err as TokenRequestError).status).toBe(404);
    expect((err as Error).message).toMatch(
      /^token request for serviceaccounts "robot" in namespace "ns" failed with 404/,
    );
    answer = { status: 201, body: { kind: 'TokenRequest', spec: {}, status: {} } };
    await expect(request('ns', 'robot', spec())).rejects.toThrow(/has no status\.token/);
  });
});

describe('TokenManager with an offline store', () => {
  const stored = async (store: InMemoryOfflineStore) =>
    (await store.list<TokenRequest>('ServiceAccountToken')).map((e) => e.value.status.token);

  it('keeps issued tokens and serves the unexpired ones after a restart without the server', async () => {
    const clock = new FakeClock();
    const store = new InMemoryOfflineStore();
    const online = fakeRequester(clock, HOUR);
    const first = new TokenManager({ requestToken: online.request, clock, store });
    first.start();
    expect((await first.getServiceAccountToken('a', 'b', spec())).status.token).toBe('tok-1');
    await vi.waitFor(async () => expect(await stored(store)).toEqual(['tok-1']));
    first.stop();

    // Restarted while the server is away: past 80 % of the TTL the refresh fails, and the stored
    // token is served until it expires.
    clock.setTime(clock.now() + 50 * 60_000);
    const offline = fakeRequester(clock, HOUR);
    offline.state.error = new Error('connect ECONNREFUSED 127.0.0.1:6443');
    const second = new TokenManager({ requestToken: offline.request, clock, store });
    second.start();
    expect((await second.getServiceAccountToken('a', 'b', spec())).status.token).toBe('tok-1');
    expect(offline.state.count).toBe(1);
    clock.setTime(clock.now() + 11 * 60_000);
    await expect(second.getServiceAccountToken('a', 'b', spec())).rejects.toThrow(
      /expired and refresh failed: connect ECONNREFUSED/,
    );
    second.stop();
  });

  it('stores the refreshed token in place of the old one', async () => {
    const clock = new FakeClock();
    const store = new InMemoryOfflineStore();
    const fake = fakeRequester(clock, HOUR);
    const mgr = new TokenManager({ requestToken: fake.request, clock, store });
    mgr.start();
    await mgr.getServiceAccountToken('a', 'b', spec());
    clock.setTime(clock.now() + 50 * 60_000);
    expect((await mgr.getServiceAccountToken('a', 'b', spec())).status.token).toBe('tok-2');
    await vi.waitFor(async () => expect(await stored(store)).toEqual(['tok-2']));
    mgr.stop();
  });

  it('drops expired tokens at start, and a deleted pod’s tokens', async () => {
    const clock = new FakeClock();
    const store = new InMemoryOfflineStore();
    const fake = fakeRequester(clock, HOUR);
    const first = new TokenManager({ requestToken: fake.request, clock, store });
    first.start();
    await first.getServiceAccountToken('a', 'b', spec({}, 'pod-1'));
    await first.getServiceAccountToken('a', 'b', spec({}, 'pod-2'));
    await vi.waitFor(async () => expect((await stored(store)).sort()).toEqual(['tok-1', 'tok-2']));
    first.deleteServiceAccountToken('pod-1');
    await vi.waitFor(async () => expect(await stored(store)).toEqual(['tok-2']));
    first.stop();

    clock.setTime(clock.now() + 2 * HOUR);
    const second = new TokenManager({ requestToken: fake.request, clock, store });
    second.start();
    // Loading drops the expired token; the read asks the server for a new one.
    expect((await second.getServiceAccountToken('a', 'b', spec({}, 'pod-2'))).status.token).toBe('tok-3');
    await vi.waitFor(async () => expect(await stored(store)).toEqual(['tok-3']));
    second.stop();
  });
});
