/**
 * Test doubles for @kubelet-kit/status-manager.
 *
 * @packageDocumentation
 */

export {
  InMemoryStatusSink,
  type InMemoryStatusSinkOptions,
  type StatusWriteRecord,
} from '../in-memory-sink.js';
export type { PodDeletionSafetyProvider, StatusPodManager } from '../status-manager.js';
export type {
  StatusDeleteOptions,
  StatusSink,
  StatusWriteOptions,
  StatusWriteOutcome,
  StatusWriteResult,
} from '../status-sink.js';
export {
  FakePodDeletionSafety,
  FakeStatusPodManager,
} from './fakes.js';
