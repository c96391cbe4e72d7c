import {
  buildPodFullName,
  type Clock,
  CodedError,
  type EventRecorder,
  isStaticPod,
  jitter,
  type Logger,
  NetworkNotReadyError,
  noopEventRecorder,
  noopLogger,
  type Pod,
  type PodStatusCache,
  podEventReference,
  type RuntimePod,
  type RuntimePodStatus,
} from '@kubelet-kit/core';
import { SyncCancellation } from './sync-cancellation.js';
import { SyncLimiter } from './sync-limiter.js';
import type {
  KillPodOptions,
  PodStatusFunc,
  PodSyncContext,
  PodSyncer,
  PodSyncStatusView,
  PodWorkerState,
  PodWorkerSync,
  PodWorkers,
  UpdatePodOptions,
} from './types.js';
import { BasicWorkQueue, type WorkQueue } from './work-queue.js';

/** Jitter factor of the resync interval (upstream `workerResyncIntervalJitterFactor`). */
export const WorkerResyncIntervalJitterFactor = 0.5;
/** Jitter factor of the error backoffs (upstream `workerBackOffPeriodJitterFactor`). */
export const WorkerBackOffPeriodJitterFactor = 0.5;
/** Backoff after a transient error such as a {@link NetworkNotReadyError} (upstream, 1 s). */
export const BackOffOnTransientErrorPeriodMs = 1_000;
/** The kubelet's default sync frequency: the resync interval of a healthy pod. */
export const DefaultResyncIntervalMs = 60_000;
/** The kubelet's backoff after a failed sync. */
export const DefaultBackOffPeriodMs = 10_000;

/** The reason a sync's signal is aborted with: a kill or a shorter grace period superseded it. */
export class PodSyncCanceledError extends CodedError<'Canceled'> {
  constructor(message = 'context canceled') {
    super('PodSyncCanceledError', 'Canceled', message);
  }
}

/** Observes how long updates take to be realized (upstream `kubelet_pod_worker_duration_seconds`). @public */
export interface PodWorkerMetrics {
  /** `operation` is the update type, or `terminated`. */
  observePodWorkerDuration(operation: string, seconds: number): void;
}

/** Options of {@link BasicPodWorkers}. @public */
export interface PodWorkersOptions {
  readonly podSyncer: PodSyncer;
  /** The runtime status cache (the PLEG's); each sync waits for a status newer than the last. */
  readonly podCache: PodStatusCache;
  readonly clock: Clock;
  /** Where due times are recorded; default a {@link BasicWorkQueue} on `clock`. */
  readonly workQueue?: WorkQueue;
  readonly recorder?: EventRecorder;
  readonly logger?: Logger;
  /** Resync interval of a healthy pod (default 60 s, jittered up to ×1.5). */
  readonly resyncIntervalMs?: number;
  /** Backoff after a failed sync (default 10 s, jittered up to ×1.5). */
  readonly backOffPeriodMs?: number;
  /** At most this many syncer calls run at once (default: no bound). */
  readonly maxConcurrentSyncs?: number;
  /** Random source of the jitter, in [0, 1). */
  readonly random?: () => number;
  readonly metrics?: PodWorkerMetrics;
  /**
   * Shuts the workers down when aborted: syncs in flight see their signal abort, no further
   * update is taken, and `updatePod` does nothing (upstream has no shutdown yet).
   */
  readonly signal?: AbortSignal;
}

/** Mutable form of {@link UpdatePodOptions} kept inside the workers. */
interface Update {
  updateType: UpdatePodOptions['updateType'];
  startTime: number | undefined;
  pod: Pod | undefined;
  mirrorPod: Pod | undefined;
  runningPod: RuntimePod | undefined;
  killPodOptions: MutableKillPodOptions | undefined;
}

interface MutableKillPodOptions {
  onCompleted: (() => void) | undefined;
  evict: boolean;
  podStatusFunc: PodStatusFunc | undefined;
  podTerminationGracePeriodSecondsOverride: number | undefined;
}

/**
 * The 1-slot channel of a pod's worker. Its loop runs only while there is work, so an idle pod
 * costs no suspended function; `lastSyncTime` is what upstream's goroutine keeps in a local.
 */
interface WorkerChannel {
  readonly uid: string;
  signaled: boolean;
  closed: boolean;
  running: boolean;
  lastSyncTime: number;
}

class PodSyncStatus {
  cancellation: SyncCancellation | undefined;
  working = false;
  pendingUpdate: Update | undefined;
  activeUpdate: Update | undefined;
  startedAt: number | undefined;
  terminatingAt: number | undefined;
  terminatedAt: number | undefined;
  gracePeriod = 0;
  notifyPostTerminating: (() => void)[] = [];
  statusPostTerminating: PodStatusFunc[] = [];
  startedTerminating = false;
  deleted = false;
  evicted = false;
  finished = false;
  restartRequested = false;
  observedRuntime = false;
  /** What the last `syncKnownPods` said of this worker, handed out again while it still holds. */
  lastSync: PodWorkerSync | undefined;

