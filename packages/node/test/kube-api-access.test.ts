import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serviceAccountTokenRequester, TokenManager, WatchingObjectGetter } from '@kubelet-kit/apiserver';
import type { ConfigMap, Pod } from '@kubelet-kit/core';
import { advanceUntil, FakeClock } from '@kubelet-kit/core/testing';
import { BasicVolumeManager } from '@kubelet-kit/volume-manager';
import { FakeMounter } from '@kubelet-kit/volume-manager/testing';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// The agent's token path without the agent: the volume manager with the TokenManager and the
// watch-based object getter it is given with a kubeconfig, against a local HTTP server
// answering TokenRequests and list/watch of the kube-root-ca.crt ConfigMap. A fake mounter
// keeps tmpfs mounts out of the host.

const rootCa = (pem: string, rv: string): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: 'team', name: 'kube-root-ca.crt', resourceVersion: rv },
  data: { 'ca.crt': pem },
});

function fakeApiserver(clock: FakeClock) {
  const state = {
    requests: [] as string[],
    tokenBodies: [] as unknown[],
    issued: 0,
    ca: rootCa('PEM-1', '7'),
    watchers: [] as http.ServerResponse[],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    state.requests.push(`${req.method} ${url.pathname}${url.search}`);
    const json = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && url.pathname === '/api/v1/namespaces/team/serviceaccounts/default/token') {
      let raw = '';
      req.on('data', (d: Buffer) => {
        raw += d.toString();
      });
      req.on('end', () => {
        const body = JSON.parse(raw) as { spec: { expirationSeconds: number } };
        state.tokenBodies.push(body);
        state.issued++;
        json(201, {
          ...body,
          status: {
            token: `jwt-${state.issued}`,
            // Whole seconds, as the API server writes times.
            expirationTimestamp: new Date(clock.now() + body.spec.expirationSeconds * 1000)
              .toISOString()
              .replace(/\.\d+Z$/, 'Z'),
          },
        });
      });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/namespaces/team/configmaps') {
      if (url.searchParams.get('fieldSelector') !== 'metadata.name=kube-root-ca.crt') {
        return json(400, { kind: 'Status', code: 400 });
      }
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        state.watchers.push(res);
        return;
      }
      const { apiVersion: _a, kind: _k, ...item } = state.ca;
      return json(200, {
        kind: 'ConfigMapList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '8' },
        items: [item],
      });
    }
    json(404, { kind: 'Status', code: 404, reason: 'NotFound' });
  });
  const modifyCa = (pem: string, rv: string) => {
    state.ca = rootCa(pem, rv);
    for (const w of state.watchers) w.write(`${JSON.stringify({ type: 'MODIFIED', object: state.ca })}\n`);
  };
  return { server, state, modifyCa };
}

/** A pod as the API server stores it after the ServiceAccount admission plugin. */
function apiPod(): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: 'team', name: 'web', uid: 'uid-web' },
    spec: {
      serviceAccountName: 'default',
      containers: [
        {
          name: 'main',
          image: 'busybox',
          volumeMounts: [
            {
              name: 'kube-api-access-abcde',
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
              readOnly: true,
            },
          ],
        },
      ],
      volumes: [
        {
          name: 'kube-api-access-abcde',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
            ],
          },
        },
      ],
    },
  };
}

describe('the kube-api-access volume through TokenManager and WatchingObjectGetter', () => {
  let clock: FakeClock;
  let api: ReturnType<typeof fakeApiserver>;
  let root: string;
  let tokens: TokenManager;
  let objects: WatchingObjectGetter;
  let vm: BasicVolumeManager;
  let pods: Pod[];

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    api = fakeApiserver(clock);
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'local',
        server: `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'kk-api-access-'));
    tokens = new TokenManager({
      requestToken: serviceAccountTokenRequester(kc.makeApiClient(CoreV1Api)),
      clock,
      random: () => 0,
    });
    objects = new WatchingObjectGetter({ kubeConfig: kc, clock });
    tokens.start();
    objects.start();
    pods = [apiPod()];
    vm = new BasicVolumeManager({
      rootDirectory: root,
      getPods: () => pods,
      clock,
      mounter: new FakeMounter(),
      objectGetter: objects,
      tokenGetter: tokens,
    });
    vm.start();
  });

  afterEach(async () => {
    let stopped = false;
    const stopping = Promise.all([vm.stop(), objects.stop()]).finally(() => {
      stopped = true;
    });
    await advanceUntil(clock, () => stopped);
    await stopping;
    tokens.stop();
    for (const w of api.state.watchers) w.destroy();
    api.server.closeAllConnections();
    await new Promise<void>((r) => api.server.close(() => r()));
    await fs.rm(root, { recursive: true, force: true });
  });

  async function mounted(): Promise<void> {
    let done = false;
    const wait = vm.waitForAttachAndMount(pods[0]!).finally(() => {
      done = true;
    });
    await advanceUntil(clock, () => done);
    await wait;
  }

  const file = (name: string) =>
    fs.readFile(
      path.join(root, 'pods', 'uid-web', 'volumes', 'kubernetes.io~projected', 'kube-api-access-abcde', name),
      'utf8',
    );

  it('mounts token, ca.crt and namespace; refreshes the token past 80 % of its TTL; forgets it with the pod', async () => {
    await mounted();
    expect(await file('token')).toBe('jwt-1');
    expect(await file('ca.crt')).toBe('PEM-1');
    expect(await file('namespace')).toBe('team');
    expect(api.state.tokenBodies).toEqual([
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: [],
          expirationSeconds: 3607,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-web' },
        },
      },
    ]);
    expect(api.state.requests).toContain(
      'GET /api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dkube-root-ca.crt',
    );

    // A pod sync within the token's first 80 %: the cached token, no new request.
    clock.setTime(clock.now() + 40 * 60_000);
    await mounted();
    expect(api.state.issued).toBe(1);
    // Past 80 % of 3607 s (2886 s): the next sync's re-projection writes a fresh token.
    clock.setTime(clock.now() + 10 * 60_000);
    await mounted();
    await advanceUntil(clock, async () => (await file('token')) === 'jwt-2');
    expect(api.state.issued).toBe(2);

    // A CA change arrives through the watch and reaches the file on the next re-projection.
    await advanceUntil(clock, () => api.state.watchers.length > 0);
    api.modifyCa('PEM-2', '9');
    await advanceUntil(clock, async () => {
      vm.reprocessPod('uid-web');
      return (await file('ca.crt')) === 'PEM-2';
    });
    expect(api.state.requests.filter((r) => r.startsWith('GET /api/v1/namespaces/team/configmaps/'))).toEqual(
      [],
    );

    expect(tokens.size).toBe(1);
    const gone = pods[0]!;
    pods = [];
    let unmounted = false;
    const wait = vm.waitForUnmount(gone).finally(() => {
      unmounted = true;
    });
    await advanceUntil(clock, () => unmounted);
    await wait;
    expect(tokens.size).toBe(0);
  });
});
