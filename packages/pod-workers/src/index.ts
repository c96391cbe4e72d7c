/**
 * One serialized worker per pod with the kubelet state machine: syncing, terminating, terminated.
 *
 * @packageDocumentation
 */

export * from './kill-pod-now.js';
export * from './pod-workers.js';
export type * from './types.js';
export * from './work-queue.js';
