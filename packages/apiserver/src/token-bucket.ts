import type { Clock } from '@kubelet-kit/core';

/**
 * A token bucket (client-go `flowcontrol` token bucket limiters): `burst` tokens, refilled at `qps`
 * a second, starting full. Time from the injected clock.
 *
 * @internal
 */
export class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(qps: number, burst: number, clock: Clock) {
    this.#qps = qps;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  /** Takes a token if there is one (upstream `TryAccept`). */
  tryAccept(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Milliseconds until a token is there; 0 when one is. */
  delayMs(): number {
    this.#refill();
    if (this.#tokens >= 1) return 0;
    return Math.ceil(((1 - this.#tokens) / this.#qps) * 1000);
  }

  /** Waits for a token and takes it (upstream `Accept`/`Wait`); rejects when `signal` aborts. */
  async accept(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const delay = this.delayMs();
      if (delay === 0 && this.tryAccept()) return;
      await this.#clock.sleep(Math.max(1, delay), signal);
    }
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last);
    this.#last = now;
    this.#tokens = Math.min(this.#burst, this.#tokens + (elapsed / 1000) * this.#qps);
  }
}
