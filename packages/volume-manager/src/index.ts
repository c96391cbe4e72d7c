/**
 * Desired and actual state of pod volumes, the reconciler, plugins and the atomic writer.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
