/**
 * The kubelet generic runtime manager over CRI: computePodActions, syncPod, killPod, image pulls, CrashLoopBackOff, container GC.
 *
 * @packageDocumentation
 */

// Building blocks other packages of this repo (node, bench) use: @internal.
export { validateAppArmor } from './apparmor.js';
// The manager, its options and what it reports.
export type { KillContainerOptions } from './container.js';
export {
  type ContainerConfigContext,
  type GeneratedContainerConfig,
  generateContainerConfig,
  type ImageUser,
} from './container-config.js';
export {
  ContainerLogManager,
  type ContainerLogManagerOptions,
  defaultContainerLogMaxFiles,
  defaultContainerLogMaxSizeBytes,
  defaultContainerLogMaxWorkers,
  defaultContainerLogMonitorIntervalMs,
  type LogRotationRuntimeService,
} from './container-log-manager.js';
export {
  DNSConfigurer,
  type DNSConfigurerOptions,
  type DNSOptions,
  MaxDNSNameservers,
  MaxDNSSearchListChars,
  MaxDNSSearchPaths,
} from './dns.js';
export type { EnvContext } from './env.js';
export { KubeRuntimeError, type KubeRuntimeErrorCode } from './errors.js';
export type { HostsMountOptions } from './etc-hosts.js';
export type { GCPodStateProvider } from './gc.js';
export { hashContainer, shouldContainerBeRestarted } from './helpers.js';
export {
  DefaultImageGCPolicy,
  type ImageFsStats,
  ImageGCManager,
  type ImageGCManagerOptions,
  ImageGCPeriodMs,
  type ImageGCPolicy,
  type ImageGCRuntime,
  type ImageRecord,
  validateImageGCPolicy,
} from './image-gc-manager.js';
export type { ImageService } from './images.js';
export {
  type ContainerType,
  containerHashLabel,
  containerNameLabel,
  containerPortsLabel,
  containerPreStopHandlerLabel,
  containerRestartCountLabel,
  containerTerminationMessagePathLabel,
  containerTerminationMessagePolicyLabel,
  containerTypeLabel,
  podDeletionGracePeriodLabel,
  podNameLabel,
  podNamespaceLabel,
  podTerminationGracePeriodLabel,
  podUIDLabel,
} from './labels.js';
// Container logs: upstream's ReadLogs and the ContainerLogManager's rotation.
export {
  getContainerLogs,
  type LogOptions,
  type LogStreamWriter,
  type LogsRuntimeService,
  newLogOptions,
  type PodLogOptions,
  type ReadLogsOptions,
  readLogs,
} from './logs.js';
export {
  type ContainerKillReason,
  type ContainerToKillInfo,
  computePodActions,
  type PodActions,
  type PodActionsProbes,
} from './pod-actions.js';
export { getPodQOS, type PodQOSClass } from './qos.js';
export type { LinuxResourceOptions } from './resources.js';
export { maxShares, milliCPUToQuota, milliCPUToShares, minShares, quotaPeriod } from './resources.js';
export {
  convertPodStatusToRunningPod,
  crashLoopBackOffInitialMs,
  crashLoopBackOffMaxMs,
  crashLoopBackOffResetMs,
  KubeGenericRuntimeManager,
  type KubeGenericRuntimeManagerOptions,
  newCrashLoopBackOff,
  type RuntimeFeatures,
  type RuntimeService,
} from './runtime-manager.js';
export {
  generatePodSandboxConfig,
  type SandboxConfigOptions,
  supplementalGroupsPolicyOf,
} from './sandbox-config.js';
export type { RuntimeHandlerInfo, UserNamespaceManagerOptions } from './user-namespaces.js';

/** Package version. @public */
export const VERSION = '0.1.0';
