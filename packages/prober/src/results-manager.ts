import type { Pod, ProbeResult, ProbeResultsReader, ProbeResultUpdate } from '@kubelet-kit/core';

/** Upstream's buffer of the updates channel. */
export const resultsUpdatesBuffer = 20;

/**
 * The results of one probe type by container ID (upstream `results.Manager`): the sync loop
 * reads liveness and startup from it, the status manager readiness and startup.
 * @public
 */
export interface ResultsManager extends ProbeResultsReader {
  /** The stored result of a container (`type://id`), or undefined when none. */
  get(containerId: string): ProbeResult | undefined;
  /** Stores a result; emits an update only when the stored value changed. */
  set(containerId: string, result: ProbeResult, pod: Pod): void;
  /** Forgets a container's result (no update is emitted). */
  remove(containerId: string): void;
  /**
   * The changes from now on, until `signal` aborts. Each iteration buffers up to 20 updates
   * that its consumer has not taken yet; when the buffer is full the oldest is dropped (see
   * {@link ResultsManager.droppedUpdates}). The stored results stay right, so a consumer
   * that also reads {@link ResultsManager.get} on its periodic sync loses no state.
   */
  updates(signal?: AbortSignal): AsyncIterable<ProbeResultUpdate>;
  /** Calls `listener` synchronously on every change; returns the unsubscribe function. */
  subscribe(listener: (update: ProbeResultUpdate) => void): () => void;
  /** How many updates were dropped from full `updates()` buffers so far. */
  readonly droppedUpdates: number;
}

/** Options of {@link DefaultResultsManager}. @public */
export interface ResultsManagerOptions {
  /** Undelivered updates kept per `updates()` iteration (default 20, as upstream). */
  readonly bufferSize?: number;
}

interface Queue {
  readonly items: ProbeResultUpdate[];
  wake: (() => void) | undefined;
}

/** The in-memory results manager. @public */
export class DefaultResultsManager implements ResultsManager {
  readonly #cache = new Map<string, ProbeResult>();
  readonly #listeners = new Set<(update: ProbeResultUpdate) => void>();
  readonly #bufferSize: number;
  #dropped = 0;

  constructor(options: ResultsManagerOptions = {}) {
    this.#bufferSize = Math.max(1, options.bufferSize ?? resultsUpdatesBuffer);
  }

  get droppedUpdates(): number {
    return this.#dropped;
  }

  get(containerId: string): ProbeResult | undefined {
    return this.#cache.get(containerId);
  }

  set(containerId: string, result: ProbeResult, pod: Pod): void {
    if (this.#cache.get(containerId) === result) return;
    this.#cache.set(containerId, result);
    const update: ProbeResultUpdate = { containerId, result, podUid: pod.metadata?.uid ?? '' };
    for (const listener of [...this.#listeners]) listener(update);
  }

  remove(containerId: string): void {
    this.#cache.delete(containerId);
  }

  subscribe(listener: (update: ProbeResultUpdate) => void): () => void {
    // A wrapper per call, so subscribing the same function twice gives two subscriptions.
    const entry = (u: ProbeResultUpdate) => listener(u);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  updates(signal?: AbortSignal): AsyncIterable<ProbeResultUpdate> {
    return {
      [Symbol.asyncIterator]: () => this.#iterate(signal),
    };
  }

  async *#iterate(signal?: AbortSignal): AsyncGenerator<ProbeResultUpdate> {
    if (signal?.aborted) return;
    const queue: Queue = { items: [], wake: undefined };
    const unsubscribe = this.subscribe((u) => {
      if (queue.items.length >= this.#bufferSize) {
        queue.items.shift();
        this.#dropped++;
      }
      queue.items.push(u);
      queue.wake?.();
    });
    const onAbort = () => queue.wake?.();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      while (!signal?.aborted) {
        const next = queue.items.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          queue.wake = resolve;
        });
        queue.wake = undefined;
      }
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
