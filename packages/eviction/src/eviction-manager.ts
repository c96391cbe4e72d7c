// Upstream pkg/kubelet/eviction/eviction_manager.go: every monitoring period, observe the node's
// signals, decide which thresholds are met, report pressure, reclaim node-level resources and,
// if that is not enough, evict one pod.
import {
  type Clock,
  type Logger,
  noopLogger,
  type Pod,
  type PodStats,
  parseQuantity,
  podLimits,
  type Quantity,
  type Summary,
  type Timer,
  type Toleration,
} from '@kubelet-kit/core';
import {
  buildSignalToRankFunc,
  canEvict,
  evictionMessage,
  formatQuantity,
  isHardEvictionThreshold,
  makeSignalObservations,
  mergeThresholds,
  nodeConditions,
  type PressureCondition,
  type RankFunc,
  type SignalObservations,
  signalToResource,
  sortByEvictionPriority,
  thresholdsMet,
} from './helpers.js';
import {
  disruptionTargetCondition,
  type EvictionAdmitResult,
  type EvictionEventSink,
  type EvictionKillPodFunc,
  type EvictionManagerApi,
  type EvictionReclaimers,
  evictedReason,
  type Signal,
  type StatsFunc,
  type Threshold,
} from './types.js';

/** Seconds a pod evicted under a hard threshold gets to stop (upstream `immediateEvictionGracePeriodSeconds`). */
const immediateEvictionGracePeriodSeconds = 1;
/** How long, and how often, the manager waits for an evicted pod to be cleaned up. */
const podCleanupTimeoutMs = 30_000;
const podCleanupPollMs = 1_000;
/** Upstream's default monitoring period (`evictionMonitoringPeriod`). */
const defaultMonitoringPeriodMs = 10_000;

/** Options of {@link EvictionManager}. @public */
export interface EvictionManagerOptions {
  /** From {@link parseThresholdConfig}. */
  readonly thresholds: readonly Threshold[];
  /** `--eviction-pressure-transition-period`: how long a condition stays after its last observation; default 5 min. */
  readonly pressureTransitionPeriodMs?: number;
  /** `--eviction-max-pod-grace-period`: seconds a pod evicted under a soft threshold gets at most. */
  readonly maxPodGracePeriodSeconds?: number;
  /** Evict pods over their emptyDir `sizeLimit` or ephemeral-storage limits (upstream LocalStorageCapacityIsolation); default true. */
  readonly localStorageCapacityIsolation?: boolean;
  /** The node's and pods' statistics (upstream `SummaryProvider.Get(true)`). */
  readonly summary: () => Promise<Summary>;
  /**
   * The node's statistics alone (no pods), if cheaper: read instead of {@link
   * EvictionManagerOptions.summary} while no threshold acts and no active pod has a local
   * storage limit, so an idle node does not pay for every pod's stats each cycle. The decisions
   * are the same: pods' stats are only read to check limits and to rank.
   */
  readonly nodeSummary?: () => Promise<Summary>;
  /** Whether images live on a filesystem of their own (upstream `HasDedicatedImageFs`); asked once. */
  readonly hasDedicatedImageFs: () => Promise<boolean>;
  /** The pods that may be evicted: admitted and not terminated (upstream `ActivePodsFunc`). */
  readonly activePods: () => readonly Pod[];
  /** True once an evicted pod's resources are gone (upstream `PodCleanedUpFunc`). */
  readonly podCleanedUp?: (pod: Pod) => boolean;
  readonly killPod: EvictionKillPodFunc;
  readonly reclaimers?: EvictionReclaimers;
  readonly events?: EvictionEventSink;
  /** Called with the signal after each eviction (e.g. the `kubelet_evictions` metric). */
  readonly onEviction?: (signal: string) => void;
  readonly clock: Clock;
  readonly logger?: Logger;
}

interface ThresholdState {
  readonly thresholdsMet: readonly Threshold[];
  readonly firstObservedAt: ReadonlyMap<Threshold, number>;
  readonly conditionsLastObservedAt: ReadonlyMap<PressureCondition, number>;
  readonly lastObservations: SignalObservations;
}

