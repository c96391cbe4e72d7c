import type { Pod, ProbeResultUpdate } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import { DefaultResultsManager, resultsUpdatesBuffer } from '../src/results-manager.js';

const pod: Pod = { metadata: { uid: 'u1', name: 'p', namespace: 'ns' } };

describe('DefaultResultsManager (upstream TestCacheOperations, TestUpdates)', () => {
  it('stores, reads and removes results by container ID', () => {
    const m = new DefaultResultsManager();
    expect(m.get('containerd://a')).toBeUndefined();
    m.set('containerd://a', 'Success', pod);
    m.set('containerd://b', 'Failure', pod);
    expect(m.get('containerd://a')).toBe('Success');
    expect(m.get('containerd://b')).toBe('Failure');
    m.remove('containerd://a');
    expect(m.get('containerd://a')).toBeUndefined();
    expect(m.get('containerd://b')).toBe('Failure');
  });

  it('emits only changes, with the pod UID', () => {
    const m = new DefaultResultsManager();
    const seen: ProbeResultUpdate[] = [];
    const unsubscribe = m.subscribe((u) => seen.push(u));
    m.set('containerd://a', 'Success', pod);
    m.set('containerd://a', 'Success', pod);
    m.set('containerd://a', 'Failure', pod);
    m.remove('containerd://a');
    m.set('containerd://a', 'Failure', pod);
    unsubscribe();
    m.set('containerd://a', 'Success', pod);
    expect(seen).toEqual([
      { containerId: 'containerd://a', result: 'Success', podUid: 'u1' },
      { containerId: 'containerd://a', result: 'Failure', podUid: 'u1' },
      { containerId: 'containerd://a', result: 'Failure', podUid: 'u1' },
    ]);
  });

  it('updates() yields changes in order and ends when the signal aborts', async () => {
    const m = new DefaultResultsManager();
    const controller = new AbortController();
    const got: string[] = [];
    const consumer = (async () => {
      for await (const u of m.updates(controller.signal)) {
        got.push(`${u.containerId}=${u.result}`);
        if (got.length === 3) controller.abort();
      }
    })();
    await Promise.resolve();
    m.set('x://1', 'Success', pod);
    m.set('x://2', 'Failure', pod);
    await new Promise((r) => setImmediate(r));
    m.set('x://1', 'Failure', pod);
    await consumer;
    expect(got).toEqual(['x://1=Success', 'x://2=Failure', 'x://1=Failure']);
  });

  it(`keeps at most ${resultsUpdatesBuffer} unread updates per iteration, dropping the oldest`, async () => {
    const m = new DefaultResultsManager();
    const controller = new AbortController();
    const iterator = m.updates(controller.signal)[Symbol.asyncIterator]();
    // Start the iteration so it subscribes, then flood it without reading.
    const first = iterator.next();
    m.set('x://0', 'Success', pod);
    expect((await first).value).toMatchObject({ containerId: 'x://0' });
    for (let i = 1; i <= resultsUpdatesBuffer + 5; i++) m.set(`x://${i}`, 'Success', pod);
    expect(m.droppedUpdates).toBe(5);
    const next = await iterator.next();
    expect(next.value).toMatchObject({ containerId: 'x://6' });
    controller.abort();
    await iterator.return?.();
  });
});
