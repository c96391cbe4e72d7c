import type { Pod, PodStatus } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { formatRfc3339, newStatusManager, type StatusManagerOptions, type StatusSink } from '../src/index.js';
import {
  FakePodDeletionSafety,
  FakeStatusPodManager,
  InMemoryStatusSink,
  type InMemoryStatusSinkOptions,
} from '../src/testing/index.js';
import {
  failed,
  podWith,
  ready,
  running,
  spec,
  succeeded,
  waiting,
  waitingWithLastTermination,
  withID,
} from './helpers.js';

function newPod(
  uid = 'uid-foo',
  restartPolicy: 'Always' | 'Never' | 'OnFailure' = 'Always',
  extra: Partial<Pod> = {},
): Pod {
  return podWith(spec(restartPolicy, ['a', 'b']), {
    ...extra,
    metadata: { name: `pod-${uid}`, namespace: 'ns', uid, ...extra.metadata },
  });
}

function staticPod(uid = 'static-uid'): Pod {
  return newPod(uid, 'Always', {
    metadata: {
      name: `pod-${uid}`,
      namespace: 'ns',
      uid,
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': uid },
    },
  });
}

function mirrorOf(pod: Pod, uid = 'mirror-uid'): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      uid,
      annotations: {
        'kubernetes.io/config.source': 'api',
        'kubernetes.io/config.mirror': pod.metadata?.uid ?? '',
      },
    },
  };
}

function setup(
  options: { pods?: Pod[]; mirrors?: Pod[]; sink?: InMemoryStatusSinkOptions; start?: boolean } & Partial<
    Pick<StatusManagerOptions, 'maxConcurrentWrites'>
  > = {},
) {
  const clock = new FakeClock();
  const podManager = new FakeStatusPodManager({
    pods: options.pods ?? [newPod()],
    mirrorPods: options.mirrors ?? [],
  });
  const sink = new InMemoryStatusSink(options.sink);
  const safety = new FakePodDeletionSafety();
  const logger = new InMemoryLogger();
  const manager = newStatusManager({ podManager, podDeletionSafety: safety, sinks: [sink], clock, logger });
  if (options.start !== false) manager.start();
  return { clock, podManager, sink, safety, logger, manager };
}

function runningStatus(): PodStatus {
  return {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'False', reason: 'ContainersNotReady' },
      { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady' },
      { type: 'PodScheduled', status: 'True' },
    ],
    containerStatuses: [withID(running('a'), 'containerd://a1'), withID(running('b'), 'containerd://b1')],
  };
}

function condition(status: PodStatus | undefined, type: string) {
  return status?.conditions?.find((c) => c.type === type);
}

