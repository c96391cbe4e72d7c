// How events reach the API server: client-go `tools/record/event.go` recordToSink and
// recordEvent, over `typed/core/v1` EventSinkImpl.

import type { Clock, CoreV1Event, Logger } from '@kubelet-kit/core';
// Types only: the client is loaded with the agent's kubeconfig.
import type { CoreV1Api } from '@kubernetes/client-node';
import { httpStatusOf } from './api-errors.js';
import type { EventCorrelator, EventPatch } from './event-correlator.js';
import { loadClientNode } from './load-client-node.js';
import { toPlainObject } from './status-sink.js';

/** Attempts to write one event before it is dropped (upstream `maxTriesPerEvent`). @public */
export const maxTriesPerEvent = 12;

/** The wait between attempts, ms; the first is a random part of it (upstream `defaultSleepDuration`). @public */
export const defaultEventSleepMs = 10_000;

/**
 * Where events are written (upstream `record.EventSink`): create a new one, or patch the count,
 * lastTimestamp and message of one written before. A rejection with an HTTP status (`code` or
 * `statusCode`, as client-node's `ApiException`) is the server's answer and is not retried; one
 * without (a refused connection) is retried.
 *
 * @public
 */
export interface EventSink {
  create(event: CoreV1Event): Promise<CoreV1Event>;
  patch(event: CoreV1Event, patch: EventPatch): Promise<CoreV1Event>;
}

/**
 * The part of `CoreV1Api` (object-parameter form, client-node 1.4) the event sink calls.
 *
 * @public
 */
export type EventApi = Pick<CoreV1Api, 'createNamespacedEvent' | 'patchNamespacedEvent'>;

/** Options of {@link ApiserverEventSink}. @public */
export interface ApiserverEventSinkOptions {
  readonly api: EventApi;
}

/**
 * An {@link EventSink} over the API server's core/v1 Events: POST to create, a strategic merge
 * patch to update a repeat.
 *
 * @public
 */
export class ApiserverEventSink implements EventSink {
  readonly #api: EventApi;

  constructor(options: ApiserverEventSinkOptions) {
    this.#api = options.api;
  }

  async create(event: CoreV1Event): Promise<CoreV1Event> {
    const namespace = event.metadata?.namespace || 'default';
    // The client's types want its model classes; the plain object is what goes on the wire.
    const body = event as unknown as Parameters<EventApi['createNamespacedEvent']>[0]['body'];
    return toPlainObject(await this.#api.createNamespacedEvent({ namespace, body })) as CoreV1Event;
  }

  async patch(event: CoreV1Event, patch: EventPatch): Promise<CoreV1Event> {
    const namespace = event.metadata?.namespace || 'default';
    const name = event.metadata?.name;
    if (!name) throw new Error('event patch: the event has no metadata.name');
    const { PatchStrategy, setHeaderOptions } = await loadClientNode();
    const updated = await this.#api.patchNamespacedEvent(
      { name, namespace, body: patch },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    return toPlainObject(updated) as CoreV1Event;
  }
}

/** What became of one event. @internal */
export type RecordOutcome = 'written' | 'skipped' | 'rejected' | 'dropped';

/** What {@link recordToSink} needs besides the event. @internal */
export interface RecordToSinkContext {
  readonly sink: EventSink;
  readonly correlator: EventCorrelator;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly sleepMs: number;
  readonly random: () => number;
  readonly signal: AbortSignal;
  /** Tries that found the API server unreachable do not count towards {@link maxTriesPerEvent}. */
  readonly waitWhileUnreachable?: boolean;
}

function describe(event: CoreV1Event): string {
  const o = event.involvedObject;
  return `${event.type ?? ''} ${event.reason ?? ''} on ${o.kind ?? ''} ${o.namespace ? `${o.namespace}/` : ''}${o.name ?? ''}`;
}

/**
 * Correlates one event and writes it, retrying while the API server cannot be reached: up to
 * {@link maxTriesPerEvent} attempts, the first wait a random part of `sleepMs` (so nodes do not
 * all retry at once after an outage), then `sleepMs` each. Rejects only when `signal` aborts.
 *
 * @internal
 */
export async function recordToSink(event: CoreV1Event, ctx: RecordToSinkContext): Promise<RecordOutcome> {
  const result = ctx.correlator.eventCorrelate(event);
  if (result.skip || !result.event) return 'skipped';
  for (let tries = 1, waits = 1; ; tries++, waits++) {
    const outcome = await recordEvent(result.event, result.patch, ctx);
    if (outcome !== 'retry') return outcome;
    // Offline: the event waits in its queue for the server instead of being given up.
    if (ctx.waitWhileUnreachable) tries = 0;
    else if (tries >= maxTriesPerEvent) {
      ctx.logger.error({ event: describe(event) }, 'unable to write event (retry limit exceeded)');
      return 'dropped';
    }
    await ctx.clock.sleep(waits === 1 ? ctx.sleepMs * ctx.random() : ctx.sleepMs, ctx.signal);
  }
}

// upstream recordEvent: a repeat is patched; a patch of an event gone meanwhile falls back to create.
async function recordEvent(
  event: CoreV1Event,
  patch: EventPatch | undefined,
  ctx: RecordToSinkContext,
): Promise<'written' | 'rejected' | 'retry'> {
  ctx.signal.throwIfAborted();
  let written: CoreV1Event | undefined;
  let error: unknown;
  const update = patch !== undefined && (event.count ?? 0) > 1;
  if (update) {
    try {
      written = await ctx.sink.patch(event, patch);
    } catch (err) {
      error = err;
    }
  }
  if (!update || (written === undefined && httpStatusOf(error) === 404)) {
    error = undefined;
    try {
      const { resourceVersion: _, ...metadata } = event.metadata ?? {};
      written = await ctx.sink.create({ ...event, metadata });
    } catch (err) {
      error = err;
    }
  }
  if (written !== undefined && error === undefined) {
    // The server's name and resourceVersion, so the next repeat patches this object.
    ctx.correlator.updateState(written);
    return 'written';
  }
  const status = httpStatusOf(error);
  const message = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
  if (status !== undefined) {
    // The server answered: the same request would get the same answer.
    const level = status === 409 ? 'debug' : 'error';
    ctx.logger[level](
      { event: describe(event), status, err: message },
      'server rejected event (will not retry)',
    );
    return 'rejected';
  }
  ctx.logger.error(
    { event: describe(event), err: message },
    'unable to write event (may retry after sleeping)',
  );
  return 'retry';
}
