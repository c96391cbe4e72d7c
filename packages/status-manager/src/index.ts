/**
 * Versioned pod status cache with the kubelet phase and condition rules, and sinks that write status out.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
