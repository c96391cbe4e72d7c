import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type Container,
  deepCopy,
  isRestartableInitContainer,
  type NodeAllocatable,
  type Pod,
  type ProbeResult,
  type ProbeResultUpdate,
  podEventReference,
} from '../src/index.js';

describe('isRestartableInitContainer', () => {
  it('is true only for restartPolicy Always (a sidecar)', () => {
    const c = (restartPolicy?: string): Container => ({
      name: 'c',
      ...(restartPolicy !== undefined ? { restartPolicy } : {}),
    });
    expect(isRestartableInitContainer(c('Always'))).toBe(true);
    expect(isRestartableInitContainer(c())).toBe(false);
    expect(isRestartableInitContainer(c('OnFailure'))).toBe(false);
    expect(isRestartableInitContainer(c('Never'))).toBe(false);
  });
});

describe('podEventReference', () => {
  const pod: Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1' } };

  it('refers to the pod by kind, namespace, name and UID', () => {
    expect(podEventReference(pod)).toEqual({ kind: 'Pod', namespace: 'ns', name: 'web', uid: 'u1' });
  });

  it('narrows to one container with a field path', () => {
    expect(podEventReference(pod, 'spec.containers{app}')).toEqual({
      kind: 'Pod',
      namespace: 'ns',
      name: 'web',
      uid: 'u1',
      fieldPath: 'spec.containers{app}',
    });
  });

  it('gives empty strings for a pod without metadata, and no fieldPath member unless asked', () => {
    const ref = podEventReference({});
    expect(ref).toEqual({ kind: 'Pod', namespace: '', name: '', uid: '' });
    expect('fieldPath' in ref).toBe(false);
  });
});

describe('deepCopy', () => {
  it('copies nested objects and arrays so the copy shares nothing', () => {
    const value = { a: { b: [1, { c: 'x' }] }, d: null, e: 0, f: '' };
    const copy = deepCopy(value);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect(copy.a).not.toBe(value.a);
    expect(copy.a.b).not.toBe(value.a.b);
    expect(copy.a.b[1]).not.toBe(value.a.b[1]);
    (copy.a.b[1] as { c: string }).c = 'changed';
    expect((value.a.b[1] as { c: string }).c).toBe('x');
  });

  it('returns primitives as they are', () => {
    for (const v of [1, 'x', true, null, undefined, 10n]) expect(deepCopy(v)).toBe(v);
  });

  it('copies a Date as a new Date of the same time', () => {
    const when = new Date(Date.UTC(2026, 0, 1));
    const copy = deepCopy({ when });
    expect(copy.when).toBeInstanceOf(Date);
    expect(copy.when).not.toBe(when);
    expect(copy.when.getTime()).toBe(when.getTime());
  });

  it('keeps arrays as arrays, nested ones too', () => {
    const copy = deepCopy([[], [1, [2]], 'x']);
    expect(Array.isArray(copy)).toBe(true);
    expect(copy).toEqual([[], [1, [2]], 'x']);
  });

  it('keeps undefined members as members', () => {
    const copy = deepCopy({ a: undefined, b: 1 });
    expect(Object.keys(copy)).toEqual(['a', 'b']);
    expect('a' in copy).toBe(true);
  });

  it('copies a parsed __proto__ member as data, never as the copy’s prototype', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}') as Record<string, unknown>;
    const copy = deepCopy(parsed);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__', 'ok']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('copies objects with a null prototype as plain objects', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { k: [1] });
    const copy = deepCopy(bare);
    expect(copy.k).toEqual([1]);
    expect(copy.k).not.toBe(bare.k);
  });

  it('hands other objects (a Map) to structuredClone', () => {
    const map = new Map([['k', { v: 1 }]]);
    const copy = deepCopy({ map });
    expect(copy.map).toBeInstanceOf(Map);
    expect(copy.map).not.toBe(map);
    expect(copy.map.get('k')).toEqual({ v: 1 });
    expect(copy.map.get('k')).not.toBe(map.get('k'));
  });
});

describe('shared provider types', () => {
  it('a ProbeResultUpdate names the container, its pod and the new result', () => {
    const update: ProbeResultUpdate = { containerId: 'containerd://abc', podUid: 'u1', result: 'Failure' };
    expectTypeOf(update.result).toEqualTypeOf<ProbeResult>();
    expectTypeOf<ProbeResultUpdate>().toEqualTypeOf<{
      readonly containerId: string;
      readonly result: ProbeResult;
      readonly podUid: string;
    }>();
  });

  it('NodeAllocatable needs cpu, memory and pods; ephemeral storage and scalars are optional', () => {
    const minimal: NodeAllocatable = { cpu: 2, memory: 4 * 2 ** 30, pods: 110 };
    const full: NodeAllocatable = {
      ...minimal,
      ephemeralStorage: 10 * 2 ** 30,
      scalarResources: { 'example.com/foo': 2, 'hugepages-2Mi': 2 ** 21 },
    };
    expect(full.scalarResources?.['example.com/foo']).toBe(2);
    expectTypeOf<NodeAllocatable['ephemeralStorage']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<NodeAllocatable['scalarResources']>().toEqualTypeOf<
      Readonly<Record<string, number>> | undefined
    >();
    // @ts-expect-error pods is required
    const missing: NodeAllocatable = { cpu: 1, memory: 1 };
    expect(missing.pods).toBeUndefined();
  });
});
