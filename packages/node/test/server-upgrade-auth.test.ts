// Upgraded connections (exec, attach, port-forward) pass the kubelet API's auth filter before the
// streaming proxy sees them, as every other request does (upstream's filter wraps all routes).

import type http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { noopLogger } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { KubeletServer } from '../src/server.js';
import { KubeletAuth } from '../src/server-auth.js';
import type { StreamingServer } from '../src/server-streaming.js';

let server: KubeletServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function start(anonymous: boolean) {
  const upgrades: string[] = [];
  const streaming = {
    handleUpgrade: async (req: http.IncomingMessage, socket: Duplex) => {
      upgrades.push(req.url ?? '');
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
    },
    handleRequest: async () => false,
    closeAll: () => {},
  } as unknown as StreamingServer;
  server = new KubeletServer({
    port: 0,
    pods: () => [],
    healthChecks: [],
    registry: new KubeletMetrics(new Registry()).registry,
    logger: noopLogger,
    streaming,
    auth: new KubeletAuth({
      nodeName: 'n1',
      anonymous,
      authorizationMode: 'AlwaysAllow',
      clock: new FakeClock(),
      logger: noopLogger,
    }),
  });
  const { port } = await server.start();
  return { port, upgrades };
}

function upgrade(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: n1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
    );
  });
}

describe('KubeletServer upgrades behind the auth filter', () => {
  it('answers 401 to an upgrade without credentials and never reaches the proxy', async () => {
    const { port, upgrades } = await start(false);
    const answer = await upgrade(port, '/exec/default/web/main?command=id&output=1');
    expect(answer).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(answer).toContain('Unauthorized');
    expect(upgrades).toEqual([]);
  });

  it('hands an allowed upgrade to the streaming proxy', async () => {
    const { port, upgrades } = await start(true);
    const answer = await upgrade(port, '/attach/default/web/main?output=1');
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    expect(upgrades).toEqual(['/attach/default/web/main?output=1']);
  });
});
