// Fuzzing the whole agent through its manifest directory: 10,000 generated manifests (valid,
// mutated, truncated, huge, odd Unicode, multi-document, empty, binary) go file source → config
// merge → pod workers → kuberuntime over the in-memory CRI. Properties: nothing throws out of the
// agent (process-level handlers watched), every rejected file is logged naming the file and the
// field with a well-formed PodValidationError, and a good pod beside them keeps running.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LogFn, Logger, Pod } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import { InMemoryCriServer } from '@kubelet-kit/cri/testing';
import { decodeStaticPods, maxConfigLength, PodValidationError } from '@kubelet-kit/pod-config';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { type Agent, createAgent } from '../src/agent.js';
import { pump } from './pump.js';

const image = 'localhost/kubelet-kit/busybox:1.0';
const nodeName = 'fuzz-node';
/** Fixed, so a failure reproduces; override with FUZZ_SEED to explore. */
const seed = Number(process.env.FUZZ_SEED ?? 20261201);
const rounds = Number(process.env.FUZZ_ROUNDS ?? 100);
const filesPerRound = 100;

/**
 * A field path as pod-config writes them: `spec.containers[0].ports[1].containerPort`,
 * `metadata.labels[key]`, `metadata.labels["odd]key"]`, or a document marker.
 */
const fieldPath =
  /^(<document>|<root>|[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\]|\[[^\]"]*\])*)$/s;

function basePod(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: name.slice(0, 60) } },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'main',
          image,
          command: ['sleep', '3600'],
          env: [{ name: 'A', value: '1' }],
          ports: [{ containerPort: 80, name: 'http' }],
          resources: { limits: { cpu: '10m', memory: '16Mi' } },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [prefix];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [
    prefix,
    ...keys.flatMap((k) => paths((value as Record<string | number, unknown>)[k], [...prefix, k])),
  ];
}
const allPaths = paths(basePod('x')).filter((p) => p.length > 0);

/** Sets (or deletes, for undefined) the member at `p`; keys such as `__proto__` become own properties. */
function setAt(target: unknown, p: readonly (string | number)[], value: unknown): void {
  let node = target as Record<string | number, unknown>;
  for (const key of p.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object') return;
    node = next as Record<string | number, unknown>;
  }
  const last = p[p.length - 1]!;
  if (value === undefined) delete node[last];
  else Object.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true });
}

function deep(depth: number, leaf: unknown, asArray: boolean): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
  return v;
}

const oddStrings = fc.constantFrom(
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '\u202Eevil\u202C',
  'zero\u200Bwidth',
  '\uFEFFbom',
  'é'.normalize('NFD'),
  '🙂',
  'x'.repeat(300),
  'y'.repeat(5000),
  '',
  ' ',
  '\n',
);
const protoKeys = fc.constantFrom('__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString');
function protoObject(key: string, value: unknown): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  return o;
}

/** A value of the wrong kind (or an edge value of the right one) for any field. */
const badValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.constantFrom([], {}, [[]], [{}], true, false, 0, -1, -2147483649, 2 ** 53 + 1, 1e308, -1e308, 0.5),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '-0', '0x10', '010', 'true', 'null', '~'),
  oddStrings,
  fc.tuple(protoKeys, fc.anything({ maxDepth: 1 })).map(([k, v]) => protoObject(k, v)),
  fc.tuple(fc.integer({ min: 200, max: 1500 }), fc.boolean()).map(([d, a]) => deep(d, 'leaf', a)),
  fc.anything({ maxDepth: 2 }),
);

const podName = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/),
  fc.constant('good'),
  oddStrings,
);

/** One manifest's bytes, and a note of what it is (for failure messages). */
interface Manifest {
  readonly kind: string;
  readonly data: string | Uint8Array;
}

/** Nesting depth, without recursion. */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

function serialize(o: unknown, yaml: boolean): string {
  try {
    // The YAML serializer recurses per level: deep values go out as JSON.
    if (yaml && depthOf(o) > 100) return JSON.stringify(o) ?? 'null';
    return yaml ? YAML.stringify(o, { aliasDuplicateObjects: false }) : (JSON.stringify(o) ?? 'null');
  } catch {
    // A nesting too deep for the serializer's own recursion.
    return JSON.stringify(o) ?? 'null';
  }
}

