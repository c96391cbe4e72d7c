import { setMaxListeners } from 'node:events';
import {
  type Clock,
  type Logger,
  noopLogger,
  RealClock,
  type Runtime,
  type RuntimeContainer,
  type RuntimeContainerState,
  type RuntimePod,
  type RuntimePodStatus,
  runtimePodFromStatus,
  type Timer,
} from '@kubelet-kit/core';
import { RuntimePodStatusCache } from './cache.js';
import { EventChannel } from './event-channel.js';
import {
  type PLEGHealth,
  PLEGNotHealthyError,
  type PodLifecycleEvent,
  type PodLifecycleEventGenerator,
  type PodLifecycleEventListener,
} from './pleg.js';

/** The generic PLEG's relist period, ms (upstream `genericPlegRelistPeriod`). */
export const DefaultRelistPeriodMs = 1_000;
/** No successful relist for this long makes the PLEG unhealthy, ms (upstream `genericPlegRelistThreshold`). */
export const DefaultRelistThresholdMs = 3 * 60_000;
/**
 * The IPs to cache for `status`: a torn-down pod keeps its last IPs while no sandbox is ready, so
 * the status manager can still report them. Shared by the generic and the evented PLEG.
 *
 * @internal
 */
export function podIPsThroughTeardown(
  cache: RuntimePodStatusCache,
  uid: string,
  status: RuntimePodStatus,
): readonly string[] {
  if (status.ips.length > 0) return status.ips;
  const old = cache.get(uid);
  if (old.error || !old.status || old.status.ips.length === 0) return status.ips;
  if (status.sandboxStatuses.some((s) => s.state === 'ready')) return status.ips;
  return old.status.ips;
}

/** Changed pods a relist reads at once, by default. */
export const DefaultRelistConcurrency = 16;
/** Pods {@link GenericPLEG.inspectPods} reads at once. */
const inspectionConcurrency = 8;
/** Events the channel holds before new ones are dropped (upstream `plegChannelCapacity`). */
export const DefaultPLEGChannelCapacity = 1_000;

/** What one relist did, for metrics (upstream's kubelet_pleg_* and kubelet_running_* series). @public */
export interface RelistResult {
  /** When the relist started (epoch ms); also its cache timestamp. */
  readonly timestamp: number;
  /** How long it took, ms (kubelet_pleg_relist_duration_seconds). */
  readonly durationMs: number;
  /** Time since the previous successful relist started, ms; undefined for the first (kubelet_pleg_relist_interval_seconds). */
  readonly intervalMs: number | undefined;
  /** The runtime's error when listing pods failed; the other counts are then zero. */
  readonly error?: Error;
  /** Pods with a running sandbox (kubelet_running_pods). */
  readonly runningPods: number;
  /** Containers by state (kubelet_running_containers{container_state}). */
  readonly containersByState: Readonly<Partial<Record<RuntimeContainerState, number>>>;
  /** Events sent into the channel, and dropped because it was full, during this relist. */
  readonly eventsSent: number;
  readonly eventsDiscarded: number;
}

/** The pod a {@link GenericPLEG.inspectPods} call reads. @public */
export interface PodInspection {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  /**
   * The pod's status as its changer already knows it (a runtime sync's `podStatus`), taken
   * instead of reading the pod from the runtime. Anything it misses shows in a later relist.
   */
  readonly status?: RuntimePodStatus;
}

/** Running totals of a {@link GenericPLEG}. @public */
export interface PLEGStats {
  readonly relists: number;
  readonly relistErrors: number;
  /** Pods read by {@link GenericPLEG.inspectPods}. */
  readonly inspections: number;
  /** Events dropped because the channel was full (kubelet_pleg_discard_events). */
  readonly discardedEvents: number;
  /** Start of the last successful relist (epoch ms), undefined before the first. */
  readonly lastRelistTime: number | undefined;
  readonly lastRelistDurationMs: number | undefined;
  readonly runningPods: number;
  readonly containersByState: Readonly<Partial<Record<RuntimeContainerState, number>>>;
}

