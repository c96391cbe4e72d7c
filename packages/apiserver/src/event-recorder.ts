// The kubelet's event recorder towards the API server: client-go `tools/record/event.go`
// (recorder, broadcaster and the watcher that calls recordToSink), with the event client's
// rate limit from `--event-qps` / `--event-burst`.

import type {
  Clock,
  CoreV1Event,
  EventObjectRef,
  EventRecorder,
  EventType,
  Logger,
  OfflineStore,
} from '@kubelet-kit/core';
import { noopLogger } from '@kubelet-kit/core';
import { asError, isUnreachable } from './api-errors.js';
import {
  EventCorrelator,
  type EventCorrelatorOptions,
  eventName,
  formatEventTime,
} from './event-correlator.js';
import { defaultEventSleepMs, type EventSink, type RecordOutcome, recordToSink } from './event-sink.js';
import { TokenBucket } from './token-bucket.js';

/** The kubelet's `--event-qps` default (v1.34). @public */
export const DefaultEventQPS = 50;
/** The kubelet's `--event-burst` default (v1.34). @public */
export const DefaultEventBurst = 100;
/** Events waiting to be written before new ones are dropped (upstream `maxQueuedEvents`). @public */
export const maxQueuedEvents = 1000;

// client-go's rest.Config defaults, which a 0 in --event-qps / --event-burst falls back to.
const restDefaultQPS = 5;
const restDefaultBurst = 10;

/** Options of {@link ApiserverEventRecorder}. @public */
export interface ApiserverEventRecorderOptions {
  readonly sink: EventSink;
  /** The node: `source.host` and `reportingInstance` of every event. */
  readonly nodeName: string;
  /** `source.component` and `reportingComponent`; default "kubelet". */
  readonly component?: string;
  /** API requests per second for events (`--event-qps`, default 50; 0 takes client-go's 5). */
  readonly eventQPS?: number;
  /** Requests allowed at once above that (`--event-burst`, default 100; 0 takes client-go's 10). */
  readonly eventBurst?: number;
  /** Events queued while writing lags, beyond which new ones are dropped; default 1000. */
  readonly maxQueuedEvents?: number;
  /** The wait between attempts to write an event, ms; default 10 s. */
  readonly sleepMs?: number;
  /** Overrides of the correlator's client-go defaults. */
  readonly correlator?: Omit<EventCorrelatorOptions, 'clock'>;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** A random source in [0, 1), for the first retry wait; defaults to Math.random. */
  readonly random?: () => number;
  /**
   * Offline operation: while the API server cannot be reached, events wait in the queue (in
   * order, at most `maxQueuedEvents`) instead of being dropped after upstream's 12 tries; they
   * are written once it answers. Default false.
   */
  readonly queueWhileUnreachable?: boolean;
  /**
   * With `queueWhileUnreachable`: the events waiting while the server cannot be reached are also
   * kept here (kind `Event`), so a restart during the outage does not lose them; a new recorder
   * over the same store writes them first, in their order.
   */
  readonly store?: OfflineStore;
}

/** One queued event, and its key in the store once kept there. */
interface QueuedEvent {
  readonly event: CoreV1Event;
  key?: string;
}

/** Counters of an {@link ApiserverEventRecorder}. @public */
export interface ApiserverEventRecorderStats {
  /** Created or patched on the API server. */
  readonly written: number;
  /** Held back by the correlator's spam filter. */
  readonly skipped: number;
  /** Refused by the API server (not retried). */
  readonly rejected: number;
  /** Given up after every attempt failed, or dropped because the queue was full. */
  readonly dropped: number;
  /** Waiting to be written. */
  readonly queued: number;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`event recorder: ${name} must be >= 0, got ${value}`);
  return value;
}

/**
 * An `EventRecorder` (from `@kubelet-kit/core`) that writes core/v1 Events to the API server, as
 * the kubelet's: events queue (at most 1000) and one writer correlates each (aggregation, counts,
 * spam filter) and writes it through the sink, each request waiting for the `eventQPS`/`eventBurst`
 * token bucket. `event()` never waits and never throws.
 *
 * @public
 */
