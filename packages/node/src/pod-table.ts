import type { ContainerStatus, Pod } from '@kubelet-kit/core';

// The `kubectl get pods` view: NAME READY STATUS RESTARTS AGE IP, computed as kubectl's pod
// printer does (pkg/printers/internalversion).

/** kubectl's AGE format (apimachinery's `HumanDuration`): about two significant figures. */
function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  // A clock a second ahead of ours still reads as "now".
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** Time since `timestamp`, or `<unknown>` without one (kubectl's `translateTimestampSince`). */
function since(timestamp: number, now: number): string {
  return Number.isNaN(timestamp) ? '<unknown>' : humanDuration(now - timestamp);
}

interface PodSummary {
  readonly ready: number;
  readonly total: number;
  readonly reason: string;
  readonly restarts: number;
  /** When a counted container last terminated (ms), 0 when unknown. */
  readonly lastRestart: number;
}

function lastTerminated(c: ContainerStatus): number {
  const at = Date.parse(c.lastState?.terminated?.finishedAt ?? '');
  return Number.isNaN(at) ? 0 : at;
}

function hasCondition(pod: Pod, type: string): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function summarize(pod: Pod): PodSummary {
  const status = pod.status ?? {};
  const phase = status.phase;
  let reason = status.reason || phase || 'Unknown';
  let ready = 0;
  let total = pod.spec?.containers?.length ?? status.containerStatuses?.length ?? 0;
  // Sidecars (restartable init containers) count in READY and RESTARTS once the pod is past them.
  const sidecars = new Set<string>();
  for (const c of pod.spec?.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      sidecars.add(c.name);
      total++;
    }
  }
  const initTotal = pod.spec?.initContainers?.length ?? 0;

  // While initializing, RESTARTS counts the init containers up to the one the pod is at.
  let restarts = 0;
  let lastRestart = 0;
  let sidecarRestarts = 0;
  let lastSidecarRestart = 0;
  let initializing = false;
  for (const [i, c] of (status.initContainerStatuses ?? []).entries()) {
    const sidecar = sidecars.has(c.name);
    restarts += c.restartCount ?? 0;
    lastRestart = Math.max(lastRestart, lastTerminated(c));
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = Math.max(lastSidecarRestart, lastTerminated(c));
    }
    const terminated = c.state?.terminated;
    if (terminated?.exitCode === 0) continue;
    if (sidecar && c.started) {
      if (c.ready) ready++;
      continue;
    }
    if (terminated) {
      if (terminated.reason) reason = `Init:${terminated.reason}`;
      else if (terminated.signal) reason = `Init:Signal:${terminated.signal}`;
      else reason = `Init:ExitCode:${terminated.exitCode}`;
    } else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') {
      reason = `Init:${c.state.waiting.reason}`;
    } else {
      reason = `Init:${i}/${initTotal}`;
    }
    initializing = true;
    break;
  }

  // An initialized pod whose sidecar restarts still shows its regular containers.
  if (!initializing || hasCondition(pod, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = Math.max(lastRestart, lastTerminated(c));
      const terminated = c.state?.terminated;
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (terminated?.reason) reason = terminated.reason;
      else if (terminated) {
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      } else if (c.ready && c.state?.running) {
        hasRunning = true;
        ready++;
      }
    }
    // A pod with one container done and another still running is not "Completed".
    if (reason === 'Completed' && hasRunning) {
      reason = hasCondition(pod, 'Ready') ? 'Running' : 'NotReady';
    }
  }

  // A finished pod being deleted keeps its final status; a lost node's pod is Unknown.
  if (pod.metadata?.deletionTimestamp) {
    if (status.reason === 'NodeLost') reason = 'Unknown';
    else if (phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';
  }
  return { ready, total, reason, restarts, lastRestart };
}

/** The STATUS column as kubectl prints it: a waiting/terminated reason wins over the phase. */
export function podStatusReason(pod: Pod): string {
  return summarize(pod).reason;
}

/** One row per pod: name, ready, status, restarts, age, IP. */
export function podRows(pods: readonly Pod[], now: number): string[][] {
  return pods.map((pod) => {
    const { ready, total, reason, restarts, lastRestart } = summarize(pod);
    // AGE is since creation, as kubectl shows it; a static pod from a file has no creation
    // timestamp, so its start time stands in.
    const created = Date.parse(pod.metadata?.creationTimestamp ?? pod.status?.startTime ?? '');
    return [
      pod.metadata?.namespace && pod.metadata.namespace !== 'default'
        ? `${pod.metadata.namespace}/${pod.metadata?.name ?? ''}`
        : (pod.metadata?.name ?? ''),
      `${ready}/${total}`,
      reason,
      restarts !== 0 && lastRestart !== 0 ? `${restarts} (${since(lastRestart, now)} ago)` : String(restarts),
      since(created, now),
      pod.status?.podIP ?? '<none>',
    ];
  });
}

/**
 * Renders the pods as kubectl's aligned table.
 *
 * @public
 */
export function formatPodTable(pods: readonly Pod[], now: number): string {
  const rows = [['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP'], ...podRows(pods, now)];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 3))).join(''))
    .join('\n');
}