/** Options of {@link GenericPLEG}. @public */
export interface GenericPLEGOptions {
  /** Only `getPods(true)` and `getPodStatus` are used. */
  readonly runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>;
  /** Defaults to a new {@link RuntimePodStatusCache}. */
  readonly cache?: RuntimePodStatusCache;
  /** Defaults to the wall clock. */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Default 1000 (upstream `genericPlegRelistPeriod`). */
  readonly relistPeriodMs?: number;
  /** Default 180000, 3 minutes (upstream `genericPlegRelistThreshold`). */
  readonly relistThresholdMs?: number;
  /**
   * Capacity of {@link GenericPLEG.events}; default 1000 (upstream `plegChannelCapacity`). Ignored
   * when `eventChannel` is given. 0 for a caller that takes events through `watch` only: nothing
   * is buffered, and an event a watcher received is not counted as dropped.
   */
  readonly channelCapacity?: number;
  /** A channel of the caller's (upstream passes the channel in). */
  readonly eventChannel?: EventChannel<PodLifecycleEvent>;
  /** Called after every relist, successful or not, for metrics. */
  readonly onRelist?: (result: RelistResult) => void;
  /**
   * How many changed pods a relist reads at once; default 16. Upstream reads them one after
   * another, but its runtime answers each read's CRI calls in parallel; 1 reads them in turn.
   */
  readonly relistConcurrency?: number;
}

/** A container's state as the PLEG compares it: `created` folds into `unknown`, plus "gone". */
type PlegContainerState = 'running' | 'exited' | 'unknown' | 'non-existent';

function convertState(state: RuntimeContainerState): PlegContainerState {
  // The kubelet does not act on "created" yet, so it reads as unknown.
  return state === 'created' ? 'unknown' : state;
}

interface PodRecord {
  old: RuntimePod | undefined;
  current: RuntimePod | undefined;
}

/** Container and sandbox states of a pod by ID (sandboxes are tracked like containers, as upstream). */
function statesOf(pod: RuntimePod | undefined): Map<string, PlegContainerState> {
  const states = new Map<string, PlegContainerState>();
  if (!pod) return states;
  for (const c of pod.containers) if (!states.has(c.id.id)) states.set(c.id.id, convertState(c.state));
  for (const c of pod.sandboxes) if (!states.has(c.id.id)) states.set(c.id.id, convertState(c.state));
  return states;
}

/**
 * Whether both listings show the same containers and sandboxes in the same order and states: the
 * common case of a steady relist, decided without building anything.
 */
function sameListing(a: RuntimePod, b: RuntimePod): boolean {
  // The runtime may hand back the very object of an unchanged pod.
  if (a === b) return true;
  return sameContainers(a.containers, b.containers) && sameContainers(a.sandboxes, b.sandboxes);
}

function sameContainers(a: readonly RuntimeContainer[], b: readonly RuntimeContainer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as RuntimeContainer;
    const y = b[i] as RuntimeContainer;
    if (x.id.id !== y.id.id || convertState(x.state) !== convertState(y.state)) return false;
  }
  return true;
}

const noEvents: readonly PodLifecycleEvent[] = [];

/** The events of a pod's transition from `oldPod` to `pod`, container by container. */
function podEvents(
  pid: string,
  oldPod: RuntimePod | undefined,
  pod: RuntimePod | undefined,
): readonly PodLifecycleEvent[] {
  if (oldPod && pod && sameListing(oldPod, pod)) return noEvents;
  const oldStates = statesOf(oldPod);
  const newStates = statesOf(pod);
  const events: PodLifecycleEvent[] = [];
  // Old IDs first, then new ones, each once.
  for (const [cid, oldState] of oldStates) {
    events.push(...generateEvents(pid, cid, oldState, newStates.get(cid) ?? 'non-existent'));
  }
  for (const [cid, newState] of newStates) {
    if (!oldStates.has(cid)) events.push(...generateEvents(pid, cid, 'non-existent', newState));
  }
  return events;
}

/** The events of one container's transition (upstream `generateEvents`). */
function generateEvents(
  podId: string,
  containerId: string,
  oldState: PlegContainerState,
  newState: PlegContainerState,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return [{ id: podId, type: 'ContainerStarted', data: containerId }];
    case 'exited':
      return [{ id: podId, type: 'ContainerDied', data: containerId }];
    case 'unknown':
      return [{ id: podId, type: 'ContainerChanged', data: containerId }];
    case 'non-existent':
      // A container that vanished without being seen exited also died.
      if (oldState === 'exited') return [{ id: podId, type: 'ContainerRemoved', data: containerId }];
      return [
        { id: podId, type: 'ContainerDied', data: containerId },
        { id: podId, type: 'ContainerRemoved', data: containerId },
      ];
  }
}

