/**
 * Test doubles for the pod workers and their callers: a stand-in for the {@link PodWorkers}, a
 * recording {@link PodSyncer}, a {@link @kubelet-kit/core#PodStatusCache} on a fake clock, and
 * a helper that lets workers run until idle.
 *
 * @packageDocumentation
 */

// The contracts the doubles implement, so this entry point's API stands on its own.
export type {
  KillPodOptions,
  PodStatusFunc,
  PodSyncContext,
  PodSyncer,
  PodWorkerState,
  PodWorkerSync,
  PodWorkers,
  SyncPodResult,
  UpdatePodOptions,
} from '../types.js';
export {
  FakePodStatusCache,
  type FakePodStatusCacheOptions,
  type GetNewerThanRequest,
} from './fake-pod-status-cache.js';
export { FakePodWorkers, type FakePodWorkersOptions } from './fake-pod-workers.js';
export {
  type Drainable,
  drainWorkers,
  RecordingPodSyncer,
  type RecordingPodSyncerOptions,
  type SyncCall,
  type SyncCallKind,
  type SyncHook,
} from './recording-pod-syncer.js';
export { newNamedPod, newRunningPod } from './test-pods.js';
