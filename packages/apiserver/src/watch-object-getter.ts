// ConfigMaps and Secrets from per-object watches (upstream pkg/kubelet/util/manager
// watch_based_manager.go, the kubelet's default `Watch` change detection strategy): each object
// read gets a reflector listing and watching `metadata.name=<name>` in its namespace, and reads
// are served from what it last saw. Upstream counts references from registered pods; the
// ObjectGetter contract has no registration, so a watch stops when the object has not been read
// for `maxIdleTimeMs` (upstream's other stop condition, 5 × the resync period). An object seen
// immutable stops its watch and is served as last seen. While a watch cannot list (refused,
// unreachable, not yet answered), reads fall back to GETs cached for a TTL (upstream's
// TTLCacheStrategy, 1 min or the Node's `node.alpha.kubernetes.io/ttl`).

import {
  type Clock,
  type ConfigMap,
  type Logger,
  type Node,
  noopLogger,
  type ObjectGetter,
  type OfflineStore,
  RealClock,
  type Secret,
  type Timer,
} from '@kubelet-kit/core';
// Types only: the client is loaded when the first watch starts.
import type { KubeConfig } from '@kubernetes/client-node';
import { asError, isUnreachable, reportError } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';
import { ApiserverObjectGetter } from './object-getter.js';
import { Reflector, type ReflectorTuning, withTypeMeta } from './reflector.js';

/**
 * Upstream's TTL of the GET cache when the Node gives none (`defaultTTL`).
 *
 * @public
 */
export const DEFAULT_OBJECT_TTL_MS = 60_000;
/**
 * The Node annotation the control plane sets to tell kubelets how long to cache objects, seconds.
 *
 * @public
 */
export const OBJECT_TTL_ANNOTATION = 'node.alpha.kubernetes.io/ttl';
/**
 * A watch not read for this long stops: 5 × the kubelet's 1 min resync period, as upstream.
 *
 * @public
 */
export const DEFAULT_MAX_IDLE_TIME_MS = 5 * 60_000;
/** Upstream's `minIdleTime`: idle watches are looked for every minute, so less means nothing. */
const minIdleTimeMs = 60_000;
/** How often idle watches are stopped (upstream `startRecycleIdleWatch` runs every minute). */
const recyclePeriodMs = 60_000;

/**
 * The Node's object TTL (`node.alpha.kubernetes.io/ttl`, whole seconds) in ms, or undefined when
 * it has none or an invalid one (upstream `getTTL`).
 *
 * @public
 */
export function objectTtlFromNode(node: Node | undefined): number | undefined {
  const value = node?.metadata?.annotations?.[OBJECT_TTL_ANNOTATION];
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return Number(value) * 1000;
}

/**
 * Options of {@link WatchingObjectGetter}.
 *
 * @public
 */
export interface WatchingObjectGetterOptions {
  /** Where the API server is and how to authenticate, or how to load that. */
  readonly kubeConfig: KubeConfig | (() => Promise<KubeConfig>);
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Called with every failed list or watch. */
  readonly onError?: (error: Error) => void;
  /** A watch not read for this long stops (ms, default 5 min, at least 1 min). */
  readonly maxIdleTimeMs?: number;
  /**
   * How long a first read waits for its watch's list before it falls back to a GET, ms
   * (default 1 000, upstream's wait for the reflector to sync).
   */
  readonly syncTimeoutMs?: number;
  /**
   * The TTL of the fallback GET cache, asked on every fallback read (e.g. from the Node's
   * annotation, see {@link objectTtlFromNode}); undefined answers mean 1 min.
   */
  readonly getTtlMs?: () => number | undefined;
  /** A watch silent (no event, no bookmark) for this long is restarted, ms (default 120 000). */
  readonly watchStalenessTimeoutMs?: number;
  /** The server ends each watch after a random `timeoutSeconds` in [min, 2 × min) (default 300). */
  readonly minWatchTimeoutSeconds?: number;
  /** Retry delays after failures: 800 ms doubling to 30 s by default, as client-go's reflector. */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  readonly random?: () => number;
  /**
   * The offline store: every object read is kept there (and removed once the server says it is
   * gone), and a read the API server cannot answer (unreachable, 429, 5xx) is served from it.
   */
  readonly store?: OfflineStore;
}

