import type { Clock, ConfigMap, Logger, ObjectGetter, Secret } from '@kubelet-kit/core';
import { noopLogger, RealClock } from '@kubelet-kit/core';
// Types only: the client is loaded on the first read (it costs tens of MiB to load).
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** Options of {@link ApiserverObjectGetter}. */
export interface ApiserverObjectGetterOptions {
  readonly kubeConfig: KubeConfig;
  /** How long a read (or a not-found) is reused (ms); default 10 s, as upstream's TTL cache strategy. */
  readonly ttlMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

interface CacheEntry {
  readonly at: number;
  readonly value: Promise<ConfigMap | Secret | undefined>;
}

function statusCode(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'number' ? code : undefined;
  }
  return undefined;
}

function plainMeta(
  meta: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } | undefined,
) {
  return {
    ...(meta?.name !== undefined ? { name: meta.name } : {}),
    ...(meta?.namespace !== undefined ? { namespace: meta.namespace } : {}),
    ...(meta?.uid !== undefined ? { uid: meta.uid } : {}),
    ...(meta?.resourceVersion !== undefined ? { resourceVersion: meta.resourceVersion } : {}),
  };
}

/**
 * Reads ConfigMaps and Secrets from the API server with a short TTL cache (upstream's
 * `TTLCacheStrategy` of the configmap and secret managers). Concurrent reads of one object
 * share a request; a 404 is `undefined`; other errors are thrown and not cached.
 */
export class ApiserverObjectGetter implements ObjectGetter {
  readonly #kubeConfig: KubeConfig;
  #api: Promise<CoreV1Api> | undefined;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #cache = new Map<string, CacheEntry>();

  constructor(options: ApiserverObjectGetterOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'apiserver-object-getter' });
  }

  #client(): Promise<CoreV1Api> {
    this.#api ??= import('@kubernetes/client-node').then((m) => this.#kubeConfig.makeApiClient(m.CoreV1Api));
    return this.#api;
  }

  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined> {
    return this.#get(`ConfigMap/${namespace}/${name}`, signal, async () => {
      const cm = await (await this.#client()).readNamespacedConfigMap({ name, namespace });
      const out: ConfigMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: plainMeta(cm.metadata),
        ...(cm.data ? { data: cm.data } : {}),
        ...(cm.binaryData ? { binaryData: cm.binaryData } : {}),
        ...(cm.immutable !== undefined ? { immutable: cm.immutable } : {}),
      };
      return out;
    }) as Promise<ConfigMap | undefined>;
  }

  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined> {
    return this.#get(`Secret/${namespace}/${name}`, signal, async () => {
      const s = await (await this.#client()).readNamespacedSecret({ name, namespace });
      const out: Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: plainMeta(s.metadata),
        ...(s.data ? { data: s.data } : {}),
        ...(s.type ? { type: s.type } : {}),
        ...(s.immutable !== undefined ? { immutable: s.immutable } : {}),
      };
      return out;
    }) as Promise<Secret | undefined>;
  }

  /** Drops cached objects, e.g. when a watch says they changed. */
  invalidate(): void {
    this.#cache.clear();
  }

  #get(
    key: string,
    signal: AbortSignal | undefined,
    read: () => Promise<ConfigMap | Secret>,
  ): Promise<ConfigMap | Secret | undefined> {
    signal?.throwIfAborted();
    const cached = this.#cache.get(key);
    if (cached && this.#clock.since(cached.at) < this.#ttlMs) return cached.value;
    const value = read().catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      this.#cache.delete(key);
      this.#logger.warn({ object: key, err: String(err) }, 'cannot read object from the API server');
      throw err;
    });
    this.#cache.set(key, { at: this.#clock.now(), value });
    return value;
  }
}
