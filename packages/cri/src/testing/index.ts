/**
 * Test doubles for @kubelet-kit/cri: an in-memory CRI server speaking real gRPC.
 *
 * @packageDocumentation
 */

export type { CriErrorCode } from '../errors.js';
export type { FakeImage } from './fake-image-service.js';
export type {
  ExecCall,
  ExecHandler,
  ExecMatcher,
  ExecResult,
  ExitOptions,
  FakeContainerUsage,
  FakePodSandboxUsage,
  FakeRuntimeFeatures,
  FakeRuntimeHandler,
  RuntimeConditionState,
  StartedContainer,
  StreamingCall,
} from './fake-runtime-service.js';
export { type CallRecord, InMemoryCriServer, type InMemoryCriServerOptions } from './in-memory-server.js';
