import type { Pod, PodStatus, RuntimePod, RuntimePodStatus, SyncPodType } from '@kubelet-kit/core';

/** Where a pod is in the worker's lifecycle (upstream `PodWorkerState`). @public */
export type PodWorkerState = 'sync' | 'terminating' | 'terminated';

/** Changes the API status a pod gets when it is killed (upstream `PodStatusFunc`); mutates in place. @public */
export type PodStatusFunc = (podStatus: PodStatus) => void;

/** How a `kill` update terminates the pod (upstream `KillPodOptions`, 1.31–1.34). @public */
export interface KillPodOptions {
  /**
   * Called once when the kill completes: `syncTerminatingPod` succeeded, or the pod was already
   * terminated, or the options could not apply (upstream closes `CompletedCh`).
   */
  readonly onCompleted?: () => void;
  /** The kubelet evicts the pod; its content may be removed more aggressively. */
  readonly evict?: boolean;
  /** Sets the status the pod reports while it is terminated this way. */
  readonly podStatusFunc?: PodStatusFunc;
  /** A grace period (seconds) that can only shorten the one in force. */
  readonly podTerminationGracePeriodSecondsOverride?: number;
}

/** One change for a pod worker (upstream `UpdatePodOptions`). @public */
export interface UpdatePodOptions {
  readonly updateType: SyncPodType;
  /** When the change was made (epoch ms), for the pod worker duration metric. */
  readonly startTime?: number;
  /** The pod; required unless `runningPod` is set. */
  readonly pod?: Pod;
  /** The mirror pod of a static pod. */
  readonly mirrorPod?: Pod;
  /** A pod only the runtime knows of; used only with `kill`, ignored when `pod` is set. */
  readonly runningPod?: RuntimePod;
  readonly killPodOptions?: KillPodOptions;
}

/** What a pod worker reports of one pod to housekeeping (upstream `PodWorkerSync`). @public */
export interface PodWorkerSync {
  readonly state: PodWorkerState;
  /** The pod is not in the desired set passed to `syncKnownPods`. */
  readonly orphan: boolean;
  /** The worker has seen a pod spec for the UID. */
  readonly hasConfig: boolean;
  /** The worker's pod comes from a static source. */
  readonly static: boolean;
}

/** The context of one sync: aborted when a kill or a shorter grace period supersedes it. @public */
export interface PodSyncContext {
  readonly signal: AbortSignal;
}

/** The result of {@link PodSyncer.syncPod}. @public */
export interface SyncPodResult {
  /** The pod reached a terminal phase; the worker moves it to terminating. */
  readonly isTerminal: boolean;
}

/**
 * The pod lifecycle operations the caller (the kubelet) supplies (upstream `podSyncer`). Each may
 * run concurrently for different pods, never for the same one. A method that sees its context
 * aborted should reject soon; the worker then treats the call as cancelled, not failed.
 * @public
 */
export interface PodSyncer {
  /** Sets the pod up and (re)starts its containers. Reject to retry after the error backoff. */
  syncPod(
    ctx: PodSyncContext,
    updateType: SyncPodType,
    pod: Pod,
    mirrorPod: Pod | undefined,
    podStatus: RuntimePodStatus,
  ): Promise<SyncPodResult>;
  /** Stops every container; repeated with shrinking grace periods until it resolves. */
  syncTerminatingPod(
    ctx: PodSyncContext,
    pod: Pod,
    podStatus: RuntimePodStatus,
    gracePeriod: number | undefined,
    podStatusFn?: PodStatusFunc,
  ): Promise<void>;
  /** Stops the containers of a pod that only the runtime knows of. */
  syncTerminatingRuntimePod(ctx: PodSyncContext, runningPod: RuntimePod): Promise<void>;
  /** Releases what must go before the pod is finished on the node (volumes, dirs). */
  syncTerminatedPod(ctx: PodSyncContext, pod: Pod, podStatus: RuntimePodStatus): Promise<void>;
}

/** A read-only copy of one worker's state (upstream `podSyncStatus`). Times are epoch ms. @public */
export interface PodSyncStatusView {
  readonly fullname: string;
  /** An update is pending or being worked on. */
  readonly working: boolean;
  /** The newest update the worker has not yet taken. */
  readonly pendingUpdate: UpdatePodOptions | undefined;
  /** What the worker acts on; merged from every update it took. */
  readonly activeUpdate: UpdatePodOptions | undefined;
  /** When the worker first saw the pod. */
  readonly syncedAt: number;
  readonly startedAt: number | undefined;
  readonly terminatingAt: number | undefined;
  readonly terminatedAt: number | undefined;
  /** Seconds; 0 until termination is requested. */
  readonly gracePeriod: number;
  /** Completion callbacks of kills waiting for the pod to be terminated. */
  readonly notifyPostTerminating: number;
  /** Status functions of kills, the last one applies. */
  readonly statusPostTerminating: readonly PodStatusFunc[];
  readonly startedTerminating: boolean;
  readonly deleted: boolean;
  readonly evicted: boolean;
  readonly finished: boolean;
  readonly restartRequested: boolean;
  readonly observedRuntime: boolean;
}

/**
 * The pod workers (upstream `PodWorkers`): one serialized worker per pod UID, the source of
 * truth for which pods may have running containers.
 * @public
 */
export interface PodWorkers {
  /** Hands a change to the pod's worker; coalesces with any change it has not taken yet. */
  updatePod(options: UpdatePodOptions): void;
  /**
   * Forgets finished workers that are not desired (or want a restart) and starts terminating
   * orphans; reports the rest. Once called, unknown UIDs are taken as not running.
   */
  syncKnownPods(desiredPods: readonly Pod[]): Map<string, PodWorkerSync>;
  /** True once `syncTerminatingPod` succeeded for a known pod. */
  isPodKnownTerminated(uid: string): boolean;
  /** False once a known pod is terminated, or for an unknown pod after the first `syncKnownPods`. */
  couldHaveRunningContainers(uid: string): boolean;
  /** True once `syncTerminatedPod` succeeded, or for an unknown pod after the first `syncKnownPods`. */
  shouldPodBeFinished(uid: string): boolean;
  /** True once termination of a known pod was requested (it may still be setting up). */
  isPodTerminationRequested(uid: string): boolean;
  /** True once the worker saw the termination (no new containers will start). */
  shouldPodContainersBeTerminating(uid: string): boolean;
  /** True once all containers are stopped: runtime resources may go. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  /** True for an evicted pod, or a deleted one once terminated: all content may go. */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** True while the started static pod with this full name is terminating and not yet terminated. */
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean;
}
