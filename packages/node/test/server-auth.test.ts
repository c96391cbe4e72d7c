// The kubelet API's auth filter: upstream's attribute mapping, bearer tokens through a fake
// TokenReview with its cache, the webhook authorizer with its two cache TTLs, and 401/403/200
// over real HTTPS with client certificates.
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { ResourceAttributes, ReviewSubjectAccess, ReviewToken, UserInfo } from '@kubelet-kit/core';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer } from '../src/server.js';
import { apiVerbOf, KubeletAuth, type KubeletAuthOptions, requestAttributes } from '../src/server-auth.js';
import { selfSignedPair, servingTls } from '../src/server-tls.js';
import { makeTestCa, type TestCa } from './test-ca.js';

describe('node authorizer attributes', () => {
  // Upstream's mapping (pkg/kubelet/server/auth.go, KubeletFineGrainedAuthz on as in v1.34).
  const table: [string, string[]][] = [
    ['/stats', ['stats']],
    ['/stats/', ['stats']],
    ['/stats/summary', ['stats']],
    ['/metrics', ['metrics']],
    ['/metrics/cadvisor', ['metrics']],
    ['/metrics/resource', ['metrics']],
    ['/logs/', ['log']],
    ['/logs/syslog', ['log']],
    ['/checkpoint/ns/pod/c', ['checkpoint']],
    ['/pods', ['pods', 'proxy']],
    ['/pods/', ['pods', 'proxy']],
    ['/runningpods/', ['pods', 'proxy']],
    ['/healthz', ['healthz', 'proxy']],
    ['/healthz/ping', ['healthz', 'proxy']],
    ['/configz', ['configz', 'proxy']],
    ['/spec/', ['proxy']],
    ['/exec/ns/pod/c', ['proxy']],
    ['/attach/ns/pod/c', ['proxy']],
    ['/portForward/ns/pod', ['proxy']],
    ['/run/ns/pod/c', ['proxy']],
    ['/containerLogs/ns/pod/c', ['proxy']],
    ['/statsfoo', ['proxy']],
    ['/metricsfoo', ['proxy']],
    ['/podsfoo', ['proxy']],
    ['/', ['proxy']],
  ];
  it.each(table)('%s → nodes/%s', (path, subresources) => {
    const attrs = requestAttributes('node1', 'GET', path);
    expect(attrs.map((a) => a.subresource)).toEqual(subresources);
    for (const a of attrs) {
      expect(a).toMatchObject({
        verb: 'get',
        resource: 'nodes',
        name: 'node1',
        group: '',
        version: 'v1',
        namespace: '',
      });
    }
  });
  it.each([
    ['GET', 'get'],
    ['POST', 'create'],
    ['PUT', 'update'],
    ['PATCH', 'patch'],
    ['DELETE', 'delete'],
    ['HEAD', ''],
    ['OPTIONS', ''],
  ])('%s → verb %j', (method, verb) => {
    expect(apiVerbOf(method)).toBe(verb);
  });
});

function fakeReq(headers: Record<string, string> = {}, url = '/pods') {
  return { headers, url, method: 'GET', socket: {} } as never;
}

function auth(o: Partial<KubeletAuthOptions> = {}) {
  return new KubeletAuth({
    nodeName: 'node1',
    anonymous: false,
    authorizationMode: 'AlwaysAllow',
    clock: o.clock ?? new FakeClock(),
    logger: noopLogger,
    ...o,
  });
}

