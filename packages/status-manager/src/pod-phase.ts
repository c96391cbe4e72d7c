import {
  type ContainerStatus,
  isRestartableInitContainer,
  isStaticPod,
  type Pod,
  type PodSpec,
} from '@kubelet-kit/core';

// The pod phase rules of the kubelet (upstream `getPhase` and the phase part of
// `generateAPIPodStatus` in pkg/kubelet/kubelet_pods.go).

/**
 * A pod's phase (upstream `v1.PodPhase`).
 *
 * @public
 */
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

/**
 * True for Succeeded and Failed: phases a pod never leaves.
 *
 * @public
 */
export function isPodPhaseTerminal(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The status named `name` in `statuses`, if any (upstream `podutil.GetContainerStatus`).
 *
 * @public
 */
export function getContainerStatus(
  statuses: readonly ContainerStatus[] | undefined,
  name: string,
): ContainerStatus | undefined {
  return statuses?.find((s) => s.name === name);
}

/**
 * True when some regular container is Running or Terminated (upstream `HasAnyRegularContainerStarted`).
 *
 * @public
 */
export function hasAnyRegularContainerStarted(
  spec: PodSpec | undefined,
  statuses: readonly ContainerStatus[] | undefined,
): boolean {
  if (!statuses || statuses.length === 0) return false;
  const regular = new Set((spec?.containers ?? []).map((c) => c.name));
  return statuses.some(
    (s) => regular.has(s.name) && (s.state?.running != null || s.state?.terminated != null),
  );
}

/**
 * The phase of a pod from the statuses of all its containers, init containers included
 * (upstream `getPhase`). `podIsTerminal` says the pod worker is done with the pod: "all
 * containers stopped" then means Succeeded or Failed whatever the restart policy (static pods
 * excepted, as upstream). `podHasInitialized` (newer upstream passes it from the runtime's
 * active containers) defaults to "some regular container in `containerStatuses` started".
 *
 * @public
 */
export function getPhase(
  pod: Pod,
  containerStatuses: readonly ContainerStatus[],
  podIsTerminal: boolean,
  podHasInitialized?: boolean,
): PodPhase {
  const spec = pod.spec;
  const initContainers = spec?.initContainers ?? [];
  const restartPolicy = spec?.restartPolicy ?? 'Always';
  let pendingRegularInitContainers = 0;
  let pendingRestartableInitContainers = 0;
  let failedInitialization = 0;

  for (const container of initContainers) {
    if (isRestartableInitContainer(container)) continue;
    const status = getContainerStatus(containerStatuses, container.name);
    if (!status) {
      pendingRegularInitContainers++;
      continue;
    }
    const state = status.state;
    if (state?.running) {
      pendingRegularInitContainers++;
    } else if (state?.terminated) {
      if (state.terminated.exitCode !== 0) failedInitialization++;
    } else if (state?.waiting) {
      const last = status.lastState?.terminated;
      if (last) {
        if (last.exitCode !== 0) failedInitialization++;
      } else {
        pendingRegularInitContainers++;
      }
    } else {
      pendingRegularInitContainers++;
    }
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;

  for (const container of initContainers) {
    if (!isRestartableInitContainer(container)) continue;
    const status = getContainerStatus(containerStatuses, container.name);
    if (!status) {
      unknown++;
      continue;
    }
    const state = status.state;
    if (state?.running) {
      if (status.started !== true) pendingRestartableInitContainers++;
      running++;
    } else if (state?.terminated) {
      // A stopped sidecar does not count towards the phase.
    } else if (state?.waiting) {
      if (!status.lastState?.terminated) {
        pendingRestartableInitContainers++;
        waiting++;
      }
    } else {
      pendingRestartableInitContainers++;
      unknown++;
    }
  }

  for (const container of spec?.containers ?? []) {
    const status = getContainerStatus(containerStatuses, container.name);
    if (!status) {
      unknown++;
      continue;
    }
    const state = status.state;
    if (state?.running) {
      running++;
    } else if (state?.terminated) {
      stopped++;
      if (state.terminated.exitCode === 0) succeeded++;
    } else if (state?.waiting) {
      if (status.lastState?.terminated) stopped++;
      else waiting++;
    } else {
      unknown++;
    }
  }

  if (failedInitialization > 0 && restartPolicy === 'Never') return 'Failed';

  // A restarting sidecar does not send an initialized pod back to Pending.
  const initialized = podHasInitialized ?? hasAnyRegularContainerStarted(spec, containerStatuses);
  if (
    pendingRegularInitContainers > 0 ||
    (pendingRestartableInitContainers > 0 && !initialized) ||
    waiting > 0
  ) {
    return 'Pending';
  }
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    // A terminal pod's containers are never restarted, whatever the policy.
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

/**
 * What {@link reconcilePodPhase} decides.
 *
 * @public
 */
export interface ReconciledPhase {
  readonly phase: PodPhase;
  readonly reason?: string;
  readonly message?: string;
}

/**
 * Applies the phase rules `generateAPIPodStatus` puts on top of {@link getPhase}: a terminal
 * phase the status manager or the API server already has is kept (a pod never leaves a
 * terminal phase), and when the phase does not change its reason and message are kept.
 *
 * @param computed - what {@link getPhase} returned
 * @param oldStatus - the status manager's cached status (or the API status when none is cached)
 * @param apiStatus - the status of the pod as the source (API server) has it
 *
 * @public
 */
export function reconcilePodPhase(
  computed: PodPhase,
  oldStatus: { readonly phase?: string; readonly reason?: string; readonly message?: string } | undefined,
  apiStatus: { readonly phase?: string; readonly reason?: string; readonly message?: string } | undefined,
): ReconciledPhase {
  let phase = computed;
  if (!isPodPhaseTerminal(phase)) {
    if (isPodPhaseTerminal(oldStatus?.phase)) phase = oldStatus.phase;
    else if (isPodPhaseTerminal(apiStatus?.phase)) phase = apiStatus.phase;
  }
  // Leaving the API server's terminal phase is illegal: force it back.
  if (isPodPhaseTerminal(apiStatus?.phase) && phase !== apiStatus.phase) phase = apiStatus.phase;
  if (phase !== oldStatus?.phase) return { phase };
  const reason = oldStatus.reason || apiStatus?.reason;
  const message = oldStatus.message || apiStatus?.message;
  return {
    phase,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}
