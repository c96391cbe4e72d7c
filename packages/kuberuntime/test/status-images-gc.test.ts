import fs from 'node:fs';
import path from 'node:path';
import { noopLogger, type Secret } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImageManager, type ImageService, pullPolicyOf, pullSecretsToAuth } from '../src/images.js';
import { convertPodStatusToRunningPod } from '../src/index.js';
import { type Harness, harness, makePod } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness({ registry: ['registry.example.com/app:1'] });
});
afterEach(async () => {
  await h.close();
});

const only = (status: Awaited<ReturnType<Harness['status']>>, name: string) =>
  status.containerStatuses.find((c) => c.name === name)!;

describe('getPodStatus', () => {
  it('reads a sandbox or container status again only when its listed state changed', async () => {
    const pod = makePod({
      containers: [
        { name: 'a', image: 'busybox:v2' },
        { name: 'b', image: 'busybox:v2' },
      ],
    });
    await h.sync(pod);
    const first = await h.status(pod);
    h.server.clearCalls();
    const again = await h.status(pod);
    expect(again).toEqual({ ...first, timestamp: again.timestamp });
    expect(h.server.calls('PodSandboxStatus')).toHaveLength(0);
    expect(h.server.calls('ContainerStatus')).toHaveLength(0);

    // One container exits: only its status is read again, and it is the new one.
    h.server.exitContainer(only(first, 'a').id.id, 2);
    h.server.clearCalls();
    const afterExit = await h.status(pod);
    expect(
      h.server.calls('ContainerStatus').map((c) => (c.request as { containerId: string }).containerId),
    ).toEqual([only(first, 'a').id.id]);
    expect(only(afterExit, 'a')).toMatchObject({ state: 'exited', exitCode: 2 });
    expect(only(afterExit, 'b')).toEqual(only(first, 'b'));

    // The sandbox stops: its status is read again and is not ready.
    await h.manager.killPod({
      pod,
      runningPod: convertPodStatusToRunningPod(afterExit),
      gracePeriodOverride: 1,
    });
    h.server.clearCalls();
    const stopped = await h.status(pod);
    expect(h.server.calls('PodSandboxStatus')).toHaveLength(1);
    expect(stopped.sandboxStatuses[0]?.state).toBe('notready');
  });

  it('reports exit code, reason, times and the termination message from its file', async () => {
    const pod = makePod({ restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const running = only(await h.status(pod), 'c');
    expect(running).toMatchObject({ state: 'running', exitCode: 0, finishedAt: 0, restartCount: 0 });
    expect(running.startedAt).toBeGreaterThan(0);
    h.server.setTerminationMessage(running.id.id, 'bye from c');
    await h.clock.tick(5000);
    h.server.exitContainer(running.id.id, 3);
    const exited = only(await h.status(pod), 'c');
    expect(exited).toMatchObject({ state: 'exited', exitCode: 3, reason: 'Error', message: 'bye from c' });
    // Started during the first sync; the sync helper moves time 1 s, then 5 s more.
    expect(exited.finishedAt - exited.startedAt).toBe(6000);
    // Never: nothing restarts, and the pod is killed once nothing runs.
    const r = await h.sync(pod);
    expect(r.syncResults.map((x) => x.action)).toEqual(['KillPodSandbox']);
  });

  it('falls back to the log tail under FallbackToLogsOnError when the container failed without a message', async () => {
    const pod = makePod({
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: 'busybox:v2', terminationMessagePolicy: 'FallbackToLogsOnError' }],
    });
    await h.sync(pod);
    const id = only(await h.status(pod), 'c').id.id;
    h.server.writeLog(id, 'stdout', 'starting\n');
    h.server.writeLog(id, 'stderr', 'fatal: broken\n');
    h.server.exitContainer(id, 1);
    expect(only(await h.status(pod), 'c').message).toBe('starting\nfatal: broken\n');
  });

  it('does not read logs for a container that succeeded', async () => {
    const pod = makePod({
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: 'busybox:v2', terminationMessagePolicy: 'FallbackToLogsOnError' }],
    });
    await h.sync(pod);
    const id = only(await h.status(pod), 'c').id.id;
    h.server.writeLog(id, 'stdout', 'done\n');
    h.server.exitContainer(id, 0);
    expect(only(await h.status(pod), 'c').message).toBe('');
  });

  it('a second manager rebuilds the same status from the CRI alone', async () => {
    const pod = makePod({
      initContainers: [{ name: 'i', image: 'busybox:v2' }],
      containers: [{ name: 'c', image: 'busybox:v2' }],
    });
    await h.sync(pod);
    h.server.exitContainer(only(await h.status(pod), 'i').id.id, 0);
    await h.sync(pod);
    h.server.exitContainer(only(await h.status(pod), 'c').id.id, 2);
    await h.sync(pod);
    const first = await h.status(pod);
    const second = await h.newManager({ runtimeName: undefined }).getPodStatus({
      uid: pod.metadata!.uid!,
      name: pod.metadata!.name!,
      namespace: 'default',
    });
    expect({ ...second, timestamp: 0 }).toEqual({ ...first, timestamp: 0 });
    expect(first.containerStatuses.map((c) => [c.name, c.state, c.restartCount])).toEqual([
      ['c', 'running', 1],
      ['c', 'exited', 0],
      ['i', 'exited', 0],
    ]);
    const pods = await h.manager.getPods(true);
    const mine = pods.find((p) => p.id === pod.metadata!.uid)!;
    expect(mine.containers).toHaveLength(3);
    expect(mine.sandboxes).toHaveLength(1);
    expect(
      (await h.manager.getPods(false)).find((p) => p.id === pod.metadata!.uid)!.containers.map((c) => c.name),
    ).toEqual(['c']);
  });

  it('derives the restart count from the log directory when the runtime lost the containers', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    const status = await h.status(pod);
    const logDir = path.join(h.dir, 'logs', `default_${pod.metadata!.name}_${pod.metadata!.uid}`, 'c');
    for (const n of [0, 1, 4]) fs.writeFileSync(path.join(logDir, `${n}.log`), '');
    await h.rs.removeContainer({ containerId: only(status, 'c').id.id });
    await h.sync(pod);
    expect(only(await h.status(pod), 'c').restartCount).toBe(5);
  });
});