const validPod = fc
  .tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/), fc.boolean())
  .map(([name, yaml]): Manifest => ({ kind: 'valid', data: serialize(basePod(name), yaml) }));

const mutatedPod = fc
  .tuple(
    podName,
    fc.array(fc.tuple(fc.constantFrom(...allPaths), badValue), { minLength: 1, maxLength: 3 }),
    fc.array(fc.tuple(fc.constantFrom(...allPaths), protoKeys, badValue), { maxLength: 1 }),
    fc.nat({ max: 3 }).map((n) => n === 0),
  )
  .map(([name, edits, inserts, yaml]): Manifest => {
    const pod = basePod(typeof name === 'string' ? name : 'x');
    for (const [p, v] of edits) setAt(pod, p, v);
    for (const [p, k, v] of inserts) {
      let node: unknown = pod;
      for (const key of p.slice(0, -1)) node = (node as Record<string | number, unknown> | undefined)?.[key];
      if (node !== null && typeof node === 'object' && !Array.isArray(node)) setAt(node, [k], v);
    }
    return { kind: 'mutated', data: serialize(pod, yaml) };
  });

const truncated = fc
  .tuple(fc.stringMatching(/^[a-z]{1,10}$/), fc.boolean(), fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([name, yaml, at]): Manifest => {
    const text = serialize(basePod(name), yaml);
    return { kind: 'truncated', data: text.slice(0, Math.floor(text.length * at)) };
  });

const multiDocument = fc
  .tuple(fc.stringMatching(/^[a-z]{1,10}$/), fc.stringMatching(/^[a-z]{1,10}$/), fc.nat({ max: 2 }))
  .map(([a, b, extra]): Manifest => {
    const docs = [YAML.stringify(basePod(a)), YAML.stringify(basePod(b)), ...Array(extra).fill('')];
    return { kind: 'multi-document', data: docs.join('---\n') };
  });

const empty = fc
  .constantFrom(
    '',
    ' ',
    '\n\n',
    '---\n',
    '---\n---\n',
    '# only a comment\n',
    '{}',
    '[]',
    'null',
    '~',
    '\uFEFF',
  )
  .map((data): Manifest => ({ kind: 'empty', data }));

const binary = fc
  .uint8Array({ minLength: 1, maxLength: 512 })
  .map((data): Manifest => ({ kind: 'binary', data }));

