import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import { RealClock } from '@kubelet-kit/core';
import { InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProbeError } from '../src/errors.js';
import {
  AbortWatch,
  httpProbe,
  maxRespBodyLength,
  prepareHttpTarget,
  runHttpProbe,
} from '../src/probe/http.js';
import { buildProbeHttpTarget, ProbeHttpError, probeHttpGet } from '../src/probe/http-client.js';
import { newProbeRequest } from '../src/probe/http-request.js';
import { Prober } from '../src/prober.js';

/**
 * A raw TCP server: each path answers with the given pieces, written one at a time (so that
 * parsing across reads is exercised); `null` ends the connection, 'hang' leaves it open.
 */
type Script = Array<string | Buffer | null> | 'hang';
const scripts = new Map<string, Script>();
const requests: string[] = [];
let server: net.Server;
let port = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let head = '';
    socket.on('data', async (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      requests.push(head);
      const path = head.split(' ')[1] ?? '/';
      const script = scripts.get(path) ?? ['HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n', null];
      if (script === 'hang') return;
      for (const piece of script) {
        if (piece === null) {
          socket.end();
          return;
        }
        socket.write(piece);
        // A separate read on the client side for each piece.
        await new Promise((r) => setTimeout(r, 5));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

function probe(path: string, headers: Array<[string, string]> = [], timeoutMs = 5_000) {
  const request = newProbeRequest(new URL(`http://127.0.0.1:${port}${path}`), headers);
  return httpProbe({ request, timeoutMs, clock: new RealClock() });
}

describe('the probe HTTP client against a raw server', () => {
  it('parses a status line and headers split across reads, and a Content-Length body in pieces', async () => {
    scripts.set('/split', ['HTTP/1.1 200 O', 'K\r\nContent-Le', 'ngth: 11\r\n\r', '\nhello', ' world', null]);
    expect(await probe('/split')).toEqual({ result: 'Success', output: 'hello world' });
  });

  it('decodes a chunked body, chunk extensions and pieces across reads included', async () => {
    scripts.set('/chunked', [
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
      '5;ext=1\r\nhel',
      'lo\r\n',
      '6\r\n worl',
      'd\r\n0\r\n\r\n',
    ]);
    expect(await probe('/chunked')).toEqual({ result: 'Success', output: 'hello world' });
  });

  it('reads a body without length until the server closes', async () => {
    scripts.set('/close', ['HTTP/1.0 200 OK\r\n\r\n', 'until ', 'close', null]);
    expect(await probe('/close')).toEqual({ result: 'Success', output: 'until close' });
  });

  it('truncates a long body at 10 KiB without an error (Content-Length, chunked, until close)', async () => {
    const big = 'y'.repeat(30 * 1024);
    scripts.set('/big-length', [`HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n`, big, 'hang-on']);
    scripts.set('/big-chunked', [
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
      `${(big.length).toString(16)}\r\n${big}\r\n`,
    ]);
    scripts.set('/big-close', ['HTTP/1.1 200 OK\r\n\r\n', big, big]);
    for (const path of ['/big-length', '/big-chunked', '/big-close']) {
      const r = await probe(path);
      expect(r.result).toBe('Success');
      expect(r.output).toBe('y'.repeat(maxRespBodyLength));
    }
  });

  it('skips 1xx informational responses', async () => {
    scripts.set('/continue', [
      'HTTP/1.1 100 Continue\r\n\r\n',
      'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n',
      'HTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nx',
    ]);
    expect(await probe('/continue')).toEqual({
      result: 'Failure',
      output: 'HTTP probe failed with statuscode: 500',
    });
  });

  it('sends the request line and headers as upstream: Host, custom headers in order, Connection: close', async () => {
    scripts.set('/h?q=1', ['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']);
    requests.length = 0;
    await probe('/h?q=1', [
      ['X-A', '1'],
      ['X-A', '2'],
      ['Host', 'example.com:81'],
      ['Host', 'ignored'],
    ]);
    expect(requests[0]).toBe(
      'GET /h?q=1 HTTP/1.1\r\nHost: example.com:81\r\nX-A: 1\r\nX-A: 2\r\n' +
        'User-Agent: kube-probe/1.34\r\nAccept: */*\r\nConnection: close\r\n\r\n',
    );
  });

  it('an empty User-Agent sends none, an empty Host keeps the URL host (upstream TestHTTPProbeChecker)', async () => {
    scripts.set('/empty', ['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']);
    requests.length = 0;
    // Go's request writer skips an empty User-Agent, and an empty Host header leaves req.Host unset.
    await probe('/empty', [
      ['User-Agent', ''],
      ['Host', ''],
      ['Host', 'ignored'],
    ]);
    expect(requests[0]).toBe(
      `GET /empty HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: */*\r\nConnection: close\r\n\r\n`,
    );
  });

  it('drops a Host override on an absolute redirect, keeps it on a relative one', async () => {
    scripts.set('/rel', ['HTTP/1.1 302 Found\r\nLocation: /abs\r\nContent-Length: 0\r\n\r\n']);
    scripts.set('/abs', [
      `HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:${port}/end\r\nContent-Length: 0\r\n\r\n`,
    ]);
    scripts.set('/end', ['HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone']);
    requests.length = 0;
    expect(await probe('/rel', [['Host', 'example.com']])).toEqual({ result: 'Success', output: 'done' });
    const hosts = requests.map((r) => /\r\nHost: ([^\r]*)/.exec(r)?.[1]);
    expect(hosts).toEqual(['example.com', 'example.com', `127.0.0.1:${port}`]);
  });

  it('a server closing before any response is a failure with EOF; a malformed status line too', async () => {
    scripts.set('/eof', [null]);
    expect(await probe('/eof')).toEqual({
      result: 'Failure',
      output: `Get "http://127.0.0.1:${port}/eof": EOF`,
    });
    scripts.set('/garbage', ['SSH-2.0-OpenSSH\r\n\r\n', null]);
    expect(await probe('/garbage')).toEqual({
      result: 'Failure',
      output: `Get "http://127.0.0.1:${port}/garbage": malformed HTTP response "SSH-2.0-OpenSSH"`,
    });
  });

  it('a body cut short is an error (retried by the prober), not a failure', async () => {
    scripts.set('/short', ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', null]);
    await expect(probe('/short')).rejects.toThrow(ProbeError);
    await expect(probe('/short')).rejects.toThrow('unexpected EOF');
    scripts.set('/bad-chunk', ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', 'zz\r\n']);
    await expect(probe('/bad-chunk')).rejects.toThrow('malformed chunked encoding');
  });

  it('the errored event of a body cut short names the failure state (upstream prober.probe)', async () => {
    scripts.set('/short2', ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', null]);
    const recorder = new InMemoryEventRecorder();
    const prober = new Prober({
      runner: { runInContainer: () => Promise.reject(new Error('no exec')) },
      clock: new RealClock(),
      recorder,
    });
    const container = { name: 'app', readinessProbe: { httpGet: { path: '/short2', port } } };
    const pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1' }, spec: { containers: [container] } };
    await expect(
      prober.probe('Readiness', pod, { podIP: '127.0.0.1' }, container, 'containerd://abc'),
    ).rejects.toThrow('unexpected EOF');
    // DoHTTPProbe returns Failure with the read error, so the event says "failure state", not "unknown".
    expect(recorder.events.map((e) => e.message)).toEqual([
      'Readiness probe errored and resulted in failure state: unexpected EOF',
    ]);
  });

  it('a header value with a line break is a failure before anything is sent', async () => {
    expect(await probe('/x', [['X-Bad', 'a\r\nInjected: 1']])).toEqual({
      result: 'Failure',
      output: `Get "http://127.0.0.1:${port}/x": net/http: invalid header field value for "X-Bad"`,
    });
  });

  it('a server that never answers hits the timeout', async () => {
    scripts.set('/hang', 'hang');
    expect(await probe('/hang', [], 50)).toEqual({
      result: 'Failure',
      output: `Get "http://127.0.0.1:${port}/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
  });

  it('an abort of the caller signal cuts the probe short (shared read buffer and abort watch)', async () => {
    scripts.set('/hang2', 'hang');
    const request = newProbeRequest(new URL(`http://127.0.0.1:${port}/hang2`), []);
    const controller = new AbortController();
    const context = { readBuffer: Buffer.alloc(16 * 1024), aborts: new AbortWatch() };
    const pending = runHttpProbe(
      { request, timeoutMs: 5_000, clock: new RealClock(), signal: controller.signal },
      prepareHttpTarget(request),
      context,
    );
    setTimeout(() => controller.abort(), 20);
    expect(await pending).toEqual({
      result: 'Failure',
      output: `Get "http://127.0.0.1:${port}/hang2": context canceled`,
    });
  });

  it('the shared read buffer serves concurrent requests', async () => {
    for (let i = 0; i < 20; i++) {
      const id = String(i).padStart(2, '0');
      scripts.set(`/p${i}`, [
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
        `2\r\n${id}`,
        '\r\n0\r\n\r\n',
      ]);
    }
    const buffer = Buffer.alloc(16 * 1024);
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const url = new URL(`http://127.0.0.1:${port}/p${i}`);
        const target = buildProbeHttpTarget(url, []);
        return (await probeHttpGet(target, { bodyLimit: 100, readBuffer: buffer }).response).body;
      }),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => String(i).padStart(2, '0')));
  });

  it('a refused connection fails in the headers phase', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const target = buildProbeHttpTarget(new URL(`http://127.0.0.1:${deadPort}/`), []);
    const err = await probeHttpGet(target, { bodyLimit: 10 }).response.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeHttpError);
    expect((err as ProbeHttpError).phase).toBe('headers');
    expect((err as Error).message).toContain('ECONNREFUSED');
  });
});

describe('the probe HTTP client against node:http and node:https', () => {
  it('speaks HTTPS to a self-signed server with SNI for a host name', async () => {
    let servername: string | undefined;
    const secure = https.createServer(
      {
        key: readFileSync(new URL('./fixtures/tls.key', import.meta.url)),
        cert: readFileSync(new URL('./fixtures/tls.crt', import.meta.url)),
      },
      (req, res) => {
        servername = (req.socket as import('node:tls').TLSSocket).servername || undefined;
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('chunk-1 ');
        res.end('chunk-2');
      },
    );
    await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
    const securePort = (secure.address() as AddressInfo).port;
    try {
      const byName = newProbeRequest(new URL(`https://localhost:${securePort}/`), []);
      const r = await httpProbe({ request: byName, timeoutMs: 5_000, clock: new RealClock() });
      expect(r).toEqual({ result: 'Success', output: 'chunk-1 chunk-2' });
      expect(servername).toBe('localhost');
    } finally {
      secure.closeAllConnections();
      await new Promise((r) => secure.close(r));
    }
  });

  it('node:http chunked responses and status codes', async () => {
    const plain = http.createServer((req, res) => {
      if (req.url === '/teapot') {
        res.writeHead(418);
        res.end('short and stout');
        return;
      }
      res.write('a');
      res.write('b');
      res.end('c');
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const p = (plain.address() as AddressInfo).port;
    try {
      const ok = newProbeRequest(new URL(`http://127.0.0.1:${p}/`), []);
      expect(await httpProbe({ request: ok, timeoutMs: 5_000, clock: new RealClock() })).toEqual({
        result: 'Success',
        output: 'abc',
      });
      const teapot = newProbeRequest(new URL(`http://127.0.0.1:${p}/teapot`), []);
      expect(await httpProbe({ request: teapot, timeoutMs: 5_000, clock: new RealClock() })).toEqual({
        result: 'Failure',
        output: 'HTTP probe failed with statuscode: 418',
      });
    } finally {
      plain.closeAllConnections();
      await new Promise((r) => plain.close(r));
    }
  });
});