export class ApiserverEventRecorder implements EventRecorder {
  readonly #sink: EventSink;
  readonly #nodeName: string;
  readonly #component: string;
  readonly #maxQueued: number;
  readonly #sleepMs: number;
  readonly #clock: Clock;
  /** Fills the nanoseconds of event names made in one millisecond (see eventName). */
  #seq = 0;
  readonly #logger: Logger;
  readonly #random: () => number;
  readonly #queueWhileUnreachable: boolean;
  readonly #correlator: EventCorrelator;
  readonly #limiter: TokenBucket;
  readonly #queue: QueuedEvent[] = [];
  readonly #store: OfflineStore | undefined;
  /** The stored events of an earlier run, read before the first write. */
  readonly #restored: Promise<void>;
  /** Set by a write that found the server unreachable, cleared by one that reached it. */
  #unreachable = false;
  #keySeq = 0;
  readonly #abort = new AbortController();
  #draining: Promise<void> | undefined;
  #written = 0;
  #skipped = 0;
  #rejected = 0;
  #dropped = 0;

  constructor(options: ApiserverEventRecorderOptions) {
    if (!options.nodeName) throw new Error('event recorder: nodeName is empty');
    this.#sink = options.sink;
    this.#nodeName = options.nodeName;
    this.#component = options.component ?? 'kubelet';
    this.#maxQueued = options.maxQueuedEvents ?? maxQueuedEvents;
    this.#sleepMs = options.sleepMs ?? defaultEventSleepMs;
    this.#clock = options.clock;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'event-recorder' });
    this.#random = options.random ?? Math.random;
    this.#queueWhileUnreachable = options.queueWhileUnreachable ?? false;
    this.#correlator = new EventCorrelator({ ...options.correlator, clock: options.clock });
    const qps = nonNegative('eventQPS', options.eventQPS, DefaultEventQPS) || restDefaultQPS;
    const burst = nonNegative('eventBurst', options.eventBurst, DefaultEventBurst) || restDefaultBurst;
    this.#limiter = new TokenBucket(qps, burst, options.clock);
    this.#store = this.#queueWhileUnreachable ? options.store : undefined;
    this.#restored = this.#restore();
  }

