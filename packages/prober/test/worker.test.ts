import { noopLogger, type Pod, type ProbeResult } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { noopProberMetrics } from '../src/metrics.js';
import { Prober } from '../src/prober.js';
import { DefaultResultsManager } from '../src/results-manager.js';
import type { ProbeType } from '../src/types.js';
import { ProbeWorker, type WorkerHost } from '../src/worker.js';
import {
  containerId,
  execProbe,
  MapStatusProvider,
  newClock,
  pendingStatus,
  podUid,
  podWith,
  runningStatus,
  ScriptedRunner,
  terminatedStatus,
} from './helpers.js';

const probeTypes: ProbeType[] = ['Liveness', 'Readiness', 'Startup'];

function setup(probeType: ProbeType, pod: Pod, opts: { startTime?: number; preserve?: boolean } = {}) {
  const clock = newClock();
  const runner = new ScriptedRunner();
  const statuses = new MapStatusProvider();
  const results = {
    Liveness: new DefaultResultsManager(),
    Readiness: new DefaultResultsManager(),
    Startup: new DefaultResultsManager(),
  };
  const exited: ProbeWorker[] = [];
  const host: WorkerHost = {
    clock,
    random: () => 0,
    // By default the kubelet has been up for an hour, long before the containers started.
    startTime: opts.startTime ?? clock.now() - 3_600_000,
    statusProvider: statuses,
    prober: new Prober({ runner, clock }),
    metrics: noopProberMetrics,
    logger: noopLogger,
    preserveStatusOnRestart: opts.preserve ?? true,
    results: (t) => results[t],
    workerExited: (w) => exited.push(w),
  };
  const container = [...pod.spec!.containers, ...(pod.spec!.initContainers ?? [])].find(
    (c) => c.name === 'app',
  )!;
  const worker = new ProbeWorker(host, probeType, pod, container);
  return {
    clock,
    runner,
    statuses,
    results,
    worker,
    exited,
    result: () => results[probeType].get(containerId),
  };
}

describe('ProbeWorker.doProbe (upstream TestDoProbe, 1.34 rules)', () => {
  for (const probeType of probeTypes) {
    // The startup probe only runs before the container has started; the others only after.
    const started = probeType !== 'Startup';
    describe(probeType, () => {
      it('probes a running container and continues', async () => {
        const t = setup(probeType, podWith(probeType, execProbe()));
        t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started }));
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBe('Success');
        expect(t.runner.calls).toHaveLength(1);
        expect(t.runner.calls[0]!.containerId).toBe('c1');
      });

      it('stops without setting anything when the pod failed', async () => {
        const t = setup(probeType, podWith(probeType, execProbe()));
        t.statuses.setContainer(runningStatus(t.clock.now(), { started }), 'Failed');
        expect(await t.worker.doProbe()).toBe(false);
        expect(t.result()).toBeUndefined();
      });

      it('on a deletionTimestamp, liveness and startup set Success and stop; readiness goes on', async () => {
        const base = podWith(probeType, execProbe());
        const pod: Pod = {
          ...base,
          metadata: { ...base.metadata, deletionTimestamp: new Date().toISOString() },
        };
        const t = setup(probeType, pod);
        t.runner.exitCode = 1;
        t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started }));
        const keepGoing = await t.worker.doProbe();
        if (probeType === 'Readiness') {
          expect(keepGoing).toBe(true);
          expect(t.runner.calls).toHaveLength(1);
        } else {
          expect(keepGoing).toBe(false);
          expect(t.result()).toBe('Success');
          expect(t.runner.calls).toHaveLength(0);
        }
      });

      it('waits, setting nothing, when only another container has a status', async () => {
        const t = setup(probeType, podWith(probeType, execProbe()));
        t.statuses.setContainer({ ...runningStatus(t.clock.now(), { started }), name: 'other' });
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBeUndefined();
        expect(t.runner.calls).toHaveLength(0);
      });

      it('sets Failure for a container that is not running yet and continues', async () => {
        const t = setup(probeType, podWith(probeType, execProbe()));
        t.statuses.setContainer(pendingStatus());
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBe('Failure');
      });

      it('sets Failure and stops for a terminated container under restartPolicy Never', async () => {
        const pod = podWith(probeType, execProbe());
        pod.spec!.restartPolicy = 'Never';
        const t = setup(probeType, pod);
        t.statuses.setContainer(terminatedStatus());
        expect(await t.worker.doProbe()).toBe(false);
        expect(t.result()).toBe('Failure');
      });

      it('keeps going for a terminated container that will be restarted', async () => {
        const pod = podWith(probeType, execProbe());
        pod.spec!.restartPolicy = 'OnFailure';
        const t = setup(probeType, pod);
        t.statuses.setContainer(terminatedStatus());
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBe('Failure');
      });

      it('keeps going for a terminated restartable init container even under Never', async () => {
        const pod: Pod = {
          metadata: { name: 'web', namespace: 'ns', uid: podUid },
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'main' }],
            initContainers: [
              {
                name: 'app',
                restartPolicy: 'Always',
                [probeType === 'Liveness'
                  ? 'livenessProbe'
                  : probeType === 'Readiness'
                    ? 'readinessProbe'
                    : 'startupProbe']: execProbe(),
              },
            ],
          },
        };
        const t = setup(probeType, pod);
        t.statuses.statuses.set(podUid, { phase: 'Running', initContainerStatuses: [terminatedStatus()] });
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBe('Failure');
      });

      it('probes at once with a negative initial delay', async () => {
        const t = setup(probeType, podWith(probeType, execProbe({ initialDelaySeconds: -100 })));
        t.statuses.setContainer(runningStatus(t.clock.now(), { started }));
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.result()).toBe('Success');
      });

      it('throws a prober error away and keeps the initial value', async () => {
        const t = setup(probeType, podWith(probeType, execProbe()));
        t.runner.error = new Error('exec failed: no such container');
        t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started }));
        expect(await t.worker.doProbe()).toBe(true);
        expect(t.runner.calls).toHaveLength(3);
        expect(t.result()).toBe(t.worker.initialValue);
      });
    });
  }
});

