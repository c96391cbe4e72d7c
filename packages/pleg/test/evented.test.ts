import {
  type ContainerEventSource,
  ContainerEventsUnimplementedError,
  type RuntimeContainerEvent,
} from '@kubelet-kit/core';
import { FakeClock, FakeRuntime, InMemoryLogger } from '@kubelet-kit/core/testing';
import { EventedPLEG, GenericPLEG, type PodLifecycleEvent } from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';
import { container, pod, status } from './fake-runtime.js';

/** A container event stream the test feeds, and breaks, by hand. */
class FakeEventSource implements ContainerEventSource {
  opened = 0;
  /** What the next opened streams do: throw this at once (one entry per stream). */
  failNext: Error[] = [];
  #push: ((e: RuntimeContainerEvent) => void) | undefined;
  #fail: ((err: Error) => void) | undefined;

  async *getContainerEvents(signal: AbortSignal): AsyncIterable<RuntimeContainerEvent> {
    this.opened++;
    const fail = this.failNext.shift();
    if (fail) throw fail;
    const queue: RuntimeContainerEvent[] = [];
    let wake: (() => void) | undefined;
    let broken: Error | undefined;
    this.#push = (e) => {
      queue.push(e);
      wake?.();
    };
    this.#fail = (err) => {
      broken = err;
      wake?.();
    };
    signal.addEventListener('abort', () => wake?.(), { once: true });
    for (;;) {
      while (queue.length > 0) yield queue.shift() as RuntimeContainerEvent;
      if (broken) throw broken;
      if (signal.aborted) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  }

  emit(e: Partial<RuntimeContainerEvent> & Pick<RuntimeContainerEvent, 'containerId' | 'type'>): void {
    this.#push?.({ createdAt: 0, pod: { uid: 'p1', name: 'name-p1', namespace: 'ns' }, ...e });
  }

  break(err = new Error('stream reset')): void {
    this.#fail?.(err);
  }
}

function setup(opts: { maxStreamRetries?: number } = {}) {
  const runtime = new FakeRuntime();
  const clock = new FakeClock();
  const logger = new InMemoryLogger();
  const generic = new GenericPLEG({ runtime, clock, logger, channelCapacity: 100 });
  const source = new FakeEventSource();
  const fallbacks: Error[] = [];
  const pleg = new EventedPLEG({
    source,
    generic,
    runtime,
    clock,
    logger,
    onFallback: (err) => fallbacks.push(err),
    ...(opts.maxStreamRetries !== undefined ? { maxStreamRetries: opts.maxStreamRetries } : {}),
  });
  const events: PodLifecycleEvent[] = [];
  pleg.watch((e) => events.push(e));
  return { runtime, clock, generic, source, pleg, events, fallbacks };
}

const ev = (id: string, type: PodLifecycleEvent['type'], data: string): PodLifecycleEvent => ({
  id,
  type,
  data,
});

