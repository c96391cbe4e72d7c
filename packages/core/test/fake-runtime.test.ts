import { describe, expect, it } from 'vitest';
import { Backoff, type RuntimeContainer, type RuntimePod, type RuntimePodStatus } from '../src/index.js';
import { FakeClock, FakeRuntime } from '../src/testing/index.js';

const c = (id: string, state: RuntimeContainer['state']): RuntimeContainer => ({
  id: { type: 'fake', id },
  name: id,
  image: 'img',
  imageId: 'sha',
  hash: '1',
  state,
});
const pod = (id: string, containers: RuntimeContainer[], sandboxes: RuntimeContainer[] = []): RuntimePod => ({
  id,
  name: `name-${id}`,
  namespace: 'ns',
  createdAt: 7,
  containers,
  sandboxes,
});
const statusOf = (id: string): RuntimePodStatus => ({
  id,
  name: 'configured',
  namespace: 'ns',
  ips: ['10.0.0.1'],
  containerStatuses: [],
  sandboxStatuses: [],
  timestamp: 1,
});
const ref = (uid: string) => ({ uid, name: `name-${uid}`, namespace: 'ns' });

describe('FakeRuntime', () => {
  it('lists every pod with all, only running containers and sandboxes without', async () => {
    const runtime = new FakeRuntime();
    runtime.pods = [
      pod('a', [c('c1', 'running'), c('c2', 'exited')], [c('s1', 'running'), c('s0', 'exited')]),
      pod('dead', [c('c3', 'exited')], [c('s2', 'exited')]),
    ];
    expect(await runtime.getPods(true)).toEqual(runtime.pods);
    expect(await runtime.getPods(false)).toEqual([pod('a', [c('c1', 'running')], [c('s1', 'running')])]);
    expect(runtime.listCalls).toBe(2);
    expect(runtime.calls).toEqual(['getPods', 'getPods']);
  });

  it('serves configured statuses and errors by UID, recording each UID asked', async () => {
    const runtime = new FakeRuntime();
    runtime.statuses.set('a', statusOf('a'));
    runtime.statuses.set('b', new Error('runtime down'));
    await expect(runtime.getPodStatus(ref('a'))).resolves.toEqual(statusOf('a'));
    await expect(runtime.getPodStatus(ref('b'))).rejects.toThrow('runtime down');
    expect(runtime.statusCalls).toEqual(['a', 'b']);
  });

  it('makes a status from the pod list for a pod without a configured one', async () => {
    const runtime = new FakeRuntime();
    runtime.pods = [pod('a', [c('c1', 'running')], [c('s1', 'running'), c('s0', 'exited')])];
    const status = await runtime.getPodStatus(ref('a'));
    expect(status).toMatchObject({ id: 'a', name: 'name-a', namespace: 'ns', ips: [] });
    expect(status.containerStatuses).toEqual([
      expect.objectContaining({ id: { type: 'fake', id: 'c1' }, name: 'c1', state: 'running', hash: '1' }),
    ]);
    expect(status.sandboxStatuses.map((s) => [s.id, s.state, s.uid])).toEqual([
      ['s1', 'ready', 'a'],
      ['s0', 'notready', 'a'],
    ]);
    // An unknown pod is empty, named as asked.
    expect(await runtime.getPodStatus({ uid: 'x', name: 'n', namespace: 'm' })).toMatchObject({
      id: 'x',
      name: 'n',
      namespace: 'm',
      containerStatuses: [],
      sandboxStatuses: [],
    });
  });

  it('fails a listing with listError and holds it on the gate', async () => {
    const runtime = new FakeRuntime();
    runtime.listError = new Error('down');
    await expect(runtime.getPods(true)).rejects.toThrow('down');
    runtime.listError = undefined;
    let open!: () => void;
    runtime.gate = new Promise((resolve) => {
      open = resolve;
    });
    let listed = false;
    const listing = runtime.getPods(true).then(() => {
      listed = true;
    });
    await Promise.resolve();
    expect(listed).toBe(false);
    open();
    await listing;
    expect(listed).toBe(true);
  });

  it('rejects with the signal’s reason once aborted', async () => {
    const runtime = new FakeRuntime();
    const signal = AbortSignal.abort(new Error('stop'));
    await expect(runtime.getPods(true, signal)).rejects.toThrow('stop');
    await expect(runtime.getPodStatus({ ...ref('a'), signal })).rejects.toThrow('stop');
  });

  it('records syncs, kills and garbage collections and answers with the configured results', async () => {
    const runtime = new FakeRuntime({ runtimeType: 'containerd' });
    const failed = {
      syncResults: [
        { action: 'StartContainer' as const, target: 'app', error: 'CrashLoopBackOff', message: '' },
      ],
    };
    runtime.syncResult = failed;
    const podSpec = { metadata: { uid: 'a' } };
    const sync = {
      pod: podSpec,
      podStatus: statusOf('a'),
      pullSecrets: [],
      backOff: new Backoff({ clock: new FakeClock(), initialMs: 10, maxMs: 300 }),
    };
    expect(await runtime.syncPod(sync)).toBe(failed);
    const runningPod = pod('a', [c('c1', 'running')]);
    expect(await runtime.killPod({ runningPod, gracePeriodOverride: 0 })).toEqual({ syncResults: [] });
    const policy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };
    await runtime.garbageCollect({ policy, allSourcesReady: true, evictNonDeletedPods: false });
    runtime.gcError = new Error('gc failed');
    await expect(
      runtime.garbageCollect({ policy, allSourcesReady: false, evictNonDeletedPods: false }),
    ).rejects.toThrow('gc failed');
    expect(runtime.type()).toBe('containerd');
    expect(runtime.calls).toEqual(['syncPod', 'killPod', 'garbageCollect', 'garbageCollect']);
    expect(runtime.syncPodCalls).toEqual([sync]);
    expect(runtime.killPodCalls.map((k) => k.runningPod.id)).toEqual(['a']);
    expect(runtime.gcCalls.map((g) => g.allSourcesReady)).toEqual([true, false]);
  });

  it('reports its version and conditions, both configurable', async () => {
    const runtime = new FakeRuntime();
    expect((await runtime.version()).runtimeName).toBe('fake');
    expect((await runtime.status()).map((s) => [s.type, s.status])).toEqual([
      ['RuntimeReady', true],
      ['NetworkReady', true],
    ]);
    runtime.conditions = [
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: '' },
    ];
    expect(await runtime.status()).toEqual(runtime.conditions);
  });
});
