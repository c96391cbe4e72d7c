import type { PodSyncResult } from '@kubelet-kit/core';

/** Why a container last failed to start (upstream `ReasonCache` entry). */
export interface ContainerStartFailure {
  /** A reason code such as `CrashLoopBackOff` or `ErrImagePull`. */
  readonly reason: string;
  readonly message: string;
}

/**
 * The last start failure of each container, by pod UID and container name (upstream
 * `reasonCache`): it is what turns a container's API state into Waiting{CrashLoopBackOff} or
 * Waiting{ErrImagePull} between syncs. Bounded, oldest pods forgotten first.
 */
export class ReasonCache {
  readonly #entries = new Map<string, Map<string, ContainerStartFailure>>();
  readonly #maxPods: number;

  constructor(maxPods = 1000) {
    this.#maxPods = maxPods;
  }

  /**
   * Records the StartContainer/InitContainer outcomes of one sync: failures set, successes clear.
   * Returns true when a failure is new or its reason or message changed.
   */
  update(podUid: string, result: PodSyncResult): boolean {
    let newFailure = false;
    for (const r of result.syncResults) {
      if (r.action !== 'StartContainer' && r.action !== 'InitContainer') continue;
      if (r.error !== undefined) {
        const before = this.get(podUid, r.target);
        if (before?.reason !== r.error || before.message !== r.message) newFailure = true;
        this.#set(podUid, r.target, { reason: r.error, message: r.message });
      } else {
        this.#remove(podUid, r.target);
      }
    }
    return newFailure;
  }

  get(podUid: string, containerName: string): ContainerStartFailure | undefined {
    return this.#entries.get(podUid)?.get(containerName);
  }

  /** Forgets a pod. */
  removePod(podUid: string): void {
    this.#entries.delete(podUid);
  }

  #set(podUid: string, name: string, failure: ContainerStartFailure): void {
    let pod = this.#entries.get(podUid);
    if (!pod) {
      pod = new Map();
      this.#entries.set(podUid, pod);
      if (this.#entries.size > this.#maxPods) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
    }
    pod.set(name, failure);
  }

  #remove(podUid: string, name: string): void {
    const pod = this.#entries.get(podUid);
    if (!pod) return;
    pod.delete(name);
    if (pod.size === 0) this.#entries.delete(podUid);
  }
}
