import type {
  Clock,
  Container,
  ContainerStatus,
  Logger,
  Pod,
  PodStatus,
  PodStatusProvider,
  ProbeResult,
  Timer,
} from '@kubelet-kit/core';
import type { ProbeMetricLabels, ProberMetrics } from './metrics.js';
import { type Prober, probeForType } from './prober.js';
import type { ResultsManager } from './results-manager.js';
import { type ProbeType, probeDefaults } from './types.js';

/** How long before the manager's start a container must have started to count as running across a kubelet restart. */
export const kubeletRestartGraceMs = 10_000;

/** What a worker needs of its manager. */
export interface WorkerHost {
  readonly clock: Clock;
  readonly random: () => number;
  /** When the manager started (epoch ms). */
  readonly startTime: number;
  readonly statusProvider: PodStatusProvider;
  readonly prober: Prober;
  readonly metrics: ProberMetrics;
  readonly logger: Logger;
  /** Keep a running container's result across a kubelet restart (upstream gate off). */
  readonly preserveStatusOnRestart: boolean;
  /** Probe ticks fall on multiples of this many ms of the clock (0: exactly on schedule). */
  readonly tickAlignmentMs?: number;
  results(probeType: ProbeType): ResultsManager;
  /** Called once when the worker has exited. */
  workerExited(worker: ProbeWorker): void;
}

type Wake = 'stop' | 'tick' | 'manual';

const initialValues: Record<ProbeType, ProbeResult> = {
  Readiness: 'Failure',
  Liveness: 'Success',
  Startup: 'Unknown',
};

/**
 * Probes one container with one of its probes, periodically, until stopped or until the
 * container will not run again (upstream `worker.go`).
 */
export class ProbeWorker {
  readonly probeType: ProbeType;
  readonly container: Container;
  readonly initialValue: ProbeResult;
  /** The pod as last given to the manager; its deletionTimestamp ends liveness and startup probing. */
  pod: Pod;
  /** The container ID (`type://id`) the worker last saw; '' before the first. */
  containerId = '';
  lastResult: ProbeResult = 'Unknown';
  /** How many probes in a row returned `lastResult`. */
  resultRun = 0;
  /** No probing until a new container ID appears. */
  onHold = false;

  readonly #host: WorkerHost;
  readonly #results: ResultsManager;
  readonly #labels: ProbeMetricLabels;
  readonly #abort = new AbortController();
  #stopRequested = false;
  #manualTrigger = false;
  #wake: ((why: Wake) => void) | undefined;
  #done: Promise<void> | undefined;
  #startedAtText: string | Date | undefined;
  #startedAtMs: number | undefined;

