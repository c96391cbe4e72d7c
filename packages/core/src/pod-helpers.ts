import type { Container, Pod } from './core-v1.js';
import type { EventObjectRef } from './events.js';
import {
  ApiserverSourceName,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  SystemCriticalPriority,
} from './pod-update.js';
import type { RuntimeContainerStatus, RuntimePod, RuntimePodStatus } from './runtime.js';

/** `name_namespace`, the kubelet's key for a pod across UIDs (upstream `BuildPodFullName`). @public */
export function buildPodFullName(name: string, namespace: string): string {
  return `${name}_${namespace}`;
}

/** The full name of a pod: `name_namespace`. @public */
export function getPodFullName(pod: Pod): string {
  return buildPodFullName(pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
}

/** The pod's UID, or an empty string when it has none. @public */
export function getPodUID(pod: Pod): string {
  return pod.metadata?.uid ?? '';
}

/** The source a pod came from (its `kubernetes.io/config.source` annotation), if any. @public */
export function getPodSource(pod: Pod): string | undefined {
  return pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
}

/** A static pod comes from a source other than the API server. @public */
export function isStaticPod(pod: Pod): boolean {
  const source = getPodSource(pod);
  return source !== undefined && source !== ApiserverSourceName;
}

/** A mirror pod is the API server's copy of a static pod. @public */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotationKey] !== undefined;
}

/** Static, mirror, and system-critical-priority pods are critical. @public */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  const priority = pod.spec?.priority;
  return priority !== undefined && priority >= SystemCriticalPriority;
}

/**
 * Whether the pod needs a new sandbox, the attempt number to give it, and the current sandbox ID.
 * @internal
 */
export interface SandboxChange {
  readonly changed: boolean;
  readonly attempt: number;
  readonly sandboxId: string;
}

/** Upstream `PodSandboxChanged` (`kuberuntime/util`). @internal */
export function podSandboxChanged(pod: Pod, podStatus: RuntimePodStatus): SandboxChange {
  const sandboxes = podStatus.sandboxStatuses;
  const newest = sandboxes[0];
  if (!newest) return { changed: true, attempt: 0, sandboxId: '' };
  // The next attempt counts from the newest sandbox (statuses are newest first).
  const next = newest.attempt + 1;
  const ready = sandboxes.filter((s) => s.state === 'ready').length;
  if (ready > 1) return { changed: true, attempt: next, sandboxId: newest.id };
  if (newest.state !== 'ready') return { changed: true, attempt: next, sandboxId: newest.id };
  const hostNetwork = pod.spec?.hostNetwork === true;
  if (newest.hostNetwork !== hostNetwork) return { changed: true, attempt: next, sandboxId: '' };
  if (!hostNetwork && newest.ips.length === 0) {
    return { changed: true, attempt: next, sandboxId: newest.id };
  }
  return { changed: false, attempt: newest.attempt, sandboxId: newest.id };
}

/**
 * The runtime pod a status describes, as a runtime listing shows it: the containers `include`
 * picks (default all) and every sandbox, a ready sandbox as running and any other as exited.
 * @internal
 */
export function runtimePodFromStatus(
  status: RuntimePodStatus,
  include: (container: RuntimeContainerStatus) => boolean = () => true,
): RuntimePod {
  const runtimeType = status.containerStatuses[0]?.id.type ?? '';
  return {
    id: status.id,
    name: status.name,
    namespace: status.namespace,
    createdAt: status.sandboxStatuses[0]?.createdAt ?? 0,
    containers: status.containerStatuses.filter(include).map((c) => ({
      id: c.id,
      name: c.name,
      image: c.image,
      imageId: c.imageId,
      hash: c.hash,
      state: c.state,
    })),
    sandboxes: status.sandboxStatuses.map((s) => ({
      id: { type: runtimeType, id: s.id },
      name: s.name,
      image: '',
      imageId: '',
      hash: '',
      state: s.state === 'ready' ? 'running' : 'exited',
    })),
  };
}

/** An init container with `restartPolicy: Always`: a sidecar that keeps running. @internal */
export function isRestartableInitContainer(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/**
 * The reference events about `pod` carry; `fieldPath` (`spec.containers{app}`) narrows it to one
 * container (upstream `ref.GetReference` plus `GetPartialReference`).
 * @internal
 */
export function podEventReference(pod: Pod, fieldPath?: string): EventObjectRef {
  const ref: EventObjectRef = {
    kind: 'Pod',
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
  };
  return fieldPath === undefined ? ref : { ...ref, fieldPath };
}

/**
 * A deep copy of a JSON-like value, several times cheaper than `structuredClone` for API
 * objects. A Date is copied as a Date; anything else that is not a plain object or array (a
 * Buffer, a Map) goes through `structuredClone`. Undefined members are kept.
 * @internal
 */
export function deepCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = deepCopy(value[i]);
    return out as T;
  }
  if (value instanceof Date) return new Date(value.getTime()) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    const copy = deepCopy(source[key]);
    // A parsed `__proto__` member is data; assigning it would set the copy's prototype.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[key] = copy;
  }
  return out as T;
}
