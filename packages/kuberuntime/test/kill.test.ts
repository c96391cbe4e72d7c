import type { Container, Pod } from '@kubelet-kit/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ContainerKillReason,
  convertPodStatusToRunningPod,
  setTerminationGracePeriod,
} from '../src/index.js';
import { type Harness, harness, makePod } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

/** Drives fake time in small steps, letting gRPC I/O run between them, until `p` settles. */
async function drive<T>(p: Promise<T>, stepMs = 100, maxSteps = 2000): Promise<T> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < maxSteps && !settled; i++) {
    for (let j = 0; j < 5 && !settled; j++) await new Promise((r) => setImmediate(r));
    if (!settled) await h.clock.tick(stepMs);
  }
  return p;
}

describe('TestKillContainerGracePeriod', () => {
  const probe = (grace?: number) => ({
    exec: { command: ['true'] },
    ...(grace !== undefined ? { terminationGracePeriodSeconds: grace } : {}),
  });
  const pod = (spec?: number, deletion?: number): Pod => ({
    metadata: {
      name: 'p',
      namespace: 'n',
      uid: 'u',
      ...(deletion !== undefined ? { deletionGracePeriodSeconds: deletion } : {}),
    },
    spec: { containers: [], ...(spec !== undefined ? { terminationGracePeriodSeconds: spec } : {}) },
  });
  it.each<[string, Pod, Container, ContainerKillReason, number]>([
    ['default termination grace period', pod(), { name: 'c' }, '', 2],
    ['use pod termination grace period', pod(100), { name: 'c' }, '', 100],
    [
      'liveness probe overrides pod termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe(5) },
      'LivenessProbe',
      5,
    ],
    [
      'liveness probe longer than the pod termination grace period',
      pod(10),
      { name: 'c', livenessProbe: probe(50) },
      'LivenessProbe',
      50,
    ],
    [
      'startup probe overrides pod termination grace period',
      pod(100),
      { name: 'c', startupProbe: probe(5) },
      'StartupProbe',
      5,
    ],
    [
      'startup probe longer than the pod termination grace period',
      pod(10),
      { name: 'c', startupProbe: probe(50) },
      'StartupProbe',
      50,
    ],
    [
      'non-liveness probe failure, use pod termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe(5) },
      '',
      100,
    ],
    [
      'non-startup probe failure, use pod termination grace period',
      pod(100),
      { name: 'c', startupProbe: probe(5) },
      '',
      100,
    ],
    [
      'probe without its own grace period, use pod termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe() },
      'LivenessProbe',
      100,
    ],
    [
      'all three grace periods set, use pod termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe(10), startupProbe: probe(20) },
      '',
      100,
    ],
    [
      'all three grace periods set, use startup termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe(10), startupProbe: probe(20) },
      'StartupProbe',
      20,
    ],
    [
      'all three grace periods set, use liveness termination grace period',
      pod(100),
      { name: 'c', livenessProbe: probe(10), startupProbe: probe(20) },
      'LivenessProbe',
      10,
    ],
    ['deletion grace period wins', pod(100, 3), { name: 'c', livenessProbe: probe(10) }, 'LivenessProbe', 3],
  ])('%s', (_name, p, c, reason, expected) => {
    expect(setTerminationGracePeriod(p, c, reason)).toBe(expected);
  });
});

