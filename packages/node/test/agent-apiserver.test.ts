import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { VERSION as APISERVER_VERSION, kubeletUserAgent } from '@kubelet-kit/apiserver';
import type { Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import { writeKubeconfig } from './kubeconfig.js';
import { pump } from './pump.js';

// API server mode end to end in one process: pods bound to the node come from a local HTTP
// server speaking the list/watch protocol, containers run on the in-memory CRI, and statuses
// go back as merge patches of pods/status. (No real API server runs on these machines.)
const image = 'localhost/kubelet-kit/busybox:1.0';

/** RFC 7386 JSON merge patch, as the API server applies one. */
function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

interface StatusPatch {
  readonly path: string;
  readonly contentType: string;
  readonly body: {
    status?: { phase?: string; podIP?: string; containerStatuses?: Array<{ ready?: boolean }> };
  };
}

/** The API server's own Service, which every pod's environment names. */
const kubernetesService = {
  metadata: { namespace: 'default', name: 'kubernetes', resourceVersion: '5' },
  spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
};

function fakeApiserver(pods: Pod[]) {
  const patches: StatusPatch[] = [];
  const serviceWatchers: http.ServerResponse[] = [];
  const serviceLists: URL[] = [];
  const watchers: http.ServerResponse[] = [];
  const created: Pod[] = [];
  const deleted: Array<{ path: string; body: unknown; seen?: unknown }> = [];
  const userAgents = new Set<string>();
  // What a test wants noted as each DELETE arrives.
  const hooks: { onDelete?: () => unknown } = {};
  // The node Lease and the Events the agent writes.
  const leaseWrites: Array<{ method: string; body: Record<string, unknown> }> = [];
  const eventWrites: Array<{ method: string; path: string; body: Record<string, unknown> }> = [];
  let lease: Record<string, unknown> | undefined;
  let rv = 100;
  const notify = (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: Pod) => {
    for (const w of watchers) w.write(`${JSON.stringify({ type, object })}\n`);
  };
  const readBody = (req: http.IncomingMessage, then: (body: string) => void) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => then(body));
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    userAgents.add(
      `${url.searchParams.get('watch') === 'true' ? 'watch' : req.method} ${req.headers['user-agent']}`,
    );
    if (req.method === 'GET' && url.pathname === '/api/v1/nodes/node-a') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'node-a', uid: 'node-uid-1' } }),
      );
      return;
    }
    const leases = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
    if (url.pathname === leases || url.pathname === `${leases}/node-a`) {
      if (req.method === 'GET' && !lease) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
        return;
      }
      readBody(req, (text) => {
        if (req.method !== 'GET') {
          const body = JSON.parse(text) as Record<string, unknown>;
          leaseWrites.push({ method: req.method ?? '', body });
          lease = { ...body, metadata: { ...(body.metadata as object), resourceVersion: String(++rv) } };
        }
        res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(lease));
      });
      return;
    }
    if (/^\/api\/v1\/namespaces\/[^/]+\/events(\/[^/]+)?$/.test(url.pathname)) {
      readBody(req, (text) => {
        const body = JSON.parse(text) as Record<string, unknown>;
        eventWrites.push({ method: req.method ?? '', path: url.pathname, body });
        res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      });
      return;
    }
    const create = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    if (req.method === 'POST' && create) {
      readBody(req, (body) => {
        const pod = JSON.parse(body) as Pod;
        created.push(pod);
        // The API server gives the new object its own UID and a fresh status.
        const object: Pod = {
          ...pod,
          metadata: { ...pod.metadata, uid: `mirror-${created.length}`, resourceVersion: String(++rv) },
          status: { phase: 'Pending' },
        };
        pods.push(object);
        notify('ADDED', object);
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify(object));
      });
      return;
    }
    const remove = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'DELETE' && remove) {
      readBody(req, (body) => {
        const parsed = body ? (JSON.parse(body) as { preconditions?: { uid?: string } }) : undefined;
        deleted.push({ path: url.pathname, body: parsed, seen: hooks.onDelete?.() });
        const at = pods.findIndex(
          (p) => p.metadata?.name === remove[2] && p.metadata?.namespace === remove[1],
        );
        const wanted = parsed?.preconditions?.uid;
        if (at >= 0 && wanted !== undefined && pods[at]?.metadata?.uid !== wanted) {
          res.writeHead(409, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict' }));
          return;
        }
        if (at < 0) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
          return;
        }
        const [gone] = pods.splice(at, 1);
        rv++;
        if (gone) notify('DELETED', { ...gone, metadata: { ...gone.metadata, resourceVersion: String(rv) } });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(gone));
      });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/services') {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') === 'true') {
        res.flushHeaders();
        serviceWatchers.push(res);
        return;
      }
      serviceLists.push(url);
      res.end(
        JSON.stringify({
          kind: 'ServiceList',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(rv) },
          items: [kubernetesService, { ...kubernetesService, metadata: { namespace: 'team', name: 'db' } }],
        }),
      );
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/pods') {
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        watchers.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(rv) },
          items: pods,
        }),
      );
      return;
    }
    const status = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/.exec(url.pathname);
    if (req.method === 'PATCH' && status) {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        patches.push({
          path: url.pathname,
          contentType: req.headers['content-type'] ?? '',
          body: JSON.parse(body),
        });
        const pod = pods.find((p) => p.metadata?.name === status[2]);
        // Applied, as the API server would: the final DELETE waits for a terminal API phase.
        if (pod) {
          (pod as { status?: unknown }).status = applyMergePatch(pod.status, JSON.parse(body).status);
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...pod, metadata: { ...pod?.metadata, resourceVersion: String(++rv) } }));
      });
      return;
    }
    const one = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && one) {
      const pod = pods.find((p) => p.metadata?.name === one[2]);
      res.writeHead(pod ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(pod ?? { kind: 'Status', code: 404, reason: 'NotFound' }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }),
    );
  });
  return {
    server,
    patches,
    leaseWrites,
    eventWrites,
    watchers,
    serviceLists,
    created,
    deleted,
    hooks,
    userAgents,
    pods: () => pods,
    /** Swaps a stored pod for another without a watch event (as if this node's watch lagged). */
    replace(uid: string, pod: Pod) {
      const at = pods.findIndex((p) => p.metadata?.uid === uid);
      if (at >= 0) pods.splice(at, 1, pod);
    },
    sendEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod) {
      rv++;
      const object = { ...pod, metadata: { ...pod.metadata, resourceVersion: String(rv) } };
      const at = pods.findIndex((p) => p.metadata?.uid === pod.metadata?.uid);
      if (at >= 0) pods.splice(at, 1);
      if (type !== 'DELETED') pods.push(object);
      notify(type, object);
    },
  };
}

