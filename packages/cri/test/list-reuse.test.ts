import { type Container, ContainerState, type ListContainersResponse } from '@kubelet-kit/cri';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { FieldComparison, ListResponseDecoder, messageCodec, sameFieldsAnyMapOrder } from '../src/codec.js';
import { containerConfig, harness, sandboxConfig } from './helpers.js';

const response = messageCodec<ListContainersResponse>('ListContainersResponse');
const request = messageCodec('ListContainersRequest');
const all = request.encode({});
const running = request.encode({ filter: { state: { state: ContainerState.CONTAINER_RUNNING } } });

function container(id: string, state: ContainerState = ContainerState.CONTAINER_CREATED) {
  return {
    id,
    podSandboxId: `sandbox-${id}`,
    metadata: { name: `c-${id}`, attempt: 0 },
    image: { image: 'busybox', annotations: {}, userSpecifiedImage: 'busybox', runtimeHandler: '' },
    imageRef: 'sha256:1',
    state,
    createdAt: 1_700_000_000_000_000_000,
    labels: { 'io.kubernetes.pod.uid': `uid-${id}` },
    annotations: { 'io.kubernetes.container.hash': '1' },
  };
}

function decoder(): ListResponseDecoder<ListContainersResponse> {
  const d = ListResponseDecoder.of<ListContainersResponse>('ListContainersResponse');
  if (!d) throw new Error('no list decoder for ListContainersResponse');
  return d;
}

