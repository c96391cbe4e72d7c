import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Pod, Volume } from '@kubelet-kit/core';
import { advanceUntil, FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import {
  BasicVolumeManager,
  type Mounter,
  SystemMounter,
  type VolumeManagerOptions,
  VolumeMountTimeoutError,
  type VolumePlugin,
} from '@kubelet-kit/volume-manager';
import { FakeMounter, FakeObjectGetter, FakeTokenGetter } from '@kubelet-kit/volume-manager/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makePod, readText, tempDir, track } from './helpers.js';

let root: string;
let clock: FakeClock;
let getter: FakeObjectGetter;
let mounter: FakeMounter;
let recorder: InMemoryEventRecorder;
let pods: Pod[];
const managers: BasicVolumeManager[] = [];

function newManager(
  overrides: Partial<VolumeManagerOptions> & { mounter?: Mounter } = {},
): BasicVolumeManager {
  const vm = new BasicVolumeManager({
    rootDirectory: root,
    getPods: () => pods,
    clock,
    objectGetter: getter,
    mounter,
    eventRecorder: recorder,
    nodeAllocatable: () => ({ cpu: 2, memory: 2 ** 30, pods: 110, ephemeralStorage: 2 ** 30 }),
    ...overrides,
  });
  managers.push(vm);
  return vm;
}

const volDir = (uid: string, plugin: string, name: string) =>
  path.join(root, 'pods', uid, 'volumes', plugin, name);

function appPod(uid = 'uid-1'): Pod {
  return makePod({
    uid,
    name: `pod-${uid}`,
    namespace: 'ns',
    labels: { app: 'web' },
    volumes: [
      { name: 'scratch', emptyDir: {} },
      { name: 'cache', emptyDir: { medium: 'Memory' } },
      { name: 'config', configMap: { name: 'cfg', items: [{ key: 'k', path: 'k.txt', mode: 0o400 }] } },
      { name: 'creds', secret: { secretName: 'sec' } },
      {
        name: 'info',
        downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
      },
    ],
  });
}

/** A plugin whose content is its pod volume directory, with hooks to count what it is asked. */
function countingPlugin(hooks: {
  canSupport: (volume: Volume) => boolean;
  requiresRemount?: () => boolean;
}): () => VolumePlugin {
  return () => ({
    name: 'test/counting',
    get requiresRemount() {
      return hooks.requiresRemount?.() ?? false;
    },
    readOnly: false,
    usesPodVolumeDir: true,
    canSupport: hooks.canSupport,
    getPath: (spec) => spec.podVolumeDir,
    setUp: async () => {},
    tearDown: async () => {},
  });
}

/** Runs `wait` to completion while the fake clock moves. */
async function settle<T>(promise: Promise<T>): Promise<T> {
  const t = track(promise);
  await advanceUntil(clock, () => t.done);
  return promise;
}

beforeEach(async () => {
  root = await tempDir('vm-');
  clock = new FakeClock();
  getter = new FakeObjectGetter();
  getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { k: 'v1' } });
  getter.setSecret({
    metadata: { name: 'sec', namespace: 'ns' },
    data: { token: Buffer.from('s3cret').toString('base64') },
  });
  mounter = new FakeMounter();
  recorder = new InMemoryEventRecorder({ now: () => clock.now() });
  pods = [];
});

afterEach(async () => {
  for (const vm of managers.splice(0)) {
    const stopped = track(vm.stop());
    await advanceUntil(clock, () => stopped.done);
  }
  await fs.rm(root, { recursive: true, force: true });
});

