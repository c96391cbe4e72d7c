/**
 * The kubelet-kit node agent: sync loop, pod handlers, admission, HTTP endpoints, metrics and
 * the `kubelet-kit` command.
 *
 * @packageDocumentation
 */

export * from './admission.js';
export * from './agent.js';
export * from './api-pod-status.js';
export * from './container-status.js';
export type * from './deps.js';
export * from './instrumented.js';
export * from './kubelet.js';
export * from './metrics.js';
export * from './node-info.js';
export * from './pod-feature-admission.js';
export * from './pod-table.js';
export * from './reason-cache.js';
export * from './runtime-classes.js';
export * from './server.js';
export * from './sysctl.js';
