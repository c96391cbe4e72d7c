// The API server source (upstream `pkg/kubelet/config/apiserver.go`): a reflector over the pods
// bound to this node (list, then watch from the list's resourceVersion) feeding an undelta store
// that sends a SET of every pod it holds after each change.

import {
  type ApiserverSourceName,
  type Clock,
  type EventRecorder,
  type Logger,
  noopEventRecorder,
  noopLogger,
  type Pod,
  podEventReference,
} from '@kubelet-kit/core';
import { type PodSource, PodSourceError, type PodSourceSink, validatePod } from '@kubelet-kit/pod-config';
// Types only: the client is loaded when a source first talks to the API server (it costs tens
// of MiB, which an agent without an API server should not pay).
import type { KubeConfig } from '@kubernetes/client-node';
import { asError, reportError } from './api-errors.js';
import { Reflector, withTypeMeta } from './reflector.js';

/**
 * Options of {@link ApiserverSource}.
 *
 * @public
 */
export interface ApiserverSourceOptions {
  /** Where the API server is and how to authenticate; its current context is used. */
  readonly kubeConfig: KubeConfig;
  /** This node's name: only pods with `spec.nodeName` equal to it are listed and watched. */
  readonly nodeName: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Where pods that fail validation are reported (reason `FailedValidation`). */
  readonly recorder?: EventRecorder;
  /** Called with every error: failed lists and watches, expired resource versions, invalid pods. */
  readonly onError?: (error: Error) => void;
  /**
   * A watch that delivers nothing, not even a bookmark, for this long is restarted, ms
   * (default 120 000). client-node watches can stop without closing (kubernetes-client/javascript
   * #958, #364), and an API server sends bookmarks about once a minute.
   */
  readonly watchStalenessTimeoutMs?: number;
  /** A list taking longer than this is aborted and retried, ms (default 60 000). */
  readonly listTimeoutMs?: number;
  /**
   * The server ends each watch after a random `timeoutSeconds` in [min, 2 × min), as client-go's
   * reflector asks (default 300); the source then watches again from where it was.
   */
  readonly minWatchTimeoutSeconds?: number;
  /** Retry delays after failures: client-go's reflector uses 800 ms doubling to 30 s (the defaults). */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Validate pods before they enter the stream (default true); invalid pods are left out and reported. */
  readonly validate?: boolean;
  /** A random source in [0, 1), for watch timeouts and backoff jitter. */
  readonly random?: () => number;
}

/**
 * Counters of an {@link ApiserverSource}, for metrics and tests.
 *
 * @public
 */
export interface ApiserverSourceStats {
  /** Successful lists (the first one and every relist). */
  readonly lists: number;
  readonly listErrors: number;
  /** Watches opened. */
  readonly watches: number;
  /** Relists caused by 410 Gone (an expired resource version). */
  readonly expired: number;
  /** Watches that failed or were cut off (not counting normal server-side timeouts). */
  readonly watchErrors: number;
  /** Watches restarted by the staleness watchdog. */
  readonly staleWatches: number;
  readonly bookmarks: number;
  /** SETs handed to the sink. */
  readonly sets: number;
}

const SourceName: typeof ApiserverSourceName = 'api';

