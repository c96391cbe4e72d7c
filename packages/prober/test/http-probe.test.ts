import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { RealClock } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpProbe, maxRespBodyLength } from '../src/probe/http.js';
import { getProbeUrl, newProbeRequest, newRequestForHTTPGetAction } from '../src/probe/http-request.js';

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
}

let server: http.Server;
let port = 0;
const seen: Seen[] = [];
let arrived: (() => void) | undefined;
let redirectTo = '';

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  seen.push({ path: url.pathname, headers: req.headers });
  const code = url.pathname.match(/^\/code\/(\d+)$/);
  if (code) {
    res.writeHead(Number(code[1]));
    res.end(`body of ${code[1]}`);
  } else if (url.pathname === '/redirect-same') {
    res.writeHead(302, { location: '/code/200' });
    res.end();
  } else if (url.pathname === '/redirect-fail') {
    res.writeHead(301, { location: `http://127.0.0.1:${port}/code/500` });
    res.end();
  } else if (url.pathname === '/redirect-other') {
    res.writeHead(302, { location: `http://localhost:${port}/code/500` });
    res.end('moved away');
  } else if (url.pathname === '/to-port') {
    res.writeHead(302, { location: redirectTo });
    res.end();
  } else if (url.pathname === '/loop') {
    res.writeHead(302, { location: '/loop' });
    res.end();
  } else if (url.pathname === '/big') {
    res.writeHead(200);
    res.end('x'.repeat(100 * 1024));
  } else if (url.pathname === '/hang') {
    arrived?.();
  } else {
    res.writeHead(200);
    res.end('ok');
  }
}