  constructor(
    readonly fullname: string,
    readonly syncedAt: number,
  ) {}

  isTerminationRequested(): boolean {
    return this.terminatingAt !== undefined;
  }
  isTerminated(): boolean {
    return this.terminatedAt !== undefined;
  }
  isStarted(): boolean {
    return this.startedAt !== undefined;
  }
  workType(): PodWorkerState {
    if (this.isTerminated()) return 'terminated';
    if (this.isTerminationRequested()) return 'terminating';
    return 'sync';
  }

  /**
   * Records a newly taken update: the pod is replaced unless the update only carries a running
   * pod (a synthetic pod must not hide a real spec), the mirror pod only when given, and kill
   * options keep only what later syncs need.
   */
  mergeLastUpdate(other: Update): void {
    // Like upstream, the update type is not merged: a replayed update is a plain sync.
    const opts: Update = this.activeUpdate ?? {
      updateType: 'sync',
      startTime: undefined,
      pod: undefined,
      mirrorPod: undefined,
      runningPod: undefined,
      killPodOptions: undefined,
    };
    this.activeUpdate = opts;
    if (opts.pod === undefined || other.runningPod === undefined) opts.pod = other.pod;
    opts.runningPod = other.runningPod;
    if (other.mirrorPod !== undefined) opts.mirrorPod = other.mirrorPod;
    if (other.killPodOptions !== undefined) {
      opts.killPodOptions = {
        onCompleted: undefined,
        evict: other.killPodOptions.evict,
        podStatusFunc: undefined,
        podTerminationGracePeriodSecondsOverride:
          other.killPodOptions.podTerminationGracePeriodSecondsOverride,
      };
    }
  }
}

interface StartedSync {
  readonly ok: boolean;
  readonly canStart: boolean;
  readonly canEverStart: boolean;
  readonly cancel?: SyncCancellation;
  readonly workType?: PodWorkerState;
  readonly update?: Update;
}

function toUpdate(options: UpdatePodOptions): Update {
  const kill = options.killPodOptions;
  return {
    updateType: options.updateType,
    startTime: options.startTime,
    pod: options.pod,
    mirrorPod: options.mirrorPod,
    runningPod: options.runningPod,
    killPodOptions: kill
      ? {
          onCompleted: kill.onCompleted,
          evict: kill.evict ?? false,
          podStatusFunc: kill.podStatusFunc,
          podTerminationGracePeriodSecondsOverride: kill.podTerminationGracePeriodSecondsOverride,
        }
      : undefined,
  };
}

function toOptions(update: Update | undefined): UpdatePodOptions | undefined {
  if (!update) return undefined;
  const kill = update.killPodOptions;
  return {
    updateType: update.updateType,
    ...(update.startTime !== undefined && { startTime: update.startTime }),
    ...(update.pod !== undefined && { pod: update.pod }),
    ...(update.mirrorPod !== undefined && { mirrorPod: update.mirrorPod }),
    ...(update.runningPod !== undefined && { runningPod: update.runningPod }),
    ...(kill !== undefined && {
      killPodOptions: {
        evict: kill.evict,
        ...(kill.onCompleted && { onCompleted: kill.onCompleted }),
        ...(kill.podStatusFunc && { podStatusFunc: kill.podStatusFunc }),
        ...(kill.podTerminationGracePeriodSecondsOverride !== undefined && {
          podTerminationGracePeriodSecondsOverride: kill.podTerminationGracePeriodSecondsOverride,
        }),
      },
    }),
  };
}

/** The API pod standing in for a runtime-only pod (upstream `Pod.ToAPIPod`). */
export function runtimePodToAPIPod(runningPod: RuntimePod): Pod {
  return { metadata: { uid: runningPod.id, name: runningPod.name, namespace: runningPod.namespace } };
}

/** A pod whose cached runtime status has no running container and no ready sandbox. */
function isPodStatusCacheTerminal(status: RuntimePodStatus | undefined): boolean {
  if (!status) return true;
  if (status.containerStatuses.some((c) => c.state === 'running')) return false;
  return !status.sandboxStatuses.some((s) => s.state === 'ready');
}

/** The status a pod the runtime cache knows nothing of starts from. */
export function emptyPodStatus(uid: string, pod: Pod): RuntimePodStatus {
  return {
    id: uid,
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? '',
    ips: [],
    containerStatuses: [],
    sandboxStatuses: [],
    timestamp: 0,
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A backoff wait (CrashLoopBackOff, ImagePullBackOff) is not a failed sync (core `PodSyncError`). */
function isOnlyBackoff(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; onlyBackoff?: unknown };
  return e.code === 'PodSyncError' && e.onlyBackoff === true;
}

/**
 * The initial or a shorter grace period for a terminating pod: the pod's deletion grace period
 * and the kill's override can only lower it; with neither, the spec's value; never below 1 s.
 * Also says whether an earlier value was shortened (upstream `calculateEffectiveGracePeriod`).
 */
export function calculateEffectiveGracePeriod(
  currentGracePeriod: number,
  pod: Pod,
  options: Pick<KillPodOptions, 'podTerminationGracePeriodSecondsOverride'> | undefined,
): { gracePeriod: number; shortened: boolean } {
  let gracePeriod = currentGracePeriod;
  let overridden = false;
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  if (deletion !== undefined && (gracePeriod === 0 || deletion < gracePeriod)) {
    gracePeriod = deletion;
    overridden = true;
  }
  const override = options?.podTerminationGracePeriodSecondsOverride;
  if (override !== undefined && (gracePeriod === 0 || override < gracePeriod)) {
    gracePeriod = override;
    overridden = true;
  }
  const spec = pod.spec?.terminationGracePeriodSeconds;
  if (!overridden && gracePeriod === 0 && spec !== undefined) gracePeriod = spec;
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, shortened: currentGracePeriod !== 0 && currentGracePeriod !== gracePeriod };
}

