import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreV1Event } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiserverEventRecorder, ApiserverEventSink } from '../src/index.js';

interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: Record<string, unknown> | undefined;
}

/** The API server's Event endpoints: create and patch, 404 for an unknown event. */
class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  readonly events = new Map<string, Record<string, unknown>>();
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
    const body = (text ? JSON.parse(text) : undefined) as Record<string, unknown> | undefined;
    const path = (req.url ?? '').split('?')[0] ?? '';
    this.requests.push({ method: req.method ?? '', path, contentType: req.headers['content-type'], body });
    const send = (code: number, payload: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(path);
    if (!m) return send(404, { kind: 'Status', code: 404, reason: 'NotFound' });
    if (req.method === 'POST') {
      const meta = body?.metadata as Record<string, unknown>;
      const stored = { ...body, metadata: { ...meta, resourceVersion: '1' } };
      this.events.set(`${m[1]}/${String(meta.name)}`, stored);
      return send(201, stored);
    }
    const current = this.events.get(`${m[1]}/${m[2]}`);
    if (!current)
      return send(404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'events not found' });
    const stored = { ...current, ...body };
    this.events.set(`${m[1]}/${m[2]}`, stored);
    return send(200, stored);
  }
}

describe('ApiserverEventSink', () => {
  let server: FakeApiServer;
  let sink: ApiserverEventSink;
  beforeEach(async () => {
    server = new FakeApiServer();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: await server.start(), skipTLSVerify: true }],
      users: [{ name: 'kubelet' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'kubelet' }],
      currentContext: 'fake',
    });
    sink = new ApiserverEventSink({ api: kc.makeApiClient(CoreV1Api) });
  });
  afterEach(() => server.close());

  it('POSTs a new event and strategic-merge-PATCHes a repeat', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const recorder = new ApiserverEventRecorder({ sink, nodeName: 'node-a', clock });
    const ref = { kind: 'Pod', namespace: 'ns', name: 'web', uid: 'u1' };
    recorder.event(ref, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await recorder.flush();
    clock.advance(10_000);
    recorder.event(ref, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await recorder.flush();
    const [post, patch] = server.requests;
    expect(post).toMatchObject({
      method: 'POST',
      path: '/api/v1/namespaces/ns/events',
      body: {
        reason: 'BackOff',
        count: 1,
        firstTimestamp: '2026-01-01T00:00:00Z',
        source: { component: 'kubelet', host: 'node-a' },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'web', namespace: 'ns', uid: 'u1' },
      },
    });
    const name = (post!.body!.metadata as { name: string }).name;
    expect(name).toMatch(/^web\.[0-9a-f]{16}$/);
    expect(patch).toEqual({
      method: 'PATCH',
      path: `/api/v1/namespaces/ns/events/${name}`,
      contentType: 'application/strategic-merge-patch+json',
      body: {
        count: 2,
        lastTimestamp: '2026-01-01T00:00:10Z',
        message: 'Back-off restarting failed container',
      },
    });
    expect(recorder.stats.written).toBe(2);
  });

  it('passes the 404 of a patch on as the HTTP status', async () => {
    const event: CoreV1Event = { metadata: { name: 'gone', namespace: 'ns' }, involvedObject: {} };
    await expect(
      sink.patch(event, { count: 2, lastTimestamp: '2026-01-01T00:00:00Z' }),
    ).rejects.toMatchObject({
      code: 404,
    });
  });
});
