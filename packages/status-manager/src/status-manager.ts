import {
  type Clock,
  type ContainerID,
  type ContainerStatus,
  deepCopy,
  formatContainerID,
  isStaticPod,
  type Logger,
  noopLogger,
  type Pod,
  type PodCondition,
  type PodStatus,
  type PodStatusProvider,
  RealClock,
  type Timer,
} from '@kubelet-kit/core';
import { generateContainersReadyCondition, generatePodReadyCondition } from './generate.js';
import { isPodPhaseTerminal } from './pod-phase.js';
import {
  canBeDeleted,
  checkContainerStateTransition,
  dropEmptyContainerStates,
  formatRfc3339,
  hasPodInitialized,
  initializedContainerCount,
  isPodStatusByKubeletEqual,
  normalizeStatus,
  transitionTimeConditionTypes,
  updateLastTransitionTime,
} from './status-rules.js';
import type { StatusSink, StatusWriteResult } from './status-sink.js';

/**
 * How often every status is checked against the sinks (upstream `syncPeriod`).
 *
 * @public
 */
export const DefaultStatusSyncPeriodMs = 10_000;

/**
 * The reason and message a container gets when it was not found at pod termination (upstream's).
 *
 * @public
 */
export const ContainerStatusUnknownReason = 'ContainerStatusUnknown';
/** @public */
export const ContainerStatusUnknownMessage = 'The container could not be located when the pod was terminated';

/**
 * What the status manager needs of the pod manager (a subset of upstream `pod.Manager`; the
 * `@kubelet-kit/pod-manager` `PodManager` fits it).
 *
 * @public
 */
export interface StatusPodManager {
  /** The regular or static pod with this UID (never a mirror pod). */
  getPodByUID(uid: string): Pod | undefined;
  /** The mirror pod of a static pod. */
  getMirrorPodByPod(pod: Pod): Pod | undefined;
  /** A mirror pod's UID becomes its static pod's UID; any other UID is returned as is. */
  translatePodUID(uid: string): string;
  /** Static pod UID → mirror UID (`''` when it has no mirror yet), and mirror UID → static pod UID. */
  getUIDTranslations(): {
    readonly podToMirror: ReadonlyMap<string, string>;
    readonly mirrorToPod: ReadonlyMap<string, string>;
  };
}

/**
 * Says whether a pod's containers may still run (upstream `PodDeletionSafetyProvider`, backed by the pod workers).
 *
 * @public
 */
export interface PodDeletionSafetyProvider {
  podCouldHaveRunningContainers(pod: Pod): boolean;
}

/**
 * A cached status with its version (upstream `versionedPodStatus`).
 *
 * @public
 */
export interface VersionedPodStatus {
  /** Grows by one with every change of the pod's status. */
  readonly version: number;
  readonly podName: string;
  readonly podNamespace: string;
  /** When the oldest change not yet written was made (epoch ms). */
  readonly at: number;
  /** True once the status came from `terminatePod`; stays true for non-static pods. */
  readonly podIsFinished: boolean;
  readonly status: PodStatus;
}

/**
 * The source of truth for the API status of the kubelet's pods (upstream `status.Manager`). It
 * caches one versioned status per pod and writes changes to its sinks.
 *
 * @public
 */
export interface StatusManager extends PodStatusProvider {
  /** Starts writing to the sinks: on every change and every sync period. Does nothing without sinks. */
  start(): void;
  /** Stops the sync loop and waits for a write in progress. */
  stop(): Promise<void>;
  /** A copy of the cached status; a mirror pod's UID finds its static pod's status. */
  getPodStatus(uid: string): PodStatus | undefined;
  /**
   * The cached status's phase, without copying the status: what admission and housekeeping ask
   * of every pod (`getPodStatus(uid)?.phase` at the cost of a read).
   */
  getPodPhase(uid: string): PodStatus['phase'] | undefined;
  /** The cached status with its version, by source UID (for diagnostics and tests). */
  getVersionedStatus(uid: string): VersionedPodStatus | undefined;
  /** Caches a new status; ignored when nothing the kubelet owns changed, unless the pod is being deleted. */
  setPodStatus(pod: Pod, status: PodStatus): void;
  /** Sets one container's `ready` and regenerates Ready and ContainersReady. */
  setContainerReadiness(podUid: string, containerId: string | ContainerID, ready: boolean): void;
  /** Sets one container's `started`. */
  setContainerStartup(podUid: string, containerId: string | ContainerID, started: boolean): void;
  /**
   * Marks the pod finished: containers with no terminated state become Terminated (137,
   * ContainerStatusUnknown), and a non-static pod's phase becomes Failed unless terminal.
   */
  terminatePod(pod: Pod): void;
  /** Forgets the statuses of every pod not in `podUids`. */
  removeOrphanedStatuses(podUids: Iterable<string>): void;
  /**
   * Writes pending statuses to the sinks now; with `all`, also reconciles and retries every
   * status (what the periodic sync does). Resolves to the number of writes attempted.
   */
  syncBatch(all: boolean): Promise<number>;
}

