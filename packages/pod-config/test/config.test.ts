// Mirrors upstream pkg/kubelet/config/config_test.go, plus the edges of the merge it implies.
import {
  ConfigFirstSeenAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  type Pod,
  type PodOperation,
  type PodUpdate,
} from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import {
  PodConfig,
  type PodConfigNotificationMode,
  type PodSource,
  type PodSourceSink,
} from '../src/index.js';

const TestSource = 'test';

function createValidPod(name: string, namespace: string): Pod {
  return {
    metadata: { uid: name + namespace, name, namespace },
    spec: {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      containers: [
        { name: 'ctr', image: 'image', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' },
      ],
    },
  };
}

function update(op: PodOperation, source: string, ...pods: Pod[]): PodUpdate {
  return { op, source, pods };
}

function tester(mode: PodConfigNotificationMode = 'incremental') {
  const recorder = new InMemoryEventRecorder();
  const clock = new FakeClock();
  const config = new PodConfig({ mode, recorder, clock });
  const channel = config.channel(TestSource);
  const seen: PodUpdate[] = [];
  config.on('update', (u) => seen.push(u));
  const send = (u: PodUpdate) => channel(u);
  return { config, channel, send, seen, recorder, clock };
}

const local = new Set([ConfigSourceAnnotationKey, ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey]);
function comparable(pod: Pod) {
  const annotations = Object.fromEntries(
    Object.entries(pod.metadata?.annotations ?? {}).filter(([k]) => !local.has(k)),
  );
  return {
    uid: pod.metadata?.uid,
    name: pod.metadata?.name,
    namespace: pod.metadata?.namespace,
    labels: pod.metadata?.labels,
    deletionTimestamp: pod.metadata?.deletionTimestamp,
    annotations,
    spec: pod.spec,
    status: pod.status,
  };
}

/** Asserts the updates emitted since the last call, exactly and in order (upstream `expectPodUpdate`). */
function expectPodUpdate(seen: PodUpdate[], ...expected: PodUpdate[]): void {
  const got = seen.splice(0);
  const norm = (u: PodUpdate) => ({
    op: u.op,
    source: u.source,
    pods: u.pods
      .map(comparable)
      .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
  });
  expect(got.map(norm)).toEqual(expected.map(norm));
}

describe('PodConfig merge (config_test.go)', () => {
  it('TestNewPodAdded: ADD is emitted as ADD, Sync gives a SET from *', () => {
    const { config, send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'new')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', 'new')));
  });

  it('TestNewPodAddedInvalidNamespace: an empty namespace passes through unchanged', () => {
    const { config, send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', '')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', '')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', '')));
  });

  it('TestNewPodAddedDefaultNamespace', () => {
    const { config, send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'default')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'default')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', 'default')));
  });

  it('TestNewPodAddedDifferentNamespaces: the same name in two namespaces is two pods', () => {
    const { config, send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'default')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'default')));
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'new')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', 'default'), createValidPod('foo', 'new')));
  });

  it('TestInvalidPodFiltered: a second identical ADD emits nothing', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'new')));
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen);
  });

  it('TestNewPodAddedSnapshotAndUpdates: ADD becomes SET, a spec change becomes UPDATE', () => {
    const { config, send, seen } = tester('snapshotAndUpdates');
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('SET', TestSource, createValidPod('foo', 'new')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', 'new')));
    const pod = createValidPod('foo', 'new');
    pod.spec!.containers = [
      { name: 'bar', image: 'test', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' },
    ];
    send(update('ADD', TestSource, pod));
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
  });

  it('TestNewPodAddedSnapshot: every change becomes a SET', () => {
    const { config, send, seen } = tester('snapshot');
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('SET', TestSource, createValidPod('foo', 'new')));
    config.sync();
    expectPodUpdate(seen, update('SET', '*', createValidPod('foo', 'new')));
    const pod = createValidPod('foo', 'new');
    pod.spec!.containers = [
      { name: 'bar', image: 'test', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' },
    ];
    send(update('ADD', TestSource, pod));
    expectPodUpdate(seen, update('SET', TestSource, pod));
  });

  it('TestNewPodAddedUpdatedRemoved: ADD of a known UID becomes UPDATE; REMOVE carries the stored pod', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'new')));
    const pod = createValidPod('foo', 'new');
    pod.spec!.containers = [
      { name: 'bar', image: 'test', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' },
    ];
    send(update('ADD', TestSource, pod));
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
    send(update('REMOVE', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('REMOVE', TestSource, pod));
  });

  it('TestNewPodAddedDelete: a deletion timestamp makes a DELETE', () => {
    const { send, seen } = tester();
    const added = createValidPod('foo', 'new');
    send(update('ADD', TestSource, added));
    expectPodUpdate(seen, update('ADD', TestSource, added));
    const deleted = createValidPod('foo', 'new');
    (deleted.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:00Z';
    send(update('DELETE', TestSource, deleted));
    expectPodUpdate(seen, update('DELETE', TestSource, deleted));
  });

  it('TestNewPodAddedUpdatedSet: SET emits REMOVE, then ADD, then UPDATE', () => {
    const { send, seen } = tester();
    send(
      update(
        'ADD',
        TestSource,
        createValidPod('foo', 'new'),
        createValidPod('foo2', 'new'),
        createValidPod('foo3', 'new'),
      ),
    );
    expectPodUpdate(
      seen,
      update(
        'ADD',
        TestSource,
        createValidPod('foo', 'new'),
        createValidPod('foo2', 'new'),
        createValidPod('foo3', 'new'),
      ),
    );
    const pod = createValidPod('foo2', 'new');
    pod.spec!.containers = [
      { name: 'bar', image: 'test', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' },
    ];
    send(update('SET', TestSource, pod, createValidPod('foo3', 'new'), createValidPod('foo4', 'new')));
    expectPodUpdate(
      seen,
      update('REMOVE', TestSource, createValidPod('foo', 'new')),
      update('ADD', TestSource, createValidPod('foo4', 'new')),
      update('UPDATE', TestSource, pod),
    );
  });

  for (const op of ['ADD', 'SET'] as const) {
    it(`TestNewPodAddedSetReconciled (${op}): same status nothing, status only RECONCILE, status and spec UPDATE`, () => {
      let n = 0;
      const newTestPods = (touchStatus: boolean, touchSpec: boolean) => {
        const pods = [
          createValidPod('changeable-pod-0', 'new'),
          createValidPod('constant-pod-1', 'new'),
          createValidPod('constant-pod-2', 'new'),
        ];
        const first = pods[0]!;
        n++;
        if (touchStatus) (first as { status?: object }).status = { message: `m${n}` };
        if (touchSpec) first.spec!.containers[0]!.name = `c${n}`;
        return { pods, first };
      };
      const { send, seen } = tester();
      const initial = newTestPods(false, false);
      send(update('SET', TestSource, ...initial.pods));
      expectPodUpdate(seen, update('ADD', TestSource, ...initial.pods));
      send(update(op, TestSource, ...newTestPods(false, false).pods));
      expectPodUpdate(seen);
      const statusOnly = newTestPods(true, false);
      send(update(op, TestSource, ...statusOnly.pods));
      expectPodUpdate(seen, update('RECONCILE', TestSource, statusOnly.first));
      const both = newTestPods(true, true);
      send(update(op, TestSource, ...both.pods));
      expectPodUpdate(seen, update('UPDATE', TestSource, both.first));
    });
  }

  for (const [mode, op] of [
    ['incremental', 'ADD'],
    ['snapshot', 'SET'],
    ['snapshotAndUpdates', 'SET'],
  ] as const) {
    it(`TestInitialEmptySet (${mode}): the first empty SET emits an empty ${op}, later ones nothing`, () => {
      const { send, seen } = tester(mode);
      send(update('SET', TestSource));
      expectPodUpdate(seen, update(op, TestSource));
      send(update('SET', TestSource));
      send(update('ADD', TestSource, createValidPod('foo', 'new')));
      expectPodUpdate(seen, update(op, TestSource, createValidPod('foo', 'new')));
    });
  }

  it('TestPodUpdateAnnotations: adding, changing or removing a non-local annotation is an UPDATE', () => {
    const { send, seen } = tester();
    const pod = createValidPod('foo2', 'new');
    pod.metadata!.annotations = { 'kubernetes.io/blah': 'blah' };
    send(
      update(
        'SET',
        TestSource,
        createValidPod('foo1', 'new'),
        structuredClone(pod),
        createValidPod('foo3', 'new'),
      ),
    );
    expectPodUpdate(
      seen,
      update('ADD', TestSource, createValidPod('foo1', 'new'), pod, createValidPod('foo3', 'new')),
    );
    pod.metadata!.annotations['kubernetes.io/blah'] = 'superblah';
    send(
      update(
        'SET',
        TestSource,
        createValidPod('foo1', 'new'),
        structuredClone(pod),
        createValidPod('foo3', 'new'),
      ),
    );
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
    pod.metadata!.annotations['kubernetes.io/otherblah'] = 'doh';
    send(
      update(
        'SET',
        TestSource,
        createValidPod('foo1', 'new'),
        structuredClone(pod),
        createValidPod('foo3', 'new'),
      ),
    );
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
    delete pod.metadata!.annotations['kubernetes.io/blah'];
    send(
      update(
        'SET',
        TestSource,
        createValidPod('foo1', 'new'),
        structuredClone(pod),
        createValidPod('foo3', 'new'),
      ),
    );
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
  });

  it('TestPodUpdateLabels: a label change is an UPDATE', () => {
    const { send, seen } = tester();
    const pod = createValidPod('foo2', 'new');
    pod.metadata!.labels = { key: 'value' };
    send(update('SET', TestSource, structuredClone(pod)));
    expectPodUpdate(seen, update('ADD', TestSource, pod));
    pod.metadata!.labels.key = 'newValue';
    send(update('SET', TestSource, structuredClone(pod)));
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
  });

  it('TestPodConfigRace: registering many sources while asking seenAllSources', () => {
    const config = new PodConfig();
    for (let i = 0; i < 100; i++) {
      config.channel(String(i));
      expect(config.seenAllSources(new Set([TestSource]))).toBe(false);
    }
    expect(config.sources.size).toBe(100);
  });
});

