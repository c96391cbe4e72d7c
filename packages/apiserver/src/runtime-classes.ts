// RuntimeClasses from the API server (upstream `pkg/kubelet/runtimeclass/runtimeclass_manager.go`:
// an informer over `node.k8s.io/v1` RuntimeClasses, read through its lister by name). A small
// reflector lists `/apis/node.k8s.io/v1/runtimeclasses`, then watches from the list's
// resourceVersion, and keeps the classes in a map so lookups stay synchronous.

import {
  Backoff,
  type Clock,
  type Logger,
  noopLogger,
  RealClock,
  type RuntimeClass,
  type RuntimeClassGetter,
  type Timer,
} from '@kubelet-kit/core';
// Types only: the client is loaded when the getter starts (an agent without a kubeconfig never
// pays for it).
import type {
  KubeConfig,
  ObservableMiddleware,
  RequestContext,
  ResponseContext,
} from '@kubernetes/client-node';

/** Options of {@link ApiserverRuntimeClassList}. */
export interface ApiserverRuntimeClassListOptions {
  /** Where the API server is and how to authenticate (its current context), or how to load that. */
  readonly kubeConfig: KubeConfig | (() => Promise<KubeConfig>);
  /**
   * Classes for names the API server lacks (`--runtime-classes` beside a kubeconfig). The API
   * server's class wins when both have a name. Consulted only once the first list is in.
   */
  readonly fallback?: RuntimeClassGetter;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Called with every failed list or watch. */
  readonly onError?: (error: Error) => void;
  /** A watch silent (no event, no bookmark) for this long is restarted, ms (default 120 000). */
  readonly watchStalenessTimeoutMs?: number;
  /** The server ends each watch after a random `timeoutSeconds` in [min, 2 × min) (default 300). */
  readonly minWatchTimeoutSeconds?: number;
  /** Retry delays after failures: 800 ms doubling to 30 s by default, as client-go's reflector. */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** A random source in [0, 1), for watch timeouts and backoff jitter. */
  readonly random?: () => number;
}

/** Counters of an {@link ApiserverRuntimeClassList}, for tests. */
export interface ApiserverRuntimeClassListStats {
  readonly lists: number;
  readonly listErrors: number;
  readonly watches: number;
  readonly watchErrors: number;
  /** Relists caused by 410 Gone. */
  readonly expired: number;
}

type WatchOutcome = 'closed' | 'expired' | 'failed' | 'aborted';

const path = '/apis/node.k8s.io/v1/runtimeclasses';

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function nameOf(obj: unknown): string | undefined {
  const meta = (obj as { metadata?: { name?: unknown } } | null)?.metadata;
  return typeof meta?.name === 'string' ? meta.name : undefined;
}

function rvOf(obj: unknown): string | undefined {
  const meta = (obj as { metadata?: { resourceVersion?: unknown } } | null)?.metadata;
  return typeof meta?.resourceVersion === 'string' ? meta.resourceVersion : undefined;
}

function asRuntimeClass(obj: unknown): RuntimeClass {
  // List items come without apiVersion/kind; watch objects carry them.
  return { ...(obj as RuntimeClass), apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass' };
}

function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { statusCode?: unknown; code?: unknown };
  if (typeof e.statusCode === 'number') return e.statusCode;
  return typeof e.code === 'number' ? e.code : undefined;
}

/**
 * The RuntimeClasses of a Kubernetes API server, by name. `start()` lists them and then watches
 * for changes; a failed list or watch is retried with backoff, a 410 Gone relists. Until the
 * first list has come back every lookup returns undefined, as upstream's lister before its
 * informer has synced: a pod naming a class then fails its sandbox with "not found" and is
 * retried with the pod worker's backoff.
 */
export class ApiserverRuntimeClassList implements RuntimeClassGetter {
  readonly #kubeConfig: () => Promise<KubeConfig>;
  readonly #fallback: RuntimeClassGetter | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #stalenessMs: number;
  readonly #minWatchTimeoutSeconds: number;
  readonly #random: () => number;
  readonly #backoff: Backoff;
  #byName = new Map<string, RuntimeClass>();
  #synced = false;
  #resourceVersion = '';
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #stats = { lists: 0, listErrors: 0, watches: 0, watchErrors: 0, expired: 0 };

