import type { Pod } from '@kubelet-kit/core';

// The `kubectl get pods` view: NAME READY STATUS RESTARTS AGE IP.

function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** The STATUS column as kubectl prints it: a waiting/terminated reason wins over the phase. */
export function podStatusReason(pod: Pod): string {
  const status = pod.status ?? {};
  let reason = status.reason || status.phase || 'Unknown';
  const inits = status.initContainerStatuses ?? [];
  const initTotal = pod.spec?.initContainers?.length ?? 0;
  let initializing = false;
  for (const [i, c] of inits.entries()) {
    const restartable = pod.spec?.initContainers?.[i]?.restartPolicy === 'Always';
    if (c.state?.terminated?.exitCode === 0) continue;
    if (restartable && c.started) continue;
    if (c.state?.terminated) {
      reason = c.state.terminated.reason
        ? `Init:${c.state.terminated.reason}`
        : `Init:ExitCode:${c.state.terminated.exitCode}`;
    } else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') {
      reason = `Init:${c.state.waiting.reason}`;
    } else {
      reason = `Init:${i}/${initTotal}`;
    }
    initializing = true;
    break;
  }
  if (!initializing) {
    let hasRunning = false;
    for (const c of [...(status.containerStatuses ?? [])].reverse()) {
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state?.terminated) reason = `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state?.running) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) reason = 'Running';
  }
  if (pod.metadata?.deletionTimestamp) reason = 'Terminating';
  return reason;
}

/** One row per pod: name, ready, status, restarts, age, IP. */
export function podRows(pods: readonly Pod[], now: number): string[][] {
  return pods.map((pod) => {
    const statuses = pod.status?.containerStatuses ?? [];
    // Sidecars (restartable init containers) count in READY, as kubectl counts them.
    const sidecars = (pod.spec?.initContainers ?? [])
      .filter((c) => c.restartPolicy === 'Always')
      .map((c) => c.name);
    const sidecarStatuses = (pod.status?.initContainerStatuses ?? []).filter((c) =>
      sidecars.includes(c.name),
    );
    const total = (pod.spec?.containers?.length ?? statuses.length) + sidecars.length;
    const ready = [...statuses, ...sidecarStatuses].filter((c) => c.ready).length;
    const restarts = [...statuses, ...(pod.status?.initContainerStatuses ?? [])].reduce(
      (n, c) => n + (c.restartCount ?? 0),
      0,
    );
    const start = Date.parse(pod.status?.startTime ?? pod.metadata?.creationTimestamp ?? '');
    return [
      pod.metadata?.namespace && pod.metadata.namespace !== 'default'
        ? `${pod.metadata.namespace}/${pod.metadata?.name ?? ''}`
        : (pod.metadata?.name ?? ''),
      `${ready}/${total}`,
      podStatusReason(pod),
      String(restarts),
      Number.isNaN(start) ? '<unknown>' : formatAge(now - start),
      pod.status?.podIP ?? '<none>',
    ];
  });
}

/** Renders the pods as kubectl's aligned table. */
export function formatPodTable(pods: readonly Pod[], now: number): string {
  const rows = [['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP'], ...podRows(pods, now)];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 3))).join(''))
    .join('\n');
}
