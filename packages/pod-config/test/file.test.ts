import { mkdir, mkdtemp, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodUpdate } from '@kubelet-kit/core';
import { FakeClock, InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FileSource,
  type FileSourceOptions,
  PodConfig,
  type PodSourceError,
  type PodValidationError,
} from '../src/index.js';

function manifest(name: string, image = 'nginx:1.27'): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: app
    image: ${image}
`;
}

/** Waits on real time for a file-system event to reach the source (bounded). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pod-config-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function harness(options: Partial<FileSourceOptions> = {}) {
  const clock = new FakeClock();
  const recorder = new InMemoryEventRecorder();
  const errors: (PodValidationError | PodSourceError)[] = [];
  const config = new PodConfig({ clock, recorder, bufferUpdates: false });
  const updates: PodUpdate[] = [];
  config.on('update', (u) => updates.push(u));
  const source = new FileSource({
    path: dir,
    nodeName: 'Node1',
    clock,
    recorder,
    onError: (e) => errors.push(e),
    ...options,
  });
  const sets: PodUpdate[] = [];
  const sink = config.channel(source.name);
  await source.start((u) => {
    sets.push(u);
    return sink(u);
  });
  /** Lets pending file-system events arrive, then fires the debounce and waits for the listing. */
  const settle = async () => {
    await waitFor(() => source.relistPending, 'a file-system event');
    await new Promise((r) => setTimeout(r, 30));
    clock.advance(100);
    await source.whenIdle();
  };
  const take = () => updates.splice(0).map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }));
  const stop = () => source.stop();
  return { clock, recorder, errors, config, source, updates, sets, settle, take, stop };
}

describe('FileSource on a real directory', () => {
  it('sends an empty SET for an empty directory, marking the source ready', async () => {
    const h = await harness();
    expect(h.take()).toEqual([{ op: 'ADD', names: [] }]);
    expect(h.config.seenAllSources(['file'])).toBe(true);
    await h.stop();
  });

  it('sends an empty SET for a missing path, and picks the directory up once it exists', async () => {
    const missing = join(dir, 'manifests');
    const h = await harness({ path: missing, watch: false });
    expect(h.take()).toEqual([{ op: 'ADD', names: [] }]);
    await mkdir(missing);
    await writeFile(join(missing, 'a.yaml'), manifest('a'));
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['a-node1'] }]);
    await h.stop();
  });

  it('follows add, edit, rename and delete through file-system events', async () => {
    const h = await harness();
    h.take();
    await writeFile(join(dir, 'web.yaml'), manifest('web'));
    await h.settle();
    const added = h.updates.slice();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['web-node1'] }]);
    const pod = added[0]?.pods[0];
    expect(pod?.metadata?.namespace).toBe('default');
    expect(pod?.spec?.nodeName).toBe('Node1');
    expect(pod?.metadata?.annotations?.['kubernetes.io/config.source']).toBe('file');

    // The UID hashes the pod, so an edit replaces the pod (as upstream): one SET, REMOVE then ADD.
    const setsBefore = h.sets.length;
    await writeFile(join(dir, 'web.yaml'), manifest('web', 'nginx:1.28'));
    await h.settle();
    expect(h.sets.length).toBe(setsBefore + 1);
    const edited = h.updates.slice();
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['web-node1'] },
      { op: 'ADD', names: ['web-node1'] },
    ]);
    expect(edited[1]?.pods[0]?.spec?.containers[0]?.image).toBe('nginx:1.28');
    expect(edited[1]?.pods[0]?.metadata?.uid).not.toBe(pod?.metadata?.uid);

    // The UID hashes the path, so a renamed file is another pod.
    await rename(join(dir, 'web.yaml'), join(dir, 'web2.yaml'));
    await h.settle();
    const renamed = h.updates.slice();
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['web-node1'] },
      { op: 'ADD', names: ['web-node1'] },
    ]);
    expect(renamed[1]?.pods[0]?.metadata?.uid).not.toBe(renamed[0]?.pods[0]?.metadata?.uid);

    await unlink(join(dir, 'web2.yaml'));
    await h.settle();
    expect(h.take()).toEqual([{ op: 'REMOVE', names: ['web-node1'] }]);
    await h.stop();
  });

  it('sends the pods of new files ahead of the SET, 8 one at a time, then in ADDs of 2, 4, …; the SET adds the rest', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const h = await harness({ watch: false });
    expect(h.take()).toEqual([{ op: 'ADD', names: ['a-node1'] }]);
    h.sets.length = 0;
    const names = Array.from({ length: 17 }, (_, i) => `p${String(i).padStart(2, '0')}`);
    for (const n of names) await writeFile(join(dir, `${n}.yaml`), manifest(n));
    h.clock.advance(20_000);
    await h.source.whenIdle();
    const pods = (ns: string[]) => ns.map((n) => `${n}-node1`);
    const ahead = [...names.slice(0, 8).map((n) => [n]), names.slice(8, 10), names.slice(10, 14)];
    expect(h.sets.map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }))).toEqual([
      ...ahead.map((ns) => ({ op: 'ADD', names: pods(ns) })),
      { op: 'SET', names: pods(['a', ...names]) },
    ]);
    // The merged stream: each ADD once, the SET adding only the pods not sent ahead.
    expect(h.take()).toEqual([
      ...ahead.map((ns) => ({ op: 'ADD', names: pods(ns) })),
      { op: 'ADD', names: pods(names.slice(14)) },
    ]);
    // An unchanged re-list sends nothing, ahead or not.
    h.sets.length = 0;
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.sets).toEqual([]);
    await h.stop();
  });

  it('leaves a new file whose pod name or UID was sent before to the SET', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const h = await harness({ watch: false });
    h.take();
    h.sets.length = 0;
    // b is new; c1 and c2 repeat each other's name; z repeats the sent a (another file, another
    // UID): b and c1 go ahead, and the SET decides the rest as a SET alone would.
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    await writeFile(join(dir, 'c1.yaml'), manifest('c'));
    await writeFile(join(dir, 'c2.yaml'), manifest('c', 'nginx:1.28'));
    await writeFile(join(dir, 'z.yaml'), manifest('a'));
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.sets.map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }))).toEqual([
      { op: 'ADD', names: ['b-node1'] },
      { op: 'ADD', names: ['c-node1'] },
      { op: 'SET', names: ['a-node1', 'b-node1', 'c-node1', 'c-node1', 'a-node1'] },
    ]);
    const updates = h.updates.slice();
    expect(h.take()).toEqual([
      { op: 'ADD', names: ['b-node1'] },
      { op: 'ADD', names: ['c-node1'] },
    ]);
    // The first file of a name wins (c1's image); a stays the pod of a.yaml.
    expect(updates[1]?.pods[0]?.spec?.containers[0]?.image).toBe('nginx:1.27');
    expect(h.recorder.events.filter((e) => e.reason === 'FailedValidation')).toHaveLength(2);
    await h.stop();
  });

  it('turns an edit of a manifest with its own UID into an UPDATE', async () => {
    const withUid = (image: string) =>
      manifest('fixed', image).replace('name: fixed', 'name: fixed\n  uid: fixed-uid');
    await writeFile(join(dir, 'fixed.yaml'), withUid('a:1'));
    const h = await harness({ watch: false });
    expect(h.take()).toEqual([{ op: 'ADD', names: ['fixed-node1'] }]);
    await writeFile(join(dir, 'fixed.yaml'), withUid('a:2'));
    await h.source.resync();
    expect(h.take()).toEqual([{ op: 'UPDATE', names: ['fixed-node1'] }]);
    await h.stop();
  });

  it('ignores dotfiles and does not recurse into subdirectories', async () => {
    await writeFile(join(dir, '.hidden.yaml'), manifest('hidden'));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'deep.yaml'), manifest('deep'));
    await writeFile(join(dir, 'top.yaml'), manifest('top'));
    const h = await harness();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['top-node1'] }]);
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([]);
    expect(h.errors).toEqual([]);
    await h.stop();
  });

  it("turns an editor's swap-file and write-temp-then-rename dance into one update", async () => {
    await writeFile(join(dir, 'x.yaml'), manifest('x'));
    const h = await harness();
    h.take();
    await writeFile(join(dir, '.x.yaml.swp'), 'binary swap junk: {[');
    await writeFile(join(dir, 'x.yaml.swp'), 'more junk');
    await writeFile(join(dir, 'x.yaml.tmp'), manifest('x', 'nginx:2'));
    await rename(join(dir, 'x.yaml.tmp'), join(dir, 'x.yaml'));
    await unlink(join(dir, '.x.yaml.swp'));
    await unlink(join(dir, 'x.yaml.swp'));
    const setsBefore = h.sets.length;
    await h.settle();
    // Late events may re-arm the debounce; a second listing finds nothing new.
    if (h.source.relistPending) {
      h.clock.advance(100);
      await h.source.whenIdle();
    }
    expect(h.sets.length).toBe(setsBefore + 1);
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['x-node1'] },
      { op: 'ADD', names: ['x-node1'] },
    ]);
    expect(h.errors).toEqual([]);
    await h.stop();
  });

  it('reports an invalid file beside valid ones and still sends the valid pods', async () => {
    await writeFile(join(dir, 'good.yaml'), manifest('good'));
    await writeFile(join(dir, 'bad.yaml'), manifest('bad', '""'));
    await writeFile(join(dir, 'broken.json'), '{"apiVersion": "v1", "kind": "Pod", ');
    const h = await harness();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['good-node1'] }]);
    expect(h.source.errors.map((e) => [e.file, e.field])).toEqual([
      [join(dir, 'bad.yaml'), 'spec.containers[0].image'],
      [join(dir, 'broken.json'), '<document>'],
    ]);
    const bad = h.source.errors[0];
    expect(bad?.message).toContain(join(dir, 'bad.yaml'));
    expect(bad?.message).toContain('default/bad-node1');
    expect(bad?.message).toContain('spec.containers[0].image');
    expect(bad?.object).toEqual({ namespace: 'default', name: 'bad-node1' });
    expect(h.errors).toHaveLength(2);
    expect(h.recorder.events.map((e) => e.reason)).toEqual(['FailedValidation', 'FailedValidation']);
    // The period re-lists, but an unchanged bad file is not reported again.
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.errors).toHaveLength(2);
    expect(h.source.errors).toHaveLength(2);
    // Fixing it brings the pod in.
    await writeFile(join(dir, 'bad.yaml'), manifest('bad'));
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['bad-node1'] }]);
    expect(h.source.errors.map((e) => e.file)).toEqual([join(dir, 'broken.json')]);
    await h.stop();
  });

  it('reads JSON manifests and rejects a PodList in a file', async () => {
    await writeFile(
      join(dir, 'j.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'j' },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      }),
    );
    await writeFile(join(dir, 'list.yaml'), 'apiVersion: v1\nkind: PodList\nitems: []\n');
    const h = await harness({ watch: false });
    expect(h.take()).toEqual([{ op: 'ADD', names: ['j-node1'] }]);
    expect(h.source.errors.map((e) => e.field)).toEqual(['kind']);
    await h.stop();
  });

  it('rejects a manifest of exactly 10 MiB, as ReadAtMost does once the limit is read', async () => {
    // upstream extractFromFile reads with ReadAtMost(file, maxConfigLength): a file of the limit
    // itself is an error, one byte less is read.
    const json = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'big' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    await writeFile(join(dir, 'big.json'), json.padEnd(10 * 1024 * 1024, ' '));
    await writeFile(
      join(dir, 'fits.json'),
      json.replace('"big"', '"fits"').padEnd(10 * 1024 * 1024 - 1, ' '),
    );
    const h = await harness({ watch: false });
    expect(h.take()).toEqual([{ op: 'ADD', names: ['fits-node1'] }]);
    expect(h.source.errors.map((e) => [e.file, e.field])).toEqual([[join(dir, 'big.json'), '<document>']]);
    await h.stop();
  });

  it('watches a single file path', async () => {
    const file = join(dir, 'only.yaml');
    await writeFile(file, manifest('only'));
    await writeFile(join(dir, 'other.yaml'), manifest('other'));
    const h = await harness({ path: file });
    expect(h.take()).toEqual([{ op: 'ADD', names: ['only-node1'] }]);
    await writeFile(file, manifest('only', 'busybox:1'));
    await h.settle();
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['only-node1'] },
      { op: 'ADD', names: ['only-node1'] },
    ]);
    // A bad single file keeps the last state.
    await writeFile(file, 'kind: Pod\n  broken: [');
    await h.settle();
    expect(h.take()).toEqual([]);
    expect(h.source.errors.map((e) => e.file)).toEqual([file]);
    await unlink(file);
    await h.settle();
    expect(h.take()).toEqual([{ op: 'REMOVE', names: ['only-node1'] }]);
    await h.stop();
  });

  it('without a watcher, changes arrive with the 20 s period and not before', async () => {
    const h = await harness({ watch: false });
    h.take();
    await writeFile(join(dir, 'p.yaml'), manifest('p'));
    h.clock.advance(19_999);
    await h.source.whenIdle();
    expect(h.take()).toEqual([]);
    h.clock.advance(1);
    await h.source.whenIdle();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['p-node1'] }]);
    await h.stop();
  });

  it('sees an in-place edit of the same size whose modification time was put back', async () => {
    const h = await harness({ watch: false });
    h.take();
    const file = join(dir, 'p.yaml');
    await writeFile(file, manifest('p', 'nginx:1.27'));
    const { mtime } = await stat(file);
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([{ op: 'ADD', names: ['p-node1'] }]);
    // Unchanged: the period re-list sends nothing new.
    h.clock.advance(20_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([]);
    // Same length, same modification time: only the change time (and the content) differ.
    await writeFile(file, manifest('p', 'nginx:1.28'));
    await utimes(file, mtime, mtime);
    h.clock.advance(20_000);
    await h.source.whenIdle();
    // A new spec is a new static pod UID: the old pod goes, the new one comes.
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['p-node1'] },
      { op: 'ADD', names: ['p-node1'] },
    ]);
    await h.stop();
  });

  it('sends nothing after stop', async () => {
    const h = await harness({ watch: false });
    h.take();
    await h.stop();
    await writeFile(join(dir, 'late.yaml'), manifest('late'));
    h.clock.advance(60_000);
    await h.source.whenIdle();
    expect(h.take()).toEqual([]);
  });
});
