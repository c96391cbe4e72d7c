/**
 * Test doubles for the pod workers and their callers: a recording {@link PodSyncer}, a
 * {@link PodStatusCache} on a fake clock, and a helper that lets workers run until idle.
 *
 * @packageDocumentation
 */

// The syncer contract the doubles implement, so this entry point's API stands on its own.
export type { PodStatusFunc, PodSyncContext, PodSyncer, SyncPodResult } from '../types.js';
export * from './fake-pod-status-cache.js';
export * from './recording-pod-syncer.js';
export * from './test-pods.js';
