import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PodStateProvider as CorePodStateProvider } from '@kubelet-kit/core';
import {
  type Clock,
  type EventRecorder,
  type Logger,
  type MountedVolume,
  type NodeAllocatable,
  noopEventRecorder,
  noopLogger,
  type ObjectGetter,
  type Pod,
  podEventReference,
  RealClock,
  type Subpather,
  type Timer,
  type TokenGetter,
  type Volume,
  type VolumeProvider,
} from '@kubelet-kit/core';
import { ConfigMapPlugin } from './configmap.js';
import { DownwardAPIPlugin } from './downward-api.js';
import { EmptyDirPlugin } from './empty-dir.js';
import { HostPathPlugin } from './host-path.js';
import { type Mounter, SystemMounter } from './mount.js';
import { ProjectedPlugin } from './projected.js';
import { SecretPlugin } from './secret.js';
import {
  ActualStateOfWorld,
  type ActualVolume,
  DesiredStateOfWorld,
  podVolumeNames,
  type VolumeToMount,
} from './state-of-world.js';
import { SafeSubpather } from './subpath.js';
import {
  type HostPathPolicy,
  podVolumeDir,
  unescapePluginName,
  type VolumeHost,
  type VolumePlugin,
} from './volume-plugin.js';

/**
 * Upstream's `waitForAttachTimeout` of WaitForAttachAndMount: 2 min 3 s.
 *
 * @public
 */
export const WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT_MS = 123_000;
/**
 * Upstream's `podAttachAndMountRetryInterval`.
 *
 * @public
 */
export const WAIT_FOR_ATTACH_AND_MOUNT_POLL_MS = 300;
/**
 * Upstream's populator and reconciler loop periods.
 *
 * @public
 */
export const DESIRED_STATE_POPULATOR_PERIOD_MS = 100;
/**
 * The longest the populator waits between passes while they find nothing to change (upstream
 * KEP-4979, EventedDesiredStateOfWorldPopulator: +100 ms a pass after the third idle one, up to
 * 1 s).
 *
 * @public
 */
export const DESIRED_STATE_POPULATOR_MAX_PERIOD_MS = 1_000;
/** @public */
export const RECONCILER_PERIOD_MS = 100;
/**
 * Upstream's exponential backoff of failed volume operations (goroutinemap).
 *
 * @public
 */
export const OPERATION_INITIAL_BACKOFF_MS = 500;
/** @public */
export const OPERATION_MAX_BACKOFF_MS = 122_000;

/**
 * What the volume manager asks of the pod workers (a part of core's `PodStateProvider`).
 *
 * @public
 */
export type VolumePodStateProvider = Pick<
  CorePodStateProvider,
  'shouldPodContainersBeTerminating' | 'shouldPodRuntimeBeRemoved'
>;

/**
 * Options of {@link BasicVolumeManager}.
 *
 * @public
 */
export interface VolumeManagerOptions {
  /** The agent's root directory: pods' volumes live in `<root>/pods/<uid>/volumes/…`. */
  readonly rootDirectory: string;
  /** The desired pods (the pod manager's), read by the populator every 100 ms. */
  readonly getPods: () => readonly Pod[];
  /**
   * When pods stop needing their volumes. Defaults to: containers terminate once the pod has
   * a deletionTimestamp or a terminal phase; the runtime is gone once the pod left `getPods()`
   * or has a terminal phase. Pass the pod workers for upstream's behaviour.
   */
  readonly podStateProvider?: VolumePodStateProvider;
  /** Whether every pod source has been seen; volumes found on disk at start are kept until then. */
  readonly sourcesReady?: () => boolean;
  /** ConfigMaps and Secrets for volumes. */
  readonly objectGetter?: ObjectGetter;
  /** Service account tokens for projected volumes. */
  readonly tokenGetter?: TokenGetter;
  /** May refuse host paths. */
  readonly hostPathPolicy?: HostPathPolicy;
  readonly nodeName?: string;
  /** Fallback for unset limits in downward API resource fields and tmpfs sizes; defaults to this host. */
  readonly nodeAllocatable?: () => NodeAllocatable;
  /** Defaults to {@link SystemMounter}. */
  readonly mounter?: Mounter;
  /**
   * Whose subPath bind mounts are removed before a volume is torn down (upstream
   * `CleanSubPaths` in UnmountVolume); defaults to a {@link SafeSubpather} on `mounter`. Give
   * the runtime manager the same one.
   */
  readonly subpather?: Subpather;
  /** Extra plugins, tried before the built-in ones. */
  readonly plugins?: readonly ((host: VolumeHost) => VolumePlugin)[];
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly eventRecorder?: EventRecorder;
  /**
   * Populator period; default 100 ms. After three passes that changed nothing, each idle pass
   * waits one period longer, up to `populatorMaxPeriodMs`; a pass that adds, updates or removes
   * a pod, or {@link BasicVolumeManager.podsChanged}, brings it back to this.
   */
  readonly populatorPeriodMs?: number;
  /** The idle populator's longest wait; default 1 s. Equal to `populatorPeriodMs` for a fixed period. */
  readonly populatorMaxPeriodMs?: number;
  /** Reconciler period; default 100 ms. */
  readonly reconcilerPeriodMs?: number;
  /** WaitForAttachAndMount bound; default 2 min 3 s. */
  readonly waitTimeoutMs?: number;
  /**
   * Re-project the API data volumes (configMap, secret, downwardAPI, projected: refreshed
   * tokens) of every desired pod this often, ms. Off by default: upstream re-projects on each
   * pod sync (WaitForAttachAndMount → ReprocessPod), which the agent's pod workers run every
   * resync period; set it when no one calls `waitForAttachAndMount` periodically.
   */
  readonly remountPeriodMs?: number;
}