/**
 * The pod workers as upstream's `podWorkers`: each pod UID has one serialized worker that takes
 * the newest pending update and drives the pod through sync → terminating → terminated; its
 * async loop runs only while there is work. All bookkeeping happens synchronously between
 * awaits, which is what upstream's `podLock` gives.
 * @public
 */
export class BasicPodWorkers implements PodWorkers {
  readonly #podSyncer: PodSyncer;
  readonly #podCache: PodStatusCache;
  readonly #clock: Clock;
  readonly #workQueue: WorkQueue;
  readonly #recorder: EventRecorder;
  readonly #logger: Logger;
  readonly #resyncIntervalMs: number;
  readonly #backOffPeriodMs: number;
  readonly #random: () => number;
  readonly #metrics: PodWorkerMetrics | undefined;
  readonly #limiter: SyncLimiter | undefined;

  /** True after the first `syncKnownPods`: every wanted pod has been given to `updatePod`. */
  #podsSynced = false;
  readonly #podUpdates = new Map<string, WorkerChannel>();
  readonly #podSyncStatuses = new Map<string, PodSyncStatus>();
  readonly #startedStaticPodsByFullname = new Map<string, string>();
  readonly #waitingToStartStaticPodsByFullname = new Map<string, string[]>();
  #stopped = false;
  #activeRuns = 0;
  #idleWaiters: (() => void)[] = [];
  /**
   * Worker runs waiting for their turn of the event loop to start (see #run), from
   * `#startHead` on: an index, since shifting a long array moves every entry.
   */
  #startQueue: WorkerChannel[] = [];
  #startHead = 0;

