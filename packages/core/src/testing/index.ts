/**
 * Test doubles for the contracts in `@kubelet-kit/core`: a fake clock and the helper that drives
 * it until a condition holds, a logger and an event recorder that keep what they are given, and
 * a fake `Runtime`.
 *
 * @packageDocumentation
 */

export { type AdvanceUntilOptions, advanceUntil, settleRealIO } from './advance-until.js';
export { FakeClock } from './fake-clock.js';
export { FakeRuntime, type FakeRuntimeOptions, type RuntimeMethod } from './fake-runtime.js';
export { InMemoryEventRecorder, type RecordedEvent } from './in-memory-event-recorder.js';
export { InMemoryLogger, type LogRecord } from './in-memory-logger.js';
