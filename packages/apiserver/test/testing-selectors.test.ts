// The in-memory API server's selector parsing and patch application, on upstream's tables
// (apimachinery labels TestSelectorMatches / TestSelectorDoesNotMatch, RFC 7386's examples).
import { describe, expect, it } from 'vitest';
import { jsonPatch, mergePatch, strategicMergePatch } from '../src/testing/patch.js';
import { parseFieldSelector, parseLabelSelector } from '../src/testing/selectors.js';

describe('label selectors', () => {
  it.each([
    ['', { x: 'y' }],
    ['x=y', { x: 'y' }],
    ['x=y,z=w', { x: 'y', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'a' }],
    ['notin=in', { notin: 'in' }],
    ['x', { x: 'z' }],
    ['!x', { y: 'z' }],
    ['x in (y,z)', { x: 'z' }],
    ['x notin (y,z)', { x: 'w' }],
    ['x notin (y,z)', {}],
    ['x==y', { x: 'y' }],
    ['x!=y', {}],
  ])('%j matches %j', (sel, labels) => {
    expect(parseLabelSelector(sel)(labels)).toBe(true);
  });

  it.each([
    ['x=z', {}],
    ['x=y', { x: 'z' }],
    ['x=y,z=w', { x: 'w', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'w' }],
    ['x', { y: 'z' }],
    ['!x', { x: 'z' }],
    ['x in (y,z)', { x: 'w' }],
    ['x in (y,z)', {}],
    ['x notin (y,z)', { x: 'y' }],
  ])('%j does not match %j', (sel, labels) => {
    expect(parseLabelSelector(sel)(labels)).toBe(false);
  });

  it('rejects a malformed selector with a 400', () => {
    expect(() => parseLabelSelector('x=(y')).toThrow(/unable to parse requirement/);
  });
});

describe('field selectors', () => {
  const pod = {
    metadata: { name: 'p', namespace: 'ns' },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running' },
  };
  it.each([
    ['spec.nodeName=n1', true],
    ['spec.nodeName==n1,status.phase!=Failed', true],
    ['spec.nodeName!=n1', false],
    ['spec.nodeName=', false],
    ['metadata.name=p,metadata.namespace=ns', true],
    ['spec.hostNetwork=false', true],
  ])('%s on a pod is %s', (sel, want) => {
    expect(parseFieldSelector(sel, ['spec.nodeName', 'status.phase', 'spec.hostNetwork'], 'Pod')(pod)).toBe(
      want,
    );
  });

  it('matches event sources by component and rejects unknown labels', () => {
    const ev = { source: { component: 'kubelet', host: 'n1' }, involvedObject: { kind: 'Node' } };
    expect(
      parseFieldSelector(
        'source=kubelet,involvedObject.kind=Node',
        ['source', 'involvedObject.kind'],
        'Event',
      )(ev),
    ).toBe(true);
    expect(() => parseFieldSelector('spec.foo=1', [], 'Pod')).toThrow('field label not supported: spec.foo');
  });
});

describe('patches', () => {
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('RFC 7386: %j merged with %j is %j', (target, patch, want) => {
    expect(mergePatch(target, patch)).toEqual(want);
  });

  it('JSON patch: add, remove, replace, move, copy, test', () => {
    const doc = { a: { b: [1, 2] }, c: 'x' };
    expect(
      jsonPatch(doc, [
        { op: 'add', path: '/a/b/1', value: 9 },
        { op: 'remove', path: '/a/b/0' },
        { op: 'replace', path: '/c', value: 'y' },
        { op: 'copy', from: '/c', path: '/d' },
        { op: 'move', from: '/d', path: '/e~1f' },
        { op: 'test', path: '/c', value: 'y' },
        { op: 'add', path: '/a/b/-', value: 3 },
      ]),
    ).toEqual({ a: { b: [9, 2, 3] }, c: 'y', 'e/f': 'y' });
    expect(doc).toEqual({ a: { b: [1, 2] }, c: 'x' });
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/c', value: 'z' }])).toThrow(/test failed/);
    expect(() => jsonPatch(doc, [{ op: 'remove', path: '/nope' }])).toThrow(/missing path/);
  });

  it('strategic merge: containers by name, conditions by type, finalizers as a set, plain lists replaced', () => {
    const pod = {
      metadata: { finalizers: ['a'] },
      spec: {
        containers: [
          { name: 'a', image: 'a:1' },
          { name: 'b', image: 'b:1' },
        ],
        tolerations: [{ key: 'x' }],
      },
      status: {
        conditions: [{ type: 'Ready', status: 'False' }],
        containerStatuses: [{ name: 'a' }, { name: 'b' }],
      },
    };
    expect(
      strategicMergePatch(pod, {
        metadata: { finalizers: ['b'] },
        spec: {
          containers: [
            { name: 'b', image: 'b:2' },
            { name: 'a', $patch: 'delete' },
          ],
          tolerations: [{ key: 'y' }],
        },
        status: {
          conditions: [
            { type: 'Initialized', status: 'True' },
            { type: 'Ready', status: 'True' },
          ],
          containerStatuses: [{ name: 'b', ready: true }],
        },
      }),
    ).toEqual({
      metadata: { finalizers: ['a', 'b'] },
      spec: { containers: [{ name: 'b', image: 'b:2' }], tolerations: [{ key: 'y' }] },
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'Initialized', status: 'True' },
        ],
        containerStatuses: [{ name: 'b', ready: true }],
      },
    });
    expect(strategicMergePatch({ a: { b: 1, c: 2 } }, { a: { $patch: 'replace', d: 3 } })).toEqual({
      a: { d: 3 },
    });
    expect(strategicMergePatch({ f: ['a', 'b'] }, { '$deleteFromPrimitiveList/f': ['a'] })).toEqual({
      f: ['b'],
    });
  });
});
