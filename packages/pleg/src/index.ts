/**
 * The pod lifecycle event generator (relist) and the pod status cache.
 *
 * @packageDocumentation
 */

export { RuntimePodStatusCache } from './cache.js';
export { EventChannel } from './event-channel.js';
export {
  DefaultEventedPLEGMaxStreamRetries,
  EventedPLEG,
  type EventedPLEGOptions,
  type EventedPLEGStats,
  EventedRelistPeriodMs,
  EventedRelistThresholdMs,
  GlobalCacheUpdatePeriodMs,
} from './evented.js';
export {
  GenericPLEG,
  type GenericPLEGOptions,
  type PLEGStats,
  type PodInspection,
  type RelistResult,
} from './generic.js';
export {
  type PLEGHealth,
  PLEGNotHealthyError,
  type PodLifecycleEvent,
  type PodLifecycleEventGenerator,
  type PodLifecycleEventListener,
  type PodLifecycleEventType,
} from './pleg.js';
