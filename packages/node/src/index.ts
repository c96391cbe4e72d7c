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
export { SysctlAllowlist } from './sysctl.js';