describe('BasicVolumeManager: mount and wait', () => {
  it('mounts every volume of a desired pod and gives the runtime their host paths', async () => {
    pods = [appPod()];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const mounted = vm.getMountedVolumesForPod('uid-1');
    expect([...mounted.keys()].sort()).toEqual(['cache', 'config', 'creds', 'info', 'scratch']);
    expect(mounted.get('scratch')).toEqual({
      hostPath: volDir('uid-1', 'kubernetes.io~empty-dir', 'scratch'),
      readOnly: false,
    });
    expect(mounted.get('config')).toEqual({
      hostPath: volDir('uid-1', 'kubernetes.io~configmap', 'config'),
      readOnly: true,
    });
    expect(await readText(path.join(mounted.get('config')!.hostPath, 'k.txt'))).toBe('v1');
    expect(await readText(path.join(mounted.get('creds')!.hostPath, 'token'))).toBe('s3cret');
    expect(await readText(path.join(mounted.get('info')!.hostPath, 'labels'))).toBe('app="web"');
    // The memory-backed emptyDir, the secret and the downward API volume are tmpfs mounts.
    expect(mounter.mounts.map((m) => m.mountPoint).sort()).toEqual(
      [
        volDir('uid-1', 'kubernetes.io~empty-dir', 'cache'),
        volDir('uid-1', 'kubernetes.io~secret', 'creds'),
        volDir('uid-1', 'kubernetes.io~downward-api', 'info'),
      ].sort(),
    );
    expect(vm.getMountedVolumesForPod('other').size).toBe(0);
  });

  it('a pod without volumes needs no wait, and the populator alone mounts desired pods', async () => {
    const vm = newManager();
    vm.start();
    await vm.waitForAttachAndMount(makePod({ uid: 'none' }));
    pods = [appPod('late')];
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('late').size === 5);
  });

  it('an idle populator lengthens its period to 1 s, and a pass that adds a pod brings it back to 100 ms', async () => {
    const passes: number[] = [];
    const vm = newManager({
      getPods: () => {
        passes.push(clock.now());
        return pods;
      },
      podStateProvider: {
        shouldPodContainersBeTerminating: () => false,
        shouldPodRuntimeBeRemoved: (uid) => !pods.some((p) => p.metadata?.uid === uid),
      },
    });
    const t0 = clock.now();
    vm.start();
    clock.advance(10_000);
    const gaps = passes.slice(1).map((t, i) => t - (passes[i] as number));
    // Three idle passes at 100 ms, then 100 ms longer each, up to 1 s.
    expect(gaps.slice(0, 6)).toEqual([100, 100, 100, 100, 200, 300]);
    expect(gaps.at(-1)).toBe(1000);
    expect(passes.length).toBeLessThan(20);
    expect(passes[0]).toBe(t0);

    pods = [appPod('late')];
    const before = passes.length;
    clock.advance(1000);
    // The next pass adds the pod (at most 1 s later) and the one after follows 100 ms behind.
    const added = passes[before] as number;
    expect(passes[before + 1]).toBe(added + 100);
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('late').size === 5);
  });

  // Upstream podPreviouslyProcessed: a pass over 110 unchanged pods ten times a second rebuilt
  // every pod's volumes each time (issue #28's garbage).
  it('a populator pass rebuilds the desired volumes only of pods that are new or changed', async () => {
    let looked = 0;
    const vm = newManager({
      // Asked about every volume each time a pod's volumes are built; claims none.
      plugins: [
        countingPlugin({
          canSupport: () => {
            looked++;
            return false;
          },
        }),
      ],
    });
    pods = [appPod('a'), appPod('b')];
    vm.start();
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('b').size === 5);
    const afterAdd = looked;
    expect(afterAdd).toBeGreaterThanOrEqual(10);
    clock.advance(5_000);
    expect(looked).toBe(afterAdd);
    // A new object for pod a (an update): its five volumes are looked at again, b's are not.
    pods = [{ ...appPod('a'), metadata: { ...appPod('a').metadata, labels: { app: 'api' } } }, pods[1]!];
    vm.podsChanged();
    expect(looked).toBe(afterAdd + 5);
    clock.advance(5_000);
    expect(looked).toBe(afterAdd + 5);
    expect(vm.getMountedVolumesForPod('a').size).toBe(5);
  });

  // Every API pod has a token volume: a wait that reconciled every pod's volumes made a burst of
  // N pod starts cost N² volume checks.
  it("a pod's wait reconciles that pod's volumes, not every pod's", async () => {
    let checked = 0;
    const vm = newManager({
      plugins: [
        countingPlugin({
          canSupport: (v) => v.name === 'counted',
          // Read by the reconciler once per mounted volume it checks.
          requiresRemount: () => {
            checked++;
            return false;
          },
        }),
      ],
    });
    const counted = (uid: string) => makePod({ uid, volumes: [{ name: 'counted', emptyDir: {} }] });
    pods = Array.from({ length: 20 }, (_, i) => counted(`p${i}`));
    vm.start();
    await advanceUntil(clock, () =>
      pods.every((p) => vm.getMountedVolumesForPod(p.metadata!.uid!).size === 1),
    );
    const late = counted('late');
    pods = [...pods, late];
    checked = 0;
    const wait = track(vm.waitForAttachAndMount(late));
    // Without the clock moving, no periodic pass runs: the wait alone mounts the pod.
    for (let i = 0; i < 20 && !wait.done; i++) await new Promise((r) => setImmediate(r));
    expect(wait.done).toBe(true);
    expect(vm.getMountedVolumesForPod('late').size).toBe(1);
    // The 20 other pods' mounted volumes were not checked (a full pass would read 20 or more).
    expect(checked).toBeLessThanOrEqual(1);
  });

  // A finished mount woke every waiting pod, each of which re-armed its poll timer: N pods
  // starting together cost N² wake-ups (10,000 emptyDir pods waited on at once timed out).
  it('a finished mount wakes the waits of its own pod only', async () => {
    let armed = 0;
    clock = new (class extends FakeClock {
      override setTimeout(callback: () => void, delayMs: number) {
        armed++;
        return super.setTimeout(callback, delayMs);
      }
    })();
    let release: () => void = () => {};
    const blocked = new Promise<void>((r) => {
      release = r;
    });
    const vm = newManager({
      plugins: [
        () => ({
          ...countingPlugin({ canSupport: (v) => v.name === 'slow' || v.name === 'quick' })(),
          setUp: (spec) => (spec.volume.name === 'slow' ? blocked : Promise.resolve()),
        }),
      ],
    });
    vm.start();
    await advanceUntil(clock, () => vm.reconcilerStatesHasBeenSynced());
    const waiting = makePod({ uid: 'waiting', volumes: [{ name: 'slow', emptyDir: {} }] });
    const others = Array.from({ length: 20 }, (_, i) =>
      makePod({ uid: `o${i}`, volumes: [{ name: 'quick', emptyDir: {} }] }),
    );
    pods = [waiting, ...others];
    const slow = track(vm.waitForAttachAndMount(waiting));
    await new Promise((r) => setImmediate(r));
    const before = armed;
    // The other pods mount one after another and their waits end, without the clock moving.
    for (const other of others) {
      const quick = track(vm.waitForAttachAndMount(other));
      for (let i = 0; i < 20 && !quick.done; i++) await new Promise((r) => setImmediate(r));
      expect(quick.done).toBe(true);
    }
    // One poll timer for each other pod's wait; the slow pod's wait was not woken (a woken wait
    // arms a new timer), nor was any other pod's by its neighbours' mounts.
    expect(armed - before).toBe(others.length);
    expect(slow.done).toBe(false);
    release();
    await advanceUntil(clock, () => slow.done);
    expect(slow.error).toBeUndefined();
  });

  it('podsChanged makes a pass at once: a pod added is populated without waiting for the idle period', async () => {
    const passes: number[] = [];
    const vm = newManager({
      getPods: () => {
        passes.push(clock.now());
        return pods;
      },
      podStateProvider: {
        shouldPodContainersBeTerminating: () => false,
        shouldPodRuntimeBeRemoved: (uid) => !pods.some((p) => p.metadata?.uid === uid),
      },
    });
    vm.start();
    clock.advance(10_000);
    const idleSince = passes.at(-1) as number;
    clock.advance(500);
    pods = [appPod('event')];
    const t = clock.now();
    const before = passes.length;
    vm.podsChanged();
    expect(passes.slice(before)).toEqual([t]);
    expect(t - idleSince).toBeLessThan(1000);
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('event').size === 5, { step: 10 });
    expect(clock.now() - t).toBeLessThan(500);
    // Removed: the pod's volumes go as soon as it says so.
    pods = [];
    vm.podsChanged();
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('event').size === 0, { step: 10 });
  });

  it('times out after 2 min 3 s listing the unmounted volumes and their last error', async () => {
    pods = [
      makePod({
        volumes: [
          { name: 'ok', emptyDir: {} },
          { name: 'cm', configMap: { name: 'missing' } },
          { name: 'nfs', nfs: { server: 'x', path: '/' } },
        ],
      }),
    ];
    const vm = newManager();
    vm.start();
    const started = clock.now();
    const wait = track(vm.waitForAttachAndMount(pods[0]!));
    await advanceUntil(clock, () => vm.getMountedVolumesForPod('uid-1').has('ok'));
    await clock.tick(Math.max(0, started + 122_000 - clock.now()));
    expect(wait.done).toBe(false);
    await advanceUntil(clock, () => wait.done, { step: 500 });
    expect(clock.now() - started).toBeGreaterThanOrEqual(123_000);
    expect(clock.now() - started).toBeLessThan(130_000);
    const err = wait.error as VolumeMountTimeoutError;
    expect(err).toBeInstanceOf(VolumeMountTimeoutError);
    expect(err.code).toBe('FailedMount');
    expect(err.unmountedVolumes).toEqual(['cm', 'nfs']);
    expect(err.failedToProcessVolumes).toEqual(['nfs']);
    expect(err.message).toContain(
      'unmounted volumes=[cm nfs], unattached volumes=[cm nfs], failed to process volumes=[nfs]',
    );
    expect(err.message).toContain('timed out waiting for the condition');
    expect(err.message).toContain('configmaps "missing" not found');
    expect(err.volumeErrors.get('nfs')).toBe('no volume plugin matched');
    // One event per distinct error, not one per retry.
    const failed = recorder.events.filter((e) => e.reason === 'FailedMount');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.message).toBe(
      'MountVolume.SetUp failed for volume "cm" : configmaps "missing" not found',
    );
    expect(failed[0]?.object).toMatchObject({ kind: 'Pod', name: 'pod-1', namespace: 'ns', uid: 'uid-1' });
  });

  it('retries a failed mount with exponential backoff and succeeds once the object appears', async () => {
    pods = [makePod({ volumes: [{ name: 'cm', configMap: { name: 'later' } }] })];
    const vm = newManager();
    vm.start();
    const wait = track(vm.waitForAttachAndMount(pods[0]!));
    await advanceUntil(clock, () => getter.reads >= 1, { step: 10 });
    const start = clock.now();
    const readTimes: number[] = [];
    let last = getter.reads;
    while (readTimes.length < 4) {
      await clock.tick(50);
      await new Promise((r) => setImmediate(r));
      if (getter.reads > last) {
        last = getter.reads;
        readTimes.push(clock.now() - start);
      }
    }
    // 500 ms, then 1 s, 2 s, 4 s between tries (to the reconciler's 100 ms period).
    const gaps = readTimes.map((t, i) => t - (i === 0 ? 0 : (readTimes[i - 1] ?? 0)));
    expect(gaps[0]).toBeGreaterThanOrEqual(500);
    expect(gaps[0]).toBeLessThanOrEqual(700);
    expect(gaps[1]).toBeGreaterThanOrEqual(1000);
    expect(gaps[2]).toBeGreaterThanOrEqual(2000);
    expect(gaps[3]).toBeGreaterThanOrEqual(4000);
    getter.setConfigMap({ metadata: { name: 'later', namespace: 'ns' }, data: { a: 'b' } });
    await advanceUntil(clock, () => wait.done);
    expect(wait.error).toBeUndefined();
    expect(vm.getVolumeErrors('uid-1').size).toBe(0);
  });

  it('stops waiting when the signal aborts', async () => {
    pods = [makePod({ volumes: [{ name: 'cm', configMap: { name: 'missing' } }] })];
    const vm = newManager();
    vm.start();
    const ac = new AbortController();
    const wait = track(vm.waitForAttachAndMount(pods[0]!, { signal: ac.signal }));
    await clock.tick(1000);
    ac.abort(new Error('pod sync cancelled'));
    await advanceUntil(clock, () => wait.done, { step: 10 });
    expect((wait.error as Error).message).toBe('pod sync cancelled');
  });

  it('does not start mounting a pod whose containers are terminating', async () => {
    const base = appPod();
    pods = [{ ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }];
    const vm = newManager();
    vm.start();
    await clock.tick(1000);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(vm.getMountedVolumesForPod('uid-1').size).toBe(0);
    await expect(fs.stat(path.join(root, 'pods', 'uid-1'))).rejects.toThrow();
  });
});

