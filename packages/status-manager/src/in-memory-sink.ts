import { deepCopy, type Pod, type PodStatus } from '@kubelet-kit/core';
import { mergePodStatus, semanticEqual } from './status-rules.js';
import type {
  StatusDeleteOptions,
  StatusSink,
  StatusWriteOptions,
  StatusWriteResult,
} from './status-sink.js';

/**
 * One write an {@link InMemoryStatusSink} received.
 *
 * @public
 */
export interface StatusWriteRecord {
  readonly namespace: string;
  readonly name: string;
  readonly statusUid: string;
  readonly version: number;
  /** The status as stored after the merge. */
  readonly status: PodStatus;
  readonly outcome: StatusWriteResult['outcome'];
}

/**
 * Options of {@link InMemoryStatusSink}.
 *
 * @public
 */
export interface InMemoryStatusSinkOptions {
  readonly name?: string;
  /**
   * When true (the default) a write for an unknown pod stores it, which makes the sink a local
   * view of every pod's status; when false it answers `notFound`, like an API server.
   */
  readonly createOnWrite?: boolean;
  /** When true the sink offers `delete`, so the manager deletes finished pods from it. */
  readonly deletePods?: boolean;
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * A sink that keeps pods and their statuses in memory, merging each write into the stored
 * status as an API server would. Use it as a local view of the statuses, or in tests as the
 * API server (seed it with {@link InMemoryStatusSink.addPod}, inspect {@link InMemoryStatusSink.writes},
 * inject failures with {@link InMemoryStatusSink.failNext}).
 *
 * @public
 */
export class InMemoryStatusSink implements StatusSink {
  readonly name: string;
  readonly delete?: (pod: Pod, options: StatusDeleteOptions) => Promise<void>;
  /** Every write in arrival order, failed ones excluded. */
  readonly writes: StatusWriteRecord[] = [];
  /** The UIDs deleted through `delete`, in order. */
  readonly deleted: string[] = [];
  readonly #createOnWrite: boolean;
  readonly #pods = new Map<string, Pod>();
  readonly #failures: Error[] = [];

  constructor(options: InMemoryStatusSinkOptions = {}) {
    this.name = options.name ?? 'in-memory';
    this.#createOnWrite = options.createOnWrite ?? true;
    if (options.deletePods) {
      this.delete = async (pod, deleteOptions) => {
        const k = key(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
        const stored = this.#pods.get(k);
        if (!stored || stored.metadata?.uid !== deleteOptions.uid) return;
        this.#pods.delete(k);
        this.deleted.push(deleteOptions.uid);
      };
    }
  }

  /** Stores (or replaces) a pod, as if created on the API server. */
  addPod(pod: Pod): void {
    this.#pods.set(key(pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''), deepCopy(pod));
  }

  /** Removes a pod, as if deleted on the API server. */
  removePod(namespace: string, name: string): void {
    this.#pods.delete(key(namespace, name));
  }

  /** A copy of the stored pod. */
  getPod(namespace: string, name: string): Pod | undefined {
    const pod = this.#pods.get(key(namespace, name));
    return pod ? deepCopy(pod) : undefined;
  }

  /** A copy of the status stored for the pod with this UID. */
  getPodStatus(uid: string): PodStatus | undefined {
    for (const pod of this.#pods.values()) {
      if (pod.metadata?.uid === uid) return deepCopy(pod.status ?? {});
    }
    return undefined;
  }

  /** Copies of all stored pods. */
  listPods(): Pod[] {
    return [...this.#pods.values()].map((p) => deepCopy(p));
  }

  /** Makes the next write fail with `error` (queued: call it n times for n failures). */
  failNext(error: Error = new Error('injected write failure')): void {
    this.#failures.push(error);
  }

  async write(pod: Pod, status: PodStatus, options: StatusWriteOptions): Promise<StatusWriteResult> {
    const failure = this.#failures.shift();
    if (failure) throw failure;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const k = key(namespace, name);
    let stored = this.#pods.get(k);
    if (!stored) {
      if (!this.#createOnWrite) return { outcome: 'notFound' };
      stored = deepCopy(pod);
      stored.metadata = { ...stored.metadata, uid: options.statusUid };
      this.#pods.set(k, stored);
    }
    if (stored.metadata?.uid !== options.statusUid) return { outcome: 'uidMismatch' };
    const old = stored.status ?? {};
    const merged = mergePodStatus(stored, old, status, options.delayTransitioningToTerminal, options.now);
    const outcome = semanticEqual(old, merged) ? 'unchanged' : 'updated';
    if (outcome === 'updated') {
      stored = { ...stored, status: merged };
      this.#pods.set(k, stored);
    }
    this.writes.push({
      namespace,
      name,
      statusUid: options.statusUid,
      version: options.version,
      status: deepCopy(stored.status ?? {}),
      outcome,
    });
    return { outcome, pod: deepCopy(stored) };
  }
}
