import type { Pod, PodStatus, PodUpdate, ProbeResultUpdate, RuntimePodStatus } from '@kubelet-kit/core';

// The narrow views the agent needs of each manager. `createAgent` passes the packages' own
// implementations; tests and embedders can pass their own.

/**
 * The merged pod update stream (pod-config's `PodConfig`).
 *
 * @public
 */
export interface PodConfigView {
  updates(signal?: AbortSignal): AsyncIterable<PodUpdate>;
  /** True once every registered source has sent its first SET. */
  seenAllSources(): boolean;
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

/**
 * The status manager, as the agent drives it.
 *
 * @public
 */
export interface StatusManagerView {
  start(): void;
  stop(): void | Promise<void>;
  getPodStatus(uid: string): PodStatus | undefined;
  /** `getPodStatus(uid)?.phase` without the copy. */
  getPodPhase(uid: string): PodStatus['phase'] | undefined;
  setPodStatus(pod: Pod, status: PodStatus): void;
  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void;
  setContainerStartup(podUid: string, containerId: string, started: boolean): void;
  terminatePod(pod: Pod): void;
  removeOrphanedStatuses(podUids: ReadonlySet<string>): void;
}

/**
 * The probe manager, as the agent drives it.
 *
 * @public
 */
export interface ProbeManagerView {
  start(): void;
  stop(): void | Promise<void>;
  addPod(pod: Pod): void;
  removePod(pod: Pod): void;
  cleanupPods(desiredPodUids: ReadonlySet<string>): void;
  stopLivenessAndStartup(pod: Pod): void;
  updatePodStatus(pod: Pod, status: PodStatus): void;
  /** Subscribes to result changes of one probe type; returns the unsubscribe. */
  onResult(
    type: 'liveness' | 'readiness' | 'startup',
    listener: (update: ProbeResultUpdate) => void,
  ): () => void;
}

/**
 * The volume manager, as the agent drives it.
 *
 * @public
 */
export interface VolumeManagerView {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  waitForAttachAndMount(pod: Pod, options?: { readonly signal?: AbortSignal }): Promise<void>;
  waitForUnmount(pod: Pod, options?: { readonly signal?: AbortSignal }): Promise<void>;
}

/**
 * The PLEG, as the agent drives it.
 *
 * @public
 */
export interface PlegView {
  start(): void;
  stop(): void;
  watch(listener: (event: { readonly id: string; readonly type: string }) => void): () => void;
  healthy(): { readonly healthy: boolean; readonly error?: Error | string };
  /** Relists now (between the periodic relists); optional. */
  relist?(): Promise<void>;
  /**
   * Optional (the agent falls back to `relist`): a pod whose containers the agent is changing;
   * relists leave it alone until `inspectPods` reads it or `releasePod` lets go.
   */
  holdPod?(uid: string): void;
  releasePod?(uid: string): void;
  /**
   * Reads these pods' statuses into the cache now (or takes the `status` given, which the
   * runtime's sync reported) and sends their events.
   */
  inspectPods?(
    pods: readonly {
      readonly uid: string;
      readonly name: string;
      readonly namespace: string;
      readonly status?: RuntimePodStatus;
    }[],
  ): Promise<void>;
}

/** Re-exported for convenience of embedders writing their own views. */
export type { RuntimePodStatus };
