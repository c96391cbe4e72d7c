import { FakeClock, FakeRuntime, InMemoryLogger } from '@kubelet-kit/core/testing';
import { type EventChannel, GenericPLEG, type PodLifecycleEvent, type RelistResult } from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';
import { container, pod, status } from './fake-runtime.js';

function setup(opts: { capacity?: number } = {}) {
  const runtime = new FakeRuntime();
  const clock = new FakeClock();
  const results: RelistResult[] = [];
  const logger = new InMemoryLogger();
  const pleg = new GenericPLEG({
    runtime,
    clock,
    logger,
    channelCapacity: opts.capacity ?? 100,
    onRelist: (r) => results.push(r),
  });
  return { runtime, clock, pleg, results, logger };
}

function drain(ch: EventChannel<PodLifecycleEvent>): PodLifecycleEvent[] {
  const out: PodLifecycleEvent[] = [];
  for (let e = ch.tryReceive(); e; e = ch.tryReceive()) out.push(e);
  return out;
}

const sorted = (events: PodLifecycleEvent[]) =>
  [...events].sort((a, b) => a.id.localeCompare(b.id) || (a.data ?? '').localeCompare(b.data ?? ''));

const ev = (id: string, type: PodLifecycleEvent['type'], data: string): PodLifecycleEvent => ({
  id,
  type,
  data,
});