describe('PodConfig merge: further cases', () => {
  it('rejects a duplicate full name within one batch with a FailedValidation event', () => {
    const { send, seen, recorder } = tester();
    const a = createValidPod('foo', 'new');
    const b = createValidPod('foo', 'new');
    (b.metadata as { uid?: string }).uid = 'other-uid';
    send(update('ADD', TestSource, a, b));
    expectPodUpdate(seen, update('ADD', TestSource, a));
    expect(recorder.events).toHaveLength(1);
    expect(recorder.events[0]).toMatchObject({
      type: 'Warning',
      reason: 'FailedValidation',
      object: { kind: 'Pod', name: 'foo', namespace: 'new', uid: 'other-uid' },
    });
    expect(recorder.events[0]?.message).toBe(
      'Error validating pod foo_new(other-uid) from test due to duplicate pod name "foo", ignoring',
    );
  });

  it('filters duplicates per batch only: the same full name with a new UID in a later batch is added', () => {
    const { send, seen, recorder } = tester();
    const a = createValidPod('foo', 'new');
    send(update('ADD', TestSource, a));
    const b = createValidPod('foo', 'new');
    (b.metadata as { uid?: string }).uid = 'uid-2';
    send(update('ADD', TestSource, b));
    expectPodUpdate(seen, update('ADD', TestSource, a), update('ADD', TestSource, b));
    expect(recorder.events).toHaveLength(0);
  });

  it('ignores a REMOVE of an unknown UID', () => {
    const { send, seen } = tester();
    send(update('REMOVE', TestSource, createValidPod('ghost', 'new')));
    expectPodUpdate(seen);
  });

  it('ignores changes of the local annotations (source, mirror, seen)', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    const pod = createValidPod('foo', 'new');
    pod.metadata!.annotations = {
      [ConfigSourceAnnotationKey]: 'elsewhere',
      [ConfigMirrorAnnotationKey]: 'x',
      [ConfigFirstSeenAnnotationKey]: 'yesterday',
    };
    send(update('ADD', TestSource, pod));
    expectPodUpdate(seen);
  });

  it('annotates the source and first-seen time, and keeps the first-seen time across updates', () => {
    const { send, seen, clock } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    const added = seen.splice(0)[0]?.pods[0];
    expect(added?.metadata?.annotations?.[ConfigSourceAnnotationKey]).toBe(TestSource);
    const firstSeen = added?.metadata?.annotations?.[ConfigFirstSeenAnnotationKey];
    expect(firstSeen).toBe('2026-01-01T00:00:00Z');
    clock.advance(1234);
    const changed = createValidPod('foo', 'new');
    changed.metadata!.labels = { a: 'b' };
    send(update('ADD', TestSource, changed));
    const updated = seen.splice(0)[0];
    expect(updated?.op).toBe('UPDATE');
    expect(updated?.pods[0]?.metadata?.annotations?.[ConfigFirstSeenAnnotationKey]).toBe(firstSeen);
    expect(updated?.pods[0]?.metadata?.annotations?.[ConfigSourceAnnotationKey]).toBe(TestSource);
  });

  it('does not modify the pods a source sends, and emits copies', () => {
    const { config, send, seen } = tester();
    const pod = createValidPod('foo', 'new');
    send(update('ADD', TestSource, pod));
    expect(pod.metadata?.annotations).toBeUndefined();
    const emitted = seen.splice(0)[0]!.pods[0]!;
    emitted.spec!.containers[0]!.image = 'mutated';
    config.sync();
    expect(seen.splice(0)[0]?.pods[0]?.spec?.containers[0]?.image).toBe('image');
  });

  it('copies a parsed __proto__ member as data', () => {
    const { config, send } = tester();
    const pod = createValidPod('foo', 'new');
    pod.metadata!.labels = JSON.parse('{"__proto__": {"polluted": "yes"}, "a": "b"}') as Record<
      string,
      string
    >;
    send(update('ADD', TestSource, pod));
    const [stored] = config.mergedState();
    const labels = stored?.metadata?.labels as Record<string, unknown>;
    expect(Object.keys(labels)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
    expect((labels as { polluted?: string }).polluted).toBeUndefined();
  });

  it('emits every kind from one SET in the fixed order REMOVE, ADD, UPDATE, DELETE, RECONCILE', () => {
    const { send, seen } = tester();
    send(
      update(
        'SET',
        TestSource,
        createValidPod('gone', 'ns'),
        createValidPod('upd', 'ns'),
        createValidPod('del', 'ns'),
        createValidPod('rec', 'ns'),
      ),
    );
    seen.splice(0);
    const upd = createValidPod('upd', 'ns');
    upd.metadata!.labels = { v: '2' };
    const del = createValidPod('del', 'ns');
    (del.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:00Z';
    const rec = createValidPod('rec', 'ns');
    (rec as { status?: object }).status = { phase: 'Running' };
    send(update('SET', TestSource, rec, del, upd, createValidPod('new', 'ns')));
    expectPodUpdate(
      seen,
      update('REMOVE', TestSource, createValidPod('gone', 'ns')),
      update('ADD', TestSource, createValidPod('new', 'ns')),
      update('UPDATE', TestSource, upd),
      update('DELETE', TestSource, del),
      update('RECONCILE', TestSource, rec),
    );
  });

  it('a first SET with pods emits only the ADD (no extra empty ADD)', () => {
    const { send, seen } = tester();
    send(update('SET', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource, createValidPod('foo', 'new')));
  });

  it('a first SET that changes nothing still emits the empty ADD that marks the source ready', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    send(update('SET', TestSource, createValidPod('foo', 'new')));
    expectPodUpdate(seen, update('ADD', TestSource));
  });

  it('a first SET that only reconciles emits the empty ADD before the RECONCILE', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    const pod = createValidPod('foo', 'new');
    (pod as { status?: object }).status = { phase: 'Running' };
    send(update('SET', TestSource, pod));
    expectPodUpdate(seen, update('ADD', TestSource), update('RECONCILE', TestSource, pod));
  });

  it('a changed spec together with a deletion timestamp is a DELETE, not an UPDATE', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    const pod = createValidPod('foo', 'new');
    pod.spec!.containers[0]!.image = 'other';
    (pod.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:00Z';
    send(update('UPDATE', TestSource, pod));
    expectPodUpdate(seen, update('DELETE', TestSource, pod));
  });

  it('a changed deletionGracePeriodSeconds alone is an UPDATE', () => {
    const { send, seen } = tester();
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    const pod = createValidPod('foo', 'new');
    (pod.metadata as { deletionGracePeriodSeconds?: number }).deletionGracePeriodSeconds = 5;
    send(update('UPDATE', TestSource, pod));
    expectPodUpdate(seen, update('UPDATE', TestSource, pod));
  });

  it('snapshotAndUpdates: a status-only change emits nothing', () => {
    const { send, seen } = tester('snapshotAndUpdates');
    send(update('SET', TestSource, createValidPod('foo', 'new')));
    seen.splice(0);
    const pod = createValidPod('foo', 'new');
    (pod as { status?: object }).status = { phase: 'Running' };
    send(update('SET', TestSource, pod));
    expectPodUpdate(seen);
  });

  it('snapshotAndUpdates: a removal emits the SET, a graceful delete follows it', () => {
    const { send, seen } = tester('snapshotAndUpdates');
    send(update('SET', TestSource, createValidPod('a', 'ns'), createValidPod('b', 'ns')));
    seen.splice(0);
    const b = createValidPod('b', 'ns');
    (b.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:00Z';
    send(update('SET', TestSource, b));
    expectPodUpdate(seen, update('SET', TestSource, b), update('DELETE', TestSource, b));
  });

  it('snapshot: the SET carries every source, with the field source set to the changed one', () => {
    const config = new PodConfig({ mode: 'snapshot' });
    const seen: PodUpdate[] = [];
    config.on('update', (u) => seen.push(u));
    config.channel('a')(update('SET', 'a', createValidPod('one', 'ns')));
    config.channel('b')(update('SET', 'b', createValidPod('two', 'ns')));
    expectPodUpdate(
      seen,
      update('SET', 'a', createValidPod('one', 'ns')),
      update('SET', 'b', createValidPod('one', 'ns'), createValidPod('two', 'ns')),
    );
  });

  it('keeps each source apart: the same UID in two sources, a REMOVE in one leaves the other', () => {
    const config = new PodConfig();
    const seen: PodUpdate[] = [];
    config.on('update', (u) => seen.push(u));
    const a = config.channel('a');
    const b = config.channel('b');
    a(update('ADD', 'x', createValidPod('foo', 'ns')));
    b(update('ADD', 'x', createValidPod('foo', 'ns')));
    a(update('REMOVE', 'x', createValidPod('foo', 'ns')));
    expectPodUpdate(
      seen,
      update('ADD', 'a', createValidPod('foo', 'ns')),
      update('ADD', 'b', createValidPod('foo', 'ns')),
      update('REMOVE', 'a', createValidPod('foo', 'ns')),
    );
    expect(config.mergedState().map((p) => p.metadata?.annotations?.[ConfigSourceAnnotationKey])).toEqual([
      'b',
    ]);
  });

  it('seenAllSources needs every registered source in the set and a SET from each', () => {
    const config = new PodConfig();
    const file = config.channel('file');
    const api = config.channel('api');
    const all = new Set(['file', 'api']);
    expect(config.seenAllSources(all)).toBe(false);
    file(update('ADD', 'file', createValidPod('a', 'ns')));
    expect(config.seenAllSources(all)).toBe(false);
    file(update('SET', 'file'));
    api(update('SET', 'api'));
    expect(config.seenAllSources(all)).toBe(true);
    expect(config.seenAllSources(['file'])).toBe(false);
  });

  it('ignores an unknown op', () => {
    const { send, seen } = tester();
    send({ op: 'RESTORE' as PodOperation, source: TestSource, pods: [createValidPod('foo', 'new')] });
    expectPodUpdate(seen);
  });

  it('Sync of nothing is an empty SET from *', () => {
    const { config, seen } = tester();
    config.sync();
    expectPodUpdate(seen, update('SET', '*'));
  });

  it('rejects an unknown mode', () => {
    expect(() => new PodConfig({ mode: 'bogus' as PodConfigNotificationMode })).toThrow(/unsupported/);
  });

  it('survives a throwing update listener', () => {
    const { config, send } = tester();
    config.on('update', () => {
      throw new Error('boom');
    });
    send(update('ADD', TestSource, createValidPod('foo', 'new')));
    expect(config.mergedState()).toHaveLength(1);
  });
});

