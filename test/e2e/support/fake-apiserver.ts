// A small local API server for e2e tests that run the agent in kubeconfig mode (no real API
// server runs on these machines): it lists and watches pods (ignoring the field selector, as a
// misbehaving server would), serves this node and RuntimeClasses, no Services (the agent waits
// for their first list before starting API pods' containers), and takes status patches.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pod, RuntimeClass } from '@kubelet-kit/core';

export interface FakeApiserver {
  readonly server: http.Server;
  readonly watchers: http.ServerResponse[];
  readonly patched: Map<string, { status?: { phase?: string; reason?: string; message?: string } }>;
  /** Listens on 127.0.0.1 and writes a kubeconfig pointing there; returns its path. */
  listen(kubeconfigPath: string): Promise<string>;
  close(): Promise<void>;
}

export function fakeApiserver(
  nodeName: string,
  pods: Pod[],
  runtimeClasses: readonly RuntimeClass[] = [],
): FakeApiserver {
  const watchers: http.ServerResponse[] = [];
  /** Service watches: kept open, sent nothing (the tests' events are pods). */
  const serviceWatchers: http.ServerResponse[] = [];
  const patched: FakeApiserver['patched'] = new Map();
  const json = (res: http.ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      if (req.method === 'GET' && url.pathname === `/api/v1/nodes/${nodeName}`) {
        json(res, 200, { kind: 'Node', apiVersion: 'v1', metadata: { name: nodeName, uid: 'n1' } });
        return;
      }
      if (req.method === 'GET' && url.pathname === '/api/v1/services') {
        if (url.searchParams.get('watch') === 'true') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          serviceWatchers.push(res);
          return;
        }
        json(res, 200, {
          kind: 'ServiceList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '1' },
          items: [],
        });
        return;
      }
      const list = (
        {
          '/api/v1/pods': { kind: 'PodList', apiVersion: 'v1', items: pods },
          '/apis/node.k8s.io/v1/runtimeclasses': {
            kind: 'RuntimeClassList',
            apiVersion: 'node.k8s.io/v1',
            items: runtimeClasses,
          },
        } as Record<string, { kind: string; apiVersion: string; items: readonly unknown[] }>
      )[url.pathname];
      if (req.method === 'GET' && list) {
        if (url.searchParams.get('watch') === 'true') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          watchers.push(res);
          return;
        }
        json(res, 200, { ...list, metadata: { resourceVersion: '1' } });
        return;
      }
      const status = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/.exec(url.pathname);
      if (req.method === 'PATCH' && status) {
        const name = status[2] ?? '';
        patched.set(name, JSON.parse(body));
        const pod = pods.find((p) => p.metadata?.name === name);
        json(res, pod ? 200 : 404, pod ?? { kind: 'Status', code: 404 });
        return;
      }
      const one = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname);
      const pod = req.method === 'GET' && one ? pods.find((p) => p.metadata?.name === one[2]) : undefined;
      json(res, pod ? 200 : 404, pod ?? { kind: 'Status', code: 404, reason: 'NotFound' });
    });
  });
  return {
    server,
    watchers,
    patched,
    async listen(kubeconfigPath) {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const port = (server.address() as AddressInfo).port;
      fs.writeFileSync(
        kubeconfigPath,
        [
          'apiVersion: v1',
          'kind: Config',
          `clusters:\n- name: local\n  cluster:\n    server: http://127.0.0.1:${port}\n    insecure-skip-tls-verify: true`,
          'users:\n- name: node\n  user:\n    token: t',
          'contexts:\n- name: local\n  context:\n    cluster: local\n    user: node',
          'current-context: local',
          '',
        ].join('\n'),
      );
      return kubeconfigPath;
    },
    async close() {
      for (const w of [...watchers, ...serviceWatchers]) w.end();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
