import type { Pod, PodStatus, ProbeResultUpdate } from '@kubelet-kit/core';
import { InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DefaultProbeManager, type ProbeManagerOptions } from '../src/prober-manager.js';
import {
  containerId,
  execProbe,
  MapStatusProvider,
  newClock,
  podUid,
  podWith,
  runningStatus,
  ScriptedRunner,
} from './helpers.js';

function setup(options: Partial<ProbeManagerOptions> = {}) {
  // The kubelet has been up for an hour unless a test says otherwise.
  const clock = newClock();
  const bootClock = options.clock ?? clock;
  const runner = new ScriptedRunner();
  const statuses = new MapStatusProvider();
  const manager = new DefaultProbeManager({
    statusProvider: statuses,
    runner,
    clock: bootClock,
    random: () => 0,
    ...options,
  });
  return { clock, runner, statuses, manager };
}

/** A manager created an hour ago, so no jitter applies and no container counts as pre-restart. */
function setupStarted(options: Partial<ProbeManagerOptions> = {}) {
  const t = setup(options);
  t.clock.advance(3_600_000);
  return t;
}

function collect(manager: DefaultProbeManager) {
  const seen: ProbeResultUpdate[] = [];
  manager.livenessManager.subscribe((u) => seen.push({ ...u, kind: 'liveness' } as ProbeResultUpdate));
  manager.readinessManager.subscribe((u) => seen.push({ ...u, kind: 'readiness' } as ProbeResultUpdate));
  return seen;
}