function countRunning(pods: readonly RuntimePod[]): Pick<RelistResult, 'runningPods' | 'containersByState'> {
  let runningPods = 0;
  const containersByState: Partial<Record<RuntimeContainerState, number>> = {};
  for (const pod of pods) {
    for (const c of pod.containers) containersByState[c.state] = (containersByState[c.state] ?? 0) + 1;
    if (pod.sandboxes.some((s) => s.state === 'running')) runningPods++;
  }
  return { runningPods, containersByState };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The generic relisting PLEG (upstream `GenericPLEG`): every period it lists the runtime's pods,
 * compares each container's state with the previous list, reads the status of every pod that
 * changed into the {@link RuntimePodStatusCache}, and sends ContainerStarted / ContainerDied /
 * ContainerRemoved events into a bounded channel.
 *
 * Like upstream it assumes a container is not created, exited and removed within one period
 * (its events would be missed); the kubelet's periodic sync is the safety net.
 * @public
 */
export class GenericPLEG implements PodLifecycleEventGenerator {
  /** The event channel: one consumer receives each event; full means dropped and counted. */
  readonly events: EventChannel<PodLifecycleEvent>;
  readonly cache: RuntimePodStatusCache;
  readonly #runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #periodMs: number;
  #thresholdMs: number;
  readonly #onRelist: ((result: RelistResult) => void) | undefined;
  readonly #relistConcurrency: number;
  readonly #records = new Map<string, PodRecord>();
  readonly #listeners = new Set<PodLifecycleEventListener>();
  #podsToReinspect = new Map<string, RuntimePod | undefined>();
  #relistTime: number | undefined;
  /** Serializes relists, as upstream's relistLock. */
  #relistChain: Promise<void> = Promise.resolve();
  #running: { readonly abort: AbortController; timer: Timer | undefined } | undefined;
  #stats = {
    relists: 0,
    relistErrors: 0,
    inspections: 0,
    discardedEvents: 0,
    lastRelistDurationMs: undefined as number | undefined,
    runningPods: 0,
    containersByState: {} as Readonly<Partial<Record<RuntimeContainerState, number>>>,
  };

  constructor(options: GenericPLEGOptions) {
    this.#runtime = options.runtime;
    this.cache = options.cache ?? new RuntimePodStatusCache();
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'pleg' });
    this.#periodMs = options.relistPeriodMs ?? DefaultRelistPeriodMs;
    this.#thresholdMs = options.relistThresholdMs ?? DefaultRelistThresholdMs;
    this.events =
      options.eventChannel ?? new EventChannel(options.channelCapacity ?? DefaultPLEGChannelCapacity);
    this.#onRelist = options.onRelist;
    this.#relistConcurrency = Math.max(1, Math.floor(options.relistConcurrency ?? DefaultRelistConcurrency));
  }

  start(): void {
    if (this.#running) return;
    const running = { abort: new AbortController(), timer: undefined as Timer | undefined };
    // Every CRI call of a relist or inspection listens on it, several at once.
    setMaxListeners(0, running.abort.signal);
    this.#running = running;
    // As wait.Until: relist, then wait a full period after it finished.
    const loop = () => {
      if (this.#running !== running) return;
      this.#relistSerialized(running.abort.signal)
        .catch((err: unknown) => this.#logger.error({ err: asError(err) }, 'GenericPLEG: relist failed'))
        .then(() => {
          if (this.#running === running) running.timer = this.#clock.setTimeout(loop, this.#periodMs);
        });
    };
    loop();
  }

  stop(): void {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    running.timer?.cancel();
    running.abort.abort(new Error('pleg stopped'));
  }

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  watch(listener: PodLifecycleEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  healthy(): PLEGHealth {
    if (this.#relistTime === undefined) {
      return { healthy: false, error: new PLEGNotHealthyError('pleg has yet to be successful') };
    }
    const elapsed = this.#clock.since(this.#relistTime);
    if (elapsed > this.#thresholdMs) {
      return {
        healthy: false,
        error: new PLEGNotHealthyError(
          `pleg was last seen active ${elapsed}ms ago; threshold is ${this.#thresholdMs}ms`,
        ),
      };
    }
    return { healthy: true };
  }

  relist(): Promise<void> {
    return this.#relistSerialized(this.#running?.abort.signal);
  }

  /**
   * Changes the relist period and the health threshold (upstream `Update(relistDuration)`): the
   * evented PLEG lengthens both while the runtime's events flow and restores them when it falls
   * back. A running loop takes the new period after its current wait.
   */
  update(durations: { readonly relistPeriodMs: number; readonly relistThresholdMs: number }): void {
    this.#periodMs = durations.relistPeriodMs;
    this.#thresholdMs = durations.relistThresholdMs;
  }

  /** The relist period and health threshold in use, ms. */
  get relistDurations(): { readonly relistPeriodMs: number; readonly relistThresholdMs: number } {
    return { relistPeriodMs: this.#periodMs, relistThresholdMs: this.#thresholdMs };
  }

  /**
   * Sends an event to the watchers and the channel, as a relist would; false when the channel
   * dropped it. For the evented PLEG, which shares this PLEG's channel as upstream's does.
   * @internal
   */
  sendEvent(event: PodLifecycleEvent): boolean {
    return this.#emit(event);
  }

  /**
   * Marks a pod whose containers the caller is about to change (a sync creating or killing
   * them). Until {@link GenericPLEG.inspectPods} reads it or {@link GenericPLEG.releasePod} lets
   * go, relists neither inspect it nor send its events, and the cache's global timestamp stops
   * vouching for it, so its worker never takes a status read before the change as current.
   * Not in upstream's generic PLEG: it spares a relist from reading pods caught half-made.
   */
  holdPod(uid: string): void {
    // The cache keeps the hold: its next entry for the pod (an inspection's read) ends it.
    this.cache.hold(uid);
  }

  /** Ends a {@link GenericPLEG.holdPod} without reading the pod (the caller changed nothing). */
  releasePod(uid: string): void {
    this.cache.release(uid);
  }

  /**
   * Reads these pods' statuses now (or takes the `status` given), as a relist would read a
   * changed pod: the cache entry is
   * replaced, the events since the last read are sent, and a hold is released. Serialized with
   * relists. A caller that just changed a pod's containers uses it to see the result without a
   * full relist (in the spirit of upstream's evented PLEG, which learns of changes from the
   * runtime instead of a listing).
   */
  inspectPods(pods: readonly PodInspection[]): Promise<void> {
    const signal = this.#running?.abort.signal;
    const next = this.#relistChain.then(() => this.#inspectPods(pods, signal));
    this.#relistChain = next.catch(() => {});
    return next;
  }

  /** Running totals, for metrics. */
  stats(): PLEGStats {
    return { ...this.#stats, lastRelistTime: this.#relistTime };
  }

  #relistSerialized(signal: AbortSignal | undefined): Promise<void> {
    const next = this.#relistChain.then(() => this.#relist(signal));
    // A failed relist must not wedge the ones queued behind it.
    this.#relistChain = next.catch(() => {});
    return next;
  }

  async #relist(signal: AbortSignal | undefined): Promise<void> {
    const timestamp = this.#clock.now();
    const intervalMs = this.#relistTime === undefined ? undefined : timestamp - this.#relistTime;
    this.#stats.relists++;

    let pods: RuntimePod[];
    try {
      pods = await this.#runtime.getPods(true, signal);
    } catch (err) {
      if (signal?.aborted) return;
      // The relist time does not advance, so health degrades until listing works again.
      const error = asError(err);
      this.#stats.relistErrors++;
      this.#logger.error({ err: error }, 'GenericPLEG: Unable to retrieve pods');
      this.#report({
        timestamp,
        durationMs: this.#clock.since(timestamp),
        intervalMs,
        error,
        runningPods: 0,
        containersByState: {},
        eventsSent: 0,
        eventsDiscarded: 0,
      });
      return;
    }
    this.#relistTime = timestamp;
    const counts = countRunning(pods);
    this.#stats.runningPods = counts.runningPods;
    this.#stats.containersByState = counts.containersByState;
    this.#setCurrent(pods);

    let eventsSent = 0;
    let eventsDiscarded = 0;
    const needsReinspection = new Map<string, RuntimePod | undefined>();
    // A pod whose read failed is read again even if no listing ever showed it (upstream
    // reinspects every such pod): a pod that failed before anything of it was made would
    // otherwise keep its error entry, and its worker would fail on it, for ever.
    // Records first, then reinspections with no record, each once (without copying every key).
    const pids: Iterable<string> =
      this.#podsToReinspect.size === 0
        ? [...this.#records.keys()]
        : [
            ...this.#records.keys(),
            ...[...this.#podsToReinspect.keys()].filter((p) => !this.#records.has(p)),
          ];
    // The pods to read, in the order of the records; each is read (at most `relistConcurrency`
    // at once, as upstream's runtime answers a relist's reads in parallel) and, once its read is
    // in the cache, has its record advanced and its events sent, so a pod's events still follow
    // its cache entry and keep their order.
    const work: { pid: string; pod: RuntimePod | undefined; events: readonly PodLifecycleEvent[] }[] = [];
    for (const pid of pids) {
      const record = this.#records.get(pid);
      const pod = record?.current;
      const events = record ? podEvents(pid, record.old, pod) : noEvents;
      if (events.length === 0 && !this.#podsToReinspect.has(pid)) continue;
      work.push({ pid, pod, events });
    }
    let next = 0;
    let aborted = false;
    const worker = async () => {
      while (next < work.length && !aborted) {
        const { pid, pod, events } = work[next++] as (typeof work)[number];
        if (this.cache.isHeld(pid)) {
          // Its changer asks for an inspection when done; the record keeps the change for later.
          if (this.#podsToReinspect.has(pid)) needsReinspection.set(pid, pod);
          continue;
        }
        // On an inspection error the record is left as it was, so the same change is seen (and
        // the pod inspected) again on the next relist.
        const result = await this.#updateCache(pod, pid, signal);
        // Stopped mid-relist: leave records and the cache's timestamp as they were.
        if (signal?.aborted) {
          aborted = true;
          return;
        }
        if (result.error) {
          this.#logger.debug(
            { podUID: pid, pod: pod ? `${pod.namespace}/${pod.name}` : undefined, err: result.error },
            'PLEG: Ignoring events for pod',
          );
          needsReinspection.set(pid, pod);
          continue;
        }
        this.#updateRecord(pid);

        const sent = this.#sendEvents(pid, events, result.status);
        eventsSent += sent.sent;
        eventsDiscarded += sent.discarded;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#relistConcurrency, work.length) }, worker));
    if (aborted || signal?.aborted) return;

    // Only now is every changed pod's entry fresh, so waiters on getNewerThan may proceed.
    this.cache.updateTime(timestamp);
    this.#podsToReinspect = needsReinspection;
    const durationMs = this.#clock.since(timestamp);
    this.#stats.lastRelistDurationMs = durationMs;
    this.#report({ timestamp, durationMs, intervalMs, ...counts, eventsSent, eventsDiscarded });
  }

  #sendEvents(
    pid: string,
    events: readonly PodLifecycleEvent[],
    status: RuntimePodStatus | undefined,
  ): { sent: number; discarded: number } {
    let sent = 0;
    let discarded = 0;
    for (const event of events) {
      // Upstream filters ContainerChanged: it is unreliable and nothing uses it.
      if (event.type === 'ContainerChanged') continue;
      if (this.#emit(event)) sent++;
      else discarded++;
      if (event.type === 'ContainerDied' && status) {
        const died = status.containerStatuses.find((c) => c.id.id === event.data);
        if (died) {
          this.#logger.info(
            { podUID: pid, containerID: event.data, exitCode: died.exitCode },
            'Generic (PLEG): container finished',
          );
        }
      }
    }
    return { sent, discarded };
  }

  async #inspectPods(pods: readonly PodInspection[], signal: AbortSignal | undefined): Promise<void> {
    // A few at a time: a burst of finished syncs must not flood the runtime.
    let next = 0;
    const worker = async () => {
      while (next < pods.length) {
        const pod = pods[next++] as PodInspection;
        await this.#inspectPod(pod, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(inspectionConcurrency, pods.length) }, worker));
  }

  async #inspectPod(ref: PodInspection, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return;
    this.#stats.inspections++;
    const uid = ref.uid;
    const timestamp = this.#clock.now();
    let status: RuntimePodStatus;
    try {
      status =
        ref.status ??
        (await this.#runtime.getPodStatus({
          uid,
          name: ref.name,
          namespace: ref.namespace,
          ...(signal ? { signal } : {}),
        }));
    } catch (err) {
      if (signal?.aborted) return;
      const error = asError(err);
      this.#logger.error({ err: error, pod: `${ref.namespace}/${ref.name}` }, 'PLEG: Write status');
      // The error reaches the pod's worker; the record keeps the change for the next relist,
      // which reads the pod again even if its listing shows nothing new (as upstream reinspects).
      this.cache.set(uid, undefined, error, timestamp);
      this.#podsToReinspect.set(uid, this.#records.get(uid)?.current);
      return;
    }
    if (signal?.aborted) return;
    const ips = podIPsThroughTeardown(this.cache, uid, status);
    if (ips !== status.ips) status = { ...status, ips };
    const current = runtimePodFromStatus(status);
    const events = podEvents(uid, this.#records.get(uid)?.old, current);
    this.#podsToReinspect.delete(uid);
    if (current.containers.length === 0 && current.sandboxes.length === 0) {
      // Nothing of the pod is left (or nothing was made): as a relist that no longer lists it.
      this.#records.delete(uid);
      this.cache.delete(uid);
    } else {
      this.#records.set(uid, { old: current, current: undefined });
      this.cache.set(uid, status, undefined, timestamp);
    }
    this.#sendEvents(uid, events, status);
  }

  #emit(event: PodLifecycleEvent): boolean {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.#logger.error({ err: asError(err) }, 'PLEG: event listener failed');
      }
    }
    if (this.events.trySend(event)) return true;
    // A channel without capacity is for waiting receivers only: with watchers, nothing was lost.
    if (this.events.capacity === 0 && this.#listeners.size > 0) return true;
    this.#stats.discardedEvents++;
    this.#logger.error(
      { podUID: event.id, type: event.type },
      'Event channel is full, discard this relist() cycle event',
    );
    return false;
  }

  #report(result: RelistResult): void {
    if (!this.#onRelist) return;
    try {
      this.#onRelist(result);
    } catch (err) {
      this.#logger.error({ err: asError(err) }, 'PLEG: onRelist callback failed');
    }
  }

  async #updateCache(
    pod: RuntimePod | undefined,
    pid: string,
    signal: AbortSignal | undefined,
  ): Promise<{ status?: RuntimePodStatus; error?: Error }> {
    if (!pod) {
      // The pod has no containers or sandboxes left at all.
      this.#logger.debug({ podUID: pid }, 'PLEG: Delete status for pod');
      this.cache.delete(pid);
      return {};
    }
    const timestamp = this.#clock.now();
    try {
      let status = await this.#runtime.getPodStatus({
        uid: pod.id,
        name: pod.name,
        namespace: pod.namespace,
        ...(signal ? { signal } : {}),
      });
      const ips = podIPsThroughTeardown(this.cache, pid, status);
      if (ips !== status.ips) status = { ...status, ips };
      this.cache.set(pod.id, status, undefined, timestamp);
      return { status };
    } catch (err) {
      const error = asError(err);
      if (signal?.aborted) return { error };
      this.#logger.error({ err: error, pod: `${pod.namespace}/${pod.name}` }, 'PLEG: Write status');
      this.cache.set(pod.id, undefined, error, timestamp);
      return { error };
    }
  }

  /**
   * A torn-down pod's status has no IPs (the network is gone), but the API expects a finished
   * pod to keep its IP: keep the cached IPs while no sandbox of the new status is ready.
   */
  #setCurrent(pods: readonly RuntimePod[]): void {
    for (const record of this.#records.values()) record.current = undefined;
    for (const pod of pods) {
      const record = this.#records.get(pod.id);
      if (record) record.current = pod;
      else this.#records.set(pod.id, { old: undefined, current: pod });
    }
  }

  #updateRecord(pid: string): void {
    const record = this.#records.get(pid);
    if (!record) return;
    if (!record.current) {
      this.#records.delete(pid);
      return;
    }
    record.old = record.current;
    record.current = undefined;
  }
}
