/**
 * A request as callers write it: every field optional, recursively (absent fields take the
 * protobuf defaults), with the same camelCase names and types as the response messages.
 * @public
 */
export type PartialMessage<T> = T extends Uint8Array
  ? T
  : T extends readonly (infer U)[]
    ? PartialMessage<U>[]
    : T extends object
      ? { [K in keyof T]?: PartialMessage<T[K]> }
      : T;

/** Per-call options of every client method. @public */
export interface CallOptions {
  /**
   * Deadline of this call in milliseconds, replacing the client's default for the method.
   * `Infinity` means no deadline.
   */
  timeoutMs?: number;
  /** Cancels the call; a unary call then rejects with a `CriError` whose code is `Cancelled`. */
  signal?: AbortSignal;
}

/** Options of {@link RuntimeServiceClient} and {@link ImageServiceClient}. @public */
export interface CriClientOptions {
  /** `unix:///abs/path.sock`, `unix:path.sock` or `tcp://host:port`. */
  endpoint: string;
  /**
   * Default deadline of a call in milliseconds. Default 2 minutes, upstream's
   * `--runtime-request-timeout`.
   */
  timeoutMs?: number;
  /**
   * Default deadline of `pullImage` in milliseconds (ImageServiceClient). Default 30 minutes:
   * pulls of large images routinely outlast the 2-minute request timeout.
   */
  pullImageTimeoutMs?: number;
  /** Maximum size of a sent or received message in bytes. Default 16 MiB, as upstream. */
  maxMessageBytes?: number;
}

/** Default CRI call deadline (2 minutes). @public */
export const DEFAULT_CRI_TIMEOUT_MS = 2 * 60 * 1000;
/** Default image pull deadline (30 minutes). @public */
export const DEFAULT_PULL_IMAGE_TIMEOUT_MS = 30 * 60 * 1000;
/** Default maximum CRI message size (16 MiB). @public */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
