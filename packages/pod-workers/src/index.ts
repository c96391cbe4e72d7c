/**
 * One serialized worker per pod with the kubelet state machine: syncing, terminating, terminated.
 *
 * @packageDocumentation
 */

export {
  ExceededGracePeriodError,
  type KillPodFunc,
  type KillPodNowOptions,
  type KillPodRequest,
  killPodNow,
} from './kill-pod-now.js';
export {
  BasicPodWorkers,
  newPodWorkers,
  type PodWorkerMetrics,
  type PodWorkersOptions,
} from './pod-workers.js';
export type {
  KillPodOptions,
  PodStatusFunc,
  PodSyncContext,
  PodSyncer,
  PodSyncStatusView,
  PodWorkerState,
  PodWorkerSync,
  PodWorkers,
  SyncPodResult,
  UpdatePodOptions,
} from './types.js';
export { BasicWorkQueue, type BasicWorkQueueOptions, type WorkQueue } from './work-queue.js';
