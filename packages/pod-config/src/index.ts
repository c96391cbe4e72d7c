/**
 * Pod sources (file, http, programmatic; the API server's is in @kubelet-kit/apiserver) merged into one ordered stream of PodUpdate, as the kubelet does.
 *
 * @packageDocumentation
 */

export { type APIObjectReference, apiObjectReference } from './api-references.js';
export {
  applyStaticPodDefaults,
  type DecodeStaticPodOptions,
  decodeStaticPods,
  generatePodName,
  maxConfigLength,
  maxManifestDepth,
  parseManifest,
  type StaticPodOrigin,
  staticPodUID,
} from './common.js';
export {
  PodConfig,
  type PodConfigEvents,
  type PodConfigNotificationMode,
  type PodConfigOptions,
  type PodConfigUpdatesOptions,
} from './config.js';
export {
  DefaultSchedulerName,
  DefaultTerminationGracePeriodSeconds,
  DefaultTerminationMessagePath,
  DefaultVolumeFileMode,
  defaultImagePullPolicy,
  setPodDefaults,
  volumeSourcesOf,
} from './defaults.js';
export {
  type FieldError,
  type PodObjectRef,
  type PodOrigin,
  PodSourceError,
  PodValidationError,
} from './errors.js';
export {
  DefaultFileDebounceMs,
  FileSource,
  type FileSourceOptions,
  type FileWatcher,
  isIgnoredManifestName,
  nodeWatch,
  type WatchFunction,
} from './file.js';
export { type FetchFunction, HttpSource, type HttpSourceOptions } from './http.js';
export type { PodSource, PodSourceSink } from './source.js';
export { type StaticPodHandle, StaticPodSource, type StaticPodSourceOptions } from './static.js';
export {
  isDNS1123Label,
  isDNS1123Subdomain,
  podFieldErrors,
  validatePod,
  validatePodSchema,
} from './validation.js';

/** Package version. @public */
export const VERSION = '0.1.0';
