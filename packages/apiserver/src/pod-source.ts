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
  type OfflineStore,
  type Pod,
  type PodStatus,
  podEventReference,
  RealClock,
  type Timer,
} from '@kubelet-kit/core';
import { type PodSource, PodSourceError, type PodSourceSink, validatePod } from '@kubelet-kit/pod-config';
// Types only: the client is loaded when a source first talks to the API server (it costs tens
// of MiB, which an agent without an API server should not pay).
import type { KubeConfig } from '@kubernetes/client-node';
import { asError, reportError } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';
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
  /**
   * The offline store: every pod listed or watched is written to it (and removed with it), and
   * when the API server cannot be listed at start, the stored pods (with the last statuses the
   * agent sent, kind `PodStatus`) are served until a list succeeds, which then replaces them.
   */
  readonly store?: OfflineStore;
  /**
   * With a store: how long the first list may take before the stored pods are served anyway, ms
   * (default 10 000). A list that fails serves them at once.
   */
  readonly offlineAfterMs?: number;
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
  /** Pods served from the offline store (0 once a list succeeded first). */
  readonly servedFromStore: number;
}

const SourceName: typeof ApiserverSourceName = 'api';

function keyOf(obj: unknown): string {
  const meta = (obj as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
  return `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
}

/** Options of {@link OfflineSourceStore}. */
interface OfflineSourceStoreOptions {
  readonly store: OfflineStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly offlineAfterMs: number;
  /** Hands the stored pods (by key) to the source, once, when the first list did not come. */
  readonly serve: (pods: ReadonlyMap<string, Pod>) => void;
}

/**
 * The pod source's side of the offline store (KubeEdge's MetaManager keeps pods the same way):
 * writes through every listed and watched pod, and serves the stored ones while no list has
 * come back since start. Store failures are logged, never fatal.
 */
class OfflineSourceStore {
  readonly #o: OfflineSourceStoreOptions;
  /** The stored pods' resourceVersions, so an unchanged pod is not written again. */
  readonly #persisted = new Map<
    string,
    { readonly rv: string | undefined; readonly uid: string | undefined }
  >();
  #loaded: Promise<Map<string, Pod>> | undefined;
  #timer: Timer | undefined;
  #listed = false;
  #serving = false;
  #served = 0;
  readonly #writes = new Set<Promise<void>>();

  constructor(options: OfflineSourceStoreOptions) {
    this.#o = options;
  }

  get served(): number {
    return this.#served;
  }

  start(): void {
    this.#loaded = this.#load();
    this.#timer = this.#o.clock.setTimeout(
      () => void this.#serve('the first list is taking long'),
      this.#o.offlineAfterMs,
    );
  }

  async stop(): Promise<void> {
    this.#timer?.cancel();
    await this.#loaded;
    await Promise.all([...this.#writes]);
  }

  listFailed(): void {
    if (!this.#listed) void this.#serve('the API server cannot be listed');
  }

  /** A list came back: the store now holds exactly these pods. */
  replaced(pods: ReadonlyMap<string, Pod>): void {
    this.#listed = true;
    this.#timer?.cancel();
    if (this.#serving)
      this.#o.logger.info({ pods: pods.size }, 'listed pods again; the stored pods are replaced');
    this.#serving = false;
    void this.#afterLoad(() => {
      for (const [key, pod] of pods) this.#put(key, pod);
      for (const key of [...this.#persisted.keys()]) if (!pods.has(key)) this.#delete(key);
    });
  }

  changed(key: string, pod: Pod): void {
    void this.#afterLoad(() => this.#put(key, pod));
  }

  deleted(key: string): void {
    void this.#afterLoad(() => this.#delete(key));
  }

  async #afterLoad(work: () => void): Promise<void> {
    await this.#loaded;
    work();
  }

  #put(key: string, pod: Pod): void {
    const rv = pod.metadata?.resourceVersion;
    const known = this.#persisted.get(key);
    if (known && known.rv === rv && rv !== undefined) return;
    const uid = pod.metadata?.uid;
    // A pod of the same name with a new UID: the old one's last status is of no use any more.
    if (known?.uid !== undefined && known.uid !== uid)
      this.#track(this.#o.store.delete('PodStatus', known.uid), `removing the stored status of ${key}`);
    this.#persisted.set(key, { rv, uid });
    this.#track(this.#o.store.put('Pod', key, pod), `storing pod ${key}`);
  }

  #delete(key: string): void {
    const uid = this.#persisted.get(key)?.uid;
    this.#persisted.delete(key);
    if (uid !== undefined)
      this.#track(this.#o.store.delete('PodStatus', uid), `removing the stored status of ${key}`);
    this.#track(this.#o.store.delete('Pod', key), `removing stored pod ${key}`);
  }

  #track(write: Promise<void>, what: string): void {
    const tracked = write
      .catch((err: unknown) =>
        this.#o.logger.warn({ err: asError(err).message }, `offline store: ${what} failed`),
      )
      .finally(() => this.#writes.delete(tracked));
    this.#writes.add(tracked);
  }

  async #load(): Promise<Map<string, Pod>> {
    const pods = new Map<string, Pod>();
    try {
      const statuses = new Map<string, PodStatus>();
      for (const { key, value } of await this.#o.store.list<PodStatus>('PodStatus')) statuses.set(key, value);
      for (const { key, value } of await this.#o.store.list<Pod>('Pod')) {
        const uid = value.metadata?.uid;
        this.#persisted.set(key, { rv: value.metadata?.resourceVersion, uid });
        const status = uid === undefined ? undefined : statuses.get(uid);
        // The status the agent last sent is at least as new as the one the server last showed it.
        pods.set(key, withTypeMeta<Pod>(status ? { ...value, status } : value, 'v1', 'Pod'));
      }
    } catch (err) {
      this.#o.logger.warn({ err: asError(err).message }, 'offline store: reading the stored pods failed');
    }
    return pods;
  }

  async #serve(why: string): Promise<void> {
    if (this.#listed || this.#serving) return;
    const pods = (await this.#loaded) ?? new Map<string, Pod>();
    if (this.#listed || this.#serving) return;
    // An empty store says nothing (never listed, or wiped): a SET of no pods would mark the
    // source seen and let the cleanup kill whatever runs, so nothing is sent until a list.
    if (pods.size === 0) return;
    this.#serving = true;
    this.#timer?.cancel();
    this.#served = pods.size;
    this.#o.logger.warn(
      { pods: pods.size },
      `${why}: serving the pods of the offline store until a list succeeds`,
    );
    this.#o.serve(pods);
  }
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
  readonly #offline: OfflineSourceStore | undefined;

  constructor(options: ApiserverSourceOptions) {
    const kubeConfig = options.kubeConfig;
    const nodeName = options.nodeName;
    this.#kubeConfig = kubeConfig;
    this.#logger = (options.logger ?? noopLogger).child({ source: SourceName });
    this.#recorder = options.recorder ?? noopEventRecorder;
    this.#onError = options.onError;
    this.#validate = options.validate ?? true;
    const fieldSelector = `spec.nodeName=${nodeName}`;
    if (options.store) {
      this.#offline = new OfflineSourceStore({
        store: options.store,
        clock: options.clock ?? new RealClock(),
        logger: this.#logger,
        offlineAfterMs: options.offlineAfterMs ?? 10_000,
        serve: (pods) => {
          for (const [key, pod] of pods) this.#store.set(key, pod);
          this.#emit();
        },
      });
    }
    this.#reflector = new Reflector({
      kubeConfig: async () => kubeConfig,
      list: async (kc, listOptions) => {
        const { CoreV1Api } = await loadClientNode();
        return kc.makeApiClient(CoreV1Api).listPodForAllNamespaces({ fieldSelector }, listOptions);
      },
      watchPath: '/api/v1/pods',
      watchParams: { fieldSelector },
      onReplace: (items, resourceVersion) => {
        // A list replaces whatever the offline store served: a pod deleted meanwhile goes.
        this.#store.clear();
        for (const item of items) this.#store.set(keyOf(item), withTypeMeta<Pod>(item, 'v1', 'Pod'));
        this.#logger.debug({ pods: this.#store.size, resourceVersion }, 'listed pods');
        this.#offline?.replaced(this.#store);
        this.#emit();
      },
      onEvent: (type, obj) => {
        const key = keyOf(obj);
        if (type === 'DELETED') {
          this.#store.delete(key);
          this.#offline?.deleted(key);
        } else {
          const pod = withTypeMeta<Pod>(obj, 'v1', 'Pod');
          this.#store.set(key, pod);
          this.#offline?.changed(key, pod);
        }
        this.#emit();
      },
      errors: {
        listFailed: (err) => {
          this.#offline?.listFailed();
          return this.#sourceError('ListFailed', `listing pods failed: ${asError(err).message}`, err);
        },
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
    return { ...this.#reflector.stats, sets: this.#sets, servedFromStore: this.#offline?.served ?? 0 };
  }

  start(sink: PodSourceSink): void {
    if (this.#sink) throw new Error('ApiserverSource already started');
    this.#sink = sink;
    this.#offline?.start();
    this.#reflector.start('apiserver source loop failed');
  }

  async stop(): Promise<void> {
    await this.#reflector.stop();
    await this.#offline?.stop();
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