describe('getPods', () => {
  it('returns the same pod objects for pods that did not change, and a new one for a pod that did', async () => {
    const steady = makePod({ containers: [{ name: 'a', image: 'busybox:v2' }] });
    const changing = makePod({ containers: [{ name: 'b', image: 'busybox:v2' }] });
    await h.sync(steady);
    await h.sync(changing);
    const byUid = async () => new Map((await h.manager.getPods(true)).map((p) => [p.id, p]));
    const first = await byUid();
    const second = await byUid();
    expect(second.get(steady.metadata!.uid!)).toBe(first.get(steady.metadata!.uid!));
    expect(second.get(changing.metadata!.uid!)).toBe(first.get(changing.metadata!.uid!));

    h.server.exitContainer(only(await h.status(changing), 'b').id.id, 1);
    const third = await byUid();
    expect(third.get(steady.metadata!.uid!)).toBe(first.get(steady.metadata!.uid!));
    const changed = third.get(changing.metadata!.uid!)!;
    expect(changed).not.toBe(first.get(changing.metadata!.uid!));
    expect(changed.containers.map((c) => [c.name, c.state])).toEqual([['b', 'exited']]);
    // Its unchanged sandbox is the RuntimeContainer made before.
    expect(changed.sandboxes[0]).toBe(first.get(changing.metadata!.uid!)!.sandboxes[0]);

    // A pod whose last container is removed leaves its sandbox only; a pod gone leaves the list.
    await h.rs.removeContainer({ containerId: changed.containers[0]!.id.id });
    expect((await byUid()).get(changing.metadata!.uid!)!.containers).toEqual([]);
    await h.rs.stopPodSandbox({ podSandboxId: changed.sandboxes[0]!.id.id });
    await h.rs.removePodSandbox({ podSandboxId: changed.sandboxes[0]!.id.id });
    const last = await byUid();
    expect(last.has(changing.metadata!.uid!)).toBe(false);
    expect(last.get(steady.metadata!.uid!)).toBe(first.get(steady.metadata!.uid!));
  });

  it('running-only listings are kept apart from full ones', async () => {
    const pod = makePod({ containers: [{ name: 'a', image: 'busybox:v2' }] });
    await h.sync(pod);
    const all = (await h.manager.getPods(true))[0]!;
    const running = (await h.manager.getPods(false))[0]!;
    expect((await h.manager.getPods(true))[0]).toBe(all);
    expect((await h.manager.getPods(false))[0]).toBe(running);
    h.server.exitContainer(all.containers[0]!.id.id, 0);
    expect((await h.manager.getPods(false))[0]!.containers).toEqual([]);
    expect((await h.manager.getPods(true))[0]!.containers.map((c) => c.state)).toEqual(['exited']);
  });
});