describe('EventedPLEG', () => {
  it('turns runtime events into pod lifecycle events and cache entries, as upstream processCRIEvent', async () => {
    const { runtime, clock, source, pleg, events } = setup();
    pleg.start();
    await clock.tick(0);
    events.length = 0;
    expect(source.opened).toBe(1);
    const t0 = clock.now();

    const running = status('p1', {
      containers: [['c1', 'running']],
      sandboxes: ['ready'],
      ips: ['10.0.0.5'],
    });
    runtime.statuses.set('p1', running);
    clock.advance(10);
    source.emit({ containerId: 'c1', type: 'ContainerCreated' });
    await clock.tick(0);
    // Created: the cache learns of it, nothing is sent (the generic PLEG ignores creation too).
    expect(events).toEqual([]);
    expect(pleg.cache.get('p1')).toMatchObject({ status: running, modified: t0 + 10 });

    clock.advance(10);
    source.emit({ containerId: 'c1', type: 'ContainerStarted' });
    await clock.tick(0);
    expect(events).toEqual([ev('p1', 'ContainerStarted', 'c1')]);

    // Stopped, torn down: the pod keeps its IP while no sandbox is ready (upstream getPodIPs).
    runtime.statuses.set('p1', status('p1', { containers: [['c1', 'exited']], sandboxes: ['notready'] }));
    clock.advance(10);
    source.emit({ containerId: 'c1', type: 'ContainerStopped' });
    await clock.tick(0);
    expect(events.at(-1)).toEqual(ev('p1', 'ContainerDied', 'c1'));
    expect(pleg.cache.get('p1').status?.ips).toEqual(['10.0.0.5']);
    expect(pleg.cache.get('p1').modified).toBe(t0 + 30);

    // A deleted container: died and removed; a deleted sandbox also drops the pod's entry.
    runtime.statuses.set('p1', status('p1', { sandboxes: ['notready'] }));
    source.emit({ containerId: 'c1', type: 'ContainerDeleted' });
    await clock.tick(0);
    expect(events.slice(-2)).toEqual([ev('p1', 'ContainerDied', 'c1'), ev('p1', 'ContainerRemoved', 'c1')]);
    expect(pleg.cache.get('p1').modified).toBeGreaterThan(0);
    source.emit({ containerId: 'sb0', type: 'ContainerDeleted' });
    await clock.tick(0);
    expect(pleg.cache.get('p1').modified).toBe(0);
    pleg.stop();
  });

  it('skips an event without a pod, and sends nothing when the cache holds a newer read', async () => {
    const { runtime, clock, source, pleg, events } = setup();
    pleg.start();
    await clock.tick(0);
    events.length = 0;
    source.emit({ containerId: 'c9', type: 'ContainerStarted', pod: undefined });
    await clock.tick(0);
    expect(events).toEqual([]);
    expect(runtime.statusCalls).toEqual([]);

    // A status carried by the event, stamped before what the cache has: the cache wins.
    const newer = status('p1', { containers: [['c1', 'exited']] });
    pleg.cache.set('p1', newer, undefined, clock.now() + 500);
    source.emit({
      containerId: 'c1',
      type: 'ContainerStarted',
      createdAt: clock.now() + 400,
      podStatus: status('p1', { containers: [['c1', 'running']] }),
    });
    await clock.tick(0);
    expect(events).toEqual([]);
    expect(pleg.cache.get('p1').status).toBe(newer);
    pleg.stop();
  });

  it('slows the generic relist to 300 s while events flow, with the 10 min health threshold', async () => {
    const { runtime, clock, generic, pleg } = setup();
    runtime.pods = [pod('p1', [container('c1', 'running')])];
    pleg.start();
    await clock.tick(0);
    expect(generic.relistDurations).toEqual({ relistPeriodMs: 300_000, relistThresholdMs: 600_000 });
    const lists = runtime.listCalls;
    await clock.tick(299_000);
    expect(runtime.listCalls).toBe(lists);
    await clock.tick(1_000);
    expect(runtime.listCalls).toBe(lists + 1);
    expect(pleg.healthy().healthy).toBe(true);
    pleg.stop();
  });

  it('advances the cache timestamp every 5 s so stuck waiters get unstuck', async () => {
    const { clock, pleg } = setup();
    pleg.start();
    await clock.tick(0);
    const waiter = pleg.cache.getNewerThan('p7', clock.now() + 1);
    let done = false;
    void waiter.then(() => {
      done = true;
    });
    await clock.tick(4_000);
    expect(done).toBe(false);
    await clock.tick(1_000);
    expect(done).toBe(true);
    pleg.stop();
  });

  it('falls back to relisting every second at once when the runtime lacks GetContainerEvents', async () => {
    const { runtime, clock, generic, source, pleg, fallbacks } = setup();
    source.failNext = [new ContainerEventsUnimplementedError('unknown method GetContainerEvents')];
    pleg.start();
    await clock.tick(0);
    await pleg.whenStopped();
    expect(source.opened).toBe(1);
    expect(pleg.inUse).toBe(false);
    expect(pleg.stats().fellBack).toBe(true);
    expect(fallbacks).toHaveLength(1);
    expect(generic.relistDurations).toEqual({ relistPeriodMs: 1_000, relistThresholdMs: 180_000 });
    expect(generic.running).toBe(true);
    const lists = runtime.listCalls;
    await clock.tick(1_000);
    expect(runtime.listCalls).toBeGreaterThan(lists);
    // Started again, it stays off: the generic PLEG relists alone.
    pleg.start();
    expect(source.opened).toBe(1);
    pleg.stop();
  });

  it('retries a broken stream with a relist in between, and falls back after maxStreamRetries', async () => {
    const { runtime, clock, generic, source, pleg, events } = setup({ maxStreamRetries: 3 });
    pleg.start();
    await clock.tick(0);
    events.length = 0;
    runtime.pods = [pod('p1', [container('c1', 'running')])];
    const lists = runtime.listCalls;
    source.break();
    await clock.tick(0);
    // The relist forced after the failure catches what the stream missed.
    expect(runtime.listCalls).toBe(lists + 1);
    expect(events).toEqual([ev('p1', 'ContainerStarted', 'c1')]);
    expect(source.opened).toBe(2);
    expect(pleg.inUse).toBe(true);
    expect(generic.relistDurations.relistPeriodMs).toBe(300_000);

    source.break();
    await clock.tick(0);
    expect(source.opened).toBe(3);
    source.break();
    await clock.tick(0);
    await pleg.whenStopped();
    expect(pleg.stats()).toMatchObject({ connections: 3, connectionErrors: 3, fellBack: true });
    expect(generic.relistDurations.relistPeriodMs).toBe(1_000);
    pleg.stop();
  });

  it('a failed status read stores the error for the pod worker', async () => {
    const { runtime, clock, source, pleg, events } = setup();
    pleg.start();
    await clock.tick(0);
    const err = new Error('rpc error: code = Unavailable');
    runtime.statuses.set('p1', err);
    source.emit({ containerId: 'c1', type: 'ContainerStopped' });
    await clock.tick(0);
    expect(pleg.cache.get('p1').error).toBe(err);
    expect(events.at(-1)).toEqual(ev('p1', 'ContainerDied', 'c1'));
    pleg.stop();
  });
});

describe('RuntimePodStatusCache.setIfNewer', () => {
  it('stores over a missing or older entry only', () => {
    const { pleg } = setup();
    const a = status('p');
    const b = status('p', { ips: ['1.2.3.4'] });
    expect(pleg.cache.setIfNewer('p', a, undefined, 100)).toBe(true);
    expect(pleg.cache.setIfNewer('p', b, undefined, 50)).toBe(false);
    expect(pleg.cache.get('p').status).toBe(a);
    expect(pleg.cache.setIfNewer('p', b, undefined, 100)).toBe(true);
    expect(pleg.cache.get('p').status).toBe(b);
  });
});
