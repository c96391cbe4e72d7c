import type { Runtime, RuntimeCondition } from '@kubelet-kit/core';
import { FakeClock, InMemoryLogger } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics.js';
import { createCriServices, createPleg, RuntimeState } from '../src/runtime-state.js';

const ready = (type: string, status: boolean, reason = '', message = ''): RuntimeCondition => ({
  type,
  status,
  reason,
  message,
});

function state(answer: () => readonly RuntimeCondition[]) {
  const clock = new FakeClock();
  const logger = new InMemoryLogger();
  let calls = 0;
  const runtime = {
    status: async () => {
      calls++;
      return answer();
    },
  };
  return { clock, logger, s: new RuntimeState({ runtime, clock, logger }), calls: () => calls };
}

describe('RuntimeState (upstream runtimeState)', () => {
  it('counts the runtime as down until it has answered Status ready, and for 30 s after', async () => {
    const { clock, s } = state(() => [ready('RuntimeReady', true), ready('NetworkReady', true)]);
    expect(s.runtimeErrors()).toBe('container runtime is down');
    await s.check();
    expect(s.runtimeErrors()).toBeUndefined();
    clock.setTime(clock.now() + 30_000);
    expect(s.runtimeErrors()).toBeUndefined();
    clock.setTime(clock.now() + 1);
    expect(s.runtimeErrors()).toBe('container runtime is down');
  });

  it("gives the runtime's reason while RuntimeReady is false, with the outage once it lasts", async () => {
    let conditions = [ready('RuntimeReady', true)];
    const { clock, s } = state(() => conditions);
    await s.check();
    conditions = [ready('RuntimeReady', false, 'Starting', 'warming up')];
    await s.check();
    expect(s.runtimeErrors()).toBe(
      'container runtime not ready: RuntimeReady=false reason:Starting message:warming up',
    );
    clock.setTime(clock.now() + 30_001);
    expect(s.runtimeErrors()).toBe(
      '[container runtime is down, container runtime not ready: RuntimeReady=false reason:Starting message:warming up]',
    );
  });

  it('follows NetworkReady, ready while the runtime does not say', async () => {
    let conditions = [ready('RuntimeReady', true), ready('NetworkReady', false)];
    const { s } = state(() => conditions);
    expect(s.networkReady()).toBe(true);
    await s.check();
    expect(s.networkReady()).toBe(false);
    conditions = [ready('RuntimeReady', true)];
    await s.check();
    expect(s.networkReady()).toBe(true);
  });

  it('logs a failed Status call and keeps what it knew', async () => {
    let fail = false;
    const { logger, s } = state(() => {
      if (fail) throw new Error('unavailable');
      return [ready('RuntimeReady', true), ready('NetworkReady', false)];
    });
    await s.check();
    fail = true;
    await s.check();
    expect(s.networkReady()).toBe(false);
    expect(s.runtimeErrors()).toBeUndefined();
    expect(logger.records.map((r) => [r.level, r.message])).toEqual([
      ['warn', 'runtime status check failed'],
    ]);
  });

  it('checks at start, then every 5 s until stopped', async () => {
    const { clock, s, calls } = state(() => [ready('RuntimeReady', true)]);
    await s.start();
    expect(calls()).toBe(1);
    await clock.tick(5000);
    await clock.tick(5000);
    expect(calls()).toBe(3);
    s.stop();
    await clock.tick(20_000);
    expect(calls()).toBe(3);
  });
});

describe('createCriServices', () => {
  it("talks to the runtime at the endpoint, each call counted in the kubelet's metrics", async () => {
    const server = await InMemoryCriServer.start({});
    const metrics = new KubeletMetrics();
    const cri = createCriServices({ endpoint: server.endpoint, metrics });
    try {
      expect((await cri.runtimeService.version({})).runtimeName).toBeTruthy();
      await cri.imageService.listImages({});
      const totals = (await metrics.registry.getMetricsAsJSON()).find(
        (m) => m.name === 'kubelet_runtime_operations_total',
      );
      expect(totals?.values.map((v) => v.labels.operation_type).sort()).toEqual(['list_images', 'version']);
    } finally {
      cri.close();
      await server.close();
    }
  });
});

describe('createPleg', () => {
  it('fills the pod cache from the runtime and times its relists', async () => {
    const metrics = new KubeletMetrics();
    const clock = new FakeClock();
    const status = {
      id: 'u1',
      name: 'p',
      namespace: 'default',
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
      timestamp: 0,
    };
    const runtime = {
      getPods: async () => [
        {
          id: 'u1',
          name: 'p',
          namespace: 'default',
          createdAt: 0,
          containers: [
            { id: { type: 'containerd', id: 'c1' }, name: 'main', image: 'busybox', state: 'running' },
          ],
          sandboxes: [],
        },
      ],
      getPodStatus: async () => status,
    } as unknown as Pick<Runtime, 'getPods' | 'getPodStatus'>;
    const { pleg, podCache } = createPleg({ runtime, clock, logger: new InMemoryLogger(), metrics });
    await pleg.relist();
    expect(podCache.get('u1').status).toBe(status);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^kubelet_pleg_relist_duration_seconds_count 1$/m);
  });
});