  // The events an earlier run kept while the server was away go out before any new one.
  async #restore(): Promise<void> {
    const store = this.#store;
    if (!store) return;
    try {
      const kept = await store.list<CoreV1Event>('Event');
      kept.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const room = Math.max(0, this.#maxQueued - this.#queue.length);
      this.#queue.unshift(...kept.slice(0, room).map(({ key, value }) => ({ event: value, key })));
      for (const { key } of kept.slice(room)) await this.#forget(key);
      if (kept.length) {
        this.#logger.info(
          { events: kept.length },
          'events kept while the API server was away are queued again',
        );
        this.#draining ??= this.#drain();
      }
    } catch (err) {
      this.#logger.warn({ err: asError(err).message }, 'offline store: reading the kept events failed');
    }
  }

  // Keys sort as the events were made: the time, then a counter for events of one millisecond.
  #keep(entry: QueuedEvent): void {
    const store = this.#store;
    if (!store || entry.key !== undefined) return;
    const key = `${String(this.#clock.now()).padStart(15, '0')}-${String(this.#keySeq++).padStart(9, '0')}`;
    entry.key = key;
    store
      .put('Event', key, entry.event)
      .catch((err: unknown) =>
        this.#logger.warn({ err: asError(err).message }, 'offline store: keeping an event failed'),
      );
  }

  async #forget(key: string | undefined): Promise<void> {
    if (!this.#store || key === undefined) return;
    try {
      await this.#store.delete('Event', key);
    } catch (err) {
      this.#logger.warn({ err: asError(err).message }, 'offline store: dropping a kept event failed');
    }
  }

  get stats(): ApiserverEventRecorderStats {
    return {
      written: this.#written,
      skipped: this.#skipped,
      rejected: this.#rejected,
      dropped: this.#dropped,
      queued: this.#queue.length,
    };
  }

  event(object: EventObjectRef, type: EventType, reason: string, message: string): void {
    try {
      if (this.#abort.signal.aborted) return;
      if (type !== 'Normal' && type !== 'Warning') {
        this.#logger.error({ type, reason }, 'unsupported event type, dropping the event');
        return;
      }
      if (this.#queue.length >= this.#maxQueued) {
        this.#dropped++;
        this.#logger.debug({ reason, object: object.name }, 'event queue full, dropping the event');
        return;
      }
      const entry: QueuedEvent = { event: this.#makeEvent(object, type, reason, message) };
      this.#queue.push(entry);
      if (this.#unreachable) this.#keep(entry);
      this.#draining ??= this.#drain();
    } catch (err) {
      this.#logger.error({ err: String(err) }, 'failed to record an event');
    }
  }

  /** Stops writing: the write in progress ends at its next wait, queued events are dropped. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error('event recorder stopped'));
    await this.#draining;
    // Events kept in the store stay there for the next run.
    this.#dropped += this.#queue.length;
    this.#queue.length = 0;
  }

  /** Resolves once every queued event is written or given up (for tests and orderly shutdown). */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  // upstream recorderImpl.makeEvent, with the kubelet's source.
  #makeEvent(object: EventObjectRef, type: EventType, reason: string, message: string): CoreV1Event {
    const now = this.#clock.now();
    const time = formatEventTime(now);
    return {
      metadata: { name: eventName(object.name, now, this.#seq++), namespace: object.namespace || 'default' },
      involvedObject: {
        apiVersion: 'v1',
        kind: object.kind,
        ...(object.namespace ? { namespace: object.namespace } : {}),
        ...(object.name ? { name: object.name } : {}),
        ...(object.uid ? { uid: object.uid } : {}),
        ...(object.fieldPath ? { fieldPath: object.fieldPath } : {}),
      },
      reason,
      message,
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      type,
      source: { component: this.#component, host: this.#nodeName },
      reportingComponent: this.#component,
      reportingInstance: this.#nodeName,
    };
  }

  async #drain(): Promise<void> {
    const signal = this.#abort.signal;
    const limiter = this.#limiter;
    // Whether the server answers: once it does not, the event being written and every one
    // queued behind it are kept in the store until they are written.
    let current: QueuedEvent | undefined;
    const watched = async <T>(write: () => Promise<T>): Promise<T> => {
      try {
        const out = await write();
        this.#unreachable = false;
        return out;
      } catch (err) {
        if (this.#store && isUnreachable(err)) {
          this.#unreachable = true;
          if (current) this.#keep(current);
          for (const entry of this.#queue) this.#keep(entry);
        } else this.#unreachable = false;
        throw err;
      }
    };
    const sink: EventSink = {
      create: async (e) => {
        await limiter.accept(signal);
        return watched(() => this.#sink.create(e));
      },
      patch: async (e, p) => {
        await limiter.accept(signal);
        return watched(() => this.#sink.patch(e, p));
      },
    };
    const ctx = {
      sink,
      correlator: this.#correlator,
      clock: this.#clock,
      logger: this.#logger,
      sleepMs: this.#sleepMs,
      random: this.#random,
      signal,
      waitWhileUnreachable: this.#queueWhileUnreachable,
    };
    try {
      if (this.#store) await this.#restored;
      for (let entry = this.#queue.shift(); entry; entry = this.#queue.shift()) {
        current = entry;
        let outcome: RecordOutcome;
        try {
          outcome = await recordToSink(entry.event, ctx);
        } catch (err) {
          if (signal.aborted) return;
          this.#logger.error({ err: String(err) }, 'failed to write an event');
          outcome = 'dropped';
        }
        if (outcome === 'written') this.#written++;
        else if (outcome === 'skipped') this.#skipped++;
        else if (outcome === 'rejected') this.#rejected++;
        else this.#dropped++;
        if (signal.aborted) return;
        await this.#forget(entry.key);
        current = undefined;
      }
    } finally {
      // Cleared synchronously after the last shift, so an event() from now on starts a new drain.
      this.#draining = undefined;
    }
  }
}
