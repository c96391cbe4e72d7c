import type { Clock } from '@kubelet-kit/core';

/** Entries not refreshed for this long are dropped (upstream's cache cleanup, 10 minutes). */
const cacheTtlMs = 10 * 60 * 1000;

interface Sample {
  readonly timestampNs: number;
  readonly usageCoreNanoSeconds: number;
  readonly seenAtMs: number;
}

/**
 * usageNanoCores from two samples of a cumulative CPU counter, as upstream's cri stats
 * provider's `getAndUpdateContainerUsageNanoCores`: a runtime reports only the counter (containerd
 * leaves usage_nano_cores unset), so the rate is (Δ usage) / (Δ time) against the last sample kept
 * per container, sandbox or the node.
 *
 * @internal
 */
export class CpuUsageCache {
  readonly #samples = new Map<string, Sample>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * The rate since the cached sample; `update` replaces that sample (the summary does, the
   * resource metrics' cpu-and-memory path does not, as upstream). Undefined on the first sample,
   * when time did not advance, or when the counter went back (a restarted container).
   */
  usageNanoCores(
    id: string,
    timestampNs: number,
    usageCoreNanoSeconds: number,
    update: boolean,
  ): number | undefined {
    const cached = this.#samples.get(id);
    if (update) {
      this.#samples.set(id, { timestampNs, usageCoreNanoSeconds, seenAtMs: this.#clock.now() });
    }
    if (!cached) return undefined;
    const intervalNs = timestampNs - cached.timestampNs;
    if (intervalNs <= 0) return undefined;
    const delta = usageCoreNanoSeconds - cached.usageCoreNanoSeconds;
    if (delta < 0) return undefined;
    return Math.round((delta * 1e9) / intervalNs);
  }

  /** Drops samples of ids no longer seen for the cache period. */
  cleanup(): void {
    const now = this.#clock.now();
    for (const [id, s] of this.#samples) if (now - s.seenAtMs > cacheTtlMs) this.#samples.delete(id);
  }

  get size(): number {
    return this.#samples.size;
  }
}
