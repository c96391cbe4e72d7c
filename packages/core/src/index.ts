/**
 * Contracts of kubelet-kit: Kubernetes types, PodUpdate, the runtime-neutral status model, Runtime, Clock, Backoff, Logger.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
