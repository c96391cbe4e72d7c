import fs from 'node:fs/promises';
import path from 'node:path';
import type {
  Clock,
  PodStateProvider as CorePodStateProvider,
  Logger,
  RuntimeGarbageCollectOptions,
} from '@kubelet-kit/core';
import { ContainerState, PodSandboxState, type RuntimeServiceClient } from '@kubelet-kit/cri';
import { errorMessage } from './errors.js';
import { getContainerInfoFromLabels } from './labels.js';

// Container garbage collection (upstream `kuberuntime_gc.go`).

/** What garbage collection asks of the pod workers (upstream kuberuntime's `podStateProvider`). @public */
export type GCPodStateProvider = Pick<
  CorePodStateProvider,
  'shouldPodContentBeRemoved' | 'shouldPodRuntimeBeRemoved'
>;

/** Options of {@link containerGC}. */
export interface ContainerGCOptions extends RuntimeGarbageCollectOptions {
  readonly runtimeService: Pick<
    RuntimeServiceClient,
    'listContainers' | 'listPodSandbox' | 'removePodSandbox' | 'stopPodSandbox'
  >;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly podLogsRootDirectory: string;
  readonly podStateProvider: GCPodStateProvider;
  readonly removeContainer: (id: string, signal?: AbortSignal) => Promise<void>;
  /**
   * Stops a container in unknown state before it is removed (it might still run); when this
   * fails the container is kept. Without it such containers are removed directly.
   */
  readonly killContainer?: (id: string, name: string, signal?: AbortSignal) => Promise<void>;
}

interface GCInfo {
  readonly id: string;
  readonly name: string;
  readonly createdAt: number;
  readonly unknown: boolean;
}

/** Removes dead containers beyond the policy, oldest first, and dead sandboxes of removed pods. */
export async function containerGC(o: ContainerGCOptions): Promise<void> {
  const { runtimeService: rs, signal, podStateProvider: psp } = o;
  const { containers } = await rs.listContainers({}, { signal });
  const now = o.clock.now();

  // Evictable: not running and old enough, grouped per (pod, container name), newest first.
  const units = new Map<string, GCInfo[]>();
  const uidOfUnit = new Map<string, string>();
  for (const c of containers) {
    if (c.state === ContainerState.CONTAINER_RUNNING) continue;
    const createdAt = Math.floor(c.createdAt / 1e6);
    if (now - createdAt < o.policy.minAgeMs) continue;
    const info = getContainerInfoFromLabels(c.labels);
    const key = `${info.podUid}/${info.containerName}`;
    uidOfUnit.set(key, info.podUid);
    const list = units.get(key) ?? [];
    list.push({
      id: c.id,
      name: info.containerName,
      createdAt,
      unknown: c.state === ContainerState.CONTAINER_UNKNOWN,
    });
    units.set(key, list);
  }
  for (const list of units.values()) list.sort((a, b) => b.createdAt - a.createdAt);

  // Oldest first, as upstream's removeOldestN (items come newest first).
  const remove = async (items: GCInfo[]) => {
    for (const item of [...items].reverse()) {
      if (item.unknown && o.killContainer) {
        // It may still be running: stop it first, and leave it if that fails.
        try {
          await o.killContainer(item.id, item.name, signal);
        } catch (err) {
          o.logger.warn({ containerId: item.id, err: errorMessage(err) }, 'failed to stop container');
          continue;
        }
      }
      await o
        .removeContainer(item.id, signal)
        .catch((err: unknown) =>
          o.logger.warn({ containerId: item.id, err: errorMessage(err) }, 'failed to remove container'),
        );
    }
  };
  const removeOldest = async (list: GCInfo[], keep: number) => {
    if (list.length > keep) await remove(list.splice(Math.max(0, keep)));
  };

  // Containers of removed pods all go, once every source has been seen.
  if (o.allSourcesReady) {
    for (const [key, list] of units) {
      const uid = uidOfUnit.get(key) ?? '';
      if (
        psp.shouldPodContentBeRemoved(uid) ||
        (o.evictNonDeletedPods && psp.shouldPodRuntimeBeRemoved(uid))
      ) {
        await removeOldest(list, 0);
        units.delete(key);
      }
    }
  }
  if (o.policy.maxPerPodContainer >= 0) {
    for (const list of units.values()) await removeOldest(list, o.policy.maxPerPodContainer);
  }
  const total = () => [...units.values()].reduce((n, l) => n + l.length, 0);
  if (o.policy.maxContainers >= 0 && total() > o.policy.maxContainers) {
    const nonEmpty = [...units.values()].filter((l) => l.length > 0).length;
    const perUnit = Math.max(1, Math.floor(o.policy.maxContainers / Math.max(1, nonEmpty)));
    for (const list of units.values()) await removeOldest(list, perUnit);
    const excess = total() - o.policy.maxContainers;
    if (excess > 0) {
      const flat = [...units.values()].flat().sort((a, b) => b.createdAt - a.createdAt);
      await remove(flat.slice(flat.length - excess));
    }
  }

  // Sandboxes: a pod keeps its newest, unless it was removed; never a ready one or one with containers.
  const { containers: after } = await rs.listContainers({}, { signal });
  const withContainers = new Set(after.map((c) => c.podSandboxId));
  const { items } = await rs.listPodSandbox({}, { signal });
  const byPod = new Map<string, { id: string; createdAt: number; active: boolean }[]>();
  for (const s of items) {
    const uid = s.metadata?.uid || getContainerInfoFromLabels(s.labels).podUid;
    const list = byPod.get(uid) ?? [];
    list.push({
      id: s.id,
      createdAt: s.createdAt,
      active: s.state === PodSandboxState.SANDBOX_READY || withContainers.has(s.id),
    });
    byPod.set(uid, list);
  }
  for (const [uid, list] of byPod) {
    list.sort((a, b) => b.createdAt - a.createdAt);
    const removed =
      psp.shouldPodContentBeRemoved(uid) || (o.evictNonDeletedPods && psp.shouldPodRuntimeBeRemoved(uid));
    const candidates = removed ? list : list.slice(1);
    // Oldest first; each is stopped before it is removed (in case nothing stopped it yet), and
    // kept when the stop fails (upstream removeSandbox).
    for (const s of candidates.reverse()) {
      if (s.active) continue;
      try {
        await rs.stopPodSandbox({ podSandboxId: s.id }, { signal });
      } catch (err) {
        o.logger.warn({ sandboxId: s.id, err: errorMessage(err) }, 'failed to stop sandbox before removing');
        continue;
      }
      await rs
        .removePodSandbox({ podSandboxId: s.id }, { signal })
        .catch((err: unknown) =>
          o.logger.warn({ sandboxId: s.id, err: errorMessage(err) }, 'failed to remove sandbox'),
        );
    }
  }

  // Log directories of removed pods.
  if (o.allSourcesReady) {
    let dirs: string[] = [];
    try {
      dirs = await fs.readdir(o.podLogsRootDirectory);
    } catch {
      dirs = [];
    }
    for (const dir of dirs) {
      // `<namespace>_<name>_<uid>`: the UID is the last part (the whole name when it has none).
      const uid = dir.slice(dir.lastIndexOf('_') + 1);
      if (psp.shouldPodContentBeRemoved(uid)) {
        await fs.rm(path.join(o.podLogsRootDirectory, dir), { recursive: true, force: true });
      }
    }
  }
}