describe('StatusManager cache', () => {
  it('caches a new status as version 1 and writes it once (TestNewStatus)', async () => {
    const { manager, sink, clock } = setup();
    manager.setPodStatus(newPod(), runningStatus());
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(1);
    await clock.tick(0);
    expect(sink.writes).toHaveLength(1);
    expect(sink.writes[0]).toMatchObject({ statusUid: 'uid-foo', version: 1, outcome: 'updated' });
    expect(sink.getPodStatus('uid-foo')?.phase).toBe('Running');
  });

  it('sets startTime once and keeps the pod start time (TestNewStatusPreservesPodStartTime)', () => {
    const { manager, clock } = setup({ start: false });
    const pod = newPod('uid-foo', 'Always', { status: { startTime: '2025-06-01T00:00:00Z' } });
    manager.setPodStatus(pod, runningStatus());
    expect(manager.getPodStatus('uid-foo')?.startTime).toBe('2025-06-01T00:00:00Z');

    const other = newPod('uid-bar');
    manager.setPodStatus(other, runningStatus());
    const first = manager.getPodStatus('uid-bar')?.startTime;
    expect(first).toBe(formatRfc3339(clock.now()));
    clock.advance(5_000);
    manager.setPodStatus(other, { ...runningStatus(), phase: 'Pending', startTime: '2030-01-01T00:00:00Z' });
    expect(manager.getPodStatus('uid-bar')?.startTime).toBe(first);
  });

  // upstream SetPodStatus (PodObservedGenerationTracking, on by default in 1.34): the status
  // records the generation of the pod it was made for; a pod without one gets none.
  it('sets status.observedGeneration from the pod generation', () => {
    const { manager } = setup({ start: false });
    const pod = newPod('uid-foo', 'Always', {
      metadata: { name: 'pod-uid-foo', namespace: 'ns', uid: 'uid-foo', generation: 4 },
    });
    manager.setPodStatus(pod, runningStatus());
    expect(manager.getPodStatus('uid-foo')).toMatchObject({ observedGeneration: 4 });

    manager.setPodStatus(newPod('uid-bar'), { ...runningStatus(), observedGeneration: 9 } as PodStatus);
    expect(manager.getPodStatus('uid-bar')).not.toHaveProperty('observedGeneration');
  });

  it('does not write when nothing changed (TestUnchangedStatus)', async () => {
    const { manager, sink, clock } = setup();
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(1);
    expect(sink.writes).toHaveLength(1);
  });

  it('forces an update of an unchanged status for a pod being deleted', () => {
    const { manager } = setup({ start: false });
    manager.setPodStatus(newPod(), runningStatus());
    const deleting = newPod('uid-foo', 'Always', {
      metadata: {
        name: 'pod-uid-foo',
        namespace: 'ns',
        uid: 'uid-foo',
        deletionTimestamp: '2026-01-01T00:00:00Z',
      },
    });
    manager.setPodStatus(deleting, runningStatus());
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(2);
  });

  it('writes every change (TestChangedStatus) and only the newest of several (TestStaleUpdates)', async () => {
    const { manager, sink, clock } = setup();
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    manager.setPodStatus(newPod(), { ...runningStatus(), message: 'one' });
    manager.setPodStatus(newPod(), { ...runningStatus(), message: 'two' });
    manager.setPodStatus(newPod(), { ...runningStatus(), message: 'three' });
    await clock.tick(0);
    expect(sink.writes.map((w) => [w.version, w.status.message])).toEqual([
      [1, undefined],
      [4, 'three'],
    ]);
  });

  it('sets lastTransitionTime when a condition changes and keeps it otherwise', async () => {
    const { manager, clock } = setup({ start: false });
    const t0 = formatRfc3339(clock.now());
    manager.setPodStatus(newPod(), runningStatus());
    expect(condition(manager.getPodStatus('uid-foo'), 'Ready')?.lastTransitionTime).toBe(t0);

    clock.advance(3_000);
    manager.setPodStatus(newPod(), { ...runningStatus(), message: 'changed' });
    expect(condition(manager.getPodStatus('uid-foo'), 'Ready')?.lastTransitionTime).toBe(t0);

    clock.advance(4_000);
    const readyStatus = runningStatus();
    readyStatus.conditions![0] = { type: 'Ready', status: 'True' };
    manager.setPodStatus(newPod(), readyStatus);
    const after = manager.getPodStatus('uid-foo');
    expect(condition(after, 'Ready')?.lastTransitionTime).toBe(formatRfc3339(clock.now()));
    expect(condition(after, 'PodScheduled')?.lastTransitionTime).toBe(t0);
  });

  it.each([
    'PodReadyToStartContainers',
    'Initialized',
    'Ready',
    'ContainersReady',
    'PodScheduled',
    'DisruptionTarget',
  ])('moves the %s lastTransitionTime only when its status changes', (type) => {
    const { manager, clock } = setup({ start: false });
    const withCondition = (status: 'True' | 'False', message?: string): PodStatus => ({
      phase: 'Running',
      conditions: [{ type, status, ...(message ? { message } : {}) }],
    });
    const t0 = formatRfc3339(clock.now());
    manager.setPodStatus(newPod(), withCondition('False'));
    clock.advance(1_000);
    manager.setPodStatus(newPod(), withCondition('False', 'still false'));
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(2);
    expect(condition(manager.getPodStatus('uid-foo'), type)?.lastTransitionTime).toBe(t0);
    clock.advance(1_000);
    manager.setPodStatus(newPod(), withCondition('True'));
    expect(condition(manager.getPodStatus('uid-foo'), type)?.lastTransitionTime).toBe(
      formatRfc3339(clock.now()),
    );
  });

  it('does not maintain transition times of conditions it does not own', () => {
    const { manager, clock } = setup({ start: false });
    manager.setPodStatus(newPod(), {
      phase: 'Running',
      conditions: [{ type: 'example.com/x', status: 'True' }],
    });
    clock.advance(1_000);
    expect(condition(manager.getPodStatus('uid-foo'), 'example.com/x')?.lastTransitionTime).toBeUndefined();
  });

  it('drops an illegal transition from terminated to running under Never and OnFailure', () => {
    for (const policy of ['Never', 'OnFailure'] as const) {
      const { manager, logger } = setup({ pods: [newPod('u', policy)], start: false });
      const done: PodStatus = { phase: 'Running', containerStatuses: [succeeded('a'), running('b')] };
      manager.setPodStatus(newPod('u', policy), done);
      manager.setPodStatus(newPod('u', policy), {
        phase: 'Running',
        containerStatuses: [running('a'), running('b')],
      });
      expect(manager.getVersionedStatus('u')?.version).toBe(1);
      expect(manager.getPodStatus('u')?.containerStatuses?.[0]?.state?.terminated).toBeDefined();
      expect(logger.records.some((r) => r.message === 'status update on pod aborted')).toBe(true);
    }
  });

  it('allows a failed container to restart under OnFailure and any under Always', () => {
    for (const [policy, old] of [
      ['OnFailure', failed('a')],
      ['Always', succeeded('a')],
    ] as const) {
      const { manager } = setup({ pods: [newPod('u', policy)], start: false });
      manager.setPodStatus(newPod('u', policy), { phase: 'Running', containerStatuses: [old, running('b')] });
      manager.setPodStatus(newPod('u', policy), {
        phase: 'Running',
        containerStatuses: [running('a'), running('b')],
      });
      expect(manager.getVersionedStatus('u')?.version).toBe(2);
    }
  });

  it('keeps a terminal phase once cached', () => {
    const { manager } = setup({ pods: [newPod('u', 'Never')], start: false });
    manager.setPodStatus(newPod('u', 'Never'), {
      phase: 'Failed',
      reason: 'Evicted',
      containerStatuses: [failed('a'), failed('b')],
    });
    manager.setPodStatus(newPod('u', 'Never'), {
      phase: 'Running',
      containerStatuses: [failed('a'), failed('b')],
    });
    expect(manager.getPodStatus('u')).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
  });

  it('normalizes what it caches: sorted statuses and the message budget (TestStatusNormalizationEnforcesMaxBytes)', () => {
    const { manager } = setup({ start: false });
    const long = 'm'.repeat(20_000);
    manager.setPodStatus(newPod(), {
      phase: 'Running',
      containerStatuses: [
        { ...failed('b'), state: { terminated: { exitCode: 1, message: long } } },
        running('a'),
      ],
    });
    const cached = manager.getPodStatus('uid-foo');
    expect(cached?.containerStatuses?.map((c) => c.name)).toEqual(['a', 'b']);
    expect(cached?.containerStatuses?.[1]?.state?.terminated?.message).toHaveLength(12288 / 2);
  });

  it('removes orphaned statuses', () => {
    const { manager } = setup({ pods: [newPod('a'), newPod('b')], start: false });
    manager.setPodStatus(newPod('a'), runningStatus());
    manager.setPodStatus(newPod('b'), runningStatus());
    manager.removeOrphanedStatuses(new Set(['b']));
    expect(manager.getPodStatus('a')).toBeUndefined();
    expect(manager.getPodStatus('b')).toBeDefined();
  });

  it('returns copies, so callers cannot change the cache', () => {
    const { manager } = setup({ start: false });
    manager.setPodStatus(newPod(), runningStatus());
    manager.getPodStatus('uid-foo')!.phase = 'Failed';
    expect(manager.getPodStatus('uid-foo')?.phase).toBe('Running');
  });
});

