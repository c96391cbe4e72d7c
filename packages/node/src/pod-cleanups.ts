import fs from 'node:fs/promises';
import path from 'node:path';
import type { Clock, Logger, MirrorClient, Runtime, Subpather } from '@kubelet-kit/core';
import type { PodManager } from '@kubelet-kit/pod-manager';
import type { PodWorkers } from '@kubelet-kit/pod-workers';
import { isPodPhaseTerminal } from '@kubelet-kit/status-manager';
import { cleanPodSubPaths, containerSubPathDirectoryName } from '@kubelet-kit/volume-manager';
import type { PodCgroups } from './cm/container-manager.js';
import type { ProbeManagerView, StatusManagerView } from './deps.js';
import type { KubeletMetrics } from './metrics.js';
import { deleteOrphanedMirrorPods } from './mirror-pods.js';

/** What housekeeping works on: the kubelet's managers and the pod directories it made. */
export interface PodCleanupsContext {
  readonly rootDirectory: string;
  readonly runtime: Runtime;
  readonly podManager: PodManager;
  readonly podWorkers: PodWorkers;
  readonly statusManager: StatusManagerView;
  readonly probeManager?: ProbeManagerView | undefined;
  readonly mirrorClient?: MirrorClient | undefined;
  readonly subpather?: Subpather | undefined;
  readonly metrics?: KubeletMetrics | undefined;
  /** Pods whose data directories exist; a removed directory leaves it. */
  readonly podDirsMade: Set<string>;
  readonly podCgroups?: PodCgroups | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

/**
 * Upstream `HandlePodCleanups` (kubelet_pods.go): kills what no source wants, forgets finished
 * pods (statuses, probes, pod directories, orphaned mirror pods), restarts pods whose UID came
 * back.
 *
 * @internal
 */
export async function handlePodCleanups(ctx: PodCleanupsContext): Promise<void> {
  const { podManager, podWorkers, statusManager } = ctx;
  const allPods = podManager.getPods();
  const workingPods = podWorkers.syncKnownPods(allPods);
  const desired = new Set<string>();
  for (const p of allPods) desired.add(p.metadata?.uid ?? '');
  // Pods whose worker is setting them up, running or stopping them: the rest are probed no more.
  const possiblyRunning = new Set<string>();
  for (const [uid, sync] of workingPods) if (sync.state !== 'terminated') possiblyRunning.add(uid);
  ctx.probeManager?.cleanupPods(possiblyRunning);
  // Pods a source wants or a worker still holds: their statuses and directories stay.
  // Built in place: spreading both into one array first doubles the garbage of every pass.
  const keep = new Set<string>(desired);
  for (const uid of workingPods.keys()) keep.add(uid);
  statusManager.removeOrphanedStatuses(keep);

  const runningPods = await ctx.runtime.getPods(false, ctx.signal);
  let containers = 0;
  let withRunningSandbox = 0;
  for (const rp of runningPods) {
    containers += rp.containers.length;
    if (rp.sandboxes.some((s) => s.state === 'running')) withRunningSandbox++;
    // A worker that is running or stopping the pod is in charge of it.
    if (possiblyRunning.has(rp.id)) continue;
    // Running containers of a pod no source wants, whose worker (if any) is done: a leftover of
    // a removed pod or of an earlier run.
    if (desired.has(rp.id)) continue;
    ctx.logger.info(
      { pod: `${rp.name}_${rp.namespace}`, uid: rp.id },
      'cleaning up runtime pod that no source wants',
    );
    podWorkers.updatePod({ updateType: 'kill', runningPod: rp });
  }
  ctx.metrics?.runningPods.set(withRunningSandbox);
  ctx.metrics?.runningContainers.set({ container_state: 'running' }, containers);

  await cleanupOrphanedPodDirs(ctx, keep);
  // Upstream cleanupOrphanedPodCgroups: cgroups of pods neither wanted nor being worked on.
  ctx.podCgroups?.cleanupOrphanedPodCgroups(keep, (uid) => podWorkers.couldHaveRunningContainers(uid));
  if (ctx.mirrorClient) await deleteOrphanedMirrorPods(ctx.mirrorClient, ctx.logger, podManager, podWorkers);

  // A UID whose worker was just purged (a create arrived while it was terminating) starts again.
  for (const pod of allPods) {
    const uid = pod.metadata?.uid ?? '';
    if (workingPods.has(uid)) continue;
    if (isPodPhaseTerminal(statusManager.getPodPhase(uid))) continue;
    const { mirrorPod } = podManager.getPodAndMirrorPod(pod);
    podWorkers.updatePod({
      updateType: 'create',
      pod,
      ...(mirrorPod ? { mirrorPod } : {}),
      startTime: ctx.clock.now(),
    });
  }
}

/**
 * Upstream `cleanupOrphanedPodDirs` (kubelet_volumes.go): removes the directories of pods not in
 * `keep` that can have no running containers, once they hold no volume and no subPath mount.
 *
 * @internal
 */
export async function cleanupOrphanedPodDirs(
  ctx: PodCleanupsContext,
  keep: ReadonlySet<string>,
): Promise<void> {
  const podsDir = path.join(ctx.rootDirectory, 'pods');
  let entries: string[];
  try {
    entries = await fs.readdir(podsDir);
  } catch {
    return;
  }
  for (const uid of entries) {
    if (keep.has(uid)) continue;
    if (ctx.podWorkers.couldHaveRunningContainers(uid)) continue;
    const volumes = path.join(podsDir, uid, 'volumes');
    // Never remove a directory that may still hold a mount: the volume manager unmounts first.
    const hasVolumes = await fs
      .readdir(volumes)
      .then((v) => v.length > 0)
      .catch(() => false);
    if (hasVolumes) continue;
    // Bind mounts of subPaths hold volume files (or, on another volume type, host files):
    // unmount them first, and never remove a directory that still has one (upstream keeps a pod
    // with volume-subpaths on disk).
    const podDir = path.join(podsDir, uid);
    if (ctx.subpather) {
      await cleanPodSubPaths(ctx.subpather, podDir).catch((err: unknown) =>
        ctx.logger.warn({ pod: uid, err: String(err) }, 'failed to clean subpath mounts of an orphaned pod'),
      );
    }
    const subPathsLeft = await fs
      .access(path.join(podDir, containerSubPathDirectoryName))
      .then(() => true)
      .catch(() => false);
    if (subPathsLeft) {
      ctx.logger.warn({ pod: uid }, 'orphaned pod found, but volume subpaths are still present on disk');
      continue;
    }
    ctx.podDirsMade.delete(uid);
    await fs.rm(path.join(podsDir, uid), { recursive: true, force: true }).catch(() => {});
  }
}
