import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ContainerStatus, Pod } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { StaticPodSource } from '@kubelet-kit/pod-config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../src/agent.js';
import { pump } from './pump.js';

// The whole agent (file source → pod workers → kuberuntime → CRI) against the in-memory CRI
// server, on the fake clock. gRPC calls still take real I/O turns, so `pump` alternates fake
// time steps with event-loop turns until a condition holds (bounded; never a timed sleep).
const image = 'localhost/kubelet-kit/busybox:1.0';

function manifest(
  name: string,
  extra: Record<string, unknown> = {},
  container: Record<string, unknown> = {},
) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image, command: ['sleep', '3600'], ...container }],
      ...extra,
    },
  });
}

/** Whether a List call carried a filter (a pod's own status read) rather than listing everything. */
function hasFilter(request: unknown): boolean {
  const filter = (request as { filter?: { labelSelector?: Record<string, string> } } | undefined)?.filter;
  return filter !== undefined && Object.keys(filter.labelSelector ?? {}).length > 0;
}

describe('agent on the in-memory CRI', () => {
  let server: InMemoryCriServer;
  let dir: string;
  let clock: FakeClock;
  let agent: Agent | undefined;
  let recorder: InMemoryEventRecorder;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    recorder = new InMemoryEventRecorder({ now: () => clock.now() });
    server = await InMemoryCriServer.start({ images: [image], clock });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-agent-unit-'));
    fs.mkdirSync(path.join(dir, 'manifests'));
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function start(maxPods = 110, extra: Partial<Parameters<typeof createAgent>[0]> = {}) {
    agent = createAgent({
      runtimeEndpoint: server.endpoint,
      podManifestPath: path.join(dir, 'manifests'),
      rootDirectory: path.join(dir, 'root'),
      nodeName: 'Node-A',
      nodeIPs: ['192.0.2.10'],
      maxPods,
      port: 0,
      clock,
      crashLoopBackOff: { initialMs: 10_000, maxMs: 40_000 },
      recorder,
      ...extra,
    });
    return agent.start();
  }

  const pods = () => agent!.kubelet.podsWithStatus();
  const podNamed = (name: string): Pod | undefined => pods().find((p) => p.metadata?.name === name);

  it('runs static pods from files: sandbox, container, Running with the sandbox IP', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'a.json'), manifest('a'));
    fs.writeFileSync(path.join(dir, 'manifests', 'b.json'), manifest('b'));
    await start();
    const a = await pump(clock, () => {
      const p = podNamed('a-node-a');
      return p?.status?.phase === 'Running' && podNamed('b-node-a')?.status?.phase === 'Running'
        ? p
        : undefined;
    });
    expect(server.calls('RunPodSandbox')).toHaveLength(2);
    expect(server.calls('StartContainer')).toHaveLength(2);
    expect(a.status?.podIP).toMatch(/^10\.88\./);
    expect(a.status?.hostIP).toBe('192.0.2.10');
    expect(a.status?.containerStatuses?.[0]).toMatchObject({ name: 'main', ready: true, restartCount: 0 });
    expect(a.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      'PodReadyToStartContainers=True',
      'Initialized=True',
      'Ready=True',
      'ContainersReady=True',
      'PodScheduled=True',
    ]);
  });

  it('builds the node from its flags: default and extra labels, taints, allocatable', async () => {
    await start(110, {
      nodeLabels: { disk: 'ssd' },
      registerWithTaints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }],
      extendedResources: { 'example.com/foo': 2 },
    });
    expect(agent!.node).toMatchObject({
      name: 'node-a',
      labels: { 'kubernetes.io/hostname': 'node-a', 'kubernetes.io/os': 'linux', disk: 'ssd' },
      taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }],
    });
    expect(agent!.allocatable.scalarResources?.['example.com/foo']).toBe(2);
    const st = fs.statfsSync(dir);
    expect(agent!.allocatable.ephemeralStorage).toBe(
      st.blocks * st.bsize - Math.floor(st.blocks * st.bsize * 0.1),
    );
  });

  it('refuses a malformed --allowed-unsafe-sysctls entry when built', () => {
    expect(() =>
      createAgent({ runtimeEndpoint: server.endpoint, podManifestPath: dir, allowedUnsafeSysctls: ['foo*'] }),
    ).toThrow('the sysctls "foo*" are not known to be namespaced');
  });

  it('reports a started container as Running well before the next periodic relist', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'q.json'), manifest('q'));
    await start();
    const startedAt = await pump(
      clock,
      () => (server.calls('StartContainer').length > 0 ? clock.now() : undefined),
      10,
    );
    const runningAt = await pump(
      clock,
      () => (podNamed('q-node-a')?.status?.containerStatuses?.[0]?.ready ? clock.now() : undefined),
      10,
    );
    // The agent hands the PLEG the status its sync reported, 5 ms after it changed the containers.
    expect(runningAt - startedAt).toBeLessThan(500);
  });

  it('relists during a slow creation neither read the half-made pod nor make a second sandbox', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'slow.json'), manifest('slow'));
    // StartContainer takes real time while the fake clock runs: several 1 s relists pass meanwhile.
    server.setLatency('StartContainer', 300);
    // The log rotation's own ContainerStatus reads (every 10 s) are not the pod's.
    await start(110, { containerLogMonitorIntervalMs: 3_600_000 });
    await pump(clock, () => server.calls('CreateContainer').length > 0);
    const relistsBefore = server.calls('ListPodSandbox').filter((c) => !hasFilter(c.request)).length;
    const statusReadsBefore = server.calls('ContainerStatus').length;
    await pump(clock, () => podNamed('slow-node-a')?.status?.containerStatuses?.[0]?.ready, 50);
    const relistsDuring = server.calls('ListPodSandbox').filter((c) => !hasFilter(c.request)).length;
    const startedAt = server.calls().findIndex((c) => c.method === 'StartContainer');
    // The relists ran while the container was being started...
    expect(relistsDuring).toBeGreaterThan(relistsBefore);
    // ...but the pod was read once, after its sync: one status read of its container, none before.
    expect(statusReadsBefore).toBe(0);
    const reads = server.calls().flatMap((c, i) => (c.method === 'ContainerStatus' ? [i] : []));
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeGreaterThan(startedAt);
    expect(server.calls('RunPodSandbox')).toHaveLength(1);
    expect(server.calls('CreateContainer')).toHaveLength(1);
    // That read was the sync's own, right after the start: the pod was never listed on its own.
    expect(server.calls('ListPodSandbox').filter((c) => hasFilter(c.request))).toHaveLength(0);
    expect(server.calls('ListContainers').filter((c) => hasFilter(c.request))).toHaveLength(0);
  });

  it('creates at most maxConcurrentPodCreations pods at a time', async () => {
    for (const n of ['p1', 'p2', 'p3'])
      fs.writeFileSync(path.join(dir, 'manifests', `${n}.json`), manifest(n));
    await start(110, { maxConcurrentPodCreations: 1 });
    await pump(clock, () => server.calls('StartContainer').length === 3);
    // One creation at a time: each pod's container starts before the next sandbox is asked for.
    const order = server
      .calls()
      .map((c) => c.method)
      .filter((m) => m === 'RunPodSandbox' || m === 'StartContainer');
    expect(order).toEqual([
      'RunPodSandbox',
      'StartContainer',
      'RunPodSandbox',
      'StartContainer',
      'RunPodSandbox',
      'StartContainer',
    ]);
  });

  it("runs pods from an embedder's own source", async () => {
    const source = new StaticPodSource({ nodeName: 'node-a' });
    source.set(JSON.parse(manifest('own')));
    await start(110, { sources: [source] });
    const own = await pump(clock, () => {
      const p = podNamed('own-node-a');
      return p?.status?.phase === 'Running' ? p : undefined;
    });
    expect(own.metadata?.annotations?.['kubernetes.io/config.source']).toBe(source.name);
  });

  it("times kubelet_pod_start_duration_seconds from the agent's first sight of the pod, not its creation", async () => {
    // Created an hour before this node saw it (as an API pod's scheduling delay would make it).
    const created = new Date(clock.now() - 3_600_000).toISOString();
    const text = JSON.parse(manifest('old')) as { metadata: Record<string, unknown> };
    text.metadata.creationTimestamp = created;
    fs.writeFileSync(path.join(dir, 'manifests', 'old.json'), JSON.stringify(text));
    await start();
    await pump(clock, () => podNamed('old-node-a')?.status?.phase === 'Running' || undefined);
    const metric = (await agent!.metrics.registry
      .getSingleMetric('kubelet_pod_start_duration_seconds')
      ?.get()) as { values: Array<{ metricName?: string; value: number }> } | undefined;
    const value = (name: string) => metric?.values.find((v) => v.metricName === name)?.value;
    expect(value('kubelet_pod_start_duration_seconds_count')).toBe(1);
    // The fake clock moved a few seconds at most between the manifest's listing and Running.
    expect(value('kubelet_pod_start_duration_seconds_sum')).toBeLessThan(60);
  });

  it('rejects a pod beyond max pods with a Failed status naming the reason', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'a.json'), manifest('a'));
    await start(1);
    await pump(clock, () => podNamed('a-node-a')?.status?.phase === 'Running');
    fs.writeFileSync(path.join(dir, 'manifests', 'b.json'), manifest('b'));
    const b = await pump(clock, () => {
      const p = podNamed('b-node-a');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    expect(b.status?.reason).toBe('OutOfpods');
    expect(b.status?.message).toBe(
      "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1",
    );
    expect(server.calls('RunPodSandbox')).toHaveLength(1);
  });

  it('restarts a crashing container at once, then after the crash-loop backoff', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'c.json'), manifest('c'));
    await start();
    await pump(clock, () => podNamed('c-node-a')?.status?.phase === 'Running');
    const crash = () => {
      const running = server.calls('StartContainer').at(-1)!.request as { containerId: string };
      server.exitContainer(running.containerId, 1, { reason: 'Error', message: 'boom' });
      return clock.now();
    };
    crash();
    // The first restart is immediate (next relist).
    await pump(clock, () => server.calls('StartContainer').length === 2);
    const secondCrash = crash();
    let backoff: ContainerStatus | undefined;
    await pump(clock, () => {
      const s = podNamed('c-node-a')?.status?.containerStatuses?.[0];
      // Seen while it waits, before the restart.
      const starts = server.calls('StartContainer').length;
      if (s?.state?.waiting?.reason === 'CrashLoopBackOff' && starts === 2) backoff ??= s;
      return starts === 3;
    });
    const waited = clock.now() - secondCrash;
    expect(waited).toBeGreaterThanOrEqual(10_000);
    // Requeued every 10 s while in backoff, so the restart comes within one more period.
    expect(waited).toBeLessThanOrEqual(21_000);
    expect(backoff?.restartCount).toBe(1);
    expect(backoff?.lastState?.terminated?.exitCode).toBe(1);
    expect(backoff?.state?.waiting?.message).toMatch(/back-off 10s restarting failed container=main/);
    expect(recorder.events.some((e) => e.reason === 'BackOff')).toBe(true);
    const running = await pump(clock, () => {
      const s = podNamed('c-node-a')?.status?.containerStatuses?.[0];
      return s?.state?.running && s.restartCount === 2 ? s : undefined;
    });
    expect(running.lastState?.terminated?.exitCode).toBe(1);
  });

  it('keeps the pod IP in the status of a pod that finished and whose sandbox was stopped', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'n.json'), manifest('n', { restartPolicy: 'Never' }));
    await start();
    const running = await pump(clock, () => {
      const p = podNamed('n-node-a');
      return p?.status?.phase === 'Running' ? p : undefined;
    });
    const ip = running.status?.podIP;
    expect(ip).toMatch(/^10\.88\./);
    const started = server.calls('StartContainer').at(-1)!.request as { containerId: string };
    server.exitContainer(started.containerId, 0, { reason: 'Completed' });
    // Every status the pod shows from here on, until its sandbox is stopped and it settles.
    const seen: Array<string | undefined> = [];
    const done = await pump(clock, () => {
      const p = podNamed('n-node-a');
      if (p?.status?.phase === 'Succeeded') seen.push(p.status.podIP);
      return p?.status?.phase === 'Succeeded' && server.calls('StopPodSandbox').length > 0 && seen.length > 20
        ? p
        : undefined;
    });
    expect(done.status?.podIP).toBe(ip);
    expect(done.status?.podIPs).toEqual([{ ip }]);
    // Not dropped in between (upstream carries the IPs over the sandbox's stop).
    expect(new Set(seen)).toEqual(new Set([ip]));
  });

  it('records FailedKillPod when killing a deleted pod fails, and kills it on a later try', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'k.json'), manifest('k'));
    await start();
    await pump(clock, () => podNamed('k-node-a')?.status?.phase === 'Running');
    server.failNext('StopPodSandbox', 1, 'Internal', 'sandbox stuck');
    fs.rmSync(path.join(dir, 'manifests', 'k.json'));
    const failed = await pump(clock, () => recorder.events.find((e) => e.reason === 'FailedKillPod'));
    expect(failed.type).toBe('Warning');
    expect(failed.message).toMatch(/^error killing pod: .*sandbox stuck/);
    // The worker's error backoff, then the kill again.
    await pump(clock, () => server.calls('StopPodSandbox').length >= 2);
    await pump(clock, () => server.calls('RemovePodSandbox').length >= 1);
  });

  it('fails a pod past activeDeadlineSeconds with DeadlineExceeded and stops its containers', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'j.json'), manifest('j', { activeDeadlineSeconds: 30 }));
    await start();
    const running = await pump(clock, () => {
      const p = podNamed('j-node-a');
      return p?.status?.phase === 'Running' ? p : undefined;
    });
    const startedAt = Date.parse(running.status?.startTime ?? '');
    expect(server.calls('StopContainer')).toHaveLength(0);
    const failed = await pump(clock, () => {
      const p = podNamed('j-node-a');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    // Not before the deadline, and within a sync tick or two after it.
    expect(clock.now() - startedAt).toBeGreaterThanOrEqual(30_000);
    expect(clock.now() - startedAt).toBeLessThan(33_000);
    expect(failed.status?.reason).toBe('DeadlineExceeded');
    expect(failed.status?.message).toBe('Pod was active on the node longer than the specified deadline');
    await pump(clock, () => server.calls('StopContainer').length > 0);
    expect(recorder.events.some((e) => e.reason === 'DeadlineExceeded')).toBe(true);
  });

  it('kills the pod when its manifest is deleted, and forgets it', async () => {
    fs.writeFileSync(path.join(dir, 'manifests', 'd.json'), manifest('d'));
    await start();
    await pump(clock, () => podNamed('d-node-a')?.status?.phase === 'Running');
    fs.rmSync(path.join(dir, 'manifests', 'd.json'));
    await pump(clock, () => server.calls('StopPodSandbox').length > 0);
    await pump(clock, () => podNamed('d-node-a') === undefined);
    expect(server.calls('StopContainer').length).toBeGreaterThan(0);
  });
});