/**
 * Options of the waits.
 *
 * @public
 */
export interface WaitOptions {
  readonly signal?: AbortSignal;
}

/**
 * Why a pod's volumes did not become ready (upstream's WaitForAttachAndMount error).
 *
 * @public
 */
export class VolumeMountTimeoutError extends Error {
  /** Upstream's event reason `FailedMount`. */
  readonly code = 'FailedMount';
  constructor(
    readonly unmountedVolumes: readonly string[],
    readonly unattachedVolumes: readonly string[],
    readonly failedToProcessVolumes: readonly string[],
    /** The last set-up error of each volume that has one. */
    readonly volumeErrors: ReadonlyMap<string, string>,
  ) {
    const errs = [...volumeErrors].map(([v, e]) => `${v}: ${e}`);
    super(
      `unmounted volumes=[${unmountedVolumes.join(' ')}], unattached volumes=[${unattachedVolumes.join(' ')}], failed to process volumes=[${failedToProcessVolumes.join(' ')}]: timed out waiting for the condition${
        errs.length > 0 ? `; last errors: ${errs.join('; ')}` : ''
      }`,
    );
    this.name = 'VolumeMountTimeoutError';
  }
}

/**
 * Volumes a terminated pod still has mounted after the wait (upstream WaitForUnmount).
 *
 * @public
 */
export class VolumeUnmountTimeoutError extends Error {
  readonly code = 'FailedUnMount';
  constructor(readonly mountedVolumes: readonly string[]) {
    super(`mounted volumes=[${mountedVolumes.join(' ')}]: timed out waiting for the condition`);
    this.name = 'VolumeUnmountTimeoutError';
  }
}

/**
 * Mounts the volumes pods need before their containers start, keeps API data volumes current
 * and cleans up after pods (upstream `pkg/kubelet/volumemanager.VolumeManager`).
 *
 * @public
 */
export interface VolumeManager extends VolumeProvider {
  /** Starts the populator and reconciler loops; rebuilds the actual state from disk first. */
  start(): void;
  /** Stops the loops and waits for running operations. */
  stop(): Promise<void>;
  /**
   * Resolves once every volume of the pod is mounted; asks for API data volumes to be
   * re-projected first (ReprocessPod), so each pod sync refreshes them. Rejects with
   * `VolumeMountTimeoutError` after 2 min 3 s, or with the signal's reason.
   */
  waitForAttachAndMount(pod: Pod, options?: WaitOptions): Promise<void>;
  /** Resolves once no volume of the pod is mounted (call after its containers stopped). */
  waitForUnmount(pod: Pod, options?: WaitOptions): Promise<void>;
  /** Marks the pod's API data volumes for re-projection (upstream ReprocessPod). */
  reprocessPod(uid: string): void;
  /** Mounted volumes, also while a remount is pending (upstream GetPossiblyMountedVolumesForPod). */
  getPossiblyMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume>;
  /** True once the state found on disk at start has been merged (upstream ReconcilerStatesHasBeenSynced). */
  reconcilerStatesHasBeenSynced(): boolean;
  /** The last set-up or tear-down error of each volume of the pod. */
  getVolumeErrors(podUid: string): ReadonlyMap<string, string>;
}

