// Property tests: random and corrupted manifests never crash the decoder or the file source;
// every rejection names its file and a field; valid pods beside bad files still arrive.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodUpdate } from '@kubelet-kit/core';
import { FakeClock } from '@kubelet-kit/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { decodeStaticPods, FileSource, PodValidationError } from '../src/index.js';

const base = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    containers: [
      {
        name: 'app',
        image: 'nginx:1',
        ports: [{ containerPort: 80, name: 'http' }],
        livenessProbe: { httpGet: { port: 'http', path: '/' } },
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        resources: { limits: { cpu: '100m' } },
      },
    ],
    volumes: [{ name: 'data', hostPath: { path: '/srv' } }],
  },
};

function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [prefix];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [
    prefix,
    ...keys.flatMap((k) => paths((value as Record<string | number, unknown>)[k], [...prefix, k])),
  ];
}
const allPaths = paths(base).filter((p) => p.length > 0);

function setAt(target: unknown, path: (string | number)[], value: unknown): void {
  let node = target as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
}

/** A structurally corrupted pod: some members replaced by random values or deleted. */
const corruptedObject = fc
  .array(
    fc.tuple(fc.constantFrom(...allPaths), fc.option(fc.anything({ maxDepth: 2 }), { nil: undefined })),
    { minLength: 1, maxLength: 4 },
  )
  .map((edits) => {
    const pod = structuredClone(base) as unknown;
    for (const [path, value] of edits) {
      try {
        setAt(pod, path, value);
      } catch {
        // An earlier edit removed the parent; skip.
      }
    }
    return pod;
  });

/** Bytes-level corruption of a valid manifest: cuts, insertions, flips. */
const corruptedText = fc
  .tuple(
    fc.constantFrom('yaml', 'json'),
    fc.array(fc.tuple(fc.nat(), fc.nat({ max: 8 }), fc.string({ maxLength: 6 })), {
      minLength: 1,
      maxLength: 3,
    }),
  )
  .map(([format, edits]) => {
    let text = format === 'yaml' ? YAML.stringify(base) : JSON.stringify(base, null, 1);
    for (const [at, cut, insert] of edits) {
      const i = at % (text.length + 1);
      text = text.slice(0, i) + insert + text.slice(i + cut);
    }
    return text;
  });

const anyManifest = fc.oneof(
  corruptedText,
  corruptedObject.map((o) => JSON.stringify(o) ?? 'null'),
  corruptedObject.map((o) => {
    try {
      return YAML.stringify(o);
    } catch {
      return '{';
    }
  }),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.jsonValue().map((v) => JSON.stringify(v)),
);

function checkRejection(err: unknown, file: string): void {
  expect(err).toBeInstanceOf(PodValidationError);
  const e = err as PodValidationError;
  expect(e.file).toBe(file);
  expect(e.field.length).toBeGreaterThan(0);
  expect(e.message).toContain(file);
  expect(e.message).toContain(e.field);
}

describe('decoder property tests', () => {
  it('never crashes: it returns pods or throws a PodValidationError naming file and field', () => {
    fc.assert(
      fc.property(anyManifest, fc.boolean(), (text, allowList) => {
        const file = '/etc/kubernetes/manifests/fuzz.yaml';
        try {
          const pods = decodeStaticPods(text, { nodeName: 'n1', source: 'file', file, allowList });
          for (const pod of pods) {
            expect(pod.metadata?.name?.endsWith('-n1')).toBe(true);
            expect(pod.metadata?.uid).toBeTruthy();
          }
        } catch (err) {
          checkRejection(err, file);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('rejects known nasty inputs cleanly', () => {
    const file = '/m/nasty.yaml';
    const nasty = [
      '',
      '   \n',
      '---\n---\n',
      'a: &a [*a]',
      `a: &a ["x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]`,
      'apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\nspec: {containers: []}',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, __proto__: {polluted: true}}\nspec: {containers: [{name: c, image: i}]}',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: !!binary aGVsbG8=',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, ports: [{containerPort: 1e400}]}]}',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, name: y}\nspec: {}',
      '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}} trailing',
      'apiVersion: v2\nkind: Pod',
      'kind: Pod',
      '[1, 2]',
    ];
    for (const text of nasty) {
      try {
        decodeStaticPods(text, { nodeName: 'n', source: 'file', file });
      } catch (err) {
        checkRejection(err, file);
      }
    }
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('takes a null field as an absent one, as Go decoding does (found by this fuzzer)', () => {
    const text =
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: null}\nspec:\n  hostname: null\n' +
      '  containers:\n    - {name: c, image: i, env: null, ports: [{containerPort: 80, name: null}]}\n';
    const [pod] = decodeStaticPods(text, { nodeName: 'n', source: 'file', file: '/m/nulls.yaml' });
    const c = pod!.spec!.containers[0]!;
    expect(c.ports).toEqual([{ containerPort: 80, protocol: 'TCP' }]);
    expect('env' in c).toBe(false);
    expect('hostname' in pod!.spec!).toBe(false);
  });

  it('accepts the uncorrupted manifest in both formats', () => {
    for (const text of [YAML.stringify(base), JSON.stringify(base)]) {
      expect(decodeStaticPods(text, { nodeName: 'n1', source: 'file', file: '/f' })).toHaveLength(1);
    }
  });
});

describe('file source property test', () => {
  it('lists a directory of valid and corrupted manifests: valid pods arrive, every rejection names file and field', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(anyManifest, { nil: undefined }), { minLength: 1, maxLength: 8 }),
        async (entries) => {
          const dir = await mkdtemp(join(tmpdir(), 'pod-config-fuzz-'));
          try {
            const validNames: string[] = [];
            const files: string[] = [];
            for (const [i, entry] of entries.entries()) {
              const file = join(dir, `m${i}.yaml`);
              files.push(file);
              if (entry === undefined) {
                // A known-good pod with a unique name.
                const name = `valid-${i}`;
                validNames.push(`${name}-node1`);
                await writeFile(file, YAML.stringify({ ...base, metadata: { name } }));
              } else {
                await writeFile(file, entry);
              }
            }
            const sets: PodUpdate[] = [];
            const source = new FileSource({
              path: dir,
              nodeName: 'node1',
              clock: new FakeClock(),
              watch: false,
            });
            await source.start((u) => {
              sets.push(u);
            });
            await source.stop();
            expect(sets).toHaveLength(1);
            const names = sets[0]!.pods.map((p) => p.metadata?.name);
            for (const name of validNames) expect(names).toContain(name);
            for (const error of source.errors) {
              expect(files).toContain(error.file);
              checkRejection(error, error.file!);
            }
            // Every file is accounted for: a pod or a rejection.
            expect(sets[0]!.pods.length + source.errors.length).toBe(entries.length);
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
