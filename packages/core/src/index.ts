/**
 * The contracts of kubelet-kit: Kubernetes types, the pod update stream, the runtime-neutral
 * pod status model, the interfaces managers use to reach each other, `Clock`, `Backoff` and
 * `Logger`. No runtime dependencies.
 *
 * @packageDocumentation
 */

export * from './backoff.js';
export * from './clock.js';
export { NetworkNotReadyError } from './errors.js';
export * from './events.js';
export type * from './k8s.js';
export * from './logger.js';
export * from './pod-helpers.js';
export * from './pod-update.js';
export type * from './providers.js';
export * from './quantity.js';
export * from './runtime.js';