function defaultAllocatable(): NodeAllocatable {
  // 110 pods is upstream's --max-pods default; no ephemeral storage, as before: an unset
  // ephemeral-storage limit reads 0 in the downward API.
  return { cpu: os.cpus().length, memory: os.totalmem(), pods: 110 };
}

function uidOf(pod: Pod): string {
  return pod.metadata?.uid ?? '';
}

interface OperationState {
  /** When the next try may start (epoch ms). */
  notBefore: number;
  backoffMs: number;
}

/**
 * The volume manager over the built-in plugins and the host's mount table.
 *
 * @public
 */
export class BasicVolumeManager implements VolumeManager {
  readonly #root: string;
  readonly #getPods: () => readonly Pod[];
  readonly #podState: VolumePodStateProvider;
  readonly #sourcesReady: () => boolean;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #plugins: VolumePlugin[];
  readonly #populatorPeriodMs: number;
  readonly #populatorMaxPeriodMs: number;
  /** The populator's next wait, and the idle passes in a row behind it. */
  #populatorDelayMs: number;
  #idlePopulatorPasses = 0;
  #populatorTimer: Timer | undefined;
  readonly #reconcilerPeriodMs: number;
  readonly #waitTimeoutMs: number;
  readonly #remountPeriodMs: number | undefined;
  readonly #dsw = new DesiredStateOfWorld();
  readonly #asw = new ActualStateOfWorld();
  /** Running operations by `uid/volume`. */
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #backoff = new Map<string, OperationState>();
  readonly #errors = new Map<string, Map<string, string>>();
  /**
   * Waits by pod UID, woken when an operation on that pod's volumes finishes, so a wait need not
   * sit out its poll interval. Only that pod's: with every waiting pod woken by every finished
   * operation, N pods starting together cost N² wake-ups (10,000 emptyDir pods waited on at once
   * did not all mount within the wait's 2 min 3 s).
   */
  readonly #changeWaiters = new Map<string, Set<() => void>>();
  #timers: Timer[] = [];
  #abort = new AbortController();
  #reconstructed = false;
  /** Set after a populator pass that began with every source seen (upstream HasAddedPods). */
  #populatorHasAddedPods = false;
  #reconstructing: Promise<void> | undefined;
  readonly #subpather: Subpather;

