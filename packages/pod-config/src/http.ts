// The http source: static pods from a URL polled periodically (upstream
// `pkg/kubelet/config/http.go`).
import {
  type Clock,
  type EventRecorder,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  RealClock,
  type Timer,
} from '@kubelet-kit/core';
import { decodeStaticPods, maxConfigLength } from './common.js';
import { PodSourceError, PodValidationError, recordValidationFailure } from './errors.js';
import type { PodSource, PodSourceSink } from './source.js';

/**
 * The subset of `fetch` the source uses (inject one for tests or a custom agent).
 *
 * @public
 */
export type FetchFunction = (
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
) => Promise<Response>;

/**
 * Options of {@link HttpSource}.
 *
 * @public
 */
export interface HttpSourceOptions {
  /** Where the manifest (a Pod or a PodList, YAML or JSON) is served. */
  readonly url: string;
  readonly nodeName: string;
  /** Source name; default `http`. */
  readonly name?: string;
  /** Extra request headers (upstream `--manifest-url-header`). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Receives a `FailedValidation` warning per rejected manifest. */
  readonly recorder?: EventRecorder;
  /** Poll period in ms (upstream `httpCheckFrequency`); default 20 000. */
  readonly period?: number;
  /** Whole-request timeout in ms, body included; default 10 000 (upstream's client timeout). */
  readonly timeout?: number;
  /**
   * Body size limit in bytes; default 10 MiB. A body of this size or more is refused (upstream's
   * `ReadAtMost` errs once it has read the limit).
   */
  readonly maxBytes?: number;
  /** See `DecodeStaticPodOptions.preventStaticPodAPIReferences`; default true. */
  readonly preventStaticPodAPIReferences?: boolean;
  /** Called with every failed poll. */
  readonly onError?: (error: PodValidationError | PodSourceError) => void;
  /** Default: the global `fetch`. */
  readonly fetch?: FetchFunction;
}

/**
 * Static pods from a URL: polled at start and `period` after each poll ends. The body is a Pod or
 * a PodList; a body identical to the last one sends nothing; a new valid body sends a SET. A
 * non-200 status, an empty, oversized or unparsable body, an invalid pod, or a response slower
 * than `timeout` is an error that keeps the last good state (an empty body before any good one
 * sends an empty SET, so the source still becomes ready).
 *
 * @public
 */
export class HttpSource implements PodSource {
  readonly name: string;
  readonly #options: HttpSourceOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #fetch: FetchFunction;
  readonly #stop = new AbortController();
  #sink: PodSourceSink | undefined;
  #data: Buffer | undefined;
  #dataRejected = false;
  #sentAny = false;
  #failures = 0;
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;
  #lastError: PodValidationError | PodSourceError | undefined;

