import type { Pod, RuntimePodStatus, SyncPodType } from '@kubelet-kit/core';
import { FakePodWorkers, newNamedPod, RecordingPodSyncer } from '@kubelet-kit/pod-workers/testing';
import { expect, test } from 'vitest';
import { harness } from './helpers.js';

// Upstream TestFakePodWorkers: the fake hands syncPod the same arguments as the real workers.
test('TestFakePodWorkers: fake and real workers call syncPod alike', async () => {
  const h = harness();
  const fakeSyncer = new RecordingPodSyncer();
  const fake = new FakePodWorkers({
    syncPod: (ctx, type: SyncPodType, pod: Pod, mirror: Pod | undefined, status: RuntimePodStatus) =>
      fakeSyncer.syncPod(ctx, type, pod, mirror, status),
    podCache: h.cache,
  });
  const cases: [Pod, Pod][] = [
    [newNamedPod('12345678', 'new', 'foo'), newNamedPod('12345678', 'new', 'fooMirror')],
    [newNamedPod('98765', 'new', 'bar'), newNamedPod('98765', 'new', 'barMirror')],
  ];
  h.cache.set('98765', {
    id: '98765',
    name: 'bar',
    namespace: 'new',
    ips: ['10.1.1.1'],
    containerStatuses: [],
    sandboxStatuses: [],
    timestamp: 1,
  });
  for (const [pod, mirrorPod] of cases) {
    h.workers.updatePod({ updateType: 'update', pod, mirrorPod });
    fake.updatePod({ updateType: 'update', pod, mirrorPod });
  }
  await h.drain();
  await fake.settled();
  const pick = (s: RecordingPodSyncer) =>
    s.calls.map((c) => ({ type: c.updateType, pod: c.pod, mirror: c.mirrorPod, status: c.podStatus }));
  expect(pick(fakeSyncer)).toEqual(pick(h.syncer));
  expect(pick(fakeSyncer)).toHaveLength(2);
});

test('FakePodWorkers records kills and terminal pods and answers queries from its sets', async () => {
  const syncer = new RecordingPodSyncer({ hook: (c) => ({ isTerminal: c.uid === 'done' }) });
  const fake = new FakePodWorkers({ syncPod: (...args) => syncer.syncPod(...args) });
  fake.updatePod({ updateType: 'kill', pod: newNamedPod('gone', 'ns', 'a') });
  fake.updatePod({ updateType: 'create', pod: newNamedPod('done', 'ns', 'b') });
  await fake.settled();
  expect(fake.triggeredDeletion).toEqual(['gone']);
  expect(fake.triggeredTerminal).toEqual(['done']);
  expect(syncer.historyOf('gone')).toEqual([]);
  expect(fake.couldHaveRunningContainers('x')).toBe(false);
  fake.running.add('x');
  fake.terminatingStaticPods.add('b_ns');
  expect(fake.couldHaveRunningContainers('x')).toBe(true);
  expect(fake.isPodForMirrorPodTerminatingByFullName('b_ns')).toBe(true);
});
