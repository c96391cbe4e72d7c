/**
 * Versioned pod status cache with the kubelet phase and condition rules, and sinks that write status out.
 *
 * @packageDocumentation
 */

export {
  ConditionReasons,
  type GeneratePodConditionsInput,
  generateContainersReadyCondition,
  generateContainersReadyConditionForTerminalPhase,
  generatePodConditions,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyConditionForTerminalPhase,
  generatePodReadyToStartContainersCondition,
  PodConditionTypes,
  podConditionByKubelet,
  podConditionSharedByKubelet,
} from './generate.js';
export {
  InMemoryStatusSink,
  type InMemoryStatusSinkOptions,
  type StatusWriteRecord,
} from './in-memory-sink.js';
export {
  getContainerStatus,
  getPhase,
  hasAnyRegularContainerStarted,
  isPodPhaseTerminal,
  type PodPhase,
  type ReconciledPhase,
  reconcilePodPhase,
} from './pod-phase.js';
export {
  ContainerStatusUnknownMessage,
  ContainerStatusUnknownReason,
  DefaultStatusSyncPeriodMs,
  newStatusManager,
  type PodDeletionSafetyProvider,
  PodStatusManager,
  type StatusManager,
  type StatusManagerOptions,
  type StatusPodManager,
  type VersionedPodStatus,
} from './status-manager.js';
export {
  canBeDeleted,
  checkContainerStateTransition,
  dropEmptyContainerStates,
  formatRfc3339,
  hasPodInitialized,
  initializedContainerCount,
  isPodStatusByKubeletEqual,
  MaxPodTerminationMessageLogLength,
  mergePodStatus,
  normalizeStatus,
  normalizeTimestamp,
  semanticEqual,
  transitionTimeConditionTypes,
  updateLastTransitionTime,
  updatePodCondition,
} from './status-rules.js';
export type {
  StatusDeleteOptions,
  StatusSink,
  StatusWriteOptions,
  StatusWriteOutcome,
  StatusWriteResult,
} from './status-sink.js';