describe('killPod', () => {
  it('runs preStop, subtracts its time from the grace period, stops containers, then the sandbox', async () => {
    const pod = makePod({
      terminationGracePeriodSeconds: 10,
      containers: [
        {
          name: 'a',
          image: 'busybox:v2',
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'slow-stop'] } } },
        },
        { name: 'b', image: 'busybox:v2' },
      ],
    });
    await h.sync(pod);
    h.server.onExec('sh -c slow-stop', async () => {
      await h.clock.sleep(3000);
      return { exitCode: 0 };
    });
    const running = convertPodStatusToRunningPod(await h.status(pod));
    h.server.clearCalls();
    const result = await drive(h.manager.killPod({ pod, runningPod: running }));
    expect(result.syncResults.map((r) => [r.action, r.target, r.error]).sort()).toEqual([
      ['KillContainer', 'a', undefined],
      ['KillContainer', 'b', undefined],
      ['KillPodSandbox', pod.metadata!.uid, undefined],
    ]);
    const stops = h.server.calls<{ containerId: string; timeout: number }>('StopContainer');
    const status = await h.status(pod);
    const idOf = (name: string) => status.containerStatuses.find((c) => c.name === name)!.id.id;
    expect(stops.find((s) => s.request.containerId === idOf('a'))!.request.timeout).toBe(7);
    expect(stops.find((s) => s.request.containerId === idOf('b'))!.request.timeout).toBe(10);
    expect(h.server.calls('ExecSync')).toHaveLength(1);
    // The sandbox is stopped after every container.
    const methods = h.server.calls().map((c) => c.method);
    expect(methods.lastIndexOf('StopContainer')).toBeLessThan(methods.indexOf('StopPodSandbox'));
    expect(status.sandboxStatuses[0]!.state).toBe('notready');
    expect(status.containerStatuses.every((c) => c.state === 'exited')).toBe(true);
  });

  it('abandons a preStop hook at the end of the grace period and stops with the 2 s minimum', async () => {
    const pod = makePod({
      terminationGracePeriodSeconds: 5,
      containers: [
        { name: 'a', image: 'busybox:v2', lifecycle: { preStop: { exec: { command: ['hang'] } } } },
      ],
    });
    await h.sync(pod);
    h.server.onExec('hang', () => new Promise(() => {}));
    const start = h.clock.now();
    await drive(h.manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(await h.status(pod)) }));
    expect(h.clock.now() - start).toBeGreaterThanOrEqual(5000);
    expect(h.clock.now() - start).toBeLessThan(7000);
    expect(h.server.calls<{ timeout: number }>('StopContainer')[0]!.request.timeout).toBe(2);
  });

  it('a gracePeriodOverride replaces the pod grace period; a failed preStop only emits an event', async () => {
    const pod = makePod({
      terminationGracePeriodSeconds: 30,
      containers: [
        { name: 'a', image: 'busybox:v2', lifecycle: { preStop: { exec: { command: ['broken'] } } } },
      ],
    });
    await h.sync(pod);
    h.server.onExec('broken', () => ({ exitCode: 1, stderr: 'nope' }));
    await drive(
      h.manager.killPod({
        pod,
        runningPod: convertPodStatusToRunningPod(await h.status(pod)),
        gracePeriodOverride: 4,
      }),
    );
    expect(h.server.calls<{ timeout: number }>('StopContainer')[0]!.request.timeout).toBe(4);
    const ev = h.recorder.events.find((e) => e.reason === 'FailedPreStopHook')!;
    expect(ev).toMatchObject({ type: 'Warning', message: 'PreStopHook failed' });
  });

  it('without the pod, restores preStop and grace periods from the container annotations', async () => {
    const pod = makePod({
      terminationGracePeriodSeconds: 9,
      containers: [
        { name: 'a', image: 'busybox:v2', lifecycle: { preStop: { exec: { command: ['stop-me'] } } } },
      ],
    });
    await h.sync(pod);
    const fresh = h.newManager();
    const running = (await fresh.getPods(false)).find((p) => p.id === pod.metadata!.uid)!;
    expect(running.containers.map((c) => c.name)).toEqual(['a']);
    await drive(fresh.killPod({ runningPod: running }));
    expect(h.server.calls<{ cmd: string[] }>('ExecSync')[0]!.request.cmd).toEqual(['stop-me']);
    expect(h.server.calls<{ timeout: number }>('StopContainer')[0]!.request.timeout).toBe(9);
  });

  it('stops sidecars after the main containers, later sidecars first', async () => {
    const pod = makePod({
      terminationGracePeriodSeconds: 30,
      initContainers: [
        { name: 's1', image: 'busybox:v2', restartPolicy: 'Always' },
        { name: 's2', image: 'busybox:v2', restartPolicy: 'Always' },
      ],
      containers: [
        { name: 'm', image: 'busybox:v2', lifecycle: { preStop: { exec: { command: ['slow'] } } } },
      ],
    });
    for (let i = 0; i < 4; i++) await h.sync(pod);
    const status = await h.status(pod);
    expect(
      status.containerStatuses
        .filter((c) => c.state === 'running')
        .map((c) => c.name)
        .sort(),
    ).toEqual(['m', 's1', 's2']);
    h.server.onExec('slow', async () => {
      await h.clock.sleep(2000);
      return {};
    });
    h.server.clearCalls();
    await drive(h.manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(status) }));
    const nameOf = new Map(status.containerStatuses.map((c) => [c.id.id, c.name]));
    const order = h.server
      .calls<{ containerId: string }>('StopContainer')
      .map((c) => nameOf.get(c.request.containerId));
    expect(order).toEqual(['m', 's2', 's1']);
  });
});

