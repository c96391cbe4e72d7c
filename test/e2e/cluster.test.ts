// End to end: the agent as a node of a cluster. `kubelet-kit run --kubeconfig` on the private
// containerd against the in-memory API server of `@kubelet-kit/apiserver/testing` (the real
// REST and watch wire protocol), driven through the real `kubectl` (scripts/kubectl.sh: the one
// on PATH, or Debian's kubernetes-client) and through `@kubernetes/client-node`: the Node
// registers and turns Ready, the Lease is renewed, a pod applied with spec.nodeName runs, its
// events and its service-account token arrive, `kubectl delete` completes, and two minutes
// without the API server kill no pod while the Lease and status writes resume after.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/cluster.test.ts
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeApiServer, type KubeObject } from '@kubelet-kit/apiserver/testing';
import type { Node, Pod } from '@kubelet-kit/core';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentProcess,
  busybox,
  removeNodePods,
  runtimeState,
  startAgent,
  waitFor,
} from './support/agent-process.js';
import { findKubectl } from './support/kubectl.js';

const run = promisify(execFile);
const nodeName = `e2e-cluster-${randomBytes(3).toString('hex')}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";
const podName = (name: string) => `${name}-${nodeName}`;

function podManifest(name: string, extra: { restartPolicy?: string; command?: string; grace?: number } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(name), namespace: 'default' },
    spec: {
      nodeName,
      restartPolicy: extra.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: extra.grace ?? 5,
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', extra.command ?? sleeper],
        },
      ],
    },
  };
}

describe('kubelet-kit run --kubeconfig: a node of a cluster', () => {
  let dir: string;
  let kubeconfig: string;
  let kubectlPath: string;
  let api: FakeApiServer;
  let agent: AgentProcess | undefined;
  let core: CoreV1Api;
  let coordination: CoordinationV1Api;

  const kubectl = async (...args: string[]) =>
    (await run(kubectlPath, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 })).stdout;
  const apply = async (name: string, manifest: unknown) => {
    const file = path.join(dir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(manifest));
    return kubectl('apply', '-f', file);
  };
  const apiPod = (name: string) => api.get<Pod & KubeObject>('Pod', 'default', podName(name));
  const phaseOf = async (name: string) =>
    (await core.readNamespacedPod({ name: podName(name), namespace: 'default' })).status?.phase;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-cluster-e2e-'));
    kubectlPath = findKubectl();
    api = new FakeApiServer({ kubeletScheme: 'http' });
    await api.start();
    kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    const kc = api.makeKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    coordination = kc.makeApiClient(CoordinationV1Api);
    const manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    agent = await startAgent({
      nodeName,
      manifestDir: manifests,
      rootDir: path.join(dir, 'root'),
      // A report every 15 s even when nothing changed (default 5 min), so the first test sees a
      // nodes/status patch within its wait whatever changed after registration.
      args: ['--kubeconfig', kubeconfig, '--node-status-report-frequency', '15s'],
    });
  }, 120_000);

  afterAll(async () => {
    // The pods deleted through the API first, so the agent tears their volumes down itself.
    if (agent && api) {
      for (const p of api.list<Pod & KubeObject>('Pod', 'default')) {
        if (p.spec?.nodeName === nodeName)
          await core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: 'default' }).catch(() => {});
      }
      await waitFor(
        'the pods gone',
        async () =>
          api.list<Pod & KubeObject>('Pod', 'default').some((p) => p.spec?.nodeName === nodeName)
            ? undefined
            : true,
        60_000,
      ).catch(() => {});
    }
    await agent?.stop();
    await api?.stop();
    await removeNodePods(nodeName);
    // Whatever tmpfs a pod left mounted (a failed test's), so the directory can go.
    for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const mountPoint = line.split(' ')[4];
      if (dir && mountPoint?.startsWith(dir)) execFileSync('umount', [mountPoint]);
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('registers its Node, which `kubectl get nodes` shows Ready', async () => {
    const line = await waitFor('node Ready in kubectl get nodes', async () => {
      const out = await kubectl('get', 'nodes', '--no-headers');
      return out.split('\n').find((l) => l.startsWith(`${nodeName} `) && /\sReady\s/.test(l));
    });
    expect(line).toMatch(/v1\.34\.\d/);
    const node = api.get<Node & KubeObject>('Node', undefined, nodeName);
    expect(node?.metadata?.labels?.['kubernetes.io/hostname']).toBe(nodeName);
    expect(node?.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\//);
    expect(Number(node?.status?.capacity?.pods)).toBe(110);
    // Registered by a POST; then the status goes as strategic-merge patches of nodes/status (the
    // first within an update period), all with a kubelet User-Agent.
    const created = api.requests.find((r) => r.method === 'POST' && r.path === '/api/v1/nodes');
    expect(created?.userAgent).toMatch(/^kubelet\/v1\.34\.\d+ \(linux\/\w+\)/);
    const patch = await waitFor(
      'a nodes/status patch',
      async () =>
        api.requests.find((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${nodeName}/status`),
      30_000,
    );
    expect(patch?.contentType).toContain('application/strategic-merge-patch+json');
    expect(patch?.userAgent).toMatch(/^kubelet\/v1\.34\.\d+ \(linux\/\w+\)/);
  }, 90_000);

  it('`kubectl describe node` shows capacity, conditions and the lease', async () => {
    const out = await waitFor('lease in kubectl describe node', async () => {
      const text = await kubectl('describe', 'node', nodeName);
      return /HolderIdentity:\s+\S+/.test(text) ? text : undefined;
    });
    expect(out).toMatch(/Capacity:/);
    expect(out).toMatch(/Allocatable:/);
    expect(out).toMatch(new RegExp(`HolderIdentity:\\s+${nodeName}`));
    for (const c of ['MemoryPressure', 'DiskPressure', 'PIDPressure'])
      expect(out).toMatch(new RegExp(`${c}\\s+False`));
    expect(out).toMatch(/Ready\s+True\s.*KubeletReady/);
    const lease = await coordination.readNamespacedLease({ name: nodeName, namespace: 'kube-node-lease' });
    expect(lease.spec?.leaseDurationSeconds).toBe(40);
    const node = api.get('Node', undefined, nodeName);
    expect(lease.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Node',
      name: nodeName,
      uid: node?.metadata?.uid,
    });
  }, 90_000);

  it('runs a pod applied with spec.nodeName; `kubectl get pods -o wide` and events show it', async () => {
    await apply('web', podManifest('web'));
    const line = await waitFor(
      'web Running in kubectl get pods -o wide',
      async () => {
        const out = await kubectl('get', 'pods', '-o', 'wide', '--no-headers');
        return out
          .split('\n')
          .find((l) => l.startsWith(`${podName('web')} `) && /\s1\/1\s+Running\s/.test(l));
      },
      90_000,
    );
    expect(line).toContain(nodeName);
    expect(line).toMatch(/\s10\.\d+\.\d+\.\d+\s/);
    const events = await waitFor('Pulled, Created, Started in kubectl get events', async () => {
      const out = await kubectl('get', 'events', '--field-selector', `involvedObject.name=${podName('web')}`);
      return ['Pulled', 'Created', 'Started'].every((r) => out.includes(r)) ? out : undefined;
    });
    expect(events).toContain('pod/');
    const list = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${podName('web')}`,
    });
    const started = list.items.find((e) => e.reason === 'Started');
    expect(started?.source?.component).toBe('kubelet');
    expect(started?.source?.host).toBe(nodeName);
    expect(started?.involvedObject.uid).toBe(apiPod('web')?.metadata?.uid);
  }, 150_000);

  it('mounts a kube-api-access volume: the pod reads its token, the CA and its namespace', async () => {
    // The container checks the three files, then stays up: a failed check would restart it.
    const manifest = podManifest('token', {
      command: `d=/var/run/secrets/kubernetes.io/serviceaccount; test -s $d/token && test -s $d/ca.crt && test "$(cat $d/namespace)" = default || exit 1; ${sleeper}`,
    });
    const spec = manifest.spec as Record<string, unknown>;
    spec.volumes = [
      {
        name: 'kube-api-access-abcde',
        projected: {
          defaultMode: 0o644,
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
    ];
    (spec.containers as Array<Record<string, unknown>>)[0]!.volumeMounts = [
      {
        name: 'kube-api-access-abcde',
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        readOnly: true,
      },
    ];
    spec.serviceAccountName = 'default';
    await apply('token', manifest);
    await waitFor(
      'token pod Running',
      async () => ((await phaseOf('token')) === 'Running' ? true : undefined),
      90_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const pod = await core.readNamespacedPod({ name: podName('token'), namespace: 'default' });
    expect(pod.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    expect(pod.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
    const uid = pod.metadata?.uid;
    const issued = api.issuedTokens.find(
      (t) => (t.boundObjectRef as { uid?: string } | undefined)?.uid === uid,
    );
    expect(issued?.serviceAccount).toBe('default');
    // No audience asked: the API server's own (the server fills it in).
    const asked = api.requests.find(
      (r) => r.method === 'POST' && r.path.endsWith('/serviceaccounts/default/token'),
    );
    expect(asked?.body).toMatchObject({
      spec: { audiences: [], expirationSeconds: 3607, boundObjectRef: { kind: 'Pod', uid } },
    });
    const volume = path.join(
      dir,
      'root/pods',
      String(uid),
      'volumes/kubernetes.io~projected/kube-api-access-abcde',
    );
    expect(fs.readFileSync(path.join(volume, 'token'), 'utf8')).toBe(issued?.token);
    const ca = api.get<KubeObject & { data?: Record<string, string> }>(
      'ConfigMap',
      'default',
      'kube-root-ca.crt',
    );
    expect(fs.readFileSync(path.join(volume, 'ca.crt'), 'utf8')).toBe(ca?.data?.['ca.crt']);
  }, 150_000);

  it('`kubectl delete pod` completes within the grace period and a few seconds', async () => {
    await apply('doomed', podManifest('doomed', { grace: 5 }));
    await waitFor(
      'doomed Running',
      async () => ((await phaseOf('doomed')) === 'Running' ? true : undefined),
      90_000,
    );
    const started = Date.now();
    await kubectl('delete', 'pod', podName('doomed'), '--timeout=60s');
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeLessThan(5 + 10);
    expect(apiPod('doomed')).toBeUndefined();
    const del = api.requests.find(
      (r) =>
        r.method === 'DELETE' &&
        r.path === `/api/v1/namespaces/default/pods/${podName('doomed')}` &&
        r.userAgent.startsWith('kubelet/'),
    );
    expect(del?.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid: expect.any(String) } });
    const { sandboxes } = await runtimeState(nodeName);
    expect(sandboxes.filter((s) => s.metadata?.name === podName('doomed') && s.state === 0)).toEqual([]);
  }, 150_000);

  it('kills no pod while the API server is away for 2 minutes; Lease and status writes resume', async () => {
    // A pod that finishes during the outage: its phase must reach the API server after it.
    await apply('brief', podManifest('brief', { restartPolicy: 'Never', command: 'sleep 20' }));
    await waitFor(
      'brief Running',
      async () => ((await phaseOf('brief')) === 'Running' ? true : undefined),
      90_000,
    );
    const before = await runtimeState(nodeName);
    const webBefore = before.containers
      .filter((c) => c.metadata?.name === 'main' && c.state === 1)
      .map((c) => c.id);
    expect(webBefore.length).toBeGreaterThanOrEqual(2);

    const outageMs = 120_000;
    await api.refuseFor(outageMs);
    const refusedAt = Date.now();
    // The agent cannot reach the API server: reads fail (connection refused) for two minutes.
    await expect(core.readNode({ name: nodeName })).rejects.toThrow(/ECONNREFUSED/);
    await new Promise((r) => setTimeout(r, outageMs - (Date.now() - refusedAt)));
    await waitFor(
      'the API server back',
      async () => (await core.readNode({ name: nodeName })) ?? undefined,
      20_000,
    );
    const back = Date.now();

    // Every container that ran before still runs (or, for brief, exited by itself with 0).
    const after = await runtimeState(nodeName);
    for (const id of webBefore) {
      const c = after.containers.find((x) => x.id === id);
      expect(c, `container ${id}`).toBeDefined();
      if (c!.state !== 1) expect(c!.labels?.['io.kubernetes.pod.name']).toBe(podName('brief'));
    }
    const renewed = await waitFor(
      'lease renewed after the outage',
      async () => {
        const lease = await coordination.readNamespacedLease({
          name: nodeName,
          namespace: 'kube-node-lease',
        });
        const renew = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
        return renew >= back - 1000 ? lease : undefined;
      },
      30_000,
    );
    expect(renewed.spec?.holderIdentity).toBe(nodeName);
    await waitFor(
      'brief Succeeded on the API server',
      async () => ((await phaseOf('brief')) === 'Succeeded' ? true : undefined),
      30_000,
    );
    expect(await phaseOf('web')).toBe('Running');
    const node = await core.readNode({ name: nodeName });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  }, 240_000);
});
