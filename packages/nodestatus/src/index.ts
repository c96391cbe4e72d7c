/**
 * Node registration and status, as the kubelet's `kubelet_node_status.go` and
 * `pkg/kubelet/nodestatus`: create or reconcile this node's Node, and keep its status (addresses,
 * capacity and allocatable, node info, images, conditions) current with strategic merge patches.
 * It reaches the API server through core's `NodeApi`; `@kubelet-kit/nodestatus/testing` has an
 * in-memory one.
 *
 * @packageDocumentation
 */

export {
  defaultNodeLabelsFor,
  defaultNodeStatusReportFrequencyMs,
  defaultNodeStatusUpdateFrequencyMs,
  initialRegistrationBackoffMs,
  maxRegistrationBackoffMs,
  type NodeStatusInputs,
  NodeStatusManager,
  type NodeStatusManagerOptions,
  nodeStatusUpdateRetry,
} from './node-status-manager.js';
export { createNodeStatusPatch, nodeStatusHasChanged } from './patch.js';
export {
  controllerManagedAttachDetachAnnotation,
  defaultNodeLabels,
  type InitialNodeOptions,
  initialNodeObject,
  reconcileCMADAnnotation,
  reconcileExtendedResource,
  reconcileHugePageResource,
  updateDefaultLabels,
} from './registration.js';
export {
  formatResourceQuantity,
  hugePageResourceName,
  isExtendedResourceName,
  isHugePageResourceName,
  type ResourceAmounts,
} from './resources.js';
export {
  aggregateMessage,
  daemonEndpoints,
  defaultNodeStatusMaxImages,
  diskPressureCondition,
  goRuntime,
  type HostVersionInfo,
  type HugePagesInfo,
  hostArchitecture,
  hostOperatingSystem,
  type ImageInfo,
  images,
  type MachineInfo,
  type MachineInfoOptions,
  machineInfo,
  maxNamesPerImageInNodeStatus,
  memoryPressureCondition,
  type NodeAddressOptions,
  type NodeEventFn,
  nodeAddress,
  pidPressureCondition,
  type ReadyConditionOptions,
  readyCondition,
  type Setter,
  type VersionInfoOptions,
  versionInfo,
  volumesInUse,
} from './setters.js';

/** Package version. @public */
export const VERSION = '0.1.0';
