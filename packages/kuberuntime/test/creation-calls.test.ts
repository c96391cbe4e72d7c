import type { Pod } from '@kubelet-kit/core';
import type { ImageServiceClient, RuntimeServiceClient } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, harness, makePod } from './harness.js';

const creationCalls = new Set(['runPodSandbox', 'createContainer', 'startContainer']);

/** The runtime service, counting how many creation calls are in flight at once (and in what order). */
function counting(rs: RuntimeServiceClient) {
  const seen = { inFlight: 0, max: 0, calls: [] as string[] };
  const service = new Proxy(rs, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (typeof key !== 'string' || !creationCalls.has(key)) return value.bind(target);
      return async (...args: unknown[]) => {
        seen.inFlight++;
        seen.max = Math.max(seen.max, seen.inFlight);
        seen.calls.push(key);
        try {
          return await value.apply(target, args);
        } finally {
          seen.inFlight--;
        }
      };
    },
  });
  return { service, seen };
}

/** The image service, with pulls that wait until `release` is called. */
function heldPulls(is: ImageServiceClient) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const service = new Proxy(is, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (key !== 'pullImage') return value.bind(target);
      return async (...args: unknown[]) => {
        await released;
        return value.apply(target, args);
      };
    },
  });
  return { service, release };
}

// IfNotPresent: the image is there, so these pods pull nothing (pulls are serial).
const busyboxPod = (): Pod =>
  makePod({
    containers: [
      { name: 'a', image: 'busybox', imagePullPolicy: 'IfNotPresent' },
      { name: 'b', image: 'busybox', imagePullPolicy: 'IfNotPresent' },
    ],
  });

describe('maxConcurrentCreationCalls', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness({ registry: ['registry.example/slow:1'] });
  });
  afterEach(() => h.close());

  const syncAll = (manager: ReturnType<Harness['newManager']>, pods: Pod[]) =>
    Promise.all(
      pods.map(async (pod) =>
        manager.syncPod({ pod, podStatus: await h.status(pod), pullSecrets: [], backOff: h.backOff }),
      ),
    );

  it('keeps sandbox and container creation calls within the bound, across pods', async () => {
    const { service, seen } = counting(h.rs);
    const manager = h.newManager({ runtimeService: service, maxConcurrentCreationCalls: 2 });
    const pods = Array.from({ length: 6 }, busyboxPod);
    const results = await syncAll(manager, pods);
    for (const r of results) expect(r.syncResults.every((s) => !s.error)).toBe(true);
    expect(seen.calls.length).toBe(6 * 5); // a sandbox, and a create and a start per container
    expect(seen.max).toBe(2);
    for (const pod of pods) {
      const status = await h.status(pod);
      expect(status.containerStatuses.map((c) => c.state).sort()).toEqual(['running', 'running']);
    }
  });

  it('without a bound, the same syncs run their creation calls side by side', async () => {
    const { service, seen } = counting(h.rs);
    const manager = h.newManager({ runtimeService: service });
    await syncAll(manager, Array.from({ length: 6 }, busyboxPod));
    expect(seen.max).toBeGreaterThan(2);
  });

  it('an image pull holds no place: other pods are made while it waits', async () => {
    const pulls = heldPulls(h.is);
    const manager = h.newManager({ imageService: pulls.service, maxConcurrentCreationCalls: 1 });
    const slow = makePod({ containers: [{ name: 'slow', image: 'registry.example/slow:1' }] });
    const fast = busyboxPod();
    const slowSync = manager.syncPod({
      pod: slow,
      podStatus: await h.status(slow),
      pullSecrets: [],
      backOff: h.backOff,
    });
    const fastResult = await manager.syncPod({
      pod: fast,
      podStatus: await h.status(fast),
      pullSecrets: [],
      backOff: h.backOff,
    });
    expect(fastResult.syncResults.every((s) => !s.error)).toBe(true);
    expect((await h.status(fast)).containerStatuses.map((c) => c.state)).toEqual(['running', 'running']);
    // The slow pod has its sandbox, and no container until its pull ends.
    expect((await h.status(slow)).containerStatuses).toEqual([]);
    pulls.release();
    const slowResult = await slowSync;
    expect(slowResult.syncResults.every((s) => !s.error)).toBe(true);
    expect((await h.status(slow)).containerStatuses.map((c) => c.state)).toEqual(['running']);
  });

  it('rejects a bound that is not a positive integer', () => {
    expect(() => h.newManager({ maxConcurrentCreationCalls: 0 })).toThrow(/maxConcurrentCreationCalls/);
    expect(() => h.newManager({ maxConcurrentCreationCalls: 1.5 })).toThrow(/positive integer/);
  });
});
