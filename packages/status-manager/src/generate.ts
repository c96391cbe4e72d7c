import {
  type ContainerStatus,
  isRestartableInitContainer,
  type Pod,
  type PodCondition,
  type PodStatus,
  podSandboxChanged,
  type RuntimePodStatus,
} from '@kubelet-kit/core';
import { getContainerStatus, hasAnyRegularContainerStarted, type PodPhase } from './pod-phase.js';

// The kubelet-owned pod conditions (upstream pkg/kubelet/status/generate.go).

/**
 * Pod condition types (upstream `v1.PodConditionType` constants).
 *
 * @public
 */
export const PodConditionTypes = {
  PodScheduled: 'PodScheduled',
  Ready: 'Ready',
  Initialized: 'Initialized',
  ContainersReady: 'ContainersReady',
  PodReadyToStartContainers: 'PodReadyToStartContainers',
  DisruptionTarget: 'DisruptionTarget',
  PodResizePending: 'PodResizePending',
  PodResizeInProgress: 'PodResizeInProgress',
} as const;

/**
 * Reasons the kubelet gives its conditions (upstream's strings).
 *
 * @public
 */
export const ConditionReasons = {
  /** All container statuses are unknown. */
  UnknownContainerStatuses: 'UnknownContainerStatuses',
  /** All related containers have succeeded. */
  PodCompleted: 'PodCompleted',
  /** The pod has failed, so its containers have too. */
  PodFailed: 'PodFailed',
  /** One or more containers are not ready. */
  ContainersNotReady: 'ContainersNotReady',
  /** One or more init containers have not succeeded. */
  ContainersNotInitialized: 'ContainersNotInitialized',
  /** One or more readiness gates are not True. */
  ReadinessGatesNotReady: 'ReadinessGatesNotReady',
} as const;

const ownedByKubelet: ReadonlySet<string> = new Set([
  PodConditionTypes.PodScheduled,
  PodConditionTypes.Ready,
  PodConditionTypes.Initialized,
  PodConditionTypes.ContainersReady,
  PodConditionTypes.PodReadyToStartContainers,
  PodConditionTypes.PodResizePending,
  PodConditionTypes.PodResizeInProgress,
]);

/**
 * True for the condition types only the kubelet sets (upstream `PodConditionByKubelet`).
 *
 * @public
 */
export function podConditionByKubelet(type: string): boolean {
  return ownedByKubelet.has(type);
}

/**
 * True for the condition types the kubelet shares with other writers (upstream `PodConditionSharedByKubelet`).
 *
 * @public
 */
export function podConditionSharedByKubelet(type: string): boolean {
  return type === PodConditionTypes.DisruptionTarget;
}

