import { newNamedPod } from '@kubelet-kit/pod-workers/testing';
import { describe, expect, test } from 'vitest';
import { harness } from './helpers.js';

// Workers start one per turn of the event loop (see BasicPodWorkers#run), in the order their
// updates arrived: a started pod's next update waits behind the new pods queued before it.
describe('the order in which workers run', () => {
  test('new pods start in the order they arrived, one per turn', async () => {
    const h = harness();
    for (let i = 0; i < 5; i++) {
      h.workers.updatePod({ updateType: 'create', pod: newNamedPod(`n${i}`, 'ns', `new-${i}`) });
    }
    // Before the first turn: nothing has started.
    expect(h.syncer.calls).toHaveLength(0);
    await h.drain();
    expect(h.syncer.calls.map((c) => c.uid)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
  });

  test("a started pod's next update takes its turn after the new pods queued before it", async () => {
    const h = harness();
    const first = newNamedPod('a', 'ns', 'first');
    h.workers.updatePod({ updateType: 'create', pod: first });
    await h.drain();
    for (let i = 0; i < 5; i++) {
      h.workers.updatePod({ updateType: 'create', pod: newNamedPod(`n${i}`, 'ns', `new-${i}`) });
    }
    h.workers.updatePod({ updateType: 'sync', pod: first });
    await h.drain();
    const order = h.syncer.calls.filter((c) => c.kind === 'syncPod').map((c) => c.uid);
    expect(order).toEqual(['a', 'n0', 'n1', 'n2', 'n3', 'n4', 'a']);
  });
});
