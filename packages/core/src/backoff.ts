import type { Clock } from './clock.js';

interface BackoffEntry {
  backoffMs: number;
  lastUpdate: number;
}

/** Options of {@link Backoff}. @public */
export interface BackoffOptions {
  readonly clock: Clock;
  /** The first delay, ms. */
  readonly initialMs: number;
  /** The cap, ms. */
  readonly maxMs: number;
  /** Adds up to `factor × delay` of random jitter to each delay; 0 (the default) adds none. */
  readonly maxJitterFactor?: number;
  /**
   * When an entry is stale and starts over at `initialMs`. The default is client-go's: more than
   * 2 × maxMs since its last update. The kubelet's crash-loop backoff uses 600 s instead.
   */
  readonly hasExpired?: (eventTime: number, lastUpdate: number, maxMs: number) => boolean;
  /** A random source in [0, 1), for jitter; defaults to Math.random. */
  readonly random?: () => number;
}

/**
 * Per-key exponential backoff with a cap, the semantics of client-go's `flowcontrol.Backoff`:
 * `next` doubles a key's delay (starting over once the entry expired), the `isInBackOff…`
 * checks compare against the current delay, and `gc` drops expired keys.
 * @public
 */
export class Backoff {
  readonly #clock: Clock;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  readonly #hasExpired: (eventTime: number, lastUpdate: number, maxMs: number) => boolean;
  readonly #random: () => number;
  readonly #entries = new Map<string, BackoffEntry>();

  constructor(options: BackoffOptions) {
    this.#clock = options.clock;
    this.#initialMs = options.initialMs;
    this.#maxMs = options.maxMs;
    this.#jitter = Math.max(0, options.maxJitterFactor ?? 0);
    this.#hasExpired =
      options.hasExpired ?? ((eventTime, lastUpdate, maxMs) => eventTime - lastUpdate > 2 * maxMs);
    this.#random = options.random ?? Math.random;
  }

  /** The key's current delay, ms; 0 when it has none. */
  get(id: string): number {
    return this.#entries.get(id)?.backoffMs ?? 0;
  }

  /** Records one more failure at `eventTime` and lengthens the key's delay. */
  next(id: string, eventTime: number): void {
    const entry = this.#entries.get(id);
    if (!entry || this.#hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) {
      this.#entries.set(id, { backoffMs: this.#withJitter(this.#initialMs), lastUpdate: this.#clock.now() });
      return;
    }
    entry.backoffMs = Math.min(2 * entry.backoffMs + this.#jitterOf(entry.backoffMs), this.#maxMs);
    entry.lastUpdate = this.#clock.now();
  }

  /** True while `now - eventTime` is shorter than the key's delay (containers: eventTime = FinishedAt). */
  isInBackOffSince(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (!entry || this.#hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) return false;
    return this.#clock.since(eventTime) < entry.backoffMs;
  }

  /** True while `eventTime - lastUpdate` is shorter than the key's delay (images: eventTime = now). */
  isInBackOffSinceUpdate(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (!entry || this.#hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) return false;
    return eventTime - entry.lastUpdate < entry.backoffMs;
  }

  /** Forgets the key. */
  reset(id: string): void {
    this.#entries.delete(id);
  }

  /** Drops every expired key. */
  gc(): void {
    const now = this.#clock.now();
    for (const [id, entry] of this.#entries) {
      if (this.#hasExpired(now, entry.lastUpdate, this.#maxMs)) this.#entries.delete(id);
    }
  }

  /** The number of keys held. */
  get size(): number {
    return this.#entries.size;
  }

  #jitterOf(delay: number): number {
    return this.#jitter > 0 ? this.#random() * this.#jitter * delay : 0;
  }

  #withJitter(delay: number): number {
    return delay + this.#jitterOf(delay);
  }
}

/** A delay of `base` plus up to `maxFactor × base` of random jitter (upstream `wait.Jitter`). @internal */
export function jitter(baseMs: number, maxFactor: number, random: () => number = Math.random): number {
  const factor = maxFactor <= 0 ? 1 : maxFactor;
  return baseMs + random() * factor * baseMs;
}
