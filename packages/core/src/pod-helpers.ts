import type { Pod } from './k8s.js';
import {
  ApiserverSourceName,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  SystemCriticalPriority,
} from './pod-update.js';

/** `name_namespace`, the kubelet's key for a pod across UIDs (upstream `BuildPodFullName`). */
export function buildPodFullName(name: string, namespace: string): string {
  return `${name}_${namespace}`;
}

/** The full name of a pod: `name_namespace`. */
export function getPodFullName(pod: Pod): string {
  return buildPodFullName(pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
}

/** The pod's UID, or an empty string when it has none. */
export function getPodUID(pod: Pod): string {
  return pod.metadata?.uid ?? '';
}

/** The source a pod came from (its `kubernetes.io/config.source` annotation), if any. */
export function getPodSource(pod: Pod): string | undefined {
  return pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
}

/** A static pod comes from a source other than the API server. */
export function isStaticPod(pod: Pod): boolean {
  const source = getPodSource(pod);
  return source !== undefined && source !== ApiserverSourceName;
}

/** A mirror pod is the API server's copy of a static pod. */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotationKey] !== undefined;
}

/** Static, mirror, and system-critical-priority pods are critical. */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  const priority = pod.spec?.priority;
  return priority !== undefined && priority >= SystemCriticalPriority;
}