/**
 * The eviction manager (upstream `managerImpl`). {@link EvictionManager.synchronize} is one
 * monitoring cycle; {@link EvictionManager.start} runs them every period, and after an eviction
 * waits (up to 30 s) for the pod to be cleaned up before the next. It evicts at most one pod per
 * cycle; critical pods (static, mirror, system priority) never.
 * @public
 */
export class EvictionManager implements EvictionManagerApi {
  readonly #o: EvictionManagerOptions;
  readonly #log: Logger;
  #thresholds: readonly Threshold[];
  #dedicatedImageFs: boolean | undefined;
  #rank: ReadonlyMap<Signal, RankFunc> = new Map();
  #conditions: readonly PressureCondition[] = [];
  #state: ThresholdState = {
    thresholdsMet: [],
    firstObservedAt: new Map(),
    conditionsLastObservedAt: new Map(),
    lastObservations: new Map(),
  };
  #timer: Timer | undefined;
  #stopped = false;

  constructor(options: EvictionManagerOptions) {
    this.#o = options;
    this.#log = options.logger ?? noopLogger;
    this.#thresholds = options.thresholds;
  }

  /** The thresholds in force. */
  get thresholds(): readonly Threshold[] {
    return this.#thresholds;
  }

  isUnderMemoryPressure(): boolean {
    return this.#conditions.includes('MemoryPressure');
  }

  isUnderDiskPressure(): boolean {
    return this.#conditions.includes('DiskPressure');
  }

  isUnderPIDPressure(): boolean {
    return this.#conditions.includes('PIDPressure');
  }

  /**
   * Upstream `Admit`: with no pressure, or for a critical pod, yes; under memory pressure alone,
   * every pod but a BestEffort one that does not tolerate the memory-pressure taint; under any
   * other pressure, no.
   */
  admit(pod: Pod): EvictionAdmitResult {
    if (this.#conditions.length === 0) return { admit: true };
    if (!canEvict(pod)) return { admit: true };
    if (this.#conditions.length === 1 && this.#conditions[0] === 'MemoryPressure') {
      if (!isBestEffort(pod)) return { admit: true };
      if (toleratesMemoryPressure(pod.spec?.tolerations ?? [])) return { admit: true };
    }
    this.#log.info({ pod: podKey(pod), nodeCondition: this.#conditions }, 'Failed to admit pod to node');
    return {
      admit: false,
      reason: evictedReason,
      message: `The node had condition: [${this.#conditions.join(' ')}]. `,
    };
  }

  /** Runs a cycle now and then every `periodMs` (default 10 s), until {@link EvictionManager.stop}. */
  start(periodMs = defaultMonitoringPeriodMs): void {
    this.#stopped = false;
    const loop = async (): Promise<void> => {
      if (this.#stopped) return;
      let evicted: Pod[] = [];
      try {
        evicted = await this.synchronize();
      } catch (err) {
        this.#log.error({ err }, 'Eviction manager: failed to synchronize');
      }
      if (this.#stopped) return;
      if (evicted.length > 0) await this.#waitForPodsCleanup(evicted);
      if (this.#stopped) return;
      this.#timer = this.#o.clock.setTimeout(() => void loop(), evicted.length > 0 ? 0 : periodMs);
    };
    void loop();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  async #waitForPodsCleanup(pods: readonly Pod[]): Promise<void> {
    const cleanedUp = this.#o.podCleanedUp;
    if (!cleanedUp) return;
    const deadline = this.#o.clock.now() + podCleanupTimeoutMs;
    while (!this.#stopped) {
      if (pods.every((p) => cleanedUp(p))) {
        this.#log.info({ pods: pods.map(podKey) }, 'Eviction manager: pods successfully cleaned up');
        return;
      }
      if (this.#o.clock.now() >= deadline) {
        this.#log.warn(
          { pods: pods.map(podKey) },
          'Eviction manager: timed out waiting for pods to be cleaned up',
        );
        return;
      }
      await this.#o.clock.sleep(podCleanupPollMs);
    }
  }

  /** One monitoring cycle (upstream `synchronize`); resolves with the pods it evicted. */
  async synchronize(): Promise<Pod[]> {
    const localStorage = this.#o.localStorageCapacityIsolation ?? true;
    if (this.#thresholds.length === 0 && !localStorage) return [];
    if (this.#dedicatedImageFs === undefined) {
      const dedicated = await this.#o.hasDedicatedImageFs();
      this.#dedicatedImageFs = dedicated;
      this.#rank = buildSignalToRankFunc(dedicated);
    }
    const activePods = [...this.#o.activePods()];
    const podsNeeded = localStorage && activePods.some(hasLocalStorageLimit);
    const read = podsNeeded || !this.#o.nodeSummary ? this.#o.summary : this.#o.nodeSummary;
    let summary: Summary;
    try {
      summary = await read();
    } catch (err) {
      this.#log.error({ err }, 'Eviction manager: failed to get summary stats');
      return [];
    }
    const withPods = read === this.#o.summary;
    const observed = makeSignalObservations(summary);
    const { observations } = observed;
    let { statsFunc } = observed;
    const now = this.#o.clock.now();
    const prev = this.#state;

    // Met now, regardless of grace period; and those met before whose minimum reclaim is not yet done.
    let met = thresholdsMet(this.#thresholds, observations, false);
    if (prev.thresholdsMet.length > 0) {
      met = mergeThresholds(met, thresholdsMet(prev.thresholdsMet, observations, true));
    }
    const firstObservedAt = new Map<Threshold, number>();
    for (const t of met) firstObservedAt.set(t, prev.firstObservedAt.get(t) ?? now);
    const conditionsLastObservedAt = new Map(prev.conditionsLastObservedAt);
    for (const c of nodeConditions(met)) conditionsLastObservedAt.set(c, now);
    const transition = this.#o.pressureTransitionPeriodMs ?? 5 * 60_000;
    const conditions: PressureCondition[] = [];
    for (const [c, at] of conditionsLastObservedAt) {
      if (now - at < transition) conditions.push(c);
      else conditionsLastObservedAt.delete(c);
    }
    // Only thresholds past their grace period drive evictions.
    const graceMet = met.filter((t) => now - (firstObservedAt.get(t) ?? now) >= t.gracePeriodMs);
    if (conditions.join() !== this.#conditions.join()) {
      this.#log.info({ nodeConditions: conditions }, 'Eviction manager: node conditions changed');
    }
    this.#conditions = conditions;
    this.#state = {
      thresholdsMet: graceMet,
      firstObservedAt,
      conditionsLastObservedAt,
      lastObservations: observations,
    };
    // Act only on thresholds whose figures are newer than the last cycle's.
    const updated = graceMet.filter((t) => {
      const o = observations.get(t.signal);
      const last = prev.lastObservations.get(t.signal);
      return !o || !last || o.time !== last.time;
    });

    if (localStorage) {
      const evicted = await this.#localStorageEviction(activePods, statsFunc);
      if (evicted.length > 0) return evicted;
    }
    if (updated.length === 0) return [];
    if (!withPods) {
      // A threshold acts: the pods' stats are needed to rank them.
      try {
        statsFunc = makeSignalObservations(await this.#o.summary()).statsFunc;
      } catch (err) {
        this.#log.error({ err }, 'Eviction manager: failed to get summary stats');
        return [];
      }
    }

    const toReclaim = sortByEvictionPriority(updated)[0];
    if (!toReclaim) return [];
    const resource = signalToResource[toReclaim.signal];
    this.#log.info({ resourceName: resource }, 'Eviction manager: attempting to reclaim');
    this.#o.events?.nodeEvent('EvictionThresholdMet', `Attempting to reclaim ${resource}`);
    if (await this.#reclaimNodeLevelResources(toReclaim.signal)) {
      this.#log.info(
        { resourceName: resource },
        'Eviction manager: able to reduce resource pressure without evicting pods.',
      );
      return [];
    }
    const rank = this.#rank.get(toReclaim.signal);
    if (!rank) return [];
    if (activePods.length === 0) {
      this.#log.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    rank(activePods, statsFunc);
    this.#log.info({ pods: activePods.map(podKey) }, 'Eviction manager: pods ranked for eviction');
    for (const pod of activePods) {
      let grace = immediateEvictionGracePeriodSeconds;
      if (!isHardEvictionThreshold(toReclaim)) {
        grace = this.#o.maxPodGracePeriodSeconds ?? 0;
        const own = pod.spec?.terminationGracePeriodSeconds;
        if (own !== undefined) grace = Math.min(grace, own);
      }
      const { message, annotations } = evictionMessage(resource, pod, statsFunc, updated, observations);
      if (await this.#evictPod(pod, grace, message, annotations, true)) {
        this.#o.onEviction?.(toReclaim.signal);
        return [pod];
      }
    }
    this.#log.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /** Upstream `reclaimNodeLevelResources`: true when reclaim alone resolved every threshold. */
  async #reclaimNodeLevelResources(signal: Signal): Promise<boolean> {
    const r = this.#o.reclaimers;
    const disk =
      signal !== 'memory.available' && signal !== 'allocatableMemory.available' && signal !== 'pid.available';
    // With a dedicated image filesystem nodefs pressure has nothing to collect; imagefs pressure
    // (or any disk pressure on a shared filesystem) collects dead containers, then unused images.
    const nodefs = signal === 'nodefs.available' || signal === 'nodefs.inodesFree';
    const funcs =
      r && disk && !(this.#dedicatedImageFs && nodefs)
        ? [r.deleteAllUnusedContainers, r.deleteUnusedImages]
            .filter((f) => f !== undefined)
            .map((f) => f.bind(r))
        : [];
    if (funcs.length === 0) return false;
    for (const f of funcs) {
      try {
        await f();
      } catch (err) {
        this.#log.info(
          { err, signal },
          'Eviction manager: unexpected error when attempting to reduce resource pressure',
        );
      }
    }
    let summary: Summary;
    try {
      summary = await this.#o.summary();
    } catch (err) {
      this.#log.error({ err }, 'Eviction manager: failed to get summary stats after resource reclaim');
      return false;
    }
    const { observations } = makeSignalObservations(summary);
    return thresholdsMet(this.#thresholds, observations, true).length === 0;
  }

  /** Upstream `localStorageEviction`: emptyDir sizeLimit, then pod, then container ephemeral-storage limits. */
  async #localStorageEviction(pods: readonly Pod[], statsFunc: StatsFunc): Promise<Pod[]> {
    const evicted: Pod[] = [];
    for (const pod of pods) {
      const stats = statsFunc(pod);
      if (!stats) continue;
      const verdict = this.#localStorageVerdict(pod, stats);
      if (!verdict) continue;
      if (await this.#evictPod(pod, 0, verdict.message, {}, false)) {
        this.#o.onEviction?.(verdict.signal);
        evicted.push(pod);
      }
    }
    return evicted;
  }

  #localStorageVerdict(pod: Pod, stats: PodStats): { message: string; signal: string } | undefined {
    const used = new Map<string, number>();
    for (const v of stats.volume ?? []) used.set(v.name, v.usedBytes ?? 0);
    for (const v of pod.spec?.volumes ?? []) {
      const limit = v.emptyDir?.sizeLimit;
      if (limit === undefined) continue;
      const size = parseQuantity(limit);
      const u = used.get(v.name);
      if (u !== undefined && size > 0 && u > size) {
        return {
          message: `Usage of EmptyDir volume "${v.name}" exceeds the limit "${limit}". `,
          signal: 'emptydirfs.limit',
        };
      }
    }
    const limits = podLimits(pod);
    const podLimit = limits['ephemeral-storage'];
    if (podLimit !== undefined) {
      const total = stats['ephemeral-storage']?.usedBytes ?? 0;
      if (total > podLimit) {
        return {
          message: `Pod ephemeral local storage usage exceeds the total limit of containers ${formatQuantity(podLimit, true)}. `,
          signal: 'ephemeralpodfs.limit',
        };
      }
    }
    const containerLimits = new Map<string, string>();
    for (const c of pod.spec?.containers ?? []) {
      const l = c.resources?.limits?.['ephemeral-storage'];
      if (l !== undefined && parseQuantity(l) !== 0) containerLimits.set(c.name, String(l));
    }
    for (const cs of stats.containers) {
      const limit = containerLimits.get(cs.name);
      if (limit === undefined) continue;
      let u = cs.logs?.usedBytes ?? 0;
      if (!this.#dedicatedImageFs) u += cs.rootfs?.usedBytes ?? 0;
      if (u > parseQuantity(limit)) {
        return {
          message: `Container ${cs.name} exceeded its local ephemeral storage limit "${limit}". `,
          signal: 'ephemeralcontainerfs.limit',
        };
      }
    }
    return undefined;
  }

  /** Upstream `evictPod`: false for a critical pod; otherwise the pod is killed and failed. */
  async #evictPod(
    pod: Pod,
    gracePeriodOverride: number,
    message: string,
    annotations: Readonly<Record<string, string>>,
    withCondition: boolean,
  ): Promise<boolean> {
    if (!canEvict(pod)) {
      this.#log.error({ pod: podKey(pod) }, 'Eviction manager: cannot evict a critical pod');
      return false;
    }
    this.#o.events?.podEvent(pod, evictedReason, message, annotations);
    this.#log.info({ pod: podKey(pod), podUID: pod.metadata?.uid, message }, 'Evicting pod');
    const observedGeneration = pod.metadata?.generation;
    try {
      await this.#o.killPod({
        pod,
        isEvicted: true,
        gracePeriodOverride,
        statusFn: (status) => {
          status.phase = 'Failed';
          status.reason = evictedReason;
          status.message = message;
          if (withCondition) {
            const condition = {
              type: disruptionTargetCondition,
              status: 'True',
              reason: 'TerminationByKubelet',
              message,
              lastTransitionTime: new Date(this.#o.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
              ...(observedGeneration !== undefined ? { observedGeneration } : {}),
            };
            const conditions = (status.conditions ?? []).filter((c) => c.type !== disruptionTargetCondition);
            status.conditions = [...conditions, condition];
          }
        },
      });
      this.#log.info({ pod: podKey(pod) }, 'Eviction manager: pod is evicted successfully');
    } catch (err) {
      this.#log.error({ err, pod: podKey(pod) }, 'Eviction manager: pod failed to evict');
    }
    return true;
  }
}

/** Whether the pod has an emptyDir sizeLimit or an ephemeral-storage limit the manager checks. */
function hasLocalStorageLimit(pod: Pod): boolean {
  if ((pod.spec?.volumes ?? []).some((v) => v.emptyDir?.sizeLimit !== undefined)) return true;
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return containers.some((c) => c.resources?.limits?.['ephemeral-storage'] !== undefined);
}

function podKey(pod: Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/** BestEffort: no container (regular or init) requests or limits cpu or memory. */
function isBestEffort(pod: Pod): boolean {
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  // Upstream getPodQOS: only non-zero cpu and memory amounts count.
  const named = (list: Readonly<Record<string, Quantity>> | undefined) =>
    Object.entries(list ?? {}).some(([k, v]) => (k === 'cpu' || k === 'memory') && parseQuantity(v) > 0);
  if (named(pod.spec?.resources?.requests) || named(pod.spec?.resources?.limits)) return false;
  return !containers.some((c) => named(c.resources?.requests) || named(c.resources?.limits));
}

/** Upstream `TolerationsTolerateTaint` for node.kubernetes.io/memory-pressure:NoSchedule. */
function toleratesMemoryPressure(tolerations: readonly Toleration[]): boolean {
  return tolerations.some((t) => {
    if (t.effect && t.effect !== 'NoSchedule') return false;
    if (t.key && t.key !== 'node.kubernetes.io/memory-pressure') return false;
    if (t.operator === 'Exists') return true;
    return (t.operator ?? 'Equal') === 'Equal' && (t.value ?? '') === '';
  });
}
