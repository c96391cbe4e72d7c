import type { Clock, Logger, Pod, RuntimePodStatus, Timer } from '@kubelet-kit/core';
import type { PlegView } from './deps.js';

/** A pod for the PLEG to read. */
export interface InspectionTarget {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
}

/** Options of {@link PodInspections}. */
export interface PodInspectionsOptions {
  readonly pleg: PlegView;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Once aborted, requests only release their pod from the PLEG's hold. */
  readonly signal: AbortSignal;
  /** How long after a request the pod is read (default 5 ms). */
  readonly delayMs?: number;
}

const requestedInspectionDelayMs = 5;

/**
 * Batches the agent's requests that the PLEG read pods whose containers it just changed, so the
 * new state reaches the pods' statuses without waiting for the next 1 s relist (upstream
 * waits). Requests within the delay share one round of reads; the delay also puts the read
 * after the end of the sync, which the pod's worker waits to see a status newer than. A PLEG
 * that cannot read single pods relists instead.
 *
 * @internal
 */
export class PodInspections {
  readonly #o: PodInspectionsOptions;
  readonly #delayMs: number;
  #timer: Timer | undefined;
  /** Pods to read once the timer fires, by UID, in the order of their due times. */
  readonly #pending = new Map<string, InspectionTarget & { status?: RuntimePodStatus; dueAt: number }>();

  constructor(options: PodInspectionsOptions) {
    this.#o = options;
    this.#delayMs = options.delayMs ?? requestedInspectionDelayMs;
  }

  /** Requests a read of `pod`; `status`, which the runtime's sync reported, spares the read. */
  requestPod(pod: Pod, status?: RuntimePodStatus): void {
    this.request(
      {
        uid: pod.metadata?.uid ?? '',
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? '',
      },
      status,
    );
  }

  /** Requests a read of `target`; `status`, which the runtime's sync reported, spares the read. */
  request(target: InspectionTarget, status?: RuntimePodStatus): void {
    if (this.#o.signal.aborted) {
      this.#o.pleg.releasePod?.(target.uid);
      return;
    }
    // A reported status spares the read, unless an earlier change of the pod still waits for one.
    const pending = this.#pending.get(target.uid);
    const known = status && !(pending && !pending.status) ? status : undefined;
    // The pod's worker records the end of its sync right after this request, and waits for a
    // cache entry strictly newer than that: the inspection is timed by the clock, not by the
    // timer alone (a timer armed late in a long task can fire within the same millisecond).
    const dueAt = this.#o.clock.now() + this.#delayMs;
    const { uid, name, namespace } = target;
    // Re-inserted, so that the map stays in the order of the requests' due times.
    this.#pending.delete(uid);
    this.#pending.set(uid, { uid, name, namespace, ...(known ? { status: known } : {}), dueAt });
    if (!this.#timer) this.#arm(this.#delayMs);
  }

  /** Cancels the pending round (the agent is stopping). */
  stop(): void {
    this.#timer?.cancel();
  }

  #arm(delayMs: number): void {
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      const now = this.#o.clock.now();
      const pods: { uid: string; name: string; namespace: string; status?: RuntimePodStatus }[] = [];
      let nextDue: number | undefined;
      // Oldest requests first (a pod's newer request replaces its entry at the end).
      for (const [uid, entry] of this.#pending) {
        if (entry.dueAt > now) {
          nextDue = entry.dueAt;
          break;
        }
        const { dueAt: _, ...ref } = entry;
        pods.push(ref);
        this.#pending.delete(uid);
      }
      if (nextDue !== undefined) this.#arm(nextDue - now);
      if (pods.length === 0) return;
      const pleg = this.#o.pleg;
      const read = pleg.inspectPods ? pleg.inspectPods(pods) : pleg.relist?.();
      read?.catch((err: unknown) =>
        this.#o.logger.warn({ err: String(err) }, 'requested pod inspection failed'),
      );
    }, delayMs);
  }
}