describe('GenericPLEG relisting', () => {
  it('Relisting: first sight reports running/exited, no change reports nothing, transitions are reported', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [
      pod('1234', [container('c1', 'exited'), container('c2', 'running'), container('c3', 'unknown')]),
      pod('4567', [container('c1', 'exited')]),
    ];
    await pleg.relist();
    expect(sorted(drain(pleg.events))).toEqual([
      ev('1234', 'ContainerDied', 'c1'),
      ev('1234', 'ContainerStarted', 'c2'),
      ev('4567', 'ContainerDied', 'c1'),
    ]);

    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);

    runtime.pods = [
      pod('1234', [container('c2', 'exited'), container('c3', 'running')]),
      pod('4567', [container('c4', 'running')]),
    ];
    await pleg.relist();
    expect(sorted(drain(pleg.events))).toEqual([
      ev('1234', 'ContainerRemoved', 'c1'),
      ev('1234', 'ContainerDied', 'c2'),
      ev('1234', 'ContainerStarted', 'c3'),
      ev('4567', 'ContainerRemoved', 'c1'),
      ev('4567', 'ContainerStarted', 'c4'),
    ]);
  });

  it('RelistingWithSandboxes: sandboxes are tracked like containers', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [
      pod('1234', [], [container('c1', 'exited'), container('c2', 'running'), container('c3', 'unknown')]),
      pod('4567', [], [container('c1', 'exited')]),
    ];
    await pleg.relist();
    expect(sorted(drain(pleg.events))).toEqual([
      ev('1234', 'ContainerDied', 'c1'),
      ev('1234', 'ContainerStarted', 'c2'),
      ev('4567', 'ContainerDied', 'c1'),
    ]);
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    runtime.pods = [
      pod('1234', [], [container('c2', 'exited'), container('c3', 'running')]),
      pod('4567', [], [container('c4', 'running')]),
    ];
    await pleg.relist();
    expect(sorted(drain(pleg.events))).toEqual([
      ev('1234', 'ContainerRemoved', 'c1'),
      ev('1234', 'ContainerDied', 'c2'),
      ev('1234', 'ContainerStarted', 'c3'),
      ev('4567', 'ContainerRemoved', 'c1'),
      ev('4567', 'ContainerStarted', 'c4'),
    ]);
  });

  describe('the event table', () => {
    it.each([
      { from: undefined, to: 'running', events: ['ContainerStarted'] },
      { from: undefined, to: 'exited', events: ['ContainerDied'] },
      { from: undefined, to: 'created', events: [] },
      { from: undefined, to: 'unknown', events: [] },
      { from: 'created', to: 'running', events: ['ContainerStarted'] },
      { from: 'created', to: 'unknown', events: [] },
      { from: 'created', to: 'exited', events: ['ContainerDied'] },
      { from: 'running', to: 'exited', events: ['ContainerDied'] },
      { from: 'running', to: 'unknown', events: [] },
      { from: 'running', to: 'created', events: [] },
      { from: 'running', to: undefined, events: ['ContainerDied', 'ContainerRemoved'] },
      { from: 'unknown', to: undefined, events: ['ContainerDied', 'ContainerRemoved'] },
      { from: 'created', to: undefined, events: ['ContainerDied', 'ContainerRemoved'] },
      { from: 'exited', to: undefined, events: ['ContainerRemoved'] },
      { from: 'exited', to: 'running', events: ['ContainerStarted'] },
      { from: 'unknown', to: 'running', events: ['ContainerStarted'] },
      { from: 'running', to: 'running', events: [] },
      { from: 'exited', to: 'exited', events: [] },
    ] as const)('$from → $to sends $events', async ({ from, to, events }) => {
      const { runtime, pleg } = setup();
      // A second container that stays running keeps the pod listed when c1 vanishes.
      const keep = container('keep', 'running');
      runtime.pods = [pod('p', from ? [container('c1', from), keep] : [keep])];
      await pleg.relist();
      drain(pleg.events);
      runtime.pods = [pod('p', to ? [container('c1', to), keep] : [keep])];
      await pleg.relist();
      // In order: ContainerDied precedes ContainerRemoved.
      expect(drain(pleg.events)).toEqual(events.map((type) => ev('p', type, 'c1')));
    });
  });

  it('never sends ContainerChanged, but still refreshes the cache for it', async () => {
    const { runtime, pleg, clock } = setup();
    runtime.pods = [pod('p', [container('c1', 'running')])];
    await pleg.relist();
    drain(pleg.events);
    clock.advance(1000);
    runtime.pods = [pod('p', [container('c1', 'unknown')])];
    const seen: PodLifecycleEvent[] = [];
    pleg.watch((e) => seen.push(e));
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    expect(seen).toEqual([]);
    expect(pleg.cache.get('p').status?.containerStatuses[0]?.state).toBe('unknown');
    expect(pleg.cache.get('p').modified).toBe(clock.now());
  });

  it('EventChannelFull: a full channel drops the rest and counts them; listeners still see all', async () => {
    const { runtime, pleg, logger } = setup({ capacity: 4 });
    const seen: PodLifecycleEvent[] = [];
    pleg.watch((e) => seen.push(e));
    runtime.pods = [
      pod('1234', [container('c1', 'exited'), container('c2', 'running'), container('c3', 'unknown')]),
      pod('4567', [container('c1', 'exited')]),
    ];
    await pleg.relist();
    expect(drain(pleg.events)).toHaveLength(3);
    runtime.pods = [
      pod('1234', [container('c2', 'exited'), container('c3', 'running')]),
      pod('4567', [container('c4', 'running')]),
    ];
    seen.length = 0;
    await pleg.relist();
    const all = [
      ev('1234', 'ContainerRemoved', 'c1'),
      ev('1234', 'ContainerDied', 'c2'),
      ev('1234', 'ContainerStarted', 'c3'),
      ev('4567', 'ContainerRemoved', 'c1'),
      ev('4567', 'ContainerStarted', 'c4'),
    ];
    const got = drain(pleg.events);
    expect(got).toHaveLength(4);
    for (const e of got) expect(all).toContainEqual(e);
    expect(pleg.stats().discardedEvents).toBe(1);
    expect(sorted(seen)).toEqual(all);
    expect(logger.records.some((r) => r.message.includes('Event channel is full'))).toBe(true);
  });

  it('events dropped on a full channel are lost: the record still advances', async () => {
    // Upstream updates the pod record before its non-blocking sends; a dropped event is only
    // counted, never retried on a later relist.
    const { runtime, pleg } = setup({ capacity: 1 });
    runtime.pods = [pod('p', [container('a', 'running'), container('b', 'running')])];
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('p', 'ContainerStarted', 'a')]);
    expect(pleg.stats().discardedEvents).toBe(1);
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
  });

  describe('DetectingContainerDeaths', () => {
    it.each([1, 3])('missing containers after %i relists', async (n) => {
      const { runtime, pleg } = setup();
      runtime.pods = [
        pod('1234', [container('c1', 'running'), container('c2', 'running'), container('c3', 'exited')]),
      ];
      for (let i = 0; i < n; i++) {
        await pleg.relist();
        drain(pleg.events);
      }
      // c2 stopped and was removed between relists; c3 (already exited) was garbage collected.
      runtime.pods = [pod('1234', [container('c1', 'running')])];
      await pleg.relist();
      expect(sorted(drain(pleg.events))).toEqual([
        ev('1234', 'ContainerDied', 'c2'),
        ev('1234', 'ContainerRemoved', 'c2'),
        ev('1234', 'ContainerRemoved', 'c3'),
      ]);
    });

    it.each([1, 3])('missing pods after %i relists', async (n) => {
      const { runtime, pleg } = setup();
      runtime.pods = [pod('1234', [container('c2', 'running')])];
      for (let i = 0; i < n; i++) {
        await pleg.relist();
        drain(pleg.events);
      }
      runtime.pods = [];
      await pleg.relist();
      expect(drain(pleg.events)).toEqual([
        ev('1234', 'ContainerDied', 'c2'),
        ev('1234', 'ContainerRemoved', 'c2'),
      ]);
      // The record is gone: nothing more is reported.
      await pleg.relist();
      expect(drain(pleg.events)).toEqual([]);
    });
  });
});

