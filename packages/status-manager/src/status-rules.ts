import type {
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodSpec,
  PodStatus,
} from '@kubelet-kit/core';
import { deepCopy, isMirrorPod, isRestartableInitContainer } from '@kubelet-kit/core';
import {
  generateContainersReadyConditionForTerminalPhase,
  generatePodReadyConditionForTerminalPhase,
  PodConditionTypes,
  podConditionByKubelet,
  podConditionSharedByKubelet,
} from './generate.js';
import { isPodPhaseTerminal } from './pod-phase.js';

// The pure rules of upstream status_manager.go: normalization, equality, legal transitions,
// transition times, the merge with the API status and when a pod may be deleted.

/**
 * The budget for all terminated messages of a pod, shared by its containers (upstream's).
 *
 * @public
 */
export const MaxPodTerminationMessageLogLength = 1024 * 12;

/**
 * An epoch-ms time as the API server stores it: RFC 3339, whole seconds, UTC.
 *
 * @public
 */
export function formatRfc3339(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/**
 * Truncates an RFC 3339 time to whole seconds (upstream `Rfc3339Copy`); other strings pass through.
 *
 * @public
 */
export function normalizeTimestamp(value: string | undefined): string | undefined {
  if (value === undefined || value === null) return value;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : formatRfc3339(ms);
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || (Array.isArray(value) && value.length === 0);
}

/**
 * Deep equality of JSON values where a missing field, `null` and an empty list are the same
 * (upstream's semantic equality treats nil and empty slices alike).
 *
 * @public
 */
export function semanticEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isEmpty(a) && isEmpty(b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    return a.every((x, i) => semanticEqual(x, b[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  for (const key of keys) if (!semanticEqual(ra[key], rb[key])) return false;
  return true;
}

/**
 * A copy of `status` without container `state`/`lastState` objects that hold no state, or
 * `status` itself when it has none. Both are struct values in the Go API, so the API server
 * always serializes them (`"lastState": {}`) and upstream's semantic equality treats `{}` as unset;
 * compared as JSON, every such status would look changed.
 *
 * @internal
 */
export function dropEmptyContainerStates(status: PodStatus): PodStatus {
  const lists = (s: PodStatus) => [
    s.initContainerStatuses,
    s.containerStatuses,
    s.ephemeralContainerStatuses,
  ];
  const isEmptyState = (state: ContainerState | undefined) =>
    state != null && !state.running && !state.terminated && !state.waiting;
  const has = lists(status).some((l) => l?.some((c) => isEmptyState(c.state) || isEmptyState(c.lastState)));
  if (!has) return status;
  const copy = deepCopy(status);
  for (const list of lists(copy)) {
    for (const c of list ?? []) {
      if (isEmptyState(c.state)) delete c.state;
      if (isEmptyState(c.lastState)) delete c.lastState;
    }
  }
  return copy;
}

/**
 * True when two statuses are equal as far as the kubelet is concerned: the kubelet-owned and
 * shared conditions of `status` compare by status, reason and message only (not by times), and
 * everything else deeply (upstream `isPodStatusByKubeletEqual`).
 *
 * @public
 */
export function isPodStatusByKubeletEqual(oldStatus: PodStatus, status: PodStatus): boolean {
  for (const c of status.conditions ?? []) {
    if (podConditionByKubelet(c.type) || podConditionSharedByKubelet(c.type)) {
      const oc = oldStatus.conditions?.find((x) => x.type === c.type);
      if (!oc || oc.status !== c.status || (oc.message ?? '') !== (c.message ?? '')) return false;
      if ((oc.reason ?? '') !== (c.reason ?? '')) return false;
    }
  }
  return semanticEqual({ ...oldStatus, conditions: status.conditions }, status);
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back off to a character boundary rather than leave half a character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** Sorts init container statuses into spec order; unknown names go last (upstream `SortInitContainerStatuses`). */
function sortInitContainerStatuses(spec: PodSpec | undefined, statuses: ContainerStatus[]): void {
  let current = 0;
  for (const container of spec?.initContainers ?? []) {
    for (let j = current; j < statuses.length; j++) {
      if (statuses[j]?.name === container.name) {
        const a = statuses[current]!;
        statuses[current] = statuses[j]!;
        statuses[j] = a;
        current++;
        break;
      }
    }
  }
}

function byName(a: ContainerStatus, b: ContainerStatus): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Normalizes a status in place and returns it (upstream `normalizeStatus`): times truncated to
 * seconds, terminated messages cut to their share of 12288 bytes (shared by regular, init and
 * ephemeral containers), container statuses sorted by name and init container statuses into
 * spec order.
 *
 * @public
 */
export function normalizeStatus(pod: Pod, status: PodStatus): PodStatus {
  // Ephemeral containers take a share of the budget too, as upstream's.
  const containers =
    (pod.spec?.containers?.length ?? 0) +
    (pod.spec?.initContainers?.length ?? 0) +
    (pod.spec?.ephemeralContainers?.length ?? 0);
  const bytesPerStatus =
    containers > 0
      ? Math.floor(MaxPodTerminationMessageLogLength / containers)
      : MaxPodTerminationMessageLogLength;
  const normalizeState = (state: ContainerState | undefined) => {
    if (!state) return;
    if (state.running?.startedAt) state.running.startedAt = normalizeTimestamp(state.running.startedAt);
    const t = state.terminated;
    if (t) {
      if (t.startedAt) t.startedAt = normalizeTimestamp(t.startedAt);
      if (t.finishedAt) t.finishedAt = normalizeTimestamp(t.finishedAt);
      if (t.message) t.message = truncateUtf8(t.message, bytesPerStatus);
    }
  };
  const normalizeStatuses = (list: ContainerStatus[] | undefined) => {
    for (const s of list ?? []) {
      normalizeState(s.state);
      normalizeState(s.lastState);
    }
  };
  if (status.startTime) status.startTime = normalizeTimestamp(status.startTime);
  for (const c of status.conditions ?? []) {
    if (c.lastProbeTime) c.lastProbeTime = normalizeTimestamp(c.lastProbeTime);
    if (c.lastTransitionTime) c.lastTransitionTime = normalizeTimestamp(c.lastTransitionTime);
  }
  normalizeStatuses(status.containerStatuses);
  status.containerStatuses?.sort(byName);
  normalizeStatuses(status.initContainerStatuses);
  if (status.initContainerStatuses) sortInitContainerStatuses(pod.spec, status.initContainerStatuses);
  normalizeStatuses(status.ephemeralContainerStatuses);
  status.ephemeralContainerStatuses?.sort(byName);
  return status;
}

/**
 * Why `newStatus` may not follow `oldStatus`, or undefined when it may (upstream
 * `checkContainerStateTransition`): unless the pod restarts Always, a terminated container (or
 * regular init container) may not become non-terminated, except after a failure under
 * OnFailure. Sidecars may always restart.
 *
 * @public
 */
export function checkContainerStateTransition(
  oldStatus: PodStatus,
  newStatus: PodStatus,
  spec: PodSpec | undefined,
): string | undefined {
  const policy = spec?.restartPolicy ?? 'Always';
  if (policy === 'Always') return undefined;
  const illegal = (old: ContainerStatus, next: readonly ContainerStatus[] | undefined): boolean => {
    const terminated = old.state?.terminated;
    if (!terminated) return false;
    if (terminated.exitCode !== 0 && policy === 'OnFailure') return false;
    return (next ?? []).some((n) => n.name === old.name && !n.state?.terminated);
  };
  for (const old of oldStatus.containerStatuses ?? []) {
    if (illegal(old, newStatus.containerStatuses)) {
      return `terminated container ${old.name} attempted illegal transition to non-terminated state`;
    }
  }
  const initByName = new Map((spec?.initContainers ?? []).map((c) => [c.name, c]));
  for (const old of oldStatus.initContainerStatuses ?? []) {
    const container = initByName.get(old.name);
    if (container && isRestartableInitContainer(container)) continue;
    if (illegal(old, newStatus.initContainerStatuses)) {
      return `terminated init container ${old.name} attempted illegal transition to non-terminated state`;
    }
  }
  return undefined;
}

/**
 * Sets the `lastTransitionTime` of `status`'s condition `type`: the old one when the old status
 * had the condition with the same status, else `now` (upstream `updateLastTransitionTime`).
 *
 * @public
 */
export function updateLastTransitionTime(
  status: PodStatus,
  oldStatus: PodStatus | undefined,
  type: string,
  now: string,
): void {
  const c = status.conditions?.find((x) => x.type === type);
  if (!c) return;
  const old = oldStatus?.conditions?.find((x) => x.type === type);
  if (old && old.status === c.status) {
    if (old.lastTransitionTime) c.lastTransitionTime = old.lastTransitionTime;
    else delete c.lastTransitionTime;
  } else {
    c.lastTransitionTime = now;
  }
}

/**
 * The condition types whose transition times the status manager keeps.
 *
 * @public
 */
export const transitionTimeConditionTypes: readonly string[] = [
  PodConditionTypes.ContainersReady,
  PodConditionTypes.Ready,
  PodConditionTypes.Initialized,
  PodConditionTypes.PodReadyToStartContainers,
  PodConditionTypes.PodScheduled,
  PodConditionTypes.DisruptionTarget,
];

function replaceOrAppend(conditions: PodCondition[], c: PodCondition): void {
  const at = conditions.findIndex((x) => x.type === c.type);
  if (at >= 0) conditions[at] = c;
  else conditions.push(c);
}

/**
 * Merges the kubelet's status into the API server's (upstream `mergePodStatus`): conditions the
 * kubelet does not own stay as the API has them; DisruptionTarget is only sent once the phase
 * turns terminal with no container running; a terminal phase waits while containers may still
 * run (`delayTransitioningToTerminal`); a terminal phase forces Ready and ContainersReady False.
 * Neither input is changed.
 *
 * @public
 */
export function mergePodStatus(
  pod: Pod,
  oldPodStatus: PodStatus,
  newPodStatus: PodStatus,
  delayTransitioningToTerminal: boolean,
  now: string,
): PodStatus {
  const merged = deepCopy(newPodStatus);
  const conditions: PodCondition[] = (oldPodStatus.conditions ?? [])
    .filter((c) => !podConditionByKubelet(c.type))
    .map((c) => ({ ...c }));
  const transitioningToTerminal = !isPodPhaseTerminal(oldPodStatus.phase) && isPodPhaseTerminal(merged.phase);
  for (const c of merged.conditions ?? []) {
    if (podConditionByKubelet(c.type)) {
      conditions.push(c);
    } else if (podConditionSharedByKubelet(c.type) && c.type === PodConditionTypes.DisruptionTarget) {
      // Sent only with the terminal phase, so no patch adds it while the phase change waits.
      if (transitioningToTerminal && !delayTransitioningToTerminal) {
        updateLastTransitionTime(merged, oldPodStatus, c.type, now);
        replaceOrAppend(conditions, c);
      }
    }
  }
  merged.conditions = conditions;
  if (oldPodStatus.resourceClaimStatuses) merged.resourceClaimStatuses = oldPodStatus.resourceClaimStatuses;
  else delete merged.resourceClaimStatuses;

  // Never report a pod terminal while it may still use resources the kubelet owns.
  if (transitioningToTerminal && delayTransitioningToTerminal) {
    setOrDelete(merged, 'phase', oldPodStatus.phase);
    setOrDelete(merged, 'reason', oldPodStatus.reason);
    setOrDelete(merged, 'message', oldPodStatus.message);
  }

  if (isPodPhaseTerminal(merged.phase)) {
    const ready = merged.conditions.find((c) => c.type === PodConditionTypes.Ready);
    const containersReady = merged.conditions.find((c) => c.type === PodConditionTypes.ContainersReady);
    if (ready?.status === 'True' || containersReady?.status === 'True') {
      updatePodCondition(merged, generateContainersReadyConditionForTerminalPhase(pod, merged.phase), now);
      updatePodCondition(merged, generatePodReadyConditionForTerminalPhase(pod, merged.phase), now);
    }
  }
  return merged;
}

function setOrDelete(
  status: PodStatus,
  key: 'phase' | 'reason' | 'message',
  value: string | undefined,
): void {
  if (value === undefined) delete status[key];
  else status[key] = value;
}

/**
 * Replaces or appends a condition, keeping its transition time when the status did not change
 * (upstream `podutil.UpdatePodCondition`).
 *
 * @public
 */
export function updatePodCondition(status: PodStatus, c: PodCondition, now: string): void {
  status.conditions ??= [];
  const at = status.conditions.findIndex((x) => x.type === c.type);
  const next = { ...c };
  if (at < 0) {
    next.lastTransitionTime ??= now;
    status.conditions.push(next);
    return;
  }
  const old = status.conditions[at]!;
  if (old.status === next.status) {
    if (old.lastTransitionTime) next.lastTransitionTime = old.lastTransitionTime;
  } else {
    next.lastTransitionTime = now;
  }
  status.conditions[at] = next;
}

/**
 * True when the API pod may be deleted (upstream `canBeDeleted`): it is being deleted, is not a
 * mirror pod, its API phase is terminal and the pod worker finished with it.
 *
 * @public
 */
export function canBeDeleted(apiPod: Pod, podIsFinished: boolean): boolean {
  if (!apiPod.metadata?.deletionTimestamp || isMirrorPod(apiPod)) return false;
  if (!isPodPhaseTerminal(apiPod.status?.phase)) return false;
  return podIsFinished;
}

/**
 * True when there is evidence the pod got past its init containers (upstream
 * `hasPodInitialized`), read from `pod.status`.
 *
 * @public
 */
export function hasPodInitialized(pod: Pod): boolean {
  const initContainers = pod.spec?.initContainers ?? [];
  if (initContainers.length === 0) return true;
  for (const s of pod.status?.containerStatuses ?? []) {
    if (s.lastState?.terminated || !s.state?.waiting) return true;
  }
  const statuses = pod.status?.initContainerStatuses ?? [];
  const lastIndex = statuses.length - 1;
  const last = statuses[lastIndex];
  if (!last) return false;
  const container = initContainers[lastIndex];
  if (!container || container.name !== last.name) return false;
  if (isRestartableInitContainer(container)) {
    return last.state?.running != null && last.started === true;
  }
  if (last.lastState?.terminated && last.lastState.terminated.exitCode === 0) return true;
  if (last.state?.terminated && last.state.terminated.exitCode === 0) return true;
  return false;
}

/**
 * How many init container statuses, from the start, have tried to start: all but the trailing
 * run of Waiting ones that never terminated, and at least one (upstream `initializedContainers`).
 *
 * @public
 */
export function initializedContainerCount(statuses: readonly ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i]!;
    if (!s.state?.waiting || s.lastState?.terminated) return i + 1;
  }
  return statuses.length > 0 ? 1 : 0;
}
