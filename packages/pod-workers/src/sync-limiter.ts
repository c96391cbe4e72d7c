/** Bounds how many syncs run at once; waiters are served in arrival order. */
export class SyncLimiter {
  readonly #max: number;
  #running = 0;
  readonly #waiters: { grant: () => void; signal: AbortSignal }[] = [];

  constructor(max: number) {
    this.#max = max;
  }

  /** Resolves with a release function once a slot is free; rejects if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.#running < this.#max) {
      this.#running++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        signal,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          this.#running++;
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Syncs running now. */
  get running(): number {
    return this.#running;
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      this.#waiters.shift()?.grant();
    };
  }
}
