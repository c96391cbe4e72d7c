// Service account tokens for pods, cached and refreshed (upstream pkg/kubelet/token
// token_manager.go): one TokenRequest per (account, audiences, lifetime, pod), reused until 80 %
// of its lifetime or 24 h have passed; while a refresh fails the old token is served until it
// expires; expired tokens are dropped every minute; a pod's tokens go with its volumes.

import {
  type Clock,
  type Logger,
  noopLogger,
  type OfflineStore,
  RealClock,
  type Timer,
  type TokenGetter,
  type TokenRequest,
  type TokenRequestSpec,
} from '@kubelet-kit/core';
import { asError } from './api-errors.js';
import type { RequestServiceAccountToken } from './token-request.js';

/**
 * A token is refreshed once it is this old, whatever its lifetime (upstream `maxTTL`).
 *
 * @public
 */
export const TOKEN_MAX_TTL_MS = 24 * 60 * 60_000;
/**
 * How often expired tokens are dropped (upstream `gcPeriod`).
 *
 * @public
 */
export const TOKEN_GC_PERIOD_MS = 60_000;
/**
 * Up to this much earlier than due, at random, so pods' refreshes spread (upstream `maxJitter`).
 *
 * @public
 */
export const TOKEN_MAX_JITTER_MS = 10_000;

/**
 * Options of {@link TokenManager}.
 *
 * @public
 */
export interface TokenManagerOptions {
  /** The TokenRequest call, e.g. `serviceAccountTokenRequester(coreV1Api)`. */
  readonly requestToken: RequestServiceAccountToken;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** A random source in [0, 1), for the refresh jitter. */
  readonly random?: () => number;
  /**
   * The offline store: every token issued is kept (kind `ServiceAccountToken`, files 0600) and
   * the unexpired ones are loaded back at start, so after a restart without the API server a
   * pod's projected token is served until it expires (the refresh failing meanwhile, as upstream
   * serves a cached token whose refresh fails).
   */
  readonly store?: OfflineStore;
}

/**
 * The cache key (upstream `keyFunc`): account, namespace, audiences, lifetime and the bound
 * object. Safe to log: no token in it.
 */
function keyOf(namespace: string, name: string, spec: TokenRequestSpec): string {
  const ref = spec.boundObjectRef;
  return [
    JSON.stringify(name),
    JSON.stringify(namespace),
    JSON.stringify(spec.audiences),
    String(spec.expirationSeconds),
    JSON.stringify([ref.kind, ref.apiVersion, ref.name, ref.uid]),
  ].join('/');
}

/**
 * Upstream's token `Manager`: implements core's `TokenGetter` for the volume manager.
 * `start()` begins the once-a-minute clean-up of expired tokens.
 *
 * @public
 */
export class TokenManager implements TokenGetter {
  readonly #requestToken: RequestServiceAccountToken;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #random: () => number;
  readonly #cache = new Map<string, TokenRequest>();
  /** Requests running, by key: concurrent set-ups of one volume share one POST. */
  readonly #inFlight = new Map<
    string,
    { readonly request: Promise<TokenRequest>; readonly generation: number }
  >();
  #gcTimer: Timer | undefined;
  /** Bumped by each deletion; `#deletions` holds a pod's last, so a request it outran is not cached. */
  #generation = 0;
  readonly #deletions = new Map<string, number>();
  readonly #store: OfflineStore | undefined;
  #loaded: Promise<void> | undefined;

  constructor(options: TokenManagerOptions) {
    this.#store = options.store;
    this.#requestToken = options.requestToken;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'token-manager' });
    this.#random = options.random ?? Math.random;
  }

  /** Starts the periodic clean-up of expired tokens. */
  start(): void {
    this.#gcTimer ??= this.#clock.setInterval(() => this.cleanup(), TOKEN_GC_PERIOD_MS);
    this.#loaded ??= this.#load();
  }

