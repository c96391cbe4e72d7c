import type { Clock, ConfigMap, Logger, ObjectGetter, Secret } from '@kubelet-kit/core';
import { noopLogger, RealClock } from '@kubelet-kit/core';
// Types only: the client is loaded on the first read (it costs tens of MiB to load).
import type { CoreV1Api, KubeConfig, V1ObjectMeta } from '@kubernetes/client-node';
import { httpStatusOf } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';

/**
 * Options of {@link ApiserverObjectGetter}.
 *
 * @public
 */
export interface ApiserverObjectGetterOptions {
  readonly kubeConfig: KubeConfig;
  /** How long a read (or a not-found) is reused (ms); default 10 s, as upstream's TTL cache strategy. */
  readonly ttlMs?: number;
  /** Asked on every read, wins over `ttlMs` when it answers (e.g. the Node's TTL annotation). */
  readonly getTtlMs?: () => number | undefined;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

interface CacheEntry {
  readonly at: number;
  readonly value: Promise<ConfigMap | Secret | undefined>;
}

/**
 * The named fields of a client model object as plain API JSON, leaving out unset ones; of the
 * metadata, only what volumes and env read (no timestamps, which the client makes Dates).
 */
function plainFields(fields: { metadata?: V1ObjectMeta } & Record<string, unknown>): Record<string, unknown> {
  const { metadata, ...rest } = fields;
  const { name, namespace, uid, resourceVersion } = metadata ?? {};
  const out: Record<string, unknown> = { metadata: definedOnly({ name, namespace, uid, resourceVersion }) };
  return { ...out, ...definedOnly(rest) };
}

function definedOnly(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== null));
}

/**
 * Reads ConfigMaps and Secrets from the API server with a short TTL cache (upstream's
 * `TTLCacheStrategy` of the configmap and secret managers). Concurrent reads of one object
 * share a request; a 404 is `undefined`; other errors are thrown and not cached.
 *
 * @public
 */
export class ApiserverObjectGetter implements ObjectGetter {
  readonly #kubeConfig: KubeConfig;
  #api: Promise<CoreV1Api> | undefined;
  readonly #ttlMs: number;
  readonly #getTtlMs: (() => number | undefined) | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #cache = new Map<string, CacheEntry>();

  constructor(options: ApiserverObjectGetterOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#getTtlMs = options.getTtlMs;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'apiserver-object-getter' });
  }

  #client(): Promise<CoreV1Api> {
    this.#api ??= loadClientNode().then((m) => this.#kubeConfig.makeApiClient(m.CoreV1Api));
    return this.#api;
  }

  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined> {
    return this.#get(`ConfigMap/${namespace}/${name}`, signal, async (api) => {
      const { metadata, data, binaryData, immutable } = await api.readNamespacedConfigMap({
        name,
        namespace,
      });
      return {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        ...plainFields({ metadata, data, binaryData, immutable }),
      } as ConfigMap;
    });
  }

  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined> {
    return this.#get(`Secret/${namespace}/${name}`, signal, async (api) => {
      const { metadata, data, type, immutable } = await api.readNamespacedSecret({ name, namespace });
      return {
        apiVersion: 'v1',
        kind: 'Secret',
        ...plainFields({ metadata, data, type, immutable }),
      } as Secret;
    });
  }

  /** Drops cached objects, e.g. when a watch says they changed. */
  invalidate(): void {
    this.#cache.clear();
  }

  #get<T extends ConfigMap | Secret>(
    key: string,
    signal: AbortSignal | undefined,
    read: (api: CoreV1Api) => Promise<T>,
  ): Promise<T | undefined> {
    signal?.throwIfAborted();
    const cached = this.#cache.get(key);
    const ttlMs = this.#getTtlMs?.() ?? this.#ttlMs;
    if (cached && this.#clock.since(cached.at) < ttlMs) return cached.value as Promise<T | undefined>;
    const value = this.#client()
      .then(read)
      .catch((err: unknown) => {
        if (httpStatusOf(err) === 404) return undefined;
        this.#cache.delete(key);
        this.#logger.warn({ object: key, err: String(err) }, 'cannot read object from the API server');
        throw err;
      });
    this.#cache.set(key, { at: this.#clock.now(), value });
    return value;
  }
}