describe('images', () => {
  it('policy Never with an absent image gives ErrImageNeverPull', async () => {
    const pod = makePod({
      containers: [{ name: 'c', image: 'localhost/absent:1', imagePullPolicy: 'Never' }],
    });
    const r = await h.sync(pod);
    const start = r.syncResults.find((x) => x.action === 'StartContainer')!;
    expect(start).toMatchObject({
      error: 'ErrImageNeverPull',
      message: 'Container image "localhost/absent:1" is not present with pull policy of Never',
    });
    expect(h.server.calls('PullImage')).toHaveLength(0);
    expect(h.recorder.events.some((e) => e.reason === 'ErrImageNeverPull' && e.type === 'Warning')).toBe(
      true,
    );
  });

  it('an image found present is taken as present for 1 s; a failed create asks again', async () => {
    const start = async (pod: ReturnType<typeof makePod>) =>
      h.manager.syncPod({ pod, podStatus: await h.status(pod), pullSecrets: [], backOff: h.backOff });
    const image = 'busybox:v2';
    await start(makePod({ containers: [{ name: 'c', image }] }));
    expect(h.server.calls('ImageStatus')).toHaveLength(1);
    // Within the second: no question.
    await h.clock.tick(500);
    await start(makePod({ containers: [{ name: 'c', image }] }));
    expect(h.server.calls('ImageStatus')).toHaveLength(1);
    // The image goes; the next start within the second fails to create, and forgets it.
    await h.is.removeImage({ image: { image } });
    const failed = await start(makePod({ containers: [{ name: 'c', image }] }));
    expect(failed.syncResults.find((x) => x.action === 'StartContainer')?.error).toBe('CreateContainerError');
    expect(h.server.calls('ImageStatus')).toHaveLength(1);
    // So the next start asks, finds it absent, and pulls it (IfNotPresent) from the registry.
    h.server.setPullUnknownImages('succeed');
    const again = await start(makePod({ containers: [{ name: 'c', image }] }));
    expect(again.syncResults.find((x) => x.action === 'StartContainer')?.error).toBeUndefined();
    expect(h.server.calls('PullImage')).toHaveLength(1);
    // After the second, the runtime is asked again.
    h.server.clearCalls();
    await h.clock.tick(1000);
    await start(makePod({ containers: [{ name: 'c', image }] }));
    expect(h.server.calls('ImageStatus')).toHaveLength(1);
  });

  it('presentImageTtlMs 0 asks the runtime on every start, as upstream', async () => {
    const manager = h.newManager({ presentImageTtlMs: 0 });
    for (let i = 0; i < 2; i++) {
      const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
      await manager.syncPod({ pod, podStatus: await h.status(pod), pullSecrets: [], backOff: h.backOff });
    }
    expect(h.server.calls('ImageStatus')).toHaveLength(2);
  });

  it('a failed pull gives ErrImagePull, then ImagePullBackOff for 10 s, then 20 s', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'nowhere/img:1' }] });
    const err = async () => (await h.sync(pod)).syncResults.find((x) => x.action === 'StartContainer')!;
    expect((await err()).error).toBe('ErrImagePull');
    expect(await err()).toMatchObject({
      error: 'ImagePullBackOff',
      message: 'Back-off pulling image "nowhere/img:1"',
    });
    await h.clock.tick(7000);
    expect((await err()).error).toBe('ImagePullBackOff'); // 9 s after the failed pull
    expect((await err()).error).toBe('ErrImagePull'); // 10 s after
    expect(h.server.calls('PullImage')).toHaveLength(2);
    await h.clock.tick(18_000);
    expect((await err()).error).toBe('ImagePullBackOff');
    // Once the image can be pulled, the pod starts.
    h.server.setPullUnknownImages('succeed');
    await h.clock.tick(2000);
    expect((await err()).error).toBeUndefined();
  });

  it('passes matching pull secrets as CRI auth', async () => {
    const secret: Secret = {
      metadata: { name: 'regcred', namespace: 'default' },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from(
          JSON.stringify({
            auths: {
              'registry.example.com': { auth: Buffer.from('alice:s3cret').toString('base64') },
              'other.io': { username: 'x', password: 'y' },
            },
          }),
        ).toString('base64'),
      },
    };
    const pod = makePod({ containers: [{ name: 'c', image: 'registry.example.com/app:1' }] });
    const r = await h.manager.syncPod({
      pod,
      podStatus: await h.status(pod),
      pullSecrets: [secret],
      backOff: h.backOff,
    });
    expect(r.syncResults.find((x) => x.action === 'StartContainer')!.error).toBeUndefined();
    const pull = h.server.calls<{ auth: { username: string; password: string; serverAddress: string } }>(
      'PullImage',
    )[0]!;
    expect(pull.request.auth).toMatchObject({
      username: 'alice',
      password: 's3cret',
      serverAddress: 'registry.example.com',
    });
    expect(pullSecretsToAuth('docker.io/library/busybox', [secret])).toEqual([]);
  });

  it('defaults the pull policy from the tag', () => {
    expect(pullPolicyOf({ name: 'a', image: 'busybox' })).toBe('Always');
    expect(pullPolicyOf({ name: 'a', image: 'busybox:latest' })).toBe('Always');
    expect(pullPolicyOf({ name: 'a', image: 'busybox:1.36' })).toBe('IfNotPresent');
    expect(pullPolicyOf({ name: 'a', image: `busybox@sha256:${'a'.repeat(64)}` })).toBe('IfNotPresent');
    expect(pullPolicyOf({ name: 'a', image: 'busybox', imagePullPolicy: 'Never' })).toBe('Never');
    // The API server's SetDefaults_Container looks only at the tag: an explicit :latest pulls
    // Always even when a digest pins it.
    expect(pullPolicyOf({ name: 'a', image: `busybox:latest@sha256:${'a'.repeat(64)}` })).toBe('Always');
    expect(pullPolicyOf({ name: 'a', image: `busybox:1.36@sha256:${'a'.repeat(64)}` })).toBe('IfNotPresent');
  });

  it('reports pull times in the Pulled event as Go durations (upstream EnsureImageExists)', async () => {
    const clock = new FakeClock();
    const recorder = new InMemoryEventRecorder();
    const pulled = new Set<string>();
    let pullMs = 0;
    const svc = {
      imageStatus: async (req: { image?: { image: string } }) =>
        pulled.has(req.image!.image)
          ? { image: { id: 'sha256:abc', size: 42, username: '' } }
          : { image: undefined },
      pullImage: async (req: { image?: { image: string } }) => {
        clock.advance(pullMs);
        pulled.add(req.image!.image);
        return { imageRef: req.image!.image };
      },
      listImages: async () => ({ images: [] }),
    } as unknown as ImageService;
    const m = new ImageManager({ imageService: svc, clock, recorder, logger: noopLogger });
    const pod = makePod({ containers: [] });
    for (const [image, ms] of [
      ['a:1', 1234],
      ['b:1', 523],
      ['c:1', 61_500],
    ] as const) {
      pullMs = ms;
      await m.ensureImageExists({
        pod,
        container: { name: 'c', image },
        pullSecrets: [],
        objectRef: { kind: 'Pod' },
      });
    }
    expect(recorder.events.filter((e) => e.reason === 'Pulled').map((e) => e.message)).toEqual([
      'Successfully pulled image "a:1" in 1.234s (1.234s including waiting). Image size: 42 bytes.',
      'Successfully pulled image "b:1" in 523ms (523ms including waiting). Image size: 42 bytes.',
      'Successfully pulled image "c:1" in 1m1.5s (1m1.5s including waiting). Image size: 42 bytes.',
    ]);
  });

  it('rejects an invalid image name', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'UPPER/Case:1' }] });
    const r = await h.sync(pod);
    expect(r.syncResults.find((x) => x.action === 'StartContainer')!.error).toBe('InvalidImageName');
  });

  it('pulls one image at a time by default, up to maxParallelImagePulls when set', async () => {
    const clock = new FakeClock();
    const run = async (max: number | undefined) => {
      let active = 0;
      let peak = 0;
      const releases: (() => void)[] = [];
      const svc: ImageService = {
        imageStatus: async () => ({ info: {} }),
        listImages: async () => ({ images: [] }),
        pullImage: async (req) => {
          active++;
          peak = Math.max(peak, active);
          await new Promise<void>((r) => releases.push(r));
          active--;
          return { imageRef: `sha256:${req.image?.image}` };
        },
      };
      const m = new ImageManager({
        imageService: svc,
        clock,
        recorder: new InMemoryEventRecorder(),
        logger: noopLogger,
        ...(max ? { maxParallelImagePulls: max } : {}),
      });
      const pod = makePod({ containers: [] });
      const pulls = ['a:1', 'b:1', 'c:1', 'd:1'].map((image) =>
        m.ensureImageExists({
          pod,
          container: { name: image, image },
          pullSecrets: [],
          objectRef: { kind: 'Pod' },
        }),
      );
      while (
        releases.length + (await Promise.race([Promise.all(pulls).then(() => 1), Promise.resolve(0)])) <
        5
      ) {
        await new Promise((r) => setImmediate(r));
        releases.shift()?.();
        if (releases.length === 0 && active === 0) break;
      }
      await Promise.all(pulls);
      return peak;
    };
    expect(await run(undefined)).toBe(1);
    expect(await run(3)).toBe(3);
  });
});

