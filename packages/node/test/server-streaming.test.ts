import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { noopLogger, type Pod, type RuntimePod } from '@kubelet-kit/core';
import { RuntimeServiceClient } from '@kubelet-kit/cri';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer } from '../src/server.js';
import { StreamingServer } from '../src/server-streaming.js';

const BUSYBOX = 'localhost/kubelet-kit/busybox:1.0';

/** What the fake runtime streaming server saw of each request. */
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

let cri: InMemoryCriServer;
let runtime: RuntimeServiceClient;
let stream: http.Server;
let server: KubeletServer;
let base: { host: string; port: number };
let seen: Seen[];
let ids: { sandboxId: string; containerId: string };

beforeEach(async () => {
  seen = [];
  cri = await InMemoryCriServer.start({ images: [BUSYBOX] });
  runtime = new RuntimeServiceClient({ endpoint: cri.endpoint });
  const { podSandboxId } = await runtime.runPodSandbox({
    config: { metadata: { name: 'web', namespace: 'default', uid: 'uid-web', attempt: 0 } },
  });
  const { containerId } = await runtime.createContainer({
    podSandboxId,
    config: { metadata: { name: 'main', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '1d'] },
  });
  await runtime.startContainer({ containerId });
  ids = { sandboxId: podSandboxId, containerId };

  // The runtime's streaming server: 101 then an upper-casing echo, or a refusal for `refuse`.
  stream = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end('Upgrade request required');
  });
  stream.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const call = cri.streamingCalls().find((c) => (req.url ?? '').endsWith(`/${c.token}`));
    if (!call || call.cmd[0] === 'refuse') {
      const body = 'unable to upgrade: no supported protocol';
      socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      return;
    }
    const ws = req.headers['sec-websocket-protocol'];
    const answer = ws
      ? `Upgrade: websocket\r\nSec-WebSocket-Protocol: ${String(ws).split(',')[0]}`
      : `Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${req.headers['x-stream-protocol-version']}`;
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n${answer}\r\n\r\n`);
    socket.on('data', (d: Buffer) => socket.write(d.toString('utf8').toUpperCase()));
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((r) => stream.listen(0, '127.0.0.1', r));
  cri.setStreamingUrl(`http://127.0.0.1:${(stream.address() as AddressInfo).port}`);

  const pods: Pod[] = [{ metadata: { name: 'web', namespace: 'default', uid: 'uid-web' } }];
  const runtimePods: RuntimePod[] = [
    {
      id: 'uid-web',
      name: 'web',
      namespace: 'default',
      createdAt: 0,
      containers: [
        {
          id: { type: 'containerd', id: containerId },
          name: 'main',
          image: BUSYBOX,
          imageId: '',
          hash: '',
          state: 'running',
        },
      ],
      sandboxes: [
        {
          id: { type: 'containerd', id: podSandboxId },
          name: '',
          image: '',
          imageId: '',
          hash: '',
          state: 'running',
        },
      ],
    },
  ];
  server = new KubeletServer({
    port: 0,
    pods: () => pods,
    healthChecks: [],
    registry: new KubeletMetrics(new Registry()).registry,
    logger: noopLogger,
    streaming: new StreamingServer({
      pods: () => pods,
      runtimePods: async () => runtimePods,
      runtimeService: runtime,
      logger: noopLogger,
    }),
  });
  const addr = await server.start();
  base = { host: '127.0.0.1', port: addr.port };
});

afterEach(async () => {
  await server.stop();
  await new Promise<void>((r) => stream.close(() => r()));
  runtime.close();
  await cri.close();
});

/** Opens a raw connection, sends `head`, and collects what comes back. */
function raw(head: string): {
  socket: net.Socket;
  received: () => string;
  waitFor: (s: string) => Promise<string>;
} {
  const socket = net.connect(base);
  let got = '';
  const waiters: Array<() => void> = [];
  socket.on('data', (d: Buffer) => {
    got += d.toString('utf8');
    for (const w of waiters.splice(0)) w();
  });
  socket.on('end', () => {
    for (const w of waiters.splice(0)) w();
  });
  socket.write(head);
  const waitFor = (s: string) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (got.includes(s)) resolve(got);
        else if (socket.readableEnded)
          reject(new Error(`connection ended before ${JSON.stringify(s)}: ${got}`));
        else waiters.push(check);
      };
      check();
    });
  return { socket, received: () => got, waitFor };
}

const upgradeHead = (path: string, extra: string) =>
  `GET ${path} HTTP/1.1\r\nHost: node1:10250\r\nConnection: Upgrade\r\nAuthorization: Bearer secret\r\n${extra}\r\n`;