describe('PodConfig delivery', () => {
  it('delivers everything in order to a slow async consumer', async () => {
    const config = new PodConfig({ highWaterMark: 5 });
    const sink = config.channel('s');
    const total = 300;
    const producer = (async () => {
      for (let i = 0; i < total; i++) await sink(update('ADD', 's', createValidPod(`p${i}`, 'ns')));
    })();
    const got: string[] = [];
    for await (const u of config.updates()) {
      got.push(u.pods[0]?.metadata?.name ?? '');
      await new Promise((r) => setImmediate(r));
      if (got.length === total) break;
    }
    await producer;
    expect(got).toEqual(Array.from({ length: total }, (_, i) => `p${i}`));
  });

  it('holds an awaiting source back above the high-water mark, never drops', async () => {
    const config = new PodConfig({ highWaterMark: 2 });
    const sink = config.channel('s');
    for (let i = 0; i < 2; i++)
      expect(sink(update('ADD', 's', createValidPod(`p${i}`, 'ns')))).toBeUndefined();
    const blocked = sink(update('ADD', 's', createValidPod('p2', 'ns')));
    expect(blocked).toBeInstanceOf(Promise);
    let released = false;
    void blocked?.then(() => {
      released = true;
    });
    // A source that does not await still loses nothing.
    sink(update('ADD', 's', createValidPod('p3', 'ns')));
    expect(config.pendingUpdates).toBe(4);
    const it = config.updates();
    await it.next();
    await new Promise((r) => setImmediate(r));
    expect(released).toBe(false);
    await it.next();
    await new Promise((r) => setImmediate(r));
    expect(released).toBe(true);
    const rest = [await it.next(), await it.next()].map(
      (r) => (r.value as PodUpdate).pods[0]?.metadata?.name,
    );
    expect(rest).toEqual(['p2', 'p3']);
  });

  it('allows one consumer at a time and ends the stream on abort and on stop', async () => {
    const config = new PodConfig();
    const controller = new AbortController();
    const it = config.updates({ signal: controller.signal });
    expect(() => config.updates()).toThrow(/already has a consumer/);
    const pending = it.next();
    controller.abort();
    expect((await pending).done).toBe(true);
    const sink = config.channel('s');
    sink(update('SET', 's', createValidPod('a', 'ns')));
    const second = config.updates();
    expect((await second.next()).value).toMatchObject({ op: 'ADD' });
    const waiting = second.next();
    await config.stop();
    expect((await waiting).done).toBe(true);
  });

  it('stops a source that is held back by back-pressure', async () => {
    const config = new PodConfig({ highWaterMark: 0 });
    let sink: PodSourceSink | undefined;
    let pending: Promise<void> | undefined;
    const source: PodSource = {
      name: 'held',
      start(s) {
        sink = s;
      },
      async stop() {
        await pending;
      },
    };
    await config.addSource(source);
    pending = sink?.(update('SET', 'held', createValidPod('a', 'ns'))) as Promise<void>;
    expect(pending).toBeInstanceOf(Promise);
    await config.stop();
  });

  it('starts and stops added sources', async () => {
    const config = new PodConfig();
    let stopped = false;
    const source: PodSource = {
      name: 'mine',
      start(sink: PodSourceSink) {
        void sink(update('SET', 'ignored', createValidPod('a', 'ns')));
      },
      async stop() {
        stopped = true;
      },
    };
    await config.addSource(source);
    expect(config.seenAllSources(['mine'])).toBe(true);
    const first = await config.updates().next();
    expect(first.value).toMatchObject({ op: 'ADD', source: 'mine' });
    await config.stop();
    expect(stopped).toBe(true);
  });
});
