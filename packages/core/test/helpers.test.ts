import { describe, expect, it } from 'vitest';
import {
  formatContainerID,
  getPodFullName,
  InMemoryLogger,
  isCriticalPod,
  isMirrorPod,
  isStaticPod,
  type Pod,
  PodSyncError,
  parseContainerID,
  podSyncResultError,
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

describe('InMemoryLogger', () => {
  it('keeps lines with child bindings', () => {
    const log = new InMemoryLogger();
    log.child({ pod: 'web' }).info({ n: 1 }, 'hello');
    log.warn('plain');
    expect(log.records).toEqual([
      { level: 'info', message: 'hello', fields: { pod: 'web', n: 1 } },
      { level: 'warn', message: 'plain', fields: {} },
    ]);
  });
});
