import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClients } from '../src/api-clients.js';
import { teeRecorder } from '../src/tee-recorder.js';
import { writeKubeconfig } from './kubeconfig.js';

interface Request {
  readonly method: string;
  readonly path: string;
  readonly body: Record<string, unknown> | undefined;
}

describe('createApiClients: events and the node lease', () => {
  let dir: string;
  let server: http.Server;
  let requests: Request[];
  let nodeExists: boolean;
  let lease: Record<string, unknown> | undefined;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-lease-events-'));
    requests = [];
    nodeExists = false;
    lease = undefined;
    server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      requests.push({ method: req.method ?? '', path: p, body });
      const send = (code: number, payload: unknown) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      const notFound = () => send(404, { kind: 'Status', code: 404, reason: 'NotFound' });
      if (p === '/api/v1/nodes/node-a') {
        return nodeExists
          ? send(200, { kind: 'Node', metadata: { name: 'node-a', uid: 'node-uid' } })
          : notFound();
      }
      if (p === '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a') {
        if (!lease) return notFound();
        if (req.method === 'PUT')
          lease = { ...body, metadata: { ...(body?.metadata as object), resourceVersion: '2' } };
        return send(200, lease);
      }
      if (p === '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases' && req.method === 'POST') {
        lease = { ...body, metadata: { ...(body?.metadata as object), resourceVersion: '1' } };
        return send(201, lease);
      }
      if (p === '/api/v1/namespaces/default/events' && req.method === 'POST') return send(201, body);
      return notFound();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function clients(extra: { nodeLeaseDurationSeconds?: number } = {}) {
    const port = (server.address() as AddressInfo).port;
    return createApiClients({
      kubeconfig: writeKubeconfig(path.join(dir, 'kubeconfig'), port),
      nodeName: 'node-a',
      clock: new FakeClock(Date.UTC(2026, 0, 1)),
      logger: noopLogger,
      ...extra,
    });
  }

  it('has neither without a kubeconfig', () => {
    const api = createApiClients({ nodeName: 'node-a', clock: new FakeClock(), logger: noopLogger });
    expect(api.eventRecorder).toBeUndefined();
    expect(api.nodeLease).toBeUndefined();
  });

  it('creates the lease once the Node exists, owned by it, with the configured duration', async () => {
    const api = clients({ nodeLeaseDurationSeconds: 60 });
    expect(api.nodeLease?.renewIntervalMs).toBe(15_000);
    await api.nodeLease!.sync();
    // No Node yet: read, but not created.
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a',
      'GET /api/v1/nodes/node-a',
    ]);
    nodeExists = true;
    await api.nodeLease!.sync();
    expect(requests.at(-1)).toMatchObject({
      method: 'POST',
      body: {
        metadata: {
          name: 'node-a',
          namespace: 'kube-node-lease',
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid' }],
        },
        spec: {
          holderIdentity: 'node-a',
          leaseDurationSeconds: 60,
          renewTime: '2026-01-01T00:00:00.000000Z',
        },
      },
    });
    await api.nodeLease!.sync();
    expect(requests.at(-1)).toMatchObject({ method: 'PUT', body: { metadata: { resourceVersion: '1' } } });
    await api.stop();
  });

  it('writes events to the API server beside the local recorder', async () => {
    const api = clients();
    const local: string[] = [];
    const recorder = teeRecorder(
      { event: (_o, _t, reason) => local.push(reason) },
      { recorder: api.eventRecorder },
    );
    recorder.event(
      { kind: 'Node', name: 'node-a', uid: 'node-a' },
      'Normal',
      'Starting',
      'Starting kubelet.',
    );
    expect(local).toEqual(['Starting']);
    await api.eventRecorder!.flush();
    expect(requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/api/v1/namespaces/default/events',
      body: { reason: 'Starting', source: { component: 'kubelet', host: 'node-a' } },
    });
    await api.eventRecorder!.stop();
  });
});
