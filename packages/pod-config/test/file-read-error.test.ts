// A manifest that stat sees but that cannot be read (permissions, I/O errors). The tests run as
// root, which reads any file, so the read failure is injected through a mock of node:fs.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodUpdate } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FileSource, PodConfig } from '../src/index.js';

const unreadable = vi.hoisted(() => new Set<string>());

vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  const readFileSync = ((path: Parameters<typeof actual.readFileSync>[0], ...rest: unknown[]) => {
    if (unreadable.has(String(path))) {
      throw Object.assign(new Error(`EACCES: permission denied, open '${String(path)}'`), { code: 'EACCES' });
    }
    return (actual.readFileSync as (...args: unknown[]) => unknown)(path, ...rest);
  }) as typeof actual.readFileSync;
  return { ...actual, readFileSync, default: { ...actual, readFileSync } };
});

function manifest(name: string, image: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers: [{name: app, image: '${image}'}]\n`;
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pod-config-read-'));
  unreadable.clear();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function harness(path: string) {
  const clock = new FakeClock();
  const config = new PodConfig({ clock, bufferUpdates: false });
  const updates: PodUpdate[] = [];
  config.on('update', (u) => updates.push(u));
  const source = new FileSource({ path, nodeName: 'node1', clock, watch: false });
  await source.start(config.channel(source.name));
  const take = () => updates.splice(0).map((u) => ({ op: u.op, names: u.pods.map((p) => p.metadata?.name) }));
  const relist = async () => {
    clock.advance(20_000);
    await source.whenIdle();
  };
  return { source, take, relist };
}

describe('FileSource and a manifest it cannot read', () => {
  it('keeps the last state of a single-file path it cannot read (upstream listConfig returns the read error)', async () => {
    const file = join(dir, 'only.yaml');
    await writeFile(file, manifest('only', 'nginx:1'));
    const h = await harness(file);
    expect(h.take()).toEqual([{ op: 'ADD', names: ['only-node1'] }]);
    await writeFile(file, manifest('only', 'nginx:2'));
    unreadable.add(file);
    await h.relist();
    expect(h.take()).toEqual([]);
    // Readable again: the new content replaces the pod.
    unreadable.clear();
    await h.relist();
    expect(h.take()).toEqual([
      { op: 'REMOVE', names: ['only-node1'] },
      { op: 'ADD', names: ['only-node1'] },
    ]);
    await h.source.stop();
  });

  it('leaves an unreadable file of a directory out of the SET (upstream extractFromDir skips it)', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a', 'nginx:1'));
    await writeFile(join(dir, 'b.yaml'), manifest('b', 'nginx:1'));
    const h = await harness(dir);
    expect(h.take()).toEqual([{ op: 'ADD', names: ['a-node1', 'b-node1'] }]);
    await writeFile(join(dir, 'b.yaml'), manifest('b', 'nginx:2'));
    unreadable.add(join(dir, 'b.yaml'));
    await h.relist();
    expect(h.take()).toEqual([{ op: 'REMOVE', names: ['b-node1'] }]);
    await h.source.stop();
  });
});
