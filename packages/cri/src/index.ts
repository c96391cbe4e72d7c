/**
 * Typed promise clients for the CRI v1 RuntimeService and ImageService over gRPC, plus an
 * in-memory CRI server for tests (`@kubelet-kit/cri/testing`).
 *
 * @packageDocumentation
 */

export { grpcTarget } from './endpoint.js';
export { CriError, type CriErrorCode, type CriErrorOptions, criErrorCodeOf, grpcStatusOf } from './errors.js';
export * from './generated/types.js';
export {
  type CallOptions,
  type CriClientOptions,
  DEFAULT_CRI_TIMEOUT_MS,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PULL_IMAGE_TIMEOUT_MS,
  type PartialMessage,
} from './options.js';
export { ImageServiceClient } from './remote-image.js';
export { RuntimeServiceClient } from './remote-runtime.js';

/** Package version. @public */
export const VERSION = '0.1.0';
