import {
  type Clock,
  type CommandRunner,
  type Container,
  type ContainerStatus,
  type EventRecorder,
  type Logger,
  noopLogger,
  type Pod,
  type PodStatus,
  type PodStatusProvider,
  RealClock,
} from '@kubelet-kit/core';
import type { Registry } from 'prom-client';
import { createProberMetrics, noopProberMetrics, type ProberMetrics } from './metrics.js';
import { Prober } from './prober.js';
import { DefaultResultsManager, type ResultsManager } from './results-manager.js';
import type { ProbeType } from './types.js';
import { kubeletRestartGraceMs, ProbeWorker, timeOf, type WorkerHost } from './worker.js';

/**
 * Runs a worker for every probe of every container of the pods it is given, and derives the
 * containers' Started and Ready from the results (upstream `prober.Manager`).
 * @public
 */
export interface ProbeManager {
  /** The liveness results: a Failure makes the sync loop restart the container. */
  readonly livenessManager: ResultsManager;
  /** The readiness results, read by {@link ProbeManager.updatePodStatus}. */
  readonly readinessManager: ResultsManager;
  /** The startup results: a Failure restarts the container, a Success lets the others run. */
  readonly startupManager: ResultsManager;
  /**
   * Starts the workers of the pod's containers and restartable init containers that do not
   * have one yet, in the order startup, readiness, liveness. A worker that exists keeps
   * running but sees the newer pod (its deletionTimestamp).
   */
  addPod(pod: Pod): void;
  /** Stops every worker of the pod. */
  removePod(pod: Pod): void;
  /** Stops the workers of every pod whose UID is not in `desiredPodUids`. */
  cleanupPods(desiredPodUids: ReadonlySet<string>): void;
  /** Stops the liveness and startup workers of the pod's containers, for its termination. */
  stopLivenessAndStartup(pod: Pod): void;
  /**
   * Sets `started` and `ready` of each container status in `podStatus` (in place) from the
   * probe results; triggers a readiness worker that has not reported a success yet.
   */
  updatePodStatus(pod: Pod, podStatus: PodStatus): void;
  /** Lets workers run; workers of pods added before start begin now. */
  start(): void;
  /** Stops every worker, aborting in-flight probes; resolves once all have exited. */
  stop(): Promise<void>;
  /** The number of running workers. */
  readonly workerCount: number;
}

/** Options of {@link DefaultProbeManager}. @public */
export interface ProbeManagerOptions {
  /** The pods' current API status: container IDs, states, Started, the pod IP. */
  readonly statusProvider: PodStatusProvider;
  /** Runs exec probes in containers. */
  readonly runner: CommandRunner;
  readonly clock?: Clock;
  /** For the first-run jitter; in [0, 1) like Math.random (the default). */
  readonly random?: () => number;
  readonly recorder?: EventRecorder;
  readonly logger?: Logger;
  /** Where to register `prober_probe_total` and `prober_probe_duration_seconds`; none by default. */
  readonly registry?: Registry;
  readonly livenessManager?: ResultsManager;
  readonly readinessManager?: ResultsManager;
  readonly startupManager?: ResultsManager;
  /** Runs the probes; by default a {@link Prober} over `runner`. */
  readonly prober?: Prober;
  /**
   * Reset the results of containers that were already running before this manager started,
   * as the kubelet did up to 1.34 (upstream gate ChangeContainerStatusOnKubeletRestart).
   * Default false: such containers keep their Started and, if the pod was Ready, Ready.
   */
  readonly changeContainerStatusOnKubeletRestart?: boolean;
  /**
   * Probe ticks fall on multiples of this many ms of the clock, so that workers whose schedules
   * are this close share one wake-up of the process; a tick is at most this much later than
   * upstream's schedule and keeps its phase. 0 ticks exactly on schedule. Default 20, a
   * fiftieth of the shortest period.
   */
  readonly tickAlignmentMs?: number;
}

/** Default of {@link ProbeManagerOptions.tickAlignmentMs}: a fiftieth of the shortest period. */
export const defaultTickAlignmentMs = 20;

const probeOrder: readonly ProbeType[] = ['Startup', 'Readiness', 'Liveness'];

function key(podUid: string, containerName: string, probeType: ProbeType): string {
  return `${podUid}/${containerName}/${probeType}`;
}

