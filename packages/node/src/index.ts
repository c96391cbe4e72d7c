/**
 * The kubelet-kit node agent: sync loop, pod handlers, admission, HTTP endpoints, metrics and
 * the `kubelet-kit` command.
 *
 * @packageDocumentation
 */

export type { PodAdmitResult } from './admission.js';
export { type Agent, type AgentOptions, createAgent } from './agent.js';
export type { PodCgroups } from './cm/container-manager.js';
export type {
  PlegView,
  PodConfigView,
  ProbeManagerView,
  StatusManagerView,
  VolumeManagerView,
} from './deps.js';
export { Kubelet, type KubeletOptions } from './kubelet.js';
export {
  applyKubeletConfig,
  connectedPendingOptions,
  type KubeletConfig,
  type KubeletConfigAgentOptions,
  KubeletConfigApiVersion,
  KubeletConfigError,
  type KubeletConfigServerFlags,
  loadKubeletConfig,
  optionFlags,
  type PendingKubeletConfigOptions,
  parseKubeletConfig,
} from './kubelet-config.js';
export { KubeletMetrics } from './metrics.js';
export type { NodeInfo, NodeTaint } from './node-info.js';
export {
  type AppArmorHostPaths,
  appArmorHostError,
  type PodFeatureSupport,
} from './pod-feature-admission.js';
export { formatPodTable } from './pod-table.js';
// The kubelet API's transport and auth.
export {
  type AuthDecision,
  KubeletAuth,
  type KubeletAuthOptions,
  type KubeletAuthorizationMode,
} from './server-auth.js';
export type { KubeletAuthenticationOptions, KubeletAuthorizationOptions } from './server-security.js';
export type { KubeletTlsOptions } from './server-tls.js';
// Many simulated nodes in one process (`kubelet-kit simulate`).
export {
  type SimulatedNode,
  type SimulatedNodeOptions,
  type SimulateOptions,
  type Simulation,
  simulateNodes,
} from './simulate.js';
export { type SimulatedExit, SimulatedExitAnnotationPrefix } from './simulate-containers.js';
// The summary API's JSON (`GET /stats/summary`), upstream's stats v1alpha1.
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
} from './stats/summary-types.js';
export { SysctlAllowlist } from './sysctl.js';