  constructor(options: PodWorkersOptions) {
    this.#podSyncer = options.podSyncer;
    this.#podCache = options.podCache;
    this.#clock = options.clock;
    this.#workQueue = options.workQueue ?? new BasicWorkQueue({ clock: options.clock });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#logger = options.logger ?? noopLogger;
    this.#resyncIntervalMs = options.resyncIntervalMs ?? DefaultResyncIntervalMs;
    this.#backOffPeriodMs = options.backOffPeriodMs ?? DefaultBackOffPeriodMs;
    this.#random = options.random ?? Math.random;
    this.#metrics = options.metrics;
    const max = options.maxConcurrentSyncs;
    this.#limiter = max !== undefined && max > 0 ? new SyncLimiter(max) : undefined;
    const signal = options.signal;
    if (signal?.aborted) this.#stop(signal.reason);
    else signal?.addEventListener('abort', () => this.#stop(signal.reason), { once: true });
  }

  #stop(reason: unknown): void {
    this.#stopped = true;
    for (const status of this.#podSyncStatuses.values()) status.cancellation?.abort(reason);
    this.#logger.info({ pods: this.#podSyncStatuses.size }, 'Pod workers stopped');
  }

  /** The queue of due times the kubelet's sync tick reads. */
  get workQueue(): WorkQueue {
    return this.#workQueue;
  }

  /** A copy of the state of one pod's worker, for tests and debugging. */
  getPodSyncStatus(uid: string): PodSyncStatusView | undefined {
    const s = this.#podSyncStatuses.get(uid);
    if (!s) return undefined;
    return {
      fullname: s.fullname,
      working: s.working,
      pendingUpdate: toOptions(s.pendingUpdate),
      activeUpdate: toOptions(s.activeUpdate),
      syncedAt: s.syncedAt,
      startedAt: s.startedAt,
      terminatingAt: s.terminatingAt,
      terminatedAt: s.terminatedAt,
      gracePeriod: s.gracePeriod,
      notifyPostTerminating: s.notifyPostTerminating.length,
      statusPostTerminating: [...s.statusPostTerminating],
      startedTerminating: s.startedTerminating,
      deleted: s.deleted,
      evicted: s.evicted,
      finished: s.finished,
      restartRequested: s.restartRequested,
      observedRuntime: s.observedRuntime,
    };
  }

  /** Which static pod has started per full name, and which wait to, in order (for tests and debugging). */
  staticPodStartState(): { started: Record<string, string>; waiting: Record<string, string[]> } {
    return {
      started: Object.fromEntries(this.#startedStaticPodsByFullname),
      waiting: Object.fromEntries([...this.#waitingToStartStaticPodsByFullname].map(([k, v]) => [k, [...v]])),
    };
  }

  /** The UIDs that have a worker state. */
  knownPodUIDs(): string[] {
    return [...this.#podSyncStatuses.keys()];
  }

  /** True while some worker has an update pending or in progress. */
  isWorking(): boolean {
    for (const s of this.#podSyncStatuses.values()) if (s.working) return true;
    return false;
  }

  /** Resolves once no worker is processing an update (for shutdown and tests). */
  whenIdle(): Promise<void> {
    if (this.#activeRuns === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  isPodKnownTerminated(uid: string): boolean {
    return this.#podSyncStatuses.get(uid)?.isTerminated() ?? false;
  }

  couldHaveRunningContainers(uid: string): boolean {
    const s = this.#podSyncStatuses.get(uid);
    return s ? !s.isTerminated() : !this.#podsSynced;
  }

  shouldPodBeFinished(uid: string): boolean {
    const s = this.#podSyncStatuses.get(uid);
    return s ? s.finished : this.#podsSynced;
  }

  isPodTerminationRequested(uid: string): boolean {
    return this.#podSyncStatuses.get(uid)?.isTerminationRequested() ?? false;
  }

  shouldPodContainersBeTerminating(uid: string): boolean {
    const s = this.#podSyncStatuses.get(uid);
    return s ? s.startedTerminating : this.#podsSynced;
  }

  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const s = this.#podSyncStatuses.get(uid);
    return s ? s.isTerminated() : this.#podsSynced;
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    const s = this.#podSyncStatuses.get(uid);
    return s ? s.evicted || (s.deleted && s.isTerminated()) : this.#podsSynced;
  }

  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean {
    const uid = this.#startedStaticPodsByFullname.get(podFullName);
    if (uid === undefined) return false;
    const s = this.#podSyncStatuses.get(uid);
    if (!s) return false;
    return s.isTerminationRequested() && !s.isTerminated();
  }

  updatePod(input: UpdatePodOptions): void {
    if (this.#stopped) return;
    const options = toUpdate(input);
    let isRuntimePod = false;
    let uid: string;
    let name: string;
    let ns: string;
    if (options.runningPod && !options.pod) {
      const running = options.runningPod;
      if (options.updateType !== 'kill') {
        this.#logger.info(
          { pod: `${running.namespace}/${running.name}`, podUID: running.id, updateType: options.updateType },
          'Pod update is ignored, runtime pods can only be killed',
        );
        return;
      }
      uid = running.id;
      ns = running.namespace;
      name = running.name;
      isRuntimePod = true;
    } else if (options.pod) {
      if (options.runningPod) {
        options.runningPod = undefined;
        this.#logger.info(
          { podUID: options.pod.metadata?.uid },
          'Pod update included RunningPod which is only valid when Pod is not specified',
        );
      }
      uid = options.pod.metadata?.uid ?? '';
      ns = options.pod.metadata?.namespace ?? '';
      name = options.pod.metadata?.name ?? '';
    } else {
      this.#logger.warn({ updateType: options.updateType }, 'Pod update has neither a pod nor a running pod');
      return;
    }
    const log = this.#logger;

    const now = this.#clock.now();
    let firstTime = false;
    let status = this.#podSyncStatuses.get(uid);
    if (!status) {
      firstTime = true;
      const fullname = buildPodFullName(name, ns);
      status = new PodSyncStatus(fullname, now);
      const phase = options.pod?.status?.phase;
      if (phase === 'Failed' || phase === 'Succeeded') {
        // After a kubelet restart a terminal pod whose containers are all gone must still pass
        // through syncTerminatedPod, but must not count as active in admission meanwhile.
        const cached = this.#podCache.get(uid);
        if (!cached.error && isPodStatusCacheTerminal(cached.status)) {
          status.terminatingAt = now;
          status.terminatedAt = now;
          status.startedTerminating = true;
        }
      }
      this.#podSyncStatuses.set(uid, status);
    }

    // A runtime pod carries no spec: prefer a real pod the worker already knows, and once the
    // runtime has shown the pod it must be driven to completion.
    let pod: Pod;
    if (isRuntimePod && options.runningPod) {
      status.observedRuntime = true;
      if (status.pendingUpdate?.pod) {
        pod = status.pendingUpdate.pod;
        options.pod = pod;
        options.runningPod = undefined;
      } else if (status.activeUpdate?.pod) {
        pod = status.activeUpdate.pod;
        options.pod = pod;
        options.runningPod = undefined;
      } else {
        pod = runtimePodToAPIPod(options.runningPod);
      }
    } else {
      pod = options.pod as Pod;
    }

    // Two pods with one UID close together (static pods with a fixed UID): restart only after
    // this one has finished and housekeeping purged it.
    if (!firstTime && status.isTerminationRequested() && options.updateType === 'create') {
      status.restartRequested = true;
      log.debug(
        { podUID: uid },
        'Pod is terminating but has been requested to restart with same UID, will be reconciled later',
      );
      return;
    }

    if (status.finished) {
      // Unlike upstream (which leaves CompletedCh open here), a kill of a finished pod completes.
      this.#notify(options.killPodOptions?.onCompleted, log);
      log.debug(
        { podUID: uid, updateType: options.updateType },
        'Pod is finished processing, no further updates',
      );
      return;
    }

    let becameTerminating = false;
    if (!status.isTerminationRequested()) {
      if (isRuntimePod) {
        status.deleted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (pod.metadata?.deletionTimestamp) {
        status.deleted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (options.updateType === 'kill') {
        if (options.killPodOptions?.evict) status.evicted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      }
    }

    // Once terminating every update is a kill, and the grace period can only shrink.
    let wasGracePeriodShortened = false;
    if (status.isTerminated()) {
      // Housekeeping may still see an old cached runtime pod; the worker is finishing anyway.
      if (isRuntimePod) return;
      this.#notify(options.killPodOptions?.onCompleted, log);
      options.killPodOptions = undefined;
    } else if (status.isTerminationRequested()) {
      if (!options.killPodOptions) {
        options.killPodOptions = {
          onCompleted: undefined,
          evict: false,
          podStatusFunc: undefined,
          podTerminationGracePeriodSecondsOverride: undefined,
        };
      }
      const kill = options.killPodOptions;
      if (kill.onCompleted) status.notifyPostTerminating.push(kill.onCompleted);
      if (kill.podStatusFunc) status.statusPostTerminating.push(kill.podStatusFunc);
      const { gracePeriod, shortened } = calculateEffectiveGracePeriod(status.gracePeriod, pod, kill);
      wasGracePeriodShortened = shortened;
      status.gracePeriod = gracePeriod;
      // Always hand syncTerminatingPod the computed value, so it is never 0.
      kill.podTerminationGracePeriodSecondsOverride = gracePeriod;
    } else if (options.killPodOptions) {
      // Kill options mean nothing to a pod that is not terminating.
      this.#notify(options.killPodOptions.onCompleted, log);
      options.killPodOptions = undefined;
    }

    let channel = this.#podUpdates.get(uid);
    if (!channel) {
      channel = { uid, signaled: false, closed: false, running: false, lastSyncTime: 0 };
      this.#podUpdates.set(uid, channel);
      // Static pods with one full name start in the order UpdatePod first saw them.
      if (isStaticPod(pod)) {
        const waiting = this.#waitingToStartStaticPodsByFullname.get(status.fullname) ?? [];
        waiting.push(uid);
        this.#waitingToStartStaticPodsByFullname.set(status.fullname, waiting);
      }
    }

    // Keep the oldest start time, so the metric measures the longest wait. As upstream (no time is
    // before a zero StartTime), an update without one drops the pending update's.
    const pendingStart = status.pendingUpdate?.startTime;
    if (pendingStart !== undefined && options.startTime !== undefined && pendingStart < options.startTime) {
      options.startTime = pendingStart;
    }

    status.pendingUpdate = options;
    status.working = true;
    this.#signal(channel);

    if ((becameTerminating || wasGracePeriodShortened) && status.cancellation) {
      log.debug({ podUID: uid, workType: status.workType() }, 'Cancelling current pod sync');
      status.cancellation.abort(new PodSyncCanceledError());
    }
  }

  syncKnownPods(desiredPods: readonly Pod[]): Map<string, PodWorkerSync> {
    const workers = new Map<string, PodWorkerSync>();
    const known = new Set<string>();
    for (const pod of desiredPods) known.add(pod.metadata?.uid ?? '');

    this.#podsSynced = true;
    // Housekeeping calls this every 2 s over every pod: no copy of the map (a worker removed
    // below is the entry being visited, which a Map's iteration allows), and a worker whose
    // answer has not changed gets the same object as last time.
    for (const [uid, status] of this.#podSyncStatuses) {
      // Forget an undesired pod (bounds the history kept) or one whose UID was reused (so the
      // caller can send a new create at once); both only once their worker finished.
      const orphan = !known.has(uid);
      if ((status.restartRequested || orphan) && this.#removeTerminatedWorker(uid, status, orphan)) continue;
      const config = status.activeUpdate ?? status.pendingUpdate;
      const pod = config?.pod;
      const state = status.workType();
      const hasConfig = pod !== undefined;
      const isStatic = pod !== undefined && isStaticPod(pod);
      let sync = status.lastSync;
      if (
        sync?.state !== state ||
        sync.orphan !== orphan ||
        sync.hasConfig !== hasConfig ||
        sync.static !== isStatic
      ) {
        sync = Object.freeze({ state, orphan, hasConfig, static: isStatic });
        status.lastSync = sync;
      }
      workers.set(uid, sync);
    }
    return workers;
  }

  #removeTerminatedWorker(uid: string, status: PodSyncStatus, orphaned: boolean): boolean {
    if (!status.finished) {
      if (!orphaned) return false;
      // An orphan gets no more updates from the caller: the worker must finish it on its own.
      status.deleted = true;
      if (status.isStarted() || status.observedRuntime) {
        if (!status.isTerminationRequested()) {
          status.terminatingAt = this.#clock.now();
          const pod = status.activeUpdate?.pod;
          status.gracePeriod = pod
            ? calculateEffectiveGracePeriod(status.gracePeriod, pod, undefined).gracePeriod
            : 1;
        }
        this.#requeueLastPodUpdate(uid, status);
        return false;
      }
      // Never started: nothing can run, so the worker may go without any sync.
    }
    this.#podSyncStatuses.delete(uid);
    this.#cleanupPodUpdates(uid);
    this.#releaseStaticPodFullname(status.fullname, uid);
    return true;
  }

  #notify(callback: (() => void) | undefined, log: Logger): void {
    if (!callback) return;
    try {
      callback();
    } catch (err) {
      log.error({ err: errorMessage(err) }, 'Kill completion callback failed');
    }
  }

  #signal(channel: WorkerChannel | undefined): void {
    if (!channel || channel.closed) return;
    channel.signaled = true;
    if (!channel.running) this.#run(channel);
  }

  #cleanupPodUpdates(uid: string): void {
    const channel = this.#podUpdates.get(uid);
    if (channel) channel.closed = true;
    this.#podUpdates.delete(uid);
  }

  #requeueLastPodUpdate(uid: string, status: PodSyncStatus): void {
    if (status.pendingUpdate || !status.activeUpdate) return;
    status.pendingUpdate = { ...status.activeUpdate };
    status.working = true;
    this.#signal(this.#podUpdates.get(uid));
  }

  /**
   * Starts the channel's worker in a later turn of the event loop, one worker per turn: like a
   * goroutine, it starts after the caller's synchronous code (so that caller's updates coalesce),
   * and it runs until it waits on I/O before the next worker starts. Started together in one
   * turn, a burst of new pods would each run their whole sync preamble before the first of them
   * reached the runtime, since the runtime calls they make are only written out between turns.
   */
  #run(channel: WorkerChannel): void {
    channel.running = true;
    this.#activeRuns++;
    // A turn is already scheduled unless the queue was empty.
    if (this.#startQueue.push(channel) - this.#startHead === 1) setImmediate(this.#startNext);
  }

  readonly #startNext = (): void => {
    const channel = this.#startQueue[this.#startHead++] as WorkerChannel;
    if (this.#startHead < this.#startQueue.length) {
      setImmediate(this.#startNext);
      if (this.#startHead >= 1024 && this.#startHead * 2 >= this.#startQueue.length) {
        this.#startQueue = this.#startQueue.slice(this.#startHead);
        this.#startHead = 0;
      }
    } else {
      this.#startQueue = [];
      this.#startHead = 0;
    }
    this.#podWorkerLoop(channel).catch((err: unknown) => {
      this.#logger.error({ podUID: channel.uid, err: errorMessage(err) }, 'Pod worker crashed');
    });
  };

  /**
   * Frees `fullname` if `uid` holds it, and queues the first live waiter for an immediate sync.
   * Upstream lets the waiter find the slot free on its next backoff retry (10-15 s later); waking
   * it here keeps the order and removes that wait from every static-pod re-creation.
   */
  #releaseStaticPodFullname(fullname: string, uid: string): void {
    if (this.#startedStaticPodsByFullname.get(fullname) !== uid) return;
    this.#startedStaticPodsByFullname.delete(fullname);
    for (const waitingUID of this.#waitingToStartStaticPodsByFullname.get(fullname) ?? []) {
      const s = this.#podSyncStatuses.get(waitingUID);
      if (!s || s.isTerminationRequested() || s.isTerminated()) continue;
      this.#workQueue.enqueue(waitingUID, 0);
      return;
    }
  }

  #allowStaticPodStart(fullname: string, uid: string): boolean {
    const started = this.#startedStaticPodsByFullname.get(fullname);
    if (started !== undefined) return started === uid;
    let waiting = this.#waitingToStartStaticPodsByFullname.get(fullname) ?? [];
    for (let i = 0; i < waiting.length; i++) {
      const waitingUID = waiting[i] as string;
      const s = this.#podSyncStatuses.get(waitingUID);
      // Waiters that are gone or already terminating can never start: prune them.
      if (!s || s.isTerminationRequested() || s.isTerminated()) continue;
      if (waitingUID !== uid) {
        this.#waitingToStartStaticPodsByFullname.set(fullname, waiting.slice(i));
        return false;
      }
      waiting = waiting.slice(i + 1);
      break;
    }
    if (waiting.length > 0) this.#waitingToStartStaticPodsByFullname.set(fullname, waiting);
    else this.#waitingToStartStaticPodsByFullname.delete(fullname);
    this.#startedStaticPodsByFullname.set(fullname, uid);
    return true;
  }

