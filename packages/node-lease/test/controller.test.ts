import { LeaseApiError } from '@kubelet-kit/core';
import { advanceUntil, FakeClock } from '@kubelet-kit/core/testing';
import { InMemoryLeaseApi } from '@kubelet-kit/node-lease/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { formatMicroTime, type NodeLeaseController, newNodeLeaseController } from '../src/index.js';

const NODE = 'node-a';
const NS = 'kube-node-lease';

let controller: NodeLeaseController | undefined;
afterEach(async () => {
  await controller?.stop();
  controller = undefined;
});

function setup(
  options: { nodeUid?: boolean; leaseDurationSeconds?: number; onRepeatedHeartbeatFailure?: () => void } = {},
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 123));
  const api = new InMemoryLeaseApi();
  controller = newNodeLeaseController({
    api,
    nodeName: NODE,
    clock,
    random: () => 0,
    ...(options.nodeUid ? { nodeUidGetter: api } : {}),
    ...(options.leaseDurationSeconds ? { leaseDurationSeconds: options.leaseDurationSeconds } : {}),
    ...(options.onRepeatedHeartbeatFailure
      ? { onRepeatedHeartbeatFailure: options.onRepeatedHeartbeatFailure }
      : {}),
  });
  return { clock, api, controller };
}

const renewTime = (api: InMemoryLeaseApi) => api.lease(NS, NODE)?.spec?.renewTime;

