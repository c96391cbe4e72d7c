import type { RuntimeContainerStatus, RuntimeSandboxStatus } from '@kubelet-kit/core';
import { ContainerState } from '@kubelet-kit/cri';
import { podUIDLabel } from './labels.js';

// The statuses getPodStatus read, kept per sandbox and container (upstream reads each one again
// on every relist).

/** A sandbox or container as a CRI listing shows it. */
export interface ListedObject {
  readonly id: string;
  readonly labels: Record<string, string>;
}

/**
 * The last status read of each sandbox and container, with the CRI state it was read in.
 * Nothing in a status changes without its state changing (IPs, namespaces, start and finish
 * times, exit codes, mounts are fixed once the state is), so a status whose listed state is
 * unchanged need not be read again. Entries go when a listing no longer shows the object.
 */
export class StatusCache {
  readonly #sandboxes = new Map<string, { state: number; status: RuntimeSandboxStatus }>();
  readonly #containers = new Map<string, { state: number; status: RuntimeContainerStatus }>();
  /** The sandbox and container IDs each pod's last status read listed (to prune per pod). */
  readonly #idsByPod = new Map<string, readonly string[]>();

  /** The sandbox's status if it was read in this state. */
  sandboxStatus(id: string, state: number): RuntimeSandboxStatus | undefined {
    const cached = this.#sandboxes.get(id);
    return cached && cached.state === state ? cached.status : undefined;
  }

  /** The container's status if it was read in this state. */
  containerStatus(id: string, state: number): RuntimeContainerStatus | undefined {
    const cached = this.#containers.get(id);
    return cached && cached.state === state ? cached.status : undefined;
  }

  rememberSandbox(id: string, state: number, status: RuntimeSandboxStatus): void {
    this.#sandboxes.set(id, { state, status });
  }

  rememberContainer(id: string, state: number, status: RuntimeContainerStatus): void {
    // An unknown state may still fill in; every other is settled until it changes.
    if (state !== ContainerState.CONTAINER_UNKNOWN) this.#containers.set(id, { state, status });
  }

  forgetContainer(id: string): void {
    this.#containers.delete(id);
  }

  /** Forgets the statuses of the pod's sandboxes and containers its own listing no longer shows. */
  pruneOfPod(uid: string, listed: readonly string[]): void {
    const before = this.#idsByPod.get(uid);
    if (before) {
      const now = new Set(listed);
      for (const id of before) {
        if (now.has(id)) continue;
        this.#sandboxes.delete(id);
        this.#containers.delete(id);
      }
    }
    if (listed.length > 0) this.#idsByPod.set(uid, listed);
    else this.#idsByPod.delete(uid);
  }

  /**
   * Forgets the statuses of sandboxes and containers a full listing no longer shows, once there
   * are more of them than the listing holds (`listedPods`: the pods it shows, when known). Below
   * that, an entry of a removed object waits for a later listing: IDs are never reused, so it
   * is only memory, bounded by the listing, and a relist of 100,000 pods need not build three
   * sets of every ID each second to find none.
   */
  prune(sandboxes: readonly ListedObject[], containers: readonly ListedObject[], listedPods?: number): void {
    if (this.#sandboxes.size > sandboxes.length) {
      const listed = new Set(sandboxes.map((x) => x.id));
      for (const id of this.#sandboxes.keys()) if (!listed.has(id)) this.#sandboxes.delete(id);
    }
    if (this.#containers.size > containers.length) {
      const listed = new Set(containers.map((x) => x.id));
      for (const id of this.#containers.keys()) if (!listed.has(id)) this.#containers.delete(id);
    }
    if (this.#idsByPod.size > 0 && (listedPods === undefined || this.#idsByPod.size > listedPods)) {
      const pods = new Set<string>();
      for (const x of [...sandboxes, ...containers]) {
        const uid = x.labels[podUIDLabel];
        if (uid) pods.add(uid);
      }
      for (const uid of this.#idsByPod.keys()) if (!pods.has(uid)) this.#idsByPod.delete(uid);
    }
  }
}