describe('postStart', () => {
  it('a failing postStart hook kills the container with FailedPostStartHook', async () => {
    const pod = makePod({
      containers: [
        {
          name: 'c',
          image: 'busybox:v2',
          lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 1'] } } },
        },
      ],
    });
    h.server.onExec('sh -c exit 1', () => ({ exitCode: 1, stdout: 'oops' }));
    const r = await h.sync(pod);
    const start = r.syncResults.find((x) => x.action === 'StartContainer')!;
    expect(start.error).toBe('PostStartHookError');
    expect(start.message).toContain('Exec lifecycle hook');
    expect(h.recorder.events.find((e) => e.reason === 'FailedPostStartHook')).toMatchObject({
      type: 'Warning',
      message: 'PostStartHook failed',
    });
    expect(h.recorder.events.find((e) => e.reason === 'Killing')!.message).toBe('FailedPostStartHook');
    expect(only(await h.status(pod), 'c').state).toBe('exited');
  });

  it('a succeeding postStart hook leaves the container running', async () => {
    const pod = makePod({
      containers: [
        { name: 'c', image: 'busybox:v2', lifecycle: { postStart: { exec: { command: ['ok'] } } } },
      ],
    });
    const r = await h.sync(pod);
    expect(r.syncResults.find((x) => x.action === 'StartContainer')!.error).toBeUndefined();
    expect(h.server.calls('ExecSync')).toHaveLength(1);
    expect(only(await h.status(pod), 'c').state).toBe('running');
  });
});

