import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeApiError } from '@kubelet-kit/core';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverNodeClient } from '../src/index.js';

type JsonObject = Record<string, unknown>;

interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

/** The API server's node endpoints, as far as the client's requests go; answers are scripted. */
class FakeNodeServer {
  readonly requests: RecordedRequest[] = [];
  readonly nodes = new Map<string, JsonObject>();
  /** When set, the next request is answered with this status. */
  fail: { code: number; reason: string } | undefined;
  #server: Server | undefined;

  async start(): Promise<string> {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text ? JSON.parse(text) : undefined;
    const path = (req.url ?? '').split('?')[0] ?? '';
    this.requests.push({ method: req.method ?? '', path, contentType: req.headers['content-type'], body });
    const send = (code: number, payload: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const status = (code: number, reason: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
    if (this.fail) {
      const f = this.fail;
      this.fail = undefined;
      return status(f.code, f.reason);
    }
    if (req.method === 'POST' && path === '/api/v1/nodes') {
      const node = body as JsonObject;
      const name = (node.metadata as JsonObject).name as string;
      if (this.nodes.has(name)) return status(409, 'AlreadyExists');
      const stored = {
        ...node,
        metadata: {
          ...(node.metadata as JsonObject),
          uid: 'uid-1',
          creationTimestamp: '2026-01-01T00:00:00Z',
        },
      };
      this.nodes.set(name, stored);
      return send(201, stored);
    }
    const m = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(path);
    const node = m ? this.nodes.get(m[1]!) : undefined;
    if (!m || !node) return status(404, 'NotFound');
    if (req.method === 'GET' && !m[2]) return send(200, node);
    if (req.method === 'PATCH' && m[2]) {
      // Enough of strategic merge for this test: status fields replaced one level down.
      const patch = body as JsonObject;
      const updated = {
        ...node,
        status: { ...(node.status as JsonObject), ...(patch.status as JsonObject) },
      };
      this.nodes.set(m[1]!, updated);
      return send(200, updated);
    }
    return status(405, 'MethodNotAllowed');
  }
}

function apiFor(server: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'kubelet' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'kubelet' }],
    currentContext: 'fake',
  });
  return kc.makeApiClient(CoreV1Api);
}

describe('ApiserverNodeClient', () => {
  let server: FakeNodeServer;
  let client: ApiserverNodeClient;

  beforeEach(async () => {
    server = new FakeNodeServer();
    client = new ApiserverNodeClient({ api: apiFor(await server.start()) });
  });

  afterEach(async () => {
    await server.close();
  });

  it('creates, reads and patches nodes/status as a strategic merge patch, with plain JSON back', async () => {
    const created = await client.createNode({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a' } },
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: '2026-01-01T00:00:05Z',
            lastTransitionTime: '2026-01-01T00:00:05Z',
          },
        ],
      },
    });
    expect(created.metadata?.creationTimestamp).toBe('2026-01-01T00:00:00Z');
    expect(server.requests[0]?.body).toMatchObject({
      metadata: { name: 'node-a' },
      status: { conditions: [{ type: 'Ready', lastHeartbeatTime: '2026-01-01T00:00:05Z' }] },
    });
    const got = await client.getNode('node-a');
    expect(got.status?.conditions?.[0]?.lastHeartbeatTime).toBe('2026-01-01T00:00:05Z');
    const patch = {
      status: {
        conditions: [{ type: 'Ready', status: 'False' }],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      },
    };
    const patched = await client.patchNodeStatus('node-a', patch);
    expect(patched.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
    const req = server.requests.at(-1)!;
    expect(`${req.method} ${req.path}`).toBe('PATCH /api/v1/nodes/node-a/status');
    expect(req.contentType).toBe('application/strategic-merge-patch+json');
    expect(req.body).toEqual(patch);
  });

  it('maps API errors to NodeApiError codes', async () => {
    await expect(client.getNode('missing')).rejects.toMatchObject({ code: 'NotFound', statusCode: 404 });
    await client.createNode({ metadata: { name: 'node-a' } });
    const exists = await client.createNode({ metadata: { name: 'node-a' } }).catch((e: unknown) => e);
    expect(exists).toBeInstanceOf(NodeApiError);
    expect(exists).toMatchObject({ code: 'AlreadyExists', statusCode: 409 });
    server.fail = { code: 409, reason: 'Conflict' };
    await expect(client.patchNodeStatus('node-a', {})).rejects.toMatchObject({ code: 'Conflict' });
    server.fail = { code: 503, reason: 'ServiceUnavailable' };
    await expect(client.getNode('node-a')).rejects.toMatchObject({ code: 'Unavailable', statusCode: 503 });
    server.fail = { code: 403, reason: 'Forbidden' };
    await expect(client.getNode('node-a')).rejects.toMatchObject({ code: 'Other', statusCode: 403 });
  });

  it('calls an unreachable API server Unavailable', async () => {
    await server.close();
    await expect(client.getNode('node-a')).rejects.toMatchObject({
      code: 'Unavailable',
      statusCode: undefined,
    });
  });
});
