import type { FakeClock } from './fake-clock.js';

/** Options of {@link advanceUntil}. @public */
export interface AdvanceUntilOptions {
  /** Fake milliseconds per step; 0 only lets due timers and promise continuations run. Default 100. */
  readonly step?: number;
  /** Steps before giving up. Default 1000. */
  readonly limit?: number;
  /**
   * Awaited after every step, for work no fake clock drives. Default {@link settleRealIO}: the
   * code under test may wait on real file or socket I/O between its timers.
   */
  readonly settle?: () => Promise<void>;
}

/**
 * Moves the fake clock on in `step`s until `condition` returns a value other than `undefined`,
 * `null` or `false`, and resolves with that value. A condition that throws (an `expect`) counts as
 * not yet; after `limit` steps the last such error is thrown, or an error saying the condition was
 * not reached. The condition is checked before the first step, so a condition that already holds
 * moves no time.
 * @public
 */
export async function advanceUntil<T>(
  clock: FakeClock,
  condition: () => T | Promise<T>,
  options: AdvanceUntilOptions = {},
): Promise<Exclude<T, undefined | null | false>> {
  const step = options.step ?? 100;
  const limit = options.limit ?? 1000;
  const settle = options.settle ?? settleRealIO;
  let lastError: unknown;
  for (let i = 0; ; i++) {
    try {
      const value = await condition();
      if (value !== undefined && value !== null && value !== false)
        return value as Exclude<T, undefined | null | false>;
    } catch (error) {
      lastError = error;
    }
    if (i >= limit) break;
    await clock.tick(step);
    await settle();
  }
  throw lastError ?? new Error(`condition not reached after ${limit} steps of ${step} ms`);
}

/**
 * Whether file-system requests are out on libuv's thread pool, or a child process runs. A
 * `FileHandle` being closed shows as `CloseReq`, not `FSReq*`: missing it let fake time run on
 * between a write's close and the next read.
 */
function realIOPending(): boolean {
  return process
    .getActiveResourcesInfo()
    .some((r) => r.startsWith('FSReq') || r === 'CloseReq' || r === 'ProcessWrap');
}

/**
 * Yields a few event-loop turns, and more while file-system requests or child processes are
 * out (bounded): fake time running ahead of real I/O on a loaded machine would skip states a
 * test means to see. Never a timed wait.
 * @public
 */
export async function settleRealIO(): Promise<void> {
  for (let i = 0; i < 5 || (realIOPending() && i < 100_000); i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
