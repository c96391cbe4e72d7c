import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeClock } from '@kubelet-kit/core/testing';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverObjectGetter } from '../src/index.js';

describe('ApiserverObjectGetter', () => {
  let server: http.Server;
  let requests: string[];
  let objects: Map<string, unknown>;
  let failNext = 0;
  let kc: KubeConfig;

  beforeEach(async () => {
    requests = [];
    objects = new Map();
    failNext = 0;
    server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      if (failNext > 0) {
        failNext--;
        res.statusCode = 500;
        res.end(
          JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500, message: 'boom' }),
        );
        return;
      }
      const obj = objects.get(req.url ?? '');
      if (!obj) {
        res.statusCode = 404;
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'NotFound',
            code: 404,
          }),
        );
        return;
      }
      res.end(JSON.stringify(obj));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'c', cluster: 'local', user: 'u' }],
      currentContext: 'c',
    });
  });
  afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads objects, caches them for the TTL, and maps 404 to undefined', async () => {
    objects.set('/api/v1/namespaces/ns/configmaps/cfg', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'cfg',
        namespace: 'ns',
        resourceVersion: '7',
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      data: { a: '1' },
      binaryData: { b: 'AAE=' },
    });
    objects.set('/api/v1/namespaces/ns/secrets/sec', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'sec', namespace: 'ns' },
      type: 'Opaque',
      data: { pw: 'eA==' },
    });
    const clock = new FakeClock();
    const getter = new ApiserverObjectGetter({ kubeConfig: kc, clock, ttlMs: 5000 });
    const cm = await getter.getConfigMap('ns', 'cfg');
    expect(cm).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg', namespace: 'ns', resourceVersion: '7' },
      data: { a: '1' },
      binaryData: { b: 'AAE=' },
    });
    expect((await getter.getSecret('ns', 'sec'))?.data).toEqual({ pw: 'eA==' });
    expect(await getter.getConfigMap('ns', 'missing')).toBeUndefined();
    const before = requests.length;
    await getter.getConfigMap('ns', 'cfg');
    await getter.getConfigMap('ns', 'missing');
    expect(requests.length).toBe(before);
    objects.set('/api/v1/namespaces/ns/configmaps/cfg', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg', namespace: 'ns' },
      data: { a: '2' },
    });
    clock.advance(5000);
    expect((await getter.getConfigMap('ns', 'cfg'))?.data).toEqual({ a: '2' });
    expect(requests).toContain('GET /api/v1/namespaces/ns/configmaps/cfg');
  });

  it('shares one request between concurrent reads and does not cache errors', async () => {
    objects.set('/api/v1/namespaces/ns/configmaps/cfg', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg' },
    });
    const getter = new ApiserverObjectGetter({ kubeConfig: kc, clock: new FakeClock() });
    await Promise.all([
      getter.getConfigMap('ns', 'cfg'),
      getter.getConfigMap('ns', 'cfg'),
      getter.getConfigMap('ns', 'cfg'),
    ]);
    expect(requests).toHaveLength(1);
    failNext = 1;
    await expect(getter.getSecret('ns', 'x')).rejects.toThrow();
    expect(await getter.getSecret('ns', 'x')).toBeUndefined();
    expect(requests).toHaveLength(3);
  });
});
