import type { CachedPodStatus, PodStatusCache, RuntimePodStatus } from '@kubelet-kit/core';

interface Subscriber {
  readonly minTime: number;
  readonly resolve: (entry: CachedPodStatus) => void;
}

function emptyEntry(uid: string): CachedPodStatus {
  const status: RuntimePodStatus = {
    id: uid,
    name: '',
    namespace: '',
    ips: [],
    containerStatuses: [],
    sandboxStatuses: [],
    timestamp: 0,
  };
  return { status, error: undefined, modified: 0 };
}

/**
 * The runtime pod status cache the PLEG keeps, core's {@link @kubelet-kit/core#PodStatusCache}
 * (upstream the `cache` behind `kubecontainer.Cache`): the last status read for each pod, when
 * it was read, and a global timestamp saying "every pod's entry is at least this fresh". Pod
 * workers wait on {@link RuntimePodStatusCache.getNewerThan} so they never act on a status read
 * before their own last change.
 *
 * Entries are returned as stored (not copied); treat them as read-only.
 * @public
 */
export class RuntimePodStatusCache implements PodStatusCache {
  readonly #pods = new Map<string, CachedPodStatus>();
  readonly #subscribers = new Map<string, Subscriber[]>();
  /** Held pods, with the global timestamp at the moment of the hold (the last one that covers them). */
  readonly #held = new Map<string, number | undefined>();
  #timestamp: number | undefined;

  /** The entry for `uid`; for an unknown pod an empty status (only its ID set) and no error. */
  get(uid: string): CachedPodStatus {
    return this.#pods.get(uid) ?? emptyEntry(uid);
  }

  /**
   * Resolves with the entry once it was read strictly after `minTime`, or once the global
   * timestamp is past `minTime` (then the entry, or an empty one, is as fresh as it gets). As
   * upstream, a later `set`/`updateTime` at exactly `minTime` also releases a waiter.
   * Rejects with the signal's reason when aborted first.
   */
  getNewerThan(uid: string, minTime: number, signal?: AbortSignal): Promise<CachedPodStatus> {
    const ready = this.#getIfNewerThan(uid, minTime);
    if (ready) return Promise.resolve(ready);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<CachedPodStatus>((resolve, reject) => {
      const onAbort = () => {
        this.#unsubscribe(uid, subscriber);
        reject(signal?.reason);
      };
      const subscriber: Subscriber = {
        minTime,
        resolve: (entry) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(entry);
        },
      };
      const list = this.#subscribers.get(uid);
      if (list) list.push(subscriber);
      else this.#subscribers.set(uid, [subscriber]);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Stores what the runtime said about the pod at `timestamp` (a status, or the error reading
   * it) and wakes the waiters it satisfies. Returns true (the entry was stored).
   */
  set(
    uid: string,
    status: RuntimePodStatus | undefined,
    error: Error | undefined,
    timestamp: number,
  ): boolean {
    this.#pods.set(uid, { status, error, modified: timestamp });
    this.#held.delete(uid);
    this.#notify(uid, timestamp);
    return true;
  }

  /**
   * As {@link RuntimePodStatusCache.set}, but only when the pod has no entry or an entry read
   * before `timestamp` (upstream's `Set` with EventedPLEG on): runtime events can arrive after a
   * relist stored a newer read. Returns whether the entry was stored.
   */
  setIfNewer(
    uid: string,
    status: RuntimePodStatus | undefined,
    error: Error | undefined,
    timestamp: number,
  ): boolean {
    const cached = this.#pods.get(uid);
    if (cached && cached.modified > timestamp) return false;
    return this.set(uid, status, error, timestamp);
  }

  /** Forgets the pod (and a hold on it); a later `get` returns the empty entry. */
  delete(uid: string): void {
    this.#pods.delete(uid);
    this.#held.delete(uid);
  }

  /**
   * Stops the global timestamp from vouching for this pod: while somebody changes its containers
   * and a relist skips it, a later {@link RuntimePodStatusCache.updateTime} says nothing about it, and
   * only its own next {@link RuntimePodStatusCache.set} (or {@link RuntimePodStatusCache.release}) releases
   * its waiters. Timestamps from before the hold still count.
   */
  hold(uid: string): void {
    if (!this.#held.has(uid)) this.#held.set(uid, this.#timestamp);
  }

  /** Ends a {@link RuntimePodStatusCache.hold} without a new entry; the global timestamp counts again. */
  release(uid: string): void {
    if (!this.#held.delete(uid)) return;
    if (this.#timestamp !== undefined) this.#notify(uid, this.#timestamp);
  }

  /** Whether the pod is held. */
  isHeld(uid: string): boolean {
    return this.#held.has(uid);
  }

  /**
   * Declares every entry fresh as of `timestamp` (the PLEG calls it at the end of each relist)
   * and wakes every waiter whose `minTime` it reaches.
   */
  updateTime(timestamp: number): void {
    this.#timestamp = timestamp;
    for (const uid of [...this.#subscribers.keys()]) {
      if (!this.#held.has(uid)) this.#notify(uid, timestamp);
    }
  }

  /** The global timestamp, undefined before the first {@link RuntimePodStatusCache.updateTime}. */
  get timestamp(): number | undefined {
    return this.#timestamp;
  }

  /** How many `getNewerThan` calls are waiting (for tests and leak checks). */
  get waiting(): number {
    let n = 0;
    for (const list of this.#subscribers.values()) n += list.length;
    return n;
  }

  #getIfNewerThan(uid: string, minTime: number): CachedPodStatus | undefined {
    const entry = this.#pods.get(uid);
    const global = this.#held.has(uid) ? this.#held.get(uid) : this.#timestamp;
    const globalIsNewer = global !== undefined && global > minTime;
    if (!entry) return globalIsNewer ? emptyEntry(uid) : undefined;
    return entry.modified > minTime || globalIsNewer ? entry : undefined;
  }

  #notify(uid: string, timestamp: number): void {
    const list = this.#subscribers.get(uid);
    if (!list) return;
    const keep: Subscriber[] = [];
    const due: Subscriber[] = [];
    for (const subscriber of list) (timestamp < subscriber.minTime ? keep : due).push(subscriber);
    if (keep.length > 0) this.#subscribers.set(uid, keep);
    else this.#subscribers.delete(uid);
    for (const subscriber of due) subscriber.resolve(this.get(uid));
  }

  #unsubscribe(uid: string, subscriber: Subscriber): void {
    const list = this.#subscribers.get(uid);
    if (!list) return;
    const rest = list.filter((s) => s !== subscriber);
    if (rest.length > 0) this.#subscribers.set(uid, rest);
    else this.#subscribers.delete(uid);
  }
}