describe('StreamingServer', () => {
  it('proxies an SPDY exec upgrade to the runtime URL and pipes bytes both ways', async () => {
    const c = raw(
      upgradeHead(
        '/exec/default/web/main?command=cat&command=-&input=1&output=1',
        'Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n',
      ),
    );
    const answer = await c.waitFor('\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    expect(answer).toContain('X-Stream-Protocol-Version: v4.channel.k8s.io');
    c.socket.write('hello');
    await c.waitFor('HELLO');
    c.socket.destroy();

    expect(cri.streamingCalls()).toEqual([
      {
        method: 'Exec',
        token: 't1',
        id: ids.containerId,
        cmd: ['cat', '-'],
        tty: false,
        stdin: true,
        stdout: true,
        stderr: false,
        ports: [],
      },
    ]);
    expect(seen[0]?.url).toBe('/exec/t1');
    expect(seen[0]?.headers.upgrade).toBe('SPDY/3.1');
    expect(seen[0]?.headers['x-stream-protocol-version']).toBe('v4.channel.k8s.io, v3.channel.k8s.io');
    // The client's credentials are for the kubelet, not the runtime.
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });

  it('takes the API server spelling (stdin=true) and drops stderr with a TTY, via the uid path', async () => {
    const c = raw(
      upgradeHead(
        '/exec/default/web/uid-web/main?command=sh&stdin=true&stdout=true&stderr=true&tty=true',
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n',
      ),
    );
    const answer = await c.waitFor('\r\n\r\n');
    expect(answer).toContain('Sec-WebSocket-Protocol: v5.channel.k8s.io');
    c.socket.destroy();
    expect(cri.streamingCalls()[0]).toMatchObject({
      cmd: ['sh'],
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
    });
  });

  it('proxies attach and a WebSocket port forward with its ports', async () => {
    const a = raw(
      upgradeHead(
        '/attach/default/web/main?output=1',
        'Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n',
      ),
    );
    await a.waitFor('101 Switching');
    a.socket.destroy();
    const p = raw(
      upgradeHead(
        '/portForward/default/web?port=8080&port=9090',
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: portforward.k8s.io\r\n',
      ),
    );
    await p.waitFor('Sec-WebSocket-Protocol: portforward.k8s.io');
    p.socket.write('ping');
    await p.waitFor('PING');
    p.socket.destroy();
    const calls = cri.streamingCalls();
    expect(calls.map((x) => [x.method, x.id, x.ports])).toEqual([
      ['Attach', ids.containerId, []],
      ['PortForward', ids.sandboxId, [8080, 9090]],
    ]);
    expect(seen.map((s) => s.url)).toEqual(['/attach/t1', '/portforward/t2']);
  });

  it("relays the runtime's refusal of an upgrade unchanged", async () => {
    const c = raw(upgradeHead('/exec/default/web/main?command=refuse&output=1', 'Upgrade: SPDY/3.1\r\n'));
    await new Promise((r) => c.socket.once('close', r));
    expect(c.received()).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(c.received()).toContain('unable to upgrade: no supported protocol');
  });

  it('relays a plain (non-upgrade) request and its answer', async () => {
    const res = await fetch(`http://127.0.0.1:${base.port}/exec/default/web/main?command=ls&output=1`, {
      method: 'POST',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('Upgrade request required');
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/exec/t1' });
  });

  it.each([
    ['/exec/default/nope/main?command=ls&output=1', 404, 'pod does not exist'],
    ['/exec/default/web/nope?command=ls&output=1', 404, 'container not found ("nope")'],
    ['/exec/default/web/other-uid/main?command=ls&output=1', 404, 'container not found ("main")'],
    ['/portForward/other/web', 404, 'pod does not exist'],
    ['/exec/default/web/main?command=ls', 400, 'you must specify at least 1 of stdin, stdout, stderr'],
    ['/exec/default/web/main?output=1', 400, 'you must specify a command'],
    ['/portForward/default/web?port=http', 400, 'invalid port "http"'],
    ['/exec/default', 404, '404 page not found'],
  ])('answers %s with %i', async (path, status, message) => {
    const c = raw(upgradeHead(path, 'Upgrade: SPDY/3.1\r\n'));
    await new Promise((r) => c.socket.once('close', r));
    expect(c.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(c.received()).toContain(message);
    expect(seen).toEqual([]);
  });

  it('answers plain requests for unknown pods with 404', async () => {
    const res = await fetch(`http://127.0.0.1:${base.port}/attach/default/nope/main?output=1`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('pod does not exist\n');
  });

  it('/run runs ExecSync with the cmd form value and answers its output', async () => {
    cri.onExec('echo hi there', () => ({ stdout: 'hi there\n', stderr: 'warn\n' }));
    cri.onExec('sh -c exit', () => ({ stderr: 'bye', exitCode: 3 }));
    const url = `http://127.0.0.1:${base.port}/run/default/web/main`;
    const ok = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'cmd=echo+hi++there',
    });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('hi there\nwarn\n');
    const query = await fetch(`${url}?cmd=${encodeURIComponent('echo hi there')}`, { method: 'POST' });
    expect(await query.text()).toBe('hi there\nwarn\n');

    const failed = await fetch(`${url}?cmd=${encodeURIComponent('sh -c exit')}`, { method: 'POST' });
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe("command 'sh -c exit' exited with 3: bye\n");

    expect((await fetch(`${url}?cmd=ls`)).status).toBe(405);
    expect((await fetch(url, { method: 'POST' })).status).toBe(400);
    expect(
      (await fetch(`http://127.0.0.1:${base.port}/run/default/web/nope?cmd=ls`, { method: 'POST' })).status,
    ).toBe(404);
  });

  it('leaves the other endpoints alone', async () => {
    expect((await fetch(`http://127.0.0.1:${base.port}/pods`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${base.port}/pods`, { method: 'POST' })).status).toBe(405);
  });
});