describe('BasicVolumeManager: re-projection', () => {
  it('each wait reprocesses the pod: configMap, secret and label changes reach the files', async () => {
    pods = [appPod()];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const config = path.join(volDir('uid-1', 'kubernetes.io~configmap', 'config'), 'k.txt');
    const labels = path.join(volDir('uid-1', 'kubernetes.io~downward-api', 'info'), 'labels');
    const token = path.join(volDir('uid-1', 'kubernetes.io~secret', 'creds'), 'token');

    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { k: 'v2' } });
    getter.setSecret({
      metadata: { name: 'sec', namespace: 'ns' },
      data: { token: Buffer.from('rotated').toString('base64') },
    });
    const relabelled = appPod();
    relabelled.metadata!.labels = { app: 'web', version: '2' };
    pods = [relabelled];
    // Without a reprocess nothing changes, however long we wait.
    await clock.tick(5000);
    expect(await readText(config)).toBe('v1');

    await settle(vm.waitForAttachAndMount(relabelled));
    await advanceUntil(clock, async () => (await readText(config)) === 'v2');
    await advanceUntil(clock, async () => (await readText(labels)) === 'app="web"\nversion="2"');
    expect(await readText(token)).toBe('rotated');
    // Re-projection never mounts a tmpfs twice.
    expect(mounter.calls.filter((c) => c.startsWith('mount'))).toHaveLength(3);
  });
});