describe('node lease controller', () => {
  it('formats renewTime as a MicroTime', () => {
    expect(formatMicroTime(Date.UTC(2026, 0, 1, 0, 0, 0, 123))).toBe('2026-01-01T00:00:00.123000Z');
  });

  it('renews every quarter of the lease duration, 10 s by default', () => {
    expect(setup().controller.renewIntervalMs).toBe(10_000);
    expect(setup({ leaseDurationSeconds: 60 }).controller.renewIntervalMs).toBe(15_000);
  });

  it('rejects a lease duration that is not a positive integer', () => {
    expect(() =>
      newNodeLeaseController({
        api: new InMemoryLeaseApi(),
        nodeName: NODE,
        clock: new FakeClock(),
        leaseDurationSeconds: 0,
      }),
    ).toThrow(/leaseDurationSeconds/);
  });

  it('creates the lease, then renews it by update from the cached copy', async () => {
    const { clock, api, controller } = setup();
    controller.start();
    const created = await advanceUntil(clock, () => api.lease(NS, NODE), { step: 0 });
    expect(created.spec).toEqual({
      holderIdentity: NODE,
      leaseDurationSeconds: 40,
      renewTime: '2026-01-01T00:00:00.123000Z',
    });
    // Create, not create-then-update.
    expect(api.calls.map((c) => c.method)).toEqual(['get', 'create']);
    expect(api.callsOf('update')).toHaveLength(0);

    await clock.tick(9_999);
    expect(api.callsOf('update')).toHaveLength(0);
    await clock.tick(1);
    expect(api.callsOf('update')).toHaveLength(1);
    expect(renewTime(api)).toBe('2026-01-01T00:00:10.123000Z');
    await clock.tick(10_000);
    await clock.tick(10_000);
    expect(api.callsOf('update')).toHaveLength(3);
    // The cached lease is reused: no GET after the first.
    expect(api.callsOf('get')).toHaveLength(1);
    expect(renewTime(api)).toBe('2026-01-01T00:00:30.123000Z');
  });

  it('renews an existing lease: get, then update', async () => {
    const { clock, api, controller } = setup();
    api.put({
      metadata: { name: NODE, namespace: NS },
      spec: { holderIdentity: NODE, leaseDurationSeconds: 40, renewTime: '2025-12-31T23:00:00.000000Z' },
    });
    controller.start();
    await advanceUntil(clock, () => api.callsOf('update').length === 1, { step: 0 });
    expect(api.calls.map((c) => c.method)).toEqual(['get', 'update']);
    expect(renewTime(api)).toBe('2026-01-01T00:00:00.123000Z');
  });

  it('on a conflict reads the lease again and retries the update', async () => {
    const { clock, api, controller } = setup();
    controller.start();
    await advanceUntil(clock, () => api.lease(NS, NODE), { step: 0 });
    // Another writer changes the lease: our cached resourceVersion is stale.
    const other = api.lease(NS, NODE)!;
    api.put({ ...other, metadata: { ...other.metadata, labels: { touched: 'yes' } } });
    await clock.tick(10_000);
    const methods = api.calls.map((c) => `${c.method}${c.error ? `:${c.error}` : ''}`);
    expect(methods.slice(2)).toEqual(['update:Conflict', 'get', 'update']);
    expect(api.lease(NS, NODE)?.metadata?.labels).toEqual({ touched: 'yes' });
    expect(renewTime(api)).toBe('2026-01-01T00:00:10.123000Z');
  });

  it('gives up an update after 5 attempts and falls back to get on the next tick', async () => {
    let repeated = 0;
    const { clock, api, controller } = setup({ onRepeatedHeartbeatFailure: () => repeated++ });
    controller.start();
    await advanceUntil(clock, () => api.lease(NS, NODE), { step: 0 });
    api.failNext('update', 'etcdserver: request timed out', 10);
    await clock.tick(10_000);
    // 5 from the cached lease, then get and 5 more.
    expect(api.callsOf('update')).toHaveLength(10);
    expect(api.callsOf('get')).toHaveLength(2);
    expect(repeated).toBe(8);
    await clock.tick(10_000);
    expect(api.callsOf('update').at(-1)?.error).toBeUndefined();
    expect(renewTime(api)).toBe('2026-01-01T00:00:20.123000Z');
  });

  it('backs off 200 ms doubling to 7 s while the API server is down, and recovers', async () => {
    const { clock, api, controller } = setup();
    api.down = true;
    controller.start();
    const times: number[] = [];
    const start = clock.now();
    for (let i = 0; i < 9; i++) {
      await advanceUntil(clock, () => api.callsOf('get').length > i, { step: 100 });
      times.push(clock.now() - start);
    }
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps).toEqual([200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
    api.down = false;
    await advanceUntil(clock, () => api.lease(NS, NODE), { step: 100, limit: 100 });
    expect(api.calls.at(-1)).toMatchObject({ method: 'create' });
    // Renewals resume on the period.
    await clock.tick(10_000);
    expect(api.callsOf('update')).toHaveLength(1);
  });

  it('keeps renewing from the stored lease after an outage between renewals', async () => {
    const { clock, api, controller } = setup();
    controller.start();
    await advanceUntil(clock, () => api.lease(NS, NODE), { step: 0 });
    api.down = true;
    await clock.tick(10_000);
    // 5 failed updates, then the ensure loop backs off.
    expect(api.callsOf('update').filter((c) => c.error)).toHaveLength(5);
    await clock.tick(30_000);
    api.down = false;
    await advanceUntil(clock, () => api.callsOf('update').some((c) => !c.error), { step: 100, limit: 200 });
    expect(Date.parse(renewTime(api)!)).toBeGreaterThan(Date.UTC(2026, 0, 1, 0, 0, 40));
  });

  it('creates the lease only once the Node exists, owned by it', async () => {
    const { clock, api, controller } = setup({ nodeUid: true });
    controller.start();
    await clock.tick(0);
    await clock.tick(10_000);
    expect(api.lease(NS, NODE)).toBeUndefined();
    expect(api.callsOf('create')).toHaveLength(0);
    api.setNode(NODE, 'node-uid-1');
    await clock.tick(10_000);
    expect(api.lease(NS, NODE)?.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid-1' },
    ]);
    // Once owned, the Node is not read again.
    const reads = api.callsOf('getNodeUid').length;
    await clock.tick(10_000);
    expect(api.callsOf('getNodeUid')).toHaveLength(reads);
    expect(api.callsOf('update')).toHaveLength(1);
  });

  it('sets the owner on an existing lease without one once the Node exists', async () => {
    const { clock, api, controller } = setup({ nodeUid: true });
    api.put({
      metadata: { name: NODE, namespace: NS },
      spec: { holderIdentity: NODE, leaseDurationSeconds: 40 },
    });
    controller.start();
    await clock.tick(0);
    // Renewed without an owner: the missing Node does not hold back the heartbeat.
    expect(api.callsOf('update')).toHaveLength(1);
    expect(api.lease(NS, NODE)?.metadata?.ownerReferences).toBeUndefined();
    api.setNode(NODE, 'node-uid-2');
    await clock.tick(10_000);
    expect(api.lease(NS, NODE)?.metadata?.ownerReferences?.[0]?.uid).toBe('node-uid-2');
  });

  it('stops renewing after stop()', async () => {
    const { clock, api, controller } = setup();
    controller.start();
    await advanceUntil(clock, () => api.lease(NS, NODE), { step: 0 });
    await controller.stop();
    await clock.tick(60_000);
    expect(api.callsOf('update')).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops while backing off', async () => {
    const { clock, api, controller } = setup();
    api.failNext('get', new LeaseApiError('Other', 'boom'), 100);
    controller.start();
    await clock.tick(1_000);
    await controller.stop();
    const n = api.calls.length;
    await clock.tick(60_000);
    expect(api.calls).toHaveLength(n);
  });
});