  constructor(options: HttpSourceOptions) {
    this.#options = options;
    this.name = options.name ?? 'http';
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ source: this.name, url: options.url });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init));
  }

  /** The error of the latest poll, or undefined when it succeeded. */
  get lastError(): PodValidationError | PodSourceError | undefined {
    return this.#lastError;
  }

  /** Polls once, then every period. Resolves after the first poll. */
  async start(sink: PodSourceSink): Promise<void> {
    if (this.#sink) throw new Error('HttpSource already started');
    this.#sink = sink;
    await this.poll();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#running;
  }

  /** Polls now (or joins the poll in flight) and resolves when it is done. */
  poll(): Promise<void> {
    if (this.#stop.signal.aborted) return Promise.resolve();
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
      if (!this.#stop.signal.aborted) {
        this.#timer = this.#clock.setTimeout(() => void this.poll(), this.#options.period ?? 20_000);
      }
    });
    return this.#running;
  }

  async #run(): Promise<void> {
    try {
      // An unchanged body that was rejected before stays an error, without being reported again.
      if (!(await this.#extractFromURL())) return;
      if (this.#failures > 0) this.#logger.info('Successfully read pods from URL');
      this.#failures = 0;
      this.#lastError = undefined;
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      const error =
        err instanceof PodValidationError || err instanceof PodSourceError
          ? err
          : new PodSourceError(
              this.name,
              this.#options.url,
              'RequestError',
              String((err as Error)?.message ?? err),
              { cause: err },
            );
      this.#lastError = error;
      // Upstream logs the first few failures loudly, then quietly.
      if (this.#failures < 3) this.#logger.warn({ err: error.message }, 'Failed to read pods from URL');
      else this.#logger.debug({ err: error.message }, 'Failed to read pods from URL');
      this.#failures++;
      try {
        this.#options.onError?.(error);
      } catch (cbErr) {
        this.#logger.error({ err: cbErr }, 'HttpSource onError callback threw');
      }
    }
  }

  async #fetchBody(): Promise<Buffer> {
    const url = this.#options.url;
    const timeoutMs = this.#options.timeout ?? 10_000;
    const maxBytes = this.#options.maxBytes ?? maxConfigLength;
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.#clock.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onStop = () => controller.abort();
    this.#stop.signal.addEventListener('abort', onStop);
    const fail = (code: string, message: string, cause?: unknown) =>
      new PodSourceError(this.name, url, code, message, cause === undefined ? undefined : { cause });
    try {
      const response = await this.#fetch(url, {
        headers: { ...(this.#options.headers ?? {}) },
        signal: controller.signal,
      });
      if (response.status !== 200) {
        await response.body?.cancel().catch(() => {});
        throw fail('HTTPError', `${response.status} ${response.statusText}`.trim());
      }
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      if (declared >= maxBytes) {
        await response.body?.cancel().catch(() => {});
        throw fail('TooLarge', `body of ${declared} bytes reaches the ${maxBytes}-byte limit`);
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      if (response.body) {
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          total += value.byteLength;
          // Reaching the limit is already too much, as upstream's ReadAtMost.
          if (total >= maxBytes) {
            controller.abort();
            throw fail('TooLarge', `body is ${maxBytes} bytes or more`);
          }
          chunks.push(value);
        }
      }
      return Buffer.concat(chunks, total);
    } catch (err) {
      if (err instanceof PodSourceError) throw err;
      if (timedOut) throw fail('Timeout', `no complete response within ${timeoutMs} ms`, err);
      throw fail('RequestError', String((err as Error)?.message ?? err), err);
    } finally {
      timer.cancel();
      this.#stop.signal.removeEventListener('abort', onStop);
    }
  }

  /** False when the body is unchanged since it was last rejected. */
  async #extractFromURL(): Promise<boolean> {
    const url = this.#options.url;
    const data = await this.#fetchBody();
    if (data.byteLength === 0) {
      // Mark the source seen, but never wipe a good state for an empty body.
      if (!this.#sentAny) await this.#send([]);
      throw new PodSourceError(this.name, url, 'EmptyBody', 'zero-length data received');
    }
    if (this.#data?.equals(data)) return !this.#dataRejected;
    this.#data = data;
    this.#dataRejected = true;
    let pods: Pod[];
    try {
      pods = decodeStaticPods(data, {
        nodeName: this.#options.nodeName,
        source: this.name,
        url,
        allowList: true,
        ...(this.#options.preventStaticPodAPIReferences !== undefined
          ? { preventStaticPodAPIReferences: this.#options.preventStaticPodAPIReferences }
          : {}),
      });
    } catch (err) {
      if (err instanceof PodValidationError) {
        recordValidationFailure(this.#recorder, err);
      }
      throw err;
    }
    this.#dataRejected = false;
    await this.#send(pods);
    return true;
  }

  async #send(pods: Pod[]): Promise<void> {
    if (this.#stop.signal.aborted || !this.#sink) return;
    this.#sentAny = true;
    await this.#sink({ op: 'SET', pods, source: this.name });
  }
}