  constructor(host: WorkerHost, probeType: ProbeType, pod: Pod, container: Container) {
    this.#host = host;
    this.probeType = probeType;
    this.pod = pod;
    this.container = container;
    this.initialValue = initialValues[probeType];
    this.#results = host.results(probeType);
    this.#labels = {
      probeType,
      container: container.name,
      pod: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
    };
  }

  get podUid(): string {
    return this.pod.metadata?.uid ?? '';
  }

  /** The probe period in ms (API default 10 s). */
  get periodMs(): number {
    return (
      (probeForType(this.container, this.probeType)?.periodSeconds || probeDefaults.periodSeconds) * 1000
    );
  }

  /** Starts the probe loop; resolves the returned promise when the worker has exited. */
  start(): Promise<void> {
    this.#done ??= this.#run();
    return this.#done;
  }

  /** Asks the worker to exit; safe to call any number of times. An in-flight probe is aborted. */
  stop(): void {
    this.#stopRequested = true;
    this.#abort.abort();
    this.#wake?.('stop');
  }

  /** Probes now rather than at the next tick, and restarts the period from now. */
  trigger(): void {
    this.#manualTrigger = true;
    this.#wake?.('manual');
  }

  async #run(): Promise<void> {
    const clock = this.#host.clock;
    const period = this.periodMs;
    const align = this.#host.tickAlignmentMs ?? 0;
    // Workers whose ticks share a grid point wake together: far fewer wake-ups of the process.
    const onGrid = align > 0 ? (t: number) => Math.ceil(t / align) * align : (t: number) => t;
    try {
      let start = clock.now();
      // Right after a kubelet (re)start every worker would probe at once: spread them out.
      if (period > clock.since(this.#host.startTime)) {
        start = onGrid(start + this.#host.random() * period);
        const why = await this.#waitUntil(start, false);
        if (why === 'stop') return;
      }
      // The ticker starts when the first probe does, as upstream's after its jitter sleep.
      let next = onGrid(start + period);
      while (await this.doProbe()) {
        const why = await this.#waitUntil(next, true);
        if (why === 'stop') return;
        const now = clock.now();
        if (why === 'manual') {
          next = onGrid(now + period);
        } else {
          // A ticker keeps its phase and drops the ticks a slow probe missed.
          next += period;
          if (next <= now) next += Math.ceil((now - next + 1) / period) * period;
        }
      }
    } finally {
      this.#cleanup();
    }
  }

  /** Waits for the deadline, a stop or (when allowed) a manual trigger; pending ones first. */
  #waitUntil(deadline: number, allowTrigger: boolean): Promise<Wake> {
    if (this.#stopRequested) return Promise.resolve('stop');
    if (allowTrigger && this.#manualTrigger) {
      this.#manualTrigger = false;
      return Promise.resolve('manual');
    }
    const delay = deadline - this.#host.clock.now();
    if (delay <= 0) return Promise.resolve('tick');
    return new Promise<Wake>((resolve) => {
      let timer: Timer | undefined;
      const wake = (why: Wake) => {
        if (why === 'manual' && !allowTrigger) return;
        if (why === 'manual') this.#manualTrigger = false;
        this.#wake = undefined;
        timer?.cancel();
        resolve(why);
      };
      this.#wake = wake;
      timer = this.#host.clock.setTimeout(() => wake('tick'), delay);
    });
  }

  #cleanup(): void {
    if (this.containerId) this.#results.remove(this.containerId);
    this.#host.metrics.remove(this.#labels);
    this.#host.workerExited(this);
  }

  /** Probes once and records the result; false when the worker should exit. */
  async doProbe(): Promise<boolean> {
    try {
      return await this.#doProbe();
    } catch (err) {
      // As upstream's HandleCrash: a bug in one probe must not end the worker.
      this.#host.logger.error({ err: String(err), probeType: this.probeType }, 'Probe worker crashed');
      return true;
    }
  }

  async #doProbe(): Promise<boolean> {
    const host = this.#host;
    const startTime = host.clock.now();
    const status = host.statusProvider.getPodStatus(this.podUid);
    // Either the pod has not been created yet, or it was already deleted.
    if (!status) return true;
    if (status.phase === 'Failed' || status.phase === 'Succeeded') return false;

    const c = findContainerStatus(status, this.container.name);
    if (!c?.containerID) return true;

    if (this.containerId !== c.containerID) {
      if (this.containerId) this.#results.remove(this.containerId);
      this.containerId = c.containerID;
      if (!(host.preserveStatusOnRestart && this.#startedBeforeRestart(c))) {
        this.#results.set(this.containerId, this.initialValue, this.pod);
      }
      // A new container: resume probing.
      this.onHold = false;
    }
    if (this.onHold) return true;

    if (!c.state?.running) {
      this.#results.set(this.containerId, 'Failure', this.pod);
      // Keep going only while the container may run again.
      return (
        c.state?.terminated === undefined ||
        (this.pod.spec?.restartPolicy ?? 'Always') !== 'Never' ||
        this.#isRestartableInitContainer()
      );
    }

    // Graceful shutdown of the pod: a last quiet result, then no more liveness/startup probing.
    if (this.pod.metadata?.deletionTimestamp && this.probeType !== 'Readiness') {
      this.#results.set(this.containerId, 'Success', this.pod);
      return false;
    }

    const spec = probeForType(this.container, this.probeType);
    if (!spec) return true;
    const startedAt = this.#startedAtOf(c.state.running.startedAt);
    const initialDelay = spec.initialDelaySeconds ?? probeDefaults.initialDelaySeconds;
    if (startedAt !== undefined && Math.trunc((host.clock.now() - startedAt) / 1000) < initialDelay)
      return true;

    if (c.started === true) {
      // The startup probe is done once started; its worker stays for the next container.
      if (this.probeType === 'Startup') return true;
    } else if (this.probeType !== 'Startup') {
      // Liveness and readiness wait for the startup probe.
      return true;
    }

    let result: ProbeResult;
    try {
      result = await host.prober.probe(
        this.probeType,
        this.pod,
        status,
        this.container,
        this.containerId,
        this.#abort.signal,
      );
    } catch {
      // A prober error: throw the result away.
      return true;
    }
    if (this.#stopRequested) return false;
    host.metrics.observe(this.#labels, result, (host.clock.now() - startTime) / 1000);

    if (this.lastResult === result) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    const failureThreshold = spec.failureThreshold || probeDefaults.failureThreshold;
    const successThreshold = spec.successThreshold || probeDefaults.successThreshold;
    if (
      (result === 'Failure' && this.resultRun < failureThreshold) ||
      (result === 'Success' && this.resultRun < successThreshold)
    ) {
      // Below the threshold: keep the stored result.
      return true;
    }
    this.#results.set(this.containerId, result, this.pod);

    if ((this.probeType === 'Liveness' && result === 'Failure') || this.probeType === 'Startup') {
      // The container will be restarted (or has started): no more probes of this one.
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }

  /** {@link timeOf}, remembering the last time parsed: it only changes with the container. */
  #startedAtOf(time: string | Date | undefined): number | undefined {
    if (time !== this.#startedAtText) {
      this.#startedAtText = time;
      this.#startedAtMs = timeOf(time);
    }
    return this.#startedAtMs;
  }

  #startedBeforeRestart(c: ContainerStatus): boolean {
    const startedAt = timeOf(c.state?.running?.startedAt);
    return startedAt !== undefined && startedAt < this.#host.startTime - kubeletRestartGraceMs;
  }

  #isRestartableInitContainer(): boolean {
    return (
      this.container.restartPolicy === 'Always' &&
      (this.pod.spec?.initContainers?.some((ic) => ic.name === this.container.name) ?? false)
    );
  }
}

/** The status of a regular container with an ID, else of an init container with one. */
function findContainerStatus(status: PodStatus, name: string): ContainerStatus | undefined {
  const regular = status.containerStatuses?.find((s) => s.name === name);
  if (regular?.containerID) return regular;
  return status.initContainerStatuses?.find((s) => s.name === name);
}

/** Epoch ms of an API time, or undefined when unset or unparsable. */
export function timeOf(time: string | Date | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}
