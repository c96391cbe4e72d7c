// The README example, run as a test so it stays true.

import type { Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { expect, it } from 'vitest';
import {
  generatePodConditions,
  getPhase,
  InMemoryStatusSink,
  newStatusManager,
  type StatusPodManager,
} from '../src/index.js';

it('runs the README example', async () => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: { restartPolicy: 'Always', containers: [{ name: 'app', image: 'nginx' }] },
  };

  // In an agent this is @kubelet-kit/pod-manager's BasicPodManager.
  const podManager: StatusPodManager = {
    getPodByUID: (uid) => (uid === 'uid-1' ? pod : undefined),
    getMirrorPodByPod: () => undefined,
    translatePodUID: (uid) => uid,
    getUIDTranslations: () => ({ podToMirror: new Map(), mirrorToPod: new Map() }),
  };

  const clock = new FakeClock(); // omit for the wall clock
  const sink = new InMemoryStatusSink();
  const manager = newStatusManager({
    podManager,
    sinks: [sink], // or @kubelet-kit/apiserver's ApiserverStatusSink
    podDeletionSafety: { podCouldHaveRunningContainers: () => false },
    clock,
  });
  manager.start();

  // What the node's syncPod does with the runtime's view of the pod.
  const containerStatuses = [
    {
      name: 'app',
      image: 'nginx',
      imageID: '',
      restartCount: 0,
      ready: false,
      containerID: 'containerd://c1',
      state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
    },
  ];
  const phase = getPhase(pod, containerStatuses, false); // 'Running'
  const conditions = generatePodConditions({
    pod,
    phase,
    initContainerStatuses: [],
    containerStatuses,
    runtimeStatus: undefined, // the runtime's pod status, for PodReadyToStartContainers
  });
  manager.setPodStatus(pod, { phase, conditions, containerStatuses });

  // The prober reports readiness: Ready and ContainersReady become True.
  manager.setContainerReadiness('uid-1', 'containerd://c1', true);

  await clock.tick(0); // let the sync loop write
  expect(sink.getPodStatus('uid-1')?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  expect(phase).toBe('Running');
  await manager.stop();
});
