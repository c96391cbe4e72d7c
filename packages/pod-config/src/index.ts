/**
 * Pod sources (file, http, apiserver, programmatic) merged into one ordered stream of PodUpdate, as the kubelet does.
 *
 * @packageDocumentation
 */

export type * from './source.js';

/** Package version. @public */
export const VERSION = '0.1.0';