const yamlNasty = fc
  .constantFrom(
    'a: &a [*a]',
    'a: &x [1,2]\nb: [*x,*x,*x,*x,*x,*x,*x,*x]\nc: [*b,*b]',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: !!binary aGVsbG8=',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x, name: y}\nspec: {containers: [{name: c, image: i}]}',
    'apiVersion: v1\nkind: Pod\nmetadata: !!map {name: x}\nspec: {containers: [{name: c, image: !!int 5}]}',
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${'['.repeat(5000)}`,
    `${'- '.repeat(3000)}x`,
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","__proto__":{"polluted":true}},"spec":{"containers":[{"name":"c","image":"i"}]}}',
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":1e400}]}]}}',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, ports: [{containerPort: .nan}]}]}',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}], activeDeadlineSeconds: .inf}',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}], priority: 99999999999999999999}',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: x, creationTimestamp: 2026-13-45T99:99:99Z}\nspec: {containers: [{name: c, image: i}]}',
  )
  .map((data): Manifest => ({ kind: 'yaml-nasty', data }));

const manifest: fc.Arbitrary<Manifest> = fc.oneof(
  { arbitrary: validPod, weight: 1 },
  { arbitrary: mutatedPod, weight: 10 },
  { arbitrary: truncated, weight: 2 },
  { arbitrary: multiDocument, weight: 1 },
  { arbitrary: empty, weight: 1 },
  { arbitrary: binary, weight: 1 },
  { arbitrary: yamlNasty, weight: 1 },
);

/** File names: mostly plain, some with odd Unicode (never ignored by the source: no dot, no `~`). */
const fileSuffix = fc.constantFrom('', '', '', '-\u202Eftp', '-\u200B', '-é', '-🙂', `-${'n'.repeat(200)}`);

/** A few huge files (kept out of the generator so the run stays fast): under, at and over the limit. */
function hugeManifests(): Manifest[] {
  const pad = (total: number, head: string) => head + '#'.repeat(Math.max(0, total - head.length - 1)) + '\n';
  const head = YAML.stringify(basePod('huge-under'));
  return [
    { kind: 'huge-under-limit', data: pad(maxConfigLength - 1, head) },
    { kind: 'huge-at-limit', data: pad(maxConfigLength, YAML.stringify(basePod('huge-at'))) },
    { kind: 'huge-over-limit', data: pad(maxConfigLength + 4096, YAML.stringify(basePod('huge-over'))) },
  ];
}

interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Keeps the agent's warnings and errors; drops the rest (the run logs a great deal at debug). */
function capturingLogger(lines: LogLine[], bindings: Readonly<Record<string, unknown>> = {}): Logger {
  const keep =
    (level: string): LogFn =>
    (a: string | Readonly<Record<string, unknown>>, m?: string) => {
      if (typeof a === 'string') lines.push({ level, message: a, fields: bindings });
      else lines.push({ level, message: m ?? '', fields: { ...bindings, ...a } });
    };
  const drop: LogFn = () => {};
  return {
    debug: drop,
    info: drop,
    warn: keep('warn'),
    error: keep('error'),
    child: (b) => capturingLogger(lines, { ...bindings, ...b }),
  };
}

/** What the file source must make of one file's bytes: the pods, or the rejection. */
function expected(file: string, data: string | Uint8Array): Pod[] | PodValidationError {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  if (size >= maxConfigLength) {
    return new PodValidationError({ source: 'file', file }, undefined, [
      { field: '<document>', type: 'Invalid value', detail: 'too big' },
    ]);
  }
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  try {
    return decodeStaticPods(text, { nodeName, source: 'file', file });
  } catch (err) {
    if (err instanceof PodValidationError) return err;
    throw new Error(
      `decodeStaticPods threw a ${(err as Error)?.name}, not a PodValidationError: ${String(err)}`,
    );
  }
}

/** The manifest's metadata as written, when it is one readable object. */
function rawMetadata(data: string | Uint8Array): { name?: unknown; namespace?: unknown } | undefined {
  if (typeof data !== 'string') return undefined;
  try {
    if (data.trimStart().startsWith('{')) {
      try {
        return metadataOf(JSON.parse(data));
      } catch {
        // YAML flow syntax; read below.
      }
    }
    return metadataOf(YAML.parse(data, { version: '1.1', maxAliasCount: 100 }));
  } catch {
    return undefined;
  }
}

function metadataOf(doc: unknown): { name?: unknown; namespace?: unknown } | undefined {
  const meta = (doc as { metadata?: unknown } | null)?.metadata;
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta)
    ? (meta as { name?: unknown; namespace?: unknown })
    : undefined;
}

/** The shape every rejection must have: its file, an object ref, field paths, a message naming both. */
function checkRejection(err: PodValidationError, file: string, data: string | Uint8Array): void {
  expect(err).toBeInstanceOf(PodValidationError);
  expect(err.code).toBe('FailedValidation');
  expect(err.source).toBe('file');
  expect(err.file).toBe(file);
  expect(err.message).toContain(JSON.stringify(file));
  expect(err.errors.length).toBeGreaterThan(0);
  expect(err.field).toBe(err.errors[0]!.field);
  for (const e of err.errors) {
    expect(e.field).toMatch(fieldPath);
    expect(e.type).toMatch(
      /^(Required value|Invalid value|Duplicate value|Not found|Unsupported value|Forbidden|Too long|Too many)$/,
    );
    expect(e.detail.length).toBeGreaterThan(0);
    expect(err.message).toContain(`${e.field}: ${e.type}`);
  }
  // The pod as it would have been: `<name>-<node>`, namespace `default` unless the manifest names one.
  expect(typeof err.object).toBe('object');
  // Only a document the decoder could read (a deep one would overflow the parser here too).
  const meta = err.field === '<document>' ? undefined : rawMetadata(data);
  const unset = (v: unknown) => v === undefined || v === null || v === '';
  if (err.field === 'kind') {
    // Not a pod: named as written.
    if (typeof meta?.name === 'string') expect(err.object.name, err.message).toBe(meta.name);
  } else if (meta !== undefined) {
    if (typeof meta.name === 'string' && meta.name !== '')
      expect(err.object.name, err.message).toBe(`${meta.name}-${nodeName}`);
    if (unset(meta.namespace)) expect(err.object.namespace, err.message).toBe('default');
  }
  if (err.object.name) {
    expect(err.message).toContain(JSON.stringify(`${err.object.namespace ?? ''}/${err.object.name}`));
  }
}

describe('agent manifest fuzzing', () => {
  let server: InMemoryCriServer;
  let dir: string;
  let manifests: string;
  let clock: FakeClock;
  let agent: Agent;
  const lines: LogLine[] = [];
  const reported = new Map<string, Error>();
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => {
    crashes.push(err);
  };

  beforeAll(async () => {
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
    clock = new FakeClock(Date.UTC(2026, 11, 1));
    server = await InMemoryCriServer.start({ images: [image], clock });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-fuzz-'));
    manifests = path.join(dir, 'manifests');
    fs.mkdirSync(manifests);
    fs.writeFileSync(path.join(manifests, 'good.yaml'), YAML.stringify(basePod('good')));
    agent = createAgent({
      runtimeEndpoint: server.endpoint,
      podManifestPath: manifests,
      rootDirectory: path.join(dir, 'root'),
      nodeName,
      nodeIPs: ['192.0.2.10'],
      maxPods: 40,
      port: 0,
      clock,
      fileCheckFrequencyMs: 1000,
      logger: capturingLogger(lines),
      onSourceError: (err) => {
        const file = (err as PodValidationError).file;
        if (file !== undefined) reported.set(file, err);
        else crashes.push(err);
      },
    });
    await agent.start();
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await server?.close();
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const podNamed = (name: string): Pod | undefined =>
    agent.kubelet.podsWithStatus().find((p) => p.metadata?.name === name);
  const goodRunning = () => {
    const good = podNamed(`good-${nodeName}`);
    return good?.status?.phase === 'Running' && good.status.containerStatuses?.[0]?.state?.running
      ? good
      : undefined;
  };
  /** CreateContainer calls for the good pod itself (a generated pod may share its name, in another namespace). */
  const goodCreations = () => {
    const uid = podNamed(`good-${nodeName}`)?.metadata?.uid;
    return server
      .calls<{ sandboxConfig?: { metadata?: { name?: string; uid?: string; namespace?: string } } }>(
        'CreateContainer',
      )
      .filter((c) => c.request.sandboxConfig?.metadata?.uid === uid).length;
  };

  it('10,000 manifests: no crash, every rejection names file and field, the good pod keeps running', {
    timeout: 300_000,
  }, async () => {
    await pump(clock, goodRunning);
    const huge = hugeManifests();
    const seenFiles = new Set<string>();
    let previous: string[] = [];
    let round = 0;
    let roundEnd = performance.now();
    let rejected = 0;
    let accepted = 0;
    const kinds = new Map<string, number>();
    fc.configureGlobal({ seed, numRuns: rounds, endOnFailure: true, verbose: 1 });
    const property = fc.asyncProperty(
      fc.array(fc.tuple(manifest, fileSuffix), { minLength: filesPerRound, maxLength: filesPerRound }),
      async (batch) => {
        round++;
        const tStart = performance.now();
        const generation = tStart - roundEnd;
        for (const f of previous) fs.rmSync(f, { force: true });
        const files: { file: string; data: string | Uint8Array; kind: string }[] = [];
        const entries = batch.map(([m, suffix]) => ({ ...m, suffix }));
        // The huge files ride in three of the rounds, in place of a generated manifest.
        const hugeOne = round % 33 === 1 ? huge[(round - 1) / 33] : undefined;
        if (hugeOne) entries[0] = { ...hugeOne, suffix: '' };
        for (const [i, m] of entries.entries()) {
          const file = path.join(manifests, `r${round}-${String(i).padStart(3, '0')}${m.suffix}.manifest`);
          fs.writeFileSync(file, m.data);
          files.push({ file, data: m.data, kind: m.kind });
          kinds.set(m.kind, (kinds.get(m.kind) ?? 0) + 1);
        }
        // A sentinel sorted after the round's files: once it is a pod, the listing is through.
        // Admission refuses it (PodOSNotSupported), so it costs no sandbox.
        const sentinelName = `zz-sentinel-${round}`;
        const sentinel = path.join(manifests, `${sentinelName}.json`);
        const sentinelPod = basePod(sentinelName);
        (sentinelPod.spec as Record<string, unknown>).os = { name: 'windows' };
        fs.writeFileSync(sentinel, JSON.stringify(sentinelPod));
        previous = [...files.map((f) => f.file), sentinel];

        const t0 = performance.now();
        await pump(clock, () => podNamed(`${sentinelName}-${nodeName}`) !== undefined, 1000, 60);
        const tListed = performance.now();

        // Each file is either rejected, with a well-formed error naming it and its field and a
        // log line saying the same, or holds pods (checked by decoding it here).
        const logged = new Map<string, LogLine>();
        for (const line of lines) {
          if (line.message !== "Can't process config file") continue;
          const file = line.fields.file as string;
          if (seenFiles.has(file)) throw new Error(`file ${file} was reported twice`);
          seenFiles.add(file);
          logged.set(file, line);
        }
        lines.length = 0;
        let roundRejected = 0;
        for (const { file, data, kind } of files) {
          const err = reported.get(file);
          if (err === undefined) {
            expect(logged.has(file), `${file} logged but not reported`).toBe(false);
            const want = expected(file, data);
            expect(want, `${kind} manifest ${file} neither rejected nor accepted`).not.toBeInstanceOf(
              PodValidationError,
            );
            expect(kind).not.toMatch(/^huge-(at|over)-limit$/);
            accepted++;
            continue;
          }
          roundRejected++;
          expect(err).toBeInstanceOf(PodValidationError);
          checkRejection(err as PodValidationError, file, data);
          const line = logged.get(file);
          expect(line, `no log line for rejected ${file}`).toBeDefined();
          expect(line!.level).toBe('warn');
          expect(line!.fields.field).toBe((err as PodValidationError).field);
          expect(String(line!.fields.err)).toBe(err.message);
        }
        rejected += roundRejected;
        for (const file of reported.keys())
          expect(
            files.some((f) => f.file === file),
            file,
          ).toBe(true);
        reported.clear();
        if (process.env.FUZZ_TIMING)
          console.log(
            `round ${round}: generation ${generation.toFixed(0)} ms, write ${(t0 - tStart).toFixed(0)} ms, listing ${(tListed - t0).toFixed(0)} ms, checks ${(performance.now() - tListed).toFixed(0)} ms, ${roundRejected} rejected`,
          );
        for (const file of logged.keys())
          expect(
            files.some((f) => f.file === file),
            file,
          ).toBe(true);
        expect(crashes).toEqual([]);
        const good = goodRunning();
        expect(good, `good pod not Running after round ${round}`).toBeDefined();
        expect(good!.status!.containerStatuses![0]!.restartCount).toBe(0);
        const creations = server
          .calls<{ sandboxConfig?: { metadata?: unknown } }>('CreateContainer')
          .map((c) => c.request.sandboxConfig?.metadata)
          .filter((m) => (m as { name?: string }).name === `good-${nodeName}`);
        expect(goodCreations(), JSON.stringify(creations)).toBe(1);
        roundEnd = performance.now();
      },
    );
    const result = await fc.check(property);
    if (result.failed) {
      throw new Error(
        `manifest fuzzing failed at round ${round} (seed ${result.seed}, path ${result.counterexamplePath}; rerun with FUZZ_SEED=${result.seed}): ${String(result.errorInstance)}`,
        { cause: result.errorInstance },
      );
    }
    expect(round).toBe(rounds);
    expect(rejected + accepted).toBe(rounds * filesPerRound);
    expect(rejected).toBeGreaterThan(rounds * filesPerRound * 0.5);
    expect(accepted).toBeGreaterThan(rounds);
    const wanted = ['valid', 'mutated', 'truncated', 'multi-document', 'empty', 'binary', 'yaml-nasty'];
    if (rounds >= 67) wanted.push('huge-under-limit', 'huge-at-limit', 'huge-over-limit');
    for (const k of wanted) expect(kinds.get(k), k).toBeGreaterThan(0);
    // The good pod's container was created once and never restarted, all through.
    expect(goodCreations()).toBe(1);
    expect(goodRunning()!.status!.containerStatuses![0]!.restartCount).toBe(0);
    expect(crashes).toEqual([]);
  });
});