/**
 * Options of {@link newStatusManager}.
 *
 * @public
 */
export interface StatusManagerOptions {
  readonly podManager: StatusPodManager;
  /** Backed by the pod workers; without one, a terminal phase is never held back. */
  readonly podDeletionSafety?: PodDeletionSafetyProvider;
  /** Where statuses are written; none keeps them in the cache only. */
  readonly sinks?: readonly StatusSink[];
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Period of the full sync; default 10 s. */
  readonly syncPeriodMs?: number;
  /** Writes run at once in one batch, per sink; default 1 (upstream writes one at a time). */
  readonly maxConcurrentWrites?: number;
}

interface SinkState {
  readonly sink: StatusSink;
  /** Status UID (mirror UID for static pods) → last version written (upstream `apiStatusVersions`). */
  readonly versions: Map<string, number>;
}

interface PodSync {
  readonly podUid: string;
  readonly statusUid: string;
  readonly status: VersionedPodStatus;
}

function podUidOf(pod: Pod): string {
  return pod.metadata?.uid ?? '';
}

function findContainerStatus(status: PodStatus, containerId: string): ContainerStatus | undefined {
  return (
    status.containerStatuses?.find((c) => c.containerID === containerId) ??
    status.initContainerStatuses?.find((c) => c.containerID === containerId)
  );
}

function unknownTermination(): ContainerStatus['state'] {
  return {
    terminated: {
      reason: ContainerStatusUnknownReason,
      message: ContainerStatusUnknownMessage,
      exitCode: 137,
    },
  };
}

/**
 * The status manager (upstream `status.manager`).
 *
 * @public
 */
export class PodStatusManager implements StatusManager {
  readonly #podManager: StatusPodManager;
  readonly #podDeletionSafety: PodDeletionSafetyProvider | undefined;
  readonly #sinks: SinkState[];
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #syncPeriodMs: number;
  readonly #maxConcurrentWrites: number;
  readonly #podStatuses = new Map<string, VersionedPodStatus>();

  // The status channel of upstream, buffer 1: a flag, so pending signals collapse into one.
  #changePending = false;
  #fullSyncPending = false;
  #started = false;
  #stopped = false;
  #ticker: Timer | undefined;
  #loop: Promise<void> | undefined;
  readonly #abort = new AbortController();