describe('setContainerReadiness and setContainerStartup', () => {
  it('sets ready and regenerates Ready and ContainersReady (TestSetContainerReadiness)', () => {
    const { manager, clock } = setup({ start: false });
    manager.setPodStatus(newPod(), runningStatus());
    manager.setContainerReadiness('uid-foo', 'containerd://a1', true);
    let status = manager.getPodStatus('uid-foo');
    expect(status?.containerStatuses?.map((c) => c.ready)).toEqual([true, false]);
    expect(condition(status, 'ContainersReady')).toMatchObject({
      status: 'False',
      message: 'containers with unready status: [b]',
    });
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(2);

    clock.advance(2_000);
    manager.setContainerReadiness('uid-foo', { type: 'containerd', id: 'b1' }, true);
    status = manager.getPodStatus('uid-foo');
    expect(condition(status, 'Ready')).toMatchObject({
      status: 'True',
      lastTransitionTime: formatRfc3339(clock.now()),
    });
    expect(condition(status, 'ContainersReady')?.status).toBe('True');
  });

  it('ignores unknown pods, unknown containers, pods not synced yet and unchanged readiness', () => {
    const { manager } = setup({ start: false });
    manager.setContainerReadiness('uid-foo', 'containerd://a1', true);
    expect(manager.getPodStatus('uid-foo')).toBeUndefined();
    manager.setPodStatus(newPod(), runningStatus());
    manager.setContainerReadiness('nope', 'containerd://a1', true);
    manager.setContainerReadiness('uid-foo', 'containerd://zzz', true);
    manager.setContainerReadiness('uid-foo', 'containerd://a1', false);
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(1);
  });

  it('sets started (TestSetContainerStartup), init containers included', () => {
    const { manager } = setup({ start: false });
    manager.setPodStatus(newPod(), {
      ...runningStatus(),
      initContainerStatuses: [withID(running('i'), 'containerd://i1')],
    });
    manager.setContainerStartup('uid-foo', 'containerd://a1', true);
    manager.setContainerStartup('uid-foo', 'containerd://i1', true);
    const status = manager.getPodStatus('uid-foo');
    expect(status?.containerStatuses?.[0]?.started).toBe(true);
    expect(status?.initContainerStatuses?.[0]?.started).toBe(true);
    manager.setContainerStartup('uid-foo', 'containerd://a1', true);
    expect(manager.getVersionedStatus('uid-foo')?.version).toBe(3);
  });
});

