// The in-memory API server's pod subresources reach the kubelet's HTTPS port with the API
// server's client certificate (upstream --kubelet-client-certificate); without one the kubelet
// answers 401, which the API server passes back.
import fs from 'node:fs';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import type { UserInfo } from '@kubelet-kit/core';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer } from '../src/server.js';
import { KubeletAuth } from '../src/server-auth.js';
import { selfSignedPair } from '../src/server-tls.js';
import { makeTestCa, type TestCa } from './test-ca.js';

describe('API server → kubelet over HTTPS with a client certificate', () => {
  let ca: TestCa;
  let kubelet: KubeletServer;
  let port: number;
  const users: UserInfo[] = [];

  beforeAll(async () => {
    ca = makeTestCa('/O=system:masters/CN=kube-apiserver-kubelet-client');
    kubelet = new KubeletServer({
      port: 0,
      pods: () => [],
      healthChecks: [],
      registry: new KubeletMetrics(new Registry()).registry,
      logger: noopLogger,
      tls: { ...selfSignedPair('n1', [], 0), ca: fs.readFileSync(ca.caFile) },
      auth: new KubeletAuth({
        nodeName: 'n1',
        x509: true,
        anonymous: false,
        authorizationMode: 'Webhook',
        reviewSubjectAccess: async (u) => {
          users.push(u);
          return { allowed: true };
        },
        clock: new FakeClock(),
        logger: noopLogger,
      }),
    });
    port = (await kubelet.start()).port;
  });
  afterAll(async () => {
    await kubelet.stop();
    fs.rmSync(ca.dir, { recursive: true, force: true });
  });

  async function logStatus(api: FakeApiServer): Promise<number> {
    await api.start();
    try {
      api.create({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n1' },
        status: {
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
          daemonEndpoints: { kubeletEndpoint: { Port: port } },
        },
      });
      api.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'default' },
        spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'i' }] },
      });
      return (await fetch(`${api.url}/api/v1/namespaces/default/pods/web/log`)).status;
    } finally {
      await api.stop();
    }
  }

  it('is 401 without the client certificate', async () => {
    expect(await logStatus(new FakeApiServer({ kubeletScheme: 'https' }))).toBe(401);
    expect(users).toEqual([]);
  });

  it('authenticates the API server by its certificate, checked as nodes/proxy', async () => {
    const status = await logStatus(
      new FakeApiServer({ kubeletScheme: 'https', kubeletClientCertificate: ca.client }),
    );
    expect(status).not.toBe(401);
    expect(users.map((u) => u.name)).toEqual(['kube-apiserver-kubelet-client']);
  });
});