  constructor(options: StatusManagerOptions) {
    this.#podManager = options.podManager;
    this.#podDeletionSafety = options.podDeletionSafety;
    this.#sinks = (options.sinks ?? []).map((sink) => ({ sink, versions: new Map() }));
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'status-manager' });
    this.#syncPeriodMs = options.syncPeriodMs ?? DefaultStatusSyncPeriodMs;
    this.#maxConcurrentWrites = Math.max(1, options.maxConcurrentWrites ?? 1);
  }

  start(): void {
    if (this.#started || this.#stopped) return;
    if (this.#sinks.length === 0) {
      this.#logger.info('no status sinks, not starting the status sync');
      return;
    }
    this.#started = true;
    this.#ticker = this.#clock.setInterval(() => {
      this.#fullSyncPending = true;
      this.#kick();
    }, this.#syncPeriodMs);
    if (this.#changePending) this.#kick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ticker?.cancel();
    this.#ticker = undefined;
    this.#abort.abort(new Error('status manager stopped'));
    await this.#loop;
  }

  getPodStatus(uid: string): PodStatus | undefined {
    const cached = this.#podStatuses.get(this.#podManager.translatePodUID(uid));
    return cached ? deepCopy(cached.status) : undefined;
  }

  getPodPhase(uid: string): PodStatus['phase'] | undefined {
    return this.#podStatuses.get(this.#podManager.translatePodUID(uid))?.status.phase;
  }

  getVersionedStatus(uid: string): VersionedPodStatus | undefined {
    const cached = this.#podStatuses.get(uid);
    return cached ? deepCopy(cached) : undefined;
  }

  setPodStatus(pod: Pod, status: PodStatus): void {
    const copy: PodStatus = deepCopy(status);
    // The status says which generation of the pod it was made for (PodObservedGenerationTracking,
    // on by default in 1.34). Probe updates leave it alone.
    const generation = pod.metadata?.generation;
    if (generation) copy.observedGeneration = generation;
    else delete copy.observedGeneration;
    // A pod being deleted must still reach the sinks, so its update is forced.
    this.#updateStatusInternal(pod, copy, pod.metadata?.deletionTimestamp != null, false);
  }

  setContainerReadiness(podUid: string, containerId: string | ContainerID, ready: boolean): void {
    const id = typeof containerId === 'string' ? containerId : formatContainerID(containerId);
    const found = this.#findForContainerUpdate(podUid, id, 'readiness');
    if (!found) return;
    const { pod, cached, container } = found;
    if ((container.ready ?? false) === ready) {
      this.#logger.debug({ pod: podUidOf(pod), containerId: id, ready }, 'container readiness unchanged');
      return;
    }
    const status = deepCopy(cached.status);
    findContainerStatus(status, id)!.ready = ready;
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    const phase = status.phase ?? 'Pending';
    const replace = (c: PodCondition) => {
      status.conditions ??= [];
      const at = status.conditions.findIndex((x) => x.type === c.type);
      if (at >= 0) status.conditions[at] = c;
      else status.conditions.push(c);
    };
    replace(generatePodReadyCondition(pod, status.conditions, all, phase));
    replace(generateContainersReadyCondition(pod, all, phase));
    this.#updateStatusInternal(pod, status, false, false);
  }

  setContainerStartup(podUid: string, containerId: string | ContainerID, started: boolean): void {
    const id = typeof containerId === 'string' ? containerId : formatContainerID(containerId);
    const found = this.#findForContainerUpdate(podUid, id, 'startup');
    if (!found) return;
    const { pod, cached, container } = found;
    if (container.started !== undefined && container.started === started) return;
    const status = deepCopy(cached.status);
    findContainerStatus(status, id)!.started = started;
    this.#updateStatusInternal(pod, status, false, false);
  }

  #findForContainerUpdate(
    podUid: string,
    containerId: string,
    what: string,
  ): { pod: Pod; cached: VersionedPodStatus; container: ContainerStatus } | undefined {
    const pod = this.#podManager.getPodByUID(podUid);
    if (!pod) {
      this.#logger.debug({ podUid }, `pod has been deleted, no need to update ${what}`);
      return undefined;
    }
    const cached = this.#podStatuses.get(podUidOf(pod));
    if (!cached) {
      this.#logger.info({ podUid, containerId }, `container ${what} changed before pod has synced`);
      return undefined;
    }
    const container = findContainerStatus(cached.status, containerId);
    if (!container) {
      this.#logger.info({ podUid, containerId }, `container ${what} changed for unknown container`);
      return undefined;
    }
    return { pod, cached, container };
  }

  terminatePod(pod: Pod): void {
    const cached = this.#podStatuses.get(podUidOf(pod));
    const status = deepCopy(cached ? cached.status : (pod.status ?? {}));
    // Whether a container that cannot be found succeeded is unknowable: report a failure.
    if (hasPodInitialized(pod)) {
      for (const c of status.containerStatuses ?? []) {
        if (!c.state?.terminated) c.state = unknownTermination();
      }
    }
    const inits = status.initContainerStatuses ?? [];
    const initialized = initializedContainerCount(inits);
    for (let i = 0; i < initialized; i++) {
      const c = inits[i]!;
      if (!c.state?.terminated) c.state = unknownTermination();
    }
    // Static pods keep their phase (upstream #116484).
    if (!isStaticPod(pod) && !isPodPhaseTerminal(status.phase)) {
      if (status.phase !== 'Pending' && status.phase !== 'Running') {
        this.#logger.error({ pod: podUidOf(pod), phase: status.phase }, 'unknown phase, programmer error');
      }
      status.phase = 'Failed';
    }
    this.#updateStatusInternal(pod, status, true, true);
  }

  removeOrphanedStatuses(podUids: Iterable<string>): void {
    const keep = podUids instanceof Set ? (podUids as ReadonlySet<string>) : new Set(podUids);
    // Housekeeping calls this every 2 s: no copy of the keys (deleting the key being visited is
    // allowed while iterating a Map).
    for (const uid of this.#podStatuses.keys()) {
      if (!keep.has(uid)) {
        this.#logger.debug({ podUid: uid }, 'removing pod from status map');
        this.#podStatuses.delete(uid);
      }
    }
  }

  /** Returns whether the status was cached (false when dropped as illegal or unchanged). */
  #updateStatusInternal(pod: Pod, status: PodStatus, forceUpdate: boolean, podIsFinished: boolean): boolean {
    const uid = podUidOf(pod);
    const cached = this.#podStatuses.get(uid);
    let oldStatus: PodStatus;
    let finished = podIsFinished;
    if (cached) {
      oldStatus = cached.status;
      if (!isStaticPod(pod) && cached.podIsFinished && !finished) {
        this.#logger.info({ pod: uid }, 'got podIsFinished=false while the cache has true, programmer error');
        finished = true;
      }
    } else {
      oldStatus = this.#podManager.getMirrorPodByPod(pod)?.status ?? pod.status ?? {};
    }

    const illegal = checkContainerStateTransition(oldStatus, status, pod.spec);
    if (illegal) {
      this.#logger.error({ pod: uid, err: illegal }, 'status update on pod aborted');
      return false;
    }
    // A pod never leaves a terminal phase; keep it rather than cache an impossible status.
    if (
      cached &&
      !isStaticPod(pod) &&
      isPodPhaseTerminal(oldStatus.phase) &&
      status.phase !== oldStatus.phase
    ) {
      this.#logger.warn(
        { pod: uid, phase: oldStatus.phase, attempted: status.phase },
        'pod attempted to leave a terminal phase; phase kept',
      );
      status.phase = oldStatus.phase;
      if (oldStatus.reason) status.reason = oldStatus.reason;
      else delete status.reason;
      if (oldStatus.message) status.message = oldStatus.message;
      else delete status.message;
    }

    const now = formatRfc3339(this.#clock.now());
    for (const type of transitionTimeConditionTypes) updateLastTransitionTime(status, oldStatus, type, now);
    if (oldStatus.startTime) status.startTime = oldStatus.startTime;
    else if (!status.startTime) status.startTime = now;
    normalizeStatus(pod, status);

    // Unchanged statuses are dropped so the phase only ever moves forward.
    if (cached && !forceUpdate && isPodStatusByKubeletEqual(cached.status, status)) {
      this.#logger.debug({ pod: uid }, 'ignoring same status for pod');
      return false;
    }
    this.#podStatuses.set(uid, {
      status,
      version: (cached?.version ?? 0) + 1,
      podName: pod.metadata?.name ?? '',
      podNamespace: pod.metadata?.namespace ?? '',
      at: cached?.at ?? this.#clock.now(),
      podIsFinished: finished,
    });
    this.#changePending = true;
    if (this.#started) this.#kick();
    return true;
  }

  #kick(): void {
    if (this.#loop || this.#stopped) return;
    this.#loop = this.#run().finally(() => {
      this.#loop = undefined;
      // A signal that arrived as the loop ended must not wait for the next tick.
      if (!this.#stopped && (this.#changePending || this.#fullSyncPending)) this.#kick();
    });
  }

  async #run(): Promise<void> {
    // Let updates made in the same turn collapse into one batch.
    await Promise.resolve();
    while (!this.#stopped && (this.#changePending || this.#fullSyncPending)) {
      const all = !this.#changePending;
      if (all) this.#fullSyncPending = false;
      else this.#changePending = false;
      try {
        await this.syncBatch(all);
      } catch (err) {
        this.#logger.error({ err }, 'status sync batch failed');
      }
    }
  }

  async syncBatch(all: boolean): Promise<number> {
    const { podToMirror, mirrorToPod } = this.#podManager.getUIDTranslations();
    let attempted = 0;
    for (const state of this.#sinks) {
      if (all) {
        for (const uid of [...state.versions.keys()]) {
          if (!this.#podStatuses.has(uid) && !mirrorToPod.has(uid)) state.versions.delete(uid);
        }
      }
      const updates: PodSync[] = [];
      for (const [podUid, status] of this.#podStatuses) {
        // Static pods are known to the sinks by their mirror pod's UID.
        let statusUid = podUid;
        const mirrorUid = podToMirror.get(podUid);
        if (mirrorUid !== undefined) {
          if (mirrorUid === '') {
            this.#logger.debug({ podUid }, 'static pod has no mirror pod; skipping');
            continue;
          }
          statusUid = mirrorUid;
        }
        if (!all) {
          if ((state.versions.get(statusUid) ?? 0) >= status.version) continue;
          updates.push({ podUid, statusUid, status });
          continue;
        }
        if (this.#needsUpdate(state, podUid, statusUid, status)) {
          updates.push({ podUid, statusUid, status });
        } else if (this.#needsReconcile(podUid, status.status)) {
          // Forget the version so the write happens even if it was sent before.
          state.versions.delete(statusUid);
          updates.push({ podUid, statusUid, status });
        }
      }
      attempted += updates.length;
      await this.#runBounded(updates, (update) => this.#syncPod(state, update));
    }
    return attempted;
  }

  async #runBounded<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < items.length && !this.#stopped) {
        const item = items[next++]!;
        await work(item);
      }
    };
    const workers = Array.from({ length: Math.min(this.#maxConcurrentWrites, items.length) }, worker);
    await Promise.all(workers);
  }

  #needsUpdate(state: SinkState, podUid: string, statusUid: string, status: VersionedPodStatus): boolean {
    const latest = state.versions.get(statusUid);
    if (latest === undefined || latest < status.version) return true;
    if (!state.sink.delete) return false;
    const pod = this.#podManager.getPodByUID(podUid);
    return pod !== undefined && canBeDeleted(pod, status.podIsFinished);
  }

  /** True when the source's copy of the status (the mirror's for static pods) differs from the cache. */
  #needsReconcile(podUid: string, status: PodStatus): boolean {
    let pod = this.#podManager.getPodByUID(podUid);
    if (!pod) return false;
    if (isStaticPod(pod)) {
      pod = this.#podManager.getMirrorPodByPod(pod);
      if (!pod) return false;
    }
    // The source's copy is API JSON, where an unset container state reads `{}` (see
    // dropEmptyContainerStates); upstream compares Go structs, which cannot tell them apart.
    const apiStatus = normalizeStatus(pod, deepCopy(dropEmptyContainerStates(pod.status ?? {})));
    return !isPodStatusByKubeletEqual(apiStatus, dropEmptyContainerStates(status));
  }

  async #syncPod(state: SinkState, update: PodSync): Promise<void> {
    const { podUid, statusUid, status } = update;
    const sink = state.sink;
    const localPod = this.#podManager.getPodByUID(podUid);
    const isStatic = localPod !== undefined && isStaticPod(localPod);
    const targetPod: Pod = (isStatic ? this.#podManager.getMirrorPodByPod(localPod) : localPod) ?? {
      metadata: { name: status.podName, namespace: status.podNamespace, uid: statusUid },
    };
    const delay = this.#podDeletionSafety?.podCouldHaveRunningContainers(localPod ?? targetPod) ?? false;
    const log = this.#logger.child({ sink: sink.name, podUid, statusUid, version: status.version });
    let result: StatusWriteResult;
    try {
      result = await sink.write(targetPod, deepCopy(status.status), {
        podUid,
        statusUid,
        ...(isStatic ? { mirrorUid: statusUid } : {}),
        version: status.version,
        podIsFinished: status.podIsFinished,
        delayTransitioningToTerminal: delay,
        now: formatRfc3339(this.#clock.now()),
        signal: this.#abort.signal,
      });
    } catch (err) {
      // Retried by the next batch: any change or the periodic sync.
      log.info({ err }, 'failed to write status for pod');
      return;
    }
    switch (result.outcome) {
      case 'notFound':
        // RemoveOrphanedStatuses cleans up once the pod is gone for good.
        log.debug('pod does not exist in the sink');
        return;
      case 'superseded':
        return;
      case 'uidMismatch':
        log.info('pod was deleted and then recreated, skipping status update');
        this.#podStatuses.delete(podUid);
        return;
      default:
        break;
    }
    state.versions.set(statusUid, status.version);
    const written = result.pod;
    if (sink.delete && written && canBeDeleted(written, status.podIsFinished)) {
      try {
        await sink.delete(written, { uid: written.metadata?.uid ?? statusUid, signal: this.#abort.signal });
      } catch (err) {
        log.info({ err }, 'failed to delete pod');
        return;
      }
      log.debug('pod fully terminated and removed');
      this.#podStatuses.delete(podUid);
    }
  }
}

/**
 * Creates a {@link StatusManager}.
 *
 * @public
 */
export function newStatusManager(options: StatusManagerOptions): StatusManager {
  return new PodStatusManager(options);
}
