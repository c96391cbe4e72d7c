/**
 * Test helpers for @kubelet-kit/pod-manager. `BasicPodManager` is itself in memory and needs no
 * fake; these build the pods to feed it.
 *
 * @packageDocumentation
 */

export { type MakePodOptions, makePod } from './make-pod.js';
