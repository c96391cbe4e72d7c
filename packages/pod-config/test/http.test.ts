import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PodUpdate } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  HttpSource,
  type HttpSourceOptions,
  PodConfig,
  type PodSourceError,
  type PodValidationError,
} from '../src/index.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let url: string;
let handler: Handler;
let requests = 0;

beforeEach(async () => {
  requests = 0;
  handler = (_req, res) => res.end('');
  server = createServer((req, res) => {
    requests++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const pod = (name: string, image = 'nginx:1') => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'c', image }] },
});

function serve(status: number, body: string | Buffer, headers: Record<string, string> = {}): void {
  handler = (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
}

async function harness(options: Partial<HttpSourceOptions> = {}) {
  const clock = new FakeClock();
  const recorder = new InMemoryEventRecorder();
  const errors: (PodValidationError | PodSourceError)[] = [];
  const config = new PodConfig({ clock, bufferUpdates: false });
  const sets: PodUpdate[] = [];
  const updates: PodUpdate[] = [];
  config.on('update', (u) => updates.push(u));
  const sink = config.channel('http');
  const source = new HttpSource({
    url,
    nodeName: 'Node1',
    clock,
    recorder,
    onError: (e) => errors.push(e),
    ...options,
  });
  const started = source.start((u) => {
    sets.push(u);
    return sink(u);
  });
  const take = () => updates.splice(0).map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }));
  /** Moves time to the next poll (not past it, so its timeout does not fire too) and waits for it. */
  const next = async () => {
    clock.advance((clock.nextDue() ?? clock.now()) - clock.now());
    await source.poll();
  };
  return { clock, recorder, errors, config, source, sets, take, started, next };
}

