/**
 * One serialized worker per pod with the kubelet state machine: syncing, terminating, terminated.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