beforeAll(async () => {
  server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function probe(
  path: string,
  headers: Array<[string, string]> = [],
  clock = new RealClock(),
  timeoutMs = 5_000,
) {
  const request = newProbeRequest(new URL(`http://127.0.0.1:${port}${path}`), headers);
  return httpProbe({ request, timeoutMs, clock });
}

describe('httpProbe (upstream TestHTTPProbeChecker)', () => {
  const cases: Array<[number, string]> = [
    [200, 'Success'],
    [204, 'Success'],
    [299, 'Success'],
    [300, 'Warning'],
    [399, 'Warning'],
    [400, 'Failure'],
    [404, 'Failure'],
    [500, 'Failure'],
  ];
  for (const [code, result] of cases) {
    it(`status ${code} is ${result}`, async () => {
      const r = await probe(`/code/${code}`);
      expect(r.result).toBe(result);
      if (result === 'Success') expect(r.output).toBe(code === 204 ? '' : `body of ${code}`);
      if (result === 'Warning')
        expect(r.output).toBe(`Probe terminated redirects, Response body: body of ${code}`);
      if (result === 'Failure') expect(r.output).toBe(`HTTP probe failed with statuscode: ${code}`);
    });
  }

  it('follows a redirect on the same host', async () => {
    expect(await probe('/redirect-same')).toEqual({ result: 'Success', output: 'body of 200' });
    expect(await probe('/redirect-fail')).toEqual({
      result: 'Failure',
      output: 'HTTP probe failed with statuscode: 500',
    });
  });

  it('follows a redirect to another port of the same host (TestHTTPProbeChecker_NonLocalRedirects "newport")', async () => {
    // Only the host name decides what is local, not the port.
    const other = http.createServer(handler);
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as AddressInfo).port;
    try {
      for (const [path, want] of [
        ['/code/200', { result: 'Success', output: 'body of 200' }],
        ['/code/500', { result: 'Failure', output: 'HTTP probe failed with statuscode: 500' }],
      ] as const) {
        const request = newProbeRequest(new URL(`http://127.0.0.1:${port}/to-port`), []);
        redirectTo = `http://127.0.0.1:${otherPort}${path}`;
        expect(await httpProbe({ request, timeoutMs: 5_000, clock: new RealClock() })).toEqual(want);
      }
    } finally {
      other.closeAllConnections();
      await new Promise((r) => other.close(r));
    }
  });

  it('does not follow a redirect to another host: the 3xx is a warning (TestHTTPProbeChecker_NonLocalRedirects)', async () => {
    seen.length = 0;
    const r = await probe('/redirect-other');
    expect(r).toEqual({ result: 'Warning', output: 'Probe terminated redirects, Response body: moved away' });
    expect(seen.map((s) => s.path)).toEqual(['/redirect-other']);
  });

  it('follows another host when followNonLocalRedirects is set', async () => {
    const request = newProbeRequest(new URL(`http://127.0.0.1:${port}/redirect-other`), []);
    const r = await httpProbe({
      request,
      timeoutMs: 5_000,
      clock: new RealClock(),
      followNonLocalRedirects: true,
    });
    expect(r.output).toBe('HTTP probe failed with statuscode: 500');
  });

  it('stops after 10 requests of a redirect loop, as a failure', async () => {
    seen.length = 0;
    const r = await probe('/loop');
    expect(r.result).toBe('Failure');
    expect(r.output).toBe(`Get "http://127.0.0.1:${port}/loop": stopped after 10 redirects`);
    expect(seen).toHaveLength(10);
  });

  it('reads at most 10 KiB of the body, without an error (TestHTTPProbeChecker_PayloadTruncated)', async () => {
    const r = await probe('/big');
    expect(r.result).toBe('Success');
    expect(r.output).toHaveLength(maxRespBodyLength);
  });

  it('sends kube-probe/1.34, Accept */*, custom headers and a Host override', async () => {
    seen.length = 0;
    await probe('/headers', [
      ['X-Custom', 'a'],
      ['X-Custom', 'b'],
      ['Host', 'example.com'],
    ]);
    const h = seen[0]!.headers;
    expect(h['user-agent']).toBe('kube-probe/1.34');
    expect(h.accept).toBe('*/*');
    expect(h['x-custom']).toBe('a, b');
    expect(h.host).toBe('example.com');
    expect(h.connection).toBe('close');
  });

  it('keeps a given User-Agent and drops an empty Accept (TestHTTPHeaders)', async () => {
    seen.length = 0;
    await probe('/headers', [
      ['User-Agent', 'mine/1'],
      ['Accept', ''],
    ]);
    const h = seen[0]!.headers;
    expect(h['user-agent']).toBe('mine/1');
    expect(h.accept).toBeUndefined();
  });

  it('a timeout on the injected clock is a failure, not an error', async () => {
    const clock = new FakeClock();
    const came = new Promise<void>((r) => {
      arrived = r;
    });
    const pending = probe('/hang', [], clock, 1_000);
    await came;
    clock.advance(999);
    clock.advance(1);
    const r = await pending;
    expect(r.result).toBe('Failure');
    expect(r.output).toBe(
      `Get "http://127.0.0.1:${port}/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    );
  });

  it('a refused connection is a failure with the transport error', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const request = newProbeRequest(new URL(`http://127.0.0.1:${deadPort}/`), []);
    const r = await httpProbe({ request, timeoutMs: 5_000, clock: new RealClock() });
    expect(r.result).toBe('Failure');
    expect(r.output).toContain('ECONNREFUSED');
  });

  it('speaks HTTPS without checking the certificate', async () => {
    const secure = https.createServer(
      {
        key: readFileSync(new URL('./fixtures/tls.key', import.meta.url)),
        cert: readFileSync(new URL('./fixtures/tls.crt', import.meta.url)),
      },
      (_req, res) => {
        res.writeHead(200);
        res.end('secure');
      },
    );
    await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
    const securePort = (secure.address() as AddressInfo).port;
    const request = newRequestForHTTPGetAction(
      { scheme: 'HTTPS', port: 'https', path: '/healthz' },
      { name: 'c', ports: [{ name: 'https', containerPort: securePort }] },
      '127.0.0.1',
    );
    const r = await httpProbe({ request, timeoutMs: 5_000, clock: new RealClock() });
    secure.closeAllConnections();
    await new Promise((r) => secure.close(r));
    expect(r).toEqual({ result: 'Success', output: 'secure' });
  });
});

describe('probe URLs (upstream TestGetURLParts)', () => {
  const container = { name: 'c', ports: [{ name: 'found', containerPort: 93 }] };
  const cases: Array<[Parameters<typeof getProbeUrl>[0], string | null]> = [
    // WHATWG URLs leave a scheme's default port out.
    [{ port: 80 }, 'http://1.2.3.4/'],
    [{ port: 8080, host: '', path: '' }, 'http://1.2.3.4:8080/'],
    [{ port: 8080, host: 'hostname', path: '/x' }, 'http://hostname:8080/x'],
    [{ port: 'found', scheme: 'HTTPS', path: '/ready?a=1' }, 'https://1.2.3.4:93/ready?a=1'],
    [{ port: '81', path: 'relative' }, 'http://1.2.3.4:81/relative'],
    [{ port: 'not-found' }, null],
    [{ port: -1 }, null],
    [{ port: 65536 }, null],
  ];
  for (const [action, want] of cases) {
    it(`${JSON.stringify(action)} -> ${want ?? 'error'}`, () => {
      if (want === null) expect(() => getProbeUrl(action, container, '1.2.3.4')).toThrow();
      else expect(getProbeUrl(action, container, '1.2.3.4').href).toBe(want);
    });
  }

  it('brackets an IPv6 pod IP', () => {
    expect(getProbeUrl({ port: 81 }, container, 'fd00::1').href).toBe('http://[fd00::1]:81/');
  });
});