function restartableInitContainers(pod: Pod): Container[] {
  return (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
}

function probedContainers(pod: Pod): Container[] {
  return [...(pod.spec?.containers ?? []), ...restartableInitContainers(pod)];
}

/** The kubelet's probe manager over a {@link Prober}. @public */
export class DefaultProbeManager implements ProbeManager {
  readonly livenessManager: ResultsManager;
  readonly readinessManager: ResultsManager;
  readonly startupManager: ResultsManager;
  readonly #workers = new Map<string, ProbeWorker>();
  readonly #running = new Set<Promise<void>>();
  readonly #host: WorkerHost;
  readonly #changeOnRestart: boolean;
  #started = false;
  #stopped = false;

  constructor(options: ProbeManagerOptions) {
    const clock = options.clock ?? new RealClock();
    const logger = options.logger ?? noopLogger;
    this.livenessManager = options.livenessManager ?? new DefaultResultsManager();
    this.readinessManager = options.readinessManager ?? new DefaultResultsManager();
    this.startupManager = options.startupManager ?? new DefaultResultsManager();
    this.#changeOnRestart = options.changeContainerStatusOnKubeletRestart ?? false;
    const metrics: ProberMetrics = options.registry
      ? createProberMetrics(options.registry)
      : noopProberMetrics;
    const results = (t: ProbeType) =>
      t === 'Liveness'
        ? this.livenessManager
        : t === 'Readiness'
          ? this.readinessManager
          : this.startupManager;
    this.#host = {
      clock,
      random: options.random ?? Math.random,
      startTime: clock.now(),
      statusProvider: options.statusProvider,
      prober:
        options.prober ??
        new Prober({
          runner: options.runner,
          clock,
          logger,
          ...(options.recorder ? { recorder: options.recorder } : {}),
        }),
      metrics,
      logger,
      preserveStatusOnRestart: !this.#changeOnRestart,
      tickAlignmentMs: Math.max(0, options.tickAlignmentMs ?? defaultTickAlignmentMs),
      results,
      workerExited: (w) => this.#removeWorker(w),
    };
  }

  get workerCount(): number {
    return this.#workers.size;
  }

  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    for (const w of this.#workers.values()) this.#launch(w);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const w of this.#workers.values()) w.stop();
    // Workers never started have no loop to clean up after them.
    if (!this.#started) this.#workers.clear();
    await Promise.all([...this.#running]);
  }

  addPod(pod: Pod): void {
    if (this.#stopped) return;
    const uid = pod.metadata?.uid ?? '';
    for (const c of probedContainers(pod)) {
      for (const probeType of probeOrder) {
        const has =
          probeType === 'Startup'
            ? c.startupProbe
            : probeType === 'Readiness'
              ? c.readinessProbe
              : c.livenessProbe;
        if (!has) continue;
        const k = key(uid, c.name, probeType);
        const existing = this.#workers.get(k);
        if (existing) {
          existing.pod = pod;
          continue;
        }
        const w = new ProbeWorker(this.#host, probeType, pod, c);
        this.#workers.set(k, w);
        if (this.#started) this.#launch(w);
      }
    }
  }

  stopLivenessAndStartup(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    // Upstream covers only the regular containers here.
    for (const c of pod.spec?.containers ?? []) {
      for (const probeType of ['Liveness', 'Startup'] as const)
        this.#workers.get(key(uid, c.name, probeType))?.stop();
    }
  }

  removePod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    for (const c of probedContainers(pod)) {
      for (const probeType of probeOrder) this.#stopWorker(key(uid, c.name, probeType));
    }
  }

  cleanupPods(desiredPodUids: ReadonlySet<string>): void {
    for (const [k, w] of [...this.#workers]) {
      if (!desiredPodUids.has(w.podUid)) this.#stopWorker(k);
    }
  }

  updatePodStatus(pod: Pod, podStatus: PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    for (const c of podStatus.containerStatuses ?? []) {
      const started = this.#isContainerStarted(uid, c);
      c.started = started;
      if (!started) continue;
      const spec = pod.spec?.containers?.find((s) => s.name === c.name);
      c.ready = this.#isContainerReady(pod, uid, c, spec);
    }
    const initSpecs = pod.spec?.initContainers ?? [];
    (podStatus.initContainerStatuses ?? []).forEach((c, i) => {
      const started = this.#isContainerStarted(uid, c);
      c.started = started;
      // Matched by index, as upstream's GetContainerByIndex.
      const spec = initSpecs[i];
      if (!spec || spec.name !== c.name) return;
      if (spec.restartPolicy !== 'Always') {
        if (c.state?.terminated?.exitCode === 0) c.ready = true;
        return;
      }
      if (!started) return;
      c.ready = this.#isContainerReady(pod, uid, c, spec);
    });
  }

  #isContainerStarted(uid: string, c: ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = this.startupManager.get(c.containerID ?? '');
    if (result !== undefined) return result === 'Success';
    if (!this.#changeOnRestart && c.started === true) return true;
    // A startup probe that has not run yet holds the container back.
    return !this.#workers.has(key(uid, c.name, 'Startup'));
  }

  #isContainerReady(pod: Pod, uid: string, c: ContainerStatus, spec: Container | undefined): boolean {
    if (!c.state?.running) return false;
    if (this.readinessManager.get(c.containerID ?? '') === 'Success') return true;
    const w = this.#workers.get(key(uid, c.name, 'Readiness'));
    // No readiness probe: ready once running and started.
    let ready = w === undefined;
    w?.trigger();
    if (!this.#changeOnRestart && spec) ready = this.#readyOnKubeletRestart(ready, pod, c, spec);
    return ready;
  }

  /** Keeps a container that ran before the kubelet restarted as ready as the pod was. */
  #readyOnKubeletRestart(ready: boolean, pod: Pod, c: ContainerStatus, spec: Container): boolean {
    const startedAt = timeOf(c.state?.running?.startedAt);
    if (startedAt === undefined || startedAt >= this.#host.startTime - kubeletRestartGraceMs) return ready;
    let out = ready;
    if (!out && this.readinessManager.get(c.containerID ?? '') === undefined) out = true;
    if (spec.readinessProbe) {
      const podReady = pod.status?.conditions?.some(
        (cond) => cond.type === 'Ready' && cond.status === 'True',
      );
      if (!podReady) out = false;
    }
    return out;
  }

  #launch(w: ProbeWorker): void {
    const done = w.start();
    this.#running.add(done);
    void done.finally(() => this.#running.delete(done));
  }

  #stopWorker(k: string): void {
    const w = this.#workers.get(k);
    if (!w) return;
    w.stop();
    // A worker whose loop never started would never remove itself.
    if (!this.#started) this.#workers.delete(k);
  }

  #removeWorker(w: ProbeWorker): void {
    const k = key(w.podUid, w.container.name, w.probeType);
    if (this.#workers.get(k) === w) this.#workers.delete(k);
  }
}
