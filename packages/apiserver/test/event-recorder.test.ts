import { type CoreV1Event, InMemoryOfflineStore, type OfflineStore } from '@kubelet-kit/core';
import { advanceUntil, FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import type { EventPatch } from '../src/event-correlator.js';
import { ApiserverEventRecorder, type EventSink } from '../src/index.js';

interface SinkCall {
  readonly verb: 'create' | 'patch';
  readonly event: CoreV1Event;
  readonly patch?: EventPatch;
  readonly at: number;
}

/** An event sink that stores events as the API server would, with scripted failures. */
class FakeEventSink implements EventSink {
  readonly calls: SinkCall[] = [];
  readonly stored = new Map<string, CoreV1Event>();
  /** Errors the next calls throw, in order. */
  readonly failures: unknown[] = [];
  #rv = 0;
  constructor(readonly clock: FakeClock) {}

  async create(event: CoreV1Event): Promise<CoreV1Event> {
    this.calls.push({ verb: 'create', event, at: this.clock.now() });
    const failure = this.failures.shift();
    if (failure) throw failure;
    const stored = { ...event, metadata: { ...event.metadata, resourceVersion: String(++this.#rv) } };
    this.stored.set(`${event.metadata?.namespace}/${event.metadata?.name}`, stored);
    return stored;
  }

  async patch(event: CoreV1Event, patch: EventPatch): Promise<CoreV1Event> {
    this.calls.push({ verb: 'patch', event, patch, at: this.clock.now() });
    const failure = this.failures.shift();
    if (failure) throw failure;
    const key = `${event.metadata?.namespace}/${event.metadata?.name}`;
    const current = this.stored.get(key);
    if (!current) throw Object.assign(new Error('not found'), { code: 404 });
    const stored = {
      ...current,
      ...patch,
      metadata: { ...current.metadata, resourceVersion: String(++this.#rv) },
    };
    this.stored.set(key, stored);
    return stored;
  }
}

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
const pod = { kind: 'Pod', namespace: 'ns', name: 'web', uid: 'uid-1', fieldPath: 'spec.containers{app}' };

function setup(
  options: {
    eventQPS?: number;
    eventBurst?: number;
    maxQueuedEvents?: number;
    queueWhileUnreachable?: boolean;
    store?: OfflineStore;
  } = {},
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const sink = new FakeEventSink(clock);
  const logger = new InMemoryLogger();
  const recorder = new ApiserverEventRecorder({
    sink,
    nodeName: 'node-a',
    clock,
    logger,
    random: () => 0.5,
    ...options,
  });
  return { clock, sink, logger, recorder };
}

describe('ApiserverEventRecorder', () => {
  it('creates a core/v1 Event as the kubelet does', async () => {
    const { sink, recorder } = setup();
    recorder.event(pod, 'Normal', 'Pulled', 'Container image "busybox" already present on machine');
    // Non-blocking: nothing is written before event() returns.
    expect(sink.calls).toHaveLength(0);
    await recorder.flush();
    expect(sink.calls).toHaveLength(1);
    expect(sink.calls[0]!.verb).toBe('create');
    const nanos = (BigInt(Date.UTC(2026, 0, 1)) * 1_000_000n).toString(16);
    expect(nanos).toHaveLength(16);
    expect(sink.calls[0]!.event).toEqual({
      metadata: { name: `web.${nanos}`, namespace: 'ns' },
      involvedObject: {
        apiVersion: 'v1',
        kind: 'Pod',
        namespace: 'ns',
        name: 'web',
        uid: 'uid-1',
        fieldPath: 'spec.containers{app}',
      },
      reason: 'Pulled',
      message: 'Container image "busybox" already present on machine',
      firstTimestamp: '2026-01-01T00:00:00Z',
      lastTimestamp: '2026-01-01T00:00:00Z',
      count: 1,
      type: 'Normal',
      source: { component: 'kubelet', host: 'node-a' },
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    });
    expect(recorder.stats).toMatchObject({ written: 1, queued: 0 });
  });

  it('puts Node events in namespace default', async () => {
    const { sink, recorder } = setup();
    recorder.event(
      { kind: 'Node', name: 'node-a', uid: 'node-a' },
      'Normal',
      'Starting',
      'Starting kubelet.',
    );
    await recorder.flush();
    expect(sink.calls[0]!.event.metadata?.namespace).toBe('default');
    expect(sink.calls[0]!.event.involvedObject).toEqual({
      apiVersion: 'v1',
      kind: 'Node',
      name: 'node-a',
      uid: 'node-a',
    });
  });

  it('patches count and lastTimestamp of the same event seen again', async () => {
    const { clock, sink, recorder } = setup();
    recorder.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await recorder.flush();
    clock.advance(30_000);
    recorder.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await recorder.flush();
    expect(sink.calls.map((c) => c.verb)).toEqual(['create', 'patch']);
    const first = sink.calls[0]!.event.metadata?.name;
    expect(sink.calls[1]!.event.metadata?.name).toBe(first);
    expect(sink.calls[1]!.patch).toEqual({
      count: 2,
      lastTimestamp: '2026-01-01T00:00:30Z',
      message: 'Back-off restarting failed container',
    });
    expect(sink.stored.get(`ns/${first}`)).toMatchObject({
      count: 2,
      firstTimestamp: '2026-01-01T00:00:00Z',
      lastTimestamp: '2026-01-01T00:00:30Z',
    });
  });

  it('creates the event again when the patched one is gone (404)', async () => {
    const { sink, recorder } = setup();
    recorder.event(pod, 'Warning', 'BackOff', 'again');
    await recorder.flush();
    sink.stored.clear();
    recorder.event(pod, 'Warning', 'BackOff', 'again');
    await recorder.flush();
    expect(sink.calls.map((c) => c.verb)).toEqual(['create', 'patch', 'create']);
    // Created with the count it has reached, and no stale resourceVersion.
    expect(sink.calls[2]!.event.count).toBe(2);
    expect(sink.calls[2]!.event.metadata?.resourceVersion).toBeUndefined();
    expect(recorder.stats.written).toBe(2);
  });

  it('retries an unreachable API server 12 times, ~10 s apart, then drops the event', async () => {
    const { clock, sink, recorder } = setup();
    for (let i = 0; i < 12; i++) sink.failures.push(refused());
    recorder.event(pod, 'Normal', 'Started', 'Started container app');
    await advanceUntil(clock, () => recorder.stats.dropped === 1, { step: 1_000, settle: async () => {} });
    const times = sink.calls.map((c) => c.at - Date.UTC(2026, 0, 1));
    expect(times).toHaveLength(12);
    // The first wait is random (0.5 × 10 s here), the others 10 s.
    expect(times.slice(0, 3)).toEqual([0, 5_000, 15_000]);
    expect(times.at(-1)).toBe(105_000);
    // The next event is written.
    recorder.event(pod, 'Normal', 'Killing', 'Stopping container app');
    await recorder.flush();
    expect(recorder.stats).toMatchObject({ written: 1, dropped: 1 });
  });

  it('recovers when the API server comes back within the retries', async () => {
    const { clock, sink, recorder } = setup();
    sink.failures.push(refused(), refused());
    recorder.event(pod, 'Normal', 'Created', 'Created container app');
    await advanceUntil(clock, () => recorder.stats.written === 1, { step: 1_000, settle: async () => {} });
    expect(sink.calls).toHaveLength(3);
  });

  it('does not retry what the API server refused', async () => {
    const { sink, recorder, logger } = setup();
    sink.failures.push(Object.assign(new Error('forbidden'), { code: 403 }));
    recorder.event(pod, 'Normal', 'Created', 'Created container app');
    await recorder.flush();
    expect(sink.calls).toHaveLength(1);
    expect(recorder.stats.rejected).toBe(1);
    expect(logger.records.some((r) => r.message === 'server rejected event (will not retry)')).toBe(true);
  });

  it('holds requests to --event-qps and --event-burst', async () => {
    const { clock, sink, recorder } = setup({ eventQPS: 2, eventBurst: 3 });
    for (let i = 0; i < 7; i++) recorder.event({ ...pod, name: `p${i}` }, 'Normal', 'Created', 'Created');
    await advanceUntil(clock, () => recorder.stats.written === 7, { step: 100, settle: async () => {} });
    const times = sink.calls.map((c) => c.at - Date.UTC(2026, 0, 1));
    expect(times).toEqual([0, 0, 0, 500, 1000, 1500, 2000]);
  });

  it('defaults to 50 events a second with a burst of 100', async () => {
    const { clock, sink, recorder } = setup();
    for (let i = 0; i < 150; i++) recorder.event({ ...pod, name: `p${i}` }, 'Normal', 'Created', 'Created');
    await advanceUntil(clock, () => recorder.stats.written === 150, { step: 100, settle: async () => {} });
    const times = sink.calls.map((c) => c.at - Date.UTC(2026, 0, 1));
    expect(times.filter((t) => t === 0)).toHaveLength(100);
    expect(times.at(-1)).toBe(1000);
  });

  it('drops events beyond the queue limit without blocking', async () => {
    const { recorder, sink } = setup({ maxQueuedEvents: 3 });
    for (let i = 0; i < 5; i++) recorder.event({ ...pod, name: `p${i}` }, 'Normal', 'Created', 'Created');
    // The first went to the writer at once, three wait, the fifth finds the queue full.
    expect(recorder.stats).toMatchObject({ dropped: 1, queued: 3 });
    await recorder.flush();
    expect(sink.calls).toHaveLength(4);
  });

  it('skips spam: 25 events about one object, then one per 5 minutes', async () => {
    const { clock, sink, recorder } = setup();
    for (let i = 0; i < 27; i++) recorder.event(pod, 'Normal', `Reason${i}`, `message ${i}`);
    await recorder.flush();
    expect(sink.calls).toHaveLength(25);
    expect(recorder.stats.skipped).toBe(2);
    clock.advance(300_000);
    recorder.event(pod, 'Normal', 'Later', 'later');
    await recorder.flush();
    expect(sink.calls).toHaveLength(26);
  });

  it('never throws from event(), even when the sink does', async () => {
    const clock = new FakeClock();
    const recorder = new ApiserverEventRecorder({
      sink: {
        create: () => {
          throw new Error('sync failure');
        },
        patch: () => {
          throw new Error('sync failure');
        },
      },
      nodeName: 'node-a',
      clock,
    });
    expect(() => recorder.event(pod, 'Normal', 'Created', 'x')).not.toThrow();
    // A throwing sink counts as unreachable: retried, then dropped.
    await advanceUntil(clock, () => recorder.stats.dropped === 1, { step: 10_000, settle: async () => {} });
    expect(recorder.stats.written).toBe(0);
  });

  it('stops during a retry wait', async () => {
    const { clock, sink, recorder } = setup();
    sink.failures.push(refused(), refused(), refused());
    recorder.event(pod, 'Normal', 'Created', 'x');
    recorder.event(pod, 'Normal', 'Started', 'y');
    await clock.tick(0);
    await recorder.stop();
    expect(recorder.stats.dropped).toBe(1);
    expect(clock.pendingTimers).toBe(0);
    recorder.event(pod, 'Normal', 'Late', 'z');
    expect(recorder.stats.queued).toBe(0);
  });

  it('rejects a negative --event-qps', () => {
    expect(
      () =>
        new ApiserverEventRecorder({
          sink: new FakeEventSink(new FakeClock()),
          nodeName: 'n',
          clock: new FakeClock(),
          eventQPS: -1,
        }),
    ).toThrow('event recorder: eventQPS must be >= 0, got -1');
  });
});

describe('ApiserverEventRecorder holding events while the API server is away (queueWhileUnreachable)', () => {
  it('keeps retrying past the 12 tries and writes the held events in the order they happened', async () => {
    const { clock, sink, recorder } = setup({ queueWhileUnreachable: true });
    // Three minutes of outage at one try every 10 s: far past upstream's 12 tries.
    for (let i = 0; i < 20; i++) sink.failures.push(refused());
    recorder.event(pod, 'Warning', 'Unhealthy', 'Liveness probe failed');
    recorder.event(pod, 'Normal', 'Killing', 'Container app failed liveness probe, will be restarted');
    await clock.tick(0);
    clock.advance(1_000);
    recorder.event(pod, 'Normal', 'Started', 'Started container app');
    await advanceUntil(clock, () => recorder.stats.written === 3, { step: 1_000, settle: async () => {} });
    expect(recorder.stats.dropped).toBe(0);
    const stored = [...sink.stored.values()].sort(
      (a, b) => Number(a.metadata?.resourceVersion) - Number(b.metadata?.resourceVersion),
    );
    expect(stored.map((e) => e.reason)).toEqual(['Unhealthy', 'Killing', 'Started']);
    // Each keeps the time it happened, not the time it reached the server.
    expect(stored.map((e) => e.firstTimestamp)).toEqual([
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:01Z',
    ]);
    // 20 failed tries 10 s apart (the first wait random: 0.5 × 10 s), then the three writes.
    const failedAt = sink.calls.slice(0, 20).map((c) => c.at - Date.UTC(2026, 0, 1));
    expect(failedAt.slice(0, 3)).toEqual([0, 5_000, 15_000]);
    expect(failedAt.at(-1)).toBe(185_000);
    expect(sink.calls).toHaveLength(23);
  });

  it('still drops what does not fit the queue while held, and what the server refused', async () => {
    const { clock, sink, recorder } = setup({ queueWhileUnreachable: true, maxQueuedEvents: 3 });
    for (let i = 0; i < 15; i++) sink.failures.push(refused());
    sink.failures.push(Object.assign(new Error('forbidden'), { code: 403 }));
    for (let i = 0; i < 5; i++) recorder.event({ ...pod, name: `p${i}` }, 'Normal', 'Created', 'Created');
    // One at the writer, three held, the fifth finds the queue full.
    expect(recorder.stats).toMatchObject({ dropped: 1, queued: 3 });
    await advanceUntil(clock, () => recorder.stats.written === 3, { step: 1_000, settle: async () => {} });
    // The first event met the refusal when the server came back; the three held went in.
    expect(recorder.stats).toMatchObject({ rejected: 1, dropped: 1, written: 3 });
    expect([...sink.stored.values()].map((e) => e.involvedObject.name)).toEqual(['p1', 'p2', 'p3']);
  });

  it('keeps the held events in the store, so a restart during the outage writes them first', async () => {
    const store = new InMemoryOfflineStore();
    const first = setup({ queueWhileUnreachable: true, store });
    for (let i = 0; i < 100; i++) first.sink.failures.push(refused());
    first.recorder.event(pod, 'Warning', 'Unhealthy', 'Liveness probe failed');
    first.recorder.event(pod, 'Normal', 'Killing', 'Container app failed liveness probe, will be restarted');
    await first.clock.tick(0);
    expect((await store.list('Event')).length).toBe(2);
    first.clock.advance(1_000);
    // Queued behind a write that found no server: kept at once.
    first.recorder.event(pod, 'Normal', 'Started', 'Started container app');
    await first.clock.tick(0);
    expect((await store.list('Event')).length).toBe(3);
    // The agent dies (stop drops its in-memory queue); a new one starts, still offline at first.
    await first.recorder.stop();
    expect(first.sink.stored.size).toBe(0);

    const second = setup({ queueWhileUnreachable: true, store });
    second.clock.advance(60_000); // the new run starts a minute later
    second.sink.failures.push(refused(), refused());
    second.recorder.event(pod, 'Normal', 'Pulled', 'Container image "busybox" already present on machine');
    await advanceUntil(second.clock, () => second.recorder.stats.written === 4, {
      step: 1_000,
      settle: async () => {},
    });
    const written = [...second.sink.stored.values()].sort(
      (a, b) => Number(a.metadata?.resourceVersion) - Number(b.metadata?.resourceVersion),
    );
    // The earlier run's events first, in their order, then the new one.
    expect(written.map((e) => e.reason)).toEqual(['Unhealthy', 'Killing', 'Started', 'Pulled']);
    expect(written[2]!.firstTimestamp).toBe('2026-01-01T00:00:01Z');
    // Written events leave the store.
    expect(await store.list('Event')).toEqual([]);
  });

  it('keeps nothing in the store while the server answers', async () => {
    const store = new InMemoryOfflineStore();
    const { recorder } = setup({ queueWhileUnreachable: true, store });
    recorder.event(pod, 'Normal', 'Pulled', 'pulled');
    recorder.event(pod, 'Normal', 'Created', 'created');
    await recorder.flush();
    expect(recorder.stats.written).toBe(2);
    expect(await store.list('Event')).toEqual([]);
  });
});
