import { describe, expect, it } from 'vitest';
import {
  formatContainerID,
  getPodFullName,
  isCriticalPod,
  isMirrorPod,
  isStaticPod,
  type Pod,
  PodSyncError,
  parseContainerID,
  podSyncResultError,
  type RuntimePodStatus,
  runtimePodFromStatus,
} from '../src/index.js';

const pod = (annotations: Record<string, string> = {}, priority?: number): Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1', annotations },
  spec: { containers: [], ...(priority !== undefined ? { priority } : {}) },
});

describe('pod helpers', () => {
  it('full name is name_namespace', () => {
    expect(getPodFullName(pod())).toBe('web_ns');
  });

  it('static, mirror and critical pods', () => {
    expect(isStaticPod(pod({ 'kubernetes.io/config.source': 'file' }))).toBe(true);
    expect(isStaticPod(pod({ 'kubernetes.io/config.source': 'api' }))).toBe(false);
    expect(isStaticPod(pod())).toBe(false);
    expect(isMirrorPod(pod({ 'kubernetes.io/config.mirror': 'abc' }))).toBe(true);
    expect(isCriticalPod(pod({}, 2_000_000_000))).toBe(true);
    expect(isCriticalPod(pod({}, 1000))).toBe(false);
  });

  it('container IDs round-trip', () => {
    expect(formatContainerID({ type: 'containerd', id: 'abc' })).toBe('containerd://abc');
    expect(parseContainerID('containerd://abc')).toEqual({ type: 'containerd', id: 'abc' });
    expect(parseContainerID('abc')).toEqual({ type: '', id: 'abc' });
  });
});

describe('pod sync results', () => {
  it('no error when every step succeeded', () => {
    expect(
      podSyncResultError({ syncResults: [{ action: 'StartContainer', target: 'a', message: '' }] }),
    ).toBe(undefined);
  });

  it('a backoff alone is not treated as a sync failure', () => {
    const err = podSyncResultError({
      syncResults: [
        { action: 'StartContainer', target: 'a', error: 'CrashLoopBackOff', message: 'back-off 10s' },
      ],
    });
    expect(err).toBeInstanceOf(PodSyncError);
    expect(err?.onlyBackoff).toBe(true);
    const hard = podSyncResultError({
      syncResults: [
        { action: 'StartContainer', target: 'a', error: 'CrashLoopBackOff', message: '' },
        { action: 'StartContainer', target: 'b', error: 'RunContainerError', message: 'boom' },
      ],
    });
    expect(hard?.onlyBackoff).toBe(false);
    expect(hard?.message).toContain('RunContainerError');
  });
});

describe('runtimePodFromStatus', () => {
  const status: RuntimePodStatus = {
    id: 'uid-1',
    name: 'web',
    namespace: 'ns',
    ips: ['10.0.0.5'],
    timestamp: 0,
    sandboxStatuses: [
      {
        id: 'sb-new',
        name: 'web',
        namespace: 'ns',
        uid: 'uid-1',
        attempt: 1,
        state: 'ready',
        createdAt: 2000,
        ips: ['10.0.0.5'],
        hostNetwork: false,
        labels: {},
        annotations: {},
      },
      {
        id: 'sb-old',
        name: 'web',
        namespace: 'ns',
        uid: 'uid-1',
        attempt: 0,
        state: 'notready',
        createdAt: 1000,
        ips: [],
        hostNetwork: false,
        labels: {},
        annotations: {},
      },
    ],
    containerStatuses: (['running', 'exited'] as const).map((state, i) => ({
      id: { type: 'containerd', id: `c${i}` },
      name: `c${i}`,
      state,
      createdAt: 0,
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      image: 'img',
      imageId: 'sha',
      hash: 'h',
      restartCount: 0,
      reason: '',
      message: '',
    })),
  };

  it('keeps every container by default and maps sandbox states as a listing shows them', () => {
    const pod = runtimePodFromStatus(status);
    expect(pod).toMatchObject({ id: 'uid-1', name: 'web', namespace: 'ns', createdAt: 2000 });
    expect(pod.containers.map((c) => [c.id.id, c.state])).toEqual([
      ['c0', 'running'],
      ['c1', 'exited'],
    ]);
    expect(pod.sandboxes.map((s) => [s.id, s.state])).toEqual([
      [{ type: 'containerd', id: 'sb-new' }, 'running'],
      [{ type: 'containerd', id: 'sb-old' }, 'exited'],
    ]);
  });

  it('keeps only the containers the filter picks, and still every sandbox', () => {
    const pod = runtimePodFromStatus(status, (c) => c.state === 'running');
    expect(pod.containers.map((c) => c.id.id)).toEqual(['c0']);
    expect(pod.sandboxes).toHaveLength(2);
  });
});
