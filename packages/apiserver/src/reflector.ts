// The list/watch loop of the adapters that mirror a collection (upstream client-go
// `tools/cache/reflector.go`): list, then watch from the list's resourceVersion with bookmarks,
// relist on 410 Gone, back off after failures, and restart a watch that went silent.

import { Backoff, type Clock, type Logger, RealClock, type Timer } from '@kubelet-kit/core';
// Types only: the client is loaded when the loop first runs.
import type {
  ConfigurationOptions,
  KubeConfig,
  ObservableMiddleware,
  RequestContext,
  ResponseContext,
  Watch,
} from '@kubernetes/client-node';
import { asError, httpStatusOf } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';

/** The `Status` object of a watch `ERROR` event. */
export interface WatchErrorStatus {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
}

/** A watch event that changes the collection. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** The errors a reflector reports, built by its user so each adapter keeps its own wording. */
export interface ReflectorErrors {
  listFailed(cause: unknown): Error;
  /** An `ERROR` event; code 410 means the resourceVersion expired. */
  watchStatus(status: WatchErrorStatus): Error;
  /** The watch request failed or was cut off (`code` 410: expired). */
  watchFailed(code: number | undefined, cause: unknown): Error;
  /** No event, not even a bookmark, for `ms`. */
  stale(ms: number, resourceVersion: string): Error;
}

/** Options of {@link Reflector}. */
export interface ReflectorOptions {
  readonly kubeConfig: () => Promise<KubeConfig>;
  /**
   * Lists the collection with the generated client, passing `options` on (they keep the wire
   * JSON and carry the abort signal); the reflector reads the raw response body.
   */
  readonly list: (kubeConfig: KubeConfig, options: ConfigurationOptions) => Promise<unknown>;
  /** The path watched, e.g. `/api/v1/pods`. */
  readonly watchPath: string;
  /** Query parameters of both the list's selection and the watch, e.g. a field selector. */
  readonly watchParams?: Readonly<Record<string, string>>;
  /** A list came back: it replaces the whole collection. */
  readonly onReplace: (items: readonly unknown[], resourceVersion: string) => void;
  /** An object was added, modified or deleted. */
  readonly onEvent: (type: WatchEventType, obj: unknown) => void;
  readonly errors: ReflectorErrors;
  /** Every error: failed lists and watches, expired resource versions, stale watches. */
  readonly report: (error: Error) => void;
  readonly logger: Logger;
  /** A list taking longer is aborted and retried, ms; no limit when undefined. */
  readonly listTimeoutMs?: number;
  /** The user's settings (the adapters' options of the same names), defaults filled in here. */
  readonly tuning: ReflectorTuning;
}

/** What a reflector's user may tune; see the adapters' options for each. */
export interface ReflectorTuning {
  readonly clock?: Clock | undefined;
  /** Default 120 000 ms. */
  readonly watchStalenessTimeoutMs?: number | undefined;
  /** Default 300 s. */
  readonly minWatchTimeoutSeconds?: number | undefined;
  /** Defaults 800 ms and 30 s, as client-go's reflector. */
  readonly initialBackoffMs?: number | undefined;
  readonly maxBackoffMs?: number | undefined;
  readonly random?: (() => number) | undefined;
}

/** The settings with their defaults. */
interface Settings {
  readonly clock: Clock;
  readonly stalenessMs: number;
  readonly minWatchTimeoutSeconds: number;
  readonly random: () => number;
}

/** Counters of a {@link Reflector}. */
export interface ReflectorStats {
  lists: number;
  listErrors: number;
  watches: number;
  /** Relists caused by 410 Gone. */
  expired: number;
  /** Watches that failed or were cut off (not counting normal server-side timeouts). */
  watchErrors: number;
  /** Watches restarted by the staleness watchdog. */
  staleWatches: number;
  bookmarks: number;
}

type WatchOutcome =
  | { readonly kind: 'closed'; readonly events: number; readonly durationMs: number }
  | { readonly kind: 'expired'; readonly error: Error }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'stale'; readonly error: Error }
  | { readonly kind: 'aborted' };

/** A watch that ends sooner than this without an event counts as a failure (client-go's "very short watch"). */
const shortWatchMs = 1_000;
/** As the reflector's backoff manager: two quiet minutes start it over. */
const backoffResetMs = 2 * 60_000;

function resourceVersionOf(obj: unknown): string | undefined {
  const meta = (obj as { metadata?: { resourceVersion?: unknown } } | null)?.metadata;
  return typeof meta?.resourceVersion === 'string' ? meta.resourceVersion : undefined;
}

