/**
 * Typed promise clients for the CRI v1 RuntimeService and ImageService over gRPC, plus an in-memory CRI server for tests.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
