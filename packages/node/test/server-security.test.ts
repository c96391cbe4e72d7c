// Which transport the agent serves, from its options: loopback HTTP standalone, HTTPS with the
// auth filter once a TLS or auth setting is given or the address is not loopback.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { serverSecurity } from '../src/server-security.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function security(o: Partial<Parameters<typeof serverSecurity>[0]> = {}) {
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'kk-sec-'));
  return serverSecurity({
    address: '127.0.0.1',
    tls: { certDirectory: dir },
    authentication: {},
    authorization: {},
    kubeConfig: undefined,
    nodeName: 'node1',
    ips: ['10.0.0.5'],
    clock: new FakeClock(),
    logger: noopLogger,
    ...o,
  });
}

const kubeConfig = async () => ({}) as KubeConfig;
const noCreds = { headers: {}, url: '/pods', method: 'GET', socket: {} } as never;

describe('serverSecurity', () => {
  it('keeps loopback HTTP without a filter when nothing is asked', () => {
    expect(security()).toEqual({});
    expect(security({ address: '::1' })).toEqual({});
    expect(security({ kubeConfig })).toEqual({});
  });

  it('serves HTTPS off loopback, with a self-signed certificate and anonymous AlwaysAllow', async () => {
    const s = security({ address: '0.0.0.0' });
    expect(String(s.tls?.cert)).toContain('BEGIN CERTIFICATE');
    expect(fs.existsSync(path.join(dir as string, 'kubelet.key'))).toBe(true);
    expect(await s.auth?.authorizeRequest(noCreds)).toMatchObject({
      allowed: true,
      user: { name: 'system:anonymous' },
    });
  });

  it('turns anonymous off once the token webhook or a client CA is configured, unless asked', async () => {
    const s = security({ kubeConfig, authentication: { webhook: true } });
    expect(await s.auth?.authorizeRequest(noCreds)).toMatchObject({ allowed: false, status: 401 });
    const t = security({ kubeConfig, authentication: { webhook: true, anonymous: true } });
    expect(await t.auth?.authorizeRequest(noCreds)).toMatchObject({ allowed: true });
  });

  it('needs a kubeconfig for the webhooks, and knows only the two modes', () => {
    expect(() => security({ authentication: { webhook: true } })).toThrow(
      /--authentication-token-webhook needs an API server: pass --kubeconfig/,
    );
    expect(() => security({ authorization: { mode: 'Webhook' } })).toThrow(
      /--authorization-mode=Webhook needs/,
    );
    expect(() => security({ authorization: { mode: 'RBAC' as never } })).toThrow(/AlwaysAllow or Webhook/);
  });
});