  /** Loads the stored tokens that have not expired; drops the rest from the store. */
  async #load(): Promise<void> {
    const store = this.#store;
    if (!store) return;
    try {
      for (const { key, value } of await store.list<TokenRequest>('ServiceAccountToken')) {
        if (!value?.status?.token || !value.spec?.boundObjectRef || this.#expired(value)) {
          this.#forget(key);
        } else if (!this.#cache.has(key)) {
          this.#cache.set(key, value);
        }
      }
    } catch (err) {
      this.#logger.warn({ err: asError(err).message }, 'offline store: loading the stored tokens failed');
    }
  }

  #keep(key: string, tr: TokenRequest): void {
    this.#store
      ?.put('ServiceAccountToken', key, tr)
      .catch((err: unknown) =>
        this.#logger.warn(
          { cacheKey: key, err: asError(err).message },
          'offline store: keeping a token failed',
        ),
      );
  }

  #forget(key: string): void {
    this.#store
      ?.delete('ServiceAccountToken', key)
      .catch((err: unknown) =>
        this.#logger.warn(
          { cacheKey: key, err: asError(err).message },
          'offline store: dropping a token failed',
        ),
      );
  }

  stop(): void {
    this.#gcTimer?.cancel();
    this.#gcTimer = undefined;
  }

  /** How many tokens are cached (for tests and metrics). */
  get size(): number {
    return this.#cache.size;
  }

  async getServiceAccountToken(
    namespace: string,
    name: string,
    spec: TokenRequestSpec,
    signal?: AbortSignal,
  ): Promise<TokenRequest> {
    const key = keyOf(namespace, name, spec);
    if (this.#loaded) await this.#loaded;
    const cached = this.#cache.get(key);
    if (cached && !this.requiresRefresh(cached)) return cached;
    let running = this.#inFlight.get(key);
    if (!running) {
      const request = this.#requestToken(namespace, name, spec, signal).finally(() =>
        this.#inFlight.delete(key),
      );
      running = { request, generation: this.#generation };
      this.#inFlight.set(key, running);
    }
    let fresh: TokenRequest;
    try {
      fresh = await running.request;
    } catch (err) {
      const message = asError(err).message;
      // The cache entry may have been dropped meanwhile (pod deleted): read it again.
      const current = this.#cache.get(key);
      if (!current) throw new Error(`failed to fetch token: ${message}`, { cause: err });
      if (this.#expired(current)) {
        throw new Error(`token ${key} expired and refresh failed: ${message}`, { cause: err });
      }
      this.#logger.error({ cacheKey: key, err: message }, "couldn't update token; serving the cached one");
      return current;
    }
    // A pod deleted while its request ran must not come back into the cache.
    if ((this.#deletions.get(spec.boundObjectRef.uid) ?? -1) <= running.generation) {
      if (this.#cache.get(key) !== fresh) this.#keep(key, fresh);
      this.#cache.set(key, fresh);
    }
    return fresh;
  }

  deleteServiceAccountToken(podUid: string): void {
    for (const [key, tr] of this.#cache) {
      if (tr.spec.boundObjectRef.uid !== podUid) continue;
      this.#cache.delete(key);
      this.#forget(key);
    }
    this.#deletions.set(podUid, ++this.#generation);
  }

  /** Drops expired tokens (upstream `cleanup`, every {@link TOKEN_GC_PERIOD_MS}). */
  cleanup(): void {
    for (const [key, tr] of this.#cache) {
      if (!this.#expired(tr)) continue;
      this.#cache.delete(key);
      this.#forget(key);
    }
    if (this.#inFlight.size === 0) this.#deletions.clear();
  }

  #expired(tr: TokenRequest): boolean {
    return this.#clock.now() > Date.parse(tr.status.expirationTimestamp);
  }

  /**
   * Upstream `requiresRefresh`: older than 24 h, or within the last 20 % of its lifetime (both
   * less a random jitter of up to 10 s), or issued in the future (the clock went back).
   */
  requiresRefresh(tr: TokenRequest): boolean {
    const now = this.#clock.now();
    const exp = Date.parse(tr.status.expirationTimestamp);
    if (Number.isNaN(exp)) return true;
    const ttlMs = tr.spec.expirationSeconds * 1000;
    const issuedAt = exp - ttlMs;
    // Whole seconds, as upstream's jitter.
    const jitterMs = Math.floor(this.#random() * (TOKEN_MAX_JITTER_MS / 1000)) * 1000;
    if (now > issuedAt + TOKEN_MAX_TTL_MS - jitterMs) return true;
    if (now > exp - Math.floor((tr.spec.expirationSeconds * 20) / 100) * 1000 - jitterMs) return true;
    return now < issuedAt;
  }
}
