/**
 * A bounded FIFO with a Go channel's non-blocking send: what the PLEG hands its events through.
 * A send to a full channel fails instead of waiting, so a slow consumer can never stall a
 * relist; the caller counts the dropped event.
 * @public
 */
export class EventChannel<T> implements AsyncIterable<T> {
  readonly #capacity: number;
  readonly #buffer: T[] = [];
  readonly #receivers: Array<(value: T | undefined) => void> = [];
  #closed = false;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) throw new RangeError(`bad capacity ${capacity}`);
    this.#capacity = capacity;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Values waiting to be received. */
  get length(): number {
    return this.#buffer.length;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Delivers `value` to a waiting receiver or buffers it; false when full or closed. */
  trySend(value: T): boolean {
    if (this.#closed) return false;
    const receiver = this.#receivers.shift();
    if (receiver) {
      receiver(value);
      return true;
    }
    if (this.#buffer.length >= this.#capacity) return false;
    this.#buffer.push(value);
    return true;
  }

  /** The oldest buffered value, or undefined when none waits (never blocks). */
  tryReceive(): T | undefined {
    return this.#buffer.shift();
  }

  /**
   * The next value, waiting for one if needed; undefined once the channel is closed and drained.
   * Rejects with the signal's reason when aborted first.
   */
  receive(signal?: AbortSignal): Promise<T | undefined> {
    if (this.#buffer.length > 0) return Promise.resolve(this.#buffer.shift());
    if (this.#closed) return Promise.resolve(undefined);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T | undefined>((resolve, reject) => {
      const receiver = (value: T | undefined) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const onAbort = () => {
        const at = this.#receivers.indexOf(receiver);
        if (at >= 0) this.#receivers.splice(at, 1);
        reject(signal?.reason);
      };
      this.#receivers.push(receiver);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ends iteration for every receiver once the buffer is drained; later sends fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const receiver of this.#receivers.splice(0)) receiver(undefined);
  }

  /** Iterates until the channel closes or `signal` aborts (then it ends without throwing). */
  async *iterate(signal?: AbortSignal): AsyncGenerator<T, void, undefined> {
    while (!signal?.aborted) {
      let value: T | undefined;
      try {
        value = await this.receive(signal);
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      if (value === undefined) return;
      yield value;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.iterate();
  }
}
