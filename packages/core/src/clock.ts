/** A scheduled callback that can be cancelled. @public */
export interface Timer {
  /** Cancels the timer; a no-op once it has fired or been cancelled. */
  cancel(): void;
}

/**
 * The source of time for everything in kubelet-kit (upstream `k8s.io/utils/clock`). Components
 * take one in their options so tests can drive time with `FakeClock` (from
 * `@kubelet-kit/core/testing`) instead of sleeping.
 * All times are epoch milliseconds.
 * @public
 */
export interface Clock {
  now(): number;
  /** Milliseconds since `time`. */
  since(time: number): number;
  /** Calls `callback` once after `delayMs`. */
  setTimeout(callback: () => void, delayMs: number): Timer;
  /** Calls `callback` every `periodMs` until cancelled. */
  setInterval(callback: () => void, periodMs: number): Timer;
  /** Resolves after `delayMs`; rejects with the signal's reason when aborted first. */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

/** The error an aborted sleep rejects with (shared with the fake clock, not exported by the entry). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

/** The wall clock. Its timers do not keep the process alive (`unref`). @public */
export class RealClock implements Clock {
  now(): number {
    return Date.now();
  }

  since(time: number): number {
    return Date.now() - time;
  }

  setTimeout(callback: () => void, delayMs: number): Timer {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    handle.unref?.();
    return { cancel: () => clearTimeout(handle) };
  }

  setInterval(callback: () => void, periodMs: number): Timer {
    const handle = setInterval(callback, Math.max(1, periodMs));
    handle.unref?.();
    return { cancel: () => clearInterval(handle) };
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    // A sleep someone awaits must keep the process alive, unlike background timers.
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(handle);
        reject(abortReason(signal!));
      };
      const handle = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, delayMs),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
