import { FakeClock, FakeRuntime } from '@kubelet-kit/core/testing';
import {
  type EventChannel,
  GenericPLEG,
  type PodLifecycleEvent,
  RuntimePodStatusCache,
} from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';
import { container, pod, status } from './fake-runtime.js';

function setup() {
  const runtime = new FakeRuntime();
  const clock = new FakeClock();
  const pleg = new GenericPLEG({ runtime, clock, channelCapacity: 100 });
  return { runtime, clock, pleg };
}

function drain(ch: EventChannel<PodLifecycleEvent>): PodLifecycleEvent[] {
  const out: PodLifecycleEvent[] = [];
  for (let e = ch.tryReceive(); e; e = ch.tryReceive()) out.push(e);
  return out;
}

const ref = (uid: string) => ({ uid, name: `name-${uid}`, namespace: 'ns' });

describe('RuntimePodStatusCache holds', () => {
  it('a held pod is not released by the global timestamp, only by its own entry', async () => {
    const cache = new RuntimePodStatusCache();
    cache.updateTime(5);
    cache.hold('p');
    let got: number | undefined;
    void cache.getNewerThan('p', 10).then((e) => {
      got = e.modified;
    });
    cache.updateTime(20);
    await Promise.resolve();
    expect(got).toBeUndefined();
    expect(cache.waiting).toBe(1);
    cache.set('p', status('p'), undefined, 21);
    await Promise.resolve();
    expect(got).toBe(21);
    expect(cache.isHeld('p')).toBe(false);
  });

  it('other pods are released by the global timestamp while one is held', async () => {
    const cache = new RuntimePodStatusCache();
    cache.hold('held');
    const other = cache.getNewerThan('other', 1);
    cache.updateTime(2);
    await expect(other).resolves.toMatchObject({ status: { id: 'other' } });
  });

  it('a global timestamp from before the hold still counts for the held pod', async () => {
    const cache = new RuntimePodStatusCache();
    cache.updateTime(10);
    cache.hold('p');
    await expect(cache.getNewerThan('p', 5)).resolves.toMatchObject({ status: { id: 'p' } });
  });

  it('release lets the current global timestamp release waiters again', async () => {
    const cache = new RuntimePodStatusCache();
    cache.hold('p');
    let released = false;
    void cache.getNewerThan('p', 3).then(() => {
      released = true;
    });
    cache.updateTime(4);
    await Promise.resolve();
    expect(released).toBe(false);
    cache.release('p');
    await Promise.resolve();
    expect(released).toBe(true);
  });
});

