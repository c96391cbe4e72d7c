import type { FakeClock } from '@kubelet-kit/core/testing';

/** Whether file-system requests are still out on libuv's thread pool, or a child process runs. */
function realIOPending(): boolean {
  return process.getActiveResourcesInfo().some((r) => r.startsWith('FSReq') || r === 'ProcessWrap');
}

/**
 * Waits for `check` to return a value while driving the fake clock: gRPC calls to the
 * in-memory CRI take real I/O turns, so fake time steps alternate with event-loop turns
 * (bounded; never a timed sleep). Fake time moves on only once no file-system request or
 * child process is out: on a loaded machine the thread pool can lag many turns behind, and fake
 * time running ahead of the agent's work would skip states a test means to see (a backoff).
 */
export async function pump<T>(
  clock: FakeClock,
  check: () => T | undefined | false,
  stepMs = 100,
  maxSteps = 3000,
): Promise<T> {
  for (let i = 0; i < maxSteps; i++) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    await clock.tick(stepMs);
    for (let j = 0; j < 5 || (realIOPending() && j < 100_000); j++) {
      await new Promise((r) => setImmediate(r));
    }
  }
  throw new Error('condition not reached');
}
