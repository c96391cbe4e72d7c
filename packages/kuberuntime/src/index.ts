/**
 * The kubelet generic runtime manager over CRI: computePodActions, syncPod, killPod, image pulls, CrashLoopBackOff, container GC.
 *
 * @packageDocumentation
 */

export * from './expansion.js';
export * from './helpers.js';
export * from './labels.js';
export * from './pod-actions.js';
export * from './qos.js';
export * from './resources.js';

/** Package version. @public */
export const VERSION = '0.1.0';