describe('BasicVolumeManager: unmount and clean-up', () => {
  it('tears down the volumes of a pod that left and removes its volume directories', async () => {
    pods = [appPod(), appPod('keep')];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    await settle(vm.waitForAttachAndMount(pods[1]!));
    const gone = pods[0]!;
    pods = [pods[1]!];
    await settle(vm.waitForUnmount(gone));
    expect(vm.getMountedVolumesForPod('uid-1').size).toBe(0);
    await expect(fs.stat(path.join(root, 'pods', 'uid-1', 'volumes'))).rejects.toThrow();
    expect(mounter.mounts.filter((m) => m.mountPoint.includes('/uid-1/'))).toEqual([]);
    expect(vm.getMountedVolumesForPod('keep').size).toBe(5);
  });

  it('keeps the volumes while the pod state provider says containers may still run', async () => {
    pods = [appPod()];
    let runtimeRemoved = false;
    const vm = newManager({
      podStateProvider: {
        shouldPodContainersBeTerminating: () => runtimeRemoved,
        shouldPodRuntimeBeRemoved: () => runtimeRemoved,
      },
    });
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    pods = [];
    await clock.tick(2000);
    expect(vm.getMountedVolumesForPod('uid-1').size).toBe(5);
    runtimeRemoved = true;
    await settle(vm.waitForUnmount(appPod()));
    expect(vm.getMountedVolumesForPod('uid-1').size).toBe(0);
  });

  it('never tears down a desired pod, even when the pod state says its runtime is gone', async () => {
    pods = [appPod()];
    let terminating = false;
    const vm = newManager({
      podStateProvider: {
        shouldPodContainersBeTerminating: () => terminating,
        // What upstream's pod workers answer for a pod they do not know yet.
        shouldPodRuntimeBeRemoved: () => true,
      },
    });
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const callsBefore = mounter.calls.length;
    await clock.tick(2000);
    expect(mounter.calls.slice(callsBefore)).toEqual([]);
    expect(vm.getMountedVolumesForPod('uid-1').size).toBe(5);
    // Once its containers terminate, it is no longer desired and its volumes go.
    terminating = true;
    await settle(vm.waitForUnmount(appPod()));
    await expect(fs.stat(path.join(root, 'pods', 'uid-1', 'volumes'))).rejects.toThrow();
  });

  it('a terminal phase releases the volumes with the default pod state', async () => {
    pods = [appPod()];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const done: Pod = { ...appPod(), status: { phase: 'Succeeded' } };
    pods = [done];
    await settle(vm.waitForUnmount(done));
    await expect(fs.stat(path.join(root, 'pods', 'uid-1', 'volumes'))).rejects.toThrow();
  });
});

