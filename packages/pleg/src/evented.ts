import {
  type Clock,
  type ContainerEventSource,
  ContainerEventsUnimplementedError,
  type Logger,
  noopLogger,
  RealClock,
  type Runtime,
  type RuntimeContainerEvent,
  type RuntimePodStatus,
  type Timer,
} from '@kubelet-kit/core';
import type { RuntimePodStatusCache } from './cache.js';
import { DefaultRelistPeriodMs, DefaultRelistThresholdMs, type GenericPLEG } from './generic.js';
import {
  type PLEGHealth,
  PLEGNotHealthyError,
  type PodLifecycleEvent,
  type PodLifecycleEventGenerator,
  type PodLifecycleEventListener,
} from './pleg.js';

/** The generic relist period while runtime events flow, ms (upstream's evented relist period, 300 s). */
export const EventedRelistPeriodMs = 300_000;
/** The generic PLEG's health threshold while runtime events flow, ms (upstream's, 10 min). */
export const EventedRelistThresholdMs = 10 * 60_000;
/** Failed event streams before falling back to relisting (upstream `eventedPlegMaxStreamRetries`). */
export const DefaultEventedPLEGMaxStreamRetries = 5;
/** How often the cache's global timestamp advances while events flow, ms (upstream `globalCacheUpdatePeriod`). */
export const GlobalCacheUpdatePeriodMs = 5_000;

/** Options of {@link EventedPLEG}. @public */
export interface EventedPLEGOptions {
  /** The runtime's container event stream (CRI `GetContainerEvents`). */
  readonly source: ContainerEventSource;
  /**
   * The generic PLEG that keeps relisting beside the events (at {@link EventedRelistPeriodMs})
   * and alone after a fallback. Its cache and event channel are this PLEG's too.
   */
  readonly generic: GenericPLEG;
  /** Reads a pod's status for an event that carries none. */
  readonly runtime: Pick<Runtime, 'getPodStatus'>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Default 5 (upstream `eventedPlegMaxStreamRetries`). */
  readonly maxStreamRetries?: number;
  /** The generic PLEG's period and threshold after a fallback; default 1 s and 3 min. */
  readonly relistPeriodMs?: number;
  readonly relistThresholdMs?: number;
  /** The generic PLEG's period and threshold while events flow; default 300 s and 10 min. */
  readonly eventedRelistPeriodMs?: number;
  readonly eventedRelistThresholdMs?: number;
  /** Default 5000 (upstream `globalCacheUpdatePeriod`). */
  readonly globalCacheUpdatePeriodMs?: number;
  /** Called once when the PLEG gives up on events and relists at the short period again. */
  readonly onFallback?: (error: Error) => void;
}

/** Running totals of an {@link EventedPLEG}. @public */
export interface EventedPLEGStats {
  /** Event streams opened (upstream kubelet_evented_pleg_connection_success_count). */
  readonly connections: number;
  /** Streams that failed or ended (kubelet_evented_pleg_connection_error_count). */
  readonly connectionErrors: number;
  readonly eventsReceived: number;
  /** Whether the PLEG fell back to relisting alone. */
  readonly fellBack: boolean;
}

interface Running {
  readonly abort: AbortController;
  timer: Timer | undefined;
  done: Promise<void>;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The evented PLEG (upstream `EventedPLEG`, feature gate EventedPLEG): it learns of container
 * changes from the runtime's event stream instead of a listing every second. Each event's pod
 * status goes into the cache (only over an older entry) and becomes ContainerStarted /
 * ContainerDied / ContainerRemoved events on the generic PLEG's channel; the generic relist keeps
 * running at a long period as the safety net. When the stream fails `maxStreamRetries` times, or
 * the runtime does not implement it, the PLEG stops and the generic PLEG relists at its normal
 * period again.
 * @public
 */
export class EventedPLEG implements PodLifecycleEventGenerator {
  readonly cache: RuntimePodStatusCache;
  readonly #source: ContainerEventSource;
  readonly #generic: GenericPLEG;
  readonly #runtime: Pick<Runtime, 'getPodStatus'>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #maxRetries: number;
  readonly #relist: { readonly relistPeriodMs: number; readonly relistThresholdMs: number };
  readonly #eventedRelist: { readonly relistPeriodMs: number; readonly relistThresholdMs: number };
  readonly #cacheUpdatePeriodMs: number;
  readonly #onFallback: ((error: Error) => void) | undefined;
  #running: Running | undefined;
  #attempts = 0;
  #stats = { connections: 0, connectionErrors: 0, eventsReceived: 0, fellBack: false };

