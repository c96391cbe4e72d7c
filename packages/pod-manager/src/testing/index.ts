/**
 * Test doubles for @kubelet-kit/pod-manager.
 *
 * @packageDocumentation
 */

/** Marker. @public */
export const TESTING = true;