describe('HttpSource against a local server', () => {
  it('reads a single Pod (YAML or JSON) and defaults it as a url pod', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness({ headers: { 'X-Test': 'yes' } });
    let seenHeader: string | undefined;
    handler = (req, res) => {
      seenHeader = req.headers['x-test'] as string | undefined;
      res.end(JSON.stringify(pod('web')));
    };
    await h.started;
    expect(h.sets).toHaveLength(1);
    const p = h.sets[0]?.pods[0];
    expect(p?.metadata?.name).toBe('web-node1');
    expect(p?.spec?.tolerations).toBeUndefined();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['web-node1'] }]);
    await h.next();
    expect(seenHeader).toBe('yes');
    await h.source.stop();
  });

  it('reads a PodList and sends nothing for an unchanged body', async () => {
    serve(
      200,
      'apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: i}]}\n- metadata: {name: b}\n  spec: {containers: [{name: c, image: i}]}\n',
    );
    const h = await harness();
    await h.started;
    expect(h.take()).toEqual([{ op: 'ADD', names: ['a-node1', 'b-node1'] }]);
    await h.next();
    await h.next();
    expect(requests).toBe(3);
    expect(h.sets).toHaveLength(1);
    expect(h.take()).toEqual([]);
    await h.source.stop();
  });

  it('polls every 20 s after the previous poll, and picks up a change', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness();
    await h.started;
    h.take();
    serve(200, JSON.stringify(pod('web', 'nginx:2')));
    h.clock.advance(19_999);
    expect(requests).toBe(1);
    expect(h.clock.nextDue()).toBe(h.clock.now() + 1);
    await h.next();
    expect(requests).toBe(2);
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['web-node1'] },
      { op: 'ADD', names: ['web-node1'] },
    ]);
    await h.source.stop();
  });

  it('keeps the last good state on bad JSON, a 500, and an invalid pod', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness();
    await h.started;
    h.take();
    serve(200, '{"apiVersion": "v1", "kind": "Pod", "metadata": {');
    await h.next();
    expect(h.source.lastError?.code).toBe('FailedValidation');
    expect((h.source.lastError as PodValidationError).url).toBe(url);
    serve(500, 'oops');
    await h.next();
    expect(h.source.lastError).toMatchObject({ code: 'HTTPError' });
    expect(h.source.lastError?.message).toContain('500');
    serve(200, JSON.stringify(pod('web', '')));
    await h.next();
    expect(h.source.lastError).toMatchObject({ code: 'FailedValidation', field: 'spec.containers[0].image' });
    expect(h.source.lastError?.message).toContain(url);
    expect(h.recorder.events.filter((e) => e.reason === 'FailedValidation')).toHaveLength(2);
    // The same bad body again is still an error but not reported again.
    await h.next();
    expect(h.source.lastError).toBeDefined();
    expect(h.errors).toHaveLength(3);
    expect(h.sets).toHaveLength(1);
    expect(h.take()).toEqual([]);
    expect(h.config.mergedState().map((p) => p.metadata?.name)).toEqual(['web-node1']);
    await h.source.stop();
  });

  it('rejects a PodList with one invalid pod whole', async () => {
    serve(200, JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('ok'), pod('Bad_Name')] }));
    const h = await harness();
    await h.started;
    expect(h.sets).toHaveLength(0);
    expect(h.source.lastError).toMatchObject({ field: 'items[1].metadata.name' });
    await h.source.stop();
  });

  it('treats an empty body as an error, but sends one empty SET so the source becomes ready', async () => {
    serve(200, '');
    const h = await harness();
    await h.started;
    expect(h.source.lastError).toMatchObject({ code: 'EmptyBody' });
    expect(h.take()).toEqual([{ op: 'ADD', names: [] }]);
    serve(200, JSON.stringify(pod('web')));
    await h.next();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['web-node1'] }]);
    serve(200, '');
    await h.next();
    expect(h.take()).toEqual([]);
    expect(h.config.mergedState()).toHaveLength(1);
    await h.source.stop();
  });

  it('rejects an oversized body, declared or streamed', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness({ maxBytes: 1024 });
    await h.started;
    serve(200, Buffer.alloc(4096, 0x20));
    await h.next();
    expect(h.source.lastError).toMatchObject({ code: 'TooLarge' });
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(Buffer.alloc(800, 0x20));
      res.end(Buffer.alloc(800, 0x20));
    };
    await h.next();
    expect(h.source.lastError).toMatchObject({ code: 'TooLarge' });
    expect(h.config.mergedState()).toHaveLength(1);
    await h.source.stop();
  });

  it('caps the body at 10 MiB by default', async () => {
    serve(200, Buffer.alloc(10 * 1024 * 1024 + 1, 0x20));
    const h = await harness();
    await h.started;
    expect(h.source.lastError).toMatchObject({ code: 'TooLarge' });
    await h.source.stop();
  });

  it('refuses a body of exactly the limit, as ReadAtMost does once the limit is read', async () => {
    // upstream extractFromURL reads with ReadAtMost(body, maxConfigLength), which errs when it has
    // read `limit` bytes: the largest accepted body is one byte short of it.
    const body = JSON.stringify(pod('web'));
    serve(200, body.padEnd(1024, ' '));
    const h = await harness({ maxBytes: 1024 });
    await h.started;
    expect(h.source.lastError).toMatchObject({ code: 'TooLarge' });
    expect(h.sets).toHaveLength(0);
    serve(200, body.padEnd(1023, ' '));
    await h.next();
    expect(h.source.lastError).toBeUndefined();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['web-node1'] }]);
    await h.source.stop();
  });

  it('refuses a body of exactly 10 MiB by default', async () => {
    serve(200, JSON.stringify(pod('web')).padEnd(10 * 1024 * 1024, ' '));
    const h = await harness();
    await h.started;
    expect(h.source.lastError).toMatchObject({ code: 'TooLarge' });
    expect(h.sets).toHaveLength(0);
    await h.source.stop();
  });

  it('sends nothing, not even an empty SET, when the first poll fails (TestURLErrorNotExistNoUpdate)', async () => {
    serve(404, 'not found');
    const h = await harness();
    await h.started;
    expect(h.source.lastError).toMatchObject({ code: 'HTTPError' });
    expect(h.sets).toHaveLength(0);
    expect(h.config.seenAllSources(['http'])).toBe(false);
    await h.source.stop();
  });

  it('times out a slow body through the clock and keeps the state', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness({ timeout: 5_000 });
    await h.started;
    let arrived = false;
    handler = (_req, res) => {
      arrived = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"apiVersion": "v1",');
      // ...and never finishes.
    };
    h.clock.advance(20_000);
    expect(h.clock.pendingTimers).toBe(1);
    const polling = h.source.poll();
    const end = Date.now() + 3000;
    while (!arrived && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(arrived).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    h.clock.advance(5_000);
    await polling;
    expect(h.source.lastError).toMatchObject({ code: 'Timeout' });
    expect(h.config.mergedState()).toHaveLength(1);
    await h.source.stop();
  });

  it('stops polling after stop', async () => {
    serve(200, JSON.stringify(pod('web')));
    const h = await harness();
    await h.started;
    await h.source.stop();
    h.clock.advance(100_000);
    await h.source.poll();
    expect(requests).toBe(1);
  });
});
