import type { Clock, Logger, OfflineStore, Pod, PodStatus } from '@kubelet-kit/core';
import { noopLogger, RealClock } from '@kubelet-kit/core';
import {
  dropEmptyContainerStates,
  formatRfc3339,
  mergePodStatus,
  type StatusDeleteOptions,
  type StatusSink,
  type StatusWriteOptions,
  type StatusWriteResult,
  semanticEqual,
} from '@kubelet-kit/status-manager';
// Types only: the client is loaded on the first write (it costs tens of MiB to load).
import type { CoreV1Api } from '@kubernetes/client-node';
import { httpStatusOf, isUnreachable } from './api-errors.js';
import { loadClientNode } from './load-client-node.js';

/**
 * The part of `CoreV1Api` (object-parameter form, client-node 1.4) the sink calls.
 *
 * @public
 */
export type PodStatusApi = Pick<
  CoreV1Api,
  'readNamespacedPod' | 'patchNamespacedPodStatus' | 'deleteNamespacedPod'
>;

/**
 * Options of {@link ApiserverStatusSink}.
 *
 * @public
 */
export interface ApiserverStatusSinkOptions {
  /** A client, e.g. `kubeConfig.makeApiClient(CoreV1Api)`. */
  readonly api: PodStatusApi;
  readonly logger?: Logger;
  /** How many times a write is retried after a 409 Conflict (re-reading the pod each time); default 5. */
  readonly maxConflictRetries?: number;
  /**
   * When true the sink offers `delete`, so the manager deletes finished pods from the API server
   * (grace period 0, UID precondition) as upstream does.
   */
  readonly deletePods?: boolean;
  /**
   * Offline operation: a write the API server cannot be reached for (no HTTP answer, or 429/5xx)
   * waits and is tried again, 1 s doubling to `maxUnreachableRetryMs`, instead of failing; the
   * status manager's writes therefore queue behind it in order and drain once the server answers
   * (each re-reads the pod and merges again, a deleted pod or a new UID drops it). Default false.
   */
  readonly queueWhileUnreachable?: boolean;
  /** The longest wait between tries while the server cannot be reached, ms (default 8 000). */
  readonly maxUnreachableRetryMs?: number;
  /** The offline store: the status of every accepted write is kept (kind `PodStatus`, by UID). */
  readonly store?: OfflineStore;
  /** For the waits of `queueWhileUnreachable`. */
  readonly clock?: Clock;
}

/**
 * The API server kept answering 409 Conflict to a status patch.
 *
 * @public
 */
export class StatusConflictError extends Error {
  readonly code = 'Conflict';
  constructor(
    readonly namespace: string,
    readonly podName: string,
    readonly attempts: number,
  ) {
    super(`status of pod ${namespace}/${podName} still conflicted after ${attempts} attempts`);
    this.name = 'StatusConflictError';
  }
}

/**
 * The client deserializes times into `Date`s and leaves unset fields `undefined`; this turns a
 * pod back into plain API JSON (times in whole seconds, as the API server stores them).
 *
 * @public
 */
export function toPlainObject(value: unknown): unknown {
  if (value instanceof Date) return formatRfc3339(value.getTime());
  if (Array.isArray(value)) return value.map(toPlainObject);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== undefined) out[k] = toPlainObject(v);
    }
    return out;
  }
  return value;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A JSON merge patch (RFC 7386) that turns `from` into `to`: changed fields set, removed fields
 * `null`, lists replaced whole. Undefined when nothing differs.
 *
 * @public
 */
