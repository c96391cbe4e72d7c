// pod-listing.ts: the incremental grouping of a CRI listing into pods must give what grouping the
// whole listing afresh gives, whatever the sequence of listings, and keep unchanged pods' objects.
import type { RuntimePod } from '@kubelet-kit/core';
import { type Container, ContainerState, type PodSandbox, PodSandboxState } from '@kubelet-kit/cri';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { containerNameLabel, podNameLabel, podNamespaceLabel, podUIDLabel } from '../src/index.js';
import { PodListing } from '../src/pod-listing.js';

const labels = (uid: string, container?: string): Record<string, string> => ({
  [podUIDLabel]: uid,
  [podNameLabel]: `name-${uid}`,
  [podNamespaceLabel]: `ns-${uid}`,
  ...(container ? { [containerNameLabel]: container } : {}),
});
const sandbox = (id: string, uid: string, createdAt: number, ready = true) =>
  ({
    id,
    metadata: { name: `name-${uid}`, namespace: `ns-${uid}`, uid, attempt: 0 },
    state: ready ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY,
    createdAt,
    labels: labels(uid),
    annotations: {},
    runtimeHandler: '',
  }) as PodSandbox;
const container = (id: string, uid: string, createdAt: number, running = true) =>
  ({
    id,
    podSandboxId: '',
    image: { image: 'busybox' },
    imageRef: 'sha256:b',
    imageId: '',
    state: running ? ContainerState.CONTAINER_RUNNING : ContainerState.CONTAINER_EXITED,
    createdAt,
    labels: labels(uid, `c-${id}`),
    annotations: {},
  }) as unknown as Container;

/** What the pods of a listing are, by UID, with their items' IDs newest first. */
function grouped(pods: readonly RuntimePod[]) {
  return new Map(
    pods.map((p) => [
      p.id,
      {
        name: p.name,
        namespace: p.namespace,
        createdAt: p.createdAt,
        sandboxes: p.sandboxes.map((s) => `${s.id.id}:${s.state}`),
        containers: p.containers.map((c) => `${c.id.id}:${c.state}`),
      },
    ]),
  );
}

describe('PodListing', () => {
  it('groups items into pods, newest first, named after the newest sandbox', () => {
    const pods = new PodListing().build(
      true,
      [sandbox('s-old', 'u1', 1e6, false), sandbox('s-new', 'u1', 5e6)],
      [container('c1', 'u1', 2e6, false), container('c2', 'u1', 7e6), container('c3', 'u2', 3e6)],
      'containerd',
    );
    expect(grouped(pods)).toEqual(
      new Map([
        [
          'u1',
          {
            name: 'name-u1',
            namespace: 'ns-u1',
            createdAt: 5,
            sandboxes: ['s-new:running', 's-old:exited'],
            containers: ['c2:running', 'c1:exited'],
          },
        ],
        // A pod with containers only is named after them, and was never created.
        [
          'u2',
          { name: 'name-u2', namespace: 'ns-u2', createdAt: 0, sandboxes: [], containers: ['c3:running'] },
        ],
      ]),
    );
    expect(pods.find((p) => p.id === 'u1')?.sandboxes[0]?.id).toEqual({ type: 'containerd', id: 's-new' });
  });

  it('hands back the same pod objects while their items are the same objects', () => {
    const listing = new PodListing();
    const s1 = sandbox('s1', 'u1', 1);
    const s2 = sandbox('s2', 'u2', 2);
    const c1 = container('c1', 'u1', 3);
    const c2 = container('c2', 'u2', 4);
    const first = listing.build(true, [s1, s2], [c1, c2], 'containerd');
    const again = listing.build(true, [s2, s1], [c2, c1], 'containerd');
    expect(again).not.toBe(first); // a fresh array the caller may change
    expect(new Set(again)).toEqual(new Set(first));
    // u2's container exits (a new item object): only u2 is made again.
    const c2exited = container('c2', 'u2', 4, false);
    const changed = listing.build(true, [s1, s2], [c1, c2exited], 'containerd');
    expect(changed.find((p) => p.id === 'u1')).toBe(first.find((p) => p.id === 'u1'));
    const u2 = changed.find((p) => p.id === 'u2');
    expect(u2).not.toBe(first.find((p) => p.id === 'u2'));
    expect(u2?.containers.map((c) => c.state)).toEqual(['exited']);
    // The two kinds of listing (all, running only) are kept apart.
    const running = listing.build(false, [s1], [c1], 'containerd');
    expect(grouped(running)).toEqual(grouped([first.find((p) => p.id === 'u1') as RuntimePod]));
    expect(grouped(listing.build(true, [s1, s2], [c1, c2exited], 'containerd'))).toEqual(grouped(changed));
  });

  it('drops items and pods a later listing lacks, and takes back ones that return', () => {
    const listing = new PodListing();
    const s1 = sandbox('s1', 'u1', 1);
    const c1 = container('c1', 'u1', 2);
    const c2 = container('c2', 'u1', 3);
    const s2 = sandbox('s2', 'u2', 4);
    listing.build(true, [s1, s2], [c1, c2], 'containerd');
    expect(grouped(listing.build(true, [s1], [c1], 'containerd'))).toEqual(
      grouped(new PodListing().build(true, [s1], [c1], 'containerd')),
    );
    expect(grouped(listing.build(true, [s1, s2], [c1, c2], 'containerd'))).toEqual(
      grouped(new PodListing().build(true, [s1, s2], [c1, c2], 'containerd')),
    );
    expect(listing.build(true, [], [], 'containerd')).toEqual([]);
  });

  it('gives what a fresh grouping gives, over any sequence of listings', () => {
    // A pool of items, some of them the same sandbox or container in another state (a new
    // object, as the CRI client makes for a changed item); each listing is a subset of the pool,
    // shuffled, sometimes with an item twice.
    const pool: { s: PodSandbox[]; c: Container[] } = { s: [], c: [] };
    for (let i = 0; i < 12; i++) {
      const uid = `u${i % 4}`;
      pool.s.push(sandbox(`s${i % 6}`, uid, (i % 5) * 1e6, i % 3 !== 0));
      pool.c.push(container(`c${i % 8}`, uid, (i % 7) * 1e6, i % 2 === 0));
    }
    const pick = fc.array(fc.nat({ max: 11 }), { maxLength: 14 });
    const step = fc.record({ all: fc.boolean(), s: pick, c: pick });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const listing = new PodListing();
        for (const { all, s, c } of steps) {
          const sandboxes = s.map((i) => pool.s[i] as PodSandbox);
          const containers = c.map((i) => pool.c[i] as Container);
          const uniq = <T>(xs: T[]) => [...new Set(xs)];
          const got = listing.build(all, sandboxes, containers, 'containerd');
          const want = new PodListing().build(all, uniq(sandboxes), uniq(containers), 'containerd');
          expect(got.length).toBe(new Set(got.map((p) => p.id)).size);
          expect(grouped(got)).toEqual(grouped(want));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('starts afresh when the runtime name changes', () => {
    const listing = new PodListing();
    const s1 = sandbox('s1', 'u1', 1);
    const first = listing.build(true, [s1], [], 'containerd');
    const other = listing.build(true, [s1], [], 'cri-o');
    expect(other[0]).not.toBe(first[0]);
    expect(other[0]?.sandboxes[0]?.id).toEqual({ type: 'cri-o', id: 's1' });
  });
});