describe('terminatePod', () => {
  const unknown = {
    terminated: {
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
      exitCode: 137,
    },
  };

  it('turns containers without a terminated state into 137 ContainerStatusUnknown and the phase into Failed', () => {
    const { manager } = setup({ start: false });
    const status: PodStatus = {
      phase: 'Running',
      containerStatuses: [running('a'), { ...waitingWithLastTermination('b', 2) }],
    };
    manager.setPodStatus(newPod(), status);
    manager.terminatePod(newPod());
    const after = manager.getPodStatus('uid-foo');
    expect(after?.phase).toBe('Failed');
    expect(after?.containerStatuses?.[0]?.state).toEqual(unknown);
    expect(after?.containerStatuses?.[1]?.state).toEqual(unknown);
    // the last termination state is kept
    expect(after?.containerStatuses?.[1]?.lastState?.terminated?.exitCode).toBe(2);
    expect(manager.getVersionedStatus('uid-foo')?.podIsFinished).toBe(true);
  });

  it('keeps a terminated container as it was', () => {
    const { manager } = setup({ start: false });
    manager.setPodStatus(newPod(), {
      phase: 'Running',
      containerStatuses: [running('a'), { ...failed('b'), state: { terminated: { exitCode: 2 } } }],
    });
    manager.terminatePod(newPod());
    expect(manager.getPodStatus('uid-foo')?.containerStatuses?.[1]?.state).toEqual({
      terminated: { exitCode: 2 },
    });
  });

  // upstream TestTerminatePod_EnsurePodPhaseIsTerminal
  it.each([
    ['Pending', 'Failed'],
    ['Running', 'Failed'],
    ['Unknown', 'Failed'],
    ['', 'Failed'],
    ['Succeeded', 'Succeeded'],
    ['Failed', 'Failed'],
  ])('a %s pod becomes %s', (phase, want) => {
    const { manager } = setup({ start: false });
    const pod = newPod('uid-foo', 'Always', { status: { phase } });
    manager.terminatePod(pod);
    expect(manager.getPodStatus('uid-foo')?.phase).toBe(want);
  });

  it('keeps a static pod phase', () => {
    const pod = staticPod();
    const { manager } = setup({ pods: [pod], start: false });
    manager.setPodStatus(pod, { phase: 'Running', containerStatuses: [running('a'), running('b')] });
    manager.terminatePod(pod);
    expect(manager.getPodStatus('static-uid')?.phase).toBe('Running');
  });

  describe('uninitialized pods (TestTerminatePod_DefaultUnknownStatus)', () => {
    function initPod(status: PodStatus): Pod {
      return podWith(spec('Never', ['a'], ['init-0', 'init-1', 'init-2']), {
        metadata: { name: 'p', namespace: 'ns', uid: 'u' },
        status,
      });
    }
    const terminatedStates = (s: PodStatus | undefined) =>
      [...(s?.initContainerStatuses ?? []), ...(s?.containerStatuses ?? [])].map((c) =>
        c.state?.terminated ? c.state.terminated.exitCode : 'waiting',
      );

    it.each([
      {
        name: 'uninitialized pod defaults the first init container',
        status: {
          initContainerStatuses: [waiting('init-0'), waiting('init-1'), waiting('init-2')],
          containerStatuses: [waiting('a')],
        },
        want: [137, 'waiting', 'waiting', 'waiting'],
      },
      {
        name: 'uninitialized pod defaults gaps',
        status: {
          initContainerStatuses: [waiting('init-0'), running('init-1'), waiting('init-2')],
          containerStatuses: [waiting('a')],
        },
        want: [137, 137, 'waiting', 'waiting'],
      },
      {
        name: 'failed last container is uninitialized',
        status: {
          initContainerStatuses: [
            succeeded('init-0'),
            succeeded('init-1'),
            { ...failed('init-2'), state: { terminated: { exitCode: 1 } } },
          ],
          containerStatuses: [waiting('a')],
        },
        want: [0, 0, 1, 'waiting'],
      },
      {
        name: 'successful last container is initialized',
        status: {
          initContainerStatuses: [succeeded('init-0'), succeeded('init-1'), succeeded('init-2')],
          containerStatuses: [waiting('a')],
        },
        want: [0, 0, 0, 137],
      },
      {
        name: 'running container proves initialization',
        status: {
          initContainerStatuses: [waiting('init-0'), waiting('init-1'), waiting('init-2')],
          containerStatuses: [running('a')],
        },
        want: [137, 'waiting', 'waiting', 137],
      },
      {
        name: 'successful last previous container is initialized, and container state is overwritten',
        status: {
          initContainerStatuses: [waiting('init-0'), waiting('init-1'), waitingWithLastTermination('init-2')],
          containerStatuses: [waiting('a')],
        },
        want: [137, 137, 137, 137],
      },
      {
        name: 'evidence of terminated container proves initialization',
        status: {
          initContainerStatuses: [waiting('init-0'), waiting('init-1'), waiting('init-2')],
          containerStatuses: [succeeded('a')],
        },
        want: [137, 'waiting', 'waiting', 0],
      },
      {
        name: 'evidence of previously terminated container proves initialization',
        status: {
          initContainerStatuses: [waiting('init-0'), waiting('init-1'), waiting('init-2')],
          containerStatuses: [waitingWithLastTermination('a')],
        },
        want: [137, 'waiting', 'waiting', 137],
      },
    ])('$name', ({ status, want }) => {
      const pod = initPod(status as PodStatus);
      const { manager } = setup({ pods: [pod], start: false });
      manager.terminatePod(pod);
      expect(terminatedStates(manager.getPodStatus('u'))).toEqual(want);
    });
  });
});

