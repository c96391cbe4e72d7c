import type { FakeClock } from '@kubelet-kit/core';

/**
 * Waits for `check` to return a value while driving the fake clock: gRPC calls to the
 * in-memory CRI take real I/O turns, so fake time steps alternate with event-loop turns
 * (bounded; never a timed sleep).
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
    for (let j = 0; j < 5; j++) await new Promise((r) => setImmediate(r));
  }
  throw new Error('condition not reached');
}
