// The API server source (upstream `pkg/kubelet/config/apiserver.go`): a reflector over the pods
// bound to this node (list, then watch from the list's resourceVersion) feeding an undelta store
// that sends a SET of every pod it holds after each change.

import {
  type ApiserverSourceName,
  Backoff,
  type Clock,
  type EventRecorder,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  RealClock,
  type Timer,
} from '@kubelet-kit/core';
import { type PodSource, PodSourceError, type PodSourceSink, validatePod } from '@kubelet-kit/pod-config';
// Types only: the client is loaded when a source first talks to the API server (it costs tens
// of MiB, which an agent without an API server should not pay).
import type {
  KubeConfig,
  ObservableMiddleware,
  RequestContext,
  ResponseContext,
  Watch,
} from '@kubernetes/client-node';

/** Options of {@link ApiserverSource}. */
export interface ApiserverSourceOptions {
  /** Where the API server is and how to authenticate; its current context is used. */
  readonly kubeConfig: KubeConfig;
  /** This node's name: only pods with `spec.nodeName` equal to it are listed and watched. */
  readonly nodeName: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Where pods that fail validation are reported (reason `FailedValidation`). */
  readonly recorder?: EventRecorder;
  /** Called with every error: failed lists and watches, expired resource versions, invalid pods. */
  readonly onError?: (error: Error) => void;
  /**
   * A watch that delivers nothing, not even a bookmark, for this long is restarted, ms
   * (default 120 000). client-node watches can stop without closing (kubernetes-client/javascript
   * #958, #364), and an API server sends bookmarks about once a minute.
   */
  readonly watchStalenessTimeoutMs?: number;
  /** A list taking longer than this is aborted and retried, ms (default 60 000). */
  readonly listTimeoutMs?: number;
  /**
   * The server ends each watch after a random `timeoutSeconds` in [min, 2 × min), as client-go's
   * reflector asks (default 300); the source then watches again from where it was.
   */
  readonly minWatchTimeoutSeconds?: number;
  /** Retry delays after failures: client-go's reflector uses 800 ms doubling to 30 s (the defaults). */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Validate pods before they enter the stream (default true); invalid pods are left out and reported. */
  readonly validate?: boolean;
  /** A random source in [0, 1), for watch timeouts and backoff jitter. */
  readonly random?: () => number;
}

/** Counters of an {@link ApiserverSource}, for metrics and tests. */
export interface ApiserverSourceStats {
  /** Successful lists (the first one and every relist). */
  readonly lists: number;
  readonly listErrors: number;
  /** Watches opened. */
  readonly watches: number;
  /** Relists caused by 410 Gone (an expired resource version). */
  readonly expired: number;
  /** Watches that failed or were cut off (not counting normal server-side timeouts). */
  readonly watchErrors: number;
  /** Watches restarted by the staleness watchdog. */
  readonly staleWatches: number;
  readonly bookmarks: number;
  /** SETs handed to the sink. */
  readonly sets: number;
}

type WatchOutcome =
  | { readonly kind: 'closed'; readonly events: number; readonly durationMs: number }
  | { readonly kind: 'expired'; readonly error: Error }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'stale'; readonly error: Error }
  | { readonly kind: 'aborted' };

interface PodMeta {
  readonly namespace?: string;
  readonly name?: string;
  readonly resourceVersion?: string;
}

interface StatusObject {
  readonly kind?: string;
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
}

const SourceName: typeof ApiserverSourceName = 'api';
/** A watch that ends sooner than this without an event counts as a failure (client-go's "very short watch"). */
const shortWatchMs = 1_000;

function metaOf(obj: unknown): PodMeta {
  if (typeof obj !== 'object' || obj === null) return {};
  const meta = (obj as { metadata?: unknown }).metadata;
  return typeof meta === 'object' && meta !== null ? (meta as PodMeta) : {};
}

function keyOf(obj: unknown): string {
  const meta = metaOf(obj);
  return `${meta.namespace ?? ''}/${meta.name ?? ''}`;
}

function asPod(obj: unknown): Pod {
  // List items come without apiVersion/kind; watch objects carry them.
  return { ...(obj as Pod), apiVersion: 'v1', kind: 'Pod' };
}

function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { statusCode?: unknown; code?: unknown };
  if (typeof e.statusCode === 'number') return e.statusCode;
  return typeof e.code === 'number' ? e.code : undefined;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The pods bound to this node, from a Kubernetes API server (source name `api`). It lists them
 * with `fieldSelector=spec.nodeName=<node>`, then watches from the list's resourceVersion with
 * bookmarks. Every list, and every change a watch brings, sends a SET of all the pods it holds.
 *
 * - A 410 Gone (an HTTP status, or an ERROR event with code 410) means the resourceVersion
 *   expired: the source lists again.
 * - When a watch fails or is cut off, the source waits (with backoff) and watches again from the
 *   last resourceVersion it saw. A bookmark only moves that resourceVersion on. A watch the
 *   server ends normally is resumed at once.
 * - A watch silent for longer than `watchStalenessTimeoutMs` is restarted the same way.
 */
