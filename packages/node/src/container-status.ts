import {
  type Container,
  type ContainerState,
  type ContainerStatus,
  formatContainerID,
  type Pod,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from '@kubelet-kit/core';
import { shouldContainerBeRestarted } from '@kubelet-kit/kuberuntime';
import type { ReasonCache } from './reason-cache.js';

// Turns the runtime's view of a pod's containers into API container statuses, as upstream's
// convertToAPIContainerStatuses (pkg/kubelet/kubelet_pods.go) does.

function rfc3339(ms: number): string | undefined {
  return ms > 0 ? new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z') : undefined;
}

function newestStatusOf(podStatus: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  let newest: RuntimeContainerStatus | undefined;
  for (const s of podStatus.containerStatuses) {
    if (s.name === name && (!newest || s.createdAt > newest.createdAt)) newest = s;
  }
  return newest;
}

function convertContainerStatus(
  cs: RuntimeContainerStatus,
  old: ContainerStatus | undefined,
): ContainerStatus {
  const containerID = formatContainerID(cs.id);
  const status: ContainerStatus = {
    name: cs.name,
    restartCount: cs.restartCount,
    image: cs.image,
    imageID: cs.imageRef ?? cs.imageId,
    containerID,
    ready: false,
    state: {},
  };
  // The runtime does not know volume names: the mounts come from the earlier status only.
  if (old?.volumeMounts) status.volumeMounts = old.volumeMounts;
  // Upstream convertContainerUser (the SupplementalGroupsPolicy gate, on in 1.34).
  const linux = cs.user?.linux;
  if (linux) {
    status.user = {
      linux: { uid: linux.uid, gid: linux.gid, supplementalGroups: [...linux.supplementalGroups] },
    };
  }
  const state: ContainerState = {};
  if (cs.state === 'running') {
    state.running = { startedAt: rfc3339(cs.startedAt) };
  } else if (cs.state === 'exited') {
    state.terminated = {
      exitCode: cs.exitCode,
      ...(cs.reason ? { reason: cs.reason } : {}),
      ...(cs.message ? { message: cs.message } : {}),
      startedAt: rfc3339(cs.startedAt),
      finishedAt: rfc3339(cs.finishedAt),
      containerID,
    };
  } else if (cs.state === 'unknown' && old?.state?.running) {
    // It was running and the runtime lost it: report it as gone, not as waiting to start.
    state.terminated = {
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
    };
    // The runtime's count does not include this ending, which it never saw.
    status.restartCount = (old.restartCount ?? 0) + 1;
  } else {
    state.waiting = {};
  }
  status.state = state;
  return status;
}

/**
 * The volume mounts of a container as its status reports them (upstream does this since
 * recursive read-only mounts went GA). Mounts are never made recursively read-only here, so a
 * read-only mount says `Disabled`, as upstream does when it knows no runtime handler support.
 */
function volumeMountStatuses(container: Container): ContainerStatus['volumeMounts'] {
  if (!container.volumeMounts?.length) return undefined;
  return container.volumeMounts.map((m) => ({
    name: m.name,
    mountPath: m.mountPath,
    ...(m.readOnly ? { readOnly: true, recursiveReadOnly: 'Disabled' } : {}),
  }));
}

/** Options of {@link convertToAPIContainerStatuses}. */
export interface ConvertContainerStatusesOptions {
  readonly pod: Pod;
  readonly podStatus: RuntimePodStatus;
  /** The previous API statuses of these containers (from the status manager or the pod). */
  readonly previousStatuses: readonly ContainerStatus[] | undefined;
  readonly containers: readonly Container[];
  readonly hasInitContainers: boolean;
  readonly isInitContainer: boolean;
  readonly reasonCache: ReasonCache;
}

/**
 * The API statuses of `containers`: init containers in spec order, others sorted by name (as
 * upstream's `SortedContainerStatuses`).
 */
export function convertToAPIContainerStatuses(options: ConvertContainerStatusesOptions): ContainerStatus[] {
  const { pod, podStatus, containers, reasonCache } = options;
  const podUid = pod.metadata?.uid ?? '';
  const oldStatuses = new Map((options.previousStatuses ?? []).map((s) => [s.name, s]));
  // Init containers that have not run wait in PodInitializing too: upstream only asks whether
  // the pod has init containers.
  const defaultReason = options.hasInitContainers ? 'PodInitializing' : 'ContainerCreating';

  const statuses = new Map<string, ContainerStatus>();
  for (const container of containers) {
    let status: ContainerStatus = {
      name: container.name,
      image: container.image ?? '',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: defaultReason } },
    };
    const volumeMounts = volumeMountStatuses(container);
    if (volumeMounts) status.volumeMounts = volumeMounts;
    const old = oldStatuses.get(container.name);
    if (old) {
      if (old.state?.terminated) {
        status = structuredClone(old);
      } else {
        status.restartCount = old.restartCount;
        if (old.lastState) status.lastState = old.lastState;
      }
    }
    statuses.set(container.name, status);
  }

  // A container that was running and is now missing from the runtime did not survive.
  for (const container of containers) {
    const old = oldStatuses.get(container.name);
    if (!old?.state?.running) continue;
    if (podStatus.containerStatuses.some((s) => s.name === container.name)) continue;
    const status = statuses.get(container.name)!;
    // An earlier ending already explains why it is not running.
    if (status.lastState?.terminated) continue;
    status.lastState = {
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message:
          'The container could not be located when the pod was deleted.  The container used to be Running',
      },
    };
    if (!pod.metadata?.deletionTimestamp) status.restartCount = (status.restartCount ?? 0) + 1;
  }

  // Newest first: the newest run is the state, the one before it the last state.
  const byNewest = [...podStatus.containerStatuses].sort((a, b) => b.createdAt - a.createdAt);
  const seen = new Map<string, number>();
  for (const cs of byNewest) {
    if (!statuses.has(cs.name)) continue;
    const count = seen.get(cs.name) ?? 0;
    if (count >= 2) continue;
    const converted = convertContainerStatus(cs, oldStatuses.get(cs.name));
    if (count === 0) statuses.set(cs.name, converted);
    else statuses.get(cs.name)!.lastState = converted.state;
    seen.set(cs.name, count + 1);
  }

  // A container that will be started again shows why it is not running yet.
  for (const container of containers) {
    if (options.isInitContainer) {
      const s = newestStatusOf(podStatus, container.name);
      if (s && s.state === 'exited' && s.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(container, pod, podStatus)) continue;
    const failure = reasonCache.get(podUid, container.name);
    if (!failure) continue;
    const status = statuses.get(container.name)!;
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: failure.reason, message: failure.message } };
  }

  const ordered = containers.map((c) => statuses.get(c.name)!);
  if (!options.isInitContainer) ordered.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ordered;
}