describe('garbageCollect', () => {
  const policy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

  it('keeps one dead instance per container, oldest removed first, never a running one', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    for (let i = 0; i < 3; i++) {
      const s = (await h.status(pod)).containerStatuses.find((c) => c.state === 'running')!;
      h.server.exitContainer(s.id.id, 1);
      await h.clock.tick(400_000);
      await h.sync(pod);
    }
    const before = await h.status(pod);
    expect(before.containerStatuses.map((c) => c.state)).toEqual(['running', 'exited', 'exited', 'exited']);
    await h.manager.garbageCollect({ policy, allSourcesReady: true, evictNonDeletedPods: false });
    const after = await h.status(pod);
    expect(after.containerStatuses.map((c) => c.id.id)).toEqual(
      before.containerStatuses.slice(0, 2).map((c) => c.id.id),
    );
    await h.manager.garbageCollect({
      policy: { ...policy, maxPerPodContainer: 0 },
      allSourcesReady: true,
      evictNonDeletedPods: false,
    });
    expect((await h.status(pod)).containerStatuses.map((c) => c.state)).toEqual(['running']);
  });

  it('enforces maxContainers over all pods, oldest first', async () => {
    const pods = [
      makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] }),
      makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] }),
    ];
    for (const pod of pods) await h.sync(pod);
    for (let i = 0; i < 2; i++) {
      for (const pod of pods) {
        const s = (await h.status(pod)).containerStatuses.find((c) => c.state === 'running')!;
        h.server.exitContainer(s.id.id, 0);
        await h.clock.tick(700_000);
        await h.sync(pod);
      }
    }
    const allDead = (await Promise.all(pods.map((p) => h.status(p))))
      .flatMap((s) => s.containerStatuses.filter((c) => c.state === 'exited'))
      .sort((a, b) => b.createdAt - a.createdAt);
    expect(allDead).toHaveLength(4);
    const newestDead = allDead[0]!.id.id;
    await h.manager.garbageCollect({
      policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 1 },
      allSourcesReady: true,
      evictNonDeletedPods: false,
    });
    const dead = (await Promise.all(pods.map((p) => h.status(p)))).flatMap((s) =>
      s.containerStatuses.filter((c) => c.state === 'exited'),
    );
    // One per evict unit first (the floor), then the oldest of those until one is left.
    expect(dead).toHaveLength(1);
    expect(dead[0]!.id.id).toBe(newestDead);
  });

  it('removes the containers, sandboxes and log directory of a removed pod', async () => {
    const pod = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    const keep = makePod({ containers: [{ name: 'c', image: 'busybox:v2' }] });
    await h.sync(pod);
    await h.sync(keep);
    await h.manager.killPod({ pod, runningPod: convertPodStatusToRunningPod(await h.status(pod)) });
    const logDir = path.join(h.dir, 'logs', `default_${pod.metadata!.name}_${pod.metadata!.uid}`);
    expect(fs.existsSync(logDir)).toBe(true);
    const removed = new Set([pod.metadata!.uid!]);
    const gcManager = h.newManager({
      podStateProvider: {
        shouldPodContentBeRemoved: (uid) => removed.has(uid),
        shouldPodRuntimeBeRemoved: (uid) => removed.has(uid),
      },
    });
    await gcManager.garbageCollect({ policy, allSourcesReady: true, evictNonDeletedPods: false });
    const gone = await h.status(pod);
    expect(gone.containerStatuses).toEqual([]);
    expect(gone.sandboxStatuses).toEqual([]);
    expect(fs.existsSync(logDir)).toBe(false);
    const kept = await h.status(keep);
    expect(kept.sandboxStatuses).toHaveLength(1);
    expect(kept.containerStatuses[0]!.state).toBe('running');
  });
});