describe('initial delay (upstream TestInitialDelay)', () => {
  const initial: Record<ProbeType, ProbeResult> = {
    Liveness: 'Success',
    Readiness: 'Failure',
    Startup: 'Unknown',
  };
  for (const probeType of probeTypes) {
    it(`${probeType}: holds the initial value during the delay, probes after it`, async () => {
      const t = setup(probeType, podWith(probeType, execProbe({ initialDelaySeconds: 10 })));
      t.runner.exitCode = 0;
      t.statuses.setContainer(runningStatus(t.clock.now(), { started: probeType !== 'Startup' }));
      expect(await t.worker.doProbe()).toBe(true);
      expect(t.result()).toBe(initial[probeType]);
      expect(t.runner.calls).toHaveLength(0);
      t.clock.advance(9_999);
      await t.worker.doProbe();
      expect(t.runner.calls).toHaveLength(0);
      t.clock.advance(1);
      await t.worker.doProbe();
      expect(t.runner.calls).toHaveLength(1);
      expect(t.result()).toBe('Success');
    });
  }
});

describe('thresholds', () => {
  it('failure threshold 3: two failures keep Success, the third sets Failure (TestFailureThreshold)', async () => {
    const t = setup(
      'Readiness',
      podWith('Readiness', execProbe({ successThreshold: 1, failureThreshold: 3 })),
    );
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    for (let i = 0; i < 2; i++) {
      await t.worker.doProbe();
      expect(t.result()).toBe('Success');
    }
    t.runner.exitCode = 1;
    for (let i = 0; i < 2; i++) {
      await t.worker.doProbe();
      expect(t.result()).toBe('Success');
    }
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
  });

  it('success threshold 3: the third success in a row flips Failure to Success (TestSuccessThreshold)', async () => {
    const t = setup(
      'Readiness',
      podWith('Readiness', execProbe({ successThreshold: 3, failureThreshold: 1 })),
    );
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    for (let round = 0; round < 2; round++) {
      t.runner.exitCode = 0;
      for (let i = 0; i < 2; i++) {
        await t.worker.doProbe();
        expect(t.result()).toBe('Failure');
      }
      await t.worker.doProbe();
      expect(t.result()).toBe('Success');
      // One failure (threshold 1) flips it back.
      t.runner.exitCode = 1;
      await t.worker.doProbe();
      expect(t.result()).toBe('Failure');
    }
  });

  it('needs consecutive results: a success in between resets the failure run', async () => {
    const t = setup('Liveness', podWith('Liveness', execProbe({ failureThreshold: 3 })));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    for (const code of [1, 1, 0, 1, 1]) {
      t.runner.exitCode = code;
      await t.worker.doProbe();
      expect(t.result()).toBe('Success');
    }
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
  });

  it('startup: failures below the threshold leave Unknown; the third sets Failure and holds', async () => {
    const t = setup('Startup', podWith('Startup', execProbe({ failureThreshold: 3 })));
    t.runner.exitCode = 1;
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: false }));
    for (const run of [1, 2]) {
      await t.worker.doProbe();
      expect(t.result()).toBe('Unknown');
      expect(t.worker.resultRun).toBe(run);
    }
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
    expect(t.worker.resultRun).toBe(0);
    expect(t.worker.onHold).toBe(true);
  });

  it('startup: a success puts the worker on hold with resultRun 0', async () => {
    const t = setup('Startup', podWith('Startup', execProbe()));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: false }));
    await t.worker.doProbe();
    expect(t.result()).toBe('Success');
    expect(t.worker.onHold).toBe(true);
    expect(t.worker.resultRun).toBe(0);
  });
});

