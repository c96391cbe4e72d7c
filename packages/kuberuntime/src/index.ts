/**
 * The kubelet generic runtime manager over CRI: computePodActions, syncPod, killPod, image pulls, CrashLoopBackOff, container GC.
 *
 * @packageDocumentation
 */

export * from './apparmor.js';
export {
  getContainerSpec,
  type KillContainerOptions,
  minimumGracePeriodInSeconds,
  type StartSpec,
  setTerminationGracePeriod,
} from './container.js';
export * from './container-config.js';
export * from './env.js';
export * from './errors.js';
export * from './etc-hosts.js';
export * from './expansion.js';
export * from './gc.js';
export * from './helpers.js';
export * from './images.js';
export * from './labels.js';
export * from './lifecycle.js';
export * from './logs.js';
export * from './pod-actions.js';
export * from './qos.js';
export * from './resources.js';
export * from './runtime-class.js';
export * from './runtime-manager.js';
export * from './sandbox-config.js';
export * from './termination-order.js';
export * from './user-namespaces.js';

/** Package version. @public */
export const VERSION = '0.1.0';
