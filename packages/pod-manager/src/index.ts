/**
 * The desired pods by UID and full name, static and mirror pods and their translation.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
