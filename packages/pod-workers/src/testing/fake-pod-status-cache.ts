import type { CachedPodStatus, Clock, PodStatusCache, RuntimePodStatus } from '@kubelet-kit/core';

/** Options of {@link FakePodStatusCache}. @public */
export interface FakePodStatusCacheOptions {
  readonly clock: Clock;
  /**
   * When true (the default) `getNewerThan` answers at once, as upstream's fake cache does. When
   * false it waits, like the PLEG's cache, until {@link FakePodStatusCache.set} or
   * {@link FakePodStatusCache.updateTime} makes a status at least as new as asked for.
   */
  readonly autoRefresh?: boolean;
}

/** One `getNewerThan` call. @public */
export interface GetNewerThanRequest {
  readonly uid: string;
  readonly minTime: number;
}

interface Waiter {
  readonly uid: string;
  readonly minTime: number;
  readonly resolve: (value: CachedPodStatus) => void;
}

/** A runtime pod status cache driven by the test (upstream `kubecontainer` fake cache). @public */
export class FakePodStatusCache implements PodStatusCache {
  readonly #clock: Clock;
  readonly #entries = new Map<string, CachedPodStatus>();
  #waiters: Waiter[] = [];
  /** When the whole cache was last refreshed; undefined before the first relist. */
  #timestamp: number | undefined;
  autoRefresh: boolean;
  /** Every `getNewerThan` call, in order. */
  readonly requests: GetNewerThanRequest[] = [];

  constructor(options: FakePodStatusCacheOptions) {
    this.#clock = options.clock;
    this.autoRefresh = options.autoRefresh ?? true;
  }

  /** Stores a status (or an error) read now. */
  set(uid: string, status: RuntimePodStatus | undefined, error?: Error): void {
    this.#entries.set(uid, { status, error, modified: this.#clock.now() });
    this.#wake();
  }

  /** Marks the whole cache as refreshed at `time` (default now), like a PLEG relist. */
  updateTime(time = this.#clock.now()): void {
    this.#timestamp = Math.max(this.#timestamp ?? time, time);
    this.#wake();
  }

  /** Calls of `getNewerThan` not yet answered. */
  get waiting(): number {
    return this.#waiters.length;
  }

  get(uid: string): CachedPodStatus {
    return this.#entries.get(uid) ?? { status: undefined, error: undefined, modified: 0 };
  }

  getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<CachedPodStatus> {
    this.requests.push({ uid, minTime });
    if (this.autoRefresh || this.#satisfied(uid, minTime)) return Promise.resolve(this.get(uid));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        uid,
        minTime,
        resolve: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
      };
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  #satisfied(uid: string, minTime: number): boolean {
    const entry = this.#entries.get(uid);
    if (entry && entry.modified >= minTime) return true;
    return this.#timestamp !== undefined && this.#timestamp >= minTime;
  }

  #wake(): void {
    const ready = this.#waiters.filter((w) => this.#satisfied(w.uid, w.minTime));
    this.#waiters = this.#waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(this.get(w.uid));
  }
}
