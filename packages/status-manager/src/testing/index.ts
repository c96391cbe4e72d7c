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
export {
  FakePodDeletionSafety,
  FakeStatusPodManager,
} from './fakes.js';
