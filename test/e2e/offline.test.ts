// End to end: offline autonomy (`kubelet-kit run --kubeconfig … --offline-store-dir …`) on the
// private containerd against the in-memory API server. The agent is killed, the API server
// stopped, the agent started again: it manages its pods from the offline store (same containers,
// restart counts kept), a liveness failure during the outage restarts a container whose
// ConfigMap, Secret and token volumes come from the store, and once the server is back the
// statuses and events reach it in order (even across a second restart during the outage) and a
// pod deleted meanwhile is stopped.
//   source scripts/containerd/env.sh && bash scripts/containerd/up.sh && npm run build
//   npx vitest run --project e2e test/e2e/offline.test.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeApiServer, type KubeObject } from '@kubelet-kit/apiserver/testing';
import type { CoreV1Event, Pod } from '@kubelet-kit/core';
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

const nodeName = `e2e-offline-${randomBytes(3).toString('hex')}`;
const podName = (name: string) => `${name}-${nodeName}`;
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done";

/** A pod whose volumes need the API server: a ConfigMap, a Secret and a projected token. */
function podManifest(name: string, hostDir: string, extra: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(name), namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 2,
      serviceAccountName: 'default',
      containers: [
        {
          name: 'main',
          image: busybox,
          imagePullPolicy: 'IfNotPresent',
          // A new container clears the trigger the test leaves, then checks what it was given.
          command: [
            'sh',
            '-c',
            `rm -f /host/unhealthy; test "$(cat /cm/greeting)" = hello || exit 3; ${sleeper}`,
          ],
          volumeMounts: [
            { name: 'cm', mountPath: '/cm' },
            { name: 'secret', mountPath: '/secret' },
            { name: 'token', mountPath: '/var/run/secrets/tokens' },
            { name: 'host', mountPath: '/host' },
          ],
          ...extra,
        },
      ],
      volumes: [
        { name: 'cm', configMap: { name: 'offline-cm' } },
        { name: 'secret', secret: { secretName: 'offline-secret' } },
        {
          name: 'token',
          projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] },
        },
        { name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
      ],
    },
  } as Pod;
}

