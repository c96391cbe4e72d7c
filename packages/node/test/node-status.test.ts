import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeResources, parseReservation, parseResourceListFlag } from '../src/node-status.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-node-status-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('reservation flags', () => {
  it('parses --system-reserved lists, repeated or comma-separated', () => {
    expect(parseResourceListFlag('--system-reserved', ['cpu=100m,memory=100Mi', 'pid=1000'])).toEqual({
      cpu: '100m',
      memory: '100Mi',
      pid: '1000',
    });
    expect(() => parseResourceListFlag('--kube-reserved', ['cpu'])).toThrow(
      '--kube-reserved: malformed pair, expect string=string: "cpu"',
    );
  });

  it('takes cpu in millicores and the rest in units; refuses unknown, bad and negative amounts', () => {
    expect(
      parseReservation('--system-reserved', { cpu: '0.5', memory: '1Gi', 'ephemeral-storage': '1G' }),
    ).toEqual({
      cpu: 500,
      memory: 2 ** 30,
      'ephemeral-storage': 1e9,
    });
    expect(() => parseReservation('--system-reserved', { 'nvidia.com/gpu': '1' })).toThrow(
      'cannot reserve "nvidia.com/gpu" resource',
    );
    expect(() => parseReservation('--kube-reserved', { cpu: 'x' })).toThrow(
      '--kube-reserved: cpu="x" is not a quantity',
    );
    expect(() => parseReservation('--kube-reserved', { cpu: '-1' })).toThrow('cannot be negative');
  });
});

describe('nodeResources', () => {
  function pool(name: string, pages: number): void {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'nr_hugepages'), `${pages}\n`);
  }

  it("is the status setter's allocatable: reservations, eviction thresholds and hugepages off", () => {
    pool('hugepages-2048kB', 10);
    const r = nodeResources({
      rootDirectory: dir,
      hugePagesDirectory: dir,
      maxPods: 30,
      extendedResources: { 'example.com/foo': 2 },
      systemReserved: { cpu: '100m', memory: '100Mi' },
      kubeReserved: { cpu: '50m', memory: '50Mi', 'ephemeral-storage': '1Mi' },
    });
    const st = fs.statfsSync(dir);
    const storage = st.blocks * st.bsize;
    expect(r.allocatable).toEqual({
      cpu: (os.cpus().length * 1000 - 150) / 1000,
      // 100Mi + 50Mi reserved, 100Mi for memory.available, 20Mi of hugepages.
      memory: os.totalmem() - 270 * 2 ** 20,
      pods: 30,
      ephemeralStorage: storage - 2 ** 20 - Math.floor(storage * 0.1),
      scalarResources: { 'hugepages-2Mi': 20 * 2 ** 20, 'example.com/foo': 2 },
    });
    expect(r.machineInfo().hugePages).toEqual([{ pageSizeKiB: 2048, numPages: 10 }]);
  });

  it('offers a given --ephemeral-storage whole', () => {
    const r = nodeResources({ rootDirectory: dir, hugePagesDirectory: dir, ephemeralStorageBytes: 42 });
    expect(r.allocatable.ephemeralStorage).toBe(42);
    expect(r.allocatable.pods).toBe(110);
  });
});
