// The pod subresources the in-memory API server forwards to the node's kubelet: the path
// rewrite (pods/log → /containerLogs/…, exec → /exec/…), the node address and port from the
// Node object, upgrades passed through, and upstream's errors without a node.
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let api: FakeApiServer;
let kubelet: http.Server;
const seen: string[] = [];
const upgraded = new Set<net.Socket>();

beforeEach(async () => {
  seen.length = 0;
  kubelet = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('log line\n');
  });
  kubelet.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    seen.push(`UPGRADE ${req.url} ${req.headers.upgrade}`);
    upgraded.add(socket);
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d) => socket.write(`echo:${d}`));
  });
  await new Promise<void>((r) => kubelet.listen(0, '127.0.0.1', r));
  api = new FakeApiServer({ kubeletScheme: 'http' });
  await api.start();
  api.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1' },
    status: {
      addresses: [
        { type: 'Hostname', address: 'n1.invalid' },
        { type: 'InternalIP', address: '127.0.0.1' },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: (kubelet.address() as AddressInfo).port } },
    },
  });
  api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'i' }] },
  });
  api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'unbound', namespace: 'default' },
    spec: { containers: [{ name: 'main', image: 'i' }] },
  });
});

afterEach(async () => {
  await api.stop();
  kubelet.closeAllConnections();
  for (const s of upgraded) s.destroy();
  upgraded.clear();
  await new Promise((r) => kubelet.close(r));
});

describe('FakeApiServer pod subresource proxy', () => {
  it('forwards pods/log to the kubelet at the InternalIP and the kubelet port', async () => {
    const res = await fetch(`${api.url}/api/v1/namespaces/default/pods/web/log?container=main&tailLines=1`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('log line\n');
    expect(seen).toEqual(['GET /containerLogs/default/web/main?tailLines=1']);
  });

  it('passes an exec upgrade through both ways', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        `${api.url}/api/v1/namespaces/default/pods/web/exec?container=main&command=ls&stdout=1`,
        {
          method: 'POST',
          headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' },
        },
      );
      req.on('upgrade', (res, socket) => {
        expect(res.statusCode).toBe(101);
        socket.write('hi');
        socket.once('data', (d: Buffer) => {
          resolve(d.toString());
          socket.destroy();
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(reply).toBe('echo:hi');
    expect(seen).toEqual(['UPGRADE /exec/default/web/main?command=ls&stdout=1 SPDY/3.1']);
  });

  it('answers a pod without a node with 400, as upstream', async () => {
    const res = await fetch(`${api.url}/api/v1/namespaces/default/pods/unbound/log`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ message: 'pod unbound does not have a host assigned' });
  });
});
