import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InMemoryLogger } from '@kubelet-kit/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fileNameOf } from '../src/disk-store.js';
import { DiskOfflineStore } from '../src/index.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-disk-store-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(root, { recursive: true, force: true });
});

const files = (sub: string) => fs.readdirSync(path.join(root, sub)).sort();
const warnings = (logger: InMemoryLogger) => logger.records.filter((r) => r.level === 'warn');

describe('DiskOfflineStore', () => {
  it('keeps one private JSON file per object, one private folder per kind', async () => {
    const store = new DiskOfflineStore({ directory: root });
    await store.put('Secret', 'default/db', { data: { password: 'czNjcmV0' } });
    await store.put('Pod', 'default/web', { metadata: { name: 'web' } });
    expect(files('secrets')).toEqual([fileNameOf('default/db')]);
    expect(fileNameOf('default/db')).toBe('default%2Fdb.json');
    expect(fs.statSync(path.join(root, 'secrets', 'default%2Fdb.json')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(root, 'secrets')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(root).mode & 0o777).toBe(0o700);
    expect(await store.get('Secret', 'default/db')).toEqual({ data: { password: 'czNjcmV0' } });
    expect(await store.get('Pod', 'default/missing')).toBeUndefined();
    expect(await store.list('Pod')).toEqual([{ key: 'default/web', value: { metadata: { name: 'web' } } }]);
  });

  it('makes an existing folder private', async () => {
    fs.chmodSync(root, 0o755);
    fs.mkdirSync(path.join(root, 'tokens'), { mode: 0o777 });
    fs.chmodSync(path.join(root, 'tokens'), 0o777);
    await new DiskOfflineStore({ directory: root }).put('ServiceAccountToken', 'k', 't');
    expect(fs.statSync(root).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(root, 'tokens')).mode & 0o777).toBe(0o700);
  });

  it('finds what it wrote after a restart (a new store over the same folder)', async () => {
    await new DiskOfflineStore({ directory: root }).put('Node', 'node-a', { metadata: { name: 'node-a' } });
    const again = new DiskOfflineStore({ directory: root });
    expect(await again.get('Node', 'node-a')).toEqual({ metadata: { name: 'node-a' } });
  });

  it('hashes keys too long for a file name and still lists them by key', async () => {
    const store = new DiskOfflineStore({ directory: root });
    const long = `ns/${'x'.repeat(300)}`;
    await store.put('ConfigMap', long, { n: 1 });
    const [name] = files('configmaps');
    expect(name).toMatch(/^h-[0-9a-f]{64}\.json$/);
    expect(await store.get('ConfigMap', long)).toEqual({ n: 1 });
    expect((await store.list('ConfigMap')).map((e) => e.key)).toEqual([long]);
    // A key that starts with a dot does not make a hidden (skipped) file.
    await store.put('ConfigMap', '.hidden', 2);
    expect(await store.list('ConfigMap')).toHaveLength(2);
  });

  it('removes a key; removing a missing key is no error', async () => {
    const store = new DiskOfflineStore({ directory: root });
    await store.put('Pod', 'default/web', 1);
    await store.delete('Pod', 'default/web');
    await store.delete('Pod', 'default/web');
    expect(await store.list('Pod')).toEqual([]);
  });

  it('lands writes of one key in call order, and a read sees every write made before it', async () => {
    const store = new DiskOfflineStore({ directory: root });
    const writes = [];
    for (let i = 0; i < 20; i++) writes.push(store.put('PodStatus', 'uid-1', { n: i }));
    writes.push(store.delete('PodStatus', 'uid-1'));
    writes.push(store.put('PodStatus', 'uid-1', { n: 'last' }));
    // Not awaited: the read queues behind the writes already made.
    expect(await store.get('PodStatus', 'uid-1')).toEqual({ n: 'last' });
    await Promise.all(writes);
    // No temp file is left behind.
    expect(files('pod-statuses')).toEqual(['uid-1.json']);
  });

  it('writes atomically: a write that fails before the rename leaves the old object whole', async () => {
    const store = new DiskOfflineStore({ directory: root });
    await store.put('Pod', 'default/web', { version: 1 });
    vi.spyOn(fsp, 'rename').mockRejectedValueOnce(
      Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }),
    );
    await expect(store.put('Pod', 'default/web', { version: 2 })).rejects.toThrow('EIO');
    expect(await store.get('Pod', 'default/web')).toEqual({ version: 1 });
    // The temp file went with the failure, and the next write goes through.
    expect(files('pods')).toEqual(['default%2Fweb.json']);
    await store.put('Pod', 'default/web', { version: 3 });
    expect(await store.get('Pod', 'default/web')).toEqual({ version: 3 });
  });

  it('ignores a temp file left by a crash mid-write', async () => {
    const store = new DiskOfflineStore({ directory: root });
    await store.put('Pod', 'default/web', { version: 1 });
    fs.writeFileSync(path.join(root, 'pods', '.default%2Fweb.json.123.0.tmp'), '{"key":"default/web","val');
    expect(await store.list('Pod')).toEqual([{ key: 'default/web', value: { version: 1 } }]);
  });

  it('skips a corrupt file with a warning naming it, and serves the others', async () => {
    const logger = new InMemoryLogger();
    const store = new DiskOfflineStore({ directory: root, logger });
    await store.put('Pod', 'default/good', { ok: true });
    fs.writeFileSync(path.join(root, 'pods', 'default%2Fbad.json'), '{"key":"default/bad","value":{');
    fs.writeFileSync(path.join(root, 'pods', 'default%2Fodd.json'), '[1,2]');
    fs.mkdirSync(path.join(root, 'pods', 'default%2Fdir.json'));
    expect(await store.list('Pod')).toEqual([{ key: 'default/good', value: { ok: true } }]);
    expect(await store.get('Pod', 'default/bad')).toBeUndefined();
    const warned = warnings(logger).map((r) => String(r.fields.file));
    expect(warned).toEqual(
      expect.arrayContaining([
        path.join(root, 'pods', 'default%2Fbad.json'),
        path.join(root, 'pods', 'default%2Fodd.json'),
        path.join(root, 'pods', 'default%2Fdir.json'),
      ]),
    );
    expect(warnings(logger).every((r) => r.message === 'offline store: skipping an unreadable file')).toBe(
      true,
    );
    expect(warnings(logger).some((r) => /JSON/.test(String(r.fields.err)))).toBe(true);
    // A corrupt file is overwritten by the next write of its key.
    await store.put('Pod', 'default/bad', { fixed: true });
    expect(await store.get('Pod', 'default/bad')).toEqual({ fixed: true });
  });

  it('does not answer for a key whose file holds another key', async () => {
    const store = new DiskOfflineStore({ directory: root });
    fs.mkdirSync(path.join(root, 'pods'), { recursive: true });
    fs.writeFileSync(path.join(root, 'pods', 'default%2Fa.json'), '{"key":"default/b","value":1}');
    expect(await store.get('Pod', 'default/a')).toBeUndefined();
  });

  it('rejects an empty directory and an unknown kind with errors that say so', async () => {
    expect(() => new DiskOfflineStore({ directory: '' })).toThrow('offline store: directory is empty');
    const store = new DiskOfflineStore({ directory: root });
    await expect(store.put('Bogus' as never, 'k', 1)).rejects.toThrow('offline store: unknown kind "Bogus"');
  });

  it('reports a root it cannot create as a rejected call, not a crash', async () => {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, '');
    const store = new DiskOfflineStore({ directory: path.join(file, 'store') });
    await expect(store.list('Pod')).rejects.toThrow(/ENOTDIR|EEXIST/);
    await expect(store.put('Pod', 'k', 1)).rejects.toThrow(/ENOTDIR|EEXIST/);
  });
});