  constructor(options: EventedPLEGOptions) {
    this.#source = options.source;
    this.#generic = options.generic;
    this.cache = options.generic.cache;
    this.#runtime = options.runtime;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'evented-pleg' });
    this.#maxRetries = options.maxStreamRetries ?? DefaultEventedPLEGMaxStreamRetries;
    this.#relist = {
      relistPeriodMs: options.relistPeriodMs ?? DefaultRelistPeriodMs,
      relistThresholdMs: options.relistThresholdMs ?? DefaultRelistThresholdMs,
    };
    this.#eventedRelist = {
      relistPeriodMs: options.eventedRelistPeriodMs ?? EventedRelistPeriodMs,
      relistThresholdMs: options.eventedRelistThresholdMs ?? EventedRelistThresholdMs,
    };
    this.#cacheUpdatePeriodMs = options.globalCacheUpdatePeriodMs ?? GlobalCacheUpdatePeriodMs;
    this.#onFallback = options.onFallback;
  }

  /**
   * Starts watching the runtime's events and the generic PLEG at the long period (upstream
   * starts both; the kubelet creates the generic one with the evented durations). After a
   * fallback, starting again does nothing: the generic PLEG relists alone.
   */
  start(): void {
    if (this.#running || this.#stats.fellBack) return;
    const abort = new AbortController();
    const running: Running = { abort, timer: undefined, done: Promise.resolve() };
    this.#running = running;
    this.#generic.update(this.#eventedRelist);
    this.#generic.start();
    const tick = () => {
      if (this.#running !== running) return;
      // Waiters on getNewerThan get unstuck even if the stream silently stalls (upstream's reason).
      this.cache.updateTime(this.#clock.now());
      running.timer = this.#clock.setTimeout(tick, this.#cacheUpdatePeriodMs);
    };
    running.timer = this.#clock.setTimeout(tick, this.#cacheUpdatePeriodMs);
    running.done = this.#watchEvents(running);
  }

  /** Stops watching events and the generic PLEG. */
  stop(): void {
    this.#stopEvents();
    this.#generic.stop();
  }

  /** Resolves when the event loop started by the last `start()` has ended (for tests). */
  whenStopped(): Promise<void> {
    return this.#running?.done ?? Promise.resolve();
  }

  /** True while events are watched (false after a fallback). */
  get inUse(): boolean {
    return this.#running !== undefined;
  }

  watch(listener: PodLifecycleEventListener): () => void {
    return this.#generic.watch(listener);
  }

  /**
   * The generic PLEG's health (with the long threshold while events flow), and, as upstream,
   * unhealthy when the event channel is full.
   */
  healthy(): PLEGHealth {
    const generic = this.#generic.healthy();
    if (!generic.healthy) return generic;
    const channel = this.#generic.events;
    if (channel.capacity > 0 && channel.length >= channel.capacity) {
      return {
        healthy: false,
        error: new PLEGNotHealthyError(
          `EventedPLEG: pleg event channel capacity is full with ${channel.length} events`,
        ),
      };
    }
    return { healthy: true };
  }

  relist(): Promise<void> {
    return this.#generic.relist();
  }

  stats(): EventedPLEGStats {
    return { ...this.#stats };
  }

  #stopEvents(): void {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    running.timer?.cancel();
    running.abort.abort(new Error('evented pleg stopped'));
  }

  async #watchEvents(running: Running): Promise<void> {
    const signal = running.abort.signal;
    while (this.#running === running) {
      let error: Error;
      try {
        this.#stats.connections++;
        for await (const event of this.#source.getContainerEvents(signal)) {
          if (this.#running !== running) return;
          this.#stats.eventsReceived++;
          await this.#processEvent(event, signal);
        }
        if (signal.aborted) return;
        error = new Error('container events stream is closed');
      } catch (err) {
        if (signal.aborted) return;
        error = asError(err);
      }
      this.#stats.connectionErrors++;
      this.#attempts++;
      // Retrying a method the runtime lacks is pointless: fall back at once (upstream retries).
      const unimplemented = error instanceof ContainerEventsUnimplementedError;
      this.#logger.info(
        { err: error, attempt: this.#attempts },
        'Evented PLEG: Failed to get container events',
      );
      if (unimplemented || this.#attempts >= this.#maxRetries) {
        this.#fallBack(error);
        return;
      }
      // Catch up on what the broken stream may have missed, then retry.
      await this.#generic.relist().catch(() => {});
    }
  }

  #fallBack(error: Error): void {
    this.#logger.info(
      { err: error },
      'Fall back to Generic PLEG relisting since Evented PLEG is not working',
    );
    this.#stats.fellBack = true;
    this.#stopEvents();
    // Restarted at the normal period, the generic PLEG relists at once.
    this.#generic.stop();
    this.#generic.update(this.#relist);
    this.#generic.start();
    try {
      this.#onFallback?.(error);
    } catch (err) {
      this.#logger.error({ err: asError(err) }, 'Evented PLEG: onFallback callback failed');
    }
  }

  async #processEvent(event: RuntimeContainerEvent, signal: AbortSignal): Promise<void> {
    const pod = event.pod;
    if (!pod?.uid) {
      // The sandbox is already gone (a race in the runtime); its own event or a relist follows.
      this.#logger.debug(
        { containerID: event.containerId },
        'Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus or PodSandboxStatus.Metadata',
      );
      return;
    }
    const uid = pod.uid;
    let status: RuntimePodStatus | undefined = event.podStatus;
    let error: Error | undefined;
    // Read now if the event carries no status; stamped when the read started.
    const timestamp = status ? event.createdAt : this.#clock.now();
    if (!status) {
      try {
        status = await this.#runtime.getPodStatus({ ...pod, signal });
      } catch (err) {
        if (signal.aborted) return;
        error = asError(err);
      }
    }
    if (signal.aborted) return;
    if (status) {
      const ips = this.#getPodIPs(uid, status);
      if (ips !== status.ips) status = { ...status, ips };
    }

    let send = false;
    if (event.type === 'ContainerDeleted') {
      // A deleted sandbox takes the pod's entry with it; a deleted container updates it.
      const sandboxIds = new Set(this.cache.get(uid).status?.sandboxStatuses.map((s) => s.id) ?? []);
      for (const s of status?.sandboxStatuses ?? []) sandboxIds.add(s.id);
      if (sandboxIds.has(event.containerId)) this.cache.delete(uid);
      else if (status || error) this.cache.setIfNewer(uid, status, error, timestamp);
      send = true;
    } else {
      send = this.cache.setIfNewer(uid, status, error, timestamp);
    }
    if (send) this.#sendEvents(uid, event);
  }

  #sendEvents(uid: string, event: RuntimeContainerEvent): void {
    const send = (type: PodLifecycleEvent['type']) =>
      this.#generic.sendEvent({ id: uid, type, data: event.containerId });
    switch (event.type) {
      case 'ContainerStopped':
        send('ContainerDied');
        break;
      case 'ContainerCreated':
        // Only the cache changes: the generic PLEG sends nothing for a created container either.
        break;
      case 'ContainerStarted':
        send('ContainerStarted');
        break;
      case 'ContainerDeleted':
        // As the generic PLEG for a container gone without being seen exited.
        send('ContainerDied');
        send('ContainerRemoved');
        break;
    }
  }

  /** As the generic PLEG: a torn-down pod keeps its last IPs while no sandbox is ready. */
  #getPodIPs(uid: string, status: RuntimePodStatus): readonly string[] {
    if (status.ips.length > 0) return status.ips;
    const old = this.cache.get(uid);
    if (old.error || !old.status || old.status.ips.length === 0) return status.ips;
    if (status.sandboxStatuses.some((s) => s.state === 'ready')) return status.ips;
    return old.status.ips;
  }
}