describe('list responses reuse unchanged items', () => {
  test('an unchanged container is the same object in the next response; a changed one is decoded afresh', () => {
    const d = decoder();
    const first = d.decode(response.encode({ containers: [container('a'), container('b')] }), all);
    expect(first).toEqual(response.decode(response.encode({ containers: [container('a'), container('b')] })));
    const second = d.decode(
      response.encode({ containers: [container('a'), container('b', ContainerState.CONTAINER_RUNNING)] }),
      all,
    );
    expect(second.containers[0]).toBe(first.containers[0]);
    expect(second.containers[1]).not.toBe(first.containers[1]);
    expect(second.containers[1]?.state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(second.containers.map((c) => c.id)).toEqual(['a', 'b']);
  });

  test('the order of the response is kept, and a removed container is gone from the next', () => {
    const d = decoder();
    const first = d.decode(
      response.encode({ containers: [container('a'), container('b'), container('c')] }),
      all,
    );
    const second = d.decode(response.encode({ containers: [container('c'), container('a')] }), all);
    expect(second.containers).toEqual([first.containers[2], first.containers[0]]);
    expect(second.containers[0]).toBe(first.containers[2]);
    const third = d.decode(response.encode({ containers: [] }), all);
    expect(third.containers).toEqual([]);
  });

  test('each request keeps its own last response: a filtered list does not evict the full one', () => {
    const d = decoder();
    const full = d.decode(response.encode({ containers: [container('a'), container('b')] }), all);
    d.decode(response.encode({ containers: [container('b', ContainerState.CONTAINER_RUNNING)] }), running);
    const again = d.decode(response.encode({ containers: [container('a'), container('b')] }), all);
    expect(again.containers[0]).toBe(full.containers[0]);
    expect(again.containers[1]).toBe(full.containers[1]);
  });

  test('one-pod lists, each with its own filter, do not push out the full listing', () => {
    const d = decoder();
    const full = d.decode(response.encode({ containers: [container('a'), container('b')] }), all);
    for (let i = 0; i < 10; i++) {
      const onePod = request.encode({ filter: { labelSelector: { 'io.kubernetes.pod.uid': `uid-${i}` } } });
      d.decode(response.encode({ containers: [container(`p${i}`)] }), onePod);
    }
    const again = d.decode(response.encode({ containers: [container('a'), container('b')] }), all);
    expect(again.containers[0]).toBe(full.containers[0]);
  });

  test('a container added before the others, or one changed between them, leaves the others reused', () => {
    const d = decoder();
    const ids = ['a', 'b', 'c', 'd'];
    const first = d.decode(response.encode({ containers: ids.map((id) => container(id)) }), all);
    const second = d.decode(
      response.encode({
        containers: [
          container('new'),
          container('a'),
          container('b', ContainerState.CONTAINER_RUNNING),
          container('c'),
          container('d'),
        ],
      }),
      all,
    );
    expect(second.containers.map((c) => c.id)).toEqual(['new', 'a', 'b', 'c', 'd']);
    expect(second.containers[1]).toBe(first.containers[0]);
    expect(second.containers[2]?.state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(second.containers[3]).toBe(first.containers[2]);
    expect(second.containers[4]).toBe(first.containers[3]);
    // Duplicates (not expected of a runtime) come back as equal items.
    const dup = d.decode(response.encode({ containers: [container('a'), container('a')] }), all);
    expect(dup.containers[0]).toEqual(dup.containers[1]);
  });

  test('shared items are frozen, so a caller cannot change what the next call returns', () => {
    const d = decoder();
    const { containers } = d.decode(response.encode({ containers: [container('a')] }), all);
    const item = containers[0] as Container;
    expect(() => {
      item.state = ContainerState.CONTAINER_EXITED;
    }).toThrow(TypeError);
    expect(() => {
      item.labels.extra = 'x';
    }).toThrow(TypeError);
    // The list itself is the caller's.
    containers.push(container('b') as unknown as Container);
    expect(d.decode(response.encode({ containers: [container('a')] }), all).containers).toHaveLength(1);
  });

  test('a response with a field it does not know is decoded whole', () => {
    const d = decoder();
    // Field 2, varint 7: not in ListContainersResponse; protobufjs skips it.
    const wire = Buffer.concat([
      response.encode({ containers: [container('a')] }),
      Buffer.from([0x10, 0x07]),
    ]);
    expect(d.decode(wire, all)).toEqual(response.decode(wire));
  });

  test('a truncated item is an error, not a short list', () => {
    const d = decoder();
    const wire = response.encode({ containers: [container('a')] });
    expect(() => d.decode(wire.subarray(0, wire.length - 3), all)).toThrow(RangeError);
  });

  test('over gRPC: ListContainers and ListPodSandbox return the same objects until something changes', async () => {
    const { runtime } = await harness();
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig('reuse') });
    const { containerId } = await runtime.createContainer({ podSandboxId, config: containerConfig('c') });
    const created = (await runtime.listContainers()).containers;
    const again = (await runtime.listContainers()).containers;
    expect(again[0]).toBe(created[0]);
    expect(again).not.toBe(created);
    const sandboxes = (await runtime.listPodSandbox()).items;
    expect((await runtime.listPodSandbox()).items[0]).toBe(sandboxes[0]);

    await runtime.startContainer({ containerId });
    const started = (await runtime.listContainers()).containers;
    expect(started[0]).not.toBe(created[0]);
    expect(started[0]).toMatchObject({ id: containerId, state: ContainerState.CONTAINER_RUNNING });
    expect(created[0]?.state).toBe(ContainerState.CONTAINER_CREATED);
  });
});

/** The container with its labels and annotations in reverse insertion order (protobufjs writes map entries in that order). */
function reversedMaps<C extends { labels: Record<string, string>; annotations: Record<string, string> }>(
  c: C,
): C {
  const reverse = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).reverse());
  return { ...c, labels: reverse(c.labels), annotations: reverse(c.annotations) };
}

