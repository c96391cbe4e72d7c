/**
 * The desired pods by UID and full name, static and mirror pods and their translation.
 *
 * @packageDocumentation
 */

export {
  BasicPodManager,
  type BasicPodManagerOptions,
  isMirrorPodOf,
  type PodAndMirrorPod,
  type PodManager,
  type PodsAndMirrorPods,
  type UIDTranslations,
} from './pod-manager.js';
