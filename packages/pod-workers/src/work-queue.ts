import type { Clock } from '@kubelet-kit/core';

/**
 * Records when each pod is next due for a sync (upstream `pkg/kubelet/util/queue.WorkQueue`).
 * Pod workers never resync themselves: they enqueue, and the kubelet's sync tick asks for the
 * due UIDs and sends them a `sync` update.
 * @public
 */
export interface WorkQueue {
  /** Items whose due time has passed; they are removed from the queue. */
  getWork(): string[];
  /** Makes `uid` due after `delayMs`, replacing any earlier due time for it. */
  enqueue(uid: string, delayMs: number): void;
}

/** Options of {@link BasicWorkQueue}. @public */
export interface BasicWorkQueueOptions {
  readonly clock: Clock;
}

/** A {@link WorkQueue} over a map of due times read against the injected clock. @public */
export class BasicWorkQueue implements WorkQueue {
  readonly #clock: Clock;
  readonly #queue = new Map<string, number>();

  constructor(options: BasicWorkQueueOptions) {
    this.#clock = options.clock;
  }

  getWork(): string[] {
    const now = this.#clock.now();
    const due: string[] = [];
    for (const [uid, at] of this.#queue) {
      if (at <= now) due.push(uid);
    }
    for (const uid of due) this.#queue.delete(uid);
    return due;
  }

  enqueue(uid: string, delayMs: number): void {
    this.#queue.set(uid, this.#clock.now() + Math.max(0, delayMs));
  }

  /** When `uid` is due (epoch ms), or undefined when it is not queued. For tests and debugging. */
  dueTime(uid: string): number | undefined {
    return this.#queue.get(uid);
  }

  /** The number of queued items. */
  get size(): number {
    return this.#queue.size;
  }
}