describe('kubelet-kit run --offline-store-dir: a node that works without its API server', () => {
  let dir: string;
  let kubeconfig: string;
  let storeDir: string;
  let api: FakeApiServer;
  let agent: AgentProcess | undefined;
  let core: CoreV1Api;
  let coordination: CoordinationV1Api;

  const args = () => [
    '--kubeconfig',
    kubeconfig,
    '--offline-store-dir',
    storeDir,
    '--node-status-report-frequency',
    '15s',
  ];
  const start = () =>
    startAgent({
      nodeName,
      manifestDir: path.join(dir, 'manifests'),
      rootDir: path.join(dir, 'root'),
      args: args(),
    });
  const apiPod = (name: string) => api.get<Pod & KubeObject>('Pod', 'default', podName(name));
  const mainContainers = async (name: string) =>
    (await runtimeState(nodeName)).containers.filter(
      (c) => c.labels?.['io.kubernetes.pod.name'] === podName(name) && c.metadata?.name === 'main',
    );

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-offline-e2e-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
    storeDir = path.join(dir, 'store');
    api = new FakeApiServer({ kubeletScheme: 'http' });
    await api.start();
    kubeconfig = api.writeKubeconfig(path.join(dir, 'kubeconfig'));
    const kc = api.makeKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    coordination = kc.makeApiClient(CoordinationV1Api);
    api.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'offline-cm', namespace: 'default' },
      data: { greeting: 'hello' },
    });
    api.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'offline-secret', namespace: 'default' },
      data: { password: Buffer.from('s3cret').toString('base64') },
    });
    agent = await start();
  }, 60_000);

  afterAll(async () => {
    // KUBELET_KIT_E2E_AGENT_LOG=<file>: the last agent's log lines, for a failed run.
    const logFile = process.env.KUBELET_KIT_E2E_AGENT_LOG;
    if (logFile && agent) fs.writeFileSync(logFile, agent.logs.map((l) => JSON.stringify(l)).join('\n'));
    await agent?.kill();
    await api?.stop();
    await removeNodePods(nodeName);
    for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const mountPoint = line.split(' ')[4];
      if (dir && mountPoint?.startsWith(dir)) fs.existsSync(mountPoint) && (await umount(mountPoint));
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps managing its pods across a restart without the API server, and catches up after', async () => {
    const flakyDir = path.join(dir, 'flaky');
    await core.createNamespacedPod({
      namespace: 'default',
      body: podManifest('flaky', flakyDir, {
        livenessProbe: {
          exec: { command: ['sh', '-c', 'test ! -f /host/unhealthy'] },
          initialDelaySeconds: 1,
          periodSeconds: 1,
          failureThreshold: 1,
        },
      }) as never,
    });
    await core.createNamespacedPod({
      namespace: 'default',
      body: podManifest('keep', path.join(dir, 'keep')) as never,
    });
    await core.createNamespacedPod({
      namespace: 'default',
      body: podManifest('doomed', path.join(dir, 'doomed')) as never,
    });
    const names = ['flaky', 'keep', 'doomed'];
    await waitFor(
      'three pods Running on the API server',
      async () => (names.every((n) => apiPod(n)?.status?.phase === 'Running') ? true : undefined),
      60_000,
    );
    // Everything the pods need is in the store before the agent goes: pods, objects, token.
    const stored = (kind: string) =>
      fs.existsSync(path.join(storeDir, kind)) ? fs.readdirSync(path.join(storeDir, kind)) : [];
    await waitFor('the store filled', async () =>
      stored('pods').length === 3 &&
      stored('configmaps').length >= 1 &&
      stored('secrets').length === 1 &&
      stored('tokens').length === 3
        ? true
        : undefined,
    );
    for (const file of stored('secrets'))
      expect(fs.statSync(path.join(storeDir, 'secrets', file)).mode & 0o777).toBe(0o600);
    for (const file of stored('tokens'))
      expect(fs.statSync(path.join(storeDir, 'tokens', file)).mode & 0o777).toBe(0o600);
    const before = new Map<string, string>();
    for (const n of names) {
      const running = (await mainContainers(n)).filter((c) => c.state === 1);
      expect(running, n).toHaveLength(1);
      before.set(n, running[0]!.id);
    }
    const flakyUid = apiPod('flaky')!.metadata!.uid!;

    // The agent dies, then the API server goes; the agent comes back alone.
    await agent!.kill();
    agent = undefined;
    await api.stop();
    const outageStart = Date.now();
    agent = await start();
    await waitFor(
      'the agent managing the stored pods',
      async () => {
        const pods = await agent!.pods();
        return names.every((n) => pods.some((p) => p.metadata?.name === podName(n))) ? true : undefined;
      },
      30_000,
    );
    expect(agent.logs.some((l) => String(l.msg).includes('serving the pods of the offline store'))).toBe(
      true,
    );

    // A liveness failure while the server is away restarts the container; its volumes are
    // set up again from the stored ConfigMap, Secret and token (the new container checks them).
    fs.writeFileSync(path.join(flakyDir, 'unhealthy'), '');
    const restarted = await waitFor(
      'flaky restarted by its liveness probe',
      async () => (await mainContainers('flaky')).find((c) => c.state === 1 && c.id !== before.get('flaky')),
      40_000,
    );
    expect(restarted.metadata?.attempt).toBe(1);
    // Meanwhile the pod `doomed` is deleted on the server (no grace: gone at once).
    api.delete('Pod', 'default', podName('doomed'), { gracePeriodSeconds: 0 });
    // Still stable after a few seconds: the new container stays up (its checks passed) and
    // nothing else was touched because the server is gone.
    await new Promise((r) => setTimeout(r, 3_000));
    for (const n of ['keep', 'doomed']) {
      const c = (await mainContainers(n)).find((x) => x.id === before.get(n));
      expect(c?.state, `${n} still running offline`).toBe(1);
    }
    expect((await mainContainers('flaky')).find((c) => c.id === restarted.id)?.state).toBe(1);
    const outageEnd = Date.now();

    // The agent dies again before the server is back: the outage's events, kept in the store,
    // must survive it.
    await agent!.kill();
    agent = await start();
    await waitFor(
      'the agent managing the stored pods again',
      async () => {
        const pods = await agent!.pods();
        return ['keep', 'flaky'].every((n) => pods.some((p) => p.metadata?.name === podName(n)))
          ? true
          : undefined;
      },
      30_000,
    );

    // The server returns with the same state.
    await api.start();
    await waitFor(
      'the restart reaching the API server',
      async () => (apiPod('flaky')?.status?.containerStatuses?.[0]?.restartCount === 1 ? true : undefined),
      60_000,
    );
    await waitFor(
      'doomed stopped',
      async () => ((await mainContainers('doomed')).every((c) => c.state !== 1) ? true : undefined),
      60_000,
    );
    // Same containers, restart counts kept (not reset by the new agent).
    const keepStatus = apiPod('keep')?.status?.containerStatuses?.[0];
    expect(keepStatus?.restartCount).toBe(0);
    expect(keepStatus?.containerID).toBe(`containerd://${before.get('keep')}`);
    expect(apiPod('flaky')?.status?.containerStatuses?.[0]?.containerID).toBe(`containerd://${restarted.id}`);
    expect((await mainContainers('keep')).find((c) => c.id === before.get('keep'))?.state).toBe(1);

    // The flaky pod's status patches arrive in order: its restart count never goes back.
    const counts = api.requests
      .filter(
        (r) =>
          r.method === 'PATCH' && r.path === `/api/v1/namespaces/default/pods/${podName('flaky')}/status`,
      )
      .map((r) => (r.body as { status?: Pod['status'] }).status?.containerStatuses?.[0]?.restartCount)
      .filter((n): n is number => n !== undefined);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));

    // The events of the outage reach the server, in the order they happened.
    const outageEvents = await waitFor(
      'the outage events on the API server',
      async () => {
        const events = api
          .list<CoreV1Event & KubeObject>('Event', 'default')
          .filter((e) => e.involvedObject.uid === flakyUid)
          .filter((e) => {
            const t = Date.parse(e.firstTimestamp ?? '');
            return t >= Math.floor(outageStart / 1000) * 1000 && t <= outageEnd;
          });
        const reasons = events.map((e) => e.reason);
        return ['Unhealthy', 'Killing', 'Started'].every((r) => reasons.includes(r)) ? events : undefined;
      },
      60_000,
    );
    const byArrival = [...outageEvents].sort(
      (a, b) => Number(a.metadata?.resourceVersion) - Number(b.metadata?.resourceVersion),
    );
    const times = byArrival.map((e) => Date.parse(e.firstTimestamp ?? ''));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const reasons = byArrival.map((e) => e.reason);
    // A probe failure, the kill it caused, then the restarted container. The probe may fail again
    // before the outage ends, so the window can close on a second kill whose start comes after it.
    const firstKill = reasons.indexOf('Killing');
    expect(reasons.indexOf('Unhealthy')).toBeLessThan(firstKill);
    expect(reasons.indexOf('Started', firstKill)).toBeGreaterThan(firstKill);

    // The Lease is renewed again: a renewal written after the outage ended (none could be
    // written while the server was stopped).
    await waitFor(
      'the lease renewed',
      async () => {
        const lease = await coordination.readNamespacedLease({
          name: nodeName,
          namespace: 'kube-node-lease',
        });
        return new Date(lease.spec?.renewTime ?? 0).getTime() > outageEnd ? true : undefined;
      },
      30_000,
    );
    // The deleted pod left the store with the source.
    await waitFor('doomed gone from the store', async () => (stored('pods').length === 2 ? true : undefined));
  }, 110_000);
});

async function umount(mountPoint: string): Promise<void> {
  const { execFileSync } = await import('node:child_process');
  execFileSync('umount', [mountPoint]);
}