  constructor(options: VolumeManagerOptions) {
    this.#root = options.rootDirectory;
    this.#getPods = options.getPods;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'volume-manager' });
    this.#recorder = options.eventRecorder ?? noopEventRecorder;
    this.#sourcesReady = options.sourcesReady ?? (() => true);
    this.#populatorPeriodMs = options.populatorPeriodMs ?? DESIRED_STATE_POPULATOR_PERIOD_MS;
    this.#populatorMaxPeriodMs = Math.max(
      this.#populatorPeriodMs,
      options.populatorMaxPeriodMs ?? DESIRED_STATE_POPULATOR_MAX_PERIOD_MS,
    );
    this.#populatorDelayMs = this.#populatorPeriodMs;
    this.#reconcilerPeriodMs = options.reconcilerPeriodMs ?? RECONCILER_PERIOD_MS;
    this.#waitTimeoutMs = options.waitTimeoutMs ?? WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT_MS;
    this.#remountPeriodMs = options.remountPeriodMs;
    this.#podState = options.podStateProvider ?? this.#defaultPodState();
    const mounter = options.mounter ?? new SystemMounter();
    this.#subpather = options.subpather ?? new SafeSubpather({ mounter, logger: this.#logger });
    const host: VolumeHost = {
      logger: this.#logger,
      clock: this.#clock,
      mounter,
      nodeAllocatable: options.nodeAllocatable ?? defaultAllocatable,
      ...(options.objectGetter ? { objectGetter: options.objectGetter } : {}),
      ...(options.tokenGetter ? { tokenGetter: options.tokenGetter } : {}),
      ...(options.hostPathPolicy ? { hostPathPolicy: options.hostPathPolicy } : {}),
      ...(options.nodeName ? { nodeName: options.nodeName } : {}),
    };
    this.#plugins = [
      ...(options.plugins ?? []).map((make) => make(host)),
      new EmptyDirPlugin({ host }),
      new HostPathPlugin({ host }),
      new ConfigMapPlugin({ host }),
      new SecretPlugin({ host }),
      new DownwardAPIPlugin({ host }),
      new ProjectedPlugin({ host }),
    ];
  }

  start(): void {
    if (this.#timers.length > 0) return;
    this.#abort = new AbortController();
    this.#populate();
    this.#populatorDelayMs = this.#populatorPeriodMs;
    this.#idlePopulatorPasses = 0;
    this.#schedulePopulator();
    this.#timers.push(this.#clock.setInterval(() => this.#kick(), this.#reconcilerPeriodMs));
    const remountMs = this.#remountPeriodMs;
    if (remountMs !== undefined && remountMs > 0) {
      this.#timers.push(
        this.#clock.setInterval(() => {
          for (const uid of this.#dsw.podUids()) this.reprocessPod(uid);
        }, remountMs),
      );
    }
    this.#kick();
  }

  async stop(): Promise<void> {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#populatorTimer?.cancel();
    this.#populatorTimer = undefined;
    this.#abort.abort(new Error('volume manager stopped'));
    await Promise.allSettled([...this.#inFlight.values(), this.#reconstructing]);
  }

  reconcilerStatesHasBeenSynced(): boolean {
    return this.#reconstructed;
  }

  reprocessPod(uid: string): void {
    this.#asw.markRemountRequired(uid);
  }

  /**
   * Says that desired pods were added, updated or removed (upstream KEP-4979's pod manager and
   * pod worker events): the populator makes a pass now and goes back to its shortest period.
   */
  podsChanged(): void {
    if (!this.#populatorTimer) return;
    this.#populatorTimer.cancel();
    this.#populatorDelayMs = this.#populatorPeriodMs;
    this.#idlePopulatorPasses = 0;
    this.#populatorPass();
    this.#schedulePopulator();
  }

  #schedulePopulator(): void {
    this.#populatorTimer = this.#clock.setTimeout(() => {
      this.#populatorPass();
      this.#schedulePopulator();
    }, this.#populatorDelayMs);
  }

  /** One pass of the populator loop, lengthening its wait while passes change nothing. */
  #populatorPass(): void {
    if (this.#populate()) {
      this.#idlePopulatorPasses = 0;
      this.#populatorDelayMs = this.#populatorPeriodMs;
    } else if (++this.#idlePopulatorPasses > 3) {
      this.#populatorDelayMs = Math.min(
        this.#populatorDelayMs + this.#populatorPeriodMs,
        this.#populatorMaxPeriodMs,
      );
    }
  }

  async waitForAttachAndMount(pod: Pod, options: WaitOptions = {}): Promise<void> {
    // Only volumes some container mounts are expected (upstream getExpectedVolumes).
    const expected = [...podVolumeNames(pod)].sort();
    if (expected.length === 0) return;
    const uid = uidOf(pod);
    if (!this.#podState.shouldPodContainersBeTerminating(uid)) this.#addPod(pod);
    this.reprocessPod(uid);
    // Only this pod's volumes: a pass over every pod for each pod that starts would cost the
    // square of the pod count (the reconciler's own period covers the rest).
    this.#kick(uid);
    const unmounted = () => expected.filter((name) => !this.#asw.get(uid, name));
    const deadline = this.#clock.now() + this.#waitTimeoutMs;
    for (;;) {
      if (unmounted().length === 0) return;
      options.signal?.throwIfAborted();
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) break;
      await this.#waitForChange(uid, Math.min(WAIT_FOR_ATTACH_AND_MOUNT_POLL_MS, remaining), options.signal);
    }
    const left = unmounted();
    const failed = this.#dsw.failedVolumes(uid);
    const errors = new Map<string, string>();
    const known = this.#errors.get(uid);
    for (const name of left) {
      const e = known?.get(name) ?? failed.get(name);
      if (e !== undefined) errors.set(name, e);
    }
    // As upstream, "unmounted" lists every expected volume not mounted, including those that
    // failed to process; "unattached" is the same list here (see the README).
    throw new VolumeMountTimeoutError(
      left,
      left,
      left.filter((n) => !this.#dsw.getVolume(uid, n)),
      errors,
    );
  }

  async waitForUnmount(pod: Pod, options: WaitOptions = {}): Promise<void> {
    const uid = uidOf(pod);
    this.#populate();
    this.#kick();
    const deadline = this.#clock.now() + this.#waitTimeoutMs;
    for (;;) {
      const mounted = this.#asw.volumesOfPod(uid).map((v) => v.volumeName);
      if (mounted.length === 0) return;
      options.signal?.throwIfAborted();
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) throw new VolumeUnmountTimeoutError(mounted.sort());
      await this.#waitForChange(uid, Math.min(WAIT_FOR_ATTACH_AND_MOUNT_POLL_MS, remaining), options.signal);
    }
  }

  getMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume> {
    const out = new Map<string, MountedVolume>();
    // A pending re-projection leaves the old content in place, which is still usable.
    for (const v of this.#asw.volumesOfPod(podUid)) {
      out.set(v.volumeName, { hostPath: v.hostPath, readOnly: v.readOnly });
    }
    return out;
  }

  getPossiblyMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume> {
    return this.getMountedVolumesForPod(podUid);
  }

  getVolumeErrors(podUid: string): ReadonlyMap<string, string> {
    return new Map(this.#errors.get(podUid) ?? []);
  }

  /**
   * Resolves after `ms`, or as soon as an operation on a volume of pod `uid` finishes; rejects
   * when aborted.
   */
  #waitForChange(uid: string, ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiters = this.#changeWaiters.get(uid) ?? new Set();
      this.#changeWaiters.set(uid, waiters);
      // A pod's set goes when its last wait does, so a new wait finds none and makes its own.
      const forget = () => {
        timer.cancel();
        waiters.delete(done);
        if (waiters.size === 0) this.#changeWaiters.delete(uid);
      };
      const done = () => {
        forget();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        forget();
        reject(signal?.reason);
      };
      const timer = this.#clock.setTimeout(done, ms);
      waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #defaultPodState(): VolumePodStateProvider {
    const find = (uid: string) => this.#getPods().find((p) => uidOf(p) === uid);
    const terminal = (p: Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
    return {
      shouldPodContainersBeTerminating: (uid) => {
        const p = find(uid);
        return !p || terminal(p) || p.metadata?.deletionTimestamp !== undefined;
      },
      shouldPodRuntimeBeRemoved: (uid) => {
        const p = find(uid);
        return !p || terminal(p);
      },
    };
  }

  #findPlugin(volume: Volume): VolumePlugin | undefined {
    return this.#plugins.find((p) => p.canSupport(volume));
  }

  #pluginByName(name: string): VolumePlugin | undefined {
    return this.#plugins.find((p) => p.name === name);
  }

  #addPod(pod: Pod): void {
    const uid = uidOf(pod);
    this.#dsw.addPod(
      pod,
      (v) => this.#findPlugin(v),
      (plugin, v) => podVolumeDir(this.#root, uid, plugin.name, v.name),
    );
  }

  /**
   * The desired state populator (upstream `desiredStateOfWorldPopulator.populatorLoop`);
   * returns whether it changed the desired state (a pod added, updated or removed) or found
   * every source seen for the first time.
   */
  #populate(): boolean {
    const sourcesReady = this.#sourcesReady();
    let pods: readonly Pod[];
    try {
      pods = this.#getPods();
    } catch (err) {
      this.#logger.error({ err: String(err) }, 'cannot list desired pods');
      return false;
    }
    let changed = sourcesReady && !this.#populatorHasAddedPods;
    const added = new Set<string>();
    for (const pod of pods) {
      // Most pods have no volumes; they never enter the desired state, so skip them cheaply.
      if (!pod.spec?.volumes?.length) continue;
      const uid = uidOf(pod);
      if (this.#podState.shouldPodContainersBeTerminating(uid)) continue;
      added.add(uid);
      // Upstream podPreviouslyProcessed: the same pod object gives the same volumes, so a pass
      // only rebuilds the volumes of pods that are new or changed.
      if (this.#dsw.getPod(uid) === pod) continue;
      changed = true;
      this.#addPod(pod);
    }
    for (const uid of this.#dsw.podUids()) {
      // A pod added above may start containers, so it stays desired whatever the runtime answer:
      // a provider may say "runtime gone" but "not terminating" for a pod it does not know yet
      // (upstream's pod workers after their first sync), and removing it here would tear down
      // the volumes of a desired pod on every pass and never mount them again.
      if (added.has(uid)) continue;
      // Volumes stay until no container of the pod can use them, even after it left the pod list.
      if (!this.#podState.shouldPodRuntimeBeRemoved(uid)) continue;
      this.#dsw.deletePod(uid);
      changed = true;
    }
    if (sourcesReady) this.#populatorHasAddedPods = true;
    return changed;
  }

  /**
   * Runs one reconcile pass without awaiting it, over every pod or one: operations run in the
   * background.
   */
  #kick(uid?: string): void {
    if (this.#abort.signal.aborted && this.#timers.length === 0) return;
    if (!this.#reconstructed) {
      this.#reconstructing ??= this.#reconstruct().finally(() => {
        this.#reconstructed = true;
        this.#reconstructing = undefined;
        this.#kick();
      });
      return;
    }
    if (uid === undefined) this.#reconcile();
    else {
      this.#asw.forEachOfPod(uid, this.#unmountIfUndesired);
      this.#dsw.forEachVolumeToMountOfPod(uid, this.#mountIfNeeded);
    }
  }

  /** The reconciler pass (upstream `reconciler.reconcile`). */
  #reconcile(): void {
    this.#asw.forEach(this.#unmountIfUndesired);
    this.#dsw.forEachVolumeToMount(this.#mountIfNeeded);
  }

  readonly #unmountIfUndesired = (av: ActualVolume): void => {
    if (this.#dsw.getVolume(av.podUid, av.volumeName)) return;
    // Volumes found on disk wait until every pod of every source is in the desired state, and
    // until nothing could still run in the pod: a running container keeps its mounts.
    if (
      av.reconstructed &&
      !(this.#populatorHasAddedPods && this.#podState.shouldPodRuntimeBeRemoved(av.podUid))
    )
      return;
    this.#startOperation(av.podUid, av.volumeName, () => this.#unmount(av));
  };

  readonly #mountIfNeeded = (vtm: VolumeToMount): void => {
    const av = this.#asw.get(vtm.podUid, vtm.volumeName);
    if (av && !(vtm.plugin.requiresRemount && this.#asw.remountRequired(av))) return;
    this.#startOperation(vtm.podUid, vtm.volumeName, () => this.#mount(vtm));
  };

  #startOperation(uid: string, name: string, op: () => Promise<void>): void {
    const key = `${uid}/${name}`;
    if (this.#inFlight.has(key)) return;
    const state = this.#backoff.get(key);
    if (state && this.#clock.now() < state.notBefore) return;
    const run = op()
      .then(
        () => {
          this.#backoff.delete(key);
          this.#errors.get(uid)?.delete(name);
        },
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          const backoffMs = state
            ? Math.min(state.backoffMs * 2, OPERATION_MAX_BACKOFF_MS)
            : OPERATION_INITIAL_BACKOFF_MS;
          this.#backoff.set(key, { notBefore: this.#clock.now() + backoffMs, backoffMs });
          let errs = this.#errors.get(uid);
          if (!errs) {
            errs = new Map();
            this.#errors.set(uid, errs);
          }
          const previous = errs.get(name);
          errs.set(name, message);
          this.#logger.warn(
            { pod: uid, volume: name, err: message, retryInMs: backoffMs },
            'volume operation failed',
          );
          if (previous !== message) this.#recordFailure(uid, name, message);
        },
      )
      .finally(() => {
        this.#inFlight.delete(key);
        const waiters = this.#changeWaiters.get(uid);
        if (waiters) for (const wake of [...waiters]) wake();
      });
    this.#inFlight.set(key, run);
  }

  #recordFailure(uid: string, name: string, message: string): void {
    const pod = this.#dsw.getPod(uid);
    if (!pod) return;
    this.#recorder.event(
      podEventReference(pod),
      'Warning',
      'FailedMount',
      `MountVolume.SetUp failed for volume ${JSON.stringify(name)} : ${message}`,
    );
  }

  async #mount(vtm: VolumeToMount): Promise<void> {
    // Project for the newest pod object and generation as of now.
    const generation = this.#asw.generation(vtm.podUid);
    const current = this.#dsw.getVolume(vtm.podUid, vtm.volumeName) ?? vtm;
    const pod = this.#dsw.getPod(vtm.podUid);
    if (!pod) return;
    const spec = { pod, volume: current.volume, podVolumeDir: current.podVolumeDir };
    await current.plugin.setUp(spec, this.#abort.signal);
    const previous = this.#asw.get(vtm.podUid, vtm.volumeName);
    this.#asw.markMounted({
      podUid: vtm.podUid,
      volumeName: vtm.volumeName,
      pluginName: current.plugin.name,
      podVolumeDir: current.podVolumeDir,
      hostPath: current.plugin.getPath(spec),
      readOnly: current.plugin.readOnly,
      reconstructed: false,
      mountedGeneration: generation,
    });
    if (!previous)
      this.#logger.info({ pod: vtm.podUid, volume: vtm.volumeName }, 'MountVolume.SetUp succeeded');
  }

  async #unmount(av: ActualVolume): Promise<void> {
    // The bind mounts of subPaths first: they hold the volume's files (upstream CleanSubPaths).
    await this.#subpather.cleanSubPaths(path.join(this.#root, 'pods', av.podUid), av.volumeName);
    const plugin = this.#pluginByName(av.pluginName);
    if (plugin) await plugin.tearDown(av.podVolumeDir, this.#abort.signal);
    else await fs.rm(av.podVolumeDir, { recursive: true, force: true });
    // Before the volume leaves the actual state, so a finished WaitForUnmount means clean
    // directories. Of concurrent tear-downs, the last rmdir of `volumes` comes after every
    // plugin directory's, so it succeeds.
    if (!this.#dsw.hasPod(av.podUid))
      await this.#removeEmptyVolumeDirs(av.podUid, path.dirname(av.podVolumeDir));
    this.#asw.markUnmounted(av.podUid, av.volumeName);
    this.#logger.info({ pod: av.podUid, volume: av.volumeName }, 'UnmountVolume.TearDown succeeded');
    if (this.#asw.volumesOfPod(av.podUid).length === 0 && !this.#dsw.hasPod(av.podUid)) {
      this.#asw.forgetPod(av.podUid);
      this.#errors.delete(av.podUid);
    }
  }

  /** Removes the plugin directory and `<root>/pods/<uid>/volumes` when they are empty. */
  async #removeEmptyVolumeDirs(uid: string, pluginDir: string): Promise<void> {
    const volumesDir = path.join(this.#root, 'pods', uid, 'volumes');
    if (path.dirname(pluginDir) !== volumesDir) return;
    await fs.rmdir(pluginDir).catch(() => {});
    await fs.rmdir(volumesDir).catch(() => {});
  }

  /**
   * Rebuilds the actual state from `<root>/pods/<uid>/volumes/<plugin>/<volume>` after a
   * restart (upstream `reconstructVolumes`). A rebuilt volume counts as mounted; API data
   * volumes are re-projected on their next reprocess and set-up never mounts a tmpfs twice.
   */
  async #reconstruct(): Promise<void> {
    const podsDir = path.join(this.#root, 'pods');
    let uids: string[];
    try {
      uids = await fs.readdir(podsDir);
    } catch {
      return;
    }
    for (const uid of uids) {
      const volumesDir = path.join(podsDir, uid, 'volumes');
      let pluginDirs: string[];
      try {
        pluginDirs = await fs.readdir(volumesDir);
      } catch {
        continue;
      }
      for (const escaped of pluginDirs) {
        const plugin = this.#pluginByName(unescapePluginName(escaped));
        if (!plugin?.usesPodVolumeDir) {
          this.#logger.warn({ pod: uid, plugin: escaped }, 'cannot reconstruct volumes of an unknown plugin');
          continue;
        }
        let names: string[];
        try {
          names = await fs.readdir(path.join(volumesDir, escaped));
        } catch {
          continue;
        }
        for (const name of names) {
          if (this.#asw.get(uid, name)) continue;
          const dir = path.join(volumesDir, escaped, name);
          this.#asw.markMounted({
            podUid: uid,
            volumeName: name,
            pluginName: plugin.name,
            podVolumeDir: dir,
            hostPath: dir,
            readOnly: plugin.readOnly,
            reconstructed: true,
            // Below any generation: re-projected as soon as the pod is desired again.
            mountedGeneration: -1,
          });
          this.#logger.info(
            { pod: uid, volume: name, plugin: plugin.name },
            'reconstructed volume from disk',
          );
        }
      }
    }
  }
}
