import { advanceUntil, type FakeClock } from '@kubelet-kit/core/testing';

/**
 * Waits for `check` to return a value while driving the fake clock (core's `advanceUntil`, with
 * the longer limit the agent's tests need: gRPC calls to the in-memory CRI take real I/O turns).
 */
export function pump<T>(
  clock: FakeClock,
  check: () => T | undefined | false,
  stepMs = 100,
  maxSteps = 3000,
): Promise<Exclude<T | undefined | false, undefined | null | false>> {
  return advanceUntil(clock, check, { step: stepMs, limit: maxSteps });
}
