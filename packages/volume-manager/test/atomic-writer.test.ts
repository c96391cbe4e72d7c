import fsSync, { promises as fs } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { FakeClock } from '@kubelet-kit/core/testing';
import {
  AtomicWriter,
  AtomicWriterError,
  DATA_DIR_NAME,
  type FileProjection,
  validatePath,
} from '@kubelet-kit/volume-manager';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mode, readText, tempDir } from './helpers.js';

type PayloadSpec = Record<string, string | [string, number]>;

function payload(spec: PayloadSpec): Map<string, FileProjection> {
  const m = new Map<string, FileProjection>();
  for (const [k, v] of Object.entries(spec)) {
    m.set(k, typeof v === 'string' ? { data: v, mode: 0o644 } : { data: v[0], mode: v[1] });
  }
  return m;
}

let dir: string;
let writer: AtomicWriter;

beforeEach(async () => {
  dir = await tempDir('aw-');
  writer = new AtomicWriter({ targetDir: dir, clock: new FakeClock(Date.UTC(2016, 1, 1, 15, 4, 5)) });
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** Checks every payload file through its user-visible path: content and mode. */
async function checkVolumeContents(spec: PayloadSpec): Promise<void> {
  for (const [k, v] of Object.entries(spec)) {
    const [data, m] = typeof v === 'string' ? [v, 0o644] : v;
    const clean = path.posix.normalize(k);
    expect(await readText(path.join(dir, clean)), k).toBe(data);
    expect(await mode(path.join(dir, clean)), k).toBe(m);
  }
  // Nothing visible besides the payload's top-level entries and the writer's own names.
  const tops = new Set(Object.keys(spec).map((k) => path.posix.normalize(k).split('/')[0]));
  for (const entry of await fs.readdir(dir)) {
    if (entry.startsWith('..')) continue;
    expect(tops.has(entry), `unexpected entry ${entry}`).toBe(true);
  }
}

async function dataTarget(): Promise<string> {
  return fs.readlink(path.join(dir, DATA_DIR_NAME));
}

describe('validatePath (TestValidatePath)', () => {
  const cases: [string, string, boolean][] = [
    ['valid 1', 'i/am/well/behaved.txt', true],
    ['valid 2', 'keepyourheaddownandfollowtherules.txt', true],
    ['dotfile', '.dotfile', true],
    ['dot dir', '.foo/bar', true],
    ['max path length', `${'a/'.repeat(2048)}b`, false],
    ['max file length', 'a'.repeat(256), false],
    ['file of 255', 'a'.repeat(255), true],
    ['absolute failure', '/dev/null', false],
    ['reserved path', '..sneaky.txt', false],
    ['contains doubledot 1', 'hello/there/../../../../../../etc/passwd', false],
    ['contains doubledot 2', 'hello/../etc/somethingbad', false],
    ['trailing doubledot', 'hello/..', false],
    ['doubledot element later is fine when not exactly ..', 'a/..b', true],
    ['empty', '', false],
  ];
  it.each(cases)('%s', (_name, p, valid) => {
    if (valid) expect(() => validatePath(p)).not.toThrow();
    else expect(() => validatePath(p)).toThrow(AtomicWriterError);
  });
});

describe('AtomicWriter.write once (TestWriteOnce)', () => {
  const cases: [string, PayloadSpec, boolean][] = [
    ['invalid payload 1', { foo: 'foo', '..bar': 'bar', binary: 'binary' }, false],
    ['invalid payload 2', { 'foo/../bar': 'foo' }, false],
    ['absolute path', { '/etc/passwd': 'x' }, false],
    ['basic 1', { foo: 'foo', bar: 'bar' }, true],
    ['basic 2', { binary: '\u0000\u0001\u0002\u00ff', '.binary.bin': 'x' }, true],
    ['basic mode 1', { foo: ['foo', 0o777], bar: ['bar', 0o400] }, true],
    ['dotfiles', { '.dotfile': 'dotfile', '.dotfile.file': 'dotfile.file' }, true],
    ['dotfiles mode', { '.dotfile': ['dotfile', 0o411], '.dotfile.file': ['dotfile.file', 0o600] }, true],
    ['subdirectories 1', { 'foo/bar.txt': 'foo/bar', 'bar/zab.txt': 'bar/zab.txt' }, true],
    [
      'subdirectories mode 1',
      { 'foo/bar.txt': ['foo/bar', 0o400], 'bar/zab.txt': ['bar/zab.txt', 0o644] },
      true,
    ],
    ['subdirectories 2', { 'foo//bar.txt': 'foo//bar', 'bar///bar/zab.txt': 'bar/../bar/zab.txt' }, true],
    [
      'subdirectories 3',
      { 'foo/bar1.txt': 'foo/bar1', 'foo/bar2.txt': 'foo/bar2', 'foo/bar3.txt': 'foo/bar3' },
      true,
    ],
    [
      'kitchen sink',
      {
        'foo/bar.txt': ['foo/bar', 0o644],
        'bar/zab.txt': ['bar/zab.txt', 0o400],
        'foo/blaz/bar.txt': ['foo/blaz/bar', 0o600],
        'root.txt': ['root', 0o400],
        '.dotfile': ['dotfile', 0o777],
      },
      true,
    ],
  ];
  it.each(cases)('%s', async (_name, spec, success) => {
    if (!success) {
      await expect(writer.write(payload(spec))).rejects.toMatchObject({ code: 'InvalidPath' });
      expect(await fs.readdir(dir)).toEqual([]);
      return;
    }
    expect(await writer.write(payload(spec))).toBe(true);
    await checkVolumeContents(spec);
    // The layout: ..data → ..<timestamp>.<random>, a relative sibling.
    expect(await dataTarget()).toMatch(/^\.\.2016_02_01_15_04_05\.[A-Za-z0-9]+$/);
    for (const top of new Set(Object.keys(spec).map((k) => path.posix.normalize(k).split('/')[0] ?? ''))) {
      expect(await fs.readlink(path.join(dir, top))).toBe(`..data/${top}`);
    }
  });

  it('modes ignore the umask', async () => {
    const old = process.umask(0o077);
    try {
      await writer.write(payload({ a: ['a', 0o666], 'd/b': ['b', 0o644] }));
    } finally {
      process.umask(old);
    }
    expect(await mode(path.join(dir, 'a'))).toBe(0o666);
    expect(await mode(path.join(dir, 'd/b'))).toBe(0o644);
    expect(await mode(path.join(dir, await dataTarget()))).toBe(0o755);
  });

  it('fails when the target directory does not exist (TestNewAtomicWriter)', async () => {
    const missing = new AtomicWriter({ targetDir: path.join(dir, 'nope') });
    await expect(missing.write(payload({ a: 'a' }))).rejects.toMatchObject({ code: 'TargetNotFound' });
  });

  it('runs setPerms on the new data directory before it becomes visible', async () => {
    const seen: string[] = [];
    await writer.write(payload({ a: 'a' }), async (sub) => {
      seen.push(sub);
      await expect(fs.readlink(path.join(dir, DATA_DIR_NAME))).rejects.toThrow();
      await fs.writeFile(path.join(dir, sub, 'perms-ran'), '');
    });
    expect(seen).toEqual([await dataTarget()]);
    await expect(fs.stat(path.join(dir, DATA_DIR_NAME, 'perms-ran'))).resolves.toBeDefined();
  });
});

describe('AtomicWriter updates (TestUpdate, TestPathsToRemove)', () => {
  const cases: [string, PayloadSpec, PayloadSpec, boolean][] = [
    ['update', { foo: 'foo', bar: 'bar' }, { foo: 'foo2', bar: 'bar2' }, true],
    ['no update', { foo: 'foo', bar: 'bar' }, { foo: 'foo', bar: 'bar' }, false],
    [
      'no update 2',
      { 'foo/bar.txt': 'foo', 'bar/zab.txt': 'bar' },
      { 'foo/bar.txt': 'foo', 'bar/zab.txt': 'bar' },
      false,
    ],
    ['mode-only change is no update', { foo: ['foo', 0o644] }, { foo: ['foo', 0o600] }, false],
    ['add 1', { 'foo/bar.txt': 'foo' }, { 'foo/bar.txt': 'foo', 'bar/zab.txt': 'bar' }, true],
    ['add 2', { 'foo/bar.txt': 'foo' }, { 'foo/bar.txt': 'foo', 'foo/zab.txt': 'zab' }, true],
    ['add 3', { 'foo/bar.txt': 'foo' }, { 'foo/bar.txt': 'foo', 'bar/zab/zab.txt': 'zab' }, true],
    ['delete 1', { 'foo/bar.txt': 'foo', 'bar/zab.txt': 'zab' }, { 'foo/bar.txt': 'foo' }, true],
    ['delete 2', { 'foo/bar.txt': 'foo', 'foo/zab.txt': 'zab' }, { 'foo/bar.txt': 'foo' }, true],
    ['delete 3', { 'foo/bar/baz.txt': 'baz', 'foo/zab.txt': 'zab' }, { 'foo/zab.txt': 'zab' }, true],
    ['delete 4', { a: 'a', b: 'b', 'c/d': 'd' }, {}, true],
  ];
  it.each(cases)('%s', async (_name, first, next, shouldWrite) => {
    await writer.write(payload(first));
    const before = await dataTarget();
    expect(await writer.write(payload(next))).toBe(shouldWrite);
    const after = await dataTarget();
    if (shouldWrite) {
      expect(after).not.toBe(before);
      // The old data directory is gone.
      await expect(fs.stat(path.join(dir, before))).rejects.toThrow();
    } else {
      expect(after).toBe(before);
    }
    await checkVolumeContents(shouldWrite ? next : first);
    // Exactly one timestamped directory remains.
    const tsDirs = (await fs.readdir(dir)).filter((e) => e.startsWith('..') && e !== DATA_DIR_NAME);
    expect(tsDirs).toEqual([after]);
  });

  it('re-creates a missing user-visible link without rewriting data (issue 121472)', async () => {
    await writer.write(payload({ foo: 'foo' }));
    const before = await dataTarget();
    await fs.unlink(path.join(dir, 'foo'));
    expect(await writer.write(payload({ foo: 'foo' }))).toBe(false);
    expect(await readText(path.join(dir, 'foo'))).toBe('foo');
    expect(await dataTarget()).toBe(before);
  });

  it('handles many updates in a row (TestMultipleUpdates)', async () => {
    for (let i = 0; i < 20; i++) {
      const spec: PayloadSpec = { [`f${i % 3}`]: `v${i}`, 'sub/x': `x${i}` };
      await writer.write(payload(spec));
      await checkVolumeContents(spec);
    }
  });
});

describe('AtomicWriter and symlink escapes', () => {
  let outside: string;
  beforeEach(async () => {
    outside = await tempDir('aw-outside-');
    await fs.writeFile(path.join(outside, 'foo'), 'precious');
  });
  afterEach(async () => {
    await fs.rm(outside, { recursive: true, force: true });
  });

  it('does not follow a ..data link that points outside the volume', async () => {
    await fs.symlink(outside, path.join(dir, DATA_DIR_NAME));
    expect(await writer.write(payload({ foo: 'new', bar: 'bar' }))).toBe(true);
    expect(await readText(path.join(outside, 'foo'))).toBe('precious');
    expect(await fs.readdir(outside)).toEqual(['foo']);
    expect(await dataTarget()).toMatch(/^\.\.2016/);
  });

  it('never writes through a link planted at a user-visible name', async () => {
    await fs.symlink(outside, path.join(dir, 'conf'));
    await writer.write(payload({ 'conf/foo': 'evil' }));
    expect(await readText(path.join(outside, 'foo'))).toBe('precious');
  });

  it('does not read through a link planted in the data directory when comparing', async () => {
    await writer.write(payload({ foo: 'precious' }));
    const ts = await dataTarget();
    await fs.rm(path.join(dir, ts, 'foo'));
    await fs.symlink(path.join(outside, 'foo'), path.join(dir, ts, 'foo'));
    // The bytes behind the link are equal, but a link is never one of our files: rewrite.
    expect(await writer.write(payload({ foo: 'precious' }))).toBe(true);
    expect((await fs.lstat(path.join(dir, DATA_DIR_NAME, 'foo'))).isFile()).toBe(true);
    expect(await readText(path.join(outside, 'foo'))).toBe('precious');
  });
});

// The reader: resolves ..data once per round and reads every file through it, as a consistent
// reader must; it also reads a user-visible link on its own. Each file is `<version>:` repeated.
const readerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const dir = workerData.dir;
let stop = false, reads = 0, mixes = 0, torn = 0, retries = 0, visibleMissing = 0;
const sample = [];
parentPort.on('message', () => { stop = true; });
function version(text) {
  const parts = text.split(':').filter(Boolean);
  const v = parts[0];
  if (parts.length !== 64 || parts.some((p) => p !== v)) { torn++; return undefined; }
  return v;
}
function round() {
  let real;
  try { real = fs.realpathSync(path.join(dir, '..data')); } catch { retries++; return; }
  let a, b, c;
  try {
    a = fs.readFileSync(path.join(real, 'a'), 'utf8');
    b = fs.readFileSync(path.join(real, 'b'), 'utf8');
    c = fs.readFileSync(path.join(real, 'sub/c'), 'utf8');
  } catch { retries++; return; }
  const va = version(a), vb = version(b), vc = version(c);
  reads++;
  if (va !== vb || vb !== vc) { mixes++; if (sample.length < 5) sample.push([va, vb, vc]); }
  try { version(fs.readFileSync(path.join(dir, 'a'), 'utf8')); } catch (e) { if (e.code === 'ENOENT') visibleMissing++; else retries++; }
}
const pause = new Int32Array(new SharedArrayBuffer(4));
function loop() {
  const end = Date.now() + 5;
  // Short pauses leave the writer's I/O threads a CPU on small machines.
  while (!stop && Date.now() < end) { round(); Atomics.wait(pause, 0, 0, 0.2); }
  if (stop) parentPort.postMessage({ reads, mixes, torn, retries, visibleMissing, sample });
  else setImmediate(loop);
}
loop();
`;

interface RaceResult {
  reads: number;
  mixes: number;
  torn: number;
  retries: number;
  /** ENOENT reading a payload file through its user-visible path. */
  visibleMissing: number;
  sample: unknown[];
}

const versionFile = (v: number) => `${v}:`.repeat(64);
const versionPayload = (v: number) =>
  new Map<string, FileProjection>([
    ['a', { data: versionFile(v), mode: 0o644 }],
    ['b', { data: versionFile(v), mode: 0o644 }],
    ['sub/c', { data: versionFile(v), mode: 0o600 }],
  ]);

/** Runs `updates` writes while a worker thread reads; returns what the reader saw. */
async function race(
  target: string,
  updates: number,
  write: (v: number) => Promise<unknown>,
): Promise<RaceResult> {
  await write(0);
  const worker = new Worker(readerSource, { eval: true, workerData: { dir: target } });
  const result = new Promise<RaceResult>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  // An in-loop reader too: it runs between the writer's awaits, on the same event loop.
  const local = { reads: 0, mixes: 0, visibleMissing: 0 };
  let reading = true;
  let turn = 0;
  const readLocal = () => {
    if (!reading) return;
    // Every other turn, over the first quarter of the updates: each extra event-loop turn slows
    // the writer, and that many reads between awaits land in every one of its steps many times.
    if (turn++ % 2 !== 0) {
      setImmediate(readLocal);
      return;
    }
    try {
      const real = fsSync.realpathSync(path.join(target, DATA_DIR_NAME));
      const vs = ['a', 'b', 'sub/c'].map((f) => fsSync.readFileSync(path.join(real, f), 'utf8'));
      local.reads++;
      if (vs.some((x) => x !== vs[0])) local.mixes++;
    } catch {
      // The generation resolved was retired meanwhile (cannot happen in one synchronous turn).
      local.mixes++;
    }
    try {
      fsSync.readFileSync(path.join(target, 'sub/c'), 'utf8');
    } catch {
      local.visibleMissing++;
    }
    setImmediate(readLocal);
  };
  setImmediate(readLocal);
  for (let v = 1; v <= updates; v++) {
    if (v > updates / 4) reading = false;
    await write(v);
  }
  reading = false;
  worker.postMessage('stop');
  const r = await result;
  r.mixes += local.mixes;
  r.visibleMissing += local.visibleMissing;
  r.reads += local.reads;
  await worker.terminate();
  return r;
}

/** A directory on tmpfs when the host has one (as secrets are), else the test's directory. */
async function raceDir(): Promise<{ target: string; cleanup: () => Promise<void> }> {
  // A loaded disk makes 10,000 directory swaps take minutes; the property does not depend on it.
  const shm = await fs.stat('/dev/shm').then(
    (st) => st.isDirectory(),
    () => false,
  );
  if (!shm) return { target: dir, cleanup: async () => {} };
  const target = await fs.mkdtemp('/dev/shm/aw-race-');
  return { target, cleanup: () => fs.rm(target, { recursive: true, force: true }) };
}

describe('AtomicWriter under a concurrent reader', () => {
  it('no reader ever sees a mix of two versions across 10,000 updates', { timeout: 120_000 }, async () => {
    const { target, cleanup } = await raceDir();
    try {
      const w = new AtomicWriter({ targetDir: target });
      const r = await race(target, 10_000, (v) => w.write(versionPayload(v)));
      expect(r.mixes, JSON.stringify(r.sample)).toBe(0);
      expect(r.torn).toBe(0);
      expect(r.visibleMissing).toBe(0);
      expect(r.reads).toBeGreaterThan(100);
      expect(await readText(path.join(target, 'a'))).toBe(versionFile(10_000));
      const tsDirs = (await fs.readdir(target)).filter((e) => e.startsWith('..') && e !== DATA_DIR_NAME);
      expect(tsDirs).toHaveLength(1);
    } finally {
      await cleanup();
    }
  });

  it('the same reader does catch a writer that updates files in place (control)', {
    timeout: 60_000,
  }, async () => {
    const { target, cleanup } = await raceDir();
    try {
      await fs.mkdir(path.join(target, 'fixed/sub'), { recursive: true });
      await fs.symlink('fixed', path.join(target, DATA_DIR_NAME));
      await fs.symlink('..data/a', path.join(target, 'a'));
      const r = await race(target, 3000, async (v) => {
        for (const f of ['a', 'b', 'sub/c'])
          await fs.writeFile(path.join(target, 'fixed', f), versionFile(v));
      });
      expect(r.mixes + r.torn).toBeGreaterThan(0);
    } finally {
      await cleanup();
    }
  });
});
