import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { noopLogger, type Runtime, type RuntimePod, type Subpath, type Subpather } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { BasicPodManager } from '@kubelet-kit/pod-manager';
import type { PodWorkerSync, PodWorkers, UpdatePodOptions } from '@kubelet-kit/pod-workers';
import { afterEach, describe, expect, it } from 'vitest';
import type { StatusManagerView } from '../src/deps.js';
import { KubeletMetrics } from '../src/metrics.js';
import { handlePodCleanups, type PodCleanupsContext } from '../src/pod-cleanups.js';
import { apiPod, setup } from './kubelet-harness.js';

const worker = (state: PodWorkerSync['state'], orphan: boolean): PodWorkerSync => ({
  state,
  orphan,
  hasConfig: true,
  static: false,
});

describe('handlePodCleanups', () => {
  const runtimePod = (uid: string): RuntimePod =>
    ({
      id: uid,
      name: uid,
      namespace: 'default',
      createdAt: 0,
      containers: [
        { id: { type: 'containerd', id: `c-${uid}` }, name: 'main', image: 'busybox', state: 'running' },
      ],
      sandboxes: [],
    }) as unknown as RuntimePod;

  it('probes only pods whose worker may still run them', async () => {
    const { kubelet, probedUids } = setup();
    kubelet.handlePodAdditions([
      apiPod('a', 'uid-a', { phase: 'Running' }),
      apiPod('b', 'uid-b', { phase: 'Running' }),
    ]);
    kubelet.podWorkers.syncKnownPods = () =>
      new Map([
        ['uid-a', worker('sync', false)],
        ['uid-b', worker('terminated', false)],
        ['uid-c', worker('terminating', true)],
      ]);
    await kubelet.handlePodCleanups();
    expect([...(probedUids.at(-1) ?? [])].sort()).toEqual(['uid-a', 'uid-c']);
  });

  it('kills running containers of a pod no source wants even when its worker is done, not of a wanted one', async () => {
    const { kubelet, updates } = setup(110, [
      runtimePod('uid-gone'),
      runtimePod('uid-wanted'),
      runtimePod('uid-busy'),
    ]);
    kubelet.handlePodAdditions([apiPod('wanted', 'uid-wanted', { phase: 'Succeeded' })]);
    updates.length = 0;
    kubelet.podWorkers.syncKnownPods = () =>
      new Map([
        ['uid-gone', worker('terminated', true)],
        ['uid-wanted', worker('terminated', false)],
        ['uid-busy', worker('terminating', true)],
      ]);
    await kubelet.handlePodCleanups();
    expect(updates.map((u) => [u.updateType, u.runningPod?.id])).toEqual([['kill', 'uid-gone']]);
  });
});

describe('orphaned pod directories (upstream cleanupOrphanedPodDirs)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  /** A pod directory whose volumes are gone but whose subPath bind targets are still there. */
  const orphanDir = () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-orphan-'));
    dirs.push(root);
    const target = path.join(root, 'pods', 'uid-gone', 'volume-subpaths', 'data', 'main', '0');
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(target, 'behind-the-mount'), '');
    return { root, podDir: path.join(root, 'pods', 'uid-gone') };
  };

  /** Removes the bind targets of a volume as unmounting would; records the calls. */
  const unmounting = (calls: string[], fail = false): Subpather => ({
    async safeMakeDir() {},
    async prepareSafeSubpath(sp: Subpath) {
      return sp.path;
    },
    async cleanSubPaths(podDir, volumeName) {
      calls.push(`${path.basename(podDir)}/${volumeName}`);
      if (fail) throw new Error('umount: target is busy');
      fs.rmSync(path.join(podDir, 'volume-subpaths'), { recursive: true });
    },
  });

  it('cleans the subPaths of an orphaned pod before removing its directory', async () => {
    const { root, podDir } = orphanDir();
    const calls: string[] = [];
    const { kubelet } = setup(110, [], { rootDirectory: root, subpather: unmounting(calls) });
    await kubelet.handlePodCleanups();
    expect(calls).toEqual(['uid-gone/data']);
    expect(fs.existsSync(podDir)).toBe(false);
  });

  it('keeps the directory while subPaths could not be cleaned, or with no subpather', async () => {
    const { root, podDir } = orphanDir();
    const calls: string[] = [];
    await setup(110, [], {
      rootDirectory: root,
      subpather: unmounting(calls, true),
    }).kubelet.handlePodCleanups();
    await setup(110, [], { rootDirectory: root }).kubelet.handlePodCleanups();
    expect(calls).toEqual(['uid-gone/data']);
    // Nothing behind what may still be a bind mount was deleted.
    expect(fs.readdirSync(path.join(podDir, 'volume-subpaths/data/main/0'))).toEqual(['behind-the-mount']);
  });
});

describe('handlePodCleanups (the function, over a context)', () => {
  const running = (uid: string, sandbox: 'running' | 'exited'): RuntimePod =>
    ({
      id: uid,
      name: uid,
      namespace: 'default',
      containers: [
        { id: { type: 'containerd', id: `c-${uid}` }, name: 'main', image: 'busybox', state: 'running' },
      ],
      sandboxes: [{ id: { type: 'containerd', id: `s-${uid}` }, state: sandbox }],
    }) as unknown as RuntimePod;

  const context = (runtimePods: RuntimePod[], workers: Map<string, PodWorkerSync>) => {
    const podManager = new BasicPodManager();
    const updates: UpdatePodOptions[] = [];
    const metrics = new KubeletMetrics();
    const ctx: PodCleanupsContext = {
      rootDirectory: '/nonexistent/kubelet-kit-pod-cleanups-test',
      runtime: { getPods: async () => runtimePods } as unknown as Runtime,
      podManager,
      podWorkers: {
        syncKnownPods: () => workers,
        updatePod: (o: UpdatePodOptions) => updates.push(o),
        couldHaveRunningContainers: () => false,
      } as unknown as PodWorkers,
      statusManager: {
        removeOrphanedStatuses() {},
        getPodPhase: (uid: string) => (uid === 'uid-done' ? 'Succeeded' : undefined),
      } as unknown as StatusManagerView,
      metrics,
      podDirsMade: new Set(),
      clock: new FakeClock(),
      logger: noopLogger,
      signal: new AbortController().signal,
    };
    return { ctx, podManager, updates, metrics };
  };

  it('starts again a wanted pod whose worker was purged, unless its status is terminal', async () => {
    const { ctx, podManager, updates } = context([], new Map());
    podManager.addPod(apiPod('back', 'uid-back', { phase: 'Running' }));
    podManager.addPod(apiPod('done', 'uid-done', { phase: 'Succeeded' }));
    await handlePodCleanups(ctx);
    expect(updates.map((u) => [u.updateType, u.pod?.metadata?.uid])).toEqual([['create', 'uid-back']]);
  });

  it('counts the running pods (by sandbox) and their containers', async () => {
    const { ctx, metrics } = context(
      [running('uid-a', 'running'), running('uid-b', 'exited')],
      new Map([
        ['uid-a', worker('sync', false)],
        ['uid-b', worker('terminating', false)],
      ]),
    );
    await handlePodCleanups(ctx);
    expect((await metrics.runningPods.get()).values.map((v) => v.value)).toEqual([1]);
    expect((await metrics.runningContainers.get()).values.map((v) => [v.labels, v.value])).toEqual([
      [{ container_state: 'running' }, 2],
    ]);
  });
});
