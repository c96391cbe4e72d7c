// RuntimeClasses from the API server (upstream `pkg/kubelet/runtimeclass/runtimeclass_manager.go`:
// an informer over `node.k8s.io/v1` RuntimeClasses, read through its lister by name). The
// reflector lists `/apis/node.k8s.io/v1/runtimeclasses`, then watches from the list's
// resourceVersion, and the classes are kept in a map so lookups stay synchronous.

import {
  type Clock,
  type Logger,
  noopLogger,
  type RuntimeClass,
  type RuntimeClassGetter,
} from '@kubelet-kit/core';
// Types only: the client is loaded when the getter starts (an agent without a kubeconfig never
// pays for it).
import type { KubeConfig } from '@kubernetes/client-node';
import { asError, reportError } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';
import { Reflector, withTypeMeta } from './reflector.js';

/**
 * Options of {@link ApiserverRuntimeClassList}.
 *
 * @public
 */
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

/**
 * Counters of an {@link ApiserverRuntimeClassList}, for tests.
 *
 * @public
 */
export interface ApiserverRuntimeClassListStats {
  readonly lists: number;
  readonly listErrors: number;
  readonly watches: number;
  readonly watchErrors: number;
  /** Relists caused by 410 Gone. */
  readonly expired: number;
}

function nameOf(obj: unknown): string | undefined {
  const meta = (obj as { metadata?: { name?: unknown } } | null)?.metadata;
  return typeof meta?.name === 'string' ? meta.name : undefined;
}

function asRuntimeClass(obj: unknown): RuntimeClass {
  return withTypeMeta<RuntimeClass>(obj, 'node.k8s.io/v1', 'RuntimeClass');
}

/**
 * The RuntimeClasses of a Kubernetes API server, by name. `start()` lists them and then watches
 * for changes; a failed list or watch is retried with backoff, a 410 Gone relists. Until the
 * first list has come back every lookup returns undefined, as upstream's lister before its
 * informer has synced: a pod naming a class then fails its sandbox with "not found" and is
 * retried with the pod worker's backoff.
 *
 * @public
 */
export class ApiserverRuntimeClassList implements RuntimeClassGetter {
  readonly #fallback: RuntimeClassGetter | undefined;
  readonly #logger: Logger;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #reflector: Reflector;
  #byName = new Map<string, RuntimeClass>();
  #synced = false;
  #started = false;

  constructor(options: ApiserverRuntimeClassListOptions) {
    const kc = options.kubeConfig;
    this.#fallback = options.fallback;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'runtimeclasses' });
    this.#onError = options.onError;
    this.#reflector = new Reflector({
      kubeConfig: typeof kc === 'function' ? kc : async () => kc,
      list: async (kubeConfig, listOptions) => {
        const { NodeV1Api } = await loadClientNode();
        return kubeConfig.makeApiClient(NodeV1Api).listRuntimeClass({}, listOptions);
      },
      watchPath: '/apis/node.k8s.io/v1/runtimeclasses',
      onReplace: (items, resourceVersion) => {
        const byName = new Map<string, RuntimeClass>();
        for (const item of items) {
          const name = nameOf(item);
          if (name) byName.set(name, asRuntimeClass(item));
        }
        this.#byName = byName;
        this.#synced = true;
        this.#logger.info({ runtimeClasses: this.names, resourceVersion }, 'listed RuntimeClasses');
      },
      onEvent: (type, obj) => {
        const name = nameOf(obj);
        if (!name) return;
        if (type === 'DELETED') this.#byName.delete(name);
        else this.#byName.set(name, asRuntimeClass(obj));
      },
      errors: {
        listFailed: (err) =>
          new Error(`listing RuntimeClasses failed: ${asError(err).message}`, { cause: err }),
        watchStatus: (status) =>
          new Error(
            `RuntimeClass watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
          ),
        watchFailed: (code, err) =>
          new Error(`RuntimeClass watch failed: ${code ?? ''} ${asError(err).message}`.trim(), {
            cause: err,
          }),
        stale: (ms) => new Error(`RuntimeClass watch silent for ${ms}ms; restarting it`),
      },
      report: (error) => reportError(this.#logger, this.#onError, error),
      logger: this.#logger,
      tuning: options,
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
    const { lists, listErrors, watches, watchErrors, staleWatches, expired } = this.#reflector.stats;
    // A stale watch is a failed one here.
    return { lists, listErrors, watches, watchErrors: watchErrors + staleWatches, expired };
  }

  /** Starts listing and watching in the background; returns at once. */
  start(): void {
    if (this.#started) throw new Error('ApiserverRuntimeClassList already started');
    this.#started = true;
    this.#reflector.start('runtime class reflector failed');
  }

  /** Ends the watch and the loop; resolves once the loop is done. */
  stop(): Promise<void> {
    return this.#reflector.stop();
  }
}
