const noop = (): void => {};

/**
 * The cancellation of one pod's syncs (upstream's per-worker context). The `AbortSignal` is made
 * only when someone asks for it: with many pods, eager controllers and abort listeners cost
 * more than the syncs themselves.
 */
export class SyncCancellation {
  #aborted = false;
  #reason: unknown;
  #controller: AbortController | undefined;
  #callbacks: Set<() => void> | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const callbacks = this.#callbacks;
    this.#callbacks = undefined;
    if (callbacks) for (const callback of callbacks) callback();
  }

  /** Calls `callback` once on abort (at once if aborted); returns its remover. */
  onAbort(callback: () => void): () => void {
    if (this.#aborted) {
      callback();
      return noop;
    }
    this.#callbacks ??= new Set();
    const callbacks = this.#callbacks;
    callbacks.add(callback);
    return () => callbacks.delete(callback);
  }

  /** Resolves or rejects like `promise`, or rejects with the reason once aborted first. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.#aborted) return Promise.reject(this.#reason);
    // Not Promise.race on a long-lived promise: each race would leave a reaction on it.
    return new Promise<T>((resolve, reject) => {
      const remove = this.onAbort(() => reject(this.#reason));
      promise.then(
        (value) => {
          remove();
          resolve(value);
        },
        (err: unknown) => {
          remove();
          reject(err);
        },
      );
    });
  }
}
