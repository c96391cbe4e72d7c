import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Lease, LeaseApiError } from '@kubelet-kit/core';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverLeaseClient } from '../src/index.js';

type JsonObject = Record<string, unknown>;

interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** The API server's Lease and Node endpoints, with resourceVersions, recording every request. */
class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  readonly leases = new Map<string, JsonObject>();
  readonly nodes = new Map<string, JsonObject>();
  version = 10;
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
    const body = (text ? JSON.parse(text) : undefined) as JsonObject | undefined;
    const path = (req.url ?? '').split('?')[0] ?? '';
    this.requests.push({ method: req.method ?? '', path, body });
    const send = (code: number, payload: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const status = (code: number, reason: string, message: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

    const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(path);
    if (node) {
      const n = this.nodes.get(node[1]!);
      return n ? send(200, n) : status(404, 'NotFound', `nodes "${node[1]}" not found`);
    }
    const m = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(path);
    if (!m) return status(404, 'NotFound', 'no such path');
    const [, namespace, name] = m;
    if (req.method === 'POST') {
      const meta = (body?.metadata ?? {}) as JsonObject;
      const key = `${namespace}/${String(meta.name)}`;
      if (this.leases.has(key))
        return status(
          409,
          'AlreadyExists',
          `leases.coordination.k8s.io "${String(meta.name)}" already exists`,
        );
      const stored = {
        ...body,
        metadata: {
          ...meta,
          uid: 'lease-uid',
          creationTimestamp: '2026-01-01T00:00:00Z',
          resourceVersion: String(++this.version),
        },
      };
      this.leases.set(key, stored);
      return send(201, stored);
    }
    const key = `${namespace}/${name}`;
    const current = this.leases.get(key);
    if (!current) return status(404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
    if (req.method === 'GET') return send(200, current);
    if (req.method === 'PUT') {
      const meta = (body?.metadata ?? {}) as JsonObject;
      if (meta.resourceVersion !== (current.metadata as JsonObject).resourceVersion) {
        return status(
          409,
          'Conflict',
          `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified`,
        );
      }
      const stored = { ...body, metadata: { ...meta, resourceVersion: String(++this.version) } };
      this.leases.set(key, stored);
      return send(200, stored);
    }
    return status(405, 'MethodNotAllowed', 'method not allowed');
  }
}

function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'kubelet' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'kubelet' }],
    currentContext: 'fake',
  });
  return kc;
}

const LEASE: Lease = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'node-a', namespace: 'kube-node-lease' },
  spec: { holderIdentity: 'node-a', leaseDurationSeconds: 40, renewTime: '2026-01-01T00:00:00.123000Z' },
};

describe('ApiserverLeaseClient', () => {
  let server: FakeApiServer;
  let client: ApiserverLeaseClient;
  beforeEach(async () => {
    server = new FakeApiServer();
    const kc = kubeConfig(await server.start());
    client = new ApiserverLeaseClient({
      coordination: kc.makeApiClient(CoordinationV1Api),
      core: kc.makeApiClient(CoreV1Api),
    });
  });
  afterEach(() => server.close());

  it('maps a missing lease to NotFound', async () => {
    const err = await client.get('kube-node-lease', 'node-a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseApiError);
    expect(err).toMatchObject({ code: 'NotFound', status: 404 });
    expect((err as Error).message).toBe(
      'get lease kube-node-lease/node-a: leases.coordination.k8s.io "node-a" not found',
    );
  });

  it('creates, reads and replaces a lease, keeping the MicroTime as sent', async () => {
    const created = await client.create(LEASE);
    expect(server.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
      body: {
        spec: {
          renewTime: '2026-01-01T00:00:00.123000Z',
          holderIdentity: 'node-a',
          leaseDurationSeconds: 40,
        },
      },
    });
    // Plain API JSON back: times are strings, not Dates.
    expect(created.metadata?.creationTimestamp).toBe('2026-01-01T00:00:00Z');
    expect(created.spec?.renewTime).toBe('2026-01-01T00:00:00.123000Z');
    expect(created.metadata?.resourceVersion).toBe('11');

    const read = await client.get('kube-node-lease', 'node-a');
    expect(read).toEqual(created);

    const renewed = await client.update({
      ...read,
      spec: { ...read.spec, renewTime: '2026-01-01T00:00:10.123000Z' },
    });
    expect(server.requests.at(-1)).toMatchObject({
      method: 'PUT',
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a',
      body: { metadata: { resourceVersion: '11' }, spec: { renewTime: '2026-01-01T00:00:10.123000Z' } },
    });
    expect(renewed.metadata?.resourceVersion).toBe('12');
  });

  it('maps a stale update to Conflict and a second create to AlreadyExists', async () => {
    const created = await client.create(LEASE);
    await client.update(created);
    await expect(client.update(created)).rejects.toMatchObject({ code: 'Conflict', status: 409 });
    await expect(client.create(LEASE)).rejects.toMatchObject({ code: 'AlreadyExists', status: 409 });
  });

  it('maps an unreachable API server to Other, without a status', async () => {
    await server.close();
    const err = await client.get('kube-node-lease', 'node-a').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'Other', status: undefined });
  });

  it('maps a server error to Other with its status', async () => {
    const down = new ApiserverLeaseClient({
      coordination: {
        readNamespacedLease: async () => {
          throw Object.assign(new Error('HTTP-Code: 503'), { code: 503, body: { message: 'etcd is down' } });
        },
      } as unknown as CoordinationV1Api,
    });
    await expect(down.get('kube-node-lease', 'node-a')).rejects.toMatchObject({
      code: 'Other',
      status: 503,
      message: 'get lease kube-node-lease/node-a: etcd is down',
    });
  });

  it('reads the Node UID, NotFound while there is no Node', async () => {
    await expect(client.getNodeUid('node-a')).rejects.toMatchObject({ code: 'NotFound' });
    server.nodes.set('node-a', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a', uid: 'node-uid-1' },
    });
    await expect(client.getNodeUid('node-a')).resolves.toBe('node-uid-1');
    expect(server.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/v1/nodes/node-a' });
  });

  it('rejects a lease without a namespace before calling', async () => {
    await expect(client.create({ metadata: { name: 'x' } })).rejects.toThrow(/metadata.namespace/);
    expect(server.requests).toHaveLength(0);
  });
});