describe('syncing to sinks', () => {
  it('syncs every 10 s and retries a failed write (periodic sync)', async () => {
    const { manager, sink, clock } = setup();
    sink.failNext(new Error('down'));
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    expect(sink.writes).toHaveLength(0);
    await clock.tick(9_999);
    expect(sink.writes).toHaveLength(0);
    await clock.tick(1);
    expect(sink.writes).toHaveLength(1);
    expect(sink.writes[0]?.version).toBe(1);
  });

  it('does not rewrite a synced status on the periodic sync unless the source disagrees (TestReconcilePodStatus)', async () => {
    const pod = newPod();
    const { manager, sink, clock, podManager } = setup({ pods: [pod] });
    manager.setPodStatus(pod, runningStatus());
    await clock.tick(0);
    // The pod manager still holds the pod without this status: a reconcile is due.
    await clock.tick(10_000);
    expect(sink.writes).toHaveLength(2);
    // Once the source shows the cached status, nothing more is written.
    podManager.addPod({ ...pod, status: manager.getPodStatus('uid-foo')! });
    await clock.tick(10_000);
    await clock.tick(10_000);
    expect(sink.writes).toHaveLength(2);
  });

  it('does not reconcile when the source only adds the empty lastState the API server serializes (TestReconcilePodStatus)', async () => {
    const pod = newPod();
    const { manager, sink, clock, podManager } = setup({ pods: [pod] });
    manager.setPodStatus(pod, runningStatus());
    await clock.tick(0);
    expect(sink.writes).toHaveLength(1);
    // What the pod's watch brings back: every container status has `lastState: {}` (a Go struct
    // value the API server always emits), which upstream's semantic equality sees as unset.
    const fromApi = manager.getPodStatus('uid-foo')!;
    fromApi.containerStatuses = fromApi.containerStatuses!.map((c) => ({ ...c, lastState: {} }));
    podManager.addPod({ ...pod, status: fromApi });
    await clock.tick(10_000);
    await clock.tick(10_000);
    expect(sink.writes).toHaveLength(1);
  });

  it('drops the status of a static pod whose mirror was recreated under a new UID (TestStaticPod)', async () => {
    const pod = staticPod();
    const oldMirror = mirrorOf(pod, 'mirror-1');
    const { manager, sink, clock, podManager } = setup({ pods: [pod], mirrors: [oldMirror] });
    manager.setPodStatus(pod, runningStatus());
    await clock.tick(0);
    expect(sink.writes.map((w) => w.statusUid)).toEqual(['mirror-1']);
    // The pod manager now knows a new mirror; the sink still holds the old one.
    podManager.removeMirrorPod(oldMirror);
    podManager.addMirrorPod(mirrorOf(pod, 'mirror-2'));
    expect(await manager.syncBatch(true)).toBe(1);
    expect(sink.writes).toHaveLength(1);
    expect(sink.getPodStatus('mirror-1')?.phase).toBe('Running');
    expect(manager.getPodStatus('static-uid')).toBeUndefined();
  });

  it('does not write before start(), then writes the pending change', async () => {
    const { manager, sink, clock } = setup({ start: false });
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(20_000);
    expect(sink.writes).toHaveLength(0);
    manager.start();
    await clock.tick(0);
    expect(sink.writes).toHaveLength(1);
  });

  it('stops syncing after stop()', async () => {
    const { manager, sink, clock } = setup();
    await manager.stop();
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(30_000);
    expect(sink.writes).toHaveLength(0);
  });

  it('ignores a pod the sink does not have and retries it later (TestSyncPodIgnoresNotFound)', async () => {
    const { manager, sink, clock } = setup({ sink: { createOnWrite: false } });
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    expect(sink.writes).toHaveLength(0);
    sink.addPod(newPod());
    await clock.tick(10_000);
    expect(sink.getPodStatus('uid-foo')?.phase).toBe('Running');
    expect(manager.getPodStatus('uid-foo')).toBeDefined();
  });

  it('drops the cached status of a pod recreated under another UID (TestSyncPodChecksMismatchedUID)', async () => {
    const { manager, sink, clock } = setup({ sink: { createOnWrite: false } });
    sink.addPod(
      newPod('uid-foo', 'Always', { metadata: { name: 'pod-uid-foo', namespace: 'ns', uid: 'other' } }),
    );
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    expect(manager.getPodStatus('uid-foo')).toBeUndefined();
    expect(sink.writes).toHaveLength(0);
  });

  it('never syncs a static pod without a mirror pod, and syncs through the mirror once it exists (TestStaticPod)', async () => {
    const pod = staticPod();
    const { manager, sink, clock, podManager } = setup({ pods: [pod] });
    manager.setPodStatus(pod, runningStatus());
    await clock.tick(0);
    await clock.tick(10_000);
    expect(sink.writes).toHaveLength(0);
    expect(manager.getPodStatus('static-uid')?.phase).toBe('Running');

    const mirror = mirrorOf(pod);
    podManager.addMirrorPod(mirror);
    await clock.tick(10_000);
    expect(sink.writes).toHaveLength(1);
    expect(sink.writes[0]?.statusUid).toBe('mirror-uid');
    expect(sink.getPodStatus('mirror-uid')?.phase).toBe('Running');
    // GetPodStatus accepts the mirror's UID, and so does getPodPhase.
    expect(manager.getPodStatus('mirror-uid')?.phase).toBe('Running');
    expect(manager.getPodPhase('mirror-uid')).toBe('Running');
    expect(manager.getPodPhase('static-uid')).toBe('Running');
    expect(manager.getPodPhase('unknown-uid')).toBeUndefined();
  });

  it('holds back a terminal phase while containers may run, and forces readiness False once terminal', async () => {
    const pod = newPod('uid-foo', 'Never');
    const { manager, sink, clock, safety } = setup({ pods: [pod] });
    const readyStatus: PodStatus = {
      phase: 'Running',
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'ContainersReady', status: 'True' },
      ],
      containerStatuses: [ready(running('a')), ready(running('b'))],
    };
    manager.setPodStatus(pod, readyStatus);
    await clock.tick(0);

    safety.setCouldHaveRunningContainers('uid-foo', true);
    manager.setPodStatus(pod, {
      ...readyStatus,
      phase: 'Failed',
      reason: 'Evicted',
      containerStatuses: [ready(failed('a')), ready(failed('b'))],
    });
    await clock.tick(0);
    expect(sink.getPodStatus('uid-foo')).toMatchObject({ phase: 'Running' });
    expect(sink.getPodStatus('uid-foo')?.reason).toBeUndefined();

    safety.setCouldHaveRunningContainers('uid-foo', false);
    manager.terminatePod(pod);
    await clock.tick(0);
    const written = sink.getPodStatus('uid-foo');
    expect(written).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
    expect(condition(written, 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(condition(written, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'PodFailed' });
  });

  it('deletes a finished pod being deleted only once it is finished (TestDeletePodBeforeFinished / Finished)', async () => {
    const deleting = newPod('uid-foo', 'Never', {
      metadata: {
        name: 'pod-uid-foo',
        namespace: 'ns',
        uid: 'uid-foo',
        deletionTimestamp: '2026-01-01T00:00:00Z',
      },
    });
    const { manager, sink, clock } = setup({ pods: [deleting], sink: { deletePods: true } });
    sink.addPod(deleting);
    manager.setPodStatus(deleting, { phase: 'Failed', containerStatuses: [failed('a'), failed('b')] });
    await clock.tick(0);
    expect(sink.deleted).toEqual([]);
    expect(sink.getPod('ns', 'pod-uid-foo')?.status?.phase).toBe('Failed');

    manager.terminatePod(deleting);
    await clock.tick(0);
    expect(sink.deleted).toEqual(['uid-foo']);
    expect(manager.getPodStatus('uid-foo')).toBeUndefined();
  });

  it('never deletes mirror pods (TestDoNotDeleteMirrorPods)', async () => {
    const pod = staticPod();
    const base = mirrorOf(pod);
    const mirror: Pod = {
      ...base,
      metadata: { ...base.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    };
    const { manager, sink, clock } = setup({ pods: [pod], mirrors: [mirror], sink: { deletePods: true } });
    sink.addPod(mirror);
    manager.setPodStatus(pod, { phase: 'Failed', containerStatuses: [failed('a'), failed('b')] });
    manager.terminatePod(pod);
    await clock.tick(0);
    await clock.tick(10_000);
    expect(sink.deleted).toEqual([]);
  });

  it('forgets the versions of pods that are gone on the full sync (TestSyncBatchCleanupVersions)', async () => {
    const { manager, sink, clock } = setup({ pods: [newPod('a'), newPod('b')] });
    manager.setPodStatus(newPod('a'), runningStatus());
    manager.setPodStatus(newPod('b'), runningStatus());
    await clock.tick(0);
    expect(sink.writes).toHaveLength(2);
    manager.removeOrphanedStatuses(['b']);
    // A new status for a, version 1 again: written only if the old version 1 was forgotten.
    await clock.tick(10_000);
    manager.setPodStatus(newPod('a'), { ...runningStatus(), message: 'again' });
    await clock.tick(0);
    expect(sink.writes.at(-1)).toMatchObject({ statusUid: 'a', version: 1 });
  });

  it('keeps a version per sink, so a failing sink does not hold back another', async () => {
    const clock = new FakeClock();
    const good = new InMemoryStatusSink({ name: 'good' });
    const flaky = new InMemoryStatusSink({ name: 'flaky' });
    flaky.failNext();
    const manager = newStatusManager({
      podManager: new FakeStatusPodManager({ pods: [newPod()] }),
      sinks: [good, flaky],
      clock,
    });
    manager.start();
    manager.setPodStatus(newPod(), runningStatus());
    await clock.tick(0);
    expect(good.writes).toHaveLength(1);
    expect(flaky.writes).toHaveLength(0);
    manager.setPodStatus(newPod(), { ...runningStatus(), message: 'next' });
    await clock.tick(0);
    // the flaky sink catches up with the newest version; the good one gets only the new one
    expect(good.writes.map((w) => w.version)).toEqual([1, 2]);
    expect(flaky.writes.map((w) => w.version)).toEqual([2]);
    await manager.stop();
  });

  it('getPodStatus finds nothing for an unknown UID', () => {
    const { manager } = setup({ start: false });
    expect(manager.getPodStatus('nope')).toBeUndefined();
  });

  it('writes to several pods at most maxConcurrentWrites at a time', async () => {
    const pods = ['p1', 'p2', 'p3', 'p4', 'p5'].map((u) => newPod(u));
    const clock = new FakeClock();
    let inFlight = 0;
    let peak = 0;
    const written: string[] = [];
    const slowSink: StatusSink = {
      name: 'slow',
      async write(_pod, _status, options) {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await clock.sleep(100);
        inFlight--;
        written.push(options.statusUid);
        return { outcome: 'updated' };
      },
    };
    const manager = newStatusManager({
      podManager: new FakeStatusPodManager({ pods }),
      sinks: [slowSink],
      clock,
      maxConcurrentWrites: 2,
    });
    manager.start();
    for (const p of pods) manager.setPodStatus(p, runningStatus());
    for (let i = 0; i < 5; i++) await clock.tick(100);
    expect(written.sort()).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect(peak).toBe(2);
    await manager.stop();
  });
});