/**
 * Counters of a {@link WatchingObjectGetter}, for tests and metrics.
 *
 * @public
 */
export interface WatchingObjectGetterStats {
  /** Objects watched now. */
  readonly watching: number;
  /** Watches started (including restarts after idleness). */
  readonly watchesStarted: number;
  /** Watches stopped because the object was seen immutable. */
  readonly stoppedImmutable: number;
  /** Watches stopped for idleness. */
  readonly stoppedIdle: number;
  /** Reads served by the fallback GET cache. */
  readonly fallbackReads: number;
  /** Reads the API server could not answer, served from the offline store. */
  readonly storeReads: number;
}

type Kind = 'ConfigMap' | 'Secret';

interface Item {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
  readonly reflector: Reflector;
  /** What the watch last saw; undefined: no such object. */
  object: ConfigMap | Secret | undefined;
  /** The watch's first list came back (upstream `cacheStore.initialized`). */
  synced: boolean;
  /** Lists that failed since the watch started. */
  listFailures: number;
  immutable: boolean;
  stopped: boolean;
  lastAccess: number;
  /** First reads waiting for the list (or its failure). */
  readonly waiters: Set<() => void>;
}

function isImmutable(obj: ConfigMap | Secret | undefined): boolean {
  return obj?.immutable === true;
}

/**
 * ConfigMaps and Secrets for volumes and env, from one watch per object read, with a TTL-cached
 * GET as the fallback while a watch has not listed. `start()` begins the once-a-minute stop of
 * idle watches; `stop()` ends every watch.
 *
 * @public
 */
export class WatchingObjectGetter implements ObjectGetter {
  readonly #kubeConfig: () => Promise<KubeConfig>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #maxIdleTimeMs: number;
  readonly #syncTimeoutMs: number;
  readonly #getTtlMs: () => number | undefined;
  readonly #tuning: ReflectorTuning;
  readonly #items = new Map<string, Item>();
  #fallback: Promise<ApiserverObjectGetter> | undefined;
  /** Watches being stopped (idle or immutable), awaited by `stop()`. */
  readonly #stopping = new Set<Promise<void>>();
  #recycleTimer: Timer | undefined;
  #watchesStarted = 0;
  #stoppedImmutable = 0;
  #stoppedIdle = 0;
  #fallbackReads = 0;
  #storeReads = 0;
  readonly #store: OfflineStore | undefined;
  /** What the offline store holds of each object read: its resourceVersion, null for none. */
  readonly #stored = new Map<string, string | null>();

  constructor(options: WatchingObjectGetterOptions) {
    this.#store = options.store;
    const kc = options.kubeConfig;
    let loaded: Promise<KubeConfig> | undefined;
    this.#kubeConfig = typeof kc === 'function' ? () => (loaded ??= kc()) : async () => kc;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'object-watches' });
    this.#onError = options.onError;
    this.#maxIdleTimeMs = Math.max(options.maxIdleTimeMs ?? DEFAULT_MAX_IDLE_TIME_MS, minIdleTimeMs);
    this.#syncTimeoutMs = options.syncTimeoutMs ?? 1_000;
    const getTtlMs = options.getTtlMs;
    this.#getTtlMs = () => getTtlMs?.() ?? DEFAULT_OBJECT_TTL_MS;
    this.#tuning = { ...options, clock: this.#clock };
  }

  /** Starts the periodic stop of idle watches. */
  start(): void {
    this.#recycleTimer ??= this.#clock.setInterval(() => this.recycleIdleWatches(), recyclePeriodMs);
  }