describe('GenericPLEG holdPod / inspectPods', () => {
  it('a relist neither reads nor reports a held pod; the inspection then reports its change once', async () => {
    const { runtime, clock, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running')]), pod('b', [container('c2', 'running')])];
    pleg.holdPod('a');
    await pleg.relist();
    expect(runtime.statusCalls).toEqual(['b']);
    expect(drain(pleg.events)).toEqual([{ id: 'b', type: 'ContainerStarted', data: 'c2' }]);

    clock.advance(100);
    await pleg.inspectPods([ref('a')]);
    expect(runtime.statusCalls).toEqual(['b', 'a']);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerStarted', data: 'c1' }]);
    expect(pleg.cache.get('a')).toMatchObject({ modified: clock.now(), status: { id: 'a' } });
    expect(pleg.cache.isHeld('a')).toBe(false);

    // The next relist sees what the inspection saw: nothing new, nothing read.
    await pleg.relist();
    expect(runtime.statusCalls).toEqual(['b', 'a']);
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.stats().inspections).toBe(1);
  });

  it('a worker waiting on a held pod is released by the inspection, not by a relist that skipped it', async () => {
    const { runtime, clock, pleg } = setup();
    const t0 = clock.now();
    runtime.pods = [];
    await pleg.relist();
    clock.advance(10);
    pleg.holdPod('a');
    const waiter = pleg.cache.getNewerThan('a', t0 + 15);
    let entry: { modified: number } | undefined;
    void waiter.then((e) => {
      entry = e;
    });
    clock.advance(10);
    runtime.pods = [pod('a', [container('c1', 'running')])];
    await pleg.relist();
    expect(entry).toBeUndefined();
    clock.advance(5);
    await pleg.inspectPods([ref('a')]);
    expect(entry?.modified).toBe(t0 + 25);
  });

  it('releasePod without an inspection lets the next relist report the change', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running')])];
    pleg.holdPod('a');
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    pleg.releasePod('a');
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerStarted', data: 'c1' }]);
  });

  it('an inspection reports deaths and removals against what the last relist saw', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running'), container('c2', 'running')])];
    await pleg.relist();
    drain(pleg.events);
    runtime.statuses.set('a', status('a', { containers: [['c1', 'exited', 3]] }));
    await pleg.inspectPods([ref('a')]);
    expect(drain(pleg.events)).toEqual([
      { id: 'a', type: 'ContainerDied', data: 'c1' },
      { id: 'a', type: 'ContainerDied', data: 'c2' },
      { id: 'a', type: 'ContainerRemoved', data: 'c2' },
    ]);
  });

  it('sandboxes read by an inspection are compared like the listing shows them', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running')], [container('sb0', 'running')])];
    runtime.statuses.set('a', status('a', { containers: [['c1', 'running']], sandboxes: ['ready'] }));
    await pleg.relist();
    drain(pleg.events);
    await pleg.inspectPods([ref('a')]);
    expect(drain(pleg.events)).toEqual([]);
    runtime.statuses.set('a', status('a', { containers: [['c1', 'running']], sandboxes: ['notready'] }));
    await pleg.inspectPods([ref('a')]);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerDied', data: 'sb0' }]);
  });

  it('a pod with nothing left is forgotten, as when a relist no longer lists it', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'exited')])];
    await pleg.relist();
    drain(pleg.events);
    expect(pleg.cache.get('a').status?.containerStatuses).toHaveLength(1);
    runtime.statuses.set('a', status('a'));
    pleg.holdPod('a');
    await pleg.inspectPods([ref('a')]);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerRemoved', data: 'c1' }]);
    expect(pleg.cache.isHeld('a')).toBe(false);
    expect(pleg.cache.get('a').modified).toBe(0);
    // A later listing of a new container of the pod is a fresh start.
    runtime.pods = [pod('a', [container('c9', 'running')])];
    runtime.statuses.delete('a');
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerStarted', data: 'c9' }]);
  });

  it('an inspection that fails stores the error for the worker and releases the hold', async () => {
    const { runtime, clock, pleg } = setup();
    const t0 = clock.now();
    clock.advance(7);
    runtime.statuses.set('a', new Error('runtime down'));
    pleg.holdPod('a');
    await pleg.inspectPods([ref('a')]);
    expect(pleg.cache.get('a').error?.message).toBe('runtime down');
    expect(pleg.cache.get('a').modified).toBe(t0 + 7);
    expect(pleg.cache.isHeld('a')).toBe(false);
    expect(drain(pleg.events)).toEqual([]);
  });

  it('a failed inspection has the next relist read the pod again, even with nothing new listed', async () => {
    // As upstream's relist does for a failed status read (podsToReinspect): the error must not
    // stay in the cache until the pod's containers happen to change.
    const { runtime, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running')])];
    await pleg.relist();
    drain(pleg.events);
    runtime.statuses.set('a', new Error('runtime down'));
    await pleg.inspectPods([ref('a')]);
    expect(pleg.cache.get('a').error?.message).toBe('runtime down');

    runtime.statuses.delete('a');
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual(['a']);
    expect(pleg.cache.get('a').error).toBeUndefined();
    expect(pleg.cache.get('a').status?.containerStatuses).toHaveLength(1);
    expect(drain(pleg.events)).toEqual([]);

    // Once read, the pod is quiet again.
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual([]);
  });

  it('a failed inspection of a pod nothing was made of is cleared by the next relist (issue #23)', async () => {
    // The runtime went away while the pod's first sandbox was being made: the inspection fails
    // and no listing ever shows the pod. Its error entry must not outlive the outage, or its
    // worker fails on it at every retry and never makes the sandbox.
    const { runtime, clock, pleg } = setup();
    runtime.pods = [];
    await pleg.relist();
    pleg.holdPod('a');
    runtime.statuses.set('a', new Error('runtime down'));
    runtime.listError = new Error('runtime down');
    clock.advance(10);
    const syncEnd = clock.now();
    clock.advance(10);
    await pleg.inspectPods([ref('a')]);
    await expect(pleg.cache.getNewerThan('a', syncEnd)).resolves.toMatchObject({
      error: { message: 'runtime down' },
    });
    // Still down: the relist fails and the error stays.
    clock.advance(1000);
    await pleg.relist();
    expect(pleg.cache.get('a').error?.message).toBe('runtime down');

    // Back, with nothing of the pod: the worker's next wait gets an empty status, no error.
    runtime.listError = undefined;
    runtime.statuses.delete('a');
    const retryAfter = clock.now();
    clock.advance(1000);
    await pleg.relist();
    const entry = await pleg.cache.getNewerThan('a', retryAfter);
    expect(entry.error).toBeUndefined();
    expect(entry.status).toMatchObject({ id: 'a', sandboxStatuses: [], containerStatuses: [] });
    // And it is not read again and again.
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual([]);
  });

  it('inspections wait for a relist in progress (never interleaved with one)', async () => {
    const { runtime, pleg } = setup();
    let open!: () => void;
    runtime.gate = new Promise<void>((r) => {
      open = r;
    });
    runtime.pods = [pod('a', [container('c1', 'running')])];
    const relist = pleg.relist();
    const inspection = pleg.inspectPods([ref('a')]);
    await Promise.resolve();
    await Promise.resolve();
    expect(runtime.statusCalls).toEqual([]);
    open();
    await Promise.all([relist, inspection]);
    // The relist read it first (and reported it); the inspection found nothing new.
    expect(runtime.statusCalls).toEqual(['a', 'a']);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerStarted', data: 'c1' }]);
  });

  it('an inspection given the status takes it without reading the pod; the next relist corrects what it missed', async () => {
    const { runtime, clock, pleg } = setup();
    runtime.pods = [pod('a', [container('c1', 'running')])];
    pleg.holdPod('a');
    clock.advance(100);
    await pleg.inspectPods([{ ...ref('a'), status: status('a', { containers: [['c1', 'running']] }) }]);
    expect(runtime.statusCalls).toEqual([]);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerStarted', data: 'c1' }]);
    expect(pleg.cache.get('a')).toMatchObject({ modified: clock.now(), status: { id: 'a' } });
    expect(pleg.cache.isHeld('a')).toBe(false);

    // The listing agrees: nothing read, nothing sent.
    await pleg.relist();
    expect(runtime.statusCalls).toEqual([]);
    expect(drain(pleg.events)).toEqual([]);

    // The container had exited by then (the status given was already stale): the relist sees it.
    runtime.pods = [pod('a', [container('c1', 'exited')])];
    clock.advance(1000);
    await pleg.relist();
    expect(runtime.statusCalls).toEqual(['a']);
    expect(drain(pleg.events)).toEqual([{ id: 'a', type: 'ContainerDied', data: 'c1' }]);
  });
});
