/**
 * The kubelet-kit node agent: sync loop, pod handlers, admission, HTTP endpoints, metrics and
 * the `kubelet-kit` command.
 *
 * @packageDocumentation
 */

export * from './admission.js';
export * from './api-pod-status.js';
export * from './container-status.js';
export type * from './deps.js';
export * from './kubelet.js';
export * from './metrics.js';
export * from './reason-cache.js';
export * from './server.js';