describe('BasicVolumeManager: restart', () => {
  it('rebuilds the actual state from disk: nothing lost, nothing mounted twice', async () => {
    pods = [appPod()];
    const first = newManager();
    first.start();
    await settle(first.waitForAttachAndMount(pods[0]!));
    const scratch = volDir('uid-1', 'kubernetes.io~empty-dir', 'scratch');
    await fs.writeFile(path.join(scratch, 'work'), 'in progress');
    await settle(first.stop());
    const mountsBefore = mounter.calls.length;

    // A new agent, same root and same mount table.
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { k: 'after-restart' } });
    const second = newManager();
    expect(second.reconcilerStatesHasBeenSynced()).toBe(false);
    second.start();
    await advanceUntil(clock, () => second.reconcilerStatesHasBeenSynced());
    expect([...second.getMountedVolumesForPod('uid-1').keys()].sort()).toEqual([
      'cache',
      'config',
      'creds',
      'info',
      'scratch',
    ]);
    await settle(second.waitForAttachAndMount(pods[0]!));
    expect(await readText(path.join(scratch, 'work'))).toBe('in progress');
    // API data volumes are re-projected after the restart.
    await advanceUntil(
      clock,
      async () =>
        (await readText(path.join(volDir('uid-1', 'kubernetes.io~configmap', 'config'), 'k.txt'))) ===
        'after-restart',
    );
    expect(mounter.calls.slice(mountsBefore)).toEqual([]);
    expect(mounter.mounts).toHaveLength(3);
  });

  it('volumes of pods gone during the restart wait for the sources, then are torn down', async () => {
    pods = [appPod('stale')];
    const first = newManager();
    first.start();
    await settle(first.waitForAttachAndMount(pods[0]!));
    await settle(first.stop());

    pods = [];
    let ready = false;
    const second = newManager({ sourcesReady: () => ready });
    second.start();
    await advanceUntil(clock, () => second.reconcilerStatesHasBeenSynced());
    await clock.tick(3000);
    expect(second.getMountedVolumesForPod('stale').size).toBe(5);
    ready = true;
    await advanceUntil(clock, () => second.getMountedVolumesForPod('stale').size === 0);
    await advanceUntil(clock, async () =>
      fs.stat(path.join(root, 'pods', 'stale', 'volumes')).then(
        () => false,
        () => true,
      ),
    );
    expect(mounter.mounts).toEqual([]);
  });

  it('keeps volumes found on disk while the pod state says containers may still use them', async () => {
    pods = [appPod('adopted')];
    const first = newManager();
    first.start();
    await settle(first.waitForAttachAndMount(pods[0]!));
    await settle(first.stop());
    const configDir = volDir('adopted', 'kubernetes.io~configmap', 'config');
    const inode = (await fs.stat(configDir)).ino;
    const callsBefore = mounter.calls.length;

    // The sources are ready but the pod has not reached the pod list yet (it is on its way
    // through the sync loop); the pod workers do not know it and have not synced yet.
    pods = [];
    let podsSynced = false;
    const second = newManager({
      sourcesReady: () => true,
      podStateProvider: {
        shouldPodContainersBeTerminating: () => false,
        shouldPodRuntimeBeRemoved: () => podsSynced,
      },
    });
    second.start();
    await advanceUntil(clock, () => second.reconcilerStatesHasBeenSynced());
    await clock.tick(3000);
    pods = [appPod('adopted')];
    await settle(second.waitForAttachAndMount(pods[0]!));
    // Now the pod state says "runtime gone" (an unknown pod after the first sync) while the pod
    // is in the pod list and not terminating: it is desired, so nothing may be torn down.
    podsSynced = true;
    await clock.tick(3000);
    // Tear-downs start within the reconciler pass, so a tmpfs umount would already be recorded.
    expect(mounter.calls.slice(callsBefore)).toEqual([]);
    // Drain: stop() waits for every running operation, so a tear-down that started has
    // finished before the checks below, whatever the speed of the file system.
    await settle(second.stop());
    // The very same directory: a running container's bind mount still shows the content.
    expect((await fs.stat(configDir)).ino).toBe(inode);
    expect(second.getMountedVolumesForPod('adopted').size).toBe(5);
    expect(mounter.mounts).toHaveLength(3);
  });

  it('with real tmpfs: a restarted manager finds the mount in mountinfo and does not mount again', async (ctx) => {
    const real = new SystemMounter();
    pods = [
      makePod({
        uid: 'tmpfs-pod',
        volumes: [{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } }],
      }),
    ];
    const dir = volDir('tmpfs-pod', 'kubernetes.io~empty-dir', 'mem');
    const first = newManager({ mounter: real });
    try {
      first.start();
      const wait = track(first.waitForAttachAndMount(pods[0]!));
      await advanceUntil(clock, () => wait.done || first.getVolumeErrors('tmpfs-pod').size > 0, { step: 10 });
      const err = first.getVolumeErrors('tmpfs-pod').get('mem');
      if (err && /permission|not permitted|superuser/i.test(err))
        ctx.skip(true, `tmpfs needs privileges: ${err}`);
      await advanceUntil(clock, () => first.getMountedVolumesForPod('tmpfs-pod').size === 1, { step: 10 });
      await fs.writeFile(path.join(dir, 'kept'), 'yes');
      await first.stop();

      const second = newManager({ mounter: real });
      second.start();
      await settle(second.waitForAttachAndMount(pods[0]!));
      const realDir = await fs.realpath(dir);
      expect((await real.list()).filter((m) => m.mountPoint === realDir)).toHaveLength(1);
      expect(await readText(path.join(dir, 'kept'))).toBe('yes');
      pods = [];
      await settle(second.waitForUnmount(makePod({ uid: 'tmpfs-pod' })));
      expect(await real.getMount(dir)).toBeUndefined();
    } finally {
      for (let i = 0; i < 4 && (await real.getMount(dir)); i++) await real.unmount(dir).catch(() => {});
    }
  });
});