describe('on hold', () => {
  it('stops probing after a liveness failure until a new container ID appears', async () => {
    const t = setup('Liveness', podWith('Liveness', execProbe({ failureThreshold: 1 })));
    t.runner.exitCode = 1;
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
    expect(t.worker.onHold).toBe(true);
    await t.worker.doProbe();
    await t.worker.doProbe();
    expect(t.runner.calls).toHaveLength(1);

    // The restarted container has a new ID: the old result goes, the initial value is set, probing resumes.
    t.runner.exitCode = 0;
    t.statuses.setContainer(runningStatus(t.clock.now(), { id: 'containerd://c2' }));
    await t.worker.doProbe();
    expect(t.results.Liveness.get(containerId)).toBeUndefined();
    expect(t.results.Liveness.get('containerd://c2')).toBe('Success');
    expect(t.worker.onHold).toBe(false);
    expect(t.runner.calls).toHaveLength(2);
    expect(t.runner.calls[1]!.containerId).toBe('c2');
  });

  it('startup: on hold after a failure, resumes for a new container and holds again once it succeeds (TestOnHoldOnLivenessOrStartupCheckFailure)', async () => {
    const t = setup('Startup', podWith('Startup', execProbe({ failureThreshold: 1 })));
    t.runner.exitCode = 1;
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: false }));
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
    expect(t.worker.onHold).toBe(true);
    // A passing probe while on hold is never run.
    t.runner.exitCode = 0;
    expect(await t.worker.doProbe()).toBe(true);
    expect(t.result()).toBe('Failure');
    expect(t.runner.calls).toHaveLength(1);
    t.statuses.setContainer(runningStatus(t.clock.now(), { id: 'containerd://c2', started: false }));
    expect(await t.worker.doProbe()).toBe(true);
    expect(t.results.Startup.get('containerd://c2')).toBe('Success');
    expect(t.worker.onHold).toBe(true);
  });

  it('liveness: resultRun restarts on a change of result and is 0 after the failure is set (TestResultRunOnLivenessCheckFailure)', async () => {
    const t = setup('Liveness', podWith('Liveness', execProbe({ failureThreshold: 3 })));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    await t.worker.doProbe();
    expect(t.worker.resultRun).toBe(1);
    t.runner.exitCode = 1;
    for (const run of [1, 2]) {
      await t.worker.doProbe();
      expect(t.result()).toBe('Success');
      expect(t.worker.resultRun).toBe(run);
    }
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
    expect(t.worker.resultRun).toBe(0);
  });

  it('a readiness failure does not hold the worker', async () => {
    const t = setup('Readiness', podWith('Readiness', execProbe({ failureThreshold: 1 })));
    t.runner.exitCode = 1;
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    await t.worker.doProbe();
    await t.worker.doProbe();
    expect(t.worker.onHold).toBe(false);
    expect(t.runner.calls).toHaveLength(2);
  });
});

describe('started gating', () => {
  it('liveness and readiness do not run before the container has started (TestLivenessProbeDisabledByStarted)', async () => {
    for (const probeType of ['Liveness', 'Readiness'] as const) {
      const t = setup(probeType, podWith(probeType, execProbe()));
      t.runner.exitCode = 1;
      t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: false }));
      await t.worker.doProbe();
      expect(t.runner.calls).toHaveLength(0);
      expect(t.result()).toBe(t.worker.initialValue);
      t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: true }));
      await t.worker.doProbe();
      expect(t.runner.calls).toHaveLength(1);
    }
  });

  it('the startup probe does not run once the container has started (TestStartupProbeDisabledByStarted)', async () => {
    const t = setup('Startup', podWith('Startup', execProbe()));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000, { started: true }));
    expect(await t.worker.doProbe()).toBe(true);
    expect(t.runner.calls).toHaveLength(0);
  });
});

describe('kubelet restart', () => {
  it('does not reset the result of a container that ran 10 s before the manager started', async () => {
    const t = setup('Readiness', podWith('Readiness', execProbe()), {
      preserve: true,
      startTime: Date.UTC(2026, 0, 1, 12),
    });
    t.statuses.setContainer(runningStatus(t.clock.now() - 10_001));
    t.runner.error = new Error('boom');
    await t.worker.doProbe();
    expect(t.result()).toBeUndefined();
  });

  it('sets the initial value for a container started within the grace period', async () => {
    const t = setup('Readiness', podWith('Readiness', execProbe()), {
      preserve: true,
      startTime: Date.UTC(2026, 0, 1, 12),
    });
    t.statuses.setContainer(runningStatus(t.clock.now() - 9_000));
    t.runner.error = new Error('boom');
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
  });

  it('resets it when asked to (ChangeContainerStatusOnKubeletRestart)', async () => {
    const t = setup('Readiness', podWith('Readiness', execProbe()), {
      preserve: false,
      startTime: Date.UTC(2026, 0, 1, 12),
    });
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    t.runner.error = new Error('boom');
    await t.worker.doProbe();
    expect(t.result()).toBe('Failure');
  });
});

describe('worker loop', () => {
  it('stopping many times is safe; the result is removed and the worker exits (TestCleanUp)', async () => {
    const t = setup('Liveness', podWith('Liveness', execProbe({ periodSeconds: 10 })));
    t.statuses.setContainer(runningStatus(t.clock.now() - 60_000));
    const done = t.worker.start();
    await t.clock.tick(0);
    expect(t.result()).toBe('Success');
    for (let i = 0; i < 10; i++) t.worker.stop();
    await done;
    expect(t.result()).toBeUndefined();
    expect(t.exited).toEqual([t.worker]);
  });
});
