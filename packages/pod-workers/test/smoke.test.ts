import { FakeClock } from '@kubelet-kit/core';
import { BasicPodWorkers } from '@kubelet-kit/pod-workers';
import {
  drainWorkers,
  FakePodStatusCache,
  newNamedPod,
  RecordingPodSyncer,
} from '@kubelet-kit/pod-workers/testing';
import { expect, test } from 'vitest';

test('smoke', async () => {
  const clock = new FakeClock();
  const syncer = new RecordingPodSyncer();
  const cache = new FakePodStatusCache({ clock });
  const w = new BasicPodWorkers({ podSyncer: syncer, podCache: cache, clock });
  const pod = newNamedPod('1', 'ns', 'p');
  w.updatePod({ updateType: 'create', pod });
  await drainWorkers(w, clock);
  w.updatePod({ updateType: 'kill', pod });
  await drainWorkers(w, clock);
  expect(syncer.historyOf('1')).toEqual(['syncPod:create', 'syncTerminatingPod', 'syncTerminatedPod']);
});
