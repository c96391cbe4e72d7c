/**
 * The node lease controller: keeps `kube-node-lease/<node>` renewed, the heartbeat by which the
 * control plane knows a node is alive (upstream `pkg/kubelet/nodelease` and component-helpers'
 * lease controller). It calls the API server only through `LeaseApi` from `@kubelet-kit/core`.
 *
 * @packageDocumentation
 */

export {
  DefaultNodeLeaseDurationSeconds,
  formatMicroTime,
  NamespaceNodeLease,
  type NodeLeaseController,
  type NodeLeaseControllerOptions,
  NodeLeaseRenewIntervalFraction,
  newNodeLeaseController,
} from './controller.js';

/** Package version. @public */
export const VERSION = '0.1.0';
