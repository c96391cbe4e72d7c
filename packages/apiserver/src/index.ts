/**
 * Every adapter of kubelet-kit to a Kubernetes API server, over `@kubernetes/client-node`: the
 * pod source, the status sink, the ConfigMap and Secret getter, the mirror pod client, the
 * RuntimeClass getter and the Service lister. The managers know no API server; this package
 * plugs them into one.
 *
 * @packageDocumentation
 */

export {
  defaultAggregateIntervalInSeconds,
  defaultAggregateMaxEvents,
  defaultSpamBurst,
  defaultSpamQPS,
  type EventCorrelateResult,
  EventCorrelator,
  type EventCorrelatorOptions,
  type EventPatch,
  eventAggregatorByReasonFunc,
  eventAggregatorByReasonMessageFunc,
  getEventKey,
  getSpamKey,
  maxLruCacheEntries,
} from './event-correlator.js';
export {
  ApiserverEventRecorder,
  type ApiserverEventRecorderOptions,
  type ApiserverEventRecorderStats,
  DefaultEventBurst,
  DefaultEventQPS,
  maxQueuedEvents,
} from './event-recorder.js';
export {
  ApiserverEventSink,
  type ApiserverEventSinkOptions,
  defaultEventSleepMs,
  type EventApi,
  type EventSink,
  maxTriesPerEvent,
} from './event-sink.js';
export {
  ApiserverLeaseClient,
  type ApiserverLeaseClientOptions,
  type LeaseCoordinationApi,
  type NodeReadApi,
} from './lease-client.js';
export { type ClientNodeModule, loadClientNode } from './load-client-node.js';
export {
  ApiserverMirrorClient,
  type ApiserverMirrorClientOptions,
  type MirrorPodApi,
} from './mirror-client.js';
export {
  ApiserverNodeClient,
  type ApiserverNodeClientOptions,
  type NodeStatusApi,
} from './node-client.js';
export { ApiserverObjectGetter, type ApiserverObjectGetterOptions } from './object-getter.js';
export { ApiserverSource, type ApiserverSourceOptions, type ApiserverSourceStats } from './pod-source.js';
export {
  ApiserverRuntimeClassList,
  type ApiserverRuntimeClassListOptions,
  type ApiserverRuntimeClassListStats,
} from './runtime-classes.js';
export {
  ApiserverServiceLister,
  type ApiserverServiceListerOptions,
  type ApiserverServiceListerStats,
} from './service-lister.js';
export {
  ApiserverStatusSink,
  type ApiserverStatusSinkOptions,
  createMergePatch,
  type PodStatusApi,
  StatusConflictError,
  toPlainObject,
} from './status-sink.js';
export {
  TOKEN_GC_PERIOD_MS,
  TOKEN_MAX_JITTER_MS,
  TOKEN_MAX_TTL_MS,
  TokenManager,
  type TokenManagerOptions,
} from './token-manager.js';
export {
  type RequestServiceAccountToken,
  type ServiceAccountTokenApi,
  serviceAccountTokenRequester,
  TokenRequestError,
} from './token-request.js';
export {
  KUBELET_COMPATIBLE_VERSION,
  type KubeletUserAgentOptions,
  kubeletUserAgent,
  setUserAgent,
} from './user-agent.js';

export {
  DEFAULT_MAX_IDLE_TIME_MS,
  DEFAULT_OBJECT_TTL_MS,
  OBJECT_TTL_ANNOTATION,
  objectTtlFromNode,
  WatchingObjectGetter,
  type WatchingObjectGetterOptions,
  type WatchingObjectGetterStats,
} from './watch-object-getter.js';

/** Package version. @public */
export const VERSION = '0.1.0';
// TokenReview and SubjectAccessReview for the kubelet API's authentication and authorization.
export {
  AuthReviewError,
  type SubjectAccessReviewApi,
  subjectAccessReviewer,
  type TokenReviewApi,
  tokenReviewer,
} from './auth-review.js';
// Offline operation: the default on-disk store the adapters write through, and the Node kept in it.
export { DiskOfflineStore, type DiskOfflineStoreOptions } from './disk-store.js';
export { nodeApiWithStore, storedNode } from './offline-node.js';
