// End to end: the kubelet API off loopback. `kubelet-kit run --kubeconfig` with a client CA,
// the token webhook and the Webhook authorizer serves HTTPS (a self-signed certificate made at
// start); the in-memory API server's TokenReview and SubjectAccessReview hooks decide.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/kubelet-auth.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCa, type TestCa } from '../../packages/node/test/test-ca.js';
import { type AgentProcess, startAgent } from './support/agent-process.js';

const nodeName = `e2e-auth-${randomBytes(3).toString('hex')}`;

function get(
  port: number,
  urlPath: string,
  o: { token?: string; cert?: { key: Buffer; cert: Buffer } } = {},
): Promise<{ status: number; body: string; peer: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        rejectUnauthorized: false,
        ...(o.cert ?? {}),
        headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        const peer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN ?? '';
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, peer: String(peer) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('kubelet-kit run: the kubelet API with authentication and authorization', () => {
  let dir: string;
  let api: FakeApiServer;
  let agent: AgentProcess;
  let port: number;
  let ca: TestCa;
  const asked: { user: string; verb?: string; subresource?: string }[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-e2e-auth-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
    ca = makeTestCa('/O=ops/CN=operator');
    api = new FakeApiServer({
      tokenReview: (token) =>
        token === 'allowed-token'
          ? { username: 'reader', groups: ['readers'] }
          : token === 'refused-token'
            ? { username: 'outsider' }
            : undefined,
      accessReview: (req) => {
        asked.push({
          user: req.user,
          verb: req.resourceAttributes?.verb,
          subresource: req.resourceAttributes?.subresource,
        });
        return req.user === 'reader' || req.user === 'operator';
      },
    });
    await api.start();
    const kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    agent = await startAgent({
      nodeName,
      manifestDir: path.join(dir, 'manifests'),
      rootDir: path.join(dir, 'root'),
      args: [
        '--kubeconfig',
        kubeconfig,
        '--client-ca-file',
        ca.caFile,
        '--authentication-token-webhook',
        '--authorization-mode',
        'Webhook',
      ],
    });
    const line = agent.logs.find((l) => l.msg === 'serving /healthz, /pods, /metrics');
    expect(line?.scheme).toBe('https');
    port = Number(line?.port);
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await api?.stop();
    if (ca) fs.rmSync(ca.dir, { recursive: true, force: true });
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves a self-signed certificate kept in <root-dir>/pki', async () => {
    const r = await get(port, '/healthz');
    expect(r.peer).toMatch(new RegExp(`^${nodeName}@\\d+$`));
    expect(fs.existsSync(path.join(dir, 'root', 'pki', 'kubelet.crt'))).toBe(true);
  });

  it('answers 401 without a client certificate or token, and with an unknown token', async () => {
    expect(await get(port, '/pods')).toMatchObject({ status: 401, body: 'Unauthorized' });
    expect(await get(port, '/pods', { token: 'nobody-knows' })).toMatchObject({ status: 401 });
    expect(await get(port, '/pods', { cert: ca.stranger })).toMatchObject({ status: 401 });
  });

  it('answers 403 for a token the authorizer refuses, naming the subresources', async () => {
    expect(await get(port, '/pods', { token: 'refused-token' })).toMatchObject({
      status: 403,
      body: 'Forbidden (user=outsider, verb=get, resource=nodes, subresource(s)=[pods proxy])\n',
    });
  });

  it('answers 200 for an allowed token and for a client certificate of the client CA', async () => {
    const byToken = await get(port, '/pods', { token: 'allowed-token' });
    expect(byToken.status).toBe(200);
    expect(JSON.parse(byToken.body).kind).toBe('PodList');
    const byCert = await get(port, '/metrics', { cert: ca.client });
    expect(byCert.status).toBe(200);
    expect(byCert.body).toContain('kubelet_running_pods');
    expect(asked).toContainEqual({ user: 'operator', verb: 'get', subresource: 'metrics' });
    expect(asked).toContainEqual({ user: 'reader', verb: 'get', subresource: 'pods' });
  });
});
