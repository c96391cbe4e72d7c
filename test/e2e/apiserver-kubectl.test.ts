// The real kubectl against @kubelet-kit/apiserver/testing's in-memory API server: discovery,
// server-side Tables, describe (which reads the node's Lease, its events by involvedObject
// and its pods by spec.nodeName), client-side apply with server-side field validation, and
// delete waiting on a watch. No containerd: this file may run alone anywhere kubectl runs
// (scripts/kubectl.sh finds or installs one).
//   npx vitest run --project e2e test/e2e/apiserver-kubectl.test.ts
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeApiServer } from '@kubelet-kit/apiserver/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKubectl } from './support/kubectl.js';

const run = promisify(execFile);
const kubectlPath = findKubectl();

let api: FakeApiServer;
/** A stand-in kubelet for `kubectl logs`: answers /containerLogs. */
let kubelet: http.Server;
const kubeletPaths: string[] = [];
let dir: string;
let kubeconfig: string;

async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(kubectlPath, ['--kubeconfig', kubeconfig, ...args], {
      timeout: 30_000,
      env: { ...process.env, KUBECONFIG: kubeconfig, HOME: dir },
    });
    return { stdout, stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; code?: number };
    return {
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
      code: typeof err.code === 'number' ? err.code : 1,
    };
  }
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-kubectl-e2e-'));
  kubelet = http.createServer((req, res) => {
    kubeletPaths.push(String(req.url));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from nginx\n');
  });
  await new Promise<void>((r) => kubelet.listen(0, '127.0.0.1', r));
  api = new FakeApiServer({ kubeletScheme: 'http' });
  await api.start();
  kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
  const node = api.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'n1',
      labels: { 'kubernetes.io/hostname': 'n1', 'node-role.kubernetes.io/worker': '' },
    },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: now(),
          lastTransitionTime: now(),
        },
      ],
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: 'n1' },
      ],
      capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
      daemonEndpoints: { kubeletEndpoint: { Port: (kubelet.address() as AddressInfo).port } },
      nodeInfo: {
        kubeletVersion: 'v1.34.0',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        kernelVersion: '6.1.0',
        containerRuntimeVersion: 'containerd://2.0.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
        machineID: 'm',
        systemUUID: 's',
        bootID: 'b',
        kubeProxyVersion: '',
      },
    },
  });
  api.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'n1', namespace: 'kube-node-lease' },
    spec: {
      holderIdentity: 'n1',
      leaseDurationSeconds: 40,
      renewTime: new Date()
        .toISOString()
        .replace('Z', '000Z')
        .replace(/(\.\d{6})\d*Z$/, '$1Z'),
    },
  });
  api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    spec: {
      nodeName: 'n1',
      containers: [{ name: 'nginx', image: 'nginx:1.27', resources: { requests: { cpu: '100m' } } }],
    },
    status: {
      phase: 'Running',
      podIP: '10.244.0.7',
      podIPs: [{ ip: '10.244.0.7' }],
      hostIP: '127.0.0.1',
      startTime: now(),
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now() }],
      containerStatuses: [
        {
          name: 'nginx',
          image: 'nginx:1.27',
          imageID: 'sha256:1',
          containerID: 'containerd://abc',
          ready: true,
          started: true,
          restartCount: 2,
          state: { running: { startedAt: now() } },
        },
      ],
    },
  });
  for (const [name, kind, objName, reason, message, ns] of [
    ['n1.1', 'Node', 'n1', 'NodeReady', 'Node n1 status is now: NodeReady', 'default'],
    ['web.1', 'Pod', 'web', 'Started', 'Started container nginx', 'default'],
  ] as const) {
    api.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns },
      involvedObject: {
        kind,
        name: objName,
        ...(kind === 'Node'
          ? { uid: node.metadata?.uid }
          : { namespace: 'default', uid: api.get('pods', 'default', 'web')?.metadata?.uid }),
        apiVersion: 'v1',
      },
      reason,
      message,
      type: 'Normal',
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: now(),
      lastTimestamp: now(),
      count: 1,
    });
  }
});

