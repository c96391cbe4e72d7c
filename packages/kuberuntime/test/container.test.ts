// container.ts (upstream kuberuntime_container.go): starting and killing containers with their
// hooks and grace periods, removing instances, and CRI container statuses.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type Container,
  noopEventRecorder,
  noopLogger,
  type Pod,
  RealClock,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from '@kubelet-kit/core';
import { advanceUntil, settleRealIO } from '@kubelet-kit/core/testing';
import { ContainerState, type ContainerStatus as CriContainerStatus, CriError } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ContainerContext,
  fieldPath,
  getContainerSpec,
  pruneInitContainersBeforeStart,
  purgeInitContainers,
  removeSupersededNeverStarted,
  setTerminationGracePeriod,
  toContainerState,
  toContainerStatus,
} from '../src/container.js';
import { type ContainerKillReason, convertPodStatusToRunningPod } from '../src/index.js';
import { newContainerAnnotations, newContainerLabels } from '../src/labels.js';
import { type Harness, harness, makePod, overriding } from './harness.js';

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
  // The I/O turns come before each look, so a call is under way before fake time first moves.
  await advanceUntil(
    h.clock,
    async () => {
      await settleRealIO();
      return settled;
    },
    // The condition already let I/O run; a second settle after each step would only repeat it.
    { step: stepMs, limit: maxSteps, settle: async () => {} },
  );
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

describe('startContainer steps (upstream kuberuntime_container.go)', () => {
  const eventsOf = (reason: string) => h.recorder.events.filter((e) => e.reason === reason);

  it('records Created and Started on the container, with upstream messages', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    expect(eventsOf('Created').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{c}', 'Created container: c'],
    ]);
    expect(eventsOf('Started').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{c}', 'Started container c'],
    ]);
  });

  // EnsureImageExists fails with a bare reason error, so the container's Failed event reads
  // "Error: <reason>" (the image manager's own event carries the detail).
  it('an image failure records "Error: <reason>" on the container', async () => {
    const pod = makePod({
      containers: [
        { name: 'never', image: 'localhost/absent:1', imagePullPolicy: 'Never' },
        { name: 'pull', image: 'localhost/absent:2', imagePullPolicy: 'Always' },
      ],
    });
    h.server.setPullUnknownImages('NotFound');
    const r = await h.sync(pod);
    expect(r.syncResults.filter((x) => x.action === 'StartContainer').map((x) => x.error)).toEqual([
      'ErrImageNeverPull',
      'ErrImagePull',
    ]);
    expect(eventsOf('Failed').map((e) => [e.object.fieldPath, e.message])).toEqual([
      ['spec.containers{never}', 'Error: ErrImageNeverPull'],
      ['spec.containers{pull}', expect.stringMatching(/^Failed to pull image "localhost\/absent:2": /)],
      ['spec.containers{pull}', 'Error: ErrImagePull'],
    ]);
  });

  it('a config error is CreateContainerConfigError with a Failed event, and nothing is created', async () => {
    const pod = makePod({
      containers: [
        {
          name: 'c',
          image: 'busybox:v2',
          env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }],
        },
      ],
    });
    const r = await h.sync(pod);
    const start = r.syncResults.find((x) => x.action === 'StartContainer')!;
    expect(start.error).toBe('CreateContainerConfigError');
    expect(eventsOf('Failed').map((e) => e.message)).toEqual([`Error: ${start.message}`]);
    expect(h.server.calls('CreateContainer')).toHaveLength(0);
    expect(eventsOf('Created')).toEqual([]);
  });

  it('a failed CreateContainer is CreateContainerError with the runtime message', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    h.server.failNext('CreateContainer', 1, 'Unknown', 'no space left');
    const r = await h.sync(pod);
    expect(r.syncResults.find((x) => x.action === 'StartContainer')).toMatchObject({
      error: 'CreateContainerError',
      message: 'no space left',
    });
    expect(eventsOf('Failed').map((e) => e.message)).toEqual(['Error: no space left']);
    expect(eventsOf('Created')).toEqual([]);
  });

  // recordContainerEvent: a runtime error naming the container ID is recorded with the
  // container's name instead (the sync result keeps the runtime's message).
  it('a failed StartContainer is RunContainerError; its event names the container, not its ID', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    let startedId = '';
    const manager = h.newManager({
      runtimeService: overriding(h.rs, {
        startContainer: (_real, req: { containerId: string }) => {
          startedId = req.containerId;
          return Promise.reject(
            new CriError({
              grpcStatus: 2,
              details: `failed to start ${req.containerId}: exec format error`,
              method: 'StartContainer',
            }),
          );
        },
      }),
    });
    const podStatus = await h.status(pod);
    const r = await manager.syncPod({ pod, podStatus, pullSecrets: [], backOff: h.backOff });
    expect(r.syncResults.find((x) => x.action === 'StartContainer')).toMatchObject({
      error: 'RunContainerError',
      message: `failed to start ${startedId}: exec format error`,
    });
    expect(eventsOf('Failed').map((e) => e.message)).toEqual(['Error: failed to start c: exec format error']);
    expect(eventsOf('Created')).toHaveLength(1);
    expect(eventsOf('Started')).toEqual([]);
  });
});

