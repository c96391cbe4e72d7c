// client-go `tools/record/events_cache.go`: aggregation of similar events, counting of repeats,
// and the per-object spam filter, applied to every event before it is written.

import type { Clock, CoreV1Event } from '@kubelet-kit/core';
import { TokenBucket } from './token-bucket.js';

/** Keys each cache holds at most (upstream `maxLruCacheEntries`). @public */
export const maxLruCacheEntries = 4096;
/** Similar events (differing only in message) before they are combined (upstream `defaultAggregateMaxEvents`). @public */
export const defaultAggregateMaxEvents = 10;
/** The window in which similar events count towards combining, s (upstream `defaultAggregateIntervalInSeconds`). @public */
export const defaultAggregateIntervalInSeconds = 600;
/** Events a source may send about one object at once (upstream `defaultSpamBurst`). @public */
export const defaultSpamBurst = 25;
/** The refill of that allowance: one event every 5 minutes (upstream `defaultSpamQPS`). @public */
export const defaultSpamQPS = 1 / 300;

/** What a repeated event's PATCH changes (upstream's two-way merge patch of these fields). @public */
export interface EventPatch {
  readonly count: number;
  readonly lastTimestamp: string;
  readonly message?: string;
}

/**
 * What {@link EventCorrelator.eventCorrelate} decided: skip the event, or write `event`, as a
 * PATCH of `patch` onto the existing one when it is a repeat (`event.count > 1`).
 *
 * @public
 */
export interface EventCorrelateResult {
  readonly event?: CoreV1Event;
  readonly patch?: EventPatch;
  readonly skip: boolean;
}

/** Options of {@link EventCorrelator}; the defaults are client-go's. @public */
export interface EventCorrelatorOptions {
  readonly clock: Clock;
  /** Entries per cache; default 4096. */
  readonly lruCacheSize?: number;
  /** Spam filter burst; default 25. */
  readonly burstSize?: number;
  /** Spam filter refill, events per second; default 1/300. */
  readonly qps?: number;
  /** Similar events before combining; default 10. */
  readonly maxEvents?: number;
  /** Combining window, s; default 600. */
  readonly maxIntervalInSeconds?: number;
  /** What the spam filter counts per; default {@link getSpamKey}. */
  readonly spamKeyFunc?: (event: CoreV1Event) => string;
}

/** A least-recently-used map of at most `size` entries. */
class LruCache<V> {
  readonly #size: number;
  readonly #map = new Map<string, V>();
  constructor(size: number) {
    this.#size = size;
  }
  get(key: string): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }
  add(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.#size) this.#map.delete(this.#map.keys().next().value as string);
  }
  get length(): number {
    return this.#map.size;
  }
}

/** RFC 3339 in whole seconds, as metav1.Time goes on the wire. @internal */
export function formatEventTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * `<name>.<nanoseconds in hex>`, the names client-go gives events. The clock has only
 * milliseconds, so the caller's sequence number fills the nanoseconds: events made in one
 * millisecond (Pulled, Created, Started) would otherwise share a name and all but the first
 * fail with 409 AlreadyExists. @internal
 */
export function eventName(objectName: string | undefined, ms: number, seq = 0): string {
  return `${objectName ?? ''}.${(BigInt(Math.floor(ms)) * 1_000_000n + BigInt(seq % 1_000_000)).toString(16)}`;
}

/** What makes two events the same event: everything but counts and times (upstream `getEventKey`). @public */
export function getEventKey(event: CoreV1Event): string {
  const o = event.involvedObject;
  return [
    event.source?.component,
    event.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.fieldPath,
    o.uid,
    o.apiVersion,
    event.type,
    event.reason,
    event.message,
  ]
    .map((s) => s ?? '')
    .join('');
}

/** The spam filter's key: source, object and type (upstream `getSpamKey`). @public */
export function getSpamKey(event: CoreV1Event): string {
  const o = event.involvedObject;
  return [
    event.source?.component,
    event.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.uid,
    o.apiVersion,
    event.type,
  ]
    .map((s) => s ?? '')
    .join('');
}

/**
 * The aggregation key (everything but the message and field path) and the local key (the message),
 * as upstream `EventAggregatorByReasonFunc`.
 *
 * @public
 */
export function eventAggregatorByReasonFunc(event: CoreV1Event): [aggregateKey: string, localKey: string] {
  const o = event.involvedObject;
  const key = [
    event.source?.component,
    event.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.uid,
    o.apiVersion,
    event.type,
    event.reason,
    event.reportingComponent,
    event.reportingInstance,
  ]
    .map((s) => s ?? '')
    .join('');
  return [key, event.message ?? ''];
}

/** The message of a combined event (upstream `EventAggregatorByReasonMessageFunc`). @public */
export function eventAggregatorByReasonMessageFunc(event: CoreV1Event): string {
  return `(combined from similar events): ${event.message ?? ''}`;
}

interface AggregateRecord {
  readonly localKeys: Set<string>;
  lastTimestamp: number;
}

interface EventLog {
  readonly count: number;
  readonly firstTimestamp: string | undefined;
  readonly name: string | undefined;
  readonly resourceVersion: string | undefined;
}

