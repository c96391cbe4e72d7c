import { FakeClock } from '@kubelet-kit/core/testing';
import { RuntimePodStatusCache } from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';
import { status } from './fake-runtime.js';

function track<T>(p: Promise<T>) {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  );
  return state;
}

const flush = () => new FakeClock().tick(0);

describe('RuntimePodStatusCache', () => {
  it('get returns an empty status for an unknown pod', () => {
    const cache = new RuntimePodStatusCache();
    const entry = cache.get('nope');
    expect(entry.error).toBeUndefined();
    expect(entry.modified).toBe(0);
    expect(entry.status).toMatchObject({ id: 'nope', containerStatuses: [], sandboxStatuses: [], ips: [] });
  });

  it('set stores the status or the error with its timestamp; delete forgets it', () => {
    const cache = new RuntimePodStatusCache();
    const s = status('p');
    expect(cache.set('p', s, undefined, 100)).toBe(true);
    expect(cache.get('p')).toEqual({ status: s, error: undefined, modified: 100 });
    const err = new Error('x');
    cache.set('p', undefined, err, 200);
    expect(cache.get('p')).toEqual({ status: undefined, error: err, modified: 200 });
    cache.delete('p');
    expect(cache.get('p').modified).toBe(0);
  });

  describe('getNewerThan resolves at once when', () => {
    it.each([
      { name: 'the entry is newer', entryAt: 101, globalAt: undefined, minTime: 100, ready: true },
      { name: 'the global timestamp is newer', entryAt: 50, globalAt: 101, minTime: 100, ready: true },
      {
        name: 'an unknown pod and a newer global timestamp',
        entryAt: undefined,
        globalAt: 101,
        minTime: 100,
        ready: true,
      },
      {
        name: 'not: the entry is exactly minTime',
        entryAt: 100,
        globalAt: undefined,
        minTime: 100,
        ready: false,
      },
      {
        name: 'not: the global timestamp is exactly minTime',
        entryAt: 50,
        globalAt: 100,
        minTime: 100,
        ready: false,
      },
      { name: 'not: both older', entryAt: 99, globalAt: 99, minTime: 100, ready: false },
      {
        name: 'not: an unknown pod, no global timestamp',
        entryAt: undefined,
        globalAt: undefined,
        minTime: 0,
        ready: false,
      },
    ])('$name', async ({ entryAt, globalAt, minTime, ready }) => {
      const cache = new RuntimePodStatusCache();
      if (entryAt !== undefined) cache.set('p', status('p'), undefined, entryAt);
      if (globalAt !== undefined) cache.updateTime(globalAt);
      const got = track(cache.getNewerThan('p', minTime));
      await flush();
      expect(got.done).toBe(ready);
      expect(cache.waiting).toBe(ready ? 0 : 1);
    });
  });

  it('blocks until a set for the pod at or after minTime', async () => {
    const cache = new RuntimePodStatusCache();
    cache.set('p', status('p'), undefined, 100);
    const got = track(cache.getNewerThan('p', 150));
    cache.set('p', status('p', { ips: ['1.1.1.1'] }), undefined, 120);
    cache.set('other', status('other'), undefined, 200);
    await flush();
    expect(got.done).toBe(false);
    const newer = status('p', { ips: ['2.2.2.2'] });
    cache.set('p', newer, undefined, 150);
    await flush();
    expect(got.value).toEqual({ status: newer, error: undefined, modified: 150 });
    expect(cache.waiting).toBe(0);
  });

  it('blocks until the global timestamp reaches minTime, then returns what is cached', async () => {
    const cache = new RuntimePodStatusCache();
    const s = status('p');
    cache.set('p', s, undefined, 10);
    const known = track(cache.getNewerThan('p', 100));
    const unknown = track(cache.getNewerThan('ghost', 100));
    const later = track(cache.getNewerThan('p', 300));
    cache.updateTime(99);
    await flush();
    expect([known.done, unknown.done, later.done]).toEqual([false, false, false]);
    cache.updateTime(100);
    await flush();
    expect(known.value).toEqual({ status: s, error: undefined, modified: 10 });
    expect(unknown.value?.status?.id).toBe('ghost');
    expect(later.done).toBe(false);
    expect(cache.waiting).toBe(1);
  });

  it('an aborted wait rejects and leaves no waiter behind', async () => {
    const cache = new RuntimePodStatusCache();
    const abort = new AbortController();
    const got = track(cache.getNewerThan('p', 100, abort.signal));
    expect(cache.waiting).toBe(1);
    abort.abort(new Error('worker stopped'));
    await flush();
    expect((got.error as Error).message).toBe('worker stopped');
    expect(cache.waiting).toBe(0);
    cache.updateTime(1000);
    await expect(cache.getNewerThan('p', 0, AbortSignal.abort(new Error('already')))).resolves.toBeDefined();
    await expect(cache.getNewerThan('p', 5000, AbortSignal.abort(new Error('already')))).rejects.toThrow(
      'already',
    );
  });
});