  #allowPodStart(pod: Pod): { canStart: boolean; canEverStart: boolean } {
    if (!isStaticPod(pod)) return { canStart: true, canEverStart: true };
    const uid = pod.metadata?.uid ?? '';
    const status = this.#podSyncStatuses.get(uid);
    if (!status) {
      this.#logger.error({ podUID: uid }, 'Pod sync status does not exist, the worker should not be running');
      return { canStart: false, canEverStart: false };
    }
    if (status.isTerminationRequested()) return { canStart: false, canEverStart: false };
    if (!this.#allowStaticPodStart(status.fullname, uid)) {
      this.#workQueue.enqueue(
        uid,
        jitter(this.#backOffPeriodMs, WorkerBackOffPeriodJitterFactor, this.#random),
      );
      return { canStart: false, canEverStart: true };
    }
    return { canStart: true, canEverStart: true };
  }

  #cleanupUnstartedPod(uid: string, status: PodSyncStatus): void {
    this.#cleanupPodUpdates(uid);
    status.finished = true;
    status.working = false;
    status.terminatedAt = this.#clock.now();
    this.#releaseStaticPodFullname(status.fullname, uid);
  }

  /**
   * Takes the pending update, makes sure the sync has a live abort signal, and decides whether
   * the pod may start. A pod that may not start yet keeps its update pending; one that never
   * may (a static pod killed while waiting) is finished without any sync.
   */
  #startPodSync(uid: string): StartedSync {
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return { ok: false, canStart: false, canEverStart: false };
    if (!status.pendingUpdate) {
      status.working = false;
      return { ok: false, canStart: false, canEverStart: false };
    }
    const workType = status.workType();
    const update = status.pendingUpdate;
    status.pendingUpdate = undefined;
    const channel = this.#podUpdates.get(uid);
    if (channel) channel.signaled = false;

    if (!status.cancellation || (status.cancellation.aborted && !this.#stopped)) {
      status.cancellation = new SyncCancellation();
    }
    const cancel = status.cancellation;

    if (status.isStarted()) {
      status.mergeLastUpdate(update);
      return { ok: true, canStart: true, canEverStart: true, cancel, workType, update };
    }
    // A runtime-only pod goes straight to terminating; it "starts" only to be stopped.
    if (update.runningPod && workType === 'terminating') {
      status.mergeLastUpdate(update);
      return { ok: true, canStart: true, canEverStart: true, cancel, workType, update };
    }
    if (!update.pod) {
      status.mergeLastUpdate(update);
      return { ok: true, canStart: false, canEverStart: false, cancel, workType, update };
    }
    const { canStart, canEverStart } = this.#allowPodStart(update.pod);
    if (!canEverStart) {
      this.#cleanupUnstartedPod(uid, status);
      this.#observeDuration('terminated', update.startTime);
      return { ok: true, canStart, canEverStart, cancel, workType, update };
    }
    if (!canStart) {
      status.pendingUpdate = update;
      status.working = false;
      return { ok: true, canStart, canEverStart, cancel, workType, update };
    }
    status.startedAt = this.#clock.now();
    status.mergeLastUpdate(update);
    return { ok: true, canStart: true, canEverStart: true, cancel, workType, update };
  }

  #acknowledgeTerminating(uid: string): PodStatusFunc | undefined {
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return undefined;
    if (status.isTerminationRequested()) status.startedTerminating = true;
    return status.statusPostTerminating.at(-1);
  }

  async #podWorkerLoop(channel: WorkerChannel): Promise<void> {
    try {
      await this.#processUpdates(channel);
    } finally {
      channel.running = false;
      // A signal that came after the loop's last look at the channel starts another run.
      if (channel.signaled && !channel.closed && this.#podUpdates.get(channel.uid) === channel) {
        this.#run(channel);
      }
      if (--this.#activeRuns === 0) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  }

  async #processUpdates(channel: WorkerChannel): Promise<void> {
    const uid = channel.uid;
    while (channel.signaled && !this.#stopped) {
      channel.signaled = false;
      // A worker removed and re-created for the same UID has a new channel; this one is stale.
      if (this.#podUpdates.get(uid) !== channel) return;
      const started = this.#startPodSync(uid);
      if (!started.ok) continue;
      if (!started.canEverStart) return;
      if (!started.canStart) continue;
      const update = started.update as Update;
      const workType = started.workType as PodWorkerState;
      const cancel = started.cancel as SyncCancellation;
      const log = this.#logger;
      log.debug({ podUID: uid, workType }, 'Processing pod event');

      let isTerminal = false;
      let err: unknown;
      try {
        isTerminal = await this.#sync(uid, workType, update, cancel, channel.lastSyncTime, () => {
          channel.lastSyncTime = this.#clock.now();
        });
      } catch (e) {
        err = e;
      }
      if (err !== undefined && isOnlyBackoff(err)) err = undefined;

      let phaseTransition = false;
      if (err !== undefined && cancel.aborted) {
        // A newer update superseded this sync and is already pending.
        log.info(
          { podUID: uid, workType, err: errorMessage(err) },
          'Sync exited with context cancellation error',
        );
      } else if (err !== undefined) {
        log.error({ podUID: uid, workType, err: errorMessage(err) }, 'Error syncing pod, skipping');
      } else if (workType === 'terminated') {
        this.#completeTerminated(uid);
        this.#observeDuration('terminated', update.startTime);
        return;
      } else if (workType === 'terminating') {
        if (update.runningPod) {
          this.#completeTerminatingRuntimePod(uid);
          this.#observeDuration(update.updateType, update.startTime);
          return;
        }
        this.#completeTerminating(uid);
        phaseTransition = true;
      } else if (isTerminal) {
        this.#completeSync(uid);
        phaseTransition = true;
      }
      this.#completeWork(uid, phaseTransition, err);
      this.#observeDuration(update.updateType, update.startTime);
    }
  }

  /** One sync of the pod's current work type; resolves with `isTerminal` of syncPod. */
  async #sync(
    uid: string,
    workType: PodWorkerState,
    update: Update,
    cancel: SyncCancellation,
    lastSyncTime: number,
    markSynced: () => void,
  ): Promise<boolean> {
    let podStatus: RuntimePodStatus | undefined;
    if (!update.runningPod) {
      const pod = update.pod as Pod;
      // Never act on a runtime status older than the end of the previous sync.
      // Raced rather than handed a signal: an abort listener per sync is costly at scale.
      const cached = await cancel.race(this.#podCache.getNewerThan(uid, lastSyncTime));
      if (cached.error) {
        this.#recorder.event(
          podEventReference(pod),
          'Warning',
          'FailedSync',
          `error determining status: ${errorMessage(cached.error)}`,
        );
        throw cached.error;
      }
      podStatus = cached.status ?? emptyPodStatus(uid, pod);
    }
    const release = this.#limiter ? await this.#limiter.acquire(cancel) : undefined;
    try {
      const ctx: PodSyncContext = {
        get signal() {
          return cancel.signal;
        },
      };
      switch (workType) {
        case 'terminated':
          await this.#podSyncer.syncTerminatedPod(ctx, update.pod as Pod, podStatus as RuntimePodStatus);
          return false;
        case 'terminating': {
          const gracePeriod = update.killPodOptions?.podTerminationGracePeriodSecondsOverride;
          const podStatusFn = this.#acknowledgeTerminating(uid);
          if (update.runningPod) {
            await this.#podSyncer.syncTerminatingRuntimePod(ctx, update.runningPod);
          } else {
            await this.#podSyncer.syncTerminatingPod(
              ctx,
              update.pod as Pod,
              podStatus as RuntimePodStatus,
              gracePeriod,
              podStatusFn,
            );
          }
          return false;
        }
        default: {
          const result = await this.#podSyncer.syncPod(
            ctx,
            update.updateType,
            update.pod as Pod,
            update.mirrorPod,
            podStatus as RuntimePodStatus,
          );
          return result.isTerminal;
        }
      }
    } finally {
      markSynced();
      release?.();
    }
  }

  #completeSync(uid: string): void {
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return;
    if (status.terminatingAt === undefined) status.terminatingAt = this.#clock.now();
    status.startedTerminating = true;
    this.#requeueLastPodUpdate(uid, status);
  }

  #completeTerminating(uid: string): void {
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return;
    status.terminatedAt = this.#clock.now();
    const callbacks = status.notifyPostTerminating;
    status.notifyPostTerminating = [];
    status.statusPostTerminating = [];
    for (const callback of callbacks) this.#notify(callback, this.#logger);
    this.#requeueLastPodUpdate(uid, status);
  }

  #completeTerminatingRuntimePod(uid: string): void {
    this.#cleanupPodUpdates(uid);
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return;
    status.terminatedAt = this.#clock.now();
    status.finished = true;
    status.working = false;
    this.#releaseStaticPodFullname(status.fullname, uid);
    // A runtime-only pod is not desired by anyone: once stopped, nothing is left to track.
    this.#podSyncStatuses.delete(uid);
  }

  #completeTerminated(uid: string): void {
    this.#cleanupPodUpdates(uid);
    const status = this.#podSyncStatuses.get(uid);
    if (!status) return;
    status.finished = true;
    status.working = false;
    this.#releaseStaticPodFullname(status.fullname, uid);
  }

  #completeWork(uid: string, phaseTransition: boolean, err: unknown): void {
    let delay: number;
    if (phaseTransition) delay = 0;
    else if (err === undefined) {
      delay = jitter(this.#resyncIntervalMs, WorkerResyncIntervalJitterFactor, this.#random);
    } else if (err instanceof NetworkNotReadyError) {
      delay = jitter(BackOffOnTransientErrorPeriodMs, WorkerBackOffPeriodJitterFactor, this.#random);
    } else {
      delay = jitter(this.#backOffPeriodMs, WorkerBackOffPeriodJitterFactor, this.#random);
    }
    this.#workQueue.enqueue(uid, delay);

    const status = this.#podSyncStatuses.get(uid);
    if (!status) return;
    if (status.pendingUpdate) this.#signal(this.#podUpdates.get(uid));
    else status.working = false;
  }

  #observeDuration(operation: string, startTime: number | undefined): void {
    if (startTime === undefined || !this.#metrics) return;
    this.#metrics.observePodWorkerDuration(operation, this.#clock.since(startTime) / 1000);
  }
}

/** Creates the pod workers. @public */
export function newPodWorkers(options: PodWorkersOptions): BasicPodWorkers {
  return new BasicPodWorkers(options);
}
