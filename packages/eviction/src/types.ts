// Upstream pkg/kubelet/eviction/api/types.go and eviction/types.go: signals, thresholds, the
// manager's configuration and what it needs of the rest of the kubelet.
import type { NodePressureProvider, Pod, PodStatus, Summary } from '@kubelet-kit/core';

/**
 * An eviction signal (upstream `evictionapi.Signal`). `allocatableMemory.available` is derived,
 * never configured: it mirrors a hard `memory.available` threshold when pods' allocatable is
 * enforced. The `containerfs.*` signals of a split image filesystem are not supported.
 * @public
 */
export type Signal =
  | 'memory.available'
  | 'allocatableMemory.available'
  | 'nodefs.available'
  | 'nodefs.inodesFree'
  | 'imagefs.available'
  | 'imagefs.inodesFree'
  | 'pid.available';

/** The signals a configuration may name, in upstream's order. @public */
export const configurableSignals: readonly Signal[] = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'pid.available',
];

/**
 * A threshold's value: an absolute quantity (bytes, inodes or processes) or a fraction of the
 * signal's capacity (upstream `ThresholdValue`).
 * @public
 */
export type ThresholdValue =
  | { readonly quantity: number; readonly binary: boolean }
  | { readonly percentage: number };

/**
 * An eviction threshold (upstream `evictionapi.Threshold`; the operator is always `LessThan`).
 * A hard threshold has no grace period.
 * @public
 */
export interface Threshold {
  readonly signal: Signal;
  readonly value: ThresholdValue;
  /** Milliseconds the signal must stay past the threshold before pods are evicted; 0 for a hard one. */
  readonly gracePeriodMs: number;
  /** Reclaim this much past the threshold before it counts as resolved. */
  readonly minReclaim?: ThresholdValue;
}

/** Upstream's default hard thresholds (`DefaultEvictionHard`, Linux). @public */
export const defaultEvictionHard: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

/** A pod condition type the kubelet reports for an eviction (upstream `DisruptionTarget`). */
export const disruptionTargetCondition = 'DisruptionTarget';

/** The reason set on pods failed by the eviction manager (upstream `eviction.Reason`). @public */
export const evictedReason = 'Evicted';

/**
 * Kills a pod and resolves once it is terminated; `statusFn` writes the status it reports
 * (upstream `KillPodFunc`). The manager waits for each call.
 * @public
 */
export type EvictionKillPodFunc = (request: {
  readonly pod: Pod;
  readonly isEvicted: boolean;
  readonly gracePeriodOverride: number;
  readonly statusFn: (status: PodStatus) => void;
}) => Promise<void>;

/** Node-level reclaim of a filesystem: container and image garbage collection. @public */
export interface EvictionReclaimers {
  /** Removes every container no pod needs any more (upstream `ContainerGC.DeleteAllUnusedContainers`). */
  deleteAllUnusedContainers?(): Promise<void>;
  /** Removes every image no container uses (upstream `ImageGC.DeleteUnusedImages`). */
  deleteUnusedImages?(): Promise<void>;
}

/** Records the manager's events (upstream's recorder, narrowed to what it sends). @public */
export interface EvictionEventSink {
  /** A Warning on the node: `EvictionThresholdMet`, "Attempting to reclaim <resource>". */
  nodeEvent(reason: string, message: string): void;
  /** A Warning on the pod: `Evicted` with the eviction message and upstream's annotations. */
  podEvent(pod: Pod, reason: string, message: string, annotations: Readonly<Record<string, string>>): void;
}

/** The manager's verdict on a pod asking to be admitted (upstream `PodAdmitResult`). @public */
export interface EvictionAdmitResult {
  readonly admit: boolean;
  readonly reason?: string;
  readonly message?: string;
}

/** The manager's surface to the rest of the agent. @public */
export interface EvictionManagerApi extends NodePressureProvider {
  /** Refuses pods the node cannot take under its current pressure (upstream `Admit`). */
  admit(pod: Pod): EvictionAdmitResult;
}

/** What a pod's statistics were when the manager last looked. @internal */
export type StatsFunc = (pod: Pod) => Summary['pods'][number] | undefined;
