import {
  type Clock,
  type EventRecorder,
  type Pod,
  type PodStatus,
  podEventReference,
} from '@kubelet-kit/core';

/** What {@link ActiveDeadlineHandler} reads and reports through. */
export interface ActiveDeadlineHandlerOptions {
  readonly clock: Clock;
  readonly recorder: EventRecorder;
  /** The status the status manager holds for a pod (its start time wins over the pod's own). */
  readonly podStatus: (uid: string) => PodStatus | undefined;
}

/** Why a pod past its deadline fails (upstream's reason and message). */
export interface PodEviction {
  readonly reason: string;
  readonly message: string;
}

const reason = 'DeadlineExceeded';
const message = 'Pod was active on the node longer than the specified deadline';

/**
 * Upstream `activeDeadlineHandler` (active_deadline.go): a pod that has run
 * `activeDeadlineSeconds` since its start time is synced, and fails with `DeadlineExceeded`.
 * It also keeps the set of pods that have a deadline, so the 1 s sync tick looks at those only.
 *
 * @internal
 */
export class ActiveDeadlineHandler {
  readonly #o: ActiveDeadlineHandlerOptions;
  /** Pods with an active deadline: the sync tick checks them (the rest need no look). */
  readonly #tracked = new Set<string>();

  constructor(options: ActiveDeadlineHandlerOptions) {
    this.#o = options;
  }

  /** Upstream `ShouldSync`: the pod has run `activeDeadlineSeconds` since its start time. */
  shouldSync(pod: Pod): boolean {
    const seconds = pod.spec?.activeDeadlineSeconds;
    if (seconds == null) return false;
    const startTime = (this.#o.podStatus(pod.metadata?.uid ?? '') ?? pod.status)?.startTime;
    const start = startTime ? Date.parse(startTime) : Number.NaN;
    if (Number.isNaN(start)) return false;
    return this.#o.clock.now() - start >= seconds * 1000;
  }

  /** Upstream `ShouldEvict`: fail a pod past its deadline, with a `DeadlineExceeded` event. */
  shouldEvict(pod: Pod): PodEviction | undefined {
    if (!this.shouldSync(pod)) return undefined;
    this.#o.recorder.event(podEventReference(pod), 'Normal', reason, message);
    return { reason, message };
  }

  /** Keeps the tracked pods to those whose spec (as last seen) sets `activeDeadlineSeconds`. */
  track(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (pod.spec?.activeDeadlineSeconds != null) this.#tracked.add(uid);
    else this.#tracked.delete(uid);
  }

  /**
   * The tracked pods past their deadline (upstream `getPodsToSync`'s sync-loop handlers), but
   * those in `skip` (due anyway); a pod `getPod` no longer has is forgotten.
   */
  podsToSync(getPod: (uid: string) => Pod | undefined, skip: ReadonlySet<string>): string[] {
    const out: string[] = [];
    for (const uid of this.#tracked) {
      const pod = getPod(uid);
      if (!pod) this.#tracked.delete(uid);
      else if (!skip.has(uid) && this.shouldSync(pod)) out.push(uid);
    }
    return out;
  }

  /** Whether any pod has a deadline. */
  get size(): number {
    return this.#tracked.size;
  }
}