describe('KubeletAuth authentication', () => {
  it('takes a bearer token the TokenReview accepts, adding system:authenticated', async () => {
    const seen: string[] = [];
    const reviewToken: ReviewToken = async (token) => {
      seen.push(token);
      return token === 'good'
        ? { authenticated: true, user: { name: 'bob', groups: ['devs'] } }
        : { authenticated: false, error: 'unknown token' };
    };
    const a = auth({ reviewToken });
    expect(await a.authenticate(fakeReq({ authorization: 'Bearer good' }))).toEqual({
      user: { name: 'bob', groups: ['devs', 'system:authenticated'] },
    });
    expect(await a.authenticate(fakeReq({ authorization: 'Bearer bad' }))).toEqual({
      error: 'invalid bearer token: unknown token',
    });
    expect(seen).toEqual(['good', 'bad']);
  });

  it('reuses TokenReview answers for the cache TTL, on the clock', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const reviewToken: ReviewToken = async () => {
      calls++;
      return { authenticated: true, user: { name: 'bob', groups: [] } };
    };
    const a = auth({ reviewToken, clock, tokenCacheTtlMs: 120_000 });
    const req = fakeReq({ authorization: 'Bearer t' });
    await a.authenticate(req);
    clock.advance(119_000);
    await a.authenticate(req);
    expect(calls).toBe(1);
    clock.advance(2_000);
    await a.authenticate(req);
    expect(calls).toBe(2);
  });

  it('does not cache a review that failed', async () => {
    let calls = 0;
    const reviewToken: ReviewToken = async () => {
      calls++;
      throw new Error('connection refused');
    };
    const a = auth({ reviewToken });
    const req = fakeReq({ authorization: 'Bearer t' });
    expect(await a.authenticate(req)).toEqual({ error: 'token review failed: Error: connection refused' });
    await a.authenticate(req);
    expect(calls).toBe(2);
  });

  it('lets requests without credentials in as anonymous only when allowed', async () => {
    expect(await auth({ anonymous: true }).authenticate(fakeReq())).toEqual({
      user: { name: 'system:anonymous', groups: ['system:unauthenticated'] },
    });
    expect(await auth({ anonymous: false }).authenticate(fakeReq())).toEqual({ error: 'no credentials' });
  });

  it('refuses a bad token even with anonymous allowed (fail on error, as upstream)', async () => {
    const reviewToken: ReviewToken = async () => ({ authenticated: false });
    const a = auth({ anonymous: true, reviewToken });
    expect(await a.authorizeRequest(fakeReq({ authorization: 'Bearer nope' }))).toEqual({
      allowed: false,
      status: 401,
      message: 'Unauthorized',
    });
  });
});

describe('KubeletAuth webhook authorization', () => {
  const bob: UserInfo = { name: 'bob', groups: ['system:authenticated'] };

  it('falls back from nodes/pods to nodes/proxy, and names both when refused', async () => {
    const asked: ResourceAttributes[] = [];
    const review: ReviewSubjectAccess = async (_u, a) => {
      asked.push(a);
      return { allowed: a.subresource === 'proxy' && a.verb === 'get' };
    };
    const a = auth({ authorizationMode: 'Webhook', reviewSubjectAccess: review });
    expect(await a.authorize(bob, 'GET', '/pods')).toEqual({ allowed: true, user: bob });
    expect(asked.map((x) => x.subresource)).toEqual(['pods', 'proxy']);
    expect(await a.authorize(bob, 'POST', '/pods')).toEqual({
      allowed: false,
      status: 403,
      message: 'Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[pods proxy])\n',
    });
    expect(await a.authorize(bob, 'GET', '/stats/summary')).toEqual({
      allowed: false,
      status: 403,
      message: 'Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])\n',
    });
  });

  it('caches allowed answers 5 minutes and refusals 30 seconds by default', async () => {
    const clock = new FakeClock();
    let allow = true;
    let calls = 0;
    const review: ReviewSubjectAccess = async () => {
      calls++;
      return { allowed: allow };
    };
    const a = auth({ authorizationMode: 'Webhook', reviewSubjectAccess: review, clock });
    await a.authorize(bob, 'GET', '/metrics');
    allow = false;
    clock.advance(299_000);
    expect((await a.authorize(bob, 'GET', '/metrics')).allowed).toBe(true);
    expect(calls).toBe(1);
    clock.advance(2_000);
    expect((await a.authorize(bob, 'GET', '/metrics')).allowed).toBe(false);
    expect(calls).toBe(2);
    allow = true;
    clock.advance(29_000);
    expect((await a.authorize(bob, 'GET', '/metrics')).allowed).toBe(false);
    clock.advance(2_000);
    expect((await a.authorize(bob, 'GET', '/metrics')).allowed).toBe(true);
    expect(calls).toBe(3);
  });

  it('answers 500 when the review cannot be made, caching nothing', async () => {
    let calls = 0;
    const review: ReviewSubjectAccess = async () => {
      calls++;
      throw new Error('timeout');
    };
    const a = auth({ authorizationMode: 'Webhook', reviewSubjectAccess: review });
    expect(await a.authorize(bob, 'GET', '/metrics')).toEqual({
      allowed: false,
      status: 500,
      message: 'Authorization error (user=bob, verb=get, resource=nodes, subresource(s)=[metrics])',
    });
    await a.authorize(bob, 'GET', '/metrics');
    expect(calls).toBe(2);
  });

  it('treats an explicit denial as a refusal', async () => {
    const review: ReviewSubjectAccess = async () => ({ allowed: true, denied: true });
    const a = auth({ authorizationMode: 'Webhook', reviewSubjectAccess: review });
    expect((await a.authorize(bob, 'GET', '/metrics')).allowed).toBe(false);
  });

  it('needs a reviewer for the Webhook mode', () => {
    expect(() => auth({ authorizationMode: 'Webhook' })).toThrow(/SubjectAccessReview/);
  });
});

