import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { noopEventRecorder, noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClients } from '../src/api-clients.js';
import { writeKubeconfig } from './kubeconfig.js';

const base = { nodeName: 'node-a', clock: new FakeClock(), logger: noopLogger };

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-api-clients-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function kubeconfig(port: number): string {
  return writeKubeconfig(path.join(dir, 'kubeconfig'), port);
}

describe('createApiClients without a kubeconfig', () => {
  it('has no API server clients, and RuntimeClasses from the files alone', () => {
    fs.writeFileSync(
      path.join(dir, 'rc.yaml'),
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: gvisor\nhandler: runsc\n',
    );
    const api = createApiClients({ ...base, runtimeClasses: path.join(dir, 'rc.yaml') });
    expect(api.kubeConfig).toBeUndefined();
    expect(api.mirrorClient).toBeUndefined();
    expect(api.statusSinks).toEqual([]);
    expect(api.objectGetter).toBeUndefined();
    expect(api.tokenGetter).toBeUndefined();
    // No Services, and nothing waits for them.
    expect(api.serviceLister).toBeUndefined();
    // No Node registration or status without an API server.
    expect(api.nodeApi).toBeUndefined();
    expect(api.podSource({ recorder: noopEventRecorder, onError: () => {} })).toBeUndefined();
    expect(api.runtimeClasses.getRuntimeClass('gvisor')?.handler).toBe('runsc');
    expect(api.runtimeClasses.getRuntimeClass('kata')).toBeUndefined();
  });

  it('reads ConfigMaps and Secrets from the object directory', async () => {
    fs.writeFileSync(
      path.join(dir, 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: "1"\n',
    );
    const api = createApiClients({ ...base, objectDirectory: dir });
    expect((await api.objectGetter?.getConfigMap('default', 'settings'))?.data).toEqual({ a: '1' });
    expect(await api.objectGetter?.getSecret('default', 'missing')).toBeUndefined();
  });

  it('refuses a bad RuntimeClass file at creation', () => {
    fs.writeFileSync(path.join(dir, 'rc.yaml'), 'kind: RuntimeClass\nmetadata: {}\n');
    expect(() => createApiClients({ ...base, runtimeClasses: path.join(dir, 'rc.yaml') })).toThrow();
  });
});

describe('createApiClients with a kubeconfig', () => {
  let server: http.Server;
  let requests: string[];
  beforeEach(async () => {
    requests = [];
    server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      if (req.method === 'POST' && req.url === '/api/v1/namespaces/ns/serviceaccounts/default/token') {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'TokenRequest',
            apiVersion: 'authentication.k8s.io/v1',
            spec: { audiences: [], expirationSeconds: 3607 },
            status: { token: 'jwt', expirationTimestamp: '2030-01-01T00:00:00Z' },
          }),
        );
        return;
      }
      if (req.url?.startsWith('/api/v1/namespaces/default/secrets/pull')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Secret', apiVersion: 'v1', metadata: { name: 'pull' }, data: {} }));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404 }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('builds the mirror client, the status sink and the pod source, and reads objects from the API server', async () => {
    const api = createApiClients({ ...base, kubeconfig: kubeconfig((server.address() as AddressInfo).port) });
    expect(api.kubeConfig).toBeDefined();
    expect(api.mirrorClient).toBeDefined();
    expect(api.statusSinks).toHaveLength(1);
    expect(api.podSource({ recorder: noopEventRecorder, onError: () => {} })?.name).toBe('api');
    // Nothing is asked of the API server until an object is read.
    expect(requests).toEqual([]);
    expect((await api.objectGetter?.getSecret('default', 'pull'))?.metadata?.name).toBe('pull');
    // A watch of the one object first; this server cannot list, so a GET answers.
    expect(requests).toEqual([
      'GET /api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dpull',
      'GET /api/v1/namespaces/default/secrets/pull',
    ]);
    // Tokens through TokenRequest.
    const tr = await api.tokenGetter?.getServiceAccountToken('ns', 'default', {
      audiences: [],
      expirationSeconds: 3607,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u1' },
    });
    expect(tr?.status.token).toBe('jwt');
    expect(requests.at(-1)).toBe('POST /api/v1/namespaces/ns/serviceaccounts/default/token');
    await api.stop();
    // Until the RuntimeClass watch has listed, no class is known (upstream's unsynced lister).
    expect(api.runtimeClasses.getRuntimeClass('gvisor')).toBeUndefined();
    // The Services are not listed before start(): API pods' containers wait for them.
    expect(api.serviceLister?.hasSynced()).toBe(false);
    expect(api.serviceLister?.list('default')).toEqual([]);
    // The Node client maps the API server's 404 to NotFound.
    await expect(api.nodeApi?.getNode('node-a')).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('takes the object directory over the API server for objects', async () => {
    fs.writeFileSync(path.join(dir, 'pull.yaml'), 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: local\n');
    const api = createApiClients({
      ...base,
      kubeconfig: kubeconfig((server.address() as AddressInfo).port),
      objectDirectory: dir,
    });
    expect((await api.objectGetter?.getSecret('default', 'local'))?.metadata?.name).toBe('local');
    expect(requests).toEqual([]);
  });

  it('loads the kubeconfig only when first used: a bad one fails then, not at creation', async () => {
    const api = createApiClients({ ...base, kubeconfig: path.join(dir, 'missing') });
    await expect(api.kubeConfig?.()).rejects.toThrow();
    await expect(api.objectGetter?.getSecret('default', 'pull')).rejects.toThrow();
  });
});
