// What the adapters read off a failed API call, and how they pass errors on.

import type { Logger } from '@kubelet-kit/core';

/**
 * The HTTP status of a failed call: client-node's `ApiException` carries it as `code`, a failed
 * watch request as `statusCode`.
 */
export function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { statusCode?: unknown; code?: unknown };
  if (typeof e.statusCode === 'number') return e.statusCode;
  return typeof e.code === 'number' ? e.code : undefined;
}

export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** Logs `error` and hands it to the user's `onError`, which must not break the caller. */
export function reportError(
  logger: Logger,
  onError: ((error: Error) => void) | undefined,
  error: Error,
): void {
  logger.warn({ err: error }, error.message);
  if (!onError) return;
  try {
    onError(error);
  } catch (err) {
    logger.error({ err: asError(err) }, 'onError callback failed');
  }
}

/**
 * The API server could not be reached (no HTTP answer) or could not serve (429, 5xx): what the
 * offline fallbacks answer from the store, and what is worth trying again later.
 */
export function isUnreachable(err: unknown): boolean {
  const code = httpStatusOf(err);
  return code === undefined || code === 429 || code >= 500;
}
