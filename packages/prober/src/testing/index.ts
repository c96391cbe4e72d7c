/**
 * Test doubles of `@kubelet-kit/prober` for its callers' tests.
 *
 * @packageDocumentation
 */

export type { ProbeManager } from '../prober-manager.js';
export type { ResultsManager } from '../results-manager.js';
export * from './fake-probe-manager.js';
