/**
 * Test doubles for @kubelet-kit/status-manager.
 *
 * @packageDocumentation
 */

/** Marker. @public */
export const TESTING = true;
