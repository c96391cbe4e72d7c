/**
 * Test doubles for @kubelet-kit/cri.
 *
 * @packageDocumentation
 */

/** Marker. @public */
export const TESTING = true;