describe('DefaultProbeManager', () => {
  it('starts one worker per probe of containers and restartable init containers, in AddPod', async () => {
    const t = setupStarted();
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'ns', uid: podUid },
      spec: {
        containers: [
          { name: 'a', readinessProbe: execProbe(), livenessProbe: execProbe(), startupProbe: execProbe() },
          { name: 'b' },
        ],
        initContainers: [
          { name: 'init', livenessProbe: execProbe() },
          { name: 'sidecar', restartPolicy: 'Always', readinessProbe: execProbe() },
        ],
      },
    };
    t.manager.addPod(pod);
    expect(t.manager.workerCount).toBe(4);
    t.manager.addPod(pod);
    expect(t.manager.workerCount).toBe(4);
    t.manager.start();
    t.manager.removePod(pod);
    await t.clock.tick(0);
    expect(t.manager.workerCount).toBe(0);
    await t.manager.stop();
  });

  it('probes every periodSeconds on the clock without drift', async () => {
    const t = setupStarted();
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Liveness', execProbe({ periodSeconds: 3 })));
    const starts: number[] = [];
    const original = t.runner.runInContainer.bind(t.runner);
    t.runner.runInContainer = (o) => {
      starts.push(t.clock.now());
      return original(o);
    };
    t.manager.start();
    await t.clock.tick(0);
    await t.clock.tick(10_000);
    const t0 = starts[0]!;
    expect(starts.map((s) => s - t0)).toEqual([0, 3_000, 6_000, 9_000]);
    await t.manager.stop();
  });

  it('spreads the first probe by a random part of the period right after start (jitter)', async () => {
    const t = setup({ random: () => 0.25 });
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Readiness', execProbe({ periodSeconds: 8 })));
    t.manager.start();
    await t.clock.tick(1_999);
    expect(t.runner.calls).toHaveLength(0);
    await t.clock.tick(1);
    expect(t.runner.calls).toHaveLength(1);
    await t.manager.stop();
  });

  it('aligns ticks on a grid of tickAlignmentMs: at most that much late, same period', async () => {
    const t = setupStarted({ tickAlignmentMs: 20 });
    // Off the grid: the worker starts 7 ms past a multiple of 20 ms.
    t.clock.advance(7);
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Liveness', execProbe({ periodSeconds: 1 })));
    const starts: number[] = [];
    const original = t.runner.runInContainer.bind(t.runner);
    t.runner.runInContainer = (o) => {
      starts.push(t.clock.now());
      return original(o);
    };
    const added = t.clock.now();
    t.manager.start();
    await t.clock.tick(0);
    await t.clock.tick(3_100);
    // The first probe at once (as upstream), then ticks 13 ms later than upstream's, on the grid.
    expect(starts.map((s) => s - added)).toEqual([0, 1_013, 2_013, 3_013]);
    expect(starts.slice(1).every((s) => s % 20 === 0)).toBe(true);
    await t.manager.stop();
  });

  it('aligns the jittered first probe on the grid too', async () => {
    const t = setup({ random: () => 0.2504, tickAlignmentMs: 20 });
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Readiness', execProbe({ periodSeconds: 1 })));
    t.manager.start();
    // 250.4 ms of jitter rounds up to 260 ms.
    await t.clock.tick(259);
    expect(t.runner.calls).toHaveLength(0);
    await t.clock.tick(1);
    expect(t.runner.calls).toHaveLength(1);
    await t.clock.tick(1_000);
    expect(t.runner.calls).toHaveLength(2);
    await t.manager.stop();
  });

  it('readiness failures never touch the liveness results (no restart from readiness)', async () => {
    const t = setupStarted();
    const seen = collect(t.manager);
    t.runner.exitCode = 1;
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Readiness', execProbe({ failureThreshold: 1 })));
    t.manager.start();
    await t.clock.tick(10_000);
    expect(t.runner.calls.length).toBeGreaterThan(5);
    expect(t.manager.livenessManager.get(containerId)).toBeUndefined();
    expect(t.manager.readinessManager.get(containerId)).toBe('Failure');
    // Only the change from nothing to the initial Failure: repeated failures emit nothing.
    expect(seen).toEqual([{ containerId, result: 'Failure', podUid, kind: 'readiness' }]);
    await t.manager.stop();
  });

  it('a failing liveness probe emits one Failure update after failureThreshold periods, then holds', async () => {
    const recorder = new InMemoryEventRecorder();
    const t = setupStarted({ recorder });
    const seen = collect(t.manager);
    t.runner.exitCode = 1;
    t.runner.output = 'cat: /tmp/health: No such file or directory';
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Liveness', execProbe({ periodSeconds: 10, failureThreshold: 3 })));
    t.manager.start();
    await t.clock.tick(0);
    await t.clock.tick(19_999);
    expect(t.manager.livenessManager.get(containerId)).toBe('Success');
    await t.clock.tick(1);
    expect(t.manager.livenessManager.get(containerId)).toBe('Failure');
    expect(seen.map((u) => u.result)).toEqual(['Success', 'Failure']);
    await t.clock.tick(60_000);
    expect(t.runner.calls).toHaveLength(3);
    expect(recorder.events[0]).toMatchObject({
      type: 'Warning',
      reason: 'Unhealthy',
      message: 'Liveness probe failed: cat: /tmp/health: No such file or directory',
      object: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{app}' },
    });
    await t.manager.stop();
  });

  it('the startup probe holds liveness back until it succeeds, then liveness takes over', async () => {
    const t = setupStarted();
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'ns', uid: podUid },
      spec: {
        containers: [
          {
            name: 'app',
            startupProbe: { exec: { command: ['startup'] }, periodSeconds: 1, failureThreshold: 30 },
            livenessProbe: { exec: { command: ['live'] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      },
    };
    const status: PodStatus = {
      phase: 'Running',
      podIP: '127.0.0.1',
      containerStatuses: [runningStatus(t.clock.now() - 60_000, { started: false })],
    };
    t.statuses.statuses.set(podUid, status);
    let startupDone = false;
    const calls: string[] = [];
    t.runner.runInContainer = async (o) => {
      calls.push(o.cmd[0]!);
      const ok = o.cmd[0] === 'startup' ? startupDone : false;
      return { stdout: new Uint8Array(), stderr: new Uint8Array(), exitCode: ok ? 0 : 1 };
    };
    t.manager.addPod(pod);
    t.manager.start();
    // The status manager's sync: Started comes from the probe results.
    const sync = () => t.manager.updatePodStatus(pod, status);
    for (let i = 0; i < 5; i++) {
      await t.clock.tick(1_000);
      sync();
    }
    expect(calls.every((c) => c === 'startup')).toBe(true);
    expect(status.containerStatuses![0]!.started).toBe(false);
    expect(t.manager.livenessManager.get(containerId)).toBe('Success');
    startupDone = true;
    await t.clock.tick(1_000);
    sync();
    expect(status.containerStatuses![0]!.started).toBe(true);
    const startupCalls = calls.filter((c) => c === 'startup').length;
    await t.clock.tick(1_000);
    sync();
    // Liveness now runs (and fails at once), startup is on hold.
    expect(calls.filter((c) => c === 'startup')).toHaveLength(startupCalls);
    expect(calls).toContain('live');
    expect(t.manager.livenessManager.get(containerId)).toBe('Failure');
    await t.manager.stop();
  });

  it('cleanupPods stops the workers of pods that are not desired and drops their results', async () => {
    const t = setupStarted();
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Readiness', execProbe()));
    t.manager.start();
    await t.clock.tick(0);
    expect(t.manager.readinessManager.get(containerId)).toBe('Success');
    t.manager.cleanupPods(new Set([podUid]));
    await t.clock.tick(0);
    expect(t.manager.workerCount).toBe(1);
    t.manager.cleanupPods(new Set());
    t.manager.cleanupPods(new Set());
    await t.clock.tick(0);
    expect(t.manager.workerCount).toBe(0);
    expect(t.manager.readinessManager.get(containerId)).toBeUndefined();
    const calls = t.runner.calls.length;
    await t.clock.tick(60_000);
    expect(t.runner.calls).toHaveLength(calls);
    await t.manager.stop();
  });

  it('stopLivenessAndStartup stops liveness and startup, readiness keeps probing', async () => {
    const t = setupStarted();
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'ns', uid: podUid },
      spec: { containers: [{ name: 'app', livenessProbe: execProbe(), readinessProbe: execProbe() }] },
    };
    t.manager.addPod(pod);
    t.manager.start();
    await t.clock.tick(0);
    t.manager.stopLivenessAndStartup(pod);
    await t.clock.tick(0);
    expect(t.manager.workerCount).toBe(1);
    const before = t.runner.calls.length;
    await t.clock.tick(5_000);
    expect(t.runner.calls.length).toBe(before + 5);
    await t.manager.stop();
  });

  it('a pod being deleted ends liveness with Success even while the probe fails', async () => {
    const t = setupStarted();
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    const pod = podWith('Liveness', execProbe({ failureThreshold: 1 }));
    t.manager.addPod(pod);
    t.manager.start();
    await t.clock.tick(0);
    t.runner.exitCode = 1;
    // The pod source marks the pod deleted; the manager hands the newer pod to its worker.
    t.manager.addPod({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date().toISOString() } });
    const seen: ProbeResultUpdate[] = [];
    t.manager.livenessManager.subscribe((u) => seen.push(u));
    await t.clock.tick(5_000);
    expect(seen).toEqual([]);
    expect(t.manager.workerCount).toBe(0);
    await t.manager.stop();
  });

  it('stop() aborts an in-flight probe and resolves once every worker has exited', async () => {
    const t = setupStarted();
    let release!: () => void;
    t.runner.hold = new Promise((r) => {
      release = r;
    });
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Liveness', execProbe()));
    t.manager.start();
    await t.clock.tick(0);
    expect(t.runner.calls[0]!.signal?.aborted).toBe(false);
    const stopped = t.manager.stop();
    expect(t.runner.calls[0]!.signal?.aborted).toBe(true);
    release();
    await stopped;
    expect(t.manager.workerCount).toBe(0);
  });

  it('counts probes in prober_probe_total of the given registry', async () => {
    const registry = new Registry();
    const t = setupStarted({ registry });
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(podWith('Readiness', execProbe()));
    t.manager.start();
    await t.clock.tick(2_000);
    const metrics = await registry.getMetricsAsJSON();
    const total = metrics.find((m) => m.name === 'prober_probe_total');
    expect(total?.values).toEqual([
      {
        value: 3,
        labels: {
          probe_type: 'Readiness',
          result: 'successful',
          container: 'app',
          pod: 'web',
          namespace: 'ns',
        },
      },
    ]);
    expect(metrics.some((m) => m.name === 'prober_probe_duration_seconds')).toBe(true);
    await t.manager.stop();
    // A stopped worker's series go away.
    const after = await registry.getMetricsAsJSON();
    expect(after.find((m) => m.name === 'prober_probe_total')?.values).toEqual([]);
  });
});