/**
 * Decides what becomes of each event before it is written, as client-go's `EventCorrelator`:
 * 1. aggregation: once `maxEvents` events differ only in message within `maxIntervalInSeconds`,
 *    further ones become one combined event, "(combined from similar events): <message>";
 * 2. counting: an event seen before becomes a PATCH of its count, lastTimestamp and message;
 * 3. the spam filter: per source and object, a token bucket of `burstSize` refilled at `qps`;
 *    events over it are skipped.
 *
 * @public
 */
export class EventCorrelator {
  readonly #clock: Clock;
  readonly #maxEvents: number;
  readonly #maxIntervalMs: number;
  readonly #burst: number;
  readonly #qps: number;
  readonly #spamKeyFunc: (event: CoreV1Event) => string;
  readonly #aggregates: LruCache<AggregateRecord>;
  /** Fills the nanoseconds of the names of combined events (see eventName). */
  #seq = 0;
  readonly #observations: LruCache<EventLog>;
  readonly #spam: LruCache<TokenBucket>;

  constructor(options: EventCorrelatorOptions) {
    const size = options.lruCacheSize ?? maxLruCacheEntries;
    this.#clock = options.clock;
    this.#maxEvents = options.maxEvents ?? defaultAggregateMaxEvents;
    this.#maxIntervalMs = (options.maxIntervalInSeconds ?? defaultAggregateIntervalInSeconds) * 1000;
    this.#burst = options.burstSize ?? defaultSpamBurst;
    this.#qps = options.qps ?? defaultSpamQPS;
    this.#spamKeyFunc = options.spamKeyFunc ?? getSpamKey;
    this.#aggregates = new LruCache(size);
    this.#observations = new LruCache(size);
    this.#spam = new LruCache(size);
  }

  /** Aggregates, counts and filters one event (upstream `EventCorrelate`). */
  eventCorrelate(newEvent: CoreV1Event): EventCorrelateResult {
    const [aggregated, key] = this.#eventAggregate(newEvent);
    const { event, patch } = this.#eventObserve(aggregated, key);
    if (this.#filter(event)) return { skip: true };
    return patch ? { event, patch, skip: false } : { event, skip: false };
  }

  /** Records what the API server returned, so a repeat patches that object (upstream `UpdateState`). */
  updateState(event: CoreV1Event): void {
    this.#observations.add(getEventKey(event), {
      count: event.count ?? 0,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata?.name,
      resourceVersion: event.metadata?.resourceVersion,
    });
  }

  // upstream EventAggregator.EventAggregate
  #eventAggregate(newEvent: CoreV1Event): [CoreV1Event, string] {
    const now = this.#clock.now();
    const eventKey = getEventKey(newEvent);
    const [aggregateKey, localKey] = eventAggregatorByReasonFunc(newEvent);
    let record = this.#aggregates.get(aggregateKey);
    if (!record || now - record.lastTimestamp > this.#maxIntervalMs) {
      record = { localKeys: new Set(), lastTimestamp: now };
    }
    record.localKeys.add(localKey);
    record.lastTimestamp = now;
    this.#aggregates.add(aggregateKey, record);
    if (record.localKeys.size < this.#maxEvents) return [newEvent, eventKey];

    // Keep the set from growing: one key out per combined event, as upstream's PopAny.
    const first = record.localKeys.values().next().value;
    if (first !== undefined) record.localKeys.delete(first);
    const time = formatEventTime(now);
    const combined: CoreV1Event = {
      metadata: {
        name: eventName(newEvent.involvedObject.name, now, this.#seq++),
        namespace: newEvent.metadata?.namespace,
      },
      count: 1,
      firstTimestamp: time,
      involvedObject: newEvent.involvedObject,
      lastTimestamp: time,
      message: eventAggregatorByReasonMessageFunc(newEvent),
      type: newEvent.type,
      reason: newEvent.reason,
      source: newEvent.source,
    };
    return [combined, aggregateKey];
  }

  // upstream eventLogger.eventObserve
  #eventObserve(newEvent: CoreV1Event, key: string): { event: CoreV1Event; patch?: EventPatch } {
    let event: CoreV1Event = { ...newEvent, metadata: { ...newEvent.metadata } };
    let patch: EventPatch | undefined;
    const last = this.#observations.get(key);
    if (last && last.count > 0) {
      event = {
        ...event,
        metadata: { ...event.metadata, name: last.name, resourceVersion: last.resourceVersion },
        firstTimestamp: last.firstTimestamp,
        count: last.count + 1,
      };
      patch = {
        count: last.count + 1,
        lastTimestamp: event.lastTimestamp ?? formatEventTime(this.#clock.now()),
        ...(event.message ? { message: event.message } : {}),
      };
    }
    this.#observations.add(key, {
      count: event.count ?? 0,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata?.name,
      resourceVersion: event.metadata?.resourceVersion,
    });
    return patch ? { event, patch } : { event };
  }

  // upstream EventSourceObjectSpamFilter.Filter: true means skip.
  #filter(event: CoreV1Event): boolean {
    const key = this.#spamKeyFunc(event);
    let bucket = this.#spam.get(key);
    if (!bucket) bucket = new TokenBucket(this.#qps, this.#burst, this.#clock);
    const skip = !bucket.tryAccept();
    this.#spam.add(key, bucket);
    return skip;
  }
}
