import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FakeClock } from '@kubelet-kit/core/testing';
import { LocalObjectGetter } from '@kubelet-kit/volume-manager';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

describe('LocalObjectGetter', () => {
  let dir: string;
  let clock: FakeClock;
  beforeEach(async () => {
    dir = await tempDir('objects-');
    clock = new FakeClock();
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('reads ConfigMaps and Secrets from YAML (multi-document, Lists) and JSON', async () => {
    await fs.writeFile(
      path.join(dir, 'app.yaml'),
      [
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ns}\ndata: {a: "1"}',
        'apiVersion: v1\nkind: Secret\nmetadata: {name: sec}\nstringData: {pw: x}',
        'apiVersion: v1\nkind: Pod\nmetadata: {name: ignored}',
      ].join('\n---\n'),
    );
    await fs.writeFile(
      path.join(dir, 'list.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'from-list', namespace: 'ns' },
            data: { b: '2' },
          },
        ],
      }),
    );
    await fs.writeFile(path.join(dir, 'notes.txt'), 'kind: ConfigMap');
    const getter = new LocalObjectGetter({ directory: dir, clock, cacheTtlMs: 0 });
    expect((await getter.getConfigMap('ns', 'cfg'))?.data).toEqual({ a: '1' });
    expect((await getter.getConfigMap('ns', 'from-list'))?.data).toEqual({ b: '2' });
    expect((await getter.getSecret('default', 'sec'))?.stringData).toEqual({ pw: 'x' });
    expect(await getter.getSecret('ns', 'sec')).toBeUndefined();
    expect(await getter.getConfigMap('ns', 'ignored')).toBeUndefined();
  });

  it('sees changes after its TTL, including removed files, and survives a broken file', async () => {
    const file = path.join(dir, 'cm.yaml');
    await fs.writeFile(file, 'kind: ConfigMap\nmetadata: {name: cfg}\ndata: {v: one}');
    const getter = new LocalObjectGetter({ directory: dir, clock, cacheTtlMs: 1000 });
    expect((await getter.getConfigMap('default', 'cfg'))?.data?.v).toBe('one');
    await fs.writeFile(file, 'kind: ConfigMap\nmetadata: {name: cfg}\ndata: {v: two, extra: longer}');
    expect((await getter.getConfigMap('default', 'cfg'))?.data?.v).toBe('one');
    clock.advance(1000);
    expect((await getter.getConfigMap('default', 'cfg'))?.data?.v).toBe('two');
    await fs.writeFile(path.join(dir, 'broken.yaml'), 'kind: [unclosed');
    await fs.rm(file);
    clock.advance(1000);
    expect(await getter.getConfigMap('default', 'cfg')).toBeUndefined();
  });

  it('a missing directory holds no objects', async () => {
    const getter = new LocalObjectGetter({ directory: path.join(dir, 'nope'), clock });
    expect(await getter.getConfigMap('default', 'x')).toBeUndefined();
  });
});