describe('updatePodStatus (upstream TestUpdatePodStatus)', () => {
  function status(...cs: ReturnType<typeof runningStatus>[]): PodStatus {
    return { phase: 'Running', containerStatuses: cs };
  }

  it('a container without probes is started and ready once running', () => {
    const t = setupStarted();
    const pod: Pod = { metadata: { uid: podUid }, spec: { containers: [{ name: 'app' }] } };
    const s = status(runningStatus(t.clock.now(), { started: false }));
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]).toMatchObject({ started: true, ready: true });
  });

  it('a terminated container is neither started nor ready', () => {
    const t = setupStarted();
    const pod: Pod = { metadata: { uid: podUid }, spec: { containers: [{ name: 'app' }] } };
    const s: PodStatus = {
      containerStatuses: [
        {
          name: 'app',
          image: '',
          imageID: '',
          containerID: containerId,
          ready: true,
          restartCount: 0,
          state: { terminated: { exitCode: 0 } },
        },
      ],
    };
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]).toMatchObject({ started: false, ready: true });
  });

  it('a startup probe that has not succeeded holds Started (and so Ready) back', () => {
    const t = setupStarted();
    const pod = podWith('Startup', execProbe());
    t.manager.addPod(pod);
    const s = status(runningStatus(t.clock.now(), { started: false }));
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]).toMatchObject({ started: false, ready: false });
    t.manager.startupManager.set(containerId, 'Success', pod);
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]).toMatchObject({ started: true, ready: true });
    t.manager.startupManager.set(containerId, 'Failure', pod);
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]!.started).toBe(false);
  });

  it('readiness: Success is ready; a worker without a success is not, and is triggered now', async () => {
    const t = setupStarted();
    const pod = podWith('Readiness', execProbe({ periodSeconds: 60 }));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.manager.addPod(pod);
    t.runner.exitCode = 1;
    t.manager.start();
    await t.clock.tick(0);
    expect(t.runner.calls).toHaveLength(1);
    const s = status(runningStatus(t.clock.now() - 60_000));
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]!.ready).toBe(false);
    // The trigger runs the probe at once instead of a minute later.
    t.runner.exitCode = 0;
    await t.clock.tick(0);
    expect(t.runner.calls).toHaveLength(2);
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]!.ready).toBe(true);
    await t.manager.stop();
  });

  it('init containers: a regular one is ready when it exited 0; a restartable one like a container', () => {
    const t = setupStarted();
    const pod: Pod = {
      metadata: { uid: podUid },
      spec: {
        containers: [{ name: 'main' }],
        initContainers: [{ name: 'init' }, { name: 'sidecar', restartPolicy: 'Always' }],
      },
    };
    const s: PodStatus = {
      initContainerStatuses: [
        {
          name: 'init',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 0 } },
        },
        runningStatus(t.clock.now(), { name: 'sidecar', started: false }),
      ],
    };
    t.manager.updatePodStatus(pod, s);
    expect(s.initContainerStatuses![0]!.ready).toBe(true);
    expect(s.initContainerStatuses![1]).toMatchObject({ started: true, ready: true });
  });

  it('after a kubelet restart a running container keeps Ready only if the pod was Ready', () => {
    const t = setup();
    const pod = podWith('Readiness', execProbe());
    t.manager.addPod(pod);
    const s = status(runningStatus(t.clock.now() - 60_000, { started: true }));
    t.manager.updatePodStatus(pod, s);
    expect(s.containerStatuses![0]!.ready).toBe(false);
    const readyPod: Pod = { ...pod, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    t.manager.updatePodStatus(readyPod, s);
    expect(s.containerStatuses![0]).toMatchObject({ started: true, ready: true });
  });
});