/**
 * One list/watch loop over a collection: `run(signal)` lists, then watches from the list's
 * resourceVersion until `signal` aborts.
 *
 * - A 410 Gone (an HTTP status, or an ERROR event with code 410) means the resourceVersion
 *   expired: it lists again.
 * - When a watch fails or is cut off, it waits (with backoff) and watches again from the last
 *   resourceVersion it saw. A bookmark only moves that resourceVersion on. A watch the server
 *   ends normally is resumed at once.
 * - A watch silent for longer than `watchStalenessTimeoutMs` is restarted the same way.
 */
export class Reflector {
  readonly #options: ReflectorOptions;
  readonly #settings: Settings;
  readonly #backoff: Backoff;
  #resourceVersion = '';
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  readonly stats: ReflectorStats = {
    lists: 0,
    listErrors: 0,
    watches: 0,
    expired: 0,
    watchErrors: 0,
    staleWatches: 0,
    bookmarks: 0,
  };

  constructor(options: ReflectorOptions) {
    this.#options = options;
    const { tuning } = options;
    this.#settings = {
      clock: tuning.clock ?? new RealClock(),
      stalenessMs: tuning.watchStalenessTimeoutMs ?? 120_000,
      minWatchTimeoutSeconds: tuning.minWatchTimeoutSeconds ?? 300,
      random: tuning.random ?? Math.random,
    };
    this.#backoff = new Backoff({
      clock: this.#settings.clock,
      initialMs: tuning.initialBackoffMs ?? 800,
      maxMs: tuning.maxBackoffMs ?? 30_000,
      maxJitterFactor: 1,
      random: this.#settings.random,
      hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > backoffResetMs,
    });
  }

  /** The resourceVersion the next watch starts from; `''` before the first list. */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** Whether {@link Reflector.stop} was called. */
  get stopped(): boolean {
    return this.#abort?.signal.aborted ?? false;
  }

  /** Runs {@link Reflector.run} in the background; a failure of the loop itself is logged. */
  start(failureMessage: string): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.run(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) this.#options.logger.error({ err: asError(err) }, failureMessage);
    });
  }

  /** Ends the watch and the loop; resolves once the loop is done. */
  async stop(): Promise<void> {
    this.#abort?.abort(new Error('reflector stopped'));
    await this.#loop;
  }

  async run(signal: AbortSignal): Promise<void> {
    const kc = await this.#options.kubeConfig();
    let needList = true;
    let expiredInARow = 0;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.#list(kc, signal);
          needList = false;
        } catch (err) {
          if (signal.aborted) return;
          this.stats.listErrors++;
          this.#options.report(this.#options.errors.listFailed(err));
          await this.#waitBackoff(signal);
          continue;
        }
      }
      const { Watch } = await loadClientNode();
      // Stopped during the list or the import: an abort listener added now would never fire.
      if (signal.aborted) return;
      const outcome = await this.#watchOnce(kc, Watch, signal);
      expiredInARow = outcome.kind === 'expired' ? expiredInARow + 1 : 0;
      switch (outcome.kind) {
        case 'aborted':
          return;
        case 'closed':
          // The server ended the watch (its timeout): resume at once. A watch that ended at
          // once with nothing in it is a failure in disguise, so it waits.
          if (outcome.events === 0 && outcome.durationMs < shortWatchMs) {
            this.stats.watchErrors++;
            this.#options.logger.warn('watch closed immediately; backing off');
            await this.#waitBackoff(signal);
          }
          break;
        case 'expired':
          this.stats.expired++;
          this.#options.report(outcome.error);
          // Relist from the current state; the old resourceVersion is useless now.
          this.#resourceVersion = '';
          needList = true;
          // A fresh list's version refused again: do not spin between list and watch.
          if (expiredInARow > 1) await this.#waitBackoff(signal);
          break;
        case 'stale':
          this.stats.staleWatches++;
          this.#options.report(outcome.error);
          await this.#waitBackoff(signal);
          break;
        case 'failed':
          this.stats.watchErrors++;
          this.#options.report(outcome.error);
          await this.#waitBackoff(signal);
          break;
      }
    }
  }

  async #waitBackoff(signal: AbortSignal): Promise<void> {
    this.#backoff.next('reflector', this.#settings.clock.now());
    try {
      await this.#settings.clock.sleep(this.#backoff.get('reflector'), signal);
    } catch {
      // Aborted: the loop checks the signal.
    }
  }

  async #list(kc: KubeConfig, signal: AbortSignal): Promise<void> {
    const { Observable, ResponseContext } = await loadClientNode();
    const { clock } = this.#settings;
    const { listTimeoutMs } = this.#options;
    const listAbort = new AbortController();
    const onAbort = () => listAbort.abort(signal.reason);
    // Stopped during the import: the listener below would never fire.
    signal.throwIfAborted();
    signal.addEventListener('abort', onAbort, { once: true });
    const timer =
      listTimeoutMs === undefined
        ? undefined
        : clock.setTimeout(
            () => listAbort.abort(new Error(`list timed out after ${listTimeoutMs}ms`)),
            listTimeoutMs,
          );
    let raw: string | undefined;
    // The generated client turns timestamps into Date objects; keep the wire JSON instead so
    // listed objects and watched objects look the same.
    const middleware: ObservableMiddleware = {
      pre: (ctx: RequestContext) => {
        ctx.setSignal(listAbort.signal);
        return new Observable(Promise.resolve(ctx));
      },
      post: (ctx: ResponseContext) =>
        new Observable(
          ctx.body.text().then((text) => {
            raw = text;
            return new ResponseContext(ctx.httpStatusCode, ctx.headers, {
              text: async () => text,
              binary: async () => Buffer.from(text),
            });
          }),
        ),
    };
    try {
      await this.#options.list(kc, { middleware: [middleware], middlewareMergeStrategy: 'append' });
    } catch (err) {
      throw listAbort.signal.aborted && !signal.aborted ? listAbort.signal.reason : err;
    } finally {
      timer?.cancel();
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted) return;
    const list = JSON.parse(raw ?? '{}') as { metadata?: { resourceVersion?: string }; items?: unknown[] };
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.stats.lists++;
    this.#options.onReplace(list.items ?? [], this.#resourceVersion);
  }

  #watchOnce(kc: KubeConfig, WatchClass: typeof Watch, signal: AbortSignal): Promise<WatchOutcome> {
    const { clock, stalenessMs } = this.#settings;
    const { errors } = this.#options;
    return new Promise<WatchOutcome>((resolve) => {
      const started = clock.now();
      let events = 0;
      let finished = false;
      let controller: AbortController | undefined;
      let staleTimer: Timer | undefined;
      const finish = (outcome: WatchOutcome) => {
        if (finished) return;
        finished = true;
        staleTimer?.cancel();
        signal.removeEventListener('abort', onAbort);
        controller?.abort();
        resolve(outcome);
      };
      const onAbort = () => finish({ kind: 'aborted' });
      const armWatchdog = () => {
        staleTimer?.cancel();
        staleTimer = clock.setTimeout(() => {
          finish({ kind: 'stale', error: errors.stale(stalenessMs, this.#resourceVersion) });
        }, stalenessMs);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      armWatchdog();

      const onEvent = (type: string, obj: unknown) => {
        if (finished) return;
        events++;
        armWatchdog();
        if (type === 'ERROR') {
          const status = (obj ?? {}) as WatchErrorStatus;
          const error = errors.watchStatus(status);
          finish(status.code === 410 ? { kind: 'expired', error } : { kind: 'failed', error });
          return;
        }
        const rv = resourceVersionOf(obj);
        if (type === 'BOOKMARK') {
          this.stats.bookmarks++;
          if (rv) this.#resourceVersion = rv;
          return;
        }
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        this.#options.onEvent(type, obj);
        if (rv) this.#resourceVersion = rv;
      };
      const onDone = (err: unknown) => {
        if (finished) return;
        if (err === null || err === undefined) {
          finish({ kind: 'closed', events, durationMs: clock.since(started) });
          return;
        }
        const code = httpStatusOf(err);
        const error = errors.watchFailed(code, err);
        finish(code === 410 ? { kind: 'expired', error } : { kind: 'failed', error });
      };

      this.stats.watches++;
      const timeoutSeconds = Math.floor(
        this.#settings.minWatchTimeoutSeconds * (1 + this.#settings.random()),
      );
      new WatchClass(kc)
        .watch(
          this.#options.watchPath,
          {
            ...this.#options.watchParams,
            resourceVersion: this.#resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds,
          },
          onEvent,
          onDone,
        )
        .then(
          (c) => {
            controller = c;
            // The request may only have answered after the watch was given up.
            if (finished) c.abort();
          },
          (err: unknown) => onDone(err ?? new Error('watch failed')),
        );
    });
  }
}

/** A shallow copy of a listed or watched object with its apiVersion and kind, which list items lack. */
export function withTypeMeta<T extends object>(obj: unknown, apiVersion: string, kind: string): T {
  return { ...(obj as T), apiVersion, kind };
}
