import type { Pod, PodUpdate } from '@kubelet-kit/core';
import { InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { describe, expect, it } from 'vitest';
import { PodConfig, PodValidationError, StaticPodSource } from '../src/index.js';

const dummyPod = `
apiVersion: v1
kind: Pod
metadata:
  name: dummy-test
  namespace: default
spec:
  containers:
  - image: nginx
    name: web
    ports:
    - containerPort: 80
      name: web
      protocol: TCP
`;

function harness() {
  const recorder = new InMemoryEventRecorder();
  const config = new PodConfig({ bufferUpdates: false });
  const updates: PodUpdate[] = [];
  config.on('update', (u) => updates.push(u));
  const source = new StaticPodSource({ nodeName: 'Worker-1', recorder });
  const take = () => updates.splice(0).map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }));
  return { recorder, config, source, updates, take };
}

describe('StaticPodSource (k0s-style claims)', () => {
  it('sends an empty SET at start, marking the source ready', async () => {
    const h = harness();
    await h.config.addSource(h.source);
    expect(h.take()).toEqual([{ op: 'ADD', names: [] }]);
    expect(h.config.seenAllSources(['static'])).toBe(true);
  });

  it('rejects bad claims and double claims', () => {
    const { source } = harness();
    expect(() => source.claim('default', '')).toThrow(/invalid name/);
    expect(() => source.claim('', 'x')).toThrow(/invalid namespace/);
    source.claim('default', 'dummy-test');
    expect(() => source.claim('default', 'dummy-test')).toThrow('default/dummy-test is already claimed');
  });

  it('sets a manifest (text or object) as a defaulted static pod', async () => {
    const h = harness();
    await h.config.addSource(h.source);
    h.take();
    const pod = h.source.claim('default', 'dummy-test');
    pod.set(dummyPod);
    expect(h.take()).toEqual([{ op: 'ADD', names: ['dummy-test-worker-1'] }]);
    const [stored] = h.source.pods();
    expect(stored?.metadata?.annotations?.['kubernetes.io/config.hash']).toBe(stored?.metadata?.uid);
    expect(stored?.spec?.nodeName).toBe('Worker-1');
    expect(stored?.spec?.tolerations).toBeUndefined();
    expect(stored?.status?.phase).toBe('Pending');
    // The same manifest as an object (without namespace/name) gives the same pod.
    pod.set({
      spec: {
        containers: [
          { image: 'nginx', name: 'web', ports: [{ containerPort: 80, name: 'web', protocol: 'TCP' }] },
        ],
      },
    });
    expect(h.take()).toEqual([]);
  });

  it('rejects non-pods, other names and invalid pods, keeping the previous manifest', async () => {
    const h = harness();
    await h.config.addSource(h.source);
    const pod = h.source.claim('default', 'dummy-test');
    pod.set(dummyPod);
    h.take();
    expect(() => pod.set({ apiVersion: 'v1', kind: 'Secret' } as unknown as Pod)).toThrow(PodValidationError);
    expect(() => pod.set({ metadata: { namespace: 'foo', name: 'bar' }, spec: { containers: [] } })).toThrow(
      'attempt to set the manifest to "foo/bar", whereas "default/dummy-test" was claimed',
    );
    let error: unknown;
    try {
      pod.set(dummyPod.replace('image: nginx', 'image: ""'));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PodValidationError);
    expect((error as PodValidationError).field).toBe('spec.containers[0].image');
    expect((error as PodValidationError).message).toContain('static:default/dummy-test');
    expect(h.recorder.events.length).toBeGreaterThanOrEqual(3);
    expect(h.take()).toEqual([]);
    expect(h.source.pods()).toHaveLength(1);
  });

  it('clear removes the pod but keeps the claim; drop releases it', async () => {
    const h = harness();
    await h.config.addSource(h.source);
    h.take();
    const pod = h.source.claim('default', 'dummy-test');
    pod.set(dummyPod);
    pod.clear();
    expect(h.take()).toEqual([
      { op: 'ADD', names: ['dummy-test-worker-1'] },
      { op: 'REMOVE', names: ['dummy-test-worker-1'] },
    ]);
    expect(() => h.source.claim('default', 'dummy-test')).toThrow(/already claimed/);
    pod.set(dummyPod);
    expect(h.take()).toEqual([{ op: 'ADD', names: ['dummy-test-worker-1'] }]);
    pod.drop();
    expect(h.take()).toEqual([{ op: 'REMOVE', names: ['dummy-test-worker-1'] }]);
    expect(() => pod.set(dummyPod)).toThrow('already dropped');
    expect(h.source.claim('default', 'dummy-test').name).toBe('dummy-test');
  });

  it('set(manifest) claims by the manifest name and reuses its own claim', async () => {
    const h = harness();
    const handle = h.source.set({
      metadata: { name: 'quick' },
      spec: { containers: [{ name: 'c', image: 'i:1' }] },
    });
    expect(handle.namespace).toBe('default');
    await h.config.addSource(h.source);
    expect(h.take()).toEqual([{ op: 'ADD', names: ['quick-worker-1'] }]);
    h.source.set({ metadata: { name: 'quick' }, spec: { containers: [{ name: 'c', image: 'i:2' }] } });
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['quick-worker-1'] },
      { op: 'ADD', names: ['quick-worker-1'] },
    ]);
    expect(() =>
      h.source.set({ metadata: { name: 'bad' }, spec: { containers: [{ name: 'c', image: '' }] } }),
    ).toThrow(PodValidationError);
    // A failed first set leaves no claim behind.
    expect(h.source.claim('default', 'bad').name).toBe('bad');
  });
});
