import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hugePages, nodeAllocatable, nodeEphemeralStorage } from '../src/node-allocatable.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-allocatable-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function pool(name: string, pages: string | undefined): void {
  fs.mkdirSync(path.join(dir, name));
  if (pages !== undefined) fs.writeFileSync(path.join(dir, name, 'nr_hugepages'), pages);
}

describe('hugePages', () => {
  it('gives each pool size as cadvisor names it, in bytes', () => {
    pool('hugepages-2048kB', '3\n');
    pool('hugepages-1048576kB', '1\n');
    pool('hugepages-64kB', '2\n');
    expect(hugePages(dir)).toEqual({
      'hugepages-2Mi': 3 * 2 * 2 ** 20,
      'hugepages-1Gi': 2 ** 30,
      'hugepages-64Ki': 2 * 64 * 1024,
    });
  });

  it('counts an unreadable pool as none, skips other entries, and has none without the directory', () => {
    pool('hugepages-2048kB', undefined);
    pool('not-a-pool', '5');
    expect(hugePages(dir)).toEqual({ 'hugepages-2Mi': 0 });
    expect(hugePages(path.join(dir, 'missing'))).toEqual({});
  });
});

describe('nodeEphemeralStorage', () => {
  it("is the filesystem's capacity less the 10 % eviction threshold, from the nearest existing ancestor", () => {
    const st = fs.statfsSync(dir);
    const capacity = st.blocks * st.bsize;
    const expected = capacity - Math.floor(capacity * 0.1);
    expect(nodeEphemeralStorage(dir)).toBe(expected);
    expect(nodeEphemeralStorage(path.join(dir, 'not', 'made', 'yet'))).toBe(expected);
  });
});

describe('nodeAllocatable', () => {
  it("offers the host's cores and memory, 110 pods, and the hugepages with extended resources over them", () => {
    pool('hugepages-2048kB', '1');
    const a = nodeAllocatable({
      rootDirectory: dir,
      hugePagesDirectory: dir,
      extendedResources: { 'example.com/foo': 2 },
    });
    expect(a).toEqual({
      cpu: os.cpus().length,
      memory: os.totalmem(),
      pods: 110,
      ephemeralStorage: nodeEphemeralStorage(dir),
      scalarResources: { 'hugepages-2Mi': 2 ** 21, 'example.com/foo': 2 },
    });
  });

  it('takes max pods and ephemeral storage from the flags', () => {
    const a = nodeAllocatable({
      rootDirectory: dir,
      hugePagesDirectory: dir,
      maxPods: 5,
      ephemeralStorageBytes: 42,
    });
    expect(a.pods).toBe(5);
    expect(a.ephemeralStorage).toBe(42);
  });
});