  /** Ends every watch; resolves once their loops are done. */
  async stop(): Promise<void> {
    this.#recycleTimer?.cancel();
    this.#recycleTimer = undefined;
    const items = [...this.#items.values()];
    this.#items.clear();
    for (const item of items) this.#stopItem(item);
    await Promise.all([...this.#stopping]);
  }

  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined> {
    return this.#getThroughStore('ConfigMap', namespace, name, signal) as Promise<ConfigMap | undefined>;
  }

  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined> {
    return this.#getThroughStore('Secret', namespace, name, signal) as Promise<Secret | undefined>;
  }

  /** A read written through to the offline store, and answered from it while the server is away. */
  async #getThroughStore(
    kind: Kind,
    namespace: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<ConfigMap | Secret | undefined> {
    const store = this.#store;
    if (!store) return this.#get(kind, namespace, name, signal);
    const key = `${namespace}/${name}`;
    let object: ConfigMap | Secret | undefined;
    try {
      object = await this.#get(kind, namespace, name, signal);
    } catch (err) {
      if (signal?.aborted || !isUnreachable(err)) throw err;
      const stored = await store.get<ConfigMap | Secret>(kind, key).catch(() => undefined);
      if (!stored) throw err;
      this.#storeReads++;
      this.#logger.debug({ kind, namespace, name }, 'API server unreachable; serving the stored object');
      return stored;
    }
    const cacheKey = `${kind}/${key}`;
    const rv = object ? (object.metadata?.resourceVersion ?? '') : null;
    if (this.#stored.get(cacheKey) !== rv || rv === '') {
      this.#stored.set(cacheKey, rv);
      const write = object ? store.put(kind, key, object) : store.delete(kind, key);
      write.catch((err: unknown) => {
        this.#stored.delete(cacheKey);
        this.#logger.warn(
          { kind, namespace, name, err: asError(err).message },
          'offline store: write failed',
        );
      });
    }
    return object;
  }

  stats(): WatchingObjectGetterStats {
    return {
      watching: [...this.#items.values()].filter((i) => !i.stopped).length,
      watchesStarted: this.#watchesStarted,
      stoppedImmutable: this.#stoppedImmutable,
      stoppedIdle: this.#stoppedIdle,
      fallbackReads: this.#fallbackReads,
      storeReads: this.#storeReads,
    };
  }

  /**
   * Stops the watches of objects not read for `maxIdleTimeMs` (upstream `stopIfIdle`: only
   * once listed, so a list in progress on a loaded API server is not thrown away).
   */
  recycleIdleWatches(): void {
    const now = this.#clock.now();
    for (const [key, item] of this.#items) {
      if (!item.synced || now <= item.lastAccess + this.#maxIdleTimeMs) continue;
      this.#items.delete(key);
      if (!item.stopped) this.#stoppedIdle++;
      this.#stopItem(item);
      this.#logger.debug(
        { kind: item.kind, namespace: item.namespace, name: item.name },
        'object not read for a long time; stopped watching it',
      );
    }
  }

  async #get(
    kind: Kind,
    namespace: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<ConfigMap | Secret | undefined> {
    signal?.throwIfAborted();
    // A kubeconfig that cannot be loaded fails the read, rather than a watch retrying forever.
    await this.#kubeConfig();
    const key = `${kind}/${namespace}/${name}`;
    let item = this.#items.get(key);
    if (!item) {
      item = this.#newItem(kind, namespace, name);
      this.#items.set(key, item);
    }
    // Recorded whether the read succeeds or not, so a slow read does not lose its watch.
    item.lastAccess = this.#clock.now();
    if (!item.synced) await this.#waitForSync(item, signal);
    if (!item.synced) {
      this.#fallbackReads++;
      const fallback = await this.#fallbackGetter();
      return kind === 'ConfigMap'
        ? fallback.getConfigMap(namespace, name, signal)
        : fallback.getSecret(namespace, name, signal);
    }
    const object = item.object;
    if (isImmutable(object) && !item.stopped) {
      // It cannot change any more: no watch needed (upstream stops the reflector here too).
      item.immutable = true;
      this.#stoppedImmutable++;
      this.#stopItem(item);
      this.#logger.debug({ kind, namespace, name }, 'object is immutable; stopped watching it');
    }
    return object;
  }

  #newItem(kind: Kind, namespace: string, name: string): Item {
    const resource = kind === 'ConfigMap' ? 'configmaps' : 'secrets';
    const fieldSelector = `metadata.name=${name}`;
    const what = `${kind} ${namespace}/${name}`;
    const wake = (item: Item) => {
      for (const w of [...item.waiters]) w();
    };
    const item: Item = {
      kind,
      namespace,
      name,
      object: undefined,
      synced: false,
      listFailures: 0,
      immutable: false,
      stopped: false,
      lastAccess: this.#clock.now(),
      waiters: new Set(),
      reflector: new Reflector({
        kubeConfig: this.#kubeConfig,
        list: async (kubeConfig, listOptions) => {
          const { CoreV1Api } = await loadClientNode();
          const api = kubeConfig.makeApiClient(CoreV1Api);
          return kind === 'ConfigMap'
            ? api.listNamespacedConfigMap({ namespace, fieldSelector }, listOptions)
            : api.listNamespacedSecret({ namespace, fieldSelector }, listOptions);
        },
        watchPath: `/api/v1/namespaces/${encodeURIComponent(namespace)}/${resource}`,
        watchParams: { fieldSelector },
        onReplace: (items) => {
          // The server applied the selector; an older one may not: pick by name.
          const found = items.find((o) => (o as ConfigMap).metadata?.name === name);
          item.object = found ? withTypeMeta<ConfigMap | Secret>(found, 'v1', kind) : undefined;
          item.synced = true;
          wake(item);
        },
        onEvent: (type, obj) => {
          if ((obj as ConfigMap | null)?.metadata?.name !== name) return;
          item.object = type === 'DELETED' ? undefined : withTypeMeta<ConfigMap | Secret>(obj, 'v1', kind);
        },
        errors: {
          listFailed: (err) => {
            item.listFailures++;
            wake(item);
            return new Error(`listing ${what} failed: ${asError(err).message}`, { cause: err });
          },
          watchStatus: (status) =>
            new Error(
              `${what} watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
            ),
          watchFailed: (code, err) =>
            new Error(`${what} watch failed: ${code ?? ''} ${asError(err).message}`.trim(), { cause: err }),
          stale: (ms) => new Error(`${what} watch silent for ${ms}ms; restarting it`),
        },
        report: (error) => reportError(this.#logger, this.#onError, error),
        logger: this.#logger,
        tuning: this.#tuning,
      }),
    };
    this.#watchesStarted++;
    item.reflector.start(`${what} reflector failed`);
    return item;
  }

  /** Resolves once the item listed, its list failed, `syncTimeoutMs` passed, or the signal aborts. */
  #waitForSync(item: Item, signal: AbortSignal | undefined): Promise<void> {
    if (item.listFailures > 0) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const cleanUp = () => {
        timer.cancel();
        item.waiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
      };
      const done = () => {
        cleanUp();
        resolve();
      };
      const onAbort = () => {
        cleanUp();
        reject(signal?.reason);
      };
      const timer = this.#clock.setTimeout(done, this.#syncTimeoutMs);
      item.waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ends the item's watch in the background; `stop()` waits for it. */
  #stopItem(item: Item): void {
    if (item.stopped) return;
    item.stopped = true;
    const stopping = item.reflector.stop().finally(() => this.#stopping.delete(stopping));
    this.#stopping.add(stopping);
  }

  #fallbackGetter(): Promise<ApiserverObjectGetter> {
    this.#fallback ??= this.#kubeConfig().then(
      (kubeConfig) =>
        new ApiserverObjectGetter({
          kubeConfig,
          clock: this.#clock,
          logger: this.#logger,
          getTtlMs: this.#getTtlMs,
        }),
    );
    return this.#fallback;
  }
}
