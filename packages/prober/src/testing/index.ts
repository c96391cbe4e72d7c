/**
 * Test doubles of `@kubelet-kit/prober` for its callers' tests.
 *
 * @packageDocumentation
 */

// The interfaces the double implements, so this entry point's API stands on its own.
export type { ProbeManager } from '../prober-manager.js';
export type { ResultsManager } from '../results-manager.js';
export { FakeProbeManager, type FakeProbeManagerCall } from './fake-probe-manager.js';
