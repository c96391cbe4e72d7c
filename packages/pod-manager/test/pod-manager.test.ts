import {
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  type Pod,
} from '@kubelet-kit/core';
import { BasicPodManager, isMirrorPodOf } from '@kubelet-kit/pod-manager';
import { makePod } from '@kubelet-kit/pod-manager/testing';
import { describe, expect, it } from 'vitest';

type PodType = 'static' | 'mirror' | 'extra';

// The shape of upstream's test pods: static pods come from `file`, the others from `api`, and a
// mirror carries the mirror annotation.
function newPod(uid: string, name: string, namespace: string, type: PodType): Pod {
  const annotations: Record<string, string> = {};
  if (type === 'static') {
    annotations[ConfigSourceAnnotationKey] = 'file';
  } else {
    if (type === 'mirror') annotations[ConfigMirrorAnnotationKey] = 'mirror';
    annotations[ConfigSourceAnnotationKey] = 'api';
  }
  return { metadata: { uid, name, namespace, annotations } };
}

const uids = (pods: readonly Pod[]): string[] => pods.map((p) => p.metadata?.uid ?? '').sort();

describe('BasicPodManager', () => {
  it('GetSetPods: records regular and static pods, translates the mirror UID, finds by name', () => {
    const mirrorPod = newPod('987654321', 'bar', 'default', 'mirror');
    const staticPod = newPod('123456789', 'bar', 'default', 'static');
    const extra = newPod('999999999', 'taco', 'default', 'extra');
    const pm = new BasicPodManager();
    pm.setPods([extra, staticPod, mirrorPod]);

    const pods = pm.getPods();
    expect(uids(pods)).toEqual(['123456789', '999999999']);
    expect(pods.find((p) => p.metadata?.uid === '123456789')).toBe(staticPod);
    expect(pm.translatePodUID('987654321')).toBe('123456789');
    expect(pm.getPodByFullName('bar_default')).toBe(staticPod);
    expect(pm.getPodByName('default', 'bar')).toBe(staticPod);
  });

  it('setPods replaces everything held before', () => {
    const pm = new BasicPodManager({
      pods: [newPod('a', 'a', 'ns', 'extra'), newPod('m', 'a', 'ns', 'mirror')],
    });
    expect(pm.translatePodUID('m')).toBe('a');
    pm.setPods([newPod('b', 'b', 'ns', 'extra')]);
    expect(uids(pm.getPods())).toEqual(['b']);
    expect(pm.getPodsAndMirrorPods().mirrorPods).toEqual([]);
    expect(pm.translatePodUID('m')).toBe('m');
    expect(pm.getPodByUID('a')).toBeUndefined();
  });

  it('DeletePods: removing the static pod leaves its mirror orphaned', () => {
    const mirrorPod = newPod('mirror-pod-uid', 'mirror-static-pod-name', 'default', 'mirror');
    const staticPod = newPod('static-pod-uid', 'mirror-static-pod-name', 'default', 'static');
    const extra = newPod('extra-pod-uid', 'extra-pod-name', 'default', 'extra');
    const pm = new BasicPodManager();
    pm.setPods([extra, staticPod, mirrorPod]);

    pm.removePod(staticPod);

    expect(uids(pm.getPods())).toEqual(['extra-pod-uid']);
    const { mirrorPods, orphanedMirrorPodFullnames } = pm.getPodsAndMirrorPods();
    expect(mirrorPods).toEqual([mirrorPod]);
    expect(orphanedMirrorPodFullnames).toEqual(['mirror-static-pod-name_default']);
    // Upstream keeps the translation when the static pod goes; only the mirror's removal drops it.
    expect(pm.translatePodUID('mirror-pod-uid')).toBe('static-pod-uid');
    pm.removePod(mirrorPod);
    expect(pm.translatePodUID('mirror-pod-uid')).toBe('mirror-pod-uid');
    expect(pm.getPodsAndMirrorPods().orphanedMirrorPodFullnames).toEqual([]);
  });

  it('AddPod: the added pod is returned as the same object', () => {
    const expected = newPod('extra-pod-uid', 'extra-pod-name', 'default', 'extra');
    const pm = new BasicPodManager();
    pm.addPod(expected);
    const actual = pm.getPods();
    expect(actual).toHaveLength(1);
    expect(actual[0]).toBe(expected);
  });

  it('updatePod replaces the pod under its UID and full name', () => {
    const pm = new BasicPodManager();
    pm.addPod(newPod('u1', 'p', 'ns', 'extra'));
    const updated = { ...newPod('u1', 'p', 'ns', 'extra'), spec: { containers: [] } };
    pm.updatePod(updated);
    expect(pm.getPods()).toEqual([updated]);
    expect(pm.getPodByUID('u1')).toBe(updated);
    expect(pm.getPodByFullName('p_ns')).toBe(updated);
  });

  it('GetPodsAndMirrorPods: splits pods from mirrors; a mirror with a pod is not orphaned', () => {
    const regular = newPod('123456789', 'bar', 'default', 'extra');
    const stat = newPod('999999999', 'taco', 'default', 'static');
    const mirror = newPod('987654321', 'bar', 'default', 'mirror');
    const orphan = newPod('555', 'gone', 'kube-system', 'mirror');
    const pm = new BasicPodManager({ pods: [regular, stat, mirror, orphan] });
    const { pods, mirrorPods, orphanedMirrorPodFullnames } = pm.getPodsAndMirrorPods();
    expect(uids(pods)).toEqual(['123456789', '999999999']);
    expect(uids(mirrorPods)).toEqual(['555', '987654321']);
    expect(orphanedMirrorPodFullnames).toEqual(['gone_kube-system']);
  });

  describe('GetPodByUID', () => {
    const pm = new BasicPodManager({
      pods: [
        newPod('999999999', 'taco', 'default', 'static'),
        newPod('123456789', 'bar', 'default', 'extra'),
        newPod('987654321', 'bar', 'default', 'mirror'),
      ],
    });
    it.each([
      { name: 'get pod', key: '123456789', expected: '123456789' },
      { name: 'get static pod', key: '999999999', expected: '999999999' },
      { name: 'mirror pod not to be got', key: '987654321', expected: undefined },
      { name: 'unknown uid', key: 'nope', expected: undefined },
    ])('$name', ({ key, expected }) => {
      expect(pm.getPodByUID(key)?.metadata?.uid).toBe(expected);
    });
  });

  describe('GetUIDTranslations', () => {
    it.each([
      {
        name: 'all static pods have mirror pods',
        pods: [
          newPod('resolved1', 's1', 'ns', 'static'),
          newPod('resolved2', 's2', 'ns', 'static'),
          newPod('mirror1', 's1', 'ns', 'mirror'),
          newPod('mirror2', 's2', 'ns', 'mirror'),
        ],
        podToMirror: { resolved1: 'mirror1', resolved2: 'mirror2' },
        mirrorToPod: { mirror1: 'resolved1', mirror2: 'resolved2' },
      },
      {
        name: 'a static pod has no mirror pod',
        pods: [
          newPod('resolved1', 's1', 'ns', 'static'),
          newPod('resolved2', 's2', 'ns', 'static'),
          newPod('resolved3', 's3', 'ns', 'static'),
          newPod('mirror1', 's1', 'ns', 'mirror'),
          newPod('mirror2', 's2', 'ns', 'mirror'),
        ],
        podToMirror: { resolved1: 'mirror1', resolved2: 'mirror2', resolved3: '' },
        mirrorToPod: { mirror1: 'resolved1', mirror2: 'resolved2' },
      },
      {
        name: 'regular pods are not listed',
        pods: [newPod('r', 'r', 'ns', 'extra'), newPod('s', 's', 'ns', 'static')],
        podToMirror: { s: '' },
        mirrorToPod: {},
      },
      {
        name: 'mirror arrives before its static pod',
        pods: [newPod('m', 's', 'ns', 'mirror'), newPod('s', 's', 'ns', 'static')],
        podToMirror: { s: 'm' },
        mirrorToPod: { m: 's' },
      },
    ])('$name', ({ pods, podToMirror, mirrorToPod }) => {
      const pm = new BasicPodManager();
      pm.setPods(pods);
      const t = pm.getUIDTranslations();
      expect(Object.fromEntries(t.podToMirror)).toEqual(podToMirror);
      expect(Object.fromEntries(t.mirrorToPod)).toEqual(mirrorToPod);
    });
  });

  describe('TranslatePodUID', () => {
    const stat = makePod({ name: 'etcd', namespace: 'kube-system', uid: 'static-uid', static: true });
    const mirror = makePod({ mirrorOf: stat, uid: 'mirror-uid' });
    const pm = new BasicPodManager({ pods: [stat, mirror, makePod({ name: 'web', uid: 'web-uid' })] });
    it.each([
      { name: 'mirror UID → static UID', uid: 'mirror-uid', expected: 'static-uid' },
      { name: 'static UID unchanged', uid: 'static-uid', expected: 'static-uid' },
      { name: 'regular UID unchanged', uid: 'web-uid', expected: 'web-uid' },
      { name: 'unknown UID unchanged', uid: 'nope', expected: 'nope' },
      { name: 'empty stays empty', uid: '', expected: '' },
    ])('$name', ({ uid, expected }) => {
      expect(pm.translatePodUID(uid)).toBe(expected);
    });
  });

  describe('IsMirrorPodOf', () => {
    const withAnn = (uid: string, name: string, key: string, value: string): Pod => ({
      metadata: { uid, name, namespace: 'default', annotations: { [key]: value } },
    });
    it.each([
      {
        name: 'is mirror',
        pod: withAnn('123456789', 'bar', ConfigHashAnnotationKey, 'test'),
        mirror: withAnn('987654321', 'bar', ConfigMirrorAnnotationKey, 'test'),
        expected: true,
      },
      {
        name: 'different annotation',
        pod: withAnn('123456789', 'bar', ConfigHashAnnotationKey, 'test'),
        mirror: withAnn('987654321', 'bar', ConfigMirrorAnnotationKey, 'test2'),
        expected: false,
      },
      {
        name: 'different name',
        pod: withAnn('123456789', 'bar', ConfigHashAnnotationKey, 'test'),
        mirror: withAnn('987654321', 'baz', ConfigMirrorAnnotationKey, 'test'),
        expected: false,
      },
      {
        name: 'not a mirror at all',
        pod: withAnn('123456789', 'bar', ConfigHashAnnotationKey, 'test'),
        mirror: withAnn('987654321', 'bar', ConfigHashAnnotationKey, 'test'),
        expected: false,
      },
    ])('$name', ({ pod, mirror, expected }) => {
      expect(isMirrorPodOf(mirror, pod)).toBe(expected);
    });

    it('makePod builds a mirror that isMirrorPodOf recognizes', () => {
      const stat = makePod({ name: 'kube-apiserver', namespace: 'kube-system', static: true });
      expect(isMirrorPodOf(makePod({ mirrorOf: stat }), stat)).toBe(true);
    });
  });

  describe('GetMirrorPodByPod', () => {
    it.each([
      {
        name: 'found',
        pod: newPod('987654321', 'bar', 'default', 'static'),
        mirror: newPod('123456789', 'bar', 'default', 'mirror'),
        ok: true,
      },
      {
        name: 'not found',
        pod: newPod('987654321', 'bar', 'default', 'static'),
        mirror: newPod('123456789', 'baz', 'default', 'mirror'),
        ok: false,
      },
    ])('$name', ({ pod, mirror, ok }) => {
      const pm = new BasicPodManager();
      pm.addPod(mirror);
      expect(pm.getMirrorPodByPod(pod)).toBe(ok ? mirror : undefined);
    });
  });

  describe('GetPodByMirrorPod', () => {
    it.each([
      {
        name: 'found',
        mirror: newPod('987654321', 'bar', 'default', 'mirror'),
        pod: newPod('123456789', 'bar', 'default', 'static'),
        ok: true,
      },
      {
        name: 'not found',
        mirror: newPod('987654321', 'bar', 'default', 'mirror'),
        pod: newPod('123456789', 'baz', 'default', 'static'),
        ok: false,
      },
    ])('$name', ({ pod, mirror, ok }) => {
      const pm = new BasicPodManager();
      pm.addPod(pod);
      expect(pm.getPodByMirrorPod(mirror)).toBe(ok ? pod : undefined);
    });
  });

  describe('GetPodAndMirrorPod', () => {
    const stat = makePod({ name: 'etcd', namespace: 'kube-system', uid: 's', static: true });
    const mirror = makePod({ mirrorOf: stat, uid: 'm' });
    const lonely = makePod({ name: 'lonely', namespace: 'kube-system', uid: 'l', static: true });
    const orphan = makePod({ mirrorOf: makePod({ name: 'gone', static: true }), uid: 'o' });
    const pm = new BasicPodManager({ pods: [stat, mirror, lonely, orphan] });
    it.each([
      {
        name: 'static pod → itself and its mirror',
        arg: stat,
        pod: stat,
        mirrorPod: mirror,
        wasMirror: false,
      },
      {
        name: 'mirror pod → its static pod and itself',
        arg: mirror,
        pod: stat,
        mirrorPod: mirror,
        wasMirror: true,
      },
      { name: 'static pod without mirror', arg: lonely, pod: lonely, mirrorPod: undefined, wasMirror: false },
      { name: 'orphaned mirror', arg: orphan, pod: undefined, mirrorPod: orphan, wasMirror: true },
    ])('$name', ({ arg, pod, mirrorPod, wasMirror }) => {
      const r = pm.getPodAndMirrorPod(arg);
      expect(r.pod).toBe(pod);
      expect(r.mirrorPod).toBe(mirrorPod);
      expect(r.wasMirror).toBe(wasMirror);
    });
  });

  it('getPodByFullName and getPodByName never return mirror pods', () => {
    const pm = new BasicPodManager({ pods: [newPod('m', 'bar', 'default', 'mirror')] });
    expect(pm.getPodByFullName('bar_default')).toBeUndefined();
    expect(pm.getPodByName('default', 'bar')).toBeUndefined();
  });

  it('the same name in different namespaces gives distinct pods', () => {
    const a = newPod('a', 'same', 'ns1', 'extra');
    const b = newPod('b', 'same', 'ns2', 'extra');
    const pm = new BasicPodManager({ pods: [a, b] });
    expect(pm.getPodByName('ns1', 'same')).toBe(a);
    expect(pm.getPodByName('ns2', 'same')).toBe(b);
  });

  it('reads are fresh snapshots: mutating a returned array does not change the manager', () => {
    const pm = new BasicPodManager({
      pods: [newPod('a', 'a', 'ns', 'extra'), newPod('m', 'x', 'ns', 'mirror')],
    });
    const first = pm.getPods();
    first.length = 0;
    const both = pm.getPodsAndMirrorPods();
    both.mirrorPods.pop();
    both.orphanedMirrorPodFullnames.pop();
    pm.getUIDTranslations().podToMirror.set('z', 'z');
    expect(pm.getPods()).toHaveLength(1);
    expect(pm.getPodsAndMirrorPods().mirrorPods).toHaveLength(1);
    expect(pm.getPodsAndMirrorPods().orphanedMirrorPodFullnames).toEqual(['x_ns']);
    expect(pm.getUIDTranslations().podToMirror.size).toBe(0);
    // A snapshot taken before a change does not see it.
    const before = pm.getPods();
    pm.addPod(newPod('b', 'b', 'ns', 'extra'));
    expect(before).toHaveLength(1);
  });

  it('reads after a change see it, whichever change it was', () => {
    const a = newPod('a', 'a', 'ns', 'extra');
    const pm = new BasicPodManager({ pods: [a] });
    expect(uids(pm.getPods())).toEqual(['a']);
    // Read between every change, so a stale list would show.
    pm.addPod(newPod('b', 'b', 'ns', 'extra'));
    expect(uids(pm.getPods())).toEqual(['a', 'b']);
    const a2 = newPod('a', 'a', 'ns', 'extra');
    pm.updatePod(a2);
    expect(pm.getPods().find((p) => p.metadata?.uid === 'a')).toBe(a2);
    expect(uids(pm.getPodsAndMirrorPods().pods)).toEqual(['a', 'b']);
    pm.removePod(a2);
    expect(uids(pm.getPods())).toEqual(['b']);
    expect(uids(pm.getPodsAndMirrorPods().pods)).toEqual(['b']);
    // A mirror pod changes nothing of the pod list.
    pm.addPod(newPod('m', 'x', 'ns', 'mirror'));
    expect(uids(pm.getPods())).toEqual(['b']);
    pm.setPods([newPod('c', 'c', 'ns', 'extra')]);
    expect(uids(pm.getPods())).toEqual(['c']);
    // Two reads without a change are equal but not the same array.
    const one = pm.getPods();
    const two = pm.getPods();
    expect(one).toEqual(two);
    expect(one).not.toBe(two);
  });
});
