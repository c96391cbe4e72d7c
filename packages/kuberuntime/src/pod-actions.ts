import {
  type Container,
  type ContainerID,
  formatContainerID,
  isRestartableInitContainer,
  type Pod,
  type ProbeResultsReader,
  podSandboxChanged,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from '@kubelet-kit/core';
import {
  containerSucceeded,
  findContainerStatusByName,
  hashContainer,
  isInitContainerFailed,
  shouldContainerBeRestarted,
  shouldRestartOnFailure,
} from './helpers.js';

// computePodActions of upstream `kuberuntime_manager.go` with computeInitContainerActions of
// `kuberuntime_container.go` (the SidecarContainers-enabled path, the v1.34 default).

/** Why a container is killed (upstream `containerKillReason`); empty for a spec change. @public */
export type ContainerKillReason = '' | 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'Unknown';

/** One container to kill and why (upstream `containerToKillInfo`). @public */
export interface ContainerToKillInfo {
  readonly containerId: ContainerID;
  readonly container: Container;
  readonly name: string;
  readonly message: string;
  readonly reason: ContainerKillReason;
}

/** What one sync must do to bring the runtime's pod to the spec (upstream `podActions`). @public */
export interface PodActions {
  /** Stop every container and sandbox of the pod first. */
  killPod: boolean;
  createSandbox: boolean;
  /** The current sandbox, if any. */
  sandboxId: string;
  /** The attempt number of the sandbox to create. */
  attempt: number;
  /** Indexes into `spec.initContainers`, in start order. */
  initContainersToStart: number[];
  /** Indexes into `spec.containers`. */
  containersToStart: number[];
  /** Indexes into `spec.ephemeralContainers`. */
  ephemeralContainersToStart: number[];
  /** Keyed by `type://id`. */
  containersToKill: Map<string, ContainerToKillInfo>;
}

/** The probe results computePodActions consults (container IDs as `type://id`). @public */
export interface PodActionsProbes {
  readonly liveness?: ProbeResultsReader;
  readonly startup?: ProbeResultsReader;
}

function probe(reader: ProbeResultsReader | undefined, status: RuntimeContainerStatus) {
  return reader?.get(formatContainerID(status.id));
}

function kill(
  actions: PodActions,
  status: RuntimeContainerStatus,
  container: Container,
  message: string,
  reason: ContainerKillReason,
): void {
  actions.containersToKill.set(formatContainerID(status.id), {
    containerId: status.id,
    container,
    name: container.name,
    message,
    reason,
  });
}

/** Any regular container was ever created (and so every init container once completed). */
function hasAnyRegularContainerCreated(pod: Pod, podStatus: RuntimePodStatus): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const s = findContainerStatusByName(podStatus, c.name);
    return s !== undefined && (s.state === 'created' || s.state === 'running' || s.state === 'exited');
  });
}

/**
 * Sets the init containers to start and kill; returns whether the pod has initialized.
 * Scans in reverse since finished init containers may have been garbage collected: the last
 * one with a status says how far initialization went.
 */
function computeInitContainerActions(
  pod: Pod,
  podStatus: RuntimePodStatus,
  actions: PodActions,
  probes: PodActionsProbes,
): boolean {
  const initContainers = pod.spec?.initContainers ?? [];
  if (initContainers.length === 0) return true;

  // Exited main containers do not count: after a reboot everything is exited and a new sandbox
  // must run its init containers again.
  let podHasInitialized = (pod.spec?.containers ?? []).some((c) => {
    const s = findContainerStatusByName(podStatus, c.name);
    return s !== undefined && (s.state === 'created' || s.state === 'running');
  });
  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const last = initContainers.length - 1;

  for (let i = last; i >= 0; i--) {
    const container = initContainers[i]!;
    const restartable = isRestartableInitContainer(container);
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status) {
      if (isPreviouslyInitialized && restartable) actions.initContainersToStart.push(i);
      continue;
    }
    // Killed (with the message and reason), then started again.
    const restart = (message: string, reason: ContainerKillReason) => {
      kill(actions, status, container, message, reason);
      actions.initContainersToStart.push(i);
    };
    if (isPreviouslyInitialized && !restartable) continue;

    switch (status.state) {
      case 'created':
        // Created but never started: the start probably failed; try again.
        actions.initContainersToStart.push(i);
        break;
      case 'running': {
        if (!restartable) break;
        if (container.startupProbe) {
          const startup = probe(probes.startup, status);
          if (startup === undefined) break;
          if (startup !== 'Success') {
            if (startup === 'Failure')
              restart(`Init container ${container.name} failed startup probe`, 'StartupProbe');
            break;
          }
        }
        if (i === last) podHasInitialized = true;
        else if (!isPreviouslyInitialized) actions.initContainersToStart.push(i + 1);

        if (hashContainer(container) !== status.hash) {
          restart(`Init container ${container.name} definition changed`, '');
          break;
        }
        // Liveness does not gate the next init container; it only restarts this one.
        if (container.livenessProbe) {
          const liveness = probe(probes.liveness, status);
          if (liveness === 'Failure')
            restart(`Init container ${container.name} failed liveness probe`, 'LivenessProbe');
        }
        break;
      }
      case 'exited':
        if (restartable) {
          // Sidecars restart whatever the pod's restart policy.
          actions.initContainersToStart.push(i);
        } else if (isInitContainerFailed(status)) {
          if (!restartOnFailure) {
            actions.killPod = true;
            actions.initContainersToStart = [];
            return false;
          }
          actions.initContainersToStart.push(i);
        } else if (i === last) {
          podHasInitialized = true;
        } else {
          actions.initContainersToStart.push(i + 1);
        }
        break;
      default: {
        const message = `Init container is in "${status.state}" state, try killing it before restart`;
        if (!restartable && !restartOnFailure) {
          actions.killPod = true;
          actions.initContainersToStart = [];
          return false;
        }
        restart(message, 'Unknown');
      }
    }
    isPreviouslyInitialized = true;
  }

  if (!isPreviouslyInitialized) actions.initContainersToStart.push(0);
  actions.initContainersToStart.reverse();
  return podHasInitialized;
}