describe('the container spec a kill or start works on', () => {
  const pod = makePod({
    initContainers: [{ name: 'init', image: 'busybox' }],
    containers: [{ name: 'app', image: 'busybox' }],
    ephemeralContainers: [{ name: 'debug', image: 'busybox' }],
  });

  it('finds a container in whichever list names it, and none it does not name', () => {
    expect(getContainerSpec(pod, 'init')?.type).toBe('init');
    expect(getContainerSpec(pod, 'app')?.type).toBe('container');
    expect(getContainerSpec(pod, 'debug')?.type).toBe('ephemeral');
    expect(getContainerSpec(pod, 'gone')).toBeUndefined();
  });

  it('names the list in the event field path', () => {
    expect(fieldPath('init', 'init')).toBe('spec.initContainers{init}');
    expect(fieldPath('container', 'app')).toBe('spec.containers{app}');
    expect(fieldPath('ephemeral', 'debug')).toBe('spec.ephemeralContainers{debug}');
  });
});

describe('CRI container status conversion (upstream toKubeContainerStatus)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-container-status-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const spec: Container = { name: 'app', image: 'busybox', terminationMessagePath: '/dev/termination-log' };
  const pod = makePod({ containers: [spec] });
  const criStatus = (over: Partial<CriContainerStatus>, container: Container = spec): CriContainerStatus => ({
    id: 'c1',
    state: ContainerState.CONTAINER_EXITED,
    createdAt: 1_000_000_000,
    startedAt: 2_000_000_000,
    finishedAt: 3_500_000_000,
    exitCode: 1,
    image: {
      image: 'busybox',
      userSpecifiedImage: 'docker.io/library/busybox',
      annotations: {},
      runtimeHandler: '',
      imageRef: '',
    },
    imageRef: 'sha256:ref',
    reason: 'Error',
    message: '',
    labels: newContainerLabels(container, pod),
    annotations: newContainerAnnotations(container, pod, 3, 'container'),
    mounts: [],
    logPath: '',
    imageId: '',
    stopSignal: 0,
    ...over,
  });

  it('maps the CRI states, anything else being unknown', () => {
    expect(toContainerState(ContainerState.CONTAINER_CREATED)).toBe('created');
    expect(toContainerState(ContainerState.CONTAINER_RUNNING)).toBe('running');
    expect(toContainerState(ContainerState.CONTAINER_EXITED)).toBe('exited');
    expect(toContainerState(ContainerState.CONTAINER_UNKNOWN)).toBe('unknown');
  });

  it('reads name, times in ms, restart count and image from labels, annotations and the status', async () => {
    const s = await toContainerStatus(criStatus({}), 'containerd');
    expect(s).toMatchObject({
      id: { type: 'containerd', id: 'c1' },
      name: 'app',
      state: 'exited',
      createdAt: 1000,
      startedAt: 2000,
      finishedAt: 3500,
      exitCode: 1,
      reason: 'Error',
      restartCount: 3,
      image: 'docker.io/library/busybox',
      imageId: 'sha256:ref',
      imageRef: 'sha256:ref',
    });
  });

  it('a container still running has no exit code, reason, message or finish time', async () => {
    const s = await toContainerStatus(
      criStatus({ state: ContainerState.CONTAINER_RUNNING, message: 'stale', finishedAt: 9e9 }),
      'containerd',
    );
    expect([s.exitCode, s.reason, s.message, s.finishedAt]).toEqual([0, '', '', 0]);
    const created = await toContainerStatus(criStatus({ state: ContainerState.CONTAINER_CREATED }), 'x');
    expect(created.startedAt).toBe(0);
  });

  it("appends the termination message file to the runtime's message", async () => {
    const file = path.join(dir, 'termination-log');
    fs.writeFileSync(file, 'disk full');
    const mounts = [
      { containerPath: '/dev/termination-log', hostPath: file } as CriContainerStatus['mounts'][number],
    ];
    const s = await toContainerStatus(criStatus({ mounts, message: 'exit 1' }), 'containerd');
    expect(s.message).toBe('exit 1: disk full');
  });

  it('takes the log tail only under FallbackToLogsOnError, and only for a failure', async () => {
    const logPath = path.join(dir, '0.log');
    fs.writeFileSync(logPath, '2026-12-02T10:00:00.000000000Z stderr F it broke\n');
    const fallback: Container = { ...spec, terminationMessagePolicy: 'FallbackToLogsOnError' };
    const failed = await toContainerStatus(criStatus({ logPath }, fallback), 'containerd');
    expect(failed.message).toBe('it broke\n');
    const succeeded = await toContainerStatus(criStatus({ logPath, exitCode: 0 }, fallback), 'containerd');
    expect(succeeded.message).toBe('');
    const filePolicy = await toContainerStatus(criStatus({ logPath }), 'containerd');
    expect(filePolicy.message).toBe('');
  });
});