/** Conditions carry the pod's generation (PodObservedGenerationTracking, on by default in 1.34). */
function condition(
  pod: Pod,
  type: string,
  status: 'True' | 'False' | 'Unknown',
  reason?: string,
  message?: string,
): PodCondition {
  const c: PodCondition = { type, status };
  // Zero is Go's empty value: upstream omits the field then.
  if (pod.metadata?.generation) c.observedGeneration = pod.metadata.generation;
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/** Go's `%s` of a string slice: `[a b]`. */
function list(names: readonly string[]): string {
  return `[${names.join(' ')}]`;
}

/**
 * ContainersReady False with PodCompleted or PodFailed, for a pod in a terminal phase.
 *
 * @public
 */
export function generateContainersReadyConditionForTerminalPhase(pod: Pod, phase: string): PodCondition {
  return condition(pod, PodConditionTypes.ContainersReady, 'False', terminalReason(phase));
}

/**
 * Ready False with PodCompleted or PodFailed, for a pod in a terminal phase.
 *
 * @public
 */
export function generatePodReadyConditionForTerminalPhase(pod: Pod, phase: string): PodCondition {
  return condition(pod, PodConditionTypes.Ready, 'False', terminalReason(phase));
}

function terminalReason(phase: string): string | undefined {
  if (phase === 'Failed') return ConditionReasons.PodFailed;
  if (phase === 'Succeeded') return ConditionReasons.PodCompleted;
  return undefined;
}

/**
 * ContainersReady: True when every regular container and every sidecar is ready.
 * `containerStatuses` undefined means they are not known at all.
 *
 * @public
 */
export function generateContainersReadyCondition(
  pod: Pod,
  containerStatuses: readonly ContainerStatus[] | undefined,
  podPhase: string,
): PodCondition {
  if (containerStatuses === undefined) {
    return condition(
      pod,
      PodConditionTypes.ContainersReady,
      'False',
      ConditionReasons.UnknownContainerStatuses,
    );
  }
  const unknown: string[] = [];
  const unready: string[] = [];
  const considered = [
    ...(pod.spec?.initContainers ?? []).filter(isRestartableInitContainer),
    ...(pod.spec?.containers ?? []),
  ];
  for (const container of considered) {
    const status = getContainerStatus(containerStatuses, container.name);
    if (!status) unknown.push(container.name);
    else if (!status.ready) unready.push(container.name);
  }
  if (podPhase === 'Succeeded' && unknown.length === 0) {
    return generateContainersReadyConditionForTerminalPhase(pod, podPhase);
  }
  // Containers of a failed pod may still be terminating: never report them ready.
  if (podPhase === 'Failed') return generateContainersReadyConditionForTerminalPhase(pod, podPhase);
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${list(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${list(unready)}`);
  if (messages.length > 0) {
    return condition(
      pod,
      PodConditionTypes.ContainersReady,
      'False',
      ConditionReasons.ContainersNotReady,
      messages.join(', '),
    );
  }
  return condition(pod, PodConditionTypes.ContainersReady, 'True');
}

/**
 * Ready: ContainersReady, and then every readiness gate's condition (looked up in
 * `conditions`) True.
 *
 * @public
 */
export function generatePodReadyCondition(
  pod: Pod,
  conditions: readonly PodCondition[] | undefined,
  containerStatuses: readonly ContainerStatus[] | undefined,
  podPhase: string,
): PodCondition {
  const containersReady = generateContainersReadyCondition(pod, containerStatuses, podPhase);
  if (containersReady.status !== 'True') {
    return condition(
      pod,
      PodConditionTypes.Ready,
      containersReady.status as 'False',
      containersReady.reason,
      containersReady.message,
    );
  }
  const messages: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = conditions?.find((x) => x.type === gate.conditionType);
    if (!c) {
      messages.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    } else if (c.status !== 'True') {
      messages.push(
        `the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`,
      );
    }
  }
  if (messages.length > 0) {
    return condition(
      pod,
      PodConditionTypes.Ready,
      'False',
      ConditionReasons.ReadinessGatesNotReady,
      messages.join(', '),
    );
  }
  return condition(pod, PodConditionTypes.Ready, 'True');
}

/**
 * Initialized: every regular init container Ready (it completed) and every sidecar Started,
 * or some regular container already started. `containerStatuses` should hold the init
 * container statuses and the regular ones.
 *
 * @public
 */
export function generatePodInitializedCondition(
  pod: Pod,
  containerStatuses: readonly ContainerStatus[] | undefined,
  podPhase: string,
): PodCondition {
  const initContainers = pod.spec?.initContainers ?? [];
  if (containerStatuses === undefined && initContainers.length > 0) {
    return condition(pod, PodConditionTypes.Initialized, 'False', ConditionReasons.UnknownContainerStatuses);
  }
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const container of initContainers) {
    const status = getContainerStatus(containerStatuses, container.name);
    if (!status) {
      unknown.push(container.name);
      continue;
    }
    const done = isRestartableInitContainer(container) ? status.started === true : status.ready === true;
    if (!done) incomplete.push(container.name);
  }
  if (podPhase === 'Succeeded' && unknown.length === 0) {
    return condition(pod, PodConditionTypes.Initialized, 'True', ConditionReasons.PodCompleted);
  }
  // Once a regular container ran, restarting sidecars do not un-initialize the pod.
  if (hasAnyRegularContainerStarted(pod.spec, containerStatuses)) {
    return condition(pod, PodConditionTypes.Initialized, 'True');
  }
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${list(unknown)}`);
  if (incomplete.length > 0) messages.push(`containers with incomplete status: ${list(incomplete)}`);
  if (messages.length > 0) {
    return condition(
      pod,
      PodConditionTypes.Initialized,
      'False',
      ConditionReasons.ContainersNotInitialized,
      messages.join(', '),
    );
  }
  return condition(pod, PodConditionTypes.Initialized, 'True');
}

/**
 * PodReadyToStartContainers: True once a ready sandbox with networking exists, i.e. the pod
 * needs no new sandbox (upstream `PodSandboxChanged`, the boolean only).
 *
 * @public
 */
export function generatePodReadyToStartContainersCondition(
  pod: Pod,
  podStatus: RuntimePodStatus | undefined,
): PodCondition {
  if (podStatus !== undefined && !podSandboxChanged(pod, podStatus).changed) {
    return condition(pod, PodConditionTypes.PodReadyToStartContainers, 'True');
  }
  return condition(pod, PodConditionTypes.PodReadyToStartContainers, 'False');
}

/**
 * What {@link generatePodConditions} needs.
 *
 * @public
 */
export interface GeneratePodConditionsInput {
  readonly pod: Pod;
  /** The phase just computed for the new status. */
  readonly phase: PodPhase | string;
  /** The new status's init container statuses. */
  readonly initContainerStatuses: readonly ContainerStatus[];
  /** The new status's regular container statuses. */
  readonly containerStatuses: readonly ContainerStatus[];
  /** The runtime's view of the pod, for PodReadyToStartContainers. */
  readonly runtimeStatus: RuntimePodStatus | undefined;
  /** The status manager's previous status, whose DisruptionTarget is carried over. */
  readonly oldStatus?: PodStatus;
}

/**
 * All conditions of a new API status in upstream's order: the pod's conditions the kubelet does
 * not own, DisruptionTarget from the old status, then PodReadyToStartContainers, Initialized,
 * Ready, ContainersReady and PodScheduled (True). Transition times are left to the status
 * manager.
 *
 * @public
 */
export function generatePodConditions(input: GeneratePodConditionsInput): PodCondition[] {
  const { pod, phase } = input;
  const conditions: PodCondition[] = (pod.status?.conditions ?? [])
    .filter((c) => !podConditionByKubelet(c.type))
    .map((c) => ({ ...c }));
  const disruption = input.oldStatus?.conditions?.find((c) => c.type === PodConditionTypes.DisruptionTarget);
  if (disruption) {
    const at = conditions.findIndex((c) => c.type === disruption.type);
    if (at >= 0) conditions[at] = { ...disruption };
    else conditions.push({ ...disruption });
  }
  const all = [...input.initContainerStatuses, ...input.containerStatuses];
  conditions.push(generatePodReadyToStartContainersCondition(pod, input.runtimeStatus));
  conditions.push(generatePodInitializedCondition(pod, all, phase));
  conditions.push(generatePodReadyCondition(pod, conditions, all, phase));
  conditions.push(generateContainersReadyCondition(pod, all, phase));
  conditions.push(condition(pod, PodConditionTypes.PodScheduled, 'True'));
  return conditions;
}
