import type { Container, ContainerPort, LifecycleHandler, Pod } from '@kubelet-kit/core';
import { hashContainer } from './helpers.js';

// Labels and annotations kuberuntime puts on sandboxes and containers (upstream `labels.go`),
// enough for a fresh manager to rebuild every pod's status from the runtime alone.

/** Label of a sandbox and its containers: the pod's name. @public */
export const podNameLabel = 'io.kubernetes.pod.name';
/** Label: the pod's namespace. @public */
export const podNamespaceLabel = 'io.kubernetes.pod.namespace';
/** Label: the pod's UID (what a CRI listing of one pod filters on). @public */
export const podUIDLabel = 'io.kubernetes.pod.uid';
/** Label of a container: its name in the pod spec. @public */
export const containerNameLabel = 'io.kubernetes.container.name';

/** Annotation of a container: the pod's deletion grace period, seconds. @public */
export const podDeletionGracePeriodLabel = 'io.kubernetes.pod.deletionGracePeriod';
/** Annotation: the pod's termination grace period, seconds. @public */
export const podTerminationGracePeriodLabel = 'io.kubernetes.pod.terminationGracePeriod';
/** Annotation: the container's hash (`hashContainer`), as lowercase hex. @public */
export const containerHashLabel = 'io.kubernetes.container.hash';
/** Annotation: how many times the container was restarted before this instance. @public */
export const containerRestartCountLabel = 'io.kubernetes.container.restartCount';
/** Annotation: the container's terminationMessagePath. @public */
export const containerTerminationMessagePathLabel = 'io.kubernetes.container.terminationMessagePath';
/** Annotation: the container's terminationMessagePolicy. @public */
export const containerTerminationMessagePolicyLabel = 'io.kubernetes.container.terminationMessagePolicy';
/** Annotation: the container's preStop handler as JSON. @public */
export const containerPreStopHandlerLabel = 'io.kubernetes.container.preStopHandler';
/** Annotation: the container's ports as JSON. @public */
export const containerPortsLabel = 'io.kubernetes.container.ports';
/** Annotation: which list of the pod spec the container comes from (`ContainerType`). @public */
export const containerTypeLabel = 'io.kubernetes.container.type';

/** Which list of the pod spec a container comes from. @public */
export type ContainerType = 'init' | 'container' | 'ephemeral';

/** Sandbox labels: the pod's labels plus its name, namespace and UID. */
export function newPodLabels(pod: Pod): Record<string, string> {
  return {
    ...(pod.metadata?.labels ?? {}),
    [podNameLabel]: pod.metadata?.name ?? '',
    [podNamespaceLabel]: pod.metadata?.namespace ?? '',
    [podUIDLabel]: pod.metadata?.uid ?? '',
  };
}

/** Sandbox annotations: the pod's annotations. */
export function newPodAnnotations(pod: Pod): Record<string, string> {
  return { ...(pod.metadata?.annotations ?? {}) };
}

/** Container labels: the pod's identity and the container's name. */
export function newContainerLabels(container: Container, pod: Pod): Record<string, string> {
  return {
    [podNameLabel]: pod.metadata?.name ?? '',
    [podNamespaceLabel]: pod.metadata?.namespace ?? '',
    [podUIDLabel]: pod.metadata?.uid ?? '',
    [containerNameLabel]: container.name,
  };
}

/** Container annotations: what killContainer and getPodStatus need when the pod spec is gone. */
export function newContainerAnnotations(
  container: Container,
  pod: Pod,
  restartCount: number,
  containerType: ContainerType,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  // Extra (device-plugin style) annotations first, so ours win.
  const a: Record<string, string> = { ...extra };
  a[containerHashLabel] = hashContainer(container);
  a[containerRestartCountLabel] = String(restartCount);
  a[containerTerminationMessagePathLabel] = container.terminationMessagePath ?? '/dev/termination-log';
  a[containerTerminationMessagePolicyLabel] = container.terminationMessagePolicy ?? 'File';
  a[containerTypeLabel] = containerType;
  const deletionGrace = pod.metadata?.deletionGracePeriodSeconds;
  if (deletionGrace !== undefined && deletionGrace !== null)
    a[podDeletionGracePeriodLabel] = String(deletionGrace);
  const terminationGrace = pod.spec?.terminationGracePeriodSeconds;
  if (terminationGrace !== undefined && terminationGrace !== null) {
    a[podTerminationGracePeriodLabel] = String(terminationGrace);
  }
  if (container.lifecycle?.preStop)
    a[containerPreStopHandlerLabel] = JSON.stringify(container.lifecycle.preStop);
  if (container.ports && container.ports.length > 0) a[containerPortsLabel] = JSON.stringify(container.ports);
  return a;
}

/** What container labels say (missing labels read as empty). */
export interface LabeledContainerInfo {
  readonly podName: string;
  readonly podNamespace: string;
  readonly podUid: string;
  readonly containerName: string;
}

export function getContainerInfoFromLabels(labels: Readonly<Record<string, string>>): LabeledContainerInfo {
  return {
    podName: labels[podNameLabel] ?? '',
    podNamespace: labels[podNamespaceLabel] ?? '',
    podUid: labels[podUIDLabel] ?? '',
    containerName: labels[containerNameLabel] ?? '',
  };
}

/** What container annotations say; unparsable values read as absent. */
export interface AnnotatedContainerInfo {
  readonly hash: string;
  readonly restartCount: number;
  readonly terminationMessagePath: string;
  readonly terminationMessagePolicy: string;
  readonly containerType: ContainerType | '';
  readonly podDeletionGracePeriod?: number;
  readonly podTerminationGracePeriod?: number;
  readonly preStopHandler?: LifecycleHandler;
  readonly containerPorts: ContainerPort[];
}

function int(value: string | undefined): number | undefined {
  if (value === undefined || !/^-?\d+$/.test(value)) return undefined;
  return Number(value);
}

function json<T>(value: string | undefined): T | undefined {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value) as T;
  } catch {
    return undefined;
  }
}

export function getContainerInfoFromAnnotations(
  annotations: Readonly<Record<string, string>>,
): AnnotatedContainerInfo {
  const type = annotations[containerTypeLabel];
  return {
    hash: annotations[containerHashLabel] ?? '',
    restartCount: int(annotations[containerRestartCountLabel]) ?? 0,
    terminationMessagePath: annotations[containerTerminationMessagePathLabel] ?? '',
    terminationMessagePolicy: annotations[containerTerminationMessagePolicyLabel] ?? '',
    containerType: type === 'init' || type === 'container' || type === 'ephemeral' ? type : '',
    podDeletionGracePeriod: int(annotations[podDeletionGracePeriodLabel]),
    podTerminationGracePeriod: int(annotations[podTerminationGracePeriodLabel]),
    preStopHandler: json<LifecycleHandler>(annotations[containerPreStopHandlerLabel]),
    containerPorts: json<ContainerPort[]>(annotations[containerPortsLabel]) ?? [],
  };
}
