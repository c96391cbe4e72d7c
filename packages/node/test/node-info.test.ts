import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  findUntoleratedTaint,
  type NodeInfo,
  nodeArch,
  nodeLabels,
  nodeOS,
  parseNodeLabels,
  parseTaints,
  podMatchesNodeAffinity,
} from '../src/node-info.js';

const node: NodeInfo = {
  name: 'node-a',
  labels: { foo: 'bar', zone: 'z1', cores: '8', gpu: '' },
  taints: [],
};

type Spec = NonNullable<Pod['spec']>;
const pod = (spec: Partial<Spec>): Pod => ({
  metadata: { name: 'p', uid: 'p' },
  spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
});
type Term = { matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> } & {
  matchFields?: Array<{ key: string; operator: string; values?: string[] }>;
};
const affinity = (...terms: Term[]): Partial<Spec> => ({
  affinity: {
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
  },
});
const expr = (key: string, operator: string, values?: string[]): Term => ({
  matchExpressions: [{ key, operator, ...(values ? { values } : {}) }],
});

describe('podMatchesNodeAffinity (upstream GetRequiredNodeAffinity().Match)', () => {
  it.each<[string, Partial<Spec>, boolean]>([
    ['no selector and no affinity', {}, true],
    ['nodeSelector matching', { nodeSelector: { foo: 'bar' } }, true],
    ['nodeSelector with a different value', { nodeSelector: { foo: 'baz' } }, false],
    ['nodeSelector with a missing label', { nodeSelector: { missing: '' } }, false],
    ['nodeSelector on an empty-valued label', { nodeSelector: { gpu: '' } }, true],
    ['In matching', affinity(expr('foo', 'In', ['value1', 'bar'])), true],
    ['In not matching', affinity(expr('foo', 'In', ['value1'])), false],
    ['In with no values is invalid', affinity(expr('foo', 'In', [])), false],
    ['NotIn matching', affinity(expr('foo', 'NotIn', ['value1'])), true],
    ['NotIn on a missing label', affinity(expr('missing', 'NotIn', ['x'])), true],
    ['NotIn not matching', affinity(expr('foo', 'NotIn', ['bar'])), false],
    ['Exists', affinity(expr('foo', 'Exists')), true],
    ['Exists with values is invalid', affinity(expr('foo', 'Exists', ['bar'])), false],
    ['Exists on a missing label', affinity(expr('missing', 'Exists')), false],
    ['DoesNotExist', affinity(expr('missing', 'DoesNotExist')), true],
    ['DoesNotExist on a present label', affinity(expr('foo', 'DoesNotExist')), false],
    ['Gt matching', affinity(expr('cores', 'Gt', ['4'])), true],
    ['Gt not matching', affinity(expr('cores', 'Gt', ['8'])), false],
    ['Lt matching', affinity(expr('cores', 'Lt', ['9'])), true],
    ['Gt on a non-integer label', affinity(expr('foo', 'Gt', ['1'])), false],
    ['Gt with a non-integer value is invalid', affinity(expr('cores', 'Gt', ['x'])), false],
    ['Gt with two values is invalid', affinity(expr('cores', 'Gt', ['1', '2'])), false],
    ['unknown operator', affinity(expr('foo', 'Like', ['bar'])), false],
    ['terms are ORed', affinity(expr('foo', 'In', ['no']), expr('zone', 'In', ['z1'])), true],
    [
      'expressions of a term are ANDed',
      affinity({
        matchExpressions: [
          { key: 'foo', operator: 'In', values: ['bar'] },
          { key: 'zone', operator: 'In', values: ['z2'] },
        ],
      }),
      false,
    ],
    ['an empty term matches nothing', affinity({}), false],
    ['no terms match nothing', affinity(), false],
    [
      'an invalid term is skipped, a valid one still matches',
      affinity(expr('foo', 'In', []), expr('foo', 'Exists')),
      true,
    ],
    [
      'an invalid requirement fails its term even beside a matching one',
      affinity({
        matchExpressions: [
          { key: 'foo', operator: 'Exists' },
          { key: 'foo', operator: 'In', values: [] },
        ],
      }),
      false,
    ],
    [
      'matchFields metadata.name In',
      affinity({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }),
      true,
    ],
    [
      'matchFields metadata.name In other',
      affinity({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-b'] }] }),
      false,
    ],
    [
      'matchFields metadata.name NotIn',
      affinity({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-b'] }] }),
      true,
    ],
    [
      'matchFields with two values is invalid',
      affinity({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a', 'node-b'] }] }),
      false,
    ],
    [
      'matchFields on another field is invalid',
      affinity({ matchFields: [{ key: 'metadata.uid', operator: 'In', values: ['node-a'] }] }),
      false,
    ],
    [
      'matchFields Exists is invalid',
      affinity({ matchFields: [{ key: 'metadata.name', operator: 'Exists' }] }),
      false,
    ],
    [
      'nodeSelector and affinity must both match',
      { nodeSelector: { foo: 'baz' }, ...affinity(expr('foo', 'Exists')) },
      false,
    ],
  ])('%s', (_name, spec, want) => {
    expect(podMatchesNodeAffinity(pod(spec), node)).toBe(want);
  });
});

describe('node labels', () => {
  it('has upstream defaults, --node-labels laid over', () => {
    expect(nodeLabels('n1', { role: 'edge', 'kubernetes.io/hostname': 'other' })).toEqual({
      'kubernetes.io/hostname': 'other',
      'kubernetes.io/os': nodeOS,
      'kubernetes.io/arch': nodeArch,
      'beta.kubernetes.io/os': nodeOS,
      'beta.kubernetes.io/arch': nodeArch,
      role: 'edge',
    });
    expect(nodeOS).toBe('linux');
    expect(['amd64', 'arm64']).toContain(nodeArch);
  });

  it('parses k=v,k2=v2 and refuses bad or restricted keys', () => {
    expect(parseNodeLabels('a=1, example.com/b=,node.kubernetes.io/c=x')).toEqual({
      a: '1',
      'example.com/b': '',
      'node.kubernetes.io/c': 'x',
    });
    expect(() => parseNodeLabels('a')).toThrow('malformed pair, expect string=string: "a"');
    expect(() => parseNodeLabels('-a=1')).toThrow('invalid node label key "-a"');
    expect(() => parseNodeLabels('a=b c')).toThrow('invalid node label value "b c"');
    expect(() => parseNodeLabels('kubernetes.io/role=x')).toThrow(
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: ["kubernetes.io/role"]`,
    );
  });
});

describe('taints', () => {
  it('parses key=value:Effect and key:Effect', () => {
    expect(parseTaints('dedicated=gpu:NoExecute,maint:NoSchedule')).toEqual([
      { key: 'dedicated', value: 'gpu', effect: 'NoExecute' },
      { key: 'maint', effect: 'NoSchedule' },
    ]);
    expect(() => parseTaints('a=b')).toThrow('invalid taint spec: a=b');
    expect(() => parseTaints('a=b:Never')).toThrow('invalid taint effect: Never, unsupported taint effect');
    expect(() => parseTaints('a=b=c:NoExecute')).toThrow('invalid taint spec: a=b=c:NoExecute');
    expect(() => parseTaints('a:NoExecute,a=x:NoExecute')).toThrow(
      'duplicated taints with the same key and effect',
    );
  });

  it('finds the NoExecute taint no toleration tolerates (upstream ToleratesTaint)', () => {
    const taints = parseTaints('a=1:NoSchedule,b=2:NoExecute');
    const noExec = (t: { effect: string }) => t.effect === 'NoExecute';
    expect(findUntoleratedTaint(taints, [], noExec)?.key).toBe('b');
    expect(findUntoleratedTaint(taints, [{ key: 'b', value: '2' }], noExec)).toBeUndefined();
    expect(findUntoleratedTaint(taints, [{ key: 'b', value: '3' }], noExec)?.key).toBe('b');
    expect(findUntoleratedTaint(taints, [{ key: 'b', operator: 'Exists' }], noExec)).toBeUndefined();
    expect(findUntoleratedTaint(taints, [{ operator: 'Exists' }], noExec)).toBeUndefined();
    expect(
      findUntoleratedTaint(taints, [{ key: 'b', operator: 'Exists', effect: 'NoSchedule' }], noExec)?.key,
    ).toBe('b');
    expect(
      findUntoleratedTaint(taints, [{ operator: 'Exists', effect: 'NoExecute' }], noExec),
    ).toBeUndefined();
  });
});
