/**
 * Pod sources (file, http, programmatic; the API server's is in @kubelet-kit/apiserver) merged into one ordered stream of PodUpdate, as the kubelet does.
 *
 * @packageDocumentation
 */

export * from './api-references.js';
export * from './common.js';
export * from './config.js';
export * from './defaults.js';
export * from './errors.js';
export * from './file.js';
export * from './http.js';
export type * from './source.js';
export * from './static.js';
export * from './validation.js';

/** Package version. @public */
export const VERSION = '0.1.0';