describe('GenericPLEG and the status cache', () => {
  it('RelistWithCache: a failed status read withholds the pod events until it succeeds', async () => {
    const { runtime, pleg, clock } = setup();
    runtime.pods = [
      pod('test-pod-0', [container('c0', 'running')]),
      pod('test-pod-1', [container('c1', 'running')]),
    ];
    const good0 = status('test-pod-0', { containers: [['c0', 'running']] });
    const good1 = status('test-pod-1', { containers: [['c1', 'running']] });
    const statusErr = new Error('unable to get status');
    runtime.statuses.set('test-pod-0', good0);
    runtime.statuses.set('test-pod-1', statusErr);

    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('test-pod-0', 'ContainerStarted', 'c0')]);
    expect(pleg.cache.get('test-pod-0')).toEqual({ status: good0, error: undefined, modified: clock.now() });
    expect(pleg.cache.get('test-pod-1')).toEqual({
      status: undefined,
      error: statusErr,
      modified: clock.now(),
    });

    runtime.statuses.set('test-pod-1', good1);
    runtime.statusCalls = [];
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('test-pod-1', 'ContainerStarted', 'c1')]);
    expect(runtime.statusCalls).toEqual(['test-pod-1']);
    expect(pleg.cache.get('test-pod-0').status).toBe(good0);
    expect(pleg.cache.get('test-pod-1')).toEqual({ status: good1, error: undefined, modified: clock.now() });
  });

  it('RemoveCacheEntry: a pod gone from the runtime leaves an empty entry', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('test-pod-0', [container('c0', 'running')])];
    await pleg.relist();
    expect(pleg.cache.get('test-pod-0').status?.containerStatuses).toHaveLength(1);
    runtime.pods = [];
    await pleg.relist();
    const entry = pleg.cache.get('test-pod-0');
    expect(entry.error).toBeUndefined();
    expect(entry.status?.id).toBe('test-pod-0');
    expect(entry.status?.containerStatuses).toEqual([]);
    expect(entry.modified).toBe(0);
  });

  it('RelistWithReinspection: a pod whose inspection failed is inspected again, without new events', async () => {
    const { runtime, pleg } = setup();
    const infra = container('infra', 'running');
    const goodStatus = status('test-pod', { containers: [['infra', 'running']] });
    runtime.pods = [pod('test-pod', [infra])];
    runtime.statuses.set('test-pod', goodStatus);
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('test-pod', 'ContainerStarted', 'infra')]);
    expect(pleg.cache.get('test-pod').status).toBe(goodStatus);

    // The runtime is midway through creating a container and inspection fails.
    runtime.pods = [pod('test-pod', [infra, container('transient', 'unknown')])];
    const inspectionError = new Error('inspection error');
    runtime.statuses.set('test-pod', inspectionError);
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.cache.get('test-pod')).toMatchObject({ status: undefined, error: inspectionError });

    // The transient container is gone; the list equals the first one, so only reinspection
    // makes the PLEG read the status again.
    runtime.pods = [pod('test-pod', [infra])];
    runtime.statuses.set('test-pod', goodStatus);
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual(['test-pod']);
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.cache.get('test-pod')).toMatchObject({ status: goodStatus, error: undefined });

    // Reinspection happens once: the next quiet relist reads nothing.
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual([]);
  });

  it('a pod awaiting reinspection that is no longer listed loses its cache entry and record, silently', async () => {
    // Upstream relist: no events (never recorded, not listed), but the pending reinspection still
    // runs updateCache with no pod, which deletes the entry; the record is then dropped.
    const { runtime, pleg } = setup();
    runtime.pods = [pod('p', [container('c1', 'running')])];
    runtime.statuses.set('p', new Error('boom'));
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.cache.get('p').error?.message).toBe('boom');

    runtime.pods = [];
    runtime.statusCalls = [];
    await pleg.relist();
    expect(runtime.statusCalls).toEqual([]);
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.cache.get('p')).toMatchObject({ error: undefined, modified: 0, status: { id: 'p' } });

    // Nothing is left to reinspect or report.
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
  });

  it('a failed inspection does not advance the record: the same change is reported once it succeeds', async () => {
    const { runtime, pleg } = setup();
    runtime.pods = [pod('p', [container('c1', 'running')])];
    await pleg.relist();
    drain(pleg.events);
    runtime.pods = [pod('p', [container('c1', 'exited')])];
    runtime.statuses.set('p', new Error('boom'));
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([]);
    runtime.statuses.delete('p');
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('p', 'ContainerDied', 'c1')]);
  });

  describe('RelistIPChange: IPs survive a teardown that loses them', () => {
    it.each([
      { name: 'ipv4', ips: ['192.168.1.5'] },
      { name: 'dual stack', ips: ['192.168.1.5/24', '2000::'] },
    ])('$name', async ({ ips }) => {
      const { runtime, pleg } = setup();
      runtime.pods = [pod('p', [container('c0', 'running')])];
      const first = status('p', { ips, containers: [['c0', 'running']] });
      runtime.statuses.set('p', first);
      await pleg.relist();
      expect(drain(pleg.events)).toEqual([ev('p', 'ContainerStarted', 'c0')]);
      expect(pleg.cache.get('p').status).toEqual(first);

      runtime.pods = [pod('p', [container('c0', 'exited')])];
      const second = status('p', { containers: [['c0', 'exited']] });
      runtime.statuses.set('p', second);
      await pleg.relist();
      expect(drain(pleg.events)).toEqual([ev('p', 'ContainerDied', 'c0')]);
      expect(pleg.cache.get('p').status).toEqual({ ...second, ips });
    });

    it('a ready sandbox with no IPs wins over the old IPs', async () => {
      const { runtime, pleg } = setup();
      runtime.pods = [pod('p', [container('c0', 'running')])];
      runtime.statuses.set('p', status('p', { ips: ['10.0.0.1'], containers: [['c0', 'running']] }));
      await pleg.relist();
      runtime.pods = [pod('p', [container('c0', 'exited')])];
      runtime.statuses.set('p', status('p', { containers: [['c0', 'exited']], sandboxes: ['ready'] }));
      await pleg.relist();
      expect(pleg.cache.get('p').status?.ips).toEqual([]);
    });

    it('a failed read in between drops the old IPs (upstream getPodIPs ignores an errored entry)', async () => {
      const { runtime, pleg } = setup();
      runtime.pods = [pod('p', [container('c0', 'running')])];
      runtime.statuses.set('p', status('p', { ips: ['10.0.0.1'], containers: [['c0', 'running']] }));
      await pleg.relist();
      runtime.pods = [pod('p', [container('c0', 'exited')])];
      runtime.statuses.set('p', new Error('boom'));
      await pleg.relist();
      runtime.statuses.set('p', status('p', { containers: [['c0', 'exited']] }));
      await pleg.relist();
      expect(pleg.cache.get('p')).toMatchObject({ error: undefined, status: { ips: [] } });
    });

    it('new IPs replace old ones', async () => {
      const { runtime, pleg } = setup();
      runtime.pods = [pod('p', [container('c0', 'running')])];
      runtime.statuses.set('p', status('p', { ips: ['10.0.0.1'], sandboxes: ['ready'] }));
      await pleg.relist();
      runtime.pods = [pod('p', [container('c0', 'exited')])];
      runtime.statuses.set('p', status('p', { ips: ['10.0.0.2'], sandboxes: ['notready'] }));
      await pleg.relist();
      expect(pleg.cache.get('p').status?.ips).toEqual(['10.0.0.2']);
    });
  });

  it('relist advances the cache timestamp after updating entries, releasing waiters', async () => {
    const { runtime, pleg, clock } = setup();
    runtime.pods = [pod('p', [container('c0', 'running')])];
    await pleg.relist();
    const syncedAt = clock.now();
    const waiting = pleg.cache.getNewerThan('p', syncedAt);
    let resolved = false;
    void waiting.then(() => {
      resolved = true;
    });
    await clock.tick(0);
    expect(resolved).toBe(false);

    clock.advance(1000);
    runtime.pods = [pod('p', [container('c0', 'exited')])];
    await pleg.relist();
    const entry = await waiting;
    expect(entry.status?.containerStatuses[0]?.state).toBe('exited');
    expect(entry.modified).toBe(clock.now());
    expect(pleg.cache.timestamp).toBe(clock.now());
  });

  it('a failed listing neither advances the cache timestamp nor the health', async () => {
    const { runtime, pleg, results, clock } = setup();
    runtime.listError = new Error('runtime down');
    await pleg.relist();
    expect(pleg.cache.timestamp).toBeUndefined();
    expect(pleg.healthy().healthy).toBe(false);
    expect(results.at(-1)?.error).toBe(runtime.listError);
    expect(pleg.stats()).toMatchObject({ relists: 1, relistErrors: 1, lastRelistTime: undefined });

    runtime.listError = undefined;
    clock.advance(500);
    await pleg.relist();
    expect(pleg.healthy().healthy).toBe(true);
    expect(pleg.cache.timestamp).toBe(clock.now());
  });
});