function apiPod(name: string, uid: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'team',
      uid,
      resourceVersion: '90',
      creationTimestamp: '2026-06-01T00:00:00Z',
    },
    spec: {
      nodeName: 'node-a',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
    status: { phase: 'Pending' },
  };
}

describe('agent in API server mode', () => {
  const resolvConf = () => {
    const file = path.join(dir, 'resolv.conf');
    fs.writeFileSync(file, 'nameserver 192.0.2.53\nsearch host.example\n');
    return file;
  };
  let cri: InMemoryCriServer;
  let api: ReturnType<typeof fakeApiserver>;
  let dir: string;
  let clock: FakeClock;
  let agent: Agent | undefined;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    cri = await InMemoryCriServer.start({ images: [image], clock });
    api = fakeApiserver([apiPod('web', 'uid-web')]);
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', () => r()));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-api-'));
    const port = (api.server.address() as AddressInfo).port;
    writeKubeconfig(path.join(dir, 'kubeconfig'), port);
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

  it('runs the pods bound to the node and patches their status back', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      resolvConf: resolvConf(),
    });
    await agent.start();
    const apiStatus = (name: string) =>
      api.patches
        .filter((p) => p.path === `/api/v1/namespaces/team/pods/${name}/status`)
        .reduce<unknown>((s, p) => applyMergePatch(s, p.body), {}) as StatusPatch['body'];
    const running = await pump(clock, () => {
      const s = apiStatus('web').status;
      return s?.phase === 'Running' && s.containerStatuses?.[0]?.ready ? s : undefined;
    });
    expect(api.patches.every((p) => p.contentType.includes('application/merge-patch+json'))).toBe(true);
    expect(running.podIP).toMatch(/^10\.88\./);
    // API pods keep their own name and UID: no static-pod defaulting.
    const pods = agent.kubelet.podsWithStatus();
    expect(pods.map((p) => [p.metadata?.name, p.metadata?.uid])).toEqual([['web', 'uid-web']]);
    expect(cri.calls('RunPodSandbox')).toHaveLength(1);
    // --cluster-dns, --cluster-domain and --resolv-conf make the ClusterFirst pod's resolv.conf.
    const [sandbox] = cri.calls<{ config: { dnsConfig: unknown } }>('RunPodSandbox');
    expect(sandbox?.request.config.dnsConfig).toEqual({
      servers: ['10.96.0.10'],
      searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'host.example'],
      options: ['ndots:5'],
    });
    // The Services of the pod's namespace and default/kubernetes, listed cluster-wide.
    const [created] = cri.calls<{ config: { envs: { key: string; value: string }[] } }>('CreateContainer');
    const env = Object.fromEntries(created?.request.config.envs.map((e) => [e.key, e.value]) ?? []);
    expect(env).toMatchObject({ KUBERNETES_SERVICE_HOST: '10.96.0.1', DB_SERVICE_PORT_HTTPS: '443' });
    expect(api.serviceLists[0]?.searchParams.get('fieldSelector')).toBe('spec.clusterIP!=None');

    // Its events went to the API server, in the pod's namespace.
    const started = await pump(clock, () =>
      api.eventWrites.find((e) => e.method === 'POST' && e.body.reason === 'Started'),
    );
    expect(started.path).toBe('/api/v1/namespaces/team/events');
    expect(started.body).toMatchObject({
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'team', name: 'web', uid: 'uid-web' },
      source: { component: 'kubelet', host: 'node-a' },
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    });

    // A pod bound later arrives through the watch.
    await pump(clock, () => api.watchers.length > 0);
    api.sendEvent('ADDED', apiPod('late', 'uid-late'));
    await pump(clock, () => apiStatus('late').status?.phase === 'Running');
    expect(cri.calls('RunPodSandbox')).toHaveLength(2);

    // A pod deleted from the API server is killed on the node.
    api.sendEvent('DELETED', apiPod('late', 'uid-late'));
    await pump(clock, () => cri.calls('StopPodSandbox').length > 0);
    await pump(clock, () => !agent!.kubelet.podsWithStatus().some((p) => p.metadata?.name === 'late'));

    // Every request and watch names a kubelet of the Kubernetes version followed.
    const ua = kubeletUserAgent({ kitVersion: APISERVER_VERSION });
    expect(ua).toMatch(/^kubelet\/v1\.34\.0 \(linux\/[a-z0-9]+\) kubelet-kit\//);
    // (POST: the events and the node Lease.)
    expect([...api.userAgents].sort()).toEqual([`GET ${ua}`, `PATCH ${ua}`, `POST ${ua}`, `watch ${ua}`]);
  });

  it("makes a static pod's mirror pod, reports its status through it, and deletes it with the static pod", async () => {
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    fs.writeFileSync(
      path.join(manifests, 'etcd.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'etcd', namespace: 'kube-system' },
        spec: {
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'main', image, command: ['sleep', '3600'] }],
        },
      }),
    );
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      podManifestPath: manifests,
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
    });
    await agent.start();
    const mirror = await pump(clock, () => api.created.find((p) => p.metadata?.name === 'etcd-node-a'));
    const staticPod = agent.kubelet.podsWithStatus().find((p) => p.metadata?.name === 'etcd-node-a');
    // The mirror annotation holds the static pod's hash; the node owns the mirror.
    expect(mirror.metadata?.namespace).toBe('kube-system');
    expect(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']).toBe(
      staticPod?.metadata?.annotations?.['kubernetes.io/config.hash'],
    );
    expect(mirror.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid-1', controller: true },
    ]);
    expect(mirror.spec?.nodeName).toBe('node-a');
    // The static pod's status goes to the API server through its mirror.
    await pump(clock, () =>
      api.patches.some(
        (p) =>
          p.path === '/api/v1/namespaces/kube-system/pods/etcd-node-a/status' &&
          p.body.status?.phase === 'Running',
      ),
    );
    expect(api.created).toHaveLength(1);

    // The manifest removed: the static pod stops, and its orphaned mirror is deleted at once.
    fs.rmSync(path.join(manifests, 'etcd.json'));
    const gone = await pump(clock, () =>
      api.deleted.find((d) => d.path === '/api/v1/namespaces/kube-system/pods/etcd-node-a'),
    );
    expect(gone.body).toMatchObject({ gracePeriodSeconds: 0 });
    expect(cri.calls('StopPodSandbox').length).toBeGreaterThan(0);
  });

  const jobPhase = () => api.pods().find((p) => p.metadata?.name === 'job')?.status?.phase;

  it('deletes a pod the API server is deleting with grace 0 and its UID, once stopped and unmounted', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
    });
    const base = apiPod('job', 'uid-job');
    const pod: Pod = {
      ...base,
      spec: {
        ...base.spec!,
        volumes: [{ name: 'scratch', emptyDir: {} }],
        containers: [{ ...base.spec!.containers[0]!, volumeMounts: [{ name: 'scratch', mountPath: '/s' }] }],
      },
    };
    const volumeDir = path.join(
      dir,
      'root',
      'pods',
      'uid-job',
      'volumes',
      'kubernetes.io~empty-dir',
      'scratch',
    );
    api.hooks.onDelete = () => ({
      stoppedContainers: cri.calls('StopContainer').length,
      stoppedSandboxes: cri.calls('StopPodSandbox').length,
      volumeMounted: fs.existsSync(volumeDir),
    });
    await agent.start();
    await pump(clock, () => api.watchers.length > 0);
    api.sendEvent('ADDED', pod);
    await pump(clock, () => jobPhase() === 'Running' && fs.existsSync(volumeDir));

    // The API server marks the pod deleted (graceful deletion): the kubelet stops it, writes the
    // terminal phase, and only then deletes it for good.
    api.sendEvent('MODIFIED', {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: '2026-06-01T00:00:30Z', deletionGracePeriodSeconds: 2 },
      status: api.pods().find((p) => p.metadata?.uid === 'uid-job')?.status ?? {},
    });
    const gone = await pump(clock, () =>
      api.deleted.find((d) => d.path === '/api/v1/namespaces/team/pods/job'),
    );
    expect(gone.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid: 'uid-job' } });
    expect(gone.seen).toMatchObject({ stoppedContainers: 1, volumeMounted: false });
    expect((gone.seen as { stoppedSandboxes: number }).stoppedSandboxes).toBeGreaterThan(0);
    expect(api.pods().some((p) => p.metadata?.name === 'job')).toBe(false);
  });

  it('does not delete a pod recreated under the same name with a new UID', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
    });
    const pod = apiPod('job', 'uid-old');
    await agent.start();
    await pump(clock, () => api.watchers.length > 0);
    api.sendEvent('ADDED', pod);
    await pump(clock, () => jobPhase() === 'Running');
    // Before the node reports back, the old pod is force-deleted and a new one takes its name.
    api.hooks.onDelete = () => api.pods().map((p) => p.metadata?.uid);
    api.sendEvent('MODIFIED', {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: '2026-06-01T00:00:30Z', deletionGracePeriodSeconds: 2 },
    });
    api.replace('uid-old', { ...apiPod('job', 'uid-new'), spec: { ...pod.spec!, nodeName: 'node-b' } });
    await pump(clock, () => cri.calls('StopPodSandbox').length > 0);
    // The worker finished the pod (terminatePod told the status manager); then a full status sync.
    await pump(clock, () => agent!.kubelet.podWorkers.shouldPodBeFinished('uid-old'));
    await pump(clock, () => false, 100, 150).catch(() => {});
    // Any DELETE sent for the name carried the old UID, and the new pod is still there.
    for (const d of api.deleted) expect(d.body).toMatchObject({ preconditions: { uid: 'uid-old' } });
    expect(api.pods().map((p) => p.metadata?.uid)).toContain('uid-new');
  });

  it('renews the node Lease from start to stop, owned by the Node', async () => {
    agent = createAgent({
      runtimeEndpoint: cri.endpoint,
      kubeconfig: path.join(dir, 'kubeconfig'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'node-a',
      nodeIPs: ['192.0.2.10'],
      port: 0,
      clock,
      nodeLeaseDurationSeconds: 20,
      resolvConf: '',
    });
    expect(api.leaseWrites).toHaveLength(0);
    await agent.start();
    const created = await pump(clock, () => api.leaseWrites.find((w) => w.method === 'POST'));
    expect(created.body).toMatchObject({
      metadata: {
        name: 'node-a',
        namespace: 'kube-node-lease',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid-1' }],
      },
      spec: { holderIdentity: 'node-a', leaseDurationSeconds: 20 },
    });
    // Renewed every 5 s (a quarter of 20 s), by PUT of the lease last written.
    await pump(clock, () => api.leaseWrites.filter((w) => w.method === 'PUT').length >= 2);
    const puts = api.leaseWrites.filter((w) => w.method === 'PUT');
    const renewals = puts.map((w) => Date.parse((w.body.spec as { renewTime: string }).renewTime));
    expect(renewals[1]! - renewals[0]!).toBeGreaterThanOrEqual(5_000);
    expect(renewals[1]! - renewals[0]!).toBeLessThanOrEqual(5_300);
    await agent.stop();
    agent = undefined;
    const writes = api.leaseWrites.length;
    await clock.tick(30_000);
    expect(api.leaseWrites).toHaveLength(writes);
  });
});
