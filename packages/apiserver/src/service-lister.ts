// The cluster's Services for container environment variables (upstream kubelet.go: an informer
// over all Services, headless ones left out by `spec.clusterIP!=None`, read through its lister
// and gated on its HasSynced). The reflector lists `/api/v1/services`, then watches from the
// list's resourceVersion; the Services are kept by namespace so lookups stay synchronous.

import {
  type Clock,
  type Logger,
  noopLogger,
  type OfflineStore,
  type Service,
  type ServiceLister,
} from '@kubelet-kit/core';
// Types only: the client is loaded when the lister starts (an agent without a kubeconfig never
// pays for it).
import type { KubeConfig } from '@kubernetes/client-node';
import { asError, reportError } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';
import { OfflineMirror } from './offline-mirror.js';
import { Reflector, withTypeMeta } from './reflector.js';

/**
 * Options of {@link ApiserverServiceLister}.
 *
 * @public
 */
export interface ApiserverServiceListerOptions {
  /** Where the API server is and how to authenticate (its current context), or how to load that. */
  readonly kubeConfig: KubeConfig | (() => Promise<KubeConfig>);
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
  /**
   * The offline store: the Services are written through to it, and when the first list fails
   * the ones stored by an earlier complete list are served (and count as synced), so containers
   * still get their service environment variables while the API server is away.
   */
  readonly store?: OfflineStore;
}

/**
 * Counters of an {@link ApiserverServiceLister}, for tests.
 *
 * @public
 */
export interface ApiserverServiceListerStats {
  readonly lists: number;
  readonly listErrors: number;
  readonly watches: number;
  readonly watchErrors: number;
  /** Relists caused by 410 Gone. */
  readonly expired: number;
}

/** Headless Services give no variables: upstream's kubelet does not even watch them. */
const fieldSelector = 'spec.clusterIP!=None';

function keyOf(obj: unknown): { namespace: string; name: string } | undefined {
  const meta = (obj as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
  if (typeof meta?.name !== 'string' || typeof meta.namespace !== 'string') return undefined;
  return { namespace: meta.namespace, name: meta.name };
}

/**
 * The Services of a Kubernetes API server, all namespaces, but headless ones. `start()` lists
 * them and then watches for changes; a failed list or watch is retried with backoff, a 410 Gone
 * relists. Until the first list has come back `hasSynced()` is false and every namespace is
 * empty, as upstream's lister before its informer has synced.
 *
 * @public
 */
export class ApiserverServiceLister implements ServiceLister {
  readonly #logger: Logger;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #reflector: Reflector;
  /** namespace → name → Service. */
  #byNamespace = new Map<string, Map<string, Service>>();
  #synced = false;
  #started = false;
  readonly #mirror: OfflineMirror<Service> | undefined;
  #listed = false;

  constructor(options: ApiserverServiceListerOptions) {
    const kc = options.kubeConfig;
    this.#logger = (options.logger ?? noopLogger).child({ component: 'services' });
    this.#onError = options.onError;
    if (options.store) this.#mirror = new OfflineMirror<Service>(options.store, 'Service', this.#logger);
    this.#reflector = new Reflector({
      kubeConfig: typeof kc === 'function' ? kc : async () => kc,
      list: async (kubeConfig, listOptions) => {
        const { CoreV1Api } = await loadClientNode();
        return kubeConfig
          .makeApiClient(CoreV1Api)
          .listServiceForAllNamespaces({ fieldSelector }, listOptions);
      },
      watchPath: '/api/v1/services',
      watchParams: { fieldSelector },
      onReplace: (items, resourceVersion) => {
        const byNamespace = new Map<string, Map<string, Service>>();
        for (const item of items) this.#put(byNamespace, item);
        this.#byNamespace = byNamespace;
        this.#synced = true;
        this.#listed = true;
        if (this.#mirror) {
          const all = new Map<string, Service>();
          for (const [ns, names] of byNamespace)
            for (const [name, svc] of names) all.set(`${ns}/${name}`, svc);
          this.#mirror.replaced(all);
        }
        this.#logger.info({ services: items.length, resourceVersion }, 'listed Services');
      },
      onEvent: (type, obj) => {
        if (type === 'DELETED') {
          const key = keyOf(obj);
          if (!key) return;
          const names = this.#byNamespace.get(key.namespace);
          names?.delete(key.name);
          if (names?.size === 0) this.#byNamespace.delete(key.namespace);
          this.#mirror?.deleted(`${key.namespace}/${key.name}`);
        } else {
          const svc = this.#put(this.#byNamespace, obj);
          if (svc) this.#mirror?.changed(`${svc.metadata?.namespace}/${svc.metadata?.name}`, svc);
        }
      },
      errors: {
        listFailed: (err) => {
          if (!this.#listed) void this.#serveStored();
          return new Error(`listing Services failed: ${asError(err).message}`, { cause: err });
        },
        watchStatus: (status) =>
          new Error(
            `Service watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
          ),
        watchFailed: (code, err) =>
          new Error(`Service watch failed: ${code ?? ''} ${asError(err).message}`.trim(), { cause: err }),
        stale: (ms) => new Error(`Service watch silent for ${ms}ms; restarting it`),
      },
      report: (error) => reportError(this.#logger, this.#onError, error),
      logger: this.#logger,
      tuning: options,
    });
  }

  /** The first list failed: the Services of the last stored list stand in until one succeeds. */
  async #serveStored(): Promise<void> {
    const stored = await this.#mirror?.load();
    if (!stored || this.#listed || this.#synced) return;
    const byNamespace = new Map<string, Map<string, Service>>();
    for (const svc of stored.values()) this.#put(byNamespace, svc);
    this.#byNamespace = byNamespace;
    this.#synced = true;
    this.#logger.warn({ services: stored.size }, 'API server unreachable: serving the stored Services');
  }

  #put(byNamespace: Map<string, Map<string, Service>>, obj: unknown): Service | undefined {
    const key = keyOf(obj);
    if (!key) return undefined;
    let names = byNamespace.get(key.namespace);
    if (!names) {
      names = new Map();
      byNamespace.set(key.namespace, names);
    }
    const svc = withTypeMeta<Service>(obj, 'v1', 'Service');
    names.set(key.name, svc);
    return svc;
  }

  /** The Services of the namespace; none before the first list. */
  list(namespace: string): readonly Service[] {
    return [...(this.#byNamespace.get(namespace)?.values() ?? [])];
  }

  /** Whether the first list has come back. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Counters since construction. */
  stats(): ApiserverServiceListerStats {
    const { lists, listErrors, watches, watchErrors, staleWatches, expired } = this.#reflector.stats;
    // A stale watch is a failed one here.
    return { lists, listErrors, watches, watchErrors: watchErrors + staleWatches, expired };
  }

  /** Starts listing and watching in the background; returns at once. */
  start(): void {
    if (this.#started) throw new Error('ApiserverServiceLister already started');
    this.#started = true;
    this.#reflector.start('service reflector failed');
  }

  /** Ends the watch and the loop; resolves once the loop is done. */
  async stop(): Promise<void> {
    await this.#reflector.stop();
    await this.#mirror?.flush();
  }
}