export function createMergePatch(
  from: Record<string, unknown>,
  to: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined || v === null) continue;
    const old = from[k];
    if (isPlainRecord(v) && isPlainRecord(old)) {
      const sub = createMergePatch(old, v);
      if (sub) patch[k] = sub;
    } else if (!semanticEqual(old, v)) {
      patch[k] = v;
    }
  }
  for (const [k, v] of Object.entries(from)) {
    if (v !== undefined && v !== null && (to[k] === undefined || to[k] === null)) patch[k] = null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

interface Pending {
  readonly pod: Pod;
  readonly status: PodStatus;
  readonly options: StatusWriteOptions;
  readonly resolve: (result: StatusWriteResult) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Writes statuses to the API server: reads the pod, merges the kubelet's status into the API
 * status (`mergePodStatus`), and patches `pods/status` with a JSON merge patch that carries the
 * UID as a precondition. A static pod's status goes to its mirror pod. A 409 Conflict re-reads
 * and retries; writes for one pod that arrive while one is in flight collapse to the newest.
 *
 * @public
 */
export class ApiserverStatusSink implements StatusSink {
  readonly name = 'apiserver';
  readonly delete?: (pod: Pod, options: StatusDeleteOptions) => Promise<void>;
  readonly #api: PodStatusApi;
  readonly #logger: Logger;
  readonly #maxConflictRetries: number;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #pending = new Map<string, Pending>();
  readonly #queueWhileUnreachable: boolean;
  readonly #maxUnreachableRetryMs: number;
  readonly #store: OfflineStore | undefined;
  readonly #clock: Clock;
  #waiting = 0;

  constructor(options: ApiserverStatusSinkOptions) {
    this.#api = options.api;
    this.#queueWhileUnreachable = options.queueWhileUnreachable ?? false;
    this.#maxUnreachableRetryMs = options.maxUnreachableRetryMs ?? 8_000;
    this.#store = options.store;
    this.#clock = options.clock ?? new RealClock();
    this.#logger = (options.logger ?? noopLogger).child({ component: 'apiserver-status-sink' });
    this.#maxConflictRetries = Math.max(0, options.maxConflictRetries ?? 5);
    if (options.deletePods) this.delete = (pod, deleteOptions) => this.#deletePod(pod, deleteOptions);
  }

  write(pod: Pod, status: PodStatus, options: StatusWriteOptions): Promise<StatusWriteResult> {
    const k = options.statusUid;
    return new Promise<StatusWriteResult>((resolve, reject) => {
      // Only the newest waiting write of a pod is worth sending.
      this.#pending.get(k)?.resolve({ outcome: 'superseded' });
      this.#pending.set(k, { pod, status, options, resolve, reject });
      if (!this.#inFlight.has(k)) this.#drain(k);
    });
  }

  /** Writes waiting for the API server to answer again (with `queueWhileUnreachable`). */
  get waitingForServer(): number {
    return this.#waiting;
  }

  #drain(k: string): void {
    const next = this.#pending.get(k);
    if (!next) {
      this.#inFlight.delete(k);
      return;
    }
    this.#pending.delete(k);
    const run = this.#writeQueued(next.pod, next.status, next.options)
      .then(next.resolve, next.reject)
      .finally(() => this.#drain(k));
    this.#inFlight.set(k, run);
  }

  /** One write, tried again while the server cannot be reached (when so configured). */
  async #writeQueued(pod: Pod, status: PodStatus, options: StatusWriteOptions): Promise<StatusWriteResult> {
    let waitMs = 1_000;
    let waiting = false;
    try {
      for (;;) {
        try {
          const result = await this.#writeOnce(pod, status, options);
          this.#remember(options.statusUid, result);
          return result;
        } catch (err) {
          if (!this.#queueWhileUnreachable || !isUnreachable(err) || options.signal?.aborted) throw err;
          if (!waiting) {
            waiting = true;
            this.#waiting++;
            this.#logger.info(
              { namespace: pod.metadata?.namespace, name: pod.metadata?.name, err: String(err) },
              'API server unreachable; the status write waits for it',
            );
          }
          await this.#clock.sleep(waitMs, options.signal);
          waitMs = Math.min(waitMs * 2, this.#maxUnreachableRetryMs);
        }
      }
    } finally {
      if (waiting) this.#waiting--;
    }
  }

  /** Keeps the status the server accepted, or forgets the pod it no longer has. */
  #remember(uid: string, result: StatusWriteResult): void {
    const store = this.#store;
    if (!store) return;
    let write: Promise<void> | undefined;
    if ((result.outcome === 'updated' || result.outcome === 'unchanged') && result.pod?.status)
      write = store.put('PodStatus', uid, result.pod.status);
    else if (result.outcome === 'notFound' || result.outcome === 'uidMismatch')
      write = store.delete('PodStatus', uid);
    write?.catch((err: unknown) =>
      this.#logger.warn({ uid, err: String(err) }, 'offline store: keeping the pod status failed'),
    );
  }

  async #writeOnce(pod: Pod, status: PodStatus, options: StatusWriteOptions): Promise<StatusWriteResult> {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    for (let attempt = 0; attempt <= this.#maxConflictRetries; attempt++) {
      options.signal?.throwIfAborted();
      let apiPod: Pod;
      try {
        apiPod = toPlainObject(await this.#api.readNamespacedPod({ name, namespace })) as Pod;
      } catch (err) {
        if (httpStatusOf(err) === 404) return { outcome: 'notFound' };
        throw err;
      }
      const uid = apiPod.metadata?.uid ?? '';
      if (uid !== options.statusUid) return { outcome: 'uidMismatch' };
      const oldStatus = dropEmptyContainerStates(apiPod.status ?? {});
      const merged = mergePodStatus(
        apiPod,
        oldStatus,
        dropEmptyContainerStates(status),
        options.delayTransitioningToTerminal,
        options.now,
      );
      const patch = createMergePatch(
        oldStatus as Record<string, unknown>,
        toPlainObject(merged) as Record<string, unknown>,
      );
      if (!patch) return { outcome: 'unchanged', pod: apiPod };
      options.signal?.throwIfAborted();
      try {
        const { PatchStrategy, setHeaderOptions } = await loadClientNode();
        const updated = await this.#api.patchNamespacedPodStatus(
          { name, namespace, body: { metadata: { uid }, status: patch } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return { outcome: 'updated', pod: toPlainObject(updated) as Pod };
      } catch (err) {
        const code = httpStatusOf(err);
        if (code === 404) return { outcome: 'notFound' };
        if (code !== 409) throw err;
        this.#logger.debug({ namespace, name, attempt }, 'conflict patching pod status, retrying');
      }
    }
    throw new StatusConflictError(namespace, name, this.#maxConflictRetries + 1);
  }

  async #deletePod(pod: Pod, options: StatusDeleteOptions): Promise<void> {
    options.signal?.throwIfAborted();
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    // Any failure, NotFound included, is thrown: upstream logs it and keeps the status cached
    // (RemoveOrphanedStatuses cleans up once the pod is gone).
    await this.#api.deleteNamespacedPod({
      name,
      namespace,
      gracePeriodSeconds: 0,
      // The UID precondition keeps a new pod of the same name safe.
      body: { gracePeriodSeconds: 0, preconditions: { uid: options.uid } },
    });
  }
}
