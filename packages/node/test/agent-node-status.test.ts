import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Node } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { applyStrategicMergePatch } from '@kubelet-kit/nodestatus/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import { writeKubeconfig } from './kubeconfig.js';
import { pump } from './pump.js';

// The agent with a kubeconfig registers its Node and reports its status: a local HTTP server
// plays the API server's node endpoints (strategic merge of nodes/status), lists are empty.
const image = 'localhost/kubelet-kit/busybox:1.0';

interface Request {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

function fakeApiserver() {
  const nodes = new Map<string, Node>();
  const requests: Request[] = [];
  const watchers: http.ServerResponse[] = [];
  let rv = 10;
  const send = (res: http.ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: http.ServerResponse, reason = 'NotFound', code = 404) =>
    send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => {
      text += d.toString();
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const body: unknown = text ? JSON.parse(text) : undefined;
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        contentType: req.headers['content-type'],
        body,
      });
      if (req.method === 'GET' && url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        watchers.push(res);
        return;
      }
      if (req.method === 'GET' && (url.pathname === '/api/v1/pods' || url.pathname === '/api/v1/services')) {
        return send(res, 200, {
          kind: 'List',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(rv) },
          items: [],
        });
      }
      if (req.method === 'POST' && url.pathname === '/api/v1/nodes') {
        const node = body as Node;
        const name = node.metadata?.name ?? '';
        if (nodes.has(name)) return notFound(res, 'AlreadyExists', 409);
        const stored = {
          ...node,
          metadata: { ...node.metadata, uid: 'node-uid-1', resourceVersion: String(++rv) },
        };
        nodes.set(name, stored);
        return send(res, 201, stored);
      }
      const m = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(url.pathname);
      const node = m ? nodes.get(m[1]!) : undefined;
      if (!m || !node) return notFound(res);
      if (req.method === 'GET' && !m[2]) return send(res, 200, node);
      if (req.method === 'PATCH' && m[2]) {
        const patched = applyStrategicMergePatch(node, body) as Node;
        const stored = {
          ...patched,
          spec: node.spec,
          metadata: { ...patched.metadata, resourceVersion: String(++rv) },
        };
        nodes.set(m[1]!, stored);
        return send(res, 200, stored);
      }
      return notFound(res, 'MethodNotAllowed', 405);
    });
  });
  return { server, nodes, requests, watchers };
}

describe('agent node registration and status', () => {
  let cri: InMemoryCriServer;
  let api: ReturnType<typeof fakeApiserver>;
  let dir: string;
  let clock: FakeClock;
  let agent: Agent | undefined;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    cri = await InMemoryCriServer.start({ images: [image], clock });
    api = fakeApiserver();
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', () => r()));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-node-'));
    writeKubeconfig(path.join(dir, 'kubeconfig'), (api.server.address() as AddressInfo).port);
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    for (const w of api.watchers) w.end();
    api.server.closeAllConnections();
    await new Promise((r) => api.server.close(r));
    await cri.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the Node with its labels, taints, reserved allocatable, and reports it Ready', async () => {
    const recorder = new InMemoryEventRecorder({ now: () => clock.now() });
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      nodeLabels: { disk: 'ssd' },
      registerWithTaints: [{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }],
      systemReserved: { cpu: '100m', memory: '100Mi' },
      kubeReserved: { memory: '50Mi' },
      maxPods: 20,
      port: 0,
      clock,
      recorder,
      resolvConf: '',
    });
    await agent.start();
    const registered = await pump(clock, () => api.nodes.get('node-a'));
    expect(registered.metadata?.labels).toMatchObject({
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      disk: 'ssd',
    });
    expect(registered.spec?.taints).toEqual([{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }]);
    const node = await agent.nodeStatus!.registeredNode();
    expect(node.metadata?.uid).toBe('node-uid-1');

    const ready = await pump(clock, () => {
      const n = api.nodes.get('node-a');
      return n?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
    });
    const cores = os.cpus().length;
    expect(ready.status?.capacity?.cpu).toBe(String(cores));
    expect(ready.status?.allocatable?.cpu).toBe(`${cores * 1000 - 100}m`);
    expect(ready.status?.capacity?.pods).toBe('20');
    // Admission admits against the allocatable the Node reports.
    expect(agent.allocatable.cpu).toBeCloseTo(cores - 0.1);
    expect(agent.allocatable.memory).toBeLessThanOrEqual(os.totalmem() - 250 * 1024 * 1024);
    expect(ready.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(agent.address?.port);
    expect(ready.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^.+:\/\/.+/);
    expect(ready.status?.nodeInfo?.kubeletVersion).toBe('v1.34.0');
    expect(ready.status?.images?.some((i) => i.names?.includes(image))).toBe(true);
    expect(ready.status?.addresses?.find((a) => a.type === 'Hostname')?.address).toBe('node-a');
    const patch = await pump(clock, () => api.requests.find((r) => r.method === 'PATCH'));
    expect(patch?.path).toBe('/api/v1/nodes/node-a/status');
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    expect(recorder.events.filter((e) => e.object.kind === 'Node').map((e) => e.reason)).toContain(
      'Starting',
    );
  });

  it('refuses a loopback --node-ip as upstream: the Node stays NotReady, saying why', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIP: '127.0.0.1',
      port: 0,
      clock,
      resolvConf: '',
    });
    await agent.start();
    const ready = await pump(clock, () =>
      api.nodes.get('node-a')?.status?.conditions?.find((c) => c.type === 'Ready'),
    );
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: "failed to validate nodeIP: nodeIP can't be loopback address",
    });
  });

  it('with registerNode false creates nothing and waits for the Node to exist', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      registerNode: false,
      nodeStatusUpdateFrequencyMs: 1000,
      port: 0,
      clock,
      resolvConf: '',
    });
    await agent.start();
    await pump(clock, () => api.requests.filter((r) => r.path === '/api/v1/nodes/node-a').length >= 3);
    expect(api.requests.some((r) => r.method === 'POST' && r.path === '/api/v1/nodes')).toBe(false);
  });

  it('refuses a bad reservation naming its flag', () => {
    expect(() =>
      createAgent({
        runtimeEndpoint: cri.endpoint,
        rootDirectory: path.join(dir, 'root'),
        systemReserved: { gpu: '1' },
        clock,
      }),
    ).toThrow('--system-reserved: cannot reserve "gpu" resource');
    expect(() =>
      createAgent({
        runtimeEndpoint: cri.endpoint,
        rootDirectory: path.join(dir, 'root'),
        kubeReserved: { memory: 'lots' },
        clock,
      }),
    ).toThrow('--kube-reserved: memory="lots" is not a quantity');
  });
});