describe('removing container instances before a start', () => {
  /** A context whose runtime records removals and fails those of the IDs in `failing`. */
  function removalContext(failing: string[] = []) {
    const removed: string[] = [];
    const forgotten: string[] = [];
    const warnings: string[] = [];
    const ctx = {
      runtimeService: {
        containerStatus: async () => ({ info: {} }),
        removeContainer: async ({ containerId }: { containerId?: string }) => {
          if (failing.includes(containerId ?? '')) throw new Error('disk busy');
          removed.push(containerId ?? '');
          return {};
        },
      },
      clock: new RealClock(),
      logger: { ...noopLogger, warn: (_fields: unknown, msg: string) => warnings.push(msg) },
      recorder: noopEventRecorder,
      forgetContainerStatus: (id: string) => forgotten.push(id),
    } as unknown as ContainerContext;
    return { ctx, removed, forgotten, warnings };
  }
  const instance = (name: string, id: string, state: RuntimeContainerStatus['state']) =>
    ({ name, id: { type: 'containerd', id }, state }) as RuntimeContainerStatus;
  const podStatus = (...containerStatuses: RuntimeContainerStatus[]) =>
    ({ containerStatuses }) as unknown as RuntimePodStatus;
  const pod = makePod({
    initContainers: [{ name: 'init', image: 'busybox' }],
    containers: [{ name: 'app', image: 'busybox' }],
  });

  it('keeps the newest exited instance of each init container (upstream pruneInitContainersBeforeStart)', async () => {
    const { ctx, removed, forgotten } = removalContext();
    const status = podStatus(
      instance('init', 'i3', 'exited'),
      instance('init', 'i2', 'unknown'),
      instance('init', 'i1', 'exited'),
      instance('app', 'a2', 'exited'),
      instance('app', 'a1', 'exited'),
    );
    expect(await pruneInitContainersBeforeStart(ctx, pod, status)).toBe(2);
    expect(removed).toEqual(['i2', 'i1']);
    expect(forgotten).toEqual(['i2', 'i1']);
  });

  it('purges every instance of the init containers and none of the others', async () => {
    const { ctx, removed } = removalContext();
    await purgeInitContainers(
      ctx,
      pod,
      podStatus(
        instance('init', 'i2', 'running'),
        instance('init', 'i1', 'exited'),
        instance('app', 'a1', 'exited'),
      ),
    );
    expect(removed).toEqual(['i2', 'i1']);
  });

  it('removes a never-started instance only behind a newer one; a failed removal is logged, not thrown', async () => {
    const { ctx, removed, warnings } = removalContext(['a1']);
    const status = podStatus(
      instance('app', 'a3', 'created'),
      instance('app', 'a2', 'created'),
      instance('app', 'a1', 'created'),
      instance('app', 'a0', 'exited'),
    );
    expect(await removeSupersededNeverStarted(ctx, status)).toBe(2);
    expect(removed).toEqual(['a2']);
    expect(warnings).toEqual(['failed to remove a container that never started']);
  });
});
