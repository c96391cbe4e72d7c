import type { SyncCancellation } from './sync-cancellation.js';

interface Waiter {
  cancelled: boolean;
  readonly grant: () => void;
}

/** Bounds how many syncs run at once; waiters are served in arrival order. */
export class SyncLimiter {
  readonly #max: number;
  #running = 0;
  // A queue with a moving head (shift() on a long array is linear); emptied when drained.
  #waiters: Waiter[] = [];
  #head = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Resolves with a release function once a slot is free; rejects if `cancel` aborts first. */
  acquire(cancel: SyncCancellation): Promise<() => void> {
    if (this.#running < this.#max && !cancel.aborted) {
      this.#running++;
      return Promise.resolve(this.#releaser());
    }
    return cancel.race(
      new Promise<() => void>((resolve) => {
        const waiter: Waiter = {
          cancelled: false,
          grant: () => {
            removeAbort();
            this.#running++;
            resolve(this.#releaser());
          },
        };
        // A cancelled waiter keeps its place but is skipped when its turn comes.
        const removeAbort = cancel.onAbort(() => {
          waiter.cancelled = true;
        });
        this.#waiters.push(waiter);
      }),
    );
  }

  /** Syncs running now. */
  get running(): number {
    return this.#running;
  }

  #next(): Waiter | undefined {
    while (this.#head < this.#waiters.length) {
      const waiter = this.#waiters[this.#head++] as Waiter;
      if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {
        this.#waiters = this.#waiters.slice(this.#head);
        this.#head = 0;
      }
      if (!waiter.cancelled) return waiter;
    }
    this.#waiters = [];
    this.#head = 0;
    return undefined;
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      this.#next()?.grant();
    };
  }
}
