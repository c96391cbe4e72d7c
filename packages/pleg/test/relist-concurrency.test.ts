import type { Runtime, RuntimePod, RuntimePodStatus } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { GenericPLEG, type PodLifecycleEvent } from '@kubelet-kit/pleg';
import { describe, expect, it } from 'vitest';
import { container, pod, status } from './fake-runtime.js';

/** A runtime whose status reads stay open until the test answers them. */
class GatedRuntime implements Pick<Runtime, 'getPods' | 'getPodStatus'> {
  pods: RuntimePod[] = [];
  readonly pending: { uid: string; resolve: (s: RuntimePodStatus) => void; reject: (e: Error) => void }[] =
    [];
  inFlight = 0;
  maxInFlight = 0;

  async getPods(): Promise<RuntimePod[]> {
    return this.pods;
  }

  getPodStatus(o: { uid: string }): Promise<RuntimePodStatus> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise<RuntimePodStatus>((resolve, reject) => {
      this.pending.push({
        uid: o.uid,
        resolve: (s) => {
          this.inFlight--;
          resolve(s);
        },
        reject: (e) => {
          this.inFlight--;
          reject(e);
        },
      });
    });
  }

  /** Answers the open reads (latest first, so completion order differs from issue order). */
  answerAll(fail: ReadonlySet<string> = new Set()): number {
    const open = this.pending.splice(0).reverse();
    for (const p of open) {
      if (fail.has(p.uid)) p.reject(new Error(`read of ${p.uid} failed`));
      else p.resolve(status(p.uid, { containers: [[`c-${p.uid}`, 'running']] }));
    }
    return open.length;
  }
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

async function relistAnswering(runtime: GatedRuntime, pleg: GenericPLEG, fail?: ReadonlySet<string>) {
  const done = pleg.relist();
  let finished = false;
  void done.then(() => {
    finished = true;
  });
  const batches: number[] = [];
  while (!finished) {
    await flush();
    const n = runtime.answerAll(fail);
    if (n > 0) batches.push(n);
  }
  await done;
  return batches;
}

describe('GenericPLEG relist reads changed pods concurrently', () => {
  const uids = Array.from({ length: 10 }, (_, i) => `p${i}`);

  it('reads at most relistConcurrency pods at once, every changed pod once', async () => {
    const runtime = new GatedRuntime();
    runtime.pods = uids.map((u) => pod(u, [container(`c-${u}`, 'running')]));
    const pleg = new GenericPLEG({ runtime, clock: new FakeClock(), relistConcurrency: 3 });
    const batches = await relistAnswering(runtime, pleg);
    expect(runtime.maxInFlight).toBe(3);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(10);
    expect(batches[0]).toBe(3);
  });

  it('with relistConcurrency 1 reads one pod after another, as upstream', async () => {
    const runtime = new GatedRuntime();
    runtime.pods = uids.map((u) => pod(u, [container(`c-${u}`, 'running')]));
    const pleg = new GenericPLEG({ runtime, clock: new FakeClock(), relistConcurrency: 1 });
    const batches = await relistAnswering(runtime, pleg);
    expect(runtime.maxInFlight).toBe(1);
    expect(batches).toEqual(Array.from({ length: 10 }, () => 1));
  });

  it("sends a pod's events only once its read is cached, and moves the global timestamp only after every read", async () => {
    const runtime = new GatedRuntime();
    runtime.pods = uids.map((u) => pod(u, [container(`c-${u}`, 'running')]));
    const clock = new FakeClock();
    const pleg = new GenericPLEG({ runtime, clock, channelCapacity: 0, relistConcurrency: 4 });
    const seen: { event: PodLifecycleEvent; cached: boolean; timestamp: number | undefined }[] = [];
    pleg.watch((event) => {
      const entry = pleg.cache.get(event.id);
      seen.push({
        event,
        cached: entry.status?.containerStatuses[0]?.id.id === event.data,
        timestamp: pleg.cache.timestamp,
      });
    });
    await relistAnswering(runtime, pleg);
    expect(seen.map((s) => s.event.id).sort()).toEqual([...uids].sort());
    expect(seen.every((s) => s.cached && s.timestamp === undefined)).toBe(true);
    expect(seen.every((s) => s.event.type === 'ContainerStarted')).toBe(true);
    expect(pleg.cache.timestamp).toBe(clock.now());
  });

  it('a pod whose read failed sends nothing and is read again on the next relist', async () => {
    const runtime = new GatedRuntime();
    runtime.pods = uids.map((u) => pod(u, [container(`c-${u}`, 'running')]));
    const pleg = new GenericPLEG({
      runtime,
      clock: new FakeClock(),
      channelCapacity: 0,
      relistConcurrency: 4,
    });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    await relistAnswering(runtime, pleg, new Set(['p3', 'p7']));
    expect(events.map((e) => e.id).sort()).toEqual(uids.filter((u) => u !== 'p3' && u !== 'p7').sort());
    expect(pleg.cache.get('p3').error?.message).toBe('read of p3 failed');

    events.length = 0;
    const batches = await relistAnswering(runtime, pleg);
    // Only the two failed pods are read again, and their events come now.
    expect(batches).toEqual([2]);
    expect(events.map((e) => e.id).sort()).toEqual(['p3', 'p7']);
    expect(pleg.cache.get('p3').error).toBeUndefined();
  });

  it('stopping mid-relist leaves the cache timestamp unset', async () => {
    const runtime = new GatedRuntime();
    runtime.pods = uids.map((u) => pod(u, [container(`c-${u}`, 'running')]));
    const pleg = new GenericPLEG({ runtime, clock: new FakeClock(), relistConcurrency: 4 });
    pleg.start();
    await flush();
    expect(runtime.pending.length).toBe(4);
    pleg.stop();
    runtime.answerAll();
    await flush();
    expect(runtime.pending.length).toBe(0);
    expect(pleg.cache.timestamp).toBeUndefined();
  });
});