function keyOf(obj: unknown): string {
  const meta = (obj as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
  return `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
}

/**
 * The pods bound to this node, from a Kubernetes API server (source name `api`). It lists them
 * with `fieldSelector=spec.nodeName=<node>`, then watches from the list's resourceVersion with
 * bookmarks. Every list, and every change a watch brings, sends a SET of all the pods it holds.
 *
 * - A 410 Gone (an HTTP status, or an ERROR event with code 410) means the resourceVersion
 *   expired: the source lists again.
 * - When a watch fails or is cut off, the source waits (with backoff) and watches again from the
 *   last resourceVersion it saw. A bookmark only moves that resourceVersion on. A watch the
 *   server ends normally is resumed at once.
 * - A watch silent for longer than `watchStalenessTimeoutMs` is restarted the same way.
 *
 * @public
 */
export class ApiserverSource implements PodSource {
  readonly name = SourceName;
  readonly #kubeConfig: KubeConfig;
  readonly #logger: Logger;
  readonly #recorder: EventRecorder;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #validate: boolean;
  readonly #reflector: Reflector;
  readonly #store = new Map<string, Pod>();
  /** Validation verdicts by pod key, kept per resourceVersion so each bad version is reported once. */
  readonly #verdicts = new Map<string, { readonly rv: string | undefined; readonly ok: boolean }>();
  #sink: PodSourceSink | undefined;
  #dirty = false;
  #flushing: Promise<void> | undefined;
  #sets = 0;

  constructor(options: ApiserverSourceOptions) {
    const kubeConfig = options.kubeConfig;
    const nodeName = options.nodeName;
    this.#kubeConfig = kubeConfig;
    this.#logger = (options.logger ?? noopLogger).child({ source: SourceName });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#onError = options.onError;
    this.#validate = options.validate ?? true;
    const fieldSelector = `spec.nodeName=${nodeName}`;
    this.#reflector = new Reflector({
      kubeConfig: async () => kubeConfig,
      list: async (kc, listOptions) => {
        const { CoreV1Api } = await import('@kubernetes/client-node');
        return kc.makeApiClient(CoreV1Api).listPodForAllNamespaces({ fieldSelector }, listOptions);
      },
      watchPath: '/api/v1/pods',
      watchParams: { fieldSelector },
      onReplace: (items, resourceVersion) => {
        this.#store.clear();
        for (const item of items) this.#store.set(keyOf(item), withTypeMeta<Pod>(item, 'v1', 'Pod'));
        this.#logger.debug({ pods: this.#store.size, resourceVersion }, 'listed pods');
        this.#emit();
      },
      onEvent: (type, obj) => {
        const key = keyOf(obj);
        if (type === 'DELETED') this.#store.delete(key);
        else this.#store.set(key, withTypeMeta<Pod>(obj, 'v1', 'Pod'));
        this.#emit();
      },
      errors: {
        listFailed: (err) =>
          this.#sourceError('ListFailed', `listing pods failed: ${asError(err).message}`, err),
        watchStatus: (status) =>
          this.#sourceError(
            status.code === 410 ? 'Expired' : 'WatchFailed',
            `watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`.trim(),
          ),
        watchFailed: (code, err) =>
          code === 410
            ? this.#sourceError('Expired', `watch: 410 ${asError(err).message}`, err)
            : this.#sourceError(
                'WatchFailed',
                `watch failed: ${code ?? ''} ${asError(err).message}`.trim(),
                err,
              ),
        stale: (ms, rv) =>
          this.#sourceError('WatchStale', `watch silent for ${ms}ms at resourceVersion ${rv}; restarting it`),
      },
      report: (error) => this.#report(error),
      logger: this.#logger,
      listTimeoutMs: options.listTimeoutMs ?? 60_000,
      tuning: options,
    });
  }

  /** The resourceVersion the next watch starts from; `''` before the first list. */
  get resourceVersion(): string {
    return this.#reflector.resourceVersion;
  }

  /** Counters since construction. */
  stats(): ApiserverSourceStats {
    return { ...this.#reflector.stats, sets: this.#sets };
  }

  start(sink: PodSourceSink): void {
    if (this.#sink) throw new Error('ApiserverSource already started');
    this.#sink = sink;
    this.#reflector.start('apiserver source loop failed');
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  /** Marks the store changed and sends it, coalescing changes made while the sink is busy. */
  #emit(): void {
    this.#dirty = true;
    if (!this.#flushing) this.#flushing = this.#flush().finally(() => (this.#flushing = undefined));
  }

  async #flush(): Promise<void> {
    while (this.#dirty && !this.#reflector.stopped && this.#sink) {
      this.#dirty = false;
      const pods = this.#snapshot();
      this.#sets++;
      try {
        await this.#sink({ op: 'SET', pods, source: SourceName });
      } catch (err) {
        this.#logger.error({ err: asError(err) }, 'pod sink failed');
      }
    }
  }

  /** Copies of the valid pods: the merge may annotate what it stores, and must not touch ours. */
  #snapshot(): Pod[] {
    const pods: Pod[] = [];
    for (const [key, pod] of this.#store) {
      if (this.#isValid(key, pod)) pods.push(structuredClone(pod));
    }
    for (const key of this.#verdicts.keys()) if (!this.#store.has(key)) this.#verdicts.delete(key);
    return pods;
  }

  #isValid(key: string, pod: Pod): boolean {
    if (!this.#validate) return true;
    const rv = pod.metadata?.resourceVersion;
    const known = this.#verdicts.get(key);
    if (known && known.rv === rv && rv !== undefined) return known.ok;
    const error = validatePod(pod, { source: SourceName });
    this.#verdicts.set(key, { rv, ok: !error });
    if (error) {
      this.#report(error);
      this.#recorder.event(podEventReference(pod), 'Warning', error.code, error.message);
    }
    return !error;
  }

  #sourceError(code: string, message: string, cause?: unknown): PodSourceError {
    const server = this.#kubeConfig.getCurrentCluster()?.server ?? '';
    return new PodSourceError(SourceName, server, code, message, cause === undefined ? undefined : { cause });
  }

  #report(error: Error): void {
    reportError(this.#logger, this.#onError, error);
  }
}