describe('BasicVolumeManager: only volumes containers use (GetPodVolumeNames)', () => {
  it('skips a declared volume no container mounts, and does not wait for it', async () => {
    pods = [
      makePod({
        containers: [{ name: 'c', image: 'x', volumeMounts: [{ name: 'used', mountPath: '/u' }] }],
        volumes: [
          { name: 'used', emptyDir: {} },
          { name: 'unused', configMap: { name: 'missing' } },
        ],
      }),
    ];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    await clock.tick(2000);
    expect([...vm.getMountedVolumesForPod('uid-1').keys()]).toEqual(['used']);
    await expect(fs.stat(volDir('uid-1', 'kubernetes.io~configmap', 'unused'))).rejects.toThrow();
    expect(getter.reads).toBe(0);
    expect(recorder.events.filter((e) => e.reason === 'FailedMount')).toEqual([]);
  });

  it('counts mounts of init and ephemeral containers; a pod whose containers mount nothing needs no wait', async () => {
    pods = [
      makePod({
        initContainers: [{ name: 'i', image: 'x', volumeMounts: [{ name: 'seed', mountPath: '/s' }] }],
        ephemeralContainers: [{ name: 'e', image: 'x', volumeMounts: [{ name: 'debug', mountPath: '/d' }] }],
        containers: [{ name: 'c', image: 'x' }],
        volumes: [
          { name: 'seed', emptyDir: {} },
          { name: 'debug', emptyDir: {} },
          { name: 'idle', emptyDir: {} },
        ],
      }),
    ];
    const vm = newManager();
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    expect([...vm.getMountedVolumesForPod('uid-1').keys()].sort()).toEqual(['debug', 'seed']);
    const bare = makePod({
      uid: 'bare',
      containers: [{ name: 'c', image: 'x' }],
      volumes: [{ name: 'cm', configMap: { name: 'missing' } }],
    });
    pods.push(bare);
    // Resolves at once, with no time passing.
    await vm.waitForAttachAndMount(bare);
  });

  it('the timeout error lists unmounted volumes sorted, including those that failed to process', async () => {
    pods = [
      makePod({
        volumes: [
          { name: 'zeta', configMap: { name: 'missing' } },
          { name: 'alpha', configMap: { name: 'missing' } },
          { name: 'nfs', nfs: { server: 'x', path: '/' } },
        ],
      }),
    ];
    const vm = newManager();
    vm.start();
    const wait = track(vm.waitForAttachAndMount(pods[0]!));
    await advanceUntil(clock, () => wait.done, { step: 1000, limit: 200 });
    const err = wait.error as VolumeMountTimeoutError;
    expect(err.message).toContain(
      'unmounted volumes=[alpha nfs zeta], unattached volumes=[alpha nfs zeta], failed to process volumes=[nfs]: timed out waiting for the condition',
    );
  });
});