describe('containers and hooks beyond the table', () => {
  it('stops a running container that the spec no longer names, with its own preStop', async () => {
    const pod = makePod({
      containers: [
        { name: 'keep', image: 'busybox:v2' },
        { name: 'gone', image: 'busybox:v2', lifecycle: { preStop: { exec: { command: ['bye'] } } } },
      ],
    });
    await h.sync(pod);
    const edited = { ...pod, spec: { ...pod.spec!, containers: [pod.spec!.containers[0]!] } };
    const r = await drive(
      h.manager.syncPod({
        pod: edited,
        podStatus: await h.status(edited),
        pullSecrets: [],
        backOff: h.backOff,
      }),
    );
    expect(r.syncResults.map((x) => [x.action, x.target, x.error])).toEqual([
      ['KillContainer', 'gone', undefined],
    ]);
    expect(h.recorder.events.find((e) => e.reason === 'Killing')!.message).toBe(
      'Container gone is not in the pod spec',
    );
    expect(h.server.calls<{ cmd: string[] }>('ExecSync').map((c) => c.request.cmd)).toEqual([['bye']]);
    const status = await h.status(edited);
    expect(status.containerStatuses.map((c) => [c.name, c.state]).sort()).toEqual([
      ['gone', 'exited'],
      ['keep', 'running'],
    ]);
  });

  it('runs httpGet postStart and preStop hooks with the path, port name and headers', async () => {
    const http = await import('node:http');
    const seen: { url: string; header: string | undefined }[] = [];
    const server = http.createServer((req, res) => {
      seen.push({ url: req.url ?? '', header: req.headers['x-hook'] as string | undefined });
      res.statusCode = 500; // any answer counts as success, as upstream
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const pod = makePod({
        terminationGracePeriodSeconds: 5,
        containers: [
          {
            name: 'web',
            image: 'busybox:v2',
            ports: [{ name: 'admin', containerPort: port }],
            lifecycle: {
              postStart: {
                httpGet: {
                  host: '127.0.0.1',
                  port: 'admin',
                  path: 'started',
                  httpHeaders: [{ name: 'X-Hook', value: 'post' }],
                },
              },
              preStop: {
                httpGet: {
                  host: '127.0.0.1',
                  port,
                  path: '/stopping',
                  httpHeaders: [{ name: 'X-Hook', value: 'pre' }],
                },
              },
            },
          },
        ],
      });
      const r = await drive(
        h.manager.syncPod({ pod, podStatus: await h.status(pod), pullSecrets: [], backOff: h.backOff }),
      );
      expect(r.syncResults.find((x) => x.action === 'StartContainer')!.error).toBeUndefined();
      await drive(h.manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(await h.status(pod)) }));
      expect(seen).toEqual([
        { url: '/started', header: 'post' },
        { url: '/stopping', header: 'pre' },
      ]);
    } finally {
      server.close();
    }
  });

  it('a postStart httpGet that cannot connect fails the start', async () => {
    const pod = makePod({
      containers: [
        {
          name: 'web',
          image: 'busybox:v2',
          lifecycle: { postStart: { httpGet: { host: '127.0.0.1', port: 1, path: '/' } } },
        },
      ],
    });
    const r = await drive(
      h.manager.syncPod({ pod, podStatus: await h.status(pod), pullSecrets: [], backOff: h.backOff }),
    );
    const start = r.syncResults.find((x) => x.action === 'StartContainer')!;
    expect(start.error).toBe('PostStartHookError');
    expect(start.message).toContain('HTTP lifecycle hook (/) for Container "web"');
  });
});