  constructor(options: ApiserverRuntimeClassListOptions) {
    const kc = options.kubeConfig;
    this.#kubeConfig = typeof kc === 'function' ? kc : async () => kc;
    this.#fallback = options.fallback;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'runtimeclasses' });
    this.#onError = options.onError;
    this.#stalenessMs = options.watchStalenessTimeoutMs ?? 120_000;
    this.#minWatchTimeoutSeconds = options.minWatchTimeoutSeconds ?? 300;
    this.#random = options.random ?? Math.random;
    this.#backoff = new Backoff({
      clock: this.#clock,
      initialMs: options.initialBackoffMs ?? 800,
      maxMs: options.maxBackoffMs ?? 30_000,
      maxJitterFactor: 1,
      random: this.#random,
      hasExpired: (eventTime, lastUpdate) => eventTime - lastUpdate > 2 * 60_000,
    });
  }

  /** The served class of that name (else the fallback's); undefined before the first list. */
  getRuntimeClass(name: string): RuntimeClass | undefined {
    if (!this.#synced) return undefined;
    return this.#byName.get(name) ?? this.#fallback?.getRuntimeClass(name);
  }

  /** Whether the first list has come back. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The names the API server serves, sorted. */
  get names(): readonly string[] {
    return [...this.#byName.keys()].sort();
  }

  /** Counters since construction. */
  stats(): ApiserverRuntimeClassListStats {
    return { ...this.#stats };
  }

  /** Starts listing and watching in the background; returns at once. */
  start(): void {
    if (this.#abort) throw new Error('ApiserverRuntimeClassList already started');
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) this.#logger.error({ err: asError(err) }, 'runtime class reflector failed');
    });
  }

  /** Ends the watch and the loop; resolves once the loop is done. */
  async stop(): Promise<void> {
    this.#abort?.abort(new Error('runtime class reflector stopped'));
    await this.#loop;
  }

  async #run(signal: AbortSignal): Promise<void> {
    const kc = await this.#kubeConfig();
    let needList = true;
    let expiredInARow = 0;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.#list(kc, signal);
          needList = false;
        } catch (err) {
          if (signal.aborted) return;
          this.#stats.listErrors++;
          this.#report(new Error(`listing RuntimeClasses failed: ${asError(err).message}`, { cause: err }));
          await this.#waitBackoff(signal);
          continue;
        }
      }
      const outcome = await this.#watchOnce(kc, signal);
      expiredInARow = outcome === 'expired' ? expiredInARow + 1 : 0;
      if (outcome === 'aborted') return;
      if (outcome === 'expired') {
        this.#stats.expired++;
        this.#resourceVersion = '';
        needList = true;
        if (expiredInARow > 1) await this.#waitBackoff(signal);
      } else if (outcome === 'failed') {
        this.#stats.watchErrors++;
        await this.#waitBackoff(signal);
      }
    }
  }

  async #waitBackoff(signal: AbortSignal): Promise<void> {
    this.#backoff.next('reflector', this.#clock.now());
    try {
      await this.#clock.sleep(this.#backoff.get('reflector'), signal);
    } catch {
      // Aborted: the loop checks the signal.
    }
  }

  async #list(kc: KubeConfig, signal: AbortSignal): Promise<void> {
    const { NodeV1Api, Observable, ResponseContext } = await import('@kubernetes/client-node');
    const api = kc.makeApiClient(NodeV1Api);
    let raw: string | undefined;
    // Keep the wire JSON (the generated client would turn timestamps into Dates).
    const middleware: ObservableMiddleware = {
      pre: (ctx: RequestContext) => {
        ctx.setSignal(signal);
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
    await api.listRuntimeClass({}, { middleware: [middleware], middlewareMergeStrategy: 'append' });
    if (signal.aborted) return;
    const list = JSON.parse(raw ?? '{}') as { metadata?: { resourceVersion?: string }; items?: unknown[] };
    const byName = new Map<string, RuntimeClass>();
    for (const item of list.items ?? []) {
      const name = nameOf(item);
      if (name) byName.set(name, asRuntimeClass(item));
    }
    this.#byName = byName;
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.#synced = true;
    this.#stats.lists++;
    this.#logger.info(
      { runtimeClasses: this.names, resourceVersion: this.#resourceVersion },
      'listed RuntimeClasses',
    );
  }

  #watchOnce(kc: KubeConfig, signal: AbortSignal): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      const started = this.#clock.now();
      let events = 0;
      let finished = false;
      let controller: AbortController | undefined;
      let staleTimer: Timer | undefined;
      const finish = (outcome: WatchOutcome, error?: Error) => {
        if (finished) return;
        finished = true;
        staleTimer?.cancel();
        signal.removeEventListener('abort', onAbort);
        controller?.abort();
        if (error) this.#report(error);
        resolve(outcome);
      };
      const onAbort = () => finish('aborted');
      const armWatchdog = () => {
        staleTimer?.cancel();
        staleTimer = this.#clock.setTimeout(
          () =>
            finish(
              'failed',
              new Error(`RuntimeClass watch silent for ${this.#stalenessMs}ms; restarting it`),
            ),
          this.#stalenessMs,
        );
      };
      signal.addEventListener('abort', onAbort, { once: true });
      armWatchdog();

      const onEvent = (type: string, obj: unknown) => {
        if (finished) return;
        events++;
        armWatchdog();
        if (type === 'ERROR') {
          const status = (obj ?? {}) as { code?: number; reason?: string; message?: string };
          const error = new Error(
            `RuntimeClass watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
          );
          finish(status.code === 410 ? 'expired' : 'failed', error);
          return;
        }
        const rv = rvOf(obj);
        if (rv) this.#resourceVersion = rv;
        const name = nameOf(obj);
        if (!name) return;
        if (type === 'ADDED' || type === 'MODIFIED') this.#byName.set(name, asRuntimeClass(obj));
        else if (type === 'DELETED') this.#byName.delete(name);
      };
      const onDone = (err: unknown) => {
        if (finished) return;
        if (err === null || err === undefined) {
          // A watch that ends at once with nothing in it is a failure in disguise: back off.
          finish(events === 0 && this.#clock.since(started) < 1_000 ? 'failed' : 'closed');
          return;
        }
        const code = statusCodeOf(err);
        const error = new Error(`RuntimeClass watch failed: ${code ?? ''} ${asError(err).message}`.trim(), {
          cause: err,
        });
        finish(code === 410 ? 'expired' : 'failed', error);
      };

      this.#stats.watches++;
      const timeoutSeconds = Math.floor(this.#minWatchTimeoutSeconds * (1 + this.#random()));
      void import('@kubernetes/client-node').then(({ Watch }) =>
        new Watch(kc)
          .watch(
            path,
            { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
            onEvent,
            onDone,
          )
          .then(
            (c) => {
              controller = c;
              if (finished) c.abort();
            },
            (err: unknown) => onDone(err ?? new Error('watch failed')),
          ),
      );
    });
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
