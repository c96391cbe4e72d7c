/**
 * The contracts of kubelet-kit: Kubernetes types, the pod update stream, the runtime-neutral
 * pod status model, the interfaces managers use to reach each other, `Clock`, `Backoff` and
 * `Logger`. No runtime dependencies. Test doubles are in `@kubelet-kit/core/testing`.
 *
 * @packageDocumentation
 */

// Kubernetes API types, from `kubernetes-types`, so every package names them the same way.
export type { Quantity } from 'kubernetes-types/api/resource.js';
export type { Lease, LeaseSpec } from 'kubernetes-types/coordination/v1.js';
// core/v1 Event is named as client-node names it: `Event` is the DOM's.
export type {
  Affinity,
  AppArmorProfile,
  Capabilities,
  ConfigMap,
  ConfigMapEnvSource,
  ConfigMapKeySelector,
  ConfigMapProjection,
  ConfigMapVolumeSource,
  ContainerImage,
  ContainerPort,
  ContainerState,
  ContainerStateRunning,
  ContainerStateTerminated,
  ContainerStateWaiting,
  DownwardAPIProjection,
  DownwardAPIVolumeFile,
  DownwardAPIVolumeSource,
  EmptyDirVolumeSource,
  EnvFromSource,
  Event as CoreV1Event,
  EventSource,
  ExecAction,
  GRPCAction,
  HostAlias,
  HostPathVolumeSource,
  HTTPGetAction,
  HTTPHeader,
  KeyToPath,
  LifecycleHandler,
  LocalObjectReference,
  Node,
  NodeAddress,
  NodeCondition,
  NodeDaemonEndpoints,
  NodeSpec,
  NodeStatus,
  NodeSystemInfo,
  ObjectFieldSelector,
  ObjectReference,
  PodDNSConfig,
  PodIP,
  Probe,
  ResourceFieldSelector,
  SeccompProfile,
  Secret,
  SecretEnvSource,
  SecretKeySelector,
  SecretProjection,
  SecretVolumeSource,
  SecurityContext,
  Service,
  ServiceAccountTokenProjection,
  ServicePort,
  ServiceSpec,
  SleepAction,
  Taint,
  TCPSocketAction,
  Toleration,
  VolumeMount,
} from 'kubernetes-types/core/v1.js';
export type { MicroTime, ObjectMeta, OwnerReference, Time } from 'kubernetes-types/meta/v1.js';
export type {
  Overhead,
  RuntimeClass,
  Scheduling,
} from 'kubernetes-types/node/v1.js';
// The kubelet API's authentication and authorization over TokenReview and SubjectAccessReview.
export type {
  ResourceAttributes,
  ReviewSubjectAccess,
  ReviewToken,
  SubjectAccessReviewResult,
  TokenReviewResult,
  UserInfo,
} from './auth-review.js';
export { Backoff, type BackoffOptions, jitter } from './backoff.js';
export { type Clock, RealClock, type Timer } from './clock.js';
// The runtime's container event stream (CRI GetContainerEvents), for the evented PLEG.
export {
  type ContainerEventSource,
  ContainerEventsUnimplementedError,
  type RuntimeContainerEvent,
  type RuntimeContainerEventType,
} from './container-events.js';
// The pod types as of v1.34: kubernetes-types (1.30) plus the fields added since.
export type {
  Container,
  ContainerExtendedResourceRequest,
  ContainerRestartRule,
  ContainerRestartRuleOnExitCodes,
  ContainerStatus,
  ContainerUser,
  EnvVar,
  EnvVarSource,
  EphemeralContainer,
  FileKeySelector,
  ImageVolumeSource,
  Lifecycle,
  LinuxContainerUser,
  Pod,
  PodCertificateProjection,
  PodCondition,
  PodExtendedResourceClaimStatus,
  PodList,
  PodSecurityContext,
  PodSpec,
  PodStatus,
  ProjectedVolumeSource,
  ResourceClaim,
  ResourceHealth,
  ResourceRequirements,
  ResourceStatus,
  Volume,
  VolumeProjection,
} from './core-v1.js';
export { CodedError, NetworkNotReadyError } from './errors.js';
export { type EventObjectRef, type EventRecorder, type EventType, noopEventRecorder } from './events.js';
export type { IntOrString } from './k8s.js';
export { type LeaseApi, LeaseApiError, type LeaseApiErrorCode, type NodeUidGetter } from './lease-api.js';
export { type LogFn, type Logger, noopLogger } from './logger.js';
export {
  type NodeApi,
  NodeApiError,
  type NodeApiErrorCode,
  type NodePressureProvider,
} from './node-api.js';
// The local store of API objects the adapters write through, for offline operation.
export {
  InMemoryOfflineStore,
  type OfflineStore,
  type OfflineStoreEntry,
  type OfflineStoreKind,
} from './offline-store.js';
export { goArch, goOS } from './platform.js';
export {
  buildPodFullName,
  deepCopy,
  getPodFullName,
  getPodSource,
  getPodUID,
  isCriticalPod,
  isMirrorPod,
  isRestartableInitContainer,
  isStaticPod,
  podEventReference,
  podSandboxChanged,
  runtimePodFromStatus,
  type SandboxChange,
} from './pod-helpers.js';
export {
  AllSource,
  ApiserverSourceName,
  ConfigFirstSeenAnnotationKey,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  FileSourceName,
  HttpSourceName,
  type PodOperation,
  type PodSourceName,
  type PodUpdate,
  type SyncPodType,
  SystemCriticalPriority,
} from './pod-update.js';
export type {
  CachedPodStatus,
  MirrorClient,
  MountedVolume,
  NodeAllocatable,
  ObjectGetter,
  PodStateProvider,
  PodStatusCache,
  PodStatusProvider,
  ProbeResult,
  ProbeResultsReader,
  ProbeResultUpdate,
  RuntimeClassGetter,
  Subpath,
  Subpather,
  VolumeProvider,
} from './providers.js';
export {
  isValidQuantity,
  parseQuantity,
  QuantityParseError,
  quantityMilliValue,
  quantityValue,
} from './quantity.js';
export {
  type ContainerType,
  isPodLevelLimitsSet,
  isPodLevelResourcesSet,
  isSupportedPodLevelResource,
  type PodResourcesOptions,
  podLimits,
} from './resource-helpers.js';
export {
  type CommandRunner,
  CommandTimeoutError,
  type ContainerGCPolicy,
  type ContainerID,
  ContainerReasons,
  type ExecResult,
  formatContainerID,
  PodSyncError,
  type PodSyncResult,
  parseContainerID,
  podSyncResultError,
  type RunInContainerOptions,
  type Runtime,
  type RuntimeCondition,
  type RuntimeContainer,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimeContainerUser,
  type RuntimeGarbageCollectOptions,
  type RuntimeGetPodStatusOptions,
  type RuntimeKillPodOptions,
  type RuntimePod,
  type RuntimePodStatus,
  type RuntimeSandboxStatus,
  type RuntimeSyncPodOptions,
  type RuntimeVersion,
  type SandboxState,
  type SyncAction,
  type SyncResult,
} from './runtime.js';
export type { ServiceLister } from './services.js';
export type {
  ContainerStats,
  CPUStats,
  FsStats,
  InterfaceStats,
  MemoryStats,
  NetworkStats,
  NodeStats,
  PodReference,
  PodStats,
  ProcessStats,
  RlimitStats,
  RuntimeStats,
  Summary,
  VolumeStats,
} from './stats-summary.js';
// Service account tokens for projected volumes (TokenRequest).
export type {
  BoundObjectReference,
  TokenGetter,
  TokenRequest,
  TokenRequestSpec,
  TokenRequestStatus,
} from './token.js';