afterAll(async () => {
  await api?.stop();
  kubelet?.closeAllConnections();
  await new Promise((r) => kubelet?.close(r));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('kubectl against the in-memory API server', () => {
  it('get nodes prints the server-side Table', async () => {
    const r = await kubectl('get', 'nodes');
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
    expect(lines[1]).toMatch(/^n1\s+Ready\s+worker\s+\S+\s+v1\.34\.0$/);
    const wide = await kubectl('get', 'no', '-o', 'wide');
    expect(wide.stdout).toMatch(/INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE/);
    expect(wide.stdout).toMatch(/127\.0\.0\.1\s+<none>\s+Debian GNU\/Linux 12 \(bookworm\)/);
  });

  it('get pods -o wide prints READY, STATUS, RESTARTS, IP and NODE', async () => {
    const r = await kubectl('get', 'pods', '-o', 'wide');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/,
    );
    expect(lines[1]).toMatch(/^web\s+1\/1\s+Running\s+2\s+\S+\s+10\.244\.0\.7\s+n1\s+<none>\s+<none>$/);
    const json = JSON.parse((await kubectl('get', 'po', 'web', '-o', 'json')).stdout);
    expect(json.kind).toBe('Pod');
    expect(json.metadata.uid).toBeTruthy();
  });

  it('describe node reads the Lease, the node events and the pods on the node', async () => {
    const r = await kubectl('describe', 'node', 'n1');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Lease:\s*\n\s+HolderIdentity:\s+n1/);
    expect(r.stdout).toMatch(/Non-terminated Pods:\s+\(1 in total\)/);
    expect(r.stdout).toMatch(/default\s+web\s+100m \(2%\)/);
    expect(r.stdout).toMatch(/Normal\s+NodeReady\s+\S+\s+kubelet\s+Node n1 status is now: NodeReady/);
    const q = api.requests.find(
      (x) => x.path === '/api/v1/events' || x.path === '/api/v1/namespaces/default/events',
    );
    expect(q?.query.fieldSelector).toContain('involvedObject.name=n1');
  });

  it('describe pod shows its containers and events', async () => {
    const r = await kubectl('describe', 'pod', 'web');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Node:\s+n1\/127\.0\.0\.1/);
    expect(r.stdout).toMatch(/Restart Count:\s+2/);
    expect(r.stdout).toMatch(/Normal\s+Started\s+\S+\s+kubelet\s+Started container nginx/);
  });

  it('logs goes through the API server to the kubelet at the node address and port', async () => {
    const r = await kubectl('logs', 'web', '--tail=5');
    expect(r.stdout).toBe('hello from nginx\n');
    expect(kubeletPaths).toEqual(['/containerLogs/default/web/nginx?tailLines=5']);
  });

  it('get events lists both', async () => {
    const r = await kubectl('get', 'events');
    expect(r.stdout.split('\n')[0]).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    expect(r.stdout).toMatch(/Normal\s+NodeReady\s+node\/n1\s+Node n1 status is now: NodeReady/);
    expect(r.stdout).toMatch(/Normal\s+Started\s+pod\/web\s+Started container nginx/);
  });

  it('apply -f creates, then configures with a strategic merge patch; unknown fields fail strict validation', async () => {
    const file = path.join(dir, 'pod.yaml');
    const manifest = (label: string, extra = '') =>
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: applied\n  labels:\n    app: ${label}\nspec:\n  containers:\n  - name: main\n    image: busybox:1.36\n${extra}`;
    fs.writeFileSync(file, manifest('one'));
    expect((await kubectl('apply', '-f', file)).stdout.trim()).toBe('pod/applied created');
    expect(
      api.get('pods', 'default', 'applied')?.metadata?.annotations?.[
        'kubectl.kubernetes.io/last-applied-configuration'
      ],
    ).toBeTruthy();
    fs.writeFileSync(file, manifest('two'));
    expect((await kubectl('apply', '-f', file)).stdout.trim()).toBe('pod/applied configured');
    expect(api.get('pods', 'default', 'applied')?.metadata?.labels).toEqual({ app: 'two' });
    const patch = api.requests.find(
      (x) => x.method === 'PATCH' && x.path === '/api/v1/namespaces/default/pods/applied',
    );
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    fs.writeFileSync(file, manifest('two', '    bogus: 1\n').replace('name: applied', 'name: bogus'));
    const bad = await kubectl('apply', '-f', file);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('unknown field "spec.containers[0].bogus"');
  });

  it('delete pod waits for the deletion: at once when unbound, after the kubelet finishes when bound', async () => {
    const unbound = await kubectl('delete', 'pod', 'applied');
    expect(unbound.stdout.trim()).toBe('pod "applied" deleted');
    expect(api.get('pods', 'default', 'applied')).toBeUndefined();
    // Play the kubelet: once the pod is marked for deletion, finish it with a grace-0 delete.
    const kubelet = api
      .waitFor('pods', 'default', 'web', (p) => p?.metadata?.deletionTimestamp !== undefined, 20_000)
      .then(() => api.delete('pods', 'default', 'web', { gracePeriodSeconds: 0 }));
    const bound = await kubectl('delete', 'pod', 'web', '--timeout=20s');
    await kubelet;
    expect(bound.stdout.trim()).toBe('pod "web" deleted');
    expect(api.get('pods', 'default', 'web')).toBeUndefined();
    expect((await kubectl('get', 'pods')).stderr).toContain('No resources found in default namespace.');
  });

  it('get namespaces and services print their columns', async () => {
    expect((await kubectl('get', 'ns')).stdout).toMatch(/kube-node-lease\s+Active/);
    expect((await kubectl('get', 'svc')).stdout).toMatch(
      /kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP/,
    );
  });
});