/**
 * What a sync must do to bring the runtime's view of a pod to its spec (upstream
 * `computePodActions`). Pure: the runtime status and the probe results are its only inputs.
 * @public
 */
export function computePodActions(
  pod: Pod,
  podStatus: RuntimePodStatus,
  probes: PodActionsProbes = {},
): PodActions {
  const sandbox = podSandboxChanged(pod, podStatus);
  const actions: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
  };
  const spec = pod.spec;
  const containers = spec?.containers ?? [];

  if (sandbox.changed) {
    // A Never pod whose sandbox died after running is done: make sure it is dead, no more.
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && podStatus.containerStatuses.length !== 0) {
      actions.createSandbox = false;
      return actions;
    }
    const toStart: number[] = [];
    containers.forEach((c, idx) => {
      if (spec?.restartPolicy === 'OnFailure' && containerSucceeded(c, podStatus)) return;
      toStart.push(idx);
    });
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, podStatus)) {
      actions.createSandbox = false;
      return actions;
    }
    if ((spec?.initContainers ?? []).length !== 0) {
      // Only the first init container: main containers wait for initialization.
      actions.initContainersToStart = [0];
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  (spec?.ephemeralContainers ?? []).forEach((c, i) => {
    if (!findContainerStatusByName(podStatus, c.name)) actions.ephemeralContainersToStart.push(i);
  });

  const initialized = computeInitContainerActions(pod, podStatus, actions, probes);
  if (actions.killPod || !initialized) return actions;

  let keepCount = 0;
  containers.forEach((container, idx) => {
    const status = findContainerStatusByName(podStatus, container.name);
    if (status?.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, podStatus)) {
        actions.containersToStart.push(idx);
        if (status?.state === 'unknown') {
          // It may still run: kill it first so two instances never run at once.
          kill(
            actions,
            status,
            container,
            `Container is in "${status.state}" state, try killing it before restart`,
            'Unknown',
          );
        }
      }
      return;
    }
    let restart = shouldRestartOnFailure(pod);
    let message: string;
    let reason: ContainerKillReason = '';
    if (hashContainer(container) !== status.hash) {
      message = `Container ${container.name} definition changed`;
      // A changed spec restarts whatever the restart policy.
      restart = true;
    } else if (probe(probes.liveness, status) === 'Failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (probe(probes.startup, status) === 'Failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      actions.containersToStart.push(idx);
    }
    kill(actions, status, container, message, reason);
  });

  // A running container the spec no longer names (possible for pods whose spec is edited in
  // place outside the API server's validation) is stopped. Upstream never sees this case.
  const named = new Set([
    ...containers.map((c) => c.name),
    ...(spec?.initContainers ?? []).map((c) => c.name),
    ...(spec?.ephemeralContainers ?? []).map((c) => c.name),
  ]);
  const seen = new Set<string>();
  for (const status of podStatus.containerStatuses) {
    if (named.has(status.name) || seen.has(status.name)) continue;
    seen.add(status.name);
    if (status.state !== 'running' && status.state !== 'unknown') continue;
    kill(
      actions,
      status,
      { name: status.name, image: status.image },
      `Container ${status.name} is not in the pod spec`,
      '',
    );
  }

  if (keepCount === 0 && actions.containersToStart.length === 0) {
    actions.killPod = true;
    // Sidecars must not keep a finished pod alive.
    actions.initContainersToStart = [];
  }
  return actions;
}