describe('map entries in another order (as Go writes them) are the same item', () => {
  const labelled = (id: string, value = 'v') => ({
    ...container(id),
    labels: { 'io.kubernetes.pod.uid': `uid-${id}`, 'io.kubernetes.pod.name': `pod-${id}`, x: value },
    annotations: { 'io.kubernetes.container.hash': '1', 'io.kubernetes.container.restartCount': '0' },
  });

  test('a container whose labels and annotations come reordered is reused', () => {
    const d = decoder();
    const first = d.decode(response.encode({ containers: [labelled('a'), labelled('b')] }), all);
    const reordered = response.encode({
      containers: [reversedMaps(labelled('b')), reversedMaps(labelled('a'))],
    });
    expect(reordered).not.toEqual(response.encode({ containers: [labelled('b'), labelled('a')] }));
    const second = d.decode(reordered, all);
    expect(second.containers[0]).toBe(first.containers[1]);
    expect(second.containers[1]).toBe(first.containers[0]);
  });

  test('a label value changed to one of the same length, or a label moved to the annotations, is decoded afresh', () => {
    const d = decoder();
    const first = d.decode(response.encode({ containers: [labelled('a')] }), all);
    const changed = d.decode(response.encode({ containers: [reversedMaps(labelled('a', 'w'))] }), all);
    expect(changed.containers[0]).not.toBe(first.containers[0]);
    expect(changed.containers[0]?.labels.x).toBe('w');
    const base = labelled('a', 'w');
    const moved = {
      ...base,
      labels: { 'io.kubernetes.pod.uid': 'uid-a', 'io.kubernetes.pod.name': 'pod-a' },
      annotations: { ...base.annotations, x: 'w' },
    };
    const after = d.decode(response.encode({ containers: [moved] }), all);
    expect(after.containers[0]).not.toBe(changed.containers[0]);
    expect(after.containers[0]?.annotations.x).toBe('w');
    expect(after.containers[0]?.labels.x).toBeUndefined();
  });

  test('a sandbox whose maps come reordered is reused', () => {
    const sandboxes = messageCodec('ListPodSandboxResponse');
    const d = ListResponseDecoder.of<{ items: object[] }>('ListPodSandboxResponse');
    if (!d) throw new Error('no list decoder for ListPodSandboxResponse');
    const sandbox = {
      id: 's',
      metadata: { name: 'p', uid: 'u', namespace: 'default', attempt: 0 },
      state: 0,
      createdAt: 5,
      labels: { a: '1', b: '2', c: '3' },
      annotations: { d: '4', e: '5' },
      runtimeHandler: '',
    };
    const req = messageCodec('ListPodSandboxRequest').encode({});
    const first = d.decode(sandboxes.encode({ items: [sandbox] }), req);
    const again = d.decode(sandboxes.encode({ items: [reversedMaps(sandbox)] }), req);
    expect(again.items[0]).toBe(first.items[0]);
  });

  test('property: the order-free comparison is true exactly when the two decode to the same container', () => {
    const item = messageCodec<Container>('Container');
    const text = fc.string({ maxLength: 6 });
    const map = fc.dictionary(text, text, { maxKeys: 5 });
    const arb = fc.record({
      id: fc.constantFrom('a', 'b'),
      state: fc.constantFrom(0, 1, 2),
      createdAt: fc.constantFrom(0, 1, 300),
      labels: map,
      annotations: map,
    });
    fc.assert(
      fc.property(arb, arb, fc.boolean(), (x, y, shuffle) => {
        const a = item.encode(x);
        const b = item.encode(shuffle ? reversedMaps(x) : y);
        const same = JSON.stringify(canonical(item.decode(a))) === JSON.stringify(canonical(item.decode(b)));
        expect(sameFieldsAnyMapOrder(a, 0, a.length, b, 0, b.length, new Set([8, 9]))).toBe(same);
      }),
      { numRuns: 500 },
    );
  });

  test('property: one workspace reused across comparisons of any size answers as the comparison does', () => {
    const item = messageCodec<Container>('Container');
    const text = fc.string({ maxLength: 4 });
    // Up to 60 map entries with the other fields: the tables grow past their first 32 fields.
    const map = fc.dictionary(text, text, { maxKeys: 30 });
    const arb = fc.record({
      id: fc.constantFrom('a', 'b'),
      state: fc.constantFrom(0, 1),
      labels: map,
      annotations: map,
    });
    const work = new FieldComparison();
    fc.assert(
      fc.property(arb, arb, fc.boolean(), (x, y, shuffle) => {
        const a = item.encode(x);
        const b = item.encode(shuffle ? reversedMaps(x) : y);
        const same = JSON.stringify(canonical(item.decode(a))) === JSON.stringify(canonical(item.decode(b)));
        expect(sameFieldsAnyMapOrder(a, 0, a.length, b, 0, b.length, new Set([8, 9]), work)).toBe(same);
      }),
      { numRuns: 300 },
    );
  });
});

/** A decoded container with its maps' keys sorted, to compare as values. */
function canonical(c: Container): unknown {
  const sorted = (m: Record<string, string>) =>
    Object.fromEntries(Object.entries(m).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0)));
  return { ...c, labels: sorted(c.labels), annotations: sorted(c.annotations) };
}
