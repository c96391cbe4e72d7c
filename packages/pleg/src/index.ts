/**
 * The pod lifecycle event generator (relist) and the pod status cache.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