describe('KubeletServer over HTTPS with the auth filter', () => {
  let ca: TestCa;
  let server: KubeletServer | undefined;
  beforeAll(() => {
    ca = makeTestCa();
  });
  afterAll(() => fs.rmSync(ca.dir, { recursive: true, force: true }));
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start(o: Partial<KubeletAuthOptions>, readOnlyPort = 0) {
    const pair = selfSignedPair('node1', [], Date.UTC(2026, 0, 1));
    const metrics = new KubeletMetrics(new Registry());
    server = new KubeletServer({
      port: 0,
      pods: () => [],
      healthChecks: [],
      registry: metrics.registry,
      logger: noopLogger,
      tls: { ...pair, ca: fs.readFileSync(ca.caFile) },
      auth: auth(o),
      readOnlyPort,
    });
    return (await server.start()).port;
  }

  function get(
    port: number,
    path: string,
    o: { token?: string; cert?: { key: Buffer; cert: Buffer } } = {},
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          path,
          rejectUnauthorized: false,
          ...(o.cert ? o.cert : {}),
          headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  const reviewToken: ReviewToken = async (token) =>
    token === 'reader' || token === 'nobody'
      ? { authenticated: true, user: { name: token, groups: [] } }
      : { authenticated: false };
  const reviewSubjectAccess: ReviewSubjectAccess = async (u) => ({ allowed: u.name !== 'nobody' });

  it('401 without credentials, 403 when refused, 200 when allowed', async () => {
    const port = await start({ x509: true, reviewToken, authorizationMode: 'Webhook', reviewSubjectAccess });
    expect(await get(port, '/pods')).toEqual({ status: 401, body: 'Unauthorized' });
    expect(await get(port, '/pods', { token: 'wrong' })).toEqual({ status: 401, body: 'Unauthorized' });
    expect(await get(port, '/pods', { token: 'nobody' })).toEqual({
      status: 403,
      body: 'Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])\n',
    });
    const ok = await get(port, '/pods', { token: 'reader' });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).kind).toBe('PodList');
  });

  it('authenticates a client certificate of the client CA (CN user, O groups)', async () => {
    const users: UserInfo[] = [];
    const port = await start({
      x509: true,
      authorizationMode: 'Webhook',
      reviewSubjectAccess: async (u) => {
        users.push(u);
        return { allowed: true };
      },
    });
    expect((await get(port, '/metrics', { cert: ca.client })).status).toBe(200);
    expect(users).toEqual([{ name: 'alice', groups: ['system:nodes', 'ops', 'system:authenticated'] }]);
    // Same subject, no chain to the CA.
    expect(await get(port, '/metrics', { cert: ca.stranger })).toEqual({ status: 401, body: 'Unauthorized' });
  });

  it('serves the read-only subset over plain HTTP without authentication', async () => {
    await start({ x509: true }, await freePort());
    const ro = server!.readOnlyAddress()!;
    expect((await fetch(`http://127.0.0.1:${ro.port}/pods`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ro.port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ro.port}/exec/ns/p/c`)).status).toBe(404);
  });
});

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('servingTls', () => {
  it('makes kubelet.crt and kubelet.key in the cert dir once, then reuses them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-pki-'));
    try {
      const first = servingTls({ certDirectory: dir }, { hostname: 'node1', ips: ['10.0.0.5'], nowMs: 0 });
      expect(fs.readFileSync(path.join(dir, 'kubelet.crt'))).toEqual(first.cert);
      const again = servingTls({ certDirectory: dir }, { hostname: 'node1', ips: [], nowMs: 0 });
      expect(again.cert).toEqual(first.cert);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the flag of a file it cannot read, and checks the TLS version and cipher names', () => {
    expect(() =>
      servingTls(
        { certFile: '/nonexistent.crt', privateKeyFile: '/x.key' },
        { hostname: 'n', ips: [], nowMs: 0 },
      ),
    ).toThrow(/--tls-cert-file \/nonexistent.crt/);
    expect(() => servingTls({ certFile: '/a' }, { hostname: 'n', ips: [], nowMs: 0 })).toThrow(/go together/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-pki-'));
    try {
      expect(() =>
        servingTls({ certDirectory: dir, minVersion: 'TLS9' }, { hostname: 'n', ips: [], nowMs: 0 }),
      ).toThrow(/--tls-min-version/);
      const t = servingTls(
        {
          certDirectory: dir,
          minVersion: 'VersionTLS13',
          cipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305'],
        },
        { hostname: 'n', ips: [], nowMs: 0 },
      );
      expect(t.minVersion).toBe('TLSv1.3');
      expect(t.ciphers).toBe('ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