describe('GenericPLEG health, metrics and lifecycle', () => {
  it('Healthy: unhealthy before the first relist and past the 3 minute threshold', async () => {
    const { pleg, clock } = setup();
    expect(pleg.healthy()).toMatchObject({ healthy: false });
    expect(pleg.healthy().error?.message).toBe('pleg has yet to be successful');
    expect(pleg.healthy().error?.code).toBe('PLEGNotHealthy');
    clock.advance(10 * 60_000);
    expect(pleg.healthy().healthy).toBe(false);

    await pleg.relist();
    clock.advance(60_000);
    expect(pleg.healthy()).toEqual({ healthy: true });

    clock.advance(3 * 60_000);
    const h = pleg.healthy();
    expect(h.healthy).toBe(false);
    expect(h.error?.message).toMatch(/last seen active 240000ms ago; threshold is 180000ms/);
  });

  it('Healthy: a relist exactly the threshold ago is still healthy; one ms more is not', async () => {
    // Upstream compares elapsed > threshold; the threshold is configurable (evented PLEG uses 10m).
    const runtime = new FakeRuntime();
    const clock = new FakeClock();
    const pleg = new GenericPLEG({ runtime, clock, relistThresholdMs: 10 * 60_000 });
    await pleg.relist();
    clock.advance(10 * 60_000);
    expect(pleg.healthy()).toEqual({ healthy: true });
    clock.advance(1);
    expect(pleg.healthy().healthy).toBe(false);
    // A failed listing does not refresh it.
    runtime.listError = new Error('down');
    await pleg.relist();
    expect(pleg.healthy().healthy).toBe(false);
  });

  it('RunningPodAndContainerCount: counts pods with a running sandbox and containers by state', async () => {
    const { runtime, pleg, results } = setup();
    runtime.pods = [
      pod(
        '1234',
        [container('c1', 'running'), container('c2', 'unknown'), container('c3', 'unknown')],
        [container('s1', 'running'), container('s2', 'running'), container('s3', 'unknown')],
      ),
      pod('4567', [container('c1', 'exited')], [container('s1', 'running'), container('s2', 'exited')]),
    ];
    await pleg.relist();
    const expected = { runningPods: 2, containersByState: { running: 1, unknown: 2, exited: 1 } };
    expect(results.at(-1)).toMatchObject(expected);
    expect(pleg.stats()).toMatchObject(expected);
  });

  it('reports relist duration and interval on the injected clock', async () => {
    const { runtime, pleg, clock, results } = setup();
    let release!: () => void;
    runtime.gate = new Promise((r) => {
      release = r;
    });
    const first = pleg.relist();
    await clock.tick(250);
    release();
    await first;
    runtime.gate = undefined;
    clock.advance(750);
    await pleg.relist();
    expect(results.map((r) => [r.durationMs, r.intervalMs])).toEqual([
      [250, undefined],
      [0, 1000],
    ]);
    expect(pleg.stats().lastRelistDurationMs).toBe(0);
  });

  it('start() relists every period until stop()', async () => {
    const { runtime, pleg, clock } = setup();
    pleg.start();
    pleg.start(); // idempotent
    await clock.tick(0);
    expect(runtime.listCalls).toBe(1);
    await clock.tick(1000);
    expect(runtime.listCalls).toBe(2);
    await clock.tick(3000);
    expect(runtime.listCalls).toBe(5);
    pleg.stop();
    await clock.tick(10_000);
    expect(runtime.listCalls).toBe(5);
    expect(pleg.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    clock.advance(3 * 60_000);
    expect(pleg.healthy().healthy).toBe(false);
  });

  it('the period is configurable and counts from the end of the previous relist', async () => {
    const runtime = new FakeRuntime();
    const clock = new FakeClock();
    const pleg = new GenericPLEG({ runtime, clock, relistPeriodMs: 5000 });
    let release!: () => void;
    runtime.gate = new Promise((r) => {
      release = r;
    });
    pleg.start();
    await clock.tick(2000); // the first relist is still listing
    expect(runtime.listCalls).toBe(1);
    runtime.gate = undefined;
    release();
    await clock.tick(4999);
    expect(runtime.listCalls).toBe(1);
    await clock.tick(1);
    expect(runtime.listCalls).toBe(2);
    pleg.stop();
  });

  it('stop() during a relist leaves the records, so the change is reported after a restart', async () => {
    const { runtime, pleg, clock } = setup();
    runtime.pods = [pod('p', [container('c1', 'running')])];
    let release!: () => void;
    runtime.gate = new Promise((r) => {
      release = r;
    });
    pleg.start();
    await clock.tick(0);
    pleg.stop();
    release();
    await clock.tick(0);
    expect(drain(pleg.events)).toEqual([]);
    expect(pleg.healthy().healthy).toBe(false);
    runtime.gate = undefined;
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('p', 'ContainerStarted', 'c1')]);
  });

  it('relist() calls are serialized', async () => {
    const { runtime, pleg, clock } = setup();
    let release!: () => void;
    runtime.gate = new Promise((r) => {
      release = r;
    });
    const a = pleg.relist();
    const b = pleg.relist();
    await clock.tick(0);
    expect(runtime.listCalls).toBe(1);
    runtime.gate = undefined;
    release();
    await Promise.all([a, b]);
    expect(runtime.listCalls).toBe(2);
  });

  it('events can be consumed with for await, and watch() returns its unsubscribe', async () => {
    const { runtime, pleg } = setup();
    const seen: string[] = [];
    const unsubscribe = pleg.watch((e) => seen.push(`${e.type}:${e.data}`));
    runtime.pods = [pod('p', [container('a', 'running'), container('b', 'exited')])];
    await pleg.relist();
    unsubscribe();
    runtime.pods = [pod('p', [container('a', 'exited'), container('b', 'exited')])];
    await pleg.relist();
    expect(seen).toEqual(['ContainerStarted:a', 'ContainerDied:b']);

    const abort = new AbortController();
    const got: PodLifecycleEvent[] = [];
    for await (const e of pleg.events.iterate(abort.signal)) {
      got.push(e);
      if (got.length === 3) abort.abort();
    }
    expect(got).toEqual([
      ev('p', 'ContainerStarted', 'a'),
      ev('p', 'ContainerDied', 'b'),
      ev('p', 'ContainerDied', 'a'),
    ]);
  });

  it('a throwing listener is logged and does not break the relist', async () => {
    const { runtime, pleg, logger } = setup();
    pleg.watch(() => {
      throw new Error('listener bug');
    });
    runtime.pods = [pod('p', [container('a', 'running')])];
    await pleg.relist();
    expect(drain(pleg.events)).toEqual([ev('p', 'ContainerStarted', 'a')]);
    expect(logger.records.some((r) => r.message === 'PLEG: event listener failed')).toBe(true);
  });
});

describe('GenericPLEG without a channel buffer', () => {
  it('with capacity 0, events reach watchers and none counts as dropped however many there are', async () => {
    const runtime = new FakeRuntime();
    const logger = new InMemoryLogger();
    const pleg = new GenericPLEG({ runtime, clock: new FakeClock(), logger, channelCapacity: 0 });
    const seen: PodLifecycleEvent[] = [];
    pleg.watch((e) => seen.push(e));
    runtime.pods = Array.from({ length: 30 }, (_, i) => pod(`p${i}`, [container(`c${i}`, 'running')]));
    await pleg.relist();
    expect(seen).toHaveLength(30);
    expect(pleg.stats().discardedEvents).toBe(0);
    expect(logger.records.filter((e) => e.level === 'error')).toEqual([]);
  });

  it('with capacity 0 and no watcher, an event nobody waits for is dropped and counted', async () => {
    const runtime = new FakeRuntime();
    const pleg = new GenericPLEG({ runtime, clock: new FakeClock(), channelCapacity: 0 });
    runtime.pods = [pod('p', [container('c', 'running')])];
    await pleg.relist();
    expect(pleg.stats().discardedEvents).toBe(1);
  });
});
