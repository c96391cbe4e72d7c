/**
 * The kubelet generic runtime manager over CRI: computePodActions, syncPod, killPod, image pulls, CrashLoopBackOff, container GC.
 *
 * @packageDocumentation
 */

/** Package version. @public */
export const VERSION = '0.1.0';
