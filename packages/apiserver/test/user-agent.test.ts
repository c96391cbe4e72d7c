import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KUBELET_COMPATIBLE_VERSION, kubeletUserAgent, setUserAgent, VERSION } from '../src/index.js';

// The User-Agent reaches the API server on plain requests and on watches, against a local HTTP
// server that records it. (No real API server runs on these machines.)

describe('kubeletUserAgent', () => {
  it.each([
    ['linux', 'x64', 'kubelet/v1.34.0 (linux/amd64) kubelet-kit/1.2.3'],
    ['linux', 'arm64', 'kubelet/v1.34.0 (linux/arm64) kubelet-kit/1.2.3'],
    ['linux', 'ia32', 'kubelet/v1.34.0 (linux/386) kubelet-kit/1.2.3'],
    ['win32', 'x64', 'kubelet/v1.34.0 (windows/amd64) kubelet-kit/1.2.3'],
    ['darwin', 'arm64', 'kubelet/v1.34.0 (darwin/arm64) kubelet-kit/1.2.3'],
  ])('has upstream shape with Go names on %s/%s', (platform, arch, want) => {
    expect(kubeletUserAgent({ platform, arch, kitVersion: '1.2.3' })).toBe(want);
  });

  it('takes another command and version', () => {
    expect(
      kubeletUserAgent({
        command: 'edge',
        kubernetesVersion: 'v1.33.2',
        platform: 'linux',
        arch: 'x64',
        kitVersion: '0.1.0',
      }),
    ).toBe('edge/v1.33.2 (linux/amd64) kubelet-kit/0.1.0');
    expect(KUBELET_COMPATIBLE_VERSION).toBe('v1.34.0');
  });
});

describe('setUserAgent', () => {
  let server: http.Server;
  let seen: Array<{ path: string; watch: boolean; userAgent: string | undefined }>;
  let kc: KubeConfig;
  const watchers: http.ServerResponse[] = [];

  beforeEach(async () => {
    seen = [];
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const watch = url.searchParams.get('watch') === 'true';
      seen.push({ path: url.pathname, watch, userAgent: req.headers['user-agent'] });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (watch) {
        res.flushHeaders();
        watchers.push(res);
        res.write(`${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', metadata: { name: 'a' } } })}\n`);
        return;
      }
      res.end(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', metadata: { name: 'a', namespace: 'ns' } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      { name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true },
      { name: 'u' },
    );
  });

  afterEach(async () => {
    for (const w of watchers.splice(0)) w.end();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const ua = kubeletUserAgent({ kitVersion: VERSION });

  async function getAndWatch(config: KubeConfig): Promise<void> {
    await config.makeApiClient(CoreV1Api).readNamespacedPod({ name: 'a', namespace: 'ns' });
    let resolveEvent!: () => void;
    const event = new Promise<void>((r) => {
      resolveEvent = r;
    });
    const req = await new Watch(config).watch(
      '/api/v1/pods',
      {},
      () => resolveEvent(),
      () => {},
    );
    await event;
    req.abort();
  }

  it("sends client-node's default without it", async () => {
    await getAndWatch(kc);
    expect(seen.map((s) => s.userAgent)).not.toContain(ua);
  });

  it('sends the User-Agent on a GET of a generated client and on a watch', async () => {
    setUserAgent(kc, ua);
    await getAndWatch(kc);
    expect(seen).toEqual([
      { path: '/api/v1/namespaces/ns/pods/a', watch: false, userAgent: ua },
      { path: '/api/v1/pods', watch: true, userAgent: ua },
    ]);
    expect(ua).toMatch(/^kubelet\/v1\.34\.0 \([a-z0-9]+\/[a-z0-9]+\) kubelet-kit\/\d+\.\d+\.\d+$/);
  });

  it('replaces the User-Agent when set again, without wrapping twice', async () => {
    setUserAgent(kc, 'first/v1');
    setUserAgent(kc, ua);
    await getAndWatch(kc);
    expect(seen.map((s) => s.userAgent)).toEqual([ua, ua]);
  });
});