export class ApiserverSource implements PodSource {
  readonly name = SourceName;
  readonly #kubeConfig: KubeConfig;
  readonly #nodeName: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #stalenessMs: number;
  readonly #listTimeoutMs: number;
  readonly #minWatchTimeoutSeconds: number;
  readonly #validate: boolean;
  readonly #random: () => number;
  readonly #backoff: Backoff;
  readonly #store = new Map<string, Pod>();
  /** Validation verdicts by pod key, kept per resourceVersion so each bad version is reported once. */
  readonly #verdicts = new Map<string, { readonly rv: string | undefined; readonly ok: boolean }>();
  #resourceVersion = '';
  #sink: PodSourceSink | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #dirty = false;
  #flushing: Promise<void> | undefined;
  #stats = {
    lists: 0,
    listErrors: 0,
    watches: 0,
    expired: 0,
    watchErrors: 0,
    staleWatches: 0,
    bookmarks: 0,
    sets: 0,
  };

  constructor(options: ApiserverSourceOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#nodeName = options.nodeName;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ source: SourceName });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#onError = options.onError;
    this.#stalenessMs = options.watchStalenessTimeoutMs ?? 120_000;
    this.#listTimeoutMs = options.listTimeoutMs ?? 60_000;
    this.#minWatchTimeoutSeconds = options.minWatchTimeoutSeconds ?? 300;
    this.#validate = options.validate ?? true;
    this.#random = options.random ?? Math.random;
    const resetMs = 2 * 60_000;
    this.#backoff = new Backoff({
      clock: this.#clock,
      initialMs: options.initialBackoffMs ?? 800,
      maxMs: options.maxBackoffMs ?? 30_000,
      maxJitterFactor: 1,
      random: this.#random,
      // As the reflector's backoff manager: two quiet minutes start it over.
      hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > resetMs,
    });
  }

  /** The resourceVersion the next watch starts from; `''` before the first list. */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** Counters since construction. */
  stats(): ApiserverSourceStats {
    return { ...this.#stats };
  }

  start(sink: PodSourceSink): void {
    if (this.#sink) throw new Error('ApiserverSource already started');
    this.#sink = sink;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) this.#logger.error({ err: asError(err) }, 'apiserver source loop failed');
    });
  }

  async stop(): Promise<void> {
    this.#abort?.abort(new Error('apiserver source stopped'));
    await this.#loop;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let needList = true;
    let expiredInARow = 0;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.#list(signal);
          needList = false;
        } catch (err) {
          if (signal.aborted) return;
          this.#stats.listErrors++;
          this.#report(this.#sourceError('ListFailed', `listing pods failed: ${asError(err).message}`, err));
          await this.#waitBackoff(signal);
          continue;
        }
      }
      const { Watch } = await import('@kubernetes/client-node');
      const outcome = await this.#watchOnce(Watch, signal);
      expiredInARow = outcome.kind === 'expired' ? expiredInARow + 1 : 0;
      switch (outcome.kind) {
        case 'aborted':
          return;
        case 'closed':
          // The server ended the watch (its timeout): resume at once. A watch that ended at
          // once with nothing in it is a failure in disguise, so it waits.
          if (outcome.events === 0 && outcome.durationMs < shortWatchMs) {
            this.#stats.watchErrors++;
            this.#logger.warn('watch closed immediately; backing off');
            await this.#waitBackoff(signal);
          }
          break;
        case 'expired':
          this.#stats.expired++;
          this.#report(outcome.error);
          // Relist from the current state; the old resourceVersion is useless now.
          this.#resourceVersion = '';
          needList = true;
          // A fresh list's version refused again: do not spin between list and watch.
          if (expiredInARow > 1) await this.#waitBackoff(signal);
          break;
        case 'stale':
          this.#stats.staleWatches++;
          this.#report(outcome.error);
          await this.#waitBackoff(signal);
          break;
        case 'failed':
          this.#stats.watchErrors++;
          this.#report(outcome.error);
          await this.#waitBackoff(signal);
          break;
      }
    }
  }

  async #waitBackoff(signal: AbortSignal): Promise<void> {
    this.#backoff.next('reflector', this.#clock.now());
    const delay = this.#backoff.get('reflector');
    try {
      await this.#clock.sleep(delay, signal);
    } catch {
      // Aborted: the loop checks the signal.
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const { CoreV1Api, Observable, ResponseContext } = await import('@kubernetes/client-node');
    const api = this.#kubeConfig.makeApiClient(CoreV1Api);
    const listAbort = new AbortController();
    const onAbort = () => listAbort.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = this.#clock.setTimeout(
      () => listAbort.abort(new Error(`list timed out after ${this.#listTimeoutMs}ms`)),
      this.#listTimeoutMs,
    );
    let raw: string | undefined;
    // The generated client turns timestamps into Date objects; keep the wire JSON instead so
    // listed pods and watched pods look the same.
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
      await api.listPodForAllNamespaces(
        { fieldSelector: `spec.nodeName=${this.#nodeName}` },
        { middleware: [middleware], middlewareMergeStrategy: 'append' },
      );
    } catch (err) {
      throw listAbort.signal.aborted && !signal.aborted ? listAbort.signal.reason : err;
    } finally {
      timer.cancel();
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted) return;
    const list = JSON.parse(raw ?? '{}') as { metadata?: { resourceVersion?: string }; items?: unknown[] };
    this.#store.clear();
    for (const item of list.items ?? []) this.#store.set(keyOf(item), asPod(item));
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.#stats.lists++;
    this.#logger.debug({ pods: this.#store.size, resourceVersion: this.#resourceVersion }, 'listed pods');
    this.#emit();
  }

  #watchOnce(WatchClass: typeof Watch, signal: AbortSignal): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      const started = this.#clock.now();
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
        staleTimer = this.#clock.setTimeout(() => {
          finish({
            kind: 'stale',
            error: this.#sourceError(
              'WatchStale',
              `watch silent for ${this.#stalenessMs}ms at resourceVersion ${this.#resourceVersion}; restarting it`,
            ),
          });
        }, this.#stalenessMs);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      armWatchdog();

      const onEvent = (type: string, obj: unknown) => {
        if (finished) return;
        events++;
        armWatchdog();
        if (type === 'ERROR') {
          const status = (obj ?? {}) as StatusObject;
          const error = this.#sourceError(
            status.code === 410 ? 'Expired' : 'WatchFailed',
            `watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
          );
          finish(status.code === 410 ? { kind: 'expired', error } : { kind: 'failed', error });
          return;
        }
        const rv = metaOf(obj).resourceVersion;
        if (type === 'BOOKMARK') {
          this.#stats.bookmarks++;
          if (rv) this.#resourceVersion = rv;
          return;
        }
        const key = keyOf(obj);
        if (type === 'ADDED' || type === 'MODIFIED') this.#store.set(key, asPod(obj));
        else if (type === 'DELETED') this.#store.delete(key);
        else return;
        if (rv) this.#resourceVersion = rv;
        this.#emit();
      };
      const onDone = (err: unknown) => {
        if (finished) return;
        if (err === null || err === undefined) {
          finish({ kind: 'closed', events, durationMs: this.#clock.since(started) });
          return;
        }
        const code = statusCodeOf(err);
        const message = asError(err).message;
        if (code === 410) {
          finish({ kind: 'expired', error: this.#sourceError('Expired', `watch: 410 ${message}`, err) });
        } else {
          finish({
            kind: 'failed',
            error: this.#sourceError('WatchFailed', `watch failed: ${code ?? ''} ${message}`.trim(), err),
          });
        }
      };

      this.#stats.watches++;
      const timeoutSeconds = Math.floor(this.#minWatchTimeoutSeconds * (1 + this.#random()));
      new WatchClass(this.#kubeConfig)
        .watch(
          '/api/v1/pods',
          {
            fieldSelector: `spec.nodeName=${this.#nodeName}`,
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

  /** Marks the store changed and sends it, coalescing changes made while the sink is busy. */
  #emit(): void {
    this.#dirty = true;
    if (!this.#flushing) this.#flushing = this.#flush().finally(() => (this.#flushing = undefined));
  }

  async #flush(): Promise<void> {
    while (this.#dirty && !this.#abort?.signal.aborted && this.#sink) {
      this.#dirty = false;
      const pods = this.#snapshot();
      this.#stats.sets++;
      try {
        await this.#sink({ op: 'SET', pods, source: SourceName });
      } catch (err) {
        this.#logger.error({ err: asError(err) }, 'pod sink failed');
      }
    }
  }

  /** Copies of the valid pods: the merge may annotate what it stores, and must not touch ours. */
  #snapshot(): Pod[] {
    const pods: Pod[] = [];
    for (const [key, pod] of this.#store) {
      if (this.#isValid(key, pod)) pods.push(structuredClone(pod));
    }
    for (const key of this.#verdicts.keys()) if (!this.#store.has(key)) this.#verdicts.delete(key);
    return pods;
  }

  #isValid(key: string, pod: Pod): boolean {
    if (!this.#validate) return true;
    const rv = pod.metadata?.resourceVersion;
    const known = this.#verdicts.get(key);
    if (known && known.rv === rv && rv !== undefined) return known.ok;
    const error = validatePod(pod, { source: SourceName });
    this.#verdicts.set(key, { rv, ok: !error });
    if (error) {
      this.#report(error);
      this.#recorder.event(
        {
          kind: 'Pod',
          ...(pod.metadata?.namespace ? { namespace: pod.metadata.namespace } : {}),
          ...(pod.metadata?.name ? { name: pod.metadata.name } : {}),
          ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}),
        },
        'Warning',
        error.code,
        error.message,
      );
    }
    return !error;
  }

  #sourceError(code: string, message: string, cause?: unknown): PodSourceError {
    const server = this.#kubeConfig.getCurrentCluster()?.server ?? '';
    return new PodSourceError(SourceName, server, code, message, cause === undefined ? undefined : { cause });
  }

  #report(error: Error): void {
    this.#logger.warn({ err: error }, error.message);
    if (!this.#onError) return;
    try {
      this.#onError(error);
    } catch (err) {
      this.#logger.error({ err: asError(err) }, 'onError callback failed');
    }
  }
}
