/**
 * The kubelet's eviction manager (upstream pkg/kubelet/eviction): thresholds on memory, disk
 * and PID signals, node-level reclaim, pod ranking and eviction, pressure conditions and the
 * admission check under pressure. It imports only `@kubelet-kit/core`: the stats summary, the
 * pod kill, garbage collection and events come in as functions.
 *
 * @packageDocumentation
 */
export { EvictionManager, type EvictionManagerOptions } from './eviction-manager.js';
export {
  EvictionConfigError,
  isHardEvictionThreshold,
  makeSignalObservations,
  type PressureCondition,
  parseThresholdConfig,
  type ReclaimResource,
  type SignalObservation,
  type SignalObservations,
  type ThresholdConfig,
  thresholdQuantity,
  thresholdsMet,
} from './helpers.js';
export {
  configurableSignals,
  defaultEvictionHard,
  type EvictionAdmitResult,
  type EvictionEventSink,
  type EvictionKillPodFunc,
  type EvictionManagerApi,
  type EvictionReclaimers,
  evictedReason,
  type Signal,
  type StatsFunc,
  type Threshold,
  type ThresholdValue,
} from './types.js';