describe('BasicVolumeManager: the kube-api-access volume of an API pod', () => {
  /** The volume the ServiceAccount admission plugin adds to every API pod. */
  function apiPod(): Pod {
    const pod = makePod({
      uid: 'api-uid',
      name: 'web-0',
      namespace: 'ns',
      serviceAccountName: 'default',
      volumes: [
        {
          name: 'kube-api-access-x7k2p',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
            ],
          },
        },
      ],
    });
    pod.spec!.containers[0]!.volumeMounts = [
      {
        name: 'kube-api-access-x7k2p',
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        readOnly: true,
      },
    ];
    return pod;
  }

  it('mounts token, ca.crt and namespace; a reprocess writes the refreshed token; tear-down forgets the tokens', async () => {
    getter.setConfigMap({
      metadata: { name: 'kube-root-ca.crt', namespace: 'ns' },
      data: { 'ca.crt': '-----BEGIN CERTIFICATE-----\n' },
    });
    const tokens = new FakeTokenGetter({ now: () => clock.now() });
    pods = [apiPod()];
    const vm = newManager({ tokenGetter: tokens });
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const dir = volDir('api-uid', 'kubernetes.io~projected', 'kube-api-access-x7k2p');
    expect(await readText(path.join(dir, 'token'))).toBe('ns/default//1');
    expect(await readText(path.join(dir, 'ca.crt'))).toBe('-----BEGIN CERTIFICATE-----\n');
    expect(await readText(path.join(dir, 'namespace'))).toBe('ns');
    expect((await fs.stat(path.join(dir, 'token'))).mode & 0o777).toBe(0o644);
    // No audience: the API server's own; the exact expiration asked for; bound to the pod.
    expect(tokens.requests[0]).toEqual({
      namespace: 'ns',
      serviceAccountName: 'default',
      spec: {
        audiences: [],
        expirationSeconds: 3607,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-0', uid: 'api-uid' },
      },
    });
    expect(vm.getMountedVolumesForPod('api-uid').get('kube-api-access-x7k2p')).toEqual({
      hostPath: dir,
      readOnly: true,
    });

    // The next sync's reprocess asks again; what the token getter returns reaches the file.
    await settle(vm.waitForAttachAndMount(pods[0]!));
    await advanceUntil(clock, async () => (await readText(path.join(dir, 'token'))) === 'ns/default//2');

    const gone = pods[0]!;
    pods = [];
    await settle(vm.waitForUnmount(gone));
    expect(tokens.deleted).toEqual(['api-uid']);
  });

  it('fails the mount naming the cause while no token can be had, and mounts once one can', async () => {
    getter.setConfigMap({
      metadata: { name: 'kube-root-ca.crt', namespace: 'ns' },
      data: { 'ca.crt': 'pem' },
    });
    const tokens = new FakeTokenGetter({ now: () => clock.now() });
    tokens.error = new Error('failed to fetch token: serviceaccounts "default" not found');
    pods = [apiPod()];
    const vm = newManager({ tokenGetter: tokens });
    vm.start();
    await advanceUntil(clock, () => vm.getVolumeErrors('api-uid').size > 0);
    expect(vm.getVolumeErrors('api-uid').get('kube-api-access-x7k2p')).toMatch(
      /serviceaccounts "default" not found/,
    );
    expect(recorder.events.map((e) => e.reason)).toContain('FailedMount');
    tokens.error = undefined;
    await settle(vm.waitForAttachAndMount(pods[0]!));
    expect(vm.getMountedVolumesForPod('api-uid').size).toBe(1);
  });
});

describe('BasicVolumeManager: periodic remount (remountPeriodMs)', () => {
  it('re-projects API data volumes every period without a wait, so refreshed content reaches files', async () => {
    pods = [appPod()];
    const vm = newManager({ remountPeriodMs: 60_000 });
    vm.start();
    await settle(vm.waitForAttachAndMount(pods[0]!));
    const config = path.join(volDir('uid-1', 'kubernetes.io~configmap', 'config'), 'k.txt');
    getter.setConfigMap({ metadata: { name: 'cfg', namespace: 'ns' }, data: { k: 'v2' } });
    await clock.tick(59_000);
    expect(await readText(config)).toBe('v1');
    await clock.tick(1_000);
    await advanceUntil(clock, async () => (await readText(config)) === 'v2', { step: 100 });
  });
});
