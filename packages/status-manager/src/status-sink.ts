import type { Pod, PodStatus } from '@kubelet-kit/core';

// Where the status manager writes statuses out (upstream: always the API server; here a
// pluggable sink).

/**
 * What the manager tells a sink with each status it writes.
 *
 * @public
 */
export interface StatusWriteOptions {
  /** The pod's UID in its source (a static pod's own UID). */
  readonly podUid: string;
  /** The UID of the object the status belongs to: the mirror pod's for a static pod, else `podUid`. */
  readonly statusUid: string;
  /** The mirror pod's UID when the pod is static. */
  readonly mirrorUid?: string;
  /** The status's version in the manager's cache; grows by one per change. */
  readonly version: number;
  /** True once the pod worker finished the pod (its status came from `terminatePod`). */
  readonly podIsFinished: boolean;
  /**
   * True while the pod's containers may still run: a terminal phase must then not be written
   * yet (see `mergePodStatus`).
   */
  readonly delayTransitioningToTerminal: boolean;
  /** The manager's current time, RFC 3339 in whole seconds, for transition times set in the merge. */
  readonly now: string;
  /** Aborted when the manager stops. */
  readonly signal?: AbortSignal;
}

/**
 * How a write ended:
 * - `updated`: the stored status changed;
 * - `unchanged`: the stored status already was this one;
 * - `notFound`: no such pod in the sink (the status stays cached until orphaned);
 * - `uidMismatch`: a pod of that name exists with another UID (deleted and recreated), so the
 *   manager drops its cached status;
 * - `superseded`: a newer write for the same pod replaced this one before it ran.
 *
 * @public
 */
export type StatusWriteOutcome = 'updated' | 'unchanged' | 'notFound' | 'uidMismatch' | 'superseded';

/**
 * The result of {@link StatusSink.write}.
 *
 * @public
 */
export interface StatusWriteResult {
  readonly outcome: StatusWriteOutcome;
  /** The pod as the sink holds it after the write (for `updated` and `unchanged`). */
  readonly pod?: Pod;
}

/**
 * Options of {@link StatusSink.delete}.
 *
 * @public
 */
export interface StatusDeleteOptions {
  /** The UID the deleted object must have (a precondition, as upstream's). */
  readonly uid: string;
  readonly signal?: AbortSignal;
}

/**
 * A place pod statuses are written to. The manager calls `write` with the pod as the sink
 * knows it (the mirror pod for a static pod) and the cached status; the sink merges it with
 * what it holds (`mergePodStatus`). Writes for one pod never overlap.
 *
 * @public
 */
export interface StatusSink {
  /** A name for logs. */
  readonly name: string;
  write(pod: Pod, status: PodStatus, options: StatusWriteOptions): Promise<StatusWriteResult>;
  /**
   * Deletes a pod that is finished: being deleted, terminal, and done with by the pod worker
   * (upstream `canBeDeleted`). Sinks without it never delete pods.
   */
  readonly delete?: (pod: Pod, options: StatusDeleteOptions) => Promise<void>;
}
